"""The hooks of the optimal designs: an override takes effect where figaroh 1.0.2 calls it.

Truths: the calls a subclass records (``on_segment`` before each segment, a
``_solve_segment`` override still used, the private solve steps), the values
the IPOPT problem returns compared with the overriding method called directly
(objective, constraints, bounds) and with forward differences of them
(gradient, dense Jacobian, as 1.0.2 differentiated them), the candidate points
an ``_is_feasible`` override sees, the subset ``Detmax`` picks under another
criterion, and the error raised at the call when cyipopt cannot be imported
(simulated by ``sys.modules["cyipopt"] = None``), which names the extra to
install.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conftest import ROOT
from figaroh.errors import MissingDependencyError
from figaroh.optimal.base_optimal_calibration import BaseOptimalCalibration, Detmax
from figaroh.optimal.base_optimal_trajectory import (
    FD_STEP,
    BaseOptimalTrajectory,
    BaseTrajectoryIPOPTProblem,
)
from figaroh.optimal.contraints import TrajectoryConstraintManager

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]


def test_missing_cyipopt_raises_at_the_call_naming_the_extra(ur10_robot, monkeypatch):
    opt = BaseOptimalTrajectory(ur10_robot, JOINTS, CONFIG)  # construction needs no cyipopt
    monkeypatch.setitem(sys.modules, "cyipopt", None)
    with pytest.raises(MissingDependencyError, match=r"figaroh\[ipopt\]") as info:
        opt.solve(stack_reps=1)  # checked first: before initialize() is even required
    assert isinstance(info.value, ImportError)
    assert "cyipopt" in str(info.value)


class _Recorded(BaseOptimalTrajectory):
    """Records the hooks; every segment "fails" at once (no IPOPT run)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[tuple] = []

    def on_segment(self, segment_index, n_segments):
        self.calls.append(("on_segment", segment_index, n_segments))

    def _solve_segment(self, s, wp_init, vel_wp_init, acc_wp_init, W_stack):
        self.calls.append(("_solve_segment", s))
        return False


def test_on_segment_runs_before_each_segment_and_private_override_still_used(ur10_robot):
    pytest.importorskip("cyipopt")
    opt = _Recorded(ur10_robot, JOINTS, CONFIG, rng=0)
    opt.trajectory_config.update(n_wps=3, freq=20, max_attempts=5)
    opt.initialize()
    res = opt.solve(stack_reps=3)
    assert opt.calls == [("on_segment", 0, 3), ("_solve_segment", 0)]  # the failure stops it
    assert res["P_F"] == []


def test_default_on_segment_is_a_documented_no_op(ur10_robot):
    opt = BaseOptimalTrajectory(ur10_robot, JOINTS, CONFIG)
    assert opt.on_segment(0, 1) is None
    doc = BaseOptimalTrajectory.on_segment.__doc__
    assert "segment_index" in doc and "n_segments" in doc


def _tiny(robot):
    opt = BaseOptimalTrajectory(robot, JOINTS, CONFIG, rng=3)
    opt.trajectory_config.update(
        n_wps=3, t_s=1.0, freq=20, max_iterations=4, collision_checks_per_interval=2
    )
    opt.initialize()
    return opt


def test_verbose_false_silences_ipopt_with_the_same_design(ur10_robot, capfd):
    pytest.importorskip("cyipopt")
    loud = _tiny(ur10_robot)
    loud.trajectory_config["ipopt_print_level"] = 3
    res_loud = loud.solve(stack_reps=1)
    assert "EXIT:" in capfd.readouterr().out  # IPOPT's own console log (C stdout)
    quiet = _tiny(ur10_robot)
    quiet.trajectory_config["ipopt_print_level"] = 3
    res_quiet = quiet.solve(stack_reps=1, verbose=False)
    assert capfd.readouterr().out == ""
    assert quiet.trajectory_config["ipopt_print_level"] == 3  # restored
    assert len(res_quiet["P_F"]) == len(res_loud["P_F"]) == 1
    np.testing.assert_array_equal(res_quiet["P_F"][0], res_loud["P_F"][0])
    assert res_quiet["condition_number"] == res_loud["condition_number"]


