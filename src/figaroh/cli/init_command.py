"""``figaroh init``: scaffold a commented unified configuration for a robot's URDF.

The written file extends the manipulator template and writes the sections
its header announces: the robot (its URDF as ``robot.urdf``, so ``figaroh
check`` finds the model), the identification task with the plainest model
(rigid bodies only: friction, actuator inertia and torque offsets off), the
calibration task (one 6-DoF marker on the tool frame, guessed as the link
the last one-degree-of-freedom joint moves; the data comes from ``figaroh
calibrate --data``) and the exciting-trajectory design task (five waypoints
2 s apart, sampled at 100 Hz). Its active joints are the model's
one-degree-of-freedom joints (revolute and prismatic, ``nv = 1``), in model
order. The YAML is written by the YAML emitter (``yaml.safe_dump``), below a
comment block saying what every key does, with units; names YAML would read
as another type (``yes``, ``on``, ``null``, ``1e3``) are quoted and read back
as the same strings. A ``--robot-name`` with a line break or another control
character is refused (exit 2). The file is written atomically and only once
it passes the checks of ``figaroh check`` against the model (strict keys,
joints, frames, every task read as its run reads it): a failure leaves no
file, and an existing ``-o`` (with ``--force``) untouched.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Sequence

import yaml

from figaroh.calibration.settings import DEFAULT_SETTINGS as _CALIBRATION_DEFAULTS
from figaroh.cli.check_command import check_configuration
from figaroh.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    CLIError,
    require_output_file,
    say,
    steps_for,
)
from figaroh.cli.workflows import load_robot_model
from figaroh.tools.robot_paths import resolve_robot_urdf
from figaroh.utils.fileio import atomic_write, make_folder
from figaroh.utils.unified_config import PACKAGED_TEMPLATES_DIR

__all__ = [
    "ANNOUNCED_SECTIONS",
    "config_document",
    "init",
    "one_dof_joints",
    "render_config",
    "tool_frame_guess",
]

_TEMPLATE = "manipulator_robot.yaml"


def one_dof_joints(model) -> List[str]:
    """Names of the joints of ``model`` with one degree of freedom (``nv = 1``), model order."""
    return [str(model.names[j]) for j in range(1, model.njoints) if int(model.joints[j].nv) == 1]


def tool_frame_guess(model, joints: Sequence[str]) -> str:
    """The link the last of ``joints`` moves: the calibration's tool frame until edited.

    For a serial arm that is the flange link (``wrist_3_link`` of a UR10);
    the marker is assumed fixed to it. The first body frame whose parent
    joint is the last joint of ``joints``, in frame order.

    Raises:
        CLIError: The model has no body frame on that joint.
    """
    last = int(model.getJointId(joints[-1]))
    for frame in model.frames:
        if int(frame.parentJoint) == last and str(frame.type).endswith("BODY"):
            return str(frame.name)
    raise CLIError(f"the URDF has no link moved by its last joint {joints[-1]!r}")


def _template_extends() -> str:
    """The ``extends:`` value of the manipulator template: ``templates/manipulator_robot.yaml``.

    The parser resolves it beside the configuration first (a ``templates``
    folder in its directory or the two above, or the working directory), then
    in the templates shipped with figaroh.

    Raises:
        CLIError: the shipped template is missing (a broken installation).
    """
    if not (PACKAGED_TEMPLATES_DIR / _TEMPLATE).is_file():
        raise CLIError(
            f"the shipped template {PACKAGED_TEMPLATES_DIR / _TEMPLATE} is missing; "
            "reinstall figaroh"
        )
    return f"templates/{_TEMPLATE}"


#: The sections the header announces; each is written (tests/test_cli_check.py checks it).
ANNOUNCED_SECTIONS = (
    "robot",
    "tasks.identification",
    "tasks.calibration",
    "tasks.optimal_trajectory",
)

#: The comment block above the configuration: what every key written below
#: does, with units (the YAML itself is written by the YAML emitter).
_KEY_NOTES = """\
# Check it (keys, joints, frames, units; prints what a run would use):
#   figaroh check <this file>
#
# Keys written below:
# extends                  template merged first (this file overrides it): fixed-base serial
#                          manipulator defaults
# robot.name               model name, used in reports and result files
# robot.urdf               the URDF (or robot name) `figaroh check` loads; the run commands
#                          take it with --urdf
# robot.properties.joints.active_joints
#                          joints whose motion is logged and whose efforts are identified:
#                          every one-degree-of-freedom joint of the URDF (revolute or
#                          prismatic), in model order
# robot.properties.mechanics
#   reduction_ratios       gear ratio per active joint (motor / joint)
#   friction_coefficients  viscous fv [N.m.s/rad or N.s/m] and static (Coulomb) fs [N.m or N]
#                          per joint, priors only
#   actuator_inertias      Ia per joint [kg.m^2], prior only
#   joint_offsets          effort offset per joint [N.m or N], prior only
# tasks.identification     the dynamic identification task
#   problem.use_joint_torques  the data logs joint efforts (columns tau_<joint>)
#   problem.model_components   true to identify friction (viscous + Coulomb), the rotor
#                              inertia Ia or a constant effort offset per joint
#   signal_processing      sampling_frequency [Hz] of the logged samples, cutoff_frequency
#                          [Hz] of the low-pass applied before differentiation, filter_order
#                          of the Butterworth low-pass filter
# tasks.calibration        the geometric calibration task; `figaroh calibrate --data CSV`
#                          reads the poses (no data.source_file needed)
#   parameters             calibration_level full_params (every joint placement) or
#                          joint_offset; outlier_threshold [m] per-posture position error
#                          beyond which a posture is dropped
#   kinematics             base_frame (the measurement frame is fitted to it) and tool_frame:
#                          GUESSED as the link the last joint moves; set the frame your
#                          marker is fixed to
#   measurements.markers   one marker on the tool frame, reference_joint its joint,
#                          measurable_dof which of x y z [m] rx ry rz [rad] are measured
# tasks.optimal_trajectory exciting-trajectory design (`figaroh trajectory`)
#   problem.soft_lim       margin kept inside each limit, fraction of its range
#   problem.max_attempts   random draws allowed to find a feasible initial guess
#   trajectory             waypoints per segment (rest at each one), frequency [Hz] of the
#                          sampled trajectory, segment_duration [s] between two waypoints
"""


def config_document(
    robot_name: str,
    joints: Sequence[str],
    extends: str,
    tool_frame: str | None = None,
    urdf: str | None = None,
) -> Dict[str, Any]:
    """The unified configuration written by ``figaroh init``, as a mapping.

    Args:
        robot_name: ``robot.name`` (the model name).
        joints: Active joints (one-DoF joints, model order).
        extends: Value of the ``extends:`` key (the manipulator template).
        tool_frame: Calibration tool frame (:func:`tool_frame_guess`; None:
            no calibration section).
        urdf: ``robot.urdf`` (a robot name or a path; None: not written).
    """
    n = len(joints)
    robot: Dict[str, Any] = {"name": robot_name}
    if urdf is not None:
        robot["urdf"] = urdf
    document: Dict[str, Any] = {
        "extends": extends,
        "robot": {
            **robot,
            "properties": {
                "joints": {"active_joints": list(joints)},
                "mechanics": {
                    "reduction_ratios": [1.0] * n,
                    "friction_coefficients": {"viscous": [0.0] * n, "static": [0.0] * n},
                    "actuator_inertias": [0.0] * n,
                    "joint_offsets": [0.0] * n,
                },
            },
        },
        "tasks": {
            "identification": {
                "enabled": True,
                "problem": {
                    "use_joint_torques": True,
                    "model_components": {
                        "friction": False,
                        "actuator_inertia": False,
                        "joint_offset": False,
                    },
                },
                "signal_processing": {
                    "sampling_frequency": 100.0,
                    "cutoff_frequency": 10.0,
                    "filter_order": 4,
                },
            },
            "calibration": {
                "enabled": True,
                "parameters": {
                    "calibration_level": "full_params",
                    "outlier_threshold": _CALIBRATION_DEFAULTS.outlier_threshold,
                },
                "kinematics": {"base_frame": "universe", "tool_frame": tool_frame},
                "measurements": {
                    "markers": [
                        {
                            "name": "tool_marker",
                            "reference_joint": joints[-1],
                            "measurable_dof": [True] * 6,
                        }
                    ]
                },
            },
            "optimal_trajectory": {
                "enabled": True,
                "problem": {"soft_lim": 0.05, "max_attempts": 500},
                "trajectory": {"waypoints": 5, "frequency": 100, "segment_duration": 2.0},
            },
        },
    }
    if tool_frame is None:
        del document["tasks"]["calibration"]
    return document


def render_config(
    robot_name: str,
    urdf: Path,
    joints: Sequence[str],
    extends: str,
    tool_frame: str | None = None,
    urdf_ref: str | None = None,
) -> str:
    """The text of the commented unified configuration.

    The mapping of :func:`config_document` written by ``yaml.safe_dump``
    (which quotes what YAML would otherwise read as another type: a robot
    named ``yes`` stays the string ``'yes'``, a joint named ``on`` the string
    ``'on'``), below a comment block describing every key. The URDF path
    appears in the comment JSON-escaped, so no character of it can end the
    comment.

    Args:
        robot_name: ``robot.name`` (the model name).
        urdf: URDF the configuration was made for (recorded in a comment).
        joints: Active joints (one-DoF joints, model order).
        extends: Value of the ``extends:`` key (the manipulator template).
        tool_frame: Calibration tool frame (None: no calibration section).
        urdf_ref: ``robot.urdf`` to write (None: not written).
    """
    header = (
        "# figaroh unified configuration written by `figaroh init` from the URDF\n"
        f"# {json.dumps(str(urdf))}\n"
    )
    body = yaml.safe_dump(
        config_document(robot_name, joints, extends, tool_frame, urdf_ref),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=None,
        width=100,
    )
    return header + _KEY_NOTES + "\n" + body


def _checked_name(name: str, option: str) -> str:
    """``name`` when it is one line of printable text, else a CLIError naming ``option``."""
    bad = [c for c in name if not c.isprintable()]
    if bad or not name.strip():
        what = f"the character {bad[0]!r}" if bad else "no visible character"
        raise CLIError(
            f"{option} {name!r} holds {what}: robot.name is one line of text used in "
            "reports and result file names; give a name without line breaks or control "
            "characters (e.g. --robot-name my_robot)"
        )
    return name


def _written_check(robot: Any):
    """The check of the temporary file: ``figaroh check`` against ``robot``.

    A failure aborts the write (nothing is left on disk).
    """

    def check(path: str) -> None:
        try:
            check_configuration(path, robot)
        except Exception as exc:  # noqa: BLE001 - any failure means the file must not be kept
            message = exc.message if isinstance(exc, CLIError) else str(exc)
            raise CLIError(
                f"figaroh init produced a configuration that does not load ({message}); "
                "nothing was written. Please report this with the URDF and the options used",
                EXIT_FAILED,
            ) from exc

    return check


def _urdf_reference(argument: str, urdf: Path, output: Path) -> str:
    """``robot.urdf`` to write: the robot name as typed, else the URDF path.

    A path inside the configuration's folder is written relative to it (the
    pair can move together); any other path is written absolute.
    """
    if not Path(argument).is_file():  # a robot name (figaroh robots) resolved to `urdf`
        return argument
    folder = output.resolve().parent
    target = urdf.resolve()
    relative = os.path.relpath(target, folder)
    return relative if not relative.startswith("..") else str(target)


def init(args: argparse.Namespace) -> int:
    """``figaroh init``: write the configuration; exit 2 when ``-o`` exists without ``--force``."""
    output = require_output_file(args.output, "-o/--output")
    if output.exists() and not args.force:
        raise CLIError(
            f"-o/--output {output} already exists; pass --force to overwrite it or choose "
            "another path"
        )
    with steps_for(args, ["load robot", "write configuration", "check"]) as steps:
        steps.start("load robot")
        argument = getattr(args, "urdf_argument", None) or args.urdf
        urdf = resolve_robot_urdf(args.urdf)  # a file, or a robot name (`figaroh robots`)
        robot = load_robot_model(urdf, args.package_dir)
        joints = one_dof_joints(robot.model)
        if not joints:
            raise CLIError(f"the URDF {urdf} has no one-degree-of-freedom joint to identify")
        steps.start("write configuration")
        if args.robot_name is not None:
            name = _checked_name(args.robot_name, "--robot-name")
        else:
            model_name = (
                _checked_name(robot.model.name, "the URDF's robot name")
                if (robot.model.name)
                else ""
            )
            name = model_name or urdf.stem
        tool = tool_frame_guess(robot.model, joints)
        text = render_config(
            name,
            urdf,
            joints,
            _template_extends(),
            tool,
            _urdf_reference(str(argument), Path(urdf), output),
        )
        make_folder(output.parent)
        steps.start("check")  # on the complete temporary file, before it replaces -o
        atomic_write(output, lambda fh: fh.write(text), check=_written_check(robot), suffix=".yaml")
    say(args, f"wrote {output}: {len(joints)} active joints of {name} ({', '.join(joints)})")
    say(args, f"calibration tool frame {tool} (guessed: the link of {joints[-1]}; edit it)")
    say(args, f"check it with: figaroh check {output}")
    return EXIT_OK
