"""Optimal exciting trajectories: splines, constraints, derivatives, and the UR10 design.

Independent truths: dense sampling and ``np.gradient`` for the spline,
Pinocchio's ``rnea`` for efforts, plain forward differences of the full
(non-incremental) objective and constraint evaluations for the derivatives,
mesh collision checks for clearance, and a least-squares identification on
simulated torques for the quality of the designed trajectory.
"""

from __future__ import annotations

import logging

import numpy as np
import pinocchio as pin
import pytest

from conftest import load_example
from figaroh.optimal import (
    BaseOptimalTrajectory,
    BaseParameterComputer,
    TrajectoryConstraintManager,
    add_non_adjacent_pairs,
    load_param,
)
from figaroh.optimal import base_optimal_trajectory as bot
from figaroh.optimal.config import create_config, validate_trajectory_config
from figaroh.optimal.constraints import TrajectoryConstraintManager as AliasManager
from figaroh.tools.robot import Robot
from figaroh.tools.robotcollisions import CollisionManager
from figaroh.utils.cubic_spline import (
    CubicSpline,
    SplineShapeError,
    WaypointsGeneration,
    calc_torque,
    peak_velocities,
    sample_times,
    spline_basis,
)

pytest.importorskip("cyipopt")

UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]


@pytest.fixture(scope="module")
def ur10_geom(ur10_urdf):
    """UR10 with its collision meshes."""
    return Robot(str(ur10_urdf))


@pytest.fixture(scope="module")
def ur10_config():
    from conftest import ROOT

    return ROOT / "config" / "ur10_unified_config.yaml"


# ---------------------------------------------------------------------------- spline


def test_spline_interpolates_rests_and_differentiates(ur10_robot):
    cb = CubicSpline(ur10_robot, 4, UR10_JOINTS)
    rng = np.random.default_rng(0)
    wps = rng.uniform(-2, 2, (6, 4))
    tps = np.array([0.0, 1.0, 2.5, 4.0])
    t, q, dq, ddq = cb.get_active_config(1000, tps, wps)
    assert t.shape == (4001, 1) and q.shape == dq.shape == ddq.shape == (4001, 6)
    idx = [0, 1000, 2500, 4000]
    np.testing.assert_allclose(q[idx].T, wps, atol=1e-12)  # through the waypoints
    np.testing.assert_allclose(dq[idx], 0.0, atol=1e-12)  # at rest at every waypoint
    tt = t.ravel()
    inner = np.r_[2:998, 1003:2498, 2503:3998]  # away from the acceleration jumps
    np.testing.assert_allclose(np.gradient(q, tt, axis=0)[inner], dq[inner], atol=2e-5)
    np.testing.assert_allclose(np.gradient(dq, tt, axis=0)[inner], ddq[inner], atol=2e-4)
    # rest-to-rest piece: peak speed 1.5·Δq/T at mid-interval, positions between the ends
    peak = np.abs(dq[1000:2501]).max(axis=0)
    np.testing.assert_allclose(peak, 1.5 * np.abs(wps[:, 2] - wps[:, 1]) / 1.5, rtol=1e-6)
    lo, hi = np.minimum(wps[:, 1], wps[:, 2]), np.maximum(wps[:, 1], wps[:, 2])
    assert np.all((q[1000:2501] >= lo - 1e-12) & (q[1000:2501] <= hi + 1e-12))


def test_full_config_embeds_active_joints(ur10_robot):
    cb = CubicSpline(ur10_robot, 3, UR10_JOINTS[1:3])
    wps = np.array([[0.1, 0.5, -0.2], [0.0, 1.0, 0.4]])
    t, q, v, a = cb.get_full_config(10, [0, 1, 2], wps)
    assert q.shape == (21, 6) and v.shape == a.shape == (21, 6)
    np.testing.assert_allclose(q[:, [0, 3, 4, 5]], 0.0)
    np.testing.assert_allclose(v[:, 0], 0.0)
    np.testing.assert_allclose(q[[0, 10, 20]][:, [1, 2]], wps.T)


def test_spline_rejects_bad_shapes(ur10_robot):
    cb = CubicSpline(ur10_robot, 3, UR10_JOINTS)
    with pytest.raises(SplineShapeError, match="dim_q"):
        cb.get_active_config(10, [0, 1, 2], np.zeros((6, 4)))
    with pytest.raises(AssertionError):  # upstream asserted
        cb.get_active_config(10, [0, 1, 2], np.zeros((5, 3)))
    with pytest.raises(ValueError, match="strictly increasing"):
        cb.get_active_config(10, [0, 2, 1], np.zeros((6, 3)))
    with pytest.raises(ValueError, match="vel_waypoints"):
        cb.get_active_config(10, [0, 1, 2], np.zeros((6, 3)), np.zeros((6, 2)))
    with pytest.raises(ValueError, match="unknown active joint"):
        CubicSpline(ur10_robot, 3, ["elbow"])
    with pytest.raises(ValueError, match="scalar"):
        CubicSpline(ur10_robot, 3, UR10_JOINTS, soft_lim=[0.1])


def test_soft_limits_are_shrunk_sequentially(ur10_robot):
    s = 0.1
    cb = CubicSpline(ur10_robot, 3, UR10_JOINTS, soft_lim=s)
    m = ur10_robot.model
    up, lo = m.upperPositionLimit, m.lowerPositionLimit
    up_new = up - s * np.abs(up - lo)
    np.testing.assert_allclose(cb.upper_q, up_new)
    np.testing.assert_allclose(cb.lower_q, lo + s * np.abs(up_new - lo))
    v = m.velocityLimit
    np.testing.assert_allclose(cb.upper_dq, v - s * 2 * v)
    np.testing.assert_allclose(cb.lower_dq, -v + s * (v - s * 2 * v + v))
    assert cb.lower_effort[0] == pytest.approx(
        -m.effortLimit[0] + s * (2 - 2 * s) * m.effortLimit[0]
    )


