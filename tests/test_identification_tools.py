"""Tests of figaroh.identification.identification_tools."""

from __future__ import annotations

import logging

import numpy as np
import pinocchio as pin
import pytest

from figaroh.identification.exceptions import IdentificationConfigError, IdentificationDataError
from figaroh.identification.identification_tools import (
    base_param_from_standard,
    calculate_first_second_order_differentiation,
    index_in_base_params,
    low_pass_filter_data,
    relative_stdev,
    weighted_least_squares,
    weigthed_least_squares,
)
from figaroh.tools.exceptions import RankDeficiencyError

# ---------------------------------------------------------------------------
# base_param_from_standard / index_in_base_params
# ---------------------------------------------------------------------------

NAMES = [
    "Ixx_shoulder1_joint",
    "Ixx_shoulder2_joint",
    "Iyy_elbow_joint",
    "mx_wrist_joint",
    "m_wrist_joint",
    "fv_elbow_joint",
]


def _expression(row: np.ndarray, names: list[str], base: int) -> str:
    """Expression string in the QR module's format for one row of M."""
    text = names[base]
    for k, coef in enumerate(row):
        if k == base or coef == 0.0:
            continue
        text += f" {'-' if coef < 0 else '+'} {abs(coef)}*{names[k]}"
    return text


