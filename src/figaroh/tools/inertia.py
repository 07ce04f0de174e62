"""Rigid-body inertial parameters of one link: conversions and the feasibility test.

Conventions:

* A link's ten dynamic parameters **p10** are in Pinocchio order
  ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``: mass ``m`` [kg], first
  moments ``h = m·c`` [kg·m] and the rotational inertia ``I_O`` about the
  **link-frame origin** [kg·m²] (``I_O = I_C + m((cᵀc)E − ccᵀ)``).
* Second moment ``Σ = ½·tr(I_O)·E − I_O``.
* Pseudo-inertia ``P = [[Σ, h], [hᵀ, m]]``; the link is physically consistent
  iff ``P ⪰ 0`` (Wensing, Kim and Slotine, 2017), which implies ``m ≥ 0``,
  ``I_C ⪰ 0`` and the triangle inequalities of the principal moments.

The SDP projection onto the consistent set lives in
:mod:`figaroh.identification.physical_consistency`, which re-exports the names
defined here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple

import numpy as np

__all__ = [
    "INERTIAL_KEYS",
    "ProjectionReport",
    "as_p10",
    "check_p10_feasibility",
    "inertia_matrix_from_p10",
    "is_feasible_link",
    "mass_com_inertia_from_p10",
    "p10_from_mass_com_inertia",
    "pseudo_inertia_explicit",
    "pseudo_inertia_matrix_from_p10",
]

#: Pinocchio dynamic-parameter order of one link.
INERTIAL_KEYS: Tuple[str, ...] = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


@dataclass(frozen=True)
class ProjectionReport:
    """Feasibility / projection outcome of one link.

    Attributes:
        status: ``feasible`` / ``infeasible`` (checks), ``projected`` /
            ``infeasible`` / ``error`` (projection).
        mass: Link mass [kg] of the judged vector.
        min_eig: Smallest pseudo-inertia eigenvalue (``-inf`` when the mass
            test failed first).
        objective: Projection objective value (weighted squared distance).
        solver: Solver used by a projection.
        message: Why a test failed or the solver error.
        runtime: Projection wall time [s].
    """

    status: str
    mass: float
    min_eig: float
    objective: float | None = None
    solver: str | None = None
    message: str | None = None
    runtime: float | None = None


def as_p10(p10: Any, name: str = "p10") -> np.ndarray:
    """``p10`` as a (10,) float array.

    Raises:
        ValueError: Not 10 values, or a NaN/inf among them.
    """
    p = np.asarray(p10, dtype=float).reshape(-1)
    if p.shape != (10,):
        raise ValueError(
            f"{name} must hold 10 values [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz], "
            f"got shape {np.shape(p10)}"
        )
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} contains NaN/inf: {p.tolist()}")
    return p


def inertia_matrix_from_p10(p10: Any) -> np.ndarray:
    """Rotational inertia ``I_O`` (3×3) [kg·m²] about the link origin from a p10."""
    p = as_p10(p10)
    ixx, ixy, iyy, ixz, iyz, izz = p[4:]
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def p10_from_mass_com_inertia(mass: float, com: Any, inertia_com: Any) -> np.ndarray:
    """p10 from mass [kg], centre of mass ``c`` [m] and inertia about the CoM ``I_C`` [kg·m²].

    ``h = m·c`` and ``I_O = I_C + m((cᵀc)E − ccᵀ)`` (parallel-axis theorem),
    all expressed in the link frame.
    """
    c = np.asarray(com, dtype=float).reshape(3)
    Ic = np.asarray(inertia_com, dtype=float).reshape(3, 3)
    m = float(mass)
    Io = Ic + m * (float(c @ c) * np.eye(3) - np.outer(c, c))
    h = m * c
    return np.array([m, *h, Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]])


def mass_com_inertia_from_p10(p10: Any, where: str = "p10") -> Tuple[float, np.ndarray, np.ndarray]:
    """``(m, c, I_C)`` of an origin-based p10: ``c = h/m``, ``I_C = I_O − (hᵀh E − hhᵀ)/m``.

    The inverse of :func:`p10_from_mass_com_inertia`; ``I_C`` is symmetrised.
    A zero mass with zero first moments gives ``c = 0`` and ``I_C = I_O``.

    Args:
        p10: Link parameters (Pinocchio order, origin-based inertia).
        where: Name of the link for error messages.

    Raises:
        ValueError: A negative mass, or a zero mass with non-zero first moments.
    """
    m = float(p10[0])
    h = np.asarray(p10[1:4], dtype=float)
    ixx, ixy, iyy, ixz, iyz, izz = p10[4:]
    Io = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)
    if m < 0:
        raise ValueError(f"{where}: mass {m} kg is negative; a URDF link needs m >= 0")
    if m == 0:
        if np.any(h != 0):
            raise ValueError(f"{where}: zero mass with non-zero first moments {h.tolist()}")
        return 0.0, np.zeros(3), Io
    c = h / m
    Ic = Io - (float(h @ h) * np.eye(3) - np.outer(h, h)) / m
    return m, c, 0.5 * (Ic + Ic.T)


def pseudo_inertia_explicit(p: np.ndarray) -> np.ndarray:
    """Pseudo-inertia ``[[Σ, h], [hᵀ, m]]`` (4×4) of a (10,) array by the block formula."""
    m, mx, my, mz, ixx, ixy, iyy, ixz, iyz, izz = p
    half = 0.5 * (ixx + iyy + izz)
    return np.array(
        [
            [half - ixx, -ixy, -ixz, mx],
            [-ixy, half - iyy, -iyz, my],
            [-ixz, -iyz, half - izz, mz],
            [mx, my, mz, m],
        ]
    )


def pseudo_inertia_matrix_from_p10(p10: Any) -> np.ndarray:
    """Pseudo-inertia ``P = [[Σ, h], [hᵀ, m]]`` (4×4) of a p10.

    ``Σ = ½tr(I_O)E − I_O`` [kg·m²], ``h`` [kg·m], ``m`` [kg]. Uses
    ``pin.PseudoInertia`` when available and the explicit block formula
    otherwise (both agree).

    Raises:
        ValueError: not 10 finite values.
    """
    p = as_p10(p10)
    try:
        import pinocchio as pin

        P = np.asarray(pin.PseudoInertia.FromDynamicParameters(p).toMatrix(), dtype=float)
        if P.shape == (4, 4) and np.all(np.isfinite(P)):
            return P
    except Exception:  # noqa: BLE001 - any binding problem → explicit formula
        pass
    return pseudo_inertia_explicit(p)


def check_p10_feasibility(
    p10: Any, *, mass_min: float = 0.0, psd_eig_tol: float = -1e-10
) -> ProjectionReport:
    """Judge one link: ``m ≥ mass_min`` and ``λ_min(P) ≥ psd_eig_tol``.

    Args:
        p10: Link parameters (Pinocchio order, origin-based inertia).
        mass_min: Smallest accepted mass [kg].
        psd_eig_tol: Smallest accepted pseudo-inertia eigenvalue (≤ 0 allows
            round-off) [kg·m²].

    Returns:
        :class:`ProjectionReport` with status ``feasible`` or ``infeasible``;
        ``message`` names the failed test.

    Raises:
        ValueError: not 10 finite values.
    """
    p = as_p10(p10)
    m = float(p[0])
    if m < mass_min:
        return ProjectionReport(
            status="infeasible",
            mass=m,
            min_eig=float("-inf"),
            message=f"mass {m} < mass_min {mass_min}",
        )
    P = pseudo_inertia_matrix_from_p10(p)
    min_eig = float(np.linalg.eigvalsh(0.5 * (P + P.T))[0])
    if min_eig >= psd_eig_tol:
        return ProjectionReport(status="feasible", mass=m, min_eig=min_eig)
    return ProjectionReport(
        status="infeasible",
        mass=m,
        min_eig=min_eig,
        message=f"pseudo-inertia min eigenvalue {min_eig:.3e} < {psd_eig_tol:.1e}",
    )


#: Alias of :func:`check_p10_feasibility`.
is_feasible_link = check_p10_feasibility