# ---------------------------------------------------------------------------
# the figaroh 1.0.2 hooks of the trajectory problem: an override takes effect
# ---------------------------------------------------------------------------


def _design(robot, cls=BaseOptimalTrajectory, **settings):
    """An initialised design (3 waypoints 1 s apart at 10 Hz), no IPOPT run."""
    opt = cls(robot, JOINTS, CONFIG, rng=7)
    opt.trajectory_config.update(
        dict(n_wps=3, t_s=1.0, freq=10, max_iterations=3, ipopt_print_level=0), **settings
    )
    opt.initialize()
    return opt


def _problem(opt):
    """``(problem, X)`` of segment 0 from a feasible random guess."""
    opt.WP.gen_rand_pool(opt.soft_lim_pool)
    zeros = np.zeros(len(JOINTS))
    tps, wps, vel, acc, _ = opt._generate_feasible_initial_guess(opt.WP.pool_q[4], zeros, zeros)
    Ns = len(opt._segment_trajectory(tps, wps, vel, acc)[0])
    problem = opt.create_ipopt_problem(
        len(JOINTS), wps.shape[1], Ns, tps, vel, acc, wps[:, 0], zeros, zeros, None
    )
    problem._x0 = wps[:, 1:].T.ravel()
    return problem, wps[:, 1:].T.ravel() + 0.01


def _forward_differences(fn, X):
    f0 = np.asarray(fn(X), dtype=float)
    return np.stack(
        [(np.asarray(fn(X + FD_STEP * e), dtype=float) - f0) / FD_STEP for e in np.eye(X.size)],
        axis=-1,
    )


def test_objective_function_override_is_the_ipopt_objective(ur10_robot):
    """1.0.2's problem.objective calls opt_traj.objective_function; its gradient is n + 1
    forward differences of that objective."""

    class Shifted(BaseOptimalTrajectory):
        calls = 0

        def objective_function(self, X, opt_cb, tps, vel_wps, acc_wps, wp_init, W_stack=None):
            Shifted.calls += 1
            base = super().objective_function(X, opt_cb, tps, vel_wps, acc_wps, wp_init, W_stack)
            return 2.0 * base + float(np.sum(X))

    opt = _design(ur10_robot, Shifted)
    problem, X = _problem(opt)
    args = (problem.opt_cb, problem.tps, problem.vel_wps, problem.acc_wps, problem.wp_init)
    plain = BaseOptimalTrajectory.objective_function(opt, X, {}, *args[1:])
    assert problem.objective(X) == 2.0 * plain + np.sum(X)
    Shifted.calls = 0
    grad = problem.gradient(X)
    assert Shifted.calls == X.size + 1
    np.testing.assert_array_equal(grad, _forward_differences(problem.objective, X))
    assert set(problem.opt_cb) == {"t_f", "p_f", "v_f", "a_f"}  # 1.0.2's opt_cb store


def test_stack_base_regressors_override_changes_the_objective(ur10_robot):
    class Weighted(BaseOptimalTrajectory):
        def _stack_base_regressors(self, q, v, a, W_stack=None):
            W_b = super()._stack_base_regressors(q, v, a, W_stack)
            return W_b * np.linspace(1.0, 10.0, W_b.shape[1])

    opt = _design(ur10_robot, Weighted)
    problem, X = _problem(opt)
    cb = {}
    expected = opt.objective_function(
        X, cb, problem.tps, problem.vel_wps, problem.acc_wps, problem.wp_init
    )
    W_b = opt._stack_base_regressors(cb["p_f"], cb["v_f"], cb["a_f"])
    assert expected == opt.criterion(W_b)
    assert problem.objective(X) == expected
    plain = BaseOptimalTrajectory._stack_base_regressors(opt, cb["p_f"], cb["v_f"], cb["a_f"])
    assert not np.isclose(expected, opt.criterion(plain), rtol=1e-3)


