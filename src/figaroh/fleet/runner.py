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
solver error still raised after ``retries`` further attempts; a task whose
workers kept dying) becomes a :class:`JobFailure` of the result, with the
host where it failed last and the attempts made; the other jobs go on.

Inputs are verified where they are read (:mod:`figaroh.fleet.inputs`): each
task carries the hashes the driver computed the job id from, and the worker
fails the job with :class:`~figaroh.fleet.inputs.InputMismatchError` when it
reads other bytes (never retried, never indexed); with ``ship_inputs`` the
task carries the bytes themselves. A worker that cannot read an input
returns :class:`~figaroh.fleet.inputs.InputUnavailableError`: the driver
resubmits the job to the workers that have not failed it
(``workers=[...]``, ``allow_other_workers=False``) and records the failure
when none is left.

Limits: ``deadline_s`` bounds the wall time of the batch and
``stall_timeout_s`` the time without any finished task (e.g. every worker
gone); when one is reached the unfinished jobs are cancelled and recorded as
failures (``DeadlineExceeded``, ``NoProgressTimeout``). Routing: a job kind
that needs a worker resource (:data:`figaroh.fleet.cluster.JOB_RESOURCES`,
trajectory jobs need ``ipopt``) is submitted with it, and fails at once with
:class:`~figaroh.fleet.cluster.MissingWorkerResourceError` when no worker of
the cluster advertises it.
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

import collections
import dataclasses
import logging
import os
import sys
import time
from pathlib import Path
from typing import (
    Any,
    Callable,
    Deque,
    Dict,
    Iterable,
    List,
    Mapping,
    Sequence,
    Set,
    Tuple,
)

from figaroh._run.archive import INDEX_FILE, sweep_interrupted_runs
from figaroh.cli.common import CLIError
from figaroh.errors import FigarohError
from figaroh.fleet.archive_lock import ArchiveLock
from figaroh.fleet.cluster import (
    JOB_RESOURCES,
    MissingWorkerResourceError,
    dask_client,
    require_distributed,
    workers_with,
)
from figaroh.fleet.inputs import InputUnavailableError, TaskInputs, task_inputs, worker_host
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
    "DeadlineExceeded",
    "JobFailure",
    "NoProgressTimeout",
    "run_batch",
    "run_serial",
    "run_task",
    "task_key",
]

#: Default archive root of a batch.
DEFAULT_ARCHIVE = "results/fleet"
#: Error types of jobs a batch limit cancelled: recorded with status ``unfinished``.
UNFINISHED_ERRORS = frozenset({"DeadlineExceeded", "NoProgressTimeout"})


class DeadlineExceeded(FigarohError, TimeoutError):
    """The batch's wall-time limit (``deadline_s``, ``--deadline``) came before the job finished."""


class NoProgressTimeout(FigarohError, TimeoutError):
    """No task of the batch finished for ``stall_timeout_s`` (``--stall-timeout``) seconds."""


@dataclasses.dataclass(frozen=True)
class JobFailure:
    """A job that did not give a run.

    Attributes:
        job: The job.
        error_type: Name of the exception class (e.g. ``"CLIError"``,
            ``"InputMismatchError"``, ``"KilledWorker"``, ``"DeadlineExceeded"``).
        message: Its one-line message.
        host: Host name of the worker (or driver) where the job failed last;
            the worker's address for a ``KilledWorker``; ``""`` unknown (a
            job cancelled by a time limit).
        attempts: Attempts made: submissions to workers, input re-routes and
            retries included, plus the worker deaths of a ``KilledWorker``;
            0 when the job never reached a worker.
    """

    job: Job
    error_type: str
    message: str
    host: str = ""
    attempts: int = 1

    @classmethod
    def of(cls, job: Job, exc: BaseException, host: str = "", attempts: int = 1) -> JobFailure:
        """The failure of ``job`` that raised ``exc`` on ``host`` after ``attempts`` attempts."""
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


