"""Physically consistent parameter recovery by convex (LMI) effort fits.

Direct LMI effort fit over all standard parameters (public module;
:mod:`figaroh.identification._physical_comparator` remains as an alias).

Three *different* objectives are available on one shared problem; none of
them silently falls back to another:

1. :func:`solve_exact_reconstruction` — closest-to-prior θ that reproduces the
   OLS base parameters exactly (``M_full θ = φ_ols``) with a pseudo-inertia
   LMI per link.
2. :func:`solve_direct_effort_fit` — regularised effort fit with the same
   LMIs and bounds, no base equality. This is the estimator that
   ``select_stage: physical_fit`` selects in ``BaseIdentification``.
3. :func:`solve_per_link_projection` — nullspace representative of ``φ_ols``
   followed by an independent LMI projection per link.

:func:`diagnose_exact` runs staged diagnostics (D0..D3) to explain why
objective 1 fails on a given problem.

Typical use::

    problem = build_problem(Y, tau, params_std, joint_names, prior=prior)
    record = solve_direct_effort_fit(problem, solver="cvxopt")
    if record.accepted:
        theta = record.theta  # aligned to problem.params_std

Cost does not grow with the number of samples: :func:`build_problem` reduces
the N-row weighted regressor once to ``R`` (n×n) and ``Qᵀτ`` (one tall QR of
``[w·Y | w·τ]``, ``‖w∘(Yθ − τ)‖² = ‖Rθ − Qᵀτ‖² + const``); every SDP only sees
these. ``solver="cvxopt"`` models the SDP with PICOS + CVXOPT;
``solver="clarabel"`` (optional extra ``figaroh[fast]``) hands the same cone
program to Clarabel directly.

Every solve returns a :class:`SolveRecord` that states the solver status, the
base residual and per-link feasibility, so a caller can decide whether the
estimate is usable. Inertial conventions: see
:mod:`figaroh.identification.physical_consistency`.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from figaroh.identification import _conic
from figaroh.identification.physical_consistency import (
    INERTIAL_KEYS,
    check_p10_feasibility,
    lmi_margin,
    mass_bound_tolerance,
    project_p10_lmi,
    pseudo_inertia_vec_map,
)
from figaroh.identification.reconstruction import reconstruct_full_parameters
from figaroh.tools.qrdecomposition import QRDecomposer, tall_qr_r

logger = logging.getLogger(__name__)

__all__ = [
    "ComparatorProblem",
    "FixedExtras",
    "PhysicalPolicy",
    "SolveRecord",
    "build_problem",
    "diagnose_exact",
    "solve_direct_effort_fit",
    "solve_exact_reconstruction",
    "solve_per_link_projection",
]

_INERTIAL_KEYS = list(INERTIAL_KEYS)
_EXTRA_SOURCES = ("truth", "zero", "declared")


# ---------------------------------------------------------------------------
# Data classes
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FixedExtras:
    """Parameters held fixed (e.g. friction); their effort is subtracted.

    ``names`` must be column names of ``Y_std``; ``source`` records where
    ``values`` came from (``truth``, ``zero`` or ``declared``).

    Raises:
        ValueError: unknown ``source``, unequal lengths or non-finite values.
    """

    names: Tuple[str, ...] = ()
    values: Tuple[float, ...] = ()
    source: str = "zero"

    def __post_init__(self) -> None:
        if self.source not in _EXTRA_SOURCES:
            raise ValueError(
                f"FixedExtras.source must be one of {_EXTRA_SOURCES}, got {self.source!r}"
            )
        if len(self.names) != len(self.values):
            raise ValueError(f"FixedExtras: {len(self.names)} names but {len(self.values)} values")
        if not all(math.isfinite(float(v)) for v in self.values):
            raise ValueError("FixedExtras.values must be finite")


@dataclass(frozen=True)
class PhysicalPolicy:
    """Bounds and tolerances shared by all objectives.

    Attributes:
        mass_min: Lower bound of every link mass [kg].
        mass_ratio_bounds: Optional ``(lo, hi)``: ``lo·m0 ≤ m ≤ hi·m0`` around
            the prior mass ``m0``.
        feas_tol: Pseudo-inertia eigenvalue tolerance of the acceptance test.
        base_rel_tol: Relative base residual allowed for the exact objective.
        prior_weight: Tikhonov weight ``λ²`` towards the prior (scaled
            coordinates).
    """

    mass_min: float = 1e-6
    mass_ratio_bounds: Tuple[float, float] | None = None
    feas_tol: float = -1e-8
    base_rel_tol: float = 1e-6
    prior_weight: float = 1e-6


@dataclass(eq=False)
class ComparatorProblem:
    """Shared problem data built by :func:`build_problem`.

    ``Y``/``tau`` are the (unweighted) regressor and effort over
    ``params_std`` (extras removed); ``row_weight`` the per-row weights;
    ``M_full``/``phi_ols`` the base mapping and OLS base parameters used by
    the exact objective; ``R``/``Qt_tau`` the QR reduction of the weighted
    problem (what the SDPs see); ``coord_scale`` the per-parameter scaling
    ``D`` of the decision variable ``z`` (``θ = θ0 + D z``).
    """

    params_std: Tuple[str, ...]
    joint_names: Tuple[str, ...]
    Y: np.ndarray
    tau: np.ndarray
    row_weight: np.ndarray
    theta_prior: np.ndarray
    coord_scale: np.ndarray
    M_full: np.ndarray
    phi_ols: np.ndarray
    R: np.ndarray
    Qt_tau: np.ndarray
    extras: FixedExtras
    policy: PhysicalPolicy
    theta_truth: np.ndarray | None = None
    base_indices: Tuple[int, ...] = ()
    removed_columns: Tuple[int, ...] = ()
    _hash: str | None = field(default=None, init=False, repr=False)

    def __repr__(self) -> str:
        return (
            f"ComparatorProblem(rows={self.Y.shape[0]}, params={len(self.params_std)}, "
            f"base={len(self.base_indices)}, removed={len(self.removed_columns)}, "
            f"links={len(_link_indices(self))}, policy={self.policy!r})"
        )


@dataclass
class SolveRecord:
    """Outcome of one solve: status, estimate, residuals and acceptance.

    ``accepted`` is true only for an optimal solve whose every link passes the
    pseudo-inertia feasibility test (and, for the exact objective, whose
    relative base residual is within tolerance). ``theta`` is ``None`` for a
    non-optimal solve; no estimate is substituted.

    Attributes:
        objective: Objective name (``direct_effort_fit``, ``D1:phase1``, ...).
        solver: Solver requested.
        solver_status: ``optimal`` or the failure status.
        picos_status: The back-end's own status text.
        exception: ``"<Type>: <msg>"`` when the solve raised.
        runtime_s: Wall time of the solve [s].
        objective_value: Objective at the solution.
        theta: Estimate over ``params_std`` or None.
        fallback_used: Always False (no silent fallback).
        fallback_candidate: A legacy fallback vector kept for diagnosis only.
        base_residual: ``{abs, rel, effort_rms}`` of ``M_full θ − φ_ols``.
        effort_rmse_fit_per_joint: RMS of ``Yθ − τ`` per joint block [N·m or N].
        feasibility: ``{joint: {mass, min_eig, ok}}``.
        accepted: See above.
        truth_error: ``{abs, rel}`` distance to ``theta_truth`` when known.
        inputs_hash: Fingerprint of the problem data.
        notes: Extra diagnostics.
    """

    objective: str
    solver: str
    solver_status: str
    picos_status: str | None
    exception: str | None
    runtime_s: float
    objective_value: float | None
    theta: np.ndarray | None
    fallback_used: bool
    fallback_candidate: np.ndarray | None
    base_residual: Dict[str, float]
    effort_rmse_fit_per_joint: Dict[str, float]
    feasibility: Dict[str, Dict[str, Any]]
    accepted: bool
    truth_error: Dict[str, float] | None
    inputs_hash: str
    notes: Dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        """JSON-friendly dict: arrays → lists, non-finite numbers → None."""
        out = {
            "objective": self.objective,
            "solver": self.solver,
            "solver_status": self.solver_status,
            "picos_status": self.picos_status,
            "exception": self.exception,
            "runtime_s": self.runtime_s,
            "objective_value": self.objective_value,
            "theta": self.theta,
            "fallback_used": False,
            "fallback_candidate": self.fallback_candidate,
            "base_residual": self.base_residual,
            "effort_rmse_fit_per_joint": self.effort_rmse_fit_per_joint,
            "feasibility": self.feasibility,
            "accepted": self.accepted,
            "truth_error": self.truth_error,
            "inputs_hash": self.inputs_hash,
        }
        if self.notes:
            out["notes"] = self.notes
        return _jsonable(out)

    def __repr__(self) -> str:
        return (
            f"SolveRecord(objective={self.objective!r}, solver={self.solver!r}, "
            f"status={self.solver_status!r}, accepted={self.accepted}, "
            f"runtime_s={self.runtime_s:.4f})"
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    return value


# ---------------------------------------------------------------------------
# Problem assembly
# ---------------------------------------------------------------------------
def _coord_scale(params: Sequence[str], joints: Sequence[str], prior: np.ndarray) -> np.ndarray:
    """Per-parameter scale ``D`` of the decision variable (``θ = θ0 + D z``).

    ``max(|prior_i|, 1)`` by default; for each link with all ten keys:
    ``max(|m0|, 1e-3)`` for the mass, ``max(‖h0‖, 1e-3)`` for the first
    moments and ``max(‖I0‖, 1e-3)`` (six entries) for the inertia.
    """
    prior = np.asarray(prior, dtype=float)
    scale = np.maximum(np.abs(prior), 1.0)
    index = {n: i for i, n in enumerate(params)}
    for joint in joints:
        keys = [f"{k}_{joint}" for k in _INERTIAL_KEYS]
        if any(k not in index for k in keys):
            continue
        idx = [index[k] for k in keys]
        p = prior[idx]
        scale[idx[0]] = max(abs(p[0]), 1e-3)
        hs = max(float(np.linalg.norm(p[1:4])), 1e-3)
        Is = max(float(np.linalg.norm(p[4:10])), 1e-3)
        for i in idx[1:4]:
            scale[i] = hs
        for i in idx[4:10]:
            scale[i] = Is
    return scale


def _link_indices(p: ComparatorProblem) -> Dict[str, Dict[str, int]]:
    """``{joint: {key: column}}`` for links with all ten keys among ``params_std``."""
    index = {n: i for i, n in enumerate(p.params_std)}
    out: Dict[str, Dict[str, int]] = {}
    for joint in p.joint_names:
        names = [f"{k}_{joint}" for k in _INERTIAL_KEYS]
        if all(n in index for n in names):
            out[joint] = {k: index[n] for k, n in zip(_INERTIAL_KEYS, names, strict=True)}
    return out


def _mass_bounds(p: ComparatorProblem, idx: Dict[str, int]) -> Tuple[float, float] | None:
    """Ratio mass bounds ``(lo·m0, hi·m0)`` of one link, or None."""
    if p.policy.mass_ratio_bounds is None:
        return None
    lo, hi = (float(v) for v in p.policy.mass_ratio_bounds)
    m0 = float(p.theta_prior[idx["m"]])
    return (lo * m0, hi * m0)


def _inputs_hash(p: ComparatorProblem) -> str:
    """First 16 hex chars of the sha256 of the problem data and policy."""
    if p._hash is None:
        import hashlib  # stdlib, loads OpenSSL: paid by the call, not the import

        h = hashlib.sha256()
        for arr in (p.Y, p.tau, p.row_weight, p.theta_prior, p.M_full, p.phi_ols):
            h.update(np.ascontiguousarray(arr, dtype=float).tobytes())
        h.update(json.dumps(list(p.params_std)).encode())
        h.update(repr(p.policy).encode())
        p._hash = h.hexdigest()[:16]
    return p._hash


def _as_matrix(name: str, value: Any, shape: Tuple[int | None, ...]) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim != len(shape) or any(
        s is not None and a != s for a, s in zip(arr.shape, shape, strict=True)
    ):
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN/inf")
    return arr


def _freeze_extras(names, Y_std, tau, prior, truth, extras):
    """Move the fixed extras to the efforts: ``τ ← τ − Y_e·v_e``; drop their columns.

    Returns:
        ``(names, Y, tau, prior, truth)`` of the free parameters.

    Raises:
        ValueError: A fixed name is not a column.
    """
    keep = np.ones(len(names), dtype=bool)
    tau = tau.copy()
    for nm, val in zip(extras.names, extras.values, strict=True):
        if nm not in names:
            raise ValueError(f"FixedExtras name {nm!r} is not a column of Y_std")
        j = names.index(nm)
        tau -= Y_std[:, j] * float(val)
        keep[j] = False
    names = [n for n, k in zip(names, keep, strict=True) if k]
    Y = Y_std[:, keep] if not keep.all() else Y_std
    return names, Y, tau, prior[keep], None if truth is None else truth[keep]


def _row_weights(row_weight: Any, rows: int) -> np.ndarray:
    """Positive finite row weights (ones by default).

    Raises:
        ValueError: Wrong shape, non-positive or non-finite weights.
    """
    if row_weight is None:
        return np.ones(rows)
    w = np.asarray(row_weight, dtype=float).reshape(-1)
    if w.shape != (rows,):
        raise ValueError(f"row_weight must have shape ({rows},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("row_weight must be positive and finite")
    return w


def _weighted_r(Y: np.ndarray, tau: np.ndarray, w: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(R, Qᵀτ)`` of one tall QR of ``[diag(w) Y | w·τ]`` (everything else uses the small R)."""
    n = Y.shape[1]
    A = np.empty((tau.size, n + 1), order="F")
    np.multiply(Y, w[:, None], out=A[:, :n])
    A[:, n] = w * tau
    R_aug = tall_qr_r(A, overwrite=True)
    k = min(tau.size, n)
    return np.array(R_aug[:k, :n]), np.array(R_aug[:k, n])


