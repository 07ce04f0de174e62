"""sha256 digests of the files a run read (configuration, URDF, data)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Union

__all__ = ["file_sha256"]

_BLOCK = 1 << 20  # 1 MiB


def file_sha256(path: Union[str, os.PathLike]) -> str:
    """Hex sha256 digest of a file's bytes, read in 1 MiB blocks (constant memory).

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
        for block in iter(lambda: fh.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
