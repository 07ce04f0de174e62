"""Run a batch of fleet jobs on Dask distributed (or serially) and archive every run once.

:func:`run_batch` submits one Dask task per job (:func:`figaroh.fleet.worker.run_job`,
task key ``figaroh-<job_id>``) and handles the results in the order they
finish. **Workers compute, the driver writes**: each finished job's files and
record are written by this process alone, with
:func:`figaroh.fleet.run_index.write_fleet_run` (sealed run folder under
``<archive_root>/<robot_id>/<task>/<session>_<job_id>/``, one line of
``index.jsonl``, one transaction of ``index.sqlite``). Dask may run a task
twice (a worker dies, the task is recomputed elsewhere), but the driver gets
one result per task, and the index keeps one run per ``job_id``; so a job
never produces two runs, also when a batch is run again: a job whose
``job_id`` is already indexed is not submitted and is reported as skipped.
Jobs of a batch with equal ``job_id`` (same spec and same file bytes) run once
(a warning names the repeats).

A job that fails (bad input, returned at once by :func:`run_task`; a
solver error still raised after ``retries`` attempts; a task whose workers
kept dying) becomes a :class:`JobFailure` of the result; the other jobs go on.
Every failure is also recorded in the archive (a line of ``failures.jsonl``
and a row of the index's ``failures`` table, with the batch id, host and
attempts: :func:`figaroh.fleet.status.failure_summary` reads them back).

One batch, one writer: the driver holds the archive's lock
(:class:`figaroh.fleet.archive_lock.ArchiveLock`) for the whole batch, so a
second driver on the same archive is refused at once
(:class:`~figaroh.fleet.archive_lock.ArchiveLockedError`, naming the holder)
before it computes anything. Every batch gets an id (:attr:`BatchResult.batch_id`,
:func:`figaroh.fleet.run_index.new_batch_id`) stored on each of its runs and
failures, with the job's tags. Before planning, the driver finishes what an
interrupted earlier batch left (:func:`figaroh._run.archive.sweep_interrupted_runs`,
then :func:`figaroh.fleet.run_index.recover_interrupted_batches`), so jobs
that batch archived are skipped, not computed again.

Driver throughput: each run folder is made durable with one sync
(:func:`figaroh.fleet.run_index.write_fleet_run`), and the index rows are
committed in groups (:meth:`figaroh.fleet.run_index.RunIndex.grouped`: every
:data:`~figaroh.fleet.run_index.COMMIT_EVERY` runs or
:data:`~figaroh.fleet.run_index.COMMIT_INTERVAL_S` seconds, at each failure and
at the end).
:func:`run_serial` does the same in this process, without Dask (the
reference the distributed results are compared against, and the way to run a
batch without the ``fleet`` extra).

Thread pinning: the embedded cluster's workers run with one BLAS/OpenMP
thread (:data:`figaroh.fleet.cluster.WORKER_ENV`); set ``OMP_NUM_THREADS=1``
(and ``OPENBLAS_NUM_THREADS=1``) in the driver too, and in the environment of
the workers of an external cluster, for bit-identical numbers everywhere.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, List, Mapping, Sequence, Tuple

from figaroh._run.archive import INDEX_FILE, sweep_interrupted_runs
from figaroh.cli.common import CLIError
from figaroh.fleet.archive_lock import ArchiveLock
from figaroh.fleet.cluster import dask_client, require_distributed
from figaroh.fleet.jobs import FleetConfigError, Job, dedupe_jobs
from figaroh.fleet.record import RunRecord
from figaroh.fleet.run_index import (
    FAILURES_FILE,
    BatchInfo,
    FailureRow,
    RunIndex,
    append_failure,
    index_path,
    new_batch_id,
    recover_interrupted_batches,
    utc_now,
    write_fleet_run,
)
from figaroh.fleet.worker import JobOutput, run_job
from figaroh.utils.fileio import host_name, make_folder

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_ARCHIVE",
    "UNFINISHED_ERRORS",
    "BatchResult",
    "JobFailure",
    "run_batch",
    "run_serial",
    "run_task",
    "task_key",
]

#: Default archive root of a batch.
DEFAULT_ARCHIVE = "results/fleet"
#: Error types of jobs a batch limit cancelled: recorded with status ``unfinished``.
UNFINISHED_ERRORS = frozenset({"DeadlineExceeded", "NoProgressTimeout"})


@dataclasses.dataclass(frozen=True)
class JobFailure:
    """A job that did not give a run.

    Attributes:
        job: The job.
        error_type: Name of the exception class (e.g. ``"CLIError"``, ``"KilledWorker"``).
        message: Its one-line message.
        host: Host name of the worker (or driver) where the job failed last
            (``""`` unknown).
        attempts: Attempts made (worker crashes, retries, input re-routes included).
    """

    job: Job
    error_type: str
    message: str
    host: str = ""
    attempts: int = 1

    @classmethod
    def of(cls, job: Job, exc: BaseException, host: str = "", attempts: int = 1) -> JobFailure:
        """The failure of ``job`` that raised ``exc`` (on ``host``, after ``attempts``)."""
        message = " ".join(str(exc).split()) or type(exc).__name__
        return cls(job, type(exc).__name__, message, host, attempts)


@dataclasses.dataclass(frozen=True)
class BatchResult:
    """What a batch did.

    Attributes:
        runs: The runs written now, in the order they finished (``run_dir`` set).
        failures: The jobs that failed, with their error.
        skipped: ``job_id`` of the jobs already in the index (not run again).
        archive_root: The archive the runs were written to.
        seconds: Wall time of the batch [s].
        swept: Unsealed folders of interrupted archives the batch found
            first, ``"<folder>: <what was done>"``
            (:func:`figaroh._run.archive.sweep_interrupted_runs`).
        batch_id: The batch's id, stored on each of its runs and failures.
        recovered: One line per interrupted earlier batch whose archived
            runs and failures were indexed first
            (:func:`figaroh.fleet.run_index.recover_interrupted_batches`).
    """

    runs: Tuple[RunRecord, ...]
    failures: Tuple[JobFailure, ...]
    skipped: Tuple[str, ...]
    archive_root: str
    seconds: float
    swept: Tuple[str, ...] = ()
    batch_id: str = ""
    recovered: Tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """No job failed and every run written now passed its verdict."""
        return not self.failures and all(r.passed is True for r in self.runs)

    def summary(self) -> str:
        """One line: runs, verdicts, failures, skipped jobs and wall time."""
        failed = sum(1 for r in self.runs if r.passed is not True)
        return (
            f"{len(self.runs)} runs ({failed} without a passing verdict), "
            f"{len(self.failures)} failed jobs, {len(self.skipped)} skipped in {self.seconds:.1f} s"
        )


def run_task(job: Job, thresholds: Mapping[str, Any] | None = None) -> JobOutput | JobFailure:
    """The task of one job: :func:`~figaroh.fleet.worker.run_job`, bad input returned as a failure.

    Bad input (a :class:`~figaroh.cli.common.CLIError` of the task's input
    phase, a :class:`~figaroh.fleet.jobs.FleetConfigError`) gives the same
    error on every attempt, so it is returned as a :class:`JobFailure` and
    never retried; any other exception propagates (Dask retries the task).
    """
    try:
        return run_job(job, thresholds)
    except (CLIError, FleetConfigError) as exc:
        return JobFailure.of(job, exc)


def task_key(job: Job) -> str:
    """Dask key of ``job``'s task: ``figaroh-<job_id>`` (one task per distinct job)."""
    return f"figaroh-{job.job_id}"


