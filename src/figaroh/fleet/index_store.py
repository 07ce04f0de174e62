"""The run index's database: :class:`RunIndex`, its writes, grouped commits and queries.

One :class:`RunIndex` is one connection to the SQLite run index of an
archive (schema, migrations and row records in
:mod:`figaroh.fleet.index_schema`). Opening it creates the database when
missing and applies the missing migrations.

Durability and concurrency: WAL journal, foreign keys on, a busy timeout of
:data:`BUSY_TIMEOUT_S` seconds; :meth:`RunIndex.add` writes a run, its
parameters and metrics, or nothing. Alone it is one transaction; inside
:meth:`RunIndex.grouped` (the batch driver) the rows of up to
:data:`COMMIT_EVERY` runs, or of :data:`COMMIT_INTERVAL_S` seconds, share one
transaction (each run a savepoint of it), committed then and when the block
ends. A driver killed before a commit loses those rows only: their folders
are sealed and their lines are in ``index.jsonl`` after the batch's
``jsonl_offset``, so the next batch
(:func:`~figaroh.fleet.run_writer.recover_interrupted_batches`) or a rebuild
indexes them. One writer (the batch driver, holding the archive
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
import sqlite3
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, List, Sequence, Tuple, Union

from figaroh._run.archive import UnsealedRun, seal_runs
from figaroh.fleet.index_schema import (
    _BATCH_COLUMNS,
    _FAILURE_COLUMNS,
    _LAST_BATCHES,
    _RUN_COLUMNS,
    FAILURES_FILE,
    MIGRATIONS,
    SCHEMA_VERSION,
    BatchInfo,
    FailureRow,
    HistoryPoint,
    PathLike,
    RunIndexError,
    _statements,
)
from figaroh.fleet.record import ParameterEstimate, RunRecord
from figaroh.utils.fileio import make_folder

logger = logging.getLogger(__name__)

__all__ = ["BUSY_TIMEOUT_S", "COMMIT_EVERY", "COMMIT_INTERVAL_S", "RunIndex"]

#: Seconds a connection waits for another writer's lock before failing.
BUSY_TIMEOUT_S = 30.0
#: Runs per transaction inside :meth:`RunIndex.grouped`.
COMMIT_EVERY = 64
#: Longest time [s] a grouped row waits for its commit.
COMMIT_INTERVAL_S = 1.0


def _sql_float(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _py_float(value: float | None) -> float:
    return math.nan if value is None else float(value)


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
        path: Database file (e.g. :func:`~figaroh.fleet.index_schema.index_path`
            of the archive root); its folder is created when missing.

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
        before each commit, the run folders
        :func:`~figaroh.fleet.run_writer.write_fleet_run` wrote
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
