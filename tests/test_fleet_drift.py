"""Drift analysis of a fleet on synthetic parameter histories (both rules).

* under the threshold rule (``k`` given) exactly the robots given a drift
  above k·scale are flagged (a robot given a drift below it is not), against
  its own history and against the fleet, and the reference, scale and z of a
  flag follow the documented rule (hand computed cases);
* the default false-discovery-rate rule flags the same drifted robots on
  these fleets;
* edge cases under both rules: one run per robot, σ None, a robot alone in
  the fleet, two robots, point order, the exact leave-one-out statistics;
* NaN values are refused with a named error;
* ``drift_report`` over a real run index (robot filter keeps the whole fleet
  as reference) and the HTML page's data attributes.

The statistics of the default rule, the window and the parameter identity
have their own files (``test_fleet_drift_rules.py``, ``test_fleet_drift_window.py``).
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import re

import numpy as np
import pytest

import figaroh.fleet.drift_scores as drift_scores
from figaroh.errors import FigarohError
from figaroh.fleet.drift import (
    AGAINST_FLEET,
    AGAINST_HISTORY,
    MAD_TO_SIGMA,
    DriftInputError,
    analyse_drift,
    drift_report,
)
from figaroh.fleet.drift_html import drift_html, failure_rows, parameter_unit, write_drift_html
from figaroh.fleet.drift_scores import _band, _loo_mad, _loo_median
from figaroh.fleet.record import ParameterEstimate, RunRecord
from figaroh.fleet.run_index import HistoryPoint, RunIndex

SIGMA = 0.01


def point(robot, session, value, sigma=SIGMA, name="fs1", day=None, run=None):
    day = session if day is None else day
    return HistoryPoint(
        robot_id=robot,
        run_id=run or f"{robot}-s{session}-{name}",
        session=f"s{session}",
        session_time=f"2026-03-{day + 1:02d}T08:00:00+00:00",
        name=name,
        value=value,
        sigma=sigma,
    )


def fleet(drifts, n_robots=8, n_sessions=4, names=("fs1", "fv2"), seed=7):
    """``n_robots × n_sessions`` points per name; ``drifts[(robot, name)]`` [σ] from session 2."""
    rng = np.random.default_rng(seed)
    pts = []
    for r in range(n_robots):
        for s in range(n_sessions):
            for name in names:
                drift = drifts.get((f"r{r}", name), 0.0) * SIGMA if s >= 2 else 0.0
                value = 1.0 + 0.2 * SIGMA * rng.standard_normal() + drift
                pts.append(point(f"r{r}", s, value, name=name, run=f"r{r}-s{s}"))
    return pts


def test_exactly_the_drifted_robots_are_flagged():
    drifts = {("r2", "fs1"): 8.0, ("r5", "fv2"): -10.0, ("r6", "fs1"): 1.0}
    report = analyse_drift(fleet(drifts), k=3.0)
    assert report.flagged_robots == ("r2", "r5")  # r6 moved 1σ: below k·scale
    assert {(f.robot_id, f.name) for f in report.flags} == {("r2", "fs1"), ("r5", "fv2")}
    assert report.parameter("fs1").flagged_robots == ("r2",)
    assert report.parameter("fv2").flagged_robots == ("r5",)
    # the drift session is flagged against both references; the fleet keeps flagging after it
    r2 = [(f.session, f.against) for f in report.flags if f.robot_id == "r2"]
    assert ("s2", AGAINST_HISTORY) in r2 and ("s2", AGAINST_FLEET) in r2
    assert ("s3", AGAINST_FLEET) in r2
    for f in report.flags:
        assert abs(f.z) > report.k and f.scale > 0
        assert f.z == pytest.approx((f.value - f.reference) / f.scale)
        assert f.difference == pytest.approx(f.value - f.reference)
    assert all(f.z < 0 for f in report.flags if f.robot_id == "r5")


def test_the_default_rule_flags_the_same_drifted_robots():
    drifts = {("r2", "fs1"): 8.0, ("r5", "fv2"): -10.0, ("r6", "fs1"): 1.0}
    report = analyse_drift(fleet(drifts))
    assert report.rule == "fdr" and report.k is None and report.q == 0.05
    assert report.flagged_robots == ("r2", "r5")
    assert {(f.robot_id, f.name) for f in report.flags} == {("r2", "fs1"), ("r5", "fv2")}
    for f in report.flags:
        assert f.p is not None and f.q_value is not None and f.q_value <= report.q
        assert f.p <= report.cutoff
        assert f.z == pytest.approx((f.value - f.reference) / f.scale)


def test_a_larger_k_flags_fewer_runs():
    pts = fleet({("r2", "fs1"): 8.0})
    assert analyse_drift(pts, k=3.0).flagged_robots == ("r2",)
    assert analyse_drift(pts, k=20.0).flagged_robots == ()


def test_history_rule_by_hand():
    values = [1.0, 1.2, 1.1, 2.0]
    pts = [point("a", s, v, sigma=0.05) for s, v in enumerate(values)]
    flags = analyse_drift(pts, k=3.0).flags
    assert [(f.session, f.against) for f in flags] == [("s3", AGAINST_HISTORY)]
    f = flags[0]
    assert f.reference == pytest.approx(1.1)
    scale = math.sqrt(0.05**2 + np.std(values[:3], ddof=1) ** 2)
    assert f.scale == pytest.approx(scale)
    assert f.z == pytest.approx(0.9 / scale)
    assert f.value == 2.0 and f.run_id == "a-s3-fs1" and f.name == "fs1"
    assert f.session_time == "2026-03-04T08:00:00+00:00"


def test_history_with_one_previous_run_uses_its_sigma():
    pts = [point("a", 0, 1.0, sigma=0.03), point("a", 1, 1.2, sigma=0.04)]
    (f,) = analyse_drift(pts, k=3.0).flags
    assert f.scale == pytest.approx(0.05) and f.z == pytest.approx(4.0)


def test_fleet_rule_by_hand():
    others = [1.0, 2.0, 3.0, 4.0]
    pts = [point(f"o{i}", 0, v, sigma=0.1) for i, v in enumerate(others)]
    pts.append(point("x", 0, 10.0, sigma=0.1))
    report = analyse_drift(pts, k=3.0)
    assert report.flagged_robots == ("x",)
    (f,) = report.flags
    assert f.against == AGAINST_FLEET and f.reference == pytest.approx(2.5)
    assert f.scale == pytest.approx(MAD_TO_SIGMA * 1.0)  # MAD of the others, not of x
    assert f.z == pytest.approx(7.5 / MAD_TO_SIGMA)
    par = report.parameter("fs1")
    assert par.fleet_median["s0"] == pytest.approx(3.0)  # the band counts every robot
    assert par.fleet_spread["s0"] == pytest.approx(MAD_TO_SIGMA * 1.0)


def test_fleet_scale_is_at_least_the_combined_sigma():
    pts = [point(f"o{i}", 0, 1.0, sigma=0.1) for i in range(5)]  # MAD 0
    pts += [point("x", 0, 1.5, sigma=0.1), point("y", 0, 1.3, sigma=0.1)]
    flags = analyse_drift(pts, k=3.0).flags
    assert [f.robot_id for f in flags] == ["x"]  # 0.5 / √0.02 = 3.5 > 3, y: 2.1
    assert flags[0].scale == pytest.approx(math.sqrt(0.02))


@pytest.mark.parametrize("rule", [{"k": 3.0}, {}], ids=["k", "fdr"])
def test_one_run_per_robot_has_no_history_comparison(rule):
    pts = [point(f"r{i}", 0, 1.0 + 0.001 * i) for i in range(6)]
    pts.append(point("big", 0, 1.5))
    report = analyse_drift(pts, **rule)
    assert report.flagged_robots == ("big",)
    assert {f.against for f in report.flags} == {AGAINST_FLEET}


def test_sigma_none():
    # no σ and one previous run: scale 0, nothing says how much matters: no flag
    pts = [point("a", 0, 1.0, sigma=None), point("a", 1, 5.0, sigma=None)]
    assert analyse_drift(pts, k=3.0).flags == ()
    assert analyse_drift(pts).flags == ()  # default rule: the pooled t needs 3 runs
    # with two previous runs the scatter of the values is the scale
    pts = [point("a", s, v, sigma=None) for s, v in enumerate([1.0, 1.1, 2.0])]
    (f,) = analyse_drift(pts, k=3.0).flags
    assert f.scale == pytest.approx(np.std([1.0, 1.1], ddof=1))
    # fleet without σ: the MAD is the scale
    pts = [point(f"o{i}", 0, v, sigma=None) for i, v in enumerate([1.0, 1.1, 0.9, 1.05])]
    pts.append(point("x", 0, 3.0, sigma=None))
    report = analyse_drift(pts, k=3.0)
    assert report.flagged_robots == ("x",)


@pytest.mark.parametrize("rule", [{"k": 3.0}, {}], ids=["k", "fdr"])
def test_a_robot_alone_in_the_fleet_is_judged_on_its_history_only(rule):
    values = [1.0, 1.01, 0.99, 1.5]
    report = analyse_drift([point("solo", s, v) for s, v in enumerate(values)], **rule)
    assert report.flagged_robots == ("solo",)
    assert {f.against for f in report.flags} == {AGAINST_HISTORY}
    par = report.parameter("fs1")
    assert list(par.fleet_median) == ["s0", "s1", "s2", "s3"]
    assert par.fleet_median["s3"] == 1.5 and par.fleet_spread["s3"] == 0.0


def test_two_robots_need_min_fleet_one_for_a_fleet_comparison():
    pts = [point("a", 0, 1.0), point("b", 0, 2.0)]
    assert analyse_drift(pts, k=3.0).flags == ()
    both = analyse_drift(pts, k=3.0, min_fleet=1).flagged_robots
    assert both == ("a", "b")  # with one other robot the comparison is symmetric


@pytest.mark.parametrize("rule", [{"k": 3.0}, {}], ids=["k", "fdr"])
def test_min_history(rule):
    pts = [point("a", s, v) for s, v in enumerate([1.0, 1.5])]
    assert analyse_drift(pts, min_history=1, **rule).flagged_robots == ("a",)
    assert analyse_drift(pts, min_history=2, **rule).flags == ()


@pytest.mark.parametrize("rule", [{"k": 3.0}, {}], ids=["k", "fdr"])
def test_point_order_does_not_matter(rule):
    pts = fleet({("r3", "fs1"): 9.0}, n_robots=5)
    shuffled = list(pts)
    np.random.default_rng(1).shuffle(shuffled)
    assert analyse_drift(pts, **rule) == analyse_drift(shuffled, **rule)
    assert analyse_drift(pts, **rule).flagged_robots == ("r3",)
    par = analyse_drift(shuffled, **rule).parameter("fs1")
    times = [p.session_time for p in par.robots["r3"]]
    assert times == sorted(times)


def test_leave_one_out_statistics_match_brute_force():
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 6, 9):
        v = rng.normal(size=n)
        v[rng.random(n) < 0.3] = np.nan
        med = _loo_median(v)
        mad = _loo_mad(v, med)
        for i in range(n):
            others = np.delete(v, i)
            others = others[np.isfinite(others)]
            if others.size == 0:
                assert np.isnan(med[i])
                continue
            assert med[i] == pytest.approx(np.median(others))
            assert mad[i] == pytest.approx(np.median(np.abs(others - med[i])))
    # columns at once (the sessions of one quantity): each column as on its own
    table = rng.normal(size=(7, 5))
    table[rng.random(table.shape) < 0.3] = np.nan
    med, mad = _loo_median(table), _loo_mad(table, _loo_median(table))
    for j in range(table.shape[1]):
        np.testing.assert_array_equal(med[:, j], _loo_median(table[:, j]))
        np.testing.assert_array_equal(mad[:, j], _loo_mad(table[:, j], _loo_median(table[:, j])))


def test_mad_scale_is_scipys_normal_consistent_mad(monkeypatch):
    """The fleet band and the large-fleet fallback are scipy's median_abs_deviation."""
    from scipy import stats

    assert MAD_TO_SIGMA == pytest.approx(1.0 / stats.norm.ppf(0.75), rel=1e-15)
    v = np.array([1.0, 4.0, np.nan, 2.5, 9.0, -3.0])
    (med,), (spread,) = _band(v[:, None])
    finite = v[np.isfinite(v)]
    assert med == np.median(finite)
    assert spread == pytest.approx(stats.median_abs_deviation(finite, scale="normal"), rel=1e-15)
    assert spread == pytest.approx(MAD_TO_SIGMA * np.median(np.abs(finite - med)), rel=1e-15)
    # full sessions in one call, sessions with gaps one by one: the same numbers
    full = np.random.default_rng(2).normal(size=(9, 4))
    gappy = full.copy()
    gappy[3, 1] = np.nan
    for matrix in (full, gappy):
        med, spread = _band(matrix)
        for j in range(matrix.shape[1]):
            col = matrix[np.isfinite(matrix[:, j]), j]
            assert med[j] == np.median(col)
            assert spread[j] == pytest.approx(
                stats.median_abs_deviation(col, scale="normal"), rel=1e-15
            )
    monkeypatch.setattr(drift_scores, "EXACT_LOO_MAD_MAX", 3)  # read by _loo_mad
    assert np.all(_loo_mad(v, _loo_median(v)) == stats.median_abs_deviation(finite))


