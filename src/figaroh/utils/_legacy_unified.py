"""Legacy flat configuration → unified document: the pure mapping (no files).

Legacy files hold a top-level ``calibration:`` mapping (``calib_level``,
``base_frame``, ``markers`` ...) and/or an ``identification:`` mapping of
one-element lists (``robot_params``, ``problem_params``,
``processing_params``, ``tls_params``). The functions here map them onto the
unified layout (``robot.properties`` + ``tasks.calibration`` /
``tasks.identification``), the inverse of
:func:`figaroh.calibration.config.unified_to_legacy_config` and
:func:`figaroh.identification.config.unified_to_legacy_identif_config`. The
public ones are re-exported by :mod:`figaroh.utils.config_migration`, which
adds the file handling, the self check and the command line.

Legacy quirks handled: the YAML string ``None`` means "no value"; numbers
written as ``1e-6`` (a string for YAML 1.1) are converted to floats; keys
the unified schema has no place for are preserved under ``custom.legacy_*``.
"""

from __future__ import annotations

import copy
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from figaroh.utils.unified_config import deep_merge

logger = logging.getLogger(__name__)

__all__ = [
    "TASKS",
    "TEMPLATE_PATHS",
    "clean_value",
    "has_section",
    "legacy_block",
    "nonzero_regularization",
    "convert_legacy_to_unified",
    "legacy_calibration_to_unified",
    "legacy_identification_to_unified",
    "merge_unified_sections",
]

#: ``extends`` value written for each template name (relative to the output file).
TEMPLATE_PATHS = {
    "base": "../../templates/base_robot_config.yaml",
    "manipulator": "../../templates/manipulator_robot.yaml",
    "humanoid": "../../templates/humanoid_robot.yaml",
}

TASKS = ("calibration", "identification")
_DEFAULT_MEASURE = [True, True, True, False, False, False]
_NONE_STRINGS = {"none", "null", "~", ""}
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_INTEGER = re.compile(r"^[+-]?\d+$")

_CALIB_KEYS = {
    "calib_level",
    "non_geom",
    "coeff_regularize",
    "outlier_eps",
    "base_frame",
    "tool_frame",
    "free_flyer",
    "markers",
    "base_pose",
    "tip_pose",
    "data_file",
    "sample_configs_file",
    "nb_sample",
    "base_to_ref_frame",
    "ref_frame",
}
_ROBOT_PARAM_MAP = {
    "q_lim_def": ("joints", "joint_limits", "position"),
    "dq_lim_def": ("joints", "joint_limits", "velocity"),
    "ddq_lim_def": ("joints", "joint_limits", "acceleration"),
    "tau_lim_def": ("joints", "joint_limits", "torque"),
    "fv": ("mechanics", "friction_coefficients", "viscous"),
    "fs": ("mechanics", "friction_coefficients", "static"),
    "Ia": ("mechanics", "actuator_inertias"),
    "offset": ("mechanics", "joint_offsets"),
    "reduction_ratio": ("mechanics", "reduction_ratios"),
    "ratio_essential": ("mechanics", "ratio_essential"),
    "Iam6": ("coupling", "Iam6"),
    "fvm6": ("coupling", "fvm6"),
    "fsm6": ("coupling", "fsm6"),
}
_PROBLEM_MAP = {
    "is_external_wrench": ("include_external_forces",),
    "is_joint_torques": ("use_joint_torques",),
    "external_wrench_offsets": ("external_wrench_offsets",),
    "has_friction": ("model_components", "friction"),
    "has_actuator_inertia": ("model_components", "actuator_inertia"),
    "has_joint_offset": ("model_components", "joint_offset"),
}
_LEGACY_PROBLEM_ONLY = ("is_static_regressor", "is_inertia_regressor", "embedded_forces")


# ---------------------------------------------------------------------------
# value helpers
# ---------------------------------------------------------------------------