def _base_of_r(R: np.ndarray, Qt_tau: np.ndarray, names: List[str], qr_tol: float):
    """Base mapping of the weighted regressor's R factor.

    Drops the columns whose norm is at most ``qr_tol·max norm``, then a double
    QR gives ``M_full`` (base = M_full θ), the base columns and the OLS base
    estimate ``phi_ols``.

    Returns:
        ``(M_full, phi_ols, base_indices, removed_columns)``.

    Raises:
        ValueError: The regressor is identically zero.
    """
    n = len(names)
    colnorm = np.linalg.norm(R, axis=0)  # = column norms of Yw
    if not colnorm.size or colnorm.max() <= 0:
        raise ValueError("the regressor is identically zero: nothing to identify")
    thresh = qr_tol * float(colnorm.max())
    kept = [i for i in range(n) if colnorm[i] > thresh]
    removed = tuple(i for i in range(n) if colnorm[i] <= thresh)
    params_r = [names[i] for i in kept]
    dec = QRDecomposer(tolerance=qr_tol)
    M_r, _, base_r, _ = dec.get_base_mapping_matrix_double(R[:, kept], params_r)
    M_full = QRDecomposer.expand_mapping_matrix_to_full(M_r, params_r, names)
    base_full = tuple(kept[i] for i in base_r)
    phi_ols = np.linalg.lstsq(R[:, list(base_full)], Qt_tau, rcond=None)[0]
    return M_full, phi_ols, base_full, removed


