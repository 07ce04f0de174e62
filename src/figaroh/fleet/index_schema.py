"""The run index's schema: its SQL, migrations, file names and row records.

The run index (:class:`~figaroh.fleet.index_store.RunIndex`) is the SQLite
file ``<archive_root>/index.sqlite`` (:data:`INDEX_DB`); failed jobs also go
to ``<archive_root>/failures.jsonl`` (:data:`FAILURES_FILE`).

Schema (version :data:`SCHEMA_VERSION`, stored in ``PRAGMA user_version``):

``runs`` — one row per archived run.
    ``run_id`` TEXT PRIMARY KEY (a fleet run uses its job id);
    ``job_id`` TEXT NOT NULL UNIQUE (hash of the job spec, config and data: a
    job is indexed at most once); ``robot_id``, ``task``
    (``identification`` / ``calibration`` / ``trajectory`` / ``monte_carlo``),
    ``session`` TEXT NOT NULL; ``session_time`` TEXT NOT NULL (ISO-8601 UTC,
    the time axis of drift reports); ``started``, ``finished`` TEXT (ISO-8601
    UTC, the job's own times); ``config_sha256`` TEXT (hex); ``data_sha256``
    TEXT (JSON object: data file name → sha256 hex); ``verdict_status`` TEXT
    (``pass`` / ``fail`` / ``not_evaluated`` ...); ``passed`` INTEGER (1, 0
    or NULL when not evaluated); ``run_dir`` TEXT (run folder relative to the
    archive root, POSIX); ``figaroh_version`` TEXT; ``batch_id`` TEXT (the
    batch that archived it, ``''`` before version 2); ``tags`` TEXT (JSON
    object of the job's tags, text → text).
``parameters`` — every identified / calibrated parameter of a run.
    ``run_id`` TEXT REFERENCES runs ON DELETE CASCADE; ``name`` TEXT;
    ``position`` INTEGER (order within the run); ``value`` REAL (the
    parameter's own unit: [N·m], [kg·m²], [m], [rad] ...; NULL when not
    finite); ``sigma`` REAL (standard deviation, absolute, same unit; NULL when
    unknown). PRIMARY KEY (run_id, name).
``metrics`` — scalar metrics of a run.
    ``run_id`` TEXT REFERENCES runs ON DELETE CASCADE; ``name`` TEXT;
    ``value`` REAL (unit as the metric name says; NULL when not finite).
    PRIMARY KEY (run_id, name).
``failures`` — one row per job a batch could not run (version 2).
    ``batch_id`` TEXT, ``seq`` INTEGER (order within the batch), PRIMARY KEY
    (batch_id, seq); ``job_id`` TEXT (``''`` when its inputs could not even be
    hashed); ``robot_id``, ``task``, ``session`` TEXT; ``status`` TEXT
    (``failed``, or ``unfinished`` for a job a deadline cancelled);
    ``error_type`` TEXT (the exception class, e.g. ``InputMismatchError``);
    ``message`` TEXT; ``host`` TEXT (where it failed last, ``''`` unknown);
    ``attempts`` INTEGER; ``tags`` TEXT (JSON); ``time`` TEXT (ISO-8601 UTC).
``batches`` — one row per batch (version 2): the archive's lock holder while
    it runs. ``batch_id`` TEXT PRIMARY KEY; ``host``, ``pid``, ``started``,
    ``finished`` (NULL while running), ``status`` (``running``, ``finished``,
    ``interrupted``: its driver died; ``rebuilt``: restored by a rebuild),
    ``command``; counts ``jobs``, ``runs``, ``failures``, ``skipped``; and
    ``jsonl_offset`` / ``failures_offset``, the sizes of ``index.jsonl`` and
    ``failures.jsonl`` when it started (where its lines begin).

Indexes: ``runs(robot_id, task, session_time)``, ``parameters(name)``,
``runs(batch_id, robot_id)``, ``failures(robot_id, batch_id)``.

Migrations: :data:`MIGRATIONS` ``[k]`` upgrades a database from version ``k``
to ``k + 1``; opening an index applies the missing ones in order, each in one
transaction with its ``user_version`` bump. A database of a newer version than
this figaroh knows is refused (:class:`RunIndexError`).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, Mapping, Tuple, Union

from figaroh.errors import FigarohError

__all__ = [
    "FAILURES_FILE",
    "INDEX_DB",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "BatchInfo",
    "FailureRow",
    "HistoryPoint",
    "RebuildSummary",
    "RunIndexError",
    "index_path",
    "new_batch_id",
    "utc_now",
]

PathLike = Union[str, "os.PathLike[str]"]

#: File name of the run index at the archive root.
INDEX_DB = "index.sqlite"
#: File name of the failed jobs' log at the archive root (one JSON line each).
FAILURES_FILE = "failures.jsonl"

_MIGRATION_1 = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL UNIQUE,
    robot_id TEXT NOT NULL,
    task TEXT NOT NULL,
    session TEXT NOT NULL,
    session_time TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    config_sha256 TEXT NOT NULL,
    data_sha256 TEXT NOT NULL,
    verdict_status TEXT NOT NULL,
    passed INTEGER CHECK (passed IN (0, 1)),
    run_dir TEXT NOT NULL,
    figaroh_version TEXT NOT NULL
);
CREATE TABLE parameters (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    value REAL,
    sigma REAL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE metrics (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX runs_robot_task_time ON runs(robot_id, task, session_time);
CREATE INDEX parameters_name ON parameters(name);
"""

