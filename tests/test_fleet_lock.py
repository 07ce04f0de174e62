"""One writer per archive, and a killed driver that loses and duplicates nothing.

* A second :class:`~figaroh.fleet.archive_lock.ArchiveLock` on an archive is
  refused at once, naming the holder; a batch or an index rebuild on a held
  archive does nothing (``figaroh fleet run`` / ``index rebuild`` exit 2 with
  the holder in the message).
* Two real ``figaroh fleet run`` processes on one archive (the second started
  while the first holds it, once ``--serial`` and once with the embedded Dask
  cluster): the second is refused before it computes or starts anything; the
  archive has one sealed folder, one ``index.jsonl`` line and one index row per
  job.
* A real ``figaroh fleet run --serial`` killed with SIGKILL mid-batch leaves no
  stale lock; run again, it finishes the folders the dead driver completed,
  indexes the runs it archived without recomputing them, and ends with one
  folder, one line and one row per job.
* The rows of an uncommitted group are the only loss of a killed driver, and
  they come back: a driver forked here writes five runs with its group
  transaction still open and is killed; the index has none of them, the next
  batch (or ``figaroh index rebuild``) indexes all five from the archive.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import load_example
from figaroh._run.archive import INDEX_FILE
from figaroh.cli.main import main
from figaroh.fleet import index_store, runner
from figaroh.fleet.archive_lock import LOCK_FILE, ArchiveLock, ArchiveLockedError, lock_path
from figaroh.fleet.jobs import Job
from figaroh.fleet.record import RECORD_FILE, ParameterEstimate, RunRecord
from figaroh.fleet.run_index import RunIndex, index_path, rebuild_index
from figaroh.fleet.worker import JobOutput
from figaroh.utils.fileio import SEAL_MARKER, host_name, is_sealed_dir
from fleet_cluster import lock_holder_pid, start_driver, wait_for

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or not hasattr(os, "fork"), reason="needs fork and SIGKILL"
)

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")


def _cli(*args: str) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(args))
    return code, out.getvalue()


def _tiny_jobs(folder: Path, n: int) -> list[Job]:
    """Jobs over tiny files (their ids hash the files); never computed here."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("c.yaml", "u.urdf", "d.csv"):
        (folder / name).write_text(name)
    return [
        Job(
            kind="identification",
            robot_id=f"robot_{k:02d}",
            config=str(folder / "c.yaml"),
            urdf=str(folder / "u.urdf"),
            data=str(folder / "d.csv"),
            session=f"s{k}",
            tags={"line": "L1"},
        )
        for k in range(n)
    ]


def _output(job: Job) -> JobOutput:
    record = RunRecord(
        run_id=job.job_id,
        job_id=job.job_id,
        robot_id=job.robot_id,
        task="identification",
        session=job.session,
        session_time="2026-12-06T02:00:00+00:00",
        started="2026-12-06T02:00:00+00:00",
        finished="2026-12-06T02:00:01+00:00",
        config_sha256="c" * 64,
        data_sha256={"d.csv": "d" * 64},
        verdict_status="pass",
        passed=True,
        metrics={"rmse_Nm": 0.1},
        parameters=(ParameterEstimate("fs2", 1.0, 0.1),),
    )
    files = {"provenance.json": json.dumps({"run_id": job.job_id}) + "\n", "verdict.json": "{}"}
    return JobOutput(job=job, record=record, files=files)


def _archive_counts(archive: Path) -> tuple[Counter, Counter, Counter]:
    """Job id → sealed folders, → ``index.jsonl`` lines of sealed folders, → index rows."""
    folders = Counter(
        json.loads((p.parent / RECORD_FILE).read_text())["job_id"]
        for p in archive.glob(f"*/*/*/{SEAL_MARKER}")
    )
    lines = Counter()
    for line in (archive / INDEX_FILE).read_text().splitlines():
        folder = archive / json.loads(line)["run_dir"]
        if is_sealed_dir(folder):
            lines[json.loads((folder / RECORD_FILE).read_text())["job_id"]] += 1
    with RunIndex(index_path(archive)) as index:
        rows = Counter(r.job_id for r in index.runs())
    return folders, lines, rows


