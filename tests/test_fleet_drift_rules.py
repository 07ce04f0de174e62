"""The drift rules: what is compared, the statistics, and the false alarms they give.

* parameter identity: per-joint terms are recognised through the joint-term
  table, inertial base parameters are compared only within one base-parameter
  structure (robots with different structures are never compared on them);
* the false-discovery-rate machinery against SciPy (Benjamini–Hochberg,
  Simes within a cell, p-values from z);
* the default rule's statistics against independent computations (the
  pooled two-sample t is ``scipy.stats.ttest_ind``; the known-σ split, the
  fleet scale and the σ calibration by hand);
* the threshold rule ``k`` gives exactly the flags the earlier figaroh gave
  (``fleet_drift_k_rule_flags.json``, written by it);
* on seeded simulated fleets without drift the default rule flags at most
  5 % of the robots (none here), while ``k = 3`` flags many; a 3σ-per-session
  friction drift is found on every drifted robot, on the right parameter.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from figaroh.fleet.drift import (
    AGAINST_FLEET,
    AGAINST_HISTORY,
    MAD_DOF_PER_ROBOT,
    MAD_TO_SIGMA,
    SIGMA_POOL_MIN,
    analyse_drift,
)
from figaroh.fleet.drift_fdr import (
    bh_adjust,
    check_level,
    fdr_decision,
    grouped_bh_adjust,
    two_sided_p,
)
from figaroh.fleet.drift_scores import _split_scores
from figaroh.fleet.parameter_identity import (
    STABLE,
    is_joint_term,
    is_structural,
    run_structures,
    structure_signature,
)
from figaroh.fleet.run_index import HistoryPoint
from figaroh.tools import joint_terms

HERE = Path(__file__).resolve().parent
EXPRESSION = "Iyz_elbow_joint - 0.5723*my_wrist_1_joint"


def pt(robot, session, name, value, sigma, run=None):
    return HistoryPoint(
        robot,
        run or f"{robot}-s{session}",
        f"s{session}",
        f"2026-03-{session + 1:02d}T02:00:00+00:00",
        name,
        float(value),
        sigma,
    )


# --------------------------------------------------------------------------- #
# Parameter identity
# --------------------------------------------------------------------------- #
def test_joint_terms_are_recognised_through_the_table(monkeypatch):
    assert [is_joint_term(f"{t.prefix}_elbow_joint") for t in joint_terms.JOINT_TERMS] == [True] * 4
    assert not is_joint_term("kq_elbow_joint")
    row = dataclasses.replace(joint_terms.JOINT_TERMS[0], prefix="kq")
    monkeypatch.setattr(joint_terms, "JOINT_TERMS", (*joint_terms.JOINT_TERMS, row))
    assert is_joint_term("kq_elbow_joint")  # a new row is a new per-joint term, no other change
    assert not is_joint_term("fs_")  # a prefix without a joint
    assert not is_joint_term("Ia_shoulder_pan_joint + 1.0*Izz_shoulder_pan_joint")


@pytest.mark.parametrize(
    ("name", "structural"),
    [
        ("fs_shoulder_lift_joint", False),
        ("fv_elbow_joint", False),
        ("Ia_wrist_1_joint", False),
        ("off_wrist_3_joint", False),
        ("d_px_1", False),  # geometric calibration parameters keep their identity
        ("base_phiz", False),
        ("Ixx_elbow_joint", True),
        ("m_wrist_3_joint", True),
        ("mz_elbow_joint", True),
        (EXPRESSION, True),
        ("Ia_shoulder_pan_joint + 1.0*Izz_shoulder_pan_joint", True),  # regrouped joint term
        ("mx_", False),
    ],
)
def test_structure_dependent_names(name, structural):
    assert is_structural(name) is structural


def test_structure_signature():
    names = ["fs_elbow_joint", "Ixx_elbow_joint", EXPRESSION]
    assert structure_signature(names) == structure_signature(reversed(names))
    assert structure_signature(names) == structure_signature(names[1:])  # stable ones ignored
    assert structure_signature(names) != structure_signature(
        ["Ixx_elbow_joint", "Iyz_elbow_joint - 0.5724*my_wrist_1_joint"]
    )
    assert structure_signature(["fs_elbow_joint", "d_px_1"]) == STABLE
    assert len(structure_signature(names)) == 12
    assert run_structures({"a": names, "b": names[1:], "c": ["fs_elbow_joint"]}) == {
        "a": structure_signature(names),
        "b": structure_signature(names),
        "c": STABLE,
    }


def structured_fleet(seed=5):
    """Robots a0–a5 share one structure, robot b has another; b's inertia is far off."""
    rng = np.random.default_rng(seed)
    pts = []
    for s in range(4):
        for r in range(6):
            robot = f"a{r}"
            pts += [
                pt(robot, s, "fs_elbow_joint", 4.0 + 0.01 * rng.standard_normal(), 0.01),
                pt(robot, s, "Ixx_elbow_joint", 0.5 + 0.001 * rng.standard_normal(), 0.001),
                pt(robot, s, EXPRESSION, 0.3 + 0.001 * rng.standard_normal(), 0.001),
            ]
        pts += [
            pt("b", s, "fs_elbow_joint", 4.0 + 0.01 * rng.standard_normal(), 0.01),
            pt("b", s, "Ixx_elbow_joint", 0.9 + 0.001 * rng.standard_normal(), 0.001),
            pt("b", s, "Iyz_elbow_joint - 0.4*my_wrist_1_joint", 0.3, 0.001),
        ]
    return pts