def clean_value(value: Any) -> Any:
    """Legacy value normalisation: ``"None"`` → None, ``"1e-6"`` → 1e-6, recursively."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _NONE_STRINGS:
            return None
        if _NUMBER.match(text):
            if _INTEGER.match(text):
                return int(text)
            return float(text)
        return value
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    if isinstance(value, dict):
        return {k: clean_value(v) for k, v in value.items()}
    return value


def legacy_block(
    section: Mapping[str, Any],
    key: str,
    *,
    clean: Callable[[Any], Any] = clean_value,
    error: type[Exception] = ValueError,
) -> dict[str, Any]:
    """``section[key][0]`` of a legacy identification section, cleaned (``{}`` if absent).

    Legacy blocks are one-element lists of mappings; a bare mapping is taken
    as it is, and a list of several logs a warning (only the first is used).

    Args:
        section: The legacy ``identification`` section.
        key: Block name (``robot_params``, ``problem_params``, ...).
        clean: Applied to every value of the block (default
            :func:`clean_value`).
        error: Exception class raised for a block that is not a mapping.

    Returns:
        The cleaned block as a new dict.
    """
    block = section.get(key)
    if block is None:
        return {}
    if isinstance(block, list):
        if not block:
            return {}
        if len(block) > 1:
            logger.warning(
                "legacy identification.%s has %d entries; only the first is used", key, len(block)
            )
        block = block[0]
    if not isinstance(block, Mapping):
        raise error(
            f"legacy identification.{key} must be a list holding one mapping, got {block!r}"
        )
    return {k: clean(v) for k, v in block.items()}


def _set(tree: dict[str, Any], path: Sequence[str], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def _frequency_from_period(ts: Any) -> float:
    """Sampling frequency [Hz] = 1 / ``ts`` [s], rounded to 12 significant digits."""
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts) or ts <= 0:
        raise ValueError(
            f"legacy identification.processing_params.ts must be a positive period [s], got {ts!r}"
        )
    return float(f"{1.0 / ts:.12g}")


# ---------------------------------------------------------------------------
# section converters
# ---------------------------------------------------------------------------


def nonzero_regularization(value: Any) -> bool:
    """True when a legacy ``coeff_regularize`` holds a non-zero value (or a non-number)."""
    if value is None:
        return False
    try:
        return float(value) != 0.0
    except (TypeError, ValueError):
        return True


def _calib_measurements(cal: Mapping[str, Any]) -> dict[str, Any]:
    """``measurements`` of a legacy section: markers (measurable DOFs), poses [m, rad]."""
    raw_markers = cal.get("markers") or []
    if not isinstance(raw_markers, list):
        raise ValueError(f"legacy calibration.markers must be a list, got {raw_markers!r}")
    markers = []
    for i, marker in enumerate(raw_markers, start=1):
        marker = marker or {}
        if not isinstance(marker, Mapping):
            raise ValueError(
                f"legacy calibration.markers[{i - 1}] must be a mapping, got {marker!r}"
            )
        entry: dict[str, Any] = {"name": f"marker_{i}"}
        if marker.get("ref_joint") is not None:
            entry["reference_joint"] = marker["ref_joint"]
        measure = marker.get("measure")
        entry["measurable_dof"] = list(measure) if measure else list(_DEFAULT_MEASURE)
        markers.append(entry)
    if not markers:
        markers = [{"name": "marker_1", "measurable_dof": list(_DEFAULT_MEASURE)}]
    measurements: dict[str, Any] = {"markers": markers}
    poses = {}
    if cal.get("base_pose") is not None:
        poses["base_pose"] = cal["base_pose"]
    if cal.get("tip_pose") is not None:
        poses["tool_pose"] = cal["tip_pose"]
    if poses:
        measurements["poses"] = poses
    return measurements


def _calib_data(cal: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (source file, sample configurations, number of samples) of a legacy section."""
    data: dict[str, Any] = {}
    if "data_file" in cal:
        data["source_file"] = cal["data_file"]
    if "sample_configs_file" in cal:
        data["sample_configurations_file"] = cal["sample_configs_file"]
    data["number_of_samples"] = int(cal["nb_sample"]) if cal.get("nb_sample") is not None else 500
    return data