def test_base_param_from_standard_matches_matrix_product():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=len(NAMES))
    M = np.array(
        [
            [0.0, 1.0, -0.5, 0.0, 0.0, 1.0],
            [0.0, 0.0, 1.0, 1e-05, -2.5e-07, 0.0],
            [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
            [1.0, 0.0, 0.0, 0.0, 123.456, -3.0],
        ]
    )
    bases = [1, 2, 3, 0]
    expressions = [_expression(row, NAMES, b) for row, b in zip(M, bases, strict=True)]
    assert expressions[0] == "Ixx_shoulder2_joint - 0.5*Iyy_elbow_joint + 1.0*fv_elbow_joint"
    assert "1e-05*mx_wrist_joint - 2.5e-07*m_wrist_joint" in expressions[1]
    phi_std = dict(zip(NAMES, theta, strict=True))
    result = base_param_from_standard(phi_std, expressions)
    assert isinstance(result, list) and len(result) == 4
    np.testing.assert_allclose(result, M @ theta, rtol=1e-14, atol=1e-14)


def test_base_param_from_standard_leading_coefficients_and_signs():
    phi = {"a_j": 2.0, "b_j": 3.0, "c_j": 5.0}
    exprs = ["-0.5*a_j + b_j", "2*a_j - -1.5*c_j", "-a_j - 1E+1*b_j", "a_j  +  .5 * c_j"]
    np.testing.assert_allclose(
        base_param_from_standard(phi, exprs),
        [-1.0 + 3.0, 4.0 + 7.5, -2.0 - 30.0, 2.0 + 2.5],
    )


def test_base_param_from_standard_rejects_unknown_and_malformed():
    phi = {"a_j": 1.0, "b_j": 1.0}
    with pytest.raises(ValueError, match="'zz_j'"):
        base_param_from_standard(phi, ["a_j + 1.0*zz_j"])
    for bad in ["a_j b_j", "a_j + ", "", "a_j + 1.0*", "__import__('os') + a_j"]:
        with pytest.raises(ValueError):
            base_param_from_standard(phi, [bad])


def test_index_in_base_params():
    params = [
        "Ixx_shoulder2_joint + 1.0*Ixx_shoulder1_joint",
        "m_wrist_joint - 0.5*mx_elbow_joint",
        "fv_shoulder1_joint",
        "Ixx3 + 2.0*m1",
        "Izz_wrist_joint",
    ]
    out = index_in_base_params(params, ["shoulder1_joint", "wrist_joint", "elbow_joint", 3, 7])
    assert out == {0: [0], 1: [1, 4], 2: [1], 3: [3], 4: []}
    # legacy integer ids must match whole tokens only (Ixx3 is not segment 33's)
    assert index_in_base_params(["Ixx33", "m3 + 1.0*Iyy3"], [3, 33]) == {0: [1], 1: [0]}


# ---------------------------------------------------------------------------
# relative_stdev
# ---------------------------------------------------------------------------


def test_relative_stdev_matches_monte_carlo():
    rng = np.random.default_rng(1)
    n_rows, sigma = 300, 0.5
    W = rng.normal(size=(n_rows, 4)) + np.array([0.0, 1.0, 0.0, 0.0])
    phi_true = np.array([2.0, -1.0, 0.5, 3.0])
    estimates, predicted = [], []
    for _ in range(600):
        tau = W @ phi_true + sigma * rng.normal(size=n_rows)
        phi_hat = np.linalg.lstsq(W, tau, rcond=None)[0]
        estimates.append(phi_hat)
        predicted.append(relative_stdev(W, phi_hat, tau))
    empirical = 100.0 * np.std(estimates, axis=0, ddof=1) / np.abs(phi_true)
    np.testing.assert_allclose(np.mean(predicted, axis=0), empirical, rtol=0.2)
    # a single realisation is also within 20 %
    np.testing.assert_allclose(predicted[0], empirical, rtol=0.2)


def test_relative_stdev_formula_and_errors():
    rng = np.random.default_rng(2)
    W = rng.normal(size=(50, 3))
    tau = rng.normal(size=50)
    phi = np.linalg.lstsq(W, tau, rcond=None)[0]
    sig2 = np.sum((tau - W @ phi) ** 2) / (50 - 3)
    expected = np.round(100 * np.sqrt(np.diag(sig2 * np.linalg.inv(W.T @ W))) / np.abs(phi), 2)
    np.testing.assert_array_equal(relative_stdev(W, list(phi), tau), expected)

    with pytest.raises(RankDeficiencyError):
        relative_stdev(np.column_stack([W[:, :2], W[:, 0]]), phi, tau)
    with pytest.raises(ValueError, match="more rows"):
        relative_stdev(W[:3], phi, tau[:3])
    with pytest.raises(ValueError, match="phi_b"):
        relative_stdev(W, phi[:2], tau)
    with pytest.raises(ValueError, match="NaN"):
        relative_stdev(W, phi, np.full(50, np.nan))
    out = relative_stdev(W, np.array([phi[0], 0.0, phi[2]]), tau)
    assert np.isinf(out[1]) and np.all(np.isfinite(out[[0, 2]]))


# ---------------------------------------------------------------------------
# weighted least squares
# ---------------------------------------------------------------------------


def _blocks_problem(rng, n_per_block=200, sigmas=(0.05, 1.0, 3.0)):
    n_b = 3
    W = rng.normal(size=(n_per_block * len(sigmas), n_b))
    noise_scale = np.repeat(sigmas, n_per_block)
    stops = [n_per_block * (j + 1) for j in range(len(sigmas))]
    return W, noise_scale, stops


def test_wls_equals_explicit_weighted_solution_and_alias():
    rng = np.random.default_rng(3)
    W, scale, stops = _blocks_problem(rng)
    phi_true = np.array([1.0, -2.0, 0.5])
    tau = W @ phi_true + scale * rng.normal(size=scale.size)
    phi_ols = np.linalg.lstsq(W, tau, rcond=None)[0]
    tau_est = W @ phi_ols
    cfg = {"idx_tau_stop": stops}
    phi_wls = weigthed_least_squares(None, phi_ols, W, tau, tau_est, cfg)

    sig = []
    for start, stop in zip([0, *stops[:-1]], stops, strict=True):
        r = tau[start:stop] - tau_est[start:stop]
        sig.append(np.sqrt(r @ r / (stop - start - 3)))
    weights = np.repeat(1.0 / np.array(sig), 200)
    expected = np.linalg.solve(
        (W * weights[:, None] ** 2).T @ W, (W * weights[:, None] ** 2).T @ tau
    )
    np.testing.assert_allclose(phi_wls, expected, rtol=1e-10)
    np.testing.assert_allclose(sig[1:], [1.0, 3.0], rtol=0.15)
    assert weighted_least_squares is weigthed_least_squares


def test_wls_reduces_variance_under_heteroscedastic_noise():
    rng = np.random.default_rng(4)
    W, scale, stops = _blocks_problem(rng, n_per_block=60)
    phi_true = np.array([1.0, -2.0, 0.5])
    ols, wls = [], []
    for _ in range(300):
        tau = W @ phi_true + scale * rng.normal(size=scale.size)
        phi_ols = np.linalg.lstsq(W, tau, rcond=None)[0]
        ols.append(phi_ols)
        wls.append(
            weighted_least_squares(None, phi_ols, W, tau, W @ phi_ols, {"idx_tau_stop": stops})
        )
    err_ols = np.mean(np.sum((np.array(ols) - phi_true) ** 2, axis=1))
    err_wls = np.mean(np.sum((np.array(wls) - phi_true) ** 2, axis=1))
    assert err_wls < 0.5 * err_ols
    np.testing.assert_allclose(np.mean(wls, axis=0), phi_true, atol=0.05)


def test_wls_input_errors(caplog):
    rng = np.random.default_rng(5)
    W, _, stops = _blocks_problem(rng, n_per_block=10)
    tau = W @ np.ones(3)
    with pytest.raises(IdentificationConfigError, match="idx_tau_stop"):
        weigthed_least_squares(None, np.ones(3), W, tau, tau, {})
    with pytest.raises(IdentificationConfigError, match="strictly increasing"):
        weigthed_least_squares(None, np.ones(3), W, tau, tau, {"idx_tau_stop": [10, 5, 30]})
    with pytest.raises(IdentificationConfigError, match="30"):
        weigthed_least_squares(None, np.ones(3), W, tau, tau, {"idx_tau_stop": [10, 20]})
    with pytest.raises(IdentificationDataError, match="block 0"):
        weigthed_least_squares(None, np.ones(3), W, tau, tau, {"idx_tau_stop": [2, 30]})
    with pytest.raises(ValueError, match="tau_est"):
        weigthed_least_squares(None, np.ones(3), W, tau, tau[:-1], {"idx_tau_stop": stops})
    with caplog.at_level(logging.WARNING):
        phi = weigthed_least_squares(None, np.ones(3), W, tau, tau, {"idx_tau_stop": stops})
    np.testing.assert_allclose(phi, np.ones(3), rtol=1e-12)  # noise-free data: exact recovery
    assert "floored" in caplog.text


# ---------------------------------------------------------------------------
# differentiation
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ur10_model(ur10_urdf):
    return pin.buildModelFromUrdf(str(ur10_urdf))


def _sinusoids(t):
    amp = np.array([0.8, 0.5, 1.2, 0.3, 0.9, 0.6])
    omega = np.array([1.0, 2.0, 0.5, 3.0, 1.5, 2.5])
    phase = np.linspace(0.0, 1.0, 6)
    q = amp * np.sin(omega * t[:, None] + phase)
    dq = amp * omega * np.cos(omega * t[:, None] + phase)
    ddq = -amp * omega**2 * np.sin(omega * t[:, None] + phase)
    return q, dq, ddq


def test_differentiation_uniform_sinusoids(ur10_model):
    ts = 1e-3
    t = np.arange(2001) * ts
    q, _, _ = _sinusoids(t)
    q_out, dq, ddq = calculate_first_second_order_differentiation(ur10_model, q, {"ts": ts})
    assert q_out.shape == (1999, 6) and dq.shape == (1999, 6) and ddq.shape == (1999, 6)
    np.testing.assert_array_equal(q_out, q[:-2])
    mid = t[:-1] + 0.5 * ts
    _, dq_true, ddq_true = _sinusoids(mid[:-1])
    np.testing.assert_allclose(dq, dq_true, atol=1e-5)
    np.testing.assert_allclose(ddq[1:-1], ddq_true[1:-1], atol=1e-5)
    np.testing.assert_allclose(ddq, ddq_true, atol=0.05)  # one-sided at the ends
    # scalar dt overrides identif_config
    _, dq2, _ = calculate_first_second_order_differentiation(ur10_model, q, {"ts": 9.0}, dt=ts)
    np.testing.assert_array_equal(dq2, dq)


def test_differentiation_non_uniform_time(ur10_model):
    rng = np.random.default_rng(6)
    intervals = rng.uniform(0.5e-3, 1.5e-3, size=2000)
    t = np.concatenate(([0.0], np.cumsum(intervals)))
    q, _, _ = _sinusoids(t)
    _, dq, ddq = calculate_first_second_order_differentiation(ur10_model, q, None, dt=intervals)
    mid = t[:-1] + 0.5 * intervals
    _, dq_true, ddq_true = _sinusoids(mid[:-1])
    np.testing.assert_allclose(dq, dq_true, atol=1e-5)
    np.testing.assert_allclose(ddq[1:-1], ddq_true[1:-1], atol=2e-3)
    # a time vector gives the same result as its differences
    out_t = calculate_first_second_order_differentiation(ur10_model, q, {}, dt=t)
    np.testing.assert_allclose(out_t[1], dq, rtol=1e-12)
    np.testing.assert_allclose(out_t[2], ddq, rtol=1e-9, atol=1e-9)


def test_differentiation_free_flyer_constant_twist(ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf), pin.JointModelFreeFlyer())
    assert model.nq == model.nv + 1
    rng = np.random.default_rng(7)
    twist = rng.normal(size=model.nv)
    q0 = pin.integrate(model, pin.neutral(model), rng.normal(size=model.nv))
    ts = 0.01
    q = np.array([pin.integrate(model, q0, twist * k * ts) for k in range(50)])
    q_out, dq, ddq = calculate_first_second_order_differentiation(model, q, {"ts": ts})
    assert q_out.shape == (48, model.nq) and dq.shape == (48, model.nv)
    np.testing.assert_allclose(dq, np.tile(twist, (48, 1)), atol=1e-9)
    np.testing.assert_allclose(ddq, 0.0, atol=1e-6)


