"""D-optimal selection of calibration postures from a candidate pool.

Geometric calibration identifies ``n_p`` base kinematic parameters ``θ`` from
the linearised measurement model ``δy_i = R_i δθ`` of posture ``i`` (``R_i``:
the ``c × n_p`` block of the structural base kinematic regressor evaluated at
that posture, ``c = calibration_index`` measured components, rows in [m] for
positions and [rad] for orientations per unit of ``θ`` [m or rad]). A posture
contributes the information matrix ``X_i = R_iᵀ R_i`` and a set ``S`` of
postures the Fisher information ``M(S) = Σ_{i∈S} X_i`` (unit measurement
noise). A D-optimal design maximises ``det M``, i.e. minimises the volume of
the confidence ellipsoid of ``θ``.

The combinatorial problem is relaxed to the approximate (weighted) design

.. math::

    \\max_{w \\ge 0,\\ \\sum_i w_i \\le 1} \\; \\det\\Big(\\sum_i w_i X_i\\Big)^{1/n_p}

a concave program (determinant root = second-order-cone representable),
solved by :class:`SOCPOptimizer` with picos + CVXOPT. The discrete subset is
then the postures of non-negligible weight (``"threshold"``) or the shortest
weight-ranked prefix after which the normalised criterion stops improving
(``"iroc"``). :class:`Detmax` is the classical exchange heuristic working on
the discrete problem directly.

Workflow::

    opt = BaseOptimalCalibration(robot, "config/robot_config.yaml")
    opt.initialize()            # candidates → regressor → detroot_whole
    opt.solve(save_file=False)  # SOCP → subset → (save) → plot

Beyond upstream:

* an infeasible design (candidate pool that cannot identify every base
  parameter, too few postures selected, singular selected information matrix)
  is reported explicitly: ``results_data["feasible"] = False`` with a
  ``results_data["message"]`` naming the cause and the fix, and an
  :class:`InfeasibleDesignError` (an ``AssertionError``, the upstream
  contract, and a ``ValueError``) carrying the same message — never a printed
  ``inf``;
* the selected postures are written atomically in the candidate schema
  (``calibration_joint_names`` / ``calibration_joint_configurations``), so the
  output file can be fed back as a candidate file;
* picos is imported only when the SOCP is solved (``import figaroh`` stays
  cheap);
* the SOCP's interior-point iterations are recorded
  (:attr:`BaseOptimalCalibration.optimisation_trace`, stage ``"socp"``) and
  reported one by one to :meth:`BaseOptimalCalibration.on_iteration` (a
  progress hook): CVXOPT reports them only as a printed table, which is read
  from the solver's standard output during the solve (nothing is printed) —
  the weights are the same.
"""

from __future__ import annotations

import copy
import io
import logging
import math
import random
import re
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Sequence, Tuple, TypeVar

import numpy as np
import pinocchio as pin
import yaml

from figaroh._optional import require
from figaroh._run.optimisation_trace import OptimisationTrace, StageOutcome, TraceEntry
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration.calibration_tools import calculate_base_kinematics_regressor
from figaroh.calibration.config import load_calibration_config, unified_to_legacy_config
from figaroh.calibration.data_loader import load_data
from figaroh.calibration.parameter import get_fullparam_offset, get_joint_offset
from figaroh.data.text_csv import csv_rows, read_csv_text
from figaroh.errors import FigarohError
from figaroh.tools.exceptions import SolverError
from figaroh.utils.error_handling import CalibrationError
from figaroh.utils.fileio import atomic_write, atomic_write_text, make_folder
from figaroh.utils.results_manager import ResultsManager, plot_with_fallback
from figaroh.utils.unified_config import (
    UnifiedConfigParser,
    create_task_config,
    is_unified_config,
    require_unified_config,
)
from figaroh.utils.yaml_budget import load_yaml_file

logger = logging.getLogger(__name__)

__all__ = [
    "BaseOptimalCalibration",
    "Detmax",
    "InfeasibleDesignError",
    "SOCPOptimizer",
    "detroot",
    "log_det_information",
    "rearrange_rb",
    "sub_info_matrix",
    # Re-exported for figaroh 1.0.2 compatibility.
    "CalibrationError",
    "ResultsManager",
    "UnifiedConfigParser",
    "calculate_base_kinematics_regressor",
    "create_task_config",
    "is_unified_config",
    "load_data",
    "plot_with_fallback",
    "require_unified_config",
    "unified_to_legacy_config",
]


#: Weight threshold of the ``"threshold"`` selection (upstream ``eps_opt``).
EPS_OPT = 1e-5
#: Accepted Kiefer–Wolfowitz gap of the SOCP weights (bound on the log det loss).
KW_TOL = 1e-4
#: Relative eigenvalue threshold below which an information matrix is singular.
RANK_RTOL = 1e-10
_SCHEMA_KEYS = ("calibration_joint_names", "calibration_joint_configurations")


class InfeasibleDesignError(FigarohError, AssertionError, ValueError):
    """The candidate pool or the selected subset cannot identify every base parameter.

    Subclasses ``AssertionError`` (upstream ``assert … "Infeasible design"``)
    and ``ValueError`` (bad input data), so either ``except`` clause catches it.
    """


_T = TypeVar("_T")


def _required(value: _T | None, what: str) -> _T:
    """``value``, or :class:`CalibrationError` with ``what`` (the missing state and its fix)."""
    if value is None:
        raise CalibrationError(what)
    return value


_NO_REGRESSOR = "no candidate regressor: calculate_regressor() must set R_rearr and _subX_*"
_NO_SOLUTION = "no optimal configuration yet: call solve() or calculate_optimal_configurations()"


# ---------------------------------------------------------------------------
# information-matrix helpers
# ---------------------------------------------------------------------------


def _as_info_stack(subX: Mapping[Any, Any] | Sequence[Any] | np.ndarray, name: str) -> np.ndarray:
    """(N, n_p, n_p) float array of the information matrices, validated."""
    mats: List[Any] | np.ndarray
    if isinstance(subX, Mapping):
        mats = list(subX.values())
    else:
        mats = list(subX) if not isinstance(subX, np.ndarray) else subX
    try:
        X = np.asarray(mats, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name}: information matrices must be numeric square arrays of one size ({exc})"
        ) from exc
    if X.ndim != 3 or X.shape[0] == 0 or X.shape[1] != X.shape[2] or X.shape[1] == 0:
        raise ValueError(
            f"{name}: expected a non-empty collection of square (n_p × n_p) matrices, "
            f"got an array of shape {X.shape}"
        )
    if not np.all(np.isfinite(X)):
        bad = sorted({int(i) for i in np.argwhere(~np.isfinite(X))[:, 0]})
        raise ValueError(f"{name}: non-finite entries in the matrices of candidates {bad[:10]}")
    asym = np.abs(X - np.swapaxes(X, 1, 2)).max(axis=(1, 2))
    scale = np.maximum(np.abs(X).max(axis=(1, 2)), 1.0)
    if np.any(asym > 1e-8 * scale):
        bad = np.flatnonzero(asym > 1e-8 * scale).tolist()
        raise ValueError(f"{name}: information matrices of candidates {bad[:10]} are not symmetric")
    return X


def _batched_logdet(M: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(log det, rank)`` of a stack (..., n, n) of symmetric PSD matrices.

    The log-determinant is ``-inf`` for a singular matrix (relative eigenvalue
    threshold :data:`RANK_RTOL`); the rank counts the eigenvalues above it.
    """
    ev = np.linalg.eigvalsh(M)
    top = np.maximum(ev[..., -1:], 0.0)
    thr = RANK_RTOL * np.maximum(top, np.finfo(float).tiny)
    pos = ev > thr
    rank = pos.sum(axis=-1)
    with np.errstate(divide="ignore"):
        logs = np.where(pos, np.log(np.where(pos, ev, 1.0)), 0.0).sum(axis=-1)
    n = M.shape[-1]
    logdet = np.where(rank == n, logs, -np.inf)
    return logdet, rank


def detroot(M: np.ndarray) -> float:
    """Determinant root ``det(M)^(1/n)`` of a symmetric PSD (n × n) matrix.

    Equal to picos' ``DetRootN`` value; ``0.0`` for a singular matrix.

    Args:
        M: Information matrix [units of θ⁻²].

    Returns:
        ``det(M)^(1/n)`` (≥ 0).
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"detroot: expected a non-empty square matrix, got shape {M.shape}")
    ld, _ = _batched_logdet(M)
    return float(np.exp(ld / M.shape[0])) if np.isfinite(ld) else 0.0


def log_det_information(
    subX: Mapping[Any, Any] | Sequence[Any] | np.ndarray, indices: Iterable[int] | None = None
) -> float:
    """``log det Σ_{i∈S} X_i`` of a subset of candidate postures.

    Args:
        subX: Information matrices ``X_i`` (dict keyed by candidate index —
            the keys are then the valid ``indices`` — or a sequence/array).
        indices: Candidate indices of the subset ``S`` (all when None);
            repeated indices count repeatedly.

    Returns:
        The log-determinant (natural log); ``-inf`` when the summed matrix is
        singular (the subset does not identify every parameter).

    Raises:
        ValueError: bad matrices or an index outside the pool.
    """
    keys = list(subX.keys()) if isinstance(subX, Mapping) else None
    X = _as_info_stack(subX, "subX")
    if indices is None:
        pos = np.arange(len(X))
    else:
        idx = list(indices)
        if keys is not None:
            lookup = {k: i for i, k in enumerate(keys)}
            missing = [i for i in idx if i not in lookup]
            if missing:
                raise ValueError(f"indices {missing[:10]} are not candidates of the pool")
            pos = np.array([lookup[i] for i in idx], dtype=int)
        else:
            pos = np.asarray(idx, dtype=int)
            if pos.size and (pos.min() < 0 or pos.max() >= len(X)):
                raise ValueError(f"indices must lie in [0, {len(X)}), got {idx[:10]}")
    ld, _ = _batched_logdet(X[pos].sum(axis=0))
    return float(ld)