_MIGRATION_2 = """
ALTER TABLE runs ADD COLUMN batch_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
CREATE INDEX runs_batch_robot ON runs(batch_id, robot_id);
CREATE TABLE failures (
    batch_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    job_id TEXT NOT NULL,
    robot_id TEXT NOT NULL,
    task TEXT NOT NULL,
    session TEXT NOT NULL,
    status TEXT NOT NULL,
    error_type TEXT NOT NULL,
    message TEXT NOT NULL,
    host TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    tags TEXT NOT NULL,
    time TEXT NOT NULL,
    PRIMARY KEY (batch_id, seq)
);
CREATE INDEX failures_robot_batch ON failures(robot_id, batch_id);
CREATE TABLE batches (
    batch_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,
    command TEXT NOT NULL DEFAULT '',
    jobs INTEGER,
    runs INTEGER,
    failures INTEGER,
    skipped INTEGER,
    jsonl_offset INTEGER NOT NULL DEFAULT 0,
    failures_offset INTEGER NOT NULL DEFAULT 0
);
"""

#: SQL scripts; ``MIGRATIONS[k]`` upgrades schema version ``k`` to ``k + 1``.
MIGRATIONS: Tuple[str, ...] = (_MIGRATION_1, _MIGRATION_2)
#: Schema version this figaroh writes (``PRAGMA user_version``).
SCHEMA_VERSION = len(MIGRATIONS)

_RUN_COLUMNS = (
    "run_id",
    "job_id",
    "robot_id",
    "task",
    "session",
    "session_time",
    "started",
    "finished",
    "config_sha256",
    "data_sha256",
    "verdict_status",
    "passed",
    "run_dir",
    "figaroh_version",
    "batch_id",
    "tags",
)
#: The ids of the newest batches (one ``?``: how many), as
#: :meth:`~figaroh.fleet.index_store.RunIndex.batches` orders them.
_LAST_BATCHES = "SELECT batch_id FROM batches ORDER BY started DESC, batch_id DESC LIMIT ?"
_FAILURE_COLUMNS = (
    "batch_id",
    "seq",
    "job_id",
    "robot_id",
    "task",
    "session",
    "status",
    "error_type",
    "message",
    "host",
    "attempts",
    "tags",
    "time",
)
_BATCH_COLUMNS = (
    "batch_id",
    "host",
    "pid",
    "started",
    "finished",
    "status",
    "command",
    "jobs",
    "runs",
    "failures",
    "skipped",
    "jsonl_offset",
    "failures_offset",
)


class RunIndexError(FigarohError, RuntimeError):
    """The run index cannot be opened, migrated, written or rebuilt (the message says the fix)."""


@dataclasses.dataclass(frozen=True)
class HistoryPoint:
    """One parameter estimate of one run, as a point of a robot's history.

    Attributes:
        robot_id: The robot.
        run_id: The run holding the estimate.
        session: Session label of the run.
        session_time: ISO-8601 UTC time of the session (the time axis).
        name: Parameter name.
        value: Estimate in the parameter's own unit (``nan`` when it was not finite).
        sigma: Standard deviation, same unit; None when unknown.
    """

    robot_id: str
    run_id: str
    session: str
    session_time: str
    name: str
    value: float
    sigma: float | None


@dataclasses.dataclass(frozen=True)
class RebuildSummary:
    """Outcome of :func:`~figaroh.fleet.index_rebuild.rebuild_index`.

    Attributes:
        runs: Runs written into the rebuilt index.
        failures: Failed jobs written into it (from ``failures.jsonl``).
        skipped: One line per sealed run folder left out, ``"<folder>: <reason>"``
            (no or invalid ``run_record.json``, duplicate job): an error.
        swept: One line per unsealed folder, ``"<folder>: <what was done>"``
            (an interrupted archive finished or removed, or a folder left in
            place: :func:`figaroh._run.archive.sweep_interrupted_runs`); not
            archived runs, so not an error.
    """

    runs: int
    skipped: Tuple[str, ...] = ()
    swept: Tuple[str, ...] = ()
    failures: int = 0