def test_nan_value_is_refused_with_a_named_error():
    pts = [point("a", 0, 1.0), point("a", 1, float("nan"))]
    with pytest.raises(DriftInputError, match=r"fs1.*a-s1-fs1.*finite") as info:
        analyse_drift(pts)
    assert isinstance(info.value, FigarohError) and isinstance(info.value, ValueError)


def test_empty_history_gives_an_empty_report():
    report = analyse_drift([])
    assert report.parameters == () and report.flags == () and report.flagged_robots == ()
    assert "No parameter history" in drift_html(report)


# --------------------------------------------------------------------------- #
# From a run index
# --------------------------------------------------------------------------- #
def record(robot, session, params, task="identification"):
    run = f"{robot}-{session}"
    return RunRecord(
        run_id=run,
        job_id=run,
        robot_id=robot,
        task=task,
        session=f"s{session}",
        session_time=f"2026-03-{session + 1:02d}T08:00:00+00:00",
        started="2026-03-01T08:00:00+00:00",
        finished="2026-03-01T08:01:00+00:00",
        config_sha256="0" * 64,
        data_sha256={},
        verdict_status="pass",
        passed=True,
        metrics={},
        parameters=tuple(ParameterEstimate(n, v, s) for n, v, s in params),
    )


@pytest.fixture
def index(tmp_path):
    with RunIndex(tmp_path / "index.sqlite") as idx:
        for r in range(6):
            for s in range(3):
                fs = 1.0 + 0.001 * r + (0.2 if (r == 4 and s == 2) else 0.0)
                idx.add(record(f"r{r}", s, [("fs1", fs, SIGMA), ("m2", 3.0 + 0.01 * s, None)]))
        yield idx


