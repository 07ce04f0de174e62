"""figaroh 1.0.2's base-parameter rules, one small input per rule, and the golden ``qr_rules`` case.

Each rule test is built so that the previous behaviour of this library (first
independent column in column order, coefficients printed with 6 significant
digits in positional notation, rounded ``phi_b``, ``phi_b = None`` without a
torque vector) fails it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import linalg

from conftest import reference_blas_env
from figaroh.tools.qrdecomposition import (
    TIE_RTOL,
    QRDecomposer,
    double_QR,
    get_baseIndex,
    get_baseParams,
    parse_base_param_expression,
    propagate_covariance_min_norm,
    redistribute_min_norm,
)

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "golden"
METHODS = ["double", "pivoting"]


def _basis(m=30, k=4, seed=0):
    return np.random.default_rng(seed).standard_normal((m, k))


# ---------------------------------------------------------------------------
# Rule: greedy base columns (largest residual norm, ties by name, sorted)
# ---------------------------------------------------------------------------
def test_largest_residual_norm_wins_over_column_order():
    u = _basis()
    W = np.c_[0.5 * u[:, 0], u[:, 0], u[:, 1]]  # column 0 is half of column 1
    names = ["a", "b", "c"]
    assert get_baseIndex(W, names) == (1, 2)  # column order would keep 0
    _, expr, idx = get_baseParams(W, names)
    assert idx == [1, 2] and expr == ["b + 0.5*a", "c"]


def test_tie_goes_to_smallest_name():
    u = _basis()
    W = np.c_[u[:, 0], u[:, 1], u[:, 0].copy()]  # exact duplicate: a tie
    assert get_baseIndex(W, ["z", "m", "a"]) == (1, 2)  # "a" < "z"
    assert get_baseIndex(W, ["a", "m", "z"]) == (0, 1)
    # A residual norm within 1e-6 (relative) of the largest is still a tie ...
    near = np.c_[u[:, 0], (1 + 0.5 * TIE_RTOL) * u[:, 0]]
    assert get_baseIndex(near, ["b", "a"], tol_qr=1e-3) == (1,)
    assert get_baseIndex(near, ["a", "b"], tol_qr=1e-3) == (0,)
    # ... and one beyond it is not.
    far = np.c_[u[:, 0], (1 + 4 * TIE_RTOL) * u[:, 0]]
    assert get_baseIndex(far, ["a", "b"], tol_qr=1e-3) == (1,)


def test_tie_after_projection_uses_names():
    """Two columns of equal norm and their sum: the sum is chosen, then the residuals tie."""
    u = _basis(m=40)
    v = u[:, 1] * np.linalg.norm(u[:, 0]) / np.linalg.norm(u[:, 1])
    v *= np.sign(u[:, 0] @ v)  # acute angle: the sum has the largest norm
    W = np.c_[u[:, 0], v, u[:, 0] + v]
    names = ["x", "y", "s"]
    res = QRDecomposer().decompose(W, names)
    # greedy order: s (largest norm), then x and y have equal residuals: "x" < "y"
    assert res.base_indices == [0, 2]
    assert res.base_param_expressions == ["x - 1.0*y", "s + 1.0*y"]
    piv = QRDecomposer().decompose(W, names, method="pivoting")
    assert piv.pivot_order == [2, 0, 1]
    # the tie follows the name, not the column (column order would keep columns 0 and 1)
    assert get_baseIndex(W, ["y", "x", "s"]) == (1, 2)


@pytest.mark.parametrize("method", METHODS)
def test_result_does_not_depend_on_column_order(method):
    g = np.random.default_rng(3)
    u = g.standard_normal((50, 5))
    cols = {
        "m1": u[:, 0],
        "mx1": 3.0 * u[:, 0],
        "Ixx2": u[:, 1],
        "Iyy2": u[:, 1].copy(),
        "fv3": u[:, 2] - 0.25 * u[:, 3],
        "fs3": u[:, 3],
        "off3": u[:, 2],
        "ia1": u[:, 4],
    }
    names = list(cols)
    W = np.column_stack([cols[n] for n in names])
    theta = g.standard_normal(len(names))
    tau = W @ theta
    ref = QRDecomposer().decompose(W, names, tau=tau, method=method)
    for seed in range(4):
        perm = np.random.default_rng(seed).permutation(len(names))
        res = QRDecomposer().decompose(W[:, perm], [names[i] for i in perm], tau=tau, method=method)
        assert sorted(res.base_param_expressions) == sorted(ref.base_param_expressions)
        assert {names[perm[i]] for i in res.base_indices} == {names[i] for i in ref.base_indices}
        # same base parameters, same values, up to the row order
        order = [res.base_param_expressions.index(e) for e in ref.base_param_expressions]
        np.testing.assert_allclose(res.phi_b[order], ref.phi_b, rtol=1e-10)
        np.testing.assert_allclose(res.M[order][:, np.argsort(perm)], ref.M, atol=1e-12)
    kept = {names[i] for i in ref.base_indices}
    assert len(kept) == 5 and {"mx1", "Ixx2", "ia1"} <= kept and not {"m1", "Iyy2"} & kept


def test_stop_at_or_below_tolerance():
    W = np.array([[1.0, 0.0], [0.0, 0.5]])
    assert get_baseIndex(W, ["a", "b"], tol_qr=0.5) == (0,)  # 0.5 <= 0.5: dependent
    assert get_baseIndex(W, ["a", "b"], tol_qr=0.4999) == (0, 1)


def test_relative_tolerance_scales_with_largest_column_norm():
    W = np.diag([100.0, 0.09, 0.11, 1.0])  # relative 1e-3 of 100 -> threshold 0.1
    res = QRDecomposer(relative_tolerance=1e-3).decompose(W, list("abcd"))
    assert res.base_indices == [0, 2, 3]
    assert QRDecomposer().decompose(W, list("abcd")).rank == 4
    # the absolute tolerance stays a floor
    assert QRDecomposer(tolerance=0.5, relative_tolerance=1e-3).decompose(W, list("abcd")).rank == 2


def test_pivot_order_lists_chosen_columns_then_the_rest_by_name():
    u = _basis(m=30, k=3)
    W = np.c_[u[:, 0], 2 * u[:, 1], u[:, 0].copy(), u[:, 1], 3 * u[:, 2], np.zeros(30)]
    names = ["k", "j", "b", "zz", "c", "a"]
    res = QRDecomposer().decompose(W, names, method="pivoting")
    chosen = res.pivot_order[: res.rank]
    rest = res.pivot_order[res.rank :]
    norms = np.linalg.norm(W, axis=0)
    assert chosen[0] == int(np.argmax(norms))  # largest column first
    assert sorted(chosen) == res.base_indices == [1, 2, 4]
    assert [names[i] for i in rest] == sorted(names[i] for i in rest)
    # rows follow the pivot order
    np.testing.assert_array_equal(res.M[:, chosen], np.eye(res.rank))
    np.testing.assert_array_equal(res.W_b, W[:, chosen])


# ---------------------------------------------------------------------------
# Rule: expression strings (6 decimals, Python float repr)
# ---------------------------------------------------------------------------
def test_expression_coefficients_are_rounded_to_six_decimals_as_python_writes_them():
    u = _basis(m=40, k=5, seed=1)
    W = np.c_[
        u[:, 0],
        1.234567e-5 * u[:, 0],
        u[:, 1],
        -2.0000004e-6 * u[:, 1],
        u[:, 2],
        0.048815 * u[:, 2],
        u[:, 3],
        u[:, 3] / 3.0,
        u[:, 4],
        -1234.56789 * u[:, 4] / 1234.56789,
    ]
    names = ["a", "f", "b", "g", "c", "h", "d", "i", "e", "j"]
    _, expr, _ = get_baseParams(W, names)
    assert expr == [
        "a + 1.2e-05*f",
        "b - 2e-06*g",
        "c + 0.048815*h",
        "d + 0.333333*i",
        "e - 1.0*j",
    ]
    for e in expr:
        base, terms = parse_base_param_expression(e)
        assert base in names and all(name in names for _, name in terms)


def test_coefficients_below_beta_tolerance_or_rounding_to_zero_are_omitted():
    u = _basis(m=40, k=2, seed=2)
    W = np.c_[u[:, 0], 4e-7 * u[:, 0], 3e-6 * u[:, 0], u[:, 1]]
    names = ["a", "b", "c", "d"]
    assert QRDecomposer().decompose(W, names).base_param_expressions == ["a + 3e-06*c", "d"]
    # above a lowered beta tolerance but rounding to 0.0 at 6 decimals: omitted, not "0.0"
    low = QRDecomposer(beta_tolerance=1e-7).decompose(W, names)
    assert low.base_param_expressions == ["a + 3e-06*c", "d"]
    assert abs(low.M[0, 1] - 4e-7) < 1e-15  # M keeps it


# ---------------------------------------------------------------------------
# Rule: full-precision phi_b, zeros without tau, no nominal values when pivoting
# ---------------------------------------------------------------------------
def test_phi_b_is_not_rounded_and_zero_without_tau():
    u = _basis(m=40, k=3, seed=4)
    W = np.c_[u, u[:, 0] + u[:, 1]]
    names = ["a", "b", "c", "d"]
    theta = np.array([0.1234567891, -0.9876543219, 0.5, 0.25])
    tau = W @ theta
    std = dict(zip(names, theta, strict=True))
    out = double_QR(tau, W, names, std)
    assert len(out) == 5
    np.testing.assert_allclose(out[3], out[4], rtol=1e-12)  # noise-free: phi_b = M theta
    assert not np.allclose(out[3], np.round(out[3], 6), rtol=0, atol=1e-9)
    for method in METHODS:
        res = QRDecomposer().decompose(W, names, params_std=std, method=method)
        np.testing.assert_array_equal(res.phi_b, np.zeros(res.rank))
        if method == "double":
            np.testing.assert_allclose(res.phi_b_nom, res.M @ theta, rtol=1e-14)
        else:
            assert res.phi_b_nom is None


# ---------------------------------------------------------------------------
# Minimum-norm redistribution
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dependent_regressor():
    g = np.random.default_rng(8)
    u = g.standard_normal((80, 6))
    W = np.c_[u[:, :4], u[:, 0] - 2 * u[:, 1], 0.5 * u[:, 2], u[:, 4], u[:, 3] + u[:, 4]]
    names = [f"p{j}" for j in range(W.shape[1])]
    theta = g.uniform(-2, 2, W.shape[1])
    return W, names, theta


def test_redistribute_min_norm_reproduces_torques_and_has_minimal_norm(dependent_regressor):
    W, names, theta = dependent_regressor
    res = QRDecomposer().decompose(W, names, tau=W @ theta)
    theta_star = redistribute_min_norm(res.M, res.phi_b)
    np.testing.assert_allclose(res.M @ theta_star, res.phi_b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(W @ theta_star, res.W_b @ res.phi_b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(W @ theta_star, W @ theta, rtol=1e-9, atol=1e-9)
    # minimum norm: equals LAPACK's minimum-norm least-squares solution and is
    # orthogonal to the null space of M (the unidentifiable directions)
    lstsq = np.linalg.lstsq(res.M, res.phi_b, rcond=None)[0]
    np.testing.assert_allclose(theta_star, lstsq, rtol=1e-10, atol=1e-12)
    N = linalg.null_space(res.M)
    assert N.shape[1] == len(names) - res.rank
    assert np.max(np.abs(N.T @ theta_star)) < 1e-12
    assert np.linalg.norm(theta_star) < np.linalg.norm(theta)
    # several vectors at once
    both = redistribute_min_norm(res.M, np.c_[res.phi_b, 2 * res.phi_b])
    np.testing.assert_allclose(both[:, 1], 2 * theta_star, rtol=1e-12)


def test_propagate_covariance_min_norm(dependent_regressor):
    W, names, _ = dependent_regressor
    res = QRDecomposer().decompose(W, names)
    g = np.random.default_rng(2)
    A = g.standard_normal((res.rank, res.rank))
    C_base = A @ A.T + 0.1 * np.eye(res.rank)
    C = propagate_covariance_min_norm(res.M, C_base)
    P = np.linalg.pinv(res.M)
    np.testing.assert_allclose(C, P @ C_base @ P.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(C, C.T)
    # mapping back gives the base covariance; nothing lives in the null space
    np.testing.assert_allclose(res.M @ C @ res.M.T, C_base, rtol=1e-10, atol=1e-12)
    N = linalg.null_space(res.M)
    assert np.max(np.abs(N.T @ C @ N)) < 1e-12
    # it is the covariance of redistribute_min_norm's output (linear map)
    samples = g.multivariate_normal(np.zeros(res.rank), C_base, size=20000).T
    emp = np.cov(redistribute_min_norm(res.M, samples))
    assert np.max(np.abs(emp - C)) < 0.05 * np.max(np.abs(C))


def test_min_norm_bad_inputs():
    M = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="phi_base"):
        redistribute_min_norm(M, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="phi_base"):
        redistribute_min_norm(M, [1.0, np.nan])
    with pytest.raises(ValueError, match="C_base"):
        propagate_covariance_min_norm(M, np.eye(3))
    with pytest.raises(ValueError, match="M"):
        redistribute_min_norm(np.array([1.0, 2.0]), [1.0])
    np.testing.assert_allclose(redistribute_min_norm(M, [2.0, 3.0]), [1.0, 1.0, 3.0])


# ---------------------------------------------------------------------------
# The golden case itself
# ---------------------------------------------------------------------------
def test_golden_qr_rules_case():
    if not (GOLDEN / "run.py").is_file():
        pytest.skip(f"golden kit not found at {GOLDEN}")
    proc = subprocess.run(
        [sys.executable, str(GOLDEN / "run.py"), str(GOLDEN.parent), "qr_rules"],
        env={**os.environ, **reference_blas_env()},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "84 passed, 0 failed" in proc.stdout
