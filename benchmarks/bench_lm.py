"""figaroh's MINPACK ``lmder`` port against ``scipy.optimize.least_squares(method="lm")``.

Two rows:

1. import cost: a fresh ``python -c "import numpy; import <module>"`` for
   ``figaroh.tools._lm`` and for ``scipy.optimize`` (the import the port avoids),
   over ``python -c "import numpy"``;
2. solve time on the simulated UR10 calibration objective (40 postures, the
   user's analytic Jacobian), in process, both solvers from the same start,
   with a check that they return the same ``x`` and ``nfev``.

Prints medians and ratios; no assertions.

    .venv/bin/python benchmarks/bench_lm.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _process(code: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t


def _imports(runs: int) -> None:
    rows = {
        "numpy": "import numpy",
        "numpy + figaroh.tools._lm": "import numpy; import figaroh.tools._lm",
        "numpy + scipy.optimize": "import numpy; import scipy.optimize",
    }
    _process(rows["numpy + figaroh.tools._lm"])  # warm the bytecode cache
    med = {k: statistics.median(_process(c) for _ in range(runs)) for k, c in rows.items()}
    base = med["numpy"]
    print(f"{'process':40s} {'wall':>8s} {'+numpy':>8s}")
    for k, v in med.items():
        print(f"{k:40s} {v:7.3f}s {v - base:+7.3f}s")


def _ur10_objective():
    sys.path.insert(0, str(ROOT / "examples" / "ur10"))
    import calibration as ex  # the UR10 example (simulation + calibrator)

    robot = ex.Robot(ex.ur10_urdf())
    train, _, _ = ex.simulate_ur10_calibration(
        tempfile.mkdtemp(prefix="bench_lm_"), robot=robot, n_train=40, n_test=5,
        pos_noise=5e-4, rot_noise=float(np.deg2rad(0.1)), seed=3,
    )  # fmt: skip
    calib = ex.make_calibrator(ex.Robot(ex.ur10_urdf()), train)
    calib.initialize()
    calib._excluded_rows = np.zeros(0, dtype=int)
    return calib._objective, calib._objective_jacobian, calib._initial_vector()


def _solves(runs: int) -> None:
    from scipy.optimize import least_squares

    from figaroh.tools._lm import least_squares_lm

    fun, jac, x0 = _ur10_objective()

    def timed(solve):
        out = []
        for _ in range(runs):
            t = time.perf_counter()
            res = solve()
            out.append(time.perf_counter() - t)
        return statistics.median(out), res

    t_port, a = timed(lambda: least_squares_lm(fun, x0, jac, max_nfev=1000))
    t_scipy, b = timed(lambda: least_squares(fun, x0, jac=jac, method="lm", max_nfev=1000))
    same = np.array_equal(a.x, b.x) and (a.nfev, a.njev, a.status) == (b.nfev, b.njev, b.status)
    print(f"\nUR10 objective ({len(x0)} parameters, nfev {a.nfev}, njev {a.njev}):")
    print(f"  figaroh port  {t_port * 1e3:8.1f} ms")
    print(f"  scipy lm      {t_scipy * 1e3:8.1f} ms")
    print(f"  ratio port/scipy {t_port / t_scipy:.2f}; same x, nfev, njev, status: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="repetitions per row")
    args = parser.parse_args()
    _imports(args.runs)
    _solves(args.runs)


if __name__ == "__main__":
    main()
