"""Tests of figaroh.tools.qrdecomposition against Pinocchio regressors and algebra.

Regressors are built directly with ``pinocchio.computeJointTorqueRegressor``
(joint-major rows, zero columns removed) so these tests do not depend on the
project's own regressor module.
"""

from __future__ import annotations

import re
import warnings

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


def _row_columns(res):
    """Base columns in the row order of M / phi_b (pivot order for the pivoting path)."""
    return res.base_indices if res.method == "double" else res.pivot_order[: res.rank]


@pytest.mark.parametrize("method", METHODS)
def test_mapping_matrix_gives_identified_base_parameters(robot, method):
    W, names, theta = robot["W"], robot["names"], robot["theta"]
    params_std = dict(zip(names, theta, strict=True))
    res = QRDecomposer().decompose(W, names, tau=W @ theta, params_std=params_std, method=method)
    assert res.M.shape == (res.rank, len(names))
    assert res.W_b.shape == (W.shape[0], res.rank)
    assert res.beta.shape == (res.rank, len(names) - res.rank)
    assert _rel(res.phi_b, res.M @ theta) < 1e-8
    if method == "double":
        np.testing.assert_array_equal(res.phi_b_nom, res.M @ theta)
    else:  # figaroh 1.0.2: no nominal values on the pivoting path
        assert res.phi_b_nom is None
    # base_indices are ascending in both paths; rows follow them or the pivot order.
    assert res.base_indices == sorted(_row_columns(res))
    rows = _row_columns(res)
    # Identity on base columns.
    np.testing.assert_array_equal(res.M[:, rows], np.eye(res.rank))
    # Base columns of the reduced regressor reproduce torques with phi_b.
    assert _rel(W[:, rows] @ res.phi_b, W @ theta) < 1e-9


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
    np.testing.assert_array_equal(list(base_dict.values()), phi_b)  # full precision
    dec = QRDecomposer()
    out5 = dec.double_decomposition(tau, W, names, std)
    assert len(out5) == 5
    phi_true = dec.get_M() @ theta
    assert _rel(out5[3], phi_true) < 1e-9  # not rounded
    assert not np.array_equal(out5[3], np.round(out5[3], 6))
    # The legacy tuple path (1.0.2 arithmetic) and decompose() agree to round-off.
    res = QRDecomposer().decompose(W, names, tau, std)
    assert _rel(out5[3], res.phi_b) < 1e-11
    assert expr == res.base_param_expressions
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
    assert _rel(W_b @ phi, tau) < 1e-9  # full precision
    res = QRDecomposer().decompose(W, names, tau=tau, method="pivoting")
    assert list(base_dict) == res.base_param_expressions
    np.testing.assert_array_equal(W_b, W[:, res.pivot_order[: res.rank]])


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
    # d = 2 b has the largest norm and is chosen first; a and c are then tied
    # (both residuals are c0 minus its projection on c1) and "a" < "c" wins.
    assert res.base_indices == [0, 3]
    assert res.base_param_expressions == ["a + 1.0*c", "d + 0.5*b - 0.25*c"]
    np.testing.assert_allclose(res.M, [[1, 0, 1, 0], [0, 0.5, -0.25, 1]], atol=1e-14)


@pytest.mark.parametrize("method", METHODS)
def test_expression_strings_follow_contract(robot, method):
    names = robot["names"]
    res = QRDecomposer().decompose(robot["W"], names, method=method)
    coef = r"\d+(?:\.\d+)?(?:e[+-]\d+)?"
    full_re = re.compile(rf"[^\s*]+(?: [+-] {coef}\*[^\s*]+)*")
    col = {n: i for i, n in enumerate(names)}
    rows = _row_columns(res)
    for row, expr in enumerate(res.base_param_expressions):
        assert full_re.fullmatch(expr), expr
        assert EXPRESSION_TERM_PATTERN.sub("", expr) == names[rows[row]]
        base, terms = parse_base_param_expression(expr)
        assert base == names[rows[row]]
        rebuilt = np.zeros(len(names))
        rebuilt[col[base]] = 1.0
        for c, name in terms:
            rebuilt[col[name]] = c
        expected = np.where(np.abs(res.M[row]) > TOL_BETA, res.M[row], 0.0)
        # printed coefficients are rounded to 6 decimals
        np.testing.assert_allclose(rebuilt, expected, rtol=0, atol=5.000001e-7)


def test_beta_tolerance_controls_printed_terms():
    rng = np.random.default_rng(4)
    c0, c1 = rng.standard_normal((2, 40))
    W = np.c_[c0, c1, c0 + 1e-4 * c1]
    names = ["a", "b", "c"]
    loose = QRDecomposer(beta_tolerance=1e-3).decompose(W, names)
    tight = QRDecomposer().decompose(W, names)
    # c (norm slightly above a's) is chosen first, then b; a is regrouped.
    assert loose.base_param_expressions == ["b", "c + 1.0*a"]
    assert tight.base_param_expressions == ["b - 0.0001*a", "c + 1.0*a"]
    np.testing.assert_array_equal(loose.M, tight.M)  # M is never truncated
    assert parse_base_param_expression("a + 1e-05*c - 2.5e+16*d") == (
        "a",
        [(1e-05, "c"), (-2.5e16, "d")],
    )
    with pytest.raises(ValueError, match="format"):
        parse_base_param_expression("a + 1e-05 * c")


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


