"""BaseIdentification as figaroh 1.0.2 runs it, and the options that correct its quirks.

* held-out data: ``validation_data_file`` is handed to ``load_trajectory_data``
  unchanged (a dataset *name*), a loader failure only disables validation;
* kinematic filter: ``scipy.signal.medfilt`` (zero-padded) then ``filtfilt`` of
  the ``(b, a)`` Butterworth with ``padlen = 3·(max(len(b), len(a)) − 1)``;
* ``low_pass_filter_data``: ``Wn = ts·fc/2`` (effective cut-off ``fc/4``),
  ``cutoff_in_hz=True`` for a cut-off in Hz;
* subclass hooks (``solve``, ``load_trajectory_data``, ``process_kinematics_data``,
  ``process_torque_data`` and the four weighted-least-squares hooks) are used by
  the workflow exactly where, and with the arguments, 1.0.2 uses them;
* quirk options: ``filter_params.median_padding: nearest`` and
  ``problem.coulomb_deadband``, with their measured effect on simulated data.

Truths: scipy's filters called directly, frequency responses of Butterworth
filters (|H|² = 1/2 at the cut-off), least-squares identities (linearity,
equal weights = OLS, per-row scaling), and simulated parameters.
"""

from __future__ import annotations

import logging

import numpy as np
import pinocchio as pin
import pytest
from scipy import ndimage, signal

from conftest import load_example
from figaroh.identification import base_identification as bi
from figaroh.identification.base_identification import BaseIdentification
from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.identification.identification_tools import low_pass_filter_data
from figaroh.identification.quality_report import format_quality_report
from figaroh.tools.regressor import build_regressor_basic

_ur10 = load_example("ur10/identification.py", "ur10_identification")
UR10_FS, UR10_FV = np.asarray(_ur10.UR10_FS), np.asarray(_ur10.UR10_FV)
N_TRAIN, N_HELD = 1500, 1000

CONFIG = """
robot:
  name: ur10
  properties:
    joints:
      active_joints: [shoulder_pan_joint, shoulder_lift_joint, elbow_joint,
                      wrist_1_joint, wrist_2_joint, wrist_3_joint]
    mechanics:
      friction_coefficients:
        viscous: [0, 0, 0, 0, 0, 0]
        static: [0, 0, 0, 0, 0, 0]
tasks:
  identification:
    enabled: true
    problem:
      use_joint_torques: true
      model_components: {{friction: true, actuator_inertia: false, joint_offset: false}}
{problem_extra}
    signal_processing:
      sampling_frequency: 100.0
      cutoff_frequency: 10.0
      filter_order: 4
      differentiation_method: gradient
      filter_params: {{nbutter: 4, f_butter: 10.0, med_fil: 5, f_sample: 100.0}}
    data:
      validation_data_file: "{validation}"
"""


def write_config(tmp_path, validation="", problem_extra="", name="ur10.yaml"):
    path = tmp_path / name
    path.write_text(CONFIG.format(validation=validation, problem_extra=problem_extra))
    return str(path)


class MemoryIdentification(BaseIdentification):
    """Datasets held in memory and named; records every loader call."""

    datasets: dict = {}

    def __init__(self, robot, config_file, train="train"):
        self.calls = []
        self.train = train
        super().__init__(robot, config_file)

    def load_trajectory_data(self, data_source=None):
        self.calls.append(data_source)
        d = self.datasets[self.train if data_source is None else data_source]
        return {
            "timestamps": d["t"][:, None].copy(),
            "positions": d["q"].copy(),
            "velocities": None if d.get("dq") is None else d["dq"].copy(),
            "accelerations": None,
            "torques": d["tau"].copy(),
        }


def quiet(ident):
    ident.print_quality_report = lambda: None  # type: ignore[method-assign]
    return ident


@pytest.fixture(scope="module")
def robot():
    return _ur10.load_ur10()


@pytest.fixture(scope="module")
def datasets(robot):
    out = {}
    for name, n, seed in (("train", N_TRAIN, 1), ("heldout_set", N_HELD, 2)):
        traj, tau = _ur10.simulate_ur10(robot, n_samples=n, noise_std=0.2, seed=seed)
        out[name] = {"t": traj.t, "q": traj.q, "dq": traj.dq, "tau": tau}
    return out