def rearrange_rb(R_b: np.ndarray, calib_config: Mapping[str, Any]) -> np.ndarray:
    """Component-major stacked regressor → sample-major rows.

    ``R_rearr[i·c + j] = R_b[j·NbSample + i]`` with ``c = calibration_index``,
    so rows ``i·c … (i+1)·c − 1`` are the ``c`` measured components of
    posture ``i`` (requires that no zero row was removed).

    Args:
        R_b: (c·NbSample, n_p) base regressor, component-major.
        calib_config: ``NbSample`` and ``calibration_index``.

    Returns:
        (NbSample·c, n_p) sample-major regressor.

    Raises:
        ValueError: row count not ``c·NbSample``.
    """
    R_b = np.asarray(R_b, dtype=float)
    n, c = int(calib_config["NbSample"]), int(calib_config["calibration_index"])
    if R_b.ndim != 2 or R_b.shape[0] != n * c:
        raise ValueError(
            f"R_b has shape {R_b.shape}; expected {n * c} rows (calibration_index={c} × "
            f"NbSample={n}): zero rows must not be removed before rearranging"
        )
    return R_b.reshape(c, n, -1).transpose(1, 0, 2).reshape(n * c, -1)


def sub_info_matrix(
    R: np.ndarray, calib_config: Mapping[str, Any]
) -> Tuple[List[np.ndarray], Dict[int, np.ndarray]]:
    """Per-posture information matrices ``X_i = R_iᵀ R_i``.

    Args:
        R: (NbSample·c, n_p) sample-major regressor (:func:`rearrange_rb`),
            ``R_i = R[i·c : (i+1)·c]``.
        calib_config: ``NbSample`` and ``calibration_index``.

    Returns:
        ``(subX_list, subX_dict)``: the NbSample (n_p × n_p) matrices as a list
        and as a dict keyed ``0 … NbSample − 1``.
    """
    R = np.asarray(R, dtype=float)
    n, c = int(calib_config["NbSample"]), int(calib_config["calibration_index"])
    if R.ndim != 2 or R.shape[0] != n * c:
        raise ValueError(
            f"R has shape {R.shape}; expected {n * c} rows (NbSample={n} × calibration_index={c})"
        )
    blocks = R.reshape(n, c, -1)
    X = np.einsum("nci,ncj->nij", blocks, blocks)
    subX_list = list(X)
    return subX_list, dict(enumerate(subX_list))


# ---------------------------------------------------------------------------
# SOCP relaxation
# ---------------------------------------------------------------------------
#: One row of CVXOPT's iteration table: ``k: pcost dcost gap pres dres [k/t]``.
_CVXOPT_ROW = re.compile(r"^\s*(\d+):((?:\s+\S+){5,6})\s*$")
#: The attempt that reproduces figaroh 1.0.2 (the others are fallbacks).
SOCP_FIRST_ATTEMPT = "figaroh 1.0.2 formulation"


class _SolverTable(io.TextIOBase):
    """Stand-in for stdout during a CVXOPT solve: reads its iteration table.

    Each complete line matching :data:`_CVXOPT_ROW` becomes ``on_row(k,
    pcost, dcost, gap, pres, dres)``; the other lines (banners, status) are
    logged at debug level. Nothing reaches the real stdout.
    """

    def __init__(self, on_row: Callable[..., None]) -> None:
        super().__init__()
        self._on_row = on_row
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            self._line(line)
        return len(text)

    def _line(self, line: str) -> None:
        match = _CVXOPT_ROW.match(line)
        if match is None:
            if line.strip():
                logger.debug("cvxopt: %s", line.strip())
            return
        try:
            values = [float(v) for v in match.group(2).split()[:5]]
        except ValueError:
            logger.debug("cvxopt: %s", line.strip())
            return
        self._on_row(int(match.group(1)), *values)