def test_drift_report_from_the_index(index):
    report = drift_report(index, k=3.0)
    assert report.flagged_robots == ("r4",)
    assert drift_report(index).flagged_robots == ("r4",)  # the default rule agrees
    assert [p.name for p in report.parameters] == ["fs1", "m2"]
    only = drift_report(index, names=["fs1"], robots=["r4", "r1"])
    assert [p.name for p in only.parameters] == ["fs1"]
    assert set(only.parameter("fs1").robots) == {"r1", "r4"}
    assert only.flagged_robots == ("r4",)  # judged against the whole fleet
    assert only.parameter("fs1").fleet_median == report.parameter("fs1").fleet_median
    assert drift_report(index, robots=["r0"]).flagged_robots == ()
    assert drift_report(index, task="calibration").parameters == ()


def test_drift_report_names_unknown_parameters_and_robots(index):
    with pytest.raises(DriftInputError, match=r"parameter 'fs9' not in the run index.*fs1"):
        drift_report(index, names=["fs9"])
    with pytest.raises(DriftInputError, match=r"robot 'r99' not in the run index"):
        drift_report(index, robots=["r99"])


def test_drift_report_leaves_out_non_finite_estimates_with_a_warning(index, caplog):
    index.add(record("r0", 3, [("fs1", float("nan"), None)]))
    with caplog.at_level("WARNING", logger="figaroh.fleet.drift"):
        report = drift_report(index, names=["fs1"])
    assert "fs1 of run r0-3" in caplog.text
    assert report.flagged_robots == ("r4",)


