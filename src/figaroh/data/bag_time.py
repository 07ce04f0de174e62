"""Time base of logged samples: its regularity, resampling, and static postures.

Robot logs carry one time stamp per sample, in integer nanoseconds. This
module works on those stamps and the arrays that go with them:

* :func:`analyse_time_base` measures how far the stamps are from a clock of
  period ``T = 1/f_s`` [s]: gaps, repeated stamps, stamps that go back,
  rows with a missing joint and the jitter, in a :class:`TimeBaseReport`;
* :func:`resample` puts the signals onto the regular grid ``t_k = k/f_s``
  [s] by linear or cubic interpolation (scipy), or checks that they are on
  one already (``"none"``);
* :func:`still_windows` finds where the joints are at rest,
  :func:`average_postures` averages the joint positions there and
  :func:`poses_in_windows` averages a measured pose (position and rotation)
  over the same instants.

Stamps are ``np.int64`` nanoseconds; a difference of stamps is taken in
integers first and only then converted to seconds, so that epoch stamps
(about ``1.7·10¹⁸`` ns) lose no precision.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np
import pinocchio as pin

from figaroh._run.data_checks import DataFinding
from figaroh.data.bag_errors import BagTimeBaseError

logger = logging.getLogger(__name__)

__all__ = [
    "RESAMPLE_METHODS",
    "StillWindow",
    "TimeBaseReport",
    "analyse_time_base",
    "average_postures",
    "poses_in_windows",
    "resample",
    "still_windows",
]

#: Choices of :func:`resample` (``data.bag.resample`` / ``--resample``).
RESAMPLE_METHODS = ("none", "linear", "cubic")

_FIX = "set resample: linear or cubic (data.bag.resample / --resample)"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True)
class TimeBaseReport:
    """How far a series of stamps is from a regular clock of period ``T``.

    Steps are differences of consecutive stamps, ``Δt_i = t_{i+1} − t_i`` [s].
    Out-of-order stamps are counted on the recorded order; duplicates, gaps,
    the median step and the jitter on the stamps sorted in time (so that one
    late message counts as out of order, not as two gaps).

    Attributes:
        n_samples: Number of stamps ``N``.
        expected_period_s: ``T = 1/f_s`` [s] of the configured sampling
            frequency.
        median_period_s: Median of the positive sorted steps [s]; None when
            there is none.
        max_jitter: ``max_i |Δt_i − T| / T`` over the positive sorted steps
            that are not gaps (0 for a perfect clock).
        n_gaps: Sorted steps longer than ``gap_factor·T`` (dropped messages).
        largest_gap_s: The longest of those steps [s] (0 without gaps).
        n_duplicates: Samples whose stamp equals another sample's (zero sorted
            steps): ``N`` minus the number of distinct stamps.
        n_out_of_order: Recorded steps with ``Δt_i < 0`` (the clock went back).
        n_incomplete: Rows with a NaN position (a joint, or a joint group
            logged on another topic, missing at that stamp).
        stamp_source: Where the stamps come from (``"header.stamp"`` or
            ``"receive time"``).
        jitter_tolerance: Largest ``max_jitter`` still called regular
            (fraction of ``T``).
    """

    n_samples: int
    expected_period_s: float
    median_period_s: float | None
    max_jitter: float
    n_gaps: int
    largest_gap_s: float
    n_duplicates: int
    n_out_of_order: int
    n_incomplete: int
    stamp_source: str
    jitter_tolerance: float

    @property
    def regular(self) -> bool:
        """No gap, duplicate, out-of-order stamp or incomplete row, and jitter ≤ tolerance."""
        return (
            self.n_gaps == 0
            and self.n_duplicates == 0
            and self.n_out_of_order == 0
            and self.n_incomplete == 0
            and self.max_jitter <= self.jitter_tolerance
        )

    def summary(self) -> str:
        """One line with the numbers.

        Example: ``"2000 samples at 100 Hz (header.stamp): 3 gaps (largest
        0.05 s), 2 duplicates, 1 out of order, 0 incomplete, jitter 4.0 % of
        the 10 ms period (median step 10 ms)"``.
        """
        period = self.expected_period_s
        gaps = _plural(self.n_gaps, "gap")
        if self.n_gaps:
            gaps += f" (largest {self.largest_gap_s:.3g} s)"
        text = (
            f"{self.n_samples} samples at {1.0 / period:g} Hz ({self.stamp_source}): {gaps}, "
            f"{_plural(self.n_duplicates, 'duplicate')}, {self.n_out_of_order} out of order, "
            f"{self.n_incomplete} incomplete, jitter {100.0 * self.max_jitter:.1f} % of the "
            f"{period * 1e3:g} ms period"
        )
        if self.median_period_s is not None:
            text += f" (median step {self.median_period_s * 1e3:.6g} ms)"
        return text

    def finding(self) -> DataFinding:
        """The ``time_base`` data check: passed when the time base is :attr:`regular`.

        Returns:
            A :class:`~figaroh._run.data_checks.DataFinding` named
            ``"time_base"``; when it fails, its message holds :meth:`summary`
            and the fix (resample, or correct the sampling frequency).
        """
        if self.regular:
            return DataFinding("time_base", True)
        return DataFinding(
            "time_base",
            False,
            f"irregular time base: {self.summary()}; {_FIX} to interpolate onto the "
            f"{1.0 / self.expected_period_s:g} Hz grid, or correct the sampling frequency "
            "if the median step is not its period",
        )


def _stamps(stamp_ns: np.ndarray, name: str = "stamp_ns") -> np.ndarray:
    """``stamp_ns`` as a 1-D ``int64`` array with at least one sample."""
    stamps = np.asarray(stamp_ns)
    if stamps.ndim != 1 or not np.issubdtype(stamps.dtype, np.integer):
        raise ValueError(
            f"{name}: expected a 1-D array of integer nanoseconds (int64), got "
            f"shape {stamps.shape} and dtype {stamps.dtype}"
        )
    if stamps.size == 0:
        raise BagTimeBaseError(f"{name}: no samples (the topic holds no message)")
    return stamps.astype(np.int64, copy=False)


def _period_ns(sampling_frequency: float) -> float:
    """``T = 10⁹ / f_s`` [ns] of a finite positive ``sampling_frequency`` [Hz]."""
    fs = float(sampling_frequency)
    if not np.isfinite(fs) or fs <= 0:
        raise ValueError(
            f"sampling_frequency: expected a positive number of Hz, got {sampling_frequency!r}"
        )
    return 1e9 / fs


def _rows(array: np.ndarray, n: int, name: str) -> np.ndarray:
    """``array`` as a float ``(n, columns)`` view (1-D becomes one column)."""
    values = np.asarray(array, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[0] != n:
        raise ValueError(f"{name}: expected {n} rows (one per stamp), got shape {np.shape(array)}")
    return values


def analyse_time_base(
    stamp_ns: np.ndarray,
    sampling_frequency: float,
    *,
    position: np.ndarray | None = None,
    stamp_source: str = "header.stamp",
    jitter_tolerance: float = 0.1,
    gap_factor: float = 1.5,
) -> TimeBaseReport:
    """Measure the stamps against a clock of period ``T = 1/f_s``.

    With ``s`` the stamps sorted in time and ``Δ_i = s_{i+1} − s_i`` [s]: a
    gap is ``Δ_i > g·T`` (``g`` = ``gap_factor``), a duplicate ``Δ_i = 0``,
    and the jitter is ``max |Δ_i − T| / T`` over ``0 < Δ_i ≤ g·T``.
    Out-of-order stamps are the negative steps of the recorded order.

    Args:
        stamp_ns: ``(N,)`` integer stamps [ns], in recorded order.
        sampling_frequency: Configured sampling frequency ``f_s`` [Hz].
        position: Optional ``(N, n_joints)`` positions; rows holding a NaN are
            counted as incomplete.
        stamp_source: Where the stamps come from, for the report.
        jitter_tolerance: Largest jitter (fraction of ``T``) still regular.
        gap_factor: A step longer than ``gap_factor`` periods is a gap.

    Returns:
        The :class:`TimeBaseReport`.

    Raises:
        ValueError: Bad argument (shape, dtype, non-positive frequency).
        BagTimeBaseError: No stamp at all.
    """
    stamps = _stamps(stamp_ns)
    period_ns = _period_ns(sampling_frequency)
    if not jitter_tolerance >= 0:
        raise ValueError(f"jitter_tolerance: expected ≥ 0, got {jitter_tolerance!r}")
    if not gap_factor > 1:
        raise ValueError(f"gap_factor: expected > 1 (periods), got {gap_factor!r}")
    n = int(stamps.size)
    n_incomplete = 0
    if position is not None:
        n_incomplete = int(np.isnan(_rows(position, n, "position")).any(axis=1).sum())

    n_out_of_order = int(np.count_nonzero(np.diff(stamps) < 0))
    steps = np.diff(np.sort(stamps, kind="stable"))  # int64 [ns], ≥ 0
    n_duplicates = int(np.count_nonzero(steps == 0))
    forward = steps[steps > 0]
    gap_limit = gap_factor * period_ns
    gaps = forward[forward > gap_limit]
    regular_steps = forward[forward <= gap_limit]
    max_jitter = (
        float(np.max(np.abs(regular_steps - period_ns)) / period_ns) if regular_steps.size else 0.0
    )
    return TimeBaseReport(
        n_samples=n,
        expected_period_s=period_ns * 1e-9,
        median_period_s=float(np.median(forward)) * 1e-9 if forward.size else None,
        max_jitter=max_jitter,
        n_gaps=int(gaps.size),
        largest_gap_s=float(gaps.max()) * 1e-9 if gaps.size else 0.0,
        n_duplicates=n_duplicates,
        n_out_of_order=n_out_of_order,
        n_incomplete=n_incomplete,
        stamp_source=stamp_source,
        jitter_tolerance=float(jitter_tolerance),
    )


def resample(
    stamp_ns: np.ndarray,
    signals: Mapping[str, np.ndarray | None],
    sampling_frequency: float,
    method: str,
    *,
    stamp_source: str = "header.stamp",
    jitter_tolerance: float = 0.1,
    gap_factor: float = 1.5,
) -> Tuple[np.ndarray, Dict[str, np.ndarray | None]]:
    """Put signals onto the regular grid ``t_k = k / f_s`` [s], or check they are on it.

    ``"none"``: the time base (and the ``"position"`` entry's rows, when
    given) must be regular (:func:`analyse_time_base`); then ``t = (s −
    s_0)·10⁻⁹`` [s] (integer difference first) and the signals are returned
    as given, not copied.

    ``"linear"`` / ``"cubic"``: the samples are sorted by stamp (stable),
    repeated stamps dropped (the first recorded kept), and every column is
    interpolated over its own finite samples: ``linear`` with
    ``scipy.interpolate.make_interp_spline(x, y, k=1)`` (piecewise linear),
    ``cubic`` with ``scipy.interpolate.CubicSpline(x, y)`` (not-a-knot end
    conditions). Columns without NaN share one interpolant over their 2-D
    array (scipy treats each column independently); a column with NaN gets
    its own, over its finite samples, and is interpolated across the holes.
    The grid starts at the latest first finite sample of any column, ``t_0``,
    and ends at or before the earliest last one (no extrapolation); the
    returned times are ``t_k − t_0 = k/f_s`` [s].

    Args:
        stamp_ns: ``(N,)`` integer stamps [ns], in recorded order.
        signals: ``{name: (N,) or (N, m) array, or None}``; None stays None.
        sampling_frequency: ``f_s`` [Hz] of the grid.
        method: One of :data:`RESAMPLE_METHODS`.
        stamp_source: Where the stamps come from (for the ``"none"`` error).
        jitter_tolerance: See :func:`analyse_time_base` (``"none"`` only).
        gap_factor: See :func:`analyse_time_base` (``"none"`` only).

    Returns:
        ``(t, signals)``: ``t`` the ``(K,)`` float64 times [s] from the first
        sample (or grid point), and the signals at those times, each with
        the shape of its input but ``K`` rows.

    Raises:
        BagTimeBaseError: Unknown method; ``"none"`` on an irregular time base
            (the message holds the report's numbers and the fix); a column with
            fewer than two finite samples; no common span of two grid points.
        ValueError: Bad argument (shapes, dtype, frequency).
    """
    if method not in RESAMPLE_METHODS:
        raise BagTimeBaseError(
            f"resample: unknown method {method!r}; choose one of {', '.join(RESAMPLE_METHODS)} "
            "(data.bag.resample / --resample)"
        )
    stamps = _stamps(stamp_ns)
    n = int(stamps.size)
    arrays = {name: (None if v is None else np.asarray(v)) for name, v in signals.items()}
    for name, values in arrays.items():
        if values is not None and (values.ndim not in (1, 2) or values.shape[0] != n):
            raise ValueError(
                f"signals[{name!r}]: expected {n} rows (one per stamp), got shape {values.shape}"
            )
    if method == "none":
        report = analyse_time_base(
            stamps,
            sampling_frequency,
            position=arrays.get("position"),
            stamp_source=stamp_source,
            jitter_tolerance=jitter_tolerance,
            gap_factor=gap_factor,
        )
        if not report.regular:
            raise BagTimeBaseError(
                f"resample: none needs a regular time base, and this one is not: "
                f"{report.summary()}; {_FIX}"
            )
        return (stamps - stamps[0]) * 1e-9, dict(signals)
    return _interpolate(stamps, arrays, sampling_frequency, method)


def _interpolate(
    stamps: np.ndarray,
    arrays: Mapping[str, np.ndarray | None],
    sampling_frequency: float,
    method: str,
) -> Tuple[np.ndarray, Dict[str, np.ndarray | None]]:
    """The ``"linear"`` / ``"cubic"`` branch of :func:`resample`."""
    from scipy.interpolate import CubicSpline, make_interp_spline

    period_ns = _period_ns(sampling_frequency)
    order = np.argsort(stamps, kind="stable")
    sorted_ns = stamps[order]
    keep = np.ones(sorted_ns.size, dtype=bool)
    keep[1:] = np.diff(sorted_ns) != 0
    rows = order[keep]
    kept_ns = sorted_ns[keep]

    columns: Dict[str, np.ndarray] = {}
    start_ns, stop_ns = int(kept_ns[0]), int(kept_ns[-1])
    for name, values in arrays.items():
        if values is None:
            continue
        y = _rows(values, stamps.size, f"signals[{name!r}]")[rows]
        finite = np.isfinite(y)
        counts = finite.sum(axis=0)
        if y.shape[1] and counts.min() < 2:
            bad = int(np.argmin(counts))
            raise BagTimeBaseError(
                f"resample: signals[{name!r}] column {bad} has {int(counts[bad])} finite "
                f"sample(s) of {y.shape[0]}; {method} interpolation needs at least 2"
            )
        if y.shape[1]:
            first = finite.argmax(axis=0)
            last = y.shape[0] - 1 - finite[::-1].argmax(axis=0)
            start_ns = max(start_ns, int(kept_ns[first].max()))
            stop_ns = min(stop_ns, int(kept_ns[last].min()))
        columns[name] = y

    span_s = (stop_ns - start_ns) * 1e-9
    n_grid = int(np.floor((stop_ns - start_ns) / period_ns + 1e-9)) + 1 if span_s >= 0 else 0
    if n_grid < 2:
        raise BagTimeBaseError(
            f"resample: the span where every signal has data is {max(span_s, 0.0):.6g} s, "
            f"shorter than one {period_ns * 1e-6:g} ms period; nothing to resample"
        )
    t = np.arange(n_grid, dtype=np.float64) / float(sampling_frequency)
    x = (kept_ns - start_ns) * 1e-9

    def interpolant(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        if method == "linear":
            return np.asarray(make_interp_spline(xs, ys, k=1)(t))
        return np.asarray(CubicSpline(xs, ys)(t))

    out: Dict[str, np.ndarray | None] = {}
    for name, values in arrays.items():
        if values is None:
            out[name] = None
            continue
        y = columns[name]
        result = np.empty((n_grid, y.shape[1]), dtype=np.float64)
        finite = np.isfinite(y)
        whole = finite.all(axis=0)
        if whole.any():
            result[:, whole] = interpolant(x, y[:, whole]).reshape(n_grid, -1)
        for col in np.flatnonzero(~whole):
            ok = finite[:, col]
            result[:, col] = interpolant(x[ok], y[ok, col])
        out[name] = result[:, 0] if values.ndim == 1 else result
    logger.info(
        "resampled %d samples (%d repeated stamps dropped) onto %d points at %g Hz (%s)",
        stamps.size,
        stamps.size - kept_ns.size,
        n_grid,
        1e9 / period_ns,
        method,
    )
    return t, out


@dataclass(frozen=True)
class StillWindow:
    """A run of samples where the joints are at rest.

    Attributes:
        start: First sample index.
        stop: One past the last sample index (``position[start:stop]``).
        t_start_ns: Stamp of sample ``start`` [ns].
        t_stop_ns: Stamp of sample ``stop - 1`` [ns] (inclusive).
    """

    start: int
    stop: int
    t_start_ns: int
    t_stop_ns: int


def _range_peak_to_peak(x: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Per-column ``max − min`` of ``x[first[i]:last[i] + 1]`` for every ``i``.

    Range extrema by doubling: level ``p`` holds the extrema of the ``2^p``
    rows from each row, and a range of length ``ℓ`` is the union of the two
    (overlapping) blocks of length ``2^⌊log₂ ℓ⌋`` at its two ends. Work
    ``O(N log ℓ_max)``, one level kept at a time. NaN propagates.

    Args:
        x: ``(N, m)`` values.
        first: ``(K,)`` first rows, ``first <= last``.
        last: ``(K,)`` last rows (inclusive), ``< N``.

    Returns:
        ``(K, m)`` peak-to-peak of each range.
    """
    level = np.frexp((last - first + 1).astype(np.float64))[1] - 1  # ⌊log2 ℓ⌋
    out = np.empty((first.size, x.shape[1]), dtype=np.float64)
    hi = lo = x
    for p in range(int(level.max()) + 1 if level.size else 0):
        if p:
            half = 1 << (p - 1)
            hi = np.maximum(hi[:-half], hi[half:])
            lo = np.minimum(lo[:-half], lo[half:])
        sel = np.flatnonzero(level == p)
        if sel.size:
            a, b = first[sel], last[sel] - (1 << p) + 1
            out[sel] = np.maximum(hi[a], hi[b]) - np.minimum(lo[a], lo[b])
    return out


def _run_stop(x: np.ndarray, start: int, known: int, tolerance: float) -> int:
    """One past the last row of the longest run from ``start`` with peak-to-peak ≤ tolerance.

    Rows ``start .. known`` are known to be within tolerance; the scan goes on
    in blocks of doubling length with running maxima and minima.
    """
    n = x.shape[0]
    hi = x[start : known + 1].max(axis=0)
    lo = x[start : known + 1].min(axis=0)
    begin = known + 1
    size = max(known + 1 - start, 16)
    while begin < n:
        end = min(n, begin + size)
        block_hi = np.maximum(np.maximum.accumulate(x[begin:end], axis=0), hi)
        block_lo = np.minimum(np.minimum.accumulate(x[begin:end], axis=0), lo)
        broken = ~np.all(block_hi - block_lo <= tolerance, axis=1)
        if broken.any():
            return begin + int(np.argmax(broken))
        hi, lo = block_hi[-1], block_lo[-1]
        begin, size = end, 2 * size
    return n


def still_windows(
    stamp_ns: np.ndarray,
    position: np.ndarray,
    *,
    window_s: float = 0.5,
    tolerance: float = 1e-3,
) -> Tuple[StillWindow, ...]:
    """The runs of samples where every joint is at rest for at least ``window_s``.

    A run ``[a, b)`` of samples is still when every joint's peak-to-peak
    range over it is at most ``ε`` = ``tolerance``, ``max_{a≤i<b} q_ij −
    min_{a≤i<b} q_ij ≤ ε`` (so every sample is within ``ε`` of the run's
    first one), and it lasts ``t_{b−1} − t_a ≥ window_s``. Windows are taken
    left to right: the earliest sample that starts such a run opens a window,
    the window grows while the run stays still, and the search resumes after
    it. A NaN position ends a run.

    Which samples can open a window is decided for all of them at once
    (range extrema by doubling, one joint at a time): ``a`` can when the
    samples up to the first one stamped ``≥ t_a + window_s`` are within
    tolerance. Only the extent of each window is then scanned.

    Args:
        stamp_ns: ``(N,)`` integer stamps [ns], non-decreasing.
        position: ``(N, n_joints)`` joint positions [rad or m].
        window_s: Shortest rest [s] that makes a window (> 0).
        tolerance: Largest peak-to-peak motion of a joint at rest [rad or m].

    Returns:
        The windows, in time order (empty when the joints never rest long
        enough).

    Raises:
        BagTimeBaseError: Stamps going back in time (sort or resample first).
        ValueError: Bad argument (shape, dtype, ``window_s`` ≤ 0, negative
            ``tolerance``).
    """
    stamps = _stamps(stamp_ns)
    x = _rows(position, stamps.size, "position")
    if not (np.isfinite(window_s) and window_s > 0):
        raise ValueError(f"window_s: expected a positive duration [s], got {window_s!r}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance: expected ≥ 0 [rad or m], got {tolerance!r}")
    back = np.flatnonzero(np.diff(stamps) < 0)
    if back.size:
        raise BagTimeBaseError(
            f"still_windows: {back.size} stamp(s) go back in time (first after sample "
            f"{int(back[0])}); the static-posture search needs stamps in time order: {_FIX}"
        )
    window_ns = int(np.ceil(window_s * 1e9))
    reach = np.searchsorted(stamps, stamps + window_ns, side="left")  # first t ≥ t_a + window
    candidates = np.flatnonzero(reach < stamps.size)
    for col in range(x.shape[1]):  # one joint at a time bounds the memory
        ptp = _range_peak_to_peak(x[:, col : col + 1], candidates, reach[candidates])
        candidates = candidates[ptp[:, 0] <= tolerance]
    opens = candidates
    windows: List[StillWindow] = []
    resume = 0
    while True:
        k = int(np.searchsorted(opens, resume, side="left"))
        if k == opens.size:
            break
        start = int(opens[k])
        stop = _run_stop(x, start, int(reach[start]), tolerance)
        windows.append(StillWindow(start, stop, int(stamps[start]), int(stamps[stop - 1])))
        resume = stop
    logger.debug(
        "%d still windows (≥ %g s, tolerance %g) in %d samples",
        len(windows),
        window_s,
        tolerance,
        stamps.size,
    )
    return tuple(windows)


def _shifted_mean(rows: np.ndarray) -> np.ndarray:
    """Column means of ``rows`` summed about its first row (exact for identical rows)."""
    return rows[0] + (rows - rows[0]).mean(axis=0)


def average_postures(position: np.ndarray, windows: Sequence[StillWindow]) -> np.ndarray:
    """Mean joint position over each window.

    ``q̄_w = q_a + Σ_{a≤i<b} (q_i − q_a) / (b − a)`` for the window ``[a, b)``:
    the mean, summed about the window's first sample so that a window of
    identical samples averages to that sample exactly (a plain sum of ``n``
    equal values is not always ``n`` times the value in floating point).

    Args:
        position: ``(N, n_joints)`` joint positions [rad or m].
        windows: The windows (from :func:`still_windows`).

    Returns:
        ``(n_windows, n_joints)`` mean positions [rad or m].

    Raises:
        ValueError: A window outside the rows of ``position`` or empty.
    """
    x = np.asarray(position, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"position: expected (N, n_joints), got shape {x.shape}")
    out = np.empty((len(windows), x.shape[1]), dtype=np.float64)
    for k, w in enumerate(windows):
        if not 0 <= w.start < w.stop <= x.shape[0]:
            raise ValueError(
                f"windows[{k}]: samples [{w.start}, {w.stop}) are not a non-empty range of "
                f"the {x.shape[0]} rows of position"
            )
        out[k] = _shifted_mean(x[w.start : w.stop])
    return out


def poses_in_windows(
    windows: Sequence[StillWindow],
    pose_stamp_ns: np.ndarray,
    position: np.ndarray,
    quaternion_xyzw: np.ndarray,
    *,
    min_samples: int = 1,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The measured pose averaged over each window's instants.

    For window ``w`` the pose samples stamped in ``[t_start, t_stop]``
    (inclusive; non-finite samples ignored) give the mean position ``p̄_w``
    [m] and the mean rotation ``R̄_w`` of
    ``scipy.spatial.transform.Rotation.mean`` (the rotation whose quaternion
    is the principal eigenvector of ``Σ q qᵀ``, insensitive to the sign of
    each quaternion), returned as Pinocchio's roll-pitch-yaw
    ``pinocchio.rpy.matrixToRpy`` ``(φx, φy, φz)`` [rad], ``R =
    Rz(φz)·Ry(φy)·Rx(φx)``.

    Args:
        windows: The still windows of the joint states.
        pose_stamp_ns: ``(M,)`` integer stamps of the pose samples [ns], any
            order, on the same clock as the windows.
        position: ``(M, 3)`` pose positions [m].
        quaternion_xyzw: ``(M, 4)`` pose orientations, scalar last.
        min_samples: Fewest pose samples a window needs for a mean.

    Returns:
        ``(positions, rpy, counts)``: ``(W, 3)`` mean positions [m], ``(W, 3)``
        mean rotations as roll-pitch-yaw [rad] and ``(W,)`` the number of pose
        samples in each window. A window with fewer than ``min_samples`` (or
        no) samples has NaN rows; ``counts`` shows which (the caller drops
        them or raises).

    Raises:
        ValueError: Bad argument (shapes, dtype, ``min_samples`` < 1).
    """
    from scipy.spatial.transform import Rotation

    stamps = np.asarray(pose_stamp_ns)
    if stamps.ndim != 1 or not np.issubdtype(stamps.dtype, np.integer):
        raise ValueError(
            f"pose_stamp_ns: expected a 1-D array of integer nanoseconds (int64), got "
            f"shape {stamps.shape} and dtype {stamps.dtype}"
        )
    p = np.asarray(position, dtype=np.float64)
    quat = np.asarray(quaternion_xyzw, dtype=np.float64)
    if p.shape != (stamps.size, 3) or quat.shape != (stamps.size, 4):
        raise ValueError(
            f"position / quaternion_xyzw: expected ({stamps.size}, 3) and ({stamps.size}, 4) "
            f"(one row per pose stamp), got {p.shape} and {quat.shape}"
        )
    if min_samples < 1:
        raise ValueError(f"min_samples: expected ≥ 1, got {min_samples!r}")
    usable = np.isfinite(p).all(axis=1) & np.isfinite(quat).all(axis=1)
    n = len(windows)
    positions = np.full((n, 3), np.nan)
    rpy = np.full((n, 3), np.nan)
    counts = np.zeros(n, dtype=np.int64)
    for k, w in enumerate(windows):
        sel = usable & (stamps >= w.t_start_ns) & (stamps <= w.t_stop_ns)
        counts[k] = int(np.count_nonzero(sel))
        if counts[k] < min_samples:
            continue
        positions[k] = _shifted_mean(p[sel])
        rotation = Rotation.from_quat(quat[sel]).mean().as_matrix()
        rpy[k] = np.asarray(pin.rpy.matrixToRpy(rotation)).reshape(3)
    short = int(np.count_nonzero(counts < min_samples))
    if short:
        logger.warning(
            "%d of %d still windows hold fewer than %d pose sample(s)", short, n, min_samples
        )
    return positions, rpy, counts
