"""Convert legacy flat configuration files to the unified format.

Legacy files hold a top-level ``calibration:`` mapping (``calib_level``,
``base_frame``, ``markers`` ...) and/or an ``identification:`` mapping of
one-element lists (``robot_params``, ``problem_params``,
``processing_params``, ``tls_params``). This module maps them onto the
unified layout (``robot.properties`` + ``tasks.calibration`` /
``tasks.identification``), i.e. the inverse of ``unified_to_legacy_config``
and :func:`figaroh.identification.config.unified_to_legacy_identif_config`.

Command line::

    python -m figaroh.utils.config_migration --input OLD.yaml --output NEW.yaml \\
        [--task auto|calibration|identification] [--template base|manipulator|humanoid] \\
        [--urdf robot.urdf] [--robot-name NAME]
    python -m figaroh.utils.config_migration OLD.yaml NEW.yaml

(also installed as ``figaroh-migrate-config``). The output is written
atomically (:func:`figaroh.utils.fileio.atomic_write`: a temporary file
beside it, mode ``0o666 & ~umask``, never inside a sealed archived run) and
the temporary file is parsed with
:class:`~figaroh.utils.config_parser.UnifiedConfigParser` before it replaces
anything. ``extends`` is written only when the chosen template exists
relative to the output file (the ``TEMPLATE_PATHS`` location or a
``templates/`` folder next to / above it); otherwise the file is written
self-contained (no ``extends``; every migrated value is explicit). With
``--urdf`` the result is round-tripped through ``create_task_config`` and the
``unified_to_legacy_*`` converters and compared with the legacy values
(:func:`self_check`); a mismatch makes the command exit with status 1.

Legacy quirks handled: the YAML string ``None`` means "no value"; numbers
written as ``1e-6`` (a string for YAML 1.1) are converted to floats; keys
the unified schema has no place for are preserved under ``custom.legacy_*``.
"""

from __future__ import annotations

import argparse
import copy
import logging
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from figaroh.calibration.config import unified_to_legacy_config
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.utils.config_parser import (
    UnifiedConfigParser,
    _load_yaml_mapping,
    create_task_config,
    deep_merge,
    is_unified_config,
)
from figaroh.utils.error_handling import ConfigurationError
from figaroh.utils.fileio import atomic_write

logger = logging.getLogger(__name__)

