"""The calibration HTML report in a real browser (headless Chromium, Selenium).

A simulated UR10 calibration (30 training and 20 held-out postures, one
6-DoF marker, known joint-placement errors) and a two-marker position-only
look-alike are rendered; the page must load from ``file://`` with no console
error and no network request, and show:

* the verdict panel (status, one row per check with value / limit / status);
* one residual-norm chart per marker and kind (position ‖Δp‖ [mm],
  orientation ‖Δφ‖ [mrad]) over the poses, calibrated vs nominal, and one
  chart per marker axis with the histogram of its calibrated residual;
* the summary: position [mm] and orientation [deg] errors apart, and what the
  solver reported;
* the parameter table: value, absolute σ, the 95 % confidence interval,
  σ / |value|, σ / scale and the shared grade;
* the optimisation trace (the run's own, or the cost path of its LM fit).

Screenshots are saved by the test (and copied into ``docs/img/`` as
``report_calibration_*.png`` with ``FIGAROH_DOCS_SCREENSHOTS=1``). Skips like
:mod:`test_browser_reports` when the browser stack is missing.
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_browser_reports as browser_reports  # noqa: E402
from figaroh._run.optimisation_trace import (  # noqa: E402
    OptimisationTrace,
    StageOutcome,
    TraceEntry,
)
from figaroh.tools.report import calibrator_parameter_table, generate_calibration_report  # noqa: E402
from test_browser_reports import (  # noqa: E402
    _errors,
    _requests,
    _shoot,
    _visible_text,
    assert_clean,
    chart_state,
    exercise_chart,
    open_page,
)
from test_identification_report import make_calibration_fixture  # noqa: E402

#: The module-scoped headless Chromium of the identification report tests.
browser = browser_reports.browser

By = pytest.importorskip("selenium.webdriver.common.by").By

N_TRAIN, N_TEST = 30, 20
#: Acceptance limits of the held-out errors (what a cell would accept).
LIMITS = {
    "position_rmse_mm": {"threshold": 1.5, "comparison": "max"},
    "orientation_rmse_deg": {"threshold": 0.5, "comparison": "max"},
}


@pytest.fixture(scope="module")
def ur10_calibration(tmp_path_factory):
    """A solved simulated UR10 calibration with held-out postures, and its report."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ur10"))
    from calibration import run, simulate_ur10_calibration

    folder = tmp_path_factory.mktemp("calibration_report")
    train, test, _ = simulate_ur10_calibration(
        folder / "sim", n_train=N_TRAIN, n_test=N_TEST, pos_noise=5e-4, rot_noise=2e-3
    )
    with contextlib.redirect_stdout(io.StringIO()):
        calib = run(train, validation=test)
    if getattr(calib, "optimisation_trace", None) is None:
        calib.optimisation_trace = _replayed_trace(calib)
    path = folder / "calibration_report.html"
    generate_calibration_report(calib, output_path=str(path), verdict=calib.verify(LIMITS))
    return calib, path, folder


def _replayed_trace(calib):
    """The cost ½‖r‖² of the run's LM fit from its start, after 1, 2, … residual evaluations.

    Used when the run recorded no trace of its own: the deterministic MINPACK fit is
    replayed from the same start (the closed-form frame guess, joint parameters 0) with a
    growing evaluation budget until it converges, so each entry is the cost the fit had
    reached — a real path of this fit, one point per evaluation.
    """
    objective = calib._objective_model
    x0 = objective.initial_vector()
    r0 = np.asarray(calib._objective(x0), dtype=float)
    entries = [TraceEntry("lm:pass 1", 0, float(0.5 * r0 @ r0))]
    for k in range(1, 200):
        res = objective.least_squares(x0, "lm", max_nfev=k)
        entries.append(TraceEntry("lm:pass 1", k, float(res.cost)))
        if res.status != 0:  # converged (0: the evaluation budget ran out)
            break
    outcome = StageOutcome("lm:pass 1", "converged", str(res.message))
    return OptimisationTrace().with_entries(*entries).with_outcome(outcome)


def _number(text):
    return float(text.replace("−", "-"))


