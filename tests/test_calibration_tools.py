"""Calibration building blocks: forward model, analytic Jacobians, selection, config, loaders.

Truths used: Pinocchio's own FK / RPY / exp maps, central differences of the
forward model (for every analytic Jacobian), exact algebraic identities and
hand-built CSV files.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

from figaroh.calibration import calibration_tools as ct
from figaroh.calibration.config import (
    get_param_from_yaml,
    get_sup_joints,
    regularization_coefficient,
    unified_to_legacy_config,
)
from figaroh.calibration.data_loader import get_idxq_from_jname, load_data
from figaroh.calibration.parameter import (
    BASE_TPL,
    EE_TPL,
    add_base_name,
    add_pee_name,
    get_fullparam_offset,
    get_joint_offset,
    parse_param_name,
)
from figaroh.measurements import Measurement
from figaroh.utils.config_parser import UnifiedConfigParser, create_task_config
from figaroh.utils.error_handling import ConfigurationError

UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]


@pytest.fixture(scope="module")
def ur10(ur10_urdf):
    return pin.buildModelFromUrdf(str(ur10_urdf))


@pytest.fixture(scope="module")
def tiago(shared_data):
    return pin.buildModelFromUrdf(str(shared_data / "tiago" / "urdf" / "tiago_48_schunk.urdf"))


def _cfg(model, names, end, *, markers=1, meas=(True,) * 6, n=6, **extra):
    cfg = {
        "param_name": list(names),
        "NbMarkers": markers,
        "measurability": list(meas),
        "calibration_index": int(sum(meas)),
        "start_frame": "universe",
        "end_frame": end,
        "NbSample": n,
        "q0": pin.neutral(model),
    }
    cfg.update(extra)
    return cfg


def _postures(model, n, seed):
    rng = np.random.default_rng(seed)
    return np.array([ct.random_joint_configuration(model, rng) for _ in range(n)])


def _residual_fd(model, cfg, var, q, meas, mask, frame="body", h=1e-6):
    data = model.createData()
    cols = []
    for i in range(var.size):
        dv = np.zeros_like(var)
        dv[i] = h
        e1 = ct.evaluate_poses(model, data, var + dv, q, cfg)
        e2 = ct.evaluate_poses(model, data, var - dv, q, cfg)
        r1, _ = ct.pose_residuals(e1.R, e1.p, meas, mask, position_frame=frame)
        r2, _ = ct.pose_residuals(e2.R, e2.p, meas, mask, position_frame=frame)
        cols.append((r1 - r2) / (2 * h))
    return np.stack(cols, axis=-1)


def _check_jacobians(model, cfg, var, q, noise=0.01, seed=0, tol=5e-8):
    data = model.createData()
    rng = np.random.default_rng(seed)
    J = ct.measurement_jacobian(model, data, var, q, cfg, method="analytic")
    Jc = ct.measurement_jacobian(model, data, var, q, cfg)
    assert np.abs(J - Jc).max() < tol * max(1.0, np.abs(Jc).max())
    mask = np.asarray(cfg["measurability"], bool)
    other = var + rng.normal(0, noise, var.size)
    meas = ct.measured_values(ct.calc_updated_fkm(model, data, other, q, cfg), cfg, len(q))
    ev = ct.evaluate_poses(model, data, var, q, cfg, jacobian=True)
    for frame in ("body", "world"):
        _, Ja = ct.pose_residuals(ev.R, ev.p, meas, mask, T=ev.T, position_frame=frame)
        Jn = _residual_fd(model, cfg, var, q, meas, mask, frame)
        assert np.abs(Ja - Jn).max() < tol * max(1.0, np.abs(Jn).max()), frame


# ---------------------------------------------------------------------------
# SO(3)/SE(3) helpers
# ---------------------------------------------------------------------------


def test_rotation_helpers_match_pinocchio():
    rng = np.random.default_rng(0)
    for rpy in rng.normal(0, 1.5, (30, 3)):
        R = pin.rpy.rpyToMatrix(rpy)
        assert np.allclose(ct.rpy_to_matrix(rpy), R, atol=1e-15)
        assert np.allclose(ct.matrix_to_rpy(R), pin.rpy.matrixToRpy(R), atol=1e-12)
        assert np.allclose(ct.rpy_jacobian_local(rpy), pin.rpy.computeRpyJacobian(rpy, pin.LOCAL))
        assert np.allclose(ct.exp3(rpy), pin.exp3(rpy), atol=1e-14)
        assert np.allclose(ct.jexp3_right(rpy), pin.Jexp3(rpy), atol=1e-14)
    R = pin.rpy.rpyToMatrix(np.array([0.3, np.pi / 2, -0.4]))  # gimbal lock
    assert np.allclose(ct.rpy_to_matrix(ct.matrix_to_rpy(R)), R, atol=1e-12)
    M = pin.SE3.Random()
    assert np.allclose(ct.adjoint(M.rotation, M.translation), M.action)


def test_cartesian_and_quaternion_conversions():
    X = np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6])
    M = ct.cartesian_to_SE3(X)
    assert np.allclose(M.translation, X[:3]) and np.allclose(M.rotation, pin.rpy.rpyToMatrix(X[3:]))
    quat = pin.Quaternion(pin.rpy.rpyToMatrix(X[3:]))
    v = [0.1, -0.2, 0.3, 2 * quat.w, 2 * quat.x, 2 * quat.y, 2 * quat.z]  # w first, not unit
    assert np.allclose(ct.xyzquat_to_SE3(v).rotation, M.rotation, atol=1e-12)
    with pytest.raises(ValueError, match="quaternion"):
        ct.xyzquat_to_SE3([0, 0, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="6 values"):
        ct.cartesian_to_SE3([1, 2, 3])


# ---------------------------------------------------------------------------
# forward model
# ---------------------------------------------------------------------------


def test_forward_model_matches_pinocchio_and_restores_the_model(ur10):
    data = ur10.createData()
    q = _postures(ur10, 5, 1)
    saved = [M.copy() for M in ur10.jointPlacements]
    cfg = _cfg(ur10, [], "wrist_3_link", n=5)
    flat = ct.calc_updated_fkm(ur10, data, [], q, cfg)
    fid = ur10.getFrameId("wrist_3_link")
    for s in range(5):
        pin.framesForwardKinematics(ur10, data, q[s])
        M = data.oMf[fid]
        got = flat.reshape(6, 5)[:, s]
        assert np.allclose(got[:3], M.translation, atol=1e-14)
        assert np.allclose(got[3:], pin.rpy.matrixToRpy(M.rotation), atol=1e-12)
    # parameters on every kind of slot; the model is unchanged afterwards
    names = BASE_TPL + list(get_fullparam_offset(UR10_JOINTS)) + [f"{t}_1" for t in EE_TPL]
    var = np.random.default_rng(2).normal(0, 0.05, len(names))
    ct.calc_updated_fkm(ur10, data, var, q, _cfg(ur10, names, "wrist_3_link", n=5))
    after = list(ur10.jointPlacements)
    assert all((a.homogeneous == b.homogeneous).all() for a, b in zip(saved, after, strict=True))


def test_joint_parameters_follow_the_documented_conventions(ur10):
    data = ur10.createData()
    q = _postures(ur10, 3, 3)
    d = 0.137
    cfg = _cfg(ur10, ["offsetRZ_elbow_joint"], "wrist_3_link", n=3)
    # URDF elbow axis is y in this model: offsetRY is its own axis
    axis = ur10.joints[ur10.getJointId("elbow_joint")].shortname()[-2:]
    cfg["param_name"] = [f"offset{axis}_elbow_joint"]
    shifted = q.copy()
    shifted[:, ur10.joints[ur10.getJointId("elbow_joint")].idx_q] += d
    a = ct.calc_updated_fkm(ur10, data, [d], q, cfg)
    b = ct.calc_updated_fkm(ur10, data, [], shifted, _cfg(ur10, [], "wrist_3_link", n=3))
    assert np.allclose(a, b, atol=1e-12)
    # d_* = right-multiplication by SE3(exp3(rot), trans), as update_joint_placement
    v = np.array([0.01, -0.02, 0.03, 0.05, -0.04, 0.02])
    names = [f"{t}_wrist_1_joint" for t in ("d_px", "d_py", "d_pz", "d_phix", "d_phiy", "d_phiz")]
    got = ct.calc_updated_fkm(ur10, data, v, q, _cfg(ur10, names, "wrist_3_link", n=3))
    m2 = ur10.copy()
    ct.update_joint_placement(m2, m2.getJointId("wrist_1_joint"), v)
    ref = ct.calc_updated_fkm(m2, m2.createData(), [], q, _cfg(m2, [], "wrist_3_link", n=3))
    assert np.allclose(got, ref, atol=1e-13)


def test_several_markers_equal_single_marker_fk(ur10):
    data = ur10.createData()
    q = _postures(ur10, 4, 4)
    tips = np.random.default_rng(5).normal(0, 0.1, (3, 6))
    names = [f"{t}_{k + 1}" for k in range(3) for t in EE_TPL]
    stacked = ct.calc_updated_fkm(
        ur10, data, tips.ravel(), q, _cfg(ur10, names, "wrist_3_link", markers=3, n=4)
    )
    for k in range(3):
        single = ct.calc_updated_fkm(
            ur10, data, tips[k], q, _cfg(ur10, [f"{t}_1" for t in EE_TPL], "wrist_3_link", n=4)
        )
        assert np.allclose(stacked[k * 24 : (k + 1) * 24], single, atol=1e-14)


def test_parameter_names_are_parsed_exactly():
    model = pin.Model()
    for name in ("joint1", "joint10"):
        parent = 0 if name == "joint1" else 1
        model.addJoint(parent, pin.JointModelRZ(), pin.SE3.Identity(), name)
    assert parse_param_name("d_px_joint1", model).joint == "joint1"
    assert parse_param_name("offsetRZ_joint10", model).joint == "joint10"
    with pytest.raises(ValueError, match="not a joint"):
        parse_param_name("d_px_joint2", model)
    with pytest.raises(ValueError, match="accepted forms"):
        parse_param_name("bogus", model)
    with pytest.raises(ValueError, match="marker 3"):
        parse_param_name("pEEx_3", model, n_markers=2)


def test_unknown_parameter_in_param_name_is_refused(ur10):
    cfg = _cfg(ur10, ["d_px_no_such_joint"], "wrist_3_link", n=1)
    with pytest.raises(ValueError, match="no_such_joint"):
        ct.calc_updated_fkm(ur10, ur10.createData(), [0.0], _postures(ur10, 1, 0), cfg)
    cfg["param_name"] = ["d_px_elbow_joint"]
    with pytest.raises(ValueError, match="var has 2 values"):
        ct.calc_updated_fkm(ur10, ur10.createData(), [0.0, 1.0], _postures(ur10, 1, 0), cfg)


# ---------------------------------------------------------------------------
# analytic Jacobians (against central differences)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "meas",
    [(True,) * 6, (True, True, True, False, False, False), (True, False, True, False, True, False)],
)
def test_analytic_jacobians_full_chain(ur10, meas):
    names = (
        BASE_TPL
        + list(get_fullparam_offset(UR10_JOINTS))
        + ["offsetRY_elbow_joint"]
        + [f"{t}_1" for t in EE_TPL]
    )
    var = np.random.default_rng(1).normal(0, 0.05, len(names))
    _check_jacobians(
        ur10, _cfg(ur10, names, "wrist_3_link", meas=meas, n=5), var, _postures(ur10, 5, 7)
    )


def test_analytic_jacobians_relative_chain_and_markers(tiago):
    arm = ["torso_lift_joint"] + [f"arm_{i}_joint" for i in range(1, 8)] + ["head_2_joint"]
    names = (
        BASE_TPL + list(get_fullparam_offset(arm)) + [f"{t}_{k}" for k in (1, 2) for t in EE_TPL]
    )
    cfg = _cfg(tiago, names, "wrist_ft_tool_link", markers=2, n=4, start_frame="head_2_link")
    var = np.random.default_rng(3).normal(0, 0.05, len(names))
    _check_jacobians(tiago, cfg, var, _postures(tiago, 4, 8))


def test_analytic_jacobians_eye_hand(tiago):
    arm = ["torso_lift_joint"] + [f"arm_{i}_joint" for i in range(1, 8)]
    names = BASE_TPL + list(get_fullparam_offset(arm)) + [f"{t}_1" for t in EE_TPL[:3]]
    cfg = _cfg(
        tiago,
        names,
        "wrist_ft_tool_link",
        meas=(True, True, True, False, False, False),
        n=4,
        start_frame="xtion_rgb_optical_frame",
        base_to_ref_frame="xtion_link",
        ref_frame="head_2_link",
    )
    var = np.random.default_rng(4).normal(0, 0.05, len(names))
    _check_jacobians(tiago, cfg, var, _postures(tiago, 4, 9))


def test_measurement_jacobian_default_is_central_differences_of_the_forward_model(tiago):
    """Default: (f(θ + h·e_i) − f(θ − h·e_i)) / 2h of calc_updated_fkm, h = 1e-6, bit for bit."""
    arm = ["torso_lift_joint"] + [f"arm_{i}_joint" for i in range(1, 8)]
    names = BASE_TPL + list(get_fullparam_offset(arm)) + [f"{t}_1" for t in EE_TPL[:3]]
    cfg = _cfg(tiago, names, "arm_tool_link", meas=(True, True, True, False, False, False), n=3)
    q = _postures(tiago, 3, 12)
    var = np.random.default_rng(5).normal(0, 0.05, len(names))
    data = tiago.createData()
    for step in (1e-6, 1e-4):
        cols = []
        for i in range(len(names)):
            e = np.zeros(len(names))
            e[i] = step
            fp = ct.calc_updated_fkm(tiago, data, var + e, q, cfg)
            fm = ct.calc_updated_fkm(tiago, data, var - e, q, cfg)
            cols.append((fp - fm) / (2 * step))
        expected = np.column_stack(cols)
        kwargs = {} if step == 1e-6 else {"step": step}
        J = ct.measurement_jacobian(tiago, data, var, q, cfg, **kwargs)
        assert J.shape == (3 * 3, len(names))
        np.testing.assert_array_equal(J, expected)
    Ja = ct.measurement_jacobian(tiago, data, var, q, cfg, method="analytic")
    assert not np.array_equal(Ja, J)  # the option is another computation ...
    assert np.abs(Ja - J).max() < 1e-7 * np.abs(J).max()  # ... of the same derivative
    with pytest.raises(ValueError, match="'central' \\(default\\) or 'analytic'"):
        ct.measurement_jacobian(tiago, data, var, q, cfg, method="forward")


def test_analytic_jacobian_with_elasticity_cross_terms(ur10):
    names = (
        BASE_TPL
        + ["k_RY_shoulder_lift_joint", "k_RY_elbow_joint"]
        + list(get_fullparam_offset(UR10_JOINTS[1:4]))
        + [f"{t}_1" for t in EE_TPL]
    )
    rng = np.random.default_rng(6)
    var = rng.normal(0, 0.01, len(names))
    var[6:8] = [3e-3, -2e-3]  # large compliance: the k·∂g/∂θ terms matter
    _check_jacobians(
        ur10, _cfg(ur10, names, "wrist_3_link", n=5), var, _postures(ur10, 5, 10), noise=0.0
    )


def test_elasticity_recovery(ur10):
    """Two compliant joints, 40 postures, 6-DoF data: LM from zero recovers k to 1e-6."""
    from scipy.optimize import least_squares

    names = ["k_RY_shoulder_lift_joint", "k_RY_elbow_joint"]
    truth = np.array([4e-4, -2.5e-4])
    q = _postures(ur10, 40, 11)
    data = ur10.createData()
    cfg = _cfg(ur10, names, "wrist_3_link", n=40)
    meas = ct.measured_values(ct.calc_updated_fkm(ur10, data, truth, q, cfg), cfg, 40)
    mask = np.ones(6, bool)

    def f(x):
        ev = ct.evaluate_poses(ur10, data, x, q, cfg, jacobian=True)
        r, J = ct.pose_residuals(ev.R, ev.p, meas, mask, T=ev.T)
        return ct._to_flat(r), ct._to_flat(J)

    res = least_squares(lambda x: f(x)[0], np.zeros(2), jac=lambda x: f(x)[1], method="lm")
    assert np.allclose(res.x, truth, atol=1e-6)


# ---------------------------------------------------------------------------
# residuals
# ---------------------------------------------------------------------------


def test_logmap_residual_has_no_wrap_problem():
    eps = 1e-3
    cfg = {"NbMarkers": 1, "measurability": [True] * 6, "NbSample": 1}
    meas = np.array([0.1, 0.2, 0.3, 0.0, 0.0, np.pi - eps])
    est = np.array([0.1, 0.2, 0.3, 0.0, 0.0, -np.pi + eps])
    r = ct.logmap_residuals(meas, est, cfg)
    assert np.linalg.norm(r) == pytest.approx(2 * eps, rel=1e-9)


def test_position_only_body_residual_is_rotated_world_error(ur10):
    data = ur10.createData()
    q = _postures(ur10, 3, 12)
    cfg = _cfg(ur10, [], "wrist_3_link", meas=(True, True, True, False, False, False), n=3)
    ev = ct.evaluate_poses(ur10, data, [], q, cfg)
    err = np.array([[0.01, -0.02, 0.005]] * 3)
    meas = np.full((3, 1, 6), np.nan)
    meas[:, 0, :3] = ev.p[:, 0] - err
    body, _ = ct.pose_residuals(ev.R, ev.p, meas, np.array(cfg["measurability"]))
    world, _ = ct.pose_residuals(
        ev.R, ev.p, meas, np.array(cfg["measurability"]), position_frame="world"
    )
    assert np.allclose(world[:, 0], err)
    assert np.allclose(body[:, 0], np.einsum("nji,nj->ni", ev.R[:, 0], err))
    with pytest.raises(ValueError, match="position_frame"):
        ct.pose_residuals(ev.R, ev.p, meas, np.ones(6, bool), position_frame="tool")


def test_measurement_weights_layout():
    cfg = {"NbMarkers": 2, "measurability": [True, True, False, False, False, True]}
    w = ct.measurement_weights(cfg, 3)
    assert w.tolist() == [1000.0] * 6 + [100.0] * 3 + [1000.0] * 6 + [100.0] * 3
    cfg["measurement_std"] = {"position": 0.0005, "orientation": 0.002}
    assert ct.measurement_weights(cfg, 1).tolist()[:3] == [2000.0, 2000.0, 500.0]
    cfg["measurement_std"] = {"position": 0.0}
    with pytest.raises(ValueError, match="position"):
        ct.measurement_weights(cfg, 1)


# ---------------------------------------------------------------------------
# selection and bookkeeping
# ---------------------------------------------------------------------------


def test_select_identifiable_parameters_example():
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(3, 20))
    J = np.column_stack([a, b, 2 * a - 0.5 * b, c, 1000 * c])
    kept, absorbed = ct.select_identifiable_parameters(
        J, ["a", "b", "comb", "c", "c1000"], always_keep=("a", "b")
    )
    assert kept == ["a", "b", "c"] and absorbed == ["comb", "c1000"]
    kept, absorbed = ct.select_identifiable_parameters(
        np.column_stack([a, np.zeros(20)]), ["a", "z"]
    )
    assert absorbed == ["z"]


def test_drop_calibration_parameters_keeps_mapping_aligned():
    cfg = {
        "param_name": ["f", "r0", "r1", "r2", "t"],
        "base_mapping_slice": (1, 4),
        "base_mapping_matrix": np.arange(9.0).reshape(3, 3),
        "base_mapping_row_names": ["r0", "r1", "r2"],
    }
    ct.drop_calibration_parameters(cfg, ["r1"])
    assert cfg["param_name"] == ["f", "r0", "r2", "t"]
    assert cfg["base_mapping_slice"] == (1, 3)
    assert cfg["base_mapping_matrix"].tolist() == [[0, 1, 2], [6, 7, 8]]
    ct.drop_calibration_parameters(cfg, ["f"])
    assert cfg["base_mapping_slice"] == (0, 2)


def test_frame_names_helpers():
    cfg = {"param_name": ["a", "b"], "calib_model": "joint_offset", "base_mapping_slice": (0, 2)}
    add_base_name(cfg)
    assert cfg["param_name"][:6] == BASE_TPL and cfg["base_mapping_slice"] == (6, 8)
    cfg = {"param_name": [f"p{i}" for i in range(8)], "calib_model": "full_params"}
    add_base_name(cfg)
    assert cfg["param_name"] == BASE_TPL + ["p6", "p7"]
    cfg.update(NbMarkers=2, measurability=[True, True, True, False, False, True])
    add_pee_name(cfg)
    assert cfg["param_name"][-4:] == ["pEEx_2", "pEEy_2", "pEEz_2", "phiEEz_2"]


def test_joint_offset_names(tiago):
    names = list(get_joint_offset(tiago))
    assert "offsetPZ_torso_lift_joint" in names and "offsetRZ_arm_1_joint" in names
    assert len(names) == tiago.nv


def test_random_postures_ignore_global_seed(ur10):
    pin.seed(1)
    np.random.seed(1)
    a = ct.random_joint_configuration(ur10, np.random.default_rng(5))
    pin.seed(2)
    np.random.seed(2)
    b = ct.random_joint_configuration(ur10, np.random.default_rng(5))
    assert np.array_equal(a, b) and np.all(np.abs(a) <= np.pi)


def test_closed_form_frames_are_exact(ur10):
    data = ur10.createData()
    q = _postures(ur10, 12, 13)
    frames = BASE_TPL + [f"{t}_1" for t in EE_TPL]
    truth = np.array(
        [0.4, -0.2, 0.9, 0.1, -0.3, np.deg2rad(166), 0.03, -0.02, 0.11, 0.2, 0.1, -0.3]
    )
    for meas in ((True,) * 6, (True, True, True, False, False, False)):
        names = frames if all(meas) else frames[:9]
        vals = truth if all(meas) else truth[:9]
        cfg = _cfg(ur10, names, "wrist_3_link", meas=meas, n=12)
        pee = ct.calc_updated_fkm(ur10, data, vals, q, cfg)
        got = ct.estimate_frames_closed_form(ur10, data, q, pee, cfg)
        assert np.allclose([got[n] for n in names], vals, atol=1e-9)
    cfg = _cfg(
        ur10, frames[:9], "wrist_3_link", meas=(True, True, False, False, False, False), n=12
    )
    pee = ct.calc_updated_fkm(ur10, data, truth[:9], q, cfg)
    assert ct.estimate_frames_closed_form(ur10, data, q, pee, cfg) == {}


def test_structural_regressor_is_reproducible(ur10):
    robot = type("R", (), {"model": ur10, "q0": pin.neutral(ur10)})()
    cfg = unified_to_legacy_config(
        robot,
        {
            "kinematics": {"tool_frame": "wrist_3_link"},
            "measurements": {"markers": [{"measurable_dof": [True] * 6}]},
            "joints": {"active_joints": UR10_JOINTS},
        },
    )
    q0_before = cfg["q0"].copy()
    data = ur10.createData()
    np.random.seed(0)
    out1 = ct.calculate_base_kinematics_regressor([], ur10, data, dict(cfg), tol_qr=1e-6)
    np.random.seed(99)
    c2 = dict(cfg)
    out2 = ct.calculate_base_kinematics_regressor([], ur10, data, c2, tol_qr=1e-6)
    assert np.array_equal(out1[0], out2[0])
    assert np.array_equal(cfg["q0"], q0_before)
    M = c2["base_mapping_matrix"]
    names = c2["base_mapping_param_names"]
    rows = c2["base_mapping_row_names"]
    assert M.shape == (len(rows), len(names))
    # M maps the eliminated regressor onto the base columns: R_e ≈ R_b M
    Rb, Re = out2[0], ct.calculate_identifiable_kinematics_model([], ur10, data, c2)
    keep = [list(get_fullparam_offset(UR10_JOINTS)).index(n) for n in names]
    assert np.allclose(Rb @ M, Re[:, keep], atol=1e-8)


# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------


class _Robot:
    def __init__(self, model):
        self.model = model
        self.data = model.createData()
        self.q0 = pin.neutral(model)


def test_unified_config_worked_example(ur10):
    import os

    root = os.path.join(os.path.dirname(__file__), "..", "config", "ur10_unified_config.yaml")
    robot = _Robot(ur10)
    task = create_task_config(robot, UnifiedConfigParser(root).parse(), "calibration")
    cfg = unified_to_legacy_config(robot, task)
    assert cfg["q0"] is robot.q0
    assert cfg["NbMarkers"] == 1 and cfg["measurability"] == [True] * 6
    assert cfg["calibration_index"] == 6 and cfg["calib_model"] == "full_params"
    assert cfg["actJoint_idx"] == [1, 2, 3, 4, 5, 6] and cfg["config_idx"] == [0, 1, 2, 3, 4, 5]
    assert cfg["end_frame"] == "wrist_3_link" and cfg["IDX_TOOL"] == ur10.getFrameId("wrist_3_link")
    assert cfg["param_name"] == [] and cfg["outlier_eps"] == 0.02 and cfg["random_seed"] == 0
    assert cfg["validation_data_file"] is None and cfg["base_to_ref_frame"] is None


def test_config_errors_name_the_key(ur10):
    robot = _Robot(ur10)
    base = {
        "kinematics": {"tool_frame": "wrist_3_lnk"},
        "measurements": {"markers": [{"measurable_dof": [True] * 6}]},
    }
    with pytest.raises(ConfigurationError, match="wrist_3_lnk.*Did you mean.*wrist_3_link"):
        unified_to_legacy_config(robot, base)
    with pytest.raises(ConfigurationError, match="tool_frame is required"):
        unified_to_legacy_config(robot, {"measurements": base["measurements"]})
    with pytest.raises(ConfigurationError, match="markers is empty"):
        unified_to_legacy_config(robot, {"kinematics": {"tool_frame": "wrist_3_link"}})
    bad = {
        "kinematics": {"tool_frame": "wrist_3_link"},
        "measurements": {"markers": [{"measurable_dof": [True] * 5}]},
    }
    with pytest.raises(ConfigurationError, match="6 booleans"):
        unified_to_legacy_config(robot, bad)
    lvl = dict(
        base, kinematics={"tool_frame": "wrist_3_link"}, parameters={"calibration_level": "dh"}
    )
    with pytest.raises(ConfigurationError, match="calibration_level"):
        unified_to_legacy_config(robot, lvl)


def test_regularization_coefficient_refuses_non_zero():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert regularization_coefficient(0.0) == 0.0
        assert regularization_coefficient(None) is None
    with pytest.raises(ValueError, match="regularization_coefficient.*estimation.method: map"):
        regularization_coefficient(0.01)
    with pytest.raises(ConfigurationError, match="calibration.coeff_regularize"):
        regularization_coefficient("1e-3", key="calibration.coeff_regularize")


def test_legacy_parser_all_or_nothing(ur10):
    robot = _Robot(ur10)
    legacy = {
        "calib_level": "joint_offset",
        "base_frame": "universe",
        "tool_frame": "wrist_3_link",
        "markers": [{"ref_joint": "wrist_3_joint", "measure": [True] * 6}],
        "data_file": "data/x.csv",
        "coeff_regularize": 0.0,
        "outlier_eps": 0.03,
    }
    with pytest.warns(DeprecationWarning, match="config_migration"):
        cfg = get_param_from_yaml(robot, legacy)
    assert cfg["data_file"] is None and cfg["outlier_eps"] is None
    assert cfg["calib_model"] == "joint_offset" and cfg["actJoint_idx"] == [1, 2, 3, 4, 5, 6]


def test_sup_joints(tiago):
    arm = [tiago.getJointId(f"arm_{i}_joint") for i in range(1, 8)]
    torso = tiago.getJointId("torso_lift_joint")
    heads = [tiago.getJointId("head_1_joint"), tiago.getJointId("head_2_joint")]
    assert get_sup_joints(tiago, "universe", "wrist_ft_tool_link") == [torso] + arm
    assert get_sup_joints(tiago, "head_2_link", "wrist_ft_tool_link") == heads[::-1] + [torso] + arm
    with pytest.raises(ConfigurationError, match="before start frame"):
        get_sup_joints(tiago, "arm_7_link", "arm_2_link")


# ---------------------------------------------------------------------------
# loaders and measurements
# ---------------------------------------------------------------------------


def _write_csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")


def test_load_data_deletes_rows_and_reports_nan(tmp_path, ur10):
    robot = _Robot(ur10)
    cfg = unified_to_legacy_config(
        robot,
        {
            "kinematics": {"tool_frame": "wrist_3_link"},
            "measurements": {
                "markers": [{"measurable_dof": [True, True, True, False, False, False]}]
            },
        },
    )
    header = ["t", "x1", "y1", "z1"] + UR10_JOINTS
    rows = [[i, 0.1 * i, 0.2, 0.3] + [0.01 * i] * 6 for i in range(4)]
    rows[2][2] = "nan"
    path = tmp_path / "c.csv"
    _write_csv(path, header, rows)
    with pytest.raises(ValueError, match=r"rows \[2\]"):
        load_data(path, ur10, cfg)
    pee, q = load_data(path, ur10, cfg, del_list=[2])
    assert cfg["NbSample"] == 3 and q.shape == (3, 6)
    assert pee.tolist()[:3] == [0.0, 0.1, 0.30000000000000004]
    assert np.array_equal(robot.q0, pin.neutral(ur10))
    _write_csv(path, header[:-1], [r[:-1] for r in rows])
    with pytest.raises(KeyError, match="wrist_3_joint"):
        load_data(path, ur10, cfg)
    assert get_idxq_from_jname(ur10, "elbow_joint") == 2
    with pytest.raises(AssertionError, match="nope"):
        get_idxq_from_jname(ur10, "nope")


def test_measurement_types(ur10):
    m = Measurement("marker", "wrist_3_joint", "wrist_3_link", "SE3", [0.1, 0, 0, 0, 0, 0.5])
    assert np.allclose(m.SE3_value.rotation, pin.rpy.rpyToMatrix(np.array([0, 0, 0.5])))
    model, data = m.add_SE3_measurement(ur10.copy())
    fid = model.getFrameId("marker")
    assert model.frames[fid].parentJoint == model.getJointId("wrist_3_joint")
    assert np.allclose(
        Measurement("w", "j", "f", "wrench", [1, 2, 3, 4, 5, 6]).wrench_value.vector,
        [1, 2, 3, 4, 5, 6],
    )
    with pytest.raises(TypeError, match="not valid"):
        Measurement("x", "j", "f", "torque", 1.0)
