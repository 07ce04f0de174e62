"""The run index: one SQLite file next to a fleet archive that answers history queries.

Every fleet run is archived as an immutable, sealed run folder
``<archive_root>/<robot_id>/<task>/<session>_<job_id>/`` holding
``run_record.json`` (:class:`~figaroh.fleet.record.RunRecord`); the index
``<archive_root>/index.sqlite`` (:data:`INDEX_DB`) holds the same records as
rows, so "how did ``fs2`` of robot 17 evolve since March?" is one query
(:meth:`RunIndex.parameter_history`). A job that failed has no folder: the
batch driver appends it to ``<archive_root>/failures.jsonl``
(:data:`FAILURES_FILE`) and to the ``failures`` table. The folders and
``failures.jsonl`` are the truth: the index can be rebuilt from them at any
time (:func:`rebuild_index`).

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

Durability and concurrency: WAL journal, foreign keys on, a busy timeout of
:data:`BUSY_TIMEOUT_S` seconds; :meth:`RunIndex.add` writes a run, its
parameters and metrics, or nothing. Alone it is one transaction; inside
:meth:`RunIndex.grouped` (the batch driver) the rows of up to
:data:`COMMIT_EVERY` runs, or of :data:`COMMIT_INTERVAL_S` seconds, share one
transaction (each run a savepoint of it), committed then and when the block
ends. A driver killed before a commit loses those rows only: their folders
are sealed and their lines are in ``index.jsonl`` after the batch's
``jsonl_offset``, so the next batch (:func:`recover_interrupted_batches`) or
a rebuild indexes them. One writer (the batch driver, holding the archive
lock of :mod:`figaroh.fleet.archive_lock`) is the design; other processes may
read, or write through their own :class:`RunIndex`, without corrupting the
file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import secrets
import sqlite3
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Sequence, Tuple, Union

from figaroh._run.archive import (
    ARCHIVING_MARKER,
    INDEX_FILE,
    ArchiveFileNameError,
    UnsealedRun,
    append_line,
    claim_run_dir,
    seal_runs,
    sweep_interrupted_runs,
    write_unsealed_run,
)
from figaroh._run.naming import _safe_path_component
from figaroh.errors import FigarohError
from figaroh.fleet.archive_lock import ArchiveLock
from figaroh.fleet.record import RECORD_FILE, ParameterEstimate, RunRecord, RunRecordError
from figaroh.utils.fileio import is_sealed_dir, make_folder

logger = logging.getLogger(__name__)

__all__ = [
    "BUSY_TIMEOUT_S",
    "COMMIT_EVERY",
    "COMMIT_INTERVAL_S",
    "FAILURES_FILE",
    "INDEX_DB",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "BatchInfo",
    "FailureRow",
    "HistoryPoint",
    "RebuildSummary",
    "RunIndex",
    "RunIndexError",
    "append_failure",
    "index_path",
    "new_batch_id",
    "rebuild_index",
    "recover_interrupted_batches",
    "run_folder",
    "utc_now",
    "write_fleet_run",
]

PathLike = Union[str, "os.PathLike[str]"]

#: File name of the run index at the archive root.
INDEX_DB = "index.sqlite"
#: File name of the failed jobs' log at the archive root (one JSON line each).
FAILURES_FILE = "failures.jsonl"
#: Seconds a connection waits for another writer's lock before failing.
BUSY_TIMEOUT_S = 30.0
#: Runs per transaction inside :meth:`RunIndex.grouped`.
COMMIT_EVERY = 64
#: Longest time [s] a grouped row waits for its commit.
COMMIT_INTERVAL_S = 1.0

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
#: The ids of the newest batches (one ``?``: how many), as :meth:`RunIndex.batches` orders them.
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
    """Outcome of :func:`rebuild_index`.

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
            :func:`rebuild_index` from the batch ids of runs and failures).
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


