"""The HTML pages in a real browser: headless Chromium driven by Selenium.

Each page is opened from ``file://`` with console and network logging on:

* the identification and calibration reports load with zero console errors
  and zero network requests and draw their charts (which zoom and show a
  hover read-out);
* the compare page, given the verification JSONs of two UR10 runs with
  different seeds, renders the metric diff table and the overlay; two
  incompatible runs (different configuration file, different active joints)
  are blocked until "compare anyway" is ticked;
* a joint or parameter named ``<script>alert(1)</script>`` is shown as text on
  every page (no alert, no extra script element).

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium``
package; skips (with the reason) when one is missing, unless
``FIGAROH_REQUIRE_BROWSER=1`` (CI), which makes a missing browser a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figaroh._run import git as run_git  # noqa: E402
from figaroh.identification._confidence import base_parameter_table  # noqa: E402
from figaroh.identification._edge_effects import edge_effect  # noqa: E402
from figaroh.tools.identification_report import generate_identification_report  # noqa: E402
from figaroh.tools.report import generate_calibration_report  # noqa: E402
from test_identification_report import XSS, make_calibration_fixture  # noqa: E402

#: Set to 1 (as .ci/run does) to turn a missing browser stack into a failure, not a skip.
REQUIRE_BROWSER = os.environ.get("FIGAROH_REQUIRE_BROWSER", "") not in ("", "0")


def _unavailable(reason):
    if REQUIRE_BROWSER:
        pytest.fail(f"FIGAROH_REQUIRE_BROWSER is set but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


try:
    from selenium import webdriver
except ImportError:
    _unavailable("selenium is not installed (pip install selenium)")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1200,1000",
)


def _find(*names):
    for name in names:
        path = shutil.which(name) or (name if os.path.isfile(name) else None)
        if path:
            return path
    return None


@contextlib.contextmanager
def chromium_driver():
    """A headless, offline Chromium WebDriver (skip/fail via ``_unavailable`` when absent)."""
    chromium = _find("chromium", "/usr/bin/chromium", "chromium-browser")
    driver_path = _find("chromedriver", "/usr/bin/chromedriver")
    if chromium is None:
        _unavailable("chromium is not installed (apt-get install chromium)")
    if driver_path is None:
        _unavailable("chromedriver is not installed (apt-get install chromium-driver)")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not download anything
    profile = tempfile.mkdtemp(prefix="figaroh-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
    except Exception as exc:  # noqa: BLE001 - report why the browser cannot start
        shutil.rmtree(profile, ignore_errors=True)
        _unavailable(f"headless chromium could not start: {type(exc).__name__}: {exc}")
    driver.set_page_load_timeout(30)
    driver.get("about:blank")
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    with chromium_driver() as driver:
        yield driver


def _drain(driver):
    driver.get_log("browser")
    driver.get_log("performance")


def _requests(driver, page_url):
    """URLs requested by the page (CDP ``Network.requestWillBeSent``), the page itself excluded.

    Counts every request made from the page's document, and any request to a
    network scheme whatever its origin (the browser's own ``chrome://`` pages
    are not the page's doing).
    """
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.requestWillBeSent":
            continue
        params = message["params"]
        url = params["request"]["url"]
        if url == page_url:
            continue
        from_page = params.get("documentURL") == page_url
        if from_page or url.split(":", 1)[0] in ("http", "https", "ws", "wss", "ftp"):
            urls.append(url)
    return urls


def _errors(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _no_alert(driver):
    try:
        alert = driver.switch_to.alert
    except NoAlertPresentException:
        return True
    alert.dismiss()
    return False


def open_page(driver, path):
    """Open ``path`` from file:// and return its URL (logs drained before)."""
    _drain(driver)
    url = Path(path).resolve().as_uri()
    driver.get(url)
    return url


def assert_clean(driver, url):
    assert _no_alert(driver)
    assert _errors(driver) == []
    assert _requests(driver, url) == []
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0


def chart_state(driver, css):
    return driver.execute_script(
        """
        var svg = document.querySelector(arguments[0]);
        var paths = Array.from(svg.querySelectorAll('path'));
        return {points: Number(svg.getAttribute('data-points')),
                paths: paths.length,
                longest: Math.max(0, ...paths.map(p => (p.getAttribute('d') || '').length)),
                x0: Number(svg.getAttribute('data-x0')), x1: Number(svg.getAttribute('data-x1')),
                zoomed: svg.getAttribute('data-zoomed'), hover: svg.getAttribute('data-hover'),
                tooltip: svg.querySelector('.chart-hover') ?
                    svg.querySelector('.chart-hover').getAttribute('visibility') : null,
                tip: Array.from(svg.querySelectorAll('.chart-tooltip text'))
                    .map(t => t.textContent)};
        """,
        css,
    )


def wheel(driver, css, delta):
    driver.execute_script(
        """
        var svg = document.querySelector(arguments[0]), r = svg.getBoundingClientRect();
        svg.dispatchEvent(new WheelEvent('wheel', {deltaY: arguments[1], bubbles: true,
            cancelable: true, clientX: r.left + r.width * 0.5, clientY: r.top + r.height * 0.5}));
        """,
        css,
        delta,
    )


def exercise_chart(driver, css, n_lines, min_points=1000, x_label="sample"):
    """The chart is drawn, zooms on the wheel and by dragging, shows a hover read-out."""
    state = chart_state(driver, css)
    assert state["paths"] == n_lines and state["points"] >= min_points
    assert state["longest"] > 10 * min_points / n_lines  # "Mx y" ≥ 10 characters per point
    full = (state["x0"], state["x1"])
    wheel(driver, css, -120)
    zoomed = chart_state(driver, css)
    assert zoomed["zoomed"] == "true"
    assert full[0] <= zoomed["x0"] < zoomed["x1"] <= full[1]
    assert zoomed["x1"] - zoomed["x0"] == pytest.approx(0.8 * (full[1] - full[0]), rel=1e-6)
    svg = driver.find_element(By.CSS_SELECTOR, css)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", svg)
    ActionChains(driver).double_click(svg).perform()
    assert chart_state(driver, css)["zoomed"] == "false"
    width = svg.size["width"]
    ActionChains(driver).move_to_element_with_offset(
        svg, -int(0.15 * width), 0
    ).click_and_hold().move_by_offset(int(0.12 * width), 0).release().perform()
    dragged = chart_state(driver, css)
    assert dragged["zoomed"] == "true" and dragged["x1"] - dragged["x0"] < 0.3 * (full[1] - full[0])
    ActionChains(driver).move_to_element_with_offset(svg, 0, 0).perform()
    hover = chart_state(driver, css)
    assert hover["tooltip"] == "visible" and hover["hover"] is not None
    assert dragged["x0"] <= float(hover["hover"]) <= dragged["x1"]
    assert len(hover["tip"]) == n_lines + 1 and hover["tip"][0].startswith(x_label + " ")
    return hover


# ---------------------------------------------------------------------------
# Data: UR10 runs and their exports
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two UR10 runs (seeds 0 and 1) and a third with a different configuration file."""
    from conftest import load_example

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ur10"))
    from report_demo import identify, run_demo, write_run

    CONFIG = load_example("ur10/identification.py", "ur10_identification").CONFIG
    from simulate import load_ur10

    out = tmp_path_factory.mktemp("browser")
    demo_runs, compare = run_demo(out, seeds=(0, 1), n_samples=1500)
    variant = out / "ur10_variant.yaml"
    variant.write_text(f'extends: "{CONFIG}"\n# same settings, another file\n', encoding="utf-8")
    other = identify(out / "variant" / "data", 2, 1500, config=variant, robot=load_ur10())
    _, other_json = write_run(other, out / "variant")
    return {"out": out, "runs": demo_runs, "compare": compare, "variant_json": other_json}


def _edited(src, dst, edit):
    data = json.loads(Path(src).read_text())
    edit(data)
    Path(dst).write_text(json.dumps(data, allow_nan=False), encoding="utf-8")
    return dst


# ---------------------------------------------------------------------------
# Report pages
# ---------------------------------------------------------------------------


def test_identification_report_loads_clean_and_draws(browser, runs):
    url = open_page(browser, runs["runs"][0].report)
    assert_clean(browser, url)
    assert "Identification Quality Report" in browser.title
    joints = runs["runs"][0].ident.identif_config["active_joints"]
    css = "#validation-panel svg.multi-chart[data-joint='2']"
    hover = exercise_chart(browser, css, 3, x_label="t [s]")
    assert [t.split(":")[0] for t in hover["tip"][1:]] == [
        "measured",
        "nominal (CAD) prediction",
        "identified prediction",
    ]
    titles = browser.find_elements(By.CSS_SELECTOR, "#validation-panel .joint-cell h3")
    assert [t.text for t in titles] == [f"{j} [N·m]" for j in joints]
    assert _errors(browser) == [] and _requests(browser, url) == []


#: Set to 1 to refresh the report screenshots committed under docs/img/.
UPDATE_DOCS_SCREENSHOTS = os.environ.get("FIGAROH_DOCS_SCREENSHOTS", "") not in ("", "0")
DOCS_IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


@pytest.fixture(scope="module")
def physical_report(tmp_path_factory):
    """A simulated UR10 (300 samples) identified with select_stage: physical_fit."""
    import contextlib
    import io

    from conftest import load_example

    ur10 = load_example("ur10/identification.py", "ur10_identification")
    robot = ur10.load_ur10()
    folder = tmp_path_factory.mktemp("physical_report")
    train, validation = ur10.generate_ur10_data(
        folder / "data", 300, noise_std=0.05, seed=3, robot=robot
    )
    config = folder / "config.yaml"
    config.write_text(
        f'extends: "{ur10.CONFIG}"\ntasks:\n  identification:\n    select_stage: physical_fit\n',
        encoding="utf-8",
    )
    ident = ur10.UR10Identification(robot, config, data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    path = folder / "report.html"
    # figaroh as an installed package (not its source checkout), as a user runs it
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_git, "_PACKAGE_DIR", folder / "site-packages" / "figaroh")
        ident.initialize()
        with contextlib.redirect_stdout(io.StringIO()):
            ident.solve(decimate=False, plotting=False)
        generate_identification_report(ident, output_path=str(path))
    return ident, path, folder


def _visible_text(driver, css):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.innerText)", css
    )


def _shoot(driver, css, folder, name):
    element = driver.find_element(By.CSS_SELECTOR, css)
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", element)
    path = Path(folder) / name
    element.screenshot(str(path))
    assert path.stat().st_size > 5000  # a real picture, not an empty box
    if UPDATE_DOCS_SCREENSHOTS:
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMG / name)
    return path


def test_identification_report_panels_are_present_and_readable(browser, physical_report):
    ident, path, folder = physical_report
    joints = list(ident.identif_config["active_joints"])
    url = open_page(browser, path)
    assert_clean(browser, url)
    # verdict panel: status headline and one row per check with name / value / limit / status
    verdict = ident.verify()
    panel = browser.find_element(By.CSS_SELECTOR, "#verdict .verdict-panel")
    assert panel.is_displayed() and panel.get_attribute("data-status") == verdict.status
    assert "NOT EVALUATED" in panel.text and "No acceptance limits were given" in panel.text
    rows = _visible_text(browser, "#verdict tr.check")
    assert len(rows) == len(verdict.checks)
    assert [r.split("\t")[0] for r in rows] == [c.name for c in verdict.checks]
    # every joint's time chart: measured and identified drawn over time [s]
    cells = browser.find_elements(By.CSS_SELECTOR, "#fit-panel .joint-cell")
    assert [c.find_element(By.TAG_NAME, "h3").text for c in cells] == [f"{j} [N·m]" for j in joints]
    for k in range(len(joints)):
        state = chart_state(browser, f"#fit-panel svg.multi-chart[data-joint='{k}']")
        assert state["paths"] == 2 and state["points"] >= 2 * 300 * 0.9
        assert state["x1"] == pytest.approx(float(ident.processed_data["timestamps"][-1][0]))
    hover = exercise_chart(browser, "#fit-panel svg.multi-chart[data-joint='1']", 2, 300, "t [s]")
    assert [t.split(":")[0] for t in hover["tip"][1:]] == ["measured", "identified"]
    for cell in cells:
        box = cell.find_element(By.TAG_NAME, "svg").rect
        assert box["width"] > 380 and box["height"] > 150  # readable, not a thumbnail
    # residual histograms: one per joint, bars drawn; the log starts and ends moving, so
    # figaroh 1.0.2's zero-padded median filter distorts its ends: those samples are drawn
    # as their own series and left out of the histograms
    edges = edge_effect(ident)
    assert edges is not None and edges.zero_padding
    hists = browser.find_elements(By.CSS_SELECTOR, "#residual-panel svg.histogram")
    assert len(hists) == len(joints)
    for h in hists:
        assert h.get_attribute("data-count") == str(300 - 2 * edges.n_edge)
        assert h.rect["width"] > 380
        heights = [
            float(b.get_attribute("height")) for b in h.find_elements(By.CSS_SELECTOR, "rect.bin")
        ]
        assert len(heights) == 30 and max(heights) > 50
    assert len(browser.find_elements(By.CSS_SELECTOR, "#residual-panel svg.multi-chart")) == len(
        joints
    )
    edge_chart = chart_state(browser, "#residual-panel svg.multi-chart[data-joint='1']")
    assert edge_chart["paths"] == 2  # the residual, and the edge samples over it
    assert "edge samples" in browser.find_element(By.CSS_SELECTOR, "#residual-panel").text
    # parameter table: one row per base parameter, the 95 % interval and the shared grade
    table = base_parameter_table(ident)
    param_rows = browser.find_elements(By.CSS_SELECTOR, "#uncertainty tbody tr")
    assert len(param_rows) == len(table.rows)
    for row, expected in zip(param_rows, table.ranked(), strict=True):
        cells_text = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert cells_text[0] == expected.name
        low, high = (float(v) for v in cells_text[3].strip("[]").split(", "))
        assert low == pytest.approx(expected.ci_low, rel=1e-3, abs=1e-9)
        assert high == pytest.approx(expected.ci_high, rel=1e-3, abs=1e-9)
        assert cells_text[7].startswith(expected.grade.tier)
    # per-link table: one row per link, mass / CoM / principal moments / feasibility
    link_rows = browser.find_elements(By.CSS_SELECTOR, "#links tr[data-link]")
    assert [r.get_attribute("data-link") for r in link_rows] == joints
    feasibility = ident.selected.feasibility
    for row in link_rows:
        cells_text = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        joint = cells_text[0]
        assert float(cells_text[1]) == pytest.approx(feasibility[joint]["mass"], rel=1e-3)
        assert len(cells_text[3].split(",")) == 3 and len(cells_text[4].split(",")) == 3
        assert cells_text[6] == ("feasible" if feasibility[joint]["ok"] else "infeasible")
    # provenance of an installed figaroh: the git row says so plainly
    provenance = _visible_text(browser, "#provenance tr")
    assert f"Git commit\t{run_git.NOT_A_CHECKOUT}" in provenance
    assert not [r for r in provenance if "fatal" in r or "unavailable:" in r]
    # one account of the physical stages: the summary and the section agree
    summary = browser.find_element(By.CSS_SELECTOR, "#summary").text
    consistency = _visible_text(browser, "#consistency tr")
    physical_row = next(r for r in consistency if r.startswith("Physical stage"))
    assert "physical ok" in summary and physical_row.split("\t")[1].startswith("ok")
    assert not [r for r in consistency if r.endswith("\tnot run")]
    # screenshots (viewed when the docs images are refreshed), every chart at full range
    browser.execute_script(
        "document.querySelectorAll('svg.multi-chart').forEach(s => s.figarohChart.reset())"
    )
    for css, name in (
        ("#verdict", "report_verdict.png"),
        ("#provenance", "report_provenance.png"),
        ("#summary", "report_summary.png"),
        ("#fit-time", "report_fit_time.png"),
        ("#residual-time", "report_residuals.png"),
        ("#links", "report_links.png"),
    ):
        _shoot(browser, css, folder, name)
    # the top of the parameter table (the least certain rows first): the window's height
    _shoot(browser, "#uncertainty", folder, "report_parameters.png")
    assert _errors(browser) == [] and _requests(browser, url) == []


def test_calibration_report_loads_clean_and_draws(browser, tmp_path):
    path = tmp_path / "calibration_report.html"
    generate_calibration_report(make_calibration_fixture(), output_path=str(path))
    url = open_page(browser, path)
    assert_clean(browser, url)
    assert "Calibration Quality Report" in browser.title
    # 12 postures per marker: residual norm, calibrated and nominal, zoom + hover
    exercise_chart(browser, "#pose-panel svg.multi-chart[data-joint='1']", 2, 12, "pose")
    bars = browser.find_elements(By.CSS_SELECTOR, ".bar-fill")
    widths = [b.rect["width"] for b in bars]  # σ / scale, sorted by decreasing σ / scale
    assert len(bars) == 6 and widths == sorted(widths, reverse=True) and widths[0] > 5
    assert _errors(browser) == []


def test_reports_show_script_names_as_text(browser, runs, tmp_path, monkeypatch):
    ident = runs["runs"][0].ident
    names = list(ident.result["base parameters names"])
    monkeypatch.setitem(ident.result, "base parameters names", [XSS] + names[1:])
    monkeypatch.setitem(ident.identif_config, "active_joints", [XSS] + ident.fit_joints()[1:])
    ident_path = tmp_path / "ident_xss.html"
    generate_identification_report(ident, output_path=str(ident_path), title=XSS)
    calib_path = tmp_path / "calib_xss.html"
    generate_calibration_report(
        make_calibration_fixture(dof_name=XSS, param_name=XSS), output_path=str(calib_path)
    )
    for path, title in ((ident_path, XSS), (calib_path, "ur10-sn42 (ur10)")):
        url = open_page(browser, path)
        assert_clean(browser, url)
        assert browser.execute_script("return document.scripts.length") == 1
        assert browser.title.startswith(title)
        body = browser.find_element(By.TAG_NAME, "body").text
        assert body.count(XSS) >= 3  # heading or table rows: as text
    titles = browser.find_elements(By.CSS_SELECTOR, "#axis-panel .joint-cell h3")
    assert titles[0].text == f"marker 1 {XSS} [mm]"  # DOF name in a chart title, as text


# ---------------------------------------------------------------------------
# Compare page
# ---------------------------------------------------------------------------


def load_pair(driver, page, a, b):
    url = open_page(driver, page)
    driver.find_element(By.ID, "file-a").send_keys(str(Path(a).resolve()))
    driver.find_element(By.ID, "file-b").send_keys(str(Path(b).resolve()))
    deadline = time.time() + 10
    while time.time() < deadline:
        state = driver.execute_script("return document.body.getAttribute('data-compat')")
        if state in ("ok", "blocked", "forced"):
            return url, state
        time.sleep(0.05)
    raise AssertionError(f"compare page stuck in state {state!r}")


def test_compare_page_two_compatible_runs(browser, runs):
    r0, r1 = runs["runs"]
    url, state = load_pair(browser, runs["compare"], r0.verification, r1.verification)
    assert state == "ok"
    assert browser.find_element(By.ID, "results-section").is_displayed()
    assert not browser.find_element(By.ID, "force-compare-row").is_displayed()
    assert not browser.find_element(By.ID, "forced-banner").is_displayed()
    a = json.loads(Path(r0.verification).read_text())
    b = json.loads(Path(r1.verification).read_text())
    rows = browser.find_elements(By.CSS_SELECTOR, "#diff-table-body tr[data-metric]")
    assert [r.get_attribute("data-metric") for r in rows] == list(a["metrics"])
    joint = r0.ident.identif_config["active_joints"][2]
    key = f"validation_rmse:{joint}"
    cells = browser.find_element(
        By.CSS_SELECTOR, f'#diff-table-body tr[data-metric="{key}"]'
    ).find_elements(By.TAG_NAME, "td")
    va, vb = a["metrics"][key], b["metrics"][key]
    assert [float(c.text) for c in cells[1:4]] == pytest.approx([va, vb, vb - va], rel=1e-4)
    assert cells[4].text == f"{(vb - va) / abs(va) * 100:+.1f}%"
    assert ("better" if vb < va else "worse") in cells[3].get_attribute("class")
    checks = browser.find_elements(By.CSS_SELECTOR, "#checks-table-body tr")
    assert len(checks) == len(a["checks"])
    # the overlay: one line per run, zoom + hover
    hover = exercise_chart(browser, "#compare-svg", 2)
    assert [t.split(":")[0] for t in hover["tip"][1:]] == ["Run A", "Run B"]
    browser.find_element(By.ID, "compare-toggle-b").click()
    assert chart_state(browser, "#compare-svg")["paths"] == 1
    browser.find_element(By.ID, "compare-reset").click()
    assert chart_state(browser, "#compare-svg")["zoomed"] == "false"
    assert _no_alert(browser) and _errors(browser) == []
    assert _requests(browser, url) == []


def test_compare_page_blocks_incompatible_runs_until_forced(browser, runs, tmp_path):
    r0 = runs["runs"][0]
    _, state = load_pair(browser, runs["compare"], r0.verification, runs["variant_json"])
    assert state == "blocked"
    message = browser.find_element(By.ID, "compat-message").text
    assert "blocked" in message and "Configuration sha256" in message
    assert not browser.find_element(By.ID, "results-section").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#diff-table-body tr") == []
    force = browser.find_element(By.ID, "force-compare")
    assert force.is_displayed() and not force.is_selected()
    force.click()
    assert browser.execute_script("return document.body.getAttribute('data-compat')") == "forced"
    assert browser.find_element(By.ID, "results-section").is_displayed()
    assert browser.find_element(By.ID, "forced-banner").is_displayed()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#diff-table-body tr")) > 10
    assert chart_state(browser, "#compare-svg")["paths"] == 2
    # loading another file withdraws the override
    again = tmp_path / "variant_again.json"
    shutil.copyfile(runs["variant_json"], again)
    browser.find_element(By.ID, "file-b").send_keys(str(again))
    time.sleep(0.3)
    assert "variant_again.json" in browser.find_element(By.ID, "filename-b").text
    assert not browser.find_element(By.ID, "force-compare").is_selected()
    assert not browser.find_element(By.ID, "results-section").is_displayed()

    # different active joints (a run on five joints) are blocked as well
    def drop_joint(data):
        data["compat"]["active_joints"] = data["compat"]["active_joints"][:5]

    five = _edited(r0.verification, tmp_path / "five_joints.json", drop_joint)
    _, state = load_pair(browser, runs["compare"], runs["runs"][1].verification, five)
    assert state == "blocked"
    assert "Active joints" in browser.find_element(By.ID, "compat-message").text
    assert _errors(browser) == []


def test_compare_page_shows_script_names_as_text(browser, runs, tmp_path):
    r0, r1 = runs["runs"]
    joint = r0.ident.identif_config["active_joints"][0]

    def evil(data):
        data["compat"]["active_joints"][0] = XSS
        data["series"]["joint_names"][0] = XSS
        for key in ("nominal", "fitted", "measured"):
            data["series"][key][XSS] = data["series"][key].pop(joint)
        data["metrics"][f"validation_rmse:{XSS}"] = data["metrics"].pop(f"validation_rmse:{joint}")
        data["metadata"]["run_id"] = XSS

    a = _edited(r0.verification, tmp_path / "a.json", evil)
    b = _edited(r1.verification, tmp_path / "b.json", evil)
    url, state = load_pair(browser, runs["compare"], a, b)
    assert state == "ok"
    assert _no_alert(browser)
    assert browser.execute_script("return document.scripts.length") == 2
    assert browser.find_element(By.CSS_SELECTOR, "#compare-select option").text == XSS
    row = browser.find_element(
        By.CSS_SELECTOR, f'#diff-table-body tr[data-metric="validation_rmse:{XSS}"]'
    )
    assert row.find_element(By.TAG_NAME, "td").text == f"validation_rmse:{XSS}"
    assert XSS in browser.find_element(By.ID, "compat-table").text
    assert chart_state(browser, "#compare-svg")["paths"] == 2
    assert _errors(browser) == [] and _requests(browser, url) == []


def test_compare_page_rejects_a_file_that_is_not_an_export(browser, runs, tmp_path):
    bogus = tmp_path / "bogus.json"
    bogus.write_text(json.dumps({"hello": "world"}), encoding="utf-8")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    open_page(browser, runs["compare"])
    browser.find_element(By.ID, "file-a").send_keys(str(bogus))
    browser.find_element(By.ID, "file-b").send_keys(str(broken))
    time.sleep(0.3)
    assert "not a *_verification.json export" in browser.find_element(By.ID, "filename-a").text
    assert "not valid JSON" in browser.find_element(By.ID, "filename-b").text
    assert not browser.find_element(By.ID, "compat-section").is_displayed()
    assert _errors(browser) == []


def test_compare_page_accepts_two_files_dropped_at_once(browser, runs):
    r0, r1 = runs["runs"]
    url = open_page(browser, runs["compare"])
    browser.execute_script(
        """
        var dt = new DataTransfer();
        dt.items.add(new File([arguments[0]], "seed0_verification.json",
                              {type: "application/json"}));
        dt.items.add(new File([arguments[1]], "seed1_verification.json",
                              {type: "application/json"}));
        var zone = document.getElementById("zone-b");
        zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true,
                                                      cancelable: true}));
        zone.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true,
                                                  cancelable: true}));
        """,
        Path(r0.verification).read_text(),
        Path(r1.verification).read_text(),
    )
    deadline = time.time() + 10
    while browser.execute_script("return document.body.getAttribute('data-compat')") != "ok":
        assert time.time() < deadline, "dropped files were not loaded"
        time.sleep(0.05)
    assert browser.find_element(By.ID, "filename-a").text.startswith("seed0_verification.json")
    assert browser.find_element(By.ID, "filename-b").text.startswith("seed1_verification.json")
    assert chart_state(browser, "#compare-svg")["paths"] == 2
    assert _errors(browser) == [] and _requests(browser, url) == []


def test_compare_page_overlays_series_stored_as_aligned_lists(browser, runs, tmp_path):
    """``series`` blocks may be lists aligned with the names (calibration export layout)."""
    r0, r1 = runs["runs"]

    def as_lists(data):
        names = data["series"]["joint_names"]
        for key in ("nominal", "fitted", "measured"):
            data["series"][key] = [data["series"][key][n] for n in names]

    a = _edited(r0.verification, tmp_path / "lists.json", as_lists)
    _, state = load_pair(browser, runs["compare"], a, r1.verification)
    assert state == "ok"
    select = browser.find_element(By.ID, "compare-select")
    select.find_elements(By.TAG_NAME, "option")[3].click()
    assert chart_state(browser, "#compare-svg")["paths"] == 2
    # the residual drawn for run A is measured - fitted of the fourth joint
    joint = r0.ident.identif_config["active_joints"][3]
    data = json.loads(Path(r0.verification).read_text())
    expected = data["series"]["measured"][joint][10] - data["series"]["fitted"][joint][10]
    drawn = browser.execute_script("return window.figarohCompare.chart().series[0].y[10]")
    assert drawn == pytest.approx(expected, rel=1e-12)
    assert _errors(browser) == []
