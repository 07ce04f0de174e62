"""``figaroh init``: scaffold a commented unified configuration for a robot's URDF.

The written file extends the manipulator template, enables the
identification task with the plainest model (rigid bodies only: friction,
actuator inertia and torque offsets off) and the exciting-trajectory design
task (five waypoints 2 s apart, sampled at 100 Hz). Its active joints are the model's
one-degree-of-freedom joints (revolute and prismatic, ``nv = 1``), in model
order. Every key carries a comment saying what it does, with units, and the
file loads under strict key checking
(``UnifiedConfigParser(path, strict=True)``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import List, Sequence

from figaroh.cli.common import EXIT_OK, CLIError, require_output_file, say, steps_for
from figaroh.cli.workflows import load_robot_model
from figaroh.tools.robot_paths import resolve_robot_urdf
from figaroh.utils.config_parser import PACKAGED_TEMPLATES_DIR, UnifiedConfigParser
from figaroh.utils.fileio import atomic_write_text

__all__ = ["init", "one_dof_joints", "render_config"]

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


def _list(values: Sequence[object]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def render_config(robot_name: str, urdf: Path, joints: Sequence[str], extends: str) -> str:
    """The text of the commented unified configuration.

    Args:
        robot_name: ``robot.name`` (the model name).
        urdf: URDF the configuration was made for (recorded in a comment).
        joints: Active joints (one-DoF joints, model order).
        extends: Value of the ``extends:`` key (the manipulator template).
    """
    n = len(joints)
    zeros = _list([0.0] * n)
    ones = _list([1.0] * n)
    joint_lines = "\n".join(f"        - {j}" for j in joints)
    return f"""# figaroh unified configuration for {robot_name}, written by `figaroh init`
# from {urdf}.
# Check it with: python -c "from figaroh.utils.config_parser import UnifiedConfigParser as P;
#   P('<this file>', strict=True).parse()"

# Template merged first (this file overrides it): fixed-base serial manipulator,
# calibration and identification tasks enabled, one 6-DoF tool marker.
extends: "{extends}"

robot:
  name: {robot_name}                  # model name, used in reports and result files
  properties:
    joints:
      # Joints whose motion is logged and whose efforts are identified: every
      # one-degree-of-freedom joint of the URDF (revolute or prismatic), in model order.
      active_joints:
{joint_lines}
    mechanics:
      reduction_ratios: {ones}   # gear ratio per active joint (motor / joint)
      friction_coefficients:
        viscous: {zeros}   # fv per joint [N.m.s/rad or N.s/m], prior only
        static: {zeros}    # fs (Coulomb) per joint [N.m or N], prior only
      actuator_inertias: {zeros}   # Ia per joint [kg.m^2], prior only
      joint_offsets: {zeros}       # effort offset per joint [N.m or N], prior only

tasks:
  identification:
    enabled: true                      # run the dynamic identification task
    problem:
      use_joint_torques: true          # the data logs joint efforts (columns tau_<joint>)
      model_components:
        friction: false                # true: identify viscous + Coulomb friction per joint
        actuator_inertia: false        # true: identify the rotor inertia Ia per joint
        joint_offset: false            # true: identify a constant effort offset per joint
    signal_processing:
      sampling_frequency: 100.0        # [Hz] rate of the logged samples
      cutoff_frequency: 10.0           # [Hz] low-pass cut-off applied before differentiation
      filter_order: 4                  # order of the Butterworth low-pass filter

  optimal_trajectory:
    enabled: true                      # exciting-trajectory design (`figaroh trajectory`)
    problem:
      soft_lim: 0.05                   # margin kept inside each limit, fraction of its range
      max_attempts: 500                # random draws allowed to find a feasible initial guess
    trajectory:
      waypoints: 5                     # spline waypoints per segment (rest at each one)
      frequency: 100                   # [Hz] sampling of the designed trajectory
      segment_duration: 2.0            # [s] time between two waypoints
"""


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
        output.parent.mkdir(parents=True, exist_ok=True)
        name = args.robot_name or robot.model.name or urdf.stem
        atomic_write_text(output, render_config(name, urdf, joints, _template_extends()))
        steps.start("check")
        UnifiedConfigParser(str(output), strict=True).parse()
    say(args, f"wrote {output}: {len(joints)} active joints of {name} ({', '.join(joints)})")
    return EXIT_OK
