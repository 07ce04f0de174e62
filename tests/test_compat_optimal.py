"""figaroh 1.0.2 compatibility of the optimal-design modules.

Call-compatible signatures (checked against the recorded 1.0.2 surface), the
compatibility re-exports (same objects as their home modules, resolved lazily
so that importing stays cheap), the methods 1.0.2 scripts call, and the two
subclass hooks of the workflows (``BaseOptimalCalibration.load_candidate_configurations``
and ``BaseOptimalTrajectory.create_ipopt_problem``).

Independent truths: explicit per-posture sums ``Σ R_iᵀR_i``, index
bookkeeping of the row layout, a plain picos model of the relaxation built
here, the D-optimal design of a reduced pool, the model's joint limits, and
the trajectory recomputed from the spline.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from figaroh.optimal import base_optimal_calibration as boc
from figaroh.optimal.base_optimal_calibration import (
    EPS_OPT,
    BaseOptimalCalibration,
    Detmax,
    SOCPOptimizer,
    detroot,
)

ROOT = Path(__file__).resolve().parents[1]
UR10_CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
SURFACE = ROOT.parent / "shared" / "compat" / "figaroh-1.0.2-surface.json"
SURFACE_PY = ROOT.parent / "shared" / "compat" / "surface.py"
UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]
MODULES = (
    "figaroh.optimal",
    "figaroh.optimal.base_optimal_calibration",
    "figaroh.optimal.base_optimal_trajectory",
    "figaroh.optimal.base_parameter",
    "figaroh.optimal.config",
    "figaroh.optimal.contraints",
    "figaroh.utils.cubic_spline",
    "figaroh.tools.robotipopt",
)
# names whose parameter lists other modules define (renamed there, not here)
FOREIGN = {
    "calculate_base_kinematics_regressor",
    "load_data",
    "unified_to_legacy_config",
    "require_unified_config",
    "is_unified_config",
    "create_task_config",
    "unified_to_legacy_identif_config",
}


# ---------------------------------------------------------------------------
# surface and imports
# ---------------------------------------------------------------------------


def _surface_checker():
    if not SURFACE.is_file() or not SURFACE_PY.is_file():
        pytest.skip("../shared/compat (figaroh 1.0.2 surface) not available")
    spec = importlib.util.spec_from_file_location("figaroh_surface_check", SURFACE_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, json.loads(SURFACE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("modname", MODULES)
def test_optimal_modules_match_the_102_surface(modname):
    """Every 1.0.2 name is importable from the same module, call-compatibly."""
    surface, expected = _surface_checker()
    mod = importlib.import_module(modname)
    problems = []
    for name, want in expected[modname].items():
        obj = getattr(mod, name, None)
        if obj is None:
            problems.append(f"missing {name}")
            continue
        home = want["defined_in"]
        if home != modname and not home.startswith("figaroh.optimal") and name in FOREIGN:
            # re-export of a function another module defines: same object as there
            assert obj is getattr(importlib.import_module(home), name)
            continue
        if want["kind"] == "constant":
            if (
                want["type"] in ("bool", "int", "float", "str")
                and type(obj).__name__ != want["type"]
            ):
                problems.append(f"{name}: a {type(obj).__name__}, expected a {want['type']}")
        elif want["kind"] == "function":
            why = surface.incompatible(surface._params(obj), want["params"])
            if why:
                problems.append(f"{name}: {why}")
        else:
            for meth, params in want["methods"].items():
                if not hasattr(obj, meth):
                    problems.append(f"{name}.{meth} missing")
                elif params not in (None, "property"):
                    why = surface.incompatible(surface._params(getattr(obj, meth)), params)
                    if why:
                        problems.append(f"{name}.{meth}: {why}")
    assert problems == []


def test_reexports_are_cheap_acyclic_and_the_same_objects():
    """Each optimal module imports first, with no figaroh module loaded (no import cycle),
    without loading a solver or plotting library; each re-export is the defining module's
    object."""
    code = (
        "import sys, importlib\n"
        f"for name in {MODULES!r}:\n"
        "    for m in [m for m in sys.modules if m.split('.')[0] == 'figaroh']:\n"
        "        del sys.modules[m]\n"
        "    importlib.import_module(name)\n"
        "heavy = ('picos', 'cvxopt', 'cyipopt', 'matplotlib', 'mujoco', 'meshcat', 'viser')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    from figaroh.calibration import calibration_tools, config, data_loader
    from figaroh.identification import config as identification_config
    from figaroh.optimal import base_optimal_trajectory as bot
    from figaroh.optimal import base_parameter as bp
    from figaroh.optimal import config as oc
    from figaroh.optimal import contraints
    from figaroh.tools import qrdecomposition, regressor, robotcollisions
    from figaroh.utils import config_parser, cubic_spline, results_manager

    pairs = [
        (boc.ResultsManager, results_manager.ResultsManager),
        (boc.plot_with_fallback, results_manager.plot_with_fallback),
        (boc.UnifiedConfigParser, config_parser.UnifiedConfigParser),
        (boc.create_task_config, config_parser.create_task_config),
        (boc.is_unified_config, config_parser.is_unified_config),
        (boc.require_unified_config, config_parser.require_unified_config),
        (boc.load_data, data_loader.load_data),
        (boc.unified_to_legacy_config, config.unified_to_legacy_config),
        (
            boc.calculate_base_kinematics_regressor,
            calibration_tools.calculate_base_kinematics_regressor,
        ),
        (bot.ResultsManager, results_manager.ResultsManager),
        (bot.plot_with_fallback, results_manager.plot_with_fallback),
        (bot.build_baseRegressor, qrdecomposition.build_baseRegressor),
        (bot.build_regressor_reduced, regressor.build_regressor_reduced),
        (bp.CubicSpline, cubic_spline.CubicSpline),
        (bp.build_regressor_reduced, regressor.build_regressor_reduced),
        (oc.UnifiedConfigParser, config_parser.UnifiedConfigParser),
        (oc.create_task_config, config_parser.create_task_config),
        (oc.require_unified_config, config_parser.require_unified_config),
        (
            oc.unified_to_legacy_identif_config,
            identification_config.unified_to_legacy_identif_config,
        ),
        (contraints.calc_torque, cubic_spline.calc_torque),
        (contraints.add_non_adjacent_pairs, robotcollisions.add_non_adjacent_pairs),
    ]
    for ours, home in pairs:
        assert ours is home
    for module in (boc, bot, bp, oc, contraints):
        for name in module.__all__:
            assert getattr(module, name) is not None
        assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = boc.not_a_name


# ---------------------------------------------------------------------------
# BaseOptimalCalibration on a UR10 candidate pool
# ---------------------------------------------------------------------------


def _write_pool(path: Path, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pool = rng.uniform(-np.pi, np.pi, (n, 6))
    pool[:, 2] = rng.uniform(-2.5, 2.5, n)
    path.write_text(
        yaml.safe_dump(
            {
                "calibration_joint_names": UR10_JOINTS,
                "calibration_joint_configurations": pool.tolist(),
            }
        ),
        encoding="utf-8",
    )
    return pool


@pytest.fixture(scope="module")
def pool_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pool") / "ur10_pool.yaml"
    _write_pool(path, 30, seed=5)
    return path


@pytest.fixture(scope="module")
def solved(ur10_robot, pool_file):
    opt = BaseOptimalCalibration(ur10_robot, str(UR10_CONFIG))
    opt.set_candidate_file(pool_file)
    opt.initialize()
    opt.solve(selection_method="threshold", plotting=False)
    return opt


def test_rearrange_rb_layout_round_trips(solved):
    """Row ``i·c + j`` of R_rearr is component ``j`` of posture ``i`` (row ``j·n + i`` of R_b);
    the inverse permutation restores R_b."""
    cfg = solved.calib_config
    n, c = cfg["NbSample"], cfg["calibration_index"]
    R_b = solved.R_b
    R = solved.rearrange_rb(R_b, cfg)
    np.testing.assert_array_equal(R, solved.R_rearr)
    for i in range(n):
        for j in range(c):
            np.testing.assert_array_equal(R[i * c + j], R_b[j * n + i])
    inverse = np.empty_like(R_b)
    for row in range(n * c):
        i, j = divmod(row, c)
        inverse[j * n + i] = R[row]
    np.testing.assert_array_equal(inverse, R_b)
    assert R.shape == (n * c, len(solved.base_param_names))
    # R_b is the regressor figaroh 1.0.2 uses: calculate_base_kinematics_regressor at the
    # candidates, on a copy of the configuration
    from figaroh.calibration.calibration_tools import calculate_base_kinematics_regressor

    copy_cfg = dict(cfg, param_name=[])
    _, R_ref, _, _, _ = calculate_base_kinematics_regressor(
        solved.q_measured, solved.model, solved.data, copy_cfg
    )
    assert copy_cfg["base_mapping_row_names"] == solved.base_param_names
    np.testing.assert_allclose(R_b, R_ref, rtol=0, atol=1e-12)


def test_sub_info_matrix_sums_to_the_information_of_the_selected_rows(solved):
    cfg = solved.calib_config
    c = cfg["calibration_index"]
    R = solved.R_rearr
    lst, dct = solved.sub_info_matrix(R, cfg)
    assert list(dct) == list(range(cfg["NbSample"]))
    for i in (0, 7, cfg["NbSample"] - 1):
        Ri = R[i * c : (i + 1) * c]
        np.testing.assert_allclose(dct[i], Ri.T @ Ri, rtol=1e-12, atol=1e-12)
    chosen = solved.chosen_indices
    rows = [i * c + j for i in chosen for j in range(c)]
    np.testing.assert_allclose(
        sum(dct[i] for i in chosen), R[rows].T @ R[rows], rtol=1e-10, atol=1e-10
    )
    # the workflow stores exactly what the method returns
    for a, b in zip(lst, solved._subX_list, strict=True):
        np.testing.assert_array_equal(a, b)


def test_count_optimal_configurations(solved, ur10_robot, pool_file):
    w = np.asarray(solved.w_list)
    assert solved.count_optimal_configurations() == int(np.sum(w > 1e-5))
    assert solved.count_optimal_configurations() == solved.nb_chosen  # threshold selection
    iroc = BaseOptimalCalibration(ur10_robot, str(UR10_CONFIG))
    iroc.set_candidate_file(pool_file)
    with pytest.raises(AssertionError, match="no SOCP weights"):
        iroc.count_optimal_configurations()
    iroc.initialize()
    iroc.solve(selection_method="iroc", plotting=False)
    assert iroc.count_optimal_configurations() == int(np.sum(np.asarray(iroc.w_list) > EPS_OPT))
    assert iroc.count_optimal_configurations() >= iroc.nb_chosen


def _config_with_output(tmp_path: Path, output: dict | None) -> Path:
    cfg = yaml.safe_load(UR10_CONFIG.read_text(encoding="utf-8"))
    cfg["extends"] = str(UR10_CONFIG.parent / cfg["extends"])
    if output is not None:
        cfg["tasks"]["optimal_configuration"] = {"enabled": True, "output": output}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def test_get_optimal_output_dir_and_save_results_default(
    ur10_robot, pool_file, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    cases = [
        ({"output_file": "data/optimal_configs/ur10.yaml"}, "data/optimal_configs"),
        ({"output_dir": "out/sel", "output_file": "x/y.yaml"}, "out/sel"),
        ({"save_configurations": True}, "results"),
        (None, "results"),
    ]
    for output, expected in cases:
        cfg = _config_with_output(tmp_path, output)
        opt = BaseOptimalCalibration(ur10_robot, str(cfg))
        assert opt.get_optimal_output_dir() == expected
        if output is None:
            assert opt.get_optimal_output_dir("elsewhere") == "elsewhere"
    opt = BaseOptimalCalibration(ur10_robot, str(_config_with_output(tmp_path, cases[0][0])))
    assert opt.save_results() is None  # nothing solved yet
    opt.set_candidate_file(pool_file)
    opt.solve(plotting=False)
    files = opt.save_results()
    written = Path(files["configurations"])
    assert written.parent.resolve() == (tmp_path / "data" / "optimal_configs").resolve()
    back = yaml.safe_load(written.read_text(encoding="utf-8"))
    np.testing.assert_allclose(
        back["calibration_joint_configurations"],
        opt.optimal_configurations["calibration_joint_configurations"],
    )


# ---------------------------------------------------------------------------
# SOCPOptimizer hooks and Detmax
# ---------------------------------------------------------------------------


def _pool(seed: int = 2, n: int = 12, p: int = 3):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, 2, p))
    return {i: rows[i].T @ rows[i] for i in range(n)}


def test_socp_first_attempt_is_the_plain_picos_relaxation():
    """Default weights equal those of an independently built picos model (the 1.0.2
    formulation: Σ w_i X_i, unscaled, picos' default CVXOPT options)."""
    picos = pytest.importorskip("picos")
    X = _pool()
    N = len(X)
    w_list, w_sort = SOCPOptimizer(X, {"NbSample": N}).solve()
    prob = picos.Problem()
    w = picos.RealVariable("w", N, lower=0)
    t = picos.RealVariable("t", 1)
    prob.add_constraint((1 | w) <= 1)
    prob.add_constraint(t <= picos.DetRootN(picos.sum(w[i] * X[i] for i in range(N))))
    prob.set_objective("max", t)
    prob.solve(solver="cvxopt")
    np.testing.assert_allclose(w_list, np.asarray(w.value).ravel(), atol=1e-9)
    assert list(w_sort.values()) == sorted(w_list, reverse=True)
    normalised, _ = SOCPOptimizer(X, {}, normalize_weights=True).solve()
    assert sum(normalised) == pytest.approx(1.0, abs=1e-13) and min(normalised) >= 0.0


def test_socp_add_constraints_and_set_objective_hooks():
    """An override that excludes the best candidate gives the D-optimal design of the
    pool without it; both hooks run once per attempt, in order."""
    pytest.importorskip("picos")
    X = _pool()
    base_w, base_sort = SOCPOptimizer(X, {}).solve()
    best = next(iter(base_sort))
    calls = []

    class Excluding(SOCPOptimizer):
        def add_constraints(self):
            calls.append("constraints")
            super().add_constraints()
            self.problem.add_constraint(self.w_var[best] == 0)

        def set_objective(self):
            calls.append("objective")
            super().set_objective()

    socp = Excluding(X, {})
    w_excl, _ = socp.solve()
    assert calls == ["constraints", "objective"]
    assert abs(w_excl[best]) < 1e-7
    reduced = {k: v for k, v in X.items() if k != best}
    w_red, _ = SOCPOptimizer(reduced, {}).solve()
    np.testing.assert_allclose([w_excl[k] for k in reduced], w_red, atol=1e-5)
    M_base = sum(w * X[i] for i, w in enumerate(base_w))
    assert socp.t_opt < detroot(M_base)


def test_detmax_get_critd_keyword_set():
    X = _pool(n=8)
    dm = Detmax(X, 4, seed=0)
    subset = [0, 2, 5]
    assert dm.get_critD(set=subset) == pytest.approx(
        np.linalg.det(sum(X[i] for i in subset)) ** (1 / 3), rel=1e-12
    )
    with pytest.raises(AssertionError, match="not in the pool"):
        dm.get_critD([0, 99])


# ---------------------------------------------------------------------------
# hook: load_candidate_configurations
# ---------------------------------------------------------------------------


def test_candidate_loader_override_defines_the_pool(ur10_robot, pool_file):
    """A loader returning a fixed pool of 9 postures: the selection indexes that pool,
    the selected postures are its rows, and the result differs from the file's pool."""
    rng = np.random.default_rng(11)
    fixed = rng.uniform(-2.5, 2.5, (9, 6))

    class FixedPool(BaseOptimalCalibration):
        calls = 0

        def load_candidate_configurations(self):
            FixedPool.calls += 1
            self.q_measured = fixed.copy()
            self.calib_config["NbSample"] = len(fixed)
            self._configs = {
                "calibration_joint_names": UR10_JOINTS,
                "calibration_joint_configurations": fixed.tolist(),
            }

    opt = FixedPool(ur10_robot, str(UR10_CONFIG))
    opt.set_candidate_file(pool_file)  # ignored by the override
    opt.solve(plotting=False)
    assert FixedPool.calls == 1
    cfg = opt.calib_config
    assert cfg["NbSample"] == 9 and opt.R_rearr.shape[0] == 9 * cfg["calibration_index"]
    assert set(opt.chosen_indices) <= set(range(9)) and len(opt.w_list) == 9
    np.testing.assert_array_equal(
        opt.optimal_configurations["calibration_joint_configurations"],
        fixed[opt.chosen_indices],
    )
    plain = BaseOptimalCalibration(ur10_robot, str(UR10_CONFIG))
    plain.set_candidate_file(pool_file)
    plain.solve(plotting=False)
    assert len(plain.w_list) == 30


def test_candidate_loader_override_setting_only_q_measured(ur10_robot, caplog):
    """1.0.2-style override that sets q_measured (a list) but not NbSample nor _configs."""
    rng = np.random.default_rng(4)
    fixed = rng.uniform(-2.5, 2.5, (10, 6))

    class Minimal(BaseOptimalCalibration):
        def load_candidate_configurations(self):
            self.q_measured = fixed.tolist()

    opt = Minimal(ur10_robot, str(UR10_CONFIG))
    opt.initialize()
    assert opt.calib_config["NbSample"] == 10
    assert "q_measured holds 10 candidates" in caplog.text
    opt.calculate_optimal_configurations()
    chosen_rows = opt.optimal_configurations["calibration_joint_configurations"]
    np.testing.assert_array_equal(chosen_rows, fixed[opt.chosen_indices])


def test_csv_candidates_from_a_subclass_data_path(ur10_robot, shared_data, tmp_path):
    """1.0.2: with a CSV candidate file, a subclass's ``_data_path`` is read by load_data."""
    from figaroh.calibration.data_loader import load_data

    csv = shared_data / "ur10" / "calibration.csv"
    if not csv.is_file():
        pytest.skip("ur10/calibration.csv not in the shared data")

    class FromData(BaseOptimalCalibration):
        def __init__(self, robot, config_file):
            super().__init__(robot, config_file)
            self._data_path = str(csv)

    opt = FromData(ur10_robot, str(UR10_CONFIG))
    opt.set_candidate_file(tmp_path / "candidates.csv")
    opt.load_candidate_configurations()
    cfg = dict(opt.calib_config)
    _, q = load_data(str(csv), opt.model, cfg)
    np.testing.assert_array_equal(opt.q_measured, q)
    assert opt.calib_config["NbSample"] == len(q)


# ---------------------------------------------------------------------------
# trajectory side
# ---------------------------------------------------------------------------


def test_check_repeat_wp_is_an_instance_method(ur10_robot):
    import inspect

    from figaroh.utils.cubic_spline import WaypointsGeneration

    params = list(inspect.signature(WaypointsGeneration.check_repeat_wp).parameters)
    assert params == ["self", "wp_list"]
    wp = WaypointsGeneration(ur10_robot, 3, UR10_JOINTS)
    assert wp.check_repeat_wp(wp_list=[0.1, 0.2, 0.2]) is True
    assert wp.check_repeat_wp([0.1, 0.2, 0.1]) is False


def test_create_config_keyword():
    from figaroh.optimal.config import create_config

    cfg = create_config(unified_traj_config={"trajectory": {"waypoints": 4, "frequency": 50}})
    assert (cfg["n_wps"], cfg["freq"], cfg["t_s"]) == (4, 50, 2.0)
    with pytest.raises(ValueError, match="unified_traj_config"):
        create_config([1, 2])


@pytest.fixture(scope="module")
def small_traj(ur10_robot):
    """UR10 without collision geometry, 3 waypoints 1 s apart sampled at 10 Hz."""
    pytest.importorskip("cyipopt")
    from figaroh.optimal import BaseOptimalTrajectory

    opt = BaseOptimalTrajectory(ur10_robot, UR10_JOINTS, UR10_CONFIG, rng=7)
    # quintic step limit: with 1.0.2's cubic peak the clipped steps of a 1 s segment
    # reach 1.0125x the velocity limit and random draws are rarely feasible
    opt.trajectory_config.update(
        n_wps=3,
        t_s=1.0,
        freq=10,
        max_iterations=3,
        ipopt_print_level=0,
        cond_smoothing=0,
        step_limit_peak="quintic",
    )
    opt.initialize()
    return opt


def test_variable_bounds_are_the_softened_model_limits(small_traj):
    opt = small_traj
    cm = opt.constraint_manager
    model = opt.model
    s = opt.trajectory_config["soft_lim"]
    idx = [model.joints[model.getJointId(j)].idx_q for j in UR10_JOINTS]
    up, lo = model.upperPositionLimit[idx].copy(), model.lowerPositionLimit[idx].copy()
    up_soft = up - s * np.abs(up - lo)
    lo_soft = lo + s * np.abs(up_soft - lo)  # sequential rule: uses the reduced upper bound
    lower, upper = cm.get_variable_bounds()
    np.testing.assert_allclose(lower, np.tile(lo_soft, 2), rtol=1e-15)
    np.testing.assert_allclose(upper, np.tile(up_soft, 2), rtol=1e-15)
    tps = np.array([[0.0], [1.0], [2.0]])
    wps = np.zeros((6, 3))
    problem = opt.create_ipopt_problem(6, 3, 21, tps, wps, wps, wps[:, 0], None, None, None)
    assert problem.get_variable_bounds() == (lower, upper)


def test_evaluate_constraints_fills_opt_cb(small_traj):
    opt = small_traj
    tps = np.array([0.0, 1.0, 2.0])
    wps = np.array([[0.1, 0.5, -0.2]] * 6)
    vel = np.zeros((6, 3))
    X = wps[:, 1:].T.ravel()
    store: dict = {}
    g = opt.constraint_manager.evaluate_constraints(21, X, store, tps, vel, vel, wps[:, 0])
    reference: dict = {}
    opt.objective_function(X, reference, tps, vel, vel, wps[:, 0])
    assert set(store) == {"t_f", "p_f", "v_f", "a_f"}
    for key in store:
        np.testing.assert_array_equal(store[key], reference[key])
    np.testing.assert_array_equal(g[: X.size], X)  # first block: the free waypoints
    g_none = opt.constraint_manager.evaluate_constraints(21, X, None, tps, vel, vel, wps[:, 0])
    np.testing.assert_array_equal(g, g_none)


def test_create_ipopt_problem_hook_result_is_used(small_traj):
    """An override returning a 1.0.2-style custom problem: called once per segment with
    the workflow's arguments, and its results become the segment."""
    from figaroh.optimal import BaseOptimalTrajectory

    base = small_traj
    captured = []

    class FixedProblem:
        def __init__(self, opt, args):
            self.opt, self.args = opt, args

        def solve_with_waypoints(self, wps):
            tps, vel, acc = self.args["tps"], self.args["vel_wps"], self.args["acc_wps"]
            t, q, v, a = self.opt.CB.get_full_config(10, tps, wps, vel, acc)
            self.returned = {
                "t_f": t,
                "p_f": q,
                "v_f": v,
                "a_f": a,
                "iter_data": {"iterations": [0], "obj_values": [1.0], "tag": "custom"},
            }
            self.wps = wps
            return True, self.returned

    class Custom(BaseOptimalTrajectory):
        def create_ipopt_problem(
            self, n_joints, n_wps, Ns, tps, vel_wps, acc_wps, wp_init, vel_wp_init,
            acc_wp_init, W_stack,
        ):  # fmt: skip
            args = dict(
                n_joints=n_joints, n_wps=n_wps, Ns=Ns, tps=tps, vel_wps=vel_wps,
                acc_wps=acc_wps, wp_init=wp_init, W_stack=W_stack,
            )  # fmt: skip
            captured.append(FixedProblem(self, args))
            return captured[-1]

    opt = Custom(base.robot, UR10_JOINTS, UR10_CONFIG, rng=7)
    opt.trajectory_config.update(base.trajectory_config)
    opt.initialize()
    res = opt.solve(stack_reps=2)
    assert len(captured) == 2 and len(res["P_F"]) == 2
    for s, problem in enumerate(captured):
        a = problem.args
        assert (a["n_joints"], a["n_wps"], a["Ns"]) == (6, 3, 21)
        np.testing.assert_allclose(np.ravel(a["tps"]), [s, s + 1.0, s + 2.0])  # s·t_s offset
        np.testing.assert_array_equal(problem.wps[:, 0], a["wp_init"])
        assert res["P_F"][s] is problem.returned["p_f"]
        assert res["iteration_data"][s]["tag"] == "custom"
    assert captured[0].args["W_stack"] is None
    # segment 2 starts at segment 1's last sample and stacks segment 1's base regressor
    np.testing.assert_allclose(
        captured[1].args["wp_init"], res["P_F"][0][-1, opt.CB.act_idxq], atol=1e-12
    )
    W1 = opt._stack_base_regressors(res["P_F"][0], res["V_F"][0], res["A_F"][0])
    np.testing.assert_allclose(captured[1].args["W_stack"], W1)


def test_create_ipopt_problem_override_bounds_are_solved(small_traj):
    """A BaseTrajectoryIPOPTProblem subclass with a narrow box on the free waypoints:
    IPOPT (3 iterations) returns waypoints inside that box."""
    from figaroh.optimal import BaseOptimalTrajectory, BaseTrajectoryIPOPTProblem

    base = small_traj
    boxes = []

    class Boxed(BaseTrajectoryIPOPTProblem):
        def get_variable_bounds(self):
            lower, upper = (np.asarray(b) for b in super().get_variable_bounds())
            centre = np.clip(np.tile(self.wp_init, self.n_wps - 1) + 0.3, lower, upper - 0.1)
            box = (np.maximum(lower, centre - 0.05), np.minimum(upper, centre + 0.05))
            boxes.append(box)
            return box[0].tolist(), box[1].tolist()

    class Custom(BaseOptimalTrajectory):
        def create_ipopt_problem(self, *args):
            return Boxed(self, *args, problem_name="Boxed")

    opt = Custom(base.robot, UR10_JOINTS, UR10_CONFIG, rng=7)
    opt.trajectory_config.update(base.trajectory_config)
    opt.initialize()
    res = opt.solve(stack_reps=1)
    assert res["P_F"], res["failures"]
    lower, upper = boxes[-1]
    x = res["waypoints"][0][:, 1:].T.ravel()
    assert np.all(x >= lower - 1e-8) and np.all(x <= upper + 1e-8)
    # the plain workflow with the same seed (same initial guess) is not confined to the box
    x_plain = base.solve(stack_reps=1)["waypoints"][0][:, 1:].T.ravel()
    assert np.any(x_plain < lower - 1e-3) or np.any(x_plain > upper + 1e-3)
