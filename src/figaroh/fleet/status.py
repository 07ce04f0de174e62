"""What failed, where, how often: the failed jobs of an archive's last batches.

Every job a batch could not run is a row of the run index's ``failures``
table (batch, job, robot, task, session, error class, message, host,
attempts, tags, time; :class:`figaroh.fleet.run_index.FailureRow`). A job
that later succeeds keeps its failure rows: its history stays queryable.
:func:`failure_summary` reads the rows of the last ``N`` batches (by start
time) with SQL — never the whole history — and
counts them per robot × error class, with the hosts, the attempts and the last
message of each; :class:`FailureSummary` also gives each robot's **streak**:

    the number of its most recent batches, among the window's batches in
    which the robot had a run or a failure, in which at least one of its jobs
    failed ("robot_17 failed 3 batches running").

A batch the robot is not part of (no run, no failure; a job skipped as
already done counts as not part of it) neither extends nor breaks its streak;
a batch with one failed and one finished job of the robot extends it.

``figaroh fleet status --archive DIR [--last N] [--robot R] [--json]`` prints
it (:mod:`figaroh.cli.fleet_command`); the drift report shows the streaks.
"""

from __future__ import annotations

import dataclasses
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple, Union

from figaroh.fleet.run_index import BatchInfo, FailureRow, RunIndex, RunIndexError, index_path
from figaroh.utils.fileio import host_name, writer_gone

__all__ = [
    "DEFAULT_LAST_BATCHES",
    "FailureGroup",
    "FailureStreak",
    "FailureSummary",
    "failure_summary",
]

#: Batches :func:`failure_summary` looks at by default.
DEFAULT_LAST_BATCHES = 10


@dataclasses.dataclass(frozen=True)
class FailureGroup:
    """The failures of one robot with one error class in the window.

    Attributes:
        robot_id: The robot.
        error_type: The exception class (``"InputMismatchError"`` ...).
        failures: Failed jobs (rows).
        batches: Batches with at least one of them.
        attempts: Attempts made, summed over the failed jobs.
        hosts: Hosts where they failed, sorted (``""`` unknown).
        last_batch_id: Batch of the latest one.
        last_time: Time of the latest one (ISO-8601 UTC).
        last_message: Message of the latest one.
    """

    robot_id: str
    error_type: str
    failures: int
    batches: int
    attempts: int
    hosts: Tuple[str, ...]
    last_batch_id: str
    last_time: str
    last_message: str


@dataclasses.dataclass(frozen=True)
class FailureStreak:
    """A robot whose latest batches failed, one after the other.

    Attributes:
        robot_id: The robot.
        batches: Its consecutive most recent batches with a failure (≥ 1; see
            the module docstring).
        first_batch_id: The oldest batch of the streak.
        last_batch_id: The newest.
        error_types: Error classes seen in the streak, sorted.
        last_message: The newest failure's message.
    """

    robot_id: str
    batches: int
    first_batch_id: str
    last_batch_id: str
    error_types: Tuple[str, ...]
    last_message: str

    def describe(self) -> str:
        """``"robot_17 failed 3 batches running (since batch …): InputMismatchError"``."""
        run = "the last batch" if self.batches == 1 else f"{self.batches} batches running"
        since = "" if self.batches == 1 else f" (since batch {self.first_batch_id})"
        return f"{self.robot_id} failed {run}{since}: {', '.join(self.error_types)}"


