"""Crash-safe file writing: a temporary sibling file, fsync, then ``os.replace``.

Readers never observe a half-written file, and an exception while writing
leaves the destination untouched and no temporary file behind.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Union

PathLike = Union[str, "os.PathLike[str]"]


def atomic_write(
    path: PathLike,
    write: Callable[[IO[Any]], None],
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
    temporary file is removed and ``path`` is untouched.

    Args:
        path: Destination file; its folder must exist.
        write: Called with the open temporary file.
        binary: Open the temporary file in binary mode.
        encoding: Text encoding (text mode).
        check: Called with the temporary file's path once it is complete; an
            exception it raises aborts the write (e.g. "the URDF must load").
        suffix: Suffix of the temporary file (for checkers that look at it).

    Returns:
        ``str(path)``.

    Raises:
        FileNotFoundError: The destination folder does not exist.
    """
    dest = Path(path)
    parent = dest.parent if str(dest.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(
            f"cannot write {str(dest)!r}: folder {str(parent)!r} does not exist (create it first)"
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix, dir=parent)
    try:
        # mkstemp creates 0600 files; give the result the usual umask-based mode
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        stream = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding=encoding, newline="")
        )
        with stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        if check is not None:
            check(tmp)
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return str(dest)


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
    digest = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