# --------------------------------------------------------------------------- #
# in this process
# --------------------------------------------------------------------------- #
def test_a_second_lock_is_refused_at_once_naming_the_holder(tmp_path):
    with ArchiveLock(tmp_path, "20261206T101500Z-3f9a") as held:
        assert held.held and lock_path(tmp_path) == tmp_path / LOCK_FILE
        start = time.perf_counter()
        with pytest.raises(ArchiveLockedError) as info:
            ArchiveLock(tmp_path, "other").acquire()
        assert time.perf_counter() - start < 1.0  # refused at once, no waiting
        holder = info.value.holder
        assert (holder.host, holder.pid, holder.batch_id) == (
            host_name(),
            os.getpid(),
            "20261206T101500Z-3f9a",
        )
        message = str(info.value)
        assert (
            f"fleet run batch 20261206T101500Z-3f9a (pid {os.getpid()} on {host_name()}" in message
        )
        assert "kill <pid>" in message and "did nothing" in message
    assert not held.held and (tmp_path / LOCK_FILE).read_text() == ""  # released, file kept
    with ArchiveLock(tmp_path, "next") as again:
        assert again.held


def test_a_batch_or_a_rebuild_on_a_held_archive_does_nothing(tmp_path):
    archive = tmp_path / "archive"
    jobs = _tiny_jobs(tmp_path / "in", 2)
    with ArchiveLock(archive, "holder-batch"):
        with pytest.raises(ArchiveLockedError, match="holder-batch"):
            runner.run_serial(jobs, archive_root=archive, progress=False)
        with pytest.raises(ArchiveLockedError, match="holder-batch"):
            rebuild_index(archive)
        code, text = _cli(
            "fleet", "run", str(_batch_yaml(tmp_path)), "--archive", str(archive), "--serial"
        )
        assert code == 2 and f"in use by fleet run batch holder-batch (pid {os.getpid()}" in text
        code, text = _cli("index", "rebuild", "--archive", str(archive))
        assert code == 2 and "in use by fleet run batch holder-batch" in text
    assert sorted(p.name for p in archive.iterdir()) == [LOCK_FILE]  # nothing written


def _batch_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    folder = tmp_path / "in"
    path.write_text(
        yaml.safe_dump(
            {
                "defaults": {
                    "kind": "identification",
                    "config": str(folder / "c.yaml"),
                    "urdf": str(folder / "u.urdf"),
                },
                "jobs": [{"robot_id": "r1", "data": str(folder / "d.csv")}],
            }
        )
    )
    return path


# --------------------------------------------------------------------------- #
# real processes
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet_lock")
    paths = fleet_example.write_fleet(root / "fleet", robots=3, sessions=2, n_samples=300, seed=4)
    return paths


def test_two_drivers_on_one_archive_give_one_folder_per_job(fleet, tmp_path):
    pytest.importorskip("distributed")
    archive = tmp_path / "archive"
    first = start_driver(fleet.batch, archive, "--serial")
    try:
        wait_for(lambda: lock_holder_pid(archive) == first.pid, 60, "the first driver's lock")
        second = start_driver(fleet.batch, archive, "--serial")
        on_dask = start_driver(fleet.batch, archive, "--workers", "1")
        out_second, _ = second.communicate(timeout=120)
        out_dask, _ = on_dask.communicate(timeout=120)
        still_running = first.poll() is None
        out_first, _ = first.communicate(timeout=300)
    finally:
        first.kill()
    assert still_running, "the first driver ended before the others were refused: no overlap"
    batch_id = next(line.split()[1] for line in out_first.splitlines() if line.startswith("batch "))
    for code, text in ((second.returncode, out_second), (on_dask.returncode, out_dask)):
        assert code == 2, text
        assert f"in use by fleet run batch {batch_id} (pid {first.pid} on {host_name()}" in text
    assert first.returncode == 0, out_first
    n_jobs = len(fleet.logs)
    folders, lines, rows = _archive_counts(archive)
    assert len(folders) == n_jobs and set(folders.values()) == {1}
    assert lines == folders == rows
    assert len(list(archive.glob("*/*/*"))) == n_jobs  # no other folder at all
    code, text = _cli("fleet", "run", str(fleet.batch), "--archive", str(archive), "--serial")
    assert (
        code == 0
        and f"0 runs (0 without a passing verdict), 0 failed jobs, {n_jobs} skipped" in text
    )