def test_criterion_override_is_the_objective(ur10_robot):
    class Trace(BaseOptimalTrajectory):
        def criterion(self, W_b):
            return float(np.trace(W_b.T @ W_b))

    opt = _design(ur10_robot, Trace)
    problem, X = _problem(opt)
    cb = {}
    opt.objective_function(X, cb, problem.tps, problem.vel_wps, problem.acc_wps, problem.wp_init)
    W_b = opt._stack_base_regressors(cb["p_f"], cb["v_f"], cb["a_f"])
    assert problem.objective(X) == float(np.trace(W_b.T @ W_b))


def _with_problem(problem_cls):
    class Design(BaseOptimalTrajectory):
        def create_ipopt_problem(self, *args):
            return problem_cls(self, *args)

    return Design


def test_problem_objective_override_is_differentiated(ur10_robot):
    """A problem subclass's objective: the gradient is its forward differences (1.0.2)."""

    class Penalised(BaseTrajectoryIPOPTProblem):
        def objective(self, X):
            return super().objective(X) + 100.0 * float(np.sum(np.asarray(X) ** 2))

    opt = _design(ur10_robot, _with_problem(Penalised))
    problem, X = _problem(opt)
    grad = problem.gradient(X)
    np.testing.assert_array_equal(grad, _forward_differences(problem.objective, X))
    base, _ = _problem(_design(ur10_robot))
    base_grad = base.gradient(X)
    # the penalty's derivative 200·X shows, to the forward-difference step
    np.testing.assert_allclose(grad - base_grad, 200.0 * X, rtol=1e-3, atol=1e-2)


class _OffsetManager(TrajectoryConstraintManager):
    """evaluate_constraints + 0.5 on every row, bounds widened by 1."""

    def evaluate_constraints(self, Ns, X, opt_cb, tps, vel_wps, acc_wps, wp_init, *args, **kw):
        return super().evaluate_constraints(Ns, X, opt_cb, tps, vel_wps, acc_wps, wp_init) + 0.5


class _WithOffsetManager(BaseOptimalTrajectory):
    def initialize(self):
        super().initialize()
        self.constraint_manager = _OffsetManager(
            self.robot, self.CB, self.trajectory_config, self.identif_config
        )


def test_constraint_manager_evaluate_constraints_override(ur10_robot):
    """1.0.2's problem.constraints calls constraint_manager.evaluate_constraints; its
    Jacobian is then the dense forward differences of those constraints."""
    opt = _design(ur10_robot, _WithOffsetManager)
    problem, X = _problem(opt)
    cm = opt.constraint_manager
    g = problem.constraints(X)
    ref = TrajectoryConstraintManager.evaluate_constraints(
        cm, problem.Ns, X, None, problem.tps, problem.vel_wps, problem.acc_wps, problem.wp_init
    )
    np.testing.assert_array_equal(g, ref + 0.5)
    m, n = g.size, X.size
    rows, cols = problem.jacobianstructure()
    assert len(rows) == len(cols) == m * n
    J = problem.jacobian(X)
    np.testing.assert_array_equal(J, _forward_differences(problem.constraints, X))
    np.testing.assert_array_equal(problem.dense_jacobian(X), J)


def test_constraint_manager_bounds_override(ur10_robot):
    class Wide(TrajectoryConstraintManager):
        def get_constraint_bounds(self, Ns=None):
            lower, upper = super().get_constraint_bounds(Ns)
            return lower - 1.0, upper + 1.0

    class Design(BaseOptimalTrajectory):
        def initialize(self):
            super().initialize()
            self.constraint_manager = Wide(
                self.robot, self.CB, self.trajectory_config, self.identif_config
            )

    opt = _design(ur10_robot, Design)
    problem, X = _problem(opt)
    lower, upper = problem.get_constraint_bounds()
    ref_l, ref_u = TrajectoryConstraintManager.get_constraint_bounds(
        opt.constraint_manager, problem.Ns
    )
    np.testing.assert_array_equal(lower, ref_l - 1.0)
    np.testing.assert_array_equal(upper, ref_u + 1.0)