@dataclasses.dataclass
class _Batch:
    """The driver's state of a running batch."""

    root: Path
    index: RunIndex
    bar: Any
    batch_id: str = ""
    runs: List[RunRecord] = dataclasses.field(default_factory=list)
    failures: List[JobFailure] = dataclasses.field(default_factory=list)
    skipped: List[str] = dataclasses.field(default_factory=list)

    def plan(self, jobs: Iterable[Job]) -> List[Job]:
        """The jobs to run: unreadable inputs fail, repeats run once, indexed ones are skipped."""
        readable = []
        for job in jobs:
            try:
                job.job_id  # noqa: B018 - hashes the input files (may raise)
            except (OSError, ValueError) as exc:
                self._record(JobFailure.of(job, exc, host=host_name()))
            else:
                readable.append(job)
        unique, repeats = dedupe_jobs(readable)
        if repeats:
            logger.warning(
                "%d jobs repeat an earlier job of the batch (same spec and input files) and "
                "run once: %s",
                len(repeats),
                ", ".join(sorted({j.job_id for j in repeats})),
            )
        todo = []
        for job in unique:
            if self.index.has_job(job.job_id):
                self.skipped.append(job.job_id)
            else:
                todo.append(job)
        if self.skipped:
            logger.info("%d jobs are already in the index: skipped", len(self.skipped))
        return todo

    def write(self, output: JobOutput) -> None:
        """Archive and index one finished job (the driver's only write)."""
        record = output.record.in_batch(self.batch_id, output.job.tags)
        try:
            written = write_fleet_run(self.root, output.files, record, self.index)
        except Exception as exc:  # noqa: BLE001 - a failed write is this job's failure
            self._record(JobFailure.of(output.job, exc, host=host_name()))
        else:
            if written is None:
                self.skipped.append(output.job.job_id)
            else:
                self.runs.append(written)
        self.bar.update(1)

    def fail(self, failure: JobFailure) -> None:
        job = failure.job
        logger.warning(
            "job %s (%s, %s) failed%s: %s: %s",
            job.job_id,
            job.robot_id,
            job.session,
            f" on {failure.host}" if failure.host else "",
            failure.error_type,
            failure.message,
        )
        self._record(failure)
        self.bar.update(1)

    def _record(self, failure: JobFailure) -> None:
        """Keep ``failure`` for the result and record it in the archive (committed at once)."""
        row = self._failure_row(failure, seq=len(self.failures))
        self.failures.append(failure)
        try:
            append_failure(self.root, row, self.index)
            self.index.commit()
        except Exception as exc:  # noqa: BLE001 - the batch goes on; the failure is in the result
            logger.error("cannot record the failure of job %s: %s", row.job_id or "?", exc)

    def _failure_row(self, failure: JobFailure, seq: int) -> FailureRow:
        job = failure.job
        try:
            job_id = job.job_id
        except (OSError, ValueError):  # its inputs cannot be hashed
            job_id = ""
        return FailureRow(
            batch_id=self.batch_id,
            seq=seq,
            job_id=job_id,
            robot_id=job.robot_id,
            task=job.kind,
            session=job.session,
            status="unfinished" if failure.error_type in UNFINISHED_ERRORS else "failed",
            error_type=failure.error_type,
            message=failure.message,
            host=failure.host,
            attempts=int(failure.attempts),
            tags=job.tags,
            time=utc_now(),
        )

    def handle(self, job: Job, outcome: JobOutput | JobFailure) -> None:
        if isinstance(outcome, JobFailure):
            self.fail(outcome)
        else:
            self.write(outcome)

    def result(
        self, start: float, swept: Sequence[str] = (), recovered: Sequence[str] = ()
    ) -> BatchResult:
        return BatchResult(
            tuple(self.runs),
            tuple(self.failures),
            tuple(self.skipped),
            str(self.root),
            time.perf_counter() - start,
            tuple(swept),
            self.batch_id,
            tuple(recovered),
        )


