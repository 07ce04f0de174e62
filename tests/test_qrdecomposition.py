"""Tests of figaroh.tools.qrdecomposition against Pinocchio regressors and algebra.

Regressors are built directly with ``pinocchio.computeJointTorqueRegressor``
(joint-major rows, zero columns removed) so these tests do not depend on the
project's own regressor module.
"""

from __future__ import annotations

import re

import numpy as np
import pinocchio as pin
import pytest

from figaroh.tools.exceptions import RankDeficiencyError
from figaroh.tools.qrdecomposition import (
    EXPRESSION_TERM_PATTERN,
    TOL_BETA,
    TOL_QR,
    ParameterNameError,
    QR_pivoting,
    QRDecomposer,
    QRResult,
    build_baseRegressor,
    cond_num,
    double_QR,
    get_baseIndex,
    get_baseParams,
    parse_base_param_expression,
)

PARAM_NAMES = ["m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"]
METHODS = ["double", "pivoting"]


def _regressor(urdf, n_samples: int, seed: int):
    """Joint-major regressor, its zero-column elimination and the model's parameters."""
    model = pin.buildModelFromUrdf(str(urdf))
    data = model.createData()
    model.lowerPositionLimit = np.clip(model.lowerPositionLimit, -np.pi, np.pi)
    model.upperPositionLimit = np.clip(model.upperPositionLimit, -np.pi, np.pi)
    pin.seed(seed)
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(n_samples):
        q = pin.randomConfiguration(model)
        v = rng.uniform(-2.0, 2.0, model.nv)
        a = rng.uniform(-3.0, 3.0, model.nv)
        blocks.append(pin.computeJointTorqueRegressor(model, data, q, v, a).copy())
    Y = np.array(blocks)  # (N, nv, p)
    W_full = Y.transpose(1, 0, 2).reshape(model.nv * n_samples, -1)  # row j*N + i
    theta_full = np.concatenate(
        [model.inertias[k].toDynamicParameters() for k in range(1, model.njoints)]
    )
    names_full = [f"{p}_{model.names[k]}" for k in range(1, model.njoints) for p in PARAM_NAMES]
    keep = np.sum(W_full**2, axis=0) >= 1e-6
    return {
        "W_full": W_full,
        "theta_full": theta_full,
        "names_full": names_full,
        "keep": keep,
        "W": W_full[:, keep],
        "theta": theta_full[keep],
        "names": [n for n, k in zip(names_full, keep, strict=True) if k],
    }


@pytest.fixture(scope="module")
def ur10(ur10_urdf):
    return _regressor(ur10_urdf, 200, seed=1)


@pytest.fixture(scope="module")
def ur10_validation(ur10_urdf):
    return _regressor(ur10_urdf, 60, seed=7)


@pytest.fixture(scope="module")
def tiago(tiago_urdf):
    return _regressor(tiago_urdf, 20, seed=2)


@pytest.fixture(params=["ur10", "tiago"])
def robot(request):
    return request.getfixturevalue(request.param)


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(np.linalg.norm(b), 1e-300)


# ---------------------------------------------------------------------------
# Core identities on real robots
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_base_regressor_reproduces_torques_for_random_theta(robot, method):
    W, names = robot["W"], robot["names"]
    res = QRDecomposer().decompose(W, names, method=method)
    # Structural identity W_e = W_b M, then W_b (M theta) = W_e theta for any theta.
    assert _rel(res.W_b @ res.M, W) < 1e-10
    rng = np.random.default_rng(3)
    thetas = rng.standard_normal((len(names), 3))
    assert _rel(res.W_b @ (res.M @ thetas), W @ thetas) < 1e-10
    tau = W @ thetas[:, 0]
    res_t = QRDecomposer().decompose(W, names, tau=tau, method=method)
    assert _rel(res_t.W_b @ res_t.phi_b, tau) < 1e-9


