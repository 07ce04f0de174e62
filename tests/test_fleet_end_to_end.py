"""A simulated UR10 fleet through figaroh.fleet on an embedded Dask cluster.

8 UR10 "robots" × 3 nightly sessions (``examples/ur10/fleet.py``), each robot
with its own seeded exciting trajectory and noise; the Coulomb friction of
joint 2 grows by 2 and 3 N·m per session on ``robot_02`` and ``robot_05`` and
by 0.1 N·m per session (far below a 3σ threshold) on ``robot_07``. The 24
identification jobs run once on an embedded ``LocalCluster`` with 2 worker
processes and once serially (:func:`figaroh.fleet.run_serial`). Shown:

* the batch has no failure, the index holds exactly 24 runs, one per job,
  and one sealed run folder per job;
* every job's identified parameters, σ and metrics equal those of the same
  job run serially to 1e-12;
* the drift report of ``fs_shoulder_lift_joint`` flags exactly the robots
  with a detectable drift — and no other — in the analysis and on the HTML
  page opened in headless Chromium (zero console errors, zero network
  requests).

Skips when ``distributed`` is not installed; the browser test skips without
Chromium/chromedriver/selenium unless ``FIGAROH_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed", reason="figaroh.fleet needs dask[distributed] (figaroh[fleet])")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import load_example  # noqa: E402
from figaroh.fleet.drift import drift_report  # noqa: E402
from figaroh.fleet.drift_html import write_drift_html  # noqa: E402
from figaroh.fleet.jobs import load_batch  # noqa: E402
from figaroh.fleet.record import RECORD_FILE  # noqa: E402
from figaroh.fleet.run_index import RunIndex, index_path  # noqa: E402
from figaroh.fleet.runner import run_batch, run_serial  # noqa: E402
from figaroh.utils.fileio import SEAL_MARKER  # noqa: E402

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")

K = 3.0
N_ROBOTS, N_SESSIONS = 8, 3


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The simulated fleet, its batch run on 2 Dask workers and run serially."""
    root = tmp_path_factory.mktemp("fleet")
    paths = fleet_example.write_fleet(root / "fleet", robots=N_ROBOTS, sessions=N_SESSIONS, seed=0)
    jobs = load_batch(paths.batch)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    on_dask = run_batch(jobs, None, archive_root=str(root / "dask"), n_workers=2, progress=False)
    serial = run_serial(jobs, archive_root=str(root / "serial"), progress=False)
    return {"paths": paths, "jobs": jobs, "dask": on_dask, "serial": serial, "root": root}


def _by_job(result):
    return {record.job_id: record for record in result.runs}


def test_the_batch_yaml_describes_one_identification_job_per_robot_and_session(fleet):
    jobs = fleet["jobs"]
    assert len(jobs) == N_ROBOTS * N_SESSIONS
    assert {(j.robot_id, j.session) for j in jobs} == set(fleet["paths"].logs)
    assert {j.kind for j in jobs} == {"identification"}
    assert len({j.job_id for j in jobs}) == len(jobs)
    times = sorted({j.session_time for j in jobs})
    assert times == [fleet_example.session_time(s) for s in range(N_SESSIONS)]


def test_the_batch_runs_every_job_once_without_failure(fleet):
    result = fleet["dask"]
    assert result.failures == () and result.skipped == ()
    assert sorted(_by_job(result)) == sorted(j.job_id for j in fleet["jobs"])
    assert {r.run_id for r in result.runs} == {r.job_id for r in result.runs}


def test_the_index_holds_exactly_24_runs_one_per_job(fleet):
    archive = Path(fleet["dask"].archive_root)
    with RunIndex(index_path(archive)) as index:
        assert len(index) == N_ROBOTS * N_SESSIONS
        records = index.runs()
        assert index.robots() == list(fleet["paths"].robots)
    assert sorted(r.job_id for r in records) == sorted(j.job_id for j in fleet["jobs"])
    assert {(r.robot_id, r.session) for r in records} == set(fleet["paths"].logs)
    assert {r.task for r in records} == {"identification"}


def test_every_job_has_one_sealed_run_folder(fleet):
    archive = Path(fleet["dask"].archive_root)
    folders = sorted(p.parent for p in archive.rglob(RECORD_FILE))
    assert len(folders) == N_ROBOTS * N_SESSIONS
    for record in fleet["dask"].runs:
        folder = archive / record.run_dir
        assert folder in folders and (folder / SEAL_MARKER).is_file()
        assert folder.relative_to(archive).parts[:2] == (record.robot_id, "identification")
        assert folder.name.endswith(record.job_id)


