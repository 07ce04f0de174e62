"""Failed jobs are rows: ``figaroh fleet status`` answers what failed, where, how often.

Three batches of one batch YAML run with ``figaroh fleet run --serial``:
``robot_00`` has a good log (runs in batch 1, skipped after), ``robot_bad`` a
malformed log (fails in every batch), ``robot_fix`` a malformed log in batch 1
that is fixed before batch 2 (fails once, then runs). Shown, against what the
driver printed and the batch YAML said:

* every failure is a row with its batch id (the one ``fleet run`` printed),
  the host, the attempts, the error class, the message and the job's tags,
  and a line of ``failures.jsonl``; every run row carries its batch id and tags;
* ``fleet status`` counts per robot × error class, names the hosts, and says
  ``robot_bad failed 3 batches running``; ``robot_fix`` failed once and then
  ran: its failure stays queryable, its streak is 0; ``--last``, ``--robot``
  and ``--json`` narrow and serialise the same summary; exit 1 with failures,
  0 without, 2 without an index;
* ``figaroh index rebuild`` restores the failures and the batches, and the
  summary is the same after it.

The streak rule itself is checked on hand-made rows (a robot absent from a
batch neither extends nor breaks its streak).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from conftest import load_example
from figaroh.cli.main import main
from figaroh.fleet.jobs import Job
from figaroh.fleet.record import RunRecord
from figaroh.fleet.run_index import (
    FAILURES_FILE,
    BatchInfo,
    FailureRow,
    RunIndex,
    index_path,
    rebuild_index,
)
from figaroh.fleet.runner import JobFailure, _Batch, run_batch
from figaroh.fleet.status import failure_summary
from figaroh.tools.robot_paths import resolve_robot_urdf
from figaroh.utils.fileio import host_name

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet_cluster import WorkerSpec, subprocess_cluster  # noqa: E402

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")

BAD_CSV = "t,q_shoulder_pan_joint\n0,0\n0.01,0.1\n"


def _cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Three batches of the same YAML on one archive; robot_fix's log is fixed after the first."""
    root = tmp_path_factory.mktemp("fleet_status")
    paths = fleet_example.write_fleet(root / "fleet", robots=1, sessions=1, n_samples=300, seed=2)
    good = paths.logs[("robot_00", "s00")]
    for name in ("bad", "fix"):
        (root / name).mkdir()
        (root / name / "identification.csv").write_text(BAD_CSV)
    batch = root / "batch.yaml"
    batch.write_text(
        yaml.safe_dump(
            {
                "tags": {"site": "lab"},
                "defaults": {"kind": "identification", "config": str(paths.config), "urdf": "ur10"},
                "jobs": [
                    {"robot_id": "robot_00", "session": "s00", "data": str(good)},
                    {"robot_id": "robot_bad", "data": str(root / "bad"), "tags": {"line": "L4"}},
                    {"robot_id": "robot_fix", "data": str(root / "fix")},
                ],
            }
        )
    )
    archive = root / "archive"
    runs = []
    for night in range(3):
        if night == 1:
            shutil.copyfile(good / "identification.csv", root / "fix" / "identification.csv")
        code, text = _cli("fleet", "run", str(batch), "--archive", str(archive), "--serial")
        assert code == 1, text
        (batch_id,) = [line.split()[1] for line in text.splitlines() if line.startswith("batch ")]
        runs.append({"batch_id": batch_id, "text": text})
    return {"archive": archive, "nights": runs, "good": good}


def test_each_batch_prints_its_id_and_names_the_host_of_each_failure(nights):
    ids = [n["batch_id"] for n in nights["nights"]]
    assert len(set(ids)) == 3 and all(i[:16] <= j[:16] for i, j in zip(ids, ids[1:], strict=False))
    first = nights["nights"][0]["text"]
    assert "failed: robot_bad/session (identification, job " in first
    assert f" on {host_name()}: CLIError: " in first and "invalid trajectory data" in first