@pytest.mark.parametrize("method", METHODS)
def test_mapping_matrix_gives_identified_base_parameters(robot, method):
    W, names, theta = robot["W"], robot["names"], robot["theta"]
    params_std = dict(zip(names, theta, strict=True))
    res = QRDecomposer().decompose(W, names, tau=W @ theta, params_std=params_std, method=method)
    assert res.M.shape == (res.rank, len(names))
    assert res.W_b.shape == (W.shape[0], res.rank)
    assert res.beta.shape == (res.rank, len(names) - res.rank)
    assert _rel(res.phi_b, res.M @ theta) < 1e-8
    np.testing.assert_array_equal(res.phi_b_nom, res.M @ theta)
    # Identity on base columns.
    np.testing.assert_array_equal(res.M[:, res.base_indices], np.eye(res.rank))
    # Base columns of the reduced regressor reproduce torques with phi_b.
    assert _rel(W[:, res.base_indices] @ res.phi_b, W @ theta) < 1e-9


@pytest.mark.parametrize("method", METHODS)
def test_rank_matches_numpy(robot, method):
    res = QRDecomposer().decompose(robot["W"], robot["names"], method=method)
    assert res.rank == np.linalg.matrix_rank(robot["W"])
    assert res.rank < robot["W"].shape[1]  # the regressor is genuinely rank deficient


def test_double_and_pivoting_agree(robot):
    W, names, theta = robot["W"], robot["names"], robot["theta"]
    tau = W @ theta
    d = QRDecomposer().decompose(W, names, tau=tau, method="double")
    p = QRDecomposer().decompose(W, names, tau=tau, method="pivoting")
    assert d.rank == p.rank
    assert _rel(d.W_b @ d.phi_b, p.W_b @ p.phi_b) < 1e-9
    assert _rel(d.W_b @ d.phi_b, tau) < 1e-9
    assert d.pivot_order is None and sorted(p.pivot_order) == list(range(len(names)))
    assert d.method == "double" and p.method == "pivoting"


@pytest.mark.parametrize("method", METHODS)
def test_deterministic_bitwise(ur10, method):
    W, names, theta = ur10["W"], ur10["names"], ur10["theta"]
    std = dict(zip(names, theta, strict=True))
    r1 = QRDecomposer().decompose(W.copy(), list(names), W @ theta, std, method=method)
    r2 = QRDecomposer().decompose(W.copy(), list(names), W @ theta, std, method=method)
    assert r1 == r2
    for field in ("W_b", "beta", "M", "phi_b", "phi_b_nom", "diag_R"):
        assert np.array_equal(getattr(r1, field), getattr(r2, field)), field
    assert r1.base_param_expressions == r2.base_param_expressions
    assert r1.cond_R1 == r2.cond_R1


def test_input_not_modified(ur10):
    W = ur10["W"].copy()
    tau = W @ ur10["theta"]
    tau_copy = tau.copy()
    QRDecomposer().decompose(W, ur10["names"], tau=tau, method="pivoting")
    QRDecomposer().double_decomposition(tau, W, ur10["names"])
    assert np.array_equal(W, ur10["W"]) and np.array_equal(tau, tau_copy)


@pytest.mark.parametrize("method", METHODS)
def test_noise_free_recovery_of_base_parameters(robot, method):
    W, names, theta = robot["W"], robot["names"], robot["theta"]
    tau = W @ theta
    res = QRDecomposer().decompose(W, names, method=method)
    phi_hat = np.linalg.lstsq(res.W_b, tau, rcond=None)[0]
    phi_true = res.M @ theta
    assert np.max(np.abs(phi_hat - phi_true)) <= 1e-8 * np.max(np.abs(phi_true))


def test_legacy_double_qr_outputs(ur10):
    W, names, theta = ur10["W"], ur10["names"], ur10["theta"]
    tau = W @ theta
    std = dict(zip(names, theta, strict=True))
    out4 = double_QR(tau, W, names)
    assert len(out4) == 4
    W_b, base_dict, expr, phi_b = out4
    assert list(base_dict) == expr and len(expr) == W_b.shape[1] == len(phi_b)
    np.testing.assert_array_equal(phi_b, np.round(phi_b, 6))  # documented rounding
    np.testing.assert_allclose(list(base_dict.values()), phi_b)
    dec = QRDecomposer()
    out5 = dec.double_decomposition(tau, W, names, std)
    assert len(out5) == 5
    phi_true = dec.get_M() @ theta
    np.testing.assert_allclose(out5[3], phi_true, atol=5.1e-7, rtol=0)
    np.testing.assert_allclose(out5[4], phi_true, rtol=1e-12, atol=1e-15)
    # State stored on the decomposer.
    assert dec.get_base_indices() == sorted(dec.get_base_indices())
    assert dec.regroup_indices == sorted(set(range(len(names))) - set(dec.base_indices))
    labels, params_r = dec.get_M_labels()
    assert labels == out5[2] and params_r == names