def _calib_leftovers(calib_data: Mapping[str, Any], refused_regularization: bool) -> dict:
    """Legacy keys without a unified place (and a refused ``coeff_regularize``), logged."""
    extra = {k: v for k, v in calib_data.items() if k not in _CALIB_KEYS}
    if refused_regularization:
        extra["coeff_regularize"] = calib_data["coeff_regularize"]
        logger.warning(
            "legacy calibration.coeff_regularize = %r is not supported (the calibration "
            "solver applies no Tikhonov penalty; use estimation.method: map for priors): "
            "migrated as regularization_coefficient: 0",
            calib_data["coeff_regularize"],
        )
    if extra:
        logger.warning(
            "legacy calibration keys %s have no unified equivalent; kept under "
            "custom.legacy_calibration_params",
            sorted(extra),
        )
    return extra


def legacy_calibration_to_unified(calib_data: Mapping[str, Any]) -> dict[str, Any]:
    """Convert a legacy ``calibration:`` mapping to ``{"tasks": {"calibration": ...}}``.

    Mapping (legacy → unified, default): ``calib_level`` →
    ``parameters.calibration_level`` (``full_params``), ``non_geom`` →
    ``parameters.include_non_geometric`` (False), ``coeff_regularize`` →
    ``parameters.regularization_coefficient`` (0; the calibration loader
    refuses any other value, so a non-zero legacy coefficient is written as 0
    with a warning and kept verbatim under
    ``custom.legacy_calibration_params.coeff_regularize``), ``outlier_eps`` [m] →
    ``parameters.outlier_threshold`` (0.05), ``base_frame`` →
    ``kinematics.base_frame`` (``universe``), ``tool_frame`` →
    ``kinematics.tool_frame``, ``free_flyer`` → ``kinematics.free_flying_base``,
    markers ``{ref_joint, measure}`` → ``{reference_joint, measurable_dof}``
    (``[T, T, T, F, F, F]``), ``base_pose``/``tip_pose`` ([m, rad]) →
    ``measurements.poses.base_pose``/``tool_pose``, ``data_file`` /
    ``sample_configs_file`` / ``nb_sample`` → ``data.source_file`` /
    ``sample_configurations_file`` / ``number_of_samples`` (500), and
    ``base_to_ref_frame``/``ref_frame`` → ``eye_hand {enabled: true,
    camera_frame, reference_frame}``.

    A section without ``tool_frame`` (an empty skeleton) is migrated with
    ``enabled: false`` because a calibration cannot run without it. Keys the
    schema has no place for are kept under ``custom.legacy_calibration_params``
    (the result then also has a ``custom`` entry).

    Args:
        calib_data: Legacy ``calibration`` mapping.

    Returns:
        dict: ``{"tasks": {"calibration": {...}}}`` (plus ``custom`` when needed).

    Raises:
        ValueError: ``calib_data`` is not a mapping or ``markers`` is malformed.
    """
    if not isinstance(calib_data, Mapping):
        raise ValueError(f"legacy calibration section must be a mapping, got {calib_data!r}")
    cal = {k: clean_value(v) for k, v in calib_data.items()}

    refused_regularization = nonzero_regularization(cal.get("coeff_regularize"))
    parameters = {
        "calibration_level": cal.get("calib_level") or "full_params",
        "include_non_geometric": bool(cal.get("non_geom") or False),
        "regularization_coefficient": 0.0,
        "outlier_threshold": 0.05 if cal.get("outlier_eps") is None else cal["outlier_eps"],
    }
    kinematics: dict[str, Any] = {"base_frame": cal.get("base_frame") or "universe"}
    if cal.get("tool_frame") is not None:
        kinematics["tool_frame"] = cal["tool_frame"]
    kinematics["free_flying_base"] = bool(cal.get("free_flyer") or False)

    measurements = _calib_measurements(cal)

    data = _calib_data(cal)

    enabled = cal.get("tool_frame") is not None
    if not enabled:
        logger.warning(
            "legacy calibration section has no tool_frame: migrated as "
            "tasks.calibration.enabled: false"
        )
    task: dict[str, Any] = {
        "enabled": enabled,
        "type": "kinematic_calibration",
        "parameters": parameters,
        "kinematics": kinematics,
        "measurements": measurements,
        "data": data,
    }
    if cal.get("base_to_ref_frame") is not None or cal.get("ref_frame") is not None:
        task["eye_hand"] = {
            "enabled": True,
            "camera_frame": cal.get("base_to_ref_frame"),
            "reference_frame": cal.get("ref_frame"),
        }
    result: dict[str, Any] = {"tasks": {"calibration": task}}
    extra = _calib_leftovers(calib_data, refused_regularization)
    if extra:
        result["custom"] = {"legacy_calibration_params": clean_value(extra)}
    return result


