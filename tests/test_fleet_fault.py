"""A Dask worker process killed in the middle of a fleet batch.

A worker plugin SIGKILLs its own worker process when that worker starts its
third task — once in the whole cluster (an exclusive marker file in
``tmp_path`` decides which worker, and stops the restarted worker from doing
it again). The nanny restarts the worker and the scheduler reruns the lost
tasks. Shown: the batch completes without failure, every job has exactly one
sealed run folder, one ``index.jsonl`` line and one index row, the index
equals :func:`figaroh.fleet.run_index.rebuild_index` of the archive row for
row (runs, parameters, metrics), and running the batch again adds nothing.

Skips when ``distributed`` is not installed.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="figaroh.fleet needs dask[distributed] (figaroh[fleet])")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import load_example  # noqa: E402
from figaroh.fleet.cluster import dask_client  # noqa: E402
from figaroh.fleet.jobs import load_batch  # noqa: E402
from figaroh.fleet.record import RECORD_FILE  # noqa: E402
from figaroh.fleet.run_index import RunIndex, index_path, rebuild_index  # noqa: E402
from figaroh.fleet.runner import run_batch, task_key  # noqa: E402
from figaroh.utils.fileio import SEAL_MARKER  # noqa: E402

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")

N_ROBOTS, N_SESSIONS = 6, 2
KILL_AT_TASK = 3  # the victim worker dies when its 3rd task starts executing


def kill_once_plugin(marker: str):
    """A worker plugin that SIGKILLs its worker at its KILL_AT_TASK-th task, once per cluster.

    Built inside a function so that cloudpickle ships the class by value (the
    worker processes need not import this test module).
    """
    from distributed import WorkerPlugin

    class KillOnce(WorkerPlugin):
        name = "figaroh-kill-once"

        def setup(self, worker):
            self.started = 0

        def transition(self, key, start, finish, **kwargs):
            if finish != "executing":
                return
            self.started += 1
            if self.started != KILL_AT_TASK:
                return
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return  # another worker (or this one before its restart) already died
            os.write(fd, json.dumps({"pid": os.getpid(), "key": str(key)}).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)

    return KillOnce()


@pytest.fixture(scope="module")
def killed_batch(tmp_path_factory):
    """The batch run on 2 workers, one of which is killed mid-batch; then run again."""

    root = tmp_path_factory.mktemp("fleet_fault")
    paths = fleet_example.write_fleet(
        root / "fleet", robots=N_ROBOTS, sessions=N_SESSIONS, seed=1, n_samples=300
    )
    jobs = load_batch(paths.batch)
    marker = root / "killed.json"
    archive = root / "archive"
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with dask_client(None, 2) as client:
        client.register_plugin(kill_once_plugin(str(marker)))
        pids_before = set(client.run(os.getpid).values())
        first = run_batch(jobs, client, archive_root=str(archive), progress=False)
        pids_after = set(client.run(os.getpid).values())
        again = run_batch(jobs, client, archive_root=str(archive), progress=False)
    return {
        "jobs": jobs,
        "archive": archive,
        "marker": marker,
        "first": first,
        "again": again,
        "pids": (pids_before, pids_after),
    }


def test_a_worker_was_killed_during_a_task(killed_batch):
    assert killed_batch["marker"].is_file(), "no worker reached its kill point"
    killed = json.loads(killed_batch["marker"].read_text())
    before, after = killed_batch["pids"]
    assert killed["pid"] in before and killed["pid"] not in after
    # the task it was executing is a job of the batch, and that job still gave its run
    assert killed["key"] in {task_key(j) for j in killed_batch["jobs"]}
    assert killed["key"] in {f"figaroh-{r.job_id}" for r in killed_batch["first"].runs}


def test_the_batch_completes_without_failure(killed_batch):
    first, jobs = killed_batch["first"], killed_batch["jobs"]
    assert first.failures == () and first.skipped == ()
    assert sorted(r.job_id for r in first.runs) == sorted(j.job_id for j in jobs)


def test_every_job_has_exactly_one_run_folder_index_line_and_index_row(killed_batch):
    archive, jobs = killed_batch["archive"], killed_batch["jobs"]
    job_ids = sorted(j.job_id for j in jobs)
    records = [json.loads(p.read_text()) for p in archive.rglob(RECORD_FILE)]
    assert sorted(r["job_id"] for r in records) == job_ids
    assert all((archive / r["run_dir"] / SEAL_MARKER).is_file() for r in records)
    run_dirs = [p.parent for p in archive.rglob(SEAL_MARKER)]
    assert len(run_dirs) == len(jobs)  # no orphan or duplicate folder of a retried job
    lines = (archive / "index.jsonl").read_text().splitlines()
    assert len(lines) == len(jobs)
    with RunIndex(index_path(archive)) as index:
        assert len(index) == len(jobs)
        assert Counter(r.job_id for r in index.runs()) == Counter(job_ids)


def _rows(db: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(db) as con:
        return {
            table: con.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            for table, order in (
                ("runs", "run_id"),
                ("parameters", "run_id, name"),
                ("metrics", "run_id, name"),
            )
        }


def test_the_index_equals_the_index_rebuilt_from_the_archive(killed_batch, tmp_path):
    archive = killed_batch["archive"]
    rebuilt = tmp_path / "rebuilt.sqlite"
    summary = rebuild_index(archive, index_file=rebuilt)
    assert summary.runs == len(killed_batch["jobs"]) and summary.skipped == ()
    live, fresh = _rows(index_path(archive)), _rows(rebuilt)
    assert len(live["runs"]) == len(killed_batch["jobs"]) and live["parameters"]
    for table in live:
        assert live[table] == fresh[table], table
    with RunIndex(index_path(archive)) as a, RunIndex(rebuilt) as b:
        assert a.runs() == b.runs()


def test_running_the_batch_again_adds_no_run(killed_batch):
    again, jobs = killed_batch["again"], killed_batch["jobs"]
    assert again.runs == () and again.failures == ()
    assert sorted(again.skipped) == sorted(j.job_id for j in jobs)
    with RunIndex(index_path(killed_batch["archive"])) as index:
        assert len(index) == len(jobs)
    assert len((killed_batch["archive"] / "index.jsonl").read_text().splitlines()) == len(jobs)