# --------------------------------------------------------------------------- #
# The page (structure; the browser test draws it)
# --------------------------------------------------------------------------- #
def test_page_marks_exactly_the_flagged_robots(tmp_path):
    report = analyse_drift(fleet({("r2", "fs1"): 8.0, ("r5", "fv2"): -10.0}))
    path = write_drift_html(report, tmp_path / "out" / "drift.html")
    text = open(path, encoding="utf-8").read()
    flagged = re.findall(r'<tr class="robot-row" data-robot="([^"]+)" data-flagged="true"', text)
    calm = re.findall(r'<tr class="robot-row" data-robot="([^"]+)" data-flagged="false"', text)
    assert tuple(flagged) == report.flagged_robots
    assert len(flagged) + len(calm) == 8
    assert re.findall(r'<li class="flagged-robot" data-robot="([^"]+)"', text) == ["r2", "r5"]
    assert len(re.findall(r'<tr class="flag-row"', text)) == len(report.flags)
    assert text.count('<svg class="drift-chart"') == 2
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text and "<link" not in text and " src=" not in text
    summary = re.search(r'id="drift-summary"[^>]*data-flagged-robots="([^"]+)"', text)
    assert json.loads(html.unescape(summary.group(1))) == ["r2", "r5"]


def test_page_escapes_names():
    evil = "<script>alert(1)</script>"
    pts = [point(evil, s, v, name=evil) for s, v in enumerate([1.0, 1.0, 2.0])]
    text = drift_html(analyse_drift(pts))
    assert evil not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_parameter_units():
    assert parameter_unit("fs2") == "N·m"
    assert parameter_unit("fv1") == "N·m·s/rad"
    assert parameter_unit("Ixx3") == "kg·m²" and parameter_unit("Ia1") == "kg·m²"
    assert parameter_unit("m4") == "kg" and parameter_unit("mx2") == "kg·m"
    assert parameter_unit("d_px_1") == "m" and parameter_unit("d_phiz_joint2") == "rad"
    assert parameter_unit("k_RZ_1") == ""


