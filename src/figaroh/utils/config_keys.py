"""The registry of configuration keys figaroh knows, and the unknown-key check.

A misspelt key is otherwise silently ignored: ``fricton: false`` leaves the
friction terms in the model and ``filter_ordr: 8`` keeps the default filter
order. :func:`check_document` walks a configuration document against the
registry and reports every key it does not know, with the closest known key
("did you mean ...", :func:`difflib.get_close_matches`).

Every key a figaroh 1.0.2 configuration may carry is known, including the
ones figaroh reads nowhere (``trajectory.joint_limit_margin``,
``load_configuration.*``, ``constraints.*``, ...): they are tolerated, not
reported.

Schema notation: a schema is a mapping from key to the schema of its value;
``None`` (:data:`FREE`) means "any value, keys below are not checked" (used for
user sections such as ``custom`` and ``variables``); a key starting with ``_``
is free everywhere (private keys, e.g. a ``_defaults: &d`` anchor holder); the
key ``"*"``
(:data:`ANY_NAME`) matches any name (task names, joint names). A schema applied
to a list checks every mapping item of the list (marker lists, the one-element
blocks of the legacy format). A :class:`Generated` node is built when a
document is checked: the keys of the joint terms (``mechanics.*``,
``problem.model_components.*`` and their legacy ``robot_params`` /
``problem_params`` counterparts) are generated from
:data:`figaroh.tools.joint_terms.JOINT_TERMS`, read at check time, so a new
row's keys are known without editing this module.

Strict mode: unknown keys are logged as warnings (and emitted as
:class:`UnknownConfigKeyWarning`); under strict mode they are refused with
:class:`UnknownConfigKeyError`. Strict mode is on when the loader is called
with ``strict=True``, when the document has the top-level key
``strict_keys: true``, or when the environment variable ``FIGAROH_STRICT_KEYS``
is ``1``/``true``/``yes``; ``strict=False`` turns it off whatever the file or
environment say.
"""

from __future__ import annotations

import difflib
import logging
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from figaroh.tools import joint_terms
from figaroh.utils.error_handling import ConfigurationError

logger = logging.getLogger(__name__)

__all__ = [
    "ANY_NAME",
    "FREE",
    "Generated",
    "STRICT_ENV",
    "STRICT_KEY",
    "UNIFIED_SCHEMA",
    "TASK_SCHEMAS",
    "LEGACY_SCHEMA",
    "UnknownKey",
    "UnknownConfigKeyError",
    "UnknownConfigKeyWarning",
    "check_document",
    "find_unknown_keys",
    "report_unknown_keys",
    "strict_requested",
]

Schema = Union[Mapping[str, Any], "Generated", None]

#: Value whose content is not checked.
FREE: Schema = None
#: Key matching any name.
ANY_NAME = "*"
#: Top-level key turning strict mode on for one document.
STRICT_KEY = "strict_keys"
#: Environment variable turning strict mode on for every document.
STRICT_ENV = "FIGAROH_STRICT_KEYS"


def _leaves(*names: str) -> dict[str, Schema]:
    return dict.fromkeys(names, FREE)


@dataclass(frozen=True)
class Generated:
    """A schema node built each time a document is checked.

    Attributes:
        build: ``() -> schema``, called at check time (so it reads the tables
            it is generated from, e.g. :data:`~figaroh.tools.joint_terms.JOINT_TERMS`,
            as they are then).
    """

    build: Callable[[], Schema]


def _resolved(schema: Schema) -> Mapping[str, Any] | None:
    """The schema itself, or the one a :class:`Generated` node builds now."""
    while isinstance(schema, Generated):
        schema = schema.build()
    return schema


