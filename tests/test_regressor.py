"""Regressor: W @ phi_std reproduces Pinocchio's rnea plus the joint effects."""

from __future__ import annotations

import itertools

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg

from figaroh.identification.parameter import get_standard_parameters
from figaroh.tools.exceptions import RegressorShapeError
from figaroh.tools.randomdata import generate_waypoints, get_torque_rand
from figaroh.tools.regressor import (
    RegressorBuilder,
    RegressorConfig,
    build_regressor_basic,
    build_regressor_reduced,
    build_total_regressor_current,
    build_total_regressor_wrench,
    default_active_dofs,
    eliminate_non_dynaffect,
    get_index_eliminate,
)
from figaroh.tools.robot import Robot

FLAGS = list(itertools.product([False, True], repeat=3))


def _samples(model, n, rng):
    lo = np.where(np.isfinite(model.lowerPositionLimit), model.lowerPositionLimit, -3.0)
    hi = np.where(np.isfinite(model.upperPositionLimit), model.upperPositionLimit, 3.0)
    lo, hi = np.maximum(lo, -3.0), np.minimum(hi, 3.0)
    q = np.array([pin.randomConfiguration(model, lo, hi) for _ in range(n)])
    v = rng.normal(size=(n, model.nv))
    a = rng.normal(size=(n, model.nv))
    return q, v, a


def _expected(model, q, v, a, cfg, dofs):
    data = model.createData()
    tau = np.array([pin.rnea(model, data, q[i], v[i], a[i]) for i in range(len(q))])
    extra = np.zeros_like(tau)
    if cfg["has_friction"]:
        extra[:, dofs] += np.asarray(cfg["fv"])[dofs] * v[:, dofs]
        extra[:, dofs] += np.asarray(cfg["fs"])[dofs] * np.sign(v[:, dofs])
    if cfg["has_actuator_inertia"]:
        extra[:, dofs] += np.asarray(cfg["Ia"])[dofs] * a[:, dofs]
    if cfg["has_joint_offset"]:
        extra[:, dofs] += np.asarray(cfg["off"])[dofs]
    return (tau + extra).T.ravel()


def _robot(request, name, isFext=False):
    return Robot(str(request.getfixturevalue(name)), None, isFext=isFext, load_geometry=False)


@pytest.mark.parametrize(
    "urdf_fixture,isFext",
    [("ur10_urdf", False), ("tiago_urdf", False), ("talos_urdf", True)],
)
@pytest.mark.parametrize("friction,armature,offset", FLAGS)
def test_regressor_matches_rnea_plus_joint_effects(
    request, urdf_fixture, isFext, friction, armature, offset
):
    robot = _robot(request, urdf_fixture, isFext)
    model = robot.model
    rng = np.random.default_rng(7)
    q, v, a = _samples(model, 12, rng)
    dofs = default_active_dofs(model)
    cfg = {
        "has_friction": friction,
        "has_actuator_inertia": armature,
        "has_joint_offset": offset,
        "act_idxv": dofs,
        "fv": rng.uniform(0.1, 2.0, model.nv).tolist(),
        "fs": rng.uniform(0.1, 2.0, model.nv).tolist(),
        "Ia": rng.uniform(0.01, 0.5, model.nv).tolist(),
        "off": rng.uniform(-1.0, 1.0, model.nv).tolist(),
    }
    W = build_regressor_basic(robot, q, v, a, cfg)
    params = get_standard_parameters(model, cfg)
    assert len(params) == W.shape[1]
    n_extra = 2 * friction + armature + offset
    assert W.shape == (len(q) * model.nv, 10 * (model.njoints - 1) + n_extra * model.nv)
    phi = np.array(list(params.values()))
    expected = _expected(model, q, v, a, cfg, dofs)
    np.testing.assert_allclose(
        W @ phi, expected, rtol=0, atol=1e-9 * max(1.0, np.abs(expected).max())
    )


