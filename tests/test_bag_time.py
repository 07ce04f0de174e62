"""Time base, resampling and static postures of logged samples (figaroh.data.bag_time).

Every expectation comes from outside the code under test: defects planted in a
perfect clock and counted by construction, scipy's own interpolants evaluated
directly, the interpolation error bounds of a known smooth signal, static
segments planted in a simulated trajectory, a plain sample-by-sample reference
of the still-window rule, numpy means, ``Rotation.mean`` and Pinocchio's
``matrixToRpy``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from scipy.interpolate import CubicSpline, make_interp_spline
from scipy.spatial.transform import Rotation

from figaroh._run.data_checks import DataFinding
from figaroh.data import bag_time
from figaroh.data.bag_errors import BagError, BagTimeBaseError
from figaroh.data.bag_time import (
    RESAMPLE_METHODS,
    StillWindow,
    analyse_time_base,
    average_postures,
    poses_in_windows,
    resample,
    still_windows,
)

#: An epoch stamp [ns] (2023-11-14), large enough that float seconds would lose digits.
T0 = 1_700_000_000_123_456_789


def clock(n: int, fs: float, t0: int = T0) -> np.ndarray:
    """``n`` stamps [ns] of a perfect clock at ``fs`` [Hz] (integer period)."""
    period = round(1e9 / fs)
    assert period * fs == 1e9
    return t0 + np.arange(n, dtype=np.int64) * period


# --------------------------------------------------------------------------- #
# analyse_time_base
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("fs", [100.0, 250.0, 1000.0])
def test_a_perfect_clock_is_regular_with_zero_counts(fs):
    stamps = clock(1500, fs)
    report = analyse_time_base(stamps, fs, position=np.zeros((1500, 6)))
    assert report.regular
    assert report.n_samples == 1500
    assert report.expected_period_s == pytest.approx(1 / fs, rel=1e-15)
    assert report.median_period_s == pytest.approx(1 / fs, rel=1e-15)
    assert report.max_jitter == 0.0
    assert (report.n_gaps, report.n_duplicates, report.n_out_of_order, report.n_incomplete) == (
        0,
        0,
        0,
        0,
    )
    assert report.largest_gap_s == 0.0
    assert report.finding() == DataFinding("time_base", True)


def _defective_log():
    """A 100 Hz log with planted defects, and what was planted."""
    n = 2010
    stamps = clock(n, 100.0)
    position = np.zeros((n, 3))
    # 3 gaps: 1, 4 and 2 dropped messages (20, 50 and 30 ms steps)
    drop = [100, 400, 401, 402, 403, 800, 801]
    stamps = np.delete(stamps, drop)
    position = np.delete(position, drop, axis=0)
    # 1.0 % .. 4.0 % jitter: one stamp 0.4 ms late (steps of 10.4 and 9.6 ms)
    stamps[1200] += 400_000
    # 2 duplicates: the same stamp logged twice
    for i in (1500, 1600):
        stamps = np.insert(stamps, i + 1, stamps[i])
        position = np.insert(position, i + 1, position[i], axis=0)
    # 1 out of order: two neighbours swapped
    stamps[[1800, 1801]] = stamps[[1801, 1800]]
    # 4 incomplete rows (a joint group missing at that stamp)
    position[[10, 11, 900, 1999], 1] = np.nan
    position[1999, :] = np.nan
    assert stamps.size == 2005
    return stamps, position


def test_planted_defects_are_counted_exactly():
    stamps, position = _defective_log()
    report = analyse_time_base(stamps, 100.0, position=position)
    assert report.n_samples == 2005
    assert report.n_gaps == 3
    assert report.largest_gap_s == pytest.approx(0.05, rel=1e-15)
    assert report.n_duplicates == 2
    assert report.n_out_of_order == 1
    assert report.n_incomplete == 4
    assert report.max_jitter == pytest.approx(0.04, abs=1e-15)
    assert report.median_period_s == pytest.approx(0.01, rel=1e-15)
    assert not report.regular
    assert report.summary() == (
        "2005 samples at 100 Hz (header.stamp): 3 gaps (largest 0.05 s), 2 duplicates, "
        "1 out of order, 4 incomplete, jitter 4.0 % of the 10 ms period (median step 10 ms)"
    )
    finding = report.finding()
    assert finding.check == "time_base" and not finding.passed and not finding.fatal
    assert report.summary() in finding.message
    assert "resample: linear or cubic" in finding.message
    assert "data.bag.resample" in finding.message and "--resample" in finding.message


@pytest.mark.parametrize(
    ("defect", "field", "value"),
    [
        ("gap", "n_gaps", 1),
        ("duplicate", "n_duplicates", 1),
        ("swap", "n_out_of_order", 1),
        ("late", "n_out_of_order", 1),
        ("nan", "n_incomplete", 1),
        ("jitter", "max_jitter", 0.2),
    ],
)
def test_each_defect_alone_makes_the_base_irregular(defect, field, value):
    stamps = clock(300, 200.0)
    position = np.ones((300, 2))
    if defect == "gap":
        stamps = np.delete(stamps, 150)
        position = position[1:]
    elif defect == "duplicate":
        stamps = np.insert(stamps, 151, stamps[150])  # the same message logged twice
        position = np.ones((301, 2))
    elif defect == "swap":
        stamps[[150, 151]] = stamps[[151, 150]]
    elif defect == "late":  # logged 3 messages late: out of order once, no gap
        stamps = np.insert(np.delete(stamps, 150), 153, stamps[150])
    elif defect == "nan":
        position[150, 0] = np.nan
    elif defect == "jitter":
        stamps[150] += 1_000_000  # 1 ms of a 5 ms period
    report = analyse_time_base(stamps, 200.0, position=position, stamp_source="receive time")
    counts = {
        "n_gaps": report.n_gaps,
        "n_duplicates": report.n_duplicates,
        "n_out_of_order": report.n_out_of_order,
        "n_incomplete": report.n_incomplete,
        "max_jitter": report.max_jitter,
    }
    assert counts.pop(field) == pytest.approx(value, abs=1e-15)
    assert all(v == 0 for v in counts.values()), counts
    assert not report.regular
    assert "(receive time)" in report.summary()
    # the same defect within a tolerance that accepts it: jitter only
    loose = analyse_time_base(stamps, 200.0, position=position, jitter_tolerance=0.25)
    assert loose.regular == (defect == "jitter")


def test_a_stamp_logged_again_later_is_a_duplicate_and_out_of_order():
    stamps = clock(10, 100.0)
    stamps = np.insert(stamps, 7, stamps[3])  # re-sent after sample 6
    report = analyse_time_base(stamps, 100.0)
    assert (report.n_duplicates, report.n_out_of_order, report.n_gaps) == (1, 1, 0)
    assert report.max_jitter == 0.0


def test_time_base_refuses_bad_arguments():
    with pytest.raises(ValueError, match="integer nanoseconds"):
        analyse_time_base(np.linspace(0, 1, 10), 10.0)
    with pytest.raises(ValueError, match="sampling_frequency"):
        analyse_time_base(clock(10, 10.0), 0.0)
    with pytest.raises(ValueError, match="position: expected 10 rows"):
        analyse_time_base(clock(10, 10.0), 10.0, position=np.zeros((9, 2)))
    with pytest.raises(BagTimeBaseError, match="no samples"):
        analyse_time_base(np.zeros(0, dtype=np.int64), 10.0)


# --------------------------------------------------------------------------- #
# resample
# --------------------------------------------------------------------------- #
def test_resample_none_on_regular_data_is_the_identity():
    stamps = clock(500, 1000.0)
    q, dq = np.random.default_rng(1).normal(size=(2, 500, 6))
    signals = {"position": q, "velocity": dq, "effort": None}
    t, out = resample(stamps, signals, 1000.0, "none")
    assert np.array_equal(t, (stamps - stamps[0]) * 1e-9) and t.dtype == np.float64
    assert np.allclose(t, np.arange(500) / 1000.0, rtol=0, atol=1e-15)
    assert out["position"] is q and out["velocity"] is dq and out["effort"] is None
    assert list(out) == ["position", "velocity", "effort"]


@pytest.mark.parametrize("defect", ["gap", "nan"])
def test_resample_none_on_irregular_data_names_the_option(defect):
    stamps = clock(500, 1000.0)
    q = np.zeros((500, 2))
    if defect == "gap":
        stamps[250:] += 5_000_000
    else:
        q[3, 1] = np.nan
    with pytest.raises(BagTimeBaseError) as err:
        resample(stamps, {"position": q}, 1000.0, "none")
    text = str(err.value)
    assert "resample: linear or cubic" in text and "data.bag.resample" in text
    assert "--resample" in text
    assert ("1 gap (largest 0.006 s)" if defect == "gap" else "1 incomplete") in text
    assert isinstance(err.value, BagError) and isinstance(err.value, ValueError)


def test_resample_refuses_an_unknown_method():
    with pytest.raises(BagTimeBaseError, match="none, linear, cubic"):
        resample(clock(10, 10.0), {}, 10.0, "spline")
    assert RESAMPLE_METHODS == ("none", "linear", "cubic")


def _jittered(n: int, fs: float, jitter: float, seed: int) -> np.ndarray:
    """Stamps [ns] of a clock at ``fs`` whose every step is off by up to ``jitter`` periods."""
    period = 1e9 / fs
    steps = period * (1 + jitter * np.random.default_rng(seed).uniform(-1, 1, n - 1))
    return T0 + np.concatenate([[0], np.cumsum(np.round(steps))]).astype(np.int64)


@pytest.mark.parametrize("method", ["linear", "cubic"])
def test_resampling_reproduces_a_smooth_signal_to_the_interpolation_bound(method):
    stamps = _jittered(1200, 500.0, 0.3, seed=2)
    omega = np.array([2 * np.pi * 1.3, 2 * np.pi * 2.1])  # [rad/s]
    src = (stamps - T0) * 1e-9
    y = np.sin(src[:, None] * omega)
    t, out = resample(stamps, {"position": y, "angle": y[:, 0]}, 200.0, method)
    assert np.array_equal(t, np.arange(t.size) / 200.0)
    assert t.size == int(np.floor(src[-1] * 200.0 + 1e-9)) + 1
    truth = np.sin(t[:, None] * omega)  # the grid starts at the first stamp
    h = np.diff(src).max()
    if method == "linear":  # |f - L| <= h^2/8 max|f''|
        bound = h**2 / 8 * omega**2
    else:  # not-a-knot cubic spline: O(h^4 max|f''''|)
        bound = h**4 * omega**4
    err = np.abs(out["position"] - truth).max(axis=0)
    assert np.all(err <= bound), (err, bound)
    assert np.all(err >= bound * 1e-4)  # not a copy of the truth
    assert out["angle"].shape == t.shape and np.array_equal(out["angle"], out["position"][:, 0])
    if method == "linear":  # the cubic bound is out of reach of a linear interpolant
        assert np.any(err > h**4 * omega**4)


@pytest.mark.parametrize(
    ("method", "interpolant"),
    [
        ("linear", lambda x, y: make_interp_spline(x, y, k=1)),
        ("cubic", CubicSpline),
    ],
)
def test_resampling_is_scipys_interpolant_over_sorted_distinct_finite_samples(method, interpolant):
    rng = np.random.default_rng(3)
    n = 400
    stamps = _jittered(n, 100.0, 0.2, seed=4)
    q = np.cumsum(rng.normal(size=(n, 3)), axis=0)
    effort = rng.normal(size=(n, 2))
    # duplicates with other values: the first recorded one must win
    dup_at = [50, 51, 300]
    stamps = np.insert(stamps, [d + 1 for d in dup_at], stamps[dup_at])
    q = np.insert(q, [d + 1 for d in dup_at], q[dup_at] + 100.0, axis=0)
    effort = np.insert(effort, [d + 1 for d in dup_at], 100.0, axis=0)
    # recorded out of order
    order = np.arange(stamps.size)
    rng.shuffle(order[100:140])
    stamps, q, effort = stamps[order], q[order], effort[order]
    # one column missing at the start (a late joint group) and in a hole
    first_sorted = np.argsort(stamps, kind="stable")
    q[first_sorted[:7], 2] = np.nan
    q[first_sorted[200:230], 2] = np.nan

    t, out = resample(stamps, {"position": q, "velocity": None, "effort": effort}, 100.0, method)

    # the truth, built independently: first occurrence of each distinct stamp
    distinct, first = np.unique(stamps, return_index=True)
    assert distinct.size == n
    start = distinct[np.isfinite(q[first, 2])][0]
    assert start == distinct[7]
    x = (distinct - start) * 1e-9
    assert np.array_equal(t, np.arange(int(x[-1] * 100.0 + 1e-9) + 1) / 100.0)
    assert out["velocity"] is None
    full = interpolant(x, q[first][:, :2])(t)
    assert np.array_equal(out["position"][:, :2], full)
    ok = np.isfinite(q[first, 2])
    assert np.array_equal(out["position"][:, 2], interpolant(x[ok], q[first][ok, 2])(t))
    assert np.array_equal(out["effort"], interpolant(x, effort[first])(t))
    assert np.abs(out["effort"]).max() < 100.0  # no later duplicate leaked in
    assert np.all(np.isfinite(out["position"]))


def test_resampling_refuses_a_column_without_two_samples_and_an_empty_span():
    stamps = clock(50, 100.0)
    q = np.zeros((50, 2))
    q[1:, 1] = np.nan
    with pytest.raises(BagTimeBaseError, match=r"signals\['position'\] column 1 has 1 finite"):
        resample(stamps, {"position": q}, 100.0, "linear")
    q = np.zeros((50, 2))
    q[:25, 0] = np.nan
    q[26:, 1] = np.nan
    with pytest.raises(BagTimeBaseError, match="shorter than one 10 ms period"):
        resample(stamps, {"position": q}, 100.0, "cubic")
    with pytest.raises(ValueError, match=r"signals\['effort'\]: expected 50 rows"):
        resample(stamps, {"effort": np.zeros((49, 2))}, 100.0, "linear")


# --------------------------------------------------------------------------- #
# still_windows, average_postures
# --------------------------------------------------------------------------- #
def _reference_still_windows(stamps, q, window_s, tolerance):
    """The rule, sample by sample: earliest start of a long-enough still run first."""
    n = len(stamps)
    found = []
    i = 0
    while i < n:
        hi = np.maximum.accumulate(q[i:], axis=0)
        lo = np.minimum.accumulate(q[i:], axis=0)
        still = np.all(hi - lo <= tolerance, axis=1)
        stop = i + (int(np.argmin(still)) if not still.all() else n - i)
        if stop > i and stamps[stop - 1] - stamps[i] >= window_s * 1e9:
            found.append((i, stop))
            i = stop
        else:
            i += 1
    return found


def _planted(fs=200.0, tolerance=1e-3, seed=5):
    """Postures held for 1.0, 0.3 (too short), 0.8 and 2.0 s, joined by fast ramps."""
    rng = np.random.default_rng(seed)
    postures = np.array([[0.0, 0.2, -0.3], [0.5, 0.1, -0.3], [1.0, -0.4, 0.2], [0.4, -0.4, 0.9]])
    holds = [200, 60, 160, 400]  # samples at 200 Hz
    ramp = 50
    rows, segments = [], []
    for k, (p, hold) in enumerate(zip(postures, holds, strict=True)):
        if k:
            prev = postures[k - 1]
            s = np.arange(1, ramp + 1)[:, None] / (ramp + 1)
            rows.append(prev + s * (p - prev))  # ≥ 0.0098 rad per sample on joint 0
        start = sum(len(r) for r in rows)
        rows.append(p + rng.uniform(-0.4, 0.4, (hold, 3)) * tolerance)
        segments.append((start, start + hold))
    q = np.concatenate(rows)
    return clock(len(q), fs), q, segments


def test_still_windows_find_the_planted_postures_exactly():
    stamps, q, segments = _planted()
    windows = still_windows(stamps, q, window_s=0.5, tolerance=1e-3)
    expected = [segments[0], segments[2], segments[3]]  # the 0.3 s hold is too short
    assert [(w.start, w.stop) for w in windows] == expected
    assert expected[0][0] == 0 and expected[-1][1] == len(q)
    for w in windows:
        assert (w.t_start_ns, w.t_stop_ns) == (int(stamps[w.start]), int(stamps[w.stop - 1]))
    assert _reference_still_windows(stamps, q, 0.5, 1e-3) == expected
    # a shorter window admits the 0.3 s hold too
    short = still_windows(stamps, q, window_s=0.25, tolerance=1e-3)
    assert [(w.start, w.stop) for w in short] == segments


def test_still_windows_respect_the_tolerance():
    stamps, q, segments = _planted()
    a, b = segments[3]
    spike = a + 150
    q = q.copy()
    q[spike, 1] += 1.5e-3  # one sample 1.5 mrad off, within noise of ±0.4 mrad
    windows = still_windows(stamps, q, window_s=0.5, tolerance=1e-3)
    assert [(w.start, w.stop) for w in windows][-2:] == [(a, spike), (spike + 1, b)]
    loose = still_windows(stamps, q, window_s=0.5, tolerance=2e-3)
    assert [(w.start, w.stop) for w in loose][-1] == (a, b)
    assert still_windows(stamps, q, window_s=0.5, tolerance=0.0) == ()
    # a NaN row ends a run the same way
    q[spike, 1] = np.nan
    windows = still_windows(stamps, q, window_s=0.5, tolerance=2e-3)
    assert [(w.start, w.stop) for w in windows][-2:] == [(a, spike), (spike + 1, b)]


def test_still_windows_follow_the_rule_on_drift_noise_and_jittered_stamps():
    """Slow drifts near the tolerance, where still runs overlap: the reference decides."""
    rng = np.random.default_rng(6)
    n = 600
    stamps = _jittered(n, 100.0, 0.4, seed=7)
    speed = np.repeat(rng.choice([0.0, 2e-5, 1e-4, 5e-3], size=12), n // 12)
    q = np.cumsum(speed[:, None] * rng.uniform(0.5, 1.0, (n, 2)), axis=0)
    q += rng.uniform(-1e-4, 1e-4, q.shape)
    for window_s, tolerance in [(0.2, 1e-3), (0.5, 5e-4), (0.05, 3e-4), (1.0, 3e-3)]:
        got = [
            (w.start, w.stop)
            for w in still_windows(stamps, q, window_s=window_s, tolerance=tolerance)
        ]
        assert got == _reference_still_windows(stamps, q, window_s, tolerance)
        assert got, (window_s, tolerance)


def test_still_windows_end_at_the_first_moving_sample_wherever_it_lies():
    """The extent of a window is scanned in growing blocks: no sample may be skipped."""
    stamps = clock(700, 100.0)
    for spike in range(6, 420):
        q = np.zeros((700, 1))
        q[spike] = 1.0
        windows = still_windows(stamps, q, window_s=0.05, tolerance=0.0)
        assert [(w.start, w.stop) for w in windows] == [(0, spike), (spike + 1, 700)], spike


def test_still_windows_need_the_whole_window():
    """A rest of exactly window_s counts; one nanosecond less does not."""
    stamps = T0 + np.cumsum(np.r_[0, np.full(99, 7_000_000)]).astype(np.int64)
    stamps[60] = stamps[10] + 500_000_000  # samples 10..60 span exactly 0.5 s
    stamps[61:] = stamps[60] + 7_000_000 * np.arange(1, 40)
    q = np.arange(100.0)[:, None] * np.ones(2)
    q[10:61] = 5.0
    (w,) = still_windows(stamps, q, window_s=0.5, tolerance=0.0)
    assert (w.start, w.stop) == (10, 61)
    stamps[60] -= 1
    assert still_windows(stamps, q, window_s=0.5, tolerance=0.0) == ()


def test_still_windows_refuse_stamps_out_of_order_and_bad_arguments():
    stamps, q, _ = _planted()
    stamps = stamps.copy()
    stamps[[10, 11]] = stamps[[11, 10]]
    with pytest.raises(BagTimeBaseError, match="go back in time.*resample: linear or cubic"):
        still_windows(stamps, q)
    with pytest.raises(ValueError, match="window_s"):
        still_windows(np.sort(stamps), q, window_s=0.0)
    with pytest.raises(ValueError, match="tolerance"):
        still_windows(np.sort(stamps), q, tolerance=-1.0)


def test_average_postures_are_numpy_means():
    stamps, q, segments = _planted()
    windows = still_windows(stamps, q)
    means = average_postures(q, windows)
    assert means.shape == (3, 3)
    for k, w in enumerate(windows):
        np.testing.assert_allclose(means[k], q[w.start : w.stop].mean(axis=0), rtol=0, atol=1e-15)
    assert average_postures(q, ()).shape == (0, 3)
    # identical samples average to themselves exactly (numpy's plain mean of 60 copies does not)
    held = np.tile([-1.4464727375963786, -2.8841484100105235, 0.1], (60, 1))
    assert np.array_equal(average_postures(held, [StillWindow(0, 60, 0, 59)])[0], held[0])
    with pytest.raises(ValueError, match=r"windows\[0\]"):
        average_postures(q, [StillWindow(5, 5, 0, 0)])


# --------------------------------------------------------------------------- #
# poses_in_windows
# --------------------------------------------------------------------------- #
def test_poses_in_windows_average_position_and_rotation():
    rng = np.random.default_rng(8)
    stamps, q, _ = _planted()
    windows = still_windows(stamps, q)
    truth = Rotation.random(len(windows), random_state=9)
    # a 60 Hz pose stream on the same clock, recorded in shuffled order
    pose_ns = T0 + np.arange(0, stamps[-1] - T0 + 1, 16_666_667, dtype=np.int64)
    rot = Rotation.random(pose_ns.size, random_state=10)  # moving in between
    pos = rng.normal(size=(pose_ns.size, 3))
    for k, w in enumerate(windows):
        inside = (pose_ns >= w.t_start_ns) & (pose_ns <= w.t_stop_ns)
        noise = Rotation.from_rotvec(rng.normal(scale=1e-3, size=(inside.sum(), 3)))
        rot_k = truth[k] * noise
        quat = rot_k.as_quat()
        quat[::2] *= -1  # q and -q are the same rotation
        rot[np.flatnonzero(inside)] = Rotation.from_quat(quat)
        pos[inside] = [k, 2 * k, 3 * k] + rng.normal(scale=1e-4, size=(inside.sum(), 3))
    quat = rot.as_quat()
    quat[1::3] *= -1
    shuffle = rng.permutation(pose_ns.size)
    pose_ns, pos, quat = pose_ns[shuffle], pos[shuffle], quat[shuffle]

    positions, rpy, counts = poses_in_windows(windows, pose_ns, pos, quat)

    for k, w in enumerate(windows):
        sel = (pose_ns >= w.t_start_ns) & (pose_ns <= w.t_stop_ns)
        assert counts[k] == sel.sum() > 10
        np.testing.assert_allclose(positions[k], pos[sel].mean(axis=0), rtol=0, atol=1e-15)
        mean = Rotation.from_quat(quat[sel]).mean()
        assert np.array_equal(rpy[k], pin.rpy.matrixToRpy(mean.as_matrix()))
        assert np.allclose(positions[k], [k, 2 * k, 3 * k], atol=1e-4)
        assert (mean * truth[k].inv()).magnitude() < 1e-3


def test_poses_in_windows_count_what_each_window_holds():
    windows = (
        StillWindow(0, 10, T0, T0 + 1_000),
        StillWindow(10, 20, T0 + 5_000, T0 + 6_000),
        StillWindow(20, 30, T0 + 9_000, T0 + 9_500),
    )
    pose_ns = np.array([T0, T0 + 500, T0 + 1_000, T0 + 1_001, T0 + 5_500, T0 + 9_200], np.int64)
    pos = np.arange(18.0).reshape(6, 3)
    quat = np.tile([0.0, 0.0, 0.0, 1.0], (6, 1))
    quat[5] = np.nan  # an unusable sample
    positions, rpy, counts = poses_in_windows(windows, pose_ns, pos, quat)
    assert counts.tolist() == [3, 1, 0]  # both ends of a window are inside
    assert np.array_equal(positions[0], pos[:3].mean(axis=0))
    assert np.array_equal(positions[1], pos[4]) and np.all(rpy[:2] == 0.0)
    assert np.all(np.isnan(positions[2])) and np.all(np.isnan(rpy[2]))
    positions, rpy, counts = poses_in_windows(windows, pose_ns, pos, quat, min_samples=2)
    assert counts.tolist() == [3, 1, 0]
    assert np.all(np.isfinite(positions[0])) and np.all(np.isnan(positions[1:]))
    with pytest.raises(ValueError, match="one row per pose stamp"):
        poses_in_windows(windows, pose_ns, pos[:5], quat)


def test_the_module_is_declared_in_the_package_stub():
    import figaroh.data as data

    assert data.bag_time is bag_time
    assert data.resample is resample and data.still_windows is still_windows
