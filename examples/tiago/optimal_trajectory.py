"""Optimal exciting trajectory for the TIAGo torso + arm identification.

``OptimalTrajectoryIPOPT`` is the TIAGo subclass of
:class:`figaroh.optimal.BaseOptimalTrajectory`. The robot is the TIAGo of the
shared data folder (``urdf/tiago_no_hand.urdf``, meshes from
``../models``) reduced to the torso lift and the seven arm joints (the other
joints are locked at the neutral posture, their links merged into their
parents, collision geometry included). Self-collision uses the non-adjacent
geometry pairs minus those disabled by ``tiago_description/srdf/tiago.srdf``.

The identification settings come from ``config/tiago_unified_config.yaml``
(friction, actuator inertia and offsets identified); when that file has no
``optimal_trajectory`` task the upstream TIAGo settings are used:
``soft_lim: 0.1``, ``max_attempts: 500``, 7 waypoints 2 s apart at 100 Hz.

Run ``python examples/tiago/optimal_trajectory.py [DATA_DIR]`` (default
``<repo>/../shared/data/tiago``; ``--frequency``, ``--waypoints``,
``--segments``, ``--max-iterations``, ``--objective``, ``--seed``, ``--out``,
``--plot``).
"""

from __future__ import annotations

import argparse
import copy
import logging
import time
from pathlib import Path
from typing import Any, Dict, Mapping, Sequence

import numpy as np
import pinocchio as pin

from figaroh.optimal import BaseOptimalTrajectory
from figaroh.tools.robot import Robot
from figaroh.utils.config_parser import parse_configuration

logger = logging.getLogger(__name__)

EXAMPLE_DIR = Path(__file__).resolve().parent
ROOT = EXAMPLE_DIR.parents[1]
DEFAULT_CONFIG = EXAMPLE_DIR / "config" / "tiago_unified_config.yaml"
DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data" / "tiago"
DEFAULT_URDF = "tiago_no_hand.urdf"
TIAGO_JOINTS = ("torso_lift_joint",) + tuple(f"arm_{i}_joint" for i in range(1, 8))

#: Upstream TIAGo trajectory task (used when the configuration has none).
TIAGO_TRAJECTORY_TASK: Dict[str, Any] = {
    "enabled": True,
    "type": "trajectory_optimization",
    "problem": {"soft_lim": 0.1, "max_attempts": 500},
    "trajectory": {"waypoints": 7, "frequency": 100, "segment_duration": 2.0},
}


class OptimalTrajectoryIPOPT(BaseOptimalTrajectory):
    """TIAGo optimal exciting trajectory.

    The base class already does everything (its IPOPT problem is named after
    the model); a robot subclass only overrides what differs, e.g.
    ``create_ipopt_problem`` to return a customised problem.
    """


def models_dir(data_dir: str | Path) -> Path:
    """Folder of the robot description packages next to the TIAGo data (``../models``)."""
    return Path(data_dir).resolve().parent / "models"


def srdf_path(data_dir: str | Path) -> Path | None:
    """TIAGo SRDF (disabled collision pairs), or None when absent."""
    path = models_dir(data_dir) / "tiago_description" / "srdf" / "tiago.srdf"
    return path if path.is_file() else None


