"""A time window of a run index's parameter history, selected with SQL.

A drift report looks at recent runs: the last ``N`` sessions, or everything
since a date. :func:`read_window` asks the index's SQLite file
(``<archive>/index.sqlite``, schema in :mod:`figaroh.fleet.run_index`) for
exactly those rows; the rest of the history is never read.

Selection (every condition optional, all combined with AND):

* ``task`` — ``runs.task = task``;
* ``since`` — ``runs.session_time >= since`` as instants (SQLite's
  ``julianday``, which reads ``YYYY-MM-DD[THH:MM[:SS[.fff]]]`` with an
  optional ``Z`` or ``±HH:MM``; a naive time is UTC, as in the drift
  analysis; a time SQLite cannot read is compared as text); ``since`` is an
  ISO-8601 text or a ``datetime`` (naive = UTC);
* ``last = N`` — the ``N`` most recent **sessions**: session labels
  (``runs.session``) ordered by their earliest session time (ties: label,
  descending), among the runs the other conditions keep. A session is a label
  shared by the robots of one night (``s00``, ``2026-03-01`` …);
* ``names`` — ``parameters.name IN (…)``.

The query walks ``runs`` first (the window's runs) and reads each run's
parameters by primary key. It also returns the **base-parameter structure**
of every run of the window (:func:`figaroh.fleet.parameter_identity.structure_signature`
of all its parameter names, read from the primary-key index alone when
``names`` narrows the values), which the drift analysis needs to know which
inertial parameters are comparable.
"""

from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any, Union

from figaroh.errors import FigarohError
from figaroh.fleet.parameter_identity import run_structures
from figaroh.fleet.run_index import BUSY_TIMEOUT_S, HistoryPoint, RunIndex
from figaroh.utils.fileio import PathLike

logger = logging.getLogger(__name__)

__all__ = ["HistoryWindow", "WindowError", "read_window", "unknown_names", "window_time"]

#: Most names one ``IN (…)`` list carries (SQLite's default host-parameter limit is 32 766).
_MAX_NAMES = 30000


class WindowError(FigarohError, ValueError):
    """A bad window (``last`` not a positive integer, ``since`` not a time, too many names)."""


@dataclass(frozen=True)
class HistoryWindow:
    """The rows of a window (see :func:`read_window`).

    Attributes:
        points: One point per (run, parameter) of the window, ordered by
            parameter name, robot, session time, run id; values in the
            parameter's unit (``nan`` where the index holds NULL).
        structures: Run id → base-parameter structure signature of each run of
            the window (``""`` for a run without inertial base parameters).
        sessions: Session labels of the window, oldest first.
        since: The ``since`` bound as ISO-8601 text (None: none).
        last: The ``last`` bound (None: none).
    """

    points: tuple[HistoryPoint, ...]
    structures: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    sessions: tuple[str, ...] = ()
    since: str | None = None
    last: int | None = None