def _identif_properties(
    robot_params: Mapping[str, Any], problem_params: Mapping[str, Any], custom: dict
) -> dict[str, Any]:
    """``robot.properties`` of the legacy ``robot_params`` (unmapped keys into ``custom``)."""
    properties: dict[str, Any] = {}
    for key, path in _ROBOT_PARAM_MAP.items():
        if robot_params.get(key) is not None:
            _set(properties, path, robot_params[key])
    if robot_params.get("torque_lim_def") is not None and robot_params.get("tau_lim_def") is None:
        _set(properties, ("joints", "joint_limits", "torque"), robot_params["torque_lim_def"])
    extra_robot = {
        k: v for k, v in robot_params.items() if k not in _ROBOT_PARAM_MAP and k != "torque_lim_def"
    }
    if extra_robot:
        custom["legacy_robot_params"] = extra_robot
    if problem_params.get("active_joints") is not None:
        _set(properties, ("joints", "active_joints"), list(problem_params["active_joints"]))
    _set(
        properties,
        ("coupling", "has_coupled_wrist"),
        bool(problem_params.get("has_coupled_wrist") or False),
    )
    return properties


def _identif_problem(problem_params: Mapping[str, Any], custom: dict) -> dict[str, Any]:
    """``tasks.identification.problem`` of the legacy ``problem_params``."""
    problem: dict[str, Any] = {}
    for key, path in _PROBLEM_MAP.items():
        if problem_params.get(key) is not None:
            _set(problem, path, problem_params[key])
    if problem_params.get("force_torque") is not None:
        problem["force_torque_sensors"] = [problem_params["force_torque"]]
    legacy_only = {k: problem_params[k] for k in _LEGACY_PROBLEM_ONLY if k in problem_params}
    other_problem = {
        k: v
        for k, v in problem_params.items()
        if k not in _PROBLEM_MAP
        and k not in _LEGACY_PROBLEM_ONLY
        and k not in ("force_torque", "active_joints", "has_coupled_wrist")
    }
    legacy_only.update(other_problem)
    if legacy_only:
        custom["legacy_problem_params"] = legacy_only
    return problem