def make(cls, robot, datasets, tmp_path, validation="", **kw):
    cls.datasets = datasets
    return quiet(cls(robot, write_config(tmp_path, validation), **kw))


# ---------------------------------------------------------------------------
# held-out data: a name for the loader
# ---------------------------------------------------------------------------


def test_validation_name_reaches_the_loader_unchanged(robot, datasets, tmp_path):
    # "heldout_set" is no file: the old rule raised FileNotFoundError here.
    ident = make(MemoryIdentification, robot, datasets, tmp_path, "heldout_set")
    ident.initialize()
    assert ident.calls == [None, "heldout_set"]
    ident.solve(decimate=False, plotting=False)
    val = ident.result["validation_metrics"]
    assert val["validation_source"] == "validation_data"
    assert val["n_val_samples"] == N_HELD


def test_validation_loader_failure_only_disables_validation(robot, datasets, tmp_path, caplog):
    ident = make(MemoryIdentification, robot, datasets, tmp_path, "no_such_set")
    with caplog.at_level(logging.WARNING):
        ident.initialize()
    assert "Validation data unavailable" in caplog.text and "no_such_set" in caplog.text
    ident.solve(decimate=False, plotting=False)
    val = ident.result["validation_metrics"]
    assert val["validation_source"] == "identification_data_fallback"
    assert val["n_val_samples"] == N_TRAIN


def test_resolve_validation_source_hook_translates_the_name(robot, datasets, tmp_path):
    class Aliased(MemoryIdentification):
        def resolve_validation_source(self, source):
            return {"tail": "heldout_set"}[source]

    ident = make(Aliased, robot, datasets, tmp_path, "tail")
    ident.initialize()
    assert ident.calls == [None, "heldout_set"] and ident._val_available


# ---------------------------------------------------------------------------
# kinematic filter
# ---------------------------------------------------------------------------


def _edge_signal():
    """Moving at both ends, negative and positive values, a spike."""
    k = np.arange(200)
    x = np.column_stack([1.0 - 0.01 * k + 0.05 * np.sin(0.2 * k), -0.5 + 0.3 * np.cos(0.05 * k)])
    x[60, 0] += 3.0
    return x


def test_kinematic_filter_is_medfilt_then_transfer_function_filtfilt():
    x = _edge_signal()
    got = BaseIdentification._apply_filters(x, nbutter=4, f_butter=5.0, med_fil=5, f_sample=100.0)
    b, a = signal.butter(4, 5.0 / 50.0, "low")
    want = np.column_stack(
        [
            signal.filtfilt(b, a, signal.medfilt(x[:, j], 5), padtype="odd", padlen=12)
            for j in range(2)
        ]
    )
    np.testing.assert_array_equal(got, want)
    # the previous rule (edge-repeating median, second-order sections, padding 15)
    sos = signal.butter(4, 0.1, output="sos")
    old = signal.sosfiltfilt(
        sos, ndimage.median_filter(x, size=(5, 1), mode="nearest"), axis=0, padlen=15
    )
    assert np.abs(got - old)[:3].max() > 1e-3
    # 1-D in, 1-D out; None passes through; several signals give a tuple
    one = BaseIdentification._apply_filters(x[:, 1], nbutter=4, f_butter=5.0, f_sample=100.0)
    np.testing.assert_array_equal(one, want[:, 1])
    pair = BaseIdentification._apply_filters(x, None, f_butter=5.0)
    assert isinstance(pair, tuple) and pair[1] is None


