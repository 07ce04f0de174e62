"""Configuration parsing and parameter management for robot identification.

This module maps the *task configuration* produced by
:func:`figaroh.utils.config_parser.create_task_config` to the flat
``identif_config`` dict every identification routine consumes
(:func:`unified_to_legacy_identif_config`), and keeps the deprecated parser of
the legacy flat YAML layout (:func:`get_param_from_yaml`) for migration tools.

Units used throughout: frequencies in [Hz], sampling period ``ts`` in [s],
joint positions in [rad] (revolute) or [m] (prismatic), velocities in
[rad/s], accelerations in [rad/s²], torques in [N·m], actuator inertias in
[kg·m²], viscous friction in [N·m·s/rad], Coulomb friction in [N·m].
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping
from typing import Any

from figaroh._run.verification_policy import CONFIG_KEY as _VERIFICATION_KEY
from figaroh._run.verification_policy import parse_verification_section
from figaroh.identification._config_values import as_bool as _as_bool
from figaroh.identification._config_values import check_nyquist as _check_nyquist
from figaroh.identification._config_values import coulomb_deadband
from figaroh.identification._config_values import is_positive_int as _is_positive_int
from figaroh.identification._config_values import number as _number
from figaroh.identification._config_values import numeric_values as _numeric_values
from figaroh.identification._config_values import positive_number as _positive_number
from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.tools import joint_terms
from figaroh.utils._legacy_unified import legacy_block
from figaroh.utils.config_keys import LEGACY_SCHEMA, find_unknown_keys, report_unknown_keys
from figaroh.utils.config_keys import strict_requested as _strict_requested
from figaroh.utils.error_handling import MIGRATION_COMMAND

logger = logging.getLogger(__name__)

__all__ = [
    "SELECT_STAGES",
    "PHYSICAL_FIT_DEFAULTS",
    "DIFFERENTIATION_METHODS",
    "FILTER_PARAM_KEYS",
    "MEDIAN_PADDINGS",
    "unified_to_legacy_identif_config",
    "fill_active_joint_indices",
    "filter_config",
    "coulomb_deadband",
    "get_param_from_yaml",
]

#: Estimates ``select_stage`` may name, in pipeline order.
SELECT_STAGES = ("fit", "reconstruction", "physical_fit")

#: Every key of the ``physical_fit`` mapping with its default.
PHYSICAL_FIT_DEFAULTS: dict[str, Any] = {
    "enabled": False,
    "solver": "cvxopt",
    "second_solver": None,
    "mass_min": 1e-6,
    "prior_weight": 1e-6,
    "max_seconds": None,
}

#: Methods accepted by ``signal_processing.differentiation_method``.
DIFFERENTIATION_METHODS = ("gradient", "forward", "backward", "central")

#: Keyword arguments accepted by the identification filter (``filter_params``).
FILTER_PARAM_KEYS = ("nbutter", "f_butter", "med_fil", "f_sample", "median_padding")

#: Edge handling of the median filter: ``"zero"`` (figaroh 1.0.2) or ``"nearest"``.
MEDIAN_PADDINGS = ("zero", "nearest")

_LEGACY_CONFIG_DEPRECATION_MESSAGE = (
    "Legacy flat config format (top-level 'calibration:'/'identification:' sections with "
    "robot_params/problem_params/processing_params lists) is deprecated and no longer "
    "accepted by load_param(); convert the file to the unified format with: "
    f"{MIGRATION_COMMAND}"
)

_DEFAULT_SAMPLING_FREQUENCY = 5000.0  # [Hz]
_DEFAULT_CUTOFF_FREQUENCY = 100.0  # [Hz]
_DEFAULT_FILTER_ORDER = 4


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------


def _section(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``config[key]`` as a dict: absent or ``None`` → ``{}``; non-mapping → error."""
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise IdentificationConfigError(
            f"section '{key}' of the identification task must be a mapping, "
            f"got {type(value).__name__}: {value!r}"
        )
    return dict(value)


# ---------------------------------------------------------------------------
# section extractors
# ---------------------------------------------------------------------------


