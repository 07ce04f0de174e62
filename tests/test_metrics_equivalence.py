"""The post-fit metrics against the straightforward formulas, on random data.

The fit-quality and validation steps compute their statistics in fewer passes
over the data (residuals shared, one pass over the regressor for both
predictions, no re-computation of ``W_b φ``). These tests compare them with
the plain formulas they replace: ``W @ θ`` for the predictions, the
one-line numpy expressions for the RMSE / std / R² / Pearson statistics, and
``σ² (W_bᵀW_b)⁻¹`` for the relative standard deviations.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from figaroh.identification import _metrics
from figaroh.identification._pipeline import base_fit, validation
from figaroh.identification._pipeline.base_fit import fit_quality, with_estimate
from figaroh.identification._pipeline.records import BaseFit, Settings, SignalSet
from figaroh.identification.identification_tools import _all_finite, relative_stdev
from figaroh.tools.qrdecomposition import QRDecomposer

RTOL = 1e-12


def _pearson(a, b):
    return float(np.corrcoef(a, b)[0, 1])


def _reference_validation(meas, nom, ident, names, mask):
    """The validation statistics written out plainly (one expression each)."""
    n_blocks = len(names)
    meas, nom, ident = (np.asarray(a, float).reshape(n_blocks, -1) for a in (meas, nom, ident))
    keep = np.ones(meas.shape[1], bool) if mask is None else np.asarray(mask, bool)
    m, nm, idn = meas[:, keep], nom[:, keep], ident[:, keep]
    out = {
        "n_val_samples": int(keep.sum()),
        "rmse_nominal": float(np.sqrt(np.mean((m - nm) ** 2))),
        "rmse_identified": float(np.sqrt(np.mean((m - idn) ** 2))),
        "max_nominal": float(np.max(np.abs(m - nm))),
        "max_identified": float(np.max(np.abs(m - idn))),
        "correlation": _pearson(m.ravel(), idn.ravel()),
    }
    out["improvement_pct"] = (
        (out["rmse_nominal"] - out["rmse_identified"]) / out["rmse_nominal"] * 100.0
    )
    per_joint, z_m, z_i = {}, [], []
    for j, name in enumerate(names):
        s = float(np.std(m[j]))
        rj = float(np.sqrt(np.mean((m[j] - idn[j]) ** 2)))
        per_joint[name] = {
            "rmse_identified": rj,
            "rmse_nominal": float(np.sqrt(np.mean((m[j] - nm[j]) ** 2))),
            "std_measured": s,
            "nrmse": rj / s if s > 0 else float("inf"),
            "r2": 1.0 - rj**2 / s**2 if s > 0 else float("-inf"),
        }
        if s > 0:
            z_m.append((m[j] - m[j].mean()) / s)
            z_i.append((idn[j] - m[j].mean()) / s)
    out["per_joint"] = per_joint
    out["correlation_normalised"] = _pearson(np.concatenate(z_m), np.concatenate(z_i))
    return out


def _close(a, b, rtol=RTOL):
    if np.isinf(a) or np.isinf(b):
        return a == b
    return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-300)


def _series(rng, n_blocks, n):
    meas = rng.normal(size=(n_blocks, n)) * rng.uniform(0.5, 20.0, size=(n_blocks, 1))
    ident = meas + rng.normal(scale=0.3, size=meas.shape)
    nom = 1.1 * meas + rng.normal(scale=2.0, size=meas.shape)
    return meas, nom, ident


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("stacked", [False, True])
def test_validation_statistics_match_the_plain_formulas(masked, stacked):
    rng = np.random.default_rng(3)
    n_blocks, n = 4, 2_503
    meas, nom, ident = _series(rng, n_blocks, n)
    mask = rng.uniform(size=n) > 0.2 if masked else None
    names = [f"j{i}" for i in range(n_blocks)]
    args = (meas, nom, ident) if not stacked else tuple(a.ravel() for a in (meas, nom, ident))
    got = _metrics.validation_metrics(*args, names, ["N·m"] * n_blocks, mask, "validation_data")
    want = _reference_validation(meas, nom, ident, names, mask)
    assert got["n_val_samples"] == want["n_val_samples"]
    for key in (
        "rmse_nominal",
        "rmse_identified",
        "max_nominal",
        "max_identified",
        "improvement_pct",
        "correlation",
        "correlation_normalised",
    ):
        assert _close(got[key], want[key]), key
    for name in names:
        for key, value in want["per_joint"][name].items():
            assert _close(got["per_joint"][name][key], value), (name, key)
        assert got["per_joint"][name]["predictive"] == (
            want["per_joint"][name]["rmse_identified"] < want["per_joint"][name]["std_measured"]
        )
    # the per-joint series are every sample (masked ones too), as plain lists of floats
    for key, arr in (
        ("tau_measured_per_joint", meas),
        ("tau_nominal_per_joint", nom),
        ("tau_identified_per_joint", ident),
    ):
        assert list(got[key]) == names
        for j, name in enumerate(names):
            series = got[key][name]
            assert type(series) is list and all(type(v) is float for v in series[:5])
            assert series == arr[j].tolist()


def test_validation_statistics_with_a_constant_joint():
    rng = np.random.default_rng(5)
    meas, nom, ident = _series(rng, 3, 500)
    meas[1] = 2.5  # std 0: nrmse inf, r2 -inf, left out of the normalised correlation
    names = ["a", "b", "c"]
    got = _metrics.validation_metrics(meas, nom, ident, names, ["N"] * 3, None, "x")
    want = _reference_validation(meas, nom, ident, names, None)
    assert got["per_joint"]["b"]["nrmse"] == float("inf")
    assert got["per_joint"]["b"]["r2"] == float("-inf")
    assert "b" in got["unpredictable_joints"]
    assert _close(got["correlation_normalised"], want["correlation_normalised"])


def test_validation_statistics_keep_the_previous_mask_errors():
    meas = np.ones((2, 10))
    with pytest.raises(IndexError):
        _metrics.validation_metrics(meas, meas, meas, ["a", "b"], ["N"] * 2, np.ones(7, bool), "x")


@pytest.mark.parametrize("chunk_bytes", [validation.CHUNK_BYTES, 8 * 7 * 64, 1])
def test_block_predictions_are_the_matrix_vector_products(monkeypatch, chunk_bytes):
    monkeypatch.setattr(validation, "CHUNK_BYTES", chunk_bytes)
    rng = np.random.default_rng(11)
    nv, n, n_std = 5, 1_037, 7
    W = rng.normal(size=(nv * n, n_std))
    a, b = rng.normal(size=n_std), rng.normal(size=n_std)
    dofs = [3, 0, 4]
    pa, pb = validation.block_predictions(W, n, nv, dofs, a, b)
    blocks = W.reshape(nv, n, n_std)[dofs]
    scale = np.abs(blocks) @ np.maximum(np.abs(a), np.abs(b))  # |W||θ| bounds the rounding
    np.testing.assert_allclose(pa, blocks @ a, rtol=0, atol=RTOL * scale.max())
    np.testing.assert_allclose(pb, blocks @ b, rtol=0, atol=RTOL * scale.max())
    assert pa.shape == pb.shape == (3, n) and pa.flags.c_contiguous


def test_block_predictions_reject_a_mismatched_regressor():
    with pytest.raises(ValueError, match="does not match"):
        validation.block_predictions(np.ones((10, 3)), 4, 2, [0], np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="does not match"):
        validation.block_predictions(np.ones((8, 3)), 4, 2, [0], np.ones(2), np.ones(3))


def test_validation_step_matches_the_full_product():
    """The step equals stacking ``W_full @ [θ_nominal, x]`` and taking the fitted blocks."""
    rng = np.random.default_rng(2)
    nv, n, n_std = 4, 800, 9
    W = rng.normal(size=(nv * n, n_std))
    theta, x = rng.normal(size=n_std), rng.normal(size=n_std)
    settings = Settings(
        config={},
        nv=nv,
        q0=np.zeros(nv),
        act_idxq=(1, 2, 3),
        act_idxv=(1, 2, 3),
        continuous=(False,) * 3,
        active_joints=("j1", "j2", "j3"),
        effort_units=("N·m",) * 3,
    )
    blocks = [0, 2]  # j2 is not fitted
    both = (W @ np.column_stack([theta, x])).reshape(nv, n, 2)
    idx = np.asarray(settings.act_idxv)[blocks]
    torques = both[np.asarray(settings.act_idxv), :, 1].T + rng.normal(scale=0.1, size=(n, 3))
    mask = rng.uniform(size=n) > 0.1
    signals = SignalSet(
        timestamps=np.arange(n) * 0.01,
        positions=np.zeros((n, nv)),
        velocities=np.zeros((n, nv)),
        accelerations=np.zeros((n, nv)),
        torques=torques,
        mask=mask,
    )
    got = validation.validation_metrics(W, signals, theta, x, settings, blocks, "validation_data")
    names = ["j1", "j3"]
    meas = torques.T[blocks]
    want = _reference_validation(meas, both[idx, :, 0], both[idx, :, 1], names, mask)
    assert got["not_fitted_joints"] == ["j2"]
    assert got["joint_names"] == names
    for key in ("rmse_nominal", "rmse_identified", "correlation", "correlation_normalised"):
        assert _close(got[key], want[key]), key
    for name in names:
        assert _close(got["per_joint"][name]["r2"], want["per_joint"][name]["r2"])
    for j, name in enumerate(names):
        scale = np.abs(both[idx[j], :, 0]).max()
        assert np.max(
            np.abs(np.subtract(got["tau_nominal_per_joint"][name], both[idx[j], :, 0]))
        ) <= (1e-12 * scale)
        assert got["tau_measured_per_joint"][name] == meas[j].tolist()


def _qr_fit(rng, rows=3_000, cols=8):
    W = rng.normal(size=(rows, cols)) * rng.uniform(0.1, 10.0, size=cols)
    W[:, 5] = W[:, 1] - 2.0 * W[:, 2]  # a dependent column: the base set drops one
    phi_true = rng.normal(size=cols)
    tau = W @ phi_true + rng.normal(scale=40.0, size=rows)  # std-devs of 1-100 %
    names = [f"p{i}" for i in range(cols)]
    qr = QRDecomposer().decompose(
        W, names, tau, dict(zip(names, phi_true, strict=True)), method="double"
    )
    fit = BaseFit(
        W_b=qr.W_b,
        phi_base=qr.phi_b,
        params_base=tuple(qr.base_param_expressions),
        tau_noised=tau,
        tau_identif=qr.W_b @ qr.phi_b,
        qr=qr,
    )
    return fit, qr


def test_fit_quality_of_the_qr_fit_is_bit_identical_to_relative_stdev(monkeypatch):
    fit, qr = _qr_fit(np.random.default_rng(7))
    # the QR's own fit reuses tau_identif: the public function (a W_b pass) is not called
    monkeypatch.setattr(base_fit, "relative_stdev", None)
    quality = fit_quality(fit)
    monkeypatch.undo()
    assert np.median(quality.std_relative) > 1.0  # large enough for 2 decimals to resolve 1e-4
    std = relative_stdev(qr.W_b, qr.phi_b, fit.tau_noised, r_factor=qr.R1)
    np.testing.assert_array_equal(quality.std_relative, std)
    residual = fit.tau_noised - qr.W_b @ qr.phi_b
    assert quality.rms_error == float(np.sqrt(np.mean(residual**2)))
    # the textbook formula sigma² (W_bᵀW_b)⁻¹ (normal equations, fine at this conditioning)
    n_rows, n_b = qr.W_b.shape
    sigma2 = residual @ residual / (n_rows - n_b)
    var = sigma2 * np.diag(np.linalg.inv(qr.W_b.T @ qr.W_b))
    textbook = 100.0 * np.sqrt(var) / np.abs(qr.phi_b)
    np.testing.assert_allclose(quality.std_relative, textbook, rtol=0, atol=0.0051)
    assert _close(quality.correlation, _pearson(fit.tau_noised, fit.tau_identif), 1e-12)


def test_fit_quality_of_another_estimate_uses_that_estimate():
    fit, qr = _qr_fit(np.random.default_rng(8))
    other = with_estimate(fit, qr.phi_b * 1.01)
    quality = fit_quality(other)
    std = relative_stdev(qr.W_b, other.phi_base, other.tau_noised, r_factor=qr.R1)
    np.testing.assert_array_equal(quality.std_relative, std)
    assert quality.rms_error == float(
        np.sqrt(np.mean((other.tau_noised - qr.W_b @ other.phi_base) ** 2))
    )


def test_fit_quality_keeps_the_relative_stdev_errors():
    fit, _ = _qr_fit(np.random.default_rng(9))
    bad = np.array(fit.tau_noised)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        fit_quality(dataclasses.replace(fit, tau_noised=bad))


def test_all_finite_is_the_elementwise_test():
    assert _all_finite(np.ones((4, 3)))
    big = np.full((4, 3), 1e308)  # the sum overflows, every entry is finite
    assert _all_finite(big)
    for bad in (np.nan, np.inf, -np.inf):
        a = np.ones((4, 3))
        a[2, 1] = bad
        assert not _all_finite(a)
    mixed = np.ones((2, 2))
    mixed[0, 0], mixed[1, 1] = np.inf, -np.inf  # inf − inf: the sum is NaN
    assert not _all_finite(mixed)
    with pytest.raises(ValueError, match="NaN or inf"):
        relative_stdev(np.where(np.eye(5, 2) > 0, np.nan, 1.0), [1.0, 2.0], np.ones(5))
