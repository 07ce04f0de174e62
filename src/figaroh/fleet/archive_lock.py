"""One writer per fleet archive: an operating-system lock held for a whole batch.

A batch driver (:func:`figaroh.fleet.runner.run_batch`,
:func:`~figaroh.fleet.runner.run_serial`) and :func:`figaroh.fleet.run_index.rebuild_index`
hold :class:`ArchiveLock` on the archive root while they write it. The lock is
an exclusive ``flock`` (POSIX; ``msvcrt.locking`` on Windows) on the file
``<archive_root>/.figaroh-archive.lock`` (:data:`LOCK_FILE`), taken without
waiting: a second driver on the same archive — a cron job that overlaps the
previous night's, another site pointed at the same folder — is refused at once
with :class:`ArchiveLockedError`, whose message names the holder (host, pid,
batch id, since when, what it runs) and how to clear a stale lock. It
computes nothing and writes nothing, so two drivers never archive a job
twice nor compute it twice.

The operating system releases the lock when its process ends, however it
ends (``kill -9`` included), so a dead driver leaves no stale lock on a local
file system; on a network file system the server releases it when the dead
host's lease expires. The lock file itself stays (removing it while a driver
holds it would let a second driver lock a new file): it holds the holder's
details as one JSON line, rewritten by each holder, which the batch driver
also records in the index (its ``batches`` row, status ``running``).

Refusing was chosen over cooperating (several drivers claiming jobs in the
index): SQLite takes one writer at a time anyway, and a second driver would
compete for the same index rows and folders; a fleet that needs several
drivers shards its batch over several archive roots.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Union

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
try:  # Windows
    import msvcrt
except ImportError:
    msvcrt = None  # type: ignore[assignment]

from figaroh.errors import FigarohError
from figaroh.utils.fileio import host_name, make_folder

logger = logging.getLogger(__name__)

__all__ = ["LOCK_FILE", "ArchiveLock", "ArchiveLockedError", "LockHolder", "lock_path"]

PathLike = Union[str, "os.PathLike[str]"]

#: Name of the lock file at the archive root.
LOCK_FILE = ".figaroh-archive.lock"
#: Byte locked on Windows (far from the holder's details, which stay readable).
_WINDOWS_LOCK_OFFSET = 1 << 20


class ArchiveLockedError(FigarohError, RuntimeError):
    """Another process holds the archive (a batch, or an index rebuild); the message names it.

    Attributes:
        holder: The holder's details (:class:`LockHolder`; empty fields when unknown).
    """

    def __init__(self, message: str, holder: LockHolder) -> None:
        super().__init__(message)
        self.holder = holder


@dataclasses.dataclass(frozen=True)
class LockHolder:
    """Who holds an archive.

    Attributes:
        host: Host name of the holding process.
        pid: Its process id (0 when unknown).
        batch_id: Its batch id (``""`` for an index rebuild).
        since: ISO-8601 UTC time it took the lock.
        command: What it runs (``"fleet run"``, ``"index rebuild"`` ...).
    """

    host: str = ""
    pid: int = 0
    batch_id: str = ""
    since: str = ""
    command: str = ""

    def describe(self) -> str:
        """``"fleet run batch <id> (pid <pid> on <host>, since <time>)"``."""
        if not self.pid:
            return "another process (it is just starting: its details are not written yet)"
        batch = f" batch {self.batch_id}" if self.batch_id else ""
        where = f"pid {self.pid} on {self.host}, since {self.since}"
        return f"{self.command or 'a process'}{batch} ({where})"


def lock_path(archive_root: PathLike) -> Path:
    """``<archive_root>/.figaroh-archive.lock``."""
    return Path(archive_root) / LOCK_FILE


def _read_holder(fd: int) -> LockHolder:
    """The holder's details written in the lock file (empty when unreadable)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = json.loads(os.read(fd, 4096).decode("utf-8", "replace") or "{}")
        fields = {f.name: data[f.name] for f in dataclasses.fields(LockHolder) if f.name in data}
        return LockHolder(**fields)
    except (OSError, ValueError, TypeError):
        return LockHolder()


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock without waiting; False when another process holds it."""
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    if msvcrt is not None:  # pragma: no cover - Windows
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    logger.warning(
        "no file locking on this platform: the archive is not protected"
    )  # pragma: no cover
    return True  # pragma: no cover


class ArchiveLock:
    """The exclusive lock of one archive root, held from :meth:`acquire` to :meth:`release`.

    Use as a context manager. Taking it never waits: a held lock raises
    :class:`ArchiveLockedError` at once.

    Args:
        archive_root: The archive (created when missing).
        batch_id: The holder's batch id (``""`` for an index rebuild).
        command: What the holder runs (shown to a refused process).
    """

    def __init__(
        self, archive_root: PathLike, batch_id: str = "", command: str = "fleet run"
    ) -> None:
        self.root = Path(archive_root)
        self.path = lock_path(self.root)
        self.batch_id = batch_id
        self.command = command
        self.holder: LockHolder | None = None
        self._fd: int | None = None

    def acquire(self) -> ArchiveLock:
        """Take the lock and write this process's details into the lock file.

        Raises:
            ArchiveLockedError: another process holds it (the message names it).
            OSError: the lock file cannot be created (the archive is not writable).
        """
        if self._fd is not None:
            return self
        make_folder(self.root)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        if not _try_lock(fd):
            holder = _read_holder(fd)
            os.close(fd)
            raise ArchiveLockedError(self._refusal(holder), holder)
        holder = LockHolder(
            host=host_name(),
            pid=os.getpid(),
            batch_id=self.batch_id,
            since=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            command=self.command,
        )
        data = (json.dumps(dataclasses.asdict(holder), sort_keys=True) + "\n").encode("utf-8")
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, data)
        self._fd, self.holder = fd, holder
        logger.debug("archive %s locked by %s", self.root, holder.describe())
        return self

    def _refusal(self, holder: LockHolder) -> str:
        return (
            f"the fleet archive {str(self.root)!r} is in use by {holder.describe()}; "
            f"this {self.command} did nothing. Run it again once that one has finished, or "
            "give it another --archive. A lock is never stale on this machine: it ends with "
            "its process (if that process hangs, stop it: kill <pid> on its host); on a "
            "network file system the lock of a crashed host ends when its lease expires "
            f"(removing {LOCK_FILE} does not release it)"
        )

    def release(self) -> None:
        """Release the lock (idempotent); the lock file stays, emptied of the holder's details."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
        except OSError:  # pragma: no cover - the lock goes with the descriptor anyway
            pass
        os.close(fd)  # releases the lock
        self.holder = None

    @property
    def held(self) -> bool:
        """True between :meth:`acquire` and :meth:`release`."""
        return self._fd is not None

    def __enter__(self) -> ArchiveLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"ArchiveLock({str(self.root)!r}, held={self.held})"