def _extract_signal_processing_params(
    identif_config: dict[str, Any], signal_processing: Mapping[str, Any]
) -> None:
    """Write ``ts``, ``nb_samples``, ``cut_off_frequency_butterworth``, ``filter_config``.

    ``ts = 1 / sampling_frequency`` [s] and ``nb_samples = int(1 / ts)`` (the
    number of samples in one second; a tiny tolerance guards against
    ``1 / (1 / f)`` landing just below an integer). ``filter_config`` is::

        {cutoff_frequency, sampling_frequency, filter_type, differentiation_method,
         filter_params: {**user filter_params, f_sample, f_butter, nbutter}}

    where explicit ``filter_params`` entries win over the defaults
    (``f_sample`` ← sampling_frequency, ``f_butter`` ← cutoff_frequency,
    ``nbutter`` ← filter_order or 4).

    Raises:
        ValueError: non-positive frequencies, an unknown differentiation
            method or filter parameter, or a cutoff at/above the Nyquist
            frequency ``f_sample / 2``.
    """
    fs = _positive_number(
        signal_processing.get("sampling_frequency", _DEFAULT_SAMPLING_FREQUENCY),
        "signal_processing.sampling_frequency",
        "Hz",
    )
    cutoff = _positive_number(
        signal_processing.get("cutoff_frequency", _DEFAULT_CUTOFF_FREQUENCY),
        "signal_processing.cutoff_frequency",
        "Hz",
    )
    ts = 1.0 / fs
    identif_config["nb_samples"] = int(math.floor(1.0 / ts + 1e-9))
    identif_config["ts"] = ts
    identif_config["cut_off_frequency_butterworth"] = cutoff

    order = signal_processing.get("filter_order") or _DEFAULT_FILTER_ORDER
    if not _is_positive_int(order):
        raise IdentificationConfigError(
            "signal_processing.filter_order (Butterworth filter order) must be a positive "
            f"integer such as 4, got {order!r}"
        )
    method = signal_processing.get("differentiation_method", "gradient")
    if method not in DIFFERENTIATION_METHODS:
        raise IdentificationConfigError(
            f"signal_processing.differentiation_method={method!r} is not supported; "
            f"choose one of {list(DIFFERENTIATION_METHODS)}"
        )
    user_params = _user_filter_params(signal_processing.get("filter_params") or {})
    filter_params = dict(user_params)
    filter_params.setdefault("f_sample", fs)
    filter_params.setdefault("f_butter", cutoff)
    filter_params.setdefault("nbutter", order)
    f_sample, f_butter = _check_filter_params(filter_params)
    # The identification filter uses filter_params; the legacy low-pass filter
    # (low_pass_filter_data) uses cut_off_frequency_butterworth and ts: check both.
    _check_nyquist(cutoff, fs, "signal_processing.cutoff_frequency")
    if "f_butter" in user_params or "f_sample" in user_params:
        _check_nyquist(f_butter, f_sample, "signal_processing.filter_params.f_butter")

    identif_config["filter_config"] = {
        "cutoff_frequency": cutoff,
        "sampling_frequency": fs,
        "filter_type": signal_processing.get("filter_type", "butterworth"),
        "differentiation_method": method,
        "filter_params": filter_params,
    }


def _user_filter_params(user_params: Any) -> Mapping[str, Any]:
    """``signal_processing.filter_params``: a mapping with keys among :data:`FILTER_PARAM_KEYS`."""
    if not isinstance(user_params, Mapping):
        raise IdentificationConfigError(
            "signal_processing.filter_params must be a mapping "
            f"(keys {list(FILTER_PARAM_KEYS)}), got {user_params!r}"
        )
    unknown = sorted(set(user_params) - set(FILTER_PARAM_KEYS))
    if unknown:
        raise IdentificationConfigError(
            f"unknown signal_processing.filter_params keys {unknown}; "
            f"allowed: {list(FILTER_PARAM_KEYS)}"
        )
    return user_params


def _check_filter_params(filter_params: Mapping[str, Any]) -> tuple[float, float]:
    """Validate the completed ``filter_params``; returns ``(f_sample, f_butter)`` [Hz].

    ``f_sample`` and ``f_butter`` are positive numbers, ``nbutter`` a positive
    integer, ``med_fil`` (optional) a positive odd integer and
    ``median_padding`` (optional) one of :data:`MEDIAN_PADDINGS`.
    """
    key = "signal_processing.filter_params"
    f_sample = _positive_number(filter_params["f_sample"], f"{key}.f_sample", "Hz")
    f_butter = _positive_number(filter_params["f_butter"], f"{key}.f_butter", "Hz")
    nbutter = filter_params["nbutter"]
    if not _is_positive_int(nbutter):
        raise IdentificationConfigError(
            f"{key}.nbutter (filter order) must be a positive integer, got {nbutter!r}"
        )
    med = filter_params.get("med_fil", 1)
    if not _is_positive_int(med) or med % 2 == 0:
        raise IdentificationConfigError(
            f"{key}.med_fil (median window) must be a positive odd integer, got {med!r}"
        )
    if "median_padding" in filter_params and filter_params["median_padding"] not in MEDIAN_PADDINGS:
        raise IdentificationConfigError(
            f"{key}.median_padding must be one of {list(MEDIAN_PADDINGS)} ('zero': figaroh "
            "1.0.2, 'nearest': repeat the edge samples), got "
            f"{filter_params['median_padding']!r}"
        )
    return f_sample, f_butter