@dataclasses.dataclass(frozen=True)
class FailureSummary:
    """The failures of an archive's last batches (see the module docstring).

    Attributes:
        archive: The index the summary was read from.
        last_batches: The window asked for (batches).
        robots: The robots asked for (empty: every robot).
        batches: The window's batches, newest first.
        groups: Failures per robot × error class, most failures first.
        streaks: Robots whose latest batch in the window failed, longest streak first.
        failures: Failed jobs in the window.
    """

    archive: str
    last_batches: int
    robots: Tuple[str, ...]
    batches: Tuple[BatchInfo, ...]
    groups: Tuple[FailureGroup, ...]
    streaks: Tuple[FailureStreak, ...]
    failures: int

    def streak(self, robot_id: str) -> int:
        """Batches running that ``robot_id`` failed (0 when its latest batch had no failure)."""
        return next((s.batches for s in self.streaks if s.robot_id == robot_id), 0)

    def repeated(self, at_least: int = 2) -> Tuple[FailureStreak, ...]:
        """The streaks of at least ``at_least`` batches (repeated failures)."""
        return tuple(s for s in self.streaks if s.batches >= at_least)

    def report_rows(self) -> List[Dict[str, Any]]:
        """One row per robot × error class for the drift report's failed-runs section.

        The keys are those :func:`figaroh.fleet.drift_html.failure_rows` reads:
        ``robot_id``, ``error_type``, ``count`` (failed jobs in the window),
        ``last_time``, ``hosts`` and ``message`` (the last error message).
        """
        return [
            {
                "robot_id": g.robot_id,
                "error_type": g.error_type,
                "count": g.failures,
                "last_time": g.last_time,
                "hosts": g.hosts,
                "message": g.last_message,
            }
            for g in self.groups
        ]

    def to_json_data(self) -> Dict[str, Any]:
        """Plain JSON-ready data (``figaroh fleet status --json``)."""
        return {
            "archive": self.archive,
            "last_batches": self.last_batches,
            "robots": list(self.robots),
            "failures": self.failures,
            "batches": [dataclasses.asdict(b) for b in self.batches],
            "groups": [dataclasses.asdict(g) | {"hosts": list(g.hosts)} for g in self.groups],
            "streaks": [
                dataclasses.asdict(s) | {"error_types": list(s.error_types)} for s in self.streaks
            ],
        }

    def lines(self) -> List[str]:
        """The text report: batches, a table of robot × error class, the streaks."""
        out = [
            f"{len(self.batches)} batches (the last {self.last_batches} asked), "
            f"{self.failures} failed jobs"
            + (f" of {', '.join(self.robots)}" if self.robots else "")
        ]
        for batch in self.batches:
            out.append(f"  batch {batch.batch_id}: {_batch_state(batch)}")
        if self.groups:
            width = max(len(g.robot_id) for g in self.groups)
            kind = max(len(g.error_type) for g in self.groups)
            out.append(
                f"{'robot':{width}s}  {'error':{kind}s}  failures  batches  attempts  hosts; "
                "last message"
            )
            for g in self.groups:
                hosts = ",".join(h or "?" for h in g.hosts)
                out.append(
                    f"{g.robot_id:{width}s}  {g.error_type:{kind}s}  {g.failures:8d}  "
                    f"{g.batches:7d}  {g.attempts:8d}  {hosts}; {g.last_message}"
                )
        for streak in self.streaks:
            out.append(streak.describe())
        return out


def _batch_state(batch: BatchInfo) -> str:
    """``finished: 12 runs, 1 failed, 3 skipped`` or ``running on host (pid …)``."""
    if batch.status == "running":
        gone = batch.host == host_name() and bool(batch.pid) and _driver_gone(batch)
        where = f"on {batch.host} (pid {batch.pid}, since {batch.started})"
        return f"interrupted: its driver {where} is gone" if gone else f"running {where}"
    counts = f"{batch.runs or 0} runs, {batch.failures or 0} failed" + (
        "" if batch.skipped is None else f", {batch.skipped} skipped"
    )
    return f"{batch.status}: {counts}"


def _driver_gone(batch: BatchInfo) -> bool:
    """True when the driver of a ``running`` batch of this host is no longer alive."""
    try:
        started = datetime.fromisoformat(batch.started).timestamp()
    except ValueError:
        return False
    return writer_gone(int(batch.pid or 0), started)


