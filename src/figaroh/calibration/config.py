"""The ``calib_config`` dictionary: unified and legacy configuration parsers.

:func:`unified_to_legacy_config` maps a *task config* (output of
:func:`figaroh.utils.config_parser.create_task_config` for the
``calibration`` task) to the flat ``calib_config`` every calibration routine
consumes; :func:`get_param_from_yaml` does the same for the deprecated legacy
flat ``calibration:`` section.

Frames and joints are checked against the Pinocchio model: an unknown frame
raises :class:`~figaroh.utils.error_handling.ConfigurationError` naming the
config key and the closest frame names of the model.
"""

from __future__ import annotations

import difflib
import logging
import warnings
from pathlib import Path
from typing import Any, List, Mapping, Sequence

import numpy as np

from figaroh._run.verification_policy import CONFIG_KEY as _VERIFICATION_KEY
from figaroh._run.verification_policy import parse_verification_section
from figaroh.calibration.parameter import get_elastic_names
from figaroh.calibration.settings import DEFAULT_SETTINGS
from figaroh.utils.config_keys import (
    LEGACY_SCHEMA,
    find_unknown_keys,
    report_unknown_keys,
    strict_requested,
)
from figaroh.utils.error_handling import MIGRATION_COMMAND, CalibrationError, ConfigurationError
from figaroh.utils.unified_config import (
    UnifiedConfigParser,
    _has_unified_marker,
    create_task_config,
)
from figaroh.utils.yaml_budget import load_yaml_file_cached

logger = logging.getLogger(__name__)

__all__ = [
    "get_param_from_yaml",
    "load_calibration_config",
    "get_sup_joints",
    "regularization_coefficient",
    "unified_to_legacy_config",
]

_DEFAULT_MEASURABILITY = [True, True, True, False, False, False]
_LEVELS = ("full_params", "joint_offset")


def regularization_coefficient(
    value: Any, *, key: str = "parameters.regularization_coefficient"
) -> Any:
    """Check the calibration regularisation coefficient: only 0 (or absent) is accepted.

    The coefficient ``λ`` (dimensionless) meant Tikhonov rows ``sqrt(λ)·θ``
    on the joint parameters (frames excluded), appended by robot-specific
    cost functions: a penalty without statistical meaning that pulls every
    joint correction towards 0 whatever its identifiability, and that the
    calibration solver itself never applies. As in figaroh 1.0.2 a non-zero
    value is refused instead of being carried silently.

    Args:
        value: Coefficient from the configuration, or None.
        key: Configuration key named in the error.

    Returns:
        ``value`` unchanged (None or 0).

    Raises:
        ConfigurationError: (a ``ValueError``) ``value`` is non-zero or not a
            number; the message names ``key`` and the replacements.
    """
    if value is None:
        return value
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{key}: expected a number (0), got {value!r}") from exc
    if number != 0.0:
        raise ConfigurationError(
            f"{key} = {value!r} is not supported: the coefficient λ weights Tikhonov rows "
            "sqrt(λ)·θ on the joint parameters, a penalty with no statistical meaning that the "
            "calibration solver does not apply. Set it to 0 (or remove it) and use "
            "'estimation.method: map' (Gaussian priors on the joint parameters), or add the "
            "rows in your cost_function override."
        )
    return value


def _suggest(name: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(name), list(choices), n=3, cutoff=0.5)
    return f" Did you mean {close}?" if close else ""


def _frame_names(model: Any) -> List[str]:
    return [str(f.name) for f in model.frames]


def _check_frame(model: Any, name: Any, key: str) -> str:
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"{key}: expected a frame name of the model, got {name!r}")
    if not model.existFrame(name):
        raise ConfigurationError(
            f"{key}: frame {name!r} does not exist in model {model.name!r}."
            f"{_suggest(name, _frame_names(model))} Set {key} to one of the model's frames."
        )
    return name


