"""Configuration of the optimal exciting-trajectory design.

:func:`load_param` reads a unified configuration (or a legacy flat file) and
returns ``(trajectory_config, identif_config)``:

* ``identif_config`` — the identification settings (regressor flags,
  friction values, active joints…) from the ``identification`` task;
* ``trajectory_config`` — from the ``optimal_trajectory`` task (which the base
  template declares ``inherits_from: identification``). Keys, their source in
  ``tasks.optimal_trajectory`` and defaults:

  - ``n_wps`` ← ``trajectory.waypoints`` (5); ``freq`` [Hz] ←
    ``trajectory.frequency`` (100); ``t_s`` [s] ← ``trajectory.segment_duration``
    (2.0, time between waypoints);
  - ``soft_lim`` ← ``problem.soft_lim`` (0.05, scalar fraction of each range);
    ``max_attempts`` (1000), ``max_iterations`` (200), ``segment_attempts`` (1),
    ``objective`` (``"condition_number"``), ``d_opt_epsilon`` (1e-6),
    ``cond_smoothing`` (16), ``effort_ks_sharpness`` (200),
    ``ipopt_print_level`` (3), ``ipopt_restarts`` (0: warm restarts of IPOPT
    from the selected point when it stops unconverged), ``information_weight``
    (0), ``step_limit_peak`` (``"cubic"``) ← ``problem.<key>``;
  - ``collision_margin`` [m] (0.01), ``collision_screen`` [m] (0.1),
    ``collision_checks_per_interval`` (10), ``collision_check_frequency`` [Hz]
    (200), ``collision_hull_chunks`` (4), ``collision_prune_samples`` (100) ←
    ``collision.<key without the collision_ prefix>`` (or
    ``problem.<key>``); ``srdf`` ← ``collision.srdf`` (or ``problem.srdf``;
    None).

``objective`` is ``"condition_number"`` (figaroh 1.0.2: the 2-norm condition
number of the base regressor) or ``"d_optimality"`` (−log det of the
regularised, normalised information matrix, see
:mod:`figaroh.optimal.base_optimal_trajectory`). ``cond_smoothing = p > 0``
makes IPOPT minimise the smooth Schatten-p condition number
``‖σ‖_p·‖1/σ‖_p`` (≥ cond₂, → cond₂ as p → ∞) instead of the non-smooth
``σ_max/σ_min`` (0: exact, as figaroh 1.0.2); a list ``[p1, p2, …]`` is a
continuation: IPOPT run k (a warm restart from run k−1's result) uses ``p_k``.
``information_weight = w > 0`` (condition-number objective only) minimises
``cond·exp(w·D)`` with ``D`` the d-optimality criterion, i.e. ``log cond + w·D``:
the condition number is scale-free, so on its own it may buy a lower value by
exciting the robot less (smaller σ_max) and lose precision; the D term keeps
the information up (0: the plain condition number, as figaroh 1.0.2).
Reported condition numbers are always the exact 2-norm ones. The collision keys are described in
:mod:`figaroh.optimal.contraints`. Template keys
``trajectory.joint_limit_margin``, ``constraints.*`` are not read.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Dict, Mapping, Tuple

from figaroh.identification.config import get_param_from_yaml, unified_to_legacy_identif_config
from figaroh.utils.error_handling import ConfigurationError
from figaroh.utils.unified_config import (
    UnifiedConfigParser,
    create_task_config,
    is_unified_config,
    parse_configuration,
    require_unified_config,
)
from figaroh.utils.yaml_budget import load_yaml_file

logger = logging.getLogger(__name__)

__all__ = [
    "COLLISION_DEFAULTS",
    "TRAJECTORY_DEFAULTS",
    "OBJECTIVES",
    "ConfigurationManager",
    "create_config",
    "load_param",
    # Re-exported for figaroh 1.0.2 compatibility.
    "UnifiedConfigParser",
    "create_task_config",
    "require_unified_config",
    "unified_to_legacy_identif_config",
]


#: Collision-avoidance defaults (chosen here: figaroh 1.0.2 had no collision keys).
COLLISION_DEFAULTS: Dict[str, Any] = {
    "collision_margin": 0.01,
    "collision_screen": 0.1,
    "collision_checks_per_interval": 10,
    "collision_check_frequency": 200.0,
    "collision_hull_chunks": 4,
    "collision_prune_samples": 100,
    "srdf": None,
}

#: Trajectory defaults (the values of figaroh 1.0.2).
TRAJECTORY_DEFAULTS: Dict[str, Any] = {
    "n_wps": 5,
    "freq": 100,
    "t_s": 2.0,
    "soft_lim": 0.05,
    "max_attempts": 1000,
    "max_iterations": 200,
    "segment_attempts": 1,
    "objective": "condition_number",
    "d_opt_epsilon": 1e-6,
    "ipopt_print_level": 3,
    "effort_ks_sharpness": 200.0,
    "cond_smoothing": 16.0,
    "ipopt_restarts": 0,
    "information_weight": 0.0,
    "step_limit_peak": "cubic",
}

#: Peak-speed models of the initial guess's waypoint-step limit (``step_limit_peak``).
STEP_LIMIT_PEAKS = ("cubic", "quintic")

#: Objectives understood by :class:`~figaroh.optimal.base_optimal_trajectory.BaseOptimalTrajectory`.
OBJECTIVES = ("condition_number", "d_optimality")


class ConfigurationManager:
    """Placeholder kept for figaroh 1.0.2 compatibility (:func:`load_param` reads the config)."""

    def __repr__(self) -> str:
        return "ConfigurationManager()"


def _number(value: Any, key: str, unit: str, *, integer: bool = False, minimum=None, strict=True):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"trajectory config '{key}' must be a number [{unit}], got {value!r}")
    if integer and int(value) != value:
        raise ValueError(f"trajectory config '{key}' must be an integer, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"trajectory config '{key}' must be finite, got {value!r}")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        op = ">" if strict else "≥"
        raise ValueError(
            f"trajectory config '{key}' must be {op} {minimum} [{unit}], got {value!r}"
        )
    return int(value) if integer else float(value)


def create_config(unified_traj_config: Mapping[str, Any]) -> Dict[str, Any]:
    """``trajectory_config`` from an ``optimal_trajectory`` task config (see module table).

    Args:
        unified_traj_config: Output of
            ``create_task_config(robot, cfg, "optimal_trajectory")`` (the
            parameter name of figaroh 1.0.2).

    Returns:
        The validated trajectory configuration.

    Raises:
        ValueError: A value of the wrong type or range (the message names the key).
    """
    task_cfg = unified_traj_config
    if not isinstance(task_cfg, Mapping):
        raise ValueError(
            "unified_traj_config (the optimal_trajectory task config) must be a mapping, "
            f"got {type(task_cfg).__name__}"
        )

    def section(name: str) -> Mapping[str, Any]:
        value = task_cfg.get(name) or {}
        if not isinstance(value, Mapping):
            raise ValueError(f"tasks.optimal_trajectory.{name} must be a mapping, got {value!r}")
        return value

    trajectory, problem, collision = section("trajectory"), section("problem"), section("collision")
    raw = {
        "n_wps": trajectory.get("waypoints", TRAJECTORY_DEFAULTS["n_wps"]),
        "freq": trajectory.get("frequency", TRAJECTORY_DEFAULTS["freq"]),
        "t_s": trajectory.get("segment_duration", TRAJECTORY_DEFAULTS["t_s"]),
    }
    for key, default in TRAJECTORY_DEFAULTS.items():
        if key not in raw:  # every other default is a ``problem`` key
            raw[key] = problem.get(key, default)
    for key, default in COLLISION_DEFAULTS.items():
        short = key[len("collision_") :] if key.startswith("collision_") else key
        raw[key] = collision.get(short, problem.get(key, default))
    return validate_trajectory_config(raw)


def _check_trajectory_keys(cfg: Mapping[str, Any], out: Dict[str, Any]) -> None:
    """Spline, objective and IPOPT keys of ``cfg`` checked into ``out`` (waypoints, [Hz], [s])."""
    out["n_wps"] = _number(cfg["n_wps"], "n_wps", "-", integer=True, minimum=2, strict=False)
    out["freq"] = _number(cfg["freq"], "freq", "Hz", minimum=0)
    out["t_s"] = _number(cfg["t_s"], "t_s", "s", minimum=0)
    soft = cfg["soft_lim"]
    if isinstance(soft, (list, tuple)):
        raise ValueError(
            f"trajectory config 'soft_lim' must be a scalar fraction in [0, 0.5), got {soft!r} "
            "(a per-joint list is not supported)"
        )
    out["soft_lim"] = _number(soft, "soft_lim", "-", minimum=0, strict=False)
    if out["soft_lim"] >= 0.5:
        raise ValueError(f"trajectory config 'soft_lim' must be < 0.5, got {soft!r}")
    for key in ("max_attempts", "max_iterations", "segment_attempts"):
        out[key] = _number(cfg[key], key, "-", integer=True, minimum=0, strict=False)
    out["ipopt_print_level"] = _number(
        cfg["ipopt_print_level"], "ipopt_print_level", "-", integer=True, minimum=0, strict=False
    )
    if cfg["objective"] not in OBJECTIVES:
        raise ValueError(
            f"trajectory config 'objective' must be one of {OBJECTIVES}, got {cfg['objective']!r}"
        )
    out["d_opt_epsilon"] = _number(cfg["d_opt_epsilon"], "d_opt_epsilon", "-", minimum=0)
    out["information_weight"] = _number(
        cfg["information_weight"], "information_weight", "-", minimum=0, strict=False
    )
    out["ipopt_restarts"] = _number(
        cfg["ipopt_restarts"], "ipopt_restarts", "-", integer=True, minimum=0, strict=False
    )
    if cfg["step_limit_peak"] not in STEP_LIMIT_PEAKS:
        raise ValueError(
            f"trajectory config 'step_limit_peak' must be one of {STEP_LIMIT_PEAKS}, got "
            f"{cfg['step_limit_peak']!r} (problem.step_limit_peak)"
        )
    smoothing = cfg["cond_smoothing"]
    if isinstance(smoothing, (list, tuple)):
        if not smoothing:
            raise ValueError("trajectory config 'cond_smoothing' must not be an empty list")
        out["cond_smoothing"] = [
            _number(p or 0, "cond_smoothing", "-", minimum=0, strict=False) for p in smoothing
        ]
    else:
        out["cond_smoothing"] = _number(
            smoothing or 0, "cond_smoothing", "-", minimum=0, strict=False
        )
    out["effort_ks_sharpness"] = _number(
        cfg["effort_ks_sharpness"], "effort_ks_sharpness", "-", minimum=0
    )


def _check_collision_keys(cfg: Mapping[str, Any], out: Dict[str, Any]) -> None:
    """Collision-avoidance keys of ``cfg`` checked into ``out`` (margins [m], rates [Hz])."""
    out["collision_margin"] = _number(
        cfg["collision_margin"], "collision_margin", "m", minimum=0, strict=False
    )
    if cfg["collision_screen"] is not None:
        out["collision_screen"] = _number(
            cfg["collision_screen"], "collision_screen", "m", minimum=0
        )
    out["collision_checks_per_interval"] = max(
        1,
        _number(
            cfg["collision_checks_per_interval"], "collision_checks_per_interval", "-", integer=True
        ),
    )
    out["collision_check_frequency"] = _number(
        cfg["collision_check_frequency"], "collision_check_frequency", "Hz", minimum=0
    )
    out["collision_prune_samples"] = _number(
        cfg["collision_prune_samples"],
        "collision_prune_samples",
        "-",
        integer=True,
        minimum=0,
        strict=False,
    )
    out["collision_hull_chunks"] = _number(
        cfg["collision_hull_chunks"],
        "collision_hull_chunks",
        "-",
        integer=True,
        minimum=0,
        strict=False,
    )


def validate_trajectory_config(raw: Mapping[str, Any]) -> Dict[str, Any]:
    """Check and normalise a ``trajectory_config`` dict (missing keys take defaults).

    Raises:
        ValueError: Wrong type or range; the message names the key.
    """
    cfg = {**TRAJECTORY_DEFAULTS, **COLLISION_DEFAULTS, **dict(raw)}
    out: Dict[str, Any] = dict(cfg)
    _check_trajectory_keys(cfg, out)
    _check_collision_keys(cfg, out)
    if cfg["srdf"] in ("", "None", "none"):
        out["srdf"] = None
    return out


def _load_unified(robot, config: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    identif_task = create_task_config(robot, config, "identification")
    identif_config = unified_to_legacy_identif_config(robot, identif_task)
    trajectory_config = create_config(create_task_config(robot, config, "optimal_trajectory"))
    return trajectory_config, identif_config


def _load_legacy(robot, data: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    identification = data["identification"]
    identif_config = get_param_from_yaml(robot, identification)
    params = identification.get("trajectory_params") or [{}]
    traj = params[0] if isinstance(params, list) else params
    raw = {key: traj[key] for key in TRAJECTORY_DEFAULTS if key in traj}
    raw.update({key: traj[key] for key in COLLISION_DEFAULTS if key in traj})
    return validate_trajectory_config(raw), identif_config


def load_param(robot, config_file: Any) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Read ``(trajectory_config, identif_config)`` from a configuration.

    Args:
        robot: The robot (its model names the joints).
        config_file: Path of a unified configuration (tasks ``identification``
            and ``optimal_trajectory`` present and enabled) or of a legacy flat
            file (``identification`` section, trajectory keys in
            ``identification.trajectory_params[0]``); or an already parsed
            unified configuration mapping.

    Returns:
        ``(trajectory_config, identif_config)``.

    Raises:
        FileNotFoundError: The file does not exist.
        ConfigurationError: (a ``ValueError``) ``"Missing required configuration
            key: …"`` for a missing key/task, ``"Error loading configuration: …"``
            otherwise.
    """
    try:
        if isinstance(config_file, Mapping):
            data = dict(config_file)
            if "tasks" in data:
                return _load_unified(robot, data)
            return _load_legacy(robot, data)
        path = Path(os.fspath(config_file))
        if not path.is_file():
            raise FileNotFoundError(
                f"Configuration file not found: {path} (give the path of a unified "
                "configuration with 'identification' and 'optimal_trajectory' tasks)"
            )
        if is_unified_config(path):
            return _load_unified(robot, parse_configuration(path))
        data = load_yaml_file(path)
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{path} does not hold a YAML mapping")
        return _load_legacy(robot, data)
    except FileNotFoundError:
        raise
    except KeyError as exc:
        raise ConfigurationError(f"Missing required configuration key: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - documented wrapping
        message = str(exc)
        if "not found" in message and "Task" in message:
            raise ConfigurationError(f"Missing required configuration key: {message}") from exc
        raise ConfigurationError(f"Error loading configuration: {message}") from exc