def _sql_float(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _py_float(value: float | None) -> float:
    return math.nan if value is None else float(value)


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


def _time_text(since: Union[str, datetime, None]) -> str | None:
    if since is None or isinstance(since, str):
        return since
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return since.astimezone(timezone.utc).isoformat()


class _Group:
    """An open :meth:`RunIndex.grouped` block: rows of its transaction, their age, the timer."""

    def __init__(self, every: int, interval_s: float) -> None:
        self.every = every
        self.interval_s = interval_s
        self.rows = 0
        self._since: float | None = None
        self._timer: threading.Timer | None = None

    def opened(self, on_due: Callable[[], None]) -> None:
        """A transaction was opened: commit it ``interval_s`` from now at the latest."""
        self._since = time.monotonic()
        self._timer = threading.Timer(self.interval_s, on_due)
        self._timer.daemon = True
        self._timer.start()

    def due(self) -> bool:
        """True when the open transaction holds ``every`` rows or is ``interval_s`` old."""
        age = 0.0 if self._since is None else time.monotonic() - self._since
        return self.rows >= self.every or age >= self.interval_s

    def closed(self) -> None:
        """The transaction is committed (or dropped): no timer."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._since = None


class RunIndex:
    """The SQLite run index of one archive (see the module docstring for the schema).

    Opening creates the database when missing and applies missing migrations.
    Use as a context manager, or call :meth:`close`.

    Args:
        path: Database file (e.g. :func:`index_path` of the archive root);
            its folder is created when missing.

    Raises:
        RunIndexError: the file is not an SQLite database, or its schema is
            newer than this figaroh knows.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)
        make_folder(self.path.parent)
        self._lock = threading.RLock()
        self._group: _Group | None = None
        self._unsealed: List[UnsealedRun] = []
        self.commit_errors = 0
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.DatabaseError as exc:
            raise self._open_error(exc) from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise self._open_error(exc) from exc
        except BaseException:
            self._conn.close()
            raise

    def _open_error(self, exc: Exception) -> RunIndexError:
        return RunIndexError(
            f"cannot open run index {str(self.path)!r} ({exc}); if the file is damaged, "
            "rebuild it from the archive folders: figaroh index rebuild --archive <archive>"
        )

    # -- schema --------------------------------------------------------------
    def _version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        if self._version() == SCHEMA_VERSION:
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._version()  # re-read under the write lock
            if version > SCHEMA_VERSION:
                raise RunIndexError(
                    f"run index {str(self.path)!r} has schema version {version}, newer than "
                    f"version {SCHEMA_VERSION} this figaroh knows; upgrade figaroh, or "
                    "rebuild the index for this version: figaroh index rebuild --archive <archive>"
                )
            for k in range(version, SCHEMA_VERSION):
                for statement in _statements(MIGRATIONS[k]):
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {k + 1}")
                logger.info("run index %s migrated to schema version %d", self.path, k + 1)
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    # -- writing -------------------------------------------------------------
    def add(self, record: RunRecord) -> bool:
        """Insert one run with its parameters and metrics: all of them or nothing.

        One transaction of its own, or a savepoint of the open group's
        transaction inside :meth:`grouped`.

        Args:
            record: The run (its ``run_dir`` relative to the archive root).

        Returns:
            True when inserted; False when its ``job_id`` is already indexed
            (nothing is changed then).

        Raises:
            RunIndexError: the insert failed (e.g. another job already uses the
                ``run_id``); nothing of the run is left in the index.
        """
        if not isinstance(record, RunRecord):
            raise TypeError(f"RunIndex.add needs a RunRecord, got {type(record).__name__}")
        return self._write(
            f"add run {record.run_id!r}",
            lambda: self._insert(record),
            f"cannot add run {record.run_id!r} (job {record.job_id!r}) to {str(self.path)!r}",
            "nothing of the run was written",
        )

    def add_failure(self, row: FailureRow) -> bool:
        """Insert one failed job (in a group: committed with the group).

        Returns:
            True when inserted; False when the batch already has a failure ``row.seq``.

        Raises:
            RunIndexError: the insert failed.
        """

        def insert() -> bool:
            values = dict(row.to_json_data())
            values["tags"] = json.dumps(values["tags"], sort_keys=True)
            cursor = self._conn.execute(
                f"INSERT OR IGNORE INTO failures ({', '.join(_FAILURE_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_FAILURE_COLUMNS))})",
                tuple(values[name] for name in _FAILURE_COLUMNS),
            )
            return cursor.rowcount == 1

        return self._write(
            "add a failure",
            insert,
            f"cannot add the failure of job {row.job_id!r} to {str(self.path)!r}",
            "the failure stays in " + FAILURES_FILE,
        )

    def record_batch(self, batch: BatchInfo) -> None:
        """Insert or replace the row of ``batch``, committed at once (an open group's too)."""
        self.commit()
        self._write(
            f"record batch {batch.batch_id!r}",
            lambda: self._upsert_batch(batch),
            f"cannot record batch {batch.batch_id!r} in {str(self.path)!r}",
            "",
        )
        self.commit()

    def _upsert_batch(self, batch: BatchInfo) -> bool:
        values = dataclasses.asdict(batch)
        self._conn.execute(
            f"INSERT OR REPLACE INTO batches ({', '.join(_BATCH_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(_BATCH_COLUMNS))})",
            tuple(values[name] for name in _BATCH_COLUMNS),
        )
        return True

    def _write(self, what: str, insert: Callable[[], bool], failed: str, nothing_left: str) -> bool:
        """Run ``insert`` in its own transaction, or in a savepoint of the open group."""
        with self._lock:
            group = self._group
            if group is None:
                self._begin(what)
                return self._finish_write(insert, failed, nothing_left, savepoint=False)
            if not self._conn.in_transaction:
                self._begin(what)
                group.opened(self._commit_due)
            self._conn.execute("SAVEPOINT figaroh_write")
            done = self._finish_write(insert, failed, nothing_left, savepoint=True)
            group.rows += int(done)
            if group.due():
                self._commit_group()
            return done

    def _finish_write(
        self, insert: Callable[[], bool], failed: str, nothing_left: str, savepoint: bool
    ) -> bool:
        rollback = (
            ("ROLLBACK TO figaroh_write", "RELEASE figaroh_write") if savepoint else ("ROLLBACK",)
        )
        try:
            done = insert()
        except BaseException as exc:
            for statement in rollback:
                self._conn.execute(statement)
            if isinstance(exc, sqlite3.DatabaseError):
                tail = f"; {nothing_left}" if nothing_left else ""
                raise RunIndexError(f"{failed}: {exc}{tail}") from exc
            raise
        if savepoint:
            self._conn.execute("RELEASE figaroh_write")
        else:
            self._conn.execute("COMMIT" if done else "ROLLBACK")
        return done

    @contextlib.contextmanager
    def grouped(
        self, every: int | None = None, interval_s: float | None = None
    ) -> Iterator[RunIndex]:
        """Group the writes of the block into transactions of several runs.

        Inside the block, :meth:`add` and :meth:`add_failure` write into one
        open transaction (a savepoint each: a failing insert leaves no row of
        its own), committed after ``every`` rows, ``interval_s`` seconds after
        its first row (a timer thread commits an idle group too), on
        :meth:`commit`, and when the block ends — also when it raises. Just
        before each commit, the run folders :func:`write_fleet_run` wrote
        meanwhile are synced together and sealed
        (:func:`figaroh._run.archive.seal_runs`, :meth:`defer_seal`). Readers
        see a group's rows once it is committed, their folders sealed.

        Args:
            every: Rows per transaction (default :data:`COMMIT_EVERY`).
            interval_s: Longest wait [s] of a row for its commit (default
                :data:`COMMIT_INTERVAL_S`).

        Raises:
            RunIndexError: a commit failed (its rows are not in the index;
                ``commit_errors`` counts such failures).
        """
        every = COMMIT_EVERY if every is None else int(every)
        interval_s = COMMIT_INTERVAL_S if interval_s is None else float(interval_s)
        if every < 1 or not interval_s > 0:
            raise ValueError(
                f"grouped needs every ≥ 1 and interval_s > 0, got {every}, {interval_s}"
            )
        with self._lock:
            if self._group is not None:
                raise RunIndexError(f"run index {str(self.path)!r} is already grouped")
            self._group = _Group(every, interval_s)
        try:
            yield self
        finally:
            with self._lock:
                try:
                    self._commit_group()
                finally:
                    self._group = None

    def defer_seal(self, run: UnsealedRun) -> bool:
        """Seal ``run`` with the open group's next commit (one sync for all its folders).

        Returns:
            True when deferred; False outside :meth:`grouped` (the caller seals it now).
        """
        with self._lock:
            if self._group is None:
                return False
            self._unsealed.append(run)
            return True

    def commit(self) -> None:
        """Commit the open group's rows now (nothing outside :meth:`grouped`)."""
        with self._lock:
            if self._group is not None:
                self._commit_group()

    def _commit_group(self) -> None:
        group = self._group
        assert group is not None
        group.closed()
        unsealed, self._unsealed = self._unsealed, []
        rows, group.rows = group.rows, 0
        try:
            seal_runs(unsealed)
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")
        except (sqlite3.DatabaseError, OSError) as exc:
            self.commit_errors += 1
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise RunIndexError(
                f"cannot commit {rows} rows to {str(self.path)!r}: {exc}; their run folders "
                "are archived: the next batch, or figaroh index rebuild --archive <archive>, "
                "indexes them"
            ) from exc

    def _commit_due(self) -> None:
        """The group's timer: commit an idle group's rows (errors are logged and counted)."""
        with self._lock:
            if self._group is None:
                return
            try:
                self._commit_group()
            except RunIndexError as exc:
                logger.error("%s", exc)

    def _begin(self, what: str) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise RunIndexError(
                f"cannot {what} to {str(self.path)!r}: {exc}; another process holds the index "
                f"longer than {BUSY_TIMEOUT_S:g} s, let it finish and retry"
            ) from exc

    def _insert(self, record: RunRecord) -> bool:
        row = self._conn.execute("SELECT 1 FROM runs WHERE job_id = ?", (record.job_id,))
        if row.fetchone() is not None:
            return False
        values = {name: getattr(record, name) for name in _RUN_COLUMNS}
        values["data_sha256"] = json.dumps(dict(record.data_sha256), sort_keys=True)
        values["tags"] = json.dumps(dict(record.tags), sort_keys=True)
        values["passed"] = None if record.passed is None else int(record.passed)
        self._conn.execute(
            f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(_RUN_COLUMNS))})",
            tuple(values[name] for name in _RUN_COLUMNS),
        )
        self._conn.executemany(
            "INSERT INTO parameters (run_id, name, position, value, sigma) VALUES (?, ?, ?, ?, ?)",
            [
                (record.run_id, p.name, position, _sql_float(p.value), _sql_float(p.sigma))
                for position, p in enumerate(record.parameters)
            ],
        )
        self._conn.executemany(
            "INSERT INTO metrics (run_id, name, value) VALUES (?, ?, ?)",
            [(record.run_id, k, _sql_float(v)) for k, v in record.metrics.items()],
        )
        return True

    # -- reading -------------------------------------------------------------
    def _query(self, sql: str, args: Sequence[Any] = ()) -> List[Tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, tuple(args)).fetchall()

    def has_job(self, job_id: str) -> bool:
        """True when a run of job ``job_id`` is indexed."""
        return bool(self._query("SELECT 1 FROM runs WHERE job_id = ?", (job_id,)))

    def _record(self, row: Tuple[Any, ...]) -> RunRecord:
        fields = dict(zip(_RUN_COLUMNS, row, strict=True))
        run_id = fields["run_id"]
        params = self._query(
            "SELECT name, value, sigma FROM parameters WHERE run_id = ? ORDER BY position",
            (run_id,),
        )
        metrics = self._query("SELECT name, value FROM metrics WHERE run_id = ?", (run_id,))
        fields["data_sha256"] = json.loads(fields["data_sha256"])
        fields["tags"] = json.loads(fields["tags"])
        fields["passed"] = None if fields["passed"] is None else bool(fields["passed"])
        return RunRecord(
            **fields,
            metrics={name: _py_float(value) for name, value in metrics},
            parameters=tuple(ParameterEstimate(n, _py_float(v), s) for n, v, s in params),
        )

    def get(self, run_id: str) -> RunRecord | None:
        """The run ``run_id``, or None when it is not indexed."""
        rows = self._query(
            f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE run_id = ?", (run_id,)
        )
        return self._record(rows[0]) if rows else None

    def runs(
        self,
        robot_id: str | None = None,
        task: str | None = None,
        since: Union[str, datetime, None] = None,
    ) -> List[RunRecord]:
        """Indexed runs, ordered by ``session_time`` then ``run_id``.

        Args:
            robot_id: Only this robot's runs.
            task: Only runs of this task.
            since: Only runs with ``session_time >= since`` (ISO-8601 UTC
                strings compare in time order; a datetime is converted to UTC).
        """
        where, args = self._filters(robot_id=robot_id, task=task, since=since)
        rows = self._query(
            f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs{where} ORDER BY session_time, run_id",
            args,
        )
        return [self._record(row) for row in rows]

    @staticmethod
    def _filters(
        prefix: str = "", *, since: Union[str, datetime, None] = None, **equal: str | None
    ) -> Tuple[str, List[Any]]:
        clauses, args = [], []
        for column, value in equal.items():
            if value is not None:
                clauses.append(f"{prefix}{column} = ?")
                args.append(value)
        since_text = _time_text(since)
        if since_text is not None:
            clauses.append(f"{prefix}session_time >= ?")
            args.append(since_text)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    def parameter_history(
        self, name: str | None = None, robot_id: str | None = None, task: str | None = None
    ) -> List[HistoryPoint]:
        """Every estimate of parameter ``name`` (all parameters when None) as history points.

        Ordered by parameter name, robot, ``session_time``, run id.
        """
        where, args = self._filters("r.", robot_id=robot_id, task=task)
        if name is not None:
            where += (" AND " if where else " WHERE ") + "p.name = ?"
            args.append(name)
        # One robot: walk its runs by the (robot_id, task, session_time) index and
        # look each run's parameter up by primary key (CROSS JOIN fixes that
        # order in SQLite); otherwise the parameters(name) index drives the join.
        # At 20 000 runs: 0.3 ms against 0.2-0.4 s for the planner's own choice.
        join = (
            "runs r CROSS JOIN parameters p ON p.run_id = r.run_id"
            if robot_id is not None
            else "parameters p JOIN runs r ON r.run_id = p.run_id"
        )
        rows = self._query(
            "SELECT r.robot_id, r.run_id, r.session, r.session_time, p.name, p.value, p.sigma "
            f"FROM {join}{where} "
            "ORDER BY p.name, r.robot_id, r.session_time, r.run_id",
            args,
        )
        return [
            HistoryPoint(robot, run, session, time, pname, _py_float(value), sigma)
            for robot, run, session, time, pname, value, sigma in rows
        ]

    def parameter_names(self, task: str | None = None) -> List[str]:
        """Sorted names of every indexed parameter (of runs of ``task`` when given)."""
        where, args = self._filters("r.", task=task)
        rows = self._query(
            "SELECT DISTINCT p.name FROM parameters p JOIN runs r ON r.run_id = p.run_id"
            f"{where} ORDER BY p.name",
            args,
        )
        return [row[0] for row in rows]

    def robots(self) -> List[str]:
        """Sorted ids of every robot with an indexed run."""
        return [row[0] for row in self._query("SELECT DISTINCT robot_id FROM runs ORDER BY 1")]

    def __len__(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM runs")[0][0])

    def failures(
        self,
        batch_ids: Sequence[str] | None = None,
        robot_id: str | None = None,
        last_batches: int | None = None,
    ) -> List[FailureRow]:
        """Failed jobs, in the order they were recorded (``time``, batch, ``seq``).

        Args:
            batch_ids: Only failures of these batches (None: every batch).
            robot_id: Only this robot's failures.
            last_batches: Only failures of the ``last_batches`` newest batches
                (the window of :meth:`batches` with ``last``), selected in SQL.
        """
        clauses: List[str] = []
        args: List[Any] = []
        if batch_ids is not None:
            clauses.append(f"batch_id IN ({', '.join('?' * len(batch_ids))})")
            args.extend(batch_ids)
        if last_batches is not None:
            clauses.append(f"batch_id IN ({_LAST_BATCHES})")
            args.append(int(last_batches))
        if robot_id is not None:
            clauses.append("robot_id = ?")
            args.append(robot_id)
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        rows = self._query(
            f"SELECT {', '.join(_FAILURE_COLUMNS)} FROM failures{where} "
            "ORDER BY time, batch_id, seq",
            args,
        )
        out = []
        for row in rows:
            fields = dict(zip(_FAILURE_COLUMNS, row, strict=True))
            fields["tags"] = json.loads(fields["tags"])
            out.append(FailureRow(**fields))
        return out

    def batches(self, last: int | None = None, status: str | None = None) -> List[BatchInfo]:
        """Batches, newest first (by start time, then batch id).

        Args:
            last: Only the ``last`` newest.
            status: Only batches of this status (``"running"`` ...).
        """
        where, args = self._filters(status=status)
        limit = "" if last is None else f" LIMIT {int(last)}"
        rows = self._query(
            f"SELECT {', '.join(_BATCH_COLUMNS)} FROM batches{where} "
            f"ORDER BY started DESC, batch_id DESC{limit}",
            args,
        )
        return [BatchInfo(*row) for row in rows]

    def robots_in_batches(self, last_batches: int) -> List[Tuple[str, str]]:
        """``(batch_id, robot_id)`` of every robot with a run or a failure in the newest batches."""
        window = f"batch_id IN ({_LAST_BATCHES})"
        rows = self._query(
            f"SELECT DISTINCT batch_id, robot_id FROM runs WHERE {window} "
            f"UNION SELECT DISTINCT batch_id, robot_id FROM failures WHERE {window}",
            [int(last_batches), int(last_batches)],
        )
        return [(batch, robot) for batch, robot in rows]

    # -- lifetime ------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (idempotent); rows of an uncommitted group are dropped."""
        with self._lock:
            if self._group is not None:
                self._group.closed()
            self._conn.close()

    def __enter__(self) -> RunIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunIndex({str(self.path)!r})"


# ---------------------------------------------------------------------------
# Archive folders
# ---------------------------------------------------------------------------


def run_folder(archive_root: PathLike, record: RunRecord) -> Path:
    """``<archive_root>/<robot_id>/<task>/<session>_<job_id>`` with sanitised components."""
    base = (
        f"{_safe_path_component(record.session, 'session')}_{_safe_path_component(record.job_id)}"
    )
    return (
        Path(archive_root)
        / _safe_path_component(record.robot_id)
        / _safe_path_component(record.task)
        / base
    )


def _read_record(folder: Path) -> RunRecord:
    """The folder's ``run_record.json``; raises RunRecordError / OSError with the reason."""
    path = folder / RECORD_FILE
    if not path.is_file():
        raise RunRecordError(f"no {RECORD_FILE}")
    return RunRecord.from_json(path.read_text(encoding="utf-8"))


def _relative(folder: Path, root: Path) -> str:
    return folder.resolve().relative_to(root.resolve()).as_posix()


def _interrupted_run(parent: Path, base: str, job_id: str) -> Path | None:
    """A sealed folder of ``job_id`` (``base`` or ``base-r<k>``) a crash left out of the index.

    Looks at ``base``, ``base-r2``, ... up to the first name that does not
    exist (a claim takes the first free name, so the folders of one job are
    consecutive; a gap left by a swept folder is covered by the recovery of
    the interrupted batch, :func:`recover_interrupted_batches`).
    """
    for k in range(1, 10_000):
        folder = parent / (base if k == 1 else f"{base}-r{k}")
        if not os.path.lexists(folder):
            return None
        if not is_sealed_dir(folder):
            continue
        try:
            if _read_record(folder).job_id == job_id:
                return folder
        except (OSError, RunRecordError):
            continue
    return None


def write_fleet_run(
    archive_root: PathLike, files: Mapping[str, str], record: RunRecord, index: RunIndex
) -> RunRecord | None:
    """Archive one fleet run (sealed folder + ``run_record.json``) and index it.

    The driver's single write for a finished job: nothing when ``record.job_id``
    is already indexed; otherwise a freshly claimed folder (:func:`run_folder`,
    or a ``-r<k>`` sibling when a torn, unsealed one is in the way) receives
    ``files`` and ``run_record.json``, all before the seal
    (:func:`figaroh._run.archive.write_archived_run`), so a sealed folder is
    always complete; then the record is added to ``index`` in one
    transaction. The folder is made durable with one sync before it is sealed
    (:func:`figaroh._run.archive.write_unsealed_run`, then
    :func:`~figaroh._run.archive.seal_runs`); inside
    :meth:`RunIndex.grouped` the sync and the seal come with the group's
    commit, one sync for all the group's folders (:meth:`RunIndex.defer_seal`).
    A sealed folder of the same job that a crash left out of the index is
    adopted (its own record is indexed) instead of archived twice.

    Args:
        archive_root: Archive root.
        files: File name → text of the run (as :func:`figaroh._run.archive.archive_files`
            gives, plus e.g. ``verdict.json``); a ``run_record.json`` in it is replaced.
        record: The run's record (its ``run_dir`` is set here).
        index: The archive's run index.

    Returns:
        The indexed record (``run_dir`` set), or None when the job was already indexed.

    Raises:
        ArchiveFileNameError: a file name is not one plain path component, or
            ``provenance.json`` is not JSON (nothing is written then).
        RunIndexError: the index insert failed (the sealed folder stays; the
            next write of the job, or a rebuild, indexes it).
    """
    if index.has_job(record.job_id):
        logger.info("job %s is already indexed; not archived again", record.job_id)
        return None
    root = Path(archive_root)
    target = run_folder(root, record)
    adopted = _interrupted_run(target.parent, target.name, record.job_id)
    if adopted is not None:
        final = _read_record(adopted).with_run_dir(_relative(adopted, root))
        logger.warning("adopting %s, archived before an interruption, into the index", adopted)
        return final if index.add(final) else None
    folder = claim_run_dir(target.parent, target.name)
    final = record.with_run_dir(folder.relative_to(root).as_posix())
    payload = {name: text for name, text in files.items() if name != RECORD_FILE}
    payload[RECORD_FILE] = final.to_json()
    try:
        unsealed = write_unsealed_run(payload, folder, root, run_id=final.run_id)
    except ArchiveFileNameError:
        (folder / ARCHIVING_MARKER).unlink(missing_ok=True)
        folder.rmdir()  # refused before any write: the claimed folder is still empty
        raise
    if not index.defer_seal(unsealed):
        seal_runs([unsealed])
    if index.add(final):
        return final
    logger.warning(
        "job %s was indexed by another writer while %s was archived; two drivers share %s",
        record.job_id,
        folder,
        index.path,
    )
    return None


def append_failure(archive_root: PathLike, row: FailureRow, index: RunIndex) -> bool:
    """Record a failed job: one line of ``failures.jsonl`` (synced), then its index row.

    The line is the truth a rebuild reads back (a failed job has no run
    folder); the row joins the open group of :meth:`RunIndex.grouped`, if any.

    Returns:
        True when the row was inserted (False: the batch already has ``row.seq``).
    """
    line = json.dumps(row.to_json_data(), sort_keys=True, allow_nan=False, ensure_ascii=False)
    append_line(Path(archive_root) / FAILURES_FILE, line + "\n")
    return index.add_failure(row)


def _lines_from(path: Path, offset: int) -> List[str]:
    """The complete lines of ``path`` from byte ``offset`` on (all of it when it shrank)."""
    if not path.is_file():
        return []
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if offset > size:
            logger.warning("%s is shorter than when its batch started: reading all of it", path)
            offset = 0
        fh.seek(offset)
        data = fh.read()
    return [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]


def _json_lines(path: Path, offset: int = 0) -> Iterator[Tuple[int, Any]]:
    """``(line number from offset, parsed JSON)`` of ``path``; torn or invalid lines are logged."""
    for number, line in enumerate(_lines_from(path, offset), 1):
        try:
            yield number, json.loads(line)
        except ValueError:
            logger.warning("%s: a line after byte %d is not valid JSON; skipped", path, offset)


def _failure_rows(path: Path, offset: int = 0) -> Iterator[FailureRow]:
    for _, data in _json_lines(path, offset):
        try:
            yield FailureRow.from_json_data(data)
        except RunIndexError as exc:
            logger.warning("%s: %s; line skipped", path, exc)


def _index_runs_of_lines(index: RunIndex, root: Path, offset: int) -> int:
    """Index the sealed fleet runs named by ``index.jsonl`` lines after ``offset``; how many."""
    added = 0
    for _, entry in _json_lines(root / INDEX_FILE, offset):
        rel = entry.get("run_dir") if isinstance(entry, Mapping) else None
        if not isinstance(rel, str):
            continue
        try:
            record = _record_of(root / rel, root)
        except RunRecordError:
            continue  # not sealed (swept), or not a fleet run
        if not index.has_job(record.job_id) and index.add(record):
            added += 1
    return added


def recover_interrupted_batches(
    archive_root: PathLike, index: RunIndex, current: str = ""
) -> List[str]:
    """Index what the batches whose driver died archived but did not commit.

    A batch whose row still says ``running`` (other than ``current``) lost
    its driver: the rows of its last, uncommitted group are missing, while
    its run folders are sealed (or were sealed by
    :func:`figaroh._run.archive.sweep_interrupted_runs`) and its lines are in
    ``index.jsonl`` / ``failures.jsonl`` after its offsets. Those lines are
    read (only those), their runs and failures indexed when missing, and the
    batch marked ``interrupted``. Call it holding the archive lock
    (:mod:`figaroh.fleet.archive_lock`), after the sweep.

    Args:
        archive_root: Archive root.
        index: Its run index.
        current: The caller's own batch id (never recovered).

    Returns:
        One line per interrupted batch: what was indexed.
    """
    root = Path(archive_root)
    report = []
    for batch in index.batches(status="running"):
        if batch.batch_id == current:
            continue
        with index.grouped():
            runs = _index_runs_of_lines(index, root, batch.jsonl_offset)
            failures = sum(
                index.add_failure(row)
                for row in _failure_rows(root / FAILURES_FILE, batch.failures_offset)
            )
        index.record_batch(dataclasses.replace(batch, status="interrupted"))
        line = (
            f"batch {batch.batch_id} (host {batch.host}, pid {batch.pid}, started "
            f"{batch.started}) was interrupted: {runs} runs and {failures} failures it had "
            "archived indexed now"
        )
        logger.warning("%s", line)
        report.append(line)
    return report


def _record_of(folder: Path, root: Path) -> RunRecord:
    if not is_sealed_dir(folder):
        raise RunRecordError("not sealed (an interrupted or foreign folder)")
    try:
        record = _read_record(folder)
    except OSError as exc:
        raise RunRecordError(f"unreadable {RECORD_FILE} ({exc})") from None
    return record.with_run_dir(_relative(folder, root))


def _fill(index: RunIndex, root: Path) -> Tuple[int, List[str]]:
    with index.grouped(every=1000):
        return _fill_runs(index, root)


def _fill_runs(index: RunIndex, root: Path) -> Tuple[int, List[str]]:
    runs, skipped = 0, []
    folders = sorted(p for p in root.glob("*/*/*") if p.is_dir() and is_sealed_dir(p))
    for folder in folders:
        rel = folder.relative_to(root).as_posix()
        try:
            record = _record_of(folder, root)
        except RunRecordError as exc:
            skipped.append(f"{rel}: {exc}")
            continue
        try:
            added = index.add(record)
        except RunIndexError as exc:
            skipped.append(f"{rel}: {exc}")
            continue
        if added:
            runs += 1
        else:
            skipped.append(f"{rel}: job {record.job_id} is already indexed from another folder")
    return runs, skipped


def _fill_failures(index: RunIndex, root: Path) -> int:
    """Index every line of ``failures.jsonl``; how many rows were added."""
    with index.grouped():
        return sum(index.add_failure(row) for row in _failure_rows(root / FAILURES_FILE))


def _batch_time(batch_id: str) -> str:
    """The start time a batch id carries (ISO-8601 UTC), ``""`` when it has none."""
    try:
        stamp = datetime.strptime(batch_id.split("-", 1)[0], "%Y%m%dT%H%M%SZ")
    except ValueError:
        return ""
    return stamp.replace(tzinfo=timezone.utc).isoformat()


def _fill_batches(index: RunIndex, known: Sequence[BatchInfo]) -> None:
    """The ``batches`` rows: those of the old index, then every other batch id of the runs."""
    for batch in known:
        index.record_batch(batch)
    have = {b.batch_id for b in known}
    counts: Dict[str, Dict[str, int]] = {}
    for table in ("runs", "failures"):
        for batch_id, n in index._query(
            f"SELECT batch_id, COUNT(*) FROM {table} WHERE batch_id != '' GROUP BY batch_id"
        ):
            counts.setdefault(batch_id, {})[table] = int(n)
    for batch_id, n in sorted(counts.items()):
        if batch_id not in have:
            index.record_batch(
                BatchInfo(
                    batch_id,
                    host="",
                    pid=None,
                    started=_batch_time(batch_id),
                    status="rebuilt",
                    runs=n.get("runs", 0),
                    failures=n.get("failures", 0),
                )
            )


def _old_batches(target: Path) -> List[BatchInfo]:
    """The ``batches`` rows of the index being replaced (none when it is unreadable)."""
    if not target.is_file():
        return []
    try:
        with RunIndex(target) as old:
            return old.batches()
    except (RunIndexError, sqlite3.DatabaseError, OSError):
        return []


def _in_use(target: Path, exc: object = "") -> RunIndexError:
    detail = f" ({exc})" if exc else ""
    return RunIndexError(
        f"run index {str(target)!r} is in use by another process{detail}; stop the batch "
        "(or report) that holds it open and rebuild again"
    )


def _release_old(target: Path) -> None:
    """Check no one holds the old index open and fold its WAL in before it is replaced.

    Switching a WAL database to ``journal_mode = DELETE`` needs the only
    connection; it removes the ``-wal``/``-shm`` side files. A damaged old
    file has its side files removed, so they never apply to the new one.
    """
    if not target.exists():
        return
    mode = "damaged"
    try:
        conn = sqlite3.connect(target, timeout=1.0, isolation_level=None)
    except sqlite3.DatabaseError:
        conn = None
    if conn is not None:
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            mode = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            raise _in_use(target, exc) from exc
        except sqlite3.DatabaseError:
            mode = "damaged"
        finally:
            conn.close()
    if mode == "damaged":
        for side in ("-wal", "-shm"):
            Path(f"{target}{side}").unlink(missing_ok=True)
    elif mode != "delete":
        raise _in_use(target)


def rebuild_index(archive_root: PathLike, index_file: PathLike | None = None) -> RebuildSummary:
    """Rebuild the run index from the sealed run folders of an archive.

    Holds the archive lock (:class:`~figaroh.fleet.archive_lock.ArchiveLock`)
    throughout: a batch running on the archive makes it fail at once. First
    finishes or removes the folders of interrupted archives
    (:func:`figaroh._run.archive.sweep_interrupted_runs`: reported in
    ``swept``, not an error). Then reads ``run_record.json`` of every sealed folder
    ``<archive_root>/*/*/*/`` and every line of ``failures.jsonl``, keeps the
    ``batches`` rows of the current index (a batch only seen in the runs or
    failures gets a row of status ``rebuilt``), builds a new database in a
    temporary file beside the target and atomically replaces the target with it
    (``os.replace``): readers see the old index or the new one, never a mix.

    Args:
        archive_root: Archive root.
        index_file: Database to (re)write; default :func:`index_path` of the root.

    Returns:
        Runs and failures indexed, the sealed folders skipped with the reason,
        and the unsealed folders swept.

    Raises:
        RunIndexError: the archive root is not a folder, or the index is in use.
        figaroh.fleet.archive_lock.ArchiveLockedError: a batch (or another
            rebuild) holds the archive; nothing was done.
    """
    root = Path(archive_root)
    if not root.is_dir():
        raise RunIndexError(
            f"archive root {str(root)!r} is not a folder; pass the folder the fleet runs "
            "are archived in"
        )
    target = Path(index_file) if index_file is not None else index_path(root)
    make_folder(target.parent)
    with ArchiveLock(root, command="index rebuild"):
        swept = sweep_interrupted_runs(root)
        known = _old_batches(index_path(root))
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".rebuild", dir=target.parent
        )
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            with RunIndex(tmp) as index:
                runs, skipped = _fill(index, root)
                failures = _fill_failures(index, root)
                _fill_batches(index, known)
                index._conn.execute("PRAGMA journal_mode = DELETE")
            _release_old(target)
            os.replace(tmp, target)
        finally:
            for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
                leftover.unlink(missing_ok=True)
    for line in skipped:
        logger.warning("rebuild_index: skipped %s", line)
    return RebuildSummary(runs=runs, skipped=tuple(skipped), swept=tuple(swept), failures=failures)
