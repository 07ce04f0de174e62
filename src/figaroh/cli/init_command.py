"""``figaroh init``: scaffold a commented unified configuration for a robot's URDF.

The written file extends the manipulator template, enables the
identification task with the plainest model (rigid bodies only: friction,
actuator inertia and torque offsets off) and the exciting-trajectory design
task (five waypoints 2 s apart, sampled at 100 Hz). Its active joints are the model's
one-degree-of-freedom joints (revolute and prismatic, ``nv = 1``), in model
order. The YAML is written by the YAML emitter (``yaml.safe_dump``), below a
comment block saying what every key does, with units; names YAML would read
as another type (``yes``, ``on``, ``null``, ``1e3``) are quoted and read back
as the same strings. A ``--robot-name`` with a line break or another control
character is refused (exit 2). The file is written atomically and only once
it loads under strict key checking (``UnifiedConfigParser(path, strict=True)``):
a failure leaves no file, and an existing ``-o`` (with ``--force``) untouched.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Sequence

import yaml

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
from figaroh.utils.unified_config import PACKAGED_TEMPLATES_DIR, UnifiedConfigParser

__all__ = ["config_document", "init", "one_dof_joints", "render_config"]

_TEMPLATE = "manipulator_robot.yaml"


def one_dof_joints(model) -> List[str]:
    """Names of the joints of ``model`` with one degree of freedom (``nv = 1``), model order."""
    return [str(model.names[j]) for j in range(1, model.njoints) if int(model.joints[j].nv) == 1]


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


#: The comment block above the configuration: what every key written below
#: does, with units (the YAML itself is written by the YAML emitter).
_KEY_NOTES = """\
# Check it with: python -c "from figaroh.utils.config_parser import UnifiedConfigParser as P;
#   P('<this file>', strict=True).parse()"
#
# Keys written below:
# extends                  template merged first (this file overrides it): fixed-base serial
#                          manipulator, calibration and identification tasks, one 6-DoF marker
# robot.name               model name, used in reports and result files
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
# tasks.optimal_trajectory exciting-trajectory design (`figaroh trajectory`)
#   problem.soft_lim       margin kept inside each limit, fraction of its range
#   problem.max_attempts   random draws allowed to find a feasible initial guess
#   trajectory             waypoints per segment (rest at each one), frequency [Hz] of the
#                          sampled trajectory, segment_duration [s] between two waypoints
"""


def config_document(robot_name: str, joints: Sequence[str], extends: str) -> Dict[str, Any]:
    """The unified configuration written by ``figaroh init``, as a mapping.

    Args:
        robot_name: ``robot.name`` (the model name).
        joints: Active joints (one-DoF joints, model order).
        extends: Value of the ``extends:`` key (the manipulator template).
    """
    n = len(joints)
    return {
        "extends": extends,
        "robot": {
            "name": robot_name,
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
            "optimal_trajectory": {
                "enabled": True,
                "problem": {"soft_lim": 0.05, "max_attempts": 500},
                "trajectory": {"waypoints": 5, "frequency": 100, "segment_duration": 2.0},
            },
        },
    }


def render_config(robot_name: str, urdf: Path, joints: Sequence[str], extends: str) -> str:
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
    """
    header = (
        "# figaroh unified configuration written by `figaroh init` from the URDF\n"
        f"# {json.dumps(str(urdf))}\n"
    )
    body = yaml.safe_dump(
        config_document(robot_name, joints, extends),
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


def _check_written(path: str) -> None:
    """Parse the written file strictly; a failure aborts the write (nothing is left on disk)."""
    try:
        UnifiedConfigParser(path, strict=True).parse()
    except Exception as exc:  # noqa: BLE001 - any failure means the file must not be kept
        raise CLIError(
            f"figaroh init produced a configuration that does not load ({exc}); nothing was "
            "written. Please report this with the URDF and the options used",
            EXIT_FAILED,
        ) from exc


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
        urdf = resolve_robot_urdf(args.robot)  # a file, or a robot name (`figaroh robots`)
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
        text = render_config(name, urdf, joints, _template_extends())
        make_folder(output.parent)
        steps.start("check")  # on the complete temporary file, before it replaces -o
        atomic_write(output, lambda fh: fh.write(text), check=_check_written, suffix=".yaml")
    say(args, f"wrote {output}: {len(joints)} active joints of {name} ({', '.join(joints)})")
    return EXIT_OK
