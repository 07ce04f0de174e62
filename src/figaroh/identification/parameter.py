"""Parameter management utilities for robot identification.

This module handles parameter extraction, reordering, and management including:

* inertial parameter extraction and reordering,
* standard additional parameters (friction, actuator inertia, offsets),
* custom parameter support,
* parameter information queries.

Standard-parameter layout (the contract with :mod:`figaroh.tools.regressor`)
---------------------------------------------------------------------------
The joint-torque regressor ``W`` and the ordered dict returned by
:func:`get_standard_parameters` share one column order, so that
``len(params) == W.shape[1]`` and ``W @ list(params.values())`` predicts the
joint efforts for every combination of the model-component flags.

1. **Inertial block** — ``10 * (model.njoints - 1)`` columns. Body ``k``
   (supported by joint ``model.names[k + 1]``) occupies columns
   ``10k … 10k + 9`` in Pinocchio dynamic-parameter order::

       m_<j>, mx_<j>, my_<j>, mz_<j>, Ixx_<j>, Ixy_<j>, Iyy_<j>, Ixz_<j>, Iyz_<j>, Izz_<j>

   with values ``model.inertias[jid].toDynamicParameters()`` of the joint's
   **own** body: mass ``m`` [kg], first moments ``h = m·c`` [kg·m] and the
   rotational inertia about the body-frame origin ``I_O = I_C + m·S(c)ᵀS(c)``
   [kg·m²].

2. **Extra blocks** — only for enabled flags, in the order of
   :data:`figaroh.tools.joint_terms.JOINT_TERMS`, each of exactly
   ``model.nv`` columns (one per velocity DOF, in ``idx_v`` order):

   ========  ========================  =====================  ==============
   block     enabling flag             regressor entry        unit of value
   ========  ========================  =====================  ==============
   ``fv``    ``has_friction``          ``dq``                 [N·m·s/rad]
   ``fs``    ``has_friction``          ``sign(dq)``           [N·m]
   ``Ia``    ``has_actuator_inertia``  ``ddq``                [kg·m²]
   ``off``   ``has_joint_offset``      ``1``                  [N·m]
   ========  ========================  =====================  ==============

   (units for revolute DOFs; prismatic DOFs use N·s/m, N and kg.) Flags
   missing from ``identif_config`` count as False. Within a block the names
   follow ``model.names[1:]``: a 1-DoF joint ``j`` gives ``<block>_<j>``; a
   joint with ``nv_j > 1`` DOFs (free-flyer, spherical, planar…) gives
   ``<block>_<j>_<k>`` for ``k in range(nv_j)``.

   Values come from ``identif_config[<values_key>]`` (``"fv"``, ``"fs"``,
   ``"Ia"``, ``"off"``): a list of
   length ``model.nv`` is read per DOF; a list of length ``njoints - 1`` is
   read per joint (every DOF of a multi-DoF joint takes its joint's value);
   a missing or shorter list is padded with ``0.0`` (logged warning); any
   other length raises :class:`IdentificationConfigError`.

Custom parameters (``add_custom_parameters``) have no regressor columns of
their own; callers append them explicitly when ``has_custom_parameters`` is
set.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.tools import joint_terms

logger = logging.getLogger(__name__)

#: Inertial parameter names in Pinocchio dynamic-parameter order.
INERTIAL_PARAMETER_NAMES: tuple[str, ...] = (
    "m",
    "mx",
    "my",
    "mz",
    "Ixx",
    "Ixy",
    "Iyy",
    "Ixz",
    "Iyz",
    "Izz",
)


def reorder_inertial_parameters(pinocchio_params: Sequence[float]) -> list[float]:
    """Reorder inertial parameters from Pinocchio format to desired format.

    Args:
        pinocchio_params: 10 parameters in Pinocchio order
            ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` (units [kg],
            [kg·m], [kg·m²]).

    Returns:
        list: Parameters in the legacy order
        ``[Ixx, Ixy, Ixz, Iyy, Iyz, Izz, mx, my, mz, m]``.

    Raises:
        ValueError: If there are not exactly 10 numeric parameters.
    """
    try:
        values = np.asarray(pinocchio_params, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"pinocchio_params must be 10 numbers, got {pinocchio_params!r}") from exc
    if values.size != 10:
        raise ValueError(f"Expected 10 inertial parameters, got {values.size}")
    # Pinocchio index of each entry of [Ixx, Ixy, Ixz, Iyy, Iyz, Izz, mx, my, mz, m].
    order = [4, 5, 7, 6, 8, 9, 1, 2, 3, 0]
    return values[order].tolist()


def _joint_dofs(model: Any) -> list[tuple[str, int]]:
    """``(joint name, nv_j)`` for every joint of ``model.names[1:]``."""
    return [
        (str(model.names[jid]), int(model.joints[jid].nv)) for jid in range(1, int(model.njoints))
    ]


def _dof_parameter_names(model: Any, prefix: str) -> list[str]:
    """Names of one extra block: ``<prefix>_<joint>`` or ``<prefix>_<joint>_<k>``."""
    names: list[str] = []
    for jname, nv_j in _joint_dofs(model):
        if nv_j == 1:
            names.append(f"{prefix}_{jname}")
        else:
            names.extend(f"{prefix}_{jname}_{k}" for k in range(nv_j))
    return names


def _as_float(value: Any, key: str, position: int) -> float:
    """Convert one configuration entry to a finite float or raise a clear error."""
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise IdentificationConfigError(
            f"identif_config[{key!r}][{position}] = {value!r} is not a number; give numeric values"
        ) from exc
    if not math.isfinite(number):
        raise IdentificationConfigError(
            f"identif_config[{key!r}][{position}] = {value!r} is not finite; give finite values"
        )
    return number


def _block_values(model: Any, key: str, raw: Any, description: str) -> list[float]:
    """Expand ``identif_config[key]`` to one value per velocity DOF (length nv).

    Args:
        model: Pinocchio model.
        key: Configuration key (``"fv"``, ``"fs"``, ``"Ia"`` or ``"off"``).
        raw: The configured value (list, array, or None).
        description: Human-readable block name for messages.

    Returns:
        list: ``model.nv`` floats in ``idx_v`` order.
    """
    dofs = _joint_dofs(model)
    n_joints = len(dofs)
    nv = int(model.nv)
    if raw is None:
        values: list[Any] = []
    elif isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, (Sequence, np.ndarray)):
        raise IdentificationConfigError(
            f"identif_config[{key!r}] ({description}) must be a list of numbers of length "
            f"{nv} (one per DOF) or {n_joints} (one per joint), got {type(raw).__name__}"
        )
    else:
        values = list(np.asarray(raw, dtype=object).reshape(-1))

    n_given = len(values)
    if n_given == nv:
        return [_as_float(v, key, i) for i, v in enumerate(values)]
    if n_given == n_joints or n_given < min(n_joints, nv):
        per_joint = [_as_float(v, key, i) for i, v in enumerate(values)]
        if n_given < n_joints:
            missing = [jname for jname, _ in dofs[n_given:]]
            logger.warning(
                "Missing %s for joint(s) %s (identif_config[%r] has %d of %d values), "
                "using default: 0.0",
                description,
                ", ".join(missing),
                key,
                n_given,
                n_joints,
            )
            per_joint.extend([0.0] * (n_joints - n_given))
        expanded: list[float] = []
        for (_, nv_j), value in zip(dofs, per_joint, strict=True):
            expanded.extend([value] * nv_j)
        return expanded
    expected = f"{nv} (one per velocity DOF)"
    if n_joints != nv:
        expected += f" or {n_joints} (one per joint of model.names[1:])"
    raise IdentificationConfigError(
        f"identif_config[{key!r}] ({description}) has {n_given} values; expected {expected}, "
        "or fewer to pad the remaining joints with 0.0"
    )


def add_standard_additional_parameters(
    model: Any, identif_config: Mapping[str, Any] | None
) -> dict[str, float]:
    """Add standard additional parameters (actuator inertia, friction, offsets).

    Emits, for each enabled row of :data:`figaroh.tools.joint_terms.JOINT_TERMS`
    in regressor column order (``fv`` then ``fs`` when ``has_friction``;
    ``Ia`` when ``has_actuator_inertia``; ``off`` when ``has_joint_offset``),
    one key per velocity DOF (see the module docstring for names and units).
    Disabled blocks contribute no keys, so the keys line up with the
    regressor's extra columns.

    The joint-effort model these parameters enter is, for DOF ``j``,
    ``τ_j += fv_j·dq_j + fs_j·sign(dq_j) + Ia_j·ddq_j + off_j``.

    Args:
        model: Robot model (``pinocchio.Model``).
        identif_config (dict): Identification configuration; reads the flags
            and the value lists ``fv`` [N·m·s/rad], ``fs`` [N·m], ``Ia``
            [kg·m²], ``off`` [N·m].

    Returns:
        dict: Additional parameter names mapped to their values (floats).

    Raises:
        IdentificationConfigError: A value list has an unusable length or a
            non-numeric / non-finite entry.
    """
    config = identif_config or {}
    params: dict[str, float] = {}
    for row in joint_terms.enabled_terms(config):
        names = _dof_parameter_names(model, row.prefix)
        values = _block_values(model, row.values_key, config.get(row.values_key), row.label)
        for name, value in zip(names, values, strict=True):
            if name in params:
                raise IdentificationConfigError(
                    f"Duplicate parameter name {name!r}: rename the joints so that "
                    "'<joint>_<k>' does not collide with another joint name"
                )
            params[name] = value
    return params


def add_custom_parameters(model: Any, custom_params: Mapping[str, Any] | None) -> dict[str, float]:
    """Add custom user-defined parameters.

    Args:
        model: Robot model (``pinocchio.Model``).
        custom_params (dict): Custom parameter definitions, format
            ``{param_name: {"values": list, "per_joint": bool, "default": float}}``.
            ``per_joint`` (default True) creates ``<param_name>_<joint>`` for
            every joint of ``model.names[1:]``, read positionally from
            ``values`` (missing entries take ``default``, 0.0 by default);
            otherwise a single global parameter ``param_name`` takes
            ``values[0]`` or ``default``. Units are the user's.

    Returns:
        dict: Custom parameters with their values (floats).

    Raises:
        IdentificationConfigError: ``custom_params`` is not a mapping, or a
            value is not a finite number.
    """
    if custom_params is None:
        return {}
    if not isinstance(custom_params, Mapping):
        raise IdentificationConfigError(
            "identif_config['custom_parameters'] must be a mapping "
            "{name: {values: [...], per_joint: bool, default: float}}, "
            f"got {type(custom_params).__name__}"
        )
    params: dict[str, float] = {}
    joint_names = [str(name) for name in model.names[1:]]
    for param_name, param_def in custom_params.items():
        if not isinstance(param_def, Mapping):
            logger.warning("Invalid custom parameter definition for '%s', skipping", param_name)
            continue
        key = f"custom_parameters.{param_name}"
        values = _custom_values(param_def.get("values"))
        default_value = _as_float(param_def.get("default", 0.0), key, 0)
        if bool(param_def.get("per_joint", True)):
            params.update(
                _per_joint_custom(str(param_name), values, default_value, joint_names, key)
            )
        else:
            params[str(param_name)] = _as_float(values[0], key, 0) if values else default_value
    return params


def _custom_values(values: Any) -> list[Any]:
    """A custom parameter's ``values`` as a flat list (None → empty, a scalar → one value)."""
    if values is None:
        values = []
    elif isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        values = [values]
    return list(np.asarray(values, dtype=object).reshape(-1))


def _per_joint_custom(
    param_name: str, values: list[Any], default_value: float, joint_names: list[str], key: str
) -> dict[str, float]:
    """``{<param_name>_<joint>: value}`` read positionally; missing values take the default."""
    if len(values) > len(joint_names):
        logger.warning(
            "Custom parameter '%s' has %d values for %d joints; extra values ignored",
            param_name,
            len(values),
            len(joint_names),
        )
    elif values and len(values) < len(joint_names):
        logger.warning(
            "Missing value for custom parameter '%s' joint(s) %s, using default: %s",
            param_name,
            ", ".join(joint_names[len(values) :]),
            default_value,
        )
    return {
        f"{param_name}_{jname}": (
            _as_float(values[idx], key, idx) if idx < len(values) else default_value
        )
        for idx, jname in enumerate(joint_names)
    }


def get_standard_parameters(
    model: Any, identif_config: Mapping[str, Any] | None = None
) -> dict[str, float]:
    """Get standard inertial parameters from robot model with extensible parameter support.

    The returned ordered dict follows the regressor column layout of the
    module docstring: the inertial block (Pinocchio order, own body of each
    joint of ``model.names[1:]``), then the enabled extra blocks
    (:func:`add_standard_additional_parameters`). Hence
    ``len(params) == W.shape[1]`` for the joint-torque regressor built with
    the same flags. Custom parameters are **not** included (they have no
    regressor columns); add them with :func:`add_custom_parameters`.

    Args:
        model: Robot model (Pinocchio model).
        identif_config (dict, optional): Dictionary of parameter settings
            (``has_friction``, ``has_actuator_inertia``, ``has_joint_offset``,
            ``fv``, ``fs``, ``Ia``, ``off``). None → inertial block only.

    Returns:
        dict: Parameter names mapped to their values (floats; [kg], [kg·m],
        [kg·m²] for the inertial block).

    Raises:
        ValueError: The model's inertia count does not match its joints.
        IdentificationConfigError: Unusable extra-parameter values.
    """
    if identif_config is not None and not isinstance(identif_config, Mapping):
        raise IdentificationConfigError(
            f"identif_config must be a dict, got {type(identif_config).__name__}"
        )
    n_inertias = len(model.inertias)
    if n_inertias != int(model.njoints):
        raise ValueError(
            f"Model has {n_inertias} inertias for {model.njoints} joints; "
            "rebuild the model so each joint supports one body"
        )
    params: dict[str, float] = {}
    for jid in range(1, int(model.njoints)):
        jname = str(model.names[jid])
        dynamic = np.asarray(model.inertias[jid].toDynamicParameters(), dtype=float).reshape(-1)
        for name, value in zip(INERTIAL_PARAMETER_NAMES, dynamic, strict=True):
            params[f"{name}_{jname}"] = float(value)
    for name, value in add_standard_additional_parameters(model, identif_config).items():
        if name in params:
            raise IdentificationConfigError(f"Duplicate parameter name {name!r} in the layout")
        params[name] = value
    return params


def standard_parameters_with_extras(
    model: Any, identif_config: Mapping[str, Any]
) -> tuple[dict[str, float], dict[str, float] | None, dict[str, float] | None]:
    """The standard parameters of an identification, ordered like the regressor's columns.

    The inertial parameters of :func:`get_standard_parameters`, then (when
    ``has_friction``, ``has_actuator_inertia`` or ``has_joint_offset``) those
    of :func:`add_standard_additional_parameters`, then (when
    ``has_custom_parameters``) those of :func:`add_custom_parameters`; a value
    given as a string is converted to float.

    Args:
        model: Pinocchio model.
        identif_config: Flat identification settings.

    Returns:
        ``(standard, additional, custom)``: the full ordered dict, and the
        additional and custom parts (None when not enabled).
    """
    standard = get_standard_parameters(model, identif_config)
    additional = custom = None
    if (
        identif_config.get("has_friction")
        or identif_config.get("has_actuator_inertia")
        or identif_config.get("has_joint_offset")
    ):
        additional = add_standard_additional_parameters(model, identif_config)
        standard.update(additional)
    if identif_config.get("has_custom_parameters", False):
        custom = add_custom_parameters(model, identif_config.get("custom_parameters", {}))
        standard.update(custom)
    for key, value in standard.items():
        if isinstance(value, str):
            standard[key] = float(value)
    return standard, additional, custom


def get_parameter_info() -> dict[str, Any]:
    """Get information about available parameter types.

    Returns:
        dict: ``inertial_parameters`` (names in Pinocchio order),
        ``standard_additional`` (name, enabling flag, values key and
        description of each extra block) and ``custom_parameters_format``.
    """
    return {
        "inertial_parameters": list(INERTIAL_PARAMETER_NAMES),
        "standard_additional": {
            row.info_key: {
                "name": row.prefix,
                "enabled_key": row.enable_key,
                "values_key": row.values_key,
                "description": row.summary,
            }
            for row in joint_terms.JOINT_TERMS
        },
        "custom_parameters_format": {
            "parameter_name": {
                "values": "list of values",
                "per_joint": "boolean - if True, creates param for each joint",
                "default": "default value if not enough values provided",
            }
        },
    }