def run_task(
    job: Job, thresholds: Mapping[str, Any] | None = None, inputs: TaskInputs | None = None
) -> JobOutput | JobFailure:
    """The task of one job: :func:`~figaroh.fleet.worker.run_job`, bad input returned as a failure.

    Bad input (a :class:`~figaroh.cli.common.CLIError` of the task's input
    phase, a :class:`~figaroh.fleet.jobs.FleetConfigError` such as
    :class:`~figaroh.fleet.inputs.InputMismatchError`) gives the same error on
    every attempt, so it is returned as a :class:`JobFailure` and never
    retried; an :class:`~figaroh.fleet.inputs.InputUnavailableError` is
    returned too (the driver tries another worker); any other exception
    propagates (the driver retries the task). The failure's host is this
    process's host name.
    """
    try:
        return run_job(job, thresholds, inputs)
    except (CLIError, FleetConfigError, InputUnavailableError) as exc:
        return JobFailure.of(job, exc, host=getattr(exc, "host", "") or worker_host())


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
                self._record(JobFailure.of(job, exc, host=worker_host()))
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
        try:
            record = output.record.in_batch(self.batch_id, output.job.tags)
            written = write_fleet_run(self.root, output.files, record, self.index)
        except Exception as exc:  # noqa: BLE001 - a failed write is this job's failure
            self._record(JobFailure.of(output.job, exc, host=worker_host()))
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


def _deadline_message(deadline_s: float, unfinished: int, total: int) -> str:
    return (
        f"the batch deadline of {deadline_s:g} s (deadline_s, --deadline) was reached with "
        f"{unfinished} of {total} jobs unfinished: they were cancelled"
    )


def run_serial(
    jobs: Sequence[Job],
    *,
    archive_root: str | os.PathLike = DEFAULT_ARCHIVE,
    progress: bool = True,
    thresholds: Mapping[str, Any] | None = None,
    deadline_s: float | None = None,
) -> BatchResult:
    """Run the batch in this process, one job after the other, without Dask.

    Same archive, lock, index, skipping and failure collection as :func:`run_batch`.

    Args:
        jobs: The jobs (e.g. :func:`figaroh.fleet.jobs.load_batch`).
        archive_root: Archive root (run folders, ``index.jsonl``, ``index.sqlite``).
        progress: Show a progress bar over jobs on stderr.
        thresholds: Verdict thresholds of every job (see :func:`figaroh.fleet.worker.run_job`).
        deadline_s: Wall time of the batch [s] from this call (None: no
            limit). Checked between jobs (a running job is not interrupted):
            the jobs not started by then are recorded as
            :class:`DeadlineExceeded` failures (0 attempts).

    Returns:
        The :class:`BatchResult`.

    Raises:
        figaroh.fleet.archive_lock.ArchiveLockedError: another batch (or an
            index rebuild) holds the archive; nothing was run.
    """
    start = time.monotonic()

    def execute(batch: _Batch, todo: List[Job]) -> None:
        for k, job in enumerate(todo):
            if deadline_s is not None and time.monotonic() - start >= deadline_s:
                exc = DeadlineExceeded(_deadline_message(deadline_s, len(todo) - k, len(todo)))
                logger.error("%s", exc)
                for rest in todo[k:]:
                    batch.handle(rest, JobFailure.of(rest, exc, attempts=0))
                return
            try:
                outcome = run_task(job, thresholds)
            except Exception as exc:  # noqa: BLE001 - collected, the batch goes on
                outcome = JobFailure.of(job, exc, host=worker_host())
            batch.handle(job, outcome)

    return _drive(jobs, archive_root, progress, execute)


@dataclasses.dataclass(frozen=True)
class _Attempt:
    """What one Dask task of a job gives back to the driver.

    Attributes:
        outcome: The job's output, or its failure on that worker.
        worker: Address of the Dask worker that ran it.
        retry: The computation raised (not bad input): another attempt may succeed.
    """

    outcome: JobOutput | JobFailure
    worker: str
    retry: bool


