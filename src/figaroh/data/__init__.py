"""Data contract: datasets that carry their conventions.

:class:`TrajectoryData` (identification input) and :class:`PoseObservations`
(calibration input) keep joint order, clock, signal origin, effort kind and
unit, valid-sample mask and source files together with the arrays, and convert
to and from the legacy dict/array representations.
"""

from figaroh.utils._lazy import lazy_reexports

#: Where each public name lives; resolved on first access, so that importing one
#: submodule (``figaroh.data.adoption`` on every identification run) does not
#: import the others.
_HOMES = {
    **dict.fromkeys(("adopt_trajectory", "adopt_trajectory_for", "trajectory_mask"), "adoption"),
    **dict.fromkeys(("DOF", "PoseObservations"), "observations"),
    **dict.fromkeys(("Protocol", "ProtocolSession"), "protocol"),
    **dict.fromkeys(("DataSource", "Session", "file_sha256"), "source"),
    **dict.fromkeys(("NotTextCSVError", "read_csv_text"), "text_csv"),
    **dict.fromkeys(
        (
            "CLOCKS",
            "DRIVE_KINDS",
            "EFFORT_KINDS",
            "FORCE_UNITS",
            "JOINT_FORCE",
            "JOINT_TORQUE",
            "LOAD_FRACTION",
            "MOTOR_CURRENT",
            "MOTOR_TORQUE",
            "TORQUE_UNITS",
            "TrajectoryData",
            "TrajectoryDataError",
        ),
        "trajectory",
    ),
}

__all__ = [
    "CLOCKS",
    "DOF",
    "DRIVE_KINDS",
    "EFFORT_KINDS",
    "FORCE_UNITS",
    "JOINT_FORCE",
    "JOINT_TORQUE",
    "LOAD_FRACTION",
    "MOTOR_CURRENT",
    "MOTOR_TORQUE",
    "TORQUE_UNITS",
    "DataSource",
    "NotTextCSVError",
    "PoseObservations",
    "Protocol",
    "ProtocolSession",
    "Session",
    "TrajectoryData",
    "TrajectoryDataError",
    "adopt_trajectory",
    "adopt_trajectory_for",
    "file_sha256",
    "read_csv_text",
    "trajectory_mask",
]

__getattr__, __dir__ = lazy_reexports(
    __name__, {name: f"figaroh.data.{home}" for name, home in _HOMES.items()}, globals()
)