def load_tiago_with_geometry(
    data_dir: str | Path = DEFAULT_DATA_DIR,
    urdf: str = DEFAULT_URDF,
    keep_joints: Sequence[str] = TIAGO_JOINTS,
) -> Robot:
    """TIAGo with collision geometry, reduced to ``keep_joints``.

    Raises:
        FileNotFoundError: The URDF or its meshes are missing.
    """
    data_dir = Path(data_dir)
    path = data_dir / "urdf" / urdf
    if not path.is_file():
        raise FileNotFoundError(
            f"TIAGo URDF not found: {path}. Pass the TIAGo data folder (holding urdf/ and "
            "next to models/), e.g. ../shared/data/tiago"
        )
    robot = Robot(str(path), package_dirs=str(models_dir(data_dir)))
    model = robot.model
    missing = [j for j in keep_joints if not model.existJointName(j)]
    if missing:
        raise ValueError(f"{path} has no joint(s) {missing}")
    lock = [j for j in range(1, model.njoints) if model.names[j] not in set(keep_joints)]
    reduced, (collision, visual) = pin.buildReducedModel(
        model, [robot.collision_model, robot.visual_model], lock, pin.neutral(model)
    )
    reduced.name = model.name
    robot.model, robot.data = reduced, reduced.createData()
    robot.collision_model = robot.geom_model = collision
    robot.collision_data = collision.createData()
    robot.visual_model, robot.visual_data = visual, visual.createData()
    robot.q0 = pin.neutral(reduced)
    robot.v0 = np.zeros(reduced.nv)
    robot._backend = None  # the dynamics backend must wrap the reduced model
    return robot


def tiago_config(
    config_file: str | Path = DEFAULT_CONFIG, srdf: Path | None = None
) -> Mapping[str, Any]:
    """Parsed unified configuration with an ``optimal_trajectory`` task.

    The upstream TIAGo task (:data:`TIAGO_TRAJECTORY_TASK`) is added when the
    file has none; ``srdf`` is set as the collision SRDF.
    """
    config = copy.deepcopy(parse_configuration(config_file))
    tasks = config.setdefault("tasks", {})
    task = tasks.get("optimal_trajectory")
    if not isinstance(task, Mapping) or not task.get("enabled", True):
        task = copy.deepcopy(TIAGO_TRAJECTORY_TASK)
    tasks["optimal_trajectory"] = task
    if srdf is not None:
        task.setdefault("collision", {})["srdf"] = str(srdf)
    return config


def build(
    data_dir: str | Path = DEFAULT_DATA_DIR,
    config_file: str | Path = DEFAULT_CONFIG,
    *,
    seed: int | None = 0,
    progress: bool = False,
    robot: Robot | None = None,
    **overrides: Any,
) -> OptimalTrajectoryIPOPT:
    """Construct and initialise the TIAGo optimiser (``overrides``: trajectory_config entries)."""
    robot = robot or load_tiago_with_geometry(data_dir)
    config = tiago_config(config_file, srdf_path(data_dir))
    opt = OptimalTrajectoryIPOPT(robot, list(TIAGO_JOINTS), config, rng=seed, progress=progress)
    opt.trajectory_config.update({"ipopt_print_level": 0, **overrides})
    opt.initialize()
    return opt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--waypoints", type=int, default=None)
    parser.add_argument("--frequency", type=float, default=None, help="sampling rate [Hz]")
    parser.add_argument("--segments", type=int, default=1)
    parser.add_argument(
        "--objective", choices=("condition_number", "d_optimality"), default="condition_number"
    )
    parser.add_argument("--max-iterations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/tiago_optimal_trajectory")
    parser.add_argument("--plot", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("cyipopt").setLevel(logging.WARNING)

    overrides: Dict[str, Any] = {"objective": args.objective, "max_iterations": args.max_iterations}
    if args.waypoints:
        overrides["n_wps"] = args.waypoints
    if args.frequency:
        overrides["freq"] = args.frequency
    start = time.perf_counter()
    opt = build(args.data_dir, args.config, seed=args.seed, progress=True, **overrides)
    opt.solve(stack_reps=args.segments)
    res = opt.results
    if not res["P_F"]:
        print("No segment could be optimised (see the log above).")
        return 1
    print(f"\nOptimised {len(res['P_F'])} segment(s) in {time.perf_counter() - start:.1f} s")
    for s, (c0, c1) in enumerate(
        zip(res["initial_condition_number"], res["condition_number"], strict=True)
    ):
        print(f"segment {s}: base-regressor condition number {c0:.1f} → {c1:.1f}")
    saved = opt.save_results(args.out)
    for fmt, path in (saved or {}).items():
        print(f"saved {fmt}: {path}")
    if args.plot:
        import matplotlib.pyplot as plt

        opt.plot_results()
        plt.show()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