def test_problem_constraints_override_is_differentiated(ur10_robot):
    class Doubled(BaseTrajectoryIPOPTProblem):
        def constraints(self, X):
            return 2.0 * super().constraints(X)

        def get_constraint_bounds(self):
            lower, upper = super().get_constraint_bounds()
            return [2 * v for v in lower], [2 * v for v in upper]

    opt = _design(ur10_robot, _with_problem(Doubled))
    problem, X = _problem(opt)
    base, _ = _problem(_design(ur10_robot))
    np.testing.assert_array_equal(problem.constraints(X), 2.0 * base.constraints(X))
    J = problem.jacobian(X)
    np.testing.assert_array_equal(J, _forward_differences(problem.constraints, X))
    rows, _ = problem.jacobianstructure()
    assert len(rows) == J.size


def test_problem_jacobian_override_gets_a_dense_structure(ur10_robot):
    """A 1.0.2-style dense (m, n) jacobian override: the declared structure has m·n entries,
    so cyipopt receives as many values as it expects."""
    from figaroh.tools.robotipopt import _CyipoptAdapter

    class Dense(BaseTrajectoryIPOPTProblem):
        def jacobian(self, X):
            return np.ones((len(self.get_constraint_bounds()[0]), self.n_vars))

    opt = _design(ur10_robot, _with_problem(Dense))
    problem, X = _problem(opt)
    m = len(problem.get_constraint_bounds()[0])
    adapter = _CyipoptAdapter(problem, False, m, X.size)
    rows, cols = adapter.jacobianstructure()
    assert len(rows) == len(cols) == adapter.jacobian(X).size == m * X.size


def test_is_feasible_override_decides_the_accepted_point(ur10_robot):
    """1.0.2 accepted an iteration-limit stop only if _is_feasible; here every candidate
    point (IPOPT's final point, iterates, initial guess) goes through it."""
    seen = []

    class Never(BaseTrajectoryIPOPTProblem):
        def _is_feasible(self, X, tol=1e-4):
            seen.append(np.asarray(X).copy())
            return False

    opt = _design(ur10_robot, _with_problem(Never))
    problem, X = _problem(opt)
    results = {
        "obj_val": 1.0,
        "x_opt": X,
        "iterates": [{"inf_pr": 0.0, "obj_val": 2.0, "iteration": 3, "x": X + 0.01}],
    }
    x, reason = problem._select_iterate(results)
    assert x is None and "none of 2 candidate points" in reason
    assert len(seen) == 3
    np.testing.assert_array_equal(seen[0], X)
    np.testing.assert_array_equal(seen[-1], problem._x0)


def test_private_solve_steps_are_the_overrides(ur10_robot):
    """_generate_feasible_initial_guess, _limit_waypoint_steps and _prepare_next_segment
    overrides are used by solve() (a stub problem stands for IPOPT)."""
    pytest.importorskip("cyipopt")
    calls = []

    class Stub:
        def __init__(self, opt, tps, vel, acc):
            self.opt, self.tps, self.vel, self.acc = opt, tps, vel, acc

        def solve_with_waypoints(self, wps):
            calls.append(("solve", wps.copy()))
            t, q, v, a, _ = self.opt._segment_trajectory(self.tps, wps, self.vel, self.acc)
            return True, {
                "t_f": t,
                "p_f": q,
                "v_f": v,
                "a_f": a,
                "iter_data": {},
                "final_waypoint": wps[:, -1],
            }

    class Design(BaseOptimalTrajectory):
        def create_ipopt_problem(self, n_joints, n_wps, Ns, tps, vel_wps, acc_wps, *rest):
            return Stub(self, tps, vel_wps, acc_wps)

        def _limit_waypoint_steps(self, wps):
            calls.append(("limit",))
            return super()._limit_waypoint_steps(wps)

        def _generate_feasible_initial_guess(self, wp_init, vel_wp_init, acc_wp_init):
            calls.append(("guess", np.asarray(wp_init).copy()))
            return super()._generate_feasible_initial_guess(wp_init, vel_wp_init, acc_wp_init)

        def _prepare_next_segment(self):
            wp, W = super()._prepare_next_segment()
            calls.append(("next", wp.copy()))
            return wp + 0.001, W

    opt = _design(ur10_robot, Design)
    res = opt.solve(stack_reps=2, verbose=False)
    kinds = [c[0] for c in calls]
    assert kinds.count("guess") == 2 and kinds.count("solve") == 2 and kinds.count("next") == 1
    assert "limit" in kinds
    guesses = [c[1] for c in calls if c[0] == "guess"]
    nxt = [c[1] for c in calls if c[0] == "next"][0]
    np.testing.assert_allclose(guesses[1], nxt + 0.001)  # the override's value is used
    solved = [c[1] for c in calls if c[0] == "solve"]
    np.testing.assert_allclose(solved[1][:, 0], nxt + 0.001)
    assert len(res["P_F"]) == 2