def test_differentiation_matches_pinocchio_difference_on_all_joint_types():
    model = pin.Model()
    jid = 0
    for joint, name in [
        (pin.JointModelFreeFlyer(), "ff"),
        (pin.JointModelPlanar(), "planar"),
        (pin.JointModelSpherical(), "ball"),
        (pin.JointModelRUBX(), "wheel"),
        (pin.JointModelSphericalZYX(), "zyx"),
        (pin.JointModelPY(), "slider"),
    ]:
        jid = model.addJoint(jid, joint, pin.SE3.Identity(), name)
    rng = np.random.default_rng(8)
    q = [pin.integrate(model, pin.neutral(model), rng.normal(size=model.nv))]
    steps = rng.normal(size=(300, model.nv)) * np.array([0.5, 1e-2, 1e-6])[np.arange(300) % 3, None]
    for step in steps:
        q.append(pin.integrate(model, q[-1], step))
    q = np.array(q)
    # Truth: q[k+1] = q[k] ⊕ step_k, so q[k+1] ⊖ q[k] = step_k (rotations < π).
    assert np.all(np.linalg.norm(steps[:, 9:12], axis=1) < np.pi)
    _, dq, _ = calculate_first_second_order_differentiation(model, q, {"ts": 0.5})
    np.testing.assert_allclose(dq, steps[:-1] / 0.5, rtol=1e-8, atol=1e-12)
    reference = np.array(
        [pin.difference(model, a, b) for a, b in zip(q[:-2], q[1:-1], strict=True)]
    )
    np.testing.assert_allclose(dq * 0.5, reference, atol=1e-7)  # Pinocchio is less exact