def test_process_data_filters_positions_and_differentiates(robot, tmp_path):
    t = np.arange(400) / 100.0
    q = np.tile([0.3, -1.2, 1.1, -0.4, 0.8, 0.05], (400, 1))
    q += np.sin(2 * np.pi * 0.5 * t)[:, None] * [0.4, -0.3, 0.2, 0.0, 0.5, 0.1]
    data = {"train": {"t": t, "q": q, "dq": None, "tau": np.zeros_like(q)}}
    ident = make(MemoryIdentification, robot, data, tmp_path)
    ident.process_data()
    b, a = signal.butter(4, 10.0 / 50.0, "low")
    want_q = np.column_stack(
        [signal.filtfilt(b, a, signal.medfilt(q[:, j], 5), padlen=12) for j in range(6)]
    )
    idxq = ident.identif_config["act_idxq"]
    np.testing.assert_allclose(ident.processed_data["positions"][:, idxq], want_q, atol=1e-13)
    want_dq = np.gradient(want_q, t, axis=0)
    idxv = ident.identif_config["act_idxv"]
    np.testing.assert_allclose(ident.processed_data["velocities"][:, idxv], want_dq, atol=1e-10)


def test_median_padding_nearest_keeps_a_moving_edge():
    ramp = 1.0 - 0.01 * np.arange(100)  # positive, decreasing: moving at the start
    zero = BaseIdentification._apply_filters(ramp, f_butter=20.0, f_sample=100.0)
    near = BaseIdentification._apply_filters(
        ramp, f_butter=20.0, f_sample=100.0, median_padding="nearest"
    )
    # zero padding replaces the first sample by its second neighbour (two steps off)
    assert signal.medfilt(ramp, 5)[0] == pytest.approx(ramp[2])
    assert abs(zero[0] - ramp[0]) > 10 * abs(near[0] - ramp[0])
    np.testing.assert_allclose(near, ramp, atol=2e-4)
    with pytest.raises(ValueError, match="median_padding"):
        BaseIdentification._apply_filters(ramp, median_padding="reflect")


def test_median_padding_option_on_noise_free_identification(robot, tmp_path):
    traj, tau = _ur10.simulate_ur10(robot, n_samples=N_TRAIN, noise_std=0.0, seed=4)
    data = {"train": {"t": traj.t, "q": traj.q, "dq": traj.dq, "tau": tau}}
    rmse = {}
    for padding in ("zero", "nearest"):
        ident = make(MemoryIdentification, robot, data, tmp_path)
        ident.filter_config["filter_params"]["median_padding"] = padding
        ident.initialize()
        ident.solve(decimate=False, plotting=False)
        rmse[padding] = ident.rms_error
    # the 1.0.2 zero padding leaves edge artefacts in the fit of a moving log
    assert rmse["nearest"] < 0.05
    assert rmse["zero"] > 5 * rmse["nearest"]


# ---------------------------------------------------------------------------
# low_pass_filter_data cut-off
# ---------------------------------------------------------------------------


def _amplitude(freq, cutoff, **kw):
    ts = 1e-3
    t = np.arange(8000) * ts
    out = low_pass_filter_data(
        np.sin(2 * np.pi * freq * t), {"ts": ts, "cut_off_frequency_butterworth": cutoff}, **kw
    )
    return np.abs(out[2000:-2000]).max()


def test_low_pass_filter_data_effective_cutoff_is_a_quarter_of_the_configured_one():
    # filtfilt squares the gain: |H|² = 1/2 at the cut-off frequency.
    assert _amplitude(10.0, 40.0) == pytest.approx(0.5, abs=2e-3)  # fc/4 = 10 Hz
    assert _amplitude(40.0, 40.0) < 1e-5
    assert _amplitude(40.0, 40.0, cutoff_in_hz=True) == pytest.approx(0.5, abs=2e-3)
    assert _amplitude(10.0, 40.0, cutoff_in_hz=True) == pytest.approx(1.0, abs=1e-4)


def test_low_pass_filter_data_is_transfer_function_filtfilt_with_trimmed_borders():
    x = _edge_signal()
    got = low_pass_filter_data(x, {"ts": 0.01, "cut_off_frequency_butterworth": 5.0}, nbutter=3)
    b, a = signal.butter(3, 0.01 * 5.0 / 2, "low")
    want = signal.filtfilt(b, a, x, axis=0, padtype="odd", padlen=9)[15:-15]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


# ---------------------------------------------------------------------------
# subclass hooks
# ---------------------------------------------------------------------------


