"""Every method a figaroh 1.0.2 calibration subclass may override is called where 1.0.2 calls it.

One test per hook: a subclass overrides it, the workflow runs as a 1.0.2
script runs it (``initialize()``, ``solve()``, exports), and the test asserts
an effect that only the override can have (a value it returned, a row it
moved, a logger it supplied). Truth: the noise-free simulated UR10
calibration of ``examples/ur10/calibration.py`` (injected parameters), and
the library functions called directly.

The cost hooks ``cost_function``, ``_compute_logmap_residuals`` (in the
default cost) and ``apply_measurement_weighting`` are also covered in
``test_compat_calibration.py`` (the fit they dictate).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from conftest import ROOT, load_example
from figaroh._run.task_services import plot_into
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.tools.geometric_calibration_export import build_geometric_calibration
from figaroh.tools.robot import Robot
from figaroh.utils.error_handling import CalibrationError

ex = load_example("ur10/calibration.py", "ur10_calibration_example")
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"


@pytest.fixture(scope="module")
def robot(ur10_urdf):
    return Robot(str(ur10_urdf), load_geometry=False)


@pytest.fixture(scope="module")
def sim(robot, tmp_path_factory):
    """Noise-free simulated UR10 calibration: ``(train_csv, test_csv, truth)``."""
    d = tmp_path_factory.mktemp("hooks_sim")
    return ex.simulate_ur10_calibration(d, robot=robot, n_train=25, n_test=6)


def _build(cls, robot, train, **cfg):
    calib = cls(robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False, **cfg)
    calib.set_data_file(train)
    return calib


def _run(cls, robot, train, *, init=True, **solve):
    calib = _build(cls, robot, train)
    solve.setdefault("enable_logging", False)
    solve.setdefault("verbose", False)
    solve.setdefault("outlier_threshold", 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if init:
            calib.initialize()
        calib.solve(**solve)
    return calib


def _fitted(calib):
    return dict(zip(calib.calib_config["param_name"], calib.var_, strict=True))


# ---------------------------------------------------------------- configuration and data
def test_load_param(robot, sim):
    class Hook(BaseCalibration):
        def load_param(self, config_file, setting_type="calibration"):
            super().load_param(config_file, setting_type)
            self.calib_config["outlier_eps"] = 0.123

    calib = Hook(robot, str(CONFIG))  # called by __init__
    assert calib.calib_config["outlier_eps"] == 0.123


def test_load_data_set(robot, sim):
    """Another data source: the override supplies the measurements ``initialize()`` uses."""
    train, _, truth = sim
    base = _build(BaseCalibration, robot, train)
    base.load_data_set()
    n = base.n_samples
    shifted = np.asarray(base.PEE_measured) + np.r_[np.full(n, 0.01), np.zeros(5 * n)]

    class Hook(BaseCalibration):
        def load_data_set(self):
            super().load_data_set()
            self.PEE_measured = shifted  # every x moved by +1 cm

    calib = _run(Hook, robot, train)
    assert np.array_equal(calib.PEE_measured, shifted)
    est = _fitted(calib)  # a world-x shift is absorbed by the base frame
    assert est["base_px"] == pytest.approx(truth["base_px"] + 0.01, abs=1e-7)


def test_load_validation_data(robot, sim):
    train, test, _ = sim
    seen = []

    class Hook(BaseCalibration):
        def _load_validation_data(self, path):
            seen.append(path)  # and load nothing: validation falls back to training

    calib = _build(Hook, robot, train)
    calib.set_data_file(test, validation=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.initialize()
        calib.solve(enable_logging=False, verbose=False, outlier_threshold=1.0)
    assert seen == [str(test)]
    assert calib.results_data["validation_metrics"]["validation_source"] == (
        "calibration_data_fallback"
    )


# ---------------------------------------------------------------- parameter list
def test_create_param_list(robot, sim):
    train, _, truth = sim

    class Hook(BaseCalibration):
        def create_param_list(self, q=None):
            super().create_param_list(q)
            ct.drop_calibration_parameters(self.calib_config, ["pEEz_1"])
            return True

    calib = _run(Hook, robot, train)  # initialize() calls it
    assert "pEEz_1" not in calib.calib_config["param_name"]
    assert len(calib.var_) == len(truth) - 1


def test_record_full_mapping(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def _record_full_mapping(self):
            super()._record_full_mapping()
            self.calib_config["base_frame_row_names"] = ["marked"]

    calib = _build(Hook, robot, train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.initialize()
    assert calib.calib_config["base_frame_row_names"] == ["marked"]
    M = calib.calib_config["base_mapping_matrix_full"]
    assert M.shape[1] == len(calib.calib_config["base_mapping_param_names"])


def test_eliminate_absorbed_parameters(robot, sim):
    train, _, _ = sim
    called = []

    class Hook(BaseCalibration):
        def eliminate_absorbed_parameters(self, tol=1e-4):
            called.append(tol)
            ct.drop_calibration_parameters(self.calib_config, ["pEEy_1"])
            return ["pEEy_1"]

    calib = _build(Hook, robot, train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.initialize()
    assert called == [1e-4]
    assert "pEEy_1" not in calib.calib_config["param_name"]


def test_initial_frame_guess(robot, sim):
    train, _, truth = sim
    starts = []
    guess = {n: v + 0.001 for n, v in truth.items() if n.startswith(("base_", "pEE", "phiEE"))}

    class Hook(BaseCalibration):
        def initial_frame_guess(self):
            return dict(guess)

        def _objective(self, var):
            if not starts:
                starts.append(np.array(var))
            return super()._objective(var)

    _run(Hook, robot, train)
    x0 = starts[0]
    calib = _build(Hook, robot, train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.initialize()
    order = calib.calib_config["param_name"]
    for n, v in guess.items():
        assert x0[order.index(n)] == v
    assert all(x0[order.index(n)] == 0.0 for n in order if n not in guess)


# ---------------------------------------------------------------- the fit
def test_objective(robot, sim):
    """An extra row pulls ``pEEz_1`` to 0.5 m: the solver minimises the override."""
    train, _, truth = sim

    class Hook(BaseCalibration):
        def _objective(self, var):
            i = self.calib_config["param_name"].index("pEEz_1")
            return np.append(super()._objective(var), 1e6 * (var[i] - 0.5))

    calib = _run(Hook, robot, train)
    assert _fitted(calib)["pEEz_1"] == pytest.approx(0.5, abs=1e-4)
    assert abs(truth["pEEz_1"] - 0.5) > 0.1


def test_compute_logmap_residuals_in_outliers_and_metrics(robot, sim):
    """The residual hook decides the outlier exclusion and the per-DOF table."""
    train, _, _ = sim

    class Hook(BaseCalibration):
        def _compute_logmap_residuals(self, measured, estimated, **kwargs):
            r = np.array(super()._compute_logmap_residuals(measured, estimated, **kwargs))
            r[7] += 0.05  # posture 7, x: 5 cm
            return r

    calib = _run(Hook, robot, train, outlier_threshold=0.02)
    assert calib.outlier_indices == [7]
    ev = calib.evaluation_metrics
    assert ev["excluded_sample_errors"][0] == pytest.approx(0.05, abs=1e-6)
    res = calib.results_data["residuals"]  # (N·K, n_meas), all postures
    assert res[7, 0] == pytest.approx(0.05, abs=1e-6)
    # per-DOF statistics of the kept postures: the 5 cm never shows
    assert ev["per_dof_stats"]["max_abs"][0] < 1e-3


def test_apply_measurement_weighting(robot, sim):
    train, _, _ = sim
    calls = []

    class Hook(BaseCalibration):
        def apply_measurement_weighting(self, residuals, pos_weight=None, orient_weight=None):
            calls.append(len(residuals))
            return 2.0 * super().apply_measurement_weighting(residuals, pos_weight, orient_weight)

    calib = _run(Hook, robot, train)
    r = calib.LM_result.fun
    w = ct.measurement_weights(calib.calib_config, calib.n_samples)
    raw = calib._objective_model.logmap_residuals_at(calib.var_)
    np.testing.assert_allclose(r, 2.0 * w * raw, rtol=0, atol=1e-12)
    assert calls and set(calls) == {len(calib.PEE_measured)}


def test_cost_function(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def cost_function(self, var):
            return np.append(super().cost_function(var), 7.0)  # a constant extra row

    calib = _run(Hook, robot, train)
    assert calib.LM_result.fun[-1] == 7.0
    assert calib.LM_result.cost == pytest.approx(0.5 * 49.0, rel=1e-9)


def test_solve_optimisation(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def solve_optimisation(
            self,
            var_init=None,
            method="lm",
            max_iterations=3,
            outlier_threshold=None,
            enable_logging=False,
        ):
            result, _ = super().solve_optimisation(
                var_init, method, max_iterations, outlier_threshold, enable_logging
            )
            return result, [4]  # declares posture 4 excluded

    calib = _run(Hook, robot, train)
    assert calib.evaluation_metrics["excluded_samples"] == [4]
    assert calib.outlier_indices == [4] and calib.results_data["outlier indices"] == [4]


def test_optimize_with_outlier_removal(robot, sim):
    train, _, truth = sim
    seen = []

    class Hook(BaseCalibration):
        def _optimize_with_outlier_removal(
            self, x0, method="lm", max_iterations=3, outlier_threshold=None, enable_logging=False
        ):
            seen.append((method, max_iterations, outlier_threshold))
            result, _, res = super()._optimize_with_outlier_removal(
                x0, method, max_iterations, outlier_threshold, enable_logging
            )
            return result, [2, 9], res  # declares postures 2 and 9 excluded

    calib = _run(Hook, robot, train, max_iterations=5)
    assert seen == [("lm", 5, 1.0)]  # solve -> solve_optimisation -> the hook
    assert calib.outlier_indices == [2, 9]
    assert calib.evaluation_metrics["n_outliers"] == 2
    assert max(abs(v - truth[n]) for n, v in _fitted(calib).items()) < 1e-6


def test_sample_position_errors(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def _sample_position_errors(self, residuals):
            e = np.array(super()._sample_position_errors(residuals))
            e[11] = 1.0  # 1 m: posture 11 is an outlier
            return e

    calib = _run(Hook, robot, train, outlier_threshold=0.02)
    assert calib.outlier_indices == [11]
    assert calib.evaluation_metrics["excluded_sample_errors"] == [1.0]


def test_sample_rows(robot, sim):
    train, _, _ = sim
    asked = []

    class Hook(BaseCalibration):
        def _sample_rows(self, samples):
            asked.append(list(samples))
            return super()._sample_rows(samples)[:2]  # zero only two rows

    class Outlier(Hook):
        def _sample_position_errors(self, residuals):
            e = np.array(super()._sample_position_errors(residuals))
            e[3] = 1.0
            return e

    calib = _run(Outlier, robot, train, outlier_threshold=0.02)
    assert [3] in asked
    assert np.array_equal(calib._excluded_rows, [3, 3 + calib.n_samples])


def test_setup_logging(robot, sim):
    train, _, _ = sim
    records = []

    class ListHandler(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    log = logging.getLogger("test_calibration_hooks.custom")
    log.addHandler(ListHandler())
    log.setLevel(logging.INFO)
    log.propagate = False

    class Hook(BaseCalibration):
        def _setup_logging(self):
            return log

    _run(Hook, robot, train, enable_logging=True)
    assert any(m.startswith("fit 1: cost") for m in records)
    records.clear()
    _run(Hook, robot, train, enable_logging=False)
    assert records == []


def test_log_iteration_results(robot, sim):
    train, _, _ = sim
    seen = []

    class Hook(BaseCalibration):
        def _log_iteration_results(self, result, evaluation):
            seen.append((result.cost, evaluation["rmse"]))

    calib = _run(Hook, robot, train, enable_logging=True)
    assert seen == [(calib.LM_result.cost, calib.evaluation_metrics["rmse"])]


# ---------------------------------------------------------------- evaluation and results
def test_evaluate_solution(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def _evaluate_solution(self, result, outliers):
            ev = super()._evaluate_solution(result, outliers)
            ev["rmse"] = 42.0
            return ev

    calib = _run(Hook, robot, train)
    assert calib.evaluation_metrics["rmse"] == 42.0 == calib.results_data["rmse"]
    fit = [s for s in calib.stages if s.stage == "fit"][0]
    assert fit.metrics["rmse"]["value"] == 42.0


def test_calc_stddev(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def calc_stddev(self, result):
            super().calc_stddev(result)
            self.std_dev = np.full(len(result.x), 0.5)
            return self.std_dev, np.ones(len(result.x))

    calib = _run(Hook, robot, train)
    assert calib.evaluation_metrics["param_stdev"] == [0.5] * len(calib.var_)
    assert calib.evaluation_metrics["param_stddev_percentage"] == [1.0] * len(calib.var_)


def test_get_pose_from_measure(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def get_pose_from_measure(self, res_):
            return np.asarray(super().get_pose_from_measure(res_)) + 1.0

    calib = _run(Hook, robot, train)
    est = np.asarray(calib.results_data["PEE estimated (2D array)"])
    direct = ct.calc_updated_fkm(
        calib.model, calib.data, calib.var_, calib.q_measured, calib.calib_config
    )
    n = calib.n_samples
    np.testing.assert_allclose(est, direct.reshape(-1, n).T + 1.0, rtol=0, atol=1e-12)


def test_store_optimization_results(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def _store_optimization_results(self, result, evaluation, outliers):
            super()._store_optimization_results(result, evaluation, outliers)
            self.results_data["stored by"] = "hook"

    calib = _run(Hook, robot, train)
    assert calib.results_data["stored by"] == "hook"


def test_compute_validation_metrics(robot, sim, capsys):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def _compute_validation_metrics(self):
            v = super()._compute_validation_metrics()
            v["pos_rmse_calibrated_mm"] = 123.456
            return v

    calib = _run(Hook, robot, train, verbose=True)
    assert calib.results_data["validation_metrics"]["pos_rmse_calibrated_mm"] == 123.456
    assert "123.456" in capsys.readouterr().out  # the report recomputes it through the hook


def test_print_quality_report(robot, sim, capsys):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def print_quality_report(self):
            print("custom report")

    _run(Hook, robot, train, verbose=True)
    assert capsys.readouterr().out.strip() == "custom report"


# ---------------------------------------------------------------- plots and files
def test_plot_results(robot, sim):
    train, _, _ = sim
    calls = []

    class Hook(BaseCalibration):
        def plot_results(self):
            calls.append(self.STATUS)

    _run(Hook, robot, train, plotting=True)
    assert calls == ["CALIBRATED"]


def test_basic_plots_are_the_fallback(robot, sim, tmp_path):
    """Without a results manager ``plot_results`` draws the basic plots through the instance."""
    train, _, _ = sim
    calls = []

    class Hook(BaseCalibration):
        def plot_errors_distribution(self):
            calls.append("errors")

        def plot_3d_poses(self, INCLUDE_UNCALIB=False):
            calls.append("3d")

    calib = _run(Hook, robot, train)
    calib.results_manager = None
    plot_into(calib, tmp_path)
    assert calls == ["errors", "3d"]


def test_save_results(robot, sim, tmp_path):
    train, _, _ = sim
    calls = []

    class Hook(BaseCalibration):
        def save_results(self, output_dir="results"):
            calls.append(output_dir)

    _run(Hook, robot, train, save_results=True)
    assert calls == ["results"]


def test_export_html_report(robot, sim):
    train, _, _ = sim
    calls = []

    class Hook(BaseCalibration):
        def export_html_report(self, output_path=None, output_dir="results"):
            calls.append((output_path, output_dir))

    _run(Hook, robot, train, html_report=True)
    assert calls == [(None, "results")]


# ---------------------------------------------------------------- exports
def test_redistribute_parameters(robot, sim, tmp_path):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def redistribute_parameters(self):
            return {"d_px_elbow_joint": {"value": 0.004, "std_dev": 0.0}}

    calib = _run(Hook, robot, train)
    assert calib.joint_corrections() == {"d_px_elbow_joint": 0.004}
    pal = build_geometric_calibration(calib)["robot_state_publisher"]["geometric_calibration"]
    assert set(pal) == {"elbow_dx"}


def test_require_exportable(robot, sim):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def require_exportable(self, allow_failed_fit=False):
            raise CalibrationError("refused by the subclass")

    calib = _run(Hook, robot, train)
    with pytest.raises(CalibrationError, match="refused by the subclass"):
        calib.joint_corrections()


def test_verify(robot, sim, tmp_path):
    train, _, _ = sim

    class Hook(BaseCalibration):
        def verify(self, thresholds=None, scope="prediction"):
            v = super().verify(thresholds, scope)
            v.metadata = {**(v.metadata or {}), "checked_by": "subclass"}
            return v

    calib = _run(Hook, robot, train)
    path = calib.export_verification_report(output_dir=str(tmp_path))
    assert '"checked_by": "subclass"' in open(path).read()