@pytest.fixture(scope="module")
def ur10_geom(ur10_urdf):
    from figaroh.tools.robot import Robot

    return Robot(str(ur10_urdf))


def test_collision_hooks_of_the_constraint_manager(ur10_geom):
    """_evaluate_collision_constraints and clipped_distances overrides: the collision rows
    of the IPOPT problem are theirs (1.0.2 evaluated them through evaluate_constraints)."""

    class Offset(TrajectoryConstraintManager):
        def _evaluate_collision_constraints(self, p_f, tps, t_f):
            return super()._evaluate_collision_constraints(p_f, tps, t_f) - 0.25

    class Farther(TrajectoryConstraintManager):
        def clipped_distances(self, q):
            return super().clipped_distances(q) + 0.002

    for manager in (Offset, Farther):

        class Design(BaseOptimalTrajectory):
            def initialize(self, manager=manager):
                super().initialize()
                self.constraint_manager = manager(
                    self.robot, self.CB, self.trajectory_config, self.identif_config
                )

        opt = _design(ur10_geom, Design, collision_hull_chunks=1, collision_checks_per_interval=2)
        cm = opt.constraint_manager
        assert cm.n_pairs > 0
        problem, X = _problem(opt)
        g = problem.constraints(X)
        rows = g[-cm.block_sizes()["collision"] :]
        cb = {}
        opt.objective_function(
            X, cb, problem.tps, problem.vel_wps, problem.acc_wps, problem.wp_init
        )
        base = TrajectoryConstraintManager(
            opt.robot, opt.CB, opt.trajectory_config, opt.identif_config
        )
        plain = base._evaluate_collision_constraints(cb["p_f"], problem.tps, cb["t_f"].ravel())
        assert base.n_pairs == cm.n_pairs
        expected = plain - 0.25 if manager is Offset else plain + 0.002
        # (GJK warm starts make repeated distance queries agree to ~1e-7 m)
        np.testing.assert_allclose(rows, expected.ravel(), atol=1e-6)


# ---------------------------------------------------------------------------
# Detmax and the optimal calibration workflow
# ---------------------------------------------------------------------------


def _pool(seed=2, n=10, p=3):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, 2, p))
    return {i: rows[i].T @ rows[i] for i in range(n)}


def test_detmax_exchange_uses_the_get_critd_override():
    """A criterion that prefers large keys: the exchange ends on the largest keys, and the
    history holds the override's values."""

    class LargestKeys(Detmax):
        def get_critD(self, set):  # noqa: A002 - the 1.0.2 parameter name
            super().get_critD(set)  # membership check
            return float(sum(set))

    dm = LargestKeys(_pool(), 4, seed=0)
    history = dm.main_algo()
    assert sorted(dm.cur_set) == [6, 7, 8, 9]
    assert history[-1] == 30.0 and history == sorted(history)
    plain = Detmax(_pool(), 4, seed=0)
    plain.main_algo()
    assert plain.opt_critD[-1] == pytest.approx(plain.get_critD(plain.cur_set))


@pytest.fixture(scope="module")
def pool_file(tmp_path_factory):
    import yaml

    rng = np.random.default_rng(5)
    pool = rng.uniform(-np.pi, np.pi, (30, 6))
    pool[:, 2] = rng.uniform(-2.5, 2.5, 30)
    path = tmp_path_factory.mktemp("pool") / "ur10_pool.yaml"
    doc = {"calibration_joint_names": JOINTS, "calibration_joint_configurations": pool.tolist()}
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _calibration(robot, pool_file, cls=BaseOptimalCalibration):
    opt = cls(robot, str(CONFIG))
    opt.set_candidate_file(pool_file)
    return opt