def filter_config(signal_processing: Mapping[str, Any]) -> dict[str, Any]:
    """The ``filter_config`` dict for a ``signal_processing`` section.

    Args:
        signal_processing: Unified ``signal_processing`` mapping
            (``sampling_frequency`` [Hz], ``cutoff_frequency`` [Hz],
            ``filter_order``, ``filter_type``, ``differentiation_method``,
            ``filter_params``).

    Returns:
        ``{cutoff_frequency, sampling_frequency, filter_type,
        differentiation_method, filter_params}``.

    Raises:
        ValueError: see :func:`_extract_signal_processing_params` (the cutoff
            must stay below the Nyquist frequency).
    """
    out: dict[str, Any] = {}
    _extract_signal_processing_params(out, signal_processing or {})
    return out["filter_config"]


def _extract_joint_limits(identif_config: dict[str, Any], joints: Mapping[str, Any]) -> None:
    """``active_joints`` and the four limit lists (position [rad], velocity [rad/s], ...)."""
    active = joints.get("active_joints")
    if active is None:
        active = []
    if not isinstance(active, (list, tuple)) or not all(isinstance(n, str) for n in active):
        raise IdentificationConfigError(
            f"joints.active_joints must be a list of joint names, got {active!r}"
        )
    identif_config["active_joints"] = list(active)
    limits = joints.get("joint_limits") or {}
    if not isinstance(limits, Mapping):
        raise IdentificationConfigError(f"joints.joint_limits must be a mapping, got {limits!r}")
    identif_config["q_lim_def"] = limits.get("position", [])
    identif_config["dq_lim_def"] = limits.get("velocity", [])
    identif_config["ddq_lim_def"] = limits.get("acceleration", [])
    identif_config["torque_lim_def"] = limits.get("torque", [])


def _extract_problem_config(identif_config: dict[str, Any], problem: Mapping[str, Any]) -> None:
    """Problem flags, model components, ``wls``, QR tolerance, fitted joints, dead band.

    ``problem.coulomb_deadband`` [rad/s or m/s], when given, becomes
    ``identif_config["coulomb_deadband"]``: the Coulomb-friction regressor
    column is ``sign(dq)`` only where ``|dq| ≥`` the dead band and 0 below it.

    Model-component flags default to **True** when absent.
    """
    identif_config["is_external_wrench"] = _as_bool(
        problem.get("include_external_forces", False), "problem.include_external_forces"
    )
    identif_config["is_joint_torques"] = _as_bool(
        problem.get("use_joint_torques", True), "problem.use_joint_torques"
    )
    identif_config["external_wrench_offsets"] = problem.get("external_wrench_offsets", False)

    identif_config["force_torque"] = _force_torque(problem.get("force_torque_sensors"))

    components = problem.get("model_components") or {}
    if not isinstance(components, Mapping):
        raise IdentificationConfigError(
            f"problem.model_components must be a mapping, got {components!r}"
        )
    for out_key, in_key in _component_keys():
        identif_config[out_key] = _as_bool(
            components.get(in_key, True), f"problem.model_components.{in_key}"
        )

    identif_config["wls"] = _as_bool(problem.get("wls", False), "problem.wls")

    # Optional (absent from figaroh 1.0.2): sign(dq) = 0 where |dq| < dead band.
    if problem.get("coulomb_deadband") is not None:
        identif_config["coulomb_deadband"] = coulomb_deadband(problem["coulomb_deadband"])

    tol = problem.get("qr_relative_tolerance")
    if tol is not None:
        tol = _positive_number(tol, "problem.qr_relative_tolerance", "-")
    identif_config["qr_relative_tolerance"] = tol

    identif_config["torque_fit_joints"] = _torque_fit_joints(
        problem.get("torque_fit_joints"), identif_config.get("active_joints") or []
    )


def _force_torque(sensors: Any) -> Any:
    """The first entry of ``problem.force_torque_sensors`` (a list), the value itself, or None."""
    if isinstance(sensors, (list, tuple)):
        return sensors[0] if sensors else None
    return sensors