def _with_path(schema: dict[str, Schema], path: tuple[str, ...]) -> None:
    """Add the nested key ``path`` (its last key free) to ``schema``, in place."""
    head, rest = path[0], path[1:]
    if not rest:
        schema.setdefault(head, FREE)
        return
    below = _resolved(schema[head]) if head in schema else {}
    if below is None:
        return  # already free below
    sub = dict(below)
    schema[head] = sub
    _with_path(sub, rest)


# ---------------------------------------------------------------------------
# joint-term keys, generated from figaroh.tools.joint_terms.JOINT_TERMS
# ---------------------------------------------------------------------------


def _mechanics() -> dict[str, Schema]:
    """``mechanics``: gear keys and each joint term's ``mechanics_path``."""
    schema = _leaves("reduction_ratios", "ratio_essential")
    for row in joint_terms.JOINT_TERMS:
        _with_path(schema, row.mechanics_path)
    return schema


def _model_components() -> dict[str, Schema]:
    """``problem.model_components``: each joint term's ``component_key`` and the regressor kinds."""
    return _leaves(
        *(row.component_key for row in joint_terms.JOINT_TERMS),
        "static_regressor",
        "inertia_regressor",
        "embedded_forces",
    )


def _legacy_robot_params() -> dict[str, Schema]:
    """Legacy ``robot_params``: limits, each joint term's ``legacy_values_key``, gears."""
    return _leaves(
        "q_lim_def",
        "dq_lim_def",
        "ddq_lim_def",
        "tau_lim_def",
        *(row.legacy_values_key for row in joint_terms.JOINT_TERMS),
        "reduction_ratio",
        "ratio_essential",
        "Iam6",
        "fvm6",
        "fsm6",
        "N",
    )


def _legacy_problem_params() -> dict[str, Schema]:
    """Legacy ``problem_params``: each joint term's ``enable_key`` and the other switches."""
    return _leaves(
        "active_joints",
        "is_external_wrench",
        "is_joint_torques",
        "force_torque",
        "external_wrench_offsets",
        *joint_terms.enable_keys(),
        "has_coupled_wrist",
        "is_static_regressor",
        "is_inertia_regressor",
        "embedded_forces",
    )


# ---------------------------------------------------------------------------
# unified format
# ---------------------------------------------------------------------------

#: ``robot.properties`` (also accepted directly in a task, where it overrides the robot's).
ROBOT_PROPERTIES: dict[str, Schema] = {
    "joints": {
        "active_joints": FREE,
        "joint_limits": _leaves("position", "velocity", "acceleration", "torque"),
    },
    "mechanics": Generated(_mechanics),
    "coupling": _leaves("has_coupled_wrist", "coupled_joints", "Iam6", "fvm6", "fsm6"),
    # Robot descriptions carried through, read by robot-specific code only.
    "mobility": FREE,
    "sensors": FREE,
    "drives": FREE,
}

_TASK_COMMON: dict[str, Schema] = {
    **_leaves("enabled", "type", "inherits_from", "description"),
    "instance": FREE,
    "custom": FREE,
    **ROBOT_PROPERTIES,
}

#: The acceptance policy of a task's verdict (``verify()``, the exports, the command line).
_VERIFICATION: dict[str, Schema] = {"scope": FREE, "thresholds": FREE, "confidence_level": FREE}

#: The ``problem`` section of an identification task (extended by the trajectory task).
_IDENTIFICATION_PROBLEM: dict[str, Schema] = {
    **_leaves(
        "include_external_forces",
        "use_joint_torques",
        "force_torque_sensors",
        "external_wrench_offsets",
        "external_force_offsets",  # template key, not read
        "wls",
        "qr_relative_tolerance",
        "torque_fit_joints",
        "coulomb_deadband",
    ),
    "model_components": Generated(_model_components),
}

