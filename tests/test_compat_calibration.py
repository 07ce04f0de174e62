"""figaroh 1.0.2 call compatibility of the geometric calibration.

Every test calls the API the way a 1.0.2 script does (keyword names, subclass
hooks, re-exported names) and checks the result against an independent truth:
the injected parameters of a noise-free simulated UR10 calibration, Pinocchio's
own kinematics, finite differences, or closed-form covariances.
"""

from __future__ import annotations

import copy
import csv
import shutil
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from conftest import ROOT, load_example
from figaroh.backends.pinocchio import PinocchioBackend
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration import estimation
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.tools.robot import Robot
from figaroh.utils.error_handling import CalibrationError, ConfigurationError

ex = load_example("ur10/calibration.py", "ur10_calibration_example")
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
SHIFT = 0.01  # [m] world-x shift of the measurements dictated by the hook overrides


@pytest.fixture(scope="module")
def robot(ur10_urdf):
    return Robot(str(ur10_urdf), load_geometry=False)


@pytest.fixture(scope="module")
def sim(robot, tmp_path_factory):
    """Noise-free simulated UR10 calibration: ``(train_csv, truth)``."""
    d = tmp_path_factory.mktemp("compat_sim")
    train, _, truth = ex.simulate_ur10_calibration(d, robot=robot, n_train=40, n_test=5)
    return train, truth


