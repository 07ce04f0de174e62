"""The files a results save writes: what goes where, how, and under which name.

:meth:`figaroh.utils.results_manager.ResultsManager.save_results` keeps what a
user wants to keep in small, readable files and the bulky per-sample arrays
only on request, in the compressed NPZ:

* **Summary** (YAML, CSV, JSON and NPZ): parameters, their uncertainties,
  metrics, configuration, stages and provenance — every entry except the
  per-sample arrays. A few kB to a few hundred kB.
* **Arrays** (NPZ only, with ``include_arrays=True``): the entries named by
  :data:`ARRAY_KEYS` for the task — regressors, effort trajectories,
  per-posture residuals — whose size grows with the number of samples.
  Their shape, dtype and ``mean/std/min/max`` are always listed in the
  metadata file, so a summary tells what was left out.

Names never collide, even between processes saving into one folder at the
same second: :func:`claim_stem` reserves a file-name stem by exclusively
creating (``O_CREAT | O_EXCL``) a hidden claim file ``.<stem>.claim`` before
any file is written, and gives up the claim once the files are in place. A
claim left by a killed process (same host, its pid gone) is removed by the
next save into the folder.

A set of files is complete or absent: the file that completes a set (a
results save's ``<stem>_metadata.yaml``, written last) is named in the claim;
when the next save finds the claim of a killed process whose set lacks that
file, it removes the files of that set too (:func:`claim_stem`), and readers
list only complete sets (:func:`saved_sets`).

Serialisation rules: numpy integer and floating scalars become ``float``,
arrays nested lists, dataclasses and objects with ``as_dict()``/``to_dict()``
dicts, paths and dates text; YAML keeps NaN/±inf as ``.nan``/``.inf``, JSON
stores them as ``null`` (``allow_nan=False``), CSV cells hold ``nan``/``inf``;
NPZ archives never contain pickles.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as _dt
import enum
import io
import itertools
import json
import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import IO, Any

import numpy as np

from figaroh.utils.fileio import (
    atomic_write,
    create_exclusive,
    host_name,
    make_folder,
    writer_gone,
)

logger = logging.getLogger(__name__)

__all__ = [
    "ARRAY_KEYS",
    "array_entries",
    "claim_stem",
    "saved_sets",
    "csv_columns",
    "npz_arrays",
    "split_arrays",
    "summary_statistics",
    "to_plain",
    "write_csv",
    "write_json",
    "write_npz",
    "write_yaml",
]

#: Per-sample entries of each task's results, as key paths into the results
#: dict (a nested entry is a path through its parent mappings). They are
#: written only with ``include_arrays=True``, and only into the NPZ file, under
#: the key path joined by ``"/"`` (a mapping of arrays, e.g. one trajectory per
#: joint, gives one NPZ entry per item).
ARRAY_KEYS: dict[str, tuple[tuple[str, ...], ...]] = {
    "identification": (
        ("base regressor",),
        ("torque estimated",),
        ("torque processed",),
        ("validation_metrics", "tau_nominal_per_joint"),
        ("validation_metrics", "tau_identified_per_joint"),
        ("validation_metrics", "tau_measured_per_joint"),
    ),
    "calibration": (
        ("rms residuals by samples",),
        ("residuals",),
        ("PEE measured (2D array)",),
        ("PEE estimated (2D array)",),
    ),
    # The optimal designs' trajectories and postures are their result: kept.
    "optimal_calibration": (),
    "optimal_trajectory": (),
}

_CLAIM_SUFFIX = ".claim"
_HOST = host_name()


# ---------------------------------------------------------------------------
# summary / arrays split
# ---------------------------------------------------------------------------


def split_arrays(
    data: Mapping[str, Any], paths: Sequence[Sequence[str]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Separate the per-sample entries ``paths`` from the rest of ``data``.

    ``data`` is not modified: the mappings along each path are copied.

    Args:
        data: The results dict.
        paths: Key paths of the per-sample entries (see :data:`ARRAY_KEYS`).

    Returns:
        ``(summary, arrays)``: ``data`` without those entries, and
        ``{"/".join(path): value}`` of the entries found.
    """
    summary: dict[str, Any] = dict(data)
    arrays: dict[str, Any] = {}
    for path in paths:
        parent: Any = summary
        for key in path[:-1]:
            child = parent.get(key) if isinstance(parent, Mapping) else None
            if not isinstance(child, Mapping):
                parent = None
                break
            copy = dict(child)
            parent[key] = copy
            parent = copy
        if isinstance(parent, dict) and path[-1] in parent:
            arrays["/".join(path)] = parent.pop(path[-1])
    return summary, arrays


