"""Tests of :mod:`figaroh.tools.solver` against independent references.

References: ``numpy.linalg.lstsq``, closed forms (ridge, Tikhonov, weighted
LS, equality-constrained KKT system), the lasso/elastic-net KKT conditions,
``cvxopt.solvers.qp`` for inequality-constrained least squares, and
``scipy.optimize.linprog`` for feasibility.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from scipy.optimize import linprog

from figaroh.tools.exceptions import SolverError, SolverInputError
from figaroh.tools.solver import LinearSolver, SingularSystemError, solve_linear_system

cvxopt = pytest.importorskip("cvxopt")


def _problem(seed: int = 0, m: int = 400, n: int = 12, noise: float = 0.05, spread: float = 2.0):
    """Tall, column-scaled (ill-conditioned) random system with a known truth."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, n)) * np.logspace(0, spread, n)
    x_true = rng.normal(size=n)
    b = A @ x_true + noise * rng.normal(size=m)
    return A, b, x_true, rng


def _lstsq(A, b):
    return np.linalg.lstsq(A, b, rcond=None)[0]


def _qp(A, b, G=None, h=None, Aeq=None, beq=None):
    """Reference: min ½‖Ax − b‖² s.t. Gx <= h, Aeq x = beq with cvxopt."""
    opts = {"show_progress": False, "abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12}
    args = [cvxopt.matrix(A.T @ A), cvxopt.matrix(-A.T @ b)]
    args += [cvxopt.matrix(G), cvxopt.matrix(h)] if G is not None else [None, None]
    if Aeq is not None:
        args += [cvxopt.matrix(Aeq), cvxopt.matrix(beq)]
    sol = cvxopt.solvers.qp(*args, options=opts)
    assert sol["status"] == "optimal"
    return np.array(sol["x"]).ravel()


def _l1_kkt(A, b, x, l1, l2=0.0):
    """Relative KKT violation of ½‖Ax − b‖² + ½ l2‖x‖² + l1‖x‖₁ at x."""
    g = A.T @ (b - A @ x) - l2 * x
    nz = x != 0
    v_nz = np.abs(g[nz] - l1 * np.sign(x[nz])).max(initial=0.0)
    v_z = (np.abs(g[~nz]) - l1).max(initial=0.0)
    return max(v_nz, v_z) / np.abs(A.T @ b).max()


# --------------------------------------------------------------------------- #
# Unregularised methods
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("method", ["lstsq", "qr", "svd"])
def test_plain_methods_match_numpy_lstsq(method):
    A, b, _, _ = _problem(spread=3.0)
    x = LinearSolver(method=method).solve(A, b)
    x_ref = _lstsq(A, b)
    np.testing.assert_allclose(x, x_ref, rtol=1e-9, atol=1e-12)
    # Normal equations hold at the solution (independent optimality check).
    assert np.abs(A.T @ (b - A @ x)).max() <= 1e-9 * np.abs(A.T @ b).max()


@pytest.mark.parametrize("method", ["lstsq", "qr", "svd", "constrained", "robust"])
def test_noise_free_recovery_exact(method):
    A, _, x_true, _ = _problem(noise=0.0)
    x = LinearSolver(method=method).solve(A, A @ x_true)
    np.testing.assert_allclose(x, x_true, rtol=1e-9, atol=1e-10)


def test_qr_rank_deficient_raises_linalg_error_svd_returns_min_norm():
    A, b, _, _ = _problem(n=6)
    A[:, 5] = A[:, 0] - 2.0 * A[:, 3]  # exact collinearity
    with pytest.raises(np.linalg.LinAlgError):
        LinearSolver(method="qr").solve(A, b)
    with pytest.raises(SingularSystemError):
        LinearSolver(method="qr").solve(A, b)
    x_min = np.linalg.pinv(A) @ b
    for method in ("svd", "lstsq"):
        s = LinearSolver(method=method)
        np.testing.assert_allclose(s.solve(A, b), x_min, rtol=1e-8, atol=1e-10)
        assert s.solver_info["rank"] == 5
        assert s.solver_info["condition_number"] > 1e12
        assert any("rank deficient" in w for w in s.solver_info["warnings"])


# --------------------------------------------------------------------------- #
# Regularised methods
# --------------------------------------------------------------------------- #
def test_ridge_closed_form_and_l2_regularization_alias():
    A, b, _, _ = _problem(spread=3.0)
    n = A.shape[1]
    alpha = 50.0
    x_ref = np.linalg.solve(A.T @ A + alpha * np.eye(n), A.T @ b)
    np.testing.assert_allclose(
        LinearSolver("ridge", alpha=alpha).solve(A, b), x_ref, rtol=1e-8, atol=1e-12
    )
    # Any least-squares method with regularization='l2' applies the same penalty.
    for method in ("lstsq", "qr", "svd"):
        x = LinearSolver(method, regularization="l2", alpha=alpha).solve(A, b)
        np.testing.assert_allclose(x, x_ref, rtol=1e-8, atol=1e-12)
    # alpha = 0 reduces to least squares; ridge shrinks the solution norm.
    np.testing.assert_allclose(LinearSolver("ridge").solve(A, b), _lstsq(A, b), rtol=1e-9)
    assert np.linalg.norm(x_ref) < np.linalg.norm(_lstsq(A, b))


def test_tikhonov_with_regularisation_matrix_and_prior():
    A, b, _, rng = _problem()
    n = A.shape[1]
    Gamma = np.diff(np.eye(n), axis=0)  # first-difference smoothing (n-1, n)
    x0 = rng.normal(size=n)
    alpha = 30.0
    GG = Gamma.T @ Gamma
    x_ref = np.linalg.solve(A.T @ A + alpha * GG, A.T @ b + alpha * GG @ x0)
    s = LinearSolver("tikhonov", alpha=alpha, regularization_matrix=Gamma, x_prior=x0)
    np.testing.assert_allclose(s.solve(A, b), x_ref, rtol=1e-8, atol=1e-12)
    # Default Γ = I and x₀ = 0: Tikhonov is ridge.
    np.testing.assert_allclose(
        LinearSolver("tikhonov", alpha=alpha).solve(A, b),
        LinearSolver("ridge", alpha=alpha).solve(A, b),
        rtol=1e-10,
    )


def test_weighted_equals_lstsq_on_scaled_rows():
    A, b, _, rng = _problem()
    w = rng.uniform(0.1, 10.0, size=A.shape[0])
    w[:5] = 0.0  # zero weight drops rows
    sw = np.sqrt(w)
    x_ref = _lstsq(A * sw[:, None], b * sw)
    s = LinearSolver("weighted", weights=w)
    x = s.solve(A, b)
    np.testing.assert_allclose(x, x_ref, rtol=1e-9, atol=1e-12)
    assert not np.allclose(x, _lstsq(A, b), rtol=1e-6)
    r = b - A @ x
    assert s.solver_info["weighted_rmse"] == pytest.approx(np.sqrt(np.sum(w * r**2) / w.sum()))
    # Zero-weight rows can hold anything (even huge values) without effect.
    b2 = b.copy()
    b2[:5] = 1e9
    np.testing.assert_allclose(s.solve(A, b2), x_ref, rtol=1e-9, atol=1e-12)


def test_lasso_recovers_sparse_support_and_satisfies_kkt():
    rng = np.random.default_rng(3)
    m, n = 300, 25
    A = rng.normal(size=(m, n)) * np.logspace(0, 1, n)
    x_true = np.zeros(n)
    support = np.array([2, 7, 11, 19])
    x_true[support] = [3.0, -2.0, 1.5, -4.0]
    b = A @ x_true + 0.01 * rng.normal(size=m)
    alpha = 5.0
    s = LinearSolver("lasso", alpha=alpha)
    x = s.solve(A, b)
    np.testing.assert_array_equal(np.flatnonzero(x), support)
    assert np.all(np.sign(x[support]) == np.sign(x_true[support]))
    assert _l1_kkt(A, b, x, alpha) <= s.tol
    assert s.solver_info["converged"] and s.solver_info["n_nonzero"] == support.size
    assert s.solver_info["kkt_violation"] <= s.tol
    # Lasso bias: the estimate is shrunk towards zero but close to the truth.
    np.testing.assert_allclose(x[support], x_true[support], atol=0.05)
    # alpha above ‖Aᵀb‖∞ gives exactly zero.
    assert not np.any(LinearSolver("lasso", alpha=1.01 * np.abs(A.T @ b).max()).solve(A, b))


@pytest.mark.parametrize("seed", range(8))
def test_l1_methods_kkt_on_ill_conditioned_problems(seed):
    A, b, _, rng = _problem(seed=seed, m=150, n=30, spread=3.0, noise=1.0)
    alpha = rng.uniform(0.01, 0.5) * np.abs(A.T @ b).max()
    x = LinearSolver("lasso", alpha=alpha).solve(A, b)
    assert _l1_kkt(A, b, x, alpha) <= 1e-6
    rho = 0.3
    x = LinearSolver("elastic_net", alpha=alpha, l1_ratio=rho).solve(A, b)
    assert _l1_kkt(A, b, x, rho * alpha, (1 - rho) * alpha) <= 1e-6


def test_elastic_net_limits_and_weighted_l1():
    A, b, _, rng = _problem()
    alpha = 40.0
    np.testing.assert_allclose(
        LinearSolver("elastic_net", alpha=alpha, l1_ratio=0.0).solve(A, b),
        LinearSolver("ridge", alpha=alpha).solve(A, b),
        rtol=1e-9,
    )
    np.testing.assert_allclose(
        LinearSolver("elastic_net", alpha=alpha, l1_ratio=1.0).solve(A, b),
        LinearSolver("lasso", alpha=alpha).solve(A, b),
        rtol=1e-9,
        atol=1e-12,
    )
    # regularization='l1' on the weighted method = lasso on √w-scaled rows.
    w = rng.uniform(0.5, 2.0, size=A.shape[0])
    sw = np.sqrt(w)
    x = LinearSolver("weighted", weights=w, regularization="l1", alpha=alpha).solve(A, b)
    assert _l1_kkt(A * sw[:, None], b * sw, x, alpha) <= 1e-6


def test_iterative_non_convergence_warns_and_is_recorded(caplog):
    A, b, _, _ = _problem(n=20, spread=2.0)
    s = LinearSolver("robust", max_iter=1, tol=1e-15)
    b = b.copy()
    b[::20] += 100.0
    with caplog.at_level(logging.WARNING, logger="figaroh.tools.solver"):
        x = s.solve(A, b)
    assert x.shape == (20,)
    assert s.solver_info["converged"] is False
    assert "did not converge" in s.solver_info["message"]
    assert any("did not converge" in rec.getMessage() for rec in caplog.records)


# --------------------------------------------------------------------------- #
# Constrained least squares
# --------------------------------------------------------------------------- #
def test_bounds_hold_and_match_qp_reference():
    A, b, x_true, _ = _problem(spread=1.0)
    n = A.shape[1]
    lb, ub = x_true - 0.3, x_true + 0.3
    ub[::2] = x_true[::2] - 0.1  # truth infeasible for half of the variables
    s = LinearSolver("constrained", bounds=(lb, ub))
    x = s.solve(A, b)
    assert np.all(x >= lb) and np.all(x <= ub)
    G = np.vstack([np.eye(n), -np.eye(n)])
    x_ref = _qp(A, b, G, np.concatenate([ub, -lb]))
    np.testing.assert_allclose(x, x_ref, atol=1e-7)
    assert s.solver_info["bound_violation"] == 0.0
    assert s.solver_info["n_active_bounds"] >= n // 2
    # The identification-style list of (lo, hi) pairs, with None for "free".
    pairs = [(lo, hi) for lo, hi in zip(lb, ub, strict=True)]
    np.testing.assert_allclose(LinearSolver("constrained", bounds=pairs).solve(A, b), x)
    free = LinearSolver("constrained", bounds=[(None, None)] * n).solve(A, b)
    np.testing.assert_allclose(free, _lstsq(A, b), rtol=1e-9)


def test_equality_constraints_exact_and_optimal():
    A, b, _, rng = _problem(spread=3.0)
    n = A.shape[1]
    A_eq = rng.normal(size=(3, n)) * np.logspace(0, 2, n)
    b_eq = rng.normal(size=3)
    x = LinearSolver("constrained", constraints={"A_eq": A_eq, "b_eq": b_eq}).solve(A, b)
    np.testing.assert_allclose(A_eq @ x, b_eq, rtol=0, atol=1e-8)
    # Closed-form KKT system [[AᵀA, A_eqᵀ], [A_eq, 0]] [x; λ] = [Aᵀb; b_eq].
    K = np.block([[A.T @ A, A_eq.T], [A_eq, np.zeros((3, 3))]])
    x_ref = np.linalg.solve(K, np.concatenate([A.T @ b, b_eq]))[:n]
    np.testing.assert_allclose(x, x_ref, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_equalities_inequalities_and_bounds_together(seed):
    A, b, _, rng = _problem(seed=seed, m=200, n=15, spread=2.0, noise=1.0)
    n = A.shape[1]
    A_eq, b_eq = rng.normal(size=(2, n)), rng.normal(size=2)
    A_in, b_in = rng.normal(size=(6, n)), rng.normal(size=6) - 0.5
    lb, ub = -np.full(n, 2.0), np.full(n, 2.0)
    lp = linprog(
        np.zeros(n),
        A_ub=A_in,
        b_ub=b_in,
        A_eq=A_eq,
        b_eq=b_eq,
        bounds=list(zip(lb, ub, strict=True)),
    )
    assert lp.status == 0  # precondition: the random instance is feasible
    cons = {"A_eq": A_eq, "b_eq": b_eq, "A_ineq": A_in, "b_ineq": b_in}
    s = LinearSolver("constrained", constraints=cons, bounds=(lb, ub))
    x = s.solve(A, b)
    np.testing.assert_allclose(A_eq @ x, b_eq, rtol=0, atol=1e-8)
    assert np.all(A_in @ x <= b_in + 1e-9)
    assert np.all(x >= lb - 1e-9) and np.all(x <= ub + 1e-9)
    G = np.vstack([A_in, np.eye(n), -np.eye(n)])
    h = np.concatenate([b_in, ub, -lb])
    x_ref = _qp(A, b, G, h, A_eq, b_eq)
    f = lambda z: 0.5 * np.sum((A @ z - b) ** 2)  # noqa: E731
    assert f(x) <= f(x_ref) * (1 + 1e-9) + 1e-9
    np.testing.assert_allclose(x, x_ref, atol=1e-6)
    assert np.any(A_in @ x >= b_in - 1e-9) or np.any(np.abs(x) >= 2.0 - 1e-9)  # some bind
    info = s.solver_info
    assert info["equality_violation"] <= 1e-8 and info["inequality_violation"] <= 1e-9


def test_active_inequality_is_binding():
    A, b, _, _ = _problem(n=4, spread=0.0)
    x_ls = _lstsq(A, b)
    a = np.array([1.0, 1.0, 0.0, 0.0])
    cap = a @ x_ls - 0.5  # cut off the unconstrained optimum
    x = LinearSolver("constrained", constraints={"A_ineq": a, "b_ineq": cap}).solve(A, b)
    assert a @ x == pytest.approx(cap, abs=1e-10)
    np.testing.assert_allclose(x, _qp(A, b, a[None, :], np.array([cap])), atol=1e-8)


def test_fixed_variable_and_infeasible_problems():
    A, b, _, _ = _problem(n=5)
    lb = np.array([0.25, -np.inf, -np.inf, -np.inf, -np.inf])
    ub = np.array([0.25, np.inf, np.inf, np.inf, np.inf])
    x = LinearSolver("constrained", bounds=(lb, ub)).solve(A, b)
    assert x[0] == pytest.approx(0.25, abs=1e-12)
    np.testing.assert_allclose(x[1:], _lstsq(A[:, 1:], b - 0.25 * A[:, 0]), rtol=1e-8)
    with pytest.raises(SolverError, match="infeasible"):
        LinearSolver(
            "constrained",
            constraints={"A_ineq": np.eye(5)[:1], "b_ineq": [-1.0]},
            bounds=(0.0, 1.0),
        ).solve(A, b)
    with pytest.raises(SolverError, match="inconsistent"):
        LinearSolver(
            "constrained",
            constraints={"A_eq": np.vstack([np.eye(5)[0]] * 2), "b_eq": [0.0, 1.0]},
        ).solve(A, b)


# --------------------------------------------------------------------------- #
# Robust regression
# --------------------------------------------------------------------------- #
def test_robust_is_insensitive_to_gross_outliers():
    A, b, x_true, rng = _problem(m=500, noise=0.01, spread=1.0)
    bad = rng.choice(A.shape[0], size=15, replace=False)
    b_out = b.copy()
    b_out[bad] += rng.choice([-1, 1], size=bad.size) * rng.uniform(50, 200, size=bad.size)
    err_ls = np.abs(_lstsq(A, b_out) - x_true).max()
    s = LinearSolver("robust")
    x = s.solve(A, b_out)
    err_rob = np.abs(x - x_true).max()
    err_clean = np.abs(_lstsq(A, b) - x_true).max()
    assert err_ls > 0.2  # least squares is dragged away...
    assert err_rob < 3 * err_clean + 1e-3  # ...robust stays at the noise level
    assert s.solver_info["converged"]
    h = s.solver_info["robust_weights"]
    assert np.all(h[bad] < 0.01)  # the outliers are essentially ignored
    assert np.median(h) == 1.0
    assert s.solver_info["robust_scale"] == pytest.approx(0.01, rel=0.3)


# --------------------------------------------------------------------------- #
# solver_info metrics and API
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("method", ["lstsq", "ridge", "lasso", "robust"])
def test_solver_info_metrics_match_independent_values(method):
    A, b, _, _ = _problem(spread=3.0, noise=0.5)
    x, info = solve_linear_system(A, b, method=method, alpha=1.0 if method != "lstsq" else 0.0)
    r = b - A @ x
    assert info["rmse"] == pytest.approx(np.sqrt(np.mean(r**2)), rel=1e-12)
    r2 = 1 - np.sum(r**2) / np.sum((b - b.mean()) ** 2)
    assert info["r_squared"] == pytest.approx(r2, rel=1e-12)
    assert info["condition_number"] == pytest.approx(np.linalg.cond(A), rel=1e-9)
    assert info["rank"] == np.linalg.matrix_rank(A)
    assert info["residual_norm"] == pytest.approx(np.linalg.norm(r), rel=1e-12)
    assert info["residual_mean"] == pytest.approx(r.mean(), rel=1e-9, abs=1e-14)
    assert info["residual_std"] == pytest.approx(r.std(), rel=1e-12)
    assert info["residual_max"] == pytest.approx(np.abs(r).max(), rel=1e-12)
    assert info["method"] == method and info["n_samples"] == A.shape[0]
    assert info["n_features"] == A.shape[1]


def test_solve_linear_system_and_repr():
    A, b, _, _ = _problem()
    x, info = solve_linear_system(A, b, method="ridge", alpha=0.1)
    solver = LinearSolver(method="ridge", alpha=0.1)
    np.testing.assert_array_equal(solver.solve(A, b), x)
    assert set(info) == set(solver.solver_info)
    assert info["rmse"] == solver.solver_info["rmse"]
    text = repr(solver)
    assert "method='ridge'" in text and "alpha=0.1" in text and "rmse=" in text
    assert repr(LinearSolver()) == "LinearSolver(method='lstsq')"
    assert "r_squared" in solver.summary()
    # b given as a column vector is accepted.
    np.testing.assert_array_equal(solver.solve(A, b[:, None]), x)


def test_verbose_logs_summary_not_print(caplog, capsys):
    A, b, _, _ = _problem()
    with caplog.at_level(logging.INFO, logger="figaroh.tools.solver"):
        LinearSolver(verbose=True).solve(A, b)
    assert any("rmse=" in rec.getMessage() for rec in caplog.records)
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------------------- #
# Input validation
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "A_shape, b_shape",
    [((10,), (10,)), ((10, 3), (9,)), ((10, 3), (10, 2)), ((0, 3), (0,)), ((2, 3, 4), (2,))],
)
def test_bad_shapes_raise_value_error(A_shape, b_shape):
    with pytest.raises(ValueError):
        LinearSolver().solve(np.ones(A_shape), np.ones(b_shape))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["A", "b"])