@pytest.mark.parametrize("rule", [{"k": 3.0}, {}], ids=["k", "fdr"])
def test_inertial_parameters_of_different_structures_are_not_compared(rule):
    report = analyse_drift(structured_fleet(), **rule)
    # b's Ixx_elbow_joint (0.9 against 0.5) would be a fleet flag by name; it is not compared
    assert report.flagged_robots == ()
    ixx = [p for p in report.parameters if p.name == "Ixx_elbow_joint"]
    assert len(ixx) == 2 and {len(p.robots) for p in ixx} == {6, 1}
    (alone,) = [p for p in ixx if "b" in p.robots]
    assert alone.structure != STABLE and set(alone.robots) == {"b"}
    with pytest.raises(KeyError, match="2 base-parameter structures"):
        report.parameter("Ixx_elbow_joint")
    assert report.parameter("Ixx_elbow_joint", alone.structure) is alone
    # the per-joint term is one quantity over every robot
    fs = report.parameter("fs_elbow_joint")
    assert fs.structure == STABLE and len(fs.robots) == 7


def test_given_structures_win_over_the_names_of_the_points():
    pts = structured_fleet()
    only_ixx = [p for p in pts if p.name == "Ixx_elbow_joint"]
    # from these points alone every run has the same structure: b is compared and flagged
    assert analyse_drift(only_ixx).flagged_robots == ("b",)
    full = run_structures({p.run_id: [q.name for q in pts if q.run_id == p.run_id] for p in pts})
    assert analyse_drift(only_ixx, structures=full).flagged_robots == ()


# --------------------------------------------------------------------------- #
# False-discovery-rate machinery
# --------------------------------------------------------------------------- #
def test_grouped_bh_is_scipys_bh_per_group():
    rng = np.random.default_rng(0)
    p = rng.random(600) ** 4
    group = rng.integers(0, 40, size=600)
    adjusted = grouped_bh_adjust(p, group)
    for g in range(40):
        members = group == g
        np.testing.assert_allclose(
            adjusted[members],
            stats.false_discovery_control(p[members], method="bh"),
            rtol=1e-15,
            atol=0,
        )
    assert grouped_bh_adjust(np.zeros(0), np.zeros(0, dtype=int)).size == 0


def test_bh_adjust_without_scipys_function_gives_the_same(monkeypatch):
    p = np.random.default_rng(1).random(200) ** 3
    reference = stats.false_discovery_control(p, method="bh")
    np.testing.assert_array_equal(bh_adjust(p), reference)
    monkeypatch.delattr(stats, "false_discovery_control")  # SciPy < 1.11
    np.testing.assert_allclose(bh_adjust(p), reference, rtol=1e-15, atol=0)


def test_fdr_decision_is_simes_within_cells_and_bh_across():
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.random(300), rng.random(20) * 1e-6])
    cell = np.concatenate([rng.integers(0, 60, 300), rng.integers(60, 64, 20)])
    d = fdr_decision(p, cell, 70, 0.05)  # cells 64–69 have no comparison
    for c in range(64):
        members = cell == c
        pc = p[members]
        simes = np.min(pc.size * np.sort(pc) / np.arange(1, pc.size + 1))
        assert d.cell_p[c] == pytest.approx(min(simes, 1.0), rel=1e-12)
    np.testing.assert_array_equal(d.cell_p[64:], 1.0)
    np.testing.assert_array_equal(d.cell_q[64:], 1.0)
    np.testing.assert_array_equal(
        d.cell_q[:64], stats.false_discovery_control(d.cell_p[:64], method="bh")
    )  # across cells the adjustment is SciPy's own
    assert set(np.flatnonzero(d.cell_flagged)) == set(range(60, 64))
    assert d.cutoff == 0.05 * 4 / 64  # q·R/N within the flagged cells
    assert d.cell_p[d.cell_flagged].max() <= d.cutoff
    assert set(cell[d.flagged]) == set(range(60, 64))  # every flagged cell has a flagged run
    inside = d.cell_flagged[cell]
    np.testing.assert_array_equal(d.flagged, inside & (d.within <= d.cutoff))
    empty = fdr_decision(np.zeros(0), np.zeros(0, dtype=int), 3, 0.05)
    assert empty.cutoff == 0.0 and not empty.cell_flagged.any()