def test_failures_and_runs_are_rows_with_batch_id_host_attempts_and_tags(nights):
    ids = [n["batch_id"] for n in nights["nights"]]
    with RunIndex(index_path(nights["archive"])) as index:
        rows = index.failures()
        runs = {r.robot_id: r for r in index.runs()}
        batches = index.batches()
    assert [(r.batch_id, r.robot_id) for r in rows] == [
        (ids[0], "robot_bad"),
        (ids[0], "robot_fix"),
        (ids[1], "robot_bad"),
        (ids[2], "robot_bad"),
    ]
    assert {r.host for r in rows} == {host_name()} and {r.attempts for r in rows} == {1}
    assert {(r.status, r.error_type, r.task) for r in rows} == {
        ("failed", "CLIError", "identification")
    }
    assert all("invalid trajectory data" in r.message for r in rows)
    bad = [r for r in rows if r.robot_id == "robot_bad"]
    assert {r.tags["line"] for r in bad} == {"L4"} and all(r.tags["site"] == "lab" for r in rows)
    assert len({r.job_id for r in bad}) == 1 and bad[0].job_id  # the same job, retried each night
    # runs: robot_00 in the first batch, robot_fix (fixed) in the second, each with the tags
    assert (runs["robot_00"].batch_id, runs["robot_fix"].batch_id) == (ids[0], ids[1])
    assert runs["robot_00"].tags == {"site": "lab"}
    lines = (nights["archive"] / FAILURES_FILE).read_text().splitlines()
    assert [FailureRow.from_json_data(json.loads(line)) for line in lines] == rows
    assert [b.batch_id for b in batches] == ids[::-1]
    assert [(b.status, b.jobs, b.runs, b.failures, b.skipped) for b in batches] == [
        ("finished", 3, 0, 1, 2),
        ("finished", 3, 1, 1, 1),
        ("finished", 3, 1, 2, 0),
    ]
    assert {(b.host, b.command) for b in batches} == {(host_name(), "fleet run")}


def test_fleet_status_says_what_failed_where_and_how_often(nights):
    code, text = _cli("fleet", "status", "--archive", str(nights["archive"]))
    assert code == 1, text
    assert "3 batches (the last 10 asked), 4 failed jobs" in text
    lines = text.splitlines()
    table = {line.split()[0]: line.split() for line in lines if " CLIError " in line}
    assert table["robot_bad"][1:5] == ["CLIError", "3", "3", "3"]  # failures, batches, attempts
    assert table["robot_fix"][1:5] == ["CLIError", "1", "1", "1"]
    assert table["robot_bad"][5] == f"{host_name()};"
    assert (
        f"robot_bad failed 3 batches running (since batch {nights['nights'][0]['batch_id']})"
        in text
    )
    assert "robot_fix failed" not in text  # it failed, then ran: no streak
    summary = failure_summary(nights["archive"])
    assert summary.streak("robot_bad") == 3 and summary.streak("robot_fix") == 0
    assert [s.robot_id for s in summary.repeated()] == ["robot_bad"]


def test_fleet_status_narrows_and_serialises(nights):
    archive = str(nights["archive"])
    code, text = _cli("fleet", "status", "--archive", archive, "--last", "1", "--json")
    data = json.loads(text)
    assert code == 1 and data["failures"] == 1 and len(data["batches"]) == 1
    assert data["batches"][0]["batch_id"] == nights["nights"][2]["batch_id"]
    assert [(s["robot_id"], s["batches"]) for s in data["streaks"]] == [("robot_bad", 1)]
    assert data["groups"][0]["hosts"] == [host_name()]
    code, text = _cli("fleet", "status", "--archive", archive, "--robot", "robot_fix", "--json")
    data = json.loads(text)
    assert code == 1 and [g["robot_id"] for g in data["groups"]] == ["robot_fix"]
    assert data["streaks"] == []  # queryable as having failed before; not failing now
    code, text = _cli("fleet", "status", "--archive", archive, "--robot", "robot_00")
    assert code == 0 and "0 failed jobs of robot_00" in text


def test_fleet_status_exit_2_without_an_index(tmp_path):
    code, text = _cli("fleet", "status", "--archive", str(tmp_path))
    assert code == 2 and "no run index" in text