def build_problem(
    Y_std: np.ndarray,
    tau: np.ndarray,
    params_std: Sequence[str],
    joint_names: Sequence[str],
    *,
    prior: np.ndarray,
    extras: FixedExtras | None = None,
    policy: PhysicalPolicy | None = None,
    row_weight: np.ndarray | None = None,
    qr_tol: float = 1e-6,
    theta_truth: np.ndarray | None = None,
) -> ComparatorProblem:
    """Assemble the shared problem.

    ``prior``/``theta_truth`` are given over ``params_std``. Columns named in
    ``extras`` are removed from the unknowns and their effort is subtracted
    from ``tau``. Columns removed by the QR step stay in ``M_full`` as zeros
    so every link keeps its LMI.

    One tall QR of ``[w·Y | w·τ]`` (``w`` = row weights) gives ``R`` and
    ``Qᵀ(w·τ)``; the base columns, ``M_full`` and ``φ_ols`` are then computed
    from the small ``R`` (``Y_w[:, S] = Q R[:, S]`` for any column set S).

    Args:
        Y_std: (rows, n) standard regressor [N·m or N per unit parameter].
        tau: (rows,) measured effort [N·m or N].
        params_std: n parameter names (columns of ``Y_std``).
        joint_names: Joint names of the links (``model.names[1:]``).
        prior: (n,) prior values (SI units).
        extras: Parameters held fixed.
        policy: Bounds and tolerances.
        row_weight: (rows,) positive row weights (default ones).
        qr_tol: Column-removal and rank tolerance.
        theta_truth: Optional (n,) true values (for ``truth_error``).

    Returns:
        :class:`ComparatorProblem`.

    Raises:
        ValueError: inconsistent shapes, NaN/inf, unknown extra names,
            non-positive row weights or a zero regressor.
    """

    extras = extras or FixedExtras()
    policy = policy or PhysicalPolicy()
    Y_std = np.asarray(Y_std, dtype=float)
    tau = np.asarray(tau, dtype=float).reshape(-1)
    names = list(params_std)
    if len(set(names)) != len(names):
        raise ValueError("params_std contains duplicated names")
    if Y_std.shape != (tau.size, len(names)):
        raise ValueError(
            f"Y_std shape {Y_std.shape} inconsistent with tau {tau.shape} "
            f"and {len(names)} parameters"
        )
    if not (np.all(np.isfinite(Y_std)) and np.all(np.isfinite(tau))):
        raise ValueError("Y_std or tau contains NaN/inf")
    prior = _as_matrix("prior", np.asarray(prior, dtype=float).reshape(-1), (len(names),))
    truth = (
        None
        if theta_truth is None
        else _as_matrix("theta_truth", np.asarray(theta_truth, float).reshape(-1), (len(names),))
    )

    names, Y, tau, prior, truth = _freeze_extras(names, Y_std, tau, prior, truth, extras)
    w = _row_weights(row_weight, tau.size)
    R, Qt_tau = _weighted_r(Y, tau, w)
    M_full, phi_ols, base_full, removed = _base_of_r(R, Qt_tau, names, qr_tol)

    return ComparatorProblem(
        params_std=tuple(names),
        joint_names=tuple(joint_names),
        Y=Y,
        tau=tau,
        row_weight=w,
        theta_prior=prior,
        coord_scale=_coord_scale(names, joint_names, prior),
        M_full=M_full,
        phi_ols=phi_ols,
        R=R,
        Qt_tau=Qt_tau,
        extras=extras,
        policy=policy,
        theta_truth=truth,
        base_indices=base_full,
        removed_columns=removed,
    )


