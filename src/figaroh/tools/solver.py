"""Multivariate linear solver for robot parameter identification.

This module solves the overdetermined linear systems ``A x = b`` met in robot
identification, where ``A`` is a dense, tall and thin regressor (many samples,
few parameters), ``b`` stacks measured joint torques [N·m] (or forces [N]) and
``x`` holds the (base) inertial parameters in SI units (mass [kg], first
moments [kg·m], inertia [kg·m²], friction coefficients [N·m·s/rad], ...).

Every method minimises one member of the family

.. math::

    J(x) = \\tfrac12 \\sum_i w_i\\,(a_i^\\top x - b_i)^2
         + \\tfrac12\\,\\alpha_2\\,\\lVert \\Gamma (x - x_0) \\rVert_2^2
         + \\alpha_1 \\lVert x \\rVert_1

possibly subject to ``A_eq x = b_eq``, ``A_ineq x <= b_ineq`` and
``lower <= x <= upper``. The weights ``w_i`` are the user ``weights`` (all ones
by default) times, for ``method='robust'``, the Huber IRLS weights. Note that
the data term is **not** divided by the number of samples (scikit-learn's
``alpha`` equals ``alpha / n_samples`` here). With this scaling ridge
regression has the familiar closed form ``x = (AᵀA + αI)⁻¹ Aᵀ b``.

Supported methods (``LinearSolver.METHODS``):

* ``'lstsq'``: LAPACK ``gelsd`` least squares (minimum-norm if rank deficient).
* ``'qr'``: column-pivoted Householder QR (raises on rank deficiency).
* ``'svd'``: truncated SVD pseudo-inverse (minimum-norm, rank reported).
* ``'ridge'``: ``α₂ = alpha``, ``Γ = I``.
* ``'lasso'``: ``α₁ = alpha`` (cyclic coordinate descent on the Gram matrix,
  with an exact reduced-system polish once the support is stable).
* ``'elastic_net'``: ``α₁ = alpha·l1_ratio``, ``α₂ = alpha·(1 - l1_ratio)``.
* ``'tikhonov'``: ``α₂ = alpha`` with a user matrix ``Γ``
  (``regularization_matrix``) and prior ``x₀`` (``x_prior``).
* ``'constrained'``: box bounds (``scipy.optimize.lsq_linear``, BVLS) and
  linear equalities/inequalities (equalities eliminated exactly through their
  null space, inequalities by the Lawson-Hanson LSI → LDP → NNLS reduction,
  with an SLSQP fallback).
* ``'robust'``: Huber M-estimator by iteratively reweighted least squares
  with a MAD scale estimate.
* ``'weighted'``: weighted least squares with per-row ``weights``.

For the methods without a built-in penalty (lstsq, qr, svd, weighted, robust,
constrained), ``regularization='l2' | 'l1' | 'elastic_net'`` with ``alpha > 0``
adds the corresponding penalty (``'l1'``/``'elastic_net'`` are not supported
together with ``method='constrained'``).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .exceptions import SolverError, SolverInputError

logger = logging.getLogger(__name__)

__all__ = [
    "LinearSolver",
    "SingularSystemError",
    "solve_linear_system",
]

_TINY = np.finfo(float).tiny
_EPS = np.finfo(float).eps

_REGULARIZATIONS = (None, "l1", "l2", "elastic_net")
# Regularisation values compatible with each method that carries its own penalty.
_BUILTIN_PENALTY = {
    "ridge": ("l2",),
    "lasso": ("l1",),
    "elastic_net": ("elastic_net",),
    "tikhonov": ("l2",),
}
_CONSTRAINT_KEYS = ("A_eq", "b_eq", "A_ineq", "b_ineq")


class SingularSystemError(SolverError, np.linalg.LinAlgError):
    """The system has no unique solution for a method that requires one.

    Subclasses both :class:`~figaroh.tools.exceptions.SolverError`
    (``RuntimeError``) and :class:`numpy.linalg.LinAlgError` (documented by
    :meth:`LinearSolver.solve`), so either ``except`` clause catches it.
    """


def _fmt(value: Any) -> str:
    """Short representation of a constructor argument for ``__repr__``."""
    if isinstance(value, np.ndarray):
        return f"<array shape={value.shape}>"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {_fmt(v)}" for k, v in value.items()) + "}"
    return repr(value)


class LinearSolver:
    """Advanced linear solver for overdetermined systems ``A x = b``.

    Optimised for robot identification where ``A`` is dense, large (many
    samples) and thin (more rows than columns). See the module docstring for
    the objective minimised by each method.

    Convergence policy: the iterative methods (``'lasso'``, ``'elastic_net'``,
    ``'robust'``, the L1 paths and the BVLS bound solver) do **not** raise when
    they reach ``max_iter``; they log a warning, return the last iterate and
    record ``solver_info['converged'] = False`` with the reason in
    ``solver_info['message']`` and ``solver_info['warnings']``. Problems that
    have no valid answer raise instead: inconsistent or infeasible constraints
    raise :class:`~figaroh.tools.exceptions.SolverError`; a rank-deficient
    system for ``'qr'`` or for ``'constrained'`` with linear constraints raises
    :class:`SingularSystemError` (a ``SolverError`` and a
    ``numpy.linalg.LinAlgError``). Invalid inputs raise
    :class:`~figaroh.tools.exceptions.SolverInputError` (a ``ValueError``).

    Attributes:
        method (str): Solving method to use (one of :attr:`METHODS`).
        regularization (str | None): Type of regularization.
        alpha (float): Regularization strength (>= 0).
        l1_ratio (float): Elastic-net mixing parameter in [0, 1].
        weights (ndarray | None): Per-sample weights (>= 0).
        constraints (dict): Linear constraints on the solution.
        bounds (tuple | list | None): Box constraints on the variables.
        max_iter (int): Iteration cap of the iterative methods.
        tol (float): Relative convergence tolerance.
        verbose (bool): Log a solution summary at INFO level after each solve.
        regularization_matrix (ndarray | None): Tikhonov matrix ``Γ``.
        x_prior (ndarray | None): Tikhonov prior ``x₀``.
        huber_delta (float): Huber threshold in units of the robust scale.
        solver_info (dict): Information about the last solution.
    """

    METHODS = (
        "lstsq",
        "qr",
        "svd",
        "ridge",
        "lasso",
        "elastic_net",
        "tikhonov",
        "constrained",
        "robust",
        "weighted",
    )

    def __init__(
        self,
        method: str = "lstsq",
        regularization: str | None = None,
        alpha: float = 0.0,
        l1_ratio: float = 0.5,
        weights: np.ndarray | Sequence[float] | None = None,
        constraints: Mapping[str, Any] | None = None,
        bounds: Any = None,
        max_iter: int = 1000,
        tol: float = 1e-6,
        verbose: bool = False,
        *,
        regularization_matrix: np.ndarray | None = None,
        x_prior: np.ndarray | Sequence[float] | None = None,
        huber_delta: float = 1.345,
    ) -> None:
        """Initialize the linear solver.

        Args:
            method: Solving method, one of :attr:`METHODS`.
            regularization: ``'l1'``, ``'l2'``, ``'elastic_net'`` or None. For
                ``ridge``/``lasso``/``elastic_net``/``tikhonov`` it must be None
                or the method's own penalty; for the other methods it adds that
                penalty (scaled by ``alpha``).
            alpha: Regularization strength (>= 0), in units of
                ``[b]² / [x]²`` for L2 and ``[b]² / [x]`` for L1
                (e.g. [N²·m²/kg²] when ``b`` is torque and ``x`` a mass).
            l1_ratio: Elastic-net mixing in [0, 1] (0 = ridge, 1 = lasso).
            weights: Sample weights (n_samples,), >= 0, dimensionless (or
                inverse variances [1/(N·m)²]); each residual is multiplied by
                ``sqrt(w_i)``. Used by every method; required by ``'weighted'``.
            constraints: Linear constraints (only with ``method='constrained'``):
                ``'A_eq'`` (p, n) and ``'b_eq'`` (p,) for ``A_eq @ x = b_eq``;
                ``'A_ineq'`` (q, n) and ``'b_ineq'`` (q,) for
                ``A_ineq @ x <= b_ineq``. Units: those of ``x``.
            bounds: Box constraints (only with ``method='constrained'``), in
                the units of ``x``: either a tuple ``(lower, upper)`` of scalars
                or length-n arrays, or a list of n pairs ``(lo_i, hi_i)``. None
                or ±inf means unbounded. For n = 2 a *tuple* is read as
                ``(lower, upper)`` and a *list* as per-variable pairs.
            max_iter: Maximum iterations of the iterative methods (>= 1).
            tol: Relative convergence tolerance (> 0).
            verbose: Log a summary of each solution at INFO level.
            regularization_matrix: Tikhonov matrix ``Γ`` (k, n_features);
                identity by default. Only with ``method='tikhonov'``.
            x_prior: Tikhonov prior ``x₀`` (n_features,) in the units of ``x``
                (e.g. CAD parameters); zero by default. Only with
                ``method='tikhonov'``.
            huber_delta: Huber threshold for ``method='robust'`` in units of the
                robust residual scale (1.345 gives 95 % efficiency under
                Gaussian noise).

        Raises:
            SolverInputError: If any argument is invalid or the combination of
                method, regularization, bounds and constraints is unsupported.
        """
        self.method = method
        self.regularization = regularization
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.weights = weights
        self.constraints = dict(constraints) if constraints is not None else {}
        self.bounds = bounds
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.regularization_matrix = regularization_matrix
        self.x_prior = x_prior
        self.huber_delta = huber_delta
        self.solver_info: dict[str, Any] = {}
        self._check_params()

    # ------------------------------------------------------------------ #
    # Validation
    # ------------------------------------------------------------------ #
    def _check_params(self) -> None:
        """Validate the configuration (called at construction and each solve)."""
        if not isinstance(self.method, str) or self.method not in self.METHODS:
            raise SolverInputError(
                f"method={self.method!r} is unknown; method must be one of {self.METHODS}"
            )
        if self.regularization not in _REGULARIZATIONS:
            raise SolverInputError(
                f"regularization={self.regularization!r} is unknown; use one of {_REGULARIZATIONS}"
            )
        own = _BUILTIN_PENALTY.get(self.method)
        if own is not None and self.regularization is not None and self.regularization not in own:
            raise SolverInputError(
                f"regularization={self.regularization!r} conflicts with method="
                f"{self.method!r} (which applies {own[0]!r}); pass regularization=None"
            )
        for name in ("alpha", "l1_ratio", "tol", "huber_delta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not np.isscalar(value) or not np.isfinite(value):
                raise SolverInputError(f"{name}={value!r} must be a finite real number")
        if self.alpha < 0:
            raise SolverInputError(f"alpha={self.alpha!r} must be >= 0")
        if not 0.0 <= self.l1_ratio <= 1.0:
            raise SolverInputError(f"l1_ratio={self.l1_ratio!r} must lie in [0, 1]")
        if self.tol <= 0:
            raise SolverInputError(f"tol={self.tol!r} must be > 0")
        if self.huber_delta <= 0:
            raise SolverInputError(f"huber_delta={self.huber_delta!r} must be > 0")
        if (
            isinstance(self.max_iter, bool)
            or not isinstance(self.max_iter, (int, np.integer))
            or self.max_iter < 1
        ):
            raise SolverInputError(f"max_iter={self.max_iter!r} must be a positive integer")
        if self.weights is not None:
            w = self._as_float_array(self.weights, "weights")
            if w.ndim != 1:
                raise SolverInputError(f"weights must be 1-D (n_samples,), got shape {w.shape}")
            if not np.all(np.isfinite(w)):
                raise SolverInputError("weights contain NaN or inf; pass finite weights")
            if np.any(w < 0):
                raise SolverInputError("weights must be >= 0 (they scale squared residuals)")
            if not np.any(w > 0):
                raise SolverInputError("weights are all zero; at least one sample must count")
        elif self.method == "weighted":
            raise SolverInputError(
                "method='weighted' needs weights=<array of n_samples non-negative values>"
            )
        if not isinstance(self.constraints, Mapping):
            raise SolverInputError(
                f"constraints must be a dict with keys {_CONSTRAINT_KEYS}, "
                f"got {type(self.constraints).__name__}"
            )
        unknown = set(self.constraints) - set(_CONSTRAINT_KEYS)
        if unknown:
            raise SolverInputError(
                f"constraints has unknown keys {sorted(unknown)}; allowed: {_CONSTRAINT_KEYS}"
            )
        for mat, vec in (("A_eq", "b_eq"), ("A_ineq", "b_ineq")):
            if (self.constraints.get(mat) is None) != (self.constraints.get(vec) is None):
                raise SolverInputError(f"constraints: {mat!r} and {vec!r} must be given together")
        has_constraints = any(self.constraints.get(k) is not None for k in _CONSTRAINT_KEYS)
        if self.method != "constrained" and (has_constraints or self.bounds is not None):
            raise SolverInputError(
                f"bounds/constraints are only enforced by method='constrained', not "
                f"method={self.method!r}; pass method='constrained'"
            )
        if self.method == "constrained" and self.regularization in ("l1", "elastic_net"):
            raise SolverInputError("method='constrained' supports regularization=None or 'l2' only")
        if self.method != "tikhonov" and (
            self.regularization_matrix is not None or self.x_prior is not None
        ):
            raise SolverInputError(
                "regularization_matrix/x_prior are only used by method='tikhonov'"
            )

    @staticmethod
    def _as_float_array(value: Any, name: str) -> np.ndarray:
        """Convert to a float ndarray, raising SolverInputError on failure."""
        sparse = sys.modules.get("scipy.sparse")  # a sparse matrix implies scipy.sparse is loaded
        if sparse is not None and sparse.issparse(value):
            raise SolverInputError(f"{name} must be a dense array; call .toarray() first")
        if np.iscomplexobj(value):
            raise SolverInputError(f"{name} must be real-valued, got a complex array")
        try:
            return np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise SolverInputError(f"{name} cannot be converted to a float array: {exc}") from exc

    def _validate_inputs(self, A: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
        """Check and convert ``A`` (n_samples, n_features) and ``b`` (n_samples,)."""
        A = self._as_float_array(A, "A")
        b = self._as_float_array(b, "b")
        if A.ndim != 2:
            raise SolverInputError(
                f"A must be 2-D (n_samples, n_features), got shape {A.shape}; "
                "reshape a single column with A.reshape(-1, 1)"
            )
        if b.ndim == 2 and b.shape[1] == 1:
            b = b[:, 0]
        if b.ndim != 1:
            raise SolverInputError(f"b must be 1-D (n_samples,), got shape {b.shape}")
        m, n = A.shape
        if m == 0 or n == 0:
            raise SolverInputError(f"A must have at least one row and one column, got {A.shape}")
        if b.shape[0] != m:
            raise SolverInputError(
                f"A has {m} rows but b has {b.shape[0]} entries; they must match (n_samples)"
            )
        if not np.all(np.isfinite(A)):
            bad = np.argwhere(~np.isfinite(A))[0]
            raise SolverInputError(
                f"A contains NaN or inf (first at row {bad[0]}, column {bad[1]}); "
                "remove or fill the bad samples"
            )
        if not np.all(np.isfinite(b)):
            bad = int(np.flatnonzero(~np.isfinite(b))[0])
            raise SolverInputError(
                f"b contains NaN or inf (first at index {bad}); remove or fill the bad samples"
            )
        if self.weights is not None and np.asarray(self.weights).shape[0] != m:
            raise SolverInputError(
                f"weights has length {np.asarray(self.weights).shape[0]} but A has {m} rows; "
                "pass one weight per sample"
            )
        return A, b

    def _penalty(self, n: int) -> tuple[float, float, np.ndarray | None, np.ndarray | None]:
        """Return ``(alpha_1, alpha_2, Gamma, x_prior)`` of the configured objective."""
        a, rho = float(self.alpha), float(self.l1_ratio)
        kind = {
            "ridge": "l2",
            "lasso": "l1",
            "elastic_net": "elastic_net",
            "tikhonov": "l2",
        }.get(self.method, self.regularization)
        if kind == "l2":
            l1, l2 = 0.0, a
        elif kind == "l1":
            l1, l2 = a, 0.0
        elif kind == "elastic_net":
            l1, l2 = a * rho, a * (1.0 - rho)
        else:
            l1, l2 = 0.0, 0.0
        gamma = prior = None
        if self.method == "tikhonov":
            if self.regularization_matrix is not None:
                gamma = self._as_float_array(self.regularization_matrix, "regularization_matrix")
                if gamma.ndim != 2 or gamma.shape[1] != n:
                    raise SolverInputError(
                        f"regularization_matrix must have shape (k, {n}), got {gamma.shape}"
                    )
                if not np.all(np.isfinite(gamma)):
                    raise SolverInputError("regularization_matrix contains NaN or inf")
            if self.x_prior is not None:
                prior = self._as_float_array(self.x_prior, "x_prior").ravel()
                if prior.shape != (n,):
                    raise SolverInputError(
                        f"x_prior must have shape ({n},), got {np.shape(self.x_prior)}"
                    )
                if not np.all(np.isfinite(prior)):
                    raise SolverInputError("x_prior contains NaN or inf")
        return l1, l2, gamma, prior

    def _parse_bounds(self, n: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Convert ``bounds`` into ``(lower, upper)`` arrays of length n."""
        if self.bounds is None:
            return None
        bnd = self.bounds

        def to_arr(v: Any, name: str) -> np.ndarray:
            if v is None:
                return np.full(n, np.nan)
            arr = np.array(
                [np.nan if e is None else e for e in np.atleast_1d(np.asarray(v, dtype=object))],
                dtype=float,
            )
            if arr.size == 1:
                arr = np.full(n, arr[0])
            if arr.shape != (n,):
                raise SolverInputError(
                    f"bounds {name} must be a scalar or have length {n}, got {arr.shape}"
                )
            return arr

        try:
            seq = list(bnd) if isinstance(bnd, (list, tuple, np.ndarray)) else None
            if seq is None:
                raise SolverInputError(
                    "bounds must be a tuple (lower, upper) or a list of (lo, hi) pairs"
                )
            pair_seq = len(seq) == n and all(np.ndim(p) == 1 and len(p) == 2 for p in seq)
            if pair_seq and (isinstance(bnd, list) or len(seq) != 2):
                lower = to_arr([p[0] for p in seq], "lower")
                upper = to_arr([p[1] for p in seq], "upper")
            elif len(seq) == 2:
                lower, upper = to_arr(seq[0], "lower"), to_arr(seq[1], "upper")
            else:
                raise SolverInputError(
                    f"bounds must be (lower, upper) or a list of {n} (lo, hi) pairs, "
                    f"got {len(seq)} elements"
                )
        except (TypeError, ValueError) as exc:
            if isinstance(exc, SolverInputError):
                raise
            raise SolverInputError(f"bounds could not be parsed: {exc}") from exc
        lower = np.where(np.isnan(lower), -np.inf, lower)
        upper = np.where(np.isnan(upper), np.inf, upper)
        if np.any(lower == np.inf) or np.any(upper == -np.inf):
            raise SolverInputError("bounds: lower may not be +inf and upper may not be -inf")
        if np.any(lower > upper):
            idx = np.flatnonzero(lower > upper).tolist()
            raise SolverInputError(f"bounds: lower > upper for variables {idx}")
        return lower, upper

    def _parse_constraints(
        self, n: int
    ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """Convert the constraint dict into checked arrays (or None)."""
        out: list[np.ndarray | None] = []
        for mat_key, vec_key in (("A_eq", "b_eq"), ("A_ineq", "b_ineq")):
            mat, vec = self.constraints.get(mat_key), self.constraints.get(vec_key)
            if mat is None:
                out += [None, None]
                continue
            M = self._as_float_array(mat, f"constraints[{mat_key!r}]")
            v = np.atleast_1d(self._as_float_array(vec, f"constraints[{vec_key!r}]")).ravel()
            if M.ndim == 1:
                M = M.reshape(1, -1)
            if M.ndim != 2 or M.shape[1] != n:
                raise SolverInputError(
                    f"constraints[{mat_key!r}] must have shape (k, {n}), got {M.shape}"
                )
            if v.shape != (M.shape[0],):
                raise SolverInputError(
                    f"constraints[{vec_key!r}] must have length {M.shape[0]}, got {v.shape[0]}"
                )
            if not (np.all(np.isfinite(M)) and np.all(np.isfinite(v))):
                raise SolverInputError(f"constraints[{mat_key!r}]/[{vec_key!r}] contain NaN or inf")
            if M.shape[0] == 0:
                out += [None, None]
            else:
                out += [M, v]
        return out[0], out[1], out[2], out[3]

    # ------------------------------------------------------------------ #
    # Public API
    # ------------------------------------------------------------------ #
    def solve(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Solve the linear system ``A x = b`` in the configured sense.

        Args:
            A: Design (regressor) matrix (n_samples, n_features), e.g. the
                base regressor whose columns multiply parameters in SI units.
            b: Target vector (n_samples,) (or (n_samples, 1)), e.g. stacked
                joint torques [N·m].

        Returns:
            Solution vector ``x`` (n_features,) in the units implied by ``A``
            and ``b``. Quality metrics are stored in :attr:`solver_info`.

        Raises:
            SolverInputError: (a ``ValueError``) if inputs are ill-shaped,
                non-finite, or incompatible with the configuration.
            SingularSystemError: (a ``numpy.linalg.LinAlgError``) if the method
                needs a unique solution and the system is rank deficient.
            SolverError: If constraints are inconsistent or infeasible.
        """
        self._check_params()
        A, b = self._validate_inputs(A, b)
        self.solver_info = {
            "method": self.method,
            "regularization": self.regularization,
            "alpha": float(self.alpha),
            "n_samples": int(A.shape[0]),
            "n_features": int(A.shape[1]),
            "converged": True,
            "n_iter": 0,
            "message": "ok",
            "warnings": [],
        }
        if self.method in ("elastic_net",) or self.regularization == "elastic_net":
            self.solver_info["l1_ratio"] = float(self.l1_ratio)
        t0 = time.perf_counter()
        dispatch = {
            "lstsq": self._solve_lstsq,
            "qr": self._solve_qr,
            "svd": self._solve_svd,
            "ridge": self._solve_ridge,
            "lasso": self._solve_lasso,
            "elastic_net": self._solve_elastic_net,
            "tikhonov": self._solve_tikhonov,
            "constrained": self._solve_constrained,
            "robust": self._solve_robust,
            "weighted": self._solve_weighted,
        }
        x = dispatch[self.method](A, b)
        self.solver_info["solve_time"] = time.perf_counter() - t0
        self._compute_solution_quality(A, b, x)
        if self.verbose:
            self._print_solution_info()
        return x

    def summary(self) -> str:
        """Return a multi-line, human-readable summary of :attr:`solver_info`."""
        info = self.solver_info
        if not info:
            return "LinearSolver: not solved yet"
        lines = [
            f"LinearSolver[{info['method']}] {info['n_samples']} samples x "
            f"{info['n_features']} features",
            f"  rmse={info['rmse']:.6g}  r_squared={info['r_squared']:.6g}  "
            f"condition_number={info['condition_number']:.6g}  rank={info['rank']}",
            f"  residual: norm={info['residual_norm']:.6g} mean={info['residual_mean']:.6g} "
            f"std={info['residual_std']:.6g} max={info['residual_max']:.6g}",
            f"  converged={info['converged']} n_iter={info['n_iter']} "
            f"time={info.get('solve_time', float('nan')):.3g}s  {info['message']}",
        ]
        return "\n".join(lines)

    def _print_solution_info(self) -> None:
        """Log the solution summary at INFO level (used when ``verbose``)."""
        logger.info("%s", self.summary())

    def __repr__(self) -> str:
        defaults: dict[str, Any] = {
            "regularization": None,
            "alpha": 0.0,
            "l1_ratio": 0.5,
            "weights": None,
            "constraints": {},
            "bounds": None,
            "max_iter": 1000,
            "tol": 1e-6,
            "verbose": False,
            "regularization_matrix": None,
            "x_prior": None,
            "huber_delta": 1.345,
        }
        parts = [f"method={self.method!r}"]
        for name, default in defaults.items():
            value = getattr(self, name)
            same = value is default or (
                not isinstance(value, np.ndarray)
                and not isinstance(default, np.ndarray)
                and value == default
            )
            if not same:
                parts.append(f"{name}={_fmt(value)}")
        text = f"LinearSolver({', '.join(parts)})"
        if self.solver_info.get("rmse") is not None:
            text += (
                f" <solved: rmse={self.solver_info['rmse']:.4g}, "
                f"r_squared={self.solver_info['r_squared']:.4g}>"
            )
        return text

    # ------------------------------------------------------------------ #
    # Shared building blocks
    # ------------------------------------------------------------------ #
    def _warn(self, message: str, *, converged: bool | None = None) -> None:
        """Log a warning and record it in ``solver_info``."""
        if message not in self.solver_info["warnings"]:
            logger.warning("LinearSolver[%s]: %s", self.method, message)
            self.solver_info["warnings"].append(message)
        if converged is not None:
            self.solver_info["converged"] = converged
            self.solver_info["message"] = message

    def _row_weights(self) -> np.ndarray | None:
        return None if self.weights is None else np.asarray(self.weights, dtype=float)

    def _augmented(
        self, A: np.ndarray, b: np.ndarray, w: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Stack ``[√w A; √α₂ Γ]`` and ``[√w b; √α₂ Γ x₀]`` (the smooth part of J)."""
        n = A.shape[1]
        _, l2, gamma, prior = self._penalty(n)
        if w is not None:
            sw = np.sqrt(w)
            A, b = A * sw[:, None], b * sw
        if l2 > 0:
            G = np.eye(n) if gamma is None else gamma
            rhs = np.zeros(G.shape[0]) if prior is None else G @ prior
            s = np.sqrt(l2)
            A = np.vstack([A, s * G])
            b = np.concatenate([b, s * rhs])
        return A, b

    def _record_rank(self, rank: int, n: int, how: str) -> None:
        self.solver_info["solution_rank"] = int(rank)
        if rank < n:
            self._warn(
                f"system is rank deficient (rank {rank} < {n} features); {how} returned the "
                "minimum-norm solution, which is not unique - use base parameters or "
                "regularization"
            )

    def _smooth_fit(self, A: np.ndarray, b: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        """Minimise the smooth part of J with ``np.linalg.lstsq`` (gelsd)."""
        Aa, ba = self._augmented(A, b, w)
        x, _, rank, _ = np.linalg.lstsq(Aa, ba, rcond=None)
        self._record_rank(rank, A.shape[1], "lstsq")
        return x

    def _fit(self, A: np.ndarray, b: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        """Minimise J for given row weights (dispatching on the L1 penalty)."""
        l1 = self._penalty(A.shape[1])[0]
        if l1 > 0:
            return self._l1_fit(A, b, w)
        return self._smooth_fit(A, b, w)

    def _l1_fit(self, A: np.ndarray, b: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        """Minimise J with an L1 term on the Gram matrix ``G = AᵀWA + α₂ΓᵀΓ``.

        The exact solution is followed by the lasso homotopy (LARS-lasso) path
        from ``λ = ‖c‖∞`` down to ``α₁``; if its KKT violation exceeds
        ``tol·‖c‖∞`` (degenerate or rank-deficient active sets) it is refined by
        coordinate descent.
        """
        n = A.shape[1]
        l1, l2, gamma, prior = self._penalty(n)
        Aw = A if w is None else A * w[:, None]
        G = Aw.T @ A
        c = Aw.T @ b
        if l2 > 0:
            GG = np.eye(n) if gamma is None else gamma.T @ gamma
            G = G + l2 * GG
            if prior is not None:
                c = c + l2 * (GG @ prior)
        scale = max(float(np.max(np.abs(c))), _TINY)
        x, steps = _lasso_homotopy(G, c, l1, self.max_iter)
        viol = _kkt_violation(x, c - G @ x, l1)
        self.solver_info["homotopy_steps"] = self.solver_info.get("homotopy_steps", 0) + steps
        n_iter, converged = 0, True
        if viol > self.tol * scale:
            logger.debug("homotopy KKT violation %.3g; refining by coordinate descent", viol)
            x, n_iter, viol, converged = _coordinate_descent(
                G, c, l1, self.max_iter, self.tol, x0=x
            )
        scale = max(float(np.max(np.abs(c))), _TINY)
        self.solver_info["cd_sweeps"] = self.solver_info.get("cd_sweeps", 0) + n_iter
        self.solver_info["n_iter"] = (
            self.solver_info["cd_sweeps"] + self.solver_info["homotopy_steps"]
        )
        self.solver_info["kkt_violation"] = viol / scale
        self.solver_info["n_nonzero"] = int(np.count_nonzero(x))
        if not converged:
            self._warn(
                f"coordinate descent did not converge in {self.max_iter} sweeps "
                f"(relative KKT violation {viol / scale:.3g} > tol={self.tol:g}); "
                "increase max_iter or tol",
                converged=False,
            )
        return x

    # ------------------------------------------------------------------ #
    # Methods
    # ------------------------------------------------------------------ #
    def _solve_lstsq(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Least squares via LAPACK gelsd (SVD based, minimum-norm)."""
        return self._fit(A, b, self._row_weights())

    def _solve_weighted(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Weighted least squares: minimise ``Σ w_i (a_iᵀx − b_i)²``."""
        return self._fit(A, b, self._row_weights())

    def _solve_ridge(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Ridge: ``x = (AᵀWA + αI)⁻¹ AᵀWb`` computed as an augmented lstsq."""
        return self._smooth_fit(A, b, self._row_weights())

    def _solve_tikhonov(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Tikhonov: ``x = (AᵀWA + αΓᵀΓ)⁻¹ (AᵀWb + αΓᵀΓx₀)`` via augmented lstsq."""
        return self._smooth_fit(A, b, self._row_weights())

    def _solve_lasso(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Lasso: minimise ``½‖A x − b‖² + α‖x‖₁``."""
        return self._fit(A, b, self._row_weights())

    def _solve_elastic_net(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Elastic net: ``½‖Ax − b‖² + αρ‖x‖₁ + ½α(1 − ρ)‖x‖²``."""
        return self._fit(A, b, self._row_weights())

    def _solve_qr(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Column-pivoted QR: ``A P = Q R``, ``x = P R⁻¹ Qᵀ b``."""
        import scipy.linalg as sla

        n = A.shape[1]
        if self._penalty(n)[0] > 0:
            return self._l1_fit(A, b, self._row_weights())
        Aa, ba = self._augmented(A, b, self._row_weights())
        Q, R, piv = sla.qr(Aa, mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        rank = int(np.sum(d > max(Aa.shape) * _EPS * (d[0] if d.size else 0.0)))
        self.solver_info["solution_rank"] = rank
        if rank < n:
            raise SingularSystemError(
                f"method='qr': the system is rank deficient (numerical rank {rank} < {n} "
                "features), so x is not unique; use method='svd'/'lstsq' for the minimum-norm "
                "solution, regularization='l2' with alpha > 0, or reduce to base parameters"
            )
        z = sla.solve_triangular(R[:n, :n], Q[:, :n].T @ ba)
        x = np.empty(n)
        x[piv] = z
        return x

    def _solve_svd(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Truncated SVD: ``x = V Σ⁺ Uᵀ b`` with ``σ_i <= max(m, n)·ε·σ_max`` dropped."""
        n = A.shape[1]
        if self._penalty(n)[0] > 0:
            return self._l1_fit(A, b, self._row_weights())
        Aa, ba = self._augmented(A, b, self._row_weights())
        U, s, Vt = np.linalg.svd(Aa, full_matrices=False)
        cutoff = max(Aa.shape) * _EPS * (s[0] if s.size else 0.0)
        keep = s > cutoff
        x = Vt[keep].T @ ((U[:, keep].T @ ba) / s[keep])
        self._record_rank(int(keep.sum()), n, "svd")
        return x

    def _solve_robust(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Huber M-estimate by IRLS.

        Starting from the (weighted) least-squares fit, iterate
        ``s = median|r − median r| / Φ⁻¹(3/4)`` (normal-consistent MAD,
        :func:`scipy.stats.median_abs_deviation` with ``scale="normal"``,
        floored at ``1e-12·rms(b)``),
        ``h_i = min(1, δ s / |r_i|)`` and refit with weights ``w_i h_i`` until
        ``‖Δx‖ <= tol·‖x‖``.
        """
        from scipy.stats import median_abs_deviation

        m, n = A.shape
        w0 = self._row_weights()
        w0 = np.ones(m) if w0 is None else w0
        active = w0 > 0
        delta = float(self.huber_delta)
        floor = 1e-12 * max(float(np.sqrt(np.mean(b**2))), _TINY) + _TINY
        x = self._fit(A, b, w0)
        converged = False
        it = 0
        h = np.ones(m)
        scale: float = floor
        for it in range(1, self.max_iter + 1):  # noqa: B007
            r = b - A @ x
            ra = r[active]
            scale = max(float(median_abs_deviation(ra, scale="normal")), floor)
            absr = np.abs(r)
            h = np.minimum(1.0, delta * scale / np.maximum(absr, _TINY))
            x_new = self._fit(A, b, w0 * h)
            step = float(np.linalg.norm(x_new - x))
            x = x_new
            if step <= self.tol * max(float(np.linalg.norm(x)), _TINY):
                converged = True
                break
        self.solver_info["n_iter"] = it
        self.solver_info["robust_scale"] = scale
        self.solver_info["huber_delta"] = delta
        self.solver_info["robust_weights"] = h
        self.solver_info["n_downweighted"] = int(np.count_nonzero(h[active] < 1.0))
        if not converged:
            self._warn(
                f"Huber IRLS did not converge in {self.max_iter} iterations; "
                "increase max_iter or tol",
                converged=False,
            )
        return x

    def _solve_constrained(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Least squares with bounds and linear equality/inequality constraints.

        The smooth objective is first compressed to ``‖R x − Qᵀb‖`` by a thin QR
        (m >= n). Bounds alone go to BVLS (``scipy.optimize.lsq_linear``).
        With linear constraints, ``x = x_p + N z`` with ``N`` an orthonormal
        null-space basis of ``A_eq`` (so equalities hold to rounding), and the
        remaining inequality-constrained LS in ``z`` is solved exactly by the
        Lawson-Hanson LSI → LDP → NNLS reduction (SLSQP as a fallback).
        """
        from scipy import optimize

        m, n = A.shape
        lb_ub = self._parse_bounds(n)
        A_eq, b_eq, A_in, b_in = self._parse_constraints(n)
        E, f = self._augmented(A, b, self._row_weights())
        if E.shape[0] > n:
            Q, R = np.linalg.qr(E, mode="reduced")
            E, f = R, Q.T @ f
        if lb_ub is not None and np.any(lb_ub[0] == lb_ub[1]):
            # Fixed variables (lower == upper) become exact equality constraints.
            fixed = np.flatnonzero(lb_ub[0] == lb_ub[1])
            rows, vals = np.eye(n)[fixed], lb_ub[0][fixed]
            A_eq = rows if A_eq is None else np.vstack([A_eq, rows])
            b_eq = vals if b_eq is None else np.concatenate([b_eq, vals])
            lb_ub = (
                np.where(lb_ub[0] == lb_ub[1], -np.inf, lb_ub[0]),
                np.where(lb_ub[0] == lb_ub[1], np.inf, lb_ub[1]),
            )
        has_bounds = lb_ub is not None and bool(np.any(np.isfinite(np.concatenate(lb_ub))))
        if A_eq is None and A_in is None:
            if lb_ub is None or not has_bounds:
                self.solver_info["message"] = "no bounds or constraints given; plain least squares"
                x, _, rank, _ = np.linalg.lstsq(E, f, rcond=None)
                self._record_rank(rank, n, "lstsq")
                self._record_constraint_violation(x, lb_ub, None, None, None, None)
                return x
            lb, ub = lb_ub
            res = optimize.lsq_linear(
                E,
                f,
                bounds=(lb, ub),
                method="bvls",
                tol=min(self.tol, 1e-10),
                max_iter=self.max_iter,
            )
            self.solver_info["n_iter"] = int(res.nit)
            self.solver_info["n_active_bounds"] = int(np.count_nonzero(res.active_mask))
            if res.status == -1:
                raise SolverError(f"bounded least squares failed: {res.message}")
            if res.status == 0:
                self._warn(f"BVLS reached max_iter={self.max_iter}: {res.message}", converged=False)
            x = np.clip(res.x, lb, ub)
            self._record_constraint_violation(x, lb_ub, None, None, None, None)
            return x
        return self._solve_linear_constraints(E, f, lb_ub, A_eq, b_eq, A_in, b_in)

    def _solve_linear_constraints(
        self,
        E: np.ndarray,
        f: np.ndarray,
        lb_ub: tuple[np.ndarray, np.ndarray] | None,
        A_eq: np.ndarray | None,
        b_eq: np.ndarray | None,
        A_in: np.ndarray | None,
        b_in: np.ndarray | None,
    ) -> np.ndarray:
        """Minimise ``‖E x − f‖`` s.t. equalities, inequalities and bounds."""
        import scipy.linalg as sla

        n = E.shape[1]
        # 1) Equalities: x = x_p + N z.
        # _parse_constraints gives each matrix together with its vector.
        if A_eq is not None and b_eq is not None:
            x_p, *_ = np.linalg.lstsq(A_eq, b_eq, rcond=None)
            eq_res = float(np.max(np.abs(A_eq @ x_p - b_eq)))
            eq_scale = float(np.max(np.abs(A_eq)) * np.max(np.abs(x_p)) + np.max(np.abs(b_eq)))
            if eq_res > 1e-9 * max(eq_scale, 1.0):
                raise SolverError(
                    f"equality constraints A_eq x = b_eq are inconsistent (best residual "
                    f"{eq_res:.3g}); check constraints['A_eq'] and constraints['b_eq']"
                )
            N = sla.null_space(A_eq)
        else:
            x_p, N = np.zeros(n), np.eye(n)
        k = N.shape[1]
        # 2) Inequalities in z: Gz >= h.
        G_rows, h_rows = [], []
        if A_in is not None and b_in is not None:
            G_rows.append(-A_in @ N)
            h_rows.append(-(b_in - A_in @ x_p))
        if lb_ub is not None:
            lb, ub = lb_ub
            fl, fu = np.isfinite(lb), np.isfinite(ub)
            G_rows += [N[fl], -N[fu]]
            h_rows += [lb[fl] - x_p[fl], -(ub[fu] - x_p[fu])]
        G = np.vstack(G_rows) if G_rows else np.zeros((0, k))
        h = np.concatenate(h_rows) if h_rows else np.zeros(0)
        feas_tol = 1e-10 * max(1.0, float(np.max(np.abs(h))) if h.size else 1.0)

        if k == 0:
            z = np.zeros(0)
            if h.size and np.max(h) > feas_tol:
                raise SolverError(
                    "constraints are infeasible: the equalities fix x uniquely and it violates "
                    "the inequalities/bounds"
                )
        else:
            En = E @ N
            fz = f - E @ x_p
            sv = np.linalg.svd(En, compute_uv=False)
            if sv.size < k or sv[-1] <= max(En.shape) * _EPS * sv[0]:
                raise SingularSystemError(
                    "method='constrained': the least-squares problem is rank deficient on the "
                    "constraint set, so the solution is not unique; use regularization='l2' "
                    "with alpha > 0 or reduce to base parameters"
                )
            Q2, R2 = np.linalg.qr(En, mode="reduced")
            z_free = sla.solve_triangular(R2, Q2.T @ fz)
            z = z_free
            if G.shape[0] and np.any(G @ z_free - h < -feas_tol):
                z = self._lsi(R2, G, h, z_free)
                viol = float(np.max(h - G @ z)) if G.shape[0] else 0.0
                if viol > 1e-9 * max(1.0, float(np.max(np.abs(h)))):
                    z = self._slsqp(En, fz, G, h, z)
        x = x_p + N @ z
        if A_eq is None and lb_ub is not None:
            x = np.clip(x, *lb_ub)
        self._record_constraint_violation(x, lb_ub, A_eq, b_eq, A_in, b_in)
        return x

    def _lsi(self, R: np.ndarray, G: np.ndarray, h: np.ndarray, z_free: np.ndarray) -> np.ndarray:
        """Solve ``min ‖R(z − z_free)‖`` s.t. ``G z >= h`` via LDP and NNLS.

        With ``u = R(z − z_free)``: ``min ‖u‖`` s.t. ``(G R⁻¹) u >= h − G z_free``;
        the least-distance problem is solved by NNLS on ``[G̃ᵀ; h̃ᵀ] w ≈ e``
        (Lawson & Hanson, *Solving Least Squares Problems*, ch. 23).
        """
        import scipy.linalg as sla
        from scipy import optimize

        k = R.shape[0]
        Gt = sla.solve_triangular(R, G.T, trans="T").T
        ht = h - G @ z_free
        nrm = np.linalg.norm(Gt, axis=1)
        zero = nrm <= _EPS * max(float(np.max(nrm)), _TINY)
        if np.any(ht[zero] > 1e-10 * max(1.0, float(np.max(np.abs(h))))):
            raise SolverError("constraints are infeasible (a constraint row reads 0 >= positive)")
        Gt, ht = Gt[~zero] / nrm[~zero, None], ht[~zero] / nrm[~zero]
        sigma = max(float(np.max(np.abs(ht))), _TINY)
        ht = ht / sigma
        Emat = np.vstack([Gt.T, ht[None, :]])
        fvec = np.zeros(k + 1)
        fvec[-1] = 1.0
        try:
            wv, rnorm = optimize.nnls(Emat, fvec, maxiter=max(50 * Emat.shape[1], self.max_iter))
        except RuntimeError as exc:
            raise SolverError(f"NNLS failed while solving the constrained problem: {exc}") from exc
        r = Emat @ wv - fvec
        self.solver_info["n_active_constraints"] = int(np.count_nonzero(wv))
        if rnorm <= 1e-14 or abs(r[-1]) <= 1e-14:
            raise SolverError(
                "constraints are infeasible: no x satisfies A_ineq x <= b_ineq together with "
                "the bounds and equalities; check constraints and bounds"
            )
        u = -r[:k] / r[-1] * sigma
        return z_free + sla.solve_triangular(R, u)

    def _slsqp(
        self, E: np.ndarray, f: np.ndarray, G: np.ndarray, h: np.ndarray, z0: np.ndarray
    ) -> np.ndarray:
        """Fallback: SLSQP on ``½‖E z − f‖²`` s.t. ``G z >= h``."""
        from scipy import optimize

        self._warn("LSI/NNLS result violated constraints; refined with SLSQP")
        res = optimize.minimize(
            lambda z: 0.5 * float(np.sum((E @ z - f) ** 2)),
            z0,
            jac=lambda z: E.T @ (E @ z - f),
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": lambda z: G @ z - h, "jac": lambda z: G}],
            options={"maxiter": self.max_iter, "ftol": min(self.tol, 1e-12)},
        )
        viol = float(np.max(h - G @ res.x)) if G.shape[0] else 0.0
        if viol > 1e-8 * max(1.0, float(np.max(np.abs(h)))):
            raise SolverError(
                f"constrained least squares failed: {res.message} (max violation {viol:.3g}); "
                "the constraints may be infeasible"
            )
        if not res.success:
            self._warn(f"SLSQP: {res.message}", converged=False)
        self.solver_info["n_iter"] = int(res.nit)
        return res.x

    def _record_constraint_violation(
        self,
        x: np.ndarray,
        lb_ub: tuple[np.ndarray, np.ndarray] | None,
        A_eq: np.ndarray | None,
        b_eq: np.ndarray | None,
        A_in: np.ndarray | None,
        b_in: np.ndarray | None,
    ) -> None:
        info = self.solver_info
        info["equality_violation"] = (
            float(np.max(np.abs(A_eq @ x - b_eq))) if A_eq is not None else 0.0
        )
        info["inequality_violation"] = (
            float(max(0.0, np.max(A_in @ x - b_in))) if A_in is not None else 0.0
        )
        if lb_ub is not None:
            lb, ub = lb_ub
            info["bound_violation"] = float(max(0.0, np.max(lb - x), np.max(x - ub)))
        else:
            info["bound_violation"] = 0.0

    # ------------------------------------------------------------------ #
    # Quality metrics
    # ------------------------------------------------------------------ #
    def _compute_solution_quality(self, A: np.ndarray, b: np.ndarray, x: np.ndarray) -> None:
        """Store fit metrics of ``x`` on the (unweighted) data in ``solver_info``.

        ``rmse = sqrt(mean(r²))`` with ``r = b − A x`` (units of ``b``),
        ``r_squared = 1 − Σr²/Σ(b − mean b)²`` (1.0 for a perfect fit of a
        constant ``b``, else 0.0 when ``b`` is constant), ``condition_number =
        σ_max/σ_min`` of ``A`` (inf if singular; same as ``numpy.linalg.cond``),
        ``rank`` = numerical rank of ``A``, residual statistics in units of ``b``.
        """
        info = self.solver_info
        r = b - A @ x
        ss_res = float(r @ r)
        ss_tot = float(np.sum((b - b.mean()) ** 2))
        if ss_tot > 0:
            r2 = 1.0 - ss_res / ss_tot
        else:
            r2 = 1.0 if ss_res == 0 else 0.0
        s = np.linalg.svd(A, compute_uv=False)
        cond = float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
        bnorm = float(np.linalg.norm(b))
        info.update(
            {
                "rmse": float(np.sqrt(ss_res / r.size)),
                "r_squared": r2,
                "condition_number": cond,
                "rank": int(np.sum(s > max(A.shape) * _EPS * s[0])),
                "residual_norm": float(np.sqrt(ss_res)),
                "relative_residual": float(np.sqrt(ss_res) / bnorm) if bnorm > 0 else 0.0,
                "residual_mean": float(r.mean()),
                "residual_std": float(r.std()),
                "residual_max": float(np.max(np.abs(r))),
                "solution_norm": float(np.linalg.norm(x)),
            }
        )
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=float)
            info["weighted_rmse"] = float(np.sqrt(np.sum(w * r**2) / np.sum(w)))
        l1, l2, gamma, prior = self._penalty(A.shape[1])
        wr = r if self.weights is None else r * np.sqrt(np.asarray(self.weights, float))
        obj = 0.5 * float(wr @ wr) + l1 * float(np.sum(np.abs(x)))
        if l2 > 0:
            dx = x if prior is None else x - prior
            gdx = dx if gamma is None else gamma @ dx
            obj += 0.5 * l2 * float(gdx @ gdx)
        info["objective"] = obj


def _kkt_violation(x: np.ndarray, g: np.ndarray, l1: float) -> float:
    """Max violation of ``g_j = l1·sign(x_j)`` (x_j ≠ 0) and ``|g_j| <= l1`` (x_j = 0)."""
    nz = x != 0
    v_nz = np.abs(g[nz] - l1 * np.sign(x[nz]))
    v_z = np.maximum(np.abs(g[~nz]) - l1, 0.0)
    return float(max(v_nz.max(initial=0.0), v_z.max(initial=0.0)))


def _lasso_homotopy(
    G: np.ndarray, c: np.ndarray, l1: float, max_steps: int
) -> tuple[np.ndarray, int]:
    """Minimise ``½ xᵀGx − cᵀx + l1‖x‖₁`` by the homotopy (LARS-lasso) path.

    Starting at ``λ = ‖c‖∞`` (where ``x = 0``), ``λ`` decreases while the
    active set ``S`` with signs ``s`` satisfies ``g_S = λ s`` (``g = c − Gx``),
    i.e. ``x_S`` moves along ``d = G_SS⁻¹ s``. At each kink a variable joins
    (``|g_j|`` reaches ``λ``) or leaves (``x_j`` crosses zero). The final
    ``x_S`` is recomputed exactly from ``G_SS x_S = c_S − l1 s``.

    Returns:
        ``(x, steps)``; the caller checks the KKT conditions.
    """
    n = c.size
    x = np.zeros(n)
    g = c.copy()
    lam = float(np.max(np.abs(g)))
    if lam <= l1 or n == 0:
        return x, 0
    active = np.zeros(n, dtype=bool)
    signs = np.zeros(n)
    j = int(np.argmax(np.abs(g)))
    active[j], signs[j] = True, np.sign(g[j])
    steps = 0
    for steps in range(1, max_steps + 1):  # noqa: B007
        S = np.flatnonzero(active)
        try:
            d = np.linalg.solve(G[np.ix_(S, S)], signs[S])
        except np.linalg.LinAlgError:
            break
        a = G[:, S] @ d
        t_end = lam - l1
        eps = 1e-12 * lam
        t_join, j_join = np.inf, -1
        inact = np.flatnonzero(~active)
        if inact.size:
            gi, ai = g[inact], a[inact]
            with np.errstate(divide="ignore", invalid="ignore"):
                tp = np.where(1.0 - ai > 0, (lam - gi) / (1.0 - ai), np.inf)
                tm = np.where(1.0 + ai > 0, (lam + gi) / (1.0 + ai), np.inf)
            t_cand = np.minimum(np.where(tp > eps, tp, np.inf), np.where(tm > eps, tm, np.inf))
            k = int(np.argmin(t_cand))
            t_join, j_join = float(t_cand[k]), int(inact[k])
        with np.errstate(divide="ignore", invalid="ignore"):
            td = np.where(d != 0, -x[S] / d, np.inf)
        td = np.where((td > eps) & (x[S] != 0), td, np.inf)
        k_drop = int(np.argmin(td)) if td.size else -1
        t_drop = float(td[k_drop]) if td.size else np.inf
        t = min(t_end, t_join, t_drop)
        x[S] += t * d
        lam -= t
        g = c - G @ x
        if t == t_end:
            break
        if t_drop <= t_join:
            jd = S[k_drop]
            x[jd], active[jd], signs[jd] = 0.0, False, 0.0
            if not active.any():
                j = int(np.argmax(np.abs(g)))
                active[j], signs[j] = True, np.sign(g[j])
        else:
            active[j_join], signs[j_join] = True, np.sign(g[j_join])
    # Exact re-solve on the final active set (removes accumulated rounding).
    S = np.flatnonzero(active & (x != 0))
    if S.size:
        try:
            xs = np.linalg.solve(G[np.ix_(S, S)], c[S] - l1 * np.sign(x[S]))
        except np.linalg.LinAlgError:
            return x, steps
        if np.array_equal(np.sign(xs), np.sign(x[S])):
            x = np.zeros(n)
            x[S] = xs
    return x, steps


def _coordinate_descent(
    G: np.ndarray,
    c: np.ndarray,
    l1: float,
    max_iter: int,
    tol: float,
    x0: np.ndarray | None = None,
) -> tuple[np.ndarray, int, float, bool]:
    """Minimise ``½ xᵀGx − cᵀx + l1‖x‖₁`` (G symmetric PSD) by cyclic CD.

    Maintains the negative gradient ``g = c − G x`` so each coordinate update
    ``x_j ← S(g_j + G_jj x_j, l1) / G_jj`` costs O(n). Once the sign pattern is
    unchanged over a sweep, the reduced system ``G_SS x_S = c_S − l1 sign(x_S)``
    is solved exactly and accepted if it satisfies the KKT conditions. Stops
    when the KKT violation is ``<= tol·‖c‖∞``.

    Returns:
        ``(x, sweeps, kkt_violation, converged)``.
    """
    n = c.size
    x = np.zeros(n) if x0 is None else np.array(x0, dtype=float)
    g = c - G @ x
    diag = np.diag(G).copy()
    thresh = tol * max(float(np.max(np.abs(c))), _TINY)
    prev = None
    viol = _kkt_violation(x, g, l1)
    if viol <= thresh:
        return x, 0, viol, True
    for sweep in range(1, max_iter + 1):
        for j in range(n):
            gjj = diag[j]
            xj = x[j]
            if gjj <= 0.0:
                new = 0.0
            else:
                rho = g[j] + gjj * xj
                new = np.sign(rho) * max(abs(rho) - l1, 0.0) / gjj
            d = new - xj
            if d != 0.0:
                x[j] = new
                g -= G[j] * d
        viol = _kkt_violation(x, g, l1)
        if viol <= thresh:
            return x, sweep, viol, True
        pattern = np.sign(x)
        if prev is not None and np.array_equal(pattern, prev) and np.any(pattern):
            S = pattern != 0
            xs = np.linalg.lstsq(G[np.ix_(S, S)], c[S] - l1 * pattern[S], rcond=None)[0]
            xp = np.zeros(n)
            xp[S] = xs
            if np.array_equal(np.sign(xp), pattern):
                gp = c - G @ xp
                vp = _kkt_violation(xp, gp, l1)
                if vp <= thresh:
                    return xp, sweep, vp, True
        prev = pattern
    return x, max_iter, viol, False


def solve_linear_system(
    A: np.ndarray, b: np.ndarray, method: str = "lstsq", **kwargs: Any
) -> tuple[np.ndarray, dict[str, Any]]:
    """Convenience function to solve the linear system ``A x = b``.

    Args:
        A: Design matrix (n_samples, n_features).
        b: Target vector (n_samples,), e.g. joint torques [N·m].
        method: Solving method (see :attr:`LinearSolver.METHODS`).
        **kwargs: Additional arguments for :class:`LinearSolver`.

    Returns:
        Tuple ``(x, solver_info)``: the solution (n_features,) and the solver's
        information dict.

    Example:
        >>> A = np.random.randn(1000, 50)  # 1000 samples, 50 features
        >>> b = np.random.randn(1000)
        >>> x, info = solve_linear_system(A, b, method='ridge', alpha=0.1)
    """
    solver = LinearSolver(method=method, **kwargs)
    x = solver.solve(A, b)
    return x, solver.solver_info
