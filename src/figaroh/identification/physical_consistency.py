"""Physical consistency of link inertial parameters: feasibility checks and LMI projection.

Conventions (shared by every physical-consistency module):

* A link's ten dynamic parameters **p10** are in Pinocchio order
  ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``: mass ``m`` [kg], first
  moments ``h = m·c`` [kg·m] and the rotational inertia ``I_O`` about the
  **link-frame origin** [kg·m²] (``I_O = I_C + m((cᵀc)E − ccᵀ)``).
* Second moment ``Σ = ½·tr(I_O)·E − I_O`` (inverse ``I_O = tr(Σ)·E − Σ``).
* Pseudo-inertia ``P = [[Σ, h], [hᵀ, m]]``; the link is physically consistent
  iff ``P ⪰ 0`` (Wensing et al., 2017), which implies ``m ≥ 0``, ``I_C ⪰ 0``
  and the triangle inequalities of the principal moments.

The projection :func:`project_p10_lmi` solves the SDP
``min Σ_k (w_k (p_k − p̂_k))²  s.t.  P(p) ⪰ 0, m ≥ mass_min`` (plus optional
mass / first-moment bounds) with PICOS + CVXOPT by default, or with Clarabel
(``solver="clarabel"``, optional extra ``figaroh[fast]``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Sequence, Tuple

import numpy as np

from figaroh.identification import _conic
from figaroh.tools.inertia import (
    INERTIAL_KEYS,
    ProjectionReport,
    check_p10_feasibility,
    inertia_matrix_from_p10,
    is_feasible_link,
    p10_from_mass_com_inertia,
    pseudo_inertia_matrix_from_p10,
)
from figaroh.tools.inertia import as_p10 as _as_p10
from figaroh.tools.inertia import pseudo_inertia_explicit as _pseudo_inertia_explicit

logger = logging.getLogger(__name__)

__all__ = [
    "INERTIAL_KEYS",
    "MASS_BOUND_RTOL",
    "ProjectionReport",
    "RobotProjectionReport",
    "check_p10_feasibility",
    "inertia_matrix_from_p10",
    "is_feasible_link",
    "lmi_margin",
    "mass_bound_tolerance",
    "p10_by_joint_from_param_dict",
    "p10_from_mass_com_inertia",
    "param_dict_with_p10_by_joint",
    "project_link",
    "project_p10_lmi",
    "project_robot_p10_lmi",
    "pseudo_inertia_matrix_from_p10",
    "pseudo_inertia_vec_map",
]

_INERTIAL_KEYS = list(INERTIAL_KEYS)

#: p10 index of each unique tensor entry (row, col) of I_O.
_TENSOR_INDEX = {(0, 0): 4, (0, 1): 5, (1, 1): 6, (0, 2): 7, (1, 2): 8, (2, 2): 9}


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RobotProjectionReport:
    """Per-robot projection outcome.

    Attributes:
        status: ``ok`` when no link failed, else ``partial``.
        projected_links: Number of links whose projection succeeded (status
            ``projected``); their names are the keys of ``per_link`` not in
            ``failed_links``.
        failed_links: Names of the links whose projection errored or stayed
            infeasible.
        per_link: ``{link: ProjectionReport}``.
    """

    status: str
    projected_links: int = 0
    failed_links: Tuple[str, ...] = ()
    per_link: Dict[str, ProjectionReport] = field(default_factory=dict)


# ---------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------
_VEC_MAP: np.ndarray | None = None

#: Relative margin of the solver-side LMIs (see :func:`lmi_margin`).
LMI_MARGIN_REL = 1e-9


def lmi_margin(P_ref: np.ndarray) -> float:
    """Margin ``δ`` [kg·m²] of the solver-side LMI ``P(θ) ⪰ δ·I``.

    Interior-point solutions satisfy ``P ⪰ 0`` only up to the solver's
    feasibility accuracy (about 1e-9 relative), which could make a solution on
    the boundary fail the acceptance test (``λ_min ≥ psd_eig_tol``, e.g.
    −1e-10). The SDPs therefore impose ``P ⪰ δ·I`` with
    ``δ = 1e-9·max(1, ‖P_ref‖₂)`` (``P_ref``: the link's prior or estimate) — a
    physically negligible tightening that makes accepted solutions robustly
    feasible.
    """
    return LMI_MARGIN_REL * max(1.0, float(np.linalg.norm(np.asarray(P_ref, dtype=float), 2)))


def pseudo_inertia_vec_map() -> np.ndarray:
    """Constant (16, 10) matrix ``L`` with ``vec(P(p)) = L p`` (column-major ``vec``).

    ``P`` is linear in the p10, which makes ``P(p) ⪰ 0`` an LMI in the
    parameters.
    """
    global _VEC_MAP
    if _VEC_MAP is None:
        L = np.zeros((16, 10))
        for k in range(10):
            e = np.zeros(10)
            e[k] = 1.0
            L[:, k] = _pseudo_inertia_explicit(e).reshape(-1, order="F")
        _VEC_MAP = L
        _VEC_MAP.setflags(write=False)
    return _VEC_MAP


# ---------------------------------------------------------------------------
# Feasibility
# ---------------------------------------------------------------------------
#: Relative slack of :func:`mass_bound_tolerance` (a mass this close to its
#: lower bound, relative to ``max(1, |mass_min|)``, counts as on the bound).
MASS_BOUND_RTOL: float = 1e-9


def mass_bound_tolerance(mass_min: float) -> float:
    """Slack [kg] below ``mass_min`` accepted when judging a solver's output.

    ``MASS_BOUND_RTOL·max(1, |mass_min|)`` with ``MASS_BOUND_RTOL = 1e-9``: a
    mass on its bound up to solver accuracy is accepted (``0.5 − 1e-12`` for
    ``mass_min = 0.5``), a real violation (``0.5 − 1e-6``) is not.
    """
    return MASS_BOUND_RTOL * max(1.0, abs(float(mass_min)))


#: Relative feasibility accuracy of the interior-point solvers (CVXOPT ``feastol``).
SOLVER_FEAS_TOL = 1e-7


def _mass_slack(mass_tolerance: float | str, mass_min: float) -> float:
    """``mass_tolerance`` as a number [kg] (``"auto"``: ``SOLVER_FEAS_TOL·max(1, |mass_min|)``)."""
    if isinstance(mass_tolerance, str):
        if mass_tolerance.strip().lower() != "auto":
            raise ValueError(
                f"mass_tolerance must be a number [kg] >= 0 or 'auto', got {mass_tolerance!r}"
            )
        return SOLVER_FEAS_TOL * max(1.0, abs(float(mass_min)))
    tol = float(mass_tolerance)
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(
            f"mass_tolerance must be a finite number >= 0 [kg], got {mass_tolerance!r}"
        )
    return tol


def _failed_test(rep: ProjectionReport) -> str:
    """One-line description of why ``rep`` is infeasible."""
    return rep.message or rep.status


# ---------------------------------------------------------------------------
# Projection
# ---------------------------------------------------------------------------
def _auto_weights(p_hat: np.ndarray) -> np.ndarray:
    """Scale-aware weights: ``1/|m̂|``, ``1/‖ĥ‖`` (×3), ``1/‖Î‖₆`` (×6), each floored at 1e-6."""
    p = np.asarray(p_hat, dtype=float)
    wm = 1.0 / max(abs(p[0]), 1e-6)
    wh = 1.0 / max(float(np.linalg.norm(p[1:4])), 1e-6)
    wi = 1.0 / max(float(np.linalg.norm(p[4:10])), 1e-6)
    return np.array([wm, wh, wh, wh, wi, wi, wi, wi, wi, wi])


def _check_weights(weights: Any) -> np.ndarray:
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.shape != (10,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be 10 positive finite numbers, got {weights!r}")
    return w


def _bounds_rows(
    mass_min: float,
    mass_bounds: Tuple[float, float] | None,
    com_bounds: Mapping[str, Tuple[float, float]] | None,
) -> Tuple[np.ndarray, np.ndarray]:
    """Rows ``G p ≤ h`` of the mass and first-moment bounds of one link."""
    G, h = [], []

    def row(k: int, sign: float) -> np.ndarray:
        r = np.zeros(10)
        r[k] = sign
        return r

    G.append(row(0, -1.0))
    h.append(-float(mass_min))
    if mass_bounds is not None:
        lo, hi = (float(v) for v in mass_bounds)
        if lo > hi:
            raise ValueError(f"mass_bounds lower {lo} > upper {hi}")
        G += [row(0, -1.0), row(0, 1.0)]
        h += [-lo, hi]
    for axis, bounds in (com_bounds or {}).items():
        if axis not in ("x", "y", "z"):
            raise ValueError(f"com_bounds axis must be 'x', 'y' or 'z', got {axis!r}")
        lo, hi = (float(v) for v in bounds)
        if lo > hi:
            raise ValueError(f"com_bounds[{axis!r}] lower {lo} > upper {hi}")
        k = 1 + "xyz".index(axis)
        G += [row(k, -1.0), row(k, 1.0)]
        h += [-lo, hi]
    return np.array(G), np.array(h)


def _projection_program(
    p_hat: np.ndarray,
    w: np.ndarray,
    mass_min: float,
    mass_bounds: Tuple[float, float] | None,
    com_bounds: Mapping[str, Tuple[float, float]] | None,
) -> Any:
    """``min ‖diag(w)(p − p̂)‖²`` s.t. the bound rows and ``P(p) ⪰ δ·I`` (a ConeProgram)."""
    G, h = _bounds_rows(mass_min, mass_bounds, com_bounds)
    prog = _conic.ConeProgram(n=10, objective="sqnorm", F=np.diag(w), g=w * p_hat)
    prog.add_inequalities(G, h)
    margin = lmi_margin(_pseudo_inertia_explicit(p_hat))
    prog.add_lmi(pseudo_inertia_vec_map(), -margin * np.eye(4))  # P(p) ⪰ δ·I
    return prog


def _error_report(p_hat: np.ndarray, solver: str, message: str, runtime: float):
    """:class:`ProjectionReport` of a failed solve (``p_hat`` returned unchanged)."""
    return ProjectionReport(
        status="error",
        mass=float(p_hat[0]),
        min_eig=float("nan"),
        solver=str(solver),
        message=message,
        runtime=runtime,
    )


def project_p10_lmi(
    p10_hat: Any,
    *,
    mass_min: float = 1e-6,
    psd_eig_tol: float = -1e-10,
    weights: Any = None,
    solver: str = "cvxopt",
    verbose: bool = False,
    max_seconds: float | None = None,
    mass_bounds: Tuple[float, float] | None = None,
    com_bounds: Mapping[str, Tuple[float, float]] | None = None,
    mass_tolerance: float | str = 0.0,
) -> Tuple[np.ndarray, ProjectionReport]:
    """Closest physically consistent p10 to ``p10_hat`` (weighted least squares + LMI).

    Solves ``min Σ_k (w_k (p_k − p̂_k))²`` over the ten parameters subject to
    ``P(p) ⪰ 0``, ``m ≥ mass_min``, optional ``mass_bounds = (lo, hi)`` [kg]
    and per-axis ``com_bounds = {"x"|"y"|"z": (lo, hi)}`` on the first moments
    ``h`` [kg·m]. The tensor terms are the six unique entries of ``I_O``
    (no Frobenius double counting).

    The solver's output is then judged with :func:`check_p10_feasibility`
    (``mass_min``, ``min(psd_eig_tol, −1e-8)``). By default
    (``mass_tolerance=0``, figaroh 1.0.2's rule) the mass test is strict: an
    interior-point solution that lands a hair under an active mass bound
    (e.g. ``0.2 − 2e-10`` kg for ``mass_min=0.2``) is reported
    ``infeasible`` with ``min_eig = -inf``, although the parameters are
    physically fine. With ``mass_tolerance > 0`` a mass less than
    ``mass_tolerance`` below ``mass_min`` is raised to ``mass_min`` before the
    check — a move within solver accuracy that keeps ``P ⪰ 0`` (it adds
    ``δ·e₄e₄ᵀ`` to ``P``) — so the returned p10 satisfies the bound exactly;
    ``"auto"`` uses ``SOLVER_FEAS_TOL·max(1, |mass_min|)`` (1e-7 relative,
    CVXOPT's feasibility accuracy). A real violation (``0.2 − 1e-6``) stays
    infeasible.

    Args:
        p10_hat: Estimate to project (Pinocchio order).
        mass_min: Lower mass bound [kg].
        psd_eig_tol: Eigenvalue tolerance of the final check (the check uses
            ``min(psd_eig_tol, −1e-8)`` to absorb solver accuracy).
        weights: 10 positive weights, default :func:`_auto_weights` (inverse
            magnitudes of mass, first moments and inertia).
        solver: ``"cvxopt"`` (PICOS) or ``"clarabel"``.
        verbose: Log the outcome at INFO level.
        max_seconds: Solver time limit [s].
        mass_bounds: Optional ``(lo, hi)`` [kg].
        com_bounds: Optional per-axis bounds on ``h`` [kg·m].
        mass_tolerance: Solver-accuracy slack [kg] below ``mass_min``
            (see above): ``0`` (default, strict), ``"auto"`` or a number ≥ 0.

    Returns:
        ``(p10, report)``: on a solver error ``p10_hat`` is returned unchanged
        with status ``error``; otherwise status ``projected`` (re-check passed)
        or ``infeasible``.

    Raises:
        ImportError: The solver's package is missing.
        ValueError: Malformed ``p10_hat``, weights or bounds.
    """
    p_hat = _as_p10(p10_hat, "p10_hat")
    slack = _mass_slack(mass_tolerance, mass_min)
    w = _auto_weights(p_hat) if weights is None else _check_weights(weights)
    prog = _projection_program(p_hat, w, mass_min, mass_bounds, com_bounds)
    t0 = time.perf_counter()
    try:
        res = _conic.solve_program(prog, solver=solver, max_seconds=max_seconds)
    except ImportError:
        raise
    except Exception as exc:  # noqa: BLE001 - solver failures become a report
        message = f"{type(exc).__name__}: {exc}"
        return p_hat.copy(), _error_report(p_hat, solver, message, time.perf_counter() - t0)
    runtime = time.perf_counter() - t0
    if res.status != "optimal":
        return p_hat.copy(), _error_report(p_hat, solver, f"solver status: {res.status}", runtime)
    p = np.array(res.x, dtype=float)
    if mass_min - slack <= p[0] < mass_min:
        p[0] = mass_min  # within solver accuracy of the bound
    objective = float(np.sum((w * (p - p_hat)) ** 2))
    check = check_p10_feasibility(p, mass_min=mass_min, psd_eig_tol=min(psd_eig_tol, -1e-8))
    status = "projected" if check.status == "feasible" else "infeasible"
    report = ProjectionReport(
        status=status,
        mass=check.mass,
        min_eig=check.min_eig,
        objective=objective,
        solver=str(solver),
        message=check.message,
        runtime=runtime,
    )
    if verbose:
        logger.info(
            "LMI projection: %s (mass %.6g kg, min eig %.3e, objective %.3e, %.3f s)",
            status,
            report.mass,
            report.min_eig,
            objective,
            runtime,
        )
    return p, report


def project_link(
    p10: Any,
    *,
    mass_min: float = 1e-6,
    psd_eig_tol: float = -1e-10,
    weights: Any = None,
    solver: str = "cvxopt",
    verbose: bool = False,
    max_seconds: float | None = None,
    mass_tolerance: float | str = 0.0,
) -> Tuple[np.ndarray, ProjectionReport]:
    """:func:`project_p10_lmi` of one link without mass-range / first-moment bounds.

    Args:
        p10: Link parameters to project (Pinocchio order, origin-based inertia).
        mass_min: Lower mass bound [kg].
        psd_eig_tol: Eigenvalue tolerance of the final check [kg·m²].
        weights: 10 positive weights, default scale-aware.
        solver: ``"cvxopt"`` (PICOS) or ``"clarabel"``.
        verbose: Log the outcome at INFO level.
        max_seconds: Solver time limit [s].
        mass_tolerance: See :func:`project_p10_lmi`.

    Returns:
        ``(p10, report)`` as :func:`project_p10_lmi`.
    """
    return project_p10_lmi(
        p10,
        mass_min=mass_min,
        psd_eig_tol=psd_eig_tol,
        weights=weights,
        solver=solver,
        verbose=verbose,
        max_seconds=max_seconds,
        mass_tolerance=mass_tolerance,
    )


def project_robot_p10_lmi(
    p10_by_link: Mapping[str, Any],
    *,
    mass_min: float = 1e-6,
    psd_eig_tol: float = -1e-10,
    weights: Any = None,
    solver: str = "cvxopt",
    verbose: bool = False,
    max_seconds: float | None = None,
    cad_constraints: Any = None,
    mass_tolerance: float | str = 0.0,
) -> Tuple[Dict[str, np.ndarray], RobotProjectionReport]:
    """Project every link independently (see :func:`project_p10_lmi`).

    Args:
        p10_by_link: ``{link: p10}``.
        mass_min: Lower mass bound [kg].
        psd_eig_tol: Eigenvalue tolerance of the checks.
        weights: None (auto per link) or 10 weights shared by all links.
        solver: ``"cvxopt"`` or ``"clarabel"``.
        verbose: Log per-link outcomes.
        max_seconds: Time limit per link [s].
        cad_constraints: Optional
            :class:`~figaroh.identification.cad_constraints.CADConstraints`;
            its ``mass_bounds[link]`` and ``com_bounds[link]`` apply.
        mass_tolerance: See :func:`project_p10_lmi`.

    Returns:
        ``(projected, report)``; a link whose projection errors or stays
        infeasible keeps the returned vector and is listed in
        ``report.failed_links`` (robot status ``partial``);
        ``report.projected_links`` counts the others.
    """
    mass_b = getattr(cad_constraints, "mass_bounds", None) or {}
    com_b = getattr(cad_constraints, "com_bounds", None) or {}
    projected: Dict[str, np.ndarray] = {}
    per_link: Dict[str, ProjectionReport] = {}
    ok_links: list[str] = []
    failed: list[str] = []
    for link, p10 in p10_by_link.items():
        p, rep = project_p10_lmi(
            p10,
            mass_min=mass_min,
            psd_eig_tol=psd_eig_tol,
            weights=weights,
            solver=solver,
            verbose=verbose,
            max_seconds=max_seconds,
            mass_bounds=mass_b.get(link),
            com_bounds=com_b.get(link),
            mass_tolerance=mass_tolerance,
        )
        projected[link] = p
        per_link[link] = rep
        (failed if rep.status in ("error", "infeasible") else ok_links).append(link)
    return projected, RobotProjectionReport(
        status="ok" if not failed else "partial",
        projected_links=len(ok_links),
        failed_links=tuple(failed),
        per_link=per_link,
    )


# ---------------------------------------------------------------------------
# Parameter-dict helpers
# ---------------------------------------------------------------------------
def p10_by_joint_from_param_dict(
    *, parameter_dict: Mapping[str, Any], joint_names: Sequence[str]
) -> Dict[str, np.ndarray]:
    """``{joint: p10}`` from ``<key>_<joint>`` entries of ``parameter_dict``.

    Raises:
        KeyError: ``"Missing inertial parameter '<name>'"`` for an absent key.
    """
    out: Dict[str, np.ndarray] = {}
    for joint in joint_names:
        vals = []
        for key in INERTIAL_KEYS:
            name = f"{key}_{joint}"
            if name not in parameter_dict:
                raise KeyError(f"Missing inertial parameter '{name}'")
            vals.append(float(parameter_dict[name]))
        out[joint] = np.asarray(vals)
    return out


def param_dict_with_p10_by_joint(
    *, parameter_dict: Mapping[str, Any], p10_by_joint: Mapping[str, Any]
) -> Dict[str, float]:
    """Copy of ``parameter_dict`` with the ten inertial entries of each given joint replaced."""
    out = dict(parameter_dict)
    for joint, p10 in p10_by_joint.items():
        p = _as_p10(p10, f"p10 of {joint!r}")
        for key, v in zip(INERTIAL_KEYS, p, strict=True):
            out[f"{key}_{joint}"] = float(v)
    return out