def test_hook_solve_override_is_what_the_caller_gets(robot, datasets, tmp_path):
    class AlwaysWLS(MemoryIdentification):
        def solve(
            self,
            decimate=True,
            decimation_factor=10,
            zero_tolerance=0.001,
            plotting=True,
            save_results=False,
            html_report=False,
            wls=False,
        ):
            phi = super().solve(decimate=False, plotting=False, wls=True)
            return 2.0 * phi

    ident = make(AlwaysWLS, robot, datasets, tmp_path)
    ident.initialize()
    out = ident.solve(decimate=True)
    assert ident.result["torque processed"].shape == (6 * N_TRAIN,)  # not decimated
    assert "wls_std_deviations" in ident.result
    np.testing.assert_array_equal(out, 2.0 * ident.phi_base)


def test_hook_process_torque_data_scales_the_estimate(robot, datasets, tmp_path):
    class Doubled(MemoryIdentification):
        def process_torque_data(self, **kwargs):
            assert kwargs == {}
            return 2.0 * np.asarray(self.raw_data["torques"])

    plain = make(MemoryIdentification, robot, datasets, tmp_path)
    plain.initialize()
    plain.solve(decimate=False, plotting=False)
    twice = make(Doubled, robot, datasets, tmp_path)
    twice.initialize()
    twice.solve(decimate=False, plotting=False)
    np.testing.assert_allclose(twice.processed_data["torques"], 2 * datasets["train"]["tau"])
    np.testing.assert_allclose(twice.phi_base, 2.0 * plain.phi_base, rtol=1e-6, atol=2e-6)


def test_hook_process_kinematics_data_replaces_the_filter(robot, datasets, tmp_path):
    class Analytic(MemoryIdentification):
        def process_kinematics_data(self, filter_config=None):
            self.seen_config = filter_config
            d = self.datasets[self.train if len(self.calls) == 1 else "heldout_set"]
            n = len(self.raw_data["timestamps"])
            self.processed_data = {
                "timestamps": self.raw_data["timestamps"],
                "positions": np.asarray(self.raw_data["positions"]),
                "velocities": np.asarray(self.raw_data["velocities"]),
                "accelerations": np.full((n, 6), 0.25),
            }
            assert np.array_equal(self.processed_data["positions"], d["q"])

    ident = make(Analytic, robot, datasets, tmp_path, "heldout_set")
    ident.initialize()
    assert ident.seen_config is ident.filter_config
    idxv = ident.identif_config["act_idxv"]
    np.testing.assert_array_equal(ident.processed_data["accelerations"][:, idxv], 0.25)
    np.testing.assert_array_equal(ident._val_processed_data["accelerations"][:, idxv], 0.25)
    idxq = ident.identif_config["act_idxq"]
    np.testing.assert_array_equal(
        ident.processed_data["positions"][:, idxq], datasets["train"]["q"]
    )


def test_hook_load_trajectory_data_feeds_training_and_validation(robot, datasets, tmp_path):
    class Shifted(MemoryIdentification):
        def load_trajectory_data(self, data_source=None):
            raw = super().load_trajectory_data(data_source)
            raw["torques"] = raw["torques"] + (0.0 if data_source is None else 100.0)
            return raw

    ident = make(Shifted, robot, datasets, tmp_path, "heldout_set")
    ident.initialize()
    ident.solve(decimate=False, plotting=False)
    val = ident.result["validation_metrics"]
    # the held-out efforts are what the override returned: off by 100 N·m
    assert val["rmse_identified"] == pytest.approx(100.0, rel=0.02)


@pytest.fixture
def solved_ols(robot, datasets, tmp_path):
    ident = make(MemoryIdentification, robot, datasets, tmp_path)
    ident.initialize()
    ident.solve(decimate=False, plotting=False)
    return ident


def _wls(cls, robot, datasets, tmp_path):
    ident = make(cls, robot, datasets, tmp_path)
    ident.initialize()
    ident.solve(decimate=False, plotting=False, wls=True)
    return ident