def test_a_killed_driver_leaves_no_stale_lock_and_the_rerun_loses_and_duplicates_nothing(
    fleet, tmp_path
):
    archive = tmp_path / "archive"
    driver = start_driver(fleet.batch, archive, "--serial")
    try:
        wait_for(
            lambda: (
                (archive / INDEX_FILE).is_file()
                and len((archive / INDEX_FILE).read_text().splitlines()) >= 2
            ),
            300,
            "two archived runs",
        )
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=60)
    finally:
        driver.kill()
    assert driver.returncode == -signal.SIGKILL
    lines_at_kill = len((archive / INDEX_FILE).read_text().splitlines())
    n_jobs = len(fleet.logs)
    assert 2 <= lines_at_kill < n_jobs, "the kill did not hit the batch in the middle"
    with RunIndex(index_path(archive)) as index:
        (dead,) = index.batches()
        assert dead.status == "running" and dead.pid == driver.pid
    with ArchiveLock(archive, "probe"):  # no stale lock: taken at once
        pass
    code, text = _cli("fleet", "run", str(fleet.batch), "--archive", str(archive), "--serial")
    assert code == 0, text
    assert f"recovered: batch {dead.batch_id} (host {host_name()}, pid {driver.pid}" in text
    # the runs the dead driver archived are not computed again
    assert f"{n_jobs - lines_at_kill} runs (0 without a passing verdict)" in text
    assert f"{lines_at_kill} skipped" in text
    folders, lines, rows = _archive_counts(archive)
    assert len(folders) == n_jobs and set(folders.values()) == {1}
    assert lines == folders == rows
    assert not [p for p in archive.glob("*/*/*") if not is_sealed_dir(p)]
    with RunIndex(index_path(archive)) as index:
        by_batch = Counter(r.batch_id for r in index.runs())
        statuses = {b.batch_id: b.status for b in index.batches()}
    assert by_batch[dead.batch_id] == lines_at_kill
    assert statuses[dead.batch_id] == "interrupted" and sorted(statuses.values()) == [
        "finished",
        "interrupted",
    ]


# --------------------------------------------------------------------------- #
# an uncommitted group, deterministically
# --------------------------------------------------------------------------- #
def _kill_after_writing(jobs: list[Job], archive: Path) -> None:
    """Child: drive the batch, write every run, die before the group's commit."""

    def execute(batch, todo):
        for job in todo:
            batch.handle(job, _output(job))
        os.kill(os.getpid(), signal.SIGKILL)

    runner._drive(jobs, archive, False, execute)


def test_the_rows_of_an_uncommitted_group_come_back(tmp_path, monkeypatch):
    jobs = _tiny_jobs(tmp_path / "in", 5)
    archive = tmp_path / "archive"
    monkeypatch.setattr(index_store, "COMMIT_EVERY", 1000)  # read by RunIndex.grouped
    monkeypatch.setattr(index_store, "COMMIT_INTERVAL_S", 1000.0)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child dies by SIGKILL
        try:
            _kill_after_writing(jobs, archive)
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    ids = sorted(j.job_id for j in jobs)
    with RunIndex(index_path(archive)) as index:
        assert len(index) == 0  # the group was never committed: its rows are lost
        (dead,) = index.batches()
    folders = sorted(p for p in archive.glob("*/*/*"))
    assert len(folders) == 5 and not any(is_sealed_dir(p) for p in folders)  # seals wait too
    assert len((archive / INDEX_FILE).read_text().splitlines()) == 5
    # figaroh index rebuild restores them (into a copy, so the next batch still has work)
    copy = tmp_path / "rebuilt.sqlite"
    summary = rebuild_index(archive, index_file=copy)
    assert summary.runs == 5 and summary.skipped == () and len(summary.swept) == 5
    with RunIndex(copy) as index:
        assert sorted(r.job_id for r in index.runs()) == ids
    # the next batch restores them too, and computes none of them again
    computed = []

    def execute(batch, todo):
        computed.extend(todo)

    result = runner._drive(jobs, archive, False, execute)
    assert computed == [] and result.runs == () and sorted(result.skipped) == ids
    assert len(result.recovered) == 1 and "5 runs and 0 failures" in result.recovered[0]
    with RunIndex(index_path(archive)) as index:
        runs = index.runs()
        assert sorted(r.job_id for r in runs) == ids
        assert {r.batch_id for r in runs} == {dead.batch_id}
        assert {r.tags["line"] for r in runs} == {"L1"}
        assert {b.batch_id: b.status for b in index.batches()}[dead.batch_id] == "interrupted"
    folders, lines, rows = _archive_counts(archive)
    assert set(folders.values()) == {1} and lines == folders == rows and len(rows) == 5