def _identif_signal_processing(processing: Mapping[str, Any], custom: dict) -> dict[str, Any]:
    """``signal_processing`` [Hz] of the legacy ``processing_params`` (``ts`` [s])."""
    ts = processing.get("ts")
    signal_processing = {
        "sampling_frequency": 5000.0 if ts is None else _frequency_from_period(ts),
        "cutoff_frequency": (
            100.0
            if processing.get("cut_off_frequency_butterworth") is None
            else processing["cut_off_frequency_butterworth"]
        ),
    }
    extra_processing = {
        k: v for k, v in processing.items() if k not in ("ts", "cut_off_frequency_butterworth")
    }
    if extra_processing:
        custom["legacy_processing_params"] = extra_processing
    fs = signal_processing["sampling_frequency"]
    if not signal_processing["cutoff_frequency"] < fs / 2.0:
        logger.warning(
            "legacy cut_off_frequency_butterworth=%s Hz is not below the Nyquist frequency "
            "%s Hz of ts=%s s: the migrated identification task will be refused until "
            "signal_processing.cutoff_frequency is lowered",
            signal_processing["cutoff_frequency"],
            fs / 2.0,
            ts,
        )
    return signal_processing


def _identif_load(tls: Mapping[str, Any], custom: dict) -> dict[str, Any]:
    """``load_configuration`` of the legacy ``tls_params`` (mass [kg], loaded body index)."""
    load = {}
    if tls.get("mass_load") is not None:
        load["additional_mass"] = tls["mass_load"]
    if tls.get("which_body_loaded") is not None:
        index = tls["which_body_loaded"]
        if isinstance(index, float) and index.is_integer():
            index = int(index)
        load["loaded_body_index"] = index
    extra_tls = {k: v for k, v in tls.items() if k not in ("mass_load", "which_body_loaded")}
    if extra_tls:
        custom["legacy_tls_params"] = extra_tls
    return load


def legacy_identification_to_unified(identif_data: Mapping[str, Any]) -> dict[str, Any]:
    """Convert a legacy ``identification:`` mapping to unified sections.

    ``robot_params`` → ``robot.properties`` (joint limits, friction ``fv``
    [N·m·s/rad] / ``fs`` [N·m], actuator inertias ``Ia`` [kg·m²], offsets
    [rad], reduction ratios, ``Iam6/fvm6/fsm6`` coupling terms);
    ``problem_params`` → ``tasks.identification.problem`` (+
    ``coupling.has_coupled_wrist``, default False, and
    ``joints.active_joints``); ``processing_params`` →
    ``signal_processing.sampling_frequency`` = 1/``ts`` [Hz] (5000 when
    absent) and ``cutoff_frequency`` [Hz] (100); ``tls_params`` →
    ``load_configuration``. Unconsumed fields go to ``custom.legacy_*``.

    Args:
        identif_data: Legacy ``identification`` mapping.

    Returns:
        dict: ``{"robot": {"properties": ...}, "tasks": {"identification": ...},
        ["custom": ...]}``.

    Raises:
        ValueError: malformed legacy blocks or a non-positive ``ts``.
    """
    if not isinstance(identif_data, Mapping):
        raise ValueError(f"legacy identification section must be a mapping, got {identif_data!r}")
    robot_params = legacy_block(identif_data, "robot_params")
    problem_params = legacy_block(identif_data, "problem_params")
    processing = legacy_block(identif_data, "processing_params")
    tls = legacy_block(identif_data, "tls_params")
    custom: dict[str, Any] = {}

    properties = _identif_properties(robot_params, problem_params, custom)
    problem = _identif_problem(problem_params, custom)
    signal_processing = _identif_signal_processing(processing, custom)

    task: dict[str, Any] = {
        "enabled": True,
        "type": "dynamic_identification",
        "problem": problem,
        "signal_processing": signal_processing,
    }
    load = _identif_load(tls, custom)
    if load:
        task["load_configuration"] = load

    known_blocks = {"robot_params", "problem_params", "processing_params", "tls_params"}
    for key, value in identif_data.items():
        if key in known_blocks:
            continue
        block = value[0] if isinstance(value, list) and len(value) == 1 else value
        custom[f"legacy_{key}"] = clean_value(block)
        logger.info("legacy identification.%s kept under custom.legacy_%s", key, key)

    result: dict[str, Any] = {
        "robot": {"properties": properties},
        "tasks": {"identification": task},
    }
    if custom:
        result["custom"] = custom
    return result