def _make(cls, robot, train, **solve):
    calib = cls(robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.set_data_file(train)
    calib.initialize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = calib.solve(enable_logging=False, outlier_threshold=1.0, **solve)
    return calib, res


def _fitted(calib):
    return dict(zip(calib.calib_config["param_name"], calib.var_, strict=True))


def _x_rows(calib):
    """Flat rows of the measured x positions (marker 1), one per posture."""
    return np.arange(calib.n_samples)  # component 0 of marker 0 comes first


@pytest.fixture(scope="module")
def default_fit(robot, sim):
    train, truth = sim
    calib, _ = _make(BaseCalibration, robot, train)
    return calib, truth


# ---------------------------------------------------------------------------
# get_pose_from_measure, require_exportable
# ---------------------------------------------------------------------------


def test_get_pose_from_measure_reproduces_noise_free_measurements(default_fit):
    calib, truth = default_fit
    est = calib.get_pose_from_measure(calib.LM_result.x)
    assert est.shape == np.asarray(calib.PEE_measured).shape
    np.testing.assert_allclose(est, calib.PEE_measured, rtol=0, atol=1e-9)
    # the injected truth reproduces them too (independent of the solver)
    x_true = np.array([truth[n] for n in calib.calib_config["param_name"]])
    np.testing.assert_allclose(calib.get_pose_from_measure(x_true), calib.PEE_measured, atol=1e-12)
    with pytest.raises(CalibrationError, match="parameters"):
        calib.get_pose_from_measure(x_true[:-1])


def test_require_exportable_refuses_a_failed_fit(default_fit, tmp_path):
    from figaroh.tools.geometric_calibration_export import export_geometric_calibration_yaml

    calib, _ = default_fit
    fresh = BaseCalibration(calib.robot, str(CONFIG))
    with pytest.raises(CalibrationError, match="run solve"):
        fresh.require_exportable()
    calib.require_exportable()  # converged fit: accepted
    good = calib.joint_corrections(lift=False)
    saved = calib.LM_result
    failed = copy.copy(saved)
    failed.success, failed.message = False, "forced failure"
    calib.LM_result = failed
    try:
        with pytest.raises(CalibrationError, match="allow_failed_fit"):
            calib.joint_corrections(lift=False)
        assert calib.stages[-1].stage == "export" and calib.stages[-1].status == "failed"
        with pytest.raises(CalibrationError, match="did not converge"):
            export_geometric_calibration_yaml(calib, tmp_path / "m.yaml")
        assert not (tmp_path / "m.yaml").exists()
        assert calib.joint_corrections(lift=False, allow_failed_fit=True) == good
        path = export_geometric_calibration_yaml(calib, tmp_path / "m.yaml", allow_failed_fit=True)
        assert Path(path).is_file()
    finally:
        calib.LM_result = saved


# ---------------------------------------------------------------------------
# subclass hooks: each override changes the fit exactly as it dictates
# ---------------------------------------------------------------------------


def _shift_flat(calib):
    s = np.zeros(len(calib.PEE_measured))
    s[_x_rows(calib)] = SHIFT
    return s


class ShiftedCost(BaseCalibration):
    """1.0.2-style cost: measurements moved by +SHIFT along world x."""

    def cost_function(self, var):
        est = ct.calc_updated_fkm(self.model, self.data, var, self.q_measured, self.calib_config)
        meas = np.asarray(self.PEE_measured) + _shift_flat(self)
        res = self._compute_logmap_residuals(meas, est, position_frame="world")
        return self.apply_measurement_weighting(res)


class ShiftedLogmap(BaseCalibration):
    """Only the residual hook is overridden: the default cost must use it."""

    def _compute_logmap_residuals(self, measured, estimated, **kwargs):
        shifted = np.asarray(measured) + _shift_flat(self)
        return super()._compute_logmap_residuals(shifted, estimated, position_frame="world")


def _assert_shifted(calib, truth):
    est = _fitted(calib)
    assert set(est) == set(truth)
    # a world translation of every measured point is absorbed by the base frame alone
    assert est["base_px"] == pytest.approx(truth["base_px"] + SHIFT, abs=1e-7)
    others = [n for n in truth if n != "base_px"]
    assert max(abs(est[n] - truth[n]) for n in others) < 1e-7


def test_default_fit_recovers_the_truth(default_fit):
    calib, truth = default_fit
    est = _fitted(calib)
    assert max(abs(est[n] - truth[n]) for n in truth) < 1e-7
    assert calib.evaluation_metrics["jacobian"] == "2-point"  # figaroh 1.0.2's default


def test_cost_function_override_is_what_solve_minimises(robot, sim):
    train, truth = sim
    calib, _ = _make(ShiftedCost, robot, train)
    _assert_shifted(calib, truth)
    assert calib.evaluation_metrics["jacobian"] == "2-point"


def test_compute_logmap_residuals_override_is_used_by_the_default_cost(robot, sim):
    train, truth = sim
    calib, _ = _make(ShiftedLogmap, robot, train)
    _assert_shifted(calib, truth)
    assert calib.evaluation_metrics["jacobian"] == "2-point"


def test_apply_measurement_weighting_override_is_used_by_the_default_cost(robot, sim, tmp_path):
    train, truth = sim
    header, *rows = list(csv.reader(open(train, newline="")))
    bad = list(range(0, 40, 4))  # 10 postures moved by 5 mm along x
    for i in bad:
        rows[i][0] = repr(float(rows[i][0]) + 0.005)
    corrupted = tmp_path / "corrupted.csv"
    with open(corrupted, "w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])

    class IgnoreBad(BaseCalibration):
        def apply_measurement_weighting(self, residuals, pos_weight=None, orient_weight=None):
            w = super().apply_measurement_weighting(residuals, pos_weight, orient_weight)
            keep = np.ones(self.n_samples)
            keep[bad] = 0.0
            return w * np.tile(keep, w.size // self.n_samples)

    biased, _ = _make(BaseCalibration, robot, corrupted)
    assert max(abs(v - truth[n]) for n, v in _fitted(biased).items()) > 1e-4
    calib, _ = _make(IgnoreBad, robot, corrupted)
    est = _fitted(calib)
    assert max(abs(est[n] - truth[n]) for n in truth) < 1e-7
    assert calib.evaluation_metrics["jacobian"] == "2-point"


# ---------------------------------------------------------------------------
# renamed parameters (keyword calls as in 1.0.2)
# ---------------------------------------------------------------------------


def test_keyword_names_of_the_function_api(robot, sim):
    from figaroh.calibration.config import unified_to_legacy_config
    from figaroh.calibration.data_loader import load_data, read_config_data
    from figaroh.utils.config_parser import UnifiedConfigParser, create_task_config

    model = robot.model
    train, truth = sim
    task = create_task_config(robot, UnifiedConfigParser(CONFIG).parse(), "calibration")
    cfg = unified_to_legacy_config(robot=robot, unified_calib_config=task)
    assert cfg["end_frame"] == "wrist_3_link"
    pee, q = load_data(path_to_file=str(train), model=model, calib_config=cfg, del_list=[1])
    assert q.shape == (39, model.nq) and cfg["NbSample"] == 39
    header, first, second, third = list(csv.reader(open(train, newline="")))[:4]
    np.testing.assert_allclose(q[1, :6], [float(v) for v in third[6:12]])
    joints = read_config_data(model=model, path_to_file=str(train))
    np.testing.assert_allclose(joints[0], [float(v) for v in first[6:12]])

    M = pin.SE3(pin.utils.rpyToMatrix(0.1, -0.4, 2.0), np.array([0.1, 0.2, 0.3]))
    quat = pin.Quaternion(M.rotation)
    T = ct.xyzquat_to_SE3(xyzquat=[0.1, 0.2, 0.3, quat.w, quat.x, quat.y, quat.z])
    assert T.isApprox(M, 1e-12)

    m = model.copy()
    jid = m.getJointId("elbow_joint")
    before = m.jointPlacements[jid].copy()
    ct.apply_joint_offset(m, joint_idx=jid, offset=[0.0, 0.0, 0.0, 0.0, 0.3, 0.0])
    assert m.jointPlacements[jid].isApprox(
        before * pin.SE3(pin.utils.rpyToMatrix(0, 0.3, 0), np.zeros(3))
    )

    J = np.column_stack([np.eye(4)[:, 0], np.eye(4)[:, 1], 2 * np.eye(4)[:, 0]])
    kept, dropped = ct.select_identifiable_parameters(jacobian=J, names=["a", "b", "c"], tol=1e-6)
    assert kept == ["a", "b"] and dropped == ["c"]


def test_regularization_coefficient_is_refused(robot, tmp_path):
    raw = yaml.safe_load(CONFIG.read_text())
    raw["tasks"]["calibration"]["parameters"]["regularization_coefficient"] = 0.01
    shutil.copytree(CONFIG.parent / "templates", tmp_path / "templates")
    path = tmp_path / "reg.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(CalibrationError, match="regularization_coefficient") as err:
        BaseCalibration(robot, str(path))
    assert isinstance(err.value.__cause__, ConfigurationError)
    assert isinstance(err.value.__cause__, ValueError)
    assert "estimation.method: map" in str(err.value.__cause__)
    raw["tasks"]["calibration"]["parameters"]["regularization_coefficient"] = 0.0
    path.write_text(yaml.safe_dump(raw))
    BaseCalibration(robot, str(path))  # 0 is accepted


# ---------------------------------------------------------------------------
# "universe" start frame and the backend= parameter
# ---------------------------------------------------------------------------


def _placement_fd(model, q, joint, frame, h=1e-7):
    """Finite-difference twist of ``frame`` per body-twist error of ``joint``'s placement."""
    data = model.createData()
    fid = model.getFrameId(frame)
    pin.framesForwardKinematics(model, data, q)
    M0 = data.oMf[fid].copy()
    cols = []
    for k in range(6):
        m = model.copy()
        d = m.createData()
        v = np.zeros(6)
        v[k] = h
        m.jointPlacements[joint] = m.jointPlacements[joint] * pin.exp6(v)
        pin.framesForwardKinematics(m, d, q)
        cols.append(pin.log6(M0.inverse() * d.oMf[fid]).vector / h)
    return np.column_stack(cols)


def test_universe_start_frame(robot):
    model, data = robot.model, robot.model.createData()
    q = ct.random_joint_configuration(model, np.random.default_rng(3))
    R = ct.get_rel_kinreg(model, data, "universe", "wrist_3_link", q)
    for joint in (1, 3, 6):
        fd = _placement_fd(model, q, joint, "wrist_3_link")
        np.testing.assert_allclose(R[:, 6 * (joint - 1) : 6 * joint], fd, atol=1e-6)
    J = ct.get_rel_jac(model, data, "universe", "wrist_3_link", q)
    fid = model.getFrameId("wrist_3_link")
    Jpin = pin.computeFrameJacobian(model, model.createData(), q, fid)
    np.testing.assert_allclose(J, Jpin, rtol=0, atol=1e-12)
    # a start frame on the chain: joints above it cancel
    Rrel = ct.get_rel_kinreg(model, data, "upper_arm_link", "wrist_3_link", q)
    assert np.abs(Rrel[:, :6]).max() < 1e-12 and np.abs(Rrel[:, 12:]).max() > 0.1


class SpyBackend(PinocchioBackend):
    """A Pinocchio backend on its own model copy that records the calls."""

    def __init__(self, model, jac_scale=1.0):
        super().__init__(None)
        self._model, self._data = model.copy(), model.createData()
        self.calls = []
        self.jac_scale = jac_scale

    def get_model_object(self):
        self.calls.append("get_model_object")
        return self._model

    def compute_jacobian(self, q, frame):
        self.calls.append(("compute_jacobian", frame))
        return self.jac_scale * super().compute_jacobian(q, frame)


class JacobianOnlyBackend:
    """A non-Pinocchio backend: only ``compute_jacobian`` (times 2, to see it is used)."""

    def __init__(self, model):
        self.inner = PinocchioBackend.from_model(model.copy())

    def compute_jacobian(self, q, frame):
        return 2.0 * self.inner.compute_jacobian(q, frame)

    def get_model_object(self):
        raise NotImplementedError


def test_backend_is_used_by_the_kinematics_functions(robot):
    model, data = robot.model, robot.model.createData()
    q = ct.random_joint_configuration(model, np.random.default_rng(4))
    spy = SpyBackend(model)
    R0 = ct.get_rel_kinreg(model, data, "universe", "wrist_3_link", q)
    np.testing.assert_array_equal(
        ct.get_rel_kinreg(model, data, "universe", "wrist_3_link", q, backend=spy), R0
    )
    assert "get_model_object" in spy.calls
    J0 = ct.get_rel_jac(model, data, "base_link", "wrist_3_link", q)
    spy2 = SpyBackend(model, jac_scale=2.0)
    J2 = ct.get_rel_jac(model, data, "base_link", "wrist_3_link", q, backend=spy2)
    np.testing.assert_allclose(J2, 2.0 * J0, atol=1e-12)
    assert ("compute_jacobian", "wrist_3_link") in spy2.calls

    task_cfg = {"IDX_TOOL": model.getFrameId("wrist_3_link")}
    _, _, R, J = ct.calculate_kinematics_model(q, model, data, task_cfg, backend=spy2)
    np.testing.assert_allclose(R, R0, atol=1e-12)
    np.testing.assert_allclose(
        J, 2.0 * pin.computeFrameJacobian(model, data, q, task_cfg["IDX_TOOL"])
    )

    calib = BaseCalibration(robot, str(CONFIG))
    cfg = dict(calib.calib_config, NbSample=12)
    W = ct.calculate_identifiable_kinematics_model([], model, data, cfg)
    Wb = ct.calculate_identifiable_kinematics_model([], model, data, cfg, backend=SpyBackend(model))
    np.testing.assert_allclose(Wb, W, atol=1e-12)
    c1, c2 = dict(cfg, param_name=[]), dict(cfg, param_name=[])
    ct.calculate_base_kinematics_regressor([], model, data, c1, tol_qr=1e-6)
    ct.calculate_base_kinematics_regressor([], model, data, c2, 1e-6, SpyBackend(model))
    assert c1["param_name"] == c2["param_name"] and len(c1["param_name"]) > 6

    # joint_offset level needs only Jacobians: a non-Pinocchio backend is used as is
    off = dict(cfg, calib_model="joint_offset")
    Woff = ct.calculate_identifiable_kinematics_model([], model, data, off)
    Wj = ct.calculate_identifiable_kinematics_model(
        [], model, data, off, backend=JacobianOnlyBackend(model)
    )
    np.testing.assert_allclose(Wj, 2.0 * Woff, atol=1e-12)
    with pytest.raises(NotImplementedError, match="Pinocchio model"):
        ct.calculate_identifiable_kinematics_model([], model, data, cfg, JacobianOnlyBackend(model))


# ---------------------------------------------------------------------------
# estimation helpers and the marker frame
# ---------------------------------------------------------------------------


def test_excitation_order_matches_the_closed_form_covariance():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((30, 3)))
    J = Q * np.array([5.0, 2.0, 1e-3])  # orthogonal columns: C = noise² diag(1/‖j‖²)
    names, prior, noise = ["base_px", "a", "b"], np.array([np.inf, 0.1, 0.1]), 0.01
    order = estimation.excitation_order(J, names, ["base_px"], prior, noise)
    assert [n for n, _ in order] == ["b", "a"]
    assert order[0][1] == pytest.approx(noise / 1e-3 / 0.1, rel=1e-9)  # 100
    assert order[1][1] == pytest.approx(noise / 2.0 / 0.1, rel=1e-9)  # 0.05
    assert estimation.excitation_order(J, names, ["base_px"], prior, noise, k=1.0) == order[:1]


def test_identifiable_drops_an_exactly_dependent_parameter(default_fit):
    calib, _ = default_fit
    names = list(calib.calib_config["param_name"])
    frames = ct.frame_names(names)
    kept, dependent = estimation.identifiable(calib, names, frames, 1e-6)
    assert kept == names and dependent == []
    # a translation along the first (vertical) joint axis is a base translation
    extra = names + ["d_pz_shoulder_pan_joint"]
    kept, dependent = estimation.identifiable(calib, extra, frames, 1e-6)
    assert dependent == ["d_pz_shoulder_pan_joint"]
    assert calib.calib_config["param_name"] == names  # restored


def test_add_eemarker_frame(robot):
    from figaroh.calibration.calibration_tools import add_eemarker_frame

    model = robot.model.copy()
    fid = add_eemarker_frame("wrist_3_link", [0.01, -0.02, 0.1], [0.1, 0.2, -0.3], model, None)
    assert model.frames[fid].name == "wrist_3_link_marker"
    data = model.createData()
    q = ct.random_joint_configuration(model, np.random.default_rng(1))
    pin.framesForwardKinematics(model, data, q)
    expect = data.oMf[model.getFrameId("wrist_3_link")] * pin.SE3(
        pin.utils.rpyToMatrix(0.1, 0.2, -0.3), np.array([0.01, -0.02, 0.1])
    )
    assert data.oMf[fid].isApprox(expect, 1e-12)
    with pytest.raises(ValueError, match="already exists"):
        add_eemarker_frame("wrist_3_link", [0, 0, 0], [0, 0, 0], model, None)


def test_compatibility_reexports():
    import figaroh.calibration as calibration
    from figaroh.calibration import base_calibration as bc
    from figaroh.calibration import config, data_loader, parameter
    from figaroh.utils import config_parser

    assert calibration.BaseCalibration is bc.BaseCalibration
    for name in ("load_data", "read_config_data", "get_idxq_from_jname"):
        assert getattr(ct, name) is getattr(data_loader, name)
    for name in ("unified_to_legacy_config", "get_sup_joints"):
        assert getattr(ct, name) is getattr(config, name)
    for name in ("add_base_name", "add_pee_name", "add_eemarker_frame"):
        assert getattr(ct, name) is getattr(parameter, name)
    for name in ("calc_updated_fkm", "select_identifiable_parameters", "measurement_jacobian"):
        assert getattr(bc, name) is getattr(ct, name)
        assert getattr(estimation, name) is getattr(ct, name)
    assert bc.require_unified_config.__module__ == "figaroh.utils.unified_config"
    assert bc.require_unified_config is config_parser.require_unified_config  # 1.0.2's path


# ---------------------------------------------------------------------------
# parameter selection as in 1.0.2
# ---------------------------------------------------------------------------


def test_frame_absorbed_tool_axis_offset_is_eliminated(robot):
    """Two position markers: the offset about the last joint axis is a tip-offset change.

    The elimination runs on the Jacobian of the predicted measurements. The
    Jacobian of the body-frame residuals, at the non-zero residuals of the
    initial guess, rotates with the estimated orientation and keeps the
    dependent parameter (the structural singularity then shows up in the fit).
    """
    calib = BaseCalibration(robot, str(CONFIG))
    cfg = calib.calib_config
    cfg.update(
        known_baseframe=False,
        known_tipframe=False,
        calib_model="joint_offset",
        NbMarkers=2,
        measurability=[True, True, True, False, False, False],
        calibration_index=3,
    )
    model = robot.model
    q = ex.random_postures(robot, calib, 30, seed=5)
    offsets = [n for n in ct.get_joint_offset(model) if not n.endswith("shoulder_pan_joint")]
    tips = [f"{t}_{k}" for k in (1, 2) for t in ("pEEx", "pEEy", "pEEz")]
    truth = dict(zip(list(ct.BASE_TPL), [0.4, -0.2, 0.1, 0.02, -0.01, 0.5], strict=True))
    truth.update(dict(zip(offsets, np.linspace(-0.02, 0.03, len(offsets)), strict=True)))
    truth.update(dict(zip(tips, [0.05, 0.0, 0.1, -0.04, 0.02, 0.12], strict=True)))
    sim = dict(cfg, param_name=list(truth), NbSample=len(q))
    calib.q_measured = q
    calib.PEE_measured = ct.calc_updated_fkm(model, calib.data, list(truth.values()), q, sim)
    cfg["NbSample"] = len(q)
    calib.create_param_list()
    absorbed = cfg["absorbed_param_name"]
    assert "offsetRY_wrist_3_joint" in absorbed
    names = cfg["param_name"]
    J = calib._objective_model.identifiability_jacobian(calib._objective_model.initial_vector())
    s = np.linalg.svd(J / np.linalg.norm(J, axis=0), compute_uv=False)
    assert s[-1] / s[0] > 1e-3  # the remaining set is well conditioned
    # the residual Jacobian would have kept it
    full = names + ["offsetRY_wrist_3_joint"]
    with calib._objective_model.temporary_params(full, None):
        _, Jr = calib.measurement_residuals(calib._objective_model.initial_vector(), jacobian=True)
    kept, _ = ct.select_identifiable_parameters(Jr, full, always_keep=ct.frame_names(full))
    assert "offsetRY_wrist_3_joint" in kept


def test_random_postures_leave_continuous_joints_neutral(tiago_urdf):
    """One draw per revolute/prismatic joint, in joint order; continuous joints draw nothing."""
    model = pin.buildModelFromUrdf(str(tiago_urdf))
    continuous = [j for j in range(1, model.njoints) if model.joints[j].nq == 2]
    assert continuous  # the wheels
    q = ct.random_joint_configuration(model, np.random.default_rng(11))
    ref = np.random.default_rng(11)
    neutral = pin.neutral(model)
    for j in range(1, model.njoints):
        jm = model.joints[j]
        if jm.nq != 1:
            np.testing.assert_array_equal(
                q[jm.idx_q : jm.idx_q + jm.nq], neutral[jm.idx_q : jm.idx_q + jm.nq]
            )
            continue
        lo, hi = model.lowerPositionLimit[jm.idx_q], model.upperPositionLimit[jm.idx_q]
        if not (np.isfinite(lo) and np.isfinite(hi)) or hi - lo > 2 * np.pi or hi <= lo:
            lo, hi = -np.pi, np.pi
        assert q[jm.idx_q] == ref.uniform(lo, hi)


def _structural_names(model, measurability):
    from figaroh.calibration.config import unified_to_legacy_config

    class _R:
        pass

    r = _R()
    r.model, r.q0 = model, pin.neutral(model)
    task = {
        "parameters": {"calibration_level": "full_params"},
        "kinematics": {"base_frame": "universe", "tool_frame": "wrist_3_link"},
        "measurements": {"markers": [{"name": "m", "measurable_dof": measurability}]},
        "data": {"number_of_samples": 23},
    }
    cfg = unified_to_legacy_config(r, task)
    ct.calculate_base_kinematics_regressor([], model, model.createData(), cfg, tol_qr=1e-6)
    return cfg["param_name"]


def test_structural_selection_settles_identical_columns_as_1_0_2(shared_data):
    """UR10: translations along the parallel y axes of shoulder_lift, elbow and wrist_1
    are identical regressor columns. figaroh 1.0.2 keeps the elbow one with 6-DoF
    measurements and the shoulder_lift one with positions only (LAPACK's pivoted QR
    of the tall regressor); no rule based on names or column order gives both."""
    urdf = shared_data / "models" / "ur_description" / "urdf" / "ur10_robot.urdf"
    model = pin.buildModelFromUrdf(str(urdf))
    full = _structural_names(model, [True] * 6)
    pos = _structural_names(model, [True, True, True, False, False, False])
    y = ("d_py_shoulder_lift_joint", "d_py_elbow_joint", "d_py_wrist_1_joint")
    assert [n for n in y if n in full] == ["d_py_elbow_joint"]
    assert [n for n in y if n in pos] == ["d_py_shoulder_lift_joint"]
    # structural sets; in 1.0.2's parameter lists the first six become the base frame
    # and the frames absorb two (6-DoF) / one (positions) more on the measured data
    assert len(full) == 26 and len(pos) == 21