def _groups(rows: Sequence[FailureRow], newest_first: Sequence[str]) -> Tuple[FailureGroup, ...]:
    age = {batch_id: k for k, batch_id in enumerate(newest_first)}
    by_key: Dict[Tuple[str, str], List[FailureRow]] = {}
    for row in rows:
        by_key.setdefault((row.robot_id, row.error_type), []).append(row)
    groups = []
    for (robot, error), items in by_key.items():
        last = min(items, key=lambda r: (age[r.batch_id], -r.seq))
        groups.append(
            FailureGroup(
                robot_id=robot,
                error_type=error,
                failures=len(items),
                batches=len({r.batch_id for r in items}),
                attempts=sum(r.attempts for r in items),
                hosts=tuple(sorted({r.host for r in items})),
                last_batch_id=last.batch_id,
                last_time=last.time,
                last_message=last.message,
            )
        )
    return tuple(sorted(groups, key=lambda g: (-g.failures, g.robot_id, g.error_type)))


def _streaks(
    rows: Sequence[FailureRow], present: Sequence[Tuple[str, str]], newest_first: Sequence[str]
) -> Tuple[FailureStreak, ...]:
    failed: Dict[str, Dict[str, List[FailureRow]]] = {}
    for row in rows:
        failed.setdefault(row.robot_id, {}).setdefault(row.batch_id, []).append(row)
    part_of: Dict[str, set[str]] = {}
    for batch_id, robot in present:
        part_of.setdefault(robot, set()).add(batch_id)
    streaks = []
    for robot, by_batch in failed.items():
        run: List[str] = []
        for batch_id in newest_first:
            if batch_id not in part_of.get(robot, set()) and batch_id not in by_batch:
                continue  # the robot was not part of this batch
            if batch_id not in by_batch:
                break
            run.append(batch_id)
        if not run:
            continue
        in_run = [r for b in run for r in by_batch[b]]
        last = max(by_batch[run[0]], key=lambda r: r.seq)
        streaks.append(
            FailureStreak(
                robot_id=robot,
                batches=len(run),
                first_batch_id=run[-1],
                last_batch_id=run[0],
                error_types=tuple(sorted({r.error_type for r in in_run})),
                last_message=last.message,
            )
        )
    return tuple(sorted(streaks, key=lambda s: (-s.batches, s.robot_id)))


def _summary(index: RunIndex, last_batches: int, robots: Tuple[str, ...]) -> FailureSummary:
    batches = tuple(index.batches(last=last_batches))
    ids = [b.batch_id for b in batches]
    one_robot = robots[0] if len(robots) == 1 else None
    rows = [
        row
        for row in index.failures(robot_id=one_robot, last_batches=last_batches)
        if not robots or row.robot_id in robots
    ]
    present = index.robots_in_batches(last_batches) if rows else []
    return FailureSummary(
        archive=str(index.path),
        last_batches=last_batches,
        robots=robots,
        batches=batches,
        groups=_groups(rows, ids),
        streaks=_streaks(rows, present, ids),
        failures=len(rows),
    )


def failure_summary(
    index_or_path: Union[RunIndex, str, os.PathLike[str]],
    last_batches: int = DEFAULT_LAST_BATCHES,
    robots: Union[str, Sequence[str], None] = None,
) -> FailureSummary:
    """The failures of the last ``last_batches`` batches, per robot and error class, with streaks.

    Args:
        index_or_path: An open :class:`~figaroh.fleet.run_index.RunIndex`, an
            archive root, or its ``index.sqlite``.
        last_batches: Batches to look at (the newest, by start time) ≥ 1.
        robots: Only this robot, or these robots (None: every robot).

    Returns:
        The :class:`FailureSummary`.

    Raises:
        ValueError: ``last_batches`` < 1.
        RunIndexError: no index at the path (the message says how to make one).
    """
    if isinstance(last_batches, bool) or not isinstance(last_batches, int) or last_batches < 1:
        raise ValueError(f"last_batches must be an integer ≥ 1, got {last_batches!r}")
    wanted = (robots,) if isinstance(robots, str) else tuple(robots or ())
    if isinstance(index_or_path, RunIndex):
        return _summary(index_or_path, last_batches, wanted)
    path = Path(index_or_path)
    db = index_path(path) if path.is_dir() else path
    if not db.is_file():
        raise RunIndexError(
            f"no run index {str(db)!r}: pass the archive of a fleet run (or rebuild its index "
            "with figaroh index rebuild --archive DIR)"
        )
    with RunIndex(db) as index:
        return _summary(index, last_batches, wanted)
