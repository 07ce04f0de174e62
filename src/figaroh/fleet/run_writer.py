"""The fleet driver's write path: archive a run, record a failure, recover a dead batch.

:func:`write_fleet_run` writes a finished job's sealed run folder
``<archive_root>/<robot_id>/<task>/<session>_<job_id>/`` (:func:`run_folder`)
and its index row; inside :meth:`~figaroh.fleet.index_store.RunIndex.grouped`
the folders' sync and seal come with the group's commit.
:func:`append_failure` records a job that failed (a line of
``failures.jsonl`` and a row). :func:`recover_interrupted_batches` indexes
what a batch whose driver died archived but did not commit.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterator, List, Mapping, Tuple

from figaroh._run.archive import (
    ARCHIVING_MARKER,
    INDEX_FILE,
    ArchiveFileNameError,
    append_line,
    claim_run_dir,
    seal_runs,
    write_unsealed_run,
)
from figaroh._run.naming import _safe_path_component
from figaroh.fleet.index_schema import FAILURES_FILE, FailureRow, PathLike, RunIndexError
from figaroh.fleet.index_store import RunIndex
from figaroh.fleet.record import RECORD_FILE, RunRecord, RunRecordError
from figaroh.utils.fileio import is_sealed_dir

logger = logging.getLogger(__name__)

__all__ = ["append_failure", "recover_interrupted_batches", "run_folder", "write_fleet_run"]


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
