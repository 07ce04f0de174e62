"""Rebuild the run index from an archive's sealed run folders and ``failures.jsonl``.

The folders and ``failures.jsonl`` are the truth; :func:`rebuild_index`
writes a new index from them and atomically replaces the old one.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from figaroh._run.archive import sweep_interrupted_runs
from figaroh.fleet.archive_lock import ArchiveLock
from figaroh.fleet.index_schema import (
    FAILURES_FILE,
    BatchInfo,
    PathLike,
    RebuildSummary,
    RunIndexError,
    index_path,
)
from figaroh.fleet.index_store import RunIndex
from figaroh.fleet.record import RunRecordError
from figaroh.fleet.run_writer import _failure_rows, _record_of
from figaroh.utils.fileio import is_sealed_dir, make_folder

logger = logging.getLogger(__name__)

__all__ = ["rebuild_index"]


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
