"""Time loading a UR10 with figaroh against Pinocchio's bare URDF parser.

The floor is ``pin.buildModelFromUrdf`` on the same file (kinematic/dynamic
model only). A :class:`~figaroh.tools.robot.Robot` parses its meshes only when
its geometry is first read, so ``Robot(urdf)`` / ``load_robot(urdf)`` without
geometry use should cost at most **2×** the floor; the rows with geometry
access show what a viewer or a collision check pays on top (the collision
meshes, then the visual meshes), next to the eager
``pin.buildModelsFromUrdf``. Prints medians and ratios; no assertions.

Usage: ``.venv/bin/python benchmarks/bench_robot_load.py [--repeats 21]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import pinocchio as pin

from figaroh.tools.load_robot import load_robot
from figaroh.tools.robot import Robot
from figaroh.tools.robot_paths import example_robot_data_dir, resolve_package_dirs

#: Goal for the loads without geometry use, as a multiple of the floor.
GOAL_RATIO = 2.0


def ur10_urdf() -> str:
    """The UR10 URDF of the installed example-robot-data wheel."""
    base = example_robot_data_dir()
    if base is None:
        raise SystemExit("example-robot-data is not installed")
    return str(base / "ur_description" / "urdf" / "ur10_robot.urdf")


def median_s(func: Callable[[], object], repeats: int) -> float:
    """Median wall-clock time [s] of ``func()`` over ``repeats`` calls (after one warm-up)."""
    func()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cases(urdf: str) -> list[tuple[str, Callable[[], object], bool]]:
    """``(label, call, without geometry use)`` rows, the floor first."""
    dirs = resolve_package_dirs(urdf)
    return [
        ("pin.buildModelFromUrdf (floor)", lambda: pin.buildModelFromUrdf(urdf), True),
        ("Robot(urdf)", lambda: Robot(urdf), True),
        ("load_robot(urdf)", lambda: load_robot(urdf), True),
        ("Robot(urdf, load_geometry=False)", lambda: Robot(urdf, load_geometry=False), True),
        ("Robot(urdf).collision_model", lambda: Robot(urdf).collision_model, False),
        (
            "Robot(urdf): collision + visual",
            lambda: (lambda r: (r.collision_model, r.visual_model))(Robot(urdf)),
            False,
        ),
        (
            "pin.buildModelsFromUrdf (eager, both)",
            lambda: pin.buildModelsFromUrdf(urdf, package_dirs=dirs),
            False,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="timed calls per cheap row")
    parser.add_argument(
        "--geometry-repeats", type=int, default=3, help="timed calls per row parsing meshes"
    )
    args = parser.parse_args()
    urdf = ur10_urdf()
    floor = 0.0
    print(f"UR10: {urdf}")
    print(f"{'case':40s} {'median':>11s} {'ratio':>9s}")
    for row, (label, func, cheap) in enumerate(cases(urdf)):
        t = median_s(func, args.repeats if cheap else args.geometry_repeats)
        floor = floor or t
        goal = f"  (goal <= {GOAL_RATIO:g}x)" if cheap and row > 0 else ""
        print(f"{label:40s} {1e3 * t:8.2f} ms {t / floor:8.2f}x{goal}")


if __name__ == "__main__":
    main()
