"""The calibration least squares is ``scipy.optimize.least_squares`` with figaroh 1.0.2's arguments.

Truth: scipy itself. A calibration run is replayed with direct
``scipy.optimize.least_squares(objective, x, method="lm", max_nfev=1000)``
calls (1.0.2's call: default finite-difference Jacobian, default
tolerances) on the same objective; ``x``, ``cost`` and ``nfev`` must be equal
(``==``). The calls the library makes are also recorded, to check that it
passes exactly these arguments (and ``max_nfev=2000`` for the preliminary
fit of the estimation methods), and that the analytic Jacobian is used only
when ``calib_config["jacobian"] = "analytic"`` asks for it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize

from conftest import ROOT, load_example
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.tools.robot import Robot
from figaroh.utils.error_handling import CalibrationError, ConfigurationError

ex = load_example("ur10/calibration.py", "ur10_calibration_example")
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"


@pytest.fixture(scope="module")
def robot(ur10_urdf):
    return Robot(str(ur10_urdf), load_geometry=False)


@pytest.fixture(scope="module")
def noisy(robot, tmp_path_factory):
    """Simulated UR10 set with noise; two postures moved by 8 mm (outliers)."""
    d = tmp_path_factory.mktemp("lsq_sim")
    train, _, _ = ex.simulate_ur10_calibration(
        d, robot=robot, n_train=30, n_test=5, pos_noise=3e-4, rot_noise=5e-4, seed=4
    )
    lines = train.read_text().splitlines()
    for i in (4, 17):  # data rows 3 and 16
        cells = lines[i].split(",")
        cells[0] = repr(float(cells[0]) + 0.008)
        lines[i] = ",".join(cells)
    train.write_text("\n".join(lines) + "\n")
    return train


def _calibrator(robot, train, **cfg):
    calib = BaseCalibration(robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False, **cfg)
    calib.set_data_file(train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Using default cost function ..."
        calib.initialize()
    return calib


def _solve(calib, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return calib.solve(enable_logging=False, verbose=False, **kw)


class _Recorder:
    """Wraps ``scipy.optimize.least_squares`` and records every call."""

    def __init__(self):
        self.calls = []
        self._real = scipy.optimize.least_squares

    def __call__(self, fun, x0, *args, **kwargs):
        self.calls.append((args, dict(kwargs)))
        return self._real(fun, x0, *args, **kwargs)


def test_a_run_equals_direct_scipy_calls_with_1_0_2_arguments(robot, noisy):
    calib = _calibrator(robot, noisy)
    x0 = calib._objective_model.initial_vector()
    res = _solve(calib, outlier_threshold=4e-3)
    assert calib.outlier_indices == [3, 16]  # two fits: exclusion, then refit
    # replay: fit, exclude the same postures, refit from the first solution
    calib._excluded_rows = np.zeros(0, dtype=int)
    first = scipy.optimize.least_squares(calib._objective, x0, method="lm", max_nfev=1000)
    errors = np.linalg.norm(
        calib._objective_model.residual_array(first.x)[:, 0, :3], axis=1
    )  # per-posture position error [m]
    assert sorted(np.flatnonzero(errors > 4e-3).tolist()) == [3, 16]
    calib._excluded_rows = calib._sample_rows([3, 16])
    second = scipy.optimize.least_squares(calib._objective, first.x, method="lm", max_nfev=1000)
    assert np.array_equal(second.x, res.x)
    assert second.cost == res.cost and second.nfev == res.nfev
    assert np.array_equal(second.jac, res.jac)
    assert calib.evaluation_metrics["cost"] == second.cost
    assert calib.evaluation_metrics["n_function_evals"] == second.nfev
    assert calib.evaluation_metrics["jacobian"] == "2-point"


def test_the_library_passes_exactly_1_0_2s_arguments(robot, noisy, monkeypatch):
    rec = _Recorder()
    monkeypatch.setattr(scipy.optimize, "least_squares", rec)
    calib = _calibrator(robot, noisy)
    _solve(calib, outlier_threshold=4e-3, method="trf")
    fits = [kw for _, kw in rec.calls]
    # two fits of the outlier loop (the frames-only validation reference passes its own jac)
    assert fits[:2] == [{"method": "trf", "max_nfev": 1000}] * 2
    assert all(args == () for args, _ in rec.calls)


def test_the_preliminary_fit_of_the_estimators_uses_max_nfev_2000(robot, noisy, monkeypatch):
    rec = _Recorder()
    monkeypatch.setattr(scipy.optimize, "least_squares", rec)
    _calibrator(robot, noisy, estimation={"method": "excitation"})
    assert rec.calls and rec.calls[0][1] == {"method": "lm", "max_nfev": 2000}


def _count_cost_calls(calib):
    calls = []
    real = calib.cost_function

    def counted(var):
        calls.append(1)
        return real(var)

    calib.cost_function = counted  # instance attribute: what _objective calls
    return calls


def test_analytic_jacobian_option(robot, noisy, monkeypatch):
    ref = _calibrator(robot, noisy)
    n_fd = _count_cost_calls(ref)
    r_fd = _solve(ref, outlier_threshold=None)
    rec = _Recorder()
    monkeypatch.setattr(scipy.optimize, "least_squares", rec)
    calib = _calibrator(robot, noisy, jacobian="analytic")
    n_an = _count_cost_calls(calib)
    r_an = _solve(calib, outlier_threshold=None)
    (_, kw), *_ = rec.calls
    assert kw["jac"] == calib._objective_model.objective_jacobian and kw["method"] == "lm"
    assert kw["max_nfev"] == 1000
    assert calib.evaluation_metrics["jacobian"] == "analytic"
    # the same minimum to the LM termination tolerance, with fewer evaluations
    scale = np.maximum(np.abs(r_fd.x), 1e-3)
    assert np.max(np.abs(r_an.x - r_fd.x) / scale) < 1e-5
    assert r_an.cost == pytest.approx(r_fd.cost, rel=1e-9)
    assert len(n_an) < len(n_fd) / 3  # a finite-difference Jacobian costs n_param calls
    # equal to a direct scipy call with the analytic Jacobian
    calib._excluded_rows = np.zeros(0, dtype=int)
    direct = rec._real(
        calib._objective,
        calib._objective_model.initial_vector(),
        jac=calib._objective_model.objective_jacobian,
        method="lm",
        max_nfev=1000,
    )
    assert np.array_equal(direct.x, r_an.x) and direct.nfev == r_an.nfev


def test_bad_jacobian_option_is_named(robot, noisy, tmp_path):
    calib = _calibrator(robot, noisy, jacobian="numerical")
    with pytest.raises(CalibrationError, match=r"jacobian.*'numerical'.*'2-point'.*'analytic'"):
        _solve(calib)
    text = CONFIG.read_text().replace(
        "      outlier_threshold:", "      jacobian: exact\n      outlier_threshold:", 1
    )
    assert "jacobian: exact" in text
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    (tmp_path / "templates").symlink_to(CONFIG.parent / "templates")
    with pytest.raises((CalibrationError, ConfigurationError), match="parameters.jacobian"):
        BaseCalibration(robot, str(cfg))


def test_real_ur10_set_equals_a_direct_call(robot, shared_data):
    """The shared UR10 measurements (6-DoF), default cost, default threshold."""
    data = shared_data / "ur10" / "calibration.csv"
    calib = _calibrator(robot, data)
    x0 = calib._objective_model.initial_vector()
    res = _solve(calib, max_iterations=1)
    calib._excluded_rows = np.zeros(0, dtype=int)
    direct = scipy.optimize.least_squares(calib._objective, x0, method="lm", max_nfev=1000)
    assert np.array_equal(direct.x, res.x) and direct.cost == res.cost
    assert direct.nfev == res.nfev
    # the objective is 1.0.2's default cost: 1/σ-weighted log-map residuals of calc_updated_fkm
    cfg = calib.calib_config
    est = ct.calc_updated_fkm(calib.model, calib.data, res.x, calib.q_measured, cfg)
    w = ct.measurement_weights(cfg, calib.n_samples)
    expected = ct.logmap_residuals(calib.PEE_measured, est, cfg) * w
    assert np.array_equal(res.fun, expected)