def _progress_bar(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc="fleet", unit="job", file=sys.stderr, disable=not enabled)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _drive(
    jobs: Sequence[Job],
    archive_root: str | os.PathLike,
    progress: bool,
    execute: Callable[[_Batch, List[Job]], None],
    command: str = "fleet run",
) -> BatchResult:
    """Lock the archive, finish what an interrupted batch left, plan, ``execute``, record it."""
    start = time.perf_counter()
    root = make_folder(archive_root)
    batch_id = new_batch_id()
    with ArchiveLock(root, batch_id, command):
        swept = sweep_interrupted_runs(root)  # torn folders of an earlier, killed batch
        with RunIndex(index_path(root)) as index:
            recovered = recover_interrupted_batches(root, index, batch_id)
            info = BatchInfo(
                batch_id,
                host=host_name(),
                pid=os.getpid(),
                started=utc_now(),
                command=command,
                jsonl_offset=_file_size(root / INDEX_FILE),
                failures_offset=_file_size(root / FAILURES_FILE),
            )
            index.record_batch(info)
            batch = _Batch(root, index, bar=None, batch_id=batch_id)
            status = "interrupted"
            try:
                with index.grouped():
                    todo = batch.plan(jobs)
                    with _progress_bar(len(todo), progress) as bar:
                        batch.bar = bar
                        if todo:
                            execute(batch, todo)
                status = "finished"
            finally:
                # a lost group commit leaves the batch "running": the next batch recovers it
                if index.commit_errors == 0:
                    index.record_batch(
                        dataclasses.replace(
                            info,
                            finished=utc_now(),
                            status=status,
                            jobs=len(jobs),
                            runs=len(batch.runs),
                            failures=len(batch.failures),
                            skipped=len(batch.skipped),
                        )
                    )
            return batch.result(start, swept, recovered)