class SOCPOptimizer:
    """Approximate D-optimal design by the determinant-root relaxation.

    .. math::

        \\max_{w, t} \\; t \\quad \\text{s.t.} \\quad w \\ge 0,\\;
        \\textstyle\\sum_i w_i \\le 1,\\;
        t \\le \\det\\big(\\sum_i w_i X_i\\big)^{1/n_p}

    built with picos and solved with ``solver="cvxopt"``. The problem is
    assembled by two hooks that subclasses may extend (call ``super()`` and
    add to :attr:`problem`):

    * :meth:`add_constraints` — creates :attr:`problem`, the weight variable
      :attr:`w_var` (``RealVariable("w", N, lower=0)``), the bound :attr:`t_var`
      and the information matrix :attr:`Mw` ``= Σ_i w_i X_i``, then adds
      ``Σ_i w_i ≤ 1`` and ``t ≤ DetRootN(Mw)``;
    * :meth:`set_objective` — ``maximise t``.

    :meth:`solve` first solves the problem exactly as figaroh 1.0.2 does (the
    unscaled matrices, picos' default CVXOPT options), which reproduces its
    weights. Only when that attempt fails (exception, no usable weights, or a
    non-optimal status without optimality certificate) it retries on the
    matrices divided by a common scale (the weights are invariant) with
    CVXOPT's ``chol`` then ``ldl`` KKT solvers. A non-optimal status is
    accepted when the Kiefer–Wolfowitz gap ``max_i tr(M(w)⁻¹X_i) − n_p`` (a
    solver-independent bound on ``log det M* − log det M(w)``) is at most
    :data:`KW_TOL`. The gap is reported for every solution; it certifies the
    unconstrained design only (a subclass that adds constraints changes the
    optimum).

    Args:
        subX_dict: ``{candidate index: X_i}`` with ``X_i`` (n_p × n_p) symmetric
            PSD [units of θ⁻²]; the key order is the candidate order.
        calib_config: Calibration config (informative; ``NbSample`` is checked
            against the pool size when present).
        normalize_weights: Clip the solver's weights at 0 and rescale them to
            ``Σ w_i = 1`` (False: the solver's values as returned, as figaroh
            1.0.2; they sum to 1 up to the solver tolerance, ~1e-9).

    Attributes:
        problem: The picos problem of the last attempt (None before).
        w_var, t_var, Mw: Its weight variable, bound and information matrix.
        w: Weights after solving (NumPy, candidate order), ``None`` before.
        t_opt: ``det(Σ w_i X_i)^(1/n_p)`` at the returned weights.
        status: Solver status string of the accepted attempt.
        solve_time: Wall time of the solve [s].
        kw_gap: Kiefer–Wolfowitz gap of the returned weights (≥ 0).
        d_efficiency_bound: ``exp(−kw_gap / n_p)``, lower bound of the
            D-efficiency of the weights w.r.t. the exact (unconstrained) optimum.
        raw_weight_sum: ``Σ w_i`` returned by the solver.
        iterations: One dict per CVXOPT interior-point iteration of every
            attempt (``attempt``, ``run`` — picos may run CVXOPT again with
            another KKT solver —, ``iteration``, ``pcost``, ``dcost``, ``gap``,
            ``pres``, ``dres``: CVXOPT's primal/dual objectives of picos' conic
            form, duality gap, primal/dual residuals, as CVXOPT prints them: 5
            significant digits for the objectives, 1 for the others).
        iteration_listener: Called with each of those dicts as it arrives
            (None: nobody). An exception it raises is logged and ignored.
        accepted_attempt: Label of the accepted attempt
            (:data:`SOCP_FIRST_ATTEMPT` unless a fallback was needed).
        rejected_attempts: Why each earlier attempt was rejected.

    Raises:
        ValueError: empty pool, non-square / non-finite / non-symmetric
            matrices.
    """

    def __init__(
        self,
        subX_dict: Mapping[Any, Any],
        calib_config: Mapping[str, Any],
        *,
        normalize_weights: bool = False,
    ):
        if not isinstance(subX_dict, Mapping):
            raise ValueError(
                f"subX_dict must be a dict {{candidate index: X_i}}, got {type(subX_dict).__name__}"
            )
        self.pool = subX_dict
        self.calib_config = calib_config
        self.keys = list(subX_dict.keys())
        self._X = _as_info_stack(subX_dict, "subX_dict")
        self._X_attempt = self._X
        self.NbSample, self.n_p = self._X.shape[0], self._X.shape[1]
        nb = calib_config.get("NbSample") if isinstance(calib_config, Mapping) else None
        if nb is not None and int(nb) != self.NbSample:
            logger.warning(
                "calib_config['NbSample'] = %s but the pool holds %d candidates; using the pool",
                nb,
                self.NbSample,
            )
        self.normalize_weights = bool(normalize_weights)
        self.problem: Any = None
        self.w_var: Any = None
        self.t_var: Any = None
        self.Mw: Any = None
        self.w: np.ndarray | None = None
        self.t_opt: float | None = None
        self.status: str | None = None
        self.solve_time: float | None = None
        self.raw_weight_sum: float | None = None
        self.kw_gap: float | None = None
        self.d_efficiency_bound: float | None = None
        self.iterations: List[Dict[str, Any]] = []
        self.iteration_listener: Callable[[Dict[str, Any]], None] | None = None
        self.accepted_attempt: str | None = None
        self.rejected_attempts: List[str] = []
        self._attempt_label = SOCP_FIRST_ATTEMPT
        self._run = -1

    def __repr__(self) -> str:
        state = "unsolved" if self.w is None else f"status={self.status!r}, t={self.t_opt:.4g}"
        return f"SOCPOptimizer(candidates={self.NbSample}, n_p={self.n_p}, {state})"

    @staticmethod
    def _picos() -> Any:
        return require("picos", purpose="SOCPOptimizer (the D-optimal posture SOCP)")

    @staticmethod
    def _kiefer_wolfowitz_gap(X: np.ndarray, w: np.ndarray) -> float:
        """``max_i tr(M(w)⁻¹ X_i) − n_p`` (≥ 0, 0 exactly at the D-optimum).

        By concavity of ``log det``, ``log det M* − log det M(w)`` is at most
        this gap (Kiefer–Wolfowitz equivalence theorem), whatever the solver
        status.
        """
        w = np.clip(w, 0.0, None)
        w = w / w.sum()
        M = np.einsum("i,ijk->jk", w, X)
        try:
            L = np.linalg.cholesky(M)
        except np.linalg.LinAlgError:
            return math.inf
        Minv = np.linalg.inv(L).T @ np.linalg.inv(L)
        d = np.einsum("jk,ikj->i", Minv, X)
        return float(max(d.max() - X.shape[1], 0.0))

    def check_pool(self) -> Tuple[int, float]:
        """Rank and log-determinant of the whole pool ``Σ_i X_i``.

        Returns:
            ``(rank, log det)`` (``-inf`` when rank < n_p).
        """
        ld, rank = _batched_logdet(self._X.sum(axis=0))
        return int(rank), float(ld)

    def add_constraints(self) -> None:
        """Create the picos problem and add ``Σ_i w_i ≤ 1`` and ``t ≤ det(Σ_i w_i X_i)^(1/n_p)``.

        Hook: :meth:`solve` calls it once per attempt, before
        :meth:`set_objective`. An override calls ``super().add_constraints()``
        and adds constraints on :attr:`w_var` / :attr:`t_var` to
        :attr:`problem` (e.g. ``self.problem.add_constraint(self.w_var[3] == 0)``
        excludes candidate 3).
        """
        picos = self._picos()
        N, p = self.NbSample, self.n_p
        A = self._X_attempt.reshape(N, p * p).T
        self.problem = picos.Problem()
        self.w_var = picos.RealVariable("w", N, lower=0)
        self.t_var = picos.RealVariable("t", 1)
        self.Mw = (picos.Constant("X", A) * self.w_var).reshaped((p, p))
        self.problem.add_constraint((1 | self.w_var) <= 1)
        self.problem.add_constraint(self.t_var <= picos.DetRootN(self.Mw))

    def set_objective(self) -> None:
        """Maximise ``t`` (hook, called by :meth:`solve` after :meth:`add_constraints`)."""
        self.problem.set_objective("max", self.t_var)

    def _iteration_row(
        self, k: int, pcost: float, dcost: float, gap: float, pres: float, dres: float
    ) -> None:
        """Record one CVXOPT iteration (called while its table is read)."""
        if k == 0:
            self._run += 1
        row = {
            "attempt": self._attempt_label,
            "run": self._run,
            "iteration": k,
            "pcost": pcost,
            "dcost": dcost,
            "gap": gap,
            "pres": pres,
            "dres": dres,
        }
        self.iterations.append(row)
        if self.iteration_listener is not None:
            try:
                self.iteration_listener(row)
            except Exception as exc:  # noqa: BLE001 - a progress hook must not stop the solve
                logger.warning("SOCP iteration listener failed (ignored): %s", exc)

    def _attempt(self, scale: float, options: Dict[str, Any]) -> Tuple[np.ndarray | None, str]:
        """Build (hooks) and solve once on ``X / scale``; ``(raw weights or None, status)``.

        CVXOPT's iteration table is switched on (picos ``verbosity=1``) and
        read from stdout into :attr:`iterations`; the options are otherwise
        the attempt's.
        """
        self._X_attempt = self._X / scale
        self.add_constraints()
        self.set_objective()
        self._run = -1
        with redirect_stdout(_SolverTable(self._iteration_row)):
            solution = self.problem.solve(solver="cvxopt", **dict(options, verbosity=1))
        status = str(getattr(solution, "claimedStatus", "unknown"))
        value = self.w_var.value
        raw = None if value is None else np.asarray(value, dtype=float).ravel()
        if raw is None or raw.size != self.NbSample or not np.all(np.isfinite(raw)):
            return None, status
        if np.clip(raw, 0, None).sum() <= 0:
            return None, status
        return raw, status

    def solve(self) -> Tuple[List[float], Dict[Any, float]]:
        """Solve the relaxation (see the class docstring for the attempts).

        Returns:
            ``(w_list, w_dict_sort)``: weights in candidate order, and
            ``{index: weight}`` sorted by descending weight.

        Raises:
            InfeasibleDesignError: the pool's information matrix is singular
                (some base parameter is not excited by any candidate).
            SolverError: picos/CVXOPT failed in every attempt.
            ImportError: picos or cvxopt missing (with the install command).
        """
        rank, _ = self.check_pool()
        if rank < self.n_p:
            raise InfeasibleDesignError(
                f"Infeasible design: the information matrix of all {self.NbSample} candidates "
                f"has rank {rank} < {self.n_p} base parameters, so no subset can identify them; "
                "add candidate postures that move every calibrated joint"
            )
        self._picos()
        N, p = self.NbSample, self.n_p
        scale = float(np.trace(self._X.sum(axis=0))) / (N * p)
        scale = scale if scale > 0 else 1.0
        plan = [
            (SOCP_FIRST_ATTEMPT, 1.0, {}),
            ("scaled, chol", scale, {"verbosity": 0, "cvxopt_kktsolver": "chol"}),
            ("scaled, ldl", scale, {"verbosity": 0, "cvxopt_kktsolver": "ldl"}),
        ]
        t0 = time.perf_counter()
        attempts: List[str] = []
        accepted = None
        self.iterations = []
        self.accepted_attempt = None
        self.rejected_attempts = attempts
        for label, sc, options in plan:
            self._attempt_label = label
            try:
                raw, status = self._attempt(sc, options)
            except Exception as exc:  # noqa: BLE001 - retried, then reported
                attempts.append(f"{label}: {type(exc).__name__}: {exc}")
                continue
            if raw is None:
                attempts.append(f"{label}: status {status!r}, no usable weights")
                continue
            gap = self._kiefer_wolfowitz_gap(self._X / sc, raw)
            if status == "optimal" or gap <= KW_TOL:
                if status != "optimal":
                    status = f"optimal (certified; cvxopt status {status!r}, {label})"
                accepted = (raw, status, gap)
                self.accepted_attempt = label
                break
            attempts.append(f"{label}: status {status!r}, Kiefer-Wolfowitz gap {gap:.3g}")
        self.solve_time = time.perf_counter() - t0
        if accepted is None:
            raise SolverError(
                "SOCP D-optimal design failed in picos/cvxopt (" + "; ".join(attempts) + "); "
                "check the information matrices (scale, symmetry) or reduce the pool"
            )
        raw, self.status, self.kw_gap = accepted
        self.raw_weight_sum = float(raw.sum())
        if self.normalize_weights:
            wv = np.clip(raw, 0.0, None)
            wv = wv / wv.sum()
        else:
            wv = raw
        self.w = wv
        self.t_opt = detroot(np.einsum("i,ijk->jk", wv, self._X))
        self.d_efficiency_bound = float(np.exp(-self.kw_gap / p))
        logger.info(
            "SOCP solved in %.3f s (status %s): sum of weights %.9f, det root %.6g, "
            "Kiefer-Wolfowitz gap %.2e (D-efficiency >= %.6f)",
            self.solve_time,
            self.status,
            self.raw_weight_sum,
            self.t_opt,
            self.kw_gap,
            self.d_efficiency_bound,
        )
        w_list = [float(x) for x in wv]
        order = np.argsort(-wv, kind="stable")
        w_dict_sort = {self.keys[i]: float(wv[i]) for i in order}
        return w_list, w_dict_sort


# ---------------------------------------------------------------------------
# Detmax exchange heuristic
# ---------------------------------------------------------------------------


