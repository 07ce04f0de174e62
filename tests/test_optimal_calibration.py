"""Optimal calibration posture selection (``figaroh.optimal.base_optimal_calibration``).

Truths used: the D-optimality figures of 200 seeded random subsets of the
same size, the Kiefer–Wolfowitz equivalence theorem (at the D-optimal
weights ``tr(M⁻¹X_i) ≤ n_p`` with equality on the support), the stacked
regressor of ``calibration_tools.calculate_base_kinematics_regressor``,
algebraic identities of the rearrangement, and file round trips.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import load_example
from figaroh.calibration import calibration_tools as ct
from figaroh.optimal.base_optimal_calibration import (
    EPS_OPT,
    BaseOptimalCalibration,
    Detmax,
    InfeasibleDesignError,
    SOCPOptimizer,
    detroot,
    log_det_information,
    rearrange_rb,
    sub_info_matrix,
)

ROOT = Path(__file__).resolve().parents[1]
UR10_CONFIG = ROOT / "config" / "ur10_unified_config.yaml"


@pytest.fixture(scope="module")
def tiago_example():
    return load_example("tiago/optimal_config.py", "tiago_optimal_config_example")


@pytest.fixture(scope="module")
def tiago_opt(shared_data, tiago_example):
    opt = tiago_example.make_optimizer(shared_data)
    opt.initialize()
    opt.calculate_optimal_configurations("threshold")
    return opt


@pytest.fixture(scope="module")
def ur10_example():
    return load_example("ur10/optimal_config.py", "ur10_optimal_config_example")


@pytest.fixture()
def ur10_opt(ur10_urdf, ur10_example):
    return ur10_example.make_optimizer(ur10_urdf, UR10_CONFIG, n_candidates=40, seed=1)


# ---------------------------------------------------------------------------
# TIAGo candidate pool (real data)
# ---------------------------------------------------------------------------


def test_tiago_chosen_subset_beats_random_subsets(tiago_opt):
    X = np.asarray(tiago_opt._subX_list)
    chosen = tiago_opt.chosen_indices
    k = len(chosen)
    assert tiago_opt.results_data["feasible"] is True
    assert len(X) == 500 and k >= tiago_opt.minNbChosen
    chosen_ld = np.linalg.slogdet(X[chosen].sum(axis=0))
    assert chosen_ld.sign > 0
    rng = np.random.default_rng(20240607)
    subsets = np.array([rng.choice(len(X), size=k, replace=False) for _ in range(200)])
    signs, lds = np.linalg.slogdet(X[subsets].sum(axis=1))
    lds = np.where(signs > 0, lds, -np.inf)
    best, median = float(lds.max()), float(np.median(lds))
    print(
        f"\nTIAGo optimal postures: {k} chosen of 500; log det chosen {chosen_ld.logabsdet:.4f}, "
        f"best of 200 random {best:.4f}, median random {median:.4f}"
    )
    assert chosen_ld.logabsdet >= best - 0.05 * abs(best)
    assert tiago_opt.results_data["log_det_information"] == pytest.approx(chosen_ld.logabsdet)
    assert log_det_information(tiago_opt._subX_dict, chosen) == pytest.approx(chosen_ld.logabsdet)


def test_tiago_socp_weights_are_d_optimal(tiago_opt):
    w = np.asarray(tiago_opt.w_list)
    assert w.shape == (500,)
    assert np.all(w >= 0.0)
    # the solver's own weights (kept as returned, as figaroh 1.0.2) sum to 1 up to its
    # tolerance: the optimum lies on the simplex face
    assert w.sum() == pytest.approx(1.0, abs=1e-6)
    assert tiago_opt.socp.raw_weight_sum == pytest.approx(w.sum(), abs=1e-15)
    # Kiefer–Wolfowitz: d_i = tr(M(w)^-1 X_i) <= n_p everywhere, = n_p on the support
    X = np.asarray(tiago_opt._subX_list)
    n_p = X.shape[1]
    M = np.einsum("i,ijk->jk", w, X)
    d = np.einsum("jk,ikj->i", np.linalg.inv(M), X)
    assert d.max() <= n_p * (1 + 1e-4)
    support = w > 1e-3
    assert support.sum() >= 2
    np.testing.assert_allclose(d[support], n_p, rtol=1e-3)
    # w_dict_sort is the same weights in descending order
    ws = list(tiago_opt.w_dict_sort.values())
    assert ws == sorted(ws, reverse=True)
    assert [tiago_opt.w_list[i] for i in tiago_opt.w_dict_sort] == ws
    assert tiago_opt.socp.t_opt == pytest.approx(detroot(M))


def test_tiago_threshold_selection_contract(tiago_opt):
    assert tiago_opt.eps_opt == EPS_OPT == 1e-5
    expected = [i for i, v in tiago_opt.w_dict_sort.items() if v > 1e-5]
    assert tiago_opt.chosen_indices == expected
    assert tiago_opt.nb_chosen == len(expected)
    cands = tiago_opt._configs["calibration_joint_configurations"]
    oc = tiago_opt.optimal_configurations
    assert oc["calibration_joint_names"] == tiago_opt._configs["calibration_joint_names"]
    assert oc["calibration_joint_configurations"] == [list(cands[i]) for i in expected]
    assert tiago_opt.optimal_weights == tiago_opt.w_list
    # selected weights carry essentially all the mass
    assert sum(tiago_opt.w_list[i] for i in expected) > 1 - 1e-3


def test_tiago_regressor_matches_calibration_tools(tiago_opt):
    cfg = dict(tiago_opt.calib_config)
    cfg["param_name"] = []
    _, R_b, _, _, _ = ct.calculate_base_kinematics_regressor(
        tiago_opt.q_measured, tiago_opt.model, tiago_opt.data, cfg
    )
    assert cfg["base_mapping_row_names"] == tiago_opt.base_param_names
    np.testing.assert_allclose(tiago_opt.R_b, R_b, atol=1e-12)
    # no param_name side effect on the instance
    assert tiago_opt.calib_config["param_name"] == []
    # candidate q: neutral configuration with the named joints written at idx_q
    m = tiago_opt.model
    names = tiago_opt._configs["calibration_joint_names"]
    vals = np.asarray(tiago_opt._configs["calibration_joint_configurations"])
    for k, n in enumerate(names):
        iq = m.joints[m.getJointId(n)].idx_q
        np.testing.assert_array_equal(tiago_opt.q_measured[:, iq], vals[:, k])


def test_tiago_detmax_improves_its_start(tiago_opt):
    k = tiago_opt.nb_chosen
    dm = Detmax(tiago_opt._subX_dict, k, seed=7)
    start = dm.get_critD(dm.initial_set)
    hist = dm.main_algo()
    final = dm.get_critD(dm.cur_set)
    assert hist[0] == pytest.approx(start)
    assert hist[-1] == pytest.approx(final)
    assert final >= start
    assert np.all(np.diff(hist) > 0)
    assert dm.converged and len(set(dm.cur_set)) == k
    # DETMAX stop rule: adding the best outsider then removing the least useful
    # member gives the set back
    X = np.asarray(tiago_opt._subX_list)
    M = X[dm.cur_set].sum(axis=0)
    outside = np.setdiff1d(np.arange(len(X)), dm.cur_set)
    j = outside[np.argmax(np.linalg.slogdet(M + X[outside])[1])]
    grown = np.append(dm.cur_set, j)
    m = grown[np.argmax(np.linalg.slogdet(M + X[j] - X[grown])[1])]
    assert m == j


def test_tiago_iroc_selection(tiago_opt):
    import copy

    opt = copy.copy(tiago_opt)
    sizes = []
    for patience in (1, 3, 6):
        chosen = opt._select_by_iroc(1e-3, patience)
        assert chosen == list(tiago_opt.w_dict_sort)[: len(chosen)]
        assert len(chosen) >= opt.minNbChosen
        sizes.append(len(chosen))
    assert sizes == sorted(sizes)
    assert opt.o1_history and all(np.isfinite(opt.o1_history))


def test_tiago_yaml_round_trip(tiago_opt, tiago_example, shared_data, tmp_path):
    files = tiago_opt.save_results(tmp_path / "out")
    path = Path(files["configurations"])
    assert path.name == "tiago_optimal_configurations.yaml"
    assert not list(path.parent.glob(".*.tmp"))
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert list(doc) == ["calibration_joint_names", "calibration_joint_configurations"]
    assert doc == tiago_opt.optimal_configurations
    # fed back as a candidate file, it gives exactly the chosen configurations
    again = tiago_example.make_optimizer(shared_data, candidates=path)
    again.load_candidate_configurations()
    np.testing.assert_array_equal(again.q_measured, tiago_opt.q_measured[tiago_opt.chosen_indices])
    summary = yaml.safe_load(Path(files["yaml"]).read_text(encoding="utf-8"))
    assert summary["configuration_count"] == tiago_opt.nb_chosen
    assert summary["feasible"] is True
    assert summary["condition_number"] == pytest.approx(tiago_opt.detroot_whole)


def test_tiago_plot_headless(tiago_opt):
    import matplotlib

    matplotlib.use("Agg")
    ks, curve = tiago_opt.criterion_curve()
    assert ks[0] == tiago_opt.minNbChosen and ks[-1] == 500
    assert np.all(np.isfinite(curve)) and curve[-1] > 0
    assert tiago_opt.plot(show=False) is True


# ---------------------------------------------------------------------------
# infeasibility is explicit
# ---------------------------------------------------------------------------


def test_rank_deficient_pool_is_reported(tiago_opt, tiago_example, shared_data, tmp_path):
    row = tiago_opt._configs["calibration_joint_configurations"][0]
    bad = tmp_path / "one_posture.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "calibration_joint_names": tiago_opt._configs["calibration_joint_names"],
                "calibration_joint_configurations": [row, row, row],
            }
        )
    )
    opt = tiago_example.make_optimizer(shared_data, candidates=bad)
    opt.initialize()
    assert opt.detroot_whole == 0.0
    assert opt.results_data["feasible"] is False
    with pytest.raises(InfeasibleDesignError, match="rank 6 < 10") as err:
        opt.calculate_optimal_configurations()
    assert isinstance(err.value, AssertionError) and isinstance(err.value, ValueError)
    assert opt.results_data == {"feasible": False, "message": str(err.value)}
    assert "inf" not in opt.results_data["message"].replace("information", "")


def test_too_few_postures_is_reported(ur10_opt):
    ur10_opt.initialize()
    ur10_opt.minNbChosen = 39
    with pytest.raises(InfeasibleDesignError, match="minNbChosen=39") as err:
        ur10_opt.calculate_optimal_configurations("threshold")
    rd = ur10_opt.results_data
    assert rd["feasible"] is False and rd["message"] == str(err.value)
    assert rd["log_det_information"] is None
    assert ur10_opt.optimal_configurations is None


# ---------------------------------------------------------------------------
# UR10 example (random candidates)
# ---------------------------------------------------------------------------


def test_ur10_example_random_candidates(ur10_opt, ur10_example, ur10_urdf, tmp_path):
    ur10_opt.solve(plotting=False)
    assert ur10_opt.calib_config["NbSample"] == 40
    assert ur10_opt.minNbChosen == 7  # int(6·6/6) + 1
    assert ur10_opt.results_data["feasible"] is True
    assert ur10_opt.nb_chosen >= 7
    lo, hi = ur10_opt.model.lowerPositionLimit, ur10_opt.model.upperPositionLimit
    assert np.all(ur10_opt.q_measured >= lo) and np.all(ur10_opt.q_measured <= hi)
    again = ur10_example.make_optimizer(ur10_urdf, UR10_CONFIG, n_candidates=40, seed=1)
    again.load_candidate_configurations()
    np.testing.assert_array_equal(again.q_measured, ur10_opt.q_measured)
    path = ur10_opt.save_optimal_configurations(tmp_path / "ur10.yaml")
    fed = ur10_example.make_optimizer(ur10_urdf, UR10_CONFIG, candidates=path)
    fed.load_candidate_configurations()
    np.testing.assert_array_equal(fed.q_measured, ur10_opt.q_measured[ur10_opt.chosen_indices])


# ---------------------------------------------------------------------------
# synthetic pools and algebra
# ---------------------------------------------------------------------------


def _spanning_pool(seed: int = 0):
    """4 spanning rank-1 matrices + 16 weaker near-duplicates of them (n_p = 4)."""
    rng = np.random.default_rng(seed)
    mats = [np.outer(e, e) for e in np.eye(4)]
    for i in range(16):
        v = np.eye(4)[i % 4] + 0.05 * rng.standard_normal(4)
        v /= np.linalg.norm(v)
        mats.append(0.3 * np.outer(v, v))
    return dict(enumerate(mats))


def test_socp_and_iroc_on_spanning_pool():
    pool = _spanning_pool()
    socp = SOCPOptimizer(pool, {"NbSample": 20})
    w_list, w_sort = socp.solve()
    np.testing.assert_allclose(w_list[:4], 0.25, atol=1e-4)
    assert sorted(list(w_sort)[:4]) == [0, 1, 2, 3]
    opt = BaseOptimalCalibration.__new__(BaseOptimalCalibration)
    opt.minNbChosen, opt._subX_list, opt.w_dict_sort = 2, list(pool.values()), w_sort
    chosen = opt._select_by_iroc(1e-3, 3)
    assert sorted(chosen) == [0, 1, 2, 3]
    peak = opt.minNbChosen + int(np.argmax(opt.o1_history))
    assert peak <= 5
    assert len(opt._select_by_iroc(1e-3, 6)) >= len(chosen)
    opt.minNbChosen = 6
    assert len(opt._select_by_iroc(1e-3, 3)) >= 6


def test_detmax_climbs_out_of_a_singular_start():
    e = np.eye(4)
    mats = [np.outer(v, v) for v in e] + [0.3 * np.outer(e[0], e[0])] * 4
    dm = Detmax(dict(enumerate(mats)), 4, seed=0)
    dm.cur_set = [4, 5, 6, 7]  # four copies of e_1 e_1ᵀ: rank 1
    assert dm.get_critD(dm.cur_set) == 0.0
    dm.main_algo()
    assert sorted(dm.cur_set) == [0, 1, 2, 3]
    assert dm.opt_critD[-1] == pytest.approx(1.0)


def test_rearrange_and_information_identities():
    rng = np.random.default_rng(3)
    n, c, p = 7, 3, 4
    blocks = rng.standard_normal((n, c, p))
    R_b = blocks.transpose(1, 0, 2).reshape(c * n, p)  # component-major
    cfg = {"NbSample": n, "calibration_index": c}
    R = rearrange_rb(R_b, cfg)
    for i in range(n):
        for j in range(c):
            np.testing.assert_array_equal(R[i * c + j], R_b[j * n + i])
    lst, dct = sub_info_matrix(R, cfg)
    assert list(dct) == list(range(n))
    np.testing.assert_allclose(sum(lst), R.T @ R, atol=1e-12)
    np.testing.assert_allclose(dct[2], blocks[2].T @ blocks[2], atol=1e-12)
    assert detroot(R.T @ R) == pytest.approx(np.linalg.det(R.T @ R) ** (1 / p))
    assert log_det_information(lst, [0]) == -np.inf
    with pytest.raises(ValueError, match="expected 21 rows"):
        rearrange_rb(R_b[:-1], cfg)


def test_bad_inputs_raise_clear_errors(ur10_opt, tmp_path):
    names = ["shoulder_pan_joint", "elbow_joint"]
    cases = {
        "unknown.yaml": (
            {"calibration_joint_names": ["elbow_jiont"], "calibration_joint_configurations": [[0]]},
            "elbow_jiont",
        ),
        "ragged.yaml": (
            {"calibration_joint_names": names, "calibration_joint_configurations": [[0, 1], [2]]},
            r"rows \[1\]",
        ),
        "nan.yaml": (
            {
                "calibration_joint_names": names,
                "calibration_joint_configurations": [[0, float("nan")]],
            },
            "NaN",
        ),
        "keys.yaml": ({"joints": names}, "calibration_joint_names"),
    }
    for fname, (doc, msg) in cases.items():
        p = tmp_path / fname
        p.write_text(yaml.safe_dump(doc))
        ur10_opt.set_candidate_file(p)
        with pytest.raises(ValueError, match=msg):
            ur10_opt.load_candidate_configurations()
    (tmp_path / "c.txt").write_text("x")
    ur10_opt.set_candidate_file(tmp_path / "c.txt")
    with pytest.raises(ValueError, match="Data file format not supported"):
        ur10_opt.load_candidate_configurations()
    ur10_opt.set_candidate_file(tmp_path / "missing.yaml")
    with pytest.raises(FileNotFoundError, match="missing.yaml"):
        ur10_opt.load_candidate_configurations()
    base = BaseOptimalCalibration(ur10_opt.robot, str(UR10_CONFIG))
    with pytest.raises(ValueError, match="sample_configs_file not specified"):
        base.load_candidate_configurations()
    with pytest.raises(ValueError, match="selection_method must be"):
        base.calculate_optimal_configurations("greedy")
    with pytest.raises(AssertionError, match="call solve"):
        base.plot()
    # CSV candidates: joint columns by name, other columns ignored
    csv = tmp_path / "cands.csv"
    csv.write_text("t,shoulder_pan_joint,elbow_joint\n0,0.1,0.2\n1,0.3,-0.4\n")
    base.set_candidate_file(csv)
    base.load_candidate_configurations()
    assert base._configs["calibration_joint_names"] == names
    np.testing.assert_array_equal(base.q_measured[:, [0, 2]], [[0.1, 0.2], [0.3, -0.4]])


def test_solver_inputs_validated():
    with pytest.raises(ValueError, match="not symmetric"):
        SOCPOptimizer({0: np.array([[1.0, 2.0], [0.0, 1.0]])}, {})
    with pytest.raises(ValueError, match="non-finite"):
        SOCPOptimizer({0: np.full((2, 2), np.nan)}, {})
    with pytest.raises(ValueError, match="square"):
        SOCPOptimizer({0: np.ones((2, 3))}, {})
    with pytest.raises(InfeasibleDesignError, match="rank 1 < 2"):
        SOCPOptimizer({0: np.diag([1.0, 0.0]), 1: np.diag([2.0, 0.0])}, {}).solve()
    pool = _spanning_pool()
    with pytest.raises(ValueError, match="NbChosen"):
        Detmax(pool, 20)
    with pytest.raises(AssertionError, match="not in the pool"):
        Detmax(pool, 3, seed=0).get_critD([0, 99])


def test_import_does_not_load_picos():
    code = (
        "import sys, figaroh.optimal.base_optimal_calibration; "
        "print('picos' in sys.modules or 'cvxopt' in sys.modules)"
    )
    with warnings.catch_warnings():
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
    assert out.stdout.strip() == "False"