_IDENTIFICATION: dict[str, Schema] = {
    **_TASK_COMMON,
    "verification": _VERIFICATION,
    "problem": _IDENTIFICATION_PROBLEM,
    "signal_processing": {
        **_leaves(
            "sampling_frequency",
            "cutoff_frequency",
            "filter_type",
            "filter_order",
            "differentiation_method",
        ),
        "filter_params": _leaves("nbutter", "f_butter", "med_fil", "f_sample", "median_padding"),
    },
    "load_configuration": _leaves(
        "additional_mass", "loaded_body_index", "synchronize_joint_motion"
    ),
    "data": {
        **_leaves(
            "validation_data_file", "source_file", "data_directory", "data_dir", "data_files"
        ),
        # ROS bag logs (figaroh.data.bag_source.JointStateBagOptions)
        "bag": _leaves(
            "path",
            "validation_path",
            "joint_topics",
            "resample",
            "effort",
            "motor_constants",
            "jitter_tolerance",
        ),
    },
    # Bounds of the data checks run before the fit (plausible magnitudes).
    "data_checks": _leaves(
        "max_abs_velocity",
        "max_abs_torque",
        "joint_limit_margin",
        "prismatic_limit_margin",
        "velocity_tolerance",
        "acceleration_tolerance",
        "excitation_tolerance",
    ),
    "sample_selection": _leaves("edge_samples", "min_joint_speed"),
    "physical_consistency": {
        **_leaves(
            "enabled",
            "solver",
            "verbose",
            "max_seconds",
            "mass_min",
            "psd_eig_tol",
            "joints",
            "skip_if_feasible",
        ),
        "weights": FREE,
        "cad_constraints": FREE,
    },
    "reconstruction": {
        **_leaves("enabled", "method", "mass_min", "psd_eig_tol"),
        "prior": _leaves("source", "yaml_path"),
        "sdp": _leaves("solver", "max_seconds"),
        "weights": FREE,
        "cad_constraints": FREE,
    },
    "select_stage": FREE,
    "physical_fit": _leaves(
        "enabled", "solver", "second_solver", "mass_min", "prior_weight", "max_seconds"
    ),
    # figaroh 1.0.2 example variants carry these (not read).
    "trajectory": _leaves("velocity_scaling", "acceleration_scaling"),
}

_CALIBRATION: dict[str, Schema] = {
    **_TASK_COMMON,
    "verification": _VERIFICATION,
    "kinematics": _leaves("base_frame", "tool_frame", "free_flying_base"),
    "measurements": {
        "markers": _leaves("name", "reference_joint", "measurable_dof", "measure", "sensor_type"),
        "poses": _leaves("base_pose", "tool_pose"),
    },
    "parameters": {
        **_leaves(
            "calibration_level",
            "include_non_geometric",
            "max_iterations",
            "outlier_threshold",
            "random_seed",
            "regularization_coefficient",
            "tolerance",
            "measurement_std",
            "eliminate_absorbed_parameters",
            "jacobian",
            "number_of_samples",  # figaroh 1.0.2 example variants (not read)
        ),
        "estimation": {
            **_leaves(
                "method",
                "noise_std",
                "excitation_k",
                "cv_folds",
                "cv_seed",
                "cv_multipliers",
                "cv_per_group",
                "cv_sizes",
                "cv_rule",
                "dependency_tol",
            ),
            "priors": _leaves("translation", "rotation", "joint_offset", "prismatic_offset"),
        },
    },
    "data": {
        **_leaves(
            "number_of_samples",
            "sample_configurations_file",
            "source_file",
            "validation_data_file",
            "outlier_threshold",  # figaroh 1.0.2 example variant (not read)
        ),
        # ROS bag logs (figaroh.data.bag_source.PoseBagOptions)
        "bag": _leaves(
            "joint_topics",
            "pose_topic",
            "pose_frame",
            "still_window_s",
            "still_tolerance",
            "min_pose_samples",
        ),
    },
    "eye_hand": _leaves("enabled", "camera_frame", "reference_frame"),
}