# ---------------------------------------------------------------------------
# Core solve
# ---------------------------------------------------------------------------
_MODES = ("exact", "direct", "relaxed", "phase1")


def _solve_core(
    p: ComparatorProblem,
    mode: str,
    *,
    solver: str = "cvxopt",
    norm: str = "cone",
    scaling: bool = True,
    variables: str = "full",
    bounds: bool = True,
    max_seconds: float | None = None,
) -> Dict[str, Any]:
    """Build and solve one objective; never raises (errors → status ``error``).

    Decision variable ``z`` with ``θ = θ0 + D z`` (``D = diag(coord_scale)``,
    identity when ``scaling=False``; ``variables="params_r"`` keeps the
    removed columns at the prior). Per complete link: ``P(θ) ⪰ 0`` (``⪰ sI``
    in phase 1) and, with ``bounds``, ``m ≥ mass_min`` and the ratio mass
    bounds. Objectives (``λ² = prior_weight``):

    * ``exact``: ``min ‖z‖`` (``norm="schur"``: ``min t`` s.t.
      ``[[t, zᵀ], [z, I]] ⪰ 0``) s.t. ``M_full θ = φ_ols``;
    * ``direct``: ``min ‖Rθ − Qᵀτ_w‖² + λ²‖z‖²`` (row-weighted effort least
      squares up to a constant plus a pull towards the prior);
    * ``relaxed``: ``min ‖R[:, base](M_full θ − φ_ols)‖² + λ²‖z‖²``;
    * ``phase1``: ``max s`` s.t. ``s ≤ 1``, ``M_full θ = φ_ols``, ``P − sI ⪰ 0``.

    Returns:
        ``{status, picos_status, exception, objective_value, theta,
        runtime_s[, s_star]}``.
    """

    t0 = time.perf_counter()
    raw: Dict[str, Any] = {
        "status": "error",
        "picos_status": None,
        "exception": None,
        "objective_value": None,
        "theta": None,
    }
    try:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
        if norm not in ("cone", "schur"):
            raise ValueError(f"norm must be 'cone' or 'schur', got {norm!r}")
        S = _variable_map(p, scaling, variables)
        nz = S.shape[1]
        theta0 = np.asarray(p.theta_prior, dtype=float)
        nx = nz + (1 if mode == "phase1" else 0)  # phase 1 appends s
        lam = math.sqrt(max(float(p.policy.prior_weight), 0.0))
        prog = _objective_program(p, mode, norm, S, theta0, nx, lam)
        _add_link_constraints(prog, p, S, theta0, nx, mode == "phase1", bounds)
        res = _conic.solve_program(prog, solver=solver, max_seconds=max_seconds)
        raw["picos_status"] = res.raw_status
        raw["status"] = res.status
        if res.status == "optimal":
            if res.x is None:
                raise ValueError(f"the {solver} solver reported an optimum without a solution")
            _record_optimum(raw, p, mode, norm, S, theta0, res.x, lam)
    except Exception as exc:  # noqa: BLE001 - the record reports it
        logger.debug("physical-fit solve (%s, %s) failed", mode, solver, exc_info=True)
        raw["status"] = "error"
        raw["exception"] = f"{type(exc).__name__}: {exc}"
        raw["theta"] = None
    raw["runtime_s"] = time.perf_counter() - t0
    return raw