def test_default_wls_is_ols_of_rows_scaled_by_the_joint_noise(
    robot, datasets, tmp_path, solved_ols
):
    ident = _wls(MemoryIdentification, robot, datasets, tmp_path)
    W, tau = ident.dynamic_regressor_base, ident.tau_noised
    r = (tau - W @ solved_ols.phi_base).reshape(6, -1)
    sigma = np.sqrt((r**2).mean(axis=1))
    np.testing.assert_allclose(ident._sig_ro_joint, sigma**2, rtol=1e-12)
    s = np.repeat(1.0 / sigma, N_TRAIN)
    phi = np.linalg.lstsq(W * s[:, None], tau * s, rcond=None)[0]
    np.testing.assert_allclose(ident.phi_base, phi, rtol=1e-8, atol=1e-10)
    cov = np.linalg.inv((W * s[:, None]).T @ (W * s[:, None]))
    std = np.round(100 * np.sqrt(np.diag(cov)) / np.abs(phi), 2)
    np.testing.assert_allclose(ident.result["wls_std_deviations"], std, atol=0.011)


def test_hook_calculate_joint_variances_equal_weights_give_ols(
    robot, datasets, tmp_path, solved_ols
):
    class Uniform(MemoryIdentification):
        def _calculate_joint_variances(self, W_b, tau, n_active):
            self.args = (W_b, tau, n_active)
            return np.full(n_active, 4.0), np.full(len(tau), 4.0)

    ident = _wls(Uniform, robot, datasets, tmp_path)
    W_b, tau, n_active = ident.args
    assert n_active == 6 and W_b is ident.dynamic_regressor_base and tau is ident.tau_noised
    np.testing.assert_allclose(ident.phi_base, solved_ols.phi_base, rtol=1e-6, atol=2e-6)
    np.testing.assert_allclose(ident._wls_row_weight, 0.5, rtol=1e-12)


def test_hook_calculate_joint_variances_single_array_is_accepted(robot, datasets, tmp_path):
    class RowsOnly(MemoryIdentification):
        def _calculate_joint_variances(self, W_b, tau, n_active):
            return np.ones(len(tau))

    ident = _wls(RowsOnly, robot, datasets, tmp_path)
    assert ident._sig_ro_joint is None and np.all(ident._joint_variances == 1.0)


def test_hook_solve_weighted_least_squares_sets_estimate_and_covariance(robot, datasets, tmp_path):
    class Fixed(MemoryIdentification):
        def _solve_weighted_least_squares(self, W_b, tau, diag_SIGMA):
            self.diag = diag_SIGMA
            n = W_b.shape[1]
            return np.arange(1.0, n + 1), np.diag(np.full(n, 0.01))

    ident = _wls(Fixed, robot, datasets, tmp_path)
    n = len(ident.phi_base)
    np.testing.assert_array_equal(ident.phi_base, np.arange(1.0, n + 1))
    np.testing.assert_array_equal(ident.diag, ident._joint_variances)
    np.testing.assert_allclose(
        ident.result["wls_std_deviations"], np.round(10.0 / np.arange(1.0, n + 1), 2)
    )
    np.testing.assert_allclose(
        ident.tau_identif, ident.dynamic_regressor_base @ np.arange(1.0, n + 1)
    )


def test_hook_compute_wls_standard_deviations(robot, datasets, tmp_path):
    class Constant(MemoryIdentification):
        def _compute_wls_standard_deviations(self, C_X, phi_wls):
            self.shapes = (np.shape(C_X), np.shape(phi_wls))
            return np.full(len(phi_wls), 7.0)

    ident = _wls(Constant, robot, datasets, tmp_path)
    n = len(ident.phi_base)
    assert ident.shapes == ((n, n), (n,))
    np.testing.assert_array_equal(ident.result["wls_std_deviations"], 7.0)


