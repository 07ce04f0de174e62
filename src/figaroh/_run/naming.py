"""Safe single path components for run identifiers and archive directories."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = ["_safe_path_component"]

_MAX_COMPONENT = 80


def _safe_path_component(value: Any, fallback: str = "unknown") -> str:
    """Turn any value into one safe path component.

    NFKC-normalised; every run of characters outside ``[A-Za-z0-9._-]``
    (separators, spaces, control characters, non-ASCII) and every run of two
    or more dots becomes ``_``; leading/trailing ``._-`` are stripped; at most
    80 characters. ``"../../etc"`` → ``"etc"``, ``"a/b"`` → ``"a_b"``.

    Args:
        value: Anything (converted with ``str``).
        fallback: Returned when nothing safe is left.

    Returns:
        A non-empty component that is never ``.`` or ``..``.
    """
    s = unicodedata.normalize("NFKC", str(value))
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", s)
    s = re.sub(r"\.{2,}", "_", s)
    s = re.sub(r"_{2,}", "_", s).strip("._-")
    s = s[:_MAX_COMPONENT].rstrip("._-")
    return s or fallback