class Detmax:
    """Greedy exchange (DETMAX) on ``critD(S) = det(Σ_{i∈S} X_i)^(1/n_p)``.

    Start from a random subset of ``NbChosen`` candidates; repeat — add the
    candidate that increases the criterion most, then remove the member whose
    removal decreases it least — until the added and removed candidates
    coincide. Each completed exchange strictly increases the criterion, so the
    final subset is at least as good as the starting one. Singular subsets are
    compared by (rank, log pseudo-determinant), so the search also climbs out
    of a rank-deficient start.

    Args:
        candidate_pool: ``{index: X_i}`` information matrices (n_p × n_p).
        NbChosen: Subset size (1 ≤ NbChosen < pool size).
        seed: Seed of the random start (``None``: unseeded, as upstream), or a
            ``random.Random`` instance.

    Attributes:
        initial_set: The starting subset (candidate keys).
        cur_set: The current / final subset.
        opt_critD: Criterion history (one value per accepted exchange, the
            starting subset first).
        converged: The last step added and removed the same candidate.

    Raises:
        ValueError: bad pool or ``NbChosen``.
    """

    def __init__(self, candidate_pool: Mapping[Any, Any], NbChosen: int, seed: Any = None):
        if not isinstance(candidate_pool, Mapping):
            raise ValueError(
                "candidate_pool must be a dict {candidate index: X_i}, got "
                f"{type(candidate_pool).__name__}"
            )
        self.pool = candidate_pool
        self.keys = list(candidate_pool.keys())
        self._X = _as_info_stack(candidate_pool, "candidate_pool")
        self._pos = {k: i for i, k in enumerate(self.keys)}
        self.n_p = self._X.shape[1]
        if isinstance(NbChosen, bool) or not isinstance(NbChosen, (int, np.integer)):
            raise ValueError(f"NbChosen must be an integer, got {NbChosen!r}")
        if not 1 <= int(NbChosen) < len(self.keys):
            raise ValueError(
                f"NbChosen must satisfy 1 <= NbChosen < {len(self.keys)} (pool size), "
                f"got {NbChosen}"
            )
        self.NbChosen = int(NbChosen)
        rng = seed if isinstance(seed, random.Random) else random.Random(seed)
        self.initial_set = rng.sample(self.keys, self.NbChosen)
        self.cur_set = list(self.initial_set)
        self.opt_critD: List[float] = []
        self.converged = False

    def __repr__(self) -> str:
        return (
            f"Detmax(candidates={len(self.keys)}, NbChosen={self.NbChosen}, "
            f"iterations={max(len(self.opt_critD) - 1, 0)}, converged={self.converged})"
        )

    def _positions(self, subset: Iterable[Any]) -> np.ndarray:
        subset = list(subset)
        missing = [k for k in subset if k not in self._pos]
        if missing:
            raise AssertionError(
                f"candidates {missing[:10]} are not in the pool (valid keys: candidate indices "
                f"{self.keys[:5]}{' …' if len(self.keys) > 5 else ''})"
            )
        return np.array([self._pos[k] for k in subset], dtype=int)

    def get_critD(self, set: Iterable[Any]) -> float:  # noqa: A002 - figaroh 1.0.2 name
        """``det(Σ_{i∈S} X_i)^(1/n_p)`` (0 for a singular sum).

        Args:
            set: Candidate keys of the subset ``S`` (the parameter name of
                figaroh 1.0.2).

        Raises:
            AssertionError: a member is not in the pool (figaroh 1.0.2 contract).
        """
        pos = self._positions(set)
        return detroot(self._X[pos].sum(axis=0))

    @staticmethod
    def _key(M: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Lexicographic criterion (rank, log pseudo-det) of a stack of matrices."""
        ev = np.linalg.eigvalsh(M)
        top = np.maximum(ev[..., -1:], np.finfo(float).tiny)
        pos = ev > RANK_RTOL * top
        logs = np.where(pos, np.log(np.where(pos, ev, 1.0)), 0.0).sum(axis=-1)
        return pos.sum(axis=-1), logs

    @staticmethod
    def _best(rank: np.ndarray, logs: np.ndarray) -> int:
        top = rank.max()
        cand = np.flatnonzero(rank == top)
        return int(cand[np.argmax(logs[cand])])

    def main_algo(self, max_iter: int = 1000) -> List[float]:
        """Run the exchange until the added and removed candidates coincide.

        Each step adds the outside candidate that maximises the criterion of
        the grown subset, then removes the member whose removal keeps the
        largest criterion. The criterion is :meth:`get_critD` (a subclass
        override of it is used for every comparison, as in figaroh 1.0.2);
        the default compares ``(rank, log pseudo-det)`` lexicographically,
        which orders the subsets as ``critD`` does when the sums are regular
        and still ranks singular sums (``critD = 0`` for all of them).

        Args:
            max_iter: Safety cap on the number of exchanges.

        Returns:
            ``opt_critD``: ``get_critD`` of the subset after each accepted
            exchange (the starting subset's value first).
        """
        hooked = type(self).get_critD is not Detmax.get_critD
        cur = self._positions(self.cur_set)
        keys = np.asarray(self.keys, dtype=object)
        self.opt_critD = [self.get_critD(list(keys[cur]))]
        self.converged = False
        for _ in range(int(max_iter)):
            outside = np.setdiff1d(np.arange(len(self.keys)), cur)
            j = int(outside[self._best_addition(cur, outside, hooked)])
            grown = np.append(cur, j)
            m = int(grown[self._best_removal(grown, hooked)])
            if m == j:
                self.converged = True
                break
            cur = grown[grown != m]
            self.opt_critD.append(self.get_critD(list(keys[cur])))
        else:
            logger.warning("Detmax stopped after max_iter=%d exchanges (not converged)", max_iter)
        self.cur_set = [self.keys[i] for i in cur]
        return self.opt_critD

    def _best_addition(self, cur: np.ndarray, outside: np.ndarray, hooked: bool) -> int:
        """Index into ``outside`` of the candidate whose addition is best."""
        if hooked:
            keys = self.keys
            values = [self.get_critD([keys[i] for i in np.append(cur, k)]) for k in outside]
            return int(np.argmax(values))
        M = self._X[cur].sum(axis=0)
        return self._best(*self._key(M[None] + self._X[outside]))

    def _best_removal(self, grown: np.ndarray, hooked: bool) -> int:
        """Index into ``grown`` of the member whose removal is best."""
        if hooked:
            keys = self.keys
            values = [self.get_critD([keys[i] for i in grown if i != k]) for k in grown]
            return int(np.argmax(values))
        M = self._X[grown].sum(axis=0)
        return self._best(*self._key(M[None] - self._X[grown]))


# ---------------------------------------------------------------------------
# the workflow class
# ---------------------------------------------------------------------------


def _joint_q_writer(model: Any, name: str) -> Tuple[int, int]:
    """``(idx_q, nq)`` of a 1-DoF joint (revolute/prismatic, or continuous cos/sin)."""
    if not isinstance(name, str) or not model.existJointName(name):
        raise ValueError(
            f"calibration_joint_names: {name!r} is not a joint of model {model.name!r} "
            f"(joints: {list(model.names[1:])})"
        )
    jm = model.joints[model.getJointId(name)]
    if jm.nv != 1 or jm.nq not in (1, 2):
        raise ValueError(
            f"calibration_joint_names: joint {name!r} has nq={jm.nq}, nv={jm.nv}; only 1-DoF "
            "joints can be given as one angle per posture"
        )
    return int(jm.idx_q), int(jm.nq)


def _candidate_columns(
    model: Any, joint_names: Any, ignore_unknown: bool
) -> Tuple[List[str], List[int]]:
    """``(names, indices of the used columns)`` of candidate joint names, checked on ``model``."""
    if isinstance(joint_names, str) or not isinstance(joint_names, Sequence):
        raise ValueError(
            f"calibration_joint_names must be a list of joint names, got {joint_names!r}"
        )
    names = [str(n) for n in joint_names]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"calibration_joint_names: duplicated joints {dup}")
    cols = list(range(len(names)))
    if ignore_unknown:
        cols = [i for i, n in enumerate(names) if model.existJointName(n)]
        if not cols:
            raise ValueError(
                f"no column is named after a model joint (columns {names}; joints "
                f"{list(model.names[1:])})"
            )
    unknown = [names[i] for i in cols if not model.existJointName(names[i])]
    if unknown:
        raise ValueError(
            f"calibration_joint_names: {unknown} are not joints of model "
            f"{model.name!r} (joints: {list(model.names[1:])})"
        )
    return names, cols


def _candidate_values(configurations: Any, n_names: int, cols: List[int]) -> np.ndarray:
    """``(n, len(cols))`` finite float values of the candidate rows (columns ``cols``)."""
    if isinstance(configurations, (str, bytes)) or not isinstance(
        configurations, (Sequence, np.ndarray)
    ):
        raise ValueError(
            "calibration_joint_configurations must be a list of configurations, got "
            f"{type(configurations).__name__}"
        )
    bad = [i for i, row in enumerate(configurations) if len(row) != n_names]
    if bad:
        raise ValueError(
            f"calibration_joint_configurations: rows {bad[:10]} do not have "
            f"{n_names} values (one per name in calibration_joint_names)"
        )
    try:
        vals = np.asarray([[row[i] for i in cols] for row in configurations], dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"calibration_joint_configurations: non-numeric value ({exc})") from exc
    if vals.ndim != 2 or vals.shape[0] == 0:
        raise ValueError("calibration_joint_configurations is empty: give one row per posture")
    if not np.all(np.isfinite(vals)):
        rows = sorted({int(r) for r in np.argwhere(~np.isfinite(vals))[:, 0]})
        raise ValueError(f"calibration_joint_configurations: NaN/inf in rows {rows[:10]}")
    return vals


def _design_message(
    n_chosen: int,
    min_nb_chosen: int,
    rank: int,
    n_params: int,
    n_candidates: int,
    method: str,
    log_det: float,
) -> str:
    """One-line outcome of a posture selection (why it is infeasible, or its log det)."""
    if n_chosen < min_nb_chosen:
        return (
            f"Infeasible design, try to increase NbSample: {n_chosen} postures selected "
            f"(method {method!r}) but at least minNbChosen={min_nb_chosen} are required"
        )
    if rank < n_params:
        return (
            f"Infeasible design: the {n_chosen} selected postures give an information "
            f"matrix of rank {rank} < {n_params} base parameters; increase NbSample or use "
            "selection_method='threshold'"
        )
    return (
        f"{n_chosen} postures selected out of {n_candidates} (method {method!r}), "
        f"log det of the information matrix {log_det:.6g}"
    )


class BaseOptimalCalibration:
    """D-optimal selection of calibration postures from a candidate pool.

    Robots subclass it (no abstract method). Subclass hooks (called by the
    base workflow at a fixed point, with fixed arguments and return value):

    * :meth:`load_candidate_configurations` — ``initialize()`` calls it first,
      without arguments, and ignores its return value; it must leave the
      candidate pool in ``q_measured`` (see the method);
    * :meth:`rearrange_rb` and :meth:`sub_info_matrix` — called by
      :meth:`calculate_regressor` to lay out the regressor and build the
      per-posture information matrices.

    Args:
        robot: Object exposing a Pinocchio ``model`` and ``data`` (e.g.
            :class:`figaroh.tools.robot.Robot`).
        config_file: Unified configuration with a ``tasks.calibration`` section
            (or a legacy flat file, deprecated); its
            ``data.sample_configurations_file`` (legacy
            ``sample_configs_file``) names the candidate postures (YAML in the
            candidate schema, or CSV with one column per joint). Relative paths
            are resolved against the working directory, then the config folder.

    Attributes:
        calib_config: Calibration settings (as read by ``BaseCalibration.load_param``).
        minNbChosen: Lower bound on the number of postures:
            ``int(NbJoint·6/c) + 1`` (full_params) or ``int(NbJoint/c) + 1``
            (joint_offset), ``c = calibration_index``.
        q_measured: (NbSample, nq) candidate configurations [rad, m].
        structural_samples: Number of random postures of the structural QR that
            chooses the base columns (None: ``NbSample``, as figaroh 1.0.2; set
            e.g. 100 when the pool is small, so that the structural regressor
            excites every identifiable direction).
        R_rearr: (NbSample·c, n_p) sample-major base regressor at the candidates.
        base_param_names: Names of the n_p base parameters (QR representatives).
        detroot_whole: ``det(R_rearrᵀR_rearr)^(1/n_p) / sqrt(n_p)`` of the pool.
        w_list / w_dict_sort: SOCP weights (candidate order / descending).
        chosen_indices: Selected candidates, descending weight.
        nb_chosen: Their number.
        optimal_configurations: Selected postures in the candidate YAML schema.
        optimal_weights: All weights, candidate order.
        results_data: Summary of the last selection, including ``feasible``
            and ``message`` (see :meth:`calculate_optimal_configurations`).
        optimisation_trace: :class:`~figaroh._run.optimisation_trace.OptimisationTrace`
            of the last SOCP: one entry per CVXOPT iteration (stage ``"socp"``;
            ``objective`` = CVXOPT's primal cost ``pcost`` of picos' conic form,
            ``constraint_violation`` = its primal residual ``pres``; ``extra``:
            ``dcost``, ``gap``, ``dres``, ``attempt``, ``run``) and its outcome
            (``converged``; ``fallback`` when the figaroh 1.0.2 formulation
            failed and a rescaled attempt or a certified non-optimal status
            was accepted; ``failed``).

    Raises:
        CalibrationError: robot without model/data, missing or invalid
            configuration (``"Failed to load configuration: …"``).
    """

    def __init__(self, robot: Any, config_file: str = "config/robot_config.yaml"):
        if not hasattr(robot, "model") or not hasattr(robot, "data"):
            raise CalibrationError(
                "robot must expose a Pinocchio 'model' and 'data' (e.g. figaroh.tools.robot.Robot)"
            )
        self.robot = robot
        self.model = robot.model
        self.data = robot.data
        self._config_file_path = str(config_file)
        self.load_param(config_file)
        self.optimal_configurations: Dict[str, Any] | None = None
        self.optimal_weights: List[float] | None = None
        sc = self.calib_config.get("sample_configs_file")
        unset = sc is None or str(sc).strip() in ("", "None")
        self._sampleConfigs_file = None if unset else self._resolve(sc)
        level = self.calib_config.get("calib_model")
        n_act = len(self.calib_config["actJoint_idx"])
        c = int(self.calib_config["calibration_index"])
        if level == "full_params":
            self.minNbChosen = int(n_act * 6 / c) + 1
        elif level == "joint_offset":
            self.minNbChosen = int(n_act / c) + 1
        else:  # pragma: no cover - the config parsers reject other levels
            raise CalibrationError(
                f"calibration_level {level!r} is not supported by optimal posture selection; "
                "use 'full_params' or 'joint_offset'"
            )
        self.structural_samples: int | None = None
        self._configs: Dict[str, Any] | None = None
        self.q_measured: np.ndarray | None = None
        self.R_b: np.ndarray | None = None
        self.R_rearr: np.ndarray | None = None
        self._subX_list: List[np.ndarray] | None = None
        self._subX_dict: Dict[int, np.ndarray] | None = None
        self._regressor_key: Tuple[Any, ...] | None = None
        self.base_param_names: List[str] = []
        self.detroot_whole: float | None = None
        self.socp: SOCPOptimizer | None = None
        self.w_list: List[float] | None = None
        self.w_dict_sort: Dict[int, float] | None = None
        self.chosen_indices: List[int] | None = None
        self.nb_chosen: int | None = None
        self.o1_history: List[float] | None = None
        self.eps_opt: float | None = None
        self.results_data: Dict[str, Any] = {}
        self.optimisation_trace = OptimisationTrace()
        self.figure: Any = None  # matplotlib Figure of the last plot()

    def __repr__(self) -> str:
        cfg = self.calib_config
        return (
            f"{self.__class__.__name__}(robot={getattr(self.model, 'name', '?')!r}, "
            f"level={cfg.get('calib_model')!r}, frames={cfg.get('start_frame')!r}->"
            f"{cfg.get('end_frame')!r}, candidates={cfg.get('NbSample')}, "
            f"n_base={len(self.base_param_names) or '?'}, minNbChosen={self.minNbChosen}, "
            f"chosen={self.nb_chosen})"
        )

    # ------------------------------------------------------------------ configuration
    def load_param(self, config_file: str, setting_type: str = "calibration") -> None:
        """Load ``calib_config`` exactly as ``BaseCalibration.load_param`` does.

        The **calibration** task is read (``tasks.optimal_configuration`` keys
        are unused).

        Raises:
            CalibrationError: ``"Configuration file not found: …"`` or
                ``"Failed to load configuration: …"``.
        """
        self._config_file_path = str(config_file)
        self.calib_config = load_calibration_config(self.robot, config_file, setting_type)

    def _resolve(self, value: Any) -> str:
        p = Path(str(value)).expanduser()
        if p.is_absolute() or p.exists():
            return str(p)
        alt = Path(self._config_file_path).resolve().parent / p
        return str(alt) if alt.exists() else str(p)

    def set_candidate_file(self, path: str | Path) -> str:
        """Use another candidate-posture file (YAML candidate schema or CSV).

        Args:
            path: File path.

        Returns:
            The path used (clears any loaded candidates).
        """
        resolved = self._resolve(path)
        self._sampleConfigs_file = resolved
        self.calib_config["sample_configs_file"] = resolved
        self._regressor_key = None
        self.R_rearr = None
        return resolved

    # ------------------------------------------------------------------ candidates
    def initialize(self) -> None:
        """:meth:`load_candidate_configurations` → :meth:`calculate_regressor` →
        :meth:`calculate_detroot_whole`."""
        self.load_candidate_configurations()
        self.calculate_regressor()
        self.calculate_detroot_whole()

    def load_candidate_configurations(self) -> None:
        """Read the candidate postures named by ``sample_configs_file`` (subclass hook).

        * YAML (name contains ``"yaml"``/``"yml"``): keys
          ``calibration_joint_names`` (list of 1-DoF joint names) and
          ``calibration_joint_configurations`` (one list of joint values
          [rad or m] per candidate);
        * CSV (name contains ``"csv"``): when a subclass has set
          ``self._data_path``, that calibration data file is read with
          :func:`~figaroh.calibration.data_loader.load_data` (its
          configurations are the candidates, as in figaroh 1.0.2); otherwise
          the candidate file itself: a header row, columns named after model
          joints are used (others ignored), one candidate per row.

        Each candidate is the neutral configuration with the named joints
        written at their ``idx_q`` (continuous joints as cos/sin). Sets
        ``_configs``, ``q_measured`` and ``calib_config["NbSample"]``.

        Hook contract: :meth:`initialize` calls this method first, without
        arguments, and ignores its return value. An override must set
        ``q_measured`` ((n, nq) configurations [rad, m]); it should set
        ``calib_config["NbSample"] = n`` (otherwise it is set from
        ``q_measured`` with a warning) and ``_configs`` (the candidate schema,
        used to write the selected postures; without it the selected rows of
        ``q_measured`` are written). The indices of the selection
        (``chosen_indices``) are rows of ``q_measured``.

        Raises:
            ValueError: no file configured ("sample_configs_file not specified
                in configuration"), unsupported format, malformed content
                (unknown joint, ragged rows, non-finite values).
            FileNotFoundError: the file does not exist.
        """
        path = self._sampleConfigs_file
        if path is None or str(path).strip() in ("", "None"):
            raise ValueError(
                "sample_configs_file not specified in configuration (set "
                "tasks.calibration.data.sample_configurations_file, or call "
                "set_candidate_file(path))"
            )
        name = str(path).lower()
        if "yaml" in name or name.endswith(".yml"):
            fmt = "yaml"
        elif "csv" in name:
            fmt = "csv"
        else:
            raise ValueError(f"Data file format not supported: {path!r}. Use CSV or YAML format.")
        data_path = getattr(self, "_data_path", None)
        if fmt == "csv" and data_path:
            self._load_candidates_from_data(data_path)
            return
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(
                f"candidate configuration file {str(p)!r} does not exist (check "
                "sample_configurations_file or call set_candidate_file(path))"
            )
        if fmt == "yaml":
            names, configs = self._read_yaml_candidates(p)
        else:
            names, configs = self._read_csv_candidates(p)
        self.set_candidate_configurations(names, configs, ignore_unknown=fmt == "csv")
        logger.info("loaded %d candidate postures from %s", len(configs), p)

    def _load_candidates_from_data(self, data_path: Any) -> None:
        """Candidates = the configurations of a calibration data CSV (``load_data``)."""
        _, q = load_data(str(data_path), self.model, self.calib_config)
        self.q_measured = np.asarray(q, dtype=float)
        self.calib_config["NbSample"] = int(self.q_measured.shape[0])
        self._regressor_key = None
        self.R_rearr = None
        logger.info("loaded %d candidate postures from %s", len(self.q_measured), data_path)

    @staticmethod
    def _read_yaml_candidates(p: Path) -> Tuple[List[str], Any]:
        try:
            raw = load_yaml_file(p)
        except yaml.YAMLError as exc:
            raise ValueError(f"{p}: invalid YAML ({exc})") from exc
        if not isinstance(raw, Mapping) or any(k not in raw for k in _SCHEMA_KEYS):
            found = sorted(raw) if isinstance(raw, Mapping) else type(raw).__name__
            raise ValueError(
                f"{p}: a candidate file needs the keys {list(_SCHEMA_KEYS)}, found {found}"
            )
        return raw["calibration_joint_names"], raw["calibration_joint_configurations"]

    @staticmethod
    def _read_csv_candidates(p: Path) -> Tuple[List[str], List[List[str]]]:
        text = read_csv_text(p, "candidate configurations CSV")
        rows = [
            r for r in csv_rows(p, text, "candidate configurations CSV") if any(map(str.strip, r))
        ]
        if len(rows) < 2:
            raise ValueError(f"{p}: needs a header row and at least one candidate row")
        return [c.strip() for c in rows[0]], rows[1:]

    def set_candidate_configurations(
        self, joint_names: Sequence[str], configurations: Any, *, ignore_unknown: bool = False
    ) -> np.ndarray:
        """Set the candidate pool from joint names and one row of values per candidate.

        Args:
            joint_names: Names of the joints whose values are given.
            configurations: (n, len(joint_names)) joint values [rad or m].
            ignore_unknown: Drop columns whose name is not a model joint
                (CSV files) instead of raising.

        Returns:
            ``q_measured`` (n, nq).

        Raises:
            ValueError: unknown/duplicate joint names, ragged or non-finite values.
        """
        names, cols = _candidate_columns(self.model, joint_names, ignore_unknown)
        vals = _candidate_values(configurations, len(names), cols)
        used = [names[i] for i in cols]
        q = np.tile(np.asarray(pin.neutral(self.model), dtype=float), (vals.shape[0], 1))
        for k, n in enumerate(used):
            iq, nq = _joint_q_writer(self.model, n)
            if nq == 1:
                q[:, iq] = vals[:, k]
            else:
                q[:, iq], q[:, iq + 1] = np.cos(vals[:, k]), np.sin(vals[:, k])
        act_names = [str(self.model.names[j]) for j in self.calib_config["actJoint_idx"]]
        fixed = [n for n in act_names if n not in used]
        if fixed:
            logger.info("active joints %s keep their neutral value in every candidate", fixed)
        self._configs = {
            "calibration_joint_names": used,
            "calibration_joint_configurations": vals.tolist(),
        }
        self.q_measured = q
        self.calib_config["NbSample"] = int(vals.shape[0])
        self._regressor_key = None
        self.R_rearr = None
        return q

    # ------------------------------------------------------------------ regressor
    def _require_candidates(self) -> np.ndarray:
        """Check the pool left by (a possibly overridden) ``load_candidate_configurations``.

        Returns:
            The (n_candidates, nq) candidate postures (also stored as ``q_measured``).
        """
        if self.q_measured is None:
            raise ValueError(
                "no candidate postures loaded: call load_candidate_configurations() "
                "(or initialize()) first"
            )
        q = np.atleast_2d(np.asarray(self.q_measured, dtype=float))
        if q.ndim != 2 or q.shape[1] != self.model.nq or q.shape[0] == 0:
            raise ValueError(
                f"q_measured has shape {q.shape}; expected (n_candidates, nq={self.model.nq}) "
                "(one full configuration per candidate posture)"
            )
        self.q_measured = q
        nb = self.calib_config.get("NbSample")
        if nb is None or int(nb) != q.shape[0]:
            logger.warning(
                "calib_config['NbSample'] = %s but q_measured holds %d candidates; using %d",
                nb,
                q.shape[0],
                q.shape[0],
            )
            self.calib_config["NbSample"] = int(q.shape[0])
        return q

    def _candidate_blocks(self, q: np.ndarray) -> np.ndarray:
        """(N, 6, n_cols) kinematic regressor (full_params) or Jacobian (joint_offset).

        Same construction as ``calculate_identifiable_kinematics_model`` but
        per posture, without removing rows.
        """
        cfg = self.calib_config
        start = cfg.get("start_frame", "universe")
        end = cfg["end_frame"]
        use_jac = cfg.get("calib_model") == "joint_offset"
        out = []
        for qi in q:
            if start == "universe":
                _, _, R, J = ct.calculate_kinematics_model(qi, self.model, self.data, cfg)
                out.append(J if use_jac else R)
            elif use_jac:
                out.append(ct.get_rel_jac(self.model, self.data, start, end, qi))
            else:
                out.append(ct.get_rel_kinreg(self.model, self.data, start, end, qi))
        return np.stack(out)

    def calculate_regressor(self) -> bool:
        """Base kinematic regressor at the candidates and the per-posture information.

        As figaroh 1.0.2: ``calculate_base_kinematics_regressor(q_measured,
        model, data, calib_config)`` (QR tolerance 1e-8) chooses the base
        columns from its structural regressor at ``NbSample`` seeded random
        postures (``structural_samples`` when set) and returns ``R_b``, the
        component-major base regressor at the candidates (``R_b[NbSample·j +
        i]`` = component ``j`` of candidate ``i``). It runs on a copy of
        ``calib_config``, so ``param_name`` and the ``base_mapping_*`` keys of
        the instance are not modified. When that function dropped rows (a
        component that is identically zero at some candidate) the regressor
        is rebuilt per candidate with the same columns, so that every candidate
        keeps its ``c`` rows. Then ``R_rearr = self.rearrange_rb(R_b,
        calib_config)`` and ``(_subX_list, _subX_dict) =
        self.sub_info_matrix(R_rearr, calib_config)`` (``X_i = R_iᵀ R_i``).

        Returns:
            True.
        """
        q = self._require_candidates()
        n = int(self.calib_config["NbSample"])
        cfg = copy.copy(self.calib_config)
        cfg["param_name"] = []
        if self.structural_samples is not None:
            cfg["NbSample"] = int(self.structural_samples)
        _, R_b, _, _, _ = ct.calculate_base_kinematics_regressor(q, self.model, self.data, cfg)
        base = list(cfg["base_mapping_row_names"])
        c = int(self.calib_config["calibration_index"])
        R_b = np.asarray(R_b, dtype=float)
        if R_b.shape != (n * c, len(base)):
            if cfg.get("calib_model") == "full_params":
                all_names = list(get_fullparam_offset([str(x) for x in self.model.names[1:]]))
            else:
                all_names = list(get_joint_offset(self.model))
            idx = [all_names.index(b) for b in base]
            mask = np.asarray(self.calib_config["measurability"], dtype=bool)
            blocks = self._candidate_blocks(q)[:, mask][:, :, idx]  # (N, c, n_p)
            logger.info(
                "calculate_base_kinematics_regressor returned %d rows for %d candidates × %d "
                "components (zero rows removed); rebuilding the regressor per candidate",
                R_b.shape[0],
                n,
                c,
            )
            R_b = blocks.transpose(1, 0, 2).reshape(blocks.shape[1] * n, -1)
        self.base_param_names = base
        self.R_b = R_b
        self.R_rearr = np.asarray(self.rearrange_rb(self.R_b, self.calib_config), dtype=float)
        self._subX_list, self._subX_dict = self.sub_info_matrix(self.R_rearr, self.calib_config)
        self._regressor_key = self._q_key()
        logger.info(
            "candidate regressor: %d postures × %d components, %d base parameters",
            n,
            c,
            len(base),
        )
        return True

    def rearrange_rb(self, R_b: np.ndarray, calib_config: Mapping[str, Any]) -> np.ndarray:
        """Component-major base regressor → sample-major rows (hook).

        Called by :meth:`calculate_regressor`.
        ``R_rearr[i·c + j] = R_b[j·NbSample + i]``, ``c = calibration_index``:
        rows ``i·c … (i+1)·c − 1`` are the ``c`` measured components of
        posture ``i``. See :func:`rearrange_rb`.

        Args:
            R_b: (c·NbSample, n_p) base regressor, component-major.
            calib_config: ``NbSample`` and ``calibration_index``.

        Returns:
            (NbSample·c, n_p) sample-major regressor.
        """
        return rearrange_rb(R_b, calib_config)

    def sub_info_matrix(
        self, R: np.ndarray, calib_config: Mapping[str, Any]
    ) -> Tuple[List[np.ndarray], Dict[int, np.ndarray]]:
        """Per-posture information matrices ``X_i = R_iᵀ R_i`` (hook).

        Called by :meth:`calculate_regressor`. ``R_i = R[i·c : (i+1)·c]``,
        ``c = calibration_index``. See
        :func:`sub_info_matrix`.

        Args:
            R: (NbSample·c, n_p) sample-major regressor.
            calib_config: ``NbSample`` and ``calibration_index``.

        Returns:
            ``(subX_list, subX_dict)``: the NbSample (n_p × n_p) matrices as a
            list and as a dict keyed ``0 … NbSample − 1``.
        """
        return sub_info_matrix(R, calib_config)

    def _q_key(self) -> Tuple[Any, ...]:
        q = _required(self.q_measured, "no candidate postures loaded")
        return (q.shape, hash(q.tobytes()), self.calib_config.get("calib_model"))

    def _ensure_regressor(self) -> None:
        """Compute the regressor when missing or stale.

        figaroh 1.0.2 recomputed it at every :meth:`calculate_detroot_whole`
        and :meth:`calculate_optimal_configurations`; it is cached here, except
        when a subclass overrides :meth:`calculate_regressor`, which is then
        called at each of those points, as in 1.0.2.
        """
        overridden = (
            type(self).calculate_regressor is not BaseOptimalCalibration.calculate_regressor
        )
        if overridden or self.R_rearr is None or self._regressor_key != self._q_key():
            self.calculate_regressor()

    @property
    def n_base_params(self) -> int:
        """Number of base parameters ``n_p`` (0 before :meth:`calculate_regressor`)."""
        return len(self.base_param_names)

    def calculate_detroot_whole(self) -> float:
        """``detroot_whole = det(R_rearrᵀ R_rearr)^(1/n_p) / sqrt(n_p)`` of the whole pool.

        ``0.0`` (with a warning and ``results_data["feasible"] = False``) when
        the pool does not identify every base parameter.

        Returns:
            The value (also stored as ``detroot_whole``).
        """
        self._require_candidates()
        self._ensure_regressor()
        R = _required(self.R_rearr, _NO_REGRESSOR)
        M = R.T @ R
        n_p = M.shape[0]
        self.detroot_whole = detroot(M) / math.sqrt(n_p)
        if self.detroot_whole == 0.0:
            _, rank = _batched_logdet(M)
            msg = (
                f"Infeasible design: the {self.calib_config['NbSample']} candidates give an "
                f"information matrix of rank {int(rank)} < {n_p} base parameters; add "
                "candidate postures that move every calibrated joint"
            )
            self.results_data.update({"feasible": False, "message": msg})
            logger.warning(msg)
        return self.detroot_whole

    # ------------------------------------------------------------------ optimisation
    def calculate_optimal_configurations(
        self,
        selection_method: str = "threshold",
        iroc_rel_tol: float = 1e-3,
        iroc_patience: int = 3,
    ) -> bool:
        """Solve the SOCP relaxation and round its weights to a posture subset.

        Selection:

        * ``"threshold"``: every candidate with weight > ``eps_opt = 1e-5``,
          in descending-weight order;
        * ``"iroc"``: walk the ranking, ``O1(k) = det(Σ_{top-k} w_i X_i)^(1/n_p)
          / sqrt(k)`` for ``k = minNbChosen … N``; stop when ``iroc_patience``
          consecutive relative gains ``(O1(k) − O1(k−1))/O1(k−1)`` are below
          ``iroc_rel_tol`` and keep ``max(minNbChosen, k − patience)`` postures
          (``o1_history`` holds the values visited).

        Sets ``chosen_indices``, ``nb_chosen``, ``optimal_configurations``
        (candidate schema, descending weight), ``optimal_weights`` (all
        weights, candidate order) and ``results_data`` with ``feasible``,
        ``message``, ``n_chosen``, ``min_nb_chosen``, ``n_base_params``,
        ``rank``, ``log_det_information`` (``log det Σ_{i∈S} X_i`` of the
        unweighted subset), ``det_root_criterion`` and ``solve_time_s``.

        Args:
            selection_method: ``"threshold"`` or ``"iroc"``.
            iroc_rel_tol: Relative-gain tolerance of IROC (> 0).
            iroc_patience: Number of consecutive small gains before stopping (≥ 1).

        Returns:
            True.

        Raises:
            ValueError: unknown ``selection_method`` or bad IROC settings.
            InfeasibleDesignError: fewer than ``minNbChosen`` postures selected
                or a singular selected information matrix (the state and the
                message are stored in ``results_data`` first).
        """
        if selection_method not in ("threshold", "iroc"):
            raise ValueError(
                f"selection_method must be 'threshold' or 'iroc', got {selection_method!r}"
            )
        self._require_candidates()
        self._ensure_regressor()
        socp = SOCPOptimizer(_required(self._subX_dict, _NO_REGRESSOR), self.calib_config)
        self.socp = socp
        self.optimisation_trace = OptimisationTrace()
        entries: List[TraceEntry] = []
        socp.iteration_listener = lambda row: self._socp_iteration(row, entries)
        try:
            w_list, self.w_dict_sort = socp.solve()
        except InfeasibleDesignError as exc:
            self.results_data = {"feasible": False, "message": str(exc)}
            self._end_socp_stage(entries, "failed", str(exc))
            logger.error("%s", exc)
            raise
        except BaseException as exc:
            self._end_socp_stage(entries, "failed", f"{type(exc).__name__}: {exc}")
            raise
        if socp.accepted_attempt == SOCP_FIRST_ATTEMPT and socp.status == "optimal":
            self._end_socp_stage(entries, "converged", f"CVXOPT status {socp.status}")
        else:
            rejected = "; ".join(socp.rejected_attempts) or "not rejected"
            self._end_socp_stage(
                entries,
                "fallback",
                f"accepted '{socp.accepted_attempt}' with status {socp.status!r} "
                f"(figaroh 1.0.2 formulation: {rejected})",
            )
        self.w_list = w_list
        logger.info("SOCP solve time: %.3f s", socp.solve_time)
        if selection_method == "threshold":
            chosen = self._select_by_threshold()
        else:
            chosen = self._select_by_iroc(iroc_rel_tol, iroc_patience)
        X = np.asarray(self._subX_list)
        n_p = X.shape[1]
        ld, rank = _batched_logdet(X[chosen].sum(axis=0)) if chosen else (-np.inf, 0)
        rank = int(rank)
        feasible = len(chosen) >= self.minNbChosen and rank == n_p
        message = _design_message(
            len(chosen), int(self.minNbChosen), rank, n_p, len(X), selection_method, float(ld)
        )
        self.results_data = self._design_summary(
            feasible, message, selection_method, chosen, len(X), n_p, rank, float(ld)
        )
        if not feasible:
            logger.error("%s", message)
            raise InfeasibleDesignError(message)
        logger.info("%s", message)
        self._store_selection(chosen)
        self.optimal_weights = list(w_list)
        return True

    def on_iteration(self, entry: TraceEntry) -> None:
        """Hook called after each recorded SOCP iteration (a progress hook).

        The default does nothing. Override it to show progress (the
        ``figaroh postures`` command updates its progress bar here); it must
        only read. An exception it raises is logged and ignored.

        Args:
            entry: The iteration just recorded (stage ``"socp"``, CVXOPT
                iteration, primal cost, primal residual).
        """

    def _socp_iteration(self, row: Mapping[str, Any], entries: List[TraceEntry]) -> None:
        """One CVXOPT iteration: a trace entry, then :meth:`on_iteration`."""
        entry = TraceEntry(
            stage="socp",
            iteration=int(row["iteration"]),
            objective=float(row["pcost"]),
            constraint_violation=float(row["pres"]),
            extra={k: row[k] for k in ("dcost", "gap", "dres", "attempt", "run")},
        )
        entries.append(entry)
        self.on_iteration(entry)

    def _end_socp_stage(self, entries: Sequence[TraceEntry], status: str, message: str) -> None:
        """Store the SOCP's entries and outcome in :attr:`optimisation_trace` (and log it)."""
        self.optimisation_trace = (
            OptimisationTrace()
            .with_entries(*entries)
            .with_outcome(StageOutcome("socp", status, message))
        )
        logger.info("SOCP: %s — %s", status, message)

    def _design_summary(
        self,
        feasible: bool,
        message: str,
        selection_method: str,
        chosen: List[int],
        n_candidates: int,
        n_p: int,
        rank: int,
        ld: float,
    ) -> Dict[str, Any]:
        """``results_data`` of a selection: outcome, sizes, log det and SOCP diagnostics."""
        socp = _required(self.socp, _NO_SOLUTION)
        return {
            "feasible": bool(feasible),
            "message": message,
            "selection_method": selection_method,
            "chosen_indices": [int(i) for i in chosen],
            "n_chosen": len(chosen),
            "n_candidates": n_candidates,
            "min_nb_chosen": int(self.minNbChosen),
            "n_base_params": int(n_p),
            "base_param_names": list(self.base_param_names),
            "rank": rank,
            "log_det_information": ld if feasible else None,
            "det_root_criterion": float(np.exp(ld / n_p)) if feasible else 0.0,
            "detroot_whole": self.detroot_whole,
            "socp_det_root": socp.t_opt,
            "weight_sum": float(np.sum(_required(self.w_list, _NO_SOLUTION))),
            "solve_time_s": socp.solve_time,
            "solver_status": socp.status,
            "kiefer_wolfowitz_gap": socp.kw_gap,
            "d_efficiency_bound": socp.d_efficiency_bound,
        }

    def _store_selection(self, chosen: List[int]) -> None:
        """Set ``chosen_indices``, ``nb_chosen`` and ``optimal_configurations``."""
        self.chosen_indices = [int(i) for i in chosen]
        self.nb_chosen = len(chosen)
        src = self._configs or {}
        configs = src.get("calibration_joint_configurations")
        if configs is None:
            configs = _required(self.q_measured, "no candidate postures loaded").tolist()
        self.optimal_configurations = dict(src)
        self.optimal_configurations["calibration_joint_configurations"] = [
            list(configs[i]) for i in chosen
        ]

    def _select_by_threshold(self) -> List[int]:
        self.eps_opt = EPS_OPT
        w = _required(self.w_dict_sort, _NO_SOLUTION)
        return [int(k) for k, v in w.items() if v > EPS_OPT]

    def _weighted_cumulative(self) -> Tuple[np.ndarray, np.ndarray]:
        """Ranked keys and ``O1(k)`` for ``k = 0 … N`` (``O1(0) = 0``)."""
        w_sorted = _required(self.w_dict_sort, _NO_SOLUTION)
        keys = np.array([int(k) for k in w_sorted], dtype=int)
        w = np.array(list(w_sorted.values()))
        X = np.asarray(self._subX_list)[keys] * w[:, None, None]
        cum = np.cumsum(X, axis=0)
        ld, _ = _batched_logdet(cum)
        n_p = X.shape[1]
        k = np.arange(1, len(keys) + 1)
        with np.errstate(over="ignore"):
            o1 = np.where(np.isfinite(ld), np.exp(ld / n_p), 0.0) / np.sqrt(k)
        return keys, np.concatenate([[0.0], o1])

    def _select_by_iroc(self, rel_tol: float = 1e-3, patience: int = 3) -> List[int]:
        if not (isinstance(rel_tol, (int, float)) and math.isfinite(rel_tol) and rel_tol > 0):
            raise ValueError(f"iroc_rel_tol must be a finite number > 0, got {rel_tol!r}")
        if (
            isinstance(patience, bool)
            or not isinstance(patience, (int, np.integer))
            or patience < 1
        ):
            raise ValueError(f"iroc_patience must be an integer >= 1, got {patience!r}")
        keys, o1 = self._weighted_cumulative()
        N = len(keys)
        k0 = min(self.minNbChosen, N)
        count, k_chosen, history = 0, N, []
        for k in range(k0, N + 1):
            history.append(float(o1[k]))
            prev = o1[k - 1]
            gain = math.inf if prev <= 1e-12 else (o1[k] - prev) / prev
            count = count + 1 if gain < rel_tol else 0
            if count >= patience:
                k_chosen = max(self.minNbChosen, k - patience)
                break
        self.o1_history = history
        return [int(i) for i in keys[:k_chosen]]

    def solve(
        self,
        save_file: bool = False,
        selection_method: str = "threshold",
        *,
        plotting: bool = True,
        **selection_kwargs: Any,
    ) -> None:
        """Initialise if needed, select the postures, optionally save, then plot.

        Args:
            save_file: Call :meth:`save_results` (failures are logged as warnings).
            selection_method: ``"threshold"`` or ``"iroc"``.
            plotting: Call :meth:`plot` (shows the figure only when an
                interactive matplotlib backend is active).
            **selection_kwargs: ``iroc_rel_tol``, ``iroc_patience``.
        """
        if self.R_rearr is None:
            self.initialize()
        self.calculate_optimal_configurations(selection_method, **selection_kwargs)
        if save_file:
            try:
                self.save_results()
            except Exception as exc:  # noqa: BLE001 - documented: warning only
                logger.warning("saving the optimal configurations failed: %s", exc)
        if plotting:
            self.plot()

    # ------------------------------------------------------------------ outputs
    def _require_solution(self) -> None:
        if self.w_dict_sort is None or self.chosen_indices is None:
            raise AssertionError(
                "no optimal configuration yet: call solve() or calculate_optimal_configurations()"
            )

    def criterion_curve(self) -> Tuple[np.ndarray, np.ndarray]:
        """Normalised D-criterion of the weight-ranked prefixes.

        ``det_root_list[k] = det(Σ_{top-k} w_i X_i)^(1/n_p) / sqrt(k)`` for
        ``k = minNbChosen … NbSample``.

        Returns:
            ``(k_values, det_root_list)``.
        """
        self._require_solution()
        _, o1 = self._weighted_cumulative()
        N = len(o1) - 1
        ks = np.arange(min(self.minNbChosen, N), N + 1)
        return ks, o1[ks]

    def plot(self, show: bool | None = None, save_path: str | Path | None = None) -> bool:
        """D-optimality criterion of the ranked prefixes and the sorted weights.

        Top panel: ``(detroot_whole / det_root_list[-1]) · det_root_list`` (the
        criterion normalised to the whole pool; unnormalised, with a warning,
        when the last value is 0); bottom panel: the sorted weights (log
        scale).

        Args:
            show: ``plt.show()`` — ``None``: only with an interactive backend.
            save_path: Optional PNG path.

        Returns:
            True.
        """
        self._require_solution()
        import matplotlib
        import matplotlib.pyplot as plt

        ks, drl = self.criterion_curve()
        if drl[-1] > 0 and self.detroot_whole:
            curve, label = (self.detroot_whole / drl[-1]) * drl, "normalised to the whole pool"
        else:
            logger.warning("criterion of the whole ranking is 0: plotting it unnormalised")
            curve, label = drl, "unnormalised"
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 8))
        ax1.plot(ks, curve, "-o", ms=2)
        ax1.axvline(self.nb_chosen, color="r", ls="--", label=f"{self.nb_chosen} chosen")
        ax1.set_title("D-optimality criterion")
        ax1.set_xlabel("number of postures (weight-ranked)")
        ax1.set_ylabel(f"det root / sqrt(k) ({label})")
        ax1.legend()
        ax1.grid(True, alpha=0.3)
        ws = np.array(list(_required(self.w_dict_sort, _NO_SOLUTION).values()))
        ax2.scatter(np.arange(ws.size), np.clip(ws, 1e-16, None), s=4)
        ax2.set_yscale("log")
        ax2.set_title("Weight values (log)")
        ax2.set_xlabel("candidate (sorted)")
        ax2.grid(True, alpha=0.3)
        fig.tight_layout()
        if save_path is not None:
            fmt = Path(save_path).suffix[1:].lower() or None
            atomic_write(save_path, lambda fh: fig.savefig(fh, format=fmt, dpi=100), binary=True)
        backend = matplotlib.get_backend().lower()
        interactive = "agg" not in backend and backend not in ("pdf", "ps", "svg", "template")
        if show if show is not None else interactive:
            plt.show()
        else:
            plt.close(fig)
        self.figure = fig
        return True

    def plot_results(self, output_dir: str | Path | None = None) -> Any:
        """Results-manager plot of the weights and criterion, bar-chart fallback.

        Args:
            output_dir: Folder to write the PNG into; None (default) writes
                nothing (the figure is shown with a display, left drawn and
                open otherwise).

        Returns:
            The results manager's list of written files, or the fallback figure.
        """
        self._require_solution()
        try:
            rm = ResultsManager("optimal_calibration", self._robot_name())
            _, drl = self.criterion_curve()
            return rm.plot_optimal_calibration_results(
                self.optimal_configurations,
                self.optimal_weights,
                condition_numbers=drl,
                output_dir=output_dir,
                raise_errors=True,
            )
        except Exception as exc:  # noqa: BLE001 - documented fallback
            logger.warning("results-manager plot failed (%s); using bar charts", exc)
            import matplotlib.pyplot as plt

            nb = _required(self.nb_chosen, _NO_SOLUTION)
            w_list = _required(self.w_list, _NO_SOLUTION)
            chosen = _required(self.chosen_indices, _NO_SOLUTION)
            fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
            a1.bar(range(nb), [w_list[i] for i in chosen])
            a1.set_title("weights of the chosen postures")
            a2.bar(["chosen", "minimum"], [nb, self.minNbChosen])
            a2.set_title("number of postures")
            plt.close(fig)
            return fig

    def count_optimal_configurations(self) -> int:
        """Number of candidates whose SOCP weight exceeds the selection threshold.

        The threshold is ``eps_opt`` (1e-5, :data:`EPS_OPT`); this is the size
        of the ``"threshold"`` selection whatever method was used (with
        ``"iroc"``, ``nb_chosen`` may be smaller).

        Returns:
            The count.

        Raises:
            AssertionError: no solution yet (call :meth:`solve`).
        """
        if self.w_list is None:
            raise AssertionError(
                "no SOCP weights yet: call solve() or calculate_optimal_configurations()"
            )
        eps = EPS_OPT if self.eps_opt is None else self.eps_opt
        return int(sum(1 for w in self.w_list if w > eps))

    def get_optimal_output_dir(self, default: str = "results") -> str:
        """Output folder of the posture selection, from the configuration.

        Read from the ``tasks.optimal_configuration.output`` section of the
        unified configuration file: ``output_dir`` (or ``directory``) as
        given, else the folder of ``output_file``; ``default`` when the file,
        the task or both keys are absent (or the configuration is a legacy
        file).

        Args:
            default: Folder used when the configuration names none.

        Returns:
            The folder path (relative paths are relative to the working
            directory); it is not created.
        """
        try:
            raw = load_yaml_file(self._config_file_path)
        except (OSError, yaml.YAMLError):
            return str(default)
        tasks = raw.get("tasks") if isinstance(raw, Mapping) else None
        task = tasks.get("optimal_configuration") if isinstance(tasks, Mapping) else None
        output = task.get("output") if isinstance(task, Mapping) else None
        if not isinstance(output, Mapping):
            return str(default)
        for key in ("output_dir", "directory"):
            value = output.get(key)
            if isinstance(value, (str, Path)) and str(value).strip():
                return str(value)
        value = output.get("output_file")
        if isinstance(value, (str, Path)) and str(value).strip():
            parent = str(Path(str(value)).parent)
            return parent if parent not in ("", ".") else str(default)
        return str(default)

    def _robot_name(self) -> str:
        return str(self.calib_config.get("robot_name") or getattr(self.model, "name", "robot"))

    def save_optimal_configurations(self, path: str | Path) -> str:
        """Write the selected postures atomically in the candidate YAML schema.

        ``calibration_joint_names`` and ``calibration_joint_configurations``
        (descending weight; one flow-style list per posture, floats written
        exactly) — the file can be used as a candidate file again.

        Args:
            path: Destination file (its folder must exist).

        Returns:
            ``str(path)``.
        """
        self._require_solution()
        oc = _required(self.optimal_configurations, _NO_SOLUTION)
        doc = {
            "calibration_joint_names": [str(n) for n in oc["calibration_joint_names"]],
            "calibration_joint_configurations": [
                [float(v) for v in row] for row in oc["calibration_joint_configurations"]
            ],
        }
        text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=1000)
        return atomic_write_text(path, text)

    def save_results(self, output_dir: str | Path | None = None) -> Dict[str, str] | None:
        """Save the selection.

        ``output_dir=None`` uses :meth:`get_optimal_output_dir` (the folder named
        by the configuration, else ``"results"``). Writes
        ``<output_dir>/<robot>_optimal_configurations.yaml`` (candidate
        schema, atomically) and, through
        ``ResultsManager("optimal_calibration", robot).save_results(..., save_formats=["yaml",
        "csv"])``, a results dictionary with ``optimal_configurations``,
        ``selected_weights`` (``w_dict_sort``), ``minimum_configurations``,
        ``configuration_count`` (number of selected postures),
        ``calibration_config``, ``condition_number`` (= ``detroot_whole``, the
        upstream name), ``detroot_whole``, ``feasible``, ``message``,
        ``log_det_information`` and ``chosen_indices``.

        Returns:
            ``{format: path}`` (key ``"configurations"`` for the candidate-schema
            file), or None with a warning before a solution exists.
        """
        if self.optimal_configurations is None:
            logger.warning("no optimal configuration to save: call solve() first")
            return None
        if output_dir is None:
            output_dir = self.get_optimal_output_dir()
        folder = make_folder(output_dir)
        name = self._robot_name()
        files: Dict[str, str] = {
            "configurations": self.save_optimal_configurations(
                folder / f"{name}_optimal_configurations.yaml"
            )
        }
        cfg = {
            k: v
            for k, v in self.calib_config.items()
            if k not in ("base_mapping_matrix",) and not isinstance(v, np.ndarray)
        }
        results = {
            "optimal_configurations": self.optimal_configurations,
            "selected_weights": {
                int(k): float(v) for k, v in _required(self.w_dict_sort, _NO_SOLUTION).items()
            },
            "minimum_configurations": int(self.minNbChosen),
            "configuration_count": int(_required(self.nb_chosen, _NO_SOLUTION)),
            "calibration_config": cfg,
            "condition_number": self.detroot_whole,
            "detroot_whole": self.detroot_whole,
            "feasible": self.results_data.get("feasible"),
            "message": self.results_data.get("message"),
            "log_det_information": self.results_data.get("log_det_information"),
            "chosen_indices": list(_required(self.chosen_indices, _NO_SOLUTION)),
        }
        rm = ResultsManager("optimal_calibration", name)
        files.update(rm.save_results(results, str(folder), save_formats=["yaml", "csv"]))
        return files