def _greedy_reference(W, names, tol):
    """Reference of the greedy rule: distances to the span of the chosen columns from a fresh
    Householder QR of those columns at every step; ties within 1e-6 by name."""
    chosen = []
    while len(chosen) < min(W.shape):
        if chosen:
            Q = np.linalg.qr(W[:, chosen])[0]
            dist = np.linalg.norm(W - Q @ (Q.T @ W), axis=0)
        else:
            dist = np.linalg.norm(W, axis=0)
        dist[chosen] = -1.0
        top = dist.max()
        if top <= tol:
            break
        tied = np.flatnonzero(dist >= (1 - 1e-6) * top)
        chosen.append(int(min(tied, key=names.__getitem__)))
    return chosen


def _wide_matrix():
    rng = np.random.default_rng(11)
    B = rng.standard_normal((4, 3))
    return np.c_[
        B[:, 0],
        2 * B[:, 0],
        B[:, 1],
        B[:, 0] - B[:, 1],
        rng.standard_normal(4),
        B[:, 2],
        B[:, 2] + B[:, 1],
    ]


@pytest.mark.parametrize("case", ["ur10", "wide"])
def test_base_columns_follow_greedy_definition(case, ur10):
    """The base set and pivot order equal a slow least-squares implementation of the rule."""
    if case == "wide":
        W = _wide_matrix()
        names = [f"q{j}" for j in range(W.shape[1])][::-1]
    else:
        W, names = (
            {"ur10": ur10, "tiago": tiago}[case]["W"],
            {"ur10": ur10, "tiago": tiago}[case]["names"],
        )
    ref = _greedy_reference(W, names, TOL_QR)
    res = QRDecomposer().decompose(W, names, method="pivoting")
    assert res.pivot_order[: res.rank] == ref
    assert res.base_indices == sorted(ref)
    assert QRDecomposer().decompose(W, names).base_indices == sorted(ref)
    assert list(get_baseIndex(W, names)) == sorted(ref)
    assert len(ref) == np.linalg.matrix_rank(W)


@pytest.mark.parametrize("method", METHODS)
def test_permuting_columns_does_not_change_the_base_parameters(robot, method):
    W, names, theta = robot["W"], robot["names"], robot["theta"]
    tau = W @ theta
    ref = QRDecomposer().decompose(W, names, tau=tau, method=method)
    perm = np.random.default_rng(21).permutation(len(names))
    res = QRDecomposer().decompose(W[:, perm], [names[i] for i in perm], tau=tau, method=method)
    assert {names[perm[i]] for i in res.base_indices} == {names[i] for i in ref.base_indices}
    # Same base parameters: match the rows by their base name, compare M column-wise.
    # (The printed strings can differ where a coefficient sits on a 6th-decimal rounding
    # boundary, since the round-off of beta depends on the column order.)
    heads = [e.split(" ")[0] for e in res.base_param_expressions]
    order = [heads.index(e.split(" ")[0]) for e in ref.base_param_expressions]
    M_back = res.M[order][:, np.argsort(perm)]
    assert np.max(np.abs(M_back - ref.M)) < 1e-9 * max(1.0, np.max(np.abs(ref.M)))
    assert _rel(res.phi_b[order], ref.phi_b) < 1e-9
    if method == "pivoting":  # the pivot order is the same sequence of names
        assert [names[perm[i]] for i in res.pivot_order] == [names[i] for i in ref.pivot_order]


def test_non_deterministic_mode_uses_lapack_pivoting(tiago):
    from scipy import linalg

    rng = np.random.default_rng(12)
    u = rng.standard_normal((30, 3))
    W = np.c_[u[:, 0], 2.0 * u[:, 1], u[:, 0].copy(), u[:, 2]]  # columns 0 and 2 tie
    names, renamed = ["z", "b", "a", "c"], ["a", "b", "z", "c"]
    # The rule follows the names ...
    assert QRDecomposer().decompose(W, names).base_indices == [1, 2, 3]
    assert QRDecomposer().decompose(W, renamed).base_indices == [0, 1, 3]
    # ... LAPACK's pivoting does not look at them.
    fast = QRDecomposer(deterministic=False)
    assert fast.decompose(W, names).base_indices == fast.decompose(W, renamed).base_indices
    piv = fast.decompose(W, names, method="pivoting")
    _, _, P = linalg.qr(W, mode="economic", pivoting=True)
    assert piv.pivot_order == P.tolist()
    W_t, names_t = tiago["W"], tiago["names"]
    res = QRDecomposer(deterministic=False).decompose(W_t, names_t)
    assert res.rank == np.linalg.matrix_rank(W_t)
    assert _rel(res.W_b @ res.M, W_t) < 1e-10
    with pytest.raises(ValueError, match="deterministic"):
        QRDecomposer(deterministic="yes")


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
    # finite entries whose sum overflows are not mistaken for NaN/inf
    huge = np.full((4, 2), 1e308)
    with np.errstate(over="ignore"):
        assert not np.isfinite(huge.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no overflow warning reaches the user
        assert QRDecomposer(tolerance=0.0)._prepare(huge, ["a", "b"])[0] is not None
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
