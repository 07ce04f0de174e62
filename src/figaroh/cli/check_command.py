"""``figaroh check``: validate a configuration without running it, and say what a run would use.

The checks, in order (the first failure stops with exit code 2 and one line
naming the file, the task and the field):

1. the file is a unified configuration (a legacy flat file is refused with the
   ``figaroh migrate-config`` command to convert it);
2. it parses, its ``extends:`` templates resolved, with **strict** key
   checking (:class:`~figaroh.utils.unified_config.UnifiedConfigParser`, a
   misspelt key is refused with the closest known key);
3. with a robot model (``--urdf``, else ``robot.urdf`` of the configuration,
   resolved beside the configuration file), every enabled task is read by the
   parser its run uses — the active joints against the model, units and ranges
   of every value (:func:`figaroh.identification.config.unified_to_legacy_identif_config`,
   :func:`figaroh.calibration.config.unified_to_legacy_config`,
   :func:`figaroh.optimal.config.load_param`), which raise named errors.

Then it prints, per task, what a run would use: the active joints, the
sampling and cutoff frequencies [Hz], the ``solve()`` settings of ``figaroh
identify``, the calibration frames, markers, measured components and
parameter count, the trajectory design settings. Without a model only steps
1–2 run, and the output says so.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping

from figaroh.calibration.config import unified_to_legacy_config
from figaroh.cli.common import EXIT_OK, CLIError, one_line, require_file, say
from figaroh.cli.workflows import CommandLineCalibration, load_robot_model, solve_settings
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.optimal.config import load_param as load_trajectory_param
from figaroh.tools import joint_terms
from figaroh.tools.robot_paths import resolve_robot_urdf
from figaroh.utils.unified_config import (
    UnifiedConfigParser,
    create_task_config,
    is_unified_config,
)
from figaroh.utils.yaml_budget import load_yaml_file_cached

__all__ = [
    "check",
    "check_configuration",
    "config_robot_urdf",
    "describe_configuration",
    "parse_strict",
]

#: Components of one pose, in ``measurable_dof`` order.
_POSE_COMPONENTS = ("x", "y", "z", "rx", "ry", "rz")


def _task_error(config: Path, task: str, exc: BaseException) -> CLIError:
    return CLIError(f"{config}: tasks.{task}: {one_line(exc)}")


def config_robot_urdf(parsed: Mapping[str, Any], config: Path) -> str | None:
    """``robot.urdf`` of a parsed configuration: a robot name, or a path beside the file.

    A relative path is resolved from the configuration's folder first, then
    the working directory; a robot name (``ur10``) is kept for
    :func:`~figaroh.tools.robot_paths.resolve_robot_urdf`.

    Returns:
        The URDF path or robot name, or None when the configuration names none.
    """
    robot = parsed.get("robot")
    value = robot.get("urdf") if isinstance(robot, Mapping) else None
    if not value or not str(value).strip():
        return None
    text = os.path.expanduser(str(value))
    beside = config.parent / text
    if not os.path.isabs(text) and beside.is_file():
        return str(beside)
    return text


def _check_active_joints(path: Path, parsed: Mapping[str, Any], model: Any) -> None:
    """Every ``active_joints`` list (robot and task overrides) names joints of ``model``.

    The calibration reader skips unknown names with a warning (figaroh 1.0.2);
    a check refuses them, since a run would silently use fewer joints.

    Raises:
        CLIError: A name that is not a joint of the model, with the model's joints.
    """
    model_joints = [str(n) for n in model.names[1:]]
    robot_section = parsed.get("robot")
    holders = {
        "robot.properties": robot_section.get("properties")
        if isinstance(robot_section, Mapping)
        else None
    }
    for name, task in (parsed.get("tasks") or {}).items():
        holders[f"tasks.{name}"] = task
    for where, holder in holders.items():
        joints = holder.get("joints") if isinstance(holder, Mapping) else None
        names = joints.get("active_joints") if isinstance(joints, Mapping) else None
        if not isinstance(names, list):
            continue
        unknown = [str(n) for n in names if str(n) not in model_joints]
        if unknown:
            raise CLIError(
                f"{path}: {where}.joints.active_joints: {unknown} not joints of the model "
                f"{model.name!r} (its joints: {model_joints})"
            )


def _joined(names: Any) -> str:
    names = [str(n) for n in names or []]
    return f"{', '.join(names)} ({len(names)})" if names else "none"


def _identification_lines(robot: Any, parsed: Mapping[str, Any]) -> List[str]:
    cfg = unified_to_legacy_identif_config(
        robot, create_task_config(robot, parsed, "identification")
    )
    filt = cfg["filter_config"]
    flags = {t.enable_key: t.component_key for t in joint_terms.JOINT_TERMS}
    components = ", ".join(
        f"{component} {'on' if cfg.get(flag) else 'off'}" for flag, component in flags.items()
    )
    settings = solve_settings(config_wls=bool(cfg.get("wls", False)))
    decimation = (
        f"low-pass and keep every {settings['decimation_factor']}th sample"
        if settings["decimate"]
        else "every sample"
    )
    validation = cfg.get("validation_data_file") or "none (give --validation-data)"
    lines = [
        "identification",
        f"  active joints       {_joined(cfg.get('active_joints'))}",
        f"  sampling frequency  {filt['sampling_frequency']:g} Hz",
        f"  cutoff frequency    {filt['cutoff_frequency']:g} Hz (Butterworth order "
        f"{filt['filter_params'].get('nbutter')}, differentiation "
        f"{filt['differentiation_method']})",
        f"  model components    {components}",
        f"  solve (identify)    {decimation}, zero_tolerance {settings['zero_tolerance']:g}, "
        f"wls {settings['wls']}, select_stage {cfg.get('select_stage') or 'fit'}",
        f"  validation data     {validation}",
    ]
    if cfg.get("verification"):
        lines.append(f"  verification        {cfg['verification']}")
    return lines


def _calibration_lines(robot: Any, parsed: Mapping[str, Any], config: Path) -> List[str]:
    cfg = unified_to_legacy_config(robot, create_task_config(robot, parsed, "calibration"))
    measured = [c for c, on in zip(_POSE_COMPONENTS, cfg["measurability"], strict=True) if on]
    model = robot.model
    joints = [str(model.names[j]) for j in cfg["actJoint_idx"]]
    source = cfg.get("data_file")
    calib = CommandLineCalibration(robot, str(config), source or "<--data>")
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.create_param_list()
    n_params = len(calib.calib_config["param_name"])
    return [
        "calibration",
        f"  level               {cfg['calib_model']}"
        + (" with elastic parameters" if cfg.get("non_geom") else ""),
        f"  frames              {cfg['start_frame']} -> {cfg['end_frame']}",
        f"  joints in the chain {_joined(joints)}",
        f"  markers             {cfg['NbMarkers']}, measuring {' '.join(measured)}",
        f"  parameters          {n_params} with base and tool frames estimated (before the "
        "parameters the measured data cannot separate are removed)",
        f"  outlier threshold   {cfg['outlier_eps']:g} m",
        f"  data                {source or 'data.source_file not set: give --data CSV'}",
    ]


def _trajectory_lines(robot: Any, parsed: Mapping[str, Any]) -> List[str]:
    trajectory, identif = load_trajectory_param(robot, dict(parsed))
    return [
        "optimal_trajectory",
        f"  active joints       {_joined(identif.get('active_joints'))}",
        f"  waypoints           {trajectory.get('n_wps')} per segment, "
        f"{trajectory.get('t_s')} s apart, sampled at {trajectory.get('freq')} Hz",
        f"  IPOPT iterations    {trajectory.get('max_iterations')} per segment",
    ]


#: Task name → the lines of its settings (with a robot model).
_TASK_LINES: Dict[str, Callable[[Any, Mapping[str, Any], Path], List[str]]] = {
    "identification": lambda robot, parsed, _: _identification_lines(robot, parsed),
    "calibration": _calibration_lines,
    "optimal_trajectory": lambda robot, parsed, _: _trajectory_lines(robot, parsed),
}


def parse_strict(config: str | os.PathLike) -> Dict[str, Any]:
    """The parsed unified configuration, ``extends:`` resolved, every key checked.

    Raises:
        CLIError: Missing file, a legacy flat file, invalid YAML, a template not
            found, an unknown key (with the closest known one) — exit 2.
    """
    path = Path(config)
    require_file(path, "configuration file")
    if not is_unified_config(path):
        raise CLIError(
            f"{path} is not a unified configuration (no 'tasks:' section); convert a legacy "
            "flat file with: figaroh migrate-config OLD NEW"
        )
    try:
        return UnifiedConfigParser(path, strict=True).parse()
    except Exception as exc:  # noqa: BLE001 - every parse failure is a bad configuration
        raise CLIError(one_line(exc)) from exc


def describe_configuration(
    config: str | os.PathLike, parsed: Mapping[str, Any], robot: Any = None
) -> List[str]:
    """Read every enabled task of ``parsed`` as its run would; the lines saying what it uses.

    Args:
        config: The configuration file (named in errors; relative data paths).
        parsed: Its :func:`parse_strict` mapping.
        robot: The :class:`~figaroh.tools.robot.Robot` the joints and frames
            are checked against (None: nothing beyond the keys is checked).

    Raises:
        CLIError: A task setting is invalid: the message names the file, the
            task and the field (exit 2).
    """
    path = Path(config)
    tasks = parsed.get("tasks") or {}
    enabled = [name for name, task in tasks.items() if (task or {}).get("enabled", True)]
    disabled = [name for name in tasks if name not in enabled]
    raw = load_yaml_file_cached(path)
    extends = raw.get("extends") if isinstance(raw, Mapping) else None
    lines = [
        f"configuration       {path}" + (f" (extends {extends})" if extends else ""),
        "keys                every key known (strict check)",
        f"tasks               {', '.join(enabled) or 'none'} enabled"
        + (f"; {', '.join(disabled)} disabled" if disabled else ""),
    ]
    if robot is None:
        lines.append(
            "robot model         none: give --urdf URDF (or robot.urdf in the configuration) "
            "to check the joints, frames, units and ranges of the tasks"
        )
        return lines
    lines.append(
        f"robot model         {robot.model.name} ({robot.model.nq} configuration variables)"
    )
    _check_active_joints(path, parsed, robot.model)
    for name in enabled:
        describe = _TASK_LINES.get(name)
        if describe is None:
            lines += [name, "  (read by its own run; not checked here)"]
            continue
        try:
            lines += describe(robot, parsed, path)
        except CLIError:
            raise
        except Exception as exc:  # noqa: BLE001 - the task parsers raise named errors
            raise _task_error(path, name, exc) from exc
    return lines


def check_configuration(config: str | os.PathLike, robot: Any = None) -> List[str]:
    """:func:`parse_strict` then :func:`describe_configuration`: the summary lines.

    Raises:
        CLIError: The configuration is invalid (exit 2).
    """
    return describe_configuration(config, parse_strict(config), robot)


def check(args: argparse.Namespace) -> int:
    """``figaroh check``: exit 0 when the configuration is valid, 2 otherwise."""
    parsed = parse_strict(args.config)
    urdf = args.urdf or config_robot_urdf(parsed, Path(args.config))
    robot = None
    if urdf is not None:
        robot = load_robot_model(resolve_robot_urdf(urdf), args.package_dir, args.free_flyer)
    for line in describe_configuration(args.config, parsed, robot):
        say(args, line)
    say(args, "valid")
    return EXIT_OK