def test_check_cfg_constraints(ur10_robot):
    cb = CubicSpline(ur10_robot, 3, UR10_JOINTS)
    q = np.zeros((5, 6))
    assert not cb.check_cfg_constraints(q, np.zeros((5, 6)), np.zeros((5, 6)))
    bad_q = q.copy()
    bad_q[2, 2] = 3.2  # elbow limit ±π
    assert cb.check_cfg_constraints(bad_q)
    bad_v = np.zeros((5, 6))
    bad_v[1, 0] = 2.2  # 2.16 rad/s
    assert cb.check_cfg_constraints(q, bad_v)
    tau = np.zeros(30)  # joint-major flat layout
    tau[3 * 5 + 4] = 60.0  # wrist_1 at sample 4, limit 54 N·m
    assert cb.check_cfg_constraints(q, None, tau)
    assert cb.check_cfg_constraints(q, None, tau, soft_lim=0) is not False
    assert cb.check_self_collision() is False


def test_peak_velocities_bound_the_continuous_velocity():
    """Constrained pieces (velocity and acceleration waypoints), a moving first waypoint."""
    rng = np.random.default_rng(3)
    tps = np.array([0.0, 2.0, 4.5, 6.0])
    y = rng.normal(size=(3, 4))
    vel, acc = np.zeros((3, 4)), np.zeros((3, 4))
    vel[:, 0] = rng.normal(size=3) * 0.3
    acc[:, 0] = rng.normal(size=3)
    peak, d0, d1 = peak_velocities(tps, y, vel, acc)
    t = np.linspace(0, 6, 600001)
    _, dq, _ = spline_basis(tps, t, constrained=True).evaluate(y, vel, acc)
    for k in range(3):
        m = (t >= tps[k]) & (t <= tps[k + 1])
        np.testing.assert_allclose(np.abs(dq[m]).max(axis=0), np.abs(peak[k]), atol=1e-8)
    # rest-to-rest quintic pieces: (15/8)·Δq/T, derivatives ±(15/8)/T (exact)
    np.testing.assert_allclose(peak[1], 1.875 * (y[:, 2] - y[:, 1]) / 2.5)
    np.testing.assert_allclose(d1[1], 1.875 / 2.5)
    np.testing.assert_allclose(d0[2], -1.875 / 1.5)
    # without constraints every piece is the rest-to-rest cubic: 1.5·Δq/T
    np.testing.assert_allclose(peak_velocities(tps, y)[0][0], 1.5 * (y[:, 1] - y[:, 0]) / 2.0)


def test_waypoint_generation(ur10_robot):
    wp = WaypointsGeneration(ur10_robot, 6, UR10_JOINTS, rng=7)
    pool = np.full((3, 6), 0.1)
    wp.gen_rand_pool(pool)
    rq = wp.upper_q - wp.lower_q
    np.testing.assert_allclose(wp.pool_q[0], wp.lower_q + 0.1 * rq)
    np.testing.assert_allclose(wp.pool_q[-1], wp.upper_q - 0.1 * rq)
    assert wp.pool_ddq[0, 0] == pytest.approx(1.5 * (wp.upper_dq[0] - 0.1 * 2 * wp.upper_dq[0]))
    start = wp.pool_q[3]
    wps, vel, acc = wp.gen_rand_wp(start, vel_wp_init=np.full(6, 0.2))
    assert wps.shape == vel.shape == acc.shape == (6, 6)
    np.testing.assert_allclose(wps[:, 0], start)
    assert not any(wp.check_repeat_wp(row) for row in wps)
    assert np.all(np.isin(wps[:, 1:], wp.pool_q))
    np.testing.assert_allclose(vel[:, 0], 0.2)
    np.testing.assert_allclose(vel[:, 1:], 0.0)
    again = WaypointsGeneration(ur10_robot, 6, UR10_JOINTS, rng=7)
    again.gen_rand_pool(pool)
    np.testing.assert_array_equal(again.gen_rand_wp(start)[0], wps)  # seeded
    eq, _, _ = wp.gen_equal_wp(start)
    np.testing.assert_allclose(np.diff(eq, axis=1), np.tile(rq[:, None] / 20, (1, 5)))
    assert wp.check_repeat_wp([1, 2, 2]) and not wp.check_repeat_wp([1, 2, 1])
    with pytest.raises(AssertionError):
        wp.gen_rand_pool(np.zeros((2, 6)))


def test_calc_torque_is_rnea_joint_major(ur10_robot):
    rng = np.random.default_rng(1)
    q, v, a = (rng.normal(size=(7, 6)) for _ in range(3))
    tau = calc_torque(7, ur10_robot, q, v, a)
    m = ur10_robot.model
    d = m.createData()
    ref = np.array([pin.rnea(m, d, q[i], v[i], a[i]) for i in range(7)])
    np.testing.assert_allclose(tau.reshape(6, 7).T, ref, atol=1e-9)


def test_sample_times():
    t = sample_times(100, [0.0, 2.0, 4.0, 8.0])
    assert len(t) == 801 and t[-1] == pytest.approx(8.0)
    with pytest.raises(ValueError, match="freq"):
        sample_times(0, [0, 1])


# ---------------------------------------------------------------------------- config


def test_load_param_unified(ur10_robot, ur10_config):
    traj, ident = load_param(ur10_robot, ur10_config)
    assert (traj["n_wps"], traj["freq"], traj["t_s"]) == (5, 100.0, 2.0)
    assert traj["soft_lim"] == 0.05 and traj["max_attempts"] == 500
    assert traj["max_iterations"] == 200  # template default
    assert traj["objective"] == "condition_number"
    assert ident["has_friction"] is True and ident["active_joints"] == UR10_JOINTS


