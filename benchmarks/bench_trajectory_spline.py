"""Waypoint splines inside the IPOPT loop: ndcurves calls versus the linear basis.

figaroh 1.0.2 samples every trajectory the optimiser evaluates by building
``ndcurves`` curves (one ``exact_cubic`` with ``curve_constraints`` per
interval, joined in a ``piecewise``) and calling ``curve(t)``,
``derivate(t, 1)`` and ``derivate(t, 2)`` at every sample. figaroh's
optimiser evaluates the same polynomials through the basis matrices of
:func:`figaroh.utils.cubic_spline.spline_basis` (equal to ndcurves to 1e-10,
``tests/test_cubic_spline.py``): a matrix product per trajectory, a column
update per finite-difference probe.

The benchmark runs the UR10 example's design (9 waypoints, 8 s at 50 Hz,
6 joints) for ``--iterations`` IPOPT iterations, counts the trajectories and
the gradient probes the loop samples, times one of each both ways, and prints
what the splines cost per run either way next to the run's wall time. No
assertion: this is a report.

    .venv/bin/python benchmarks/bench_trajectory_spline.py [--iterations 40] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from figaroh.optimal import base_optimal_trajectory as bot
from figaroh.utils.cubic_spline import sample_times, spline_basis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "ur10"))

import optimal_trajectory as ur10_example  # noqa: E402


def ndcurves_samples(ndcurves, tps, wps, vel, acc, t):
    """1.0.2's sampling: exact_cubic + curve_constraints per interval, piecewise, derivate."""
    n = wps.shape[0]
    curve = ndcurves.piecewise()
    for k in range(wps.shape[1] - 1):
        constraints = ndcurves.curve_constraints(n)
        constraints.init_vel, constraints.end_vel = vel[:, k], vel[:, k + 1]
        constraints.init_acc, constraints.end_acc = acc[:, k], acc[:, k + 1]
        curve.append(ndcurves.exact_cubic(wps[:, k : k + 2], tps[k : k + 2], constraints))
    q = np.array([curve(ti) for ti in t])
    dq = np.array([curve.derivate(ti, 1) for ti in t])
    ddq = np.array([curve.derivate(ti, 2) for ti in t])
    return q, dq, ddq


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import ndcurves

    opt = ur10_example.build(
        seed=0, max_iterations=args.iterations, cond_smoothing=16, ipopt_print_level=0
    )
    counts = {"trajectories": 0, "probes": 0}
    trajectory, derivatives = bot._SegmentEvaluator.trajectory, bot._SegmentEvaluator.derivatives

    def counted_trajectory(self, X):
        counts["trajectories"] += 1
        return trajectory(self, X)

    def counted_derivatives(self, X):
        if np.asarray(X, dtype=float).tobytes() not in self._dcache:
            counts["probes"] += np.asarray(X).size
        return derivatives(self, X)

    bot._SegmentEvaluator.trajectory = counted_trajectory
    bot._SegmentEvaluator.derivatives = counted_derivatives
    start = time.perf_counter()
    opt.solve(stack_reps=1, verbose=False)
    wall = time.perf_counter() - start
    bot._SegmentEvaluator.trajectory, bot._SegmentEvaluator.derivatives = trajectory, derivatives

    tc = opt.trajectory_config
    n, m = len(opt.active_joints), tc["n_wps"]
    tps = tc["t_s"] * np.arange(m)
    t = sample_times(tc["freq"], tps)
    rng = np.random.default_rng(0)
    wps = rng.uniform(-2.0, 2.0, (n, m))
    zeros = np.zeros((n, m))
    basis = spline_basis(tps, t, constrained=True)
    pieces = (t >= tps[3]) & (t < tps[5])  # a probe of waypoint 4 changes two pieces
    t_probe = t[pieces]

    full_nd = best_of(lambda: ndcurves_samples(ndcurves, tps, wps, zeros, zeros, t), args.repeats)
    probe_nd = best_of(
        lambda: ndcurves_samples(
            ndcurves, tps[3:6], wps[:, 3:6], zeros[:, 3:6], zeros[:, 3:6], t_probe
        ),
        args.repeats,
    )
    full_basis = best_of(lambda: basis.evaluate(wps, zeros, zeros), 20 * args.repeats)
    q = basis.pos_y[pieces] @ wps.T

    def probe_update() -> None:
        out = q.copy()
        out[:, 2] += 1e-6 * basis.pos_y[pieces, 4]

    probe_basis = best_of(probe_update, 20 * args.repeats)
    nt, npr = counts["trajectories"], counts["probes"]
    cost_nd = nt * full_nd + npr * probe_nd
    cost_basis = nt * full_basis + npr * probe_basis
    print(f"UR10 design, {len(t)} samples x {n} joints, {m} waypoints, {args.iterations} iter.")
    print(f"IPOPT run: {wall:.2f} s wall; {nt} trajectories and {npr} gradient probes sampled")
    print(f"one trajectory: ndcurves {full_nd * 1e3:8.3f} ms   basis {full_basis * 1e3:8.4f} ms")
    print(f"one probe:      ndcurves {probe_nd * 1e3:8.3f} ms   basis {probe_basis * 1e3:8.4f} ms")
    print(
        f"splines per run: ndcurves {cost_nd:.2f} s ({100 * cost_nd / wall:.0f} % of the run), "
        f"basis {cost_basis:.3f} s ({100 * cost_basis / wall:.1f} %)"
    )


if __name__ == "__main__":
    main()