__all__ = [
    "TEMPLATE_PATHS",
    "legacy_calibration_to_unified",
    "legacy_identification_to_unified",
    "merge_unified_sections",
    "convert_legacy_to_unified",
    "self_check",
    "migrate_file",
    "main",
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

# Fields compared by self_check: (legacy block, legacy key, identif_config key).
_IDENTIF_CHECKS = (
    ("robot_params", "q_lim_def", "q_lim_def"),
    ("robot_params", "dq_lim_def", "dq_lim_def"),
    ("robot_params", "ddq_lim_def", "ddq_lim_def"),
    ("robot_params", "tau_lim_def", "torque_lim_def"),
    ("robot_params", "fv", "fv"),
    ("robot_params", "fs", "fs"),
    ("robot_params", "Ia", "Ia"),
    ("robot_params", "offset", "off"),
    ("robot_params", "reduction_ratio", "reduction_ratio"),
    ("robot_params", "ratio_essential", "ratio_essential"),
    ("robot_params", "Iam6", "Iam6"),
    ("robot_params", "fvm6", "fvm6"),
    ("robot_params", "fsm6", "fsm6"),
    ("problem_params", "active_joints", "active_joints"),
    ("problem_params", "is_external_wrench", "is_external_wrench"),
    ("problem_params", "is_joint_torques", "is_joint_torques"),
    ("problem_params", "force_torque", "force_torque"),
    ("problem_params", "external_wrench_offsets", "external_wrench_offsets"),
    ("problem_params", "has_friction", "has_friction"),
    ("problem_params", "has_actuator_inertia", "has_actuator_inertia"),
    ("problem_params", "has_joint_offset", "has_joint_offset"),
    ("problem_params", "has_coupled_wrist", "has_coupled_wrist"),
    ("processing_params", "ts", "ts"),
    ("processing_params", "cut_off_frequency_butterworth", "cut_off_frequency_butterworth"),
)
# (legacy key, calib_config key)
_CALIB_CHECKS = (
    ("calib_level", "calib_model"),
    ("non_geom", "non_geom"),
    ("base_frame", "start_frame"),
    ("tool_frame", "end_frame"),
    ("free_flyer", "free_flyer"),
    ("base_pose", "base_pose"),
    ("tip_pose", "tip_pose"),
    ("coeff_regularize", "coeff_regularize"),
    ("outlier_eps", "outlier_eps"),
    ("data_file", "data_file"),
    ("sample_configs_file", "sample_configs_file"),
    ("nb_sample", "NbSample"),
    ("base_to_ref_frame", "base_to_ref_frame"),
    ("ref_frame", "ref_frame"),
)


# ---------------------------------------------------------------------------
# value helpers
# ---------------------------------------------------------------------------


def _clean(value: Any) -> Any:
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
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _block(section: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``section[key][0]`` of a legacy identification section, cleaned (``{}`` if absent)."""
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
        raise ValueError(
            f"legacy identification.{key} must be a list holding one mapping, got {block!r}"
        )
    return {k: _clean(v) for k, v in block.items()}


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


def _nonzero_regularization(value: Any) -> bool:
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
    cal = {k: _clean(v) for k, v in calib_data.items()}

    refused_regularization = _nonzero_regularization(cal.get("coeff_regularize"))
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
        result["custom"] = {"legacy_calibration_params": _clean(extra)}
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
    robot_params = _block(identif_data, "robot_params")
    problem_params = _block(identif_data, "problem_params")
    processing = _block(identif_data, "processing_params")
    tls = _block(identif_data, "tls_params")
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
        custom[f"legacy_{key}"] = _clean(block)
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


def _present(legacy_config: Mapping[str, Any], name: str) -> bool:
    section = legacy_config.get(name)
    return isinstance(section, Mapping) and bool(section)


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
    wanted = [t for t in TASKS if _present(legacy_config, t)] if task == "auto" else [task]
    for name in wanted:
        if not _present(legacy_config, name):
            raise ValueError(f"legacy configuration has no '{name}' section to migrate")
    if not wanted:
        raise ValueError(
            "legacy configuration has neither a 'calibration' nor an 'identification' section; "
            f"top-level keys: {sorted(legacy_config)}"
        )
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


# ---------------------------------------------------------------------------
# self check
# ---------------------------------------------------------------------------


def _values_equal(expected: Any, got: Any) -> bool:
    if isinstance(expected, bool) or isinstance(got, bool):
        return isinstance(expected, bool) and isinstance(got, bool) and expected == got
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(float(expected), float(got), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(expected) == len(got) and all(
            _values_equal(a, b) for a, b in zip(expected, got, strict=True)
        )
    if hasattr(got, "tolist") and isinstance(expected, (list, tuple)):
        return _values_equal(expected, got.tolist())
    return expected == got


def _load_unified(unified_doc: Any) -> dict[str, Any]:
    if isinstance(unified_doc, (str, os.PathLike)):
        return UnifiedConfigParser(unified_doc).parse()
    if not isinstance(unified_doc, Mapping):
        raise ValueError(
            f"unified_doc must be a path or a mapping, got {type(unified_doc).__name__}"
        )
    doc = copy.deepcopy(dict(unified_doc))
    doc.pop("extends", None)  # cannot be resolved without a file location
    return doc


class _CheckResult:
    """The outcome of :func:`self_check` being accumulated (mismatches, checked, notes)."""

    def __init__(self) -> None:
        self.mismatches: dict[str, dict[str, Any]] = {}
        self.checked: list[str] = []
        self.notes: list[str] = []

    def mismatch(self, key: str, expected: Any, got: Any) -> None:
        self.mismatches[key] = {"expected": expected, "got": got}

    def compare(self, name: str, expected: Any, got: Any) -> None:
        self.checked.append(name)
        if not _values_equal(expected, got):
            self.mismatch(name, expected, got)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": not self.mismatches,
            "mismatches": self.mismatches,
            "checked": self.checked,
            "notes": self.notes,
        }


def _task_config(robot: Any, config: Mapping[str, Any], name: str, out: _CheckResult):
    """``create_task_config`` of task ``name``; ``None`` (noted) when disabled or failing."""
    task = (config.get("tasks") or {}).get(name)
    if isinstance(task, Mapping) and task.get("enabled", True) is False:
        out.notes.append(f"tasks.{name} is disabled in the unified document: not compared")
        return None
    try:
        return create_task_config(robot, config, name)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        out.mismatch(f"{name}._conversion", "task config", f"{type(exc).__name__}: {exc}")
        return None


def _check_identification(robot: Any, section: Mapping[str, Any], tc: Mapping, out) -> None:
    """Compare the legacy identification blocks with ``unified_to_legacy_identif_config``."""
    try:
        identif = unified_to_legacy_identif_config(robot, tc)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        out.mismatch("identification._conversion", "identif_config", f"{type(exc).__name__}: {exc}")
        return
    blocks = {
        b: _block(section, b) for b in ("robot_params", "problem_params", "processing_params")
    }
    for block, legacy_key, key in _IDENTIF_CHECKS:
        expected = blocks[block].get(legacy_key)
        if expected is not None:
            out.compare(f"identification.{key}", expected, identif.get(key))


def _check_calibration(robot: Any, cal: Mapping[str, Any], tc: Mapping, out) -> None:
    """Compare the legacy calibration fields with ``unified_to_legacy_config``."""
    try:
        calib = unified_to_legacy_config(robot, tc)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        out.mismatch("calibration._conversion", "calib_config", f"{type(exc).__name__}: {exc}")
        return
    for legacy_key, key in _CALIB_CHECKS:
        expected = cal.get(legacy_key)
        if expected is None:
            continue
        if legacy_key == "coeff_regularize" and _nonzero_regularization(expected):
            out.notes.append(
                f"calibration.coeff_regularize = {expected!r} is not supported "
                "and was migrated as 0 (kept under custom.legacy_calibration_params)"
            )
            expected = 0.0
        out.compare(f"calibration.{key}", expected, calib.get(key))
    markers = cal.get("markers") or []
    if markers and isinstance(markers[0], Mapping) and markers[0].get("measure"):
        out.compare("calibration.measurability", markers[0]["measure"], calib.get("measurability"))
        out.compare("calibration.NbMarkers", len(markers), calib.get("NbMarkers"))


def self_check(robot: Any, legacy_config: Mapping[str, Any], unified_doc: Any) -> dict[str, Any]:
    """Round-trip check of a migration.

    The unified document is flattened with ``create_task_config`` and
    converted with ``unified_to_legacy_identif_config`` /
    ``unified_to_legacy_config``; every field of a fixed list that the legacy
    file specifies (``None`` means unspecified) is compared with the legacy
    value (floats to 1e-9 relative tolerance; ``ts`` [s] is compared after the
    1/ts → sampling_frequency → 1/f round trip; a non-zero legacy
    ``coeff_regularize``, which the migration writes as 0, is expected as 0
    and listed in ``notes``).

    Args:
        robot: Object with ``.model`` (and ``.q0``/``.data`` for calibration).
        legacy_config: Parsed legacy document.
        unified_doc: Unified document (mapping; its ``extends`` is ignored) or
            the path of the written unified file (fully parsed).

    Returns:
        ``{"ok": bool, "mismatches": {"<task>.<field>": {"expected", "got"}},
        "checked": [names], "notes": [str]}``. A conversion failure is
        reported as the mismatch ``"<task>._conversion"``.
    """
    out = _CheckResult()
    config = _load_unified(unified_doc)
    if _present(legacy_config, "identification"):
        tc = _task_config(robot, config, "identification", out)
        if tc is not None:
            _check_identification(robot, legacy_config["identification"], tc, out)
    if _present(legacy_config, "calibration"):
        tc = _task_config(robot, config, "calibration", out)
        if tc is not None:
            cal = {k: _clean(v) for k, v in legacy_config["calibration"].items()}
            _check_calibration(robot, cal, tc, out)
    return out.as_dict()


# ---------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------


class _UrdfRobot:
    """Minimal robot (``model``, ``data``, ``q0``) built from a URDF for the self-check."""

    def __init__(self, urdf: str | os.PathLike, free_flyer: bool = False) -> None:
        import pinocchio as pin

        path = Path(urdf)
        if not path.is_file():
            raise ConfigurationError(f"URDF file not found: {path} (--urdf)")
        try:
            if free_flyer:
                self.model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
            else:
                self.model = pin.buildModelFromUrdf(str(path))
        except Exception as exc:  # noqa: BLE001
            raise ConfigurationError(f"Cannot build a Pinocchio model from {path}: {exc}") from exc
        self.data = self.model.createData()
        self.q0 = pin.neutral(self.model)
        self.urdf = str(path)

    def __repr__(self) -> str:
        return f"_UrdfRobot(urdf='{self.urdf}', nq={self.model.nq}, nv={self.model.nv})"


def _locate_template(template: str, out_dir: Path) -> str | None:
    """``extends`` value reaching ``template`` from ``out_dir``, or None if it does not exist."""
    if template in TEMPLATE_PATHS:
        rel = TEMPLATE_PATHS[template]
        if (out_dir / rel).is_file():
            return rel
        file_name = Path(rel).name
        for directory in (
            out_dir / "templates",
            out_dir.parent / "templates",
            out_dir.parent.parent / "templates",
        ):
            candidate = directory / file_name
            if candidate.is_file():
                return Path(os.path.relpath(candidate.resolve(), out_dir)).as_posix()
        return None
    path = Path(template).expanduser()
    if not path.is_file():
        raise ConfigurationError(
            f"Template '{template}' is neither one of {sorted(TEMPLATE_PATHS)} nor an existing file"
        )
    try:
        return Path(os.path.relpath(path.resolve(), out_dir)).as_posix()
    except ValueError:  # different drive on Windows
        return str(path.resolve())


def _default_robot_name(input_path: Path) -> str:
    stem = input_path.stem
    for suffix in ("_config", "_configuration"):
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


class _Dumper(yaml.SafeDumper):
    """Safe dumper: block mappings, flow-style lists of scalars, no anchors/aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(not isinstance(v, (list, dict)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def _dump_yaml(doc: Mapping[str, Any]) -> str:
    return yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )


def _ordered_document(doc: Mapping[str, Any], name: str, extends: str | None) -> dict:
    """The unified document in file order (extends, meta, robot, tasks, custom)."""
    ordered: dict[str, Any] = {}
    if extends is not None:
        ordered["extends"] = extends
    ordered["meta"] = doc["meta"]
    ordered["robot"] = {"name": name, **doc.get("robot", {})}
    for key in ("tasks", "custom"):
        if key in doc:
            ordered[key] = doc[key]
    return ordered


def _write_checked(src: Path, dst: Path, ordered: Mapping[str, Any]) -> None:
    """Write ``ordered`` to ``dst`` atomically, only once the written file parses."""
    header = (
        f"# Unified configuration migrated from {src.name}\n"
        "# by python -m figaroh.utils.config_migration (review before use).\n"
    )
    text = header + _dump_yaml(ordered)

    def parses(tmp: str) -> None:
        try:
            UnifiedConfigParser(tmp).parse()
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"Migrated configuration for {src} does not parse: {exc}"
            ) from exc

    atomic_write(dst, lambda stream: stream.write(text), check=parses, suffix=".yaml")


def migrate_file(
    input_path: str | os.PathLike,
    output_path: str | os.PathLike,
    task: str = "auto",
    template: str = "base",
    urdf: str | os.PathLike | None = None,
    robot_name: str | None = None,
) -> dict[str, Any]:
    """Migrate a legacy file and write the unified result atomically.

    Args:
        input_path: Legacy YAML file.
        output_path: Unified YAML file to write (its directory is created).
        task: ``"auto"``, ``"calibration"`` or ``"identification"``.
        template: Template name (see :data:`TEMPLATE_PATHS`) or path of a
            template file. ``extends`` is written only if the template exists
            relative to the output file; otherwise the file is self-contained.
        urdf: Optional URDF enabling :func:`self_check`.
        robot_name: ``robot.name`` to write (default: the URDF model name, else
            the input file name without ``_config``).

    Returns:
        ``{"output", "extends", "robot_name", "self_check"}`` (``self_check``
        is None without a URDF).

    Raises:
        ConfigurationError: missing/invalid input, input already unified,
            output equal to input, or a result that does not parse.
        ValueError: unknown task or template name.
    """
    src = Path(input_path).expanduser().resolve()
    dst = Path(output_path).expanduser().resolve()
    if not src.is_file():
        raise ConfigurationError(f"Legacy configuration file not found: {src}")
    if src == dst:
        raise ConfigurationError(f"--output must differ from --input ({src})")
    legacy = _load_yaml_mapping(src)
    if is_unified_config(src):
        raise ConfigurationError(f"{src} already uses the unified configuration format")
    template_name = template if template in TEMPLATE_PATHS else "base"
    try:
        doc = convert_legacy_to_unified(legacy, template_name, task)
    except ValueError as exc:
        raise ConfigurationError(f"Cannot migrate {src}: {exc}") from exc

    robot = None
    if urdf is not None:
        calib = legacy.get("calibration") if isinstance(legacy.get("calibration"), Mapping) else {}
        robot = _UrdfRobot(urdf, free_flyer=bool(_clean(calib.get("free_flyer")) or False))
    name = (
        robot_name or (robot.model.name if robot is not None else None) or _default_robot_name(src)
    )

    dst.parent.mkdir(parents=True, exist_ok=True)
    extends = _locate_template(template, dst.parent)
    if extends is None:
        logger.warning(
            "template '%s' not found relative to %s: writing a self-contained file without "
            "'extends'",
            template,
            dst,
        )
    _write_checked(src, dst, _ordered_document(doc, name, extends))
    logger.info("Wrote unified configuration %s (extends: %s)", dst, extends)

    report: dict[str, Any] = {
        "output": str(dst),
        "extends": extends,
        "robot_name": name,
        "self_check": None,
    }
    if robot is not None:
        report["self_check"] = self_check(robot, legacy, dst)
    return report


def _build_arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m figaroh.utils.config_migration",
        description="Convert a legacy flat figaroh configuration to the unified format.",
    )
    parser.add_argument("legacy", nargs="?", help="legacy YAML file (same as --input)")
    parser.add_argument("unified", nargs="?", help="unified YAML file to write (same as --output)")
    parser.add_argument("--input", "-i", help="legacy YAML file")
    parser.add_argument("--output", "-o", help="unified YAML file to write")
    parser.add_argument(
        "--task",
        choices=("auto",) + TASKS,
        default="auto",
        help="section(s) to migrate (default: every section present)",
    )
    parser.add_argument(
        "--template",
        default="base",
        help="base, manipulator, humanoid, or the path of a template YAML (default: base)",
    )
    parser.add_argument("--urdf", help="robot URDF; enables the round-trip self-check")
    parser.add_argument(
        "--robot-name", help="robot.name to write (default: URDF model name or file name)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status.

    0: written (and self-check passed, if requested); 1: written but the
    self-check found mismatches; 2: usage or input error (nothing written).
    """
    parser = _build_arg_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.input and args.legacy and args.input != args.legacy:
        parser.print_usage(sys.stderr)
        sys.stderr.write(
            "error: give the legacy file either positionally or with --input, not both\n"
        )
        return 2
    if args.output and args.unified and args.output != args.unified:
        parser.print_usage(sys.stderr)
        sys.stderr.write(
            "error: give the output file either positionally or with --output, not both\n"
        )
        return 2
    source = args.input or args.legacy
    target = args.output or args.unified
    if not source or not target:
        parser.print_usage(sys.stderr)
        sys.stderr.write("error: both the legacy input and the unified output file are required\n")
        return 2
    try:
        report = migrate_file(
            source,
            target,
            task=args.task,
            template=args.template,
            urdf=args.urdf,
            robot_name=args.robot_name,
        )
    except (ConfigurationError, ValueError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    sys.stdout.write(f"Wrote {report['output']}")
    sys.stdout.write(
        f" (extends: {report['extends']})\n" if report["extends"] else " (self-contained)\n"
    )
    check = report["self_check"]
    if check is None:
        return 0
    if check["ok"]:
        sys.stdout.write(f"Self-check passed ({len(check['checked'])} fields compared)\n")
        return 0
    sys.stderr.write("Self-check FAILED:\n")
    for key, diff in check["mismatches"].items():
        sys.stderr.write(f"  {key}: expected {diff['expected']!r}, got {diff['got']!r}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
