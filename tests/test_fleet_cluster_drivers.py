"""Drivers on a real Dask cluster: a scheduler and two worker subprocesses on 127.0.0.1.

The cluster is :mod:`fleet_cluster`'s (one thread per worker, each in its own
folder); the drivers are ``figaroh fleet run --scheduler <address>``
processes. Shown, on one archive:

* **two drivers**: while a first driver holds the archive, a second one is
  refused at once (exit 2, the message names the holder's batch and pid) and
  submits nothing; the first ends with one sealed folder, one ``index.jsonl``
  line and one index row per job, and no other folder;
* **a killed driver**: a driver SIGKILLed after its first runs leaves no
  stale lock; the next driver recomputes only the jobs the dead one had not
  archived, and the archive again holds each job exactly once.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="figaroh.fleet needs dask[distributed] (figaroh[fleet])")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import load_example, run_cli  # noqa: E402
from figaroh._run.archive import INDEX_FILE  # noqa: E402
from figaroh.fleet.archive_lock import ArchiveLock  # noqa: E402
from figaroh.fleet.record import RECORD_FILE  # noqa: E402
from figaroh.fleet.run_index import RunIndex, index_path  # noqa: E402
from figaroh.utils.fileio import SEAL_MARKER, is_sealed_dir  # noqa: E402
from fleet_cluster import (  # noqa: E402
    WorkerSpec,
    lock_holder_pid,
    start_driver,
    subprocess_cluster,
    wait_for,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    root = tmp_path_factory.mktemp("fleet_drivers")
    workers = [WorkerSpec("A", root / "a"), WorkerSpec("B", root / "b")]
    for spec in workers:
        spec.cwd.mkdir()
    with subprocess_cluster(root / "cluster", workers) as running:
        yield running


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """12 identification jobs of 3000 samples (≈ 0.6 s each): several seconds on 2 workers."""
    folder = tmp_path_factory.mktemp("fleet_drivers_batch")
    paths = fleet_example.write_fleet(folder, robots=6, sessions=2, n_samples=3000, seed=41)
    return paths.batch, len(paths.logs)


def _index_lines(archive: Path) -> int:
    path = archive / INDEX_FILE
    return len(path.read_text().splitlines()) if path.is_file() else 0


def _once_each(archive: Path, n_jobs: int) -> None:
    """Each job has exactly one sealed folder, one ``index.jsonl`` line and one index row."""
    folders = Counter(
        json.loads((p.parent / RECORD_FILE).read_text())["job_id"]
        for p in archive.glob(f"*/*/*/{SEAL_MARKER}")
    )
    lines: Counter[str] = Counter()
    for line in (archive / INDEX_FILE).read_text().splitlines():
        record = archive / json.loads(line)["run_dir"] / RECORD_FILE
        lines[json.loads(record.read_text())["job_id"]] += 1
    with RunIndex(index_path(archive)) as index:
        rows = Counter(r.job_id for r in index.runs())
    assert len(folders) == n_jobs and set(folders.values()) == {1}
    assert lines == folders == rows
    every = list(archive.glob("*/*/*"))
    assert len(every) == n_jobs and all(is_sealed_dir(p) for p in every)


def test_a_second_driver_on_the_cluster_is_refused_and_the_archive_holds_each_job_once(
    cluster, batch, tmp_path
):
    path, n_jobs = batch
    archive = tmp_path / "archive"
    first = start_driver(path, archive, "--scheduler", cluster.address)
    try:
        wait_for(lambda: lock_holder_pid(archive) == first.pid, 90, "the first driver's lock")
        code, out, err = run_cli(
            "fleet", "run", path, "--archive", archive, "--scheduler", cluster.address
        )
        still_running = first.poll() is None
        out_first, _ = first.communicate(timeout=300)
    finally:
        first.kill()
    assert still_running, "the first driver ended before the second was refused: no overlap"
    assert first.returncode == 0, out_first
    batch_id = next(line.split()[1] for line in out_first.splitlines() if line.startswith("batch "))
    assert code == 2, out + err
    assert f"in use by fleet run batch {batch_id} (pid {first.pid}" in out + err
    _once_each(archive, n_jobs)


def test_a_driver_killed_mid_batch_on_the_cluster_loses_and_duplicates_nothing(
    cluster, batch, tmp_path
):
    path, n_jobs = batch
    archive = tmp_path / "archive"
    driver = start_driver(path, archive, "--scheduler", cluster.address)
    try:
        wait_for(lambda: _index_lines(archive) >= 2, 180, "two archived runs")
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=60)
    finally:
        driver.kill()
    assert driver.returncode == -signal.SIGKILL
    archived = _index_lines(archive)
    assert 2 <= archived < n_jobs, "the kill did not hit the batch in the middle"
    with ArchiveLock(archive, "probe"):  # no stale lock: taken at once
        pass
    code, out, err = run_cli(
        "fleet", "run", path, "--archive", archive, "--scheduler", cluster.address
    )
    assert code == 0, out + err
    assert f"{n_jobs - archived} runs (0 without a passing verdict)" in out
    assert f"{archived} skipped" in out
    _once_each(archive, n_jobs)