def test_config_errors(ur10_robot, tmp_path, ur10_config):
    with pytest.raises(FileNotFoundError):
        load_param(ur10_robot, tmp_path / "nope.yaml")
    from figaroh.utils.config_parser import parse_configuration

    cfg = parse_configuration(ur10_config)
    del cfg["tasks"]["optimal_trajectory"]
    with pytest.raises(ValueError, match="Missing required configuration key"):
        load_param(ur10_robot, cfg)
    with pytest.raises(ValueError, match="soft_lim"):
        create_config({"problem": {"soft_lim": [0.01]}})
    with pytest.raises(ValueError, match="objective"):
        validate_trajectory_config({"objective": "a_optimality"})
    with pytest.raises(ValueError, match="n_wps"):
        validate_trajectory_config({"n_wps": 1})
    with pytest.raises(ValueError, match="information_weight"):
        validate_trajectory_config({"information_weight": -0.5})
    assert create_config({"problem": {"information_weight": 0.5}})["information_weight"] == 0.5
    assert create_config({})["information_weight"] == 0.0
    cfg2 = create_config(
        {"trajectory": {"waypoints": 7}, "collision": {"margin": 0.02, "srdf": "x.srdf"}}
    )
    assert cfg2["n_wps"] == 7 and cfg2["collision_margin"] == 0.02 and cfg2["srdf"] == "x.srdf"


# ---------------------------------------------------------------------------- collisions


def test_non_adjacent_pairs_ur10(ur10_geom):
    gm = ur10_geom.geom_model.copy()
    model = ur10_geom.model
    assert add_non_adjacent_pairs(model, gm) == 20
    for pair in gm.collisionPairs:
        j1 = gm.geometryObjects[pair.first].parentJoint
        j2 = gm.geometryObjects[pair.second].parentJoint
        assert j1 != j2 and model.parents[j1] != j2 and model.parents[j2] != j1
    assert add_non_adjacent_pairs(model, gm) == 0  # existing pairs kept, none duplicated


def _one_link_arm():
    """A revolute joint (z) with a 1 m box link along x, and a fixed obstacle at (0, 0.6).

    A passive base joint sits between the universe and the arm joint so that the
    obstacle (on the universe) and the link are not parent/child (adjacent).
    """
    model = pin.Model()
    base = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "base")
    model.appendBodyToJoint(base, pin.Inertia.FromSphere(1.0, 0.05), pin.SE3.Identity())
    jid = model.addJoint(base, pin.JointModelRZ(), pin.SE3.Identity(), "joint")
    model.appendBodyToJoint(jid, pin.Inertia.FromBox(1.0, 1.0, 0.04, 0.04), pin.SE3.Identity())
    model.upperPositionLimit[:] = 4.0
    model.lowerPositionLimit[:] = -4.0
    model.velocityLimit[:] = 10.0
    model.effortLimit[:] = 100.0
    import coal

    geom = pin.GeometryModel()
    link_pose = pin.SE3(np.eye(3), np.array([0.55, 0.0, 0.0]))
    geom.addGeometryObject(pin.GeometryObject("link", jid, 0, link_pose, coal.Box(0.9, 0.04, 0.04)))
    obstacle_pose = pin.SE3(np.eye(3), np.array([0.0, 0.6, 0.0]))
    geom.addGeometryObject(
        pin.GeometryObject("obstacle", 0, 0, obstacle_pose, coal.Box(0.3, 0.3, 0.3))
    )

    class Arm:
        pass

    arm = Arm()
    arm.model, arm.data, arm.geom_model = model, model.createData(), geom
    arm.q0 = np.zeros(2)
    return arm


def test_collision_checks_catch_sweeps_between_waypoints():
    """0 → π/2 + 1.2 → π over [0, 2, 4] s at 20 Hz: the link sweeps through the obstacle
    (a 0.3 m cube 0.6 m out on +y) in the first interval only. Waypoint-only checks miss
    it; five checks per interval see it."""
    arm = _one_link_arm()
    cb = CubicSpline(arm, 3, ["joint"])
    assert cb.act_idxq == [1]
    tps = np.array([0.0, 2.0, 4.0])
    wps = np.array([[0.0, np.pi / 2 + 1.2, np.pi]])
    t, q, _, _ = cb.get_full_config(20, tps, wps)
    cfg = {
        "freq": 20,
        "collision_margin": 0.01,
        "collision_screen": None,
        "collision_hull_chunks": 1,
    }
    waypoint_only = TrajectoryConstraintManager(
        arm, cb, {**cfg, "collision_checks_per_interval": 1}
    )
    assert waypoint_only.n_pairs == 1  # the obstacle hangs on the universe, the link on joint 1
    rows = waypoint_only._evaluate_collision_constraints(q, tps, t.ravel())
    assert rows.shape == (2, 1) and np.all(rows > 0.01)  # the sweep is missed
    assert not waypoint_only.trajectory_clear(tps, wps)
    five = TrajectoryConstraintManager(arm, cb, {**cfg, "collision_checks_per_interval": 5})
    rows = five._evaluate_collision_constraints(q, tps, t.ravel())
    assert rows[0, 0] < 0.01 < rows[1, 0]
    # clearance at the last waypoint: link along −x, cube face 0.45 m out on +y
    assert five.clipped_distances(q[-1])[0] == pytest.approx(0.6 - 0.15 - 0.02, abs=1e-6)
    assert AliasManager is TrajectoryConstraintManager