def test_legacy_pivoting_outputs(ur10):
    W, names, theta = ur10["W"], ur10["names"], ur10["theta"]
    tau = W @ theta
    W_b, base_dict = QR_pivoting(tau, W, names)
    assert W_b.shape == (W.shape[0], len(base_dict))
    phi = np.array(list(base_dict.values()))
    assert _rel(W_b @ phi, tau) < 1e-5  # phi rounded to 6 decimals


def test_base_indices_valid_on_held_out_trajectory(ur10, ur10_validation):
    W, names, theta = ur10["W"], ur10["names"], ur10["theta"]
    dec = QRDecomposer()
    _, _, _, _ = dec.double_decomposition(W @ theta, W, names)
    idx = dec.get_base_indices()
    phi_full = dec.get_M() @ theta
    W_val = ur10_validation["W_full"][:, ur10["keep"]]
    assert _rel(W_val[:, idx] @ phi_full, W_val @ theta) < 1e-10


def test_legacy_base_index_helpers(ur10):
    W, names = ur10["W"], ur10["names"]
    idx = get_baseIndex(W, names)
    assert isinstance(idx, tuple) and len(idx) == np.linalg.matrix_rank(W)
    W_b, expr, base_indices = get_baseParams(W, names)
    assert list(idx) == base_indices and len(expr) == len(idx)
    np.testing.assert_allclose(
        W_b, build_baseRegressor(W, idx), rtol=0, atol=1e-10 * np.abs(W).max()
    )
    np.testing.assert_array_equal(build_baseRegressor(W, idx), W[:, list(idx)])
    assert [e.split(" ")[0] for e in expr] == [names[i] for i in idx]
    with pytest.raises(ValueError, match="idx_base"):
        build_baseRegressor(W, (0, W.shape[1]))


def test_get_base_mapping_matrix_matches_decompose(ur10):
    W, names = ur10["W"], ur10["names"]
    dec = QRDecomposer()
    for method in METHODS:
        M, expr = dec.get_base_mapping_matrix(W, names, method=method)
        res = QRDecomposer().decompose(W, names, method=method)
        np.testing.assert_array_equal(M, res.M)
        assert expr == res.base_param_expressions
    M_d, expr_d, base, regroup = dec.get_base_mapping_matrix_double(W, names)
    assert sorted(base + regroup) == list(range(len(names)))
    np.testing.assert_array_equal(M_d[:, base], np.eye(len(base)))
    with pytest.raises(ValueError, match="method"):
        dec.get_base_mapping_matrix(W, names, method="svd")
    with pytest.raises(ValueError, match="method"):
        dec.decompose(W, names, method="svd")


def test_diagnostics_and_accessors(ur10):
    W, names = ur10["W"], ur10["names"]
    dec = QRDecomposer()
    assert dec.get_M() is None and dec.get_base_indices() is None
    assert dec.get_diagnostics() == {"rank": None, "diag_R": None, "cond_R1": None, "method": None}
    res = dec.decompose(W, names, method="pivoting")
    diag = dec.get_diagnostics()
    assert set(diag) == {"rank", "diag_R", "cond_R1", "method"}
    assert diag["rank"] == res.rank and diag["method"] == "pivoting"
    assert dec.get_base_indices() is None  # only the double path sets base indices
    assert diag["diag_R"].shape == (min(W.shape),)
    # diag_R of the pivoted QR: leading entries are the column norms ordering (non-increasing).
    assert np.all(np.diff(diag["diag_R"][: res.rank]) <= 1e-9 * diag["diag_R"][0])
    # cond_R1 equals the 2-norm condition number of the base regressor.
    assert diag["cond_R1"] == pytest.approx(np.linalg.cond(res.W_b), rel=1e-6)
    assert "rank=" in repr(dec) and "QRResult(" in repr(res) and len(repr(res)) < 300