def array_entries(arrays: Mapping[str, Any]) -> dict[str, Any]:
    """Flatten mappings of arrays into ``"<key>/<item>"`` entries (for the NPZ file)."""
    out: dict[str, Any] = {}
    for key, value in arrays.items():
        if isinstance(value, Mapping):
            for item, sub in value.items():
                out[f"{key}/{item}"] = sub
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------------------
# plain data
# ---------------------------------------------------------------------------


def to_plain(value: Any, non_finite: str = "null", unknown: str = "keep") -> Any:
    """Recursively turn ``value`` into plain Python data.

    Args:
        value: Any nesting of mappings, sequences, numpy values, dataclasses...
        non_finite: ``"null"`` maps NaN/±inf floats to ``None``; ``"keep"``
            leaves them as Python floats (YAML writes ``.nan``/``.inf``).
        unknown: ``"keep"`` returns unsupported objects unchanged; ``"str"``
            replaces them by ``str(obj)`` (used when writing files).

    Returns:
        The converted value.
    """

    def conv(v: Any) -> Any:
        if isinstance(v, np.generic):  # before float: np.float64 subclasses float
            return _numpy_scalar(v, conv)
        if isinstance(v, enum.Enum):
            return conv(v.value)
        if v is None or isinstance(v, (str, int, float)):
            return _plain_builtin(v, non_finite)
        if isinstance(v, Mapping):
            return {_plain_key(k): conv(x) for k, x in v.items()}
        if isinstance(v, np.ndarray):
            return _array_to_list(v, conv, non_finite)
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        if isinstance(v, (set, frozenset)):
            return _sorted_if_possible([conv(x) for x in v])
        return _plain_object(v, conv, unknown)

    return conv(value)


def _plain_builtin(v: str | int | float | None, non_finite: str) -> Any:
    """``None``, ``bool``, ``str``, ``int`` or ``float`` as the plain built-in type."""
    if v is None or type(v) in (bool, str, int):
        return v
    if isinstance(v, int):  # subclasses → the plain built-in type
        return int(v)
    if isinstance(v, str):
        return str(v)
    if non_finite == "null" and not math.isfinite(v):
        return None
    return float(v)


def _sorted_if_possible(items: list[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:
        return items


def _plain_object(v: Any, conv: Callable[[Any], Any], unknown: str) -> Any:
    """Paths, dates, complex numbers, dataclasses and ``as_dict()`` objects as plain data."""
    if isinstance(v, PurePath):
        return os.fspath(v)
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, complex):
        return str(v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: conv(getattr(v, f.name)) for f in dataclasses.fields(v)}
    for attr in ("as_dict", "to_dict"):
        method = getattr(v, attr, None)
        if callable(method):
            try:
                out = method()
            except Exception:  # fall through to the generic rule
                break
            if isinstance(out, Mapping):
                return conv(out)
            break
    if unknown == "str":
        logger.debug("serialising unsupported %s as its str()", type(v).__name__)
        return str(v)
    return v


def _plain_key(key: Any) -> Any:
    if key is None or isinstance(key, (str, bool, int, float)):
        return key
    if isinstance(key, np.bool_):
        return bool(key)
    if isinstance(key, np.integer):
        return int(key)
    if isinstance(key, np.floating):
        return float(key)
    if isinstance(key, enum.Enum):
        return _plain_key(key.value)
    return str(key)


def _numpy_scalar(v: np.generic, conv: Callable[[Any], Any]) -> Any:
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, (np.integer, np.floating)):
        # figaroh 1.0.2 contract: numpy integer and floating scalars become float.
        return conv(float(v))
    if isinstance(v, np.complexfloating):
        return str(complex(v))
    if isinstance(v, np.str_):
        return str(v)
    return conv(v.item())


def _array_to_list(arr: np.ndarray, conv: Callable[[Any], Any], non_finite: str) -> Any:
    kind = arr.dtype.kind
    if kind in "biuU":
        return arr.tolist()
    if kind == "f":
        if non_finite == "null" and not np.all(np.isfinite(arr)):
            obj = arr.astype(object)
            obj[~np.isfinite(arr)] = None
            return obj.tolist()
        return arr.tolist()
    return conv(arr.tolist())


# ---------------------------------------------------------------------------
# tabular and array views
# ---------------------------------------------------------------------------