def test_no_geometry_means_collision_not_enforced(ur10_robot, caplog):
    cb = CubicSpline(ur10_robot, 3, UR10_JOINTS)
    with caplog.at_level(logging.WARNING, logger="figaroh.optimal.contraints"):
        cm = TrajectoryConstraintManager(ur10_robot, cb, {"freq": 100})
    assert "not enforced" in caplog.text
    assert cm.n_pairs == 0
    assert cm.trajectory_clear([0, 1, 2], np.zeros((6, 3)))
    assert cm.n_constraints(10) == 4 * 2 * 6


@pytest.fixture(scope="module")
def ur10_manager(ur10_geom):
    cb = CubicSpline(ur10_geom, 5, UR10_JOINTS, soft_lim=0.05)
    return TrajectoryConstraintManager(ur10_geom, cb, validate_trajectory_config({}))


def test_proxy_clearance_is_a_lower_bound_of_mesh_clearance(ur10_geom, ur10_manager):
    """Slice hulls contain the meshes: proxy distance ≤ mesh distance, and the screened
    value equals min(exact, screen)."""
    cm = ur10_manager
    mesh = CollisionManager(ur10_geom, geom_model=ur10_geom.geom_model.copy())
    add_non_adjacent_pairs(ur10_geom.model, mesh.geom_model)
    rng = np.random.default_rng(5)
    for q in rng.uniform(-3, 3, (15, 6)):
        exact = cm.min_clearance_along(q[None])[0]
        d_mesh = mesh.get_all_distances(q)
        assert exact <= d_mesh.min() + 1e-9
        screened = cm.clipped_distances(q)
        saved, cm.screen = cm.screen, None
        unscreened = cm.clipped_distances(q)
        cm.screen = saved
        # (GJK warm starts make repeated queries agree to ~1e-7 m)
        np.testing.assert_allclose(screened, np.minimum(unscreened, cm.screen), atol=1e-6)


def test_distance_gradient_matches_finite_differences(ur10_manager):
    cm = ur10_manager
    saved, cm.screen = cm.screen, None
    try:
        rng = np.random.default_rng(2)
        checked = 0
        for q in rng.uniform(-3, 3, (40, 6)):
            d = cm.clipped_distances(q)
            k = int(np.argmin(d))
            if d[k] > 0.2:
                continue
            _, g = cm.distance_gradients(q, [k])
            h = 1e-5
            fd = np.array(
                [
                    (cm.clipped_distances(q + h * e)[k] - cm.clipped_distances(q - h * e)[k])
                    / (2 * h)
                    for e in np.eye(6)
                ]
            )
            # witness points of face-face contacts are not unique: a few % off is expected
            np.testing.assert_allclose(g[0], fd, rtol=0.05, atol=1e-4)
            checked += 1
        assert checked >= 3
    finally:
        cm.screen = saved


# ---------------------------------------------------------------------------- problem


@pytest.fixture(scope="module")
def ur10_problem(ur10_geom, ur10_config):
    opt = BaseOptimalTrajectory(ur10_geom, UR10_JOINTS, ur10_config, rng=11)
    # quintic: with 1.0.2's cubic peak (the default) the clipped steps of this short
    # t_s reach 1.0125x the velocity limit and no random draw is feasible
    opt.trajectory_config.update(
        n_wps=4, t_s=1.0, freq=40, collision_checks_per_interval=3, step_limit_peak="quintic"
    )
    opt.initialize()
    opt.WP.gen_rand_pool(opt.soft_lim_pool)
    tps, wps, vel, acc, feasible = opt._generate_feasible_initial_guess(
        opt.WP.pool_q[4], np.zeros(6), np.zeros(6)
    )
    assert feasible
    _, p, _, _, _ = opt._segment_trajectory(tps, wps, vel, acc)
    problem = opt.create_ipopt_problem(6, 4, len(p), tps, vel, acc, wps[:, 0], None, None, None)
    problem._x0 = wps[:, 1:].T.ravel()
    return opt, problem, tps, wps, vel, acc


def test_base_parameter_columns(ur10_problem, ur10_robot):
    opt = ur10_problem[0]
    bc = opt.base_computer
    W = bc.W_reference
    assert W.shape[1] == len(opt.base_columns) == np.linalg.matrix_rank(W)
    names = list(bc.params_std)
    assert opt.base_param_names == [names[i] for i in opt.base_columns]
    assert not set(opt.base_columns) & set(bc.idx_e)
    # every friction column of the six joints is identifiable
    for prefix in ("fv_", "fs_"):
        assert sum(n.startswith(prefix) for n in opt.base_param_names) == 6
    assert isinstance(bc, BaseParameterComputer) and "n_base" in repr(bc)


def test_objective_and_constraints_match_independent_evaluation(ur10_problem):
    opt, problem, tps, wps, vel, acc = ur10_problem
    X = wps[:, 1:].T.ravel() + 0.01
    cb = {}
    f_full = opt.objective_function(X, cb, tps, vel, acc, wps[:, 0])
    assert problem.objective(X) == pytest.approx(f_full, rel=1e-9)
    assert set(cb) == {"t_f", "p_f", "v_f", "a_f"}
    # constraints: manager path with RNEA efforts
    g_ref = opt.constraint_manager.evaluate_constraints(
        problem.Ns, X, None, tps, vel, acc, wps[:, 0]
    )
    np.testing.assert_allclose(problem.constraints(X), g_ref, atol=1e-8)
    # KS rows bound the sampled RNEA efforts from above, by at most log(n)/ρ
    tau = calc_torque(problem.Ns, opt.robot, cb["p_f"], cb["v_f"], cb["a_f"]).reshape(6, -1).T
    sizes = opt.constraint_manager.block_sizes()
    start = sizes["position"] + sizes["velocity"]
    ks_max = g_ref[start : start + sizes["effort_max"]].reshape(-1, 6)
    rho = opt.constraint_manager.ks_rho()
    for k, g in enumerate(problem.evaluator.groups):
        true_max = tau[g].max(axis=0)
        assert np.all(ks_max[k] >= true_max - 1e-9)
        assert np.all(ks_max[k] - true_max <= np.log(len(g)) / rho + 1e-9)