def merge_unified_sections(*docs: Mapping[str, Any]) -> dict[str, Any]:
    """Merge unified fragments: ``tasks`` and ``custom`` updated, ``robot`` deep-merged.

    Other top-level keys are replaced by the later fragment.
    """
    out: dict[str, Any] = {}
    for doc in docs:
        for key, value in doc.items():
            if key == "tasks":
                out.setdefault("tasks", {}).update(copy.deepcopy(dict(value)))
            elif key == "robot":
                out["robot"] = deep_merge(out.get("robot", {}), value)
            elif key == "custom":
                out.setdefault("custom", {}).update(copy.deepcopy(dict(value)))
            else:
                out[key] = copy.deepcopy(value)
    return out


def has_section(legacy_config: Mapping[str, Any], name: str) -> bool:
    """True when ``legacy_config[name]`` is a non-empty mapping."""
    section = legacy_config.get(name)
    return isinstance(section, Mapping) and bool(section)


def _tasks_to_migrate(legacy_config: Any, template: str, task: str) -> list[str]:
    """The legacy sections :func:`convert_legacy_to_unified` converts (checked)."""
    if template not in TEMPLATE_PATHS:
        raise ValueError(f"Unknown template '{template}'; choose one of {sorted(TEMPLATE_PATHS)}")
    if task not in ("auto",) + TASKS:
        raise ValueError(
            f"Unknown task '{task}'; choose one of ['auto', 'calibration', 'identification']"
        )
    if not isinstance(legacy_config, Mapping):
        raise ValueError(
            f"legacy configuration must be a mapping, got {type(legacy_config).__name__}"
        )
    if "tasks" in legacy_config:
        raise ValueError("configuration already uses the unified format (it has a 'tasks' section)")
    wanted = [t for t in TASKS if has_section(legacy_config, t)] if task == "auto" else [task]
    for name in wanted:
        if not has_section(legacy_config, name):
            raise ValueError(f"legacy configuration has no '{name}' section to migrate")
    if not wanted:
        raise ValueError(
            "legacy configuration has neither a 'calibration' nor an 'identification' section; "
            f"top-level keys: {sorted(legacy_config)}"
        )
    return wanted


def convert_legacy_to_unified(
    legacy_config: Mapping[str, Any], template: str = "base", task: str = "auto"
) -> dict[str, Any]:
    """Convert a whole legacy document to a unified one.

    Args:
        legacy_config: Parsed legacy YAML (top-level ``calibration`` and/or
            ``identification``).
        template: ``"base"``, ``"manipulator"`` or ``"humanoid"``; the result
            starts with ``extends: TEMPLATE_PATHS[template]``.
        task: ``"auto"`` (every section present), ``"calibration"`` or
            ``"identification"`` (only that one).

    Returns:
        dict: the unified document. A task not migrated is ``{"enabled": false}``.

    Raises:
        ValueError: unknown template or task, a document that is already
            unified, or no legacy section to convert.
    """
    wanted = _tasks_to_migrate(legacy_config, template, task)
    fragments = []
    if "calibration" in wanted:
        fragments.append(legacy_calibration_to_unified(legacy_config["calibration"]))
    if "identification" in wanted:
        fragments.append(legacy_identification_to_unified(legacy_config["identification"]))
    merged = merge_unified_sections(*fragments)
    for name in TASKS:
        merged.setdefault("tasks", {}).setdefault(name, {"enabled": False})
    doc: dict[str, Any] = {
        "extends": TEMPLATE_PATHS[template],
        "meta": {
            "schema_version": "2.0",
            "config_type": "robot_configuration",
            "description": "Migrated from the legacy flat configuration format",
        },
    }
    for key in ("robot", "tasks", "custom"):
        if key in merged:
            doc[key] = merged[key]
    return doc