def test_p_values_from_z():
    z = np.array([0.0, 1.5, -3.0, 6.0])
    np.testing.assert_allclose(two_sided_p(z), 2 * stats.norm.sf(np.abs(z)), rtol=1e-15)
    dof = np.array([1.0, 2.5, 7.0, np.inf])
    expected = 2 * np.where(
        np.isinf(dof), stats.norm.sf(np.abs(z)), stats.t.sf(np.abs(z), np.where(dof > 0, dof, 1))
    )
    np.testing.assert_allclose(two_sided_p(z, dof), expected, rtol=1e-15)


@pytest.mark.parametrize("q", [0, 1, -0.1, float("nan"), True, "x"])
def test_level_must_be_in_the_open_unit_interval(q):
    with pytest.raises(ValueError, match="q must be"):
        check_level(q)


# --------------------------------------------------------------------------- #
# Statistics of the default rule
# --------------------------------------------------------------------------- #
def test_split_scores_against_direct_formulas_and_scipys_t_test():
    rng = np.random.default_rng(3)
    sizes = [1, 2, 3, 5, 8]
    x = np.concatenate([100.0 + rng.normal(size=n) for n in sizes])  # large offset
    s = np.concatenate([rng.uniform(0.5, 2.0, size=n) for n in sizes])
    s[sizes[0] + sizes[1] + 1] = np.nan  # the 3-run cell has a run without σ
    s[-1] = np.nan  # and so has the 8-run cell
    cell = np.repeat(np.arange(len(sizes)), sizes)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    ref, level, scale, dof = _split_scores(x, s, cell, start, min_history=1)
    for c, n in enumerate(sizes):
        xs, ss = x[start[c] : start[c] + n], s[start[c] : start[c] + n]
        for i in range(n):
            k = start[c] + i
            if i == 0 or (np.isnan(ss).any() and n < 3):
                assert np.isnan(scale[k]) and np.isnan(ref[k])
                continue
            before, after = xs[:i], xs[i:]
            assert ref[k] == pytest.approx(before.mean(), rel=1e-13)
            assert level[k] == pytest.approx(after.mean(), rel=1e-13)
            if np.isnan(ss).any():
                t = stats.ttest_ind(after, before, equal_var=True)
                assert (level[k] - ref[k]) / scale[k] == pytest.approx(t.statistic, rel=1e-9)
                assert dof[k] == n - 2
                assert two_sided_p((level[k] - ref[k]) / scale[k], dof[k]) == pytest.approx(
                    t.pvalue, rel=1e-9
                )
            else:
                var = np.sum(ss[:i] ** 2) / i**2 + np.sum(ss[i:] ** 2) / (n - i) ** 2
                assert scale[k] == pytest.approx(math.sqrt(var), rel=1e-12)
                assert dof[k] == np.inf
    _, _, scale2, _ = _split_scores(x, s, cell, start, min_history=3)
    assert np.isnan(scale2[start[4] + 2]) and np.isfinite(scale2[start[4] + 3])


def test_history_flag_of_the_default_rule_by_hand():
    values, sigmas = [1.0, 1.2, 1.1, 2.0, 2.1], [0.1, 0.1, 0.2, 0.1, 0.1]
    report = analyse_drift(
        [pt("a", s, "fs1", v, e) for s, (v, e) in enumerate(zip(values, sigmas, strict=False))]
    )
    assert report.cells == 1 and report.parameter("fs1").sigma_scale == 1.0  # one cell: λ = 1
    (f,) = [f for f in report.flags if f.run_id == "a-s3"]
    assert f.against == AGAINST_HISTORY and f.runs == 2
    assert f.reference == pytest.approx(1.1) and f.value == pytest.approx(2.05)
    scale = math.sqrt((0.01 + 0.01 + 0.04) / 9 + (0.01 + 0.01) / 4)
    assert f.scale == pytest.approx(scale) and f.z == pytest.approx(0.95 / scale)
    assert f.p == pytest.approx(2 * stats.norm.sf(0.95 / scale), rel=1e-12)