def test_non_finite_inputs_raise(bad, where):
    A, b, _, _ = _problem(m=20, n=3)
    if where == "A":
        A[4, 1] = bad
    else:
        b[7] = bad
    with pytest.raises(SolverInputError, match=where):
        LinearSolver().solve(A, b)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"method": "cholesky"}, "method"),
        ({"alpha": -1.0}, "alpha"),
        ({"alpha": np.nan}, "alpha"),
        ({"l1_ratio": 1.5}, "l1_ratio"),
        ({"regularization": "l3"}, "regularization"),
        ({"method": "ridge", "regularization": "l1"}, "conflicts"),
        ({"method": "weighted"}, "weights"),
        ({"weights": [1.0, -1.0]}, "weights"),
        ({"weights": [1.0, np.nan]}, "weights"),
        ({"bounds": (0, 1)}, "constrained"),
        ({"constraints": {"A_eq": np.eye(2)}}, "b_eq"),
        ({"method": "constrained", "constraints": {"A_equality": 1}}, "unknown"),
        ({"method": "constrained", "regularization": "l1"}, "l2"),
        ({"regularization_matrix": np.eye(2)}, "tikhonov"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": 0.0}, "tol"),
    ],
)
def test_bad_configuration_raises_solver_input_error(kwargs, match):
    with pytest.raises(SolverInputError, match=match):
        LinearSolver(**kwargs)