def test_gradient_is_forward_difference_of_full_objective(ur10_problem):
    """The incremental gradient (per-piece Gram blocks, probes on the affected samples)
    equals forward differences of the full objective, to their round-off: the criterion
    comes from the eigenvalues of G = W_bᵀW_b, whose smallest one is known to about
    ε·λ_max, so each criterion value carries a relative error of about ε·κ(G)/2
    (κ(G) = cond(W_b)²), which a forward difference divides by the step."""
    opt, problem, tps, wps, vel, acc = ur10_problem
    X = wps[:, 1:].T.ravel()
    grad = problem.gradient(X)
    cb = {}
    f0 = opt.objective_function(X, cb, tps, vel, acc, wps[:, 0])
    kappa_G = np.linalg.cond(opt._stack_base_regressors(cb["p_f"], cb["v_f"], cb["a_f"])) ** 2
    h = bot.FD_STEP
    fd = np.array(
        [
            (opt.objective_function(X + h * e, cb, tps, vel, acc, wps[:, 0]) - f0) / h
            for e in np.eye(X.size)
        ]
    )
    noise = np.finfo(float).eps * kappa_G * abs(f0) / h
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=max(1e-6 * np.abs(fd).max(), noise))


def test_jacobian_matches_finite_differences(ur10_problem):
    opt, problem, tps, wps, vel, acc = ur10_problem
    X = wps[:, 1:].T.ravel()
    J = problem.dense_jacobian(X)
    cm = opt.constraint_manager

    def g(x):
        return cm.evaluate_constraints(problem.Ns, x, None, tps, vel, acc, wps[:, 0])

    h = 1e-6
    fd = np.array([(g(X + h * e) - g(X - h * e)) / (2 * h) for e in np.eye(X.size)]).T
    start = 0
    for name, size in cm.block_sizes().items():
        A, B = J[start : start + size], fd[start : start + size]
        scale = max(1.0, np.abs(B).max())
        np.testing.assert_allclose(A, B, atol=2e-3 * scale, err_msg=name)
        start += size
    rows, cols = problem.jacobianstructure()
    dense_mask = np.zeros_like(J, dtype=bool)
    dense_mask[rows, cols] = True
    assert not np.any(fd[~dense_mask] != 0)  # the declared structure covers every non-zero


@pytest.mark.parametrize("peak, c", [("cubic", 1.5), ("quintic", 1.875)])
def test_limit_waypoint_steps(ur10_problem, peak, c):
    """Steps clipped to 0.9·t_s·|upper_dq|/c: c = 1.5 by default (figaroh 1.0.2, the
    cubic's peak), 15/8 with step_limit_peak="quintic" (the pieces actually built)."""
    opt = ur10_problem[0]
    rng = np.random.default_rng(4)
    wps = rng.uniform(-5, 5, (6, 7))
    saved = opt.trajectory_config.get("step_limit_peak")
    opt.trajectory_config["step_limit_peak"] = peak
    try:
        out = opt._limit_waypoint_steps(wps)
        small = np.cumsum(np.full((6, 5), 0.01), axis=1)
        np.testing.assert_array_equal(opt._limit_waypoint_steps(small), small)
    finally:
        opt.trajectory_config["step_limit_peak"] = saved
    t_s = opt.trajectory_config["t_s"]
    steps = np.abs(np.diff(out, axis=1))
    limit = 0.9 * t_s * np.abs(opt.CB.upper_dq)[:, None] / c
    assert np.all(steps <= limit * (1 + 1e-12))
    # the limit is reached where the raw step exceeded it (so c is not looser than stated)
    np.testing.assert_allclose(steps.max(axis=1), limit[:, 0], rtol=1e-12)
    np.testing.assert_array_equal(out[:, 0], wps[:, 0])
    assert np.all(out >= wps.min(axis=1, keepdims=True) - 1e-12)
    assert np.all(out <= wps.max(axis=1, keepdims=True) + 1e-12)


def test_step_limit_peak_config():
    assert create_config({})["step_limit_peak"] == "cubic"
    assert create_config({"problem": {"step_limit_peak": "quintic"}})["step_limit_peak"] == (
        "quintic"
    )
    with pytest.raises(ValueError, match="step_limit_peak"):
        validate_trajectory_config({"step_limit_peak": "septic"})


def test_information_weight_multiplies_cond_by_exp_of_d_criterion():
    """cond·exp(w·D), checked against numpy's SVD; w = 0 is the plain condition number."""
    rng = np.random.default_rng(4)
    W = rng.normal(size=(200, 6)) * np.array([1.0, 3.0, 0.1, 10.0, 1.0, 0.5])
    G, scale = W.T @ W, np.sqrt(np.mean(W**2, axis=0)) * 1.3
    s = np.linalg.svd(W, compute_uv=False)
    d = -np.mean(np.log(np.linalg.eigvalsh(G / np.outer(scale, scale)) / 200 + 1e-6))
    plain = bot._criterion_from_gram(G, 200, "condition_number", scale, 1e-6)
    assert plain == pytest.approx(s[0] / s[-1], rel=1e-9)
    weighted = bot._criterion_from_gram(G, 200, "condition_number", scale, 1e-6, 0.0, 0.5)
    assert weighted == pytest.approx(s[0] / s[-1] * np.exp(0.5 * d), rel=1e-9)
    # scaling the whole regressor up leaves cond unchanged and lowers the weighted value
    bigger = bot._criterion_from_gram(4 * G, 200, "condition_number", scale, 1e-6, 0.0, 0.5)
    assert bigger < weighted
    singular = G.copy()
    singular[:, 0] = singular[0, :] = 0.0
    assert (
        bot._criterion_from_gram(singular, 200, "condition_number", scale, 1e-6, 0.0, 0.5)
        == bot.FAILED_OBJECTIVE
    )