@dataclasses.dataclass(frozen=True)
class FailureRow:
    """One job a batch could not run: a row of the ``failures`` table, a line of ``failures.jsonl``.

    Attributes:
        batch_id: The batch.
        seq: Order of the failure within the batch (0, 1, ...).
        job_id: The job's id (``""`` when its input files could not be hashed).
        robot_id: The robot.
        task: The job's kind (``identification``, ``calibration`` ...).
        session: The job's session.
        status: ``"failed"``, or ``"unfinished"`` when a batch deadline or
            no-progress timeout cancelled it.
        error_type: Exception class name (``"InputMismatchError"``, ``"CLIError"`` ...).
        message: The error's one-line message.
        host: Host where it failed last (``""`` unknown).
        attempts: Attempts made.
        tags: The job's tags.
        time: ISO-8601 UTC time the driver recorded it.
    """

    batch_id: str
    seq: int
    job_id: str
    robot_id: str
    task: str
    session: str
    status: str
    error_type: str
    message: str
    host: str
    attempts: int
    tags: Mapping[str, str]
    time: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", dict(sorted(self.tags.items())))

    def to_json_data(self) -> Dict[str, Any]:
        """The ``failures.jsonl`` object (inverse of :meth:`from_json_data`)."""
        return {name: getattr(self, name) for name in _FAILURE_COLUMNS} | {"tags": dict(self.tags)}

    @classmethod
    def from_json_data(cls, data: Any) -> FailureRow:
        """A row from a ``failures.jsonl`` object.

        Raises:
            RunIndexError: a field is missing or has the wrong type (named).
        """
        if not isinstance(data, Mapping):
            raise RunIndexError(f"a failure line must be a JSON object, got {type(data).__name__}")
        missing = [name for name in _FAILURE_COLUMNS if name not in data]
        if missing:
            raise RunIndexError(f"failure line lacks field(s) {', '.join(missing)}")
        ints = ("seq", "attempts")
        for name in _FAILURE_COLUMNS:
            value = data[name]
            ok = isinstance(value, Mapping) if name == "tags" else isinstance(value, str)
            if name in ints:
                ok = isinstance(value, int) and not isinstance(value, bool)
            if not ok:
                raise RunIndexError(f"failure line field {name!r} has the wrong type: {value!r}")
        return cls(**{name: data[name] for name in _FAILURE_COLUMNS})


@dataclasses.dataclass(frozen=True)
class BatchInfo:
    """One batch of the archive (a row of the ``batches`` table).

    Attributes:
        batch_id: ``<UTC start time>-<random>`` (:func:`new_batch_id`).
        host: Host name of the driver.
        pid: Process id of the driver (None when unknown, e.g. rebuilt).
        started: ISO-8601 UTC start time.
        finished: ISO-8601 UTC end time; None while running or when its driver died.
        status: ``"running"``, ``"finished"``, ``"interrupted"`` (its driver
            died; found by the next batch) or ``"rebuilt"`` (restored by
            :func:`~figaroh.fleet.index_rebuild.rebuild_index` from the batch
            ids of runs and failures).
        command: What held the archive (``"fleet run"`` ...).
        jobs: Jobs of the batch (None while running).
        runs: Runs it archived (None while running).
        failures: Jobs that failed (None while running).
        skipped: Jobs already indexed (None while running).
        jsonl_offset: Size of ``index.jsonl`` when it started [bytes].
        failures_offset: Size of ``failures.jsonl`` when it started [bytes].
    """

    batch_id: str
    host: str
    pid: int | None
    started: str
    finished: str | None = None
    status: str = "running"
    command: str = ""
    jobs: int | None = None
    runs: int | None = None
    failures: int | None = None
    skipped: int | None = None
    jsonl_offset: int = 0
    failures_offset: int = 0


def utc_now() -> str:
    """Now, ISO-8601 UTC with milliseconds (``2026-12-06T10:15:00.123+00:00``)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_batch_id(now: datetime | None = None) -> str:
    """A new batch id: UTC start time and 4 random hex digits, e.g. ``20261206T101500Z-3f9a``."""
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return f"{stamp.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(2)}"


def index_path(archive_root: PathLike) -> Path:
    """``<archive_root>/index.sqlite``."""
    return Path(archive_root) / INDEX_DB


def _statements(script: str) -> Iterator[str]:
    """Complete SQL statements of ``script`` (split where sqlite says one ends)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if pending.strip():
        raise RunIndexError(f"incomplete SQL statement in a migration: {pending.strip()!r}")
