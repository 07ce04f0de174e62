"""Trajectory data contract: joint signals that carry their own conventions.

A :class:`TrajectoryData` bundles the sampled joint signals used by dynamic
identification with everything needed to interpret them: joint order, clock
(recorded or assumed), signal origin (measured / derived / absent), effort kind
and unit, the valid-sample mask, the source row of every sample and the source
files. It converts losslessly to and from the legacy dict returned by
``BaseIdentification.load_trajectory_data()``.

Conventions:

* ``t`` is in seconds [s]; ``q`` in [rad] (revolute) or [m] (prismatic);
  ``dq`` in [rad/s] or [m/s]; ``ddq`` in [rad/s²] or [m/s²].
* ``effort`` is joint torque [N·m] on revolute joints and joint force [N] on
  prismatic joints, unless ``effort_kind`` says it is a drive-side signal
  (motor current, motor torque before reduction, load fraction).
* Signals are ``(n_samples, n_joints)`` arrays; the identification regressor
  stacks them **joint-major** (all samples of joint 1, then joint 2, …), see
  :meth:`TrajectoryData.stacked_effort`.
"""

from __future__ import annotations

import io
import json
import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple, Union, cast

import numpy as np

from figaroh.data.source import DataSource, atomic_write_text
from figaroh.data.trajectory_csv import (
    CSV_META_PREFIX,
    _csv_effort_labels,
    _csv_joint_names,
    _csv_mask,
    _csv_sample_index,
    _csv_signal,
    _csv_source,
    _read_csv_table,
)
from figaroh.data.trajectory_fields import (
    CLOCKS,
    DRIVE_KINDS,
    EFFORT_KINDS,
    FORCE_UNITS,
    JOINT_FORCE,
    JOINT_TORQUE,
    LOAD_FRACTION,
    MOTOR_CURRENT,
    MOTOR_TORQUE,
    TORQUE_UNITS,
    TrajectoryDataError,
    _as_signal,
    _check_joint_names,
    _check_mask,
    _check_origin,
    _check_sample_index,
    _check_time,
    _fmt_names,
    _per_joint,
    _time_and_clock,
)

logger = logging.getLogger(__name__)

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
    "TrajectoryData",
    "TrajectoryDataError",
]

_LEGACY_KEYS = {
    "t": "timestamps",
    "q": "positions",
    "dq": "velocities",
    "ddq": "accelerations",
    "effort": "torques",
}
_CSV_FORMAT_VERSION = 1
_SIGNALS = ("q", "dq", "ddq", "effort", "effort_raw")


