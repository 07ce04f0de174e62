"""The fields of a trajectory: effort kinds, units, clocks, and their checks.

The constants name the conventions a :class:`~figaroh.data.trajectory.TrajectoryData`
carries; the ``_check_*`` helpers validate one field each (vectorised, no loop
over samples) and raise :class:`TrajectoryDataError` naming the field, the
first bad row and the fix. :mod:`figaroh.data.trajectory` re-exports the
public names.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence, Tuple

import numpy as np

from figaroh.errors import FigarohError

__all__ = [
    "CLOCKS",
    "DRIVE_KINDS",
    "EFFORT_KINDS",
    "FORCE_UNITS",
    "JOINT_FORCE",
    "JOINT_TORQUE",
    "LOAD_FRACTION",
    "MOTOR_CURRENT",
    "MOTOR_TORQUE",
    "TORQUE_UNITS",
    "TrajectoryDataError",
    "joint_effort_labels",
]

JOINT_TORQUE = "joint_torque"
"""Effort kind: torque at a revolute joint [N·m]."""
JOINT_FORCE = "joint_force"
"""Effort kind: force at a prismatic joint [N]."""
MOTOR_CURRENT = "motor_current"
"""Effort kind: motor current (drive side, needs a drive gain) [A]."""
MOTOR_TORQUE = "motor_torque"
"""Effort kind: motor torque before the reduction (drive side) [N·m]."""
LOAD_FRACTION = "load_fraction"
"""Effort kind: load as a fraction of the drive's nominal load (drive side) [1]."""

DRIVE_KINDS = frozenset({MOTOR_CURRENT, MOTOR_TORQUE, LOAD_FRACTION})
EFFORT_KINDS = (JOINT_TORQUE, JOINT_FORCE, MOTOR_CURRENT, MOTOR_TORQUE, LOAD_FRACTION)
TORQUE_UNITS = frozenset({"N·m", "N.m", "Nm", "N m"})
FORCE_UNITS = frozenset({"N"})
CLOCKS = ("recorded", "assumed")

_ORIGIN_PLAIN = ("measured", "absent")


def joint_effort_labels(model: Any, joints: Sequence[str]) -> Tuple[list[str], list[str]]:
    """Effort kind and unit per joint: torque [N·m] (revolute), force [N] (prismatic).

    Args:
        model: ``pinocchio.Model`` (joint types), or None to assume revolute joints.
        joints: Joint names.

    Returns:
        ``(kinds, units)``, one entry per joint.
    """
    kinds, units = [], []
    for name in joints:
        short = model.joints[model.getJointId(name)].shortname() if model is not None else ""
        prismatic = short.startswith("JointModelP") and not short.startswith("JointModelPlanar")
        kinds.append(JOINT_FORCE if prismatic else JOINT_TORQUE)
        units.append("N" if prismatic else "N·m")
    return kinds, units


