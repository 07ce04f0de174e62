"""Waypoint splines against ndcurves, the library figaroh 1.0.2 builds them with.

Truth: ``ndcurves`` itself, used as 1.0.2 uses it — one ``exact_cubic`` per
interval between consecutive waypoints (with ``curve_constraints`` holding the
end velocities and accelerations when both waypoint arrays are given),
appended to a ``piecewise`` curve, sampled with ``curve(t)`` and
``derivate(t, 1 | 2)`` at ``t_min + i·dt``, ``N = int(T/dt) + 1``.
"""

from __future__ import annotations

import numpy as np
import pytest

from figaroh.utils.cubic_spline import (
    REST_PEAK_SPEED,
    CubicSpline,
    peak_velocities,
    sample_times,
    spline_basis,
)

ndcurves = pytest.importorskip("ndcurves")

UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]


def _ndcurves_piecewise(tps, wps, vel=None, acc=None):
    """1.0.2's construction: one exact_cubic per interval, joined in a piecewise."""
    n, m = wps.shape
    curve = ndcurves.piecewise()
    for k in range(m - 1):
        points, times = wps[:, k : k + 2], np.asarray(tps[k : k + 2], dtype=float)
        if vel is not None and acc is not None:
            constraints = ndcurves.curve_constraints(n)
            constraints.init_vel = vel[:, k]
            constraints.end_vel = vel[:, k + 1]
            constraints.init_acc = acc[:, k]
            constraints.end_acc = acc[:, k + 1]
            curve.append(ndcurves.exact_cubic(points, times, constraints))
        else:
            curve.append(ndcurves.exact_cubic(points, times))
    return curve


def _ndcurves_samples(curve, t):
    q = np.array([np.ravel(curve(ti)) for ti in t])
    dq = np.array([np.ravel(curve.derivate(ti, 1)) for ti in t])
    ddq = np.array([np.ravel(curve.derivate(ti, 2)) for ti in t])
    return q, dq, ddq


def _random_case(rng, n, m):
    tps = np.cumsum(np.r_[rng.uniform(-1.0, 1.0), rng.uniform(0.3, 2.5, m - 1)])
    wps = rng.uniform(-np.pi, np.pi, (n, m))
    vel = rng.uniform(-2.0, 2.0, (n, m))
    acc = rng.uniform(-6.0, 6.0, (n, m))
    return tps, wps, vel, acc


def _within_range(t, tps):
    """Sample times ndcurves can evaluate (it raises beyond t_max, even by round-off)."""
    return t[t <= tps[-1]]


@pytest.mark.parametrize("constrained", [False, True])
def test_spline_basis_equals_ndcurves_on_random_waypoints(constrained):
    rng = np.random.default_rng(20 + constrained)
    worst = 0.0
    for case in range(25):
        n, m = int(rng.integers(1, 7)), int(rng.integers(2, 9))
        tps, wps, vel, acc = _random_case(rng, n, m)
        freq = float(rng.choice([20.0, 50.0, 100.0, 137.0]))
        t = _within_range(sample_times(freq, tps), tps)
        # waypoint times themselves: which piece ndcurves picks where the acceleration jumps
        t = np.sort(np.r_[t, tps])
        basis = spline_basis(tps, t, constrained=constrained)
        ours = basis.evaluate(wps, vel, acc)
        truth = _ndcurves_samples(
            _ndcurves_piecewise(tps, wps, *((vel, acc) if constrained else (None, None))), t
        )
        for a, b in zip(ours, truth, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-10, err_msg=f"case {case}")
            worst = max(worst, float(np.abs(a - b).max()))
    assert worst < 1e-10


@pytest.mark.parametrize("given", ["both", "velocities only", "none"])
def test_get_active_config_equals_ndcurves(ur10_robot, given):
    """The public path, with 1.0.2's rule: constraints only when both arrays are given."""
    rng = np.random.default_rng(7)
    cb = CubicSpline(ur10_robot, 5, UR10_JOINTS)
    tps, wps, vel, acc = _random_case(rng, 6, 5)
    args = {"both": (vel, acc), "velocities only": (vel, None), "none": (None, None)}[given]
    t, q, dq, ddq = cb.get_active_config(100, tps.reshape(-1, 1), wps, *args)
    constrained = given == "both"
    truth = _ndcurves_samples(
        _ndcurves_piecewise(tps, wps, *(args if constrained else (None, None))),
        _within_range(t.ravel(), tps),
    )
    for a, b in zip((q, dq, ddq), truth, strict=True):
        np.testing.assert_allclose(a[: len(b)], b, rtol=0, atol=1e-10)
    if given == "velocities only":  # ignored, as 1.0.2 ignores them without accelerations
        plain = cb.get_active_config(100, tps.reshape(-1, 1), wps)
        for a, b in zip((t, q, dq, ddq), plain, strict=True):
            np.testing.assert_array_equal(a, b)


