"""Physical-fit solve time: PICOS + CVXOPT against Clarabel, 2 000 and 20 000 samples.

UR10 simulated data (the identification example), ``solve(decimate=False)``,
then the direct LMI effort fit of ``select_stage: physical_fit``
(:func:`figaroh.identification.physical_fit.solve_direct_effort_fit`, 72
standard parameters, six 4×4 pseudo-inertia LMIs). The problem is reduced once
by :func:`~figaroh.identification.physical_fit.build_problem` to ``R`` (n×n)
and ``Qᵀτ``; the SDP only sees those, so the solve time must not grow with the
number of samples. Prints the reduction time and the solve time per back-end
(median and best of ``--repeats``).

    .venv/bin/python benchmarks/bench_physical_fit.py [--samples 2000 20000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ur10"))

from identification import CONFIG, UR10Identification, generate_ur10_data  # noqa: E402
from simulate import load_ur10  # noqa: E402

from figaroh.identification import _conic  # noqa: E402
from figaroh.identification import physical_fit as pf  # noqa: E402


def problem_for(robot, n_samples: int, tmp: str) -> pf.ComparatorProblem:
    train, _ = generate_ur10_data(tmp, n_samples=n_samples, noise_std=0.5, seed=3, robot=robot)
    ident = UR10Identification(robot, CONFIG, data_dir=train)
    with contextlib.redirect_stdout(io.StringIO()):
        ident.initialize()
        ident.solve(decimate=False, plotting=False)
    names = list(ident.standard_parameter)
    keep = [i for i in range(len(names)) if i not in set(ident._idx_eliminated)]
    Y = np.zeros((ident._solve_W.shape[0], len(names)))
    Y[:, keep] = ident._solve_W
    prior = np.array([float(v) for v in ident.standard_parameter.values()])
    start = time.perf_counter()
    p = pf.build_problem(Y, ident._solve_tau, names, list(ident.model.names[1:]), prior=prior)
    print(
        f"  {n_samples:>6d} samples: {Y.shape[0]} x {Y.shape[1]} regressor reduced to "
        f"R {p.R.shape} in {1e3 * (time.perf_counter() - start):.1f} ms"
    )
    return p


def time_solver(p: pf.ComparatorProblem, solver: str, repeats: int) -> tuple:
    """(median SDP time, best SDP time, median time with the record, status)."""
    sdp, total, status = [], [], ""
    pf.solve_direct_effort_fit(p, solver=solver)  # warm-up (imports, first-call setup)
    for _ in range(repeats):
        start = time.perf_counter()
        record = pf.solve_direct_effort_fit(p, solver=solver)
        total.append(time.perf_counter() - start)
        sdp.append(record.runtime_s)  # model building + solve, without the N-row record
        status = f"{record.solver_status}, accepted={record.accepted}"
    return statistics.median(sdp), min(sdp), statistics.median(total), status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    solvers = ["cvxopt"] + (["clarabel"] if "clarabel" in _conic.available_solvers() else [])
    if "clarabel" not in solvers:
        print("clarabel is not installed (pip install 'figaroh[fast]'): timing cvxopt only")
    robot = load_ur10()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.samples:
            p = problem_for(robot, n, str(Path(tmp) / str(n)))
            for solver in solvers:
                rows.append((n, solver, *time_solver(p, solver, args.repeats)))
    print("\nphysical-fit solve time (SDP = model + solve; total adds the N-row SolveRecord)")
    head = ("samples", "solver", "SDP median", "SDP best", "total")
    print(f"{head[0]:>8s}  {head[1]:<9s} {head[2]:>11s} {head[3]:>9s} {head[4]:>9s}  status")
    for n, solver, med, best, total, status in rows:
        print(
            f"{n:>8d}  {solver:<9s} {1e3 * med:>9.1f}ms {1e3 * best:>7.1f}ms "
            f"{1e3 * total:>7.1f}ms  {status}"
        )


if __name__ == "__main__":
    main()