@dataclass(frozen=True, eq=False)
class TrajectoryData:
    """Sampled joint trajectory with its conventions attached.

    Arrays are copied and made read-only at construction; every transformation
    (:meth:`with_mask`, :meth:`converted`, :meth:`select_joints`) returns a new,
    re-validated object.

    Attributes:
        t: (n,) sample times [s], finite and strictly increasing (n ≥ 2).
        joint_names: Joint names, the column order of every signal.
        q: (n, nj) joint positions [rad] or [m].
        effort: (n, nj) joint effort in ``effort_unit``.
        effort_kind: Per-joint effort kind (a single string is broadcast);
            one of :data:`EFFORT_KINDS`.
        effort_unit: Per-joint unit string (a single string is broadcast).
        clock: ``"recorded"`` (timestamps from the recorder) or ``"assumed"``
            (reconstructed from a nominal sample period).
        dq: (n, nj) joint velocities [rad/s] or [m/s], or None (to be derived).
        ddq: (n, nj) joint accelerations [rad/s²] or [m/s²], or None.
        origin: Signal → ``"measured"``, ``"derived:<method>"`` or ``"absent"``.
            Defaults: ``q`` measured, ``dq``/``ddq`` measured when given else
            absent; entries given here override the defaults.
        effort_conversion: Steps applied to the recorded signal to obtain
            ``effort`` (``""`` if none).
        effort_raw: (n, nj) recorded signal before conversion, or None.
        effort_raw_kind: Per-joint kind of ``effort_raw``.
        effort_raw_unit: Per-joint unit of ``effort_raw``.
        mask: (n,) bool, True for valid samples (default all True).
        sample_index: (n,) strictly increasing ints, source row of each sample
            (default ``arange(n)``).
        source: Files and recording the data came from.

    Raises:
        TrajectoryDataError: (a ``ValueError``) on any malformed field.
    """

    t: np.ndarray
    joint_names: Tuple[str, ...]
    q: np.ndarray
    effort: np.ndarray
    effort_kind: Union[str, Sequence[str]]
    effort_unit: Union[str, Sequence[str]]
    clock: str = "recorded"
    dq: np.ndarray | None = None
    ddq: np.ndarray | None = None
    origin: Dict[str, str] = field(default_factory=dict)
    effort_conversion: str = ""
    effort_raw: np.ndarray | None = None
    effort_raw_kind: Union[str, Sequence[str]] = ()
    effort_raw_unit: Union[str, Sequence[str]] = ()
    mask: np.ndarray | None = None
    sample_index: np.ndarray | Sequence[int] | None = None
    source: DataSource = field(default_factory=DataSource)

    # ------------------------------------------------------------------
    def __post_init__(self) -> None:
        setv = object.__setattr__

        t = _check_time(self.t)
        t.setflags(write=False)
        setv(self, "t", t)
        n = t.size

        names = _check_joint_names(self.joint_names)
        setv(self, "joint_names", names)
        nj = len(names)

        if self.clock not in CLOCKS:
            raise TrajectoryDataError(
                f"clock: must be one of {CLOCKS}, not {self.clock!r}", "clock"
            )

        for sig in ("q", "effort"):
            if getattr(self, sig) is None:
                raise TrajectoryDataError(
                    f"{sig}: is required (an (n_samples, n_joints) array)", sig
                )
        for sig in _SIGNALS:
            val = getattr(self, sig)
            if val is not None:
                setv(self, sig, _as_signal(sig, val, n, names))

        setv(self, "effort_kind", _per_joint("effort_kind", self.effort_kind, nj, kind=True))
        setv(self, "effort_unit", _per_joint("effort_unit", self.effort_unit, nj, kind=False))
        self._set_raw_effort_labels(nj)

        if not isinstance(self.effort_conversion, str):
            raise TrajectoryDataError(
                "effort_conversion: must be a string describing the conversion steps",
                "effort_conversion",
            )

        # mask
        mask = _check_mask(self.mask, n)
        mask.setflags(write=False)
        setv(self, "mask", mask)

        # sample index
        sidx = _check_sample_index(self.sample_index, n)
        sidx.setflags(write=False)
        setv(self, "sample_index", sidx)

        # origin
        origin = _check_origin(self.origin, self.dq is not None, self.ddq is not None)
        setv(self, "origin", origin)

        if self.source is None:
            setv(self, "source", DataSource())
        elif not isinstance(self.source, DataSource):
            raise TrajectoryDataError(
                f"source: must be a DataSource, got {type(self.source).__name__}", "source"
            )

    def _set_raw_effort_labels(self, nj: int) -> None:
        """Per-joint kind/unit labels of ``effort_raw`` (empty without raw effort)."""
        setv = object.__setattr__
        if self.effort_raw is not None:
            setv(
                self,
                "effort_raw_kind",
                _per_joint("effort_raw_kind", self.effort_raw_kind, nj, kind=True),
            )
            setv(
                self,
                "effort_raw_unit",
                _per_joint("effort_raw_unit", self.effort_raw_unit, nj, kind=False),
            )
        else:
            for nm in ("effort_raw_kind", "effort_raw_unit"):
                val = getattr(self, nm)
                if isinstance(val, str):
                    setv(self, nm, (val,) * nj if val else ())
                else:
                    setv(self, nm, tuple(val or ()))

    # ------------------------------------------------------------------
    @property
    def n_samples(self) -> int:
        """Number of samples ``n = len(t)``."""
        return int(self.t.size)

    @property
    def n_joints(self) -> int:
        """Number of joints ``nj = len(joint_names)``."""
        return len(self.joint_names)

    @property
    def _valid(self) -> np.ndarray:
        # __post_init__ replaced a None mask by the all-True (n,) array
        return cast(np.ndarray, self.mask)

    @property
    def _rows(self) -> np.ndarray:
        # __post_init__ replaced the sample index by a validated (n,) int array
        return cast(np.ndarray, self.sample_index)

    def __repr__(self) -> str:
        kinds = sorted(set(self.effort_kind))
        units = sorted(set(self.effort_unit))
        masked = int(self.n_samples - np.count_nonzero(self._valid))
        return (
            f"TrajectoryData(n_samples={self.n_samples}, joints={_fmt_names(self.joint_names, 4)}, "
            f"clock={self.clock!r}, span={self.t[-1] - self.t[0]:.6g} s, effort={kinds} "
            f"in {units}, dq={self.origin.get('dq')}, ddq={self.origin.get('ddq')}, "
            f"masked={masked})"
        )

    # ------------------------------------------------------------------
    # legacy representation
    # ------------------------------------------------------------------
    @classmethod
    def from_legacy(
        cls,
        raw: Mapping[str, Any],
        joint_names: Sequence[str],
        *,
        effort_kind: Union[str, Sequence[str]],
        effort_unit: Union[str, Sequence[str]],
        clock: str = "recorded",
        source: DataSource | None = None,
        origin: Mapping[str, str] | None = None,
        sample_index: Sequence[int] | None = None,
    ) -> TrajectoryData:
        """Build from the legacy ``load_trajectory_data()`` dict.

        The dict holds ``timestamps`` ((n, 1) or (n,) [s]), ``positions``,
        ``velocities`` (may be None), ``accelerations`` (may be None) and
        ``torques``. It says nothing about the effort, so ``effort_kind`` and
        ``effort_unit`` are mandatory.

        Args:
            raw: The legacy dict.
            joint_names: Column order of the arrays.
            effort_kind: Kind of ``torques`` (string or one per joint).
            effort_unit: Unit of ``torques`` (string or one per joint).
            clock: ``"recorded"`` or ``"assumed"``.
            source: Origin of the data.
            origin: Signal origins overriding the defaults.
            sample_index: Source row of each sample.

        Returns:
            The validated trajectory.

        Raises:
            TrajectoryDataError: a key is missing or an array is malformed; the
                message names the legacy key and the field.
        """
        if not isinstance(raw, Mapping):
            raise TrajectoryDataError(
                f"legacy dict: expected a mapping with timestamps/positions/velocities/"
                f"accelerations/torques, got {type(raw).__name__}"
            )
        missing = [k for k in ("timestamps", "positions", "torques") if raw.get(k) is None]
        if missing:
            first = {"timestamps": "t", "positions": "q", "torques": "effort"}[missing[0]]
            raise TrajectoryDataError(
                f"legacy dict: missing or None entries {missing} (field {first!r}); the dict "
                "needs 'timestamps' [s], 'positions' and 'torques' (and optionally "
                "'velocities', 'accelerations')",
                first,
            )
        try:
            return cls(
                t=raw["timestamps"],
                joint_names=tuple(joint_names),
                q=raw["positions"],
                effort=raw["torques"],
                effort_kind=effort_kind,
                effort_unit=effort_unit,
                clock=clock,
                dq=raw.get("velocities"),
                ddq=raw.get("accelerations"),
                origin=dict(origin or {}),
                sample_index=sample_index,
                source=source if source is not None else DataSource(),
            )
        except TrajectoryDataError as exc:
            legacy = _LEGACY_KEYS.get(exc.field)
            if legacy is None:
                raise
            raise TrajectoryDataError(f"legacy dict entry {legacy!r} -> {exc}", exc.field) from exc

    def to_legacy(self) -> Dict[str, np.ndarray | None]:
        """Legacy dict of **every** sample (the mask is applied later to regressor rows).

        Returns:
            ``{"timestamps": (n, 1), "positions": q, "velocities": dq or None,
            "accelerations": ddq or None, "torques": effort}``; writable copies.
        """

        def cp(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.array(a, dtype=float)

        return {
            "timestamps": np.array(self.t, dtype=float).reshape(-1, 1),
            "positions": cp(self.q),
            "velocities": cp(self.dq),
            "accelerations": cp(self.ddq),
            "torques": cp(self.effort),
        }

    # ------------------------------------------------------------------
    # construction from arrays
    # ------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        joint_names: Sequence[str],
        q: Any,
        effort: Any,
        *,
        effort_kind: Union[str, Sequence[str]],
        effort_unit: Union[str, Sequence[str]],
        t: Any = None,
        sample_period: float | None = None,
        t0: float = 0.0,
        dq: Any = None,
        ddq: Any = None,
        mask: Any = None,
        origin: Mapping[str, str] | None = None,
        source: DataSource | None = None,
    ) -> TrajectoryData:
        """Build from arrays, with recorded timestamps or an assumed clock.

        Exactly one of ``t`` and ``sample_period`` must be given. With
        ``sample_period`` = Δt [s] the clock is ``"assumed"`` and
        ``t_k = t0 + k·Δt``.

        Args:
            joint_names: Column order.
            q: (n, nj) positions [rad] or [m].
            effort: (n, nj) effort in ``effort_unit``.
            effort_kind: Effort kind (string or one per joint).
            effort_unit: Effort unit (string or one per joint).
            t: (n,) recorded timestamps [s].
            sample_period: Nominal sample period Δt [s] (> 0).
            t0: Start time [s] of an assumed clock.
            dq: (n, nj) velocities [rad/s] or [m/s], optional.
            ddq: (n, nj) accelerations [rad/s²] or [m/s²], optional.
            mask: (n,) bool valid-sample flags.
            origin: Signal origins overriding the defaults.
            source: Origin of the data.

        Returns:
            The validated trajectory.

        Raises:
            TrajectoryDataError: both or neither of ``t``/``sample_period``, a
                non-positive period, or any malformed field.
        """
        t, clock = _time_and_clock(t, sample_period, t0, q)
        return cls(
            t=t,
            joint_names=tuple(joint_names),
            q=q,
            effort=effort,
            effort_kind=effort_kind,
            effort_unit=effort_unit,
            clock=clock,
            dq=dq,
            ddq=ddq,
            origin=dict(origin or {}),
            mask=mask,
            source=source if source is not None else DataSource(),
        )

    # ------------------------------------------------------------------
    # stacking and masks
    # ------------------------------------------------------------------
    def stacked_effort(self, effort: np.ndarray | None = None) -> np.ndarray:
        """Joint-major stacked effort ``effort.T.flatten()`` (regressor row order).

        Row ``j·n + i`` holds sample ``i`` of joint ``j``.

        Args:
            effort: (n, nj) array to stack instead of ``self.effort``.

        Returns:
            (n·nj,) vector.
        """
        e = self.effort if effort is None else np.asarray(effort, dtype=float)
        if e.ndim == 1 and self.n_joints == 1:
            e = e.reshape(-1, 1)
        if e.ndim != 2 or e.shape[1] != self.n_joints:
            raise TrajectoryDataError(
                f"effort: expected an (n_samples, {self.n_joints}) array to stack, got shape "
                f"{e.shape}",
                "effort",
            )
        return e.T.flatten()

    def stacked_mask(self) -> np.ndarray:
        """``np.tile(mask, nj)``: the mask aligned with :meth:`stacked_effort`."""
        return np.tile(self._valid, self.n_joints)

    def with_mask(self, mask: Any) -> TrajectoryData:
        """Copy with a new bool (n,) valid-sample mask."""
        return replace(self, mask=mask)

    def select_joints(self, names: Sequence[str]) -> TrajectoryData:
        """Copy restricted to (and reordered as) ``names``.

        Args:
            names: Joint names, a subset of ``joint_names`` in the wanted order.

        Returns:
            The new trajectory.

        Raises:
            TrajectoryDataError: unknown joint names (listing the known ones).
        """
        if isinstance(names, str):
            names = [names]
        names = list(names)
        unknown = [nm for nm in names if nm not in self.joint_names]
        if unknown:
            raise TrajectoryDataError(
                f"joint_names: unknown joint(s) {unknown}; this trajectory has "
                f"{list(self.joint_names)}",
                "joint_names",
            )
        idx = [self.joint_names.index(nm) for nm in names]

        def cols(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[:, idx]

        def sel(tup: Sequence[str]) -> Sequence[str]:
            return tuple(tup[i] for i in idx) if len(tup) == self.n_joints else tup

        return replace(
            self,
            joint_names=tuple(names),
            q=self.q[:, idx],
            dq=cols(self.dq),
            ddq=cols(self.ddq),
            effort=self.effort[:, idx],
            effort_raw=cols(self.effort_raw),
            effort_kind=sel(self.effort_kind),
            effort_unit=sel(self.effort_unit),
            effort_raw_kind=sel(self.effort_raw_kind),
            effort_raw_unit=sel(self.effort_raw_unit),
        )

    # ------------------------------------------------------------------
    # effort conversion and checks
    # ------------------------------------------------------------------
    def converted(
        self,
        scale: Union[float, Sequence[float], np.ndarray],
        offset: Union[float, Sequence[float], np.ndarray] = 0.0,
        *,
        effort_kind: Union[str, Sequence[str]],
        effort_unit: Union[str, Sequence[str]],
        description: str,
    ) -> TrajectoryData:
        """Copy with a converted effort ``effort·scale + offset`` (per joint).

        The recorded signal is kept in ``effort_raw`` (with its kind and unit);
        a second conversion keeps the *first* recorded signal. The step is
        appended to ``effort_conversion``.

        Args:
            scale: Scalar or (nj,) gain, e.g. reduction ratio × torque constant
                [N·m/A] to turn motor current [A] into joint torque [N·m].
            offset: Scalar or (nj,) offset in the new unit.
            effort_kind: Kind after conversion.
            effort_unit: Unit after conversion.
            description: Human-readable description of this step.

        Returns:
            The converted trajectory.

        Raises:
            TrajectoryDataError: non-finite or mis-shaped scale/offset, or an
                empty description.
        """
        nj = self.n_joints
        coeffs = []
        for nm, v in (("scale", scale), ("offset", offset)):
            a = np.asarray(v, dtype=float)
            if a.ndim > 1 or (a.ndim == 1 and a.size != nj):
                raise TrajectoryDataError(
                    f"{nm}: expected a scalar or one value per joint ({nj}: "
                    f"{_fmt_names(self.joint_names)}), got shape {a.shape}",
                    nm,
                )
            if not np.all(np.isfinite(a)):
                raise TrajectoryDataError(f"{nm}: must be finite, got {a!r}", nm)
            coeffs.append(a)
        if not isinstance(description, str) or not description.strip():
            raise TrajectoryDataError(
                "description: describe the conversion (it is recorded in effort_conversion)",
                "description",
            )
        new_effort = self.effort * coeffs[0] + coeffs[1]
        conv = f"{self.effort_conversion}; {description}" if self.effort_conversion else description
        if self.effort_raw is None:
            raw, raw_kind, raw_unit = self.effort, self.effort_kind, self.effort_unit
        else:
            raw, raw_kind, raw_unit = self.effort_raw, self.effort_raw_kind, self.effort_raw_unit
        return replace(
            self,
            effort=new_effort,
            effort_kind=effort_kind,
            effort_unit=effort_unit,
            effort_conversion=conv,
            effort_raw=raw,
            effort_raw_kind=raw_kind,
            effort_raw_unit=raw_unit,
        )

    def check_effort(self, model: Any, drive_gain_joints: Iterable[str] = ()) -> None:
        """Check that ``effort`` is joint effort for every joint of ``model``.

        Accepted per joint: ``joint_torque`` in a torque unit
        (:data:`TORQUE_UNITS`) on a revolute joint (Pinocchio shortname starting
        with ``JointModelR``); ``joint_force`` in ``N`` on a prismatic joint
        (shortname starting with ``JointModelP``, planar joints excluded); any
        drive kind on a joint listed in ``drive_gain_joints``.

        Args:
            model: ``pinocchio.Model``.
            drive_gain_joints: Joints whose drive gain is declared, so a
                drive-side effort can be converted downstream.

        Raises:
            TrajectoryDataError: ``"Effort is not joint effort for: a; b; …"``.
        """
        gains = set(drive_gain_joints or ())
        problems: List[str] = []
        for name, kind, unit in zip(
            self.joint_names, self.effort_kind, self.effort_unit, strict=True
        ):
            if not model.existJointName(name):
                problems.append(f"{name}: not in the model")
                continue
            short = model.joints[model.getJointId(name)].shortname()
            if short.startswith("JointModelR"):
                jtype = "revolute"
            elif short.startswith("JointModelP") and not short.startswith("JointModelPlanar"):
                jtype = "prismatic"
            else:
                jtype = short
            if kind == JOINT_TORQUE and unit in TORQUE_UNITS and jtype == "revolute":
                continue
            if kind == JOINT_FORCE and unit in FORCE_UNITS and jtype == "prismatic":
                continue
            if kind in DRIVE_KINDS and name in gains:
                continue
            msg = f"{name} ({jtype}): {kind} in {unit}"
            if kind in DRIVE_KINDS:
                msg += " (declare a drive gain for this joint, or convert it)"
            problems.append(msg)
        if problems:
            raise TrajectoryDataError(
                "Effort is not joint effort for: " + "; ".join(problems), "effort_kind"
            )

    # ------------------------------------------------------------------
    # CSV
    # ------------------------------------------------------------------
    def _csv_meta(self) -> Dict[str, Any]:
        src = self.source
        return {
            "format": _CSV_FORMAT_VERSION,
            "joint_names": list(self.joint_names),
            "effort_kind": list(self.effort_kind),
            "effort_unit": list(self.effort_unit),
            "clock": self.clock,
            "origin": dict(self.origin),
            "effort_conversion": self.effort_conversion,
            "effort_raw_kind": list(self.effort_raw_kind),
            "effort_raw_unit": list(self.effort_raw_unit),
            "session": None
            if src.session is None
            else {"id": src.session.id, "date": src.session.date},
            "source_files": dict(src.files),
            "source_adapter": src.adapter,
            "source_notes": src.notes,
        }

    def to_csv(self, path: Union[str, os.PathLike]) -> str:
        """Write every sample to a CSV file (atomic write).

        Layout: one metadata line ``# figaroh-trajectory: {json}`` (joint names,
        effort kinds/units, clock, origins, conversion, source), then a header
        ``t, q:<joint>…, [dq:<joint>…], [ddq:<joint>…], effort:<joint>…,
        [effort_raw:<joint>…], mask, sample_index`` and one row per sample.
        Floats are written with 17 significant digits, so a round trip through
        :meth:`from_csv` is exact.

        Args:
            path: Destination file (its folder must exist).

        Returns:
            The written path.

        Raises:
            TrajectoryDataError: a joint name contains a comma or a line break.
        """
        for nm in self.joint_names:
            if any(c in nm for c in ',\n\r"') or nm != nm.strip():
                raise TrajectoryDataError(
                    f"joint_names: {nm!r} cannot be written as a CSV column name (no commas, "
                    "quotes, line breaks or surrounding spaces)",
                    "joint_names",
                )
        cols: List[str] = ["t"]
        blocks: List[np.ndarray] = [self.t.reshape(-1, 1)]
        for sig in _SIGNALS:
            arr = getattr(self, sig)
            if arr is None:
                continue
            cols.extend(f"{sig}:{nm}" for nm in self.joint_names)
            blocks.append(arr)
        cols.extend(["mask", "sample_index"])
        blocks.append(self._valid.reshape(-1, 1).astype(float))
        blocks.append(self._rows.reshape(-1, 1).astype(float))
        table = np.hstack(blocks)
        fmt = ["%.17g"] * (len(cols) - 2) + ["%d", "%d"]
        buf = io.StringIO()
        buf.write(f"{CSV_META_PREFIX} {json.dumps(self._csv_meta(), allow_nan=False)}\n")
        np.savetxt(buf, table, fmt=fmt, delimiter=",", header=",".join(cols), comments="")
        out = atomic_write_text(path, buf.getvalue())
        logger.debug("wrote %d samples of %d joints to %s", self.n_samples, self.n_joints, out)
        return out

    @classmethod
    def from_csv(
        cls,
        path: Union[str, os.PathLike],
        joint_names: Sequence[str] | None = None,
        *,
        effort_kind: Union[str, Sequence[str]] | None = None,
        effort_unit: Union[str, Sequence[str]] | None = None,
        clock: str | None = None,
        source: DataSource | None = None,
    ) -> TrajectoryData:
        """Read a trajectory CSV written by :meth:`to_csv` (or laid out the same way).

        Required columns: ``t`` [s], ``q:<joint>`` and ``effort:<joint>`` for
        every joint; optional ``dq:<joint>``, ``ddq:<joint>``,
        ``effort_raw:<joint>``, ``mask`` (0/1) and ``sample_index``. A file
        without the metadata line must be given ``effort_kind`` and
        ``effort_unit``; when both the file and the arguments declare them they
        must agree.

        Args:
            path: CSV file.
            joint_names: Joints to keep, in this order (default: all, in file order).
            effort_kind: Effort kind, if the file does not declare it.
            effort_unit: Effort unit, if the file does not declare it.
            clock: Clock, if the file does not declare it (default ``"recorded"``).
            source: Data source; default hashes the file with adapter
                ``"TrajectoryData.from_csv"`` (keeping the recorded session).

        Returns:
            The validated trajectory.

        Raises:
            FileNotFoundError: the file does not exist.
            TrajectoryDataError: missing columns, unparsable cells, conflicting or
                missing metadata, unknown joint names, or malformed data.
        """
        p = Path(path)
        meta, header, table = _read_csv_table(p)
        col = {c: k for k, c in enumerate(header)}
        if "t" not in col:
            raise TrajectoryDataError(
                f"t: {p} has no 't' column (timestamps in seconds); columns are "
                f"{_fmt_names(header)}",
                "t",
            )
        names = _csv_joint_names(p, meta, header)
        q = _csv_signal(p, table, col, names, "q", required=True)
        effort = _csv_signal(p, table, col, names, "effort", required=True)
        optional = {
            sig: _csv_signal(p, table, col, names, sig, required=False)
            for sig in ("dq", "ddq", "effort_raw")
        }
        kind, unit = _csv_effort_labels(p, meta, effort_kind, effort_unit, len(names))
        if clock is not None and meta.get("clock") not in (None, clock):
            raise TrajectoryDataError(
                f"clock: {p} declares {meta.get('clock')!r} but {clock!r} was passed", "clock"
            )
        data = cls(
            t=table[:, col["t"]],
            joint_names=tuple(names),
            q=q,
            effort=effort,
            effort_kind=kind,
            effort_unit=unit,
            clock=clock or meta.get("clock") or "recorded",
            dq=optional["dq"],
            ddq=optional["ddq"],
            origin=dict(meta.get("origin") or {}),
            effort_conversion=str(meta.get("effort_conversion") or ""),
            effort_raw=optional["effort_raw"],
            effort_raw_kind=tuple(meta.get("effort_raw_kind") or ()),
            effort_raw_unit=tuple(meta.get("effort_raw_unit") or ()),
            mask=_csv_mask(p, table, col),
            sample_index=_csv_sample_index(p, table, col),
            source=source if source is not None else _csv_source(p, meta),
        )
        if joint_names is not None:
            data = data.select_joints(joint_names)
        return data