def test_rows_are_joint_major(ur10_robot):
    rng = np.random.default_rng(0)
    q, v, a = _samples(ur10_robot.model, 5, rng)
    W = build_regressor_basic(ur10_robot, q, v, a, {})
    data = ur10_robot.model.createData()
    for i in range(5):
        Y = pin.computeJointTorqueRegressor(ur10_robot.model, data, q[i], v[i], a[i])
        for j in range(6):
            np.testing.assert_array_equal(W[j * 5 + i], Y[j])


def test_extra_entries_only_for_active_dofs(ur10_robot):
    rng = np.random.default_rng(1)
    q, v, a = _samples(ur10_robot.model, 4, rng)
    cfg = {"has_friction": True, "act_idxv": [0, 2]}
    W = build_regressor_basic(ur10_robot, q, v, a, cfg)
    fv = W[:, 60:66]
    assert np.count_nonzero(fv[:, [1, 3, 4, 5]]) == 0
    np.testing.assert_array_equal(fv[0:4, 0], v[:, 0])  # DOF 0 rows
    np.testing.assert_array_equal(fv[8:12, 2], v[:, 2])  # DOF 2 rows
    assert np.count_nonzero(fv[4:8]) == 0  # DOF 1 rows
    fs = W[:, 66:72]
    np.testing.assert_array_equal(fs[8:12, 2], np.sign(v[:, 2]))


