"""General IPOPT-based optimisation framework for robotics problems (on cyipopt).

A problem is a subclass of :class:`BaseOptimizationProblem` describing

.. math::

    \\min_{x \\in \\mathbb{R}^n} f(x) \\quad \\text{s.t.} \\quad
    g_L \\le g(x) \\le g_U, \\qquad x_L \\le x \\le x_U,

through ``objective`` (f), ``constraints`` (g), ``get_variable_bounds``
(x_L, x_U), ``get_constraint_bounds`` (g_L, g_U) and ``get_initial_guess``.
Derivatives default to numerical differentiation (numdifftools); override
``gradient`` / ``jacobian`` with analytic versions when available.
:class:`RobotIPOPTSolver` validates the set-up, runs IPOPT (interior point,
limited-memory BFGS Hessian by default) and returns ``(success, results)``.

Units are whatever the problem uses: IPOPT is unit-agnostic, but tolerances
act on the scaled problem, so keep variables O(1) when possible.

cyipopt (and the system IPOPT it links against) is an optional dependency
(``pip install "figaroh[ipopt]"``): the module imports without it, and
:class:`RobotIPOPTSolver` raises :class:`~figaroh.errors.MissingDependencyError`
(an ``ImportError``) naming the install commands when it is missing.

Example:
    >>> class Toy(BaseOptimizationProblem):
    ...     def get_variable_bounds(self): return [-10, -10], [10, 10]
    ...     def get_constraint_bounds(self): return [0.0], [0.0]
    ...     def get_initial_guess(self): return [0.5, 0.5]
    ...     def objective(self, x): return float(np.sum(x**2))
    ...     def constraints(self, x): return np.array([x[0] + x[1] - 1.0])
    >>> success, res = RobotIPOPTSolver(Toy()).solve()  # x_opt ≈ [0.5, 0.5]
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Dict, List, Mapping, Tuple, Union

import numpy as np

from figaroh._optional import missing_message, require

logger = logging.getLogger(__name__)

__all__ = [
    "IPOPTConfig",
    "BaseOptimizationProblem",
    "RobotIPOPTSolver",
    "TrajectoryOptimizationProblem",
    "create_trajectory_solver",
    "IPOPT_STATUS",
    "SUCCESS_STATUSES",
    "CYIPOPT_INSTALL_HINT",
    "require_cyipopt",
]

#: What needs cyipopt, for the message of the error raised when it is missing.
CYIPOPT_PURPOSE = "IPOPT optimisation (optimal trajectories, RobotIPOPTSolver)"

#: How to install cyipopt (the message of the MissingDependencyError raised when it is missing).
CYIPOPT_INSTALL_HINT = missing_message(
    "cyipopt",
    extra="ipopt",
    purpose=CYIPOPT_PURPOSE,
    note=(
        "cyipopt builds against the system IPOPT: install it and its build tools first "
        "(Debian/Ubuntu: sudo apt-get install coinor-libipopt-dev liblapack-dev libblas-dev "
        "pkg-config); `make install` does both."
    ),
)

#: IPOPT ApplicationReturnStatus codes → names.
IPOPT_STATUS: Dict[int, str] = {
    0: "Solve_Succeeded",
    1: "Solved_To_Acceptable_Level",
    2: "Infeasible_Problem_Detected",
    3: "Search_Direction_Becomes_Too_Small",
    4: "Diverging_Iterates",
    5: "User_Requested_Stop",
    6: "Feasible_Point_Found",
    -1: "Maximum_Iterations_Exceeded",
    -2: "Restoration_Failed",
    -3: "Error_In_Step_Computation",
    -4: "Maximum_CpuTime_Exceeded",
    -5: "Maximum_WallTime_Exceeded",
    -10: "Not_Enough_Degrees_Of_Freedom",
    -11: "Invalid_Problem_Definition",
    -12: "Invalid_Option",
    -13: "Invalid_Number_Detected",
    -100: "Unrecoverable_Exception",
    -101: "NonIpopt_Exception_Thrown",
    -102: "Insufficient_Memory",
    -199: "Internal_Error",
}

#: Exit codes counted as success: solved (0) and solved to acceptable level (1).
#: (-1 is the *iteration limit*, not an acceptable solution.)
SUCCESS_STATUSES = (0, 1)

_INFEASIBLE_STATUSES = (2, -2)


def require_cyipopt() -> ModuleType:
    """The ``cyipopt`` module.

    Raises:
        MissingDependencyError: cyipopt is not installed (an ``ImportError``
            whose message is :data:`CYIPOPT_INSTALL_HINT`).
    """
    return require("cyipopt", extra="ipopt", purpose=CYIPOPT_PURPOSE, message=CYIPOPT_INSTALL_HINT)


def _as_bytes(value: Any) -> Any:
    return value.encode() if isinstance(value, str) else value


# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------


@dataclass
class IPOPTConfig:
    """Configuration parameters for the IPOPT solver.

    Attributes:
        tolerance: Primary convergence tolerance ``tol`` (scaled NLP error).
        acceptable_tolerance: Fallback tolerance ``acceptable_tol`` (also
            used as ``acceptable_obj_change_tol``).
        max_iterations: Maximum number of iterations ``max_iter``.
        max_cpu_time: Maximum CPU time [s].
        print_level: IPOPT console verbosity, 0 (silent) … 12.
        output_file: File receiving the IPOPT log (None: none).
        hessian_approximation: ``"limited-memory"`` (L-BFGS) or ``"exact"``
            (needs a problem that overrides :meth:`BaseOptimizationProblem.hessian`).
        warm_start: ``warm_start_init_point`` (start from the given point and
            multipliers).
        check_derivatives: ``check_derivatives_for_naninf`` (abort on NaN/inf
            derivatives).
        linear_solver: ``"mumps"``, ``"ma27"``, ``"ma57"``, ``"ma77"``, ...
        custom_options: Extra IPOPT options; ``str`` keys/values are encoded
            to bytes by :meth:`to_ipopt_options`.

    Raises:
        ValueError: A non-positive tolerance/limit, a print level outside
            0…12 or an unknown Hessian approximation.
    """

    tolerance: float = 1e-6
    acceptable_tolerance: float = 1e-4
    max_iterations: int = 3000
    max_cpu_time: float = 1e6
    print_level: int = 5
    output_file: str | None = None
    hessian_approximation: str = "limited-memory"
    warm_start: bool = True
    check_derivatives: bool = True
    linear_solver: str = "mumps"
    custom_options: Dict[Any, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("tolerance", "acceptable_tolerance", "max_cpu_time"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
                raise ValueError(
                    f"IPOPTConfig.{name} must be a positive finite number, got {value!r}"
                )
        if not isinstance(self.max_iterations, (int, np.integer)) or self.max_iterations < 0:
            raise ValueError(
                "IPOPTConfig.max_iterations must be a non-negative integer, "
                f"got {self.max_iterations!r}"
            )
        if not isinstance(self.print_level, (int, np.integer)) or not 0 <= self.print_level <= 12:
            raise ValueError(f"IPOPTConfig.print_level must be in 0…12, got {self.print_level!r}")
        if self.hessian_approximation not in ("limited-memory", "exact"):
            raise ValueError(
                "IPOPTConfig.hessian_approximation must be 'limited-memory' or 'exact', "
                f"got {self.hessian_approximation!r}"
            )
        if not isinstance(self.custom_options, dict):
            raise ValueError(
                "IPOPTConfig.custom_options must be a dict, "
                f"got {type(self.custom_options).__name__}"
            )

    def to_ipopt_options(self) -> Dict[bytes, Any]:
        """IPOPT option dictionary (bytes keys, string values as bytes).

        Returns:
            ``{option: value}`` ready for ``cyipopt.Problem.add_option``;
            ``custom_options`` override the fields.
        """
        options: Dict[bytes, Any] = {
            b"tol": float(self.tolerance),
            b"acceptable_tol": float(self.acceptable_tolerance),
            b"max_iter": int(self.max_iterations),
            b"max_cpu_time": float(self.max_cpu_time),
            b"print_level": int(self.print_level),
            b"hessian_approximation": self.hessian_approximation.encode(),
            b"linear_solver": self.linear_solver.encode(),
            b"check_derivatives_for_naninf": b"yes" if self.check_derivatives else b"no",
            b"warm_start_init_point": b"yes" if self.warm_start else b"no",
            b"acceptable_obj_change_tol": float(self.acceptable_tolerance),
        }
        if self.output_file:
            options[b"output_file"] = str(self.output_file).encode()
        for key, value in self.custom_options.items():
            options[_as_bytes(key)] = _as_bytes(value)
        return options

    @classmethod
    def for_trajectory_optimization(cls) -> IPOPTConfig:
        """Speed-oriented settings: tol 1e-4, 1000 iterations, adaptive barrier."""
        return cls(
            tolerance=1e-4,
            acceptable_tolerance=1e-3,
            max_iterations=1000,
            print_level=4,
            hessian_approximation="limited-memory",
            custom_options={
                b"mu_strategy": b"adaptive",
                b"adaptive_mu_globalization": b"obj-constr-filter",
            },
        )

    @classmethod
    def for_parameter_identification(cls) -> IPOPTConfig:
        """Precision-oriented settings: tol 1e-8, exact Hessian, monotone barrier."""
        return cls(
            tolerance=1e-8,
            acceptable_tolerance=1e-6,
            max_iterations=5000,
            print_level=3,
            hessian_approximation="exact",
            custom_options={
                b"mu_strategy": b"monotone",
                b"fixed_variable_treatment": b"make_parameter",
            },
        )


# ---------------------------------------------------------------------------
# problems
# ---------------------------------------------------------------------------


class BaseOptimizationProblem(ABC):
    """Abstract base class of IPOPT problems.

    Subclasses implement :meth:`get_variable_bounds`,
    :meth:`get_constraint_bounds`, :meth:`get_initial_guess`,
    :meth:`objective` and :meth:`constraints`; :meth:`gradient` and
    :meth:`jacobian` default to numerical differentiation (numdifftools,
    adaptive central differences with Richardson extrapolation), and
    :meth:`hessian` to IPOPT's quasi-Newton approximation.

    Args:
        name: Human-readable problem name (used in logs).

    Attributes:
        name: Problem name.
        logger: ``logging.getLogger("figaroh.tools.robotipopt.<name>")``.
        iteration_data: ``{"iterations", "obj_values",
            "constraint_violations", "solve_times"}`` lists filled by
            :meth:`intermediate` (``solve_times`` [s] since the first iteration).
        callback_data: Free storage for passing data between methods.
    """

    def __init__(self, name: str = "OptimizationProblem"):
        self.name = str(name)
        self.logger = logging.getLogger(f"{__name__}.{self.name}")
        self.iteration_data: Dict[str, list] = {
            "iterations": [],
            "obj_values": [],
            "constraint_violations": [],
            "solve_times": [],
        }
        self.callback_data: Dict[str, Any] = {}
        self._t_start: float | None = None
        self._progress = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, "
            f"iterations_logged={len(self.iteration_data['iterations'])})"
        )

    def reset_iteration_data(self) -> None:
        """Clear :attr:`iteration_data` (called at the start of every solve)."""
        for values in self.iteration_data.values():
            values.clear()
        self._t_start = None

    # -- required ------------------------------------------------------------
    @abstractmethod
    def get_variable_bounds(self) -> Tuple[List[float], List[float]]:
        """Bounds of the optimisation variables.

        Returns:
            ``(lower_bounds, upper_bounds)``, each of length n (use ±2e19 for
            "unbounded", IPOPT's infinity).
        """

    @abstractmethod
    def get_constraint_bounds(self) -> Tuple[List[float], List[float]]:
        """Bounds of the constraint functions.

        Returns:
            ``(constraint_lower_bounds, constraint_upper_bounds)``, each of
            length m (equal entries make an equality constraint).
        """

    @abstractmethod
    def get_initial_guess(self) -> List[float]:
        """Initial guess x0 (length n)."""

    @abstractmethod
    def objective(self, x: np.ndarray) -> float:
        """Objective value f(x) (a float)."""

    @abstractmethod
    def constraints(self, x: np.ndarray) -> np.ndarray:
        """Constraint values g(x), shape (m,)."""

    # -- derivatives -----------------------------------------------------------
    def gradient(self, x: np.ndarray) -> np.ndarray:
        """Gradient ∇f(x), shape (n,), by numerical differentiation (numdifftools).

        Raises:
            FloatingPointError: The numerical gradient is not finite (the
                objective is not defined around ``x``).
        """
        import numdifftools as nd

        x = np.asarray(x, dtype=float)
        grad = np.asarray(nd.Gradient(self.objective)(x), dtype=float).reshape(x.shape)
        if not np.all(np.isfinite(grad)):
            raise FloatingPointError(
                f"{self.name}: numerical gradient is not finite at x; check that the objective "
                "is finite in a neighbourhood of x or override gradient()"
            )
        return grad

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """Constraint Jacobian ∂g/∂x, dense (m, n), by numdifftools.

        Returns:
            ``(m, n)`` array; ``(0, n)`` without constraints.

        Raises:
            FloatingPointError: The numerical Jacobian is not finite.
        """
        import numdifftools as nd

        x = np.asarray(x, dtype=float)
        g = np.atleast_1d(np.asarray(self.constraints(x), dtype=float))
        if g.size == 0:
            return np.zeros((0, x.size))
        jac = np.asarray(nd.Jacobian(lambda z: np.atleast_1d(self.constraints(z)))(x), dtype=float)
        jac = jac.reshape(g.size, x.size)
        if not np.all(np.isfinite(jac)):
            raise FloatingPointError(
                f"{self.name}: numerical constraint Jacobian is not finite at x; "
                "override jacobian()"
            )
        self.logger.debug("Constraint jacobian shape: %s", jac.shape)
        return jac

    def hessian(
        self, x: np.ndarray, lagrange: np.ndarray, obj_factor: float
    ) -> Union[bool, np.ndarray]:
        """Hessian of the Lagrangian ``σ∇²f + Σ λ_i ∇²g_i``.

        The default returns False: IPOPT's limited-memory approximation is
        used (:class:`RobotIPOPTSolver` switches to it when this method is not
        overridden). Overrides return the lower triangle values (see cyipopt).
        """
        return False

    # -- callback ------------------------------------------------------------
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
        """Per-iteration callback: records and logs the iteration.

        Args:
            alg_mod: 0 regular mode, 1 restoration phase.
            iter_count: Iteration number.
            obj_value: Objective value (unscaled).
            inf_pr: Primal infeasibility (max constraint violation).
            inf_du: Dual infeasibility.
            mu: Barrier parameter.
            d_norm: Norm of the primal step.
            regularization_size: Hessian regularisation.
            alpha_du: Dual step size.
            alpha_pr: Primal step size.
            ls_trials: Line-search trials.

        Returns:
            True to continue (False would stop IPOPT).
        """
        now = time.perf_counter()
        if self._t_start is None:
            self._t_start = now
        self.iteration_data["iterations"].append(int(iter_count))
        self.iteration_data["obj_values"].append(float(obj_value))
        self.iteration_data["constraint_violations"].append(float(max(inf_pr, inf_du)))
        self.iteration_data["solve_times"].append(now - self._t_start)
        self.logger.debug(
            "iter %4d%s f=%.6e inf_pr=%.2e inf_du=%.2e mu=%.1e alpha_pr=%.2e",
            iter_count,
            "r" if alg_mod == 1 else " ",
            obj_value,
            inf_pr,
            inf_du,
            mu,
            alpha_pr,
        )
        if self._progress is not None:
            self._progress.update(1)
            self._progress.set_postfix(f=f"{obj_value:.4g}", inf_pr=f"{inf_pr:.1e}", refresh=False)
        return True


class TrajectoryOptimizationProblem(BaseOptimizationProblem):
    """Trajectory problem whose objective/constraints can be plugged in as functions.

    Attributes:
        trajectory_data: ``{"times", "positions", "velocities",
            "accelerations"}`` storage for the problem's trajectory.
    """

    def __init__(self, name: str = "TrajectoryOptimization"):
        super().__init__(name)
        self.trajectory_data: Dict[str, Any] = {
            "times": None,
            "positions": None,
            "velocities": None,
            "accelerations": None,
        }

    def set_objective_function(self, obj_func: Callable[[np.ndarray], float]) -> None:
        """Use ``obj_func(x) -> float`` as the objective."""
        if not callable(obj_func):
            raise TypeError(f"objective function must be callable, got {type(obj_func).__name__}")
        self._custom_objective = obj_func

    def set_constraint_function(self, cons_func: Callable[[np.ndarray], np.ndarray]) -> None:
        """Use ``cons_func(x) -> (m,) array`` as the constraint function."""
        if not callable(cons_func):
            raise TypeError(f"constraint function must be callable, got {type(cons_func).__name__}")
        self._custom_constraints = cons_func

    def objective(self, x: np.ndarray) -> float:
        if hasattr(self, "_custom_objective"):
            return float(self._custom_objective(x))
        raise NotImplementedError(
            f"{type(self).__name__}: implement objective() or call set_objective_function()"
        )

    def constraints(self, x: np.ndarray) -> np.ndarray:
        if hasattr(self, "_custom_constraints"):
            return np.atleast_1d(np.asarray(self._custom_constraints(x), dtype=float))
        raise NotImplementedError(
            f"{type(self).__name__}: implement constraints() or call set_constraint_function()"
        )


# ---------------------------------------------------------------------------
# solver
# ---------------------------------------------------------------------------


class _CyipoptAdapter:
    """The object cyipopt calls: forwards to the problem, with array conversions."""

    def __init__(self, problem: BaseOptimizationProblem, use_hessian: bool, m: int, n: int):
        self._p = problem
        self._m = m
        self._n = n
        self.iterates: List[Dict[str, Any]] | None = None
        if use_hessian:
            self.hessian = problem.hessian
            if hasattr(problem, "hessianstructure"):
                self.hessianstructure = problem.hessianstructure
        if hasattr(problem, "jacobianstructure"):
            self.jacobianstructure = problem.jacobianstructure

    def objective(self, x):
        return float(self._p.objective(np.asarray(x, dtype=float)))

    def gradient(self, x):
        x = np.asarray(x, dtype=float)
        self._grad_x = x.copy()  # IPOPT evaluates ∇f at each accepted iterate before intermediate
        return np.asarray(self._p.gradient(x), dtype=float).ravel()

    def constraints(self, x):
        return np.asarray(self._p.constraints(np.asarray(x, dtype=float)), dtype=float).ravel()

    def jacobian(self, x):
        return np.asarray(self._p.jacobian(np.asarray(x, dtype=float)), dtype=float).ravel()

    def intermediate(self, *args):
        keep_going = bool(self._p.intermediate(*args))
        if self.iterates is not None and args[0] == 0:
            x = getattr(self, "_grad_x", None)
            if x is not None:
                self.iterates.append(
                    {
                        "iteration": int(args[1]),
                        "obj_val": float(args[2]),
                        "inf_pr": float(args[3]),
                        "x": x,
                    }
                )
        return keep_going


class RobotIPOPTSolver:
    """IPOPT solver with set-up validation, result analysis and history.

    Args:
        problem: The :class:`BaseOptimizationProblem` to solve.
        config: Solver settings (default :meth:`IPOPTConfig.for_trajectory_optimization`).
        progress: Show a tqdm progress bar (one tick per IPOPT iteration).
        keep_iterates: Record every regular-mode iterate in ``results["iterates"]``
            (``{"iteration", "obj_val", "inf_pr", "x"}``), e.g. to fall back on
            the best feasible iterate when IPOPT stops elsewhere.

    Attributes:
        problem, config, logger: As given / ``figaroh.tools.robotipopt.RobotIPOPTSolver``.
        last_solution: Last ``x_opt`` (None before a solve).
        last_info: Last cyipopt info dict.
        solve_history: Results dict of every solve.
        validation_errors: Messages of the last :meth:`validate_problem_setup`.

    Raises:
        TypeError: ``problem`` is not a :class:`BaseOptimizationProblem`.
        MissingDependencyError: cyipopt is not installed (an ImportError; the message
            says how to install it).
    """

    def __init__(
        self,
        problem: BaseOptimizationProblem,
        config: IPOPTConfig | None = None,
        *,
        progress: bool = False,
        keep_iterates: bool = False,
    ):
        if not isinstance(problem, BaseOptimizationProblem):
            raise TypeError(
                f"problem must be a BaseOptimizationProblem, got {type(problem).__name__}"
            )
        if config is not None and not isinstance(config, IPOPTConfig):
            raise TypeError(f"config must be an IPOPTConfig, got {type(config).__name__}")
        require_cyipopt()
        self.problem = problem
        self.config = config or IPOPTConfig.for_trajectory_optimization()
        self.progress = bool(progress)
        self.keep_iterates = bool(keep_iterates)
        self.logger = logging.getLogger(f"{__name__}.RobotIPOPTSolver")
        self.last_solution: np.ndarray | None = None
        self.last_info: Mapping[str, Any] | None = None
        self.solve_history: List[Dict[str, Any]] = []
        self.validation_errors: List[str] = []

    def __repr__(self) -> str:
        return (
            f"RobotIPOPTSolver(problem={self.problem.name!r}, tol={self.config.tolerance:g}, "
            f"max_iter={self.config.max_iterations}, solves={len(self.solve_history)})"
        )

    # -- set-up --------------------------------------------------------------
    def _problem_arrays(self):
        x0 = np.asarray(self.problem.get_initial_guess(), dtype=float).ravel()
        lb, ub = (np.asarray(b, dtype=float).ravel() for b in self.problem.get_variable_bounds())
        cl, cu = (np.asarray(b, dtype=float).ravel() for b in self.problem.get_constraint_bounds())
        return x0, lb, ub, cl, cu

    def _structural_errors(self, x0, lb, ub, cl, cu) -> List[str]:
        errors = []
        n = x0.size
        if n == 0:
            errors.append("initial guess is empty: the problem has no variables")
        if lb.size != n or ub.size != n:
            errors.append(
                f"Variable bounds dimension mismatch: {n} variables (initial guess) but "
                f"{lb.size} lower and {ub.size} upper bounds"
            )
        if cl.size != cu.size:
            errors.append(
                f"Constraint bounds dimension mismatch: {cl.size} lower and {cu.size} upper bounds"
            )
        if not np.all(np.isfinite(x0)):
            errors.append("initial guess contains NaN or inf")
        for name, arr in (("lower variable", lb), ("upper variable", ub)):
            if np.any(np.isnan(arr)):
                errors.append(f"{name} bounds contain NaN")
        if lb.size == ub.size and np.any(lb > ub):
            bad = np.flatnonzero(lb > ub)[:5].tolist()
            errors.append(f"lower variable bound > upper bound at indices {bad}")
        if cl.size == cu.size and np.any(cl > cu):
            bad = np.flatnonzero(cl > cu)[:5].tolist()
            errors.append(f"lower constraint bound > upper bound at indices {bad}")
        return errors

    def validate_problem_setup(self) -> bool:
        """Check dimensions, bound consistency and finite evaluations at x0.

        Checks: bounds lengths equal the number of variables; constraint
        bounds lengths agree with each other and with ``constraints(x0)``;
        lower ≤ upper; x0, ``objective(x0)`` and ``constraints(x0)`` finite.
        Problems are logged as errors and kept in :attr:`validation_errors`.

        Returns:
            True if the problem appears valid.
        """
        self.logger.info("Validating problem setup...")
        try:
            x0, lb, ub, cl, cu = self._problem_arrays()
            errors = self._structural_errors(x0, lb, ub, cl, cu)
            if not errors:
                obj_val = self.problem.objective(x0.copy())
                if not np.isfinite(obj_val):
                    errors.append(f"Objective function returns non-finite value: {obj_val}")
                g = np.atleast_1d(np.asarray(self.problem.constraints(x0.copy()), dtype=float))
                if g.size != cl.size:
                    errors.append(
                        f"Constraint function dimension mismatch: constraints(x0) has {g.size} "
                        f"values but {cl.size} constraint bounds are given"
                    )
                elif not np.all(np.isfinite(g)):
                    errors.append("Constraint function returns non-finite values")
                if np.any((x0 < lb) | (x0 > ub)):
                    self.logger.warning(
                        "initial guess violates its variable bounds; IPOPT will project it"
                    )
        except Exception as exc:  # noqa: BLE001 - validation reports, never raises
            errors = [f"Problem validation failed: {type(exc).__name__}: {exc}"]
        self.validation_errors = errors
        for message in errors:
            self.logger.error(message)
        if not errors:
            self.logger.info("Problem validation passed")
        return not errors

    # -- solve ---------------------------------------------------------------
    def solve(self) -> Tuple[bool, Dict[str, Any]]:
        """Solve the problem with IPOPT.

        Returns:
            ``(success, results)``; ``success`` is True for IPOPT status 0
            (solved) or 1 (solved to acceptable level). ``results`` keys:
            ``success``, ``x_opt``, ``obj_val``, ``status``, ``status_msg``
            (str), ``status_name``, ``infeasible`` (True when IPOPT reports the
            problem locally infeasible or restoration failed), ``solve_time``
            [s], ``iterations``, ``iteration_data``, ``callback_data``,
            ``ipopt_info``. When a callback raises, ``results`` instead holds
            ``success=False``, ``error`` (message) and ``exception``.

        Raises:
            MissingDependencyError: cyipopt is missing (an ImportError with install
                instructions).
            ValueError: Inconsistent problem dimensions or bounds (the message
                lists every problem found).
        """
        cyipopt = require_cyipopt()
        x0, lb, ub, cl, cu = self._problem_arrays()
        errors = self._structural_errors(x0, lb, ub, cl, cu)
        if errors:
            raise ValueError(f"Invalid problem '{self.problem.name}': " + "; ".join(errors))

        nlp, adapter = self._create_nlp(cyipopt, x0, lb, ub, cl, cu)

        progress = None
        if self.progress:
            from tqdm.auto import tqdm

            progress = tqdm(
                total=self.config.max_iterations + 1, desc=self.problem.name, leave=False
            )
        self.problem._progress = progress
        self.logger.info("Starting IPOPT optimization...")
        # cyipopt logs every callback at INFO level: keep it quiet during the solve
        cy_logger = logging.getLogger("cyipopt")
        cy_level = cy_logger.level
        cy_logger.setLevel(max(cy_level, logging.WARNING))
        start = time.perf_counter()
        try:
            x_opt, info = nlp.solve(x0)
        except Exception as exc:  # noqa: BLE001 - documented: callback errors are returned
            solve_time = time.perf_counter() - start
            self.logger.error("Error during optimization of %s: %s", self.problem.name, exc)
            results: Dict[str, Any] = {
                "success": False,
                "error": f"{type(exc).__name__}: {exc}",
                "exception": exc,
                "solve_time": solve_time,
                "iterations": len(self.problem.iteration_data["iterations"]),
                "iteration_data": {k: list(v) for k, v in self.problem.iteration_data.items()},
                "callback_data": dict(self.problem.callback_data),
            }
            self.solve_history.append(results)
            return False, results
        finally:
            cy_logger.setLevel(cy_level)
            self.problem._progress = None
            if progress is not None:
                progress.close()
            close = getattr(nlp, "close", None)
            if close is not None:
                close()
        solve_time = time.perf_counter() - start

        results = self._solution_results(x_opt, info, solve_time)
        success = results["success"]
        if self.keep_iterates:
            results["iterates"] = adapter.iterates or []
        self.solve_history.append(results)
        return success, results

    def _create_nlp(self, cyipopt: Any, x0, lb, ub, cl, cu) -> Tuple[Any, Any]:
        """``(cyipopt.Problem with the options set, its callback adapter)``.

        An ``exact`` Hessian request falls back to IPOPT's limited-memory
        approximation when the problem does not implement ``hessian()``.
        """
        use_hessian = self.config.hessian_approximation == "exact"
        options = self.config.to_ipopt_options()
        if use_hessian and type(self.problem).hessian is BaseOptimizationProblem.hessian:
            self.logger.warning(
                "hessian_approximation='exact' but %s does not implement hessian(); "
                "using IPOPT's limited-memory approximation",
                type(self.problem).__name__,
            )
            use_hessian = False
            options[b"hessian_approximation"] = b"limited-memory"

        self.logger.info("Setting up IPOPT problem: %s", self.problem.name)
        self.logger.info("Problem dimensions: %d variables, %d constraints", x0.size, cl.size)
        self.problem.reset_iteration_data()
        adapter = _CyipoptAdapter(self.problem, use_hessian, cl.size, x0.size)
        adapter.iterates = [] if self.keep_iterates else None
        nlp = cyipopt.Problem(n=x0.size, m=cl.size, problem_obj=adapter, lb=lb, ub=ub, cl=cl, cu=cu)
        for key, value in options.items():
            nlp.add_option(key, value)
        if self.config.print_level == 0:
            nlp.add_option(b"sb", b"yes")  # no banner either
        return nlp, adapter

    def _solution_results(self, x_opt: Any, info: Mapping[str, Any], solve_time: float) -> dict:
        """The results dictionary of a finished IPOPT run (status logged)."""
        status = int(info["status"])
        msg = info.get("status_msg", b"")
        msg = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
        success = status in SUCCESS_STATUSES
        infeasible = status in _INFEASIBLE_STATUSES
        self.last_solution = np.asarray(x_opt, dtype=float)
        self.last_info = info
        self.logger.info("Optimization completed in %.2f seconds", solve_time)
        self.logger.info("Status: %d (%s) - %s", status, IPOPT_STATUS.get(status, "?"), msg)
        if status == 2:
            self.logger.error(
                "IPOPT found problem '%s' locally infeasible (status 2, "
                "Infeasible_Problem_Detected): no point near the iterates satisfies the "
                "constraints; relax limits or change the start",
                self.problem.name,
            )
        elif status == -2:
            self.logger.error(
                "IPOPT's restoration phase failed on problem '%s' (status -2): it could not "
                "reduce the constraint violation from the current point",
                self.problem.name,
            )
        if not infeasible:
            self.logger.info("Final objective: %.6e", float(info["obj_val"]))
        return {
            "success": success,
            "x_opt": self.last_solution,
            "obj_val": float(info["obj_val"]),
            "status": status,
            "status_msg": msg,
            "status_name": IPOPT_STATUS.get(status, "Unknown"),
            "infeasible": infeasible,
            "solve_time": solve_time,
            "iterations": len(self.problem.iteration_data["iterations"]),
            "iteration_data": {k: list(v) for k, v in self.problem.iteration_data.items()},
            "callback_data": dict(self.problem.callback_data),
            "ipopt_info": info,
        }

    def get_solution_summary(self) -> str:
        """Multi-line summary of the last solve ("No solution available" before)."""
        if self.last_solution is None or self.last_info is None:
            return "No solution available"
        info = self.last_info
        status = int(info["status"])
        msg = info.get("status_msg", b"")
        msg = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
        n_cons = len(np.atleast_1d(self.problem.get_constraint_bounds()[0]))
        return (
            "IPOPT Solution Summary:\n"
            f"  Status: {status} ({IPOPT_STATUS.get(status, '?')}) - {msg}\n"
            f"  Objective: {float(info['obj_val']):.6e}\n"
            f"  Iterations: {len(self.problem.iteration_data['iterations'])}\n"
            f"  Variables: {len(self.last_solution)}\n"
            f"  Constraints: {n_cons}\n"
        )


def create_trajectory_solver(
    objective_func: Callable[[np.ndarray], float],
    constraint_func: Callable[[np.ndarray], np.ndarray],
    get_bounds_func: Callable[[], Tuple[Tuple[List, List], Tuple[List, List]]],
    initial_guess_func: Callable[[], List[float]],
    name: str = "CustomTrajectory",
    *,
    config: IPOPTConfig | None = None,
) -> RobotIPOPTSolver:
    """Build a :class:`RobotIPOPTSolver` from plain functions.

    Args:
        objective_func: ``f(x) -> float``.
        constraint_func: ``g(x) -> (m,) array``.
        get_bounds_func: ``() -> ((var_lb, var_ub), (cons_lb, cons_ub))``.
        initial_guess_func: ``() -> x0``.
        name: Problem name.
        config: Solver settings (default: trajectory-optimisation settings).

    Returns:
        The configured solver (derivatives by numerical differentiation).
    """
    for label, fn in (
        ("objective_func", objective_func),
        ("constraint_func", constraint_func),
        ("get_bounds_func", get_bounds_func),
        ("initial_guess_func", initial_guess_func),
    ):
        if not callable(fn):
            raise TypeError(f"{label} must be callable, got {type(fn).__name__}")

    class CustomProblem(TrajectoryOptimizationProblem):
        def __init__(self) -> None:
            super().__init__(name)
            self.set_objective_function(objective_func)
            self.set_constraint_function(constraint_func)

        def get_variable_bounds(self):
            return get_bounds_func()[0]

        def get_constraint_bounds(self):
            return get_bounds_func()[1]

        def get_initial_guess(self):
            return initial_guess_func()

    return RobotIPOPTSolver(CustomProblem(), config or IPOPTConfig.for_trajectory_optimization())