def get_sup_joints(model: Any, start_frame: str, end_frame: str) -> List[int]:
    """Joint ids of the kinematic chain between two frames.

    Takes the support lists (joint ids from the root) of the parent joints
    of both frames, drops the universe joint, then: no shared joints →
    reversed(start-only) + end-only; start branch contained in the end
    branch → ``[last joint of start branch] + end-only`` (the start frame's
    own joint is kept, as figaroh 1.0.2 does); otherwise reversed(start-only) +
    ``[last shared joint]`` + end-only.

    Args:
        model: ``pinocchio.Model``.
        start_frame: Chain start frame name.
        end_frame: Chain end frame name.

    Returns:
        Joint ids (may be empty when both frames hang on the universe).

    Raises:
        ConfigurationError: unknown frame, or end frame before the start frame.
    """
    _check_frame(model, start_frame, "kinematics.base_frame")
    _check_frame(model, end_frame, "kinematics.tool_frame")
    sid = model.frames[model.getFrameId(start_frame)].parentJoint
    eid = model.frames[model.getFrameId(end_frame)].parentJoint
    sup_s = [int(j) for j in model.supports[sid] if j != 0]
    sup_e = [int(j) for j in model.supports[eid] if j != 0]
    shared = [j for j in sup_s if j in sup_e]
    if not shared:
        return list(reversed(sup_s)) + sup_e
    if sup_s == sup_e[: len(sup_s)]:
        return [sup_s[-1]] + sup_e[len(sup_s) :]
    if sup_e == sup_s[: len(sup_e)]:
        raise ConfigurationError(
            f"end frame {end_frame!r} is before start frame {start_frame!r} on the same branch; "
            "swap kinematics.base_frame and kinematics.tool_frame"
        )
    start_only = [j for j in sup_s if j not in shared]
    end_only = [j for j in sup_e if j not in shared]
    return list(reversed(start_only)) + [shared[-1]] + end_only


def _active_joints(model: Any, names: Any, start: str, end: str) -> List[int]:
    if names:
        if isinstance(names, str) or not isinstance(names, Sequence):
            raise ConfigurationError(
                f"joints.active_joints: expected a list of joint names, got {names!r}"
            )
        ids, unknown = [], []
        for n in names:
            if model.existJointName(str(n)):
                ids.append(int(model.getJointId(str(n))))
            else:
                unknown.append(str(n))
        if unknown:
            logger.warning(
                "joints.active_joints: %s are not joints of model %r and are skipped "
                "(model joints: %s)",
                unknown,
                model.name,
                list(model.names[1:]),
            )
        if not ids:
            raise ConfigurationError(
                f"joints.active_joints: none of {list(names)} is a joint of model {model.name!r}"
            )
        return ids
    return get_sup_joints(model, start, end)


def _measurability(markers: Any, key: str) -> List[bool]:
    if not markers:
        return list(_DEFAULT_MEASURABILITY)
    first = markers[0]
    meas = first.get("measurable_dof", first.get("measure")) if isinstance(first, Mapping) else None
    if meas is None:
        return list(_DEFAULT_MEASURABILITY)
    if isinstance(meas, (str, bytes)) or len(meas) != 6:
        raise ConfigurationError(
            f"{key}: expected 6 booleans [x, y, z, roll, pitch, yaw], got {meas!r}"
        )
    if not all(isinstance(m, (bool, np.bool_)) for m in meas):
        raise ConfigurationError(f"{key}: entries must be true/false, got {meas!r}")
    out = [bool(m) for m in meas]
    if not any(out):
        raise ConfigurationError(f"{key}: at least one component must be measured")
    for i, other in enumerate(markers[1:], start=2):
        om = (
            other.get("measurable_dof", other.get("measure"))
            if isinstance(other, Mapping)
            else None
        )
        if om is not None and [bool(m) for m in om] != out:
            logger.warning(
                "marker %d measures %s but the first marker measures %s: every marker is "
                "treated as measuring the first marker's components",
                i,
                list(om),
                out,
            )
    return out