def test_bad_solve_time_configuration():
    A, b, _, _ = _problem(m=30, n=4)
    with pytest.raises(ValueError, match="weights"):
        LinearSolver("weighted", weights=np.ones(29)).solve(A, b)
    with pytest.raises(SolverInputError, match="A_ineq"):
        LinearSolver(
            "constrained", constraints={"A_ineq": np.ones((2, 3)), "b_ineq": np.ones(2)}
        ).solve(A, b)
    with pytest.raises(SolverInputError, match="lower > upper"):
        LinearSolver("constrained", bounds=(np.ones(4), np.zeros(4))).solve(A, b)
    with pytest.raises(SolverInputError, match="regularization_matrix"):
        LinearSolver("tikhonov", alpha=1.0, regularization_matrix=np.eye(3)).solve(A, b)
    solver = LinearSolver()
    solver.alpha = -2.0  # attributes are re-validated at solve time
    with pytest.raises(SolverInputError, match="alpha"):
        solver.solve(A, b)
    with pytest.raises(SolverInputError, match="complex"):
        LinearSolver().solve(A + 1j, b)


def test_coordinate_descent_fallback_agrees_with_homotopy():
    """Both L1 algorithms (homotopy and its CD fallback) reach the same optimum."""
    from figaroh.tools.solver import _coordinate_descent, _lasso_homotopy

    A, b, _, _ = _problem(seed=5, m=120, n=10, spread=1.0, noise=1.0)
    G, c = A.T @ A + 0.5 * np.eye(10), A.T @ b
    l1 = 0.2 * np.abs(c).max()
    x_h, steps = _lasso_homotopy(G, c, l1, 1000)
    x_cd, sweeps, viol, converged = _coordinate_descent(G, c, l1, 5000, 1e-10)
    assert converged and viol <= 1e-10 * np.abs(c).max() and steps > 0 and sweeps > 0
    np.testing.assert_allclose(x_cd, x_h, rtol=1e-7, atol=1e-9)
    assert _l1_kkt(A, b, x_cd, l1, 0.5) <= 1e-9