def _variable_map(p: ComparatorProblem, scaling: bool, variables: str) -> np.ndarray:
    """``S`` (n, nz) with ``θ = θ0 + S z``: scaled free columns (all, or those in ``params_r``).

    Raises:
        ValueError: Unknown ``variables``.
    """
    n = len(p.params_std)
    D = np.asarray(p.coord_scale, dtype=float) if scaling else np.ones(n)
    if variables == "full":
        free = np.arange(n)
    elif variables == "params_r":
        removed = set(p.removed_columns)
        free = np.array([i for i in range(n) if i not in removed], dtype=int)
    else:
        raise ValueError(f"variables must be 'full' or 'params_r', got {variables!r}")
    S = np.zeros((n, free.size))
    S[free, np.arange(free.size)] = D[free]
    return S


def _pad(Mx: np.ndarray, nx: int) -> np.ndarray:
    """``Mx`` with zero columns up to ``nx`` (the phase-1 variable ``s``)."""
    nz = Mx.shape[1]
    return np.hstack([Mx, np.zeros((Mx.shape[0], nx - nz))]) if nx > nz else Mx


def _objective_program(
    p: ComparatorProblem,
    mode: str,
    norm: str,
    S: np.ndarray,
    theta0: np.ndarray,
    nx: int,
    lam: float,
) -> Any:
    """The ConeProgram of one objective, with the base equalities of ``exact``/``phase1``."""
    nz = S.shape[1]
    if mode == "exact":
        prog = _conic.ConeProgram(
            n=nx,
            objective="schur" if norm == "schur" else "norm",
            F=np.eye(nz),
            g=np.zeros(nz),
        )
    elif mode == "phase1":
        c = np.zeros(nx)
        c[-1] = -1.0
        prog = _conic.ConeProgram(n=nx, objective="linear", c=c)
        row = np.zeros((1, nx))
        row[0, -1] = 1.0
        prog.add_inequalities(row, [1.0])
    else:
        if mode == "direct":
            F1 = p.R @ S
            g1 = p.Qt_tau - p.R @ theta0
        else:  # relaxed
            Rb = p.R[:, list(p.base_indices)]
            F1 = Rb @ (p.M_full @ S)
            g1 = Rb @ (p.phi_ols - p.M_full @ theta0)
        F = np.vstack([F1, lam * np.eye(nz)]) if lam > 0 else F1
        g = np.concatenate([g1, np.zeros(nz)]) if lam > 0 else g1
        if F.shape[0] > nz:  # ‖Fz − g‖² = ‖R_F z − Q_Fᵀg‖² + const: a square system
            Qf, Rf = np.linalg.qr(F, mode="reduced")
            F, g = Rf, Qf.T @ g
        sigma = max(float(np.linalg.norm(g)), 1e-12 * float(np.linalg.norm(F)), 1e-300)
        prog = _conic.ConeProgram(n=nx, objective="sqnorm", F=F / sigma, g=g / sigma)
    if mode in ("exact", "phase1"):
        Aeq = p.M_full @ S
        scale_rows = np.maximum(np.abs(Aeq).max(axis=1), 1e-300)  # row equilibration
        prog.add_equalities(
            _pad(Aeq / scale_rows[:, None], nx), (p.phi_ols - p.M_full @ theta0) / scale_rows
        )
    return prog