def test_calibration_report_panels_are_present_and_readable(browser, ur10_calibration):
    calib, path, folder = ur10_calibration
    url = open_page(browser, path)
    assert_clean(browser, url)
    assert "Calibration Quality Report" in browser.title
    # verdict panel: status headline and one row per check with name / value / limit / status
    verdict = calib.verify(LIMITS)
    panel = browser.find_element(By.CSS_SELECTOR, "#verdict .verdict-panel")
    assert panel.is_displayed() and panel.get_attribute("data-status") == verdict.status == "pass"
    assert "PASS" in panel.text
    rows = [r.split("\t") for r in _visible_text(browser, "#verdict tr.check")]
    assert [r[0] for r in rows] == [c.name for c in verdict.checks]
    limits = {r[0]: (r[1], r[2], r[3]) for r in rows}
    val = calib.results_data["validation_metrics"]
    value, limit, status = limits["position_rmse_mm"]
    assert _number(value) == pytest.approx(val["pos_rmse_calibrated_mm"], rel=1e-3)
    assert (limit, status) == ("≤ 1.5", "pass")
    assert limits["orientation_rmse_deg"][1:] == ("≤ 0.5", "pass")
    # residual norms: one chart per marker and kind, calibrated drawn, nominal behind a toggle
    cells = browser.find_elements(By.CSS_SELECTOR, "#pose-panel .joint-cell")
    titles = [c.find_element(By.TAG_NAME, "h3").text for c in cells]
    assert titles == ["marker 1 position ‖Δp‖ [mm]", "marker 1 orientation ‖Δφ‖ [mrad]"]
    first = chart_state(browser, "#pose-panel svg.multi-chart[data-joint='0']")
    assert first["paths"] == 1 and first["points"] == N_TEST and first["x1"] == N_TEST - 1
    drawn = browser.execute_script(
        "return document.querySelector(\"#pose-panel svg.multi-chart[data-joint='0']\")"
        ".figarohChart.series[0].y"
    )
    rms = math.sqrt(np.mean(np.square(drawn)))
    assert rms == pytest.approx(val["pos_rmse_calibrated_mm"], rel=1e-9)
    hover = exercise_chart(browser, "#pose-panel svg.multi-chart[data-joint='1']", 1, 10, "pose")
    assert hover["tip"][1].startswith("calibrated: ") and hover["tip"][1].endswith(" mrad")
    toggle = browser.find_element(By.CSS_SELECTOR, "#pose-panel input[data-role='nominal']")
    assert not toggle.is_selected()  # the nominal model is metres off: hidden at first
    toggle.click()
    assert chart_state(browser, "#pose-panel svg.multi-chart[data-joint='0']")["paths"] == 2
    toggle.click()
    for cell in cells:
        box = cell.find_element(By.TAG_NAME, "svg").rect
        assert box["width"] > 380 and box["height"] > 150  # readable, not a thumbnail
    # per-axis residuals and their histograms: six axes of the 6-DoF marker
    axis_cells = browser.find_elements(By.CSS_SELECTOR, "#axis-panel .joint-cell")
    assert [c.find_element(By.TAG_NAME, "h3").text for c in axis_cells] == [
        f"marker 1 {a} [{u}]"
        for a, u in zip(("x", "y", "z", "rx", "ry", "rz"), ["mm"] * 3 + ["mrad"] * 3, strict=True)
    ]
    hists = browser.find_elements(By.CSS_SELECTOR, "#axis-panel svg.histogram")
    assert len(hists) == 6
    for h in hists:
        assert h.get_attribute("data-count") == str(N_TEST) and h.rect["width"] > 380
        heights = [float(b.get_attribute("height")) for b in h.find_elements(By.TAG_NAME, "rect")]
        assert max(heights) > 50
    # parameter table: value, σ, the 95 % interval value ± t·σ (Student t on the residual
    # degrees of freedom), σ/|value|, σ/scale and the shared grade
    names = list(calib.calib_config["param_name"])
    table = browser.find_elements(By.CSS_SELECTOR, "#uncertainty tbody tr")
    assert len(table) == len(names)
    ev = calib.evaluation_metrics
    stdev = dict(zip(names, ev["param_stdev"], strict=True))
    value = dict(zip(names, ev["param_values"], strict=True))
    t = scipy.stats.t.ppf(0.975, ev["residual_dof"])
    grades = {r.name: r.grade for r in calibrator_parameter_table(calib).rows}
    for row in table:
        cells_text = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        name = cells_text[0]
        assert _number(cells_text[1]) == pytest.approx(value[name], rel=1e-3, abs=1e-9)
        assert _number(cells_text[2]) == pytest.approx(stdev[name], rel=1e-3)
        low, high = (_number(v) for v in cells_text[3].strip("[]").split(", "))
        assert low == pytest.approx(value[name] - t * stdev[name], rel=1e-3, abs=1e-9)
        assert high == pytest.approx(value[name] + t * stdev[name], rel=1e-3, abs=1e-9)
        assert cells_text[7].split("\n") == [grades[name].tier] + (
            ["not distinguishable from 0"] if grades[name].zero else []
        )
    head = browser.find_element(By.CSS_SELECTOR, "#uncertainty thead").text
    assert "σ / scale" in head and "95 % CI" in head
    # the summary: position [mm] and orientation [deg] errors apart, what the solver did
    summary = _visible_text(browser, "#summary tr")
    assert any(r.startswith("Position error [mm]\tRMSE ") and r.endswith(" mm") for r in summary)
    assert any(r.startswith("Orientation error [deg]\tRMSE ") for r in summary)
    convergence = next(r for r in summary if r.startswith("Convergence"))
    assert "residual evaluations" in convergence and "iterations 0" not in convergence
    # the optimisation trace: a table row and a chart per LM pass
    stages = browser.find_elements(By.CSS_SELECTOR, "#trace tr.trace-stage")
    assert [r.get_attribute("data-stage") for r in stages] == calib.optimisation_trace.stages()
    trace_chart = chart_state(browser, "#trace-panel svg.multi-chart[data-joint='0']")
    assert trace_chart["paths"] == 1 and trace_chart["points"] >= 2
    # screenshots (viewed when the docs images are refreshed), every chart at full range
    browser.execute_script(
        "document.querySelectorAll('svg.multi-chart').forEach(s => s.figarohChart.reset())"
    )
    size = browser.get_window_size()
    try:
        for css, name in (
            ("#verdict", "report_calibration_verdict.png"),
            ("#summary", "report_calibration_summary.png"),
            ("#pose-residuals", "report_calibration_pose_residuals.png"),
            ("#axis-residuals", "report_calibration_axis_residuals.png"),
            ("#uncertainty", "report_calibration_parameters.png"),
            ("#trace", "report_calibration_trace.png"),
        ):
            # a window as tall as the section: the screenshot holds all of it
            height = browser.find_element(By.CSS_SELECTOR, css).rect["height"]
            browser.set_window_size(size["width"], max(size["height"], int(height) + 200))
            _shoot(browser, css, folder, name)
    finally:
        browser.set_window_size(size["width"], size["height"])
    assert _errors(browser) == [] and _requests(browser, url) == []


def test_two_position_markers_get_a_chart_each(browser, tmp_path):
    """Two 3-DoF markers (no measurability mask): a norm chart and three axes per marker."""
    path = tmp_path / "two_markers.html"
    generate_calibration_report(make_calibration_fixture(n_markers=2), output_path=str(path))
    url = open_page(browser, path)
    assert_clean(browser, url)
    titles = _visible_text(browser, "#pose-panel .joint-cell h3")
    assert titles == ["marker 1 position ‖Δp‖ [mm]", "marker 2 position ‖Δp‖ [mm]"]
    axes = _visible_text(browser, "#axis-panel .joint-cell h3")
    assert axes == [f"marker {k} {a} [mm]" for k in (1, 2) for a in ("X", "Y", "Z")]
    # the nominal error (3 mm) is within reach of the calibrated one: both drawn
    state = chart_state(browser, "#axis-panel svg.multi-chart[data-joint='4']")
    assert state["paths"] == 2 and state["points"] == 24
    assert len(browser.find_elements(By.CSS_SELECTOR, "#axis-panel svg.histogram")) == 6
    assert _errors(browser) == [] and _requests(browser, url) == []