def test_fleet_flag_of_the_default_rule_by_hand():
    others = [float(v) for v in range(1, 13)]
    pts = [pt(f"o{i:02d}", 0, "fs1", v, 0.1) for i, v in enumerate(others)]
    pts.append(pt("x", 0, "fs1", 40.0, 0.2))
    report = analyse_drift(pts)
    assert report.flagged_robots == ("x",)
    (f,) = report.flags
    assert f.against == AGAINST_FLEET and f.reference == pytest.approx(6.5)
    spread = MAD_TO_SIGMA * 3.0  # MAD of 1…12 about 6.5
    n_o = 12
    scale = math.sqrt(spread**2 * (1 + math.pi / (2 * n_o)) + 0.2**2)
    assert f.scale == pytest.approx(scale) and f.z == pytest.approx(33.5 / scale)
    assert f.p == pytest.approx(2 * stats.t.sf(33.5 / scale, MAD_DOF_PER_ROBOT * n_o), rel=1e-9)
    # x's cell holds one comparison; the 12 other cells' p-values are large, so x's
    # Benjamini–Hochberg q-value is its p times the 13 cells
    assert report.cells == 13
    assert f.q_value == pytest.approx(13 * f.p, rel=1e-9) and f.q_value <= 0.05


def test_sigma_calibration_by_hand():
    """Runs that scatter twice as much as their σ: λ from the robots' scatter, flags vanish."""
    rng = np.random.default_rng(4)
    n_robots, n_runs, sigma = 8, 6, 0.1
    values = 5.0 + 2 * sigma * rng.standard_normal((n_robots, n_runs))
    pts = [
        pt(f"r{r}", s, "fs1", values[r, s], sigma) for r in range(n_robots) for s in range(n_runs)
    ]
    report = analyse_drift(pts)
    u = [
        np.sum((values[r] - values[r].mean()) ** 2) / sigma**2 / stats.chi2.median(n_runs - 1)
        for r in range(n_robots)
    ]
    expected = math.sqrt(max(1.0, float(np.median(u))))
    assert report.parameter("fs1").sigma_scale == pytest.approx(expected, rel=1e-12)
    assert 1.5 < expected < 2.6
    assert report.flags == ()
    # fewer robots than the pool needs: the recorded σ are trusted as they are
    few = [p for p in pts if int(p.robot_id[1:]) < SIGMA_POOL_MIN - 1]
    assert analyse_drift(few).parameter("fs1").sigma_scale == 1.0


# --------------------------------------------------------------------------- #
# The threshold rule is the earlier figaroh's
# --------------------------------------------------------------------------- #
NAMES = {
    "fs_shoulder_lift_joint": (6.0, 0.2),
    "fv_elbow_joint": (4.0, 0.15),
    "Ia_wrist_1_joint": (0.05, 0.004),
    "d_px_1": (0.001, 0.0002),
    "Ixx_elbow_joint": (0.5, 0.01),
    EXPRESSION: (0.3, 0.008),
}


def k_rule_fleet(seed=20261206, n_robots=30, n_sessions=8):
    """A seeded fleet for the threshold rule: robot spread, noise, drifts, σ None, gaps."""
    rng = np.random.default_rng(seed)
    points = []
    for r in range(n_robots):
        robot = f"robot_{r:02d}"
        offset = {n: 0.1 * v * rng.standard_normal() for n, (v, _) in NAMES.items()}
        for s in range(n_sessions):
            if r == 7 and s % 2:  # a robot that missed every other night
                continue
            if r == 11 and s > 0:  # a robot with one run
                continue
            for n, (v, sig) in NAMES.items():
                sigma = sig * float(np.exp(0.3 * rng.standard_normal()))
                x = v + offset[n] + sigma * rng.standard_normal()
                if r in (3, 17) and n == "fs_shoulder_lift_joint" and s >= 5:
                    x += 3.0 * sig * (s - 4)
                if r == 21 and n == "Ixx_elbow_joint" and s >= 6:
                    x += 6.0 * sig
                points.append(
                    HistoryPoint(
                        robot,
                        f"{robot}-s{s}",
                        f"s{s}",
                        f"2026-03-{s + 1:02d}T02:00:00+00:00",
                        n,
                        float(x),
                        None if (r == 5 and s == 3) else sigma,
                    )
                )
    return points