def _add_link_constraints(
    prog: Any,
    p: ComparatorProblem,
    S: np.ndarray,
    theta0: np.ndarray,
    nx: int,
    phase1: bool,
    bounds: bool,
) -> None:
    """Per complete link: ``P(θ) ⪰ δ·I`` (``P − s·I ⪰ 0`` in phase 1) and the mass bounds [kg]."""
    Lp = pseudo_inertia_vec_map()
    eye_vec = np.eye(4).reshape(-1, order="F")
    for _joint, idx in _link_indices(p).items():
        cols = [idx[k] for k in _INERTIAL_KEYS]
        Lx = Lp @ S[cols]
        if phase1:
            Lx = np.hstack([Lx, -eye_vec[:, None]])  # P(θ) − s·I
        P0 = (Lp @ theta0[cols]).reshape(4, 4, order="F")
        # P(θ) ⪰ δ·I (solver-accuracy margin, see lmi_margin); phase 1 measures s itself
        margin = 0.0 if phase1 else lmi_margin(P0)
        prog.add_lmi(Lx, P0 - margin * np.eye(4))
        if bounds:
            im = idx["m"]
            srow = _pad(-S[im][None, :], nx)
            prog.add_inequalities(srow, [theta0[im] - p.policy.mass_min])
            mb = _mass_bounds(p, idx)
            if mb is not None:
                prog.add_inequalities(srow, [theta0[im] - mb[0]])
                prog.add_inequalities(-srow, [mb[1] - theta0[im]])


def _record_optimum(
    raw: Dict[str, Any],
    p: ComparatorProblem,
    mode: str,
    norm: str,
    S: np.ndarray,
    theta0: np.ndarray,
    x: np.ndarray,
    lam: float,
) -> None:
    """Store ``theta`` and the objective value (and ``s_star`` in phase 1) of an optimum."""
    z = x[: S.shape[1]]
    theta = theta0 + S @ z
    raw["theta"] = theta
    if mode == "exact":
        raw["objective_value"] = float(z @ z) if norm == "schur" else float(np.linalg.norm(z))
    elif mode == "phase1":
        raw["s_star"] = float(x[-1])
        raw["objective_value"] = float(x[-1])
    elif mode == "direct":
        r = p.R @ theta - p.Qt_tau
        raw["objective_value"] = float(r @ r + lam**2 * (z @ z))
    else:
        Rb = p.R[:, list(p.base_indices)]
        r = Rb @ (p.M_full @ theta - p.phi_ols)
        raw["objective_value"] = float(r @ r + lam**2 * (z @ z))


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------
def _link_feasibility(p: ComparatorProblem, theta: np.ndarray) -> Dict[str, Dict[str, Any]]:
    mass_min = p.policy.mass_min - mass_bound_tolerance(p.policy.mass_min)
    out: Dict[str, Dict[str, Any]] = {}
    for joint, idx in _link_indices(p).items():
        rep = check_p10_feasibility(
            theta[[idx[k] for k in _INERTIAL_KEYS]],
            mass_min=mass_min,
            psd_eig_tol=p.policy.feas_tol,
        )
        out[joint] = {
            "mass": rep.mass,
            "min_eig": rep.min_eig,
            "ok": rep.status == "feasible",
        }
    return out


