"""The identified and calibrated models used after ``solve()``.

Truths: Pinocchio's ``rnea`` with the URDF's inertias plus the simulated
friction ``fv·q̇ + fs·sign(q̇)`` (examples/ur10/simulate.py) on states the fit
never saw; the URDF that ``export_urdf`` writes for a selected standard
estimate; the run's own held-out validation metrics (``evaluate`` of the same
log gives the same numbers) and numpy on the per-joint series; the injected
noise σ; and, for calibration, the poses measured through the true model of
the simulated UR10 calibration (examples/ur10/calibration.py) at held-out
postures.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pinocchio as pin
import pytest

from conftest import load_example
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.data.trajectory import TrajectoryData
from figaroh.identification.base_identification import BaseIdentification
from figaroh.identification.exceptions import IdentificationDataError, IdentificationStateError
from figaroh.tools.robot import Robot
from figaroh.utils.error_handling import CalibrationError, ValidationError

_ur10 = load_example("ur10/identification.py", "ur10_identification")
_ur10_cal = load_example("ur10/calibration.py", "ur10_calibration_example")

N = 2000  # samples per simulated log
SIGMA = 0.5  # [N·m] torque noise of the noisy logs


class ExactUR10(BaseIdentification):
    """UR10 identification on simulated logs held in memory, states taken as simulated.

    ``process_kinematics_data`` keeps the exact q, q̇, q̈ (no filter): a
    noise-free log then determines the base parameters exactly.
    """

    def __init__(self, robot, logs, config=_ur10.CONFIG):
        super().__init__(robot, str(config))
        self.logs = logs

    def load_trajectory_data(self, data_source=None):
        traj, tau = self.logs[data_source or "train"]
        return {
            "timestamps": traj.t[:, None],
            "positions": traj.q,
            "velocities": traj.dq,
            "accelerations": traj.ddq,
            "torques": tau,
        }

    def process_kinematics_data(self, filter_config=None):
        raw = self.raw_data
        self.processed_data = {
            k: np.asarray(raw[k], dtype=float)
            for k in ("timestamps", "positions", "velocities", "accelerations")
        }


def _true_efforts(robot, q, dq, ddq):
    """``rnea`` of the URDF model plus the simulated friction [N·m], (N, 6)."""
    rigid = np.array(
        [pin.rnea(robot.model, robot.data, q[i], dq[i], ddq[i]) for i in range(len(q))]
    )
    return rigid + np.asarray(_ur10.UR10_FV) * dq + np.asarray(_ur10.UR10_FS) * np.sign(dq)


def _solved(robot, logs, config=_ur10.CONFIG, validation="val"):
    ident = ExactUR10(robot, logs, config)
    ident.identif_config["validation_data_file"] = validation
    ident.initialize()
    ident.solve(decimate=False, plotting=False, verbose=False)
    return ident


@pytest.fixture(scope="module")
def robot():
    return _ur10.load_ur10()


@pytest.fixture(scope="module")
def new_states(robot):
    """A trajectory no fit below sees (another seed), and its true efforts."""
    traj, _ = _ur10.simulate_ur10(robot, 600, noise_std=0.0, seed=41)
    return traj, _true_efforts(robot, traj.q, traj.dq, traj.ddq)


@pytest.fixture(scope="module")
def clean(robot):
    logs = {
        "train": _ur10.simulate_ur10(robot, N, noise_std=0.0, seed=11),
        "val": _ur10.simulate_ur10(robot, N // 2, noise_std=0.0, seed=12),
    }
    return _solved(robot, logs)


@pytest.fixture(scope="module")
def noisy_logs(robot):
    return {
        "train": _ur10.simulate_ur10(robot, N, noise_std=SIGMA, seed=21),
        "val": _ur10.simulate_ur10(robot, N, noise_std=SIGMA, seed=22),
    }


@pytest.fixture(scope="module")
def noisy(robot, noisy_logs):
    return _solved(robot, noisy_logs)


# ---------------------------------------------------------------------------
# BaseIdentification.predict
# ---------------------------------------------------------------------------


def test_predict_equals_rnea_plus_friction_on_new_states(clean, new_states):
    traj, truth = new_states
    tau = clean.predict(traj.q, traj.dq, traj.ddq)
    assert tau.shape == (len(traj.q), 6)
    err = np.abs(tau - truth).max()
    assert err < 1e-8, err  # efforts up to ~1e2 N·m
    assert np.abs(truth).max() > 50
    # one sample as a 1-D array
    one = clean.predict(traj.q[7], traj.dq[7], traj.ddq[7])
    assert one.shape == (1, 6)
    np.testing.assert_allclose(one[0], truth[7], rtol=0, atol=1e-8)


def test_predict_leaves_the_identification_unchanged(clean, new_states):
    traj, _ = new_states
    processed, n, result = clean.processed_data, clean.num_samples, clean.result
    positions = processed["positions"].copy()
    clean.predict(traj.q, traj.dq, traj.ddq)
    assert clean.processed_data is processed and clean.num_samples == n
    assert clean.result is result
    np.testing.assert_array_equal(clean.processed_data["positions"], positions)


def test_predict_uses_the_accepted_physical_fit(robot, noisy_logs, new_states, tmp_path):
    """``select_stage: physical_fit`` predicts with the standard estimate, not phi_base."""
    config = tmp_path / "physical.yaml"
    config.write_text(
        f'extends: "{_ur10.CONFIG}"\ntasks:\n  identification:\n    select_stage: physical_fit\n',
        encoding="utf-8",
    )
    ident = _solved(robot, noisy_logs, config)
    sel = ident.selected
    if sel is None or not sel.accepted:
        pytest.skip(f"physical fit not available here: {sel and sel.reason}")
    traj, _ = new_states
    tau = ident.predict(traj.q, traj.dq, traj.ddq)
    # truth: the estimate written into a URDF, Pinocchio's rnea on it, plus its friction
    urdf = ident.export_urdf(_ur10.load_ur10().robot_urdf, output_path=str(tmp_path / "fit.urdf"))
    model = pin.buildModelFromUrdf(urdf)
    data = model.createData()
    values = sel.parameter_dict()
    joints = ident.identif_config["active_joints"]
    fv = np.array([values[f"fv_{j}"] for j in joints])
    fs = np.array([values[f"fs_{j}"] for j in joints])
    expected = np.array(
        [pin.rnea(model, data, q, v, a) for q, v, a in zip(traj.q, traj.dq, traj.ddq, strict=True)]
    )
    expected += fv * traj.dq + fs * np.sign(traj.dq)
    np.testing.assert_allclose(tau, expected, rtol=0, atol=1e-9)  # measured: 6e-14
    # a rejected selection is not used: the base fit (same phi_base as a plain run) predicts
    plain = _solved(robot, noisy_logs)
    np.testing.assert_array_equal(ident.phi_base, plain.phi_base)
    base_tau = plain.predict(traj.q, traj.dq, traj.ddq)
    assert np.abs(base_tau - tau).max() > 1e-6  # the two estimates differ
    ident.selected = dataclasses.replace(sel, status="rejected", stage="none")
    try:
        np.testing.assert_array_equal(ident.predict(traj.q, traj.dq, traj.ddq), base_tau)
    finally:
        ident.selected = sel


@pytest.mark.parametrize(
    "change,match",
    [
        (lambda s: (s[0][:, :5], s[1], s[2]), r"'q' must have shape \(N, 6\)"),
        (lambda s: (s[0], s[1][:-1], s[2]), "'dq' has 9 samples but 'q' has 10"),
        (lambda s: (s[0], s[1], np.full((10, 6), np.nan)), "'ddq' contains NaN/inf"),
        (lambda s: (s[0], s[1], [["a"] * 6] * 10), "'ddq' must hold numbers"),
        (lambda s: (s[0][None], s[1], s[2]), "'q' must have shape"),
    ],
)
def test_predict_refuses_bad_states(clean, new_states, change, match):
    traj, _ = new_states
    states = change((traj.q[:10], traj.dq[:10], traj.ddq[:10]))
    with pytest.raises(IdentificationDataError, match=match):
        clean.predict(*states)


def test_predict_and_evaluate_before_solve_raise(robot, noisy_logs):
    ident = ExactUR10(robot, noisy_logs)
    traj, _ = noisy_logs["val"]
    for step in (lambda: None, ident.initialize):
        step()
        with pytest.raises(IdentificationStateError, match=r"predict\(\).*solve\(\)"):
            ident.predict(traj.q, traj.dq, traj.ddq)
        with pytest.raises(AssertionError, match=r"evaluate\(\).*solve\(\)"):
            ident.evaluate("val")


# ---------------------------------------------------------------------------
# BaseIdentification.evaluate
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def filtered(robot, tmp_path_factory):
    """The UR10 example's CSV workflow (filtered, differentiated) with a held-out folder."""
    train, val = _ur10.generate_ur10_data(
        tmp_path_factory.mktemp("ur10_eval"), N, noise_std=SIGMA, seed=31, robot=robot
    )
    ident = _ur10.UR10Identification(robot, _ur10.CONFIG, data_dir=train)
    ident.identif_config["validation_data_file"] = str(val)
    ident.initialize()
    ident.solve(decimate=False, plotting=False, verbose=False)
    return ident, val