def test_compute_nominal_base_parameters(ur10):
    W, names, theta = ur10["W"], ur10["names"], ur10["theta"]
    dec = QRDecomposer()
    M, _, base, regroup = dec.get_base_mapping_matrix_double(W, names)
    beta = M[:, regroup]
    std = dict(zip(names, theta, strict=True))
    phi = dec.compute_nominal_base_parameters(
        [names[i] for i in base], [names[i] for i in regroup], beta, std
    )
    expected = np.array([std[names[b]] for b in base])
    for i in range(len(base)):
        for j, r in enumerate(regroup):
            expected[i] += beta[i, j] * std[names[r]]
    np.testing.assert_allclose(phi, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(phi, M @ theta, rtol=1e-12, atol=1e-15)
    with pytest.raises(KeyError, match="no_such_param"):
        dec.compute_nominal_base_parameters(["no_such_param"], [], np.zeros((1, 0)), std)
    with pytest.raises(ValueError, match="beta"):
        dec.compute_nominal_base_parameters([names[0]], [names[1]], np.zeros((2, 2)), std)


# ---------------------------------------------------------------------------
# Expression strings (contract with base_param_from_standard)
# ---------------------------------------------------------------------------
def test_expression_strings_small_exact_example():
    rng = np.random.default_rng(0)
    c0, c1 = rng.standard_normal((2, 50))
    W = np.c_[c0, c1, c0 - 0.5 * c1, 2.0 * c1]
    names = ["a", "b", "c", "d"]
    res = QRDecomposer().decompose(W, names, method="double")
    assert res.base_indices == [0, 1]
    assert res.base_param_expressions == ["a + 1.0*c", "b - 0.5*c + 2.0*d"]
    np.testing.assert_allclose(res.M, [[1, 0, 1, 0], [0, 1, -0.5, 2]], atol=1e-14)


@pytest.mark.parametrize("method", METHODS)
def test_expression_strings_follow_contract(robot, method):
    names = robot["names"]
    res = QRDecomposer().decompose(robot["W"], names, method=method)
    full_re = re.compile(r"[^\s*]+(?: [+-] \d+\.\d+\*[^\s*]+)*")
    col = {n: i for i, n in enumerate(names)}
    for row, expr in enumerate(res.base_param_expressions):
        assert full_re.fullmatch(expr), expr
        assert EXPRESSION_TERM_PATTERN.sub("", expr) == names[res.base_indices[row]]
        base, terms = parse_base_param_expression(expr)
        assert base == names[res.base_indices[row]]
        rebuilt = np.zeros(len(names))
        rebuilt[col[base]] = 1.0
        for coef, name in terms:
            rebuilt[col[name]] = coef
        expected = np.where(np.abs(res.M[row]) > TOL_BETA, res.M[row], 0.0)
        # printed coefficients carry 6 significant digits
        np.testing.assert_allclose(rebuilt, expected, rtol=5.1e-6, atol=0)


def test_beta_tolerance_controls_printed_terms():
    rng = np.random.default_rng(4)
    c0, c1 = rng.standard_normal((2, 40))
    W = np.c_[c0, c1, c0 + 1e-4 * c1]
    names = ["a", "b", "c"]
    loose = QRDecomposer(beta_tolerance=1e-3).decompose(W, names)
    tight = QRDecomposer().decompose(W, names)
    assert loose.base_param_expressions == ["a + 1.0*c", "b"]
    assert tight.base_param_expressions == ["a + 1.0*c", "b + 0.0001*c"]
    np.testing.assert_array_equal(loose.M, tight.M)  # M is never truncated
    with pytest.raises(ValueError, match="format"):
        parse_base_param_expression("a + 1e-05*c")


# ---------------------------------------------------------------------------
# Tolerances
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_relative_tolerance_changes_rank(method):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((300, 5))
    near = A[:, 0] + 1e-6 * rng.standard_normal(300)  # |R_55| ~ 1.7e-5 >> TOL_QR
    W = np.c_[A, near]
    names = [f"p{i}" for i in range(6)]
    assert QRDecomposer().decompose(W, names, method=method).rank == 6
    res = QRDecomposer(relative_tolerance=1e-4).decompose(W, names, method=method)
    assert res.rank == 5
    # The nearly dependent pair is regrouped: W_b M reproduces W up to the perturbation.
    assert _rel(res.W_b @ res.M, W) < 1e-5
    # The absolute tolerance stays a floor.
    assert QRDecomposer(tolerance=1e-3, relative_tolerance=1e-12).decompose(W, names).rank == 5


def test_default_constants():
    assert TOL_QR == 1e-8 and TOL_BETA == 1e-6
    dec = QRDecomposer()
    assert (dec.tolerance, dec.beta_tolerance, dec.relative_tolerance) == (TOL_QR, TOL_BETA, None)
    with pytest.raises(ValueError, match="tolerance"):
        QRDecomposer(tolerance=-1.0)
    with pytest.raises(ValueError, match="relative_tolerance"):
        QRDecomposer(relative_tolerance=float("nan"))


def _distance_to_span(W, j, cols):
    if not cols:
        return np.linalg.norm(W[:, j])
    coef = np.linalg.lstsq(W[:, cols], W[:, j], rcond=None)[0]
    return np.linalg.norm(W[:, j] - W[:, cols] @ coef)


@pytest.mark.parametrize("case", ["ur10", "wide"])
def test_double_base_split_follows_sequential_definition(case, ur10):
    """Column j is base iff its distance to the span of the base columns before it > tol."""
    if case == "ur10":
        W, tol = ur10["W"], TOL_QR
    else:  # 4 x 7, LAPACK's plain QR misses independent columns here
        rng = np.random.default_rng(11)
        B = rng.standard_normal((4, 3))
        W = np.c_[
            B[:, 0],
            2 * B[:, 0],
            B[:, 1],
            B[:, 0] - B[:, 1],
            rng.standard_normal(4),
            B[:, 2],
            B[:, 2] + B[:, 1],
        ]
        tol = TOL_QR
    base, regroup = QRDecomposer()._identify_base_parameters(W)
    assert sorted(base + regroup) == list(range(W.shape[1]))
    for j in range(W.shape[1]):
        d = _distance_to_span(W, j, [b for b in base if b < j])
        assert (d > tol) == (j in base), (j, d)
    assert len(base) == np.linalg.matrix_rank(W)


def test_sequential_fallback_matches_fast_path(tiago):
    from scipy import linalg

    W = tiago["W"]
    dec = QRDecomposer()
    base, _ = dec._identify_base_parameters(W)
    R0 = linalg.qr(W, mode="r")[0][: min(W.shape)]
    diag0 = np.abs(np.diag(R0))
    assert dec._sequential_base_columns(R0, diag0, dec._threshold(diag0)) == base


def test_more_columns_than_rows():
    rng = np.random.default_rng(6)
    B = rng.standard_normal((3, 2))
    W = np.c_[B[:, 0], B[:, 0], rng.standard_normal(3), B[:, 1], B[:, 0] + B[:, 1]]
    names = list("abcde")
    for method in METHODS:
        res = QRDecomposer().decompose(W, names, method=method)
        assert res.rank == np.linalg.matrix_rank(W) == 3
        assert _rel(res.W_b @ res.M, W) < 1e-12


# ---------------------------------------------------------------------------
# Expansion of M to a full ordering
# ---------------------------------------------------------------------------
def test_expand_mapping_matrix_to_full(ur10):
    W, names, theta = ur10["W"], ur10["names"], ur10["theta"]
    full_names = ur10["names_full"]
    res = QRDecomposer().decompose(W, names)
    M_full = QRDecomposer.expand_mapping_matrix_to_full(res.M, names, full_names)
    assert M_full.shape == (res.rank, len(full_names))
    np.testing.assert_array_equal(M_full[:, ur10["keep"]], res.M)
    assert np.all(M_full[:, ~ur10["keep"]] == 0.0)
    theta_full = ur10["theta_full"]
    np.testing.assert_allclose(M_full @ theta_full, res.M @ theta, rtol=1e-13)
    # A shuffled canonical ordering places each column under its own name.
    perm = np.random.default_rng(8).permutation(len(full_names))
    shuffled = [full_names[i] for i in perm]
    M_shuf = QRDecomposer.expand_mapping_matrix_to_full(res.M, names, shuffled)
    for j, name in enumerate(names):
        np.testing.assert_array_equal(M_shuf[:, shuffled.index(name)], res.M[:, j])
    with pytest.raises(ValueError, match="not present"):
        QRDecomposer.expand_mapping_matrix_to_full(
            res.M, names, [n for n in full_names if n != names[0]]
        )
    with pytest.raises(ValueError, match="incompatible"):
        QRDecomposer.expand_mapping_matrix_to_full(res.M[:, 1:], names, full_names)
    with pytest.raises(ValueError, match="2D"):
        QRDecomposer.expand_mapping_matrix_to_full(res.M[0], names, full_names)


# ---------------------------------------------------------------------------
# cond_num
# ---------------------------------------------------------------------------
def test_cond_num_agrees_with_numpy():
    rng = np.random.default_rng(9)
    A = rng.standard_normal((40, 6)) @ np.diag([1, 2, 5, 10, 100, 1e3])
    S = rng.standard_normal((6, 6))
    s = np.linalg.svd(A, compute_uv=False)
    assert cond_num(A) == pytest.approx(np.linalg.cond(A), rel=1e-12)
    assert cond_num(A, 2) == pytest.approx(s[0] / s[-1], rel=1e-10)
    assert cond_num(A, "max_over_min_sigma") == pytest.approx(s[0] / s[-1], rel=1e-10)
    assert cond_num(S, "fro") == pytest.approx(np.linalg.cond(S, "fro"), rel=1e-10)
    fro_rect = np.linalg.norm(A, "fro") * np.linalg.norm(np.linalg.pinv(A), "fro")
    assert cond_num(A, "fro") == pytest.approx(fro_rect, rel=1e-10)
    assert cond_num(S, 1) == pytest.approx(np.linalg.cond(S, 1), rel=1e-12)
    with pytest.raises(ValueError, match="norm_type"):
        cond_num(A, 1)  # 1-norm condition needs a square matrix
    with pytest.raises(ValueError, match="NaN"):
        cond_num(np.full((3, 3), np.nan))


# ---------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------
def test_bad_inputs_raise(ur10):
    W, names = ur10["W"], ur10["names"]
    dec = QRDecomposer()
    tau = np.zeros(W.shape[0])
    W_nan = W.copy()
    W_nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="W_e.*NaN"):
        dec.decompose(W_nan, names)
    W_inf = W.copy()
    W_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="W_e"):
        dec.double_decomposition(tau, W_inf, names)
    with pytest.raises(ValueError, match="params_r"):
        dec.decompose(W, names[:-1])
    with pytest.raises(ValueError, match="params_r"):
        QR_pivoting(tau, W, names + ["extra"])
    with pytest.raises(ValueError, match="tau"):
        dec.decompose(W, names, tau=tau[:-1])
    with pytest.raises(ValueError, match="tau"):
        dec.double_decomposition(np.r_[np.nan, tau[1:]], W, names)
    with pytest.raises(ValueError, match="W_e"):
        dec.decompose(W[:, 0], names[:1])
    with pytest.raises(ParameterNameError, match="whitespace"):
        dec.decompose(W[:, :2], ["a b", "c"])
    with pytest.raises(ValueError, match="duplicated"):
        dec.decompose(W[:, :2], ["a", "a"])
    with pytest.raises(KeyError, match="params_std"):
        dec.decompose(W, names, params_std={names[0]: 1.0})


def test_rank_zero_raises():
    W = np.zeros((20, 4))
    names = list("abcd")
    for method in METHODS:
        with pytest.raises(RankDeficiencyError, match="rank 0"):
            QRDecomposer().decompose(W, names, method=method)
    with pytest.raises(ValueError, match="rank 0"):  # RankDeficiencyError is a ValueError
        double_QR(np.zeros(20), 1e-12 * np.ones((20, 4)), names)


def test_full_rank_regressor_has_no_regrouping():
    rng = np.random.default_rng(10)
    W = rng.standard_normal((30, 4))
    theta = rng.standard_normal(4)
    for method in METHODS:
        res = QRDecomposer().decompose(W, list("abcd"), tau=W @ theta, method=method)
        assert res.rank == 4 and res.beta.shape == (4, 0)
        assert sorted(res.base_param_expressions) == list("abcd")
        np.testing.assert_allclose(res.phi_b, res.M @ theta, rtol=1e-12)
        assert isinstance(res, QRResult)