def test_d_optimality_stays_finite_when_rank_deficient(ur10_problem):
    """A trajectory where the wrist_3 joint never moves leaves its friction columns at
    zero: W_b is rank deficient, the condition number is unusable (sentinel), while the
    regularised D-criterion and its gradient stay finite."""
    opt, problem, tps, wps, vel, acc = ur10_problem
    still = wps.copy()
    still[5, :] = still[5, 0]
    X = still[:, 1:].T.ravel()
    cb = {}
    assert opt.objective_function(X, cb, tps, vel, acc, still[:, 0]) == bot.FAILED_OBJECTIVE
    saved = dict(opt.trajectory_config)
    try:
        opt.trajectory_config["objective"] = "d_optimality"
        pb = opt.create_ipopt_problem(
            6, 4, problem.Ns, tps, vel, acc, still[:, 0], None, None, None
        )
        f = pb.objective(X)
        grad = pb.gradient(X)
        assert np.isfinite(f) and np.all(np.isfinite(grad))
        assert f == pytest.approx(opt.objective_function(X, cb, tps, vel, acc, still[:, 0]))
        assert np.abs(grad).max() < 1e6
    finally:
        opt.trajectory_config.clear()
        opt.trajectory_config.update(saved)


def test_solve_requires_initialize(ur10_robot, ur10_config):
    opt = BaseOptimalTrajectory(ur10_robot, UR10_JOINTS, ur10_config)
    with pytest.raises(RuntimeError, match="initialize"):
        opt.solve()
    with pytest.raises(ValueError, match="active_joints"):
        BaseOptimalTrajectory(ur10_robot, [], ur10_config)
    assert opt.save_results() is None and opt.plot_results() is None


# ---------------------------------------------------------------------------- UR10 design


@pytest.fixture(scope="module")
def ur10_design(ur10_geom):
    """The UR10 example's optimisation (seed 0, 2 × 300 IPOPT iterations): ≈ 65 s."""
    example = load_example("ur10/optimal_trajectory.py", "ur10_optimal_trajectory_example")
    opt = example.build(ur10_geom, seed=0)
    opt.solve(stack_reps=1)
    assert opt.results["P_F"], "the UR10 segment could not be optimised"
    return example, opt


@pytest.mark.slow
def test_ur10_design_satisfies_limits_on_fine_grid(ur10_design):
    _, opt = ur10_design
    tc = opt.trajectory_config
    wps = opt.results["waypoints"][0]
    tps = tc["t_s"] * np.arange(tc["n_wps"])
    fine = 10 * tc["freq"]
    rest = np.zeros_like(wps)  # the design's spline: zero waypoint velocities/accelerations
    t, q, v, a = opt.CB.get_full_config(fine, tps, wps, rest, rest)
    m = opt.model
    assert np.all(q >= m.lowerPositionLimit) and np.all(q <= m.upperPositionLimit)
    assert np.all(np.abs(v) <= m.velocityLimit)
    tau = calc_torque(len(t), opt.robot, q, v, a).reshape(6, -1).T
    assert np.all(np.abs(tau) <= m.effortLimit)
    # and with the margins the optimiser enforced (soft limits), to the feasibility tolerance
    va = v[:, opt.CB.act_idxv]
    assert np.all((va >= opt.CB.lower_dq - 1e-4) & (va <= opt.CB.upper_dq + 1e-4))
    assert opt.results["feasible"] == [True]
    print(
        f"\nUR10 fine grid ({fine:.0f} Hz): "
        f"max |v|/limit = {np.max(np.abs(v) / m.velocityLimit):.3f}, "
        f"max |τ|/limit = {np.max(np.abs(tau) / m.effortLimit):.3f}"
    )


@pytest.mark.slow
def test_ur10_design_is_collision_free(ur10_design, ur10_geom):
    """Mesh-level check with CollisionManager (non-adjacent pairs) along the fine grid:
    every configuration where the single-hull broad phase flags a pair is checked
    against the meshes (hulls contain the meshes, so the others are clear)."""
    _, opt = ur10_design
    tc = opt.trajectory_config
    tps = tc["t_s"] * np.arange(tc["n_wps"])
    wps = opt.results["waypoints"][0]
    rest = np.zeros_like(wps)  # the design's spline: zero waypoint velocities/accelerations
    _, q, _, _ = opt.CB.get_full_config(10 * tc["freq"], tps, wps, rest, rest)
    mesh = CollisionManager(ur10_geom, geom_model=ur10_geom.geom_model.copy())
    add_non_adjacent_pairs(ur10_geom.model, mesh.geom_model)
    hulls = opt.constraint_manager.collision_manager
    flagged = 0
    for qi in q:
        if hulls.check_collisions(qi):
            flagged += 1
            assert not mesh.check_collisions(qi)
    clearance = opt.constraint_manager.min_clearance_along(q[::10])
    assert clearance.min() > 0
    print(
        f"\nUR10 collision: {len(q)} samples, {flagged} hull-flagged, none colliding; "
        f"min slice-hull clearance {1000 * clearance.min():.1f} mm"
    )


