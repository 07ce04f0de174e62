"""Geometric-calibration observations: measured poses of points per posture.

:class:`PoseObservations` is the input of geometric calibration, kept separate
from :class:`~figaroh.data.TrajectoryData`: postures are static, have no
clock, and carry measured point poses instead of efforts.

Pose components follow Pinocchio's RPY convention: ``x, y, z`` [m] and
``phix, phiy, phiz`` [rad] with ``R = Rz(phiz)·Ry(phiy)·Rx(phix)``, expressed
in the measurement ``frame``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, List, Mapping, Sequence, Tuple, Union, cast

import numpy as np

from figaroh.data.source import DataSource
from figaroh.data.text_csv import csv_rows, read_csv_text

logger = logging.getLogger(__name__)

__all__ = ["DOF", "PoseObservations"]

DOF = ("x", "y", "z", "phix", "phiy", "phiz")
_DEFAULT_MEASURABILITY = (True, True, True, False, False, False)


def _rows_str(rows: np.ndarray, limit: int = 10) -> str:
    listed = [int(r) for r in rows]
    if len(listed) <= limit:
        return str(listed)
    return str(listed[:limit])[:-1] + f", ... ({len(listed)} in all)]"


def _check_joint_names(joint_names: Any) -> Tuple[str, ...]:
    """``joint_names`` as a tuple of distinct non-empty strings."""
    names = (joint_names,) if isinstance(joint_names, str) else joint_names
    names = tuple(names)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError("joint_names: expected a non-empty sequence of non-empty strings")
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise ValueError(f"joint_names: duplicate joint names {dups}")
    return names


def _check_postures(q: Any, names: Tuple[str, ...]) -> np.ndarray:
    """``(n_postures, n_joints)`` float joint configurations [rad or m]."""
    try:
        q = np.array(q, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"q: cannot convert to a float array ({exc})") from exc
    if q.ndim == 1 and len(names) == 1:
        q = q.reshape(-1, 1)
    if q.ndim != 2 or q.shape[1] != len(names):
        raise ValueError(
            f"q: expected shape (n_postures, {len(names)}) with columns {list(names)}, "
            f"got {q.shape}"
        )
    if q.shape[0] < 1:
        raise ValueError("q: at least one posture is required")
    return q


def _check_mask(mask: Any, n: int) -> np.ndarray:
    """``(n,)`` bool valid-posture mask (all True when ``mask`` is None)."""
    if mask is None:
        mask = np.ones(n, dtype=bool)
    else:
        mask = np.array(mask)
        if mask.dtype != np.bool_ or mask.shape != (n,):
            raise ValueError(
                f"mask: must be a bool array of shape ({n},), got dtype {mask.dtype} and "
                f"shape {mask.shape}"
            )
    return mask


def _check_values(
    values: Any, point_names: Any, measurability: Any, mask: np.ndarray
) -> Tuple[np.ndarray, Tuple[str, ...], np.ndarray]:
    """Measured values ``(n, n_points, 6)``, point names and measurability ``(n_points, 6)``.

    Unmeasured components are set to NaN; the observed ones must be finite on
    the valid postures of ``mask``.
    """
    try:
        vals = np.array(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values: cannot convert to a float array ({exc})") from exc
    if vals.ndim == 2 and vals.shape == (mask.size, 6):
        vals = vals.reshape(mask.size, 1, 6)
    if vals.ndim != 3 or vals.shape[0] != mask.size or vals.shape[2] != 6:
        raise ValueError(
            f"values: expected shape (n_postures={mask.size}, n_points, 6) with components "
            f"{list(DOF)}, got {vals.shape}"
        )
    npts = vals.shape[1]
    pnames = tuple(str(p) for p in point_names) or tuple(str(k + 1) for k in range(npts))
    if len(pnames) != npts or len(set(pnames)) != npts:
        raise ValueError(f"point_names: expected {npts} distinct names, got {list(pnames)}")
    if measurability is None:
        meas = np.ones((npts, 6), dtype=bool)
    else:
        meas = np.array(measurability)
        if meas.dtype != np.bool_:
            raise ValueError(
                f"measurability: must be bool (True = component measured), got dtype {meas.dtype}"
            )
        if meas.shape == (6,):
            meas = np.tile(meas, (npts, 1))
        if meas.shape != (npts, 6):
            raise ValueError(f"measurability: expected shape ({npts}, 6) or (6,), got {meas.shape}")
    vals[:, ~meas] = np.nan
    observed = vals[:, meas]  # (n, n_observed)
    bad = np.flatnonzero(~np.isfinite(observed).all(axis=1) & mask)
    if bad.size:
        which = np.argwhere(meas)[~np.isfinite(observed[bad[0]])][0]
        raise ValueError(
            f"values: observed values contain non-finite entries in rows "
            f"{_rows_str(bad)} (first: point {pnames[which[0]]!r}, component "
            f"{DOF[which[1]]!r}); mask those postures (del_list) or fix the data"
        )
    return vals, pnames, meas


def _check_sample_index(sample_index: Any, n: int) -> np.ndarray:
    """``(n,)`` unique source-row index (``arange(n)`` when None)."""
    if sample_index is None:
        sidx = np.arange(n)
    else:
        sidx = np.array(sample_index)
        if sidx.dtype.kind not in "iu" or sidx.shape != (n,):
            raise ValueError(
                f"sample_index: expected {n} integers, got dtype {sidx.dtype} shape {sidx.shape}"
            )
        if np.unique(sidx).size != n:
            raise ValueError("sample_index: entries must be unique (one source row each)")
    return sidx


def _check_session(session: Any, source: DataSource, n: int) -> np.ndarray:
    """``(n,)`` object array of session ids (default: the source's session id)."""
    if session is None or isinstance(session, str):
        default = (
            session
            if isinstance(session, str)
            else (source.session.id if source.session is not None else "")
        )
        sess = np.empty(n, dtype=object)
        sess[:] = default
    else:
        sess = np.empty(n, dtype=object)
        given = list(session)
        if len(given) != n:
            raise ValueError(f"session: expected {n} entries (one per posture), got {len(given)}")
        sess[:] = given
    return sess


@dataclass(frozen=True, eq=False)
class PoseObservations:
    """Measured point poses at a set of robot postures.

    Attributes:
        joint_names: Active joints, the column order of ``q``.
        q: (n, nj) joint positions [rad] or [m] of each posture.
        values: (n, n_points, 6) measured ``x, y, z`` [m] and ``phix, phiy,
            phiz`` [rad] per point, or None for a constraint-only dataset.
            Unmeasured components are forced to NaN.
        point_names: Names of the points (default ``"1"…"n_points"``).
        measurability: (n_points, 6) bool, True where a component is measured
            (a 6-vector is broadcast to every point; default all True).
        frame: Frame the values are expressed in.
        registered_to: Frame the measurement system is registered to.
        orientation: Orientation convention of the angular components.
        constraint: Name of the constraint of a constraint-only dataset
            (e.g. a contact gap); required when ``values`` is None.
        mask: (n,) bool, True for valid postures (invalid ones are masked,
            never deleted).
        session: (n,) object array, session id of each posture (default the
            source's session id, or ``""``).
        sample_index: (n,) unique ints, source row of each posture.
        source: Files and recording the data came from.

    Raises:
        ValueError: malformed fields; non-finite entries in valid postures
            (the message names the rows).
    """

    joint_names: Tuple[str, ...]
    q: np.ndarray
    values: np.ndarray | None = None
    point_names: Tuple[str, ...] = ()
    measurability: np.ndarray | None = None
    frame: str = ""
    registered_to: str = ""
    orientation: str = "unspecified"
    constraint: str | None = None
    mask: np.ndarray | None = None
    session: np.ndarray | None = None
    sample_index: np.ndarray | None = None
    source: DataSource = field(default_factory=DataSource)

    def __post_init__(self) -> None:
        setv = object.__setattr__
        names = _check_joint_names(self.joint_names)
        setv(self, "joint_names", names)

        q = _check_postures(self.q, names)
        n = q.shape[0]

        mask = _check_mask(self.mask, n)
        mask.setflags(write=False)
        setv(self, "mask", mask)

        bad = np.flatnonzero(~np.isfinite(q).all(axis=1) & mask)
        if bad.size:
            raise ValueError(
                f"q: non-finite joint values in rows {_rows_str(bad)}; mask those postures "
                "(del_list) or fix the data"
            )
        q.setflags(write=False)
        setv(self, "q", q)

        if self.constraint is not None and not isinstance(self.constraint, str):
            raise ValueError("constraint: must be a string naming the constraint, or None")
        if self.values is None:
            if not self.constraint:
                raise ValueError(
                    "values: None is only allowed for a constraint-only dataset; pass "
                    "constraint='<name>' (e.g. a contact gap) or the measured values"
                )
            setv(self, "point_names", tuple(self.point_names or ()))
            setv(self, "measurability", np.zeros((len(self.point_names), 6), dtype=bool))
        else:
            vals, pnames, meas = _check_values(
                self.values, self.point_names, self.measurability, mask
            )
            setv(self, "point_names", pnames)
            vals.setflags(write=False)
            meas.setflags(write=False)
            setv(self, "values", vals)
            setv(self, "measurability", meas)

        sidx = _check_sample_index(self.sample_index, n)
        sidx.setflags(write=False)
        setv(self, "sample_index", sidx)

        if self.source is None:
            setv(self, "source", DataSource())
        elif not isinstance(self.source, DataSource):
            raise ValueError(f"source: must be a DataSource, got {type(self.source).__name__}")
        sess = _check_session(self.session, self.source, n)
        sess.setflags(write=False)
        setv(self, "session", sess)

    # ------------------------------------------------------------------
    @property
    def n_samples(self) -> int:
        """Number of postures (masked ones included)."""
        return int(self.q.shape[0])

    @property
    def n_points(self) -> int:
        """Number of measured points (0 for a constraint-only dataset)."""
        return len(self.point_names)

    @property
    def _valid(self) -> np.ndarray:
        # __post_init__ replaced a None mask by the all-True (n,) array
        return cast(np.ndarray, self.mask)

    @property
    def _measured(self) -> np.ndarray:
        # __post_init__ set the (n_points, 6) array (all False without points)
        return cast(np.ndarray, self.measurability)

    def __repr__(self) -> str:
        masked = int(self.n_samples - np.count_nonzero(self._valid))
        what = (
            f"constraint={self.constraint!r}"
            if self.values is None
            else f"points={list(self.point_names)}, measured={int(self._measured.sum())}"
        )
        return (
            f"PoseObservations(n_samples={self.n_samples}, joints={len(self.joint_names)}, "
            f"{what}, frame={self.frame!r}, masked={masked})"
        )

    def with_mask(self, mask: Any) -> PoseObservations:
        """Copy with a new bool (n,) valid-posture mask."""
        return replace(self, mask=mask)

    def select_points(self, names: Iterable[str]) -> PoseObservations:
        """Copy keeping only the points ``names``, in that order.

        Raises:
            ValueError: constraint-only dataset.
            KeyError: unknown point names (all listed).
        """
        if self.values is None:
            raise ValueError(
                f"select_points: constraint-only dataset ({self.constraint!r}) has no points"
            )
        names = [names] if isinstance(names, str) else [str(n) for n in names]
        missing = [n for n in names if n not in self.point_names]
        if missing:
            raise KeyError(f"unknown point(s) {missing}; this dataset has {list(self.point_names)}")
        idx = [self.point_names.index(n) for n in names]
        return replace(
            self,
            values=self.values[:, idx, :],
            point_names=tuple(names),
            measurability=self._measured[idx],
        )

    # ------------------------------------------------------------------
    @staticmethod
    def _active_joint_names(model: Any, calib_config: Mapping[str, Any]) -> List[str]:
        if "actJoint_idx" not in calib_config:
            raise ValueError(
                "calib_config: missing 'actJoint_idx' (ids of the active joints); build the "
                "config with the calibration config parser"
            )
        ids = [int(i) for i in calib_config["actJoint_idx"]]
        bad = [i for i in ids if not 0 <= i < len(model.names)]
        if bad:
            raise ValueError(
                f"calib_config['actJoint_idx']: joint ids {bad} are not in the model "
                f"(0..{len(model.names) - 1})"
            )
        return [str(model.names[i]) for i in ids]

    @classmethod
    def from_csv(
        cls,
        path: Union[str, os.PathLike],
        model: Any,
        calib_config: Mapping[str, Any],
        *,
        del_list: Sequence[int] = (),
        frame: str = "",
        registered_to: str = "",
        orientation: str = "unspecified",
        source: DataSource | None = None,
    ) -> PoseObservations:
        """Read a calibration CSV (one row per posture).

        Columns: ``x<i>, y<i>, z<i>, phix<i>, phiy<i>, phiz<i>`` for each marker
        ``i = 1…NbMarkers`` and each measured component (``measurability``),
        one column per active joint named ``model.names[j]`` for ``j`` in
        ``calib_config["actJoint_idx"]``, optional ``session_id``; other columns
        are ignored. Rows in ``del_list`` are masked, not deleted. Empty cells
        read as NaN. ``calib_config`` is not modified.

        Args:
            path: CSV file.
            model: ``pinocchio.Model`` (joint names).
            calib_config: Calibration config (``NbMarkers``, ``measurability``,
                ``actJoint_idx``).
            del_list: 0-based data-row indices of postures to mask.
            frame: Frame the values are expressed in.
            registered_to: Frame the measurement system is registered to.
            orientation: Orientation convention.
            source: Data source (default: hash of the file, adapter
                ``"PoseObservations.from_csv"``).

        Returns:
            The observations.

        Raises:
            FileNotFoundError: missing file.
            KeyError: missing columns (all listed).
            ValueError: unparsable cells, ragged rows, bad ``del_list``, or
                non-finite values in unmasked postures.
        """
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"calibration data file {str(p)!r} does not exist")
        nmark = int(calib_config.get("NbMarkers", 1))
        meas6 = _measurability(calib_config)
        joints = cls._active_joint_names(model, calib_config)

        col, cells, q, values = _parse_pose_csv(p, joints, nmark, meas6)
        n = len(q)
        try:
            return cls(
                joint_names=tuple(joints),
                q=q,
                values=values,
                point_names=tuple(str(k + 1) for k in range(nmark)),
                measurability=np.tile(meas6, (nmark, 1)),
                frame=frame,
                registered_to=registered_to,
                orientation=orientation,
                mask=_mask_of_del_list(del_list, n),
                session=cells[:, col["session_id"]].astype(object) if "session_id" in col else None,
                sample_index=np.arange(n),
                source=(
                    source
                    if source is not None
                    else DataSource.from_files([p], adapter="PoseObservations.from_csv")
                ),
            )
        except ValueError as exc:  # name the file; rows are data rows counted from 0
            raise ValueError(f"{p}: {exc} (rows counted from 0 below the header)") from exc

    def to_legacy(
        self, model: Any, calib_config: Mapping[str, Any]
    ) -> Tuple[np.ndarray, np.ndarray]:
        """Legacy calibration arrays of the **unmasked** postures.

        ``PEE_measured`` is flattened marker-major, then measured component,
        then posture: index ``(k·n_meas + c)·n_valid + s`` (``x1`` over all
        postures, then ``y1``, …). ``q_measured`` rows are copies of
        ``calib_config["q0"]`` with the ``config_idx`` columns replaced by ``q``.

        Args:
            model: ``pinocchio.Model``.
            calib_config: Calibration config (``actJoint_idx``, ``config_idx``,
                ``q0``; ``measurability`` and ``NbMarkers`` are checked if present).

        Returns:
            ``(PEE_measured (n_points·n_meas·n_valid,) [m, rad],
            q_measured (n_valid, nq))``.

        Raises:
            ValueError: constraint-only data, joint order differing from the
                active joints, or inconsistent config entries.
        """
        if self.values is None:
            raise ValueError(
                f"to_legacy: constraint-only dataset ({self.constraint!r}) has no measured poses"
            )
        active = self._active_joint_names(model, calib_config)
        if list(self.joint_names) != active:
            raise ValueError(
                f"joint order {list(self.joint_names)} differs from the calibration's active "
                f"joints {active}; reorder the columns or fix actJoint_idx"
            )
        if "NbMarkers" in calib_config and int(calib_config["NbMarkers"]) != self.n_points:
            raise ValueError(
                f"calib_config['NbMarkers']={calib_config['NbMarkers']} but the observations "
                f"have {self.n_points} points"
            )
        if "measurability" in calib_config:
            m6 = np.asarray(calib_config["measurability"], dtype=bool)
            if m6.shape == (6,) and not np.all(self.measurability == m6):
                raise ValueError(
                    f"measurability of the observations differs from calib_config "
                    f"['measurability']={m6.tolist()}"
                )
        for key in ("config_idx", "q0"):
            if key not in calib_config:
                raise ValueError(f"calib_config: missing {key!r}")
        cidx = np.asarray(calib_config["config_idx"], dtype=int).ravel()
        q0 = np.asarray(calib_config["q0"], dtype=float).ravel()
        if cidx.size != len(self.joint_names):
            raise ValueError(
                f"calib_config['config_idx'] has {cidx.size} entries for "
                f"{len(self.joint_names)} active joints"
            )
        if cidx.size and (cidx.min() < 0 or cidx.max() >= q0.size):
            raise ValueError(
                f"calib_config['config_idx'] {cidx.tolist()} is outside q0 (size {q0.size})"
            )
        valid = self._valid
        vals = self.values[valid]  # (n_valid, n_points, 6)
        pee = vals.transpose(1, 2, 0)[self.measurability].ravel()
        q_measured = np.tile(q0, (int(valid.sum()), 1))
        q_measured[:, cidx] = self.q[valid]
        return pee, q_measured


