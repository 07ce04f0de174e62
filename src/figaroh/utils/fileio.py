"""Crash-safe file writing: a temporary sibling file, fsync, then ``os.replace``.

Every file figaroh writes goes through :func:`atomic_write`, which gives four
guarantees:

* **All or nothing.** Readers see either the old file or the complete new one;
  an exception while writing leaves the destination untouched and no temporary
  file behind.
* **Usual permissions.** The file is created with mode ``0o666`` minus the
  process umask, like ``open(path, "w")``.
* **No litter.** A temporary file is named ``.<name>.<pid>.<host>.<rand>.tmp``
  (``<host>``: a tag of the host name and pid namespace); a process killed
  while writing leaves it behind, and the next write into the same folder
  removes it once its writer is provably gone (same host and pid namespace,
  and that pid is dead or belongs to a process started after the file was
  last written), or when the file is older than :data:`STALE_TEMP_AGE_S`. A
  live writer's temporary file is never removed.
* **Sealed runs are immutable.** A folder holding :data:`SEAL_MARKER` is an
  archived run: nothing in it, or in any of its sub-folders, is created or
  replaced. Such a write raises :class:`SealedRunError` naming the path, the
  run and the fix, before any byte is written (:func:`refuse_sealed`).
* **Errors name the path.** An ``OSError`` while writing (``ENOSPC`` disk
  full, ``EFBIG`` file too large, ``EACCES`` ...) is raised again as the same
  ``OSError`` subclass with the same ``errno``, its ``filename`` the
  destination and its message the cause and the fix; the temporary file is
  removed first.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import time
from pathlib import Path
from typing import IO, Any, Callable, Union

from figaroh.errors import FigarohError

__all__ = [
    "ARCHIVE_RECORD_FILES",
    "SEAL_MARKER",
    "STALE_TEMP_AGE_S",
    "SealedRunError",
    "atomic_write",
    "atomic_write_text",
    "create_exclusive",
    "file_sha256",
    "is_sealed_dir",
    "is_temp_name",
    "make_folder",
    "refuse_sealed",
    "remove_stale_temps",
    "sealed_run_of",
    "write_new_file",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Marker file whose presence seals an archived run folder.
SEAL_MARKER = ".archived"
#: The run record files :func:`figaroh._run.archive.archive_run` writes into a
#: run folder (with the caller's reports) before sealing it.
ARCHIVE_RECORD_FILES = ("provenance.json", "config.snapshot.yaml", "parameters.csv", "stages.json")
#: Age [s] after which a temporary file whose writer cannot be checked (another
#: host, or an unnamed writer of an older figaroh) counts as abandoned.
STALE_TEMP_AGE_S = 24 * 3600.0

#: Seconds by which a process must have started after a temporary file was
#: last written before that file counts as left by an earlier owner of its pid
#: (a margin for clock steps).
_PID_REUSE_MARGIN_S = 60.0


def host_name() -> str:
    """This machine's network name (``uname`` node name; no ``socket`` import)."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        return uname().nodename
    import platform  # Windows: no os.uname

    return platform.node()


@functools.cache
def _writer_namespace() -> str:
    """Tag of the pid space of this process: host name and pid namespace.

    Two processes can test each other's pids only when they share it;
    temporary files of another host or container are left to the age rule.
    """
    try:
        pid_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pid_ns = ""
    tag = f"{host_name()}|{pid_ns}".encode("utf-8", "replace")
    import hashlib  # stdlib, loads OpenSSL: paid by the first write, not the import

    return hashlib.sha256(tag).hexdigest()[:6]


def writer_tag() -> str:
    """Tag of this process's host and pid namespace (as in temporary-file names).

    Another process may test whether a writer of the same tag is alive
    (:func:`writer_gone`); writers of another tag are judged by age only.
    """
    return _writer_namespace()


def __getattr__(name: str) -> Any:
    """``_HOST``: :func:`_writer_namespace`, computed on first access (it loads OpenSSL)."""
    if name == "_HOST":
        return _writer_namespace()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# .<name>.<pid>.<host>.<rand>.tmp[<suffix>]
_TEMP_RE = re.compile(
    r"^\.(?P<name>.+)\.(?P<pid>\d+)\.(?P<host>[0-9a-f]{6})\.[0-9a-f]{8}\.tmp(?:\.[A-Za-z0-9]+)?$"
)
# temporary files of earlier versions: tempfile.mkstemp(prefix=".<name>.", suffix=".tmp")
# (only recognised next to the file <name> they were writing)
_LEGACY_TEMP_RE = re.compile(r"^\.(?P<name>.+)\.[a-z0-9_]{8}\.(?:tmp|urdf)$")