@pytest.mark.slow
def test_ur10_condition_number_at_least_halved(ur10_design):
    """The designed trajectory's condition number is at most half its random guess's.

    The segments are built with figaroh 1.0.2's pieces, rest-to-rest quintics: random
    guesses are better conditioned with them than with rest-to-rest cubics (seed 0:
    99.1 instead of 148.2 — 126.9 for the same waypoints, the rest from the smaller
    steps the 15/8 peak speed allows), while IPOPT reaches the same optimum (44.0 vs
    44.2; seeds 0–3: 40.7–48.8 vs 41.3–51.4). The division therefore fell from
    2.9–3.8 to 2.1–2.5 (seeds 0–3, one OpenBLAS thread, AVX2 kernels)."""
    _, opt = ur10_design
    c0 = opt.results["initial_condition_number"][0]
    c1 = opt.results["condition_number"][0]
    _, q0, v0, a0 = load_example(
        "ur10/optimal_trajectory.py", "ur10_optimal_trajectory_example"
    ).initial_trajectory(opt)
    assert c0 == pytest.approx(opt.condition_number(q0, v0, a0))
    assert c1 == pytest.approx(
        opt.condition_number(*opt.results["P_F"][0:1], opt.results["V_F"][0], opt.results["A_F"][0])
    )
    print(
        f"\nUR10 base-regressor condition number: initial {c0:.1f} → optimised {c1:.1f} "
        f"(÷{c0 / c1:.2f})"
    )
    assert c1 <= c0 / 2


def _median_rel_std(example, robot, opt, q, v, a, key="median_std_relative", seeds=range(5)):
    """Median relative std-dev [%] (``key`` of ``identification_quality``), mean of 5 draws."""
    return float(
        np.mean([example.identification_quality(robot, opt, q, v, a, seed=s)[key] for s in seeds])
    )


@pytest.fixture(scope="module")
def ur10_d_optimal(ur10_geom):
    """The UR10 example with the D-optimality objective (seed 0, 120 iterations): ≈ 20 s."""
    example = load_example("ur10/optimal_trajectory.py", "ur10_optimal_trajectory_example")
    opt = example.build(ur10_geom, seed=0, objective="d_optimality", max_iterations=120)
    opt.solve(stack_reps=1)
    assert opt.results["P_F"], "the UR10 D-optimal segment could not be optimised"
    return example, opt


def _trajectories(example, opt):
    _, q0, v0, a0 = example.initial_trajectory(opt)
    q1, v1, a1 = opt.results["P_F"][0], opt.results["V_F"][0], opt.results["A_F"][0]
    return (q0, v0, a0), (q1, v1, a1)


@pytest.mark.slow
def test_ur10_identification_is_more_precise(ur10_design, ur10_d_optimal, ur10_geom):
    """Torques simulated along each trajectory (URDF + friction + 0.5 N·m noise), base
    parameters by least squares on the fixed base columns; the median over the base
    parameters of the relative std-devs 100·σ_k/|φ_k|, averaged over five noise draws.

    The median is over the base parameters whose simulated value is not zero (about
    20 of the UR10's 48 are exactly zero in the URDF, how many depends on which
    representative columns the QR picks: no relative precision exists for them;
    dividing by their noisy estimates gives ratios whose distribution is the same
    for every trajectory). The zero pattern is a property of the parameters, so both
    trajectories must find the same one. The median over all 48 with the estimate as
    denominator is printed too.

    The D-optimal design must beat its initial random guess and shrink the
    confidence ellipsoid of the base parameters, i.e. raise ``log det(W_bᵀW_b)/n_b``
    (same number of samples; the quantity it maximises, independent of which
    representative columns the QR picked). The example's condition-number design
    (cond weighted by exp(0.85·D), the one that at least halves cond) trades some of
    that volume for a lower condition number: it must keep the precision of its
    initial guess to within 10 %, not beat it: a lower median there is a property of
    where IPOPT happens to stop, not of the objective (with the rest-to-rest cubic
    pieces it ended at +1.5 to +1.8 % on two OpenBLAS kernel sets; with 1.0.2's
    quintic pieces at −17 % on AVX2 kernels, 1.92 → 1.59 %, while the plain
    condition number, w = 0, loses 14 %, 1.92 → 2.18 %, on the same seed).
    """
    example, opt_c = ur10_design
    (q0, v0, a0), (q1, v1, a1) = _trajectories(example, opt_c)
    assert len(q0) == len(q1)
    masks = []
    for q, v, a in ((q0, v0, a0), (q1, v1, a1)):
        res = example.identification_quality(ur10_geom, opt_c, q, v, a, seed=0)
        assert res["sigma"] == pytest.approx(0.5, rel=0.1)  # the simulated noise
        masks.append(res["nonzero"])
        W = opt_c._stack_base_regressors(q, v, a)
        assert np.linalg.matrix_rank(W) == W.shape[1]
    np.testing.assert_array_equal(masks[0], masks[1])
    n_nonzero = int(masks[0].sum())
    assert 20 <= n_nonzero < len(masks[0])
    rows = []
    designs = (("cond·exp(0.85·D)", ur10_design), ("D-optimal", ur10_d_optimal))
    for name, (example, opt) in designs:
        before_traj, after_traj = _trajectories(example, opt)
        figures = {
            key: (
                _median_rel_std(example, ur10_geom, opt, *before_traj, key=key),
                _median_rel_std(example, ur10_geom, opt, *after_traj, key=key),
            )
            for key in ("median_std_relative", "median_std_relative_all")
        }
        c0, c1 = opt.results["initial_condition_number"][0], opt.results["condition_number"][0]
        logdets = []
        for q, v, a in (before_traj, after_traj):
            W = opt._stack_base_regressors(q, v, a)
            sign, logdet = np.linalg.slogdet(W.T @ W)
            assert sign > 0
            logdets.append(logdet / W.shape[1])
        rows.append((name, figures, c0, c1, logdets))
    print("\nUR10 identification, median relative std (0.5 N·m noise, mean of 5 draws):")
    for name, figures, c0, c1, logdets in rows:
        nz, every = figures["median_std_relative"], figures["median_std_relative_all"]
        print(
            f"  {name:16s}: {n_nonzero} non-zero {nz[0]:.3f} % → {nz[1]:.3f} %; "
            f"all 48 (/|estimate|) {every[0]:.1f} % → {every[1]:.1f} %; "
            f"cond {c0:.1f} → {c1:.1f}; log det/n_b {logdets[0]:.3f} → {logdets[1]:.3f}"
        )
    before, after = rows[0][1]["median_std_relative"]
    assert after <= 1.1 * before, rows[0][0]
    before, after = rows[1][1]["median_std_relative"]
    assert after < before, rows[1][0]
    logdets = rows[1][4]
    assert logdets[1] > logdets[0], "D-optimal"


