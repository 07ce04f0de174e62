"""Strict JSON: nested run data converted so it can be written with ``allow_nan=False``.

Every non-finite float (NaN, ±inf) becomes ``None`` (JSON ``null``); the
status fields of the records still carry the failure, and the files always
load back with any JSON reader.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Union

import numpy as np

from figaroh.utils.fileio import atomic_write_text

__all__ = ["strict_json_text", "verification_json_data", "write_verification_json"]


def verification_json_data(data: Any) -> Any:
    """Convert a verdict (or any nested data) for strict JSON.

    Dicts, lists and tuples are walked; numpy arrays become lists and numpy
    scalars Python scalars; dataclass instances go through
    :func:`dataclasses.asdict`; :class:`pathlib.Path` becomes ``str``; every
    **non-finite float (NaN, ±inf) becomes None** (JSON ``null``) — the
    status fields still carry the failure. Non-string dict keys are
    stringified. The result can be written with ``json.dump(...,
    allow_nan=False)``.

    Args:
        data: Any nested structure.

    Returns:
        A structure of dict/list/str/int/float/bool/None (other objects are
        returned unchanged).
    """
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = dataclasses.asdict(data)
    if isinstance(data, Mapping):
        return {
            (k if isinstance(k, str) else str(k)): verification_json_data(v)
            for k, v in data.items()
        }
    if isinstance(data, (list, tuple)):
        return [verification_json_data(v) for v in data]
    if isinstance(data, np.ndarray):
        return verification_json_data(data.tolist())
    if isinstance(data, np.generic):
        data = data.item()
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, Path):
        return str(data)
    return data


def write_verification_json(data: Any, path: Union[str, os.PathLike]) -> str:
    """Write :func:`verification_json_data` of ``data`` as strict JSON, atomically.

    ``allow_nan=False`` is always used (non-finite floats are ``null``); the
    file is written to a temporary file and renamed (no half-written file).

    Args:
        data: A verdict, its ``asdict`` dict, or any nested data.
        path: Destination; the folder must exist.

    Returns:
        The written path.

    Raises:
        TypeError: ``data`` holds an object JSON cannot represent.
        FileNotFoundError: the destination folder does not exist.
    """
    text = json.dumps(verification_json_data(data), indent=2, allow_nan=False, ensure_ascii=False)
    return atomic_write_text(path, text + "\n")


def strict_json_text(data: Any, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`verification_json_data` of ``data`` with ``allow_nan=False``.

    Args:
        data: Any nested structure.
        **kwargs: Further :func:`json.dumps` options (``indent``, ``sort_keys``, ...).

    Returns:
        The JSON text (no trailing newline).
    """
    return json.dumps(verification_json_data(data), allow_nan=False, **kwargs)