def test_differentiation_continuous_joint_wraps():
    model = pin.Model()
    model.addJoint(0, pin.JointModelRUBZ(), pin.SE3.Identity(), "wheel")
    assert (model.nq, model.nv) == (2, 1)
    ts = 1e-3
    t = np.arange(4001) * ts
    theta = 3.0 * t + 0.5 * np.sin(2.0 * t)  # crosses ±π several times
    q = np.column_stack((np.cos(theta), np.sin(theta)))
    _, dq, ddq = calculate_first_second_order_differentiation(model, q, {"ts": ts})
    mid = t[:-2] + 0.5 * ts
    np.testing.assert_allclose(dq[:, 0], 3.0 + np.cos(2.0 * mid), atol=1e-5)
    np.testing.assert_allclose(ddq[1:-1, 0], -2.0 * np.sin(2.0 * mid[1:-1]), atol=1e-5)


def test_differentiation_through_backend(ur10_model):
    class FakeBackend:
        nq, nv = ur10_model.nq, ur10_model.nv

        def __init__(self):
            self.calls = 0

        def compute_difference(self, q1, q2):
            self.calls += 1
            return pin.difference(ur10_model, q1, q2)

    backend = FakeBackend()
    t = np.arange(100) * 0.01
    q, _, _ = _sinusoids(t)
    via_backend = calculate_first_second_order_differentiation(
        None, q, {"ts": 0.01}, backend=backend
    )
    via_model = calculate_first_second_order_differentiation(ur10_model, q, {"ts": 0.01})
    assert backend.calls == 99
    for a, b in zip(via_backend, via_model, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)

    class NoDifference:
        nq, nv = 6, 6

    with pytest.raises(ValueError, match="compute_difference"):
        calculate_first_second_order_differentiation(None, q, {"ts": 0.01}, backend=NoDifference())