def test_hook_apply_weighted_least_squares(robot, datasets, tmp_path, solved_ols):
    class Halved(MemoryIdentification):
        def _apply_weighted_least_squares(self):
            return 0.5 * self.phi_base, np.full(len(self.phi_base), 3.0)

    ident = _wls(Halved, robot, datasets, tmp_path)
    np.testing.assert_allclose(ident.phi_base, 0.5 * solved_ols.phi_base, rtol=1e-12)
    np.testing.assert_array_equal(ident.result["wls_std_deviations"], 3.0)
    np.testing.assert_allclose(
        ident.result["torque estimated"], ident.dynamic_regressor_base @ ident.phi_base
    )


# ---------------------------------------------------------------------------
# Coulomb friction dead band
# ---------------------------------------------------------------------------


def rest_move_rest(model, seed, fs=100.0, rest=3.0, move=6.0, noise=0.05):
    """Exactly at rest, a smooth windowed motion, at rest again; rnea + friction + noise.

    The Coulomb term is ``fs·sign(dq)`` with ``sign(0) = 0``: no Coulomb effort at rest.
    """
    g = np.random.default_rng(seed)
    n = int(round((2 * rest + move) * fs))
    t = np.arange(n) / fs
    tau_ = np.clip((t - rest) / move, 0.0, 1.0)
    inside = (tau_ > 0) & (tau_ < 1)
    w = np.where(inside, np.sin(np.pi * tau_) ** 2, 0.0)
    dw = np.where(inside, np.pi / move * np.sin(2 * np.pi * tau_), 0.0)
    ddw = np.where(inside, 2 * np.pi**2 / move**2 * np.cos(2 * np.pi * tau_), 0.0)
    q = np.tile(g.uniform(-0.5, 0.5, 6), (n, 1))
    dq, ddq = np.zeros((n, 6)), np.zeros((n, 6))
    for j in range(6):
        for k in range(1, 4):
            om, amp, ph = 2 * np.pi * k / move, g.uniform(-0.6, 0.6), g.uniform(0, 2 * np.pi)
            arg = om * (t - rest) + ph
            s, ds, dds = amp * np.sin(arg), amp * om * np.cos(arg), -amp * om**2 * np.sin(arg)
            q[:, j] += w * s
            dq[:, j] += dw * s + w * ds
            ddq[:, j] += ddw * s + 2 * dw * ds + w * dds
    data = model.createData()
    tau = np.array([pin.rnea(model, data, q[i], dq[i], ddq[i]) for i in range(n)])
    tau += UR10_FV * dq + UR10_FS * np.sign(dq)
    tau += noise * g.standard_normal(tau.shape)
    return {"t": t, "q": q, "dq": None, "tau": tau}


def _friction_errors(ident):
    est = dict(zip(ident.params_base, ident.phi_base, strict=True))
    names = ident.identif_config["active_joints"]
    fs = np.array([est[f"fs_{n}"] for n in names]) / UR10_FS - 1.0
    fv = np.array([est[f"fv_{n}"] for n in names]) / UR10_FV - 1.0
    return np.abs(fs), np.abs(fv)


def test_coulomb_deadband_removes_the_friction_bias_of_long_rests(robot, tmp_path, caplog):
    data = {"train": rest_move_rest(robot.model, seed=7)}
    runs = {}
    for deadband in (0.0, 1e-3):
        ident = make(MemoryIdentification, robot, data, tmp_path)
        ident.identif_config["coulomb_deadband"] = deadband
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            ident.initialize()
            ident.solve(decimate=False, plotting=False)
        runs[deadband] = (ident, _friction_errors(ident), caplog.text)
    ident, (fs_err, fv_err), log = runs[0.0]
    # 1.0.2: the Coulomb column is the random sign of filtered round-off at rest
    assert fs_err.max() > 0.3
    at_rest = ident.result["coulomb_at_rest"]
    assert at_rest["rows_at_rest"] > 0.4 * at_rest["rows"] and at_rest["deadband"] == 0.0
    assert "the Coulomb sign is undefined there" in at_rest["message"]
    assert "Coulomb friction" in log
    assert "Coulomb friction:" in format_quality_report(ident)
    fit = next(s for s in ident.stages if s.stage == "fit")
    assert fit.metrics["coulomb_rows_at_rest"]["value"] == at_rest["rows_at_rest"]
    ident, (fs_err, fv_err), log = runs[1e-3]
    assert fs_err.max() < 0.03 and fv_err.max() < 0.05
    assert "dead band" in ident.result["coulomb_at_rest"]["message"]
    assert "Coulomb friction" not in log  # the rows at rest are handled: no warning
    assert runs[1e-3][0].rms_error < 0.5 * runs[0.0][0].rms_error