def _same_numbers(ev, metrics):
    assert list(ev.joint_names) == metrics["joint_names"]
    assert ev.rmse == tuple(metrics["per_joint"][j]["rmse_identified"] for j in ev.joint_names)
    assert ev.r2 == tuple(metrics["per_joint"][j]["r2"] for j in ev.joint_names)
    assert ev.rmse_stacked == metrics["rmse_identified"]
    assert ev.rmse_nominal == metrics["rmse_nominal"]
    assert ev.n_samples == metrics["n_val_samples"]


def test_evaluate_on_the_validation_log_gives_the_validation_metrics(filtered):
    ident, val = filtered
    metrics = ident.result["validation_metrics"]
    assert metrics["validation_source"] == "validation_data"
    state = (
        ident.processed_data,
        ident.num_samples,
        ident.raw_data,
        ident._val_trajectory,
        ident._val_processed_data,
        len(ident.stages),
    )
    by_path = ident.evaluate(val)  # a folder the example's loader reads
    _same_numbers(by_path, metrics)
    assert by_path.estimate_stage == "fit" and by_path.units == ("N·m",) * 6
    raw = ident.load_trajectory_data(data_source=str(val))
    _same_numbers(ident.evaluate(raw), metrics)  # the legacy dict
    after = (
        ident.processed_data,
        ident.num_samples,
        ident.raw_data,
        ident._val_trajectory,
        ident._val_processed_data,
        len(ident.stages),
    )
    assert all(a is b for a, b in zip(state, after, strict=True))
    assert ident.result["validation_metrics"] is metrics
    # bias: the mean residual of the validation series
    for j, name in enumerate(by_path.joint_names):
        r = np.subtract(
            metrics["tau_measured_per_joint"][name], metrics["tau_identified_per_joint"][name]
        )
        assert by_path.bias[j] == pytest.approx(r.mean(), rel=1e-12, abs=1e-15)