_OPTIMAL_CONFIGURATION: dict[str, Schema] = {
    **_TASK_COMMON,
    "parameters": _leaves(
        "number_of_samples",
        "max_optimization_iterations",
        "convergence_threshold",
        "optimization_objectives",
    ),
    "constraints": _leaves("joint_limit_margin", "collision_checking", "workspace_bounds"),
    "output": _leaves(
        "output_file",
        "output_dir",
        "directory",
        "save_configurations",
        "save_metrics",
        "enable_visualization",
    ),
}

_TRAJECTORY_PROBLEM = (
    "soft_lim",
    "max_attempts",
    "max_iterations",
    "segment_attempts",
    "objective",
    "d_opt_epsilon",
    "ipopt_print_level",
    "effort_ks_sharpness",
    "cond_smoothing",
    "ipopt_restarts",
    "information_weight",
    "step_limit_peak",
    "collision_margin",
    "collision_screen",
    "collision_checks_per_interval",
    "collision_check_frequency",
    "collision_hull_chunks",
    "collision_prune_samples",
    "srdf",
)

_OPTIMAL_TRAJECTORY: dict[str, Schema] = {
    **_TASK_COMMON,
    # Inherits from the identification task in the shipped templates.
    **{k: v for k, v in _IDENTIFICATION.items() if k not in ("trajectory", "problem")},
    "trajectory": {
        **_leaves(
            "type",
            "waypoints",
            "frequency",
            "segment_duration",
            "joint_limit_margin",
            "max_optimization_attempts",
            "velocity_scaling",
            "acceleration_scaling",
        ),
        "spline": _leaves("waypoints", "frequency", "segment_duration"),
        "fourier": _leaves(
            "n_harmonics",
            "fourier_frequency",
            "n_samples",
            "reg_lambda",
            "tanh_alpha_id",
            "tanh_alpha_opt",
        ),
    },
    "problem": {**_IDENTIFICATION_PROBLEM, **_leaves(*_TRAJECTORY_PROBLEM)},
    "collision": _leaves(
        "margin",
        "screen",
        "checks_per_interval",
        "check_frequency",
        "hull_chunks",
        "prune_samples",
        "srdf",
    ),
    "constraints": _leaves("velocity_scaling", "acceleration_scaling", "jerk_limit"),
    "output": _leaves(
        "output_file", "save_trajectory", "save_metrics", "plot_results", "enable_visualization"
    ),
}


def _merge(a: Schema, b: Schema) -> Schema:
    """Union of two schemas of one key (a free value wins; generated nodes stay generated)."""
    if a is b:
        return a
    if isinstance(a, Generated) or isinstance(b, Generated):
        return Generated(lambda: _merge(_resolved(a), _resolved(b)))
    if a is None or b is None:
        return FREE
    return _union(a, b)


def _union(*schemas: Mapping[str, Schema]) -> dict[str, Schema]:
    """Key-wise union of schemas (sub-schemas merged, a free value wins)."""
    out: dict[str, Schema] = {}
    for schema in schemas:
        for key, sub in schema.items():
            out[key] = _merge(out[key], sub) if key in out else sub
    return out


#: Schema of each task name; any other task name gets the union of all four.
TASK_SCHEMAS: dict[str, dict[str, Schema]] = {
    "identification": _IDENTIFICATION,
    "calibration": _CALIBRATION,
    "optimal_configuration": _OPTIMAL_CONFIGURATION,
    "optimal_trajectory": _OPTIMAL_TRAJECTORY,
}
_ANY_TASK = _union(*TASK_SCHEMAS.values())

