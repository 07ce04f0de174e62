"""Bad inputs to the fleet run index and its records: each fails with a named error and the fix."""

from __future__ import annotations

import sqlite3
import types
from pathlib import Path

import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from figaroh._run.archive import ArchiveFileNameError, archive_run, write_archived_run
from figaroh.fleet.record import ParameterEstimate, RunRecord, RunRecordError
from figaroh.fleet.run_index import (
    INDEX_DB,
    RunIndex,
    RunIndexError,
    index_path,
    rebuild_index,
    write_fleet_run,
)


def _record(**over) -> RunRecord:
    fields = dict(
        run_id="j1",
        job_id="j1",
        robot_id="r1",
        task="identification",
        session="s1",
        session_time="2026-03-01T00:00:00+00:00",
        started="2026-03-01T00:00:00+00:00",
        finished="2026-03-01T00:00:01+00:00",
        config_sha256="c" * 64,
        data_sha256={"train.csv": "d" * 64},
        verdict_status="pass",
        passed=True,
        metrics={"rmse_Nm": 0.1},
        parameters=(ParameterEstimate("fs2", 0.2, 0.01),),
    )
    fields.update(over)
    return RunRecord(**fields)


def _newer_schema(tmp: Path) -> None:
    path = tmp / INDEX_DB
    RunIndex(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 42")
    conn.close()
    RunIndex(path)


def _not_a_database(tmp: Path) -> None:
    path = tmp / INDEX_DB
    path.write_bytes(b"x" * 4096)
    RunIndex(path)


def _index_is_a_folder(tmp: Path) -> None:
    (tmp / INDEX_DB).mkdir()
    RunIndex(tmp / INDEX_DB)


def _run_id_of_another_job(tmp: Path) -> None:
    with RunIndex(tmp / INDEX_DB) as index:
        index.add(_record())
        index.add(_record(job_id="j2"))


def _add_not_a_record(tmp: Path) -> None:
    with RunIndex(tmp / INDEX_DB) as index:
        index.add(_record().to_json_data())


def _rebuild_in_use(tmp: Path) -> None:
    root = tmp / "fleet"
    with RunIndex(index_path(root)) as index:
        write_fleet_run(root, {"verdict.json": "{}"}, _record(), index)
        rebuild_index(root)


def _record_from_truncated_json(tmp: Path) -> None:
    RunRecord.from_json('{"run_id": "j1", ')


def _record_missing_fields(tmp: Path) -> None:
    RunRecord.from_json_data({"run_id": "j1", "job_id": "j1"})


def _fleet_run_with_a_path_as_file_name(tmp: Path) -> None:
    root = tmp / "fleet"
    with RunIndex(index_path(root)) as index:
        try:
            write_fleet_run(root, {"sub/verdict.json": "{}"}, _record(), index)
        finally:  # refused before any write: no folder, no index row, no index line
            assert len(index) == 0 and not (root / "index.jsonl").exists()
            assert list((root / "r1" / "identification").iterdir()) == []


def _archive_inconsistent_parameters(tmp: Path) -> None:
    obj = types.SimpleNamespace(
        _run_provenance={"run_id": "r", "task": "identification"},
        result={"base parameters names": ["a", "b"], "base parameters values": [1.0]},
    )
    archive_run(obj, tmp / "a" / "identification" / "run")


CASES: list[BadInput] = [
    BadInput(
        "index of a newer schema version",
        _newer_schema,
        RunIndexError,
        r"schema version 42.*version 2 this figaroh knows; upgrade figaroh",
    ),
    BadInput(
        "index file is not an sqlite database",
        _not_a_database,
        RunIndexError,
        r"cannot open run index .*figaroh index rebuild",
    ),
    BadInput("index path is a folder", _index_is_a_folder, RunIndexError, r"cannot open run index"),
    BadInput(
        "run id already used by another job",
        _run_id_of_another_job,
        RunIndexError,
        r"cannot add run 'j1' \(job 'j2'\).*nothing of the run was written",
    ),
    BadInput(
        "add a dict instead of a RunRecord", _add_not_a_record, TypeError, r"needs a RunRecord"
    ),
    BadInput(
        "rebuild while a batch holds the index",
        _rebuild_in_use,
        RunIndexError,
        r"in use by another process.*stop the batch",
    ),
    BadInput(
        "rebuild of a missing archive root",
        lambda tmp: rebuild_index(tmp / "nowhere"),
        RunIndexError,
        r"archive root .* is not a folder",
    ),
    BadInput(
        "duplicate parameter names in a record",
        lambda tmp: _record(parameters=(("fs2", 1.0, None), ("fs2", 2.0, None))),
        RunRecordError,
        r"'fs2' appears twice.*must be unique",
    ),
    BadInput(
        "non-numeric parameter value",
        lambda tmp: _record(parameters=(("fs2", "abc", None),)),
        (RunRecordError, ValueError),
        r"parameter 'fs2' value must be a number",
    ),
    BadInput(
        "empty robot id", lambda tmp: _record(robot_id=""), RunRecordError, r"robot_id is empty"
    ),
    BadInput(
        "passed is not a bool",
        lambda tmp: _record(passed="yes"),
        RunRecordError,
        r"passed must be True, False or None",
    ),
    BadInput(
        "truncated run_record.json",
        _record_from_truncated_json,
        RunRecordError,
        r"not valid JSON",
    ),
    BadInput(
        "run_record.json lacking fields",
        _record_missing_fields,
        RunRecordError,
        r"lacks field\(s\) robot_id",
    ),
    BadInput(
        "archive file name escaping the run folder",
        lambda tmp: write_archived_run({"../evil.json": "{}"}, tmp / "a" / "b" / "c", tmp),
        (ArchiveFileNameError, ValueError),
        r"'\.\./evil\.json' is not a plain file name",
    ),
    BadInput(
        "fleet run file named by a path",
        _fleet_run_with_a_path_as_file_name,
        ArchiveFileNameError,
        r"'sub/verdict\.json' is not a plain file name",
    ),
    BadInput(
        "archive_run of inconsistent parameter names and values",
        _archive_inconsistent_parameters,
        ValueError,
        r"cannot archive parameters from result\['base parameters …'\]: 2 names for 1 values",
        already_good=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)
