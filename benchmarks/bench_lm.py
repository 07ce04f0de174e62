"""Calibration least squares: finite-difference Jacobian (figaroh 1.0.2) vs the analytic option.

The calibration solves ``scipy.optimize.least_squares(objective, x0,
method="lm", max_nfev=1000)`` with figaroh 1.0.2's default finite-difference
Jacobian; ``calib_config["jacobian"] = "analytic"`` (config
``parameters.jacobian: analytic``) passes the analytic Jacobian instead. For
each case, in process, both settings run ``initialize()`` + ``solve()`` (one
warm-up run first) and the script prints:

* the median wall time of ``solve()`` [ms] and the number of calls of the
  cost function (a finite-difference Jacobian costs one call per parameter);
* the change of the result: largest ``|x_analytic − x_2point|`` over the
  parameters [m or rad] and relative to ``max(|x|, 1 mm or mrad)``, and the
  relative change of the training RMSE.

Cases: the three calibration examples on the shared real data (UR10 6-DoF
pose data, TIAGo mocap positions, TALOS contact positions; each example's
``cost_jacobian`` differentiates its figaroh 1.0.2 cost) and the simulated
UR10 case of the UR10 example (40 postures, 0.5 mm / 0.1° noise). No
assertions.

    .venv/bin/python benchmarks/bench_lm.py [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def _example(robot: str) -> Any:
    path = ROOT / "examples" / robot / "calibration.py"
    spec = importlib.util.spec_from_file_location(f"bench_{robot}_calibration", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _cases() -> Dict[str, Callable[[bool], Any]]:
    """``name -> make(analytic) -> calibrator`` (configured, not initialised)."""
    ur10, tiago, talos = _example("ur10"), _example("tiago"), _example("talos")
    cases: Dict[str, Callable[[bool], Any]] = {}
    if (SHARED / "ur10" / "calibration.csv").is_file():
        robot = ur10.Robot(ur10.ur10_urdf(), load_geometry=False)
        cases["UR10 real (23 poses, 6-DoF)"] = lambda a: ur10.make_calibrator(
            robot, SHARED / "ur10" / "calibration.csv", analytic_jacobian=a
        )
    if tiago.DEFAULT_DATA.is_file() and tiago.DEFAULT_URDF.is_file():
        cases["TIAGo mocap (34 positions)"] = lambda a: tiago.make_calibrator(
            tiago.DEFAULT_URDF, tiago.DEFAULT_DATA, analytic_jacobian=a
        )
    if talos.DEFAULT_DATA.is_file() and talos.DEFAULT_URDF.is_file():
        cases["TALOS contact (61 positions)"] = lambda a: talos.make_calibrator(
            talos.DEFAULT_URDF, talos.DEFAULT_DATA, analytic_jacobian=a
        )
    sim_robot = ur10.Robot(ur10.ur10_urdf(), load_geometry=False)
    train, _, _ = ur10.simulate_ur10_calibration(
        tempfile.mkdtemp(prefix="bench_lm_"), robot=sim_robot, n_train=40, n_test=5,
        pos_noise=5e-4, rot_noise=float(np.deg2rad(0.1)), seed=3,
    )  # fmt: skip
    cases["UR10 simulated (40 poses, 6-DoF)"] = lambda a: ur10.make_calibrator(
        sim_robot, train, analytic_jacobian=a
    )
    return cases


def _solve(make: Callable[[bool], Any], analytic: bool) -> Tuple[float, int, Any]:
    calib = make(analytic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.initialize()
        calls: List[int] = []
        real = calib.cost_function

        def counted(var):
            calls.append(1)
            return real(var)

        calib.cost_function = counted
        t = time.perf_counter()
        calib.solve(enable_logging=False, verbose=False)
        dt = time.perf_counter() - t
    return dt, len(calls), calib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per setting")
    args = parser.parse_args()
    print(
        f"{'case':34s} {'jacobian':9s} {'solve':>9s} {'cost calls':>10s} "
        f"{'max |dx|':>10s} {'max rel dx':>10s} {'d rmse':>9s}"
    )
    for name, make in _cases().items():
        out = {}
        for analytic in (False, True):
            _solve(make, analytic)  # warm-up
            runs = [_solve(make, analytic) for _ in range(args.runs)]
            out[analytic] = (statistics.median(r[0] for r in runs), runs[0][1], runs[0][2])
        x0, x1 = out[False][2].var_, out[True][2].var_
        dx = np.abs(x1 - x0)
        rel = dx / np.maximum(np.abs(x0), 1e-3)
        r0 = out[False][2].evaluation_metrics["rmse"]
        r1 = out[True][2].evaluation_metrics["rmse"]
        for analytic in (False, True):
            t, n, _ = out[analytic]
            tail = f" {dx.max():10.2e} {rel.max():10.2e} {(r1 - r0) / r0:+9.1e}" if analytic else ""
            label = "analytic" if analytic else "2-point"
            print(f"{name if not analytic else '':34s} {label:9s} {t * 1e3:7.1f}ms {n:10d}{tail}")


if __name__ == "__main__":
    main()