def _parse_pose_csv(
    p: Path, joints: List[str], nmark: int, meas6: np.ndarray
) -> Tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
    """``(column index, stripped cells, (N, n_joints) q, (N, nmark, 6) values)`` of a pose CSV.

    Unmeasured components of ``values`` are NaN.

    Raises:
        KeyError: missing columns (all listed).
        ValueError: not text, empty, ragged or non-numeric.
    """
    header, body = _read_csv_rows(p)
    marker_cols = _marker_columns(nmark, meas6)
    col = {c: k for k, c in enumerate(header)}
    missing = [c for c in marker_cols + joints if c not in col]
    if missing:
        raise KeyError(f"{p}: missing columns {missing} (header: {header})")
    n = len(body)
    if n == 0:
        raise ValueError(f"{p}: no data rows")
    cells = np.char.strip(np.array(body, dtype=str))

    def numeric(names: List[str]) -> np.ndarray:
        return _numeric_columns(p, cells, [col[c] for c in names], names)

    q = numeric(joints)
    values = np.full((n, nmark, 6), np.nan)
    if marker_cols:
        values[:, :, meas6] = numeric(marker_cols).reshape(n, nmark, int(meas6.sum()))
    return col, cells, q, values


def _measurability(calib_config: Mapping[str, Any]) -> np.ndarray:
    """The 6 measured-component flags of ``calib_config`` (``[x, y, z, phix, phiy, phiz]``)."""
    meas6 = np.array(calib_config.get("measurability", _DEFAULT_MEASURABILITY), dtype=bool)
    if meas6.shape != (6,):
        raise ValueError(
            f"calib_config['measurability']: expected 6 booleans {list(DOF)}, got {meas6.tolist()}"
        )
    return meas6