def test_load_param_override_is_used_by_the_constructor(ur10_robot):
    class Tagged(BaseOptimalCalibration):
        def load_param(self, config_file, setting_type="calibration"):
            super().load_param(config_file, setting_type)
            self.calib_config["tag"] = setting_type

    assert Tagged(ur10_robot, str(CONFIG)).calib_config["tag"] == "calibration"


def test_rearrange_rb_override_defines_the_information_matrices(ur10_robot, pool_file):
    """Rows of candidate 0 zeroed by the override: its information matrix is zero and the
    design does not select it."""

    class WithoutFirst(BaseOptimalCalibration):
        def rearrange_rb(self, R_b, calib_config):
            R = np.array(super().rearrange_rb(R_b, calib_config))
            R[: calib_config["calibration_index"]] = 0.0
            return R

    opt = _calibration(ur10_robot, pool_file, WithoutFirst)
    opt.solve(plotting=False)
    assert not np.any(opt._subX_dict[0]) and 0 not in opt.chosen_indices
    assert opt.w_list[0] < 1e-6


def test_sub_info_matrix_override_defines_the_design(ur10_robot, pool_file):
    class Emphasised(BaseOptimalCalibration):
        def sub_info_matrix(self, R, calib_config):
            subX_list, subX_dict = super().sub_info_matrix(R, calib_config)
            subX_dict = {k: (3.0 * X if k == 3 else X) for k, X in subX_dict.items()}
            return [subX_dict[k] for k in sorted(subX_dict)], subX_dict

    opt = _calibration(ur10_robot, pool_file, Emphasised)
    opt.solve(plotting=False)
    assert next(iter(opt.w_dict_sort)) == 3  # candidate 3 now carries the largest weight
    plain = _calibration(ur10_robot, pool_file)
    plain.solve(plotting=False)
    assert next(iter(plain.w_dict_sort)) != 3


def test_calculate_regressor_override_is_called_where_1_0_2_calls_it(ur10_robot, pool_file):
    """initialize → calculate_regressor, calculate_detroot_whole (recomputes it), and
    calculate_optimal_configurations (recomputes it again)."""

    class Counted(BaseOptimalCalibration):
        calls = 0

        def calculate_regressor(self):
            Counted.calls += 1
            return super().calculate_regressor()

    opt = _calibration(ur10_robot, pool_file, Counted)
    opt.initialize()
    assert Counted.calls == 2
    opt.calculate_optimal_configurations()
    assert Counted.calls == 3


def test_workflow_overrides_are_called_by_solve(ur10_robot, pool_file, tmp_path):
    """solve(save_file=True) → calculate_optimal_configurations, save_results (whose default
    folder is get_optimal_output_dir()), plot; calculate_detroot_whole's value is reported."""
    calls = []

    class Recorded(BaseOptimalCalibration):
        def calculate_detroot_whole(self):
            calls.append("detroot")
            super().calculate_detroot_whole()
            self.detroot_whole = 42.0
            return self.detroot_whole

        def calculate_optimal_configurations(self, selection_method="threshold", **kw):
            calls.append(("select", selection_method, kw))
            return super().calculate_optimal_configurations(selection_method, **kw)

        def get_optimal_output_dir(self, default="results"):
            calls.append("output_dir")
            return str(tmp_path / "chosen")

        def save_results(self, output_dir=None):
            calls.append("save")
            return super().save_results(output_dir)

        def plot(self, show=None, save_path=None):
            calls.append("plot")
            return True

    opt = _calibration(ur10_robot, pool_file, Recorded)
    opt.solve(save_file=True, selection_method="iroc", iroc_patience=2)
    assert calls == [
        "detroot",
        ("select", "iroc", {"iroc_patience": 2}),
        "save",
        "output_dir",
        "plot",
    ]
    assert opt.results_data["detroot_whole"] == 42.0
    assert any(
        p.name.endswith("_optimal_configurations.yaml") for p in (tmp_path / "chosen").iterdir()
    )