def _make_record(
    p: ComparatorProblem,
    objective: str,
    *,
    solver: str,
    raw: Dict[str, Any],
    exact: bool = False,
    notes: Dict[str, Any] | None = None,
) -> SolveRecord:
    """Turn a raw solve into a :class:`SolveRecord` with the acceptance verdict."""
    status = str(raw.get("status") or "error")
    theta = raw.get("theta") if status == "optimal" else None
    base_residual: Dict[str, float] = {}
    per_joint: Dict[str, float] = {}
    feas: Dict[str, Dict[str, Any]] = {}
    truth_error = None
    if theta is not None and np.all(np.isfinite(theta)):
        theta = np.asarray(theta, dtype=float)
        d = p.M_full @ theta - p.phi_ols
        absr = float(np.linalg.norm(d))
        rows = max(p.Y.shape[0], 1)
        eff = p.R[:, list(p.base_indices)] @ d  # ‖Yw[:, base] d‖ = ‖R[:, base] d‖
        base_residual = {
            "abs": absr,
            "rel": absr / max(float(np.linalg.norm(p.phi_ols)), 1e-300),
            "effort_rms": float(np.linalg.norm(eff) / math.sqrt(rows)),
        }
        resid = p.Y @ theta - p.tau
        nj = len(p.joint_names)
        if nj and resid.size % nj == 0:
            blocks = resid.reshape(nj, -1)
            per_joint = {
                j: float(np.sqrt(np.mean(b**2))) for j, b in zip(p.joint_names, blocks, strict=True)
            }
        else:
            per_joint = {"all": float(np.sqrt(np.mean(resid**2)))}
        feas = _link_feasibility(p, theta)
        if p.theta_truth is not None:
            e = float(np.linalg.norm(theta - p.theta_truth))
            truth_error = {
                "abs": e,
                "rel": e / max(float(np.linalg.norm(p.theta_truth)), 1e-300),
            }
    elif theta is not None:
        theta = None
        status = "error"
    accepted = bool(theta is not None and feas and all(v["ok"] for v in feas.values()))
    if accepted and exact:
        accepted = base_residual.get("rel", math.inf) <= p.policy.base_rel_tol
    return SolveRecord(
        objective=objective,
        solver=str(solver),
        solver_status=status,
        picos_status=raw.get("picos_status"),
        exception=raw.get("exception"),
        runtime_s=float(raw.get("runtime_s", 0.0)),
        objective_value=raw.get("objective_value"),
        theta=theta,
        fallback_used=False,
        fallback_candidate=raw.get("fallback_candidate"),
        base_residual=base_residual,
        effort_rmse_fit_per_joint=per_joint,
        feasibility=feas,
        accepted=accepted,
        truth_error=truth_error,
        inputs_hash=_inputs_hash(p),
        notes=dict(notes or {}),
    )


# ---------------------------------------------------------------------------
# Public solvers
# ---------------------------------------------------------------------------
def solve_exact_reconstruction(
    p: ComparatorProblem, *, solver: str = "cvxopt", **opts: Any
) -> SolveRecord:
    """Objective 1: ``min ‖D⁻¹(θ − θ0)‖`` s.t. ``M_full θ = φ_ols``, LMIs.

    Args:
        p: Problem from :func:`build_problem`.
        solver: ``"cvxopt"`` (PICOS) or ``"clarabel"``.
        **opts: ``norm``, ``scaling``, ``variables``, ``bounds``, ``max_seconds``
            (see :func:`_solve_core`).
    """
    raw = _solve_core(p, "exact", solver=solver, **opts)
    return _make_record(p, "exact_reconstruction", solver=solver, raw=raw, exact=True)


def solve_direct_effort_fit(
    p: ComparatorProblem, *, solver: str = "cvxopt", **opts: Any
) -> SolveRecord:
    """Objective 2: regularised effort fit with the same LMIs, no equality.

    ``min ‖w∘(Yθ − τ)‖² + λ²‖D⁻¹(θ − θ0)‖²`` over all parameters, solved on
    the QR-reduced data (cost independent of the number of samples).

    Args:
        p: Problem from :func:`build_problem`.
        solver: ``"cvxopt"`` (PICOS) or ``"clarabel"``.
        **opts: ``scaling``, ``variables``, ``bounds``, ``max_seconds``.
    """
    raw = _solve_core(p, "direct", solver=solver, **opts)
    return _make_record(p, "direct_effort_fit", solver=solver, raw=raw)