#: Schema of a unified configuration document (``variants`` are checked
#: separately: their body follows the schema of the section they extend).
UNIFIED_SCHEMA: dict[str, Schema] = {
    "extends": FREE,
    "meta": FREE,
    "_metadata": FREE,
    "schema_version": FREE,
    "common": FREE,
    "variables": FREE,
    "custom": FREE,
    STRICT_KEY: FREE,
    "robot": {
        **_leaves("name", "description", "type", "urdf", "package_dirs"),
        "instance": FREE,
        "properties": ROBOT_PROPERTIES,
    },
    "environment": {
        **_leaves(
            "working_directory",
            "data_directory",
            "results_directory",
            "workspace_type",
            "gravity",
            "temperature",
        ),
        "logging": _leaves("level", "format", "file", "console_output"),
        "visualization": _leaves(
            "enabled", "interactive", "save_plots", "plot_directory", "plot_format"
        ),
    },
    "tasks": {**TASK_SCHEMAS, ANY_NAME: _ANY_TASK},
    "variants": FREE,
}

# ---------------------------------------------------------------------------
# legacy flat format (figaroh < 1.0)
# ---------------------------------------------------------------------------

#: Schema of a legacy flat file (``calibration:`` / ``identification:`` sections).
LEGACY_SCHEMA: dict[str, Schema] = {
    "calibration": {
        **_leaves(
            "calib_level",
            "non_geom",
            "base_frame",
            "tool_frame",
            "free_flyer",
            "base_pose",
            "tip_pose",
            "camera_pose",
            "known_baseframe",
            "known_tipframe",
            "coeff_regularize",
            "data_file",
            "sample_configs_file",
            "nb_sample",
            "outlier_eps",
            "base_to_ref_frame",
            "ref_frame",
            "PLOT",
        ),
        "markers": _leaves("ref_joint", "measure"),
        "measurement_std": _leaves("position", "orientation"),
    },
    "identification": {
        "robot_params": Generated(_legacy_robot_params),
        "problem_params": Generated(_legacy_problem_params),
        "processing_params": _leaves("ts", "cut_off_frequency_butterworth"),
        "tls_params": _leaves("mass_load", "which_body_loaded", "sync_joint_motion"),
        "trajectory_params": _leaves("n_wps", "freq", "t_s", *_TRAJECTORY_PROBLEM),
    },
}


# ---------------------------------------------------------------------------
# the check
# ---------------------------------------------------------------------------


class UnknownConfigKeyError(ConfigurationError):
    """A configuration holds keys figaroh does not know, under strict mode.

    A :class:`~figaroh.utils.error_handling.ConfigurationError` (``ValueError``).
    """


class UnknownConfigKeyWarning(UserWarning):
    """A configuration holds a key figaroh does not know (it is ignored)."""


@dataclass(frozen=True)
class UnknownKey:
    """One unknown key.

    Attributes:
        path: Dotted path of the key (``tasks.identification.problem.fricton``).
        suggestion: Closest known key at that place, or ``None``.
    """

    path: str
    suggestion: str | None = None

    def describe(self) -> str:
        """``"'a.b.c' (did you mean 'a.b.d'?)"``."""
        hint = f" (did you mean '{self.suggestion}'?)" if self.suggestion else ""
        return f"'{self.path}'{hint}"


def _closest(key: str, known: list[str]) -> str | None:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not close:
        lowered = {k.lower(): k for k in known}
        close = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
        close = [lowered[c] for c in close]
    return close[0] if close else None


def find_unknown_keys(node: Any, schema: Schema, path: str = "") -> list[UnknownKey]:
    """Every key of ``node`` not in ``schema`` (recursively).

    Args:
        node: Configuration value (mapping, list or scalar).
        schema: Its schema (see the module docstring).
        path: Dotted path of ``node`` (prefix of the reported paths).

    Returns:
        The unknown keys, in document order.
    """
    schema = _resolved(schema)
    if schema is None:
        return []
    if isinstance(node, list):
        found: list[UnknownKey] = []
        for item in node:
            found.extend(find_unknown_keys(item, schema, f"{path}[]"))
        return found
    if not isinstance(node, Mapping):
        return []
    found = []
    known = [k for k in schema if k != ANY_NAME]
    for key, value in node.items():
        name = str(key)
        where = f"{path}.{name}" if path else name
        if name.startswith("_"):
            continue  # private keys (anchor holders such as ``_defaults: &d``) are free
        if name in schema:
            found.extend(find_unknown_keys(value, schema[name], where))
        elif ANY_NAME in schema:
            found.extend(find_unknown_keys(value, schema[ANY_NAME], where))
        else:
            hint = _closest(name, known)
            found.append(UnknownKey(where, f"{path}.{hint}" if path and hint else hint))
    return found