def window_time(since: Union[str, datetime, None]) -> str | None:
    """``since`` as the ISO-8601 text compared with ``runs.session_time``.

    Raises:
        WindowError: ``since`` is neither None, an ISO-8601 text nor a datetime.
    """
    if since is None:
        return None
    if isinstance(since, datetime):
        moment = since
    else:
        try:
            moment = datetime.fromisoformat(str(since).replace("Z", "+00:00"))
        except ValueError:
            raise WindowError(
                f"since {since!r} is not an ISO-8601 time; write it as e.g. "
                "2026-03-01 or 2026-03-01T08:00:00+00:00"
            ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat()


def _check_last(last: Any) -> int | None:
    if last is None:
        return None
    if isinstance(last, bool) or not isinstance(last, int) or last < 1:
        raise WindowError(f"last must be a number of sessions >= 1, got {last!r}; e.g. last=30")
    return int(last)


def _instant(alias: str) -> str:
    """``runs.session_time`` of ``alias`` as a Julian day number (SQLite's ``julianday`` reads
    ``YYYY-MM-DD[THH:MM[:SS[.f]]][Z|±HH:MM]``): times with different offsets compare as instants.
    """
    return f"julianday({alias}.session_time)"


def _conditions(alias: str, task: str | None, since: str | None) -> tuple[list[str], list[Any]]:
    """Conditions on ``runs <alias>`` for ``task`` and ``since`` (as instants; as text for a
    time SQLite cannot read), and their arguments."""
    clauses: list[str] = []
    args: list[Any] = []
    if task is not None:
        clauses.append(f"{alias}.task = ?")
        args.append(task)
    if since is not None:
        clauses.append(f"COALESCE({_instant(alias)} >= julianday(?), {alias}.session_time >= ?)")
        args += [since, since]
    return clauses, args


def _runs_filter(task: str | None, since: str | None, last: int | None) -> tuple[str, list[Any]]:
    """WHERE clause over ``runs r`` selecting the window's runs, and its arguments."""
    clauses, args = _conditions("r", task, since)
    if last is not None:
        inner, inner_args = _conditions("s", task, since)
        clauses.append(
            "r.session IN (SELECT s.session FROM runs s WHERE "
            f"{' AND '.join(inner) or '1'} GROUP BY s.session "
            f"ORDER BY MIN({_instant('s')}) DESC, s.session DESC LIMIT ?)"
        )
        args += [*inner_args, last]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise WindowError(
            f"no run index {str(path)!r}; pass the index of a fleet archive "
            "(<archive>/index.sqlite)"
        )
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute("PRAGMA query_only = ON")
    return conn


def read_window(
    index: RunIndex | PathLike,
    *,
    names: Sequence[str] | None = None,
    task: str | None = None,
    since: Union[str, datetime, None] = None,
    last: int | None = None,
) -> HistoryWindow:
    """The parameter history of a window of the run index, read with SQL.

    Args:
        index: Open :class:`~figaroh.fleet.run_index.RunIndex` or its SQLite file.
        names: Parameters to read (default every parameter).
        task: Only runs of this task.
        since: Only runs with ``session_time >= since`` (ISO-8601 text or datetime).
        last: Only the runs of the ``last`` most recent sessions (≥ 1).

    Returns:
        The :class:`HistoryWindow`.

    Raises:
        WindowError: ``last`` not an integer ≥ 1, ``since`` not a time, more
            than 30 000 names, or no index file.
    """
    last = _check_last(last)
    since_text = window_time(since)
    if isinstance(names, str):
        raise WindowError("names must be a list of parameter names, not one string")
    wanted = None if names is None else list(dict.fromkeys(str(n) for n in names))
    if wanted is not None and len(wanted) > _MAX_NAMES:
        raise WindowError(f"{len(wanted)} names asked; read at most {_MAX_NAMES} names at once")
    path = index.path if isinstance(index, RunIndex) else Path(index)
    where, args = _runs_filter(task, since_text, last)
    conn = _connect(path)
    try:
        conn.execute("BEGIN")  # one snapshot for every query below
        values_where, values_args = where, list(args)
        if wanted is not None:
            values_where += (" AND " if where else " WHERE ") + (
                f"p.name IN ({', '.join('?' * len(wanted))})"
            )
            values_args += wanted
        rows = conn.execute(
            "SELECT r.robot_id, r.run_id, r.session, r.session_time, p.name, p.value, p.sigma "
            f"FROM runs r CROSS JOIN parameters p ON p.run_id = r.run_id{values_where} "
            "ORDER BY p.name, r.robot_id, r.session_time, r.run_id",
            values_args,
        ).fetchall()
        if wanted is None:
            name_rows = [(run, name) for _, run, _, _, name, _, _ in rows]
        else:
            name_rows = conn.execute(
                f"SELECT r.run_id, p.name FROM runs r CROSS JOIN parameters p "
                f"ON p.run_id = r.run_id{where}",
                args,
            ).fetchall()
        session_rows = conn.execute(
            f"SELECT r.session, MIN({_instant('r')}) AS t FROM runs r{where} "
            "GROUP BY r.session ORDER BY t, r.session",
            args,
        ).fetchall()
        conn.execute("COMMIT")
    finally:
        conn.close()
    names_by_run: dict[str, list[str]] = {}
    for run, name in name_rows:
        names_by_run.setdefault(run, []).append(name)
    points = tuple(
        HistoryPoint(robot, run, session, time, name, _float(value), sigma)
        for robot, run, session, time, name, value, sigma in rows
    )
    logger.debug(
        "window of %s: %d points of %d runs (since=%s, last=%s)",
        path,
        len(points),
        len(names_by_run),
        since_text,
        last,
    )
    return HistoryWindow(
        points=points,
        structures=MappingProxyType(run_structures(names_by_run)),
        sessions=tuple(s for s, _ in session_rows),
        since=since_text,
        last=last,
    )


def _float(value: float | None) -> float:
    return math.nan if value is None else float(value)


def unknown_names(
    index: RunIndex | PathLike, names: Sequence[str], task: str | None = None
) -> list[str]:
    """The names of ``names`` no run (of ``task``) of the index holds, in the given order.

    One indexed lookup per name (``parameters(name)``), not a scan of the history.
    """
    path = index.path if isinstance(index, RunIndex) else Path(index)
    sql = "SELECT 1 FROM parameters p WHERE p.name = ?"
    if task is not None:
        sql = (
            "SELECT 1 FROM parameters p JOIN runs r ON r.run_id = p.run_id "
            "WHERE p.name = ? AND r.task = ?"
        )
    conn = _connect(path)
    try:
        return [
            str(n)
            for n in dict.fromkeys(names)
            if conn.execute(
                sql + " LIMIT 1", (str(n),) if task is None else (str(n), task)
            ).fetchone()
            is None
        ]
    finally:
        conn.close()
