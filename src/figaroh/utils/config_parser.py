"""figaroh 1.0.2's configuration module: the unified parser and the entry points.

The unified-format parser itself lives in :mod:`figaroh.utils.unified_config`
(the tasks build on it); its public names are importable from here, as in
figaroh 1.0.2. This module adds the entry points that also accept legacy task
files: :func:`get_param_from_yaml` returns the task configuration of a unified
configuration (file or mapping) and sends a legacy flat mapping to the
matching legacy reader: a section with ``markers`` / ``calib_level`` /
``base_frame`` / ``tool_frame`` to the calibration reader
(:func:`figaroh.calibration.config.get_param_from_yaml`), one with
``robot_params`` / ``problem_params`` / ``processing_params`` to the
identification reader (:func:`figaroh.identification.config.get_param_from_yaml`).
Because it reaches both task packages, this module sits above them with the
front ends; the task packages and their readers are imported on the first
legacy call (lazy package attributes, declared in the packages' stubs).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Mapping

import figaroh.calibration as _calibration
import figaroh.identification as _identification
from figaroh.utils.error_handling import ConfigurationError
from figaroh.utils.unified_config import (
    LEGACY_CONFIG_MESSAGE,
    LEGACY_CONFIG_REMOVED_MESSAGE,
    PACKAGED_TEMPLATES_DIR,
    UNIFIED_MARKERS,
    ConfigMetadata,
    UnifiedConfigParser,
    _auto_task,
    _has_unified_marker,
    _load_yaml_mapping,
    _source_of,
    create_task_config,
    deep_merge,
    is_unified_config,
    legacy_config_error,
    load_unified_config,
    parse_configuration,
    require_unified_config,
)

__all__ = [
    "ConfigMetadata",
    "ConfigurationError",
    "LEGACY_CONFIG_MESSAGE",
    "LEGACY_CONFIG_REMOVED_MESSAGE",
    "PACKAGED_TEMPLATES_DIR",
    "UNIFIED_MARKERS",
    "UnifiedConfigParser",
    "create_task_config",
    "deep_merge",
    "get_calibration_param_from_yaml",
    "get_identification_param_from_yaml",
    "get_param_from_yaml",
    "is_unified_config",
    "legacy_config_error",
    "load_unified_config",
    "parse_configuration",
    "require_unified_config",
]


def _legacy_route(robot: Any, data: Mapping[str, Any], task_type: str) -> dict:
    """Send a legacy flat mapping to the matching (deprecated) legacy parser."""
    section: Any = data
    if "calibration" in data or "identification" in data:
        present = [k for k in ("calibration", "identification") if data.get(k)]
        if task_type == "auto":
            if len(present) != 1:
                raise ConfigurationError(
                    "Cannot auto-detect task type. Available tasks: "
                    f"{present} (legacy file; pass task_type explicitly)"
                )
            task_type = present[0]
        if task_type not in data:
            raise ConfigurationError(
                f"Task '{task_type}' not found in legacy configuration. Available tasks: {present}"
            )
        section = data[task_type]
    if not isinstance(section, Mapping):
        raise ConfigurationError(f"legacy section must be a mapping, got {section!r}")
    calib_keys = {"markers", "calib_level", "base_frame", "tool_frame"}
    identif_keys = {"robot_params", "problem_params", "processing_params"}
    if calib_keys & set(section):
        return _calibration.config.get_param_from_yaml(robot, section)
    if identif_keys & set(section):
        return _identification.config.get_param_from_yaml(robot, section)
    raise ConfigurationError(
        "Configuration has no 'tasks' section and is not a recognised legacy calibration "
        f"or identification section (keys: {sorted(section)})"
    )


def get_param_from_yaml(
    robot: Any,
    config_data: str | os.PathLike | Mapping[str, Any],
    task_type: str = "auto",
    variant: str | None = None,
) -> dict:
    """Task config of a unified file or mapping (legacy mappings are routed).

    Args:
        robot: Robot object (see :func:`create_task_config`).
        config_data: Path of a configuration file, or a mapping (a parsed
            unified configuration, or a legacy flat mapping).
        task_type: Task name, or ``"auto"`` for the single enabled task.
        variant: Variant to apply when ``config_data`` is a path.

    Returns:
        dict: the *task config* (not ``identif_config``); for a legacy mapping,
        the output of the legacy parser.

    Raises:
        ConfigurationError: unknown/ambiguous task, unreadable file.
    """
    if isinstance(config_data, (str, os.PathLike)):
        path = Path(config_data)
        if not path.is_file():
            raise ConfigurationError(f"Configuration file not found: {path}")
        data = _load_yaml_mapping(path)  # read once: the parser receives the mapping
        if not _has_unified_marker(data):
            return _legacy_route(robot, data, task_type)
        config = UnifiedConfigParser(path, variant)._parse(data)
    elif isinstance(config_data, Mapping):
        config = dict(config_data)
    else:
        raise ConfigurationError(
            f"config_data must be a path or a mapping, got {type(config_data).__name__}"
        )
    if "tasks" not in config:
        return _legacy_route(robot, config, task_type)
    tasks = config["tasks"]
    if not isinstance(tasks, Mapping):
        raise ConfigurationError(f"key 'tasks' in {_source_of(config)} must be a mapping")
    if task_type == "auto":
        task_type = _auto_task(tasks, _source_of(config))
    return create_task_config(robot, config, task_type)


def get_calibration_param_from_yaml(
    robot: Any, config_data: str | os.PathLike | Mapping[str, Any], variant: str | None = None
) -> dict:
    """Deprecated: ``get_param_from_yaml(robot, config_data, "calibration", variant)``."""
    warnings.warn(
        "get_calibration_param_from_yaml is deprecated; use "
        "get_param_from_yaml(robot, config, task_type='calibration')",
        DeprecationWarning,
        stacklevel=2,
    )
    return get_param_from_yaml(robot, config_data, "calibration", variant)


def get_identification_param_from_yaml(
    robot: Any, config_data: str | os.PathLike | Mapping[str, Any], variant: str | None = None
) -> dict:
    """Deprecated: ``get_param_from_yaml(robot, config_data, "identification", variant)``."""
    warnings.warn(
        "get_identification_param_from_yaml is deprecated; use "
        "get_param_from_yaml(robot, config, task_type='identification')",
        DeprecationWarning,
        stacklevel=2,
    )
    return get_param_from_yaml(robot, config_data, "identification", variant)
