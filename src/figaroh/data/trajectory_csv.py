"""Reading back the CSV file written by ``TrajectoryData.to_csv``.

The layout: one ``# figaroh-trajectory: {json}`` metadata line (joint names,
effort kinds and units, clock, origins, conversion, source files), a header
row ``t, q:<joint>..., [dq:<joint>...], [ddq:<joint>...], effort:<joint>...,
[effort_raw:<joint>...], mask, sample_index`` and one row per sample. The
helpers below read the file and its columns for
:meth:`~figaroh.data.trajectory.TrajectoryData.from_csv`, each raising
:class:`~figaroh.data.trajectory_fields.TrajectoryDataError` naming the file,
the column and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Literal, Mapping, Sequence, Tuple, overload

import numpy as np

from figaroh.data.source import DataSource, Session
from figaroh.data.text_csv import csv_rows, numeric_rows, read_csv_text
from figaroh.data.trajectory_fields import (
    JOINT_TORQUE,
    TrajectoryDataError,
    _fmt_names,
    _per_joint,
)

__all__ = ["CSV_META_PREFIX"]

#: First characters of the metadata line.
CSV_META_PREFIX = "# figaroh-trajectory:"


def _read_csv_table(p: Path) -> Tuple[Dict[str, Any], List[str], np.ndarray]:
    """``(metadata, header, (N, columns) table)`` of a trajectory CSV file."""
    if not p.is_file():
        raise FileNotFoundError(f"trajectory CSV {str(p)!r} does not exist")
    lines = read_csv_text(p, "trajectory CSV").splitlines()
    meta: Dict[str, Any] = {}
    i = 0
    while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()):
        if lines[i].startswith(CSV_META_PREFIX):
            try:
                meta = json.loads(lines[i][len(CSV_META_PREFIX) :])
            except json.JSONDecodeError as exc:
                raise TrajectoryDataError(
                    f"{p}: the metadata line is not valid JSON ({exc}); rewrite the file "
                    "with TrajectoryData.to_csv"
                ) from exc
        i += 1
    if i >= len(lines):
        raise TrajectoryDataError(f"{p}: no header row (expected 't,q:<joint>,...')")
    (cells,) = csv_rows(p, [lines[i]], "trajectory CSV", first_line=i + 1)
    header = [c.strip() for c in cells]
    body = "\n".join(lines[i + 1 :])
    try:
        table = numeric_rows(p, body, 0, "trajectory CSV")
    except ValueError as exc:
        raise TrajectoryDataError(str(exc)) from exc
    if table.size == 0:
        table = np.zeros((0, len(header)))
    if table.shape[1] != len(header):
        raise TrajectoryDataError(
            f"{p}: the header names {len(header)} columns but the rows have {table.shape[1]}"
        )
    return meta, header, table


@overload
def _csv_signal(
    p: Path,
    table: np.ndarray,
    col: Mapping[str, int],
    names: Sequence[str],
    sig: str,
    required: Literal[True],
) -> np.ndarray: ...


@overload
def _csv_signal(
    p: Path,
    table: np.ndarray,
    col: Mapping[str, int],
    names: Sequence[str],
    sig: str,
    required: bool,
) -> np.ndarray | None: ...


def _csv_signal(
    p: Path,
    table: np.ndarray,
    col: Mapping[str, int],
    names: Sequence[str],
    sig: str,
    required: bool,
) -> np.ndarray | None:
    """The ``sig:<joint>`` columns in joint order (None when absent and optional)."""
    want = [f"{sig}:{nm}" for nm in names]
    have = [c for c in want if c in col]
    if not have and not required:
        return None
    missing = [c for c in want if c not in col]
    if missing:
        raise TrajectoryDataError(
            f"{sig}: {p} is missing columns {_fmt_names(missing)} (joints {_fmt_names(names)})",
            sig,
        )
    return table[:, [col[c] for c in want]]


def _csv_metadata(p: Path, meta: Mapping[str, Any], nm: str, given: Any, n_joints: int) -> Any:
    """A metadata field: the argument when given (it must agree with the file), else the file's."""
    stored = meta.get(nm)
    if given is None:
        return stored if stored not in (None, [], "") else None
    if stored not in (None, [], ""):
        g = _per_joint(nm, given, n_joints, kind=nm.endswith("kind"))
        if list(g) != list(stored):
            raise TrajectoryDataError(
                f"{nm}: {p} declares {stored} but {list(g)} was passed; drop the "
                "argument or convert the data explicitly",
                nm,
            )
    return given


def _csv_joint_names(p: Path, meta: Mapping[str, Any], header: Sequence[str]) -> List[str]:
    """Joint names of a trajectory CSV: the metadata's, else the ``q:<joint>`` columns."""
    names = list(meta.get("joint_names") or [])
    if not names:
        names = [c.split(":", 1)[1] for c in header if c.startswith("q:")]
    if not names:
        raise TrajectoryDataError(
            f"q: {p} has no 'q:<joint>' columns; name the position columns q:<joint>", "q"
        )
    return names


def _csv_effort_labels(
    p: Path, meta: Mapping[str, Any], effort_kind: Any, effort_unit: Any, n_joints: int
) -> Tuple[Any, Any]:
    """``(effort_kind, effort_unit)`` agreed between the file and the arguments (both required)."""
    kind = _csv_metadata(p, meta, "effort_kind", effort_kind, n_joints)
    unit = _csv_metadata(p, meta, "effort_unit", effort_unit, n_joints)
    for nm, val in (("effort_kind", kind), ("effort_unit", unit)):
        if val is None:
            raise TrajectoryDataError(
                f"{nm}: {p} does not declare it; pass {nm}=... (e.g. effort_kind="
                f"'{JOINT_TORQUE}', effort_unit='N·m')",
                nm,
            )
    return kind, unit


def _csv_mask(p: Path, table: np.ndarray, col: Mapping[str, int]) -> np.ndarray | None:
    """The 0/1 ``mask`` column as bools (None without the column)."""
    if "mask" not in col:
        return None
    m = table[:, col["mask"]]
    bad = np.flatnonzero((m != 0) & (m != 1))
    if bad.size:
        raise TrajectoryDataError(
            f"mask: {p} column 'mask' must hold 0 or 1, row {int(bad[0])} has {float(m[bad[0]])!r}",
            "mask",
        )
    return m.astype(bool)


def _csv_sample_index(p: Path, table: np.ndarray, col: Mapping[str, int]) -> np.ndarray | None:
    """The integer ``sample_index`` column (None without the column)."""
    if "sample_index" not in col:
        return None
    s = table[:, col["sample_index"]]
    if not np.all(np.isfinite(s)) or np.any(s != np.round(s)):
        raise TrajectoryDataError(
            f"sample_index: {p} column 'sample_index' must hold integers", "sample_index"
        )
    return s.astype(np.int64)


def _csv_source(p: Path, meta: Mapping[str, Any]) -> DataSource:
    """Default source of a CSV: the file hashed, with the recorded session and notes."""
    sess = meta.get("session")
    return DataSource.from_files(
        [p],
        adapter="TrajectoryData.from_csv",
        session=Session(sess["id"], sess.get("date")) if sess else None,
        notes=str(meta.get("source_notes") or ""),
    )
