"""Which recorded parameters are the same quantity across runs and robots.

A drift report compares a parameter of one run with the same parameter of
other runs (the robot's earlier runs, the other robots of the session). That
comparison means something only when both values estimate the same quantity.
Parameter names fall in two groups:

**Stable quantities** — the name alone says what is estimated, whatever the
run's trajectory:

* per-joint model terms ``<prefix>_<joint>`` whose prefix is a row of
  :data:`figaroh.tools.joint_terms.JOINT_TERMS` (``fv_`` viscous friction
  [N·m·s/rad], ``fs_`` Coulomb friction [N·m], ``Ia_`` actuator inertia
  [kg·m²], ``off_`` effort offset [N·m]; a new row of that table is
  recognised here without a change);
* every other single name that is not an inertial parameter: geometric
  calibration parameters (``d_px_1``, ``base_phiz``, ``pEEx``, ``k_RZ_1`` …).

**Structure-dependent quantities** — inertial base parameters: a plain
standard inertial parameter ``<key>_<joint>`` (``key`` one of
:data:`figaroh.tools.inertia.INERTIAL_KEYS`: ``m``, ``mx`` … ``Izz``) or a
base-parameter expression ``<base> ± c₁*<name₁> ± …`` (the format of
:mod:`figaroh.tools.qrdecomposition`, parsed with
:func:`~figaroh.tools.qrdecomposition.parse_base_param_expression`). Which
standard parameters a base parameter regroups, and with which coefficients,
depends on the excitation of the run's trajectory: ``Iyz_elbow_joint −
0.5723*my_wrist_1_joint`` of one robot and ``Iyz_elbow_joint −
0.5719*my_wrist_1_joint`` of another are different quantities, and a plain
``Ixx_elbow_joint`` stands alone only because the run's QR regrouped nothing
above the coefficient tolerance into it. These are compared only between runs
of the same **base-parameter structure**: the same set of structure-dependent
names (every coefficient equal to its 6 printed decimals), identified by
:func:`structure_signature`. Runs of one robot replaying one trajectory share
a structure; robots with their own trajectories usually do not, and then each
robot's inertial parameters are compared with its own history only.

A per-joint term regrouped with an inertial parameter
(``Ia_shoulder_pan_joint + 1.0*Izz_shoulder_pan_joint``) is an expression,
hence structure-dependent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from figaroh.tools import joint_terms
from figaroh.tools.inertia import INERTIAL_KEYS
from figaroh.tools.qrdecomposition import parse_base_param_expression

__all__ = [
    "STABLE",
    "is_joint_term",
    "is_structural",
    "quantity_structure",
    "run_structures",
    "structure_signature",
]

#: Structure of a stable quantity (compared across every run and robot).
STABLE = ""
#: Hex digits of a structure signature.
_SIGNATURE_DIGITS = 12


def _regrouped_terms(name: str) -> int:
    """Number of regrouped terms of a base-parameter expression (0 for a single name)."""
    try:
        return len(parse_base_param_expression(name)[1])
    except ValueError:  # not in the expression format: a name with spaces, e.g.
        return 0


def is_joint_term(name: str) -> bool:
    """True when ``name`` is exactly ``<prefix>_<joint>`` of a joint-term row.

    The prefixes come from :data:`figaroh.tools.joint_terms.JOINT_TERMS`, read
    at call time (``fv_``, ``fs_``, ``Ia_``, ``off_``).
    """
    text = str(name)
    if any(c.isspace() for c in text) or "*" in text:
        return False
    return joint_terms.term_for_parameter(text) is not None


def is_structural(name: str) -> bool:
    """True for an inertial base parameter, compared only within one base-parameter structure.

    That is a base-parameter expression with at least one regrouped term, or a
    plain standard inertial parameter ``<key>_<joint>`` with ``key`` in
    :data:`figaroh.tools.inertia.INERTIAL_KEYS`.
    """
    text = str(name)
    if _regrouped_terms(text):
        return True
    if is_joint_term(text):
        return False
    return any(text.startswith(key + "_") and len(text) > len(key) + 1 for key in INERTIAL_KEYS)


def _signature(structural: Iterable[str]) -> str:
    ordered = sorted(set(structural))
    if not ordered:
        return STABLE
    digest = hashlib.sha256("\n".join(ordered).encode("utf-8")).hexdigest()
    return digest[:_SIGNATURE_DIGITS]


def structure_signature(names: Iterable[str]) -> str:
    """Signature of a run's base-parameter structure (:data:`STABLE` when it has none).

    Args:
        names: Every parameter name of one run (stable ones are ignored).

    Returns:
        The first 12 hex digits of the sha256 of the sorted structure-dependent
        names joined by newlines; equal for two runs exactly when their sets of
        structure-dependent names are equal (up to a hash collision).
    """
    return _signature(str(n) for n in names if is_structural(str(n)))


def run_structures(names_by_run: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Run id → :func:`structure_signature` of its parameter names (each name classified once)."""
    listed = {str(run): [str(n) for n in names] for run, names in names_by_run.items()}
    distinct = {n for names in listed.values() for n in names}
    structural = {n: is_structural(n) for n in distinct}
    return {run: _signature(n for n in names if structural[n]) for run, names in listed.items()}


def quantity_structure(name: str, run_structure: str) -> str:
    """Structure under which parameter ``name`` of a run is compared.

    Args:
        name: Parameter name.
        run_structure: :func:`structure_signature` of the run.

    Returns:
        ``run_structure`` for a structure-dependent name, :data:`STABLE` otherwise.
    """
    return run_structure if is_structural(name) else STABLE
