"""The per-DOF joint model terms: one table, read by every module that handles them.

Besides the rigid-body dynamics, the joint-effort model of DOF ``j`` holds a
few terms that are linear in one unknown coefficient per DOF::

    τ_j = (rigid body)_j + fv_j·dq_j + fs_j·sign(dq_j) + Ia_j·ddq_j + off_j

Each row of :data:`JOINT_TERMS` describes one such term: the prefix of its
parameter names (``fv_<joint>``), the regressor signal its coefficient
multiplies, its unit, the URDF element/attribute it is written to, the
``identif_config`` keys that enable it and hold its values, and where the
unified and legacy configuration files store them, how a motor-side value
reflects through the gear, and whether an identified value is written to the
URDF. The regressor (:mod:`figaroh.tools.regressor`), the standard parameters
(:mod:`figaroh.identification.parameter`), the simulated efforts
(:mod:`figaroh.tools.randomdata`), the URDF export
(:mod:`figaroh.tools.urdf_exporter` and the identification's export step),
the configuration mapping (:mod:`figaroh.identification.config`) and the
known configuration keys (:mod:`figaroh.utils.config_keys`) all iterate over
this table, so a new term is one new row (with its signal function).

The table order is the column order of the regressor's extra blocks and of
the standard parameters; it must not change (it is the figaroh 1.0.2 layout).
Consumers read ``joint_terms.JOINT_TERMS`` (or the helpers below) at call
time, never a copy taken at import, so a replaced table is seen everywhere.

Units are for revolute DOFs; a prismatic DOF uses [N·s/m], [N], [kg] and [N].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "JOINT_TERMS",
    "JointTerm",
    "enable_keys",
    "enabled_terms",
    "exported_prefixes",
    "term",
    "term_for_parameter",
]

#: Signature of a regressor signal: ``(dq, ddq, coulomb_deadband) -> entries``.
Signal = Callable[[np.ndarray, np.ndarray, float], np.ndarray]


def _velocity(dq: np.ndarray, ddq: np.ndarray, coulomb_deadband: float) -> np.ndarray:
    """``dq`` [rad/s]: the viscous-friction entry."""
    return dq


def _velocity_sign(dq: np.ndarray, ddq: np.ndarray, coulomb_deadband: float) -> np.ndarray:
    """``sign(dq)`` (``sign(0) = 0``), 0 where ``|dq| <`` the dead band when it is > 0."""
    entries = np.sign(dq)
    if coulomb_deadband > 0:
        entries *= np.abs(dq) >= coulomb_deadband
    return entries


def _acceleration(dq: np.ndarray, ddq: np.ndarray, coulomb_deadband: float) -> np.ndarray:
    """``ddq`` [rad/s²]: the actuator-inertia entry."""
    return ddq


def _one(dq: np.ndarray, ddq: np.ndarray, coulomb_deadband: float) -> np.ndarray:
    """``1``: the constant effort-offset entry."""
    return np.ones_like(dq)


@dataclass(frozen=True)
class JointTerm:
    """One per-DOF joint model term ``coefficient · signal``.

    Attributes:
        prefix: Parameter-name prefix (``fv`` gives ``fv_<joint>``); also the
            identification-config key of its values.
        label: Short description used in messages (``"viscous friction"``).
        summary: One-line description returned by
            :func:`figaroh.identification.parameter.get_parameter_info`.
        info_key: Key of the term in ``get_parameter_info()["standard_additional"]``.
        signal: The regressor entry the coefficient multiplies, as text
            (``"dq"``, ``"sign(dq)"``, ``"ddq"``, ``"1"``).
        evaluate: ``evaluate(dq, ddq, coulomb_deadband)``: the entries of
            :attr:`signal` for arrays of velocities [rad/s] and accelerations
            [rad/s²]; ``coulomb_deadband`` [rad/s] is only used by ``sign(dq)``.
        unit: Unit of the coefficient, e.g. ``"[N·m·s/rad]"``.
        urdf_element: Child element of the URDF ``<joint>`` the value is written to.
        urdf_attribute: Attribute of :attr:`urdf_element` holding the value.
        enable_key: ``identif_config`` flag that adds the term (``has_friction``).
        values_key: ``identif_config`` key of the per-DOF values (``fv``).
        component_key: Key under ``problem.model_components`` of the unified
            configuration that sets :attr:`enable_key`.
        mechanics_path: Path under ``mechanics`` of the unified configuration
            holding the values (``("friction_coefficients", "viscous")``).
        legacy_values_key: Key under ``robot_params`` of the legacy flat
            configuration holding the values.
        gear_power: Power ``k`` of the gear ratio ``N`` (motor turns per joint
            turn) reflecting a motor-side coefficient to the joint side,
            ``c_joint = |N|^k · c_motor``: the term's effort is multiplied by
            ``N`` and its signal, written in motor coordinates, by ``N`` per
            factor of ``dq``/``ddq`` (``fv``: 2, ``fs``: 1, ``Ia``: 2).
        exported: Whether an identified value is written to the URDF by
            default (:func:`figaroh.tools.urdf_exporter.joint_term_parameters`,
            ``BaseIdentification.export_urdf``). False for the effort offset
            ``off``, whose legacy target ``<calibration rising>`` is a joint
            position, not an effort.
    """

    prefix: str
    label: str
    summary: str
    info_key: str
    signal: str
    evaluate: Signal
    unit: str
    urdf_element: str
    urdf_attribute: str
    enable_key: str
    values_key: str
    component_key: str
    mechanics_path: tuple[str, ...]
    legacy_values_key: str
    gear_power: int
    exported: bool = True


#: The joint model terms, in regressor column / standard-parameter order.
JOINT_TERMS: tuple[JointTerm, ...] = (
    JointTerm(
        prefix="fv",
        label="viscous friction",
        summary="Viscous friction coefficient",
        info_key="viscous_friction",
        signal="dq",
        evaluate=_velocity,
        unit="[N·m·s/rad]",
        urdf_element="dynamics",
        urdf_attribute="damping",
        enable_key="has_friction",
        values_key="fv",
        component_key="friction",
        mechanics_path=("friction_coefficients", "viscous"),
        legacy_values_key="fv",
        gear_power=2,
    ),
    JointTerm(
        prefix="fs",
        label="static friction",
        summary="Static friction coefficient",
        info_key="static_friction",
        signal="sign(dq)",
        evaluate=_velocity_sign,
        unit="[N·m]",
        urdf_element="dynamics",
        urdf_attribute="friction",
        enable_key="has_friction",
        values_key="fs",
        component_key="friction",
        mechanics_path=("friction_coefficients", "static"),
        legacy_values_key="fs",
        gear_power=1,
    ),
    JointTerm(
        prefix="Ia",
        label="actuator inertia",
        summary="Actuator/rotor inertia",
        info_key="actuator_inertia",
        signal="ddq",
        evaluate=_acceleration,
        unit="[kg·m²]",
        urdf_element="dynamics",
        urdf_attribute="armature",
        enable_key="has_actuator_inertia",
        values_key="Ia",
        component_key="actuator_inertia",
        mechanics_path=("actuator_inertias",),
        legacy_values_key="Ia",
        gear_power=2,
    ),
    JointTerm(
        prefix="off",
        label="joint offset",
        summary="Joint position offset",
        info_key="joint_offset",
        signal="1",
        evaluate=_one,
        unit="[N·m]",
        urdf_element="calibration",
        urdf_attribute="rising",
        enable_key="has_joint_offset",
        values_key="off",
        component_key="joint_offset",
        mechanics_path=("joint_offsets",),
        legacy_values_key="offset",
        gear_power=1,
        exported=False,
    ),
)


def enable_keys() -> tuple[str, ...]:
    """The distinct enabling flags, in table order (``has_friction``, ...)."""
    return tuple(dict.fromkeys(t.enable_key for t in JOINT_TERMS))


def enabled_terms(flags: Mapping[str, Any] | None) -> tuple[JointTerm, ...]:
    """The rows whose :attr:`JointTerm.enable_key` is true in ``flags`` (missing → False)."""
    if not flags:
        return ()
    return tuple(t for t in JOINT_TERMS if bool(flags.get(t.enable_key, False)))


def exported_prefixes() -> tuple[str, ...]:
    """Prefixes of the rows written to the URDF by default (``fv``, ``fs``, ``Ia``)."""
    return tuple(t.prefix for t in JOINT_TERMS if t.exported)


def term(prefix: str) -> JointTerm:
    """The row with this parameter-name prefix.

    Raises:
        KeyError: No row has this prefix.
    """
    for row in JOINT_TERMS:
        if row.prefix == prefix:
            return row
    raise KeyError(f"no joint term {prefix!r}; known: {[t.prefix for t in JOINT_TERMS]}")


def term_for_parameter(name: str) -> tuple[JointTerm, str] | None:
    """``(row, joint)`` of a parameter name ``<prefix>_<joint>``, or None."""
    for row in JOINT_TERMS:
        head = row.prefix + "_"
        if name.startswith(head) and len(name) > len(head):
            return row, name[len(head) :]
    return None