def run_serial(
    jobs: Sequence[Job],
    *,
    archive_root: str | os.PathLike = DEFAULT_ARCHIVE,
    progress: bool = True,
    thresholds: Mapping[str, Any] | None = None,
) -> BatchResult:
    """Run the batch in this process, one job after the other, without Dask.

    Same archive, lock, index, skipping and failure collection as :func:`run_batch`.

    Args:
        jobs: The jobs (e.g. :func:`figaroh.fleet.jobs.load_batch`).
        archive_root: Archive root (run folders, ``index.jsonl``, ``index.sqlite``).
        progress: Show a progress bar over jobs on stderr.
        thresholds: Verdict thresholds of every job (see :func:`figaroh.fleet.worker.run_job`).

    Returns:
        The :class:`BatchResult`.

    Raises:
        figaroh.fleet.archive_lock.ArchiveLockedError: another batch (or an
            index rebuild) holds the archive; nothing was run.
    """

    def execute(batch: _Batch, todo: List[Job]) -> None:
        host = host_name()
        for job in todo:
            try:
                outcome = run_task(job, thresholds)
            except Exception as exc:  # noqa: BLE001 - collected, the batch goes on
                outcome = JobFailure.of(job, exc, host=host)
            if isinstance(outcome, JobFailure) and not outcome.host:
                outcome = dataclasses.replace(outcome, host=host)
            batch.handle(job, outcome)

    return _drive(jobs, archive_root, progress, execute)


def _completed(futures: Sequence[Any]) -> Iterator[Any]:
    """``futures`` in the order they finish."""
    yield from require_distributed().as_completed(futures)


def run_batch(
    jobs: Sequence[Job],
    scheduler: Any = None,
    *,
    archive_root: str | os.PathLike = DEFAULT_ARCHIVE,
    n_workers: int | None = None,
    retries: int = 2,
    progress: bool = True,
    thresholds: Mapping[str, Any] | None = None,
    dashboard: bool = False,
) -> BatchResult:
    """Run the batch on Dask distributed; archive and index every finished job.

    Args:
        jobs: The jobs (e.g. :func:`figaroh.fleet.jobs.load_batch`).
        scheduler: None — an embedded ``LocalCluster`` of ``n_workers``
            processes with one thread each, listening on ``127.0.0.1`` only
            (started and closed here); a
            scheduler address ``"tcp://host:8786"``; or a
            ``distributed.Client`` (used as is, left open).
        archive_root: Archive root (run folders, ``index.jsonl``, ``index.sqlite``),
            on a file system the driver writes.
        n_workers: Worker processes of the embedded cluster (None: one per core).
        retries: Times Dask re-runs a task that raised an error other than bad
            input (see :func:`run_task`). A task whose worker died is
            recomputed on another worker (up to the scheduler's
            ``distributed.scheduler.allowed-failures``, 3 by default).
        progress: Show a progress bar over jobs on stderr.
        thresholds: Verdict thresholds of every job (see :func:`figaroh.fleet.worker.run_job`).
            They are not part of the ``job_id``: a job already indexed is
            skipped whatever the thresholds.
        dashboard: Serve the embedded cluster's Dask dashboard on
            ``127.0.0.1`` (off by default; see
            :func:`figaroh.fleet.cluster.dask_client`).

    Returns:
        The :class:`BatchResult`.

    Raises:
        figaroh.errors.MissingDependencyError: ``distributed`` is not installed
            (install ``figaroh[fleet]``, or use :func:`run_serial`).
        figaroh.fleet.archive_lock.ArchiveLockedError: another batch (or an
            index rebuild) holds the archive; nothing was run (no cluster started).
    """
    require_distributed()

    def execute(batch: _Batch, todo: List[Job]) -> None:
        with dask_client(scheduler, n_workers, dashboard=dashboard) as client:
            futures = {}
            for job in todo:
                future = client.submit(
                    run_task, job, thresholds, key=task_key(job), retries=retries, pure=False
                )
                futures[future.key] = (future, job)
            for future in _completed([f for f, _ in futures.values()]):
                _, job = futures.pop(future.key)
                try:
                    outcome = future.result()
                except Exception as exc:  # noqa: BLE001 - collected, the batch goes on
                    outcome = JobFailure.of(job, exc)
                batch.handle(job, outcome)
                future.release()

    return _drive(jobs, archive_root, progress, execute)