def is_temp_name(name: str) -> bool:
    """True when ``name`` is the name of a temporary file of :func:`atomic_write`."""
    return _TEMP_RE.match(name) is not None


class SealedRunError(FigarohError, FileExistsError):
    """A write into an archived (sealed) run folder was refused."""


def is_sealed_dir(path: PathLike) -> bool:
    """True when folder ``path`` is a sealed archived run (holds :data:`SEAL_MARKER`)."""
    return os.path.isfile(os.path.join(os.fspath(path), SEAL_MARKER))


def sealed_run_of(path: PathLike) -> Path | None:
    """The sealed archived run that ``path`` lies in (or is), else None.

    ``path`` itself and every ancestor folder are checked, both as given
    (made absolute) and with symbolic links resolved; ``path`` need not exist.

    Args:
        path: A file or folder path.

    Returns:
        The nearest sealed run folder holding ``path``, or None.
    """
    given = Path(os.path.abspath(os.fspath(path)))
    seen: set[Path] = set()
    for start in (given, Path(os.path.realpath(given))):
        for folder in (start, *start.parents):
            if folder in seen:
                continue
            seen.add(folder)
            if is_sealed_dir(folder):
                return folder
    return None


def _sealed_error(target: Path, run: Path) -> SealedRunError:
    return SealedRunError(
        f"cannot write {str(target)!r}: it lies inside {str(run)!r}, an archived run "
        f"(sealed by its {SEAL_MARKER} file), and archived runs are never modified "
        "(nothing was written); choose another output folder: write next to it, e.g. "
        f"into {str(run.parent / (run.name + '-reports'))!r}, or into a new run directory "
        "(compute_run_dir)"
    )


def refuse_sealed(path: PathLike) -> None:
    """Raise :class:`SealedRunError` when ``path`` lies in a sealed archived run.

    Call it before writing anything for an output path, so a refused
    command leaves the sealed run's bytes unchanged.

    Args:
        path: The file or folder about to be written.

    Raises:
        SealedRunError: ``path`` is, or lies inside (sub-folders included),
            a sealed archived run; the message names the path, the run and the
            fix (choose another output folder).
    """
    run = sealed_run_of(path)
    if run is not None:
        raise _sealed_error(Path(path), run)


def _check_not_sealed(dest: Path) -> None:
    refuse_sealed(dest)


def make_folder(folder: PathLike) -> Path:
    """Create ``folder`` and its missing parents, never inside a sealed archived run.

    Args:
        folder: Folder to create (an existing folder is returned as is).

    Returns:
        ``Path(folder)``.

    Raises:
        SealedRunError: ``folder`` is, or lies inside, a sealed archived run
            (its files would alter the run); nothing is created.
        OSError: the folder cannot be created (the message names it).
    """
    path = Path(folder)
    refuse_sealed(path)
    if path.is_dir():
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _named_os_error(exc, path, "create folder") from exc
    return path


#: The fix named for an ``OSError`` of each errno (default: :data:`_OTHER_FIX`).
_OS_ERROR_FIX = {
    errno.ENOSPC: "the disk is full: free space on it, or choose another output folder",
    errno.EDQUOT: "the disk quota is exhausted: free space, or choose another output folder",
    errno.EFBIG: (
        "the file exceeds the largest file the file system or this process "
        "(ulimit -f) allows: choose another output folder, or write less"
    ),
    errno.EACCES: "no permission: choose another output folder, or fix its permissions",
    errno.EPERM: "not permitted: choose another output folder, or fix its permissions",
    errno.EROFS: "the file system is read-only: choose another output folder",
}
_OTHER_FIX = "choose another output folder, or fix the cause above"


def _named_os_error(exc: OSError, path: Path, action: str = "write") -> OSError:
    """``exc`` again (same subclass and errno) with ``path``, the cause and the fix."""
    if isinstance(exc, FigarohError) or exc.errno is None:
        return exc
    cause = exc.strerror or os.strerror(exc.errno)
    code = errno.errorcode.get(exc.errno, str(exc.errno))
    fix = _OS_ERROR_FIX.get(exc.errno, _OTHER_FIX)
    message = f"cannot {action} {str(path)!r}: {cause} ({code}); {fix}"
    if action == "write":
        message += "; nothing was written (the temporary file was removed)"
    return OSError(exc.errno, message, str(path))