def test_evaluate_a_masked_trajectory_scores_only_its_valid_samples(filtered):
    ident, val = filtered
    raw = ident.load_trajectory_data(data_source=str(val))
    mask = np.ones(N, bool)
    mask[300:700] = False
    log = TrajectoryData.from_arrays(
        ident.identif_config["active_joints"],
        raw["positions"],
        raw["torques"],
        effort_kind="joint_torque",
        effort_unit="N·m",
        t=raw["timestamps"][:, 0],
        dq=raw["velocities"],
        mask=mask,
    )
    ev = ident.evaluate(log)
    assert ev.n_samples == N - 400
    series = ident.result["validation_metrics"]  # same log, every sample
    for j, name in enumerate(ev.joint_names):
        r = np.subtract(
            series["tau_measured_per_joint"][name], series["tau_identified_per_joint"][name]
        )[mask]
        assert ev.rmse[j] == pytest.approx(np.sqrt(np.mean(r**2)), rel=1e-12)
        assert ev.bias[j] == pytest.approx(r.mean(), rel=1e-10, abs=1e-14)


def test_evaluate_rmse_is_the_noise_sigma(noisy):
    ev = noisy.evaluate("val")  # held-out log, σ = 0.5 N·m on every joint
    assert ev.n_samples == N and ev.estimate_stage == "fit"
    # RMSE of N = 2000 Gaussian samples: relative spread 1/sqrt(2N) ≈ 1.6 %
    np.testing.assert_allclose(ev.rmse, SIGMA, rtol=0.06)
    assert ev.rmse_stacked == pytest.approx(SIGMA, rel=0.03)
    assert np.all(np.abs(ev.bias) < 4 * SIGMA / np.sqrt(N))
    assert min(ev.r2) > 0.9 and ev.rmse_nominal > 5 * ev.rmse_stacked
    out = json.loads(json.dumps(ev.to_dict()))
    assert out["joints"]["elbow_joint"]["rmse"] == ev.rmse[2]
    assert set(out) == {"joints", "rmse_stacked", "rmse_nominal", "n_samples", "estimate_stage"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.rmse_stacked = 0.0  # type: ignore[misc]


def test_evaluate_refuses_other_kinds_of_data(noisy):
    with pytest.raises(TypeError, match="'data' must be a TrajectoryData"):
        noisy.evaluate(42)


# ---------------------------------------------------------------------------
# BaseCalibration.predict
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """Noise-free simulated UR10 calibration, solved; the held-out CSV and the truth."""
    robot = Robot(_ur10_cal.ur10_urdf(), load_geometry=False)
    folder = tmp_path_factory.mktemp("ur10_cal")
    train, test, truth = _ur10_cal.simulate_ur10_calibration(
        folder, robot=robot, n_train=40, n_test=30
    )
    calib = BaseCalibration(robot, str(_ur10_cal.CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.set_data_file(train)
    calib.initialize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.solve(enable_logging=False, outlier_threshold=1.0, verbose=False)
    return calib, test, truth


def _held_out(calib, test_csv):
    """Measured poses (n, 6) [m, rad] and full configurations (n, nq) of the held-out CSV."""
    rows = np.loadtxt(test_csv, delimiter=",", skiprows=1, ndmin=2)
    q = np.tile(np.asarray(calib.calib_config["q0"], dtype=float), (len(rows), 1))
    q[:, calib.calib_config["config_idx"]] = rows[:, 6:]
    return rows[:, :6], q


def test_calibration_predict_equals_the_true_model_on_held_out_postures(calibrated):
    calib, test, truth = calibrated
    measured, q = _held_out(calib, test)
    poses = calib.predict(q)
    assert poses.position.shape == (len(q), 1, 3) and poses.rotation.shape == (len(q), 1, 3, 3)
    # the poses measured through the true model (noise-free CSV)
    np.testing.assert_allclose(poses.position[:, 0], measured[:, :3], rtol=0, atol=1e-9)
    np.testing.assert_allclose(poses.rpy[:, 0], measured[:, 3:], rtol=0, atol=1e-9)
    # and the true model's rotations, from the parameters the simulation injected
    cfg = dict(calib.calib_config, param_name=list(truth), NbSample=len(q))
    true = ct.evaluate_poses(calib.model, calib.data, list(truth.values()), q, cfg)
    np.testing.assert_allclose(poses.rotation, true.R, rtol=0, atol=1e-9)
    # at the loaded postures: the cost's own prediction, to the bit
    at_data = calib.predict(calib.q_measured)
    np.testing.assert_array_equal(at_data.measurements, calib.get_pose_from_measure(calib.var_))
    # one posture as a 1-D array; to_dict is JSON
    one = calib.predict(q[3])
    np.testing.assert_array_equal(one.position[0], poses.position[3])
    assert json.loads(json.dumps(one.to_dict()))["position"][0][0] == list(one.position[0, 0])


def test_calibration_predict_errors(calibrated):
    calib, _, _ = calibrated
    fresh = BaseCalibration(calib.robot, str(_ur10_cal.CONFIG))
    with pytest.raises(CalibrationError, match=r"predict\(\).*solve\(\)"):
        fresh.predict(calib.q_measured)
    nq = calib.model.nq
    with pytest.raises(ValidationError, match=rf"'q' must have shape \(N, {nq}\)"):
        calib.predict(calib.q_measured[:, :-1])
    bad = calib.q_measured.copy()
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match="posture 2, configuration index 1"):
        calib.predict(bad)