def _check_reference_joints(model: Any, markers: Sequence[Any], key: str, field: str) -> None:
    """Warn about a marker whose ``field`` (reference joint) is not a joint of the model.

    The reference joint is descriptive (the measured point is on the tool
    frame, ``kinematics.tool_frame``); figaroh 1.0.2 never read it, so a wrong
    name is warned about, not refused.
    """
    names = [str(n) for n in model.names]
    for i, marker in enumerate(markers):
        ref = marker.get(field) if isinstance(marker, Mapping) else None
        if ref is None or (isinstance(ref, str) and ref in names):
            continue
        message = (
            f"{key}[{i}].{field}: {ref!r} is not a joint of model {model.name!r}."
            f"{_suggest(str(ref), names[1:])} Set it to the joint carrying the marker "
            "(it is informative only: the measured point is kinematics.tool_frame)"
        )
        logger.warning("%s", message)
        warnings.warn(message, UserWarning, stacklevel=3)


def _integer(value: Any, key: str, default: int) -> int:
    """``int(value)`` (``default`` for None/0/empty) after checking it is an integer."""
    if value is None or value == "" or value == 0:
        return default
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value) or default  # figaroh 1.0.2 accepted int("500")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        raise ConfigurationError(
            f"{key}: expected an integer, got {value!r}"
            + (" (write the number without quotes)" if isinstance(value, str) else "")
        )
    return int(value)