@pytest.mark.parametrize(
    ("label", "kwargs"),
    [("k3", {"k": 3.0}), ("k2.5_h2_f3", {"k": 2.5, "min_history": 2, "min_fleet": 3})],
)
def test_the_k_rule_gives_the_earlier_flags(label, kwargs):
    expected = json.loads((HERE / "fleet_drift_k_rule_flags.json").read_text())[label]
    report = analyse_drift(k_rule_fleet(), **kwargs)
    assert report.rule == "k" and report.q is None
    assert list(report.flagged_robots) == expected["flagged_robots"]
    got = [
        [f.robot_id, f.run_id, f.name, f.session, f.against]
        + [repr(v) for v in (f.value, f.reference, f.scale, f.z)]
        for f in report.flags
    ]
    assert got == expected["flags"]
    assert all(f.p is None and f.q_value is None and f.runs == 1 for f in report.flags)


def test_the_default_rule_finds_the_drifts_of_the_k_rule_fleet_and_nothing_else():
    report = analyse_drift(k_rule_fleet())
    assert report.flagged_robots == ("robot_03", "robot_17", "robot_21")
    assert {(f.robot_id, f.name) for f in report.flags} == {
        ("robot_03", "fs_shoulder_lift_joint"),
        ("robot_17", "fs_shoulder_lift_joint"),
        ("robot_21", "Ixx_elbow_joint"),
    }
    # one history flag per robot: the change point, inside the drift (a ramp from
    # session 5, a step at session 6 for robot_21), with the mean of the runs after it
    points = {(f.robot_id, f.session): f for f in report.flags}
    assert all(f.against == "history" for f in report.flags) and len(points) == 3
    assert {r: s for r, s in points} == {"robot_03": "s6", "robot_17": "s5", "robot_21": "s6"}
    step = points[("robot_21", "s6")]
    assert step.runs == 2 and step.difference == pytest.approx(6 * 0.01, rel=0.5)


# --------------------------------------------------------------------------- #
# False alarms and detection on simulated fleets
# --------------------------------------------------------------------------- #
JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint")
DRIFTING = "fs_shoulder_lift_joint"


def simulated_fleet(seed, n_robots=100, n_sessions=8, drifted=(), growth=3.0):
    """Per-joint terms with robot-to-robot spread, per-robot σ, and per-robot inertial structures.

    ``drifted`` robots: ``fs_shoulder_lift_joint`` grows by ``growth·σ`` per
    session over the last three sessions.
    """
    rng = np.random.default_rng(seed)
    terms = [
        (f"{p}_{j}", nominal)
        for p, nominal in (("fv", 8.0), ("fs", 5.0), ("Ia", 0.3))
        for j in JOINTS
    ]
    points = []
    for r in range(n_robots):
        robot = f"robot_{r:03d}"
        coef = rng.uniform(0.1, 0.9)
        inertial = [
            ("Ixx_elbow_joint", 0.5),
            (f"Iyz_elbow_joint - {coef:.4f}*my_wrist_1_joint", 0.3),
        ]
        truth = {n: v * (1 + 0.1 * rng.standard_normal()) for n, v in terms + inertial}
        sigma = {n: 0.04 * v * math.exp(0.3 * rng.standard_normal()) for n, v in terms + inertial}
        for s in range(n_sessions):
            for name in truth:
                x = truth[name] + sigma[name] * rng.standard_normal()
                if robot in drifted and name == DRIFTING:
                    x += growth * sigma[name] * max(0, s - (n_sessions - 3) + 1)
                recorded = sigma[name] * (1 + 0.05 * rng.standard_normal())
                points.append(pt(robot, s, name, x, recorded))
    return points


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_no_drift_fleets_flag_at_most_5_percent_of_the_robots(seed):
    points = simulated_fleet(seed)
    report = analyse_drift(points)
    assert len(report.flagged_robots) <= 0.05 * 100
    assert report.flagged_robots == ()  # at q = 0.05 most no-drift reports flag nobody
    assert report.cells == 100 * 11
    # the threshold rule on the same fleet: many chance flags
    assert len(analyse_drift(points, k=3.0).flagged_robots) > 10


@pytest.mark.parametrize("seed", [21, 22])
def test_a_3_sigma_friction_drift_is_found(seed):
    drifted = {f"robot_{r:03d}" for r in (4, 31, 58, 77, 90)}
    report = analyse_drift(simulated_fleet(seed, drifted=drifted))
    flagged = set(report.flagged_robots)
    assert drifted <= flagged
    assert len(flagged - drifted) <= 0.05 * 95  # false alarms stay under 5 % of the others
    for robot in drifted:
        assert report.parameter(DRIFTING).q_values[robot] <= 0.05
        assert {f.name for f in report.flags if f.robot_id == robot} == {DRIFTING}