class TrajectoryDataError(FigarohError, ValueError):
    """A trajectory dataset is malformed; the message names the field and the fix.

    Subclasses ``ValueError`` so existing ``except ValueError`` clauses keep
    working.

    Attributes:
        field: Name of the offending field (``"t"``, ``"q"``, ``"mask"``, …) or
            ``""`` when the problem is not tied to one field.
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


# --------------------------------------------------------------------------
# validation helpers (vectorised: no loops over samples)
# --------------------------------------------------------------------------


def _fmt_names(names: Sequence[str], limit: int = 8) -> str:
    names = list(names)
    if len(names) <= limit:
        return str(names)
    return str(names[:limit])[:-1] + f", ... ({len(names)} in all)]"


def _check_finite(name: str, a: np.ndarray, columns: Sequence[str]) -> None:
    """Raise when ``a`` (n, k) holds NaN/inf, naming the first bad row and its column."""
    bad = ~np.isfinite(a)
    if not bad.any():
        return
    bad_rows = np.flatnonzero(bad.any(axis=1))
    row = int(bad_rows[0])
    col = int(np.flatnonzero(bad[row])[0])
    bad_cols = [columns[c] for c in np.flatnonzero(bad.any(axis=0)).tolist()]
    raise TrajectoryDataError(
        f"{name}: non-finite value {float(a[row, col])!r} in column {col} "
        f"({columns[col]!r}) at row {row} (first bad row); {int(bad.sum())} non-finite "
        f"entries in {len(bad_rows)} rows, "
        f"columns {_fmt_names(bad_cols)}. Interpolate or cut those samples before building "
        f"the trajectory (masked samples still pass through the filters, so they must be "
        f"finite).",
        name,
    )


def _check_time(t: Any, name: str = "t") -> np.ndarray:
    if t is None:
        raise TrajectoryDataError(
            f"{name}: timestamps are missing; pass the sample times in seconds (shape (n,)), "
            "or build the trajectory with TrajectoryData.from_arrays(..., sample_period=dt) "
            "to use an assumed clock (clock='assumed')",
            name,
        )
    try:
        t = np.array(t, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise TrajectoryDataError(
            f"{name}: cannot convert the timestamps to a float array ({exc})", name
        ) from exc
    if t.size < 2:
        raise TrajectoryDataError(
            f"{name}: needs at least 2 samples, got {t.size}; a trajectory needs a time span",
            name,
        )
    _check_finite(name, t.reshape(-1, 1), [name])
    dt = np.diff(t)
    bad = np.flatnonzero(dt <= 0)
    if bad.size:
        i = int(bad[0])
        raise TrajectoryDataError(
            f"{name}: time must be strictly increasing, but {name}[{i + 1}]={float(t[i + 1])!r} <= "
            f"{name}[{i}]={float(t[i])!r} ({bad.size} non-increasing steps in all, first at row "
            f"{i + 1}); sort the samples, drop duplicated timestamps, or fix clock wrap-arounds",
            name,
        )
    return t


def _as_signal(name: str, a: Any, n: int, joint_names: Tuple[str, ...]) -> np.ndarray:
    nj = len(joint_names)
    try:
        arr = np.array(a, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TrajectoryDataError(
            f"{name}: cannot convert to a float array ({exc}); pass an (n_samples, n_joints) "
            "array of numbers",
            name,
        ) from exc
    if arr.ndim == 1 and nj == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        hint = "; a 1-D array is only accepted for a single joint" if arr.ndim == 1 else ""
        raise TrajectoryDataError(
            f"{name}: expected shape (n_samples, n_joints) = ({n}, {nj}) with columns "
            f"{_fmt_names(joint_names)}, got shape {arr.shape}{hint}",
            name,
        )
    if arr.shape[0] != n:
        raise TrajectoryDataError(
            f"{name}: has {arr.shape[0]} samples (rows) but t has {n}; every signal needs one "
            "row per timestamp (cut or resample the signals to the same sample count)",
            name,
        )
    if arr.shape[1] != nj:
        raise TrajectoryDataError(
            f"{name}: expected {nj} columns, one per joint {_fmt_names(joint_names)}, got "
            f"{arr.shape[1]}; check joint_names or the column selection",
            name,
        )
    _check_finite(name, arr, joint_names)
    arr.setflags(write=False)
    return arr


def _per_joint(name: str, value: Any, nj: int, *, kind: bool) -> Tuple[str, ...]:
    if isinstance(value, str):
        out = (value,) * nj
    else:
        try:
            out = tuple(value)
        except TypeError as exc:
            raise TrajectoryDataError(
                f"{name}: expected a string or a sequence of {nj} strings, got "
                f"{type(value).__name__}",
                name,
            ) from exc
        if len(out) != nj:
            raise TrajectoryDataError(
                f"{name}: expected one entry per joint ({nj}), got {len(out)}; pass a single "
                "string to use the same value for every joint",
                name,
            )
    for v in out:
        if not isinstance(v, str) or not v:
            raise TrajectoryDataError(f"{name}: entries must be non-empty strings, got {v!r}", name)
        if kind and v not in EFFORT_KINDS:
            raise TrajectoryDataError(
                f"{name}: unknown effort kind {v!r}; use one of {list(EFFORT_KINDS)}", name
            )
    return out


# --------------------------------------------------------------------------
# TrajectoryData
# --------------------------------------------------------------------------


def _check_joint_names(names: Any) -> Tuple[str, ...]:
    """``joint_names`` as a tuple of distinct non-empty strings."""
    if isinstance(names, str):
        names = (names,)
    try:
        names = tuple(names)
    except TypeError as exc:
        raise TrajectoryDataError(
            "joint_names: expected a sequence of joint names", "joint_names"
        ) from exc
    if not names:
        raise TrajectoryDataError("joint_names: at least one joint is required", "joint_names")
    for nm in names:
        if not isinstance(nm, str) or not nm:
            raise TrajectoryDataError(
                f"joint_names: names must be non-empty strings, got {nm!r}", "joint_names"
            )
    dups = sorted({nm for nm in names if names.count(nm) > 1})
    if dups:
        raise TrajectoryDataError(
            f"joint_names: duplicate joint names {dups}; each column must be a distinct joint",
            "joint_names",
        )
    return names


def _check_mask(mask: Any, n: int) -> np.ndarray:
    """``(n,)`` bool valid-sample mask (all True when ``mask`` is None)."""
    if mask is None:
        mask = np.ones(n, dtype=bool)
    else:
        mask = np.array(mask)
        if mask.dtype != np.bool_:
            raise TrajectoryDataError(
                f"mask: must be a bool array of shape ({n},), got dtype {mask.dtype}; "
                "use mask.astype(bool) if 0/1 values are meant",
                "mask",
            )
        if mask.shape != (n,):
            raise TrajectoryDataError(
                f"mask: expected shape ({n},) (one flag per sample), got {mask.shape}",
                "mask",
            )
    return mask


def _check_sample_index(sample_index: Any, n: int) -> np.ndarray:
    """``(n,)`` strictly increasing source-row index (``arange(n)`` when None)."""
    if sample_index is None:
        sidx = np.arange(n)
    else:
        sidx = np.array(sample_index)
        if sidx.dtype.kind not in "iu":
            raise TrajectoryDataError(
                f"sample_index: must be an integer array, got dtype {sidx.dtype}",
                "sample_index",
            )
        if sidx.shape != (n,):
            raise TrajectoryDataError(
                f"sample_index: expected shape ({n},) (source row of each sample), got "
                f"{sidx.shape}",
                "sample_index",
            )
        bad = np.flatnonzero(np.diff(sidx) <= 0)
        if bad.size:
            i = int(bad[0])
            raise TrajectoryDataError(
                f"sample_index: must be strictly increasing, but sample_index[{i + 1}]="
                f"{int(sidx[i + 1])} <= sample_index[{i}]={int(sidx[i])}",
                "sample_index",
            )
    return sidx


def _check_origin(user: Any, has_dq: bool, has_ddq: bool) -> Dict[str, str]:
    """Signal origins: ``measured``, ``derived:<method>`` or ``absent`` per signal."""
    origin = {
        "q": "measured",
        "dq": "measured" if has_dq else "absent",
        "ddq": "measured" if has_ddq else "absent",
    }
    user = user or {}
    if not isinstance(user, Mapping):
        raise TrajectoryDataError(
            "origin: must map a signal name to 'measured', 'derived:<method>' or 'absent'",
            "origin",
        )
    for key, val in user.items():
        if not isinstance(val, str) or not (
            val in _ORIGIN_PLAIN or (val.startswith("derived:") and len(val) > 8)
        ):
            raise TrajectoryDataError(
                f"origin: {key!r} -> {val!r} is not 'measured', 'derived:<method>' or 'absent'",
                "origin",
            )
        origin[str(key)] = val
    return origin


def _time_and_clock(t: Any, sample_period: Any, t0: float, q: Any) -> Tuple[Any, str]:
    """``(t, "recorded")`` for recorded stamps, else ``(t0 + k·Δt [s], "assumed")``."""
    if t is not None and sample_period is not None:
        raise TrajectoryDataError(
            "t: pass either recorded timestamps t or sample_period, not both", "t"
        )
    clock = "recorded"
    if t is None:
        if sample_period is None:
            _check_time(None)
        dt = float(sample_period)
        if not np.isfinite(dt) or dt <= 0:
            raise TrajectoryDataError(
                f"sample_period: must be a finite positive period in seconds, got {dt!r}",
                "sample_period",
            )
        try:
            n = int(np.shape(q)[0])
        except (IndexError, TypeError) as exc:
            raise TrajectoryDataError("q: expected an (n_samples, n_joints) array", "q") from exc
        t = float(t0) + dt * np.arange(n)
        clock = "assumed"
    return t, clock
