"""The fleet run index: records round-trip, transactions are all-or-nothing, rebuild equals live.

Truths checked (each able to fail):

* ``RunRecord`` → strict JSON → ``RunRecord`` is the identity (floats exact),
  and a non-finite number becomes ``null``, never ``NaN``;
* ``RunIndex.add`` then ``get`` returns the record added; a second ``add`` of the
  same job changes nothing; an insert failing half-way leaves no row in any table;
* the schema carries its version; migrations apply in order inside one
  transaction; a newer database is refused;
* ``write_fleet_run`` archives a complete sealed folder with ``run_record.json``
  once per job, and ``rebuild_index`` from those folders yields exactly the
  rows of the live index;
* two processes writing one index through their own ``RunIndex`` lose nothing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import os
import pickle
import sqlite3
import time
import types
from pathlib import Path

import numpy as np
import pytest

from figaroh._run import archive as archive_mod
from figaroh._run.archive import (
    ArchiveFileNameError,
    archive_files,
    archive_run,
    claim_run_dir,
    read_index,
    verify_archived_run,
    write_archived_run,
)
from figaroh.fleet import index_rebuild, index_store
from figaroh.fleet import run_index as ri
from figaroh.fleet.record import RECORD_FILE, ParameterEstimate, RunRecord, RunRecordError
from figaroh.fleet.run_index import (
    INDEX_DB,
    SCHEMA_VERSION,
    HistoryPoint,
    RunIndex,
    RunIndexError,
    index_path,
    rebuild_index,
    run_folder,
    write_fleet_run,
)
from figaroh.utils.fileio import SEAL_MARKER, is_sealed_dir

TABLES = ("runs", "parameters", "metrics")


def _record(robot=1, session=0, *, job=None, fs=0.1, nan_metric=False, **over) -> RunRecord:
    job_id = job or f"job{robot:03d}s{session}"
    metrics = {"rmse_Nm": 0.01 * (robot + 1) + session / 3.0, "cond": 1e3 / 7.0}
    if nan_metric:
        metrics["broken"] = float("nan")
    fields = dict(
        run_id=job_id,
        job_id=job_id,
        robot_id=f"ur10-{robot:02d}",
        task="identification",
        session=f"s{session}",
        session_time=f"2026-0{session + 1}-01T00:00:00+00:00",
        started="2026-12-02T05:00:00+00:00",
        finished="2026-12-02T05:00:03.250000+00:00",
        config_sha256="c" * 64,
        data_sha256={"train.csv": "d" * 64, "a.csv": "e" * 64},
        verdict_status="pass",
        passed=True,
        metrics=metrics,
        parameters=(
            ParameterEstimate("fs2", fs + session * 1e-3, 0.1 / 3.0),
            ParameterEstimate("Ia1", 1.0 / 3.0 + robot, None),
            ParameterEstimate("fv2", -2.5e-17, 1e-300),
        ),
        figaroh_version="0.1.0",
    )
    fields.update(over)
    return RunRecord(**fields)


def _rows(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}
    finally:
        conn.close()


def _files(record: RunRecord) -> dict[str, str]:
    return {
        "provenance.json": json.dumps({"run_id": "prov-id", "task": record.task}) + "\n",
        "parameters.csv": "parameter,value\n"
        + "".join(f"{p.name},{p.value!r}\n" for p in record.parameters),
        "verdict.json": json.dumps({"status": record.verdict_status, "passed": record.passed}),
    }


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------- #
# RunRecord
# --------------------------------------------------------------------------- #
def test_record_json_round_trip_is_exact():
    rec = _record(3, 2, run_dir="ur10-03/identification/s2_x")
    text = rec.to_json()
    assert RunRecord.from_json(text) == rec
    assert RunRecord.from_json_data(json.loads(text)).parameters[2].value == -2.5e-17


def test_record_non_finite_numbers_are_strict_json_null():
    rec = _record(nan_metric=True, parameters=(ParameterEstimate("x", float("inf"), math.nan),))
    assert rec.parameters[0].sigma is None  # non-finite sigma: unknown
    data = json.loads(rec.to_json(), parse_constant=lambda c: pytest.fail(f"non-strict {c}"))
    assert data["metrics"]["broken"] is None and data["parameters"][0]["value"] is None
    back = RunRecord.from_json(rec.to_json())
    assert math.isnan(back.metrics["broken"]) and math.isnan(back.parameters[0].value)
    assert back == rec  # non-finite values are one nan object: the round trip is the identity
    assert RunRecord.from_json_data(rec.to_json_data()) == rec


def test_record_normalises_and_validates():
    rec = _record(metrics={"b": np.float64(2.0), "a": 1}, data_sha256={"z": "1", "a": "2"})
    assert list(rec.metrics) == ["a", "b"] and type(rec.metrics["b"]) is float
    assert list(rec.data_sha256) == ["a", "z"]
    odd = _record(metrics={"a": np.float32("nan"), "b": -np.inf, "c": np.int64(3)})
    assert odd.metrics["a"] is math.nan and odd.metrics["b"] is math.nan and odd.metrics["c"] == 3
    for bad in (True, "1.0", [1.0]):
        with pytest.raises(RunRecordError, match="metric 'x' must be a number"):
            _record(metrics={"x": bad})
    with pytest.raises(RunRecordError, match="'fs2' appears twice"):
        _record(parameters=(ParameterEstimate("fs2", 1.0), ("fs2", 2.0, None)))
    with pytest.raises(RunRecordError, match="robot_id is empty"):
        _record(robot_id="")
    with pytest.raises(RunRecordError, match="passed"):
        _record(passed="yes")
    with pytest.raises(RunRecordError, match="parameters"):
        RunRecord.from_json_data(
            {k: v for k, v in _record().to_json_data().items() if k != "parameters"}
        )
    assert _record().with_run_dir("a/b/c").run_dir == "a/b/c"


# --------------------------------------------------------------------------- #
# RunIndex: schema, add, queries
# --------------------------------------------------------------------------- #
def test_schema_version_wal_and_foreign_keys(tmp_path):
    path = tmp_path / "i.sqlite"
    with RunIndex(path) as index:
        conn = index._conn
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        with pytest.raises(sqlite3.IntegrityError):  # a parameter needs its run
            conn.execute("INSERT INTO parameters VALUES ('ghost', 'x', 0, 1.0, NULL)")
    assert len(RunIndex(path)) == 0  # reopening does not migrate again


def test_add_get_round_trip_and_job_unique(tmp_path):
    with RunIndex(tmp_path / "i.sqlite") as index:
        rec = _record(2, 1, nan_metric=True, run_dir="x/y/z")
        assert index.add(rec) is True
        got = index.get(rec.run_id)
        assert got == rec and got.to_json() == rec.to_json()
        assert index.has_job(rec.job_id) and not index.has_job("nope")
        before = _rows(index.path)
        again = _record(2, 1, fs=99.0, run_id="other-run")  # same job_id, other content
        assert index.add(again) is False
        assert _rows(index.path) == before and len(index) == 1
        assert index.get("missing") is None


def test_add_failing_half_way_leaves_nothing(tmp_path):
    """Duplicate parameter names fail the second parameter insert: all rows roll back."""
    with RunIndex(tmp_path / "i.sqlite") as index:
        index.add(_record(1, 0))
        before = _rows(index.path)
        bad = _record(2, 0)
        object.__setattr__(bad, "parameters", (*bad.parameters, ParameterEstimate("fs2", 5.0)))
        with pytest.raises(RunIndexError, match="nothing of the run was written"):
            index.add(bad)
        assert _rows(index.path) == before and not index.has_job(bad.job_id)
        # a failure at the very last table (metrics), after runs and parameters rows
        index._conn.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON metrics BEGIN SELECT RAISE(ABORT, 'boom'); END"
        )
        with pytest.raises(RunIndexError, match="boom"):
            index.add(_record(3, 0))
        assert _rows(index.path) == before
        index._conn.execute("DROP TRIGGER boom")
        assert index.add(_record(3, 0)) and len(index) == 2  # the connection is usable again


def test_run_id_taken_by_another_job_is_refused(tmp_path):
    with RunIndex(tmp_path / "i.sqlite") as index:
        index.add(_record(1, 0))
        with pytest.raises(RunIndexError, match="job9"):
            index.add(_record(1, 0, job="job9", run_id="job001s0"))
        assert len(index) == 1


def test_queries_filter_and_order(tmp_path):
    with RunIndex(tmp_path / "i.sqlite") as index:
        for session in (2, 0, 1):
            for robot in (1, 0):
                index.add(_record(robot, session))
        index.add(_record(5, 0, task="calibration", parameters=(ParameterEstimate("d_px", 1e-3),)))
        runs = index.runs(robot_id="ur10-01")
        assert [r.session for r in runs] == ["s0", "s1", "s2"]
        assert [r.session for r in index.runs(since="2026-02-01")] == ["s1", "s1", "s2", "s2"]
        assert len(index.runs(task="identification")) == 6 and len(index) == 7
        hist = index.parameter_history("fs2", robot_id="ur10-00")
        assert hist == [
            HistoryPoint(
                "ur10-00",
                f"job000s{s}",
                f"s{s}",
                f"2026-0{s + 1}-01T00:00:00+00:00",
                "fs2",
                0.1 + s * 1e-3,
                0.1 / 3.0,
            )
            for s in range(3)
        ]
        everything = index.parameter_history()
        assert len(everything) == 6 * 3 + 1
        assert [p.name for p in everything] == sorted(p.name for p in everything)
        assert index.parameter_history("d_px", task="identification") == []
        assert index.parameter_names() == ["Ia1", "d_px", "fs2", "fv2"]
        assert index.parameter_names(task="calibration") == ["d_px"]
        assert index.robots() == ["ur10-00", "ur10-01", "ur10-05"]


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "i.sqlite"
    RunIndex(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    with pytest.raises(RunIndexError, match=r"version 7.*version 2.*upgrade figaroh"):
        RunIndex(path)


def test_migrations_apply_in_order_in_one_transaction(tmp_path, monkeypatch):
    path = tmp_path / "i.sqlite"
    with RunIndex(path) as index:
        index.add(_record())
    extra = "CREATE TABLE notes (run_id TEXT);\nCREATE INDEX notes_run ON notes(run_id);\n"
    broken = "CREATE TABLE half (x);\nTHIS IS NOT SQL;\n"
    version = SCHEMA_VERSION
    # RunIndex looks its migrations up in figaroh.fleet.index_store
    monkeypatch.setattr(index_store, "MIGRATIONS", (*ri.MIGRATIONS, extra, broken))
    monkeypatch.setattr(index_store, "SCHEMA_VERSION", version + 2)
    with pytest.raises(RunIndexError):
        RunIndex(path)
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert conn.execute("PRAGMA user_version").fetchone()[0] == version  # all or nothing
    assert "notes" not in tables and "half" not in tables
    conn.close()
    monkeypatch.setattr(index_store, "MIGRATIONS", (*index_store.MIGRATIONS[: version + 1],))
    monkeypatch.setattr(index_store, "SCHEMA_VERSION", version + 1)
    with RunIndex(path) as index:
        assert index._conn.execute("PRAGMA user_version").fetchone()[0] == version + 1
        assert index._conn.execute("SELECT COUNT(*) FROM notes").fetchone()[0] == 0
        assert len(index) == 1  # the data survived the migration


def test_not_a_database_is_named(tmp_path):
    path = tmp_path / INDEX_DB
    path.write_bytes(b"this is not sqlite, just text of some length" * 40)
    with pytest.raises(RunIndexError, match="rebuild it from the archive"):
        RunIndex(path)


# --------------------------------------------------------------------------- #
# archive steps
# --------------------------------------------------------------------------- #
def _solved_object():
    provenance = {
        "run_id": "r-1",
        "task": "identification",
        "asset": {"asset_id": "cell/2"},
        "timestamps": {"run_finished": "2026-03-01T10:00:00+00:00"},
        "software": {"git_commit": "abcdef1234567"},
        "x": float("nan"),
    }
    return types.SimpleNamespace(
        _run_provenance=provenance,
        identif_config={"robot_name": "ur10", "q0": np.zeros(2)},
        result={"base parameters names": ["a", "b"], "base parameters values": [1.5, 1 / 3]},
        stages=[],
    )


def test_archive_run_writes_exactly_archive_files(tmp_path):
    obj = _solved_object()
    files = archive_files(obj)
    assert list(files) == ["provenance.json", "config.snapshot.yaml", "parameters.csv"]
    run_dir = archive_mod.compute_run_dir(obj, tmp_path / "a")
    done = Path(archive_run(obj, run_dir))
    on_disk = {p.name: p.read_text() for p in done.iterdir() if p.name != SEAL_MARKER}
    assert on_disk == files
    # the same files through the public step, into another root: same content and index fields
    other = tmp_path / "b" / "cell_2" / "identification" / done.name
    done2 = Path(write_archived_run(files, other, tmp_path / "b"))
    assert {p.name: p.read_text() for p in done2.iterdir() if p.name != SEAL_MARKER} == files
    (e1,), (e2,) = read_index(tmp_path / "a"), read_index(tmp_path / "b")
    drop = ("archived_at",)
    assert {k: v for k, v in e1.items() if k not in drop} == {
        k: v for k, v in e2.items() if k not in drop
    }
    assert verify_archived_run(done2, tmp_path / "b").ok


def test_write_archived_run_extras_before_seal_and_sealed_goes_to_sibling(tmp_path):
    files = {"provenance.json": '{"run_id": "p"}\n', "verdict.json": '{"status": "pass"}'}
    first = Path(write_archived_run(files, tmp_path / "a" / "t" / "run", tmp_path))
    assert (first / "verdict.json").read_text() == files["verdict.json"]
    second = Path(write_archived_run(files, first, tmp_path))  # sealed: never rewritten
    assert second.name == "run-r2" and is_sealed_dir(second)
    assert [e["status"] for e in read_index(tmp_path)] == ["pass", "pass"]
    claimed = claim_run_dir(tmp_path / "a" / "t", "run")
    assert claimed.name == "run-r3"
    write_archived_run(files, claimed, tmp_path, run_id="mine", claimed=True)
    # a claimed folder's seal is its archiving marker renamed: the writer's pid, host tag, how
    assert (claimed / SEAL_MARKER).read_text().split()[::2] == [str(os.getpid()), "claimed"]
    assert not (claimed / archive_mod.ARCHIVING_MARKER).exists()
    assert read_index(tmp_path)[-1]["run_id"] == "mine"
    with pytest.raises(FileExistsError, match="claim_run_dir"):
        write_archived_run(files, claimed, tmp_path, claimed=True)
    for bad in ("../x", "a/b", SEAL_MARKER, ""):
        with pytest.raises(ArchiveFileNameError, match="plain file name"):
            write_archived_run({bad: "x"}, tmp_path / "z", tmp_path)


# --------------------------------------------------------------------------- #
# write_fleet_run and rebuild_index
# --------------------------------------------------------------------------- #
def _archive_batch(root: Path, n_robots=3, n_sessions=2) -> list[RunRecord]:
    written = []
    with RunIndex(index_path(root)) as index:
        for robot in range(n_robots):
            for session in range(n_sessions):
                rec = _record(robot, session, nan_metric=robot == 1)
                out = write_fleet_run(root, _files(rec), rec, index)
                assert out is not None
                written.append(out)
    return written


def test_write_fleet_run_folder_record_and_index(tmp_path):
    root = tmp_path / "fleet"
    written = _archive_batch(root)
    rec = written[0]
    folder = root / rec.run_dir
    assert folder == run_folder(root, rec) == root / "ur10-00" / "identification" / "s0_job000s0"
    assert is_sealed_dir(folder)
    assert RunRecord.from_json((folder / RECORD_FILE).read_text()) == rec
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [SEAL_MARKER, RECORD_FILE, "provenance.json", "parameters.csv", "verdict.json"]
    )
    entries = read_index(root)
    assert len(entries) == len(written) and {e["run_id"] for e in entries} == {
        r.run_id for r in written
    }
    assert all(verify_archived_run(root / r.run_dir, root).ok for r in written)
    with RunIndex(index_path(root)) as index:
        assert [index.get(r.run_id) for r in written] == written
        assert sorted(index.runs(), key=lambda r: r.run_id) == sorted(
            written, key=lambda r: r.run_id
        )
        before = _tree(root)
        again = _record(0, 0, fs=5.0)
        assert write_fleet_run(root, _files(again), again, index) is None
        assert _tree(root) == before  # nothing written at all


def test_rebuild_equals_live_index(tmp_path):
    root = tmp_path / "fleet"
    written = _archive_batch(root, n_robots=4, n_sessions=3)
    summary = rebuild_index(root, tmp_path / "rebuilt.sqlite")
    assert summary.runs == len(written) == 12 and summary.skipped == ()
    live, rebuilt = _rows(index_path(root)), _rows(tmp_path / "rebuilt.sqlite")
    assert len(live["parameters"]) == 36 and len(live["metrics"]) == 12 * 2 + 3
    assert rebuilt == live
    # in place: the live index is replaced by an equal one, no temporary file is left
    assert rebuild_index(root).runs == 12
    assert _rows(index_path(root)) == live
    assert not [p for p in root.iterdir() if p.name.startswith(f".{INDEX_DB}")]


def test_rebuild_reports_skipped_folders(tmp_path):
    root = tmp_path / "fleet"
    _archive_batch(root, n_robots=1, n_sessions=1)
    torn = root / "r" / "identification" / "s0_torn"
    torn.mkdir(parents=True)
    (torn / "provenance.json").write_text("{}")
    no_record = root / "r" / "identification" / "single"
    no_record.mkdir()
    (no_record / SEAL_MARKER).write_text("x\n")
    garbled = root / "r" / "identification" / "garbled"
    garbled.mkdir()
    (garbled / SEAL_MARKER).write_text("x\n")
    (garbled / RECORD_FILE).write_text('{"run_id": ')
    summary = rebuild_index(root, tmp_path / "x.sqlite")
    assert summary.runs == 1
    reasons = dict(line.split(": ", 1) for line in summary.skipped)
    assert set(reasons) == {"r/identification/single", "r/identification/garbled"}
    # an unsealed folder is not an archived run: reported, left in place, not an error
    assert summary.swept == (
        "r/identification/s0_torn: left in place (not sealed: not an archived run)",
    )
    assert (torn / "provenance.json").is_file()
    assert RECORD_FILE in reasons["r/identification/single"]
    assert "not valid JSON" in reasons["r/identification/garbled"]
    with pytest.raises(RunIndexError, match="not a folder"):
        rebuild_index(tmp_path / "missing")


def test_rebuild_refuses_an_index_in_use(tmp_path):
    root = tmp_path / "fleet"
    _archive_batch(root, n_robots=1, n_sessions=2)
    with RunIndex(index_path(root)) as index:
        before = _rows(index.path)
        with pytest.raises(RunIndexError, match="in use by another process"):
            rebuild_index(root)
        assert len(index) == 2 and _rows(index.path) == before
    assert not [p for p in root.iterdir() if p.name.endswith(".rebuild")]


def test_interrupted_write_is_adopted_not_archived_twice(tmp_path):
    """Folder sealed, driver killed before the index insert: the re-run indexes that folder."""
    root = tmp_path / "fleet"
    rec = _record(4, 1)
    with RunIndex(tmp_path / "lost.sqlite") as lost:  # the index the crash never committed to
        first = write_fleet_run(root, _files(rec), rec, lost)
    torn = run_folder(root, _record(4, 2))  # an unsealed folder in the way of another job
    torn.mkdir(parents=True)
    with RunIndex(index_path(root)) as index:
        rerun = _record(4, 1, started="2026-12-03T00:00:00+00:00")  # recomputed: other times
        adopted = write_fleet_run(root, _files(rerun), rerun, index)
        assert adopted == first  # the archived record, not the recomputed one
        other = write_fleet_run(root, _files(_record(4, 2)), _record(4, 2), index)
        assert other.run_dir.endswith("s2_job004s2-r2")
    folders = sorted(p.name for p in (root / "ur10-04" / "identification").iterdir())
    assert folders == ["s1_job004s1", "s2_job004s2", "s2_job004s2-r2"]
    summary = rebuild_index(root, tmp_path / "re.sqlite")
    assert summary.runs == 2 and summary.skipped == () and len(summary.swept) == 1
    assert _rows(tmp_path / "re.sqlite") == _rows(index_path(root))


def _writer(path: str, robot: int, n: int) -> None:
    with RunIndex(path) as index:
        for session in range(n):
            assert index.add(_record(robot, session))


def test_two_processes_share_one_index(tmp_path):
    path = str(tmp_path / INDEX_DB)
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    procs = [ctx.Process(target=_writer, args=(path, robot, 40)) for robot in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    with RunIndex(path) as index:
        assert len(index) == 80
        assert index._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert len(index.parameter_history("fs2")) == 80


@pytest.mark.parametrize("fail_at", range(5))
def test_a_write_failing_anywhere_leaves_no_sealed_partial_run(tmp_path, monkeypatch, fail_at):
    """Every file (run_record.json too) is written before the seal: a sealed folder is complete."""
    root = tmp_path / "fleet"
    rec = _record(6, 0)
    calls = []
    real = archive_mod.write_new_file

    def flaky(path, data, *args, **kwargs):
        calls.append(Path(path).name)
        if len(calls) == fail_at + 1:
            raise OSError(28, "No space left on device")
        return real(path, data, *args, **kwargs)

    monkeypatch.setattr(archive_mod, "write_new_file", flaky)
    with RunIndex(index_path(root)) as index:
        if fail_at < len(_files(rec)) + 1:
            with pytest.raises(OSError, match="No space"):
                write_fleet_run(root, _files(rec), rec, index)
            folder = run_folder(root, rec)
            assert not is_sealed_dir(folder) and len(index) == 0 and read_index(root) == []
            assert calls == [*_files(rec), RECORD_FILE][: fail_at + 1]  # record last
        monkeypatch.setattr(archive_mod, "write_new_file", real)
        done = write_fleet_run(root, _files(rec), rec, index)
    assert done is not None and is_sealed_dir(root / done.run_dir)
    summary = rebuild_index(root, tmp_path / "re.sqlite")
    assert summary.runs == 1 and _rows(tmp_path / "re.sqlite") == _rows(index_path(root))
    assert all("not sealed" in line for line in summary.skipped)


def test_record_pickles_and_hashes():
    rec = _record(2, 1, nan_metric=True)
    back = pickle.loads(pickle.dumps(rec))
    assert back == rec and hash(back) == hash(rec)
    assert len({rec, back, _record(2, 2)}) == 2


def test_rebuild_replaces_a_damaged_index_and_its_stale_side_files(tmp_path):
    root = tmp_path / "fleet"
    _archive_batch(root, n_robots=2, n_sessions=1)
    good = _rows(index_path(root))
    index_path(root).write_bytes(b"garbage" * 1000)
    Path(f"{index_path(root)}-wal").write_bytes(b"stale wal" * 100)
    with pytest.raises(RunIndexError):
        RunIndex(index_path(root))
    assert rebuild_index(root).runs == 2
    assert not Path(f"{index_path(root)}-wal").exists()
    assert _rows(index_path(root)) == good


# --------------------------------------------------------------------------- #
# schema version 2: batch ids, tags, failures, batches; grouped transactions
# --------------------------------------------------------------------------- #
def test_record_batch_id_and_tags_round_trip_and_old_records_read_back(tmp_path):
    rec = _record(2, 1, batch_id="20261206T101500Z-3f9a", tags={"site": "lyon", "line": "L4"})
    assert list(rec.tags) == ["line", "site"]
    assert RunRecord.from_json(rec.to_json()) == rec
    old = {k: v for k, v in rec.to_json_data().items() if k not in ("batch_id", "tags")}
    back = RunRecord.from_json_data(old)  # a run_record.json written before batch ids existed
    assert back.batch_id == "" and back.tags == {}
    assert back == rec.in_batch("", {})
    with RunIndex(tmp_path / "i.sqlite") as index:
        index.add(rec)
        assert index.get(rec.run_id) == rec
    with pytest.raises(RunRecordError, match="tag 'fw' must be a text"):
        _record(tags={"fw": 3.1})


def _v1_index(path: Path, records: list[RunRecord]) -> None:
    """An index file as the version-1 figaroh wrote it (its schema, its rows)."""
    conn = sqlite3.connect(path)
    conn.executescript(ri.MIGRATIONS[0])
    for rec in records:
        conn.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rec.run_id,
                rec.job_id,
                rec.robot_id,
                rec.task,
                rec.session,
                rec.session_time,
                rec.started,
                rec.finished,
                rec.config_sha256,
                json.dumps(dict(rec.data_sha256), sort_keys=True),
                rec.verdict_status,
                None if rec.passed is None else int(rec.passed),
                rec.run_dir,
                rec.figaroh_version,
            ),
        )
        for k, p in enumerate(rec.parameters):
            value = p.value if math.isfinite(p.value) else None
            conn.execute(
                "INSERT INTO parameters VALUES (?, ?, ?, ?, ?)",
                (rec.run_id, p.name, k, value, p.sigma),
            )
        for name, value in rec.metrics.items():
            conn.execute(
                "INSERT INTO metrics VALUES (?, ?, ?)",
                (rec.run_id, name, value if math.isfinite(value) else None),
            )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_a_version_1_index_upgrades_in_place_and_keeps_its_runs(tmp_path):
    path = tmp_path / INDEX_DB
    old = [_record(1, 0, run_dir="a/b/c"), _record(2, 1, nan_metric=True, run_dir="a/b/d")]
    _v1_index(path, old)
    with RunIndex(path) as index:
        assert index._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert index.runs() == old  # every field, batch_id "" and tags {} included
        assert (
            index.parameter_history("fs2", robot_id="ur10-01")[0].value
            == old[0].parameters[0].value
        )
        new = _record(3, 0, batch_id="20261206T101500Z-aaaa", tags={"site": "s"})
        assert index.add(new) and index.get(new.run_id) == new
        row = _failure_row("20261206T101500Z-aaaa", 0, "robot_9")
        assert index.add_failure(row) and index.failures() == [row]
        assert index.batches() == []
    with RunIndex(path) as index:  # reopening does not migrate again
        assert len(index) == 3
    conn = sqlite3.connect(path)
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    conn.close()
    assert {"runs_batch_robot", "failures_robot_batch"} <= indexes


def _failure_row(batch_id: str, seq: int, robot: str, **over) -> ri.FailureRow:
    fields = dict(
        batch_id=batch_id,
        seq=seq,
        job_id=f"job-{robot}-{seq}",
        robot_id=robot,
        task="identification",
        session="s0",
        status="failed",
        error_type="CLIError",
        message="invalid trajectory data",
        host="node-a",
        attempts=1,
        tags={"line": "L4"},
        time="2026-12-06T10:15:00.000+00:00",
    )
    fields.update(over)
    return ri.FailureRow(**fields)


def test_grouped_writes_commit_every_n_rows_and_at_the_end(tmp_path):
    path = tmp_path / "i.sqlite"
    reader = sqlite3.connect(path)  # another process's view: committed rows only
    with RunIndex(path) as index:
        with index.grouped(every=3, interval_s=60):
            for robot in range(4):
                index.add(_record(robot, 0))
                assert index.has_job(f"job{robot:03d}s0")  # the writer sees its own rows
            committed = reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            assert committed == 3  # the 4th waits for its group
            bad = _record(9, 0)
            object.__setattr__(bad, "parameters", (*bad.parameters, ParameterEstimate("fs2", 1)))
            with pytest.raises(RunIndexError, match="nothing of the run was written"):
                index.add(bad)  # its savepoint rolls back; the group's rows stay
            index.add_failure(_failure_row("b1", 0, "ur10-05"))
        assert reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 4
        assert reader.execute("SELECT COUNT(*) FROM failures").fetchone()[0] == 1
        assert not index.has_job(bad.job_id) and index.commit_errors == 0
    reader.close()


def test_an_idle_group_is_committed_by_its_timer(tmp_path):
    path = tmp_path / "i.sqlite"
    reader = sqlite3.connect(path)
    with RunIndex(path) as index, index.grouped(every=100, interval_s=0.2):
        index.add(_record(1, 0))
        assert reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
        deadline = time.monotonic() + 10
        while reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0:
            assert time.monotonic() < deadline, "the idle group was never committed"
            time.sleep(0.05)
    reader.close()


def test_a_group_seals_its_folders_just_before_it_commits(tmp_path):
    root = tmp_path / "fleet"
    with RunIndex(index_path(root)) as index:
        with index.grouped(every=2, interval_s=60):
            first = write_fleet_run(root, _files(_record(1, 0)), _record(1, 0), index)
            folder = root / first.run_dir
            assert not is_sealed_dir(folder) and read_index(root) == []  # complete, not sealed
            assert (folder / RECORD_FILE).is_file()
            second = write_fleet_run(root, _files(_record(2, 0)), _record(2, 0), index)
            assert is_sealed_dir(folder) and is_sealed_dir(root / second.run_dir)
        assert all(verify_archived_run(root / r.run_dir, root).ok for r in (first, second))


def test_rebuild_restores_batch_ids_tags_failures_and_batches(tmp_path):
    root = tmp_path / "fleet"
    batch = ri.BatchInfo(
        "20261206T101500Z-0001", host="node-a", pid=42, started="2026-12-06T10:15:00+00:00"
    )
    with RunIndex(index_path(root)) as index:
        index.record_batch(batch)
        for robot in range(3):
            rec = _record(robot, 0, batch_id=batch.batch_id, tags={"line": f"L{robot}"})
            write_fleet_run(root, _files(rec), rec, index)
        rec = _record(7, 0, batch_id="20261207T101500Z-0002")  # a batch the index never recorded
        write_fleet_run(root, _files(rec), rec, index)
        for seq, robot in enumerate(("robot_x", "robot_y")):
            ri.append_failure(root, _failure_row(batch.batch_id, seq, robot), index)
        index.record_batch(dataclasses.replace(batch, status="finished", runs=3, failures=2))
    live = _rows(index_path(root))
    with RunIndex(index_path(root)) as index:
        live_failures, live_batches = index.failures(), index.batches()
    summary = rebuild_index(root)
    assert (summary.runs, summary.failures, summary.skipped) == (4, 2, ())
    assert _rows(index_path(root)) == live
    with RunIndex(index_path(root)) as index:
        assert index.failures() == live_failures
        assert index.get("job000s0").tags == {"line": "L0"}
        batches = index.batches()
        assert batches[1:] == live_batches  # the recorded batch kept as it was
        assert batches[0] == ri.BatchInfo(
            "20261207T101500Z-0002",
            host="",
            pid=None,
            started="2026-12-07T10:15:00+00:00",
            status="rebuilt",
            runs=1,
            failures=0,
        )


def test_a_torn_failure_line_is_skipped_by_the_rebuild(tmp_path):
    root = tmp_path / "fleet"
    with RunIndex(index_path(root)) as index:
        ri.append_failure(root, _failure_row("b1", 0, "r"), index)
    with open(root / ri.FAILURES_FILE, "a") as fh:
        fh.write('{"batch_id": "b1", "seq": 1, "job_')  # a writer killed mid-line
    assert rebuild_index(root).failures == 1
    with RunIndex(index_path(root)) as index:
        ri.append_failure(root, _failure_row("b1", 1, "r"), index)  # starts on a new line
    assert rebuild_index(root).failures == 2


def test_new_batch_ids_sort_by_time():
    from datetime import datetime, timezone

    early = ri.new_batch_id(datetime(2026, 12, 6, 10, 15, tzinfo=timezone.utc))
    late = ri.new_batch_id(datetime(2026, 12, 7, 1, 0, tzinfo=timezone.utc))
    assert early.startswith("20261206T101500Z-") and len(early) == len("20261206T101500Z-3f9a")
    assert early < late and index_rebuild._batch_time(early) == "2026-12-06T10:15:00+00:00"