def test_a_rebuild_restores_the_failures_and_the_summary(nights, tmp_path):
    archive = tmp_path / "copy"
    shutil.copytree(nights["archive"], archive)
    before = failure_summary(archive)
    with RunIndex(index_path(archive)) as index:
        rows = index.failures()
    summary = rebuild_index(archive)
    assert summary.failures == 4 and summary.runs == 2 and summary.skipped == ()
    with RunIndex(index_path(archive)) as index:
        assert index.failures() == rows
    after = failure_summary(archive)
    assert _same_summary(before, after)


def _same_summary(a, b) -> bool:
    da, db = a.to_json_data(), b.to_json_data()
    da.pop("archive"), db.pop("archive")
    return da == db


# --------------------------------------------------------------------------- #
# the streak rule, on hand-made rows
# --------------------------------------------------------------------------- #
def _fail(batch: str, seq: int, robot: str, error: str = "CLIError") -> FailureRow:
    return FailureRow(
        batch,
        seq,
        f"j-{robot}-{batch}",
        robot,
        "identification",
        "s",
        "failed",
        error,
        f"{error} in {batch}",
        "node-a",
        2,
        {},
        f"t-{batch}",
    )


def _run(robot: str, batch: str) -> RunRecord:
    return RunRecord(
        run_id=f"{robot}{batch}",
        job_id=f"{robot}{batch}",
        robot_id=robot,
        task="identification",
        session=batch,
        session_time="2026-12-06T02:00:00+00:00",
        started="2026-12-06T02:00:00+00:00",
        finished="2026-12-06T02:00:01+00:00",
        config_sha256="c" * 64,
        data_sha256={},
        verdict_status="pass",
        passed=True,
        metrics={},
        parameters=(),
        batch_id=batch,
    )


def test_streaks_count_the_batches_a_robot_was_part_of(tmp_path):
    batches = ["b1", "b2", "b3", "b4"]
    failures = {
        "b1": ["A", "B", "C", "D"],
        "b2": ["A", "D"],
        "b3": ["A", "C"],
        "b4": ["A", "B", "C"],
    }
    runs = {"b2": ["C"], "b3": ["D"], "b4": ["D"]}  # B is absent from b2 and b3
    with RunIndex(tmp_path / "i.sqlite") as index:
        for b in batches:
            index.record_batch(BatchInfo(b, "node-a", 1, b, status="finished"))
            for seq, robot in enumerate(failures[b]):
                index.add_failure(
                    _fail(b, seq, robot, "InputMismatchError" if b == "b4" else "CLIError")
                )
            for robot in runs.get(b, []):
                index.add(_run(robot, b))
        summary = failure_summary(index)
        assert {s.robot_id: s.batches for s in summary.streaks} == {"A": 4, "B": 2, "C": 2}
        a = next(s for s in summary.streaks if s.robot_id == "A")
        assert (a.first_batch_id, a.last_batch_id) == ("b1", "b4")
        assert a.error_types == ("CLIError", "InputMismatchError")
        assert a.last_message == "InputMismatchError in b4"
        assert summary.streak("D") == 0  # failed in b1 and b2, ran in b3 and b4
        groups = {(g.robot_id, g.error_type): g for g in summary.groups}
        assert (groups["A", "CLIError"].failures, groups["A", "CLIError"].attempts) == (3, 6)
        assert groups["D", "CLIError"].batches == 2
        assert failure_summary(index, last_batches=2).streak("A") == 2
        assert failure_summary(index, robots=["B"]).failures == 2
    with pytest.raises(ValueError, match="last_batches must be an integer"):
        failure_summary(tmp_path / "i.sqlite", last_batches=0)


def test_a_job_a_deadline_cancelled_is_recorded_unfinished(tmp_path):
    job = Job(kind="trajectory", robot_id="r", config="c.yaml", urdf="u.urdf", tags={"a": "b"})
    with RunIndex(tmp_path / "i.sqlite") as index:
        batch = _Batch(tmp_path, index, bar=None, batch_id="b1")
        row = batch._failure_row(JobFailure(job, "DeadlineExceeded", "deadline", "h", 1), 0)
        assert (row.status, row.job_id, row.tags) == ("unfinished", "", {"a": "b"})
        row = batch._failure_row(JobFailure(job, "KilledWorker", "died", "h", 3), 1)
        assert (row.status, row.attempts) == ("failed", 3)