# --------------------------------------------------------------------------- #
# The page: rule, legend of long names, failed runs
# --------------------------------------------------------------------------- #
def test_page_states_the_rule():
    pts = fleet({("r2", "fs1"): 8.0})
    fdr = drift_html(analyse_drift(pts))
    assert 'data-rule="fdr"' in fdr and 'data-q="0.05"' in fdr and 'data-k=""' in fdr
    assert "<th>q-value</th>" in fdr and "<th>k</th>" not in fdr
    assert "Benjamini–Hochberg" in fdr
    k = drift_html(analyse_drift(pts, k=3.0))
    assert 'data-rule="k"' in k and 'data-k="3.0"' in k and 'data-q=""' in k
    assert "<th>k</th>" in k and "<th>q-value</th>" not in k


LONG = (
    "Iyz_elbow_joint - 0.5723*my_wrist_1_joint + 0.1134*mx_wrist_2_joint"
    " - 0.003121*Ixx_wrist_3_joint + 0.2519*Izz_wrist_2_joint"
)


def test_long_names_go_to_the_parameter_index():
    pts = []
    for r in range(4):
        for s in range(4):
            jump = 0.5 if (r == 1 and s >= 2) else 0.0
            pts.append(point(f"r{r}", s, 1.0 + jump, name=f"{LONG} - 0.{r}1*mz_elbow_joint"))
            pts.append(point(f"r{r}", s, 2.0, name="fs_elbow_joint"))
    report = analyse_drift(pts)
    assert report.flagged_robots == ("r1",)
    text = drift_html(report)
    # charted: the stable quantity and the flagged inertial one; the other three are counted
    assert text.count('<svg class="drift-chart"') == 2
    assert len(re.findall(r'<tr class="param-row"', text)) == 2
    assert len(re.findall(r'<tr class="structure-row"', text)) == 4
    (link,) = re.findall(
        r'<td class="params"><a href="#param-(\d+)" title="([^"]+)">([^<]+)</a>', text
    )
    assert html.unescape(link[1]) == f"{LONG} - 0.11*mz_elbow_joint"
    assert len(html.unescape(link[2])) == 40 and html.unescape(link[2]).endswith("…")
    assert f'id="param-{link[0]}"' in text
    every = drift_html(report, all_charts=True)
    assert every.count('<svg class="drift-chart"') == 5
    assert len(re.findall(r'<tr class="param-row"', every)) == 5


def test_failed_runs_section_from_hand_made_records():
    report = analyse_drift(fleet({("r2", "fs1"): 8.0}))
    assert 'id="failures"' not in drift_html(report)  # no failures given: no section
    failures = [
        {"robot_id": "r3", "error_type": "InputUnavailableError", "count": 1, "hosts": "node-2"},
        {
            "robot_id": "r2",
            "error_type": "InputMismatchError",
            "count": 3,
            "last_time": "2026-03-04T02:00:00Z",
            "hosts": ["node-1", "node-3"],
            "message": "sha256 of <data>/s03 differs",
        },
    ]
    text = drift_html(report, failures=failures)
    rows = re.findall(
        r'<tr class="failure-row" data-robot="([^"]+)" data-error="([^"]+)" '
        r'data-count="(\d+)" data-repeated="(true|false)"',
        text,
    )
    assert rows == [
        ("r2", "InputMismatchError", "3", "true"),
        ("r3", "InputUnavailableError", "1", "false"),
    ]
    assert "node-1, node-3" in text and "sha256 of &lt;data&gt;/s03 differs" in text
    empty = drift_html(report, failures=[])
    assert 'id="failures"' in empty and "No failed run recorded" in empty

    @dataclasses.dataclass
    class Summary:  # an object with the same fields works as a mapping does
        robot_id: str
        error_type: str
        count: int

    assert failure_rows([Summary("r9", "DeadlineExceeded", 2)])[0]["repeated"] is True
    with pytest.raises(ValueError, match="failure entry 0 needs robot_id"):
        failure_rows([{"robot_id": "r1", "count": 2}])
    with pytest.raises(ValueError, match="count 0"):
        failure_rows([{"robot_id": "r1", "error_type": "E", "count": 0}])