def test_sample_times_follow_the_1_0_2_rule():
    """dt = 1/freq, N = int(T/dt) + 1, t = t_min + i·dt — truncation included."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        tps = np.cumsum(np.r_[rng.uniform(0, 1), rng.uniform(0.1, 3.0, 3)])
        freq = float(rng.choice([10.0, 20.0, 50.0, 100.0, 137.0, 1000.0]))
        t = sample_times(freq, tps)
        dt = 1 / freq
        N = int((tps.max() - tps.min()) / dt) + 1
        assert len(t) == N
        np.testing.assert_array_equal(t, [tps.min() + i * dt for i in range(N)])
    assert len(sample_times(10, [0.0, 0.3])) == 3  # 0.3/0.1 = 2.9999999999999996


def test_constraints_change_the_trajectory_as_in_ndcurves(ur10_robot):
    """With zero waypoint velocities and accelerations (what the optimiser passes) the
    pieces are rest-to-rest quintics, not the cubics used without constraints: the
    positions differ by up to (3s² − 12s³ + 15s⁴ − 6s⁵)·|Δy| = 0.0537·|Δy| at
    s = (5 ± √5)/10, and the peak speed is 15/8 instead of 3/2 ·|Δy|/T."""
    cb = CubicSpline(ur10_robot, 3, UR10_JOINTS)
    wps = np.array([[0.0, 1.0, -1.0]] * 6)
    zeros = np.zeros((6, 3))
    t, q_c, dq_c, ddq_c = cb.get_active_config(1000, [0, 2, 4], wps, zeros, zeros)
    _, q_u, dq_u, ddq_u = cb.get_active_config(1000, [0, 2, 4], wps)
    truth = _ndcurves_samples(
        _ndcurves_piecewise(np.array([0, 2, 4.0]), wps, zeros, zeros), t.ravel()
    )
    np.testing.assert_allclose(q_c, truth[0], atol=1e-12)
    s = (5 - np.sqrt(5)) / 10
    gap = 3 * s**2 - 12 * s**3 + 15 * s**4 - 6 * s**5
    assert np.abs(q_c - q_u).max() == pytest.approx(2 * gap, rel=1e-5)  # |Δy| = 2
    np.testing.assert_allclose(np.abs(dq_c[:, 0]).max(), REST_PEAK_SPEED[True] * 2 / 2)
    np.testing.assert_allclose(np.abs(dq_u[:, 0]).max(), REST_PEAK_SPEED[False] * 2 / 2)
    np.testing.assert_allclose(ddq_c[[0, 2000, 4000]], 0.0, atol=1e-12)  # C² rests


def test_peak_velocities_are_the_extremes_of_the_ndcurves_velocity():
    rng = np.random.default_rng(5)
    for constrained in (False, True):
        for _ in range(10):
            tps, wps, vel, acc = _random_case(rng, 3, 4)
            vel[:, 2] = acc[:, 2] = 0.0
            if not constrained:
                vel = acc = None
            peak, d0, d1 = peak_velocities(tps, wps, vel, acc)
            curve = _ndcurves_piecewise(tps, wps, vel, acc)
            for k in range(3):
                t = np.linspace(tps[k], tps[k + 1], 4001)
                v = np.array([np.ravel(curve.derivate(ti, 1)) for ti in t])
                extreme = v[np.abs(v).argmax(axis=0), np.arange(3)]
                np.testing.assert_allclose(peak[k], extreme, rtol=1e-6, atol=1e-9)
            # derivatives with respect to the end waypoints: central differences
            h = 1e-6
            for j in range(3):
                for w, dref in ((1, d0[1, j]), (2, d1[1, j])):
                    up, down = wps.copy(), wps.copy()
                    up[j, w] += h
                    down[j, w] -= h
                    fd = (
                        peak_velocities(tps, up, vel, acc)[0][1, j]
                        - peak_velocities(tps, down, vel, acc)[0][1, j]
                    ) / (2 * h)
                    assert fd == pytest.approx(dref, rel=1e-5, abs=1e-7)
