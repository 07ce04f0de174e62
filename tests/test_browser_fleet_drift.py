"""The fleet drift report in headless Chromium (Selenium, as ``test_browser_reports``).

* the page loads from ``file://`` with no console error and no network request;
* the robots shown as flagged (robot table, flagged list, ringed chart points)
  are exactly the analysis's ``flagged_robots`` / flagged runs;
* every parameter has its chart, drawn by the chart engine (one line per robot
  plus the fleet median and band edges; with many robots only the flagged
  ones), which shows a hover read-out;
* a robot named ``<script>alert(1)</script>`` is shown as text.

A screenshot goes under ``tmp_path`` (and to ``docs/img/fleet_drift.png`` when
``FIGAROH_DOCS_SCREENSHOTS=1``). Skips when the browser stack is missing,
unless ``FIGAROH_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figaroh.fleet.drift import analyse_drift  # noqa: E402
from figaroh.fleet.drift_html import MAX_ROBOT_SERIES, write_drift_html  # noqa: E402
from figaroh.fleet.run_index import HistoryPoint  # noqa: E402
from test_browser_reports import (  # noqa: E402 - skips this module when selenium is missing
    ActionChains,
    By,
    _shoot,
    assert_clean,
    browser,  # noqa: F401 - the module-scoped Chromium fixture
    chart_state,
    open_page,
)

SIGMA = {"fs2": 0.02, "fv2": 0.01, "Ia3": 0.002}
BASE = {"fs2": 1.5, "fv2": 0.8, "Ia3": 0.09}


def fleet(n_robots, drifts, n_sessions=3, seed=11, robot=lambda r: f"robot-{r:02d}"):
    """Points of ``n_robots × n_sessions`` runs; ``drifts[(r, name)]`` in σ from session 1."""
    rng = np.random.default_rng(seed)
    points = []
    for r in range(n_robots):
        for s in range(n_sessions):
            run = f"{robot(r)}-night{s}"
            for name, sigma in SIGMA.items():
                drift = drifts.get((r, name), 0.0) * sigma if s >= 1 else 0.0
                value = BASE[name] * (1 + 0.01 * r) + 0.2 * sigma * rng.standard_normal()
                points.append(
                    HistoryPoint(
                        robot_id=robot(r),
                        run_id=run,
                        session=f"night{s}",
                        session_time=f"2026-03-{1 + 7 * s:02d}T22:00:00+00:00",
                        name=name,
                        value=value + drift,
                        sigma=sigma,
                    )
                )
    return points


def page_state(driver):
    return driver.execute_script(
        """
        const data = (sel, key) => Array.from(document.querySelectorAll(sel))
            .map(e => e.getAttribute(key));
        return {
          tableFlagged: data('#drift-robots tr[data-flagged="true"]', 'data-robot'),
          tableAll: data('#drift-robots tr[data-robot]', 'data-robot'),
          listed: data('#flagged-robots li[data-robot]', 'data-robot'),
          flagRows: data('#drift-flags tr.flag-row', 'data-run'),
          ringed: data('circle.drift-point.flagged', 'data-robot'),
          ringedRuns: data('circle.drift-point.flagged', 'data-run'),
          charts: data('svg.drift-chart', 'data-param'),
          ready: data('svg.drift-chart', 'data-drift-ready'),
          paths: Array.from(document.querySelectorAll('svg.drift-chart'))
              .map(s => s.querySelectorAll('g.chart-lines path').length),
          bands: document.querySelectorAll('svg.drift-chart .drift-band').length,
        };
        """
    )


def check_page(driver, report, shown_per_chart):
    state = page_state(driver)
    flagged = list(report.flagged_robots)
    assert state["tableFlagged"] == flagged
    assert state["listed"] == flagged
    assert sorted(set(state["ringed"])) == flagged
    assert set(state["ringedRuns"]) == {f.run_id for f in report.flags}
    assert sorted(state["tableAll"]) == list(report.robots)
    assert len(state["flagRows"]) == len(report.flags)
    assert state["charts"] == [p.name for p in report.parameters]  # every parameter, one chart
    assert state["ready"] == ["true"] * len(report.parameters)
    assert state["paths"] == [3 + n for n in shown_per_chart]  # median, band edges, robots
    assert state["bands"] == len(report.parameters)
    return state


def test_drift_report_shows_exactly_the_flagged_robots(browser, tmp_path):  # noqa: F811
    report = analyse_drift(fleet(8, {(1, "fs2"): 9.0, (6, "Ia3"): -12.0, (3, "fv2"): 1.0}))
    assert report.flagged_robots == ("robot-01", "robot-06")
    path = write_drift_html(report, tmp_path / "drift.html")
    url = open_page(browser, path)
    assert_clean(browser, url)
    assert browser.title == "Fleet drift report"
    check_page(browser, report, [8, 8, 8])
    css = 'svg.drift-chart[data-param="fs2"]'
    svg = browser.find_element(By.CSS_SELECTOR, css)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", svg)
    ActionChains(browser).move_to_element_with_offset(svg, 0, 0).perform()
    hover = chart_state(browser, css)
    assert hover["tooltip"] == "visible"
    assert hover["tip"][0].startswith("day ") and len(hover["tip"]) == 1 + 3 + 8
    # zoom keeps the overlay (σ bars, rings) drawn
    browser.execute_script("document.querySelector(arguments[0]).figarohChart.zoomTo(6, 15)", css)
    assert chart_state(browser, css)["zoomed"] == "true"
    assert browser.find_elements(By.CSS_SELECTOR, f"{css} circle.drift-point.flagged")
    browser.execute_script("document.querySelector(arguments[0]).figarohChart.reset()", css)
    assert_clean(browser, url)
    # summary, flagged robots and runs, robot table and the first chart in one picture
    browser.set_window_size(1200, 2060)
    try:
        _shoot(browser, ".page", tmp_path, "fleet_drift.png")
    finally:
        browser.set_window_size(1200, 1000)


def test_many_robots_draw_only_the_flagged_ones(browser, tmp_path):  # noqa: F811
    n = MAX_ROBOT_SERIES + 8
    report = analyse_drift(fleet(n, {(4, "fv2"): 10.0, (17, "fv2"): -10.0}))
    assert report.flagged_robots == ("robot-04", "robot-17")
    url = open_page(browser, write_drift_html(report, tmp_path / "drift.html"))
    assert_clean(browser, url)
    by_name = {"Ia3": 0, "fs2": 0, "fv2": 2}
    check_page(browser, report, [by_name[p.name] for p in report.parameters])


def test_script_names_are_text(browser, tmp_path):  # noqa: F811
    evil = "<script>alert(1)</script>"
    report = analyse_drift(fleet(5, {(2, "fs2"): 9.0}, robot=lambda r: f"{evil}{r}"))
    url = open_page(browser, write_drift_html(report, tmp_path / "drift.html"))
    assert_clean(browser, url)
    assert browser.execute_script("return document.scripts.length") == 2
    rows = browser.find_elements(By.CSS_SELECTOR, '#drift-robots tr[data-flagged="true"] td')
    assert rows[0].text == f"{evil}2"
    assert page_state(browser)["tableFlagged"] == list(report.flagged_robots)


def test_long_base_parameter_names_stay_inside_the_page(browser, tmp_path):  # noqa: F811
    """Base-parameter names are expressions: they wrap; nothing pushes the figures off the page."""
    long = {
        "fs2": "Iyz_elbow_joint - 0.5723*my_wrist_1_joint + 0.1134*mx_wrist_2_joint"
        " - 0.003121*Ixx_wrist_3_joint + 0.2519*Izz_wrist_2_joint - 0.87*mz_wrist_3_joint",
        "fv2": "fv2",
        "Ia3": "Ia3",
    }
    points = [replace(p, name=long[p.name]) for p in fleet(6, {(2, "fs2"): 9.0, (4, "fs2"): -9.0})]
    report = analyse_drift(points)
    assert report.flagged_robots == ("robot-02", "robot-04")
    browser.set_window_size(1000, 900)
    try:
        url = open_page(browser, write_drift_html(report, tmp_path / "drift.html"))
        assert_clean(browser, url)
        geometry = browser.execute_script(
            """
            const right = sel => Array.from(document.querySelectorAll(sel))
                .map(e => e.getBoundingClientRect().right);
            return {page: document.documentElement.scrollWidth, view: window.innerWidth,
                    charts: right('svg.drift-chart'), tables: right('.table-scroll'),
                    cells: right('#drift-flags td.param')};
            """
        )
    finally:
        browser.set_window_size(1200, 1000)
    assert geometry["page"] <= geometry["view"], geometry  # no sideways scroll of the page
    assert geometry["cells"] and geometry["charts"]
    assert max(geometry["charts"] + geometry["tables"]) <= geometry["view"], geometry


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_225_distinct_long_base_parameter_names(browser, tmp_path):  # noqa: F811
    """15 robots, each with its own trajectory: 225 structure-dependent quantities, all charted.

    The legend (parameter index) lists every one with its full name, every chart is
    drawn, and nothing pushes the page sideways.
    """
    rng = np.random.default_rng(3)
    points = []
    for r in range(15):
        robot = f"robot-{r:02d}"
        names = [
            f"Iyz_elbow_joint - 0.{r:02d}{k:02d}*my_wrist_1_joint + 0.1134*mx_wrist_2_joint"
            f" - 0.003121*Ixx_wrist_3_joint + 0.25{k:02d}*Izz_wrist_2_joint - 0.87*mz_wrist_3_joint"
            for k in range(15)
        ]
        for s in range(4):
            for k, name in enumerate(names):
                jump = 0.2 if (r == 6 and k == 3 and s >= 2) else 0.0
                points.append(
                    HistoryPoint(
                        robot_id=robot,
                        run_id=f"{robot}-night{s}",
                        session=f"night{s}",
                        session_time=f"2026-03-{1 + 7 * s:02d}T22:00:00+00:00",
                        name=name,
                        value=0.3 + 0.001 * rng.standard_normal() + jump,
                        sigma=0.001,
                    )
                )
    report = analyse_drift(points)
    assert len({p.name for p in report.parameters}) == 225
    assert report.flagged_robots == ("robot-06",)
    browser.set_window_size(1000, 900)
    try:
        url = open_page(browser, write_drift_html(report, tmp_path / "drift.html", all_charts=True))
        assert_clean(browser, url)
        state = browser.execute_script(
            """
            const right = sel => Array.from(document.querySelectorAll(sel))
                .map(e => e.getBoundingClientRect().right);
            return {page: document.documentElement.scrollWidth, view: window.innerWidth,
                    ready: document.querySelectorAll('svg.drift-chart[data-drift-ready="true"]')
                        .length,
                    index: Array.from(document.querySelectorAll('#drift-parameters tr.param-row'))
                        .map(r => r.dataset.param),
                    structures: document.querySelectorAll('#drift-structures tr.structure-row')
                        .length,
                    titles: right('.drift-param h3'), charts: right('svg.drift-chart'),
                    tables: right('.table-scroll')};
            """
        )
    finally:
        browser.set_window_size(1200, 1000)
    assert state["ready"] == 225
    assert sorted(state["index"]) == sorted(p.name for p in report.parameters)
    assert state["structures"] == 15
    assert state["page"] <= state["view"], state["page"]  # no sideways scroll of the page
    assert max(state["titles"] + state["charts"] + state["tables"]) <= state["view"]