# ---------------------------------------------------------------------------
# Stale temporary files
# ---------------------------------------------------------------------------
def _process_start_time(pid: int) -> float | None:
    """Start time [s since the epoch] of a live process (Linux ``/proc``), else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", "rb") as fh:
            boot = next(
                int(line.split()[1])
                for line in fh.read().decode().splitlines()
                if line.startswith("btime")
            )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def writer_gone(pid: int, mtime: float) -> bool:
    """True when process ``pid`` of this host cannot be writing a file last written at ``mtime``.

    The process is gone, or its pid now belongs to a process that started
    more than a minute after ``mtime`` [s since the epoch] (pid reuse). A
    live process, or one this user may not signal, is never called gone.
    """
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False  # alive (another user's) or not a pid we can check
    started = _process_start_time(pid)
    # the pid was reused by a process started after the file was last written
    return started is not None and started > mtime + _PID_REUSE_MARGIN_S


def _is_stale(entry: os.DirEntry, now: float, siblings: set[str]) -> bool:
    """True when ``entry`` is a temporary file of :func:`atomic_write` whose writer is gone."""
    match = _TEMP_RE.match(entry.name)
    if match is None:
        legacy = _LEGACY_TEMP_RE.match(entry.name)
        if legacy is None or legacy["name"] not in siblings:
            return False
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    if not entry.is_file(follow_symlinks=False):
        return False
    if now - st.st_mtime > STALE_TEMP_AGE_S:
        return True
    if match is None or match["host"] != _writer_namespace():
        return False
    return writer_gone(int(match["pid"]), st.st_mtime)


def remove_stale_temps(folder: PathLike) -> list[str]:
    """Remove the temporary files that killed writers left in ``folder``.

    A temporary file is removed when it carries this host's tag and its
    writer's pid is dead (or was reused by a process started after the file
    was last written), or when it is older than :data:`STALE_TEMP_AGE_S`. The
    temporary file of a live writer is never removed. Called by every
    :func:`atomic_write`.

    Args:
        folder: Folder to clean (missing or unreadable → nothing happens).

    Returns:
        The removed paths.
    """
    removed: list[str] = []
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    names = {entry.name for entry in entries}
    for entry in entries:
        if entry.name.startswith(".") and _is_stale(entry, now, names):
            try:
                os.unlink(entry.path)
            except OSError:
                continue
            removed.append(entry.path)
    return removed


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------
def _create_temp(parent: Path, name: str, suffix: str) -> tuple[int, str]:
    """Exclusively create ``.<name>.<pid>.<host>.<rand>.tmp<suffix>`` (mode from the umask)."""
    extra = "" if suffix == ".tmp" else suffix
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    host = _writer_namespace()
    while True:
        tmp = parent / f".{name}.{os.getpid()}.{host}.{os.urandom(4).hex()}.tmp{extra}"
        try:
            return os.open(tmp, flags, 0o666), str(tmp)
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue


def _commit(tmp: str, dest: Path) -> None:
    """Move the complete temporary file to ``dest``, re-checking the seal just before."""
    _check_not_sealed(dest)  # the folder may have been sealed while we wrote
    os.replace(tmp, dest)


def atomic_write(
    path: PathLike,
    write: Callable[[IO[Any]], object],
    *,
    binary: bool = False,
    encoding: str = "utf-8",
    check: Callable[[str], None] | None = None,
    suffix: str = ".tmp",
) -> str:
    """Write ``path`` atomically through a callback.

    The bytes go to a temporary file beside ``path``, are flushed to disk,
    optionally checked, and only then replace ``path`` (``os.replace``), so a
    reader sees either the old file or the complete new one; on any error the
    temporary file is removed and ``path`` is untouched. The file gets mode
    ``0o666 & ~umask``. Stale temporary files of dead writers in the folder are
    removed first (see :func:`remove_stale_temps`).

    Args:
        path: Destination file; its folder must exist.
        write: Called with the open temporary file.
        binary: Open the temporary file in binary mode.
        encoding: Text encoding (text mode).
        check: Called with the temporary file's path once it is complete; an
            exception it raises aborts the write (e.g. "the URDF must load").
        suffix: Suffix of the temporary file (for checkers that look at it,
            e.g. ``".urdf"``).

    Returns:
        ``str(path)``.

    Raises:
        FileNotFoundError: The destination folder does not exist.
        SealedRunError: The destination lies in a sealed archived run (its
            folder or an ancestor holds :data:`SEAL_MARKER`); nothing is
            written.
        OSError: The write failed (disk full, file too large, no permission,
            ...): the same ``OSError`` subclass and ``errno``, its message
            naming ``path``, the cause and the fix; ``path`` is untouched and
            no temporary file is left.
    """
    dest = Path(path)
    parent = dest.parent if str(dest.parent) else Path(".")
    _check_not_sealed(dest)
    if not parent.is_dir():
        raise FileNotFoundError(
            f"cannot write {str(dest)!r}: folder {str(parent)!r} does not exist (create it first)"
        )
    remove_stale_temps(parent)
    try:
        fd, tmp = _create_temp(parent, dest.name, suffix)
    except OSError as exc:
        raise _named_os_error(exc, dest) from exc
    try:
        stream = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding=encoding, newline="")
        )
        with stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        if check is not None:
            check(tmp)
        _commit(tmp, dest)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _named_os_error(exc, dest) from exc
        raise
    return str(dest)


def create_exclusive(path: PathLike, text: str, *, sync: bool = True, check: bool = True) -> bool:
    """Create ``path`` holding ``text``, unless it exists; it appears whole or not at all.

    The text is written and flushed to a temporary sibling file, which is then
    hard-linked to ``path`` (``os.link`` fails when ``path`` exists, so two
    processes never both create it), so no reader, and no process killed at any
    moment, ever sees ``path`` empty or half written (an ``O_EXCL`` create
    followed by a write would). On a file system without hard links the file
    is created with ``O_EXCL`` and written at once.

    Args:
        path: File to create (its folder must exist).
        text: Its content (UTF-8).
        sync: ``fsync`` the content before the file appears (durable across a
            power failure); without it the file is still whole for every
            reader and after a killed process, and the caller makes it
            durable later (e.g. one file-system sync for many files).
        check: Refuse a path inside a sealed archived run (:func:`refuse_sealed`);
            False for a folder the caller has just created and owns.

    Returns:
        True when created, False when ``path`` already existed.
    """
    dest = Path(path)
    if check:
        refuse_sealed(dest)
    data = text.encode("utf-8")
    fd, tmp = _create_temp(dest.parent, dest.name, ".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            if sync:
                os.fsync(stream.fileno())
        try:
            os.link(tmp, dest)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            return _create_exclusive_direct(dest, data, sync)
        return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _create_exclusive_direct(dest: Path, data: bytes, sync: bool = True) -> bool:
    """``O_EXCL`` create and one write (no hard links on this file system)."""
    try:
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return True


def write_new_file(path: PathLike, data: bytes) -> None:
    """Create ``path``, which must not exist, and write ``data`` to it (no ``fsync``).

    For the files of a folder the caller alone owns and publishes only once
    complete (a claimed, unsealed run folder): no temporary file, no rename,
    no seal check; the caller makes the folder durable (one sync for all its
    files) before publishing it. A partly written file is removed before the
    error is raised.

    Raises:
        FileExistsError: ``path`` exists (nothing is written).
        OSError: the write failed: the same subclass and ``errno``, its
            message naming ``path``, the cause and the fix.
    """
    dest = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(dest, flags, 0o666)
    except FileExistsError:
        raise
    except OSError as exc:
        raise _named_os_error(exc, dest, "create file") from exc
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException as exc:
        os.close(fd)
        dest.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _named_os_error(exc, dest, "create file") from exc
        raise
    os.close(fd)


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> str:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda stream: stream.write(text), encoding=encoding)


_HASH_BLOCK = 1 << 20  # 1 MiB


def file_sha256(path: PathLike) -> str:
    """Hex sha256 digest of a file's bytes.

    The file is read in 1 MiB blocks, so arbitrarily large recordings can be
    hashed in constant memory.

    Args:
        path: File to hash.

    Returns:
        The 64-character lowercase hexadecimal digest.

    Raises:
        FileNotFoundError: ``path`` does not exist (the message names it).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"cannot hash {str(p)!r}: no such file (check the path)")
    import hashlib  # stdlib, loads OpenSSL: paid by the call, not the import

    digest = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