def test_differentiation_input_errors(ur10_model):
    q = np.zeros((10, 6))
    with pytest.raises(ValueError, match=r"\(n_samples, 6\)"):
        calculate_first_second_order_differentiation(ur10_model, np.zeros((10, 5)), {"ts": 0.1})
    with pytest.raises(ValueError, match="three"):
        calculate_first_second_order_differentiation(ur10_model, q[:2], {"ts": 0.1})
    bad = q.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        calculate_first_second_order_differentiation(ur10_model, bad, {"ts": 0.1})
    with pytest.raises(ValueError, match="positive"):
        calculate_first_second_order_differentiation(ur10_model, q, {"ts": 0.0})
    with pytest.raises(ValueError, match="ts"):
        calculate_first_second_order_differentiation(ur10_model, q, {})
    with pytest.raises(ValueError, match="sample pair"):
        calculate_first_second_order_differentiation(ur10_model, q, {}, dt=np.ones(5))
    with pytest.raises(ValueError, match="non-positive"):
        calculate_first_second_order_differentiation(ur10_model, q, {}, dt=np.r_[np.ones(8), -1.0])
    with pytest.raises(ValueError, match="increasing"):
        calculate_first_second_order_differentiation(ur10_model, q, {}, dt=np.r_[np.arange(9), 3.0])

    ff = pin.Model()
    ff.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
    q_ff = np.tile(pin.neutral(ff), (5, 1))
    q_ff[2, 3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(ValueError, match="normalised"):
        calculate_first_second_order_differentiation(ff, q_ff, {"ts": 0.1})


# ---------------------------------------------------------------------------
# low-pass filter
# ---------------------------------------------------------------------------


def test_low_pass_filter_keeps_slow_signal_removes_fast():
    ts, n = 1e-3, 4000
    t = np.arange(n) * ts
    slow = np.sin(2 * np.pi * 2.0 * t)
    fast = 0.5 * np.sin(2 * np.pi * 200.0 * t)
    data = np.column_stack((slow + fast, 2.0 * slow))
    cfg = {"ts": ts, "cut_off_frequency_butterworth": 20.0}
    out = low_pass_filter_data(data, cfg, nbutter=5, cutoff_in_hz=True)
    assert out.shape == (n - 50, 2)
    inner = slice(200, -200)  # away from the padding transients
    np.testing.assert_allclose(out[inner, 0], slow[25:-25][inner], atol=2e-3)  # zero phase
    np.testing.assert_allclose(out[inner, 1], 2.0 * slow[25:-25][inner], atol=2e-3)
    out_1d = low_pass_filter_data(slow + fast, cfg, nbutter=4, cutoff_in_hz=True)
    assert out_1d.shape == (n - 40,)
    np.testing.assert_allclose(out_1d[inner], slow[20:-20][inner], atol=2e-3)


def test_low_pass_filter_cutoff_in_hz_option():
    # cutoff_in_hz=True: 40 Hz passes a 60 Hz cut-off but not a 10 Hz one (fs = 1 kHz).
    ts, n = 1e-3, 4000
    t = np.arange(n) * ts
    x = np.sin(2 * np.pi * 40.0 * t)
    kept = low_pass_filter_data(
        x, {"ts": ts, "cut_off_frequency_butterworth": 60.0}, cutoff_in_hz=True
    )
    cut = low_pass_filter_data(
        x, {"ts": ts, "cut_off_frequency_butterworth": 10.0}, cutoff_in_hz=True
    )
    assert np.ptp(kept[500:-500]) > 1.9
    assert np.ptp(cut[500:-500]) < 0.01


@pytest.mark.parametrize("cutoff_in_hz,cutoff", [(True, 50.0), (True, 60.0), (False, 200.0)])
def test_low_pass_filter_rejects_cutoff_at_or_above_nyquist(cutoff_in_hz, cutoff):
    # 1.0.2 normalisation: Wn = ts·fc/2 reaches 1 at fc = 2/ts = 200 Hz (ts = 0.01 s).
    with pytest.raises(ValueError, match="Nyquist"):
        low_pass_filter_data(
            np.zeros(500),
            {"ts": 0.01, "cut_off_frequency_butterworth": cutoff},
            cutoff_in_hz=cutoff_in_hz,
        )


def test_low_pass_filter_input_errors():
    cfg = {"ts": 0.01, "cut_off_frequency_butterworth": 5.0}
    with pytest.raises(ValueError, match="at least 51"):
        low_pass_filter_data(np.zeros(50), cfg, nbutter=5)
    with pytest.raises(ValueError, match="NaN"):
        low_pass_filter_data(np.full(200, np.nan), cfg)
    with pytest.raises(ValueError, match="cut_off_frequency_butterworth"):
        low_pass_filter_data(np.zeros(200), {"ts": 0.01})
    with pytest.raises(ValueError, match="positive"):
        low_pass_filter_data(np.zeros(200), {"ts": 0.01, "cut_off_frequency_butterworth": -1.0})
    with pytest.raises(ValueError, match="nbutter"):
        low_pass_filter_data(np.zeros(200), cfg, nbutter=0)
