"""End-to-end identification time versus the irreducible regressor cost.

UR10, 10 000 training samples and a 10 000-sample held-out trajectory:
``initialize()`` + ``solve(decimate=False, plotting=False)`` against a bare
Python loop calling ``pin.computeJointTorqueRegressor`` once per training and
validation sample. Prints both times and the ratio (best of several repeats).

    .venv/bin/python benchmarks/bench_identification.py [--samples 10000] [--repeats 3]

The ratio depends on BLAS threading: on a 2-vCPU VM it measured 3.67–3.89
with ``OPENBLAS_NUM_THREADS=1`` and 3.8–5.0 (run to run) with OpenBLAS's default two threads
(the single-threaded parts after a matrix call, e.g. the validation regressor
loop, ran up to 2× slower).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ur10"))

from identification import CONFIG, UR10Identification, generate_ur10_data  # noqa: E402
from simulate import load_ur10  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    robot = load_ur10()
    with tempfile.TemporaryDirectory() as tmp:
        train, validation = generate_ur10_data(
            tmp, n_samples=args.samples, noise_std=0.5, robot=robot
        )
        probe = UR10Identification(robot, CONFIG, data_dir=train)
        probe.identif_config["validation_data_file"] = str(validation)
        probe.initialize()
        Q = [probe.processed_data["positions"], probe._val_processed_data["positions"]]
        V = [probe.processed_data["velocities"], probe._val_processed_data["velocities"]]
        A = [probe.processed_data["accelerations"], probe._val_processed_data["accelerations"]]
        model, data = robot.model, robot.data

        def bare() -> None:
            for q, v, a in zip(Q, V, A, strict=True):
                for i in range(q.shape[0]):
                    pin.computeJointTorqueRegressor(model, data, q[i], v[i], a[i])

        def figaroh() -> float:
            ident = UR10Identification(robot, CONFIG, data_dir=train)  # config parsing: not timed
            ident.identif_config["validation_data_file"] = str(validation)
            with contextlib.redirect_stdout(io.StringIO()):
                start = time.perf_counter()
                ident.initialize()
                ident.solve(decimate=False, plotting=False)
                return time.perf_counter() - start

        t_bare, t_fig = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            bare()
            t_bare.append(time.perf_counter() - start)
            t_fig.append(figaroh())
    b, f = min(t_bare), min(t_fig)
    print(f"UR10 identification, {args.samples} training + {args.samples} validation samples")
    print(f"bare regressor loop ({2 * args.samples} calls): {b * 1e3:8.1f} ms")
    print(f"initialize() + solve(decimate=False):      {f * 1e3:8.1f} ms")
    print(f"ratio:                                      {f / b:8.2f}")


if __name__ == "__main__":
    main()