def _torque_fit_joints(fit: Any, active: list[str]) -> list[str] | None:
    """``problem.torque_fit_joints``: None, or a non-empty list of active joint names."""
    if fit is None:
        return None
    if not isinstance(fit, (list, tuple)) or not all(isinstance(n, str) for n in fit):
        raise IdentificationConfigError(
            f"problem.torque_fit_joints must be a list of joint names, got {fit!r}"
        )
    fit = list(fit)
    unknown = [n for n in fit if active and n not in active]
    if unknown:
        raise IdentificationConfigError(
            f"problem.torque_fit_joints names {unknown} that are not active joints; "
            f"active joints: {list(active)}"
        )
    if not fit:
        raise IdentificationConfigError(
            "problem.torque_fit_joints is empty: list at least one active joint or "
            "remove the key to fit every active joint"
        )
    return fit


def _component_keys() -> list[tuple[str, str]]:
    """``(identif_config flag, problem.model_components key)`` of every joint-term flag."""
    pairs = {t.enable_key: t.component_key for t in joint_terms.JOINT_TERMS}
    return list(pairs.items())


def _mechanics_value(mechanics: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """``mechanics[path[0]][path[1]]…`` (``[]`` when absent; sections must be mappings)."""
    node: Any = mechanics
    for depth, key in enumerate(path[:-1]):
        node = node.get(key) or {}
        if not isinstance(node, Mapping):
            where = ".".join(("mechanics", *path[: depth + 1]))
            raise IdentificationConfigError(f"{where} must be a mapping, got {node!r}")
    return node.get(path[-1], [])


def _extract_mechanical_params(
    identif_config: dict[str, Any], mechanics: Mapping[str, Any]
) -> None:
    """Joint-term values (``fv`` [N·m·s/rad], ``fs`` [N·m], ``Ia`` [kg·m²], ``off`` [N·m]), ratios.

    Each row of :data:`figaroh.tools.joint_terms.JOINT_TERMS` reads its
    ``mechanics_path`` (e.g. ``mechanics.friction_coefficients.viscous``) into
    its ``values_key``.
    """
    for row in joint_terms.JOINT_TERMS:
        value = _mechanics_value(mechanics, row.mechanics_path)
        identif_config[row.values_key] = _numeric_values(
            value, ".".join(("mechanics", *row.mechanics_path))
        )
    identif_config["reduction_ratio"] = _numeric_values(
        mechanics.get("reduction_ratios", []), "mechanics.reduction_ratios", by_name=True
    )
    identif_config["ratio_essential"] = _number(
        mechanics.get("ratio_essential", 30.0), "mechanics.ratio_essential"
    )


def _extract_coupling_params(identif_config: dict[str, Any], coupling: Mapping[str, Any]) -> None:
    """Coupled-wrist flag (default **True**) and ``Iam6``/``fvm6``/``fsm6`` (default 0)."""
    identif_config["has_coupled_wrist"] = _as_bool(
        coupling.get("has_coupled_wrist", True), "coupling.has_coupled_wrist"
    )
    for key in ("Iam6", "fvm6", "fsm6"):
        identif_config[key] = _number(coupling.get(key, 0), f"coupling.{key}")


def _extract_load_params(identif_config: dict[str, Any]) -> None:
    """``mass_load`` [kg] and ``which_body_loaded``: always 0.0 (section not read)."""
    identif_config["mass_load"] = 0.0
    identif_config["which_body_loaded"] = 0.0


def _extract_optional_sections(identif_config: dict[str, Any], source: Mapping[str, Any]) -> None:
    """Copy ``physical_consistency`` and ``reconstruction`` when they are non-empty mappings."""
    for key in ("physical_consistency", "reconstruction"):
        section = source.get(key, {})
        if isinstance(section, Mapping) and section:
            identif_config[key] = dict(section)


def _extract_selection_config(identif_config: dict[str, Any], source: Mapping[str, Any]) -> None:
    """Validate and copy ``select_stage`` and ``physical_fit`` from ``source``.

    * ``select_stage``: absent/None → nothing written; otherwise the lower-cased,
      stripped value must be one of :data:`SELECT_STAGES`.
    * ``physical_fit``: a one-element list is unwrapped; None → nothing
      written; a mapping is checked against :data:`PHYSICAL_FIT_DEFAULTS` and
      merged over it (every key present in the result).

    Args:
        identif_config: Destination dict (mutated).
        source: Task configuration mapping.

    Raises:
        ValueError: unknown stage, non-mapping ``physical_fit`` or unknown keys.
    """
    stage = source.get("select_stage")
    if stage is not None:
        value = str(stage).strip().lower()
        if value not in SELECT_STAGES:
            msg = f"select_stage must be one of {list(SELECT_STAGES)}, got {stage!r}"
            if value == "projected":
                msg += (
                    " ('projected' is a projection of the nominal CAD model onto the "
                    "physically consistent set, not of the fit; use 'physical_fit' for a "
                    "physically consistent fit)"
                )
            raise IdentificationConfigError(msg)
        identif_config["select_stage"] = value

    fit = source.get("physical_fit")
    if isinstance(fit, list) and len(fit) == 1:
        fit = fit[0]
    if fit is None:
        return
    if not isinstance(fit, Mapping):
        raise IdentificationConfigError(f"physical_fit must be a mapping, got {fit!r}")
    unknown = sorted(set(fit) - set(PHYSICAL_FIT_DEFAULTS))
    if unknown:
        raise IdentificationConfigError(
            f"unknown physical_fit keys {unknown}; allowed: {sorted(PHYSICAL_FIT_DEFAULTS)}"
        )
    merged = dict(PHYSICAL_FIT_DEFAULTS)
    merged.update(fit)
    identif_config["physical_fit"] = merged


# ---------------------------------------------------------------------------
# active joints
# ---------------------------------------------------------------------------


class JointModelList(list):
    """List of ``pinocchio.JointModel`` objects that survives ``copy.deepcopy``.

    Pinocchio joint models cannot be pickled, so a plain list of them would
    make ``copy.deepcopy(identif_config)`` fail; copies of this list share the
    (read-only) joint model objects instead.
    """

    def __deepcopy__(self, memo: dict) -> JointModelList:
        return JointModelList(self)

    def __repr__(self) -> str:
        return f"JointModelList([{', '.join(j.shortname() for j in self)}])"


def fill_active_joint_indices(model: Any, identif_config: dict[str, Any]) -> dict[str, Any]:
    """Fill ``act_idxq``, ``act_idxv``, ``act_Jid``, ``act_J``, ``idx_act_joints``.

    For each active joint name ``n`` (in ``identif_config["active_joints"]``
    order) with ``jid = model.getJointId(n)``: ``act_idxq`` = ``idx_q``,
    ``act_idxv`` = ``idx_v``, ``act_Jid`` = ``jid``, ``act_J`` = the joint
    model (a :class:`JointModelList`) and ``idx_act_joints`` = ``jid - 1``.

    An empty or missing ``active_joints`` means every 1-DoF joint of the model
    (``model.names[1:]`` with ``nv == 1``, in model order); the list is then
    also written to ``active_joints``. Keys the caller already set are never
    overwritten, so a robot subclass may provide its own indices.

    Args:
        model: ``pinocchio.Model``.
        identif_config: Identification configuration (mutated in place).

    Returns:
        ``identif_config`` (the same object).

    Raises:
        IdentificationConfigError: an active joint name is unknown, duplicated
            or names a joint with more than one velocity DoF.
    """
    names = identif_config.get("active_joints") or []
    if not names:
        names = [model.names[j] for j in range(1, model.njoints) if model.joints[j].nv == 1]
        identif_config["active_joints"] = list(names)
    model_names = list(model.names)
    unknown = [n for n in names if n not in model_names]
    if unknown:
        raise IdentificationConfigError(
            f"unknown active joint(s) {unknown} in joints.active_joints; model "
            f"'{model.name}' has joints {model_names[1:]}"
        )
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise IdentificationConfigError(f"joints.active_joints lists {duplicates} more than once")
    jids = [model_names.index(n) for n in names]
    multi = [
        (n, model.joints[j].nv) for n, j in zip(names, jids, strict=True) if model.joints[j].nv != 1
    ]
    if multi:
        raise IdentificationConfigError(
            f"active joints must have one velocity DoF; {multi} (name, nv) do not. "
            "Remove free-flyer/spherical joints from joints.active_joints"
        )
    identif_config.setdefault("act_idxq", [int(model.joints[j].idx_q) for j in jids])
    identif_config.setdefault("act_idxv", [int(model.joints[j].idx_v) for j in jids])
    identif_config.setdefault("act_Jid", list(jids))
    identif_config.setdefault("act_J", JointModelList(model.joints[j] for j in jids))
    identif_config.setdefault("idx_act_joints", [j - 1 for j in jids])
    return identif_config


# ---------------------------------------------------------------------------
# unified → identif_config
# ---------------------------------------------------------------------------


def _robot_model(robot: Any, unified_identif_config: Any) -> Any:
    """``robot.model`` after checking the two arguments of the unified conversion."""
    model = getattr(robot, "model", None)
    if model is None or not hasattr(model, "names"):
        raise TypeError(
            "robot must expose a pinocchio.Model as .model "
            f"(got {type(robot).__name__} without one)"
        )
    if not isinstance(unified_identif_config, Mapping):
        raise TypeError(
            "unified_identif_config must be the mapping returned by create_task_config, "
            f"got {type(unified_identif_config).__name__}"
        )
    return model


def unified_to_legacy_identif_config(robot: Any, unified_identif_config: Mapping[str, Any]) -> dict:
    """Convert a unified identification task config to the ``identif_config`` dict.

    Reads the sections ``mechanics``, ``joints``, ``problem``, ``coupling`` and
    ``signal_processing`` (each defaulting to ``{}``) and writes every key of
    the identification configuration: ``robot_name`` (= ``robot.model.name``),
    ``instance``, ``nb_samples``,
    ``ts`` [s] = 1 / ``sampling_frequency`` [Hz], ``cut_off_frequency_butterworth``
    [Hz], ``filter_config``, ``active_joints``, the limit lists, the problem
    flags (friction / actuator inertia / offset default **True**), ``wls``,
    ``qr_relative_tolerance``, ``torque_fit_joints``, the joint-term values
    ``fv``, ``fs``, ``Ia``, ``off`` (the rows of
    :data:`figaroh.tools.joint_terms.JOINT_TERMS`), ``reduction_ratio``, ``ratio_essential`` (30.0),
    ``has_coupled_wrist`` (**True**), ``Iam6``/``fvm6``/``fsm6`` (0),
    ``mass_load``/``which_body_loaded`` (0.0), optional ``coulomb_deadband``
    [rad/s or m/s] (only when ``problem.coulomb_deadband`` is given),
    ``physical_consistency``, ``reconstruction``, ``select_stage``,
    ``physical_fit``, ``validation_data_file`` (``""``) and, when the task
    has a ``verification`` section, ``verification`` (``{scope, thresholds}``
    normalised by
    :func:`~figaroh._run.verification_policy.parse_verification_section`).

    When ``active_joints`` is non-empty, :func:`fill_active_joint_indices` also
    adds ``act_idxq``, ``act_idxv``, ``act_Jid``, ``act_J`` and
    ``idx_act_joints`` (an empty list is kept empty; call
    :func:`fill_active_joint_indices` yourself to select every 1-DoF joint).

    Args:
        robot: Object with a ``.model`` attribute (``pinocchio.Model``), e.g. a
            ``RobotWrapper``.
        unified_identif_config: Task config from ``create_task_config``.

    Returns:
        dict: the identification configuration (``identif_config``).

    Raises:
        TypeError: ``robot`` has no ``.model`` or the task config is not a mapping.
        ValueError: an invalid value (cutoff ≥ Nyquist, non-list
            ``torque_fit_joints``, unknown ``select_stage`` or
            ``physical_fit`` keys, ...); the message names the key.
        IdentificationConfigError: an active joint is not in the model.

    Example:
        >>> unified_config = create_task_config(robot, parsed_config,
        ...                                    "identification")
        >>> legacy_config = unified_to_legacy_identif_config(robot,
        ...                                                  unified_config)
    """
    model = _robot_model(robot, unified_identif_config)
    cfg = unified_identif_config
    identif_config: dict[str, Any] = {}
    identif_config["robot_name"] = model.name
    instance = cfg.get("instance") or {}
    identif_config["instance"] = dict(instance) if isinstance(instance, Mapping) else instance

    _extract_signal_processing_params(identif_config, _section(cfg, "signal_processing"))
    _extract_joint_limits(identif_config, _section(cfg, "joints"))
    _extract_problem_config(identif_config, _section(cfg, "problem"))
    _extract_mechanical_params(identif_config, _section(cfg, "mechanics"))
    _extract_coupling_params(identif_config, _section(cfg, "coupling"))
    _extract_load_params(identif_config)
    _extract_optional_sections(identif_config, cfg)
    _extract_selection_config(identif_config, cfg)
    if cfg.get(_VERIFICATION_KEY) is not None:
        identif_config[_VERIFICATION_KEY] = parse_verification_section(
            cfg[_VERIFICATION_KEY],
            "tasks.identification.verification",
            IdentificationConfigError,
        )
    data_section = cfg.get("data", {})
    if not isinstance(data_section, Mapping):
        data_section = {}
    identif_config["validation_data_file"] = data_section.get("validation_data_file", "")
    if data_section.get("bag") is not None:  # figaroh.data.bag_source.JointStateBagOptions
        identif_config["bag"] = data_section["bag"]

    if identif_config["active_joints"]:
        fill_active_joint_indices(model, identif_config)
    _warn_missing_sections(cfg)
    _check_ratio_count(model, identif_config)
    return identif_config


def _warn(message: str) -> None:
    logger.warning("%s", message)
    warnings.warn(message, UserWarning, stacklevel=3)


def _warn_missing_sections(task_config: Mapping[str, Any]) -> None:
    """Warn when the identification task relies on defaults a user rarely wants.

    figaroh 1.0.2 ran such a configuration with the built-in defaults
    (sampling frequency 5000 Hz, cutoff 100 Hz; friction, actuator inertia and
    offset terms all on), so this is a warning, not an error.
    """
    if not task_config.get("signal_processing"):
        _warn(
            "identification task has no 'signal_processing' section: sampling_frequency "
            f"defaults to {_DEFAULT_SAMPLING_FREQUENCY:g} Hz and cutoff_frequency to "
            f"{_DEFAULT_CUTOFF_FREQUENCY:g} Hz; add tasks.identification.signal_processing "
            "with the sampling frequency of your data"
        )
    if not task_config.get("problem"):
        _warn(
            "identification task has no 'problem' section: joint torques are used and the "
            "friction, actuator-inertia and joint-offset terms are all identified (defaults); "
            "add tasks.identification.problem.model_components to choose them"
        )


def _check_ratio_count(model: Any, identif_config: Mapping[str, Any]) -> None:
    """Warn when ``mechanics.reduction_ratios`` holds neither one ratio per active joint
    nor one per 1-DoF joint of the model."""
    ratios = identif_config.get("reduction_ratio")
    if not isinstance(ratios, (list, tuple)) or not ratios:
        return
    active = list(identif_config.get("active_joints") or [])
    if not active:
        active = [model.names[j] for j in range(1, model.njoints) if model.joints[j].nv == 1]
    n_model = sum(1 for j in range(1, model.njoints) if model.joints[j].nv == 1)
    if len(ratios) not in (len(active), n_model):
        _warn(
            f"mechanics.reduction_ratios has {len(ratios)} entries for {len(active)} active "
            f"joints {active} ({n_model} 1-DoF joints in the model): give one ratio per "
            "active joint, in the order of joints.active_joints (a robot subclass reading it "
            "would pair them wrongly)"
        )


# ---------------------------------------------------------------------------
# legacy flat format (deprecated)
# ---------------------------------------------------------------------------

_NONE_STRINGS = {"none", "null", "~", ""}


def _legacy_value(value: Any) -> Any:
    """Legacy files spell "no value" as ``None`` (a *string* in YAML): map it to None."""
    if isinstance(value, str) and value.strip().lower() in _NONE_STRINGS:
        return None
    return value


def _legacy_block(section: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``section[key][0]`` (legacy blocks are one-element lists), or the mapping itself."""
    return legacy_block(section, key, clean=_legacy_value, error=IdentificationConfigError)


def _get(block: Mapping[str, Any], key: str, default: Any) -> Any:
    value = block.get(key)
    return default if value is None else value


def get_param_from_yaml(robot: Any, identif_data: Mapping[str, Any]) -> dict:
    """Parse a **legacy flat** identification section (deprecated).

    Builds the ``identif_config`` dict from ``robot_params[0]``,
    ``problem_params[0]``, ``processing_params[0]`` and ``tls_params[0]`` with
    the key names of :func:`unified_to_legacy_identif_config` (plus
    ``mass_load``/``which_body_loaded`` read from ``tls_params`` and the
    legacy-only flags ``is_static_regressor``, ``is_inertia_regressor``,
    ``embedded_forces``, ``sync_joint_motion``). The YAML string ``None`` is
    treated as absent. Kept for migration tooling only; ``load_param`` refuses
    legacy files.

    Args:
        robot: Object with ``.model`` (``pinocchio.Model``).
        identif_data: The ``identification`` section (or the whole legacy file).

    Returns:
        dict: identification configuration.

    Raises:
        ValueError: malformed legacy blocks or invalid values.
    """
    warnings.warn(_LEGACY_CONFIG_DEPRECATION_MESSAGE, DeprecationWarning, stacklevel=2)
    if not isinstance(identif_data, Mapping):
        raise IdentificationConfigError(
            f"legacy identification data must be a mapping, got {type(identif_data).__name__}"
        )
    if "identification" in identif_data and isinstance(identif_data["identification"], Mapping):
        identif_data = identif_data["identification"]
    report_unknown_keys(
        find_unknown_keys(identif_data, LEGACY_SCHEMA["identification"], "identification"),
        "the legacy identification section",
        strict=_strict_requested(),
    )
    robot_params = _legacy_block(identif_data, "robot_params")
    problem_params = _legacy_block(identif_data, "problem_params")
    processing = _legacy_block(identif_data, "processing_params")
    tls = _legacy_block(identif_data, "tls_params")

    model = getattr(robot, "model", None)
    if model is None:
        raise TypeError("robot must expose a pinocchio.Model as .model")
    cfg: dict[str, Any] = {"robot_name": model.name, "instance": {}}
    # No filter_config here (the legacy layout has none; BaseIdentification
    # then uses its built-in default filter settings).
    _legacy_processing(cfg, processing)
    _legacy_problem(cfg, robot_params, problem_params)
    _legacy_robot(cfg, robot_params, problem_params)
    cfg["mass_load"] = _get(tls, "mass_load", 0.0)
    cfg["which_body_loaded"] = _get(tls, "which_body_loaded", 0.0)
    cfg["sync_joint_motion"] = _get(tls, "sync_joint_motion", False)
    cfg["validation_data_file"] = ""
    return cfg


def _legacy_processing(cfg: dict[str, Any], processing: Mapping[str, Any]) -> None:
    """``nb_samples``, ``ts`` [s] and ``cut_off_frequency_butterworth`` [Hz]."""
    ts = _positive_number(
        _get(processing, "ts", 1.0 / _DEFAULT_SAMPLING_FREQUENCY), "processing_params.ts", "s"
    )
    cfg["nb_samples"] = int(math.floor(1.0 / ts + 1e-9))
    cfg["ts"] = ts
    cfg["cut_off_frequency_butterworth"] = _positive_number(
        _get(processing, "cut_off_frequency_butterworth", _DEFAULT_CUTOFF_FREQUENCY),
        "processing_params.cut_off_frequency_butterworth",
        "Hz",
    )


def _legacy_problem(
    cfg: dict[str, Any], robot_params: Mapping[str, Any], problem_params: Mapping[str, Any]
) -> None:
    """Active joints, limits and problem flags (joint-term flags default True)."""
    cfg["active_joints"] = list(_get(problem_params, "active_joints", []))
    cfg["q_lim_def"] = _get(robot_params, "q_lim_def", [])
    cfg["dq_lim_def"] = _get(robot_params, "dq_lim_def", [])
    cfg["ddq_lim_def"] = _get(robot_params, "ddq_lim_def", [])
    cfg["torque_lim_def"] = _get(robot_params, "tau_lim_def", [])
    cfg["is_external_wrench"] = _get(problem_params, "is_external_wrench", False)
    cfg["is_joint_torques"] = _get(problem_params, "is_joint_torques", True)
    cfg["external_wrench_offsets"] = _get(problem_params, "external_wrench_offsets", False)
    cfg["force_torque"] = problem_params.get("force_torque")
    for flag in joint_terms.enable_keys():
        cfg[flag] = _get(problem_params, flag, True)
    cfg["is_static_regressor"] = _get(problem_params, "is_static_regressor", True)
    cfg["is_inertia_regressor"] = _get(problem_params, "is_inertia_regressor", True)
    cfg["embedded_forces"] = _get(problem_params, "embedded_forces", False)
    cfg["wls"] = False
    cfg["qr_relative_tolerance"] = None
    cfg["torque_fit_joints"] = None


def _legacy_robot(
    cfg: dict[str, Any], robot_params: Mapping[str, Any], problem_params: Mapping[str, Any]
) -> None:
    """Joint-term values, ratios and the coupled-wrist terms."""
    for row in joint_terms.JOINT_TERMS:
        cfg[row.values_key] = _get(robot_params, row.legacy_values_key, [])
    cfg["reduction_ratio"] = _get(robot_params, "reduction_ratio", [])
    cfg["ratio_essential"] = _get(robot_params, "ratio_essential", 30.0)
    cfg["has_coupled_wrist"] = _get(problem_params, "has_coupled_wrist", True)
    cfg["Iam6"] = _get(robot_params, "Iam6", 0)
    cfg["fvm6"] = _get(robot_params, "fvm6", 0)
    cfg["fsm6"] = _get(robot_params, "fsm6", 0)