def _nonneg_number(value: Any, key: str) -> Any:
    """``value`` after checking it is a finite number ≥ 0 (a numeric string is converted)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not np.isfinite(value)
        or value < 0
    ):
        raise ConfigurationError(
            f"{key}: expected a finite number >= 0 [m], got {value!r}"
            + (" (write the number without quotes)" if isinstance(value, str) else "")
        )
    return value


def _pose(value: Any, key: str) -> List[float] | None:
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{key}: expected 6 numbers [m, rad], got {value!r}") from exc
    if arr.size != 6 or not np.all(np.isfinite(arr)):
        raise ConfigurationError(f"{key}: expected 6 finite numbers [m, rad], got {value!r}")
    return arr.tolist()


#: Values of ``parameters.jacobian`` (``calib_config["jacobian"]``).
JACOBIAN_CHOICES = ("2-point", "analytic")


def _jacobian_option(value: Any) -> str:
    """``parameters.jacobian``: ``"2-point"`` (figaroh 1.0.2) or ``"analytic"``."""
    if value not in JACOBIAN_CHOICES:
        raise ConfigurationError(
            f"parameters.jacobian is {value!r}: use '2-point' (finite differences, the "
            "figaroh 1.0.2 default) or 'analytic' (faster; the fit stops at a slightly "
            "different point)"
        )
    return str(value)


def _optional_path(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if text.strip() else None


def _common(
    robot: Any,
    *,
    calib_model: Any,
    non_geom: bool,
    start: str,
    end: str,
    free_flyer: bool,
    markers: Sequence[Any],
    marker_key: str,
    active: Any,
) -> dict:
    model = robot.model
    if calib_model not in _LEVELS:
        raise ConfigurationError(
            f"parameters.calibration_level: {calib_model!r} is not supported; use one of {_LEVELS}"
        )
    _check_frame(model, start, "kinematics.base_frame")
    _check_frame(model, end, "kinematics.tool_frame")
    measurability = _measurability(markers, marker_key)
    idx_tool = int(model.getFrameId(end))
    act = _active_joints(model, active, start, end)
    cfg: dict = {
        "robot_name": model.name,
        "q0": robot.q0,
        "NbMarkers": max(1, len(markers)),
        "measurability": measurability,
        "calibration_index": int(sum(measurability)),
        "start_frame": start,
        "end_frame": end,
        "free_flyer": bool(free_flyer),
        "IDX_TOOL": idx_tool,
        "tool_joint": int(model.frames[idx_tool].parentJoint),
        "actJoint_idx": act,
        "config_idx": [int(model.joints[j].idx_q) for j in act],
        "NbJoint": len(act),
        "calib_model": calib_model,
        "non_geom": bool(non_geom),
        "eps": 1e-3,
        "PLOT": 0,
    }
    if non_geom:
        cfg["param_name"] = get_elastic_names(model, act)
    else:
        cfg["param_name"] = []
    return cfg


def unified_to_legacy_config(robot: Any, unified_calib_config: Mapping[str, Any]) -> dict:
    """Map a unified calibration task config to ``calib_config``.

    Args:
        robot: Object with a Pinocchio ``model`` and the neutral ``q0``.
        unified_calib_config: Output of
            ``create_task_config(robot, cfg, "calibration")``.

    Returns:
        ``calib_config``. ``q0`` is the very array
        object ``robot.q0`` (never write into it).

    Raises:
        ConfigurationError: missing ``kinematics.tool_frame``, unknown frame,
            no marker, bad ``measurable_dof``, unknown calibration level,
            malformed poses, a non-zero ``regularization_coefficient``, a
            malformed ``verification`` section (kept, normalised, as
            ``calib_config["verification"]``).
    """
    task_cfg = unified_calib_config
    if not isinstance(task_cfg, Mapping):
        raise ConfigurationError(f"task config must be a mapping, got {type(task_cfg).__name__}")

    def section(name: str) -> Mapping[str, Any]:
        value = task_cfg.get(name) or {}
        if not isinstance(value, Mapping):
            raise ConfigurationError(f"tasks.calibration.{name}: expected a mapping, got {value!r}")
        return value

    params, kin, meas = section("parameters"), section("kinematics"), section("measurements")
    data, eye = section("data"), section("eye_hand")
    markers, end = _unified_markers_and_tool(meas, kin)
    joints = task_cfg.get("joints") or {}
    active = joints.get("active_joints") if isinstance(joints, Mapping) else None
    cfg = _common(
        robot,
        calib_model=params.get("calibration_level", "full_params"),
        non_geom=bool(params.get("include_non_geometric", False)),
        start=kin.get("base_frame", "universe") or "universe",
        end=end,
        free_flyer=bool(kin.get("free_flying_base", False)),
        markers=markers,
        marker_key="measurements.markers[0].measurable_dof",
        active=active,
    )
    cfg["NbMarkers"] = len(markers)
    _check_reference_joints(robot.model, markers, "measurements.markers", "reference_joint")
    _unified_settings(cfg, task_cfg, params, meas)
    _unified_data(cfg, robot.model, params, data, eye)
    if task_cfg.get(_VERIFICATION_KEY) is not None:
        cfg[_VERIFICATION_KEY] = parse_verification_section(
            task_cfg[_VERIFICATION_KEY], "tasks.calibration.verification"
        )
    return cfg


def _unified_markers_and_tool(meas: Mapping[str, Any], kin: Mapping[str, Any]) -> tuple:
    """``(markers, tool_frame)`` of the unified sections (checked)."""
    markers = meas.get("markers") or []
    if not isinstance(markers, Sequence) or isinstance(markers, str):
        raise ConfigurationError(
            f"measurements.markers: expected a list of markers, got {markers!r}"
        )
    if not markers:
        raise ConfigurationError(
            "measurements.markers is empty: add one entry per measured point, e.g. "
            "{name: tool_marker, measurable_dof: [true, true, true, false, false, false]}"
        )
    end = kin.get("tool_frame")
    if not end:
        raise ConfigurationError(
            "kinematics.tool_frame is required (the frame whose pose or point is measured)"
        )
    return markers, end


def _unified_settings(
    cfg: dict, task_cfg: Mapping[str, Any], params: Mapping[str, Any], meas: Mapping[str, Any]
) -> None:
    """Instance, poses, regularisation, outlier threshold, estimation settings, seed."""
    instance = task_cfg.get("instance")
    cfg["instance"] = dict(instance) if isinstance(instance, Mapping) else {}
    poses = meas.get("poses") or {}
    cfg["base_pose"] = _pose(poses.get("base_pose"), "measurements.poses.base_pose")
    cfg["tip_pose"] = _pose(poses.get("tool_pose"), "measurements.poses.tool_pose")
    if cfg["base_pose"] is None and cfg["tip_pose"] is None:
        logger.warning(
            "measurements.poses: neither base_pose nor tool_pose is given (they are "
            "informative only: the solver starts from a closed-form frame estimate)"
        )
    cfg["coeff_regularize"] = regularization_coefficient(
        params.get("regularization_coefficient", 0.0)
    )
    cfg["outlier_eps"] = _nonneg_number(
        params.get("outlier_threshold", DEFAULT_SETTINGS.outlier_threshold),
        "parameters.outlier_threshold",
    )
    estimation = params.get("estimation") or {}
    if not isinstance(estimation, Mapping):
        raise ConfigurationError(
            f"parameters.estimation: expected a mapping such as {{method: map}}, got {estimation!r}"
        )
    cfg["estimation"] = dict(estimation)
    cfg["random_seed"] = _integer(params.get("random_seed", 0), "parameters.random_seed", 0)


def _unified_data(
    cfg: dict,
    model: Any,
    params: Mapping[str, Any],
    data: Mapping[str, Any],
    eye: Mapping[str, Any],
) -> None:
    """Eye-hand frames, sample count, data files and the optional parameter keys."""
    if eye.get("enabled"):
        cam = _check_frame(model, eye.get("camera_frame"), "eye_hand.camera_frame")
        ref = _check_frame(model, eye.get("reference_frame"), "eye_hand.reference_frame")
        cfg["base_to_ref_frame"], cfg["ref_frame"] = cam, ref
    else:
        cfg["base_to_ref_frame"], cfg["ref_frame"] = None, None
    cfg["NbSample"] = _integer(data.get("number_of_samples", 500), "data.number_of_samples", 500)
    cfg["data_file"] = _optional_path(data.get("source_file"))
    cfg["validation_data_file"] = _optional_path(data.get("validation_data_file"))
    if data.get("bag") is not None:  # ROS bag options (figaroh.data.bag_source.PoseBagOptions)
        cfg["bag"] = data["bag"]
    sc = data.get("sample_configurations_file")
    cfg["sample_configs_file"] = None if sc is None else str(sc)
    for key in ("measurement_std", "eliminate_absorbed_parameters"):
        if key in params:
            cfg[key] = params[key]
    if "jacobian" in params:
        cfg["jacobian"] = _jacobian_option(params["jacobian"])


def _legacy_files(cfg: dict, calib_data: Mapping[str, Any]) -> None:
    """``coeff_regularize``, ``data_file``, ``sample_configs_file``, ``outlier_eps``.

    All four are read, or (one missing) all four are None.
    """
    keys = ("coeff_regularize", "data_file", "sample_configs_file", "outlier_eps")
    if all(k in calib_data for k in keys):
        cfg["coeff_regularize"] = regularization_coefficient(
            calib_data["coeff_regularize"], key="calibration.coeff_regularize"
        )
        cfg["data_file"] = _optional_path(calib_data["data_file"])
        sc = calib_data["sample_configs_file"]
        cfg["sample_configs_file"] = None if sc is None else str(sc)
        cfg["outlier_eps"] = calib_data["outlier_eps"]
    else:
        missing = [k for k in keys if k not in calib_data]
        logger.warning(
            "legacy calibration config lacks %s: coeff_regularize, data_file, "
            "sample_configs_file and outlier_eps are all set to None (legacy rule)",
            missing,
        )
        for k in keys:
            cfg[k] = None


def _legacy_eye_hand(cfg: dict, model: Any, calib_data: Mapping[str, Any]) -> None:
    """``base_to_ref_frame`` and ``ref_frame``: both (checked) or neither."""
    cam, ref = calib_data.get("base_to_ref_frame"), calib_data.get("ref_frame")
    if cam and ref:
        cfg["base_to_ref_frame"] = _check_frame(model, cam, "calibration.base_to_ref_frame")
        cfg["ref_frame"] = _check_frame(model, ref, "calibration.ref_frame")
    else:
        if cam or ref:
            logger.warning(
                "calibration: base_to_ref_frame and ref_frame must be given together; "
                "eye-hand mode disabled"
            )
        cfg["base_to_ref_frame"], cfg["ref_frame"] = None, None


def get_param_from_yaml(robot: Any, calib_data: Mapping[str, Any]) -> dict:
    """Legacy flat ``calibration:`` section → ``calib_config`` (deprecated).

    Differences from the unified path: active
    joints always come from the chain; ``coeff_regularize``, ``data_file``,
    ``sample_configs_file`` and ``outlier_eps`` are read all-or-nothing (one
    missing → all four None); ``base_to_ref_frame``/``ref_frame`` are both or
    neither (a lone one logs a warning and both are dropped).

    Args:
        robot: Object with ``model`` and ``q0``.
        calib_data: The legacy ``calibration`` mapping.

    Returns:
        ``calib_config``.

    Raises:
        ConfigurationError: unknown frame, bad markers, unknown level.
    """
    warnings.warn(
        f"Legacy flat calibration config format is deprecated; convert it with {MIGRATION_COMMAND}",
        DeprecationWarning,
        stacklevel=2,
    )
    if not isinstance(calib_data, Mapping):
        raise ConfigurationError(
            f"legacy calibration section must be a mapping, got {type(calib_data).__name__}"
        )
    report_unknown_keys(
        find_unknown_keys(calib_data, LEGACY_SCHEMA["calibration"], "calibration"),
        "the legacy calibration section",
        strict=strict_requested(),
    )
    markers = calib_data.get("markers") or []
    if not markers:
        raise ConfigurationError("calibration.markers is empty: add one {ref_joint, measure} entry")
    _check_reference_joints(robot.model, markers, "calibration.markers", "ref_joint")
    if not calib_data.get("tool_frame"):
        raise ConfigurationError("calibration.tool_frame is required")
    cfg = _common(
        robot,
        calib_model=calib_data.get("calib_level", "full_params"),
        non_geom=bool(calib_data.get("non_geom", False)),
        start=calib_data.get("base_frame", "universe") or "universe",
        end=calib_data["tool_frame"],
        free_flyer=bool(calib_data.get("free_flyer", False)),
        markers=markers,
        marker_key="calibration.markers[0].measure",
        active=None,
    )
    cfg["NbMarkers"] = len(markers)
    cfg["instance"] = {}
    cfg["base_pose"] = _pose(calib_data.get("base_pose"), "calibration.base_pose")
    cfg["tip_pose"] = _pose(calib_data.get("tip_pose"), "calibration.tip_pose")
    if cfg["base_pose"] is None and cfg["tip_pose"] is None:
        logger.warning("calibration: neither base_pose nor tip_pose is given")
    _legacy_files(cfg, calib_data)
    cfg["estimation"] = {}
    cfg["random_seed"] = 0
    _legacy_eye_hand(cfg, robot.model, calib_data)
    cfg["NbSample"] = int(calib_data.get("nb_sample", 500) or 500)
    cfg["validation_data_file"] = None
    return cfg


def load_calibration_config(
    robot: Any, config_file: str | Path, setting_type: str = "calibration"
) -> dict:
    """``calib_config`` of a unified (or legacy, deprecated) configuration file.

    A unified file is parsed, its ``setting_type`` task extracted
    (:func:`~figaroh.utils.config_parser.create_task_config`) and converted
    with :func:`unified_to_legacy_config`; a legacy file must hold a
    top-level ``setting_type`` section, read by :func:`get_param_from_yaml`.
    The file is read and parsed once (the unified parser receives its
    mapping; only templates it extends are read after it).

    Args:
        robot: Robot object (``model``, ``data``).
        config_file: Path of the configuration file.
        setting_type: Task / section name (``"calibration"``).

    Returns:
        dict: the calibration settings.

    Raises:
        CalibrationError: ``"Configuration file not found: …"`` or
            ``"Failed to load configuration: …"`` (the cause names the key).
    """
    path = Path(config_file)
    if not path.is_file():
        raise CalibrationError(f"Configuration file not found: {path}")
    try:
        raw = load_yaml_file_cached(path)
        if _has_unified_marker(raw):
            unified = UnifiedConfigParser(path)._parse(raw)
            return unified_to_legacy_config(robot, create_task_config(robot, unified, setting_type))
        if not isinstance(raw, Mapping) or setting_type not in raw:
            raise KeyError(
                f"legacy config {path} has no '{setting_type}' section "
                f"(top-level keys: {sorted(raw) if isinstance(raw, Mapping) else raw!r})"
            )
        return get_param_from_yaml(robot, raw[setting_type])
    except CalibrationError:
        raise
    except Exception as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise CalibrationError(f"Failed to load configuration: {msg}") from exc