@pytest.mark.slow
def test_ur10_results_bookkeeping(ur10_design, tmp_path):
    _, opt = ur10_design
    res = opt.results
    assert res["final_regressor_shape"][1] == len(opt.base_columns)
    it = res["iteration_data"][0]
    assert len(it["iterations"]) == len(it["obj_values"]) > 10
    assert it["attempt"] == 0 and it["final_waypoint"].shape == (6,)
    np.testing.assert_allclose(res["waypoints"][0][:, -1], it["final_waypoint"])
    t, q, _, _ = opt.stacked_trajectory()
    assert len(t) == len(q) == len(res["P_F"][0])
    saved = opt.save_results(str(tmp_path))
    assert set(saved) >= {"yaml", "npz"}
    fig = opt.plot_results()
    assert fig is not None
    import matplotlib.pyplot as plt

    plt.close(fig)


# ---------------------------------------------------------------------------- TIAGo example


def test_tiago_example_short_optimisation(shared_data):
    """TIAGo torso + arm from the shared data (reduced model with geometry, SRDF pairs):
    a few IPOPT iterations on a short segment give a feasible, collision-free result."""
    example = load_example("tiago/optimal_trajectory.py", "tiago_optimal_trajectory_example")
    data_dir = shared_data / "tiago"
    if example.srdf_path(data_dir) is None:
        pytest.skip("TIAGo SRDF not in the shared data")
    opt = example.build(data_dir, seed=1, n_wps=3, freq=20, max_iterations=5)
    assert opt.model.nq == 8 and opt.active_joints == list(example.TIAGO_JOINTS)
    cm = opt.constraint_manager
    assert cm.n_pairs > 0
    names = {frozenset(p) for p in cm.pair_names()}
    assert frozenset(("arm_1_link_0", "arm_3_link_0")) not in names  # disabled by the SRDF
    assert opt.trajectory_config["soft_lim"] == 0.1  # upstream TIAGo task
    res = opt.solve(stack_reps=1)
    assert res["P_F"] and res["feasible"] == [True]
    assert np.isfinite(res["condition_number"][0]) and res["iteration_data"][0]["iterations"]
    tc = opt.trajectory_config
    tps = tc["t_s"] * np.arange(tc["n_wps"])
    wps = res["waypoints"][0]
    rest = np.zeros_like(wps)
    assert cm.trajectory_clear(tps, wps, rest, rest, margin=0.25 * cm.margin)


def test_two_stacked_segments(ur10_geom, ur10_config, tmp_path, monkeypatch):
    """Segment 2 starts at segment 1's last waypoint; its regressor is stacked under
    segment 1's only; the joined trajectory is continuous. plot_results draws the
    real segment layout through the results manager and writes no file."""
    opt = BaseOptimalTrajectory(ur10_geom, UR10_JOINTS, ur10_config, rng=3)
    opt.trajectory_config.update(
        n_wps=3,
        t_s=1.0,
        freq=20,
        max_iterations=4,
        collision_checks_per_interval=2,
        ipopt_print_level=0,
        step_limit_peak="quintic",  # 1.0.2's cubic peak: no feasible draw at t_s = 1 s
    )
    opt.initialize()
    res = opt.solve(stack_reps=2)
    assert len(res["P_F"]) == 2 and res["failures"] == []
    np.testing.assert_allclose(res["waypoints"][1][:, 0], res["waypoints"][0][:, -1])
    np.testing.assert_allclose(res["P_F"][1][0], res["P_F"][0][-1], atol=1e-12)
    assert res["T_F"][1][0, 0] == pytest.approx(1.0)  # upstream offset: one t_s per segment
    assert res["final_regressor_shape"] == (len(res["P_F"][1]) * 6, len(opt.base_columns))
    W1 = opt._stack_base_regressors(res["P_F"][0], res["V_F"][0], res["A_F"][0])
    stacked = opt.condition_number(res["P_F"][1], res["V_F"][1], res["A_F"][1], W1)
    assert res["condition_number"][1] == pytest.approx(stacked)
    t, q, v, _ = opt.stacked_trajectory()
    assert len(q) == len(res["P_F"][0]) + len(res["P_F"][1]) - 1
    assert np.all(np.diff(t) > 0)
    assert np.max(np.abs(np.diff(q, axis=0))) < 0.2  # no jump at the junction (20 Hz)
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    fig = opt.plot_results()
    try:
        axes = fig.axes
        assert len(axes) == 3 and "Optimal exciting trajectory" in fig._suptitle.get_text()
        for ax, key, cols in zip(
            axes,
            ("P_F", "V_F", "A_F"),
            (opt.CB.act_idxq, opt.CB.act_idxv, opt.CB.act_idxv),
            strict=True,
        ):
            assert len(ax.lines) == 2 * 6
            for s in range(2):
                for j, col in enumerate(cols):
                    line = ax.lines[6 * s + j]
                    np.testing.assert_array_equal(line.get_xdata(), res["T_F"][s].ravel())
                    np.testing.assert_array_equal(line.get_ydata(), res[key][s][:, col])
    finally:
        plt.close(fig)
    assert list(tmp_path.iterdir()) == []