def _dask_task(job: Job, thresholds: Mapping[str, Any] | None, inputs: TaskInputs) -> _Attempt:
    """The Dask task of ``job``: :func:`run_task` on this worker, any exception returned."""
    worker = require_distributed().get_worker().address
    try:
        return _Attempt(run_task(job, thresholds, inputs), worker, False)
    except Exception as exc:  # noqa: BLE001 - the driver decides whether to retry
        logger.warning("job %s failed on %s", job.job_id, worker, exc_info=True)
        return _Attempt(JobFailure.of(job, exc, host=worker_host()), worker, True)


#: Tasks in flight per worker when the input bytes travel with the tasks
#: (bounds the bytes held by the scheduler).
_SHIPPED_PER_WORKER = 2
_POLL_S = 0.1


class _DaskDispatch:
    """Submits a batch's jobs to Dask, re-routes and retries them, collects them in time."""

    def __init__(
        self,
        client: Any,
        batch: _Batch,
        *,
        thresholds: Mapping[str, Any] | None,
        retries: int,
        ship_inputs: bool,
        route_resources: bool,
        deadline_s: float | None,
        stall_timeout_s: float | None,
        start: float,
    ) -> None:
        self.client, self.batch = client, batch
        self.thresholds, self.retries = thresholds, int(retries)
        self.ship, self.route = bool(ship_inputs), bool(route_resources)
        self.deadline_s, self.stall_timeout_s = deadline_s, stall_timeout_s
        self.start = start
        self.finished = require_distributed().as_completed(loop=client.loop)
        self.pending: Dict[str, Tuple[Any, Job]] = {}
        self.queue: Deque[Job] = collections.deque()
        self.tries: Dict[str, int] = {}
        self.excluded: Dict[str, Set[str]] = {}
        self.inputs: Dict[str, TaskInputs] = {}
        self.total = 0
        self.window: int | None = None

    # -- submission ---------------------------------------------------------
    def _resources(self, job: Job) -> Mapping[str, float] | None:
        return JOB_RESOURCES.get(job.kind) if self.route else None

    def _routable(self, todo: Sequence[Job]) -> List[Job]:
        """The jobs some worker can run; the others fail at once (no capable worker)."""
        if not self.route or not any(job.kind in JOB_RESOURCES for job in todo):
            return list(todo)
        if not workers_with(self.client):
            logger.warning("no worker is connected yet: resource routing is not checked")
            return list(todo)
        capable = {kind: bool(workers_with(self.client, n)) for kind, n in JOB_RESOURCES.items()}
        out = []
        for job in todo:
            if capable.get(job.kind, True):
                out.append(job)
                continue
            need = ", ".join(f"{k}={v:g}" for k, v in JOB_RESOURCES[job.kind].items())
            exc = MissingWorkerResourceError(
                f"no worker of the cluster advertises the resource {need} that {job.kind} jobs "
                f"need: start such workers with dask worker ... --resources {need.split(', ')[0]} "
                "(with cyipopt installed), or pass route_resources=False"
            )
            self.batch.handle(job, JobFailure.of(job, exc, attempts=0))
        return out

    def _submit(self, job: Job) -> bool:
        """Submit ``job`` (again) to the workers that did not fail to read it; False: none left."""
        job_id = job.job_id
        options: Dict[str, Any] = {}
        resources = self._resources(job)
        if resources:
            options["resources"] = dict(resources)
        excluded = self.excluded.get(job_id)
        if excluded:
            allowed = [w for w in workers_with(self.client, resources) if w not in excluded]
            if not allowed:
                return False
            options.update(workers=allowed, allow_other_workers=False)
        inputs = self.inputs.get(job_id)
        if inputs is None:
            try:
                inputs = task_inputs(job, self.ship)
            except (FleetConfigError, InputUnavailableError) as exc:  # read on the driver
                self._final(job, JobFailure.of(job, exc, host=worker_host(), attempts=0))
                return True
            self.inputs[job_id] = inputs
        n = self.tries[job_id] = self.tries.get(job_id, 0) + 1
        key = task_key(job) if n == 1 else f"{task_key(job)}-{n}"
        future = self.client.submit(
            _dask_task, job, self.thresholds, inputs, key=key, pure=False, **options
        )
        self.pending[future.key] = (future, job)
        self.finished.add(future)
        return True

    def _fill(self) -> None:
        while self.queue and (self.window is None or len(self.pending) < self.window):
            self._submit(self.queue.popleft())

    # -- collection ---------------------------------------------------------
    def _final(self, job: Job, outcome: JobOutput | JobFailure) -> None:
        self.inputs.pop(job.job_id, None)
        self.batch.handle(job, outcome)

    def _collect(self, future: Any) -> None:
        _, job = self.pending.pop(future.key)
        job_id = job.job_id
        n = self.tries[job_id]
        try:
            attempt = future.result()
        except Exception as exc:  # noqa: BLE001 - collected, the batch goes on
            host, attempts = "", n
            last = getattr(exc, "last_worker", None)  # KilledWorker: its workers died
            if last is not None:
                host = str(getattr(last, "address", "") or "")
                attempts = n + int(getattr(exc, "allowed_failures", 0))
            self._final(job, JobFailure.of(job, exc, host=host, attempts=attempts))
            return
        finally:
            future.release()
        outcome = attempt.outcome
        if isinstance(outcome, JobFailure):
            if outcome.error_type == InputUnavailableError.__name__:
                self.excluded.setdefault(job_id, set()).add(attempt.worker)
                if self._submit(job):
                    logger.warning(
                        "job %s (%s, %s): %s; resubmitted to another worker than %s",
                        job_id,
                        job.robot_id,
                        job.session,
                        outcome.message,
                        ", ".join(sorted(self.excluded[job_id])),
                    )
                    return
            elif attempt.retry and n <= self.retries:
                logger.warning(
                    "job %s (%s, %s) failed on %s (attempt %d of %d): %s: %s; retrying",
                    job_id,
                    job.robot_id,
                    job.session,
                    attempt.worker,
                    n,
                    self.retries + 1,
                    outcome.error_type,
                    outcome.message,
                )
                self._submit(job)
                return
            outcome = dataclasses.replace(outcome, attempts=n)
        self._final(job, outcome)

    # -- time limits --------------------------------------------------------
    def _limit(self, last: float) -> Tuple[float | None, str]:
        """The time the batch ends unless a task finishes first, and which limit that is."""
        limits = []
        if self.deadline_s is not None:
            limits.append((self.start + self.deadline_s, "deadline"))
        if self.stall_timeout_s is not None:
            limits.append((last + self.stall_timeout_s, "stall"))
        return min(limits) if limits else (None, "")

    def _wait(self, until: float | None) -> List[Any]:
        """The finished futures, waiting until one finishes or ``until`` (then ``[]``)."""
        while not self.finished.has_ready():
            now = time.monotonic()
            if until is not None and now >= until:
                return []
            timeout = _POLL_S if until is None else min(_POLL_S, until - now)
            with self.finished.thread_condition:
                self.finished.thread_condition.wait(timeout)
        return self.finished.next_batch(block=False)

    def _expire(self, which: str) -> None:
        """Cancel every unfinished job and record it as failed by the limit ``which``."""
        unfinished = [job for _, job in self.pending.values()] + list(self.queue)
        exc: Exception
        if which == "deadline":
            assert self.deadline_s is not None
            exc = DeadlineExceeded(_deadline_message(self.deadline_s, len(unfinished), self.total))
        else:
            exc = NoProgressTimeout(
                f"no task finished for {self.stall_timeout_s:g} s (stall_timeout_s, "
                f"--stall-timeout): {len(unfinished)} of {self.total} jobs unfinished were "
                "cancelled; are the workers alive and able to run them?"
            )
        logger.error("%s", exc)
        futures = [future for future, _ in self.pending.values()]
        try:
            self.client.cancel(futures, force=True)
        except Exception as cancel_error:  # noqa: BLE001 - the scheduler may be gone
            logger.warning("cancelling the unfinished tasks failed: %s", cancel_error)
        for job in unfinished:
            self._final(job, JobFailure.of(job, exc, attempts=self.tries.get(job.job_id, 0)))
        self.pending.clear()
        self.queue.clear()

    def run(self, todo: Sequence[Job]) -> None:
        """Submit ``todo`` and collect every job (a run, a failure, or cancelled by a limit)."""
        self.total = len(todo)
        self.queue.extend(self._routable(todo))
        if self.ship:
            self.window = max(4, _SHIPPED_PER_WORKER * len(workers_with(self.client)))
        self._fill()
        last = time.monotonic()
        while self.pending:
            if self.deadline_s is not None and time.monotonic() >= self.start + self.deadline_s:
                for future in self.finished.next_batch(block=False):  # finished in time
                    self._collect(future)
                self._expire("deadline")
                return
            until, which = self._limit(last)
            ready = self._wait(until)
            if not ready:
                self._expire(which)
                return
            last = time.monotonic()
            for future in ready:
                self._collect(future)
            self._fill()


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
    ship_inputs: bool = False,
    deadline_s: float | None = None,
    stall_timeout_s: float | None = None,
    route_resources: bool = True,
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
        retries: Times the driver resubmits a job whose task raised an error
            other than bad input (see :func:`run_task`). A task whose worker
            died is recomputed on another worker by the scheduler (up to its
            ``distributed.scheduler.allowed-failures``, 3 by default), then
            fails with ``KilledWorker``.
        progress: Show a progress bar over jobs on stderr.
        thresholds: Verdict thresholds of every job (see :func:`figaroh.fleet.worker.run_job`).
            They are not part of the ``job_id``: a job already indexed is
            skipped whatever the thresholds.
        dashboard: Serve the embedded cluster's Dask dashboard on
            ``127.0.0.1`` (off by default; see
            :func:`figaroh.fleet.cluster.dask_client`).
        ship_inputs: Carry each job's input bytes with its task
            (:func:`figaroh.fleet.inputs.task_inputs`): workers need no
            access to the input paths. Tasks in flight are then limited to
            ``max(4, 2 × workers)`` so that the scheduler holds few inputs.
        deadline_s: Wall time of the whole batch [s] from this call (None: no
            limit); then the unfinished jobs are cancelled and recorded as
            :class:`DeadlineExceeded` failures.
        stall_timeout_s: Longest time without a finished task [s] (None: no
            limit), e.g. every worker gone; then the unfinished jobs are
            cancelled and recorded as :class:`NoProgressTimeout` failures.
        route_resources: Submit the job kinds of
            :data:`figaroh.fleet.cluster.JOB_RESOURCES` with their Dask
            resources (trajectory jobs to ``ipopt`` workers); such jobs fail
            at once with :class:`~figaroh.fleet.cluster.MissingWorkerResourceError`
            when no connected worker advertises the resource.

    Returns:
        The :class:`BatchResult`.

    Raises:
        figaroh.errors.MissingDependencyError: ``distributed`` is not installed
            (install ``figaroh[fleet]``, or use :func:`run_serial`).
        figaroh.fleet.archive_lock.ArchiveLockedError: another batch (or an
            index rebuild) holds the archive; nothing was run (no cluster started).
    """
    start = time.monotonic()
    require_distributed()

    def execute(batch: _Batch, todo: List[Job]) -> None:
        with dask_client(scheduler, n_workers, dashboard=dashboard) as client:
            _DaskDispatch(
                client,
                batch,
                thresholds=thresholds,
                retries=retries,
                ship_inputs=ship_inputs,
                route_resources=route_resources,
                deadline_s=deadline_s,
                stall_timeout_s=stall_timeout_s,
                start=start,
            ).run(todo)

    return _drive(jobs, archive_root, progress, execute)
