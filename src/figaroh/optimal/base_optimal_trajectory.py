"""Optimal exciting trajectories for dynamic identification (waypoint splines + IPOPT).

A trajectory segment is the waypoint spline of
:mod:`figaroh.utils.cubic_spline` through ``n_wps`` waypoints ``t_s`` seconds
apart, sampled at ``freq``, built as figaroh 1.0.2 builds it: the waypoint
velocities and accelerations (zero) are passed as curve constraints, so every
piece is the rest-to-rest quintic (``ndcurves`` ``exact_cubic`` with
``curve_constraints``; at rest with zero acceleration at every waypoint, peak
speed ``(15/8)·|Δq|/t_s``). The first waypoint is
fixed; the others, ``X`` (waypoint-major, ``(n_wps − 1)·n_active`` values
[rad]), are optimised by IPOPT to minimise a criterion of the base regressor
``W_b(X)`` (the columns fixed once by :class:`BaseParameterComputer`,
optionally stacked under the previous segment's ``W_stack``), computed from
the eigenvalues of the information matrix ``W_bᵀW_b`` (accumulated per
interval; ``σ_i = sqrt(λ_i)``):

* ``"condition_number"`` (upstream): ``cond₂(W_b) = σ_max/σ_min``. Its
  gradient jumps whenever the largest or smallest singular values cross,
  which stalls IPOPT's quasi-Newton model; by default
  (``cond_smoothing = 16``) IPOPT minimises the Schatten-p condition number
  ``‖σ‖_p‖1/σ‖_p``, a smooth upper bound that tends to cond₂ (for 48 base
  parameters it is at most 1.6·cond₂); every reported condition number is the
  exact 2-norm one. A rank-deficient ``W_b`` gives :data:`FAILED_OBJECTIVE`.
* ``"d_optimality"``: ``−(1/n_b)·Σ log(λ_i(D⁻¹ W_bᵀW_b D⁻¹) / n_rows + ε)``
  with ``D`` the column RMS of the reference random trajectory's base
  regressor (unit-free information per row) and ``ε = d_opt_epsilon``.
  Every eigenvalue of the regularised matrix is ≥ ε, so the criterion and its
  gradient (bounded by ``‖∂M‖/(n_rows·ε)``) stay finite even when ``W_b`` is
  rank-deficient, where the condition number is undefined.
* ``"condition_number"`` with ``information_weight = w > 0``:
  ``cond·exp(w·D)`` (``log cond + w·D``, ``D`` the d-optimality criterion
  above). The condition number is scale-free: alone it can fall because the
  whole regressor shrinks (slower wrists, lower σ_max) while every parameter
  is estimated less precisely; the D term rewards the information it loses.

subject to joint position, velocity and effort limits (softened by
``soft_lim``) and self-collision clearance (see
:mod:`figaroh.optimal.contraints`).

Derivatives. The spline is linear in the waypoints, and moving waypoint ``w``
only changes the two polynomial pieces that touch it. The objective gradient
and the effort derivatives are forward differences (step 1e-6 rad, ``n + 1``
criterion values per gradient) in which every probe rebuilds the regressor on
the affected samples only (all probes in one regressor batch); position and
peak-velocity constraints are linear (exact Jacobian); collision rows use the
analytic distance gradient (witness points). The constraint Jacobian is
declared sparse.

Result selection. IPOPT's objective is not monotone and an iteration-limit
stop may be infeasible: the returned segment is the lowest-criterion point
among IPOPT's final point and its iterates that satisfies every constraint
(to :data:`FEASIBILITY_TOL`) and whose whole spline keeps a quarter of the
collision margin at ``collision_check_frequency``; the feasible initial guess is the
last resort, and a segment with none is reported infeasible.

Efforts are ``τ = W(q, dq, ddq)·φ_std`` with the standard parameters of the
model (URDF inertias + the configured friction/armature/offset values), i.e.
inverse dynamics plus joint effects, computed from the same regressor.

Trace. Every IPOPT iteration (cyipopt's ``intermediate`` callback) is
recorded in :attr:`BaseOptimalTrajectory.optimisation_trace`: one stage per
segment attempt (``"ipopt:segment 1"``, ``"ipopt:segment 1 attempt 2"``…)
with IPOPT's objective and primal infeasibility ``inf_pr`` per iteration and
the segment's outcome (``converged``; ``max_iterations`` when IPOPT stopped at
its iteration or time limit; ``fallback`` when another point than IPOPT's
final one was kept, e.g. the initial guess; ``failed``). The callback only
reads and always lets IPOPT continue, so the design is the same with or
without it.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from figaroh._run.optimisation_trace import OptimisationTrace, StageOutcome, TraceEntry
from figaroh.errors import MissingDependencyError
from figaroh.identification.config import fill_active_joint_indices
from figaroh.tools.qrdecomposition import build_baseRegressor
from figaroh.tools.regressor import build_regressor_basic, build_regressor_reduced
from figaroh.tools.robotipopt import (
    IPOPT_STATUS,
    BaseOptimizationProblem,
    IPOPTConfig,
    RobotIPOPTSolver,
    require_cyipopt,
)
from figaroh.utils.cubic_spline import (
    REST_PEAK_SPEED,
    CubicSpline,
    WaypointsGeneration,
    calc_torque,
    is_constrained,
    peak_velocities,
    sample_times,
    spline_basis,
)
from figaroh.utils.results_manager import ResultsManager, plot_with_fallback

from .base_parameter import BaseParameterComputer
from .config import load_param, validate_trajectory_config
from .contraints import TrajectoryConstraintManager

logger = logging.getLogger(__name__)

__all__ = [
    "BaseOptimalTrajectory",
    "BaseTrajectoryIPOPTProblem",
    "BaseParameterComputer",
    "FAILED_OBJECTIVE",
    # Re-exported for figaroh 1.0.2 compatibility.
    "BaseOptimizationProblem",
    "CubicSpline",
    "IPOPTConfig",
    "ResultsManager",
    "RobotIPOPTSolver",
    "TrajectoryConstraintManager",
    "WaypointsGeneration",
    "build_baseRegressor",
    "build_regressor_basic",
    "build_regressor_reduced",
    "calc_torque",
    "load_param",
    "plot_with_fallback",
]


#: Objective value returned when the criterion cannot be evaluated.
FAILED_OBJECTIVE = 1e10
#: Forward-difference step [rad].
FD_STEP = 1e-6
#: Largest constraint violation accepted for a returned trajectory (rad, rad/s, N·m, m).
FEASIBILITY_TOL = 1e-4
#: Fraction of the collision margin the whole spline must keep to be accepted.
ACCEPT_MARGIN_FRACTION = 0.25
#: Most candidate points (by increasing criterion) checked when selecting the result.
MAX_CANDIDATES = 60


def _smoothing_schedule(value: Any) -> List[float]:
    """``cond_smoothing`` as a list of Schatten exponents (one per IPOPT run)."""
    if isinstance(value, (list, tuple)):
        return [float(v or 0) for v in value] or [0.0]
    return [float(value or 0)]


def _information_weight(tc: Dict[str, Any]) -> float:
    """``information_weight`` of a trajectory config (0 when absent)."""
    return float(tc.get("information_weight") or 0.0)


def _fmt_cond(value: float) -> str:
    """Condition number for logs: a number, or an explicit rank-deficiency notice."""
    if not np.isfinite(value) or value >= FAILED_OBJECTIVE:
        return "undefined (rank-deficient base regressor)"
    return f"{value:.4g}"


def _criterion_from_gram(
    G: np.ndarray,
    n_rows: int,
    objective: str,
    scale: np.ndarray | None,
    eps: float,
    cond_p: float = 0.0,
    information_weight: float = 0.0,
) -> float:
    """Criterion value from the information matrix ``G = W_bᵀW_b``.

    The singular values of ``W_b`` are ``σ = sqrt(eig(G))``.
    ``condition_number``: ``σ_max/σ_min`` when ``cond_p`` is 0, else the
    Schatten-p condition number ``‖σ‖_p·‖1/σ‖_p`` (smooth; ``cond₂ ≤ value ≤
    n_b^{2/p}·cond₂``); a rank-deficient ``W_b`` (``σ_min ≤ 1e-7·σ_max``, the
    resolution of ``G``) gives :data:`FAILED_OBJECTIVE`. ``d_optimality``:
    ``−mean log(eig(D⁻¹ G D⁻¹)/n_rows + ε)``, finite for any ``W_b``.
    ``information_weight = w > 0`` multiplies the condition number by
    ``exp(w·d_optimality)``.
    """
    if objective == "d_optimality":
        if scale is None:
            raise ValueError("scale: the d_optimality criterion needs the column scale")
        Gs = G / np.outer(scale, scale)
        lam = np.clip(np.linalg.eigvalsh(Gs), 0.0, None)
        return float(-np.mean(np.log(lam / n_rows + eps)))
    if information_weight:
        value = _criterion_from_gram(G, n_rows, objective, scale, eps, cond_p)
        if value >= FAILED_OBJECTIVE:
            return value
        d_opt = _criterion_from_gram(G, n_rows, "d_optimality", scale, eps)
        return float(min(value * np.exp(information_weight * d_opt), FAILED_OBJECTIVE))
    lam = np.linalg.eigvalsh(G)
    if not np.all(np.isfinite(lam)) or lam[-1] <= 0 or lam[0] <= lam[-1] * 1e-14:
        return FAILED_OBJECTIVE
    s = np.sqrt(lam[::-1])
    if cond_p:
        value = np.sum((s / s[0]) ** cond_p) ** (1 / cond_p)
        value *= np.sum((s[-1] / s) ** cond_p) ** (1 / cond_p) * (s[0] / s[-1])
    else:
        value = s[0] / s[-1]
    return float(min(value, FAILED_OBJECTIVE))


class _SegmentEvaluator:
    """Fast evaluation of one segment's trajectory, criterion, efforts and derivatives."""

    def __init__(
        self,
        opt_traj: BaseOptimalTrajectory,
        tps: ArrayLike,
        vel_wps: ArrayLike | None,
        acc_wps: ArrayLike | None,
        wp_init: ArrayLike,
        W_stack: ArrayLike | None,
        Ns: int,
    ) -> None:
        self.ot = opt_traj
        CB = opt_traj.CB
        self.n = len(CB.act_idxq)
        self.n_wps = CB.num_waypoints
        self.tps = np.asarray(tps, dtype=float).ravel()
        self.t = sample_times(opt_traj.trajectory_config["freq"], self.tps)
        if len(self.t) != Ns:
            raise ValueError(f"segment has {len(self.t)} samples, Ns = {Ns} was given")
        self.Ns = Ns
        self.vel_wps = None if vel_wps is None else np.asarray(vel_wps, dtype=float)
        self.acc_wps = None if acc_wps is None else np.asarray(acc_wps, dtype=float)
        self.basis = spline_basis(
            self.tps, self.t, constrained=is_constrained(self.vel_wps, self.acc_wps)
        )
        self.wp_init = np.asarray(wp_init, dtype=float).ravel()
        self.groups = [np.flatnonzero(self.basis.interval == m) for m in range(self.n_wps - 1)]
        self.base_cols = opt_traj.base_columns
        self.phi = opt_traj.phi_std
        self.objective_name = opt_traj.trajectory_config["objective"]
        self.eps = float(opt_traj.trajectory_config["d_opt_epsilon"])
        self.scale = opt_traj.column_scale
        self.cond_p = _smoothing_schedule(opt_traj.trajectory_config.get("cond_smoothing", 0))[0]
        self.information_weight = _information_weight(opt_traj.trajectory_config)
        self.G_stack: np.ndarray | None = None
        self.n_stack = 0
        if W_stack is not None:
            W_stack = np.asarray(W_stack, dtype=float)
            self.G_stack = W_stack.T @ W_stack
            self.n_stack = W_stack.shape[0]
        self.n_rows = self.n_stack + Ns * opt_traj.model.nv
        self._cache: OrderedDict[bytes, dict] = OrderedDict()
        self._dcache: OrderedDict[bytes, dict] = OrderedDict()

    # -- trajectory ------------------------------------------------------------
    def waypoints(self, X: np.ndarray) -> np.ndarray:
        return np.column_stack([self.wp_init, np.asarray(X, dtype=float).reshape(-1, self.n).T])

    def trajectory(self, X: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        qa, dqa, ddqa = self.basis.evaluate(self.waypoints(X), self.vel_wps, self.acc_wps)
        return self.ot.CB.to_full(qa, dqa, ddqa)

    def _regressor(self, q, v, a):
        """Full regressor (rows joint-major) and efforts (N, nv) of the given samples."""
        ot = self.ot
        W = build_regressor_basic(ot.robot, q, v, a, ot.identif_config)
        tau = (W @ self.phi).reshape(ot.model.nv, -1).T
        return W, tau

    def _gram(self, W: np.ndarray, n_samples: int, parts: Sequence[slice]) -> List[np.ndarray]:
        """Information matrices ``W_bᵀW_b`` of sample slices of a joint-major regressor."""
        nv = self.ot.model.nv
        Wb = W[:, self.base_cols].reshape(nv, n_samples, -1)
        out = []
        for sl in parts:
            block = Wb[:, sl].reshape(-1, Wb.shape[2])
            out.append(block.T @ block)
        return out

    def _criterion(self, G_blocks: Sequence[np.ndarray]) -> float:
        G = np.sum(G_blocks, axis=0)
        if self.G_stack is not None:
            G = G + self.G_stack
        return _criterion_from_gram(
            G,
            self.n_rows,
            self.objective_name,
            self.scale,
            self.eps,
            self.cond_p,
            self.information_weight,
        )

    def evaluate(self, X: np.ndarray) -> dict:
        X = np.asarray(X, dtype=float).ravel()
        key = X.tobytes()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        q, v, a = self.trajectory(X)
        W, tau = self._regressor(q, v, a)
        # the pieces are contiguous runs of samples
        slices = [slice(g[0], g[-1] + 1) for g in self.groups]
        G_blocks = self._gram(W, self.Ns, slices)
        out = {"q": q, "v": v, "a": a, "tau": tau, "G": G_blocks}
        out["f"] = self._criterion(G_blocks)
        self._cache[key] = out
        if len(self._cache) > 4:
            self._cache.popitem(last=False)
        return out

    def derivatives(self, X: np.ndarray) -> dict:
        """Forward-difference gradient of the criterion and effort derivatives.

        Every probe ``X + h·e_i`` (waypoint ``w``, joint ``j``) changes the two
        pieces touching waypoint ``w`` only; the regressor of all probes'
        affected samples is built in one batch.
        """
        X = np.asarray(X, dtype=float).ravel()
        key = X.tobytes()
        hit = self._dcache.get(key)
        if hit is not None:
            return hit
        base = self.evaluate(X)
        n, n_wps = self.n, self.n_wps
        act_q, act_v = self.ot.CB.act_idxq, self.ot.CB.act_idxv
        B = self.basis
        probes = []
        Q, V, A = [], [], []
        for i in range(X.size):
            w, j = divmod(i, n)
            w += 1
            pieces = [m for m in (w - 1, w) if m <= n_wps - 2]
            samples = np.concatenate([self.groups[m] for m in pieces])
            q, v, a = base["q"][samples], base["v"][samples], base["a"][samples]
            q[:, act_q[j]] += FD_STEP * B.pos_y[samples, w]
            v[:, act_v[j]] += FD_STEP * B.vel_y[samples, w]
            a[:, act_v[j]] += FD_STEP * B.acc_y[samples, w]
            probes.append((w, j, pieces, samples))
            Q.append(q)
            V.append(v)
            A.append(a)
        W_all, tau_all = self._regressor(np.vstack(Q), np.vstack(V), np.vstack(A))
        nv = self.ot.model.nv
        n_all = tau_all.shape[0]
        Wb_all = W_all[:, self.base_cols].reshape(nv, n_all, -1)
        grad = np.zeros(X.size)
        # dtau[s, j_out, w - 1, j_in] = ∂τ_{j_out}(s) / ∂wp_{w, j_in}
        dtau = np.zeros((self.Ns, n, n_wps - 1, n))
        start = 0
        for i, (w, j, pieces, samples) in enumerate(probes):
            G_blocks = list(base["G"])
            offset = start
            for m in pieces:
                g = self.groups[m]
                block = Wb_all[:, offset : offset + len(g)].reshape(-1, Wb_all.shape[2])
                G_blocks[m] = block.T @ block
                offset += len(g)
            tau_p = tau_all[start : start + len(samples)][:, act_v]
            dtau[samples, :, w - 1, j] = (tau_p - base["tau"][samples][:, act_v]) / FD_STEP
            grad[i] = (self._criterion(G_blocks) - base["f"]) / FD_STEP
            start += len(samples)
        out = {"grad": grad, "dtau": dtau}
        self._dcache.clear()
        self._dcache[key] = out
        return out


def _failure_reason(data: Mapping[str, Any]) -> str:
    """Why a segment's IPOPT solve was rejected (error, collision, infeasible or status)."""
    return data.get("error") or (
        "collision along the spline"
        if data.get("collision")
        else "infeasible"
        if data.get("infeasible")
        else data.get("status_name", "?")
    )


#: IPOPT statuses of a solve stopped by a limit (iterations, CPU time, wall time).
_LIMIT_STATUSES = (-1, -4, -5)


def _segment_outcome(data: Mapping[str, Any], max_iterations: int) -> Tuple[str, str]:
    """``(status, message)`` of a solved segment, from its ``solve_with_waypoints`` results.

    ``fallback`` when the kept point is not IPOPT's final one (an earlier
    iterate or the initial guess, because the final point was infeasible or
    in collision); else ``converged`` when IPOPT converged, ``max_iterations``
    when it stopped at a limit, ``failed`` for another IPOPT status.
    """
    iter_data = data.get("iter_data") or {}
    origin = str(data.get("selected_from", "final"))
    status = data.get("status", iter_data.get("status"))
    name = data.get("status_name") or IPOPT_STATUS.get(status, str(status))
    if origin.split(" of run")[0] != "final":
        kept = "the initial guess" if origin.startswith("initial guess") else origin
        return (
            "fallback",
            f"kept {kept}: IPOPT's final point was infeasible or in collision (IPOPT {name})",
        )
    if status is None and "converged" not in iter_data:
        return "converged", "the problem reported no solver status"
    if iter_data.get("converged", status in (0, 1)):
        return "converged", f"IPOPT {name}"
    if status in _LIMIT_STATUSES:
        return (
            "max_iterations",
            f"IPOPT stopped before converging ({name}, limit {max_iterations} iterations)",
        )
    return "failed", f"IPOPT ended with {name}; its final point is feasible and kept"


#: Marks a ``trajectory_config`` key that was absent (restored as absent).
_MISSING = object()


def _overridden(obj: Any, base: type, names: Sequence[str]) -> List[str]:
    """``"<Class>.<name>"`` of the methods of ``base`` that ``type(obj)`` overrides."""
    cls = type(obj)
    return [
        f"{cls.__name__}.{n}" for n in names if getattr(cls, n, None) is not getattr(base, n, None)
    ]


def _trajectory_ipopt_config(tc: Mapping[str, Any]) -> IPOPTConfig:
    """IPOPT settings of a segment: tol 1e-3, acceptable 1e-2, adaptive barrier update."""
    config = IPOPTConfig.for_trajectory_optimization()
    config.tolerance = 1e-3
    config.acceptable_tolerance = 1e-2
    config.max_iterations = int(tc.get("max_iterations", 200))
    config.print_level = int(tc.get("ipopt_print_level", 3))
    config.custom_options = {"mu_strategy": "adaptive"}
    return config


class BaseTrajectoryIPOPTProblem(BaseOptimizationProblem):
    """IPOPT problem of one trajectory segment (see the module docstring).

    Args:
        opt_traj: The initialised :class:`BaseOptimalTrajectory`.
        n_joints: Number of active joints.
        n_wps: Number of waypoints.
        Ns: Number of samples of the segment.
        tps: Waypoint times (n_wps,) or (n_wps, 1) [s].
        vel_wps, acc_wps: Waypoint velocities/accelerations (n_joints, n_wps).
        wp_init, vel_wp_init, acc_wp_init: Initial waypoint (fixed) and its
            velocity/acceleration (n_joints,).
        W_stack: Base regressor of previous data to stack under this segment's, or None.
        problem_name: Name used in logs.

    Attributes:
        n_vars: ``n_joints·(n_wps − 1)`` decision variables (waypoints 2…n_wps,
            waypoint-major).
        evaluator: The segment evaluator (trajectory, criterion, derivatives).
    """

    def __init__(
        self,
        opt_traj: BaseOptimalTrajectory,
        n_joints: int,
        n_wps: int,
        Ns: int,
        tps: ArrayLike,
        vel_wps: np.ndarray | None,
        acc_wps: np.ndarray | None,
        wp_init: ArrayLike,
        vel_wp_init: np.ndarray | None,
        acc_wp_init: np.ndarray | None,
        W_stack: np.ndarray | None,
        problem_name: str = "TrajectoryOptimization",
    ) -> None:
        super().__init__(problem_name)
        self.opt_traj = opt_traj
        self.n_joints = int(n_joints)
        self.n_wps = int(n_wps)
        self.Ns = int(Ns)
        self.tps = np.asarray(tps, dtype=float).ravel()
        self.vel_wps = vel_wps
        self.acc_wps = acc_wps
        self.wp_init = np.asarray(wp_init, dtype=float).ravel()
        self.vel_wp_init = vel_wp_init
        self.acc_wp_init = acc_wp_init
        self.W_stack = W_stack
        self.n_vars = self.n_joints * (self.n_wps - 1)
        self.opt_cb: Dict[str, Any] = {}
        self._x0 = np.zeros(self.n_vars)
        self.evaluator = _SegmentEvaluator(
            opt_traj, self.tps, vel_wps, acc_wps, self.wp_init, W_stack, Ns
        )
        self.cm: TrajectoryConstraintManager = opt_traj.constraint_manager
        self.run_index = 0
        self._collision_cache: Dict[bytes, Tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
        self._find_hooks()
        self._build_structure()

    def _find_hooks(self) -> None:
        """Use the figaroh 1.0.2 hooks where a subclass overrides them.

        The fast paths (segment evaluator, aggregated constraint rows, analytic
        sparse Jacobian) stand for the calls 1.0.2 makes; when a subclass
        overrides one of those calls, the problem makes it as 1.0.2 does:

        * objective: ``opt_traj.objective_function(X, opt_cb, tps, vel_wps,
          acc_wps, wp_init, W_stack)`` when ``objective_function``,
          ``_stack_base_regressors`` or ``criterion`` (of the design), or the
          spline's ``get_full_config``/``get_active_config`` is overridden;
        * gradient: ``n + 1`` forward differences of :meth:`objective` (step
          :data:`FD_STEP`) in that case, or when :meth:`objective` itself is
          overridden;
        * constraints: ``constraint_manager.evaluate_constraints(Ns, X, opt_cb,
          tps, vel_wps, acc_wps, wp_init)`` when the manager's
          ``evaluate_constraints``, ``_evaluate_collision_constraints``,
          ``clipped_distances`` or ``get_constraint_bounds``, or the spline's
          sampling is overridden;
        * Jacobian: dense forward differences of :meth:`constraints` in that
          case, or when :meth:`constraints`, :meth:`get_constraint_bounds` or
          :meth:`jacobian` is overridden (:meth:`jacobianstructure` is then
          dense).
        """
        base = BaseTrajectoryIPOPTProblem
        spline = _overridden(
            self.opt_traj.CB, CubicSpline, ("get_full_config", "get_active_config")
        )
        design = _overridden(
            self.opt_traj,
            BaseOptimalTrajectory,
            ("objective_function", "_stack_base_regressors", "criterion"),
        )
        manager = _overridden(
            self.cm,
            TrajectoryConstraintManager,
            (
                "evaluate_constraints",
                "_evaluate_collision_constraints",
                "clipped_distances",
                "get_constraint_bounds",
            ),
        )
        own_objective = _overridden(self, base, ("objective",))
        own_constraints = _overridden(
            self, base, ("constraints", "get_constraint_bounds", "jacobian")
        )
        self._objective_hooks = design + spline
        self._gradient_hooks = self._objective_hooks + own_objective
        self._constraint_hooks = manager + spline
        self._jacobian_hooks = self._constraint_hooks + own_constraints
        if self._gradient_hooks or self._jacobian_hooks:
            self.logger.info(
                "%s: overridden %s; objective, gradient, constraints and Jacobian evaluated "
                "through them as in figaroh 1.0.2 (finite differences)",
                self.name,
                ", ".join(dict.fromkeys(self._gradient_hooks + self._jacobian_hooks)),
            )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, n_vars={self.n_vars}, Ns={self.Ns}, "
            f"n_constraints={self.cm.n_constraints(self.Ns)})"
        )

    # -- bounds / initial guess ------------------------------------------------
    def get_variable_bounds(self) -> Tuple[List[float], List[float]]:
        """Softened joint limits of waypoints 2 … n_wps (the constraint manager's bounds)."""
        if self.n_wps == self.cm.CB.num_waypoints:
            return self.cm.get_variable_bounds()
        CB = self.opt_traj.CB
        return (
            np.tile(CB.lower_q, self.n_wps - 1).tolist(),
            np.tile(CB.upper_q, self.n_wps - 1).tolist(),
        )

    def get_constraint_bounds(self) -> Tuple[List[float], List[float]]:
        lower, upper = self.cm.get_constraint_bounds(self.Ns)
        return lower.tolist(), upper.tolist()

    def get_initial_guess(self) -> List[float]:
        return self._x0.tolist()

    # -- functions -------------------------------------------------------------
    def objective(self, X: np.ndarray) -> float:
        """Criterion of the segment whose free waypoints are ``X`` (1e10 on failure).

        The segment evaluator, or ``opt_traj.objective_function`` when a hook
        it stands for is overridden (see :meth:`_find_hooks`).
        """
        if self._objective_hooks:
            return float(
                self.opt_traj.objective_function(
                    X,
                    self.opt_cb,
                    self.tps,
                    self.vel_wps,
                    self.acc_wps,
                    self.wp_init,
                    self.W_stack,
                )
            )
        try:
            return self.evaluator.evaluate(X)["f"]
        except Exception as exc:  # noqa: BLE001 - upstream contract: failures give 1e10
            self.logger.debug("objective evaluation failed: %s", exc)
            return FAILED_OBJECTIVE

    def _collision(
        self, X: np.ndarray, with_gradient: bool
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        key = np.asarray(X, dtype=float).tobytes()
        hit = self._collision_cache.get(key)
        if hit is not None and (hit[2] is not None or not with_gradient):
            return hit
        q = self.evaluator.evaluate(X)["q"]
        if with_gradient:
            values, sample, grad = self.cm.collision_constraints_and_gradients(
                q, self.tps, self.evaluator.t
            )
        else:
            values, sample = self.cm._collision_minima(q, self.tps, self.evaluator.t)
            grad = None
        self._collision_cache = {key: (values, sample, grad)}
        return values, sample, grad

    def _effort(
        self, X: np.ndarray
    ) -> Tuple[np.ndarray, np.ndarray, List[np.ndarray], List[np.ndarray]]:
        ev = self.evaluator.evaluate(X)
        if "ks" not in ev:
            tau_act = ev["tau"][:, self.opt_traj.CB.act_idxv]
            ev["ks"] = self.cm.effort_rows(tau_act, self.evaluator.groups)
        return ev["ks"]

    def constraints(self, X: np.ndarray) -> np.ndarray:
        """Constraint vector (see :mod:`figaroh.optimal.contraints` for the blocks).

        Aggregated rows from the segment evaluator, or
        ``constraint_manager.evaluate_constraints`` when a hook it stands for
        is overridden (see :meth:`_find_hooks`).
        """
        X = np.asarray(X, dtype=float).ravel()
        if self._constraint_hooks:
            g = self.cm.evaluate_constraints(
                self.Ns, X, self.opt_cb, self.tps, self.vel_wps, self.acc_wps, self.wp_init
            )
            return np.asarray(g, dtype=float).ravel()
        ev = self.evaluator
        vel = self.cm.velocity_rows(self.tps, ev.waypoints(X), ev.vel_wps, ev.acc_wps)[0]
        tau_max, tau_min, _, _ = self._effort(X)
        blocks = [X, vel, tau_max, tau_min]
        if self.cm.n_pairs:
            blocks.append(self._collision(X, with_gradient=False)[0].ravel())
        return np.concatenate(blocks)

    # -- derivatives -----------------------------------------------------------
    def gradient(self, X: np.ndarray) -> np.ndarray:
        """Forward-difference gradient (step 1e-6, ``n + 1`` criterion values).

        Incremental (probes rebuild the affected samples only), or plain
        forward differences of :meth:`objective` when a hook is overridden.
        """
        if self._gradient_hooks:
            X = np.asarray(X, dtype=float).ravel()
            f0 = self.objective(X)
            return np.array(
                [(self.objective(X + FD_STEP * e) - f0) / FD_STEP for e in np.eye(X.size)]
            )
        return self.evaluator.derivatives(X)["grad"].copy()

    def _free_waypoints(self, k: int) -> List[Tuple[int, int]]:
        """``(end, w)`` of interval ``k``'s end waypoints that are variables (``w ≥ 1``)."""
        return [(end, w) for end, w in enumerate((k, k + 1)) if w >= 1]

    def _velocity_structure(self) -> Tuple[list, list, list]:
        """Rows ``(k, j)``: joint ``j`` of the interval's free end waypoints."""
        n = self.n_joints
        rows, cols, sel = [], [], []
        for k in range(self.n_wps - 1):
            for end, w in self._free_waypoints(k):
                for j in range(n):
                    rows.append(self.n_vars + k * n + j)
                    cols.append((w - 1) * n + j)
                    sel.append((end, k, j))
        return rows, cols, sel

    def _effort_structure(self) -> Tuple[list, list, list]:
        """Rows ``(k, j_out)``: every joint of the interval's free end waypoints."""
        n = self.n_joints
        m = (self.n_wps - 1) * n
        rows, cols, idx = [], [], []
        for k in range(self.n_wps - 1):
            for _, w in self._free_waypoints(k):
                for j_out in range(n):
                    for j_in in range(n):
                        rows.append(self.n_vars + m + k * n + j_out)
                        cols.append((w - 1) * n + j_in)
                        idx.append((k, j_out, w - 1, j_in))
        return rows, cols, idx

    def _collision_structure(self) -> Tuple[list, list, list]:
        """Rows ``(interval k, pair p)``: all joints of waypoints ``k`` and ``k + 1`` (≥ 1)."""
        n, n_pairs = self.n_joints, self.cm.n_pairs
        base = self.n_vars + 3 * (self.n_wps - 1) * n
        rows, cols, idx = [], [], []
        for k in range(self.n_wps - 1):
            for _, w in self._free_waypoints(k):
                for p in range(n_pairs):
                    for j in range(n):
                        rows.append(base + k * n_pairs + p)
                        cols.append((w - 1) * n + j)
                        idx.append((k, p, w, j))
        return rows, cols, idx

    def _build_structure(self) -> None:
        m = (self.n_wps - 1) * self.n_joints
        rows, cols = [np.arange(self.n_vars)], [np.arange(self.n_vars)]
        vel_r, vel_c, vel_sel = self._velocity_structure()
        eff_r, eff_c, eff_idx = self._effort_structure()
        self._vel_sel = np.asarray(vel_sel, dtype=int).reshape(-1, 3)
        self._eff_idx = np.asarray(eff_idx, dtype=int).reshape(-1, 4)
        eff_rows = np.asarray(eff_r, dtype=int)
        rows += [np.asarray(vel_r, dtype=int), eff_rows, eff_rows + m]
        cols += [np.asarray(vel_c, dtype=int)] + [np.asarray(eff_c, dtype=int)] * 2
        coll_r, coll_c, coll_idx = self._collision_structure()
        if coll_r:
            rows.append(np.asarray(coll_r, dtype=int))
            cols.append(np.asarray(coll_c, dtype=int))
        self._coll_index = np.asarray(coll_idx, dtype=int).reshape(-1, 4)
        self._jac_rows = np.concatenate(rows).astype(int)
        self._jac_cols = np.concatenate(cols).astype(int)

    def jacobianstructure(self) -> Tuple[np.ndarray, np.ndarray]:
        """Row and column indices of the constraint Jacobian's structural non-zeros.

        Every entry, row-major, when a hook is overridden (the dense Jacobian of
        figaroh 1.0.2).
        """
        if self._jacobian_hooks:
            m = len(self.get_constraint_bounds()[0])
            return np.repeat(np.arange(m), self.n_vars), np.tile(np.arange(self.n_vars), m)
        return self._jac_rows, self._jac_cols

    def jacobian(self, X: np.ndarray) -> np.ndarray:
        """Non-zero values of the constraint Jacobian, in :meth:`jacobianstructure` order.

        Position rows: identity; peak velocities: exact; KS efforts: softmax
        weights times the forward-difference effort derivatives; collision
        rows: analytic distance gradient. With an overridden hook (see
        :meth:`_find_hooks`): the dense (m, n) forward differences of
        :meth:`constraints` (step :data:`FD_STEP`).
        """
        X = np.asarray(X, dtype=float).ravel()
        if self._jacobian_hooks:
            g0 = np.asarray(self.constraints(X), dtype=float).ravel()
            return np.column_stack(
                [
                    (np.asarray(self.constraints(X + FD_STEP * e), dtype=float).ravel() - g0)
                    / FD_STEP
                    for e in np.eye(X.size)
                ]
            )
        ev = self.evaluator
        d = ev.derivatives(X)
        _, dy0, dy1 = self.cm.velocity_rows(self.tps, ev.waypoints(X), ev.vel_wps, ev.acc_wps)
        end, k, j = self._vel_sel.T
        vel_vals = np.where(end == 0, dy0[k, j], dy1[k, j])
        _, _, w_hi, w_lo = self._effort(X)
        dtau = d["dtau"]
        n_int = self.n_wps - 1
        # dKS_k/dX = Σ_s w[s, j_out] dτ[s, j_out, :, :] over the samples of interval k
        g_hi = np.stack(
            [np.einsum("sj,sjwi->jwi", w_hi[kk], dtau[ev.groups[kk]]) for kk in range(n_int)]
        )
        g_lo = np.stack(
            [np.einsum("sj,sjwi->jwi", w_lo[kk], dtau[ev.groups[kk]]) for kk in range(n_int)]
        )
        kk, jo, ww, ji = self._eff_idx.T
        parts = [np.ones(self.n_vars), vel_vals, g_hi[kk, jo, ww, ji], g_lo[kk, jo, ww, ji]]
        if self.cm.n_pairs:
            _, sample, grad = self._collision(X, with_gradient=True)
            if grad is None:  # with_gradient=True computes it (also on a cache hit)
                raise RuntimeError("collision constraints: the configuration gradient is missing")
            k, p, w, j = self._coll_index.T
            act_v = np.asarray(self.opt_traj.CB.act_idxv)
            s = sample[k, p]
            parts.append(grad[k, p, act_v[j]] * ev.basis.pos_y[s, w])
        return np.concatenate(parts)

    def dense_jacobian(self, X: np.ndarray) -> np.ndarray:
        """The constraint Jacobian as a dense (m, n) array (for checks)."""
        rows, cols = self.jacobianstructure()
        J = np.zeros((len(self.get_constraint_bounds()[0]), self.n_vars))
        np.add.at(J, (rows, cols), np.asarray(self.jacobian(X), dtype=float).ravel())
        return J

    # -- trace -----------------------------------------------------------------
    def intermediate(
        self,
        alg_mod: int,
        iter_count: int,
        obj_value: float,
        inf_pr: float,
        inf_du: float,
        mu: float,
        d_norm: float,
        regularization_size: float,
        alpha_du: float,
        alpha_pr: float,
        ls_trials: int,
    ) -> bool:
        """IPOPT's per-iteration callback: record the iteration, then tell the design.

        :meth:`BaseOptimizationProblem.intermediate` records it in
        :attr:`iteration_data`; the design then appends it to its trace
        (:meth:`BaseOptimalTrajectory.record_ipopt_iteration`). Nothing is
        changed and IPOPT always continues: the design is the same as without
        the callback.

        Returns:
            What the base callback returns (True: continue).
        """
        keep_going = super().intermediate(
            alg_mod,
            iter_count,
            obj_value,
            inf_pr,
            inf_du,
            mu,
            d_norm,
            regularization_size,
            alpha_du,
            alpha_pr,
            ls_trials,
        )
        self.opt_traj.record_ipopt_iteration(
            self.run_index, alg_mod, iter_count, obj_value, inf_pr, inf_du, mu
        )
        return keep_going

    # -- solving ---------------------------------------------------------------
    def _is_feasible(self, X: np.ndarray, tol: float = FEASIBILITY_TOL) -> bool:
        """Every variable and constraint within its bounds ± ``tol`` (hook).

        :meth:`solve_with_waypoints` calls it on every candidate point (IPOPT's
        final point, its iterates, the initial guess) before accepting one, as
        figaroh 1.0.2 called it on an iteration-limit stop.
        """
        return self.max_violation(X) <= tol

    def max_violation(self, X: np.ndarray) -> float:
        """Largest bound violation of the variables and constraints at ``X``."""
        X = np.asarray(X, dtype=float).ravel()
        lb, ub = (np.asarray(b) for b in self.get_variable_bounds())
        cl, cu = (np.asarray(b) for b in self.get_constraint_bounds())
        g = self.constraints(X)
        viol = np.concatenate([lb - X, X - ub, cl - g, g - cu])
        return float(max(0.0, viol.max()))

    def constraint_report(self, X: np.ndarray) -> Dict[str, float]:
        """Largest violation of each constraint block at ``X`` (in the block's unit)."""
        X = np.asarray(X, dtype=float).ravel()
        g = self.constraints(X)
        cl, cu = (np.asarray(b) for b in self.get_constraint_bounds())
        viol = np.maximum(cl - g, g - cu)
        if self._jacobian_hooks:  # an overridden layout: one figure, mixed units
            return {"constraints": float(max(0.0, viol.max())) if viol.size else 0.0}
        units = {
            "position": "rad",
            "velocity": "rad/s",
            "effort_max": "N·m",
            "effort_min": "N·m",
            "collision": "m",
        }
        report, start = {}, 0
        for name, size in self.cm.block_sizes().items():
            block = viol[start : start + size]
            report[f"{name} [{units[name]}]"] = float(max(0.0, block.max())) if size else 0.0
            start += size
        return report

    def _is_collision_free(self, X: np.ndarray) -> bool:
        """Whole-spline clearance ≥ ``ACCEPT_MARGIN_FRACTION`` × the collision margin.

        The optimiser enforces the full margin at the check samples only; along
        the whole spline (sampled at ``collision_check_frequency``) a quarter of
        it is required — proxies contain the meshes, so this is collision-free.
        """
        wps = self.evaluator.waypoints(X)
        return self.cm.trajectory_clear(
            self.tps,
            wps,
            self.evaluator.vel_wps,
            self.evaluator.acc_wps,
            margin=ACCEPT_MARGIN_FRACTION * self.cm.margin,
        )

    def _set_smoothing(self, p: float) -> None:
        """Use Schatten-``p`` smoothing of the condition number from now on."""
        if p != self.evaluator.cond_p:
            self.evaluator.cond_p = float(p)
            self.evaluator._cache.clear()
            self.evaluator._dcache.clear()

    def _select_iterate(self, results: Dict[str, Any]) -> Tuple[np.ndarray | None, str]:
        """Best feasible, collision-free point among IPOPT's final point and iterates.

        Candidates are tried by increasing objective value; the initial guess
        (feasible by construction) is the last resort.

        Returns:
            ``(x, origin)`` with origin ``"final"``, ``"iterate <k>"`` or
            ``"initial guess"``; ``(None, reason)`` when no candidate qualifies.
        """
        candidates = [(float(results["obj_val"]), -1, np.asarray(results["x_opt"]))]
        for it in results.get("iterates", []):
            if it["inf_pr"] <= FEASIBILITY_TOL:
                candidates.append((it["obj_val"], it["iteration"], it["x"]))
        candidates.sort(key=lambda c: c[0])
        tried = 0
        reasons = {"infeasible": 0, "collision": 0}
        for _, k, x in candidates[:MAX_CANDIDATES]:
            tried += 1
            if not self._is_feasible(x):
                reasons["infeasible"] += 1
                continue
            if not self._is_collision_free(x):
                reasons["collision"] += 1
                continue
            return x, "final" if k < 0 else f"iterate {k}"
        self.logger.debug("iterate selection: %d candidates rejected (%s)", tried, reasons)
        if self._is_feasible(self._x0) and self._is_collision_free(self._x0):
            return self._x0.copy(), "initial guess"
        return None, f"none of {tried} candidate points is feasible and collision-free"

    def solve_with_waypoints(self, wps: np.ndarray) -> Tuple[bool, Dict[str, Any]]:
        """Optimise from initial waypoints ``wps`` (n_joints, n_wps).

        IPOPT settings: :meth:`IPOPTConfig.for_trajectory_optimization` with
        ``tol = 1e-3``, ``acceptable_tol = 1e-2``, ``max_iter =
        trajectory_config["max_iterations"]``, print level
        ``ipopt_print_level`` and ``mu_strategy = adaptive``. With
        ``ipopt_restarts = k``, an unconverged run is restarted (fresh barrier
        parameter and quasi-Newton memory) from its selected point up to ``k``
        times; the best point over all runs is kept.

        The returned point is the best (lowest objective) point that satisfies
        every bound and constraint (to ``FEASIBILITY_TOL`` = 1e-4) and whose whole spline is
        collision-free (:meth:`TrajectoryConstraintManager.trajectory_clear`),
        among IPOPT's final point and its iterates — IPOPT's objective is not
        monotone and an iteration-limit stop may be infeasible.

        Returns:
            ``(success, results)``. On success ``results`` holds the
            :meth:`RobotIPOPTSolver.solve` keys plus ``x_selected``,
            ``selected_from``, ``t_f, p_f, v_f, a_f`` (the trajectory at the
            selected point), ``final_waypoint``, ``waypoints``, ``feasible``,
            ``max_violation`` (of IPOPT's final point) and ``iter_data``
            (``converged`` True only when IPOPT itself converged). On failure
            ``results`` says why: ``error``, ``infeasible`` (explicit flag,
            with the violation of each block logged) or ``collision``.

        Raises:
            MissingDependencyError: cyipopt is not installed (not returned as a
                failure: no waypoints can succeed without it).
        """
        try:
            wps = np.asarray(wps, dtype=float)
            if wps.shape != (self.n_joints, self.n_wps):
                raise ValueError(
                    f"wps must have shape {(self.n_joints, self.n_wps)}, got {wps.shape}"
                )
            self._x0 = wps[:, 1:].T.ravel().copy()
            tc = self.opt_traj.trajectory_config
            schedule = (
                _smoothing_schedule(tc.get("cond_smoothing", 0))
                if tc.get("objective") == "condition_number"
                else [0.0]
            )
            restarts = max(int(tc.get("ipopt_restarts", 0)), len(schedule) - 1)
            runs = self._run_ipopt(_trajectory_ipopt_config(tc), schedule, restarts)
            x_sel, origin, results, converged = runs
            if "error" in results:
                return False, results
            if x_sel is None:
                self.logger.error(
                    "%s: INFEASIBLE — %s (IPOPT status %s); relax the limits or the "
                    "collision margin, or change the initial guess",
                    self.name,
                    origin,
                    results["status_name"],
                )
                results["collision"] = True
                return False, results
            return True, self._selected_results(x_sel, origin, results, converged)
        except MissingDependencyError:
            raise  # no solve can succeed without cyipopt: not a failed segment
        except Exception as exc:  # noqa: BLE001 - documented: errors are returned
            self.logger.error("%s failed: %s", self.name, exc)
            return False, {"error": f"{type(exc).__name__}: {exc}"}

    def _run_ipopt(
        self, config: IPOPTConfig, schedule: List[float], restarts: int
    ) -> Tuple[np.ndarray | None, str, Dict[str, Any], bool]:
        """IPOPT from ``self._x0``, restarted warm up to ``restarts`` times.

        Run ``k`` uses the smoothing ``schedule[min(k, len(schedule) - 1)]``;
        the iteration histories are concatenated into ``iteration_data``.

        Returns:
            ``(x_selected, origin, results, converged)`` of the best run by the
            final criterion (``x_selected`` None when no feasible collision-free
            point was found); ``results`` holds ``error`` when IPOPT failed.
        """
        x_start = self._x0.copy()
        selected = []  # (x, origin, results) of every run
        history: Dict[str, List[Any]] = {"iterations": [], "obj_values": []}
        total_time, converged = 0.0, False
        x_sel, origin = None, "IPOPT did not run"
        results: Dict[str, Any] = {}
        for run in range(1 + restarts):
            self._set_smoothing(schedule[min(run, len(schedule) - 1)])
            self._x0 = x_start.copy()
            self.run_index = run
            solver = RobotIPOPTSolver(
                self, config, progress=self.opt_traj.progress, keep_iterates=True
            )
            success, results = solver.solve()
            if "error" in results:
                return None, "error", results, False
            offset = len(history["iterations"])
            history["iterations"] += [offset + k for k in self.iteration_data["iterations"]]
            history["obj_values"] += list(self.iteration_data["obj_values"])
            total_time += results["solve_time"]
            converged = success
            violation = self.max_violation(results["x_opt"])
            results["max_violation"] = violation
            if violation > FEASIBILITY_TOL:
                self.logger.warning(
                    "%s: IPOPT stopped (%s) at an infeasible point (violations: %s)",
                    self.name,
                    results["status_name"],
                    self.constraint_report(results["x_opt"]),
                )
            x_sel, origin = self._select_iterate(results)
            if x_sel is None:
                break
            selected.append((x_sel, origin if run == 0 else f"{origin} of run {run}", results))
            if (success and run >= len(schedule) - 1) or run == restarts:
                break
            x_start = x_sel  # warm restart: fresh barrier and quasi-Newton memory
        if selected:  # the best run by the final criterion
            x_sel, origin, results = min(selected, key=lambda c: self.objective(c[0]))
        results["solve_time"] = total_time
        self.iteration_data["iterations"] = history["iterations"]
        self.iteration_data["obj_values"] = history["obj_values"]
        results["infeasible"] = x_sel is None
        results["feasible"] = x_sel is not None
        return x_sel, origin, results, converged

    def _selected_results(
        self, x_sel: np.ndarray, origin: str, results: Dict[str, Any], converged: bool
    ) -> Dict[str, Any]:
        """``results`` completed with the trajectory at the selected point ``x_sel``."""
        if origin != "final":
            self.logger.warning(
                "%s: using the best feasible collision-free point (%s) instead of "
                "IPOPT's final point (status %s)",
                self.name,
                origin,
                results["status_name"],
            )
        results["x_selected"] = x_sel
        results["selected_from"] = origin
        f_opt = self.opt_traj.objective_function(
            x_sel, self.opt_cb, self.tps, self.vel_wps, self.acc_wps, self.wp_init, self.W_stack
        )
        results["obj_val"] = f_opt
        final_waypoint = np.asarray(x_sel).reshape(self.n_wps - 1, self.n_joints)[-1]
        results.update(
            {
                "t_f": self.opt_cb["t_f"],
                "p_f": self.opt_cb["p_f"],
                "v_f": self.opt_cb["v_f"],
                "a_f": self.opt_cb["a_f"],
                "final_waypoint": final_waypoint,
                "waypoints": self.evaluator.waypoints(x_sel),
                "iter_data": {
                    "iterations": list(self.iteration_data["iterations"]),
                    "obj_values": list(self.iteration_data["obj_values"]),
                    "solve_time": results["solve_time"],
                    "status": results["status"],
                    "converged": converged,
                    "final_waypoint": final_waypoint,
                },
            }
        )
        return results


class BaseOptimalTrajectory:
    """Optimal exciting trajectory: stacked waypoint-spline segments optimised by IPOPT.

    Args:
        robot: Robot (with collision geometry to enforce self-collision avoidance).
        active_joints: Names of the joints to excite.
        config_file: Unified configuration (``identification`` and
            ``optimal_trajectory`` tasks), or a parsed configuration mapping.
        rng: Generator or seed for the random waypoints (None: NumPy's global
            random state, as upstream).
        progress: Show a tqdm progress bar per segment.

    Attributes:
        robot, model, active_joints, trajectory_config, identif_config: As loaded.
        results: ``T_F, P_F, V_F, A_F`` (per segment: times (Ns, 1) [s],
            q (Ns, nq), v, a), ``iteration_data``, ``final_regressor_shape``,
            plus, per solved segment, ``initial_waypoints`` and ``waypoints``
            (n_active, n_wps) [rad], ``initial_condition_number`` and
            ``condition_number`` (exact 2-norm, stacked under the previous
            segment's regressor), ``objective_values``, ``feasible`` and
            ``initial_guess_feasible``; ``failures`` (``{segment, attempt,
            reason, initial_guess_feasible}`` of every failed attempt) and
            ``objective``. Segment times follow upstream: segment ``s`` starts
            at ``s·t_s`` (use :meth:`stacked_trajectory` for one continuous
            time base).
        final_condition_number: Condition number of the last segment's base
            regressor (stacked with the previous one when ``stack_reps > 1``).
        optimisation_trace: :class:`~figaroh._run.optimisation_trace.OptimisationTrace`
            of the last :meth:`solve`: every IPOPT iteration (stage
            ``"ipopt:segment <k>"``, plus ``" attempt <a>"`` from the second
            attempt on; ``objective`` = IPOPT's ``obj_value``,
            ``constraint_violation`` = ``inf_pr`` [the constraints' units],
            ``extra`` = ``inf_du``, ``mu``, the IPOPT ``run`` of a restarted
            solve and ``restoration``) and each attempt's outcome.
    """

    def __init__(
        self,
        robot: Any,
        active_joints: Sequence[str],
        config_file: Any = "config/robot_config.yaml",
        *,
        rng: Any = None,
        progress: bool = False,
    ) -> None:
        self.robot = robot
        self.model = robot.model
        if isinstance(active_joints, str) or not len(active_joints):
            raise ValueError("active_joints must be a non-empty list of joint names")
        self.active_joints = [str(j) for j in active_joints]
        self.logger = logging.getLogger(f"{__name__}.{type(self).__name__}")
        self.trajectory_config, self.identif_config = load_param(robot, config_file)
        self._set_active_joints()
        self.rng = (
            rng
            if rng is None or isinstance(rng, np.random.Generator)
            else np.random.default_rng(rng)
        )
        self.progress = bool(progress)
        self.results: Dict[str, Any] = {
            "T_F": [],
            "P_F": [],
            "V_F": [],
            "A_F": [],
            "iteration_data": [],
            "final_regressor_shape": None,
        }
        self.final_condition_number = 0.0
        self.optimisation_trace = OptimisationTrace()
        self._trace_stage: str | None = None
        self._stage_entries: List[TraceEntry] = []
        self._initialized = False

    def __repr__(self) -> str:
        tc = self.trajectory_config
        return (
            f"{type(self).__name__}(robot={self.model.name!r}, joints={len(self.active_joints)}, "
            f"n_wps={tc['n_wps']}, t_s={tc['t_s']} s, freq={tc['freq']} Hz, "
            f"objective={tc['objective']!r}, segments_solved={len(self.results['T_F'])})"
        )

    def _set_active_joints(self) -> None:
        cfg = self.identif_config
        if list(cfg.get("active_joints") or []) != self.active_joints:
            for key in ("act_idxq", "act_idxv", "act_Jid", "act_J", "idx_act_joints"):
                cfg.pop(key, None)
        cfg["active_joints"] = list(self.active_joints)
        fill_active_joint_indices(self.model, cfg)

    # ------------------------------------------------------------------ set-up
    def initialize(self) -> None:
        """Build the spline, waypoint generator, base columns and constraint manager."""
        self.trajectory_config = validate_trajectory_config(self.trajectory_config)
        self._set_active_joints()
        tc = self.trajectory_config
        n_active = len(self.active_joints)
        soft_lim = tc["soft_lim"]
        self.soft_lim_pool = np.full((3, n_active), soft_lim)
        self.CB = CubicSpline(self.robot, tc["n_wps"], self.active_joints, soft_lim)
        self.WP = WaypointsGeneration(
            self.robot, tc["n_wps"], self.active_joints, soft_lim, rng=self.rng
        )
        self.base_computer = BaseParameterComputer(
            self.robot, self.identif_config, self.active_joints, self.soft_lim_pool, rng=self.rng
        )
        self.constraint_manager = TrajectoryConstraintManager(
            self.robot, self.CB, tc, self.identif_config
        )
        self.idx_e, self.idx_b = self.base_computer.compute_base_indices()
        W_reference = self.base_computer.W_reference
        base_columns = self.base_computer.base_columns
        if W_reference is None or base_columns is None:
            raise RuntimeError(
                "BaseParameterComputer.compute_base_indices() set no reference regressor"
            )
        self.base_columns = base_columns
        self.base_param_names = list(self.base_computer.base_names)
        params = np.array(list(self.base_computer.params_std.values()), dtype=float)
        self.phi_std = params[: self._n_regressor_columns()]
        rms = np.sqrt(np.mean(W_reference**2, axis=0))
        self.column_scale = np.where(rms > 0, rms, 1.0)
        self._initialized = True
        self.logger.info(
            "Initialised: %d active joints, %d base parameters, %d collision pairs, objective %s",
            n_active,
            len(self.base_columns),
            self.constraint_manager.n_pairs,
            tc["objective"],
        )

    def _n_regressor_columns(self) -> int:
        zeros = np.zeros((1, len(self.active_joints)))
        q, v, a = self.CB.to_full(zeros, zeros, zeros)
        return build_regressor_basic(self.robot, q, v, a, self.identif_config).shape[1]

    def _require_initialized(self) -> None:
        if not self._initialized:
            raise RuntimeError(f"{type(self).__name__}: call initialize() before solve()")

    def create_ipopt_problem(
        self,
        n_joints: int,
        n_wps: int,
        Ns: int,
        tps: ArrayLike,
        vel_wps: np.ndarray | None,
        acc_wps: np.ndarray | None,
        wp_init: ArrayLike,
        vel_wp_init: np.ndarray | None,
        acc_wp_init: np.ndarray | None,
        W_stack: np.ndarray | None,
    ) -> BaseTrajectoryIPOPTProblem:
        """IPOPT problem of one segment (subclass hook).

        :meth:`solve` calls it once per segment attempt, after drawing the
        feasible initial guess, with the arguments below, and solves the
        returned object with ``problem.solve_with_waypoints(wps)`` (``wps``:
        the initial waypoints, (n_joints, n_wps) [rad]). An override may return
        a :class:`BaseTrajectoryIPOPTProblem` subclass (other bounds,
        objective, constraints or IPOPT options) or any object with such a
        ``solve_with_waypoints`` returning ``(success, results)``, where
        ``results`` holds at least ``t_f, p_f, v_f, a_f`` (the segment's
        times (Ns, 1) [s], q (Ns, nq), v, a (Ns, nv)) and ``iter_data``.

        Args:
            n_joints: Number of active joints.
            n_wps: Number of waypoints of the segment.
            Ns: Number of samples of the segment.
            tps: Waypoint times (n_wps, 1) [s] (offset by ``s·t_s`` for segment ``s``).
            vel_wps, acc_wps: Waypoint velocities [rad/s] / accelerations
                [rad/s²] (n_joints, n_wps).
            wp_init: First waypoint (fixed) (n_joints,) [rad].
            vel_wp_init, acc_wp_init: Its velocity / acceleration (n_joints,).
            W_stack: Base regressor of the previous segment to stack under
                this one's, or None for the first segment.

        Returns:
            The problem to solve; the base class returns a
            :class:`BaseTrajectoryIPOPTProblem` named
            ``"<model name>TrajectoryOptimization"``.
        """
        return BaseTrajectoryIPOPTProblem(
            self,
            n_joints,
            n_wps,
            Ns,
            tps,
            vel_wps,
            acc_wps,
            wp_init,
            vel_wp_init,
            acc_wp_init,
            W_stack,
            problem_name=f"{self.model.name}TrajectoryOptimization",
        )

    # ------------------------------------------------------------------ criterion
    def _stack_base_regressors(
        self, q: np.ndarray, v: np.ndarray, a: np.ndarray, W_stack: ArrayLike | None = None
    ) -> np.ndarray:
        """Base regressor ``W[:, base columns]`` of (q, v, a), stacked under ``W_stack``."""
        W = build_regressor_basic(self.robot, q, v, a, self.identif_config)
        W_b = W[:, self.base_columns]
        if W_stack is not None:
            W_b = np.vstack([np.asarray(W_stack), W_b])
        return W_b

    def criterion(self, W_b: np.ndarray) -> float:
        """The configured criterion of a base regressor (see module docstring)."""
        tc = self.trajectory_config
        W_b = np.asarray(W_b, dtype=float)
        return _criterion_from_gram(
            W_b.T @ W_b,
            W_b.shape[0],
            tc["objective"],
            self.column_scale,
            float(tc["d_opt_epsilon"]),
            _smoothing_schedule(tc.get("cond_smoothing", 0))[-1],
            _information_weight(tc),
        )

    def condition_number(
        self, q: np.ndarray, v: np.ndarray, a: np.ndarray, W_stack: ArrayLike | None = None
    ) -> float:
        """2-norm condition number of the base regressor of (q, v, a) (inf when singular)."""
        return float(np.linalg.cond(self._stack_base_regressors(q, v, a, W_stack)))

    def objective_function(
        self,
        X: ArrayLike,
        opt_cb: Dict[str, Any],
        tps: ArrayLike,
        vel_wps: np.ndarray | None,
        acc_wps: np.ndarray | None,
        wp_init: ArrayLike,
        W_stack: ArrayLike | None = None,
    ) -> float:
        """Criterion of the segment whose free waypoints are ``X``.

        Stores ``t_f, p_f, v_f, a_f`` of the trajectory in ``opt_cb``. Any
        failure returns 1e10 (logged at DEBUG).
        """
        try:
            n = len(self.active_joints)
            wps = np.column_stack(
                [
                    np.asarray(wp_init, dtype=float).ravel(),
                    np.asarray(X, dtype=float).reshape(-1, n).T,
                ]
            )
            t_f, p_f, v_f, a_f = self.CB.get_full_config(
                self.trajectory_config["freq"], tps, wps, vel_wps, acc_wps
            )
            opt_cb.update({"t_f": t_f, "p_f": p_f, "v_f": v_f, "a_f": a_f})
            return self.criterion(self._stack_base_regressors(p_f, v_f, a_f, W_stack))
        except Exception as exc:  # noqa: BLE001 - upstream contract
            self.logger.debug("objective_function failed: %s", exc)
            return FAILED_OBJECTIVE

    # ------------------------------------------------------------------ initial guess
    def _limit_waypoint_steps(self, wps: np.ndarray) -> np.ndarray:
        """Clip consecutive waypoint steps so the rest-to-rest peak speed stays below the limit.

        A rest-to-rest piece over ``t_s`` [s] peaks at ``c·|Δq|/t_s`` [rad/s]; each
        step is limited to ``0.9·t_s·|upper_dq|/c`` (per joint), cumulatively from
        the first waypoint (unchanged); a clamped waypoint moves toward its
        predecessor, so values stay within the original range.

        ``trajectory_config["step_limit_peak"]`` chooses ``c``
        (:data:`~figaroh.utils.cubic_spline.REST_PEAK_SPEED`):

        * ``"cubic"`` (default, figaroh 1.0.2): ``c = 1.5``, the peak of the
          unconstrained cubic. The segments are built with zero waypoint
          velocities and accelerations as curve constraints, so each piece is
          in fact the rest-to-rest quintic whose peak is ``15/8·|Δq|/t_s``: a
          clipped step reaches 1.125 × 0.9 of the velocity limit.
        * ``"quintic"``: ``c = 15/8``, the peak of the pieces actually built,
          so a clipped step stays at 0.9 of the limit.
        """
        wps = np.asarray(wps, dtype=float)
        out = wps.copy()
        quintic = self.trajectory_config.get("step_limit_peak", "cubic") == "quintic"
        c = REST_PEAK_SPEED[quintic]
        max_step = 0.9 * self.trajectory_config["t_s"] * np.abs(self.CB.upper_dq) / c
        for w in range(1, out.shape[1]):
            step = np.clip(wps[:, w] - out[:, w - 1], -max_step, max_step)
            out[:, w] = out[:, w - 1] + step
        return out

    def _segment_trajectory(self, tps, wps, vel, acc):
        t, p, v, a = self.CB.get_full_config(self.trajectory_config["freq"], tps, wps, vel, acc)
        tau = calc_torque(len(t), self.robot, p, v, a).reshape(self.model.nv, -1).T
        return t, p, v, a, tau

    def _within_soft_limits(self, wps: np.ndarray, v: np.ndarray, tau: np.ndarray) -> bool:
        """Waypoints, sampled velocities and efforts within the softened limits."""
        CB = self.CB
        va, ta = v[:, CB.act_idxv], tau[:, CB.act_idxv]
        lo, hi = CB.lower_q[:, None], CB.upper_q[:, None]
        return bool(
            np.all((wps >= lo) & (wps <= hi))
            and np.all((va >= CB.lower_dq) & (va <= CB.upper_dq))
            and np.all((ta >= CB.lower_effort) & (ta <= CB.upper_effort))
        )

    def _interval_feasible(
        self,
        tps: ArrayLike,
        wps: np.ndarray,
        vel: np.ndarray | None,
        acc: np.ndarray | None,
        k: int,
    ) -> bool:
        """Limits and clearance of the piece between waypoints ``k − 1`` and ``k``."""
        CB = self.CB
        tc = self.trajectory_config
        t_pair = np.asarray(tps, dtype=float).ravel()[k - 1 : k + 1]
        y = wps[:, k - 1 : k + 1]
        v_wp = None if vel is None else vel[:, k - 1 : k + 1]
        a_wp = None if acc is None else acc[:, k - 1 : k + 1]
        basis_kind = is_constrained(v_wp, a_wp)
        if np.any(y[:, 1] < CB.lower_q) or np.any(y[:, 1] > CB.upper_q):
            return False
        if np.any(np.abs(y[:, 1] - y[:, 0]) < 1e-3):
            return False  # a still joint: sign(dq) = 0, the Coulomb column jumps when it moves
        peak = peak_velocities(t_pair, y, v_wp, a_wp)[0][0]
        if np.any(peak < CB.lower_dq) or np.any(peak > CB.upper_dq):
            return False
        t = sample_times(tc["freq"], t_pair)
        qa, dqa, ddqa = spline_basis(t_pair, t, basis_kind).evaluate(y, v_wp, a_wp)
        q, v, a = CB.to_full(qa, dqa, ddqa)
        tau = calc_torque(len(t), self.robot, q, v, a).reshape(self.model.nv, -1).T
        ta = tau[:, CB.act_idxv]
        if np.any(ta < CB.lower_effort) or np.any(ta > CB.upper_effort):
            return False
        cm = self.constraint_manager
        if not cm.n_pairs:
            return True
        t_c = sample_times(cm.check_frequency, t_pair)
        q_c = spline_basis(t_pair, t_c, basis_kind).evaluate(y, v_wp, a_wp)[0]
        q_c = CB.to_full(q_c, qa[:1], qa[:1])[0]
        return all(cm.configuration_clear(qi) for qi in q_c)

    def _draw_waypoint(self, previous: np.ndarray) -> np.ndarray:
        """Random pool waypoint differing from ``previous``, step-limited (see below)."""
        pool = self.WP.pool_q
        out = np.empty_like(previous)
        for j in range(pool.shape[1]):
            out[j] = self.WP._choice(pool[pool[:, j] != previous[j], j], 1)[0]
        return self._limit_waypoint_steps(np.column_stack([previous, out]))[:, 1]

    def _generate_feasible_initial_guess(self, wp_init, vel_wp_init, acc_wp_init):
        """Random waypoints satisfying every limit and collision-free along the spline.

        A random draw (``WaypointsGeneration.gen_rand_wp`` then
        :meth:`_limit_waypoint_steps`) is repaired piece by piece: a piece that
        violates a limit or the clearance gets its end waypoint redrawn (up to
        20 times) before the draw is abandoned. With zero waypoint velocities
        every piece depends on its two waypoints only, so the repaired
        trajectory is feasible as a whole; it is checked again as a whole.

        Returns:
            ``(tps (n_wps, 1), wps, vel_wps, acc_wps, feasible)``; after
            ``max_attempts`` failed draws the last one is returned with
            ``feasible=False`` (and an error is logged).
        """
        tc = self.trajectory_config
        tps = tc["t_s"] * np.arange(tc["n_wps"]).reshape(-1, 1)
        attempts = max(1, tc["max_attempts"])
        for attempt in range(attempts):
            wps, vel, acc = self.WP.gen_rand_wp(wp_init, vel_wp_init, acc_wp_init)
            wps = self._limit_waypoint_steps(wps)
            repaired = True
            for k in range(1, wps.shape[1]):
                for _ in range(20):
                    if self._interval_feasible(tps, wps, vel, acc, k):
                        break
                    wps[:, k] = self._draw_waypoint(wps[:, k - 1])
                else:
                    repaired = False
                    break
            if not repaired:
                continue
            _, p, v, _, tau = self._segment_trajectory(tps, wps, vel, acc)
            if self.CB.check_cfg_constraints(p, v, tau) or not self._within_soft_limits(
                wps, v, tau
            ):
                continue
            if self.constraint_manager.trajectory_clear(tps, wps, vel, acc):
                self.logger.debug("feasible initial guess after %d draw(s)", attempt + 1)
                return tps, wps, vel, acc, True
        hint = ""
        if self.trajectory_config.get("step_limit_peak", "cubic") == "cubic":
            hint = (
                " With step_limit_peak 'cubic' (figaroh 1.0.2) the clipped waypoint steps reach"
                " 1.0125x the velocity limit on the quintic pieces: set"
                " problem.step_limit_peak: quintic."
            )
        self.logger.error(
            "No feasible initial guess in %d random draws (limits or self-collision violated); "
            "IPOPT starts from an infeasible point. Increase max_attempts or soft_lim.%s",
            attempts,
            hint,
        )
        return tps, wps, vel, acc, False

    # ------------------------------------------------------------------ solve
    def solve(self, stack_reps: int = 2, *, verbose: bool = True) -> Dict[str, Any]:
        """Optimise ``stack_reps`` consecutive segments.

        IPOPT prints its iteration log on the console at
        ``trajectory_config["ipopt_print_level"]`` (3 by default, as figaroh
        1.0.2); ``verbose=False`` runs this solve at print level 0 — no
        banner, no log, same result (the setting is restored afterwards).

        Segment ``s`` starts at the previous segment's last waypoint and its
        base regressor is stacked under the previous segment's (only). A
        failed segment stops the loop (earlier segments are kept). Before
        each segment, :meth:`on_segment` is called (a progress hook).

        Returns:
            :attr:`results`.

        Raises:
            MissingDependencyError: cyipopt is not installed (an ``ImportError``
                naming ``pip install "figaroh[ipopt]"``); checked first.
            RuntimeError: :meth:`initialize` was not called.
            ValueError: ``stack_reps`` is not a positive integer.
        """
        require_cyipopt()
        self._require_initialized()
        if int(stack_reps) != stack_reps or stack_reps < 1:
            raise ValueError(f"stack_reps must be a positive integer, got {stack_reps!r}")
        if verbose:
            return self._solve_segments(int(stack_reps))
        tc = self.trajectory_config
        level = tc.get("ipopt_print_level", _MISSING)
        tc["ipopt_print_level"] = 0
        try:
            return self._solve_segments(int(stack_reps))
        finally:
            if level is _MISSING:
                tc.pop("ipopt_print_level", None)
            else:
                tc["ipopt_print_level"] = level

    def _solve_segments(self, stack_reps: int) -> Dict[str, Any]:
        """The segment loop of :meth:`solve` (``stack_reps`` already checked)."""
        for key in (
            "T_F",
            "P_F",
            "V_F",
            "A_F",
            "iteration_data",
            "initial_waypoints",
            "waypoints",
            "initial_condition_number",
            "condition_number",
            "objective_values",
            "feasible",
            "initial_guess_feasible",
            "failures",
        ):
            self.results[key] = []
        self.results["objective"] = self.trajectory_config["objective"]
        self.optimisation_trace = OptimisationTrace()
        try:
            self.WP.gen_rand_pool(self.soft_lim_pool)
            n_active = len(self.active_joints)
            pick = (
                np.random.randint(0, self.WP.n_set, n_active)
                if self.rng is None
                else self.rng.integers(0, self.WP.n_set, n_active)
            )
            wp_init = self.WP.pool_q[pick, np.arange(n_active)]
            vel_wp_init = np.zeros(n_active)
            acc_wp_init = np.zeros(n_active)
            W_stack = None
            self._last_W_b: np.ndarray | None = None
            for s in range(int(stack_reps)):
                self.on_segment(s, int(stack_reps))
                ok = self._solve_segment(s, wp_init, vel_wp_init, acc_wp_init, W_stack)
                if not ok:
                    self.logger.error("Segment %d failed; keeping %d solved segment(s)", s, s)
                    break
                if s < stack_reps - 1:
                    wp_init, W_stack = self._prepare_next_segment()
            self.results["final_regressor_shape"] = (
                None if self._last_W_b is None else tuple(self._last_W_b.shape)
            )
        except Exception:
            self.logger.exception("Optimal trajectory generation failed")
            raise
        return self.results

    def on_segment(self, segment_index: int, n_segments: int) -> None:
        """Hook called by :meth:`solve` just before segment ``segment_index`` is optimised.

        The default does nothing. Override it to report progress (the
        ``figaroh trajectory`` command advances its progress bar here) or to
        log; it must not change the design state. The segment's outcome is in
        :attr:`results` afterwards (``results["failures"]`` for a failed
        attempt, one more entry of ``results["P_F"]`` for a solved segment).

        Args:
            segment_index: Index of the segment about to be solved, from 0.
            n_segments: Number of segments asked of :meth:`solve` (``stack_reps``).
        """

    def on_iteration(self, entry: TraceEntry) -> None:
        """Hook called after each recorded IPOPT iteration (a progress hook).

        The default does nothing. Override it to show progress (the
        ``figaroh trajectory`` command updates its progress bar here); it
        must only read. An exception it raises is logged and ignored, so the
        solve goes on unchanged.

        Args:
            entry: The iteration just recorded (stage, IPOPT iteration,
                objective, primal infeasibility ``inf_pr``).
        """

    def on_stage_end(self, outcome: StageOutcome) -> None:
        """Hook called when a segment attempt ends, with its outcome (default: nothing).

        Args:
            outcome: ``converged``, ``max_iterations``, ``fallback`` or ``failed``,
                with a one-line message.
        """

    def record_ipopt_iteration(
        self,
        run: int,
        alg_mod: int,
        iter_count: int,
        obj_value: float,
        inf_pr: float,
        inf_du: float,
        mu: float,
    ) -> None:
        """Append one IPOPT iteration to the current stage and call :meth:`on_iteration`.

        Called by :meth:`BaseTrajectoryIPOPTProblem.intermediate` (cyipopt's
        callback) with IPOPT's values; it only reads them. A problem solved
        outside :meth:`solve` (no open stage) is shown to :meth:`on_iteration`
        under the stage ``"ipopt"`` but not kept in the trace.

        Args:
            run: Index of the IPOPT run of a restarted solve (0 for the first).
            alg_mod: 0 regular mode, 1 restoration phase.
            iter_count: IPOPT's iteration number.
            obj_value: Objective value (unscaled).
            inf_pr: Primal infeasibility (largest constraint violation, unscaled).
            inf_du: Dual infeasibility (scaled).
            mu: Barrier parameter.
        """
        entry = TraceEntry(
            stage=self._trace_stage or "ipopt",
            iteration=int(iter_count),
            objective=float(obj_value),
            constraint_violation=float(inf_pr),
            extra={
                "inf_du": float(inf_du),
                "mu": float(mu),
                "run": int(run),
                "restoration": bool(alg_mod == 1),
            },
        )
        if self._trace_stage is not None:
            self._stage_entries.append(entry)
        try:
            self.on_iteration(entry)
        except Exception as exc:  # noqa: BLE001 - a progress hook must not stop the solve
            self.logger.warning("on_iteration hook failed (ignored): %s", exc)

    def _start_stage(self, segment: int, attempt: int) -> None:
        """Open the trace stage of a segment attempt."""
        name = f"ipopt:segment {segment + 1}"
        self._trace_stage = name if attempt == 0 else f"{name} attempt {attempt + 1}"
        self._stage_entries = []

    def _end_stage(self, outcome_status: str, message: str) -> StageOutcome:
        """Close the current stage: its entries and outcome join :attr:`optimisation_trace`.

        The outcome is logged at INFO level (the caller decides what a
        non-converged outcome means: ``figaroh trajectory`` exits 1 on it).
        """
        stage = self._trace_stage or "ipopt"
        outcome = StageOutcome(stage, outcome_status, message)
        self.optimisation_trace = self.optimisation_trace.with_entries(
            *self._stage_entries
        ).with_outcome(outcome)
        self._trace_stage, self._stage_entries = None, []
        self.logger.info("%s: %s — %s", stage, outcome.status, message)
        try:
            self.on_stage_end(outcome)
        except Exception as exc:  # noqa: BLE001 - a progress hook must not stop the solve
            self.logger.warning("on_stage_end hook failed (ignored): %s", exc)
        return outcome

    def _solve_segment(
        self,
        s: int,
        wp_init: np.ndarray,
        vel_wp_init: np.ndarray,
        acc_wp_init: np.ndarray,
        W_stack: np.ndarray | None,
    ) -> bool:
        tc = self.trajectory_config
        n_active = len(self.active_joints)
        for attempt in range(max(1, tc["segment_attempts"])):
            tps, wps, vel_wps, acc_wps, feasible = self._generate_feasible_initial_guess(
                wp_init, vel_wp_init, acc_wp_init
            )
            tps = tps + tc["t_s"] * s  # upstream time offset (one t_s per segment)
            t0, p0, v0, a0, _ = self._segment_trajectory(tps, wps, vel_wps, acc_wps)
            cond0 = self.condition_number(p0, v0, a0, W_stack)
            self.logger.info(
                "Segment %d attempt %d: initial guess %s, base-regressor condition number %s",
                s,
                attempt,
                "feasible" if feasible else "INFEASIBLE",
                _fmt_cond(cond0),
            )
            problem = self.create_ipopt_problem(
                n_active,
                tc["n_wps"],
                len(t0),
                tps,
                vel_wps,
                acc_wps,
                wp_init,
                vel_wp_init,
                acc_wp_init,
                W_stack,
            )
            self._start_stage(s, attempt)
            try:
                success, data = problem.solve_with_waypoints(wps)
            except BaseException as exc:
                self._end_stage("failed", f"{type(exc).__name__}: {exc}")
                raise
            if not success:
                reason = _failure_reason(data)
                self._end_stage("failed", f"no segment: {reason}")
                self.logger.error("Segment %d attempt %d failed: %s", s, attempt, reason)
                self.results["failures"].append(
                    {
                        "segment": s,
                        "attempt": attempt,
                        "reason": reason,
                        "initial_guess_feasible": feasible,
                    }
                )
                continue
            self._record_segment(s, attempt, data, wps, cond0, feasible, W_stack)
            self._end_stage(*_segment_outcome(data, int(tc.get("max_iterations", 200))))
            return True
        return False

    def _record_segment(
        self,
        s: int,
        attempt: int,
        data: Dict[str, Any],
        wps: np.ndarray,
        cond0: float,
        feasible: bool,
        W_stack: np.ndarray | None,
    ) -> None:
        """Append a solved segment (trajectory, waypoints, condition numbers) to ``results``."""
        p_f, v_f, a_f = data["p_f"], data["v_f"], data["a_f"]
        self._last_W_b = self._stack_base_regressors(p_f, v_f, a_f, None)
        cond = self.condition_number(p_f, v_f, a_f, W_stack)
        self.final_condition_number = cond
        iter_data = dict(data.get("iter_data") or {}, attempt=attempt)
        final_waypoint = data.get("final_waypoint", iter_data.get("final_waypoint"))
        if final_waypoint is None:  # a custom problem: read it off the trajectory
            final_waypoint = np.asarray(p_f)[-1, self.CB.act_idxq]
        self.results["T_F"].append(data["t_f"])
        self.results["P_F"].append(p_f)
        self.results["V_F"].append(v_f)
        self.results["A_F"].append(a_f)
        self.results["initial_waypoints"].append(wps)
        self.results["waypoints"].append(data.get("waypoints"))
        self.results["initial_condition_number"].append(cond0)
        self.results["condition_number"].append(cond)
        self.results["objective_values"].append(data.get("obj_val"))
        self.results["feasible"].append(bool(data.get("feasible", True)))
        self.results["initial_guess_feasible"].append(bool(feasible))
        self.results["iteration_data"].append(iter_data)
        self._last_final_waypoint = final_waypoint
        self.logger.info(
            "Segment %d solved in %.1f s (%d iterations, %s, %s point): condition number %s → %s",
            s,
            float(data.get("solve_time", iter_data.get("solve_time", 0.0)) or 0.0),
            len(iter_data.get("iterations", [])),
            data.get("status_name", "?"),
            data.get("selected_from", "returned"),
            _fmt_cond(cond0),
            _fmt_cond(cond),
        )

    def _prepare_next_segment(self):
        """``(last waypoint of the last segment, its base regressor)`` for the next segment."""
        return np.asarray(self._last_final_waypoint, dtype=float), self._last_W_b

    # ------------------------------------------------------------------ output
    def stacked_trajectory(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All solved segments joined into one continuous trajectory.

        Segments are concatenated in order, dropping each later segment's first
        sample (it repeats the previous segment's last one), with times
        re-based to ``i/freq``.

        Returns:
            ``(t (N,), q (N, nq), v (N, nv), a (N, nv))``.
        """
        if not self.results["P_F"]:
            raise RuntimeError("no solved segment: call solve() first")
        parts = [
            [arr if i == 0 else arr[1:] for i, arr in enumerate(self.results[key])]
            for key in ("P_F", "V_F", "A_F")
        ]
        q, v, a = (np.vstack(p) for p in parts)
        t = np.arange(len(q)) / float(self.trajectory_config["freq"])
        return t, q, v, a

    def plot_results(self):
        """Positions, velocities and accelerations of every segment per active joint.

        Drawn by :meth:`ResultsManager.plot_optimal_trajectory_results` from
        :attr:`results` (the segment layout ``T_F, P_F, V_F, A_F``; ``P_F``
        columns ``CB.act_idxq``, ``V_F``/``A_F`` columns ``CB.act_idxv``) as in
        figaroh 1.0.2, with :meth:`CubicSpline.plot_spline` of
        :meth:`stacked_trajectory` as the fallback when that plot fails. The
        figure is neither shown nor written (``plt.show()``/``savefig`` it).

        Returns:
            The matplotlib Figure, or None when there is nothing to plot.
        """
        if not self.results["T_F"]:
            self.logger.warning("plot_results: no solved segment")
            return None
        manager = ResultsManager("optimal_trajectory", self.model.name)

        def primary():
            manager.plot_optimal_trajectory_results(
                self.results,
                self.final_condition_number,
                joint_names=list(self.active_joints),
                title="Optimal exciting trajectory",
                q_indices=self.CB.act_idxq,
                v_indices=self.CB.act_idxv,
                show=False,
                raise_errors=True,
            )
            return manager.last_figures["trajectory"]

        return plot_with_fallback(
            primary,
            lambda: self.CB.plot_spline(*self.stacked_trajectory()),
            self.logger,
            "optimal trajectory",
        )

    def save_results(self, output_dir: str = "results") -> Dict[str, str] | None:
        """Save the segments with the results manager (YAML + NPZ).

        Returns:
            ``{format: path}``, or None before :meth:`solve`.
        """
        if not self.results["T_F"]:
            self.logger.warning("save_results: nothing to save, call solve() first")
            return None
        res = self.results
        history = [d.get("obj_values", []) for d in res["iteration_data"]]
        results_dict = {
            "trajectory_segments": len(res["T_F"]),
            "condition_number": float(self.final_condition_number),
            "initial_condition_number": [float(c) for c in res["initial_condition_number"]],
            "segment_condition_number": [float(c) for c in res["condition_number"]],
            "objective": res["objective"],
            "feasible": list(res["feasible"]),
            "joint_names": list(self.active_joints),
            "configuration": dict(
                (k, v) for k, v in self.trajectory_config.items() if not isinstance(v, np.ndarray)
            ),
            "waypoints": [np.asarray(w) for w in res["waypoints"]],
            "time_segments": [np.asarray(t).ravel() for t in res["T_F"]],
            "position_segments": [np.asarray(p) for p in res["P_F"]],
            "velocity_segments": [np.asarray(v) for v in res["V_F"]],
            "acceleration_segments": [np.asarray(a) for a in res["A_F"]],
            "condition_number_history": history,
        }
        manager = ResultsManager("optimal_trajectory", self.model.name)
        return manager.save_results(results_dict, output_dir, save_formats=["yaml", "npz"])