def _marker_columns(n_markers: int, measurability: np.ndarray) -> List[str]:
    """Measured-value columns ``x1, y1, …, phiz<n>`` of the measured components."""
    return [
        f"{d}{i}"
        for i in range(1, n_markers + 1)
        for d, m in zip(DOF, measurability, strict=True)
        if m
    ]


def _read_csv_rows(p: Path) -> Tuple[List[str], List[List[str]]]:
    """``(header, data rows)`` of a calibration CSV (every row as long as the header)."""
    text = read_csv_text(p, "calibration data file")
    rows = csv_rows(p, text, "calibration data file")
    if not rows:
        raise ValueError(f"{p}: empty file (expected a header row)")
    header = [c.strip() for c in rows[0]]
    body = rows[1:]
    lens = np.fromiter((len(r) for r in body), dtype=int, count=len(body))
    ragged = np.flatnonzero(lens != len(header))
    if ragged.size:
        raise ValueError(
            f"{p}: rows {_rows_str(ragged)} do not have {len(header)} cells like the header"
        )
    return header, body


def _numeric_columns(
    p: Path, cells: np.ndarray, columns: List[int], names: List[str]
) -> np.ndarray:
    """The float values of ``columns`` (empty cells → NaN); names the first bad column."""
    sub = cells[:, columns]
    sub = np.where(sub == "", "nan", sub)
    try:
        return sub.astype(float)
    except ValueError:
        for k, c in enumerate(names):  # error path: find the culprit column
            try:
                sub[:, k].astype(float)
            except ValueError:
                bad_rows = [i for i, v in enumerate(sub[:, k]) if not _is_float(v)]
                raise ValueError(
                    f"{p}: column {c!r} has non-numeric cells in rows "
                    f"{_rows_str(np.array(bad_rows))}"
                ) from None
        raise


def _mask_of_del_list(del_list: Sequence[int], n: int) -> np.ndarray:
    """``(n,)`` valid-posture mask with the 0-based rows of ``del_list`` set False."""
    mask = np.ones(n, dtype=bool)
    dl = np.asarray(list(del_list), dtype=int).ravel()
    if dl.size:
        out = dl[(dl < 0) | (dl >= n)]
        if out.size:
            raise ValueError(f"del_list: rows {out.tolist()} are outside 0..{n - 1}")
        mask[dl] = False
    return mask


def _is_float(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True