def _format_cell(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


def _csv_cells(name: str, value: Any) -> list[tuple[str, list[str]]]:
    """The CSV columns of one entry (none when it is not tabular)."""
    if value is None or isinstance(value, Mapping):
        return []
    if isinstance(value, (str, bool, int, float, np.generic)):
        return [(name, [_format_cell(value)])]
    if not isinstance(value, (np.ndarray, list, tuple)):
        logger.debug("CSV: skipping %r (%s is not tabular)", name, type(value).__name__)
        return []
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        logger.debug("CSV: skipping %r (ragged sequence)", name)
        return []
    if arr.dtype.kind not in "biufU" or arr.ndim > 2:
        logger.debug("CSV: skipping %r (dtype %s, ndim %d)", name, arr.dtype, arr.ndim)
        return []
    if arr.ndim == 0:
        return [(name, [_format_cell(arr.item())])]
    if arr.ndim == 1:
        return [(name, [_format_cell(x) for x in arr.tolist()])]
    return [
        (f"{name}_{i}", [_format_cell(x) for x in arr[:, i].tolist()]) for i in range(arr.shape[1])
    ]


def csv_columns(results: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """Tabular view of ``results``: ``[(column name, cells)]``.

    1-D arrays/lists are columns, 2-D arrays are split into ``<key>_<i>``
    columns (one per array column), scalars and strings are one-element
    columns. Mappings, ``None`` and arrays with more than two dimensions are
    not tabular and are skipped (they are in the YAML/JSON/NPZ files).
    Repeated names get a ``#<n>`` suffix.
    """
    columns: list[tuple[str, list[str]]] = []
    taken: set[str] = set()
    for key, value in results.items():
        for name, cells in _csv_cells(str(key), value):
            unique, n = name, 1
            while unique in taken:
                unique = f"{name}#{n}"
                n += 1
            taken.add(unique)
            columns.append((unique, cells))
    return columns


def npz_arrays(results: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Pickle-free arrays for the NPZ archive.

    Numeric/boolean/string arrays, lists and scalars are stored as arrays;
    anything else (mappings, ragged or mixed lists, ``None``) is stored as a
    0-d unicode array holding its JSON text (non-finite floats → ``null``).
    """
    out: dict[str, np.ndarray] = {}
    array_like = (np.ndarray, list, tuple, str, bool, int, float, np.generic)
    for key, value in results.items():
        arr: np.ndarray | None = None
        if isinstance(value, array_like):
            try:
                arr = np.asarray(value)
            except (ValueError, TypeError):
                arr = None
            if arr is not None and arr.dtype.kind not in "biufcU":
                arr = None
        if arr is None:
            text = json.dumps(to_plain(value, "null", "str"), allow_nan=False)
            arr = np.asarray(text)
        out[str(key)] = arr
    return out


_STATS_BLOCK = 1 << 20  # elements per block of the large-array statistics


def summary_statistics(arr: np.ndarray) -> dict[str, float | None] | None:
    """``{mean, std, min, max}`` of the finite values of a numeric array (None otherwise).

    Arrays of more than about a million elements (a long regressor) are
    reduced without full-size temporaries: sum, sum of squares (one BLAS dot
    product), min and max over the array; when the array holds non-finite
    values, or the variance cancels (std far below the mean), a block-wise
    two-pass reduction is used instead. Both equal the direct computation
    to round-off.
    """
    if arr.dtype.kind not in "iuf" or arr.size == 0:
        return None
    if arr.size > _STATS_BLOCK:
        return _large_statistics(arr.reshape(-1))
    finite = arr
    if arr.dtype.kind == "f":
        mask = np.isfinite(arr)
        if not mask.all():
            finite = arr[mask]
    if finite.size == 0:
        return {"mean": None, "std": None, "min": None, "max": None}
    finite = finite.astype(float, copy=False)
    return {
        "mean": float(np.mean(finite)),
        "std": float(np.std(finite)),
        "min": float(np.min(finite)),
        "max": float(np.max(finite)),
    }


def _large_statistics(flat: np.ndarray) -> dict[str, float | None]:
    flat = flat.astype(float, copy=False)
    total = float(np.sum(flat))
    if math.isfinite(total):
        mean = total / flat.size
        mean_square = float(np.dot(flat, flat)) / flat.size
        var = mean_square - mean * mean
        if math.isfinite(mean_square) and var > 1e-8 * mean_square:
            return {
                "mean": mean,
                "std": math.sqrt(var),
                "min": float(flat.min()),
                "max": float(flat.max()),
            }
    return _blocked_statistics(flat)


def _finite_blocks(flat: np.ndarray) -> Iterator[np.ndarray]:
    for start in range(0, flat.size, _STATS_BLOCK):
        block = flat[start : start + _STATS_BLOCK].astype(float, copy=False)
        mask = np.isfinite(block)
        yield block if mask.all() else block[mask]


def _blocked_statistics(flat: np.ndarray) -> dict[str, float | None]:
    total, count, low, high = 0.0, 0, math.inf, -math.inf
    for block in _finite_blocks(flat):
        if block.size:
            total += float(np.sum(block))
            count += block.size
            low, high = min(low, float(block.min())), max(high, float(block.max()))
    if count == 0:
        return {"mean": None, "std": None, "min": None, "max": None}
    mean = total / count
    squares = 0.0
    for block in _finite_blocks(flat):
        centred = block - mean
        squares += float(np.dot(centred, centred))
    return {"mean": mean, "std": math.sqrt(squares / count), "min": low, "max": high}


# ---------------------------------------------------------------------------
# writers (atomic, through figaroh.utils.fileio.atomic_write)
# ---------------------------------------------------------------------------


def write_yaml(path: Path, data: Mapping[str, Any]) -> str:
    """Safe YAML of the plain data (NaN/inf kept as ``.nan``/``.inf``).

    Emitted by libyaml's safe dumper when PyYAML was built with it (several
    times faster), else by the pure-Python ``yaml.SafeDumper``; both write
    only standard tags, read back by ``yaml.safe_load``.
    """
    import yaml  # ~25 ms (regex tables): paid by the first write, not the import

    plain = to_plain(data, non_finite="keep", unknown="str")
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return atomic_write(
        path,
        lambda fh: yaml.dump(
            plain,
            fh,
            Dumper=dumper,
            sort_keys=False,
            default_flow_style=False,
            allow_unicode=True,
        ),
    )


def write_json(path: Path, data: Mapping[str, Any]) -> str:
    """Strict JSON (``allow_nan=False``; NaN/inf stored as ``null``), indented by 2."""
    plain = to_plain(data, non_finite="null", unknown="str")
    text = json.dumps(plain, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    return atomic_write(path, lambda fh: fh.write(text))


def write_csv(path: Path, data: Mapping[str, Any]) -> str | None:
    """The :func:`csv_columns` table; None (nothing written) when nothing is tabular."""
    columns = csv_columns(data)
    if not columns:
        logger.warning(
            "CSV not written: the results hold no array, list or scalar entry "
            "(mappings are saved in the YAML/JSON/NPZ files)"
        )
        return None
    n_rows = max(len(cells) for _, cells in columns)

    def write(fh: IO[str]) -> None:
        out = csv.writer(fh)
        out.writerow([name for name, _ in columns])
        for i in range(n_rows):
            out.writerow([cells[i] if i < len(cells) else "" for _, cells in columns])

    return atomic_write(path, write)


def write_npz(path: Path, data: Mapping[str, Any]) -> str:
    """Compressed, pickle-free NPZ of :func:`npz_arrays` (readable by ``np.load``)."""
    arrays = npz_arrays(data)

    def write(fh: IO[bytes]) -> None:
        import zipfile  # only when an NPZ is written

        with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_DEFLATED) as zf:
            for key, arr in arrays.items():
                buf = io.BytesIO()
                np.lib.format.write_array(buf, arr, allow_pickle=False)
                zf.writestr(f"{key}.npy", buf.getvalue())

    return atomic_write(path, write, binary=True)


# ---------------------------------------------------------------------------
# exclusive names
# ---------------------------------------------------------------------------


def _read_claim(path: Path) -> tuple[int, str, str | None, list[str]] | None:
    """``(pid, host, completing suffix, suffixes)`` of a claim file (None: unreadable)."""
    try:
        parts = path.read_text(encoding="utf-8").split("\n")
        pid_text, host = parts[0].split(maxsplit=1)
        pid = int(pid_text)
    except (OSError, ValueError, IndexError):
        return None
    # "<pid> <host>\n<complete>\t<suffix>...\n": the set line counts only when
    # newline-terminated (a torn line names no set, see _record_set)
    fields = parts[1].split("\t") if len(parts) > 2 and parts[1] else []
    return pid, host.strip(), (fields[0] if fields else None), fields[1:]


def _claim_owner_gone(path: Path) -> bool:
    """True when the claim file ``path`` was made on this host by a process that is gone."""
    claim = _read_claim(path)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return False
    return claim is not None and claim[1] == _HOST and writer_gone(claim[0], mtime)


def _stem_of_claim(name: str) -> str:
    return name[1 : -len(_CLAIM_SUFFIX)]


def _remove_dead_claims(folder: Path) -> None:
    """Remove the claims left in ``folder`` by killed processes of this host.

    A claim that names the file completing its set (see :func:`claim_stem`)
    and whose set lacks that file marks an interrupted save: the set's files
    are removed with the claim.
    """
    if os.name != "posix":
        return
    try:
        names = [n for n in os.listdir(folder) if n.startswith(".") and n.endswith(_CLAIM_SUFFIX)]
    except OSError:
        return
    for name in names:
        path = folder / name
        if not _claim_owner_gone(path):
            continue
        claim = _read_claim(path)
        stem = _stem_of_claim(name)
        if claim is not None and claim[2] is not None:
            complete, suffixes = claim[2], claim[3]
            if not os.path.lexists(folder / f"{stem}{complete}"):
                for suffix in suffixes:
                    with contextlib.suppress(OSError):
                        os.unlink(folder / f"{stem}{suffix}")
                logger.warning(
                    "removed the incomplete set %s%s of an interrupted save (no %s%s)",
                    folder / stem,
                    "{" + ",".join(suffixes) + "}",
                    stem,
                    complete,
                )
        with contextlib.suppress(OSError):
            os.unlink(path)
            logger.debug("removed the claim %s of a dead process", path)


def _try_claim(claim: Path) -> bool:
    return create_exclusive(claim, f"{os.getpid()} {_HOST}\n")


def _record_set(claim: Path, complete: str, suffixes: Sequence[str]) -> None:
    """Name, in a held claim, the set about to be written (none of its files exists).

    Written only once the names are known to be free, so an interrupted
    save's set can be removed without touching anyone else's file.
    """
    fd = os.open(claim, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, ("\t".join([complete, *suffixes]) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def claim_stem(
    folder: Path, stem: str, suffixes: Sequence[str], complete: str | None = None
) -> Iterator[str]:
    """Reserve the first free file-name stem ``stem``, ``stem_1``, ``stem_2``, ...

    A stem is free when no ``<folder>/<stem><suffix>`` exists and no other
    process holds its claim; the claim (``.<stem>.claim``, created with
    ``O_EXCL``) is held while the ``with`` block writes the files and removed
    afterwards, so two processes saving into one folder at once always get
    different names.

    Args:
        folder: Destination folder (created when missing).
        stem: Preferred stem.
        suffixes: File-name endings the stem will be used with.
        complete: The suffix (one of ``suffixes``) of the file that completes
            the set, written last. When given, a claim left by a killed
            process whose set lacks that file is removed by the next claim in
            the folder together with the set's files (``<stem><suffix>``,
            none of which existed when the claim was made).

    Yields:
        The reserved stem.

    Raises:
        SealedRunError: ``folder`` lies in a sealed archived run (no claim is made).
    """
    make_folder(folder)
    _remove_dead_claims(folder)
    for n in itertools.count():
        candidate = stem if n == 0 else f"{stem}_{n}"
        claim = folder / f".{candidate}{_CLAIM_SUFFIX}"
        if not _try_claim(claim):
            continue
        if any(os.path.lexists(folder / f"{candidate}{s}") for s in suffixes):
            os.unlink(claim)
            continue
        if complete is not None:
            _record_set(claim, complete, suffixes)
        break
    try:
        yield candidate
    finally:
        with contextlib.suppress(OSError):
            os.unlink(claim)


def saved_sets(folder: Path, complete: str) -> tuple[list[tuple[str, Path]], list[str]]:
    """The complete sets of ``folder`` and a reason for each incomplete one.

    A set ``<stem>...`` is complete when ``<stem><complete>`` exists (it is
    written last). A claim whose set lacks that file is a save being
    written, or interrupted (a killed process; the next save in the folder
    removes it).

    Args:
        folder: Folder to list.
        complete: Suffix of the file that completes a set (e.g. ``"_metadata.yaml"``).

    Returns:
        ``([(stem, completing file), ...] sorted by stem, ["<stem>: <reason>", ...])``.
    """
    try:
        names = set(os.listdir(folder))
    except OSError:
        return [], []
    claimed = {_stem_of_claim(n) for n in names if n.startswith(".") and n.endswith(_CLAIM_SUFFIX)}
    done: list[tuple[str, Path]] = []
    incomplete: list[str] = []
    for name in sorted(names):
        if name.startswith(".") or not name.endswith(complete):
            continue
        done.append((name[: -len(complete)], folder / name))
    for stem in sorted(claimed):
        if f"{stem}{complete}" not in names:
            path = folder / f".{stem}{_CLAIM_SUFFIX}"
            state = "interrupted" if _claim_owner_gone(path) else "being written or interrupted"
            incomplete.append(f"{stem}: {state} (no {stem}{complete})")
    return sorted(done), incomplete