# --------------------------------------------------------------------------- #
# on a real local cluster: a scheduler and two worker processes
# --------------------------------------------------------------------------- #
def test_jobs_failing_on_a_real_cluster_appear_in_fleet_status(tmp_path, monkeypatch):
    """A job whose inputs only the driver can read fails on both workers, two batches running."""
    pytest.importorskip("distributed")
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    driver = tmp_path / "driver"
    paths = fleet_example.write_fleet(driver / "fleet", robots=2, sessions=1, n_samples=300)
    urdf = str(resolve_robot_urdf("ur10"))
    readable = Job(  # absolute paths: every worker of this machine reads them
        "identification",
        "robot_01",
        str(paths.config),
        data=str(paths.logs[("robot_01", "s00")]),
        urdf=urdf,
        session="s00",
        tags={"site": "lab"},
    )
    only_here = Job(  # relative to the driver's folder: no worker's working directory has it
        "identification",
        "robot_00",
        "fleet/ur10_fleet.yaml",
        data="fleet/logs/robot_00/s00",
        urdf=urdf,
        session="s00",
        tags={"site": "lab"},
    )
    archive = tmp_path / "archive"
    workers = [WorkerSpec("A", tmp_path / "a"), WorkerSpec("B", tmp_path / "b")]
    for spec in workers:
        spec.cwd.mkdir()
    monkeypatch.chdir(driver)
    with subprocess_cluster(tmp_path / "cluster", workers) as cluster:
        results = [
            run_batch([readable, only_here], cluster.address, archive_root=archive, progress=False)
            for _ in range(2)
        ]
    assert [len(r.runs) for r in results] == [1, 0] and results[1].skipped == (readable.job_id,)
    for result in results:
        (failure,) = result.failures
        assert failure.job == only_here and failure.error_type == "InputUnavailableError"
        assert (failure.host, failure.attempts) == (host_name(), 2)  # tried on A and on B
    code, text = _cli("fleet", "status", "--archive", str(archive), "--json")
    data = json.loads(text)
    assert code == 1 and data["failures"] == 2
    assert [b["batch_id"] for b in data["batches"]] == [r.batch_id for r in results][::-1]
    (group,) = data["groups"]
    assert (group["robot_id"], group["error_type"], group["failures"], group["batches"]) == (
        "robot_00",
        "InputUnavailableError",
        2,
        2,
    )
    assert group["attempts"] == 4 and group["hosts"] == [host_name()]
    assert "cannot read the config fleet/ur10_fleet.yaml" in group["last_message"]
    (streak,) = data["streaks"]
    assert (streak["robot_id"], streak["batches"]) == ("robot_00", 2)
    code, text = _cli("fleet", "status", "--archive", str(archive))
    assert code == 1 and "robot_00 failed 2 batches running" in text
    with RunIndex(index_path(archive)) as index:
        rows = index.failures()
        (run,) = index.runs()
    assert [r.batch_id for r in rows] == [r.batch_id for r in results]
    assert {r.tags["site"] for r in rows} == {"lab"} and run.tags == {"site": "lab"}
    assert run.batch_id == results[0].batch_id


def test_the_drift_report_shows_the_repeated_failures(nights, tmp_path):
    """``fleet report`` puts the archive's failures into its page: robot_bad's 3, robot_fix's 1."""
    out = tmp_path / "drift.html"
    code, text = _cli("fleet", "report", "--archive", str(nights["archive"]), "-o", str(out))
    assert code in (0, 1), text
    page = out.read_text()
    row = r'<tr class="failure-row"[^>]*data-robot="([^"]+)"[^>]*data-count="(\d+)"'
    rows = re.findall(row, page)
    assert sorted(rows) == [("robot_bad", "3"), ("robot_fix", "1")], rows
    assert 'data-repeated="true"' in page