def test_no_at_rest_record_for_a_moving_trajectory(solved_ols):
    assert "coulomb_at_rest" not in solved_ols.result


def test_coulomb_deadband_zeroes_the_sign_column_only(robot):
    rng = np.random.default_rng(0)
    n = 50
    q = rng.uniform(-1, 1, (n, 6))
    v = rng.uniform(-0.01, 0.01, (n, 6))
    v[::7] = 0.0
    a = rng.uniform(-1, 1, (n, 6))
    base = {"has_friction": True, "act_idxv": list(range(6))}
    plain = build_regressor_basic(robot, q, v, a, base)
    zero = build_regressor_basic(robot, q, v, a, {**base, "coulomb_deadband": 0.0})
    np.testing.assert_array_equal(plain, zero)  # default: bit-identical
    band = build_regressor_basic(robot, q, v, a, {**base, "coulomb_deadband": 4e-3})
    n_in = 10 * (robot.model.njoints - 1)
    W3p, W3b = plain.reshape(6, n, -1), band.reshape(6, n, -1)
    for j in range(6):
        np.testing.assert_array_equal(W3p[j, :, n_in + 6 + j], np.sign(v[:, j]))
        want = np.where(np.abs(v[:, j]) < 4e-3, 0.0, np.sign(v[:, j]))
        np.testing.assert_array_equal(W3b[j, :, n_in + 6 + j], want)
    fs_cols = n_in + 6 + np.arange(6)
    others = np.setdiff1d(np.arange(plain.shape[1]), fs_cols)
    np.testing.assert_array_equal(plain[:, others], band[:, others])


def test_coulomb_deadband_config_key(robot, tmp_path):
    cfg = write_config(tmp_path, problem_extra="      coulomb_deadband: 0.002")
    assert quiet(MemoryIdentification(robot, cfg)).identif_config["coulomb_deadband"] == 0.002
    absent = quiet(MemoryIdentification(robot, write_config(tmp_path, name="plain.yaml")))
    assert "coulomb_deadband" not in absent.identif_config  # the 1.0.2 key set
    bad = write_config(tmp_path, problem_extra="      coulomb_deadband: -1", name="bad.yaml")
    with pytest.raises(IdentificationConfigError, match="coulomb_deadband"):
        MemoryIdentification(robot, bad)


def test_median_padding_config_key(robot, tmp_path):
    text = CONFIG.format(validation="", problem_extra="").replace(
        "f_sample: 100.0}", "f_sample: 100.0, median_padding: nearest}"
    )
    (tmp_path / "near.yaml").write_text(text)
    ident = quiet(MemoryIdentification(robot, str(tmp_path / "near.yaml")))
    assert ident.filter_config["filter_params"]["median_padding"] == "nearest"
    (tmp_path / "bad.yaml").write_text(text.replace("nearest", "reflect"))
    with pytest.raises(ValueError, match="median_padding"):
        MemoryIdentification(robot, str(tmp_path / "bad.yaml"))


# ---------------------------------------------------------------------------
# module surface
# ---------------------------------------------------------------------------


def test_base_identification_reexports():
    from figaroh.tools.regressor import build_regressor_reduced
    from figaroh.tools.solver import LinearSolver
    from figaroh.utils.config_parser import require_unified_config
    from figaroh.utils.results_manager import plot_with_fallback

    assert bi.LinearSolver is LinearSolver
    assert bi.build_regressor_reduced is build_regressor_reduced
    assert bi.plot_with_fallback is plot_with_fallback
    assert bi.require_unified_config is require_unified_config
    for name in (
        "LinearSolver",
        "build_regressor_reduced",
        "plot_with_fallback",
        "require_unified_config",
        "BaseIdentification",
    ):
        assert name in bi.__all__
