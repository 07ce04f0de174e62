"""Whole-process time of a UR10 calibration script against ``import numpy, pinocchio``.

The script is the UR10 example's simulated case (``examples/ur10/calibration.py
--simulate``) written as a figaroh 1.0.2 user writes it, robots loaded with the
default arguments (geometry available):

1. load the UR10 (``Robot(urdf)``) and simulate 40 training and 40 held-out
   postures measured through a model with known joint-placement errors, with
   0.5 mm / 0.1° Gaussian noise;
2. load the UR10 again, calibrate (``initialize()`` + ``solve()``:
   ``scipy.optimize.least_squares(method="lm")`` with figaroh 1.0.2's
   arguments, finite-difference Jacobian) and validate on the held-out
   postures.

Each run is a fresh ``python`` process; the script reports its own phases
(imports, the two robot loads, simulation, calibration) and the parent times
the whole process, wall clock and CPU (user + system). The goal is a whole
script at most **+0.5 s** over the ``python -c "import numpy, pinocchio"``
baseline, **plus** the import of ``scipy.optimize`` that the solve needs (the
last row: that import alone; the structural base-parameter QR imports
``scipy.linalg`` for its pivoted ``scipy.linalg.qr``). A second script row
runs the same calibration with the analytic-Jacobian option
(``calib_config["jacobian"] = "analytic"``). Prints medians; no assertions.

    .venv/bin/python benchmarks/bench_calibration.py [--runs 7]

As in ``bench_startup.py``, figaroh runs from compiled bytecode kept in a
temporary ``PYTHONPYCACHEPREFIX`` (one warm-up process first). Timings include
interpreter start-up and vary with the machine's load: compare medians of one
session.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Mapping, Tuple

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "ur10"
BASELINE = "import numpy, pinocchio"
SCIPY_OPTIMIZE = "import numpy, pinocchio, scipy.optimize"
GOAL_S = 0.5

#: The timed script; prints its phase durations [s] as one JSON line.
SCRIPT = """
import time
t0 = time.perf_counter()
import json, sys, tempfile
import numpy as np
import pinocchio
t1 = time.perf_counter()
sys.path.insert(0, {examples!r})
import calibration as ex  # figaroh.calibration.base_calibration, figaroh.tools.robot
import figaroh
t2 = time.perf_counter()
optimize_at_import = "scipy.optimize" in sys.modules
urdf = ex.ur10_urdf()
sim_robot = ex.Robot(urdf)
t3 = time.perf_counter()
train, test, truth = ex.simulate_ur10_calibration(
    tempfile.mkdtemp(prefix="bench_calib_"), robot=sim_robot, n_train=40, n_test=40,
    pos_noise=5e-4, rot_noise=np.deg2rad(0.1), seed=3,
)
t4 = time.perf_counter()
robot = ex.Robot(urdf)
t5 = time.perf_counter()
calib = ex.make_calibrator(robot, train, analytic_jacobian={analytic})
calib.calib_config["measurement_std"] = {{"position": 5e-4, "orientation": float(np.deg2rad(0.1))}}
calib.set_data_file(test, validation=True)
calib.initialize()
calib.solve(enable_logging=False)
t6 = time.perf_counter()
est = dict(zip(calib.calib_config["param_name"], calib.var_))
err = max(abs(est[k] - v) for k, v in truth.items())
print(json.dumps({{
    "numpy+pinocchio": t1 - t0, "figaroh imports": t2 - t1, "robot loads": (t3 - t2) + (t5 - t4),
    "simulation": t4 - t3, "calibration": t6 - t5, "in script": t6 - t0,
    "scipy.optimize at import": optimize_at_import,
    "max |estimate - truth|": err,
}}))
"""


def run_process(args: List[str], env: Mapping[str, str]) -> Tuple[float, float, str]:
    """Wall-clock and CPU (user + system) time [s] and stdout of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(args, env=dict(env), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{args[:2]} failed:\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="processes per row")
    args = parser.parse_args()
    script = SCRIPT.format(examples=str(EXAMPLES), analytic=False)
    script_analytic = SCRIPT.format(examples=str(EXAMPLES), analytic=True)
    with tempfile.TemporaryDirectory(prefix="bench_calib_pyc_") as cache:
        env = {**os.environ, "PYTHONPYCACHEPREFIX": cache, "OPENBLAS_NUM_THREADS": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        rows = {
            "baseline": [sys.executable, "-c", BASELINE],
            "script": [sys.executable, "-c", script],
            "script_analytic": [sys.executable, "-c", script_analytic],
        }
        rows["scipy.optimize"] = [sys.executable, "-c", SCIPY_OPTIMIZE]
        for argv in rows.values():
            run_process(argv, env)  # warm-up: compile bytecode, fill the OS cache
        wall: Dict[str, List[float]] = {k: [] for k in rows}
        cpu: Dict[str, List[float]] = {k: [] for k in rows}
        phases: List[dict] = []
        for _ in range(args.runs):
            for name, argv in rows.items():  # interleaved, so load changes hit every row
                w, c, out = run_process(argv, env)
                wall[name].append(w)
                cpu[name].append(c)
                if name == "script":
                    phases.append(json.loads(out.strip().splitlines()[-1]))
    base_w, base_c = statistics.median(wall["baseline"]), statistics.median(cpu["baseline"])
    print(f"{'process':52s} {'wall':>8s} {'+base':>8s} {'cpu':>8s} {'+base':>8s}")
    labels = {
        "baseline": f'python -c "{BASELINE}"',
        "script": "UR10 calibration script (40 poses)",
        "script_analytic": "  same, jacobian: analytic",
        "scipy.optimize": f'python -c "{SCIPY_OPTIMIZE}"',
    }
    for name in rows:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        goal = f"  (goal <= +{GOAL_S:g} s + scipy.optimize)" if name == "script" else ""
        print(
            f"{labels[name]:52s} {w:7.3f}s {w - base_w:+7.3f}s {c:7.3f}s {c - base_c:+7.3f}s{goal}"
        )
    print("\nphases inside the script (median over runs):")
    for key in phases[0]:
        values = [p[key] for p in phases]
        if isinstance(values[0], bool):
            print(f"  {key:28s} {values[0]}")
        elif key.startswith("max"):
            print(f"  {key:28s} {statistics.median(values):.3g}")
        else:
            print(f"  {key:28s} {statistics.median(values):7.3f} s")


if __name__ == "__main__":
    main()