@pytest.mark.parametrize("dofs", [list(range(6)), [0, 2, 5]])
def test_large_batch_extra_columns_written_by_helper_thread_match_rnea(ur10_robot, dofs):
    """Above the inline threshold a helper thread writes the extra columns."""
    from figaroh.tools import regressor as regressor_module

    model = ur10_robot.model
    n = regressor_module._OVERLAP_MIN_BYTES // (8 * 6 * 84) + 50
    rng = np.random.default_rng(3)
    q, v, a = _samples(model, n, rng)
    v[::7] = 0.0  # sign(0) = 0 in the Coulomb block
    cfg = {
        "has_friction": True,
        "has_actuator_inertia": True,
        "has_joint_offset": True,
        "act_idxv": dofs,
        "fv": rng.uniform(0.1, 2.0, 6).tolist(),
        "fs": rng.uniform(0.1, 2.0, 6).tolist(),
        "Ia": rng.uniform(0.01, 0.5, 6).tolist(),
        "off": rng.uniform(-1.0, 1.0, 6).tolist(),
    }
    W = build_regressor_basic(ur10_robot, q, v, a, cfg)
    assert W.nbytes >= regressor_module._OVERLAP_MIN_BYTES
    phi = np.array(list(get_standard_parameters(model, cfg).values()))
    expected = _expected(model, q, v, a, cfg, dofs)
    np.testing.assert_allclose(W @ phi, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    # identical to the inline path, sample by sample
    small = build_regressor_basic(ur10_robot, q[:40], v[:40], a[:40], cfg)
    W3 = W.reshape(6, n, 84)
    np.testing.assert_array_equal(W3[:, :40].reshape(-1, 84), small)


def test_background_copy_reraises_in_join():
    from figaroh.tools.regressor import _BackgroundCopy

    worker = _BackgroundCopy(np.zeros((2, 3)), np.zeros((4, 5)))
    worker.start()
    with pytest.raises(ValueError):
        worker.join()


def test_armature_block_starts_right_after_inertial_block_without_friction(ur10_robot):
    rng = np.random.default_rng(2)
    q, v, a = _samples(ur10_robot.model, 3, rng)
    W = build_regressor_basic(
        ur10_robot, q, v, a, {"has_actuator_inertia": True, "act_idxv": list(range(6))}
    )
    assert W.shape[1] == 66
    np.testing.assert_array_equal(W[0:3, 60], a[:, 0])


def test_builder_without_backend_matches(ur10_robot):
    class Bare:
        model = ur10_robot.model
        data = ur10_robot.model.createData()

    rng = np.random.default_rng(3)
    q, v, a = _samples(ur10_robot.model, 6, rng)
    cfg = {"has_friction": True, "has_joint_offset": True, "act_idxv": list(range(6))}
    np.testing.assert_array_equal(
        build_regressor_basic(Bare(), q, v, a, cfg), build_regressor_basic(ur10_robot, q, v, a, cfg)
    )


def test_single_sample_1d_input(ur10_robot):
    q = np.zeros(6)
    W = build_regressor_basic(ur10_robot, q, q, q, {})
    assert W.shape == (6, 60)


def test_bad_inputs_raise_clear_errors(ur10_robot):
    builder = RegressorBuilder(ur10_robot)
    good = np.zeros((3, 6))
    with pytest.raises(RegressorShapeError, match="q must have 6 columns, got 5"):
        builder.build_basic_regressor(np.zeros((3, 5)), good, good)
    with pytest.raises(RegressorShapeError, match="Inconsistent sample counts"):
        builder.build_basic_regressor(good, np.zeros((2, 6)), good)
    bad = good.copy()
    bad[1, 2] = np.nan
    with pytest.raises(RegressorShapeError, match="v contains NaN"):
        builder.build_basic_regressor(good, bad, good)
    with pytest.raises(ValueError, match="act_idxv"):
        build_regressor_basic(ur10_robot, good, good, good, {"has_friction": True, "act_idxv": [7]})
    neither = RegressorBuilder(
        ur10_robot, RegressorConfig(is_joint_torques=False, is_external_wrench=False)
    )
    with pytest.raises(ValueError, match="Must specify either"):
        neither.build_basic_regressor(good, good, good)
    assert "RegressorBuilder(model='ur10'" in repr(builder)


def test_external_wrench_mode_reproduces_base_wrench(request):
    robot = _robot(request, "talos_urdf", isFext=True)
    model = robot.model
    rng = np.random.default_rng(4)
    q, v, a = _samples(model, 5, rng)
    cfg = {
        "is_joint_torques": False,
        "is_external_wrench": True,
        "force_torque": ["Fx", "Fy", "Fz", "Mx", "My", "Mz"],
    }
    W = build_regressor_basic(robot, q, v, a, cfg)
    phi = np.array(list(get_standard_parameters(model, {}).values()))
    data = model.createData()
    wrench = np.array([pin.rnea(model, data, q[i], v[i], a[i])[:6] for i in range(5)])
    assert W.shape == (6 * 5, 10 * (model.njoints - 1))
    np.testing.assert_allclose(W @ phi, wrench.T.ravel(), atol=1e-8)
    only_f = build_regressor_basic(robot, q, v, a, {**cfg, "force_torque": ["Fz"]})
    assert np.count_nonzero(only_f[:10]) == 0 and np.count_nonzero(only_f[10:15]) > 0
    with pytest.raises(ValueError, match="force_torque component"):
        build_regressor_basic(robot, q, v, a, {**cfg, "force_torque": ["Fw"]})


def test_external_wrench_mode_needs_floating_base(ur10_robot):
    z = np.zeros((2, 6))
    with pytest.raises(RegressorShapeError, match="floating-base"):
        build_regressor_basic(
            ur10_robot, z, z, z, {"is_joint_torques": False, "is_external_wrench": True}
        )


def test_elimination_helpers_agree(ur10_robot):
    rng = np.random.default_rng(5)
    q, v, a = _samples(ur10_robot.model, 30, rng)
    cfg = {"has_friction": True, "act_idxv": list(range(6))}
    W = build_regressor_basic(ur10_robot, q, v, a, cfg)
    params = get_standard_parameters(ur10_robot.model, cfg)
    idx_e, params_r = get_index_eliminate(W, params, 1e-6)
    W_e = build_regressor_reduced(W, idx_e)
    W_r, params_r2 = eliminate_non_dynaffect(W, params, 1e-6)
    np.testing.assert_array_equal(W_e, W_r)
    assert params_r == params_r2
    assert len(params_r) == W_e.shape[1] == W.shape[1] - len(idx_e)
    norms = (W**2).sum(axis=0)
    assert set(idx_e) == set(np.flatnonzero(norms < 1e-6))
    assert "m_shoulder_pan_joint" in [
        list(params)[i] for i in idx_e
    ]  # base body mass has no effect
    with pytest.raises(ValueError, match="params_std has 3 names"):
        get_index_eliminate(W, ["a", "b", "c"])


def test_get_torque_rand_matches_regressor(ur10_robot):
    rng = np.random.default_rng(6)
    q, v, a = generate_waypoints(20, ur10_robot, -2.0, 2.0, rng=rng)
    assert q.shape == (20, 6)
    cfg = {
        "has_friction": True,
        "has_actuator_inertia": True,
        "has_joint_offset": True,
        "fv": [0.5] * 6,
        "fs": [0.3] * 6,
        "Ia": [0.1] * 6,
        "off": [0.2] * 6,
        "act_idxv": list(range(6)),
    }
    tau = get_torque_rand(20, ur10_robot, q, v, a, cfg)
    W = build_regressor_basic(ur10_robot, q, v, a, cfg)
    phi = np.array(list(get_standard_parameters(ur10_robot.model, cfg).values()))
    np.testing.assert_allclose(tau, W @ phi, atol=1e-9)
    noisy = get_torque_rand(
        20, ur10_robot, q, v, a, cfg, noise_std=0.5, rng=np.random.default_rng(1)
    )
    again = get_torque_rand(
        20, ur10_robot, q, v, a, cfg, noise_std=0.5, rng=np.random.default_rng(1)
    )
    np.testing.assert_array_equal(noisy, again)
    assert 0.3 < np.std(noisy - tau) < 0.7


def test_get_torque_rand_coupled_wrist(ur10_robot):
    rng = np.random.default_rng(8)
    q, v, a = generate_waypoints(5, ur10_robot, -1.0, 1.0, rng=rng)
    base = get_torque_rand(5, ur10_robot, q, v, a, {})
    cfg = {"has_coupled_wrist": True, "Iam6": 0.2, "fvm6": 0.3, "fsm6": 0.4}
    tau = get_torque_rand(5, ur10_robot, q, v, a, cfg)
    d = (tau - base).reshape(6, 5)
    s = np.sign(v[:, 4] + v[:, 5])
    np.testing.assert_allclose(d[4], 0.2 * a[:, 5] + 0.3 * v[:, 5] + 0.4 * s)
    np.testing.assert_allclose(d[5], 0.2 * a[:, 4] + 0.3 * v[:, 4] + 0.4 * s)
    assert np.count_nonzero(d[:4]) == 0


def test_generate_waypoints_reproducible_and_valid(request):
    robot = _robot(request, "tiago_urdf")
    q1, v1, a1 = generate_waypoints(10, robot, -1.0, 1.0, rng=np.random.default_rng(3))
    q2, _, _ = generate_waypoints(10, robot, -1.0, 1.0, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(q1, q2)
    assert q1.shape == (10, robot.model.nq) and v1.shape == (10, robot.model.nv)
    for jid in range(1, robot.model.njoints):  # continuous wheels: unit (cos, sin)
        j = robot.model.joints[jid]
        if j.nq == 2:
            np.testing.assert_allclose(np.linalg.norm(q1[:, j.idx_q : j.idx_q + 2], axis=1), 1.0)


def test_generate_waypoints_fext(request):
    robot = _robot(request, "talos_urdf", isFext=True)
    q, v, a = generate_waypoints_fext_checked(robot)
    assert np.allclose(q[:, :7], robot.q0[:7]) and np.count_nonzero(v[:, :6]) == 0


def generate_waypoints_fext_checked(robot):
    from figaroh.tools.randomdata import generate_waypoints_fext

    q, v, a = generate_waypoints_fext(4, robot, -0.5, 0.5, rng=np.random.default_rng(0))
    assert q.shape == (4, robot.model.nq) and v.shape == a.shape == (4, robot.model.nv)
    return q, v, a


# ---------------------------------------------------------------- total least squares
def _payload_problem(ur10_robot, current: bool):
    model = ur10_robot.model
    rng = np.random.default_rng(11)
    n = 60
    qu, vu, au = _samples(model, n, rng)
    ql, vl, al = _samples(model, n, rng)
    W_u = build_regressor_basic(ur10_robot, qu, vu, au, {})
    W_l = build_regressor_basic(ur10_robot, ql, vl, al, {})
    theta = np.array(list(get_standard_parameters(model, {}).values()))
    _, _, piv = scipy.linalg.qr(np.vstack([W_u, W_l]), pivoting=True, mode="economic")
    r = np.linalg.matrix_rank(np.vstack([W_u, W_l]))
    base = np.sort(piv[:r])
    phi_b = np.linalg.lstsq(
        np.vstack([W_u, W_l])[:, base], np.vstack([W_u, W_l]) @ theta, rcond=None
    )[0]
    body = 5
    payload = np.zeros(10)
    payload[0] = 2.0  # mass [kg]
    payload[1:4] = 2.0 * np.array([0.0, 0.0, 0.05])
    payload[4:] = [0.01, 0.0, 0.01, 0.0, 0.0, 0.005]
    tau_u = W_u[:, base] @ phi_b
    tau_l = W_l[:, base] @ phi_b + W_l[:, 10 * body : 10 * body + 10] @ payload
    return W_u[:, base], W_l[:, base], W_l, tau_u, tau_l, payload, body, n


def test_total_regressor_current_recovers_gains_and_payload(ur10_robot):
    W_b_u, W_b_l, W_l, tau_u, tau_l, payload, body, n = _payload_problem(ur10_robot, True)
    gains = np.repeat([2.0, 3.0, 1.5, 0.8, 0.9, 1.1], n)  # torque per ampere
    I_u, I_l = tau_u / gains, tau_l / gains
    params = list(get_standard_parameters(ur10_robot.model, {}))
    cfg = {"nb_samples": n, "which_body_loaded": body, "mass_load": 2.0}
    W_tot, V, residue = build_total_regressor_current(W_b_u, W_b_l, W_l, I_u, I_l, params, cfg)
    assert np.abs(residue).max() < 1e-8 * np.abs(W_tot).max()
    assert V[-1] == pytest.approx(2.0)
    n_b = W_b_u.shape[1]
    np.testing.assert_allclose(V[n_b : n_b + 6], [2.0, 3.0, 1.5, 0.8, 0.9, 1.1], rtol=1e-6)
    W_tot2, V2, _ = build_total_regressor_current(
        W_b_u, W_b_l, W_l, I_u, I_l, params, {**cfg, "mass_load": 4.0}
    )
    np.testing.assert_allclose(V2, 2.0 * V, rtol=1e-9)
    with pytest.raises(ValueError, match="nb_samples"):
        build_total_regressor_current(W_b_u, W_b_l, W_l, I_u[:-1], I_l, params, cfg)


def test_total_regressor_wrench_is_consistent(ur10_robot):
    W_b_u, W_b_l, W_l, tau_u, tau_l, payload, body, n = _payload_problem(ur10_robot, False)
    params = list(get_standard_parameters(ur10_robot.model, {}))
    cfg = {"which_body_loaded": body, "mass_load": 2.0}
    W_tot, V, residue = build_total_regressor_wrench(W_b_u, W_b_l, W_l, tau_u, tau_l, params, cfg)
    assert W_tot.shape[0] == 2 * W_b_u.shape[0]
    assert V[-1] == pytest.approx(2.0)
    assert np.abs(residue).max() < 1e-8 * np.abs(W_tot).max()
    with pytest.raises(ValueError, match="6 wrench components"):
        build_total_regressor_wrench(W_b_u, W_b_l, W_l, tau_u[:-1], tau_l, params, cfg)