def solve_per_link_projection(p: ComparatorProblem, *, solver: str = "cvxopt") -> SolveRecord:
    """Objective 3: nullspace representative, then per-link LMI projection.

    ``z = pinv(M_full D)(φ_ols − M_full θ0)``, ``θ = θ0 + D z`` (minimum
    scaled-norm representative), then :func:`project_p10_lmi` per link with
    ``psd_eig_tol = feas_tol`` and the ratio mass bounds. The projections
    ignore the base equality, so the result generally no longer reproduces
    ``φ_ols``.
    """
    t0 = time.perf_counter()
    raw: Dict[str, Any] = {
        "status": "error",
        "picos_status": None,
        "exception": None,
        "objective_value": None,
        "theta": None,
    }
    try:
        D = p.coord_scale
        A = p.M_full * D[None, :]
        z = np.linalg.pinv(A) @ (p.phi_ols - p.M_full @ p.theta_prior)
        theta = p.theta_prior + D * z
        total = 0.0
        for j, idx in _link_indices(p).items():
            cols = [idx[k] for k in _INERTIAL_KEYS]
            p10, rep = project_p10_lmi(
                theta[cols],
                mass_min=p.policy.mass_min,
                psd_eig_tol=p.policy.feas_tol,
                solver=solver,
                mass_bounds=_mass_bounds(p, idx),
            )
            if rep.status == "error":
                raise RuntimeError(f"link {j}: {rep.message}")
            theta[cols] = p10
            total += float(rep.objective or 0.0)
        raw.update(status="optimal", picos_status="optimal", theta=theta)
        raw["objective_value"] = total
    except Exception as exc:  # noqa: BLE001 - the record reports it
        raw["exception"] = f"{type(exc).__name__}: {exc}"
        raw["theta"] = None
    raw["runtime_s"] = time.perf_counter() - t0
    return _make_record(p, "per_link_projection", solver=solver, raw=raw)


def diagnose_exact(p: ComparatorProblem, *, solver: str = "cvxopt") -> List[SolveRecord]:
    """Staged diagnostics for objective 1.

    * ``D0:reconstruct_full_parameters_sdp`` — the production SDP
      reconstruction (weights ``1/coord_scale``); a non-ok status is an error
      whose nullspace result is kept only as ``fallback_candidate``.
    * ``D1:phase1`` — ``max s`` s.t. ``M_full θ = φ_ols``, ``P − sI ⪰ 0``
      (bounds off): ``s* < 0`` certifies that no physically consistent θ
      reproduces ``φ_ols`` (``notes.label``); never accepted.
    * ``D2:schur_norm``, ``D2:scaling_off``, ``D2:params_r_only``,
      ``D2:bounds_off`` — objective 1 with one change each.
    * ``D3:relaxed_equality`` — base equality replaced by its effort-weighted
      least-squares penalty.
    """
    records: List[SolveRecord] = []

    # D0: reproduce with the production reconstruction entry point.
    t0 = time.perf_counter()
    raw: Dict[str, Any] = {
        "status": "error",
        "picos_status": None,
        "exception": None,
        "theta": None,
    }
    try:
        res = reconstruct_full_parameters(
            (p.M_full, p.phi_ols, list(p.params_std)),
            method="sdp",
            theta0=p.theta_prior,
            weights=1.0 / p.coord_scale,
            joint_names=list(p.joint_names),
            mass_min=p.policy.mass_min,
            solver=solver,
        )
        raw["objective_value"] = res.objective
        if res.status == "ok":
            raw.update(status="optimal", picos_status="optimal", theta=res.theta_r)
        else:
            raw["status"] = "error"
            raw["picos_status"] = res.status
            raw["exception"] = f"reconstruct_full_parameters status={res.status}"
            raw["fallback_candidate"] = res.theta_r
    except Exception as exc:  # noqa: BLE001
        raw["exception"] = f"{type(exc).__name__}: {exc}"
    raw["runtime_s"] = time.perf_counter() - t0
    records.append(
        _make_record(p, "D0:reconstruct_full_parameters_sdp", solver=solver, raw=raw, exact=True)
    )

    # D1: phase-I feasibility.
    raw = _solve_core(p, "phase1", solver=solver, bounds=False)
    s_star = raw.get("s_star")
    notes: Dict[str, Any] = {"s_star": s_star}
    if raw["status"] == "optimal" and s_star is not None:
        notes["label"] = "infeasible (certificate s*<0)" if s_star < 0 else "feasible"
        if s_star < 0:
            raw["theta"] = None  # a strictly infeasible point is not a solution
    else:
        notes["label"] = "solver failure"
    rec = _make_record(p, "D1:phase1", solver=solver, raw=raw, exact=True, notes=notes)
    rec.objective_value = s_star
    rec.accepted = False
    records.append(rec)

    # D2: one change at a time.
    variants: Dict[str, Dict[str, Any]] = {
        "schur_norm": {"norm": "schur"},
        "scaling_off": {"scaling": False},
        "params_r_only": {"variables": "params_r"},
        "bounds_off": {"bounds": False},
    }
    for name, opts in variants.items():
        raw = _solve_core(p, "exact", solver=solver, **opts)
        records.append(_make_record(p, f"D2:{name}", solver=solver, raw=raw, exact=True))

    # D3: relaxed equality.
    raw = _solve_core(p, "relaxed", solver=solver)
    records.append(_make_record(p, "D3:relaxed_equality", solver=solver, raw=raw))
    return records
