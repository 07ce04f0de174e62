"""Data contract: datasets that carry their conventions.

:class:`TrajectoryData` (identification input) and :class:`PoseObservations`
(calibration input) keep joint order, clock, signal origin, effort kind and
unit, valid-sample mask and source files together with the arrays, and convert
to and from the legacy dict/array representations.
"""

from figaroh.data.adoption import adopt_trajectory, adopt_trajectory_for, trajectory_mask
from figaroh.data.observations import DOF, PoseObservations
from figaroh.data.protocol import Protocol, ProtocolSession
from figaroh.data.source import DataSource, Session, file_sha256
from figaroh.data.text_csv import NotTextCSVError, read_csv_text
from figaroh.data.trajectory import (
    CLOCKS,
    DRIVE_KINDS,
    EFFORT_KINDS,
    FORCE_UNITS,
    JOINT_FORCE,
    JOINT_TORQUE,
    LOAD_FRACTION,
    MOTOR_CURRENT,
    MOTOR_TORQUE,
    TORQUE_UNITS,
    TrajectoryData,
    TrajectoryDataError,
)

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