def _variant_unknown_keys(variants: Any) -> list[UnknownKey]:
    """Unknown keys of ``variants.<name>`` bodies (schema of the extended section)."""
    if not isinstance(variants, Mapping):
        return []
    found: list[UnknownKey] = []
    for name, body in variants.items():
        if not isinstance(body, Mapping):
            continue
        target = body.get("extends")
        schema: Schema = UNIFIED_SCHEMA
        if isinstance(target, str):
            schema = UNIFIED_SCHEMA
            for part in target.split("."):
                schema = _resolved(schema)
                if not isinstance(schema, Mapping):
                    break
                schema = schema.get(part, schema.get(ANY_NAME, FREE))
            schema = _resolved(schema)
            if isinstance(schema, Mapping):
                schema = {**schema, "extends": FREE}
        found.extend(find_unknown_keys(body, schema, f"variants.{name}"))
    return found


def strict_requested(document: Any = None, strict: bool | None = None) -> bool:
    """Whether strict mode applies: ``strict``, else ``strict_keys``, else the environment."""
    if strict is not None:
        return bool(strict)
    if isinstance(document, Mapping) and document.get(STRICT_KEY) is not None:
        return bool(document.get(STRICT_KEY))
    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def report_unknown_keys(
    unknown: list[UnknownKey], source: str, *, strict: bool, stacklevel: int = 3
) -> None:
    """Warn about (or, under ``strict``, refuse) ``unknown`` keys of ``source``.

    Raises:
        UnknownConfigKeyError: ``strict`` and at least one unknown key.
    """
    if not unknown:
        return
    listed = ", ".join(u.describe() for u in unknown)
    if strict:
        raise UnknownConfigKeyError(
            f"unknown configuration key(s) in {source}: {listed}. Fix the spelling or remove "
            f"the key(s) (strict mode: strict=True, '{STRICT_KEY}: true' or {STRICT_ENV}=1)"
        )
    message = (
        f"unknown configuration key(s) in {source} are ignored: {listed}. Fix the spelling "
        f"or remove them ('{STRICT_KEY}: true' or strict=True refuses unknown keys)"
    )
    logger.warning("%s", message)
    warnings.warn(message, UnknownConfigKeyWarning, stacklevel=stacklevel)


def check_document(
    document: Any,
    source: str,
    *,
    strict: bool | None = None,
    schema: Union[str, Schema] = "unified",
) -> list[UnknownKey]:
    """Check a configuration document's keys against the registry.

    Args:
        document: Parsed YAML document (one file, before template merging).
        source: File name named in the messages.
        strict: Strict-mode override (see :func:`strict_requested`).
        schema: ``"unified"`` (default, variants included), ``"legacy"``, or a
            schema mapping.

    Returns:
        The unknown keys (already warned about).

    Raises:
        UnknownConfigKeyError: strict mode and unknown keys.
    """
    if schema == "unified":
        unknown = find_unknown_keys(document, UNIFIED_SCHEMA)
        if isinstance(document, Mapping):
            unknown.extend(_variant_unknown_keys(document.get("variants")))
    elif schema == "legacy":
        unknown = find_unknown_keys(document, LEGACY_SCHEMA)
    else:
        unknown = find_unknown_keys(document, schema)  # type: ignore[arg-type]
    report_unknown_keys(unknown, source, strict=strict_requested(document, strict), stacklevel=4)
    return unknown