def test_every_job_equals_the_same_job_run_serially_to_1e_12(fleet):
    on_dask, serial = _by_job(fleet["dask"]), _by_job(fleet["serial"])
    assert sorted(on_dask) == sorted(serial)
    for job_id, record in on_dask.items():
        reference = serial[job_id]
        assert [p.name for p in record.parameters] == [p.name for p in reference.parameters]
        values = np.array([p.value for p in record.parameters])
        expected = np.array([p.value for p in reference.parameters])
        np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-12, err_msg=job_id)
        sigma = np.array([np.nan if p.sigma is None else p.sigma for p in record.parameters])
        sigma_ref = np.array([np.nan if p.sigma is None else p.sigma for p in reference.parameters])
        np.testing.assert_allclose(sigma, sigma_ref, rtol=1e-12, atol=1e-12, err_msg=job_id)
        assert sorted(record.metrics) == sorted(reference.metrics)
        for name, value in record.metrics.items():
            np.testing.assert_allclose(value, reference.metrics[name], rtol=1e-12, atol=1e-12)
        assert (record.verdict_status, record.passed) == (
            reference.verdict_status,
            reference.passed,
        )
        assert record.data_sha256 == reference.data_sha256
        assert record.config_sha256 == reference.config_sha256
        assert record.session_time == reference.session_time


def test_the_identified_coulomb_friction_follows_the_simulated_drift(fleet):
    """fs₂ of every run within 1 N·m of its simulated value (σ ≈ 0.2 N·m, drift up to 6 N·m)."""
    truth = fleet["paths"].truth
    for record in fleet["dask"].runs:
        (fs2,) = [p for p in record.parameters if p.name == fleet_example.DRIFT_PARAMETER]
        assert abs(fs2.value - truth[(record.robot_id, record.session)]) < 1.0
        assert fs2.sigma is not None and 0.0 < fs2.sigma < 1.0


@pytest.fixture(scope="module")
def drift(fleet):
    archive = Path(fleet["dask"].archive_root)
    with RunIndex(index_path(archive)) as index:
        report = drift_report(index, names=[fleet_example.DRIFT_PARAMETER], k=K)
    html = write_drift_html(report, fleet["root"] / "drift.html")
    return report, Path(html)


def test_the_drift_report_flags_exactly_the_drifted_robots(fleet, drift):
    report, _ = drift
    expected = fleet_example.expected_flags(fleet["paths"])
    assert expected == ["robot_02", "robot_05"]
    assert list(report.flagged_robots) == expected
    assert {f.robot_id for f in report.flags} == set(expected)
    assert {f.name for f in report.flags} == {fleet_example.DRIFT_PARAMETER}
    assert all(abs(f.z) > K for f in report.flags)
    # the first session has no history and matches the fleet: the flags are later runs
    assert {f.session_time for f in report.flags} <= {
        fleet_example.session_time(s) for s in range(1, N_SESSIONS)
    }


# ---------------------------------------------------------------------------
# The drift page in headless Chromium
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser_kit():
    """``test_browser_reports`` (its Chromium helpers), or a skip/fail with the reason."""
    return importlib.import_module("test_browser_reports")


@pytest.fixture(scope="module")
def chromium(browser_kit):
    """The headless Chromium of ``test_browser_reports`` (same flags, offline)."""
    with browser_kit.chromium_driver() as driver:
        yield driver


def test_the_drift_page_flags_exactly_the_drifted_robots(fleet, drift, browser_kit, chromium):
    from selenium.webdriver.support.ui import WebDriverWait

    _, html = drift
    expected = fleet_example.expected_flags(fleet["paths"])
    url = browser_kit.open_page(chromium, html)
    WebDriverWait(chromium, 20).until(lambda d: d.execute_script(CHART_READY_JS))
    browser_kit.assert_clean(chromium, url)
    page = chromium.execute_script(PAGE_STATE_JS)
    assert page["robots"] == list(fleet["paths"].robots)
    assert page["flaggedRows"] == expected
    assert page["flaggedList"] == expected
    assert page["summary"] == expected
    assert sorted(set(page["flagRows"])) == expected
    assert set(page["flagParams"]) == {fleet_example.DRIFT_PARAMETER}
    assert sorted(set(page["ringed"])) == expected


#: True once every drift chart is drawn (``data-drift-ready``, see figaroh.fleet.drift_html).
CHART_READY_JS = """
var charts = document.querySelectorAll('svg.drift-chart');
return charts.length > 0 &&
    Array.from(charts).every(c => c.getAttribute('data-drift-ready') === 'true');
"""

#: What the page shows, read through the selectors documented in figaroh.fleet.drift_html.
PAGE_STATE_JS = """
var all = (css, attr) => Array.from(document.querySelectorAll(css)).map(e => e.getAttribute(attr));
return {
    robots: all('#drift-robots tr.robot-row', 'data-robot'),
    flaggedRows: all('#drift-robots tr[data-flagged="true"]', 'data-robot').sort(),
    flaggedList: all('#flagged-robots li.flagged-robot', 'data-robot').sort(),
    summary: JSON.parse(document.querySelector('#drift-summary')
        .getAttribute('data-flagged-robots')).sort(),
    flagRows: all('#drift-flags tr.flag-row', 'data-robot'),
    flagParams: all('#drift-flags tr.flag-row', 'data-param'),
    ringed: all('svg.drift-chart circle.drift-point.flagged', 'data-robot'),
};
"""
