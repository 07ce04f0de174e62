"""RobotIPOPTSolver / IPOPTConfig / BaseOptimizationProblem on problems with known solutions."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from figaroh.tools import robotipopt as ri
from figaroh.tools.robotipopt import (
    BaseOptimizationProblem,
    IPOPTConfig,
    RobotIPOPTSolver,
    TrajectoryOptimizationProblem,
    create_trajectory_solver,
)

pytest.importorskip("cyipopt")


def quiet(config: IPOPTConfig | None = None) -> IPOPTConfig:
    config = config or IPOPTConfig.for_trajectory_optimization()
    config.print_level = 0
    return config


class QuadraticProblem(BaseOptimizationProblem):
    """The documented toy problem: minimise x0² + x1² subject to x0 + x1 = 1."""

    def __init__(self, x0=(1.0, 1.0), bounds=([-10, -10], [10, 10]), cons_bounds=([0.0], [0.0])):
        super().__init__("Quadratic")
        self._x0, self._bounds, self._cons_bounds = list(x0), bounds, cons_bounds

    def get_variable_bounds(self):
        return self._bounds

    def get_constraint_bounds(self):
        return self._cons_bounds

    def get_initial_guess(self):
        return self._x0

    def objective(self, x):
        return float(x[0] ** 2 + x[1] ** 2)

    def constraints(self, x):
        return np.array([x[0] + x[1] - 1.0])


class Rosenbrock(BaseOptimizationProblem):
    """Unconstrained-like Rosenbrock in a box, minimum at (1, 1); one inactive constraint."""

    def __init__(self):
        super().__init__("Rosenbrock")

    def get_variable_bounds(self):
        return [-5.0, -5.0], [5.0, 5.0]

    def get_constraint_bounds(self):
        return [-100.0], [100.0]

    def get_initial_guess(self):
        return [-1.2, 1.0]

    def objective(self, x):
        return float(100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2)

    def constraints(self, x):
        return np.array([x[0] * x[1]])


# ---------------------------------------------------------------------------- toy problem


@pytest.mark.parametrize("x0", [(1.0, 1.0), (3.0, -4.0), (0.5, 0.5)])
def test_toy_problem_solved_to_1e6(x0):
    """Analytic solution x = (0.5, 0.5), f = 0.5 (Lagrange: 2x_i = λ)."""
    solver = RobotIPOPTSolver(QuadraticProblem(x0), quiet())
    assert solver.validate_problem_setup()
    success, results = solver.solve()
    assert success and results["success"]
    np.testing.assert_allclose(results["x_opt"], [0.5, 0.5], atol=1e-6)
    assert results["obj_val"] == pytest.approx(0.5, abs=1e-6)
    assert results["status"] in (0, 1) and results["status_name"].startswith("Solve")
    assert results["infeasible"] is False
    # intermediate() logged every iteration, in order
    iters = results["iteration_data"]["iterations"]
    assert results["iterations"] == len(iters) > 0
    assert iters == sorted(iters)
    assert results["iteration_data"]["obj_values"][-1] == pytest.approx(0.5, abs=1e-6)
    summary = solver.get_solution_summary()
    assert "Objective: 5.000000e-01" in summary and "Variables: 2" in summary
    assert solver.solve_history[-1] is results


def test_create_trajectory_solver_documented_example():
    def my_objective(x):
        return np.sum(x**2)

    def my_constraints(x):
        return np.array([x[0] + x[1] - 1.0])

    def get_bounds():
        return ([-10, -10], [10, 10]), ([0], [0])

    solver = create_trajectory_solver(
        my_objective, my_constraints, get_bounds, lambda: [0.2, 3.0], config=quiet()
    )
    assert isinstance(solver.problem, TrajectoryOptimizationProblem)
    assert solver.problem.name == "CustomTrajectory"
    success, results = solver.solve()
    assert success
    np.testing.assert_allclose(results["x_opt"], [0.5, 0.5], atol=1e-6)
    with pytest.raises(TypeError, match="callable"):
        create_trajectory_solver(my_objective, None, get_bounds, lambda: [0, 0])


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bounds": ([-10], [10, 10])}, "Variable bounds dimension mismatch"),
        ({"bounds": ([-10, -10, -10], [10, 10, 10])}, "Variable bounds dimension mismatch"),
        ({"cons_bounds": ([0.0], [0.0, 1.0])}, "Constraint bounds dimension mismatch"),
        ({"cons_bounds": ([0.0, 0.0], [0.0, 0.0])}, "Constraint function dimension mismatch"),
        ({"bounds": ([5, -10], [1, 10])}, "lower variable bound > upper bound"),
        ({"x0": (np.nan, 1.0)}, "NaN or inf"),
    ],
)
def test_validate_problem_setup_catches_bad_setups(kwargs, message, caplog):
    solver = RobotIPOPTSolver(QuadraticProblem(**kwargs), quiet())
    with caplog.at_level(logging.ERROR, logger="figaroh.tools.robotipopt"):
        assert solver.validate_problem_setup() is False
    assert any(message in e for e in solver.validation_errors)
    assert message in caplog.text


@pytest.mark.parametrize("bounds", [([-10], [10, 10]), ([-10, -10], [10])])
def test_solve_refuses_wrong_bound_lengths(bounds):
    solver = RobotIPOPTSolver(QuadraticProblem(bounds=bounds), quiet())
    with pytest.raises(ValueError, match="Variable bounds dimension mismatch"):
        solver.solve()


def test_validate_reports_non_finite_objective():
    class NaNObjective(QuadraticProblem):
        def objective(self, x):
            return float("nan")

    solver = RobotIPOPTSolver(NaNObjective(), quiet())
    assert not solver.validate_problem_setup()
    assert "non-finite" in solver.validation_errors[0]


def test_solver_type_checks():
    with pytest.raises(TypeError, match="BaseOptimizationProblem"):
        RobotIPOPTSolver(object())
    with pytest.raises(TypeError, match="IPOPTConfig"):
        RobotIPOPTSolver(QuadraticProblem(), {"tol": 1e-6})
    assert RobotIPOPTSolver(QuadraticProblem()).get_solution_summary() == "No solution available"


# ---------------------------------------------------------------------------- derivatives


def test_default_gradient_and_jacobian_match_analytic():
    """numdifftools defaults against the analytic Rosenbrock gradient and g = x0·x1."""
    p = Rosenbrock()
    x = np.array([0.3, -0.7])
    grad = np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]), 200 * (x[1] - x[0] ** 2)])
    np.testing.assert_allclose(p.gradient(x), grad, rtol=1e-8)
    np.testing.assert_allclose(p.jacobian(x), [[x[1], x[0]]], rtol=1e-8)
    assert p.hessian(x, np.ones(1), 1.0) is False


def test_jacobian_without_constraints_is_empty():
    class NoConstraints(Rosenbrock):
        def get_constraint_bounds(self):
            return [], []

        def constraints(self, x):
            return np.zeros(0)

    p = NoConstraints()
    assert p.jacobian(np.zeros(2)).shape == (0, 2)
    success, results = RobotIPOPTSolver(p, quiet(IPOPTConfig(tolerance=1e-10))).solve()
    assert success
    np.testing.assert_allclose(results["x_opt"], [1.0, 1.0], atol=1e-5)


@pytest.mark.filterwarnings(
    "ignore:All-NaN slice:RuntimeWarning", "ignore:All-NaN slice:UserWarning"
)
def test_non_finite_numerical_gradient_raises():
    class Singular(Rosenbrock):
        def objective(self, x):
            return float(1.0 / (x[0] - 0.3)) if x[0] != 0.3 else float("inf")

    with pytest.raises(FloatingPointError, match="not finite"):
        Singular().gradient(np.array([0.3, 0.0]))


def test_rosenbrock_with_exact_hessian_request_falls_back(caplog):
    """for_parameter_identification asks for the exact Hessian; without hessian() the
    solver warns and uses L-BFGS, and still finds the minimum (1, 1)."""
    config = quiet(IPOPTConfig.for_parameter_identification())
    with caplog.at_level(logging.WARNING, logger="figaroh.tools.robotipopt"):
        success, results = RobotIPOPTSolver(Rosenbrock(), config).solve()
    assert "does not implement hessian()" in caplog.text
    assert success
    np.testing.assert_allclose(results["x_opt"], [1.0, 1.0], atol=1e-4)


def test_user_hessian_is_used_with_exact_approximation():
    class ExactQuadratic(QuadraticProblem):
        calls = 0

        def gradient(self, x):
            return 2 * np.asarray(x)

        def jacobian(self, x):
            return np.array([[1.0, 1.0]])

        def hessianstructure(self):
            return np.array([0, 1]), np.array([0, 1])

        def hessian(self, x, lagrange, obj_factor):
            type(self).calls += 1
            return obj_factor * np.array([2.0, 2.0])

    config = quiet(IPOPTConfig(hessian_approximation="exact"))
    success, results = RobotIPOPTSolver(ExactQuadratic((4.0, -1.0)), config).solve()
    assert success and ExactQuadratic.calls > 0
    np.testing.assert_allclose(results["x_opt"], [0.5, 0.5], atol=1e-8)


# ---------------------------------------------------------------------------- outcomes


def test_infeasible_problem_is_reported_explicitly(caplog):
    """x0 + x1 = 1 cannot hold with both x ≥ 2: status 2, infeasible=True, clear log."""
    problem = QuadraticProblem(x0=(2.5, 2.5), bounds=([2, 2], [3, 3]))
    with caplog.at_level(logging.ERROR, logger="figaroh.tools.robotipopt"):
        success, results = RobotIPOPTSolver(problem, quiet()).solve()
    assert not success
    assert results["infeasible"] is True
    assert results["status_name"] in ("Infeasible_Problem_Detected", "Restoration_Failed")
    assert "locally infeasible" in caplog.text or "restoration phase failed" in caplog.text


def test_iteration_limit_is_not_success():
    config = quiet(IPOPTConfig(max_iterations=2))
    success, results = RobotIPOPTSolver(Rosenbrock(), config).solve()
    assert not success
    assert results["status"] == -1 and results["status_name"] == "Maximum_Iterations_Exceeded"


def test_callback_exception_is_returned_not_raised():
    class Broken(QuadraticProblem):
        def constraints(self, x):
            if self.iteration_data["iterations"]:
                raise RuntimeError("sensor model exploded")
            return super().constraints(x)

    success, results = RobotIPOPTSolver(Broken(), quiet()).solve()
    assert not success
    assert "sensor model exploded" in results["error"]


def test_keep_iterates_records_the_path():
    solver = RobotIPOPTSolver(Rosenbrock(), quiet(IPOPTConfig(tolerance=1e-8)), keep_iterates=True)
    success, results = solver.solve()
    assert success
    iterates = results["iterates"]
    assert len(iterates) == results["iterations"]
    np.testing.assert_allclose(iterates[0]["x"], [-1.2, 1.0])
    last = iterates[-1]
    assert last["obj_val"] == pytest.approx(Rosenbrock().objective(last["x"]), rel=1e-9, abs=1e-12)


def test_progress_bar_runs():
    success, _ = RobotIPOPTSolver(QuadraticProblem(), quiet(), progress=True).solve()
    assert success


def test_trajectory_problem_without_functions():
    class Bare(TrajectoryOptimizationProblem):
        def get_variable_bounds(self):
            return [0], [1]

        def get_constraint_bounds(self):
            return [], []

        def get_initial_guess(self):
            return [0.5]

    bare = Bare()
    assert set(bare.trajectory_data) == {"times", "positions", "velocities", "accelerations"}
    with pytest.raises(NotImplementedError, match="set_objective_function"):
        bare.objective(np.zeros(1))
    with pytest.raises(NotImplementedError, match="set_constraint_function"):
        bare.constraints(np.zeros(1))
    with pytest.raises(TypeError):
        bare.set_objective_function(3)


# ---------------------------------------------------------------------------- config


def test_ipopt_options_encoding_and_presets():
    config = IPOPTConfig(output_file="ipopt.log", custom_options={"mu_strategy": "adaptive"})
    opts = config.to_ipopt_options()
    assert all(isinstance(k, bytes) for k in opts)
    assert opts[b"tol"] == 1e-6 and opts[b"max_iter"] == 3000
    assert opts[b"hessian_approximation"] == b"limited-memory"
    assert opts[b"check_derivatives_for_naninf"] == b"yes"
    assert opts[b"warm_start_init_point"] == b"yes"
    assert opts[b"output_file"] == b"ipopt.log"
    assert opts[b"mu_strategy"] == b"adaptive"
    traj = IPOPTConfig.for_trajectory_optimization()
    assert (traj.tolerance, traj.max_iterations, traj.print_level) == (1e-4, 1000, 4)
    assert traj.to_ipopt_options()[b"adaptive_mu_globalization"] == b"obj-constr-filter"
    ident = IPOPTConfig.for_parameter_identification()
    assert ident.hessian_approximation == "exact" and ident.tolerance == 1e-8
    assert ident.to_ipopt_options()[b"mu_strategy"] == b"monotone"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tolerance": 0.0},
        {"tolerance": float("nan")},
        {"max_iterations": -1},
        {"print_level": 13},
        {"hessian_approximation": "bfgs"},
        {"custom_options": [("tol", 1)]},
    ],
)
def test_ipopt_config_rejects_bad_values(kwargs):
    with pytest.raises(ValueError):
        IPOPTConfig(**kwargs)


def test_missing_cyipopt_raises_install_instructions(monkeypatch):
    monkeypatch.setitem(sys.modules, "cyipopt", None)
    with pytest.raises(ImportError) as info:
        RobotIPOPTSolver(QuadraticProblem())
    message = str(info.value)
    for fragment in ("coinor-libipopt-dev", "liblapack-dev", "pkg-config", "pip install cyipopt"):
        assert fragment in message
    assert message == ri.CYIPOPT_INSTALL_HINT
