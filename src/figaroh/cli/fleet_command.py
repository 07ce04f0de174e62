"""``figaroh fleet run``, ``fleet report``, ``fleet status`` and ``figaroh index rebuild``.

* ``fleet run BATCH.yaml`` — runs every job of the batch
  (:func:`figaroh.fleet.jobs.load_batch`) on Dask
  (:func:`figaroh.fleet.runner.run_batch`: an embedded ``LocalCluster``
  listening on 127.0.0.1 only, with its Dask dashboard on 127.0.0.1 when
  ``--dashboard`` is given, or ``--scheduler tcp://host:8786``; ``--serial``
  runs in this process), archives
  and indexes each run, prints the batch id, one line per failed job and a
  summary. ``--ship-inputs`` sends the input files with the tasks;
  ``--deadline S`` and ``--stall-timeout S`` end the batch (unfinished jobs
  cancelled, each a failure) after S seconds in all or S seconds without a
  finished job. Exit 0 when every job ran and passed its verdict, 1 when a job
  failed or a verdict did not pass, 2 bad input (batch YAML, missing file,
  missing extra) or an archive held by another batch (the message names it:
  :class:`figaroh.fleet.archive_lock.ArchiveLockedError`; nothing was run).
* ``fleet report --archive DIR`` — the drift analysis of the archive's run
  index (:func:`figaroh.fleet.drift.drift_report`: false-discovery rate
  ``--q``, default 0.05, or the threshold rule ``--k``; the window
  ``--since TIME`` / ``--last N`` sessions is read with SQL) written as a
  self-contained HTML page; exit 0 when no robot is flagged, 1 when one is.
* ``fleet status --archive DIR [--last N] [--robot R] [--json]`` — what
  failed, where, how often in the last ``N`` batches
  (:func:`figaroh.fleet.status.failure_summary`): per robot × error class the
  failed jobs, batches, attempts, hosts and last message, and the robots that
  failed several batches running; ``--json`` prints the same as JSON. Exit 0
  when no job failed in those batches, 1 when one did, 2 bad input (no index).
* ``index rebuild [--archive DIR]`` — rebuilds ``index.sqlite`` from the sealed run
  folders (:func:`figaroh.fleet.run_index.rebuild_index`), after finishing or
  removing the folders of interrupted archives (each reported, not an
  error); exit 1 when a sealed folder was skipped (each named with the reason),
  2 when a batch holds the archive.
  The positional ``index rebuild ARCHIVE`` is the deprecated spelling
  (:func:`figaroh.cli.main.main` moves it to ``--archive``).

Every archive root is ``--archive DIR``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from figaroh.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, CLIError, require_file, say
from figaroh.errors import MissingDependencyError
from figaroh.fleet.archive_lock import ArchiveLockedError
from figaroh.fleet.drift import drift_report
from figaroh.fleet.drift_html import write_drift_html
from figaroh.fleet.jobs import load_batch
from figaroh.fleet.run_index import INDEX_DB, RunIndex, index_path, rebuild_index
from figaroh.fleet.runner import BatchResult, run_batch, run_serial
from figaroh.fleet.status import failure_summary

logger = logging.getLogger(__name__)

__all__ = ["fleet", "index"]


def _progress(args: argparse.Namespace) -> bool:
    return not (args.quiet or args.no_progress) and bool(sys.stderr.isatty())


def _job_id(job: object) -> str:
    try:
        return str(job.job_id)  # type: ignore[attr-defined]
    except (OSError, ValueError):
        return "?"


def _print_result(args: argparse.Namespace, result: BatchResult) -> None:
    say(args, f"batch {result.batch_id}")
    for line in result.swept:
        say(args, f"interrupted: {line}")
    for line in result.recovered:
        say(args, f"recovered: {line}")
    for failure in result.failures:
        job = failure.job
        where = f" on {failure.host}" if failure.host else ""
        tries = f" after {failure.attempts} attempts" if failure.attempts > 1 else ""
        say(
            args,
            f"failed: {job.robot_id}/{job.session} ({job.kind}, job {_job_id(job)}){where}"
            f"{tries}: {failure.error_type}: {failure.message}",
        )
    for record in result.runs:
        if record.passed is not True:
            say(args, f"verdict {record.verdict_status}: {record.robot_id}/{record.session}")
    say(args, f"{result.summary()}; archive {result.archive_root}")


def _run(args: argparse.Namespace) -> int:
    require_file(args.batch, "batch YAML")
    if args.serial:
        dask_only = [
            option
            for option, given in (
                ("--stall-timeout", args.stall_timeout is not None),
                ("--ship-inputs", args.ship_inputs),
                ("--dashboard", args.dashboard),
            )
            if given
        ]
        if dask_only:
            raise CLIError(
                f"{', '.join(dask_only)} apply to Dask workers and do nothing with --serial: "
                "drop them, or run on Dask (--workers N or --scheduler ADDR); "
                "--deadline limits a serial batch",
                EXIT_BAD_INPUT,
            )
    jobs = load_batch(args.batch)
    progress = _progress(args)
    try:
        if args.serial:
            result = run_serial(
                jobs, archive_root=args.archive, progress=progress, deadline_s=args.deadline
            )
        else:
            result = run_batch(
                jobs,
                args.scheduler,
                archive_root=args.archive,
                n_workers=args.workers,
                progress=progress,
                dashboard=args.dashboard,
                ship_inputs=args.ship_inputs,
                deadline_s=args.deadline,
                stall_timeout_s=args.stall_timeout,
            )
    except MissingDependencyError as exc:
        raise CLIError(f"{exc} Or run the batch in this process with --serial.") from exc
    except ArchiveLockedError as exc:
        raise CLIError(str(exc), EXIT_BAD_INPUT) from exc
    _print_result(args, result)
    return EXIT_OK if result.passed else EXIT_FAILED


def _existing_index(args: argparse.Namespace) -> Path:
    """The run index of ``--archive``; a named error when the archive has none."""
    db = index_path(args.archive)
    if not db.is_file():
        raise CLIError(
            f"no run index {db}: pass the archive of a fleet run with --archive "
            f"(or rebuild its {INDEX_DB} with figaroh index rebuild --archive DIR)",
            EXIT_BAD_INPUT,
        )
    return db


def _report(args: argparse.Namespace) -> int:
    db = _existing_index(args)
    with RunIndex(db) as run_index:
        report = drift_report(
            run_index,
            names=args.param,
            robots=args.robot,
            task=args.task,
            k=args.k,
            q=args.q,
            since=args.since,
            last=args.last,
        )
        failures = failure_summary(run_index, robots=args.robot).report_rows()
    path = write_drift_html(report, args.output, failures=failures)
    flagged = list(report.flagged_robots)
    rule = f"k = {report.k:g}" if report.k is not None else f"false-discovery rate {report.q:g}"
    say(
        args,
        f"{len(report.parameters)} parameters, {len(report.flags)} flags ({rule}; "
        f"{report.window}); flagged robots: {', '.join(flagged) if flagged else 'none'}",
    )
    say(args, f"wrote {path}")
    return EXIT_FAILED if flagged else EXIT_OK


def _status(args: argparse.Namespace) -> int:
    db = _existing_index(args)
    summary = failure_summary(db, last_batches=args.last, robots=args.robot)
    if args.json:
        print(json.dumps(summary.to_json_data(), indent=2, sort_keys=True))
    else:
        for line in summary.lines():
            say(args, line)
    return EXIT_FAILED if summary.failures else EXIT_OK


def fleet(args: argparse.Namespace) -> int:
    """``figaroh fleet run`` / ``report`` / ``status`` (see the module docstring)."""
    actions = {"run": _run, "report": _report, "status": _status}
    return actions[args.fleet_command](args)


def index(args: argparse.Namespace) -> int:
    """``figaroh index rebuild``: exit 0 when every sealed folder was indexed, else 1.

    Unsealed folders (interrupted archives) are swept and reported, never an error.
    """
    require_file(args.archive, "archive folder", directory_ok=True)
    try:
        summary = rebuild_index(args.archive)
    except ArchiveLockedError as exc:
        raise CLIError(str(exc), EXIT_BAD_INPUT) from exc
    for line in summary.swept:
        say(args, f"interrupted: {line}")
    for reason in summary.skipped:
        say(args, f"skipped: {reason}")
    say(
        args,
        f"indexed {summary.runs} runs and {summary.failures} failed jobs into "
        f"{index_path(args.archive)}",
    )
    return EXIT_FAILED if summary.skipped else EXIT_OK
