"""Regressor build time versus a bare loop of ``pin.computeJointTorqueRegressor``.

Prints the ratio (figaroh / bare loop) for 10 000 UR10 samples with friction,
actuator inertia and offset columns. Best of several interleaved repeats, so
that background load affects both sides alike. No assertion: this is a report.

    .venv/bin/python benchmarks/bench_regressor.py [--samples 10000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pinocchio as pin

from figaroh.tools.randomdata import generate_waypoints
from figaroh.tools.regressor import build_regressor_basic
from figaroh.tools.robot import Robot
from figaroh.tools.robot_paths import example_robot_data_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    urdf = example_robot_data_dir() / "ur_description/urdf/ur10_robot.urdf"
    robot = Robot(str(urdf), load_geometry=False)
    rng = np.random.default_rng(0)
    q, v, a = generate_waypoints(args.samples, robot, -3.0, 3.0, rng=rng)
    cfg = {
        "has_friction": True,
        "has_actuator_inertia": True,
        "has_joint_offset": True,
        "act_idxv": list(range(robot.model.nv)),
    }
    model, data = robot.model, robot.data

    def bare() -> None:
        for i in range(args.samples):
            pin.computeJointTorqueRegressor(model, data, q[i], v[i], a[i])

    def figaroh() -> None:
        build_regressor_basic(robot, q, v, a, cfg)

    t_bare, t_fig = [], []
    for _ in range(args.repeats):
        for fn, store in ((bare, t_bare), (figaroh, t_fig)):
            start = time.perf_counter()
            fn()
            store.append(time.perf_counter() - start)
    b, f = min(t_bare), min(t_fig)
    W = build_regressor_basic(robot, q, v, a, cfg)
    print(f"UR10, {args.samples} samples, regressor {W.shape[0]}x{W.shape[1]}")
    print(f"bare pin.computeJointTorqueRegressor loop: {b * 1e3:8.1f} ms")
    print(f"figaroh build_regressor_basic:             {f * 1e3:8.1f} ms")
    print(f"ratio figaroh / bare loop:                 {f / b:8.3f}")


if __name__ == "__main__":
    main()
