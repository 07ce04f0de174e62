"""UR10: D-optimal selection of calibration postures.

``UR10OptimalCalibration`` overrides only the candidate loading: with a
candidate file (``--candidates``, YAML candidate schema or CSV with one
column per joint) the base class reads it; without one, ``n`` random postures
are drawn uniformly within the joint limits of the model ([-2π, 2π] for every
joint of the example-robot-data UR10 but the elbow, [-π, π]) with a seeded
generator, and stored under the real joint names so the output can be fed
back as a candidate file.

Run::

    python examples/ur10/optimal_config.py [--candidates poses.yaml] [--n-candidates 500]
        [--selection threshold|iroc] [--save] [--output results/ur10_optimal] [--no-plot]

It prints the number of postures selected, the selection ratio, the criterion
of the whole pool (``detroot_whole``), the log-determinant of the selected
information matrix and the weight sum, or the explicit infeasibility message.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from figaroh.optimal.base_optimal_calibration import (
    BaseOptimalCalibration,
    InfeasibleDesignError,
)
from figaroh.tools.robot import Robot

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared" / "data"
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
DEFAULT_URDF = SHARED / "models" / "ur_description" / "urdf" / "ur10_robot.urdf"


def ur10_urdf() -> str:
    """The shared UR10 URDF, else the example-robot-data one."""
    if DEFAULT_URDF.is_file():
        return str(DEFAULT_URDF)
    from figaroh.tools.robot_paths import example_robot_data_dir

    base = example_robot_data_dir()
    if base is None:
        raise FileNotFoundError("no UR10 URDF: install example-robot-data or the shared data")
    return str(base / "ur_description" / "urdf" / "ur10_robot.urdf")


class UR10OptimalCalibration(BaseOptimalCalibration):
    """UR10 posture selection; random candidates when no candidate file is configured.

    Args:
        robot: UR10 :class:`~figaroh.tools.robot.Robot`.
        config_file: Unified configuration (``tasks.calibration``).
        n_candidates: Number of random candidates when no file is given.
        seed: Seed of the random candidates.
    """

    def __init__(
        self,
        robot: Any,
        config_file: str = str(CONFIG),
        n_candidates: int = 500,
        seed: int = 0,
    ):
        super().__init__(robot, config_file)
        if int(n_candidates) < 1:
            raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
        self.n_candidates = int(n_candidates)
        self.seed = seed

    def load_candidate_configurations(self) -> None:
        """Candidate file when configured, else :meth:`generate_random_configurations`."""
        sc = self._sampleConfigs_file
        if sc is None or str(sc).strip() in ("", "None"):
            self.generate_random_configurations(self.n_candidates, self.seed)
        else:
            super().load_candidate_configurations()

    def generate_random_configurations(self, n: int = 500, seed: int = 0) -> np.ndarray:
        """``n`` postures uniform within the joint limits of the active joints [rad].

        Returns:
            ``q_measured`` (n, nq).
        """
        rng = np.random.default_rng(seed)
        names = [str(self.model.names[j]) for j in self.calib_config["actJoint_idx"]]
        idx = np.array(self.calib_config["config_idx"], dtype=int)
        lo = self.model.lowerPositionLimit[idx]
        hi = self.model.upperPositionLimit[idx]
        lo = np.where(np.isfinite(lo), lo, -np.pi)
        hi = np.where(np.isfinite(hi), hi, np.pi)
        values = rng.uniform(lo, hi, size=(int(n), len(names)))
        return self.set_candidate_configurations(names, values)


def make_optimizer(
    urdf: str | os.PathLike | None = None,
    config: str | os.PathLike = CONFIG,
    candidates: str | os.PathLike | None = None,
    n_candidates: int = 500,
    seed: int = 0,
) -> UR10OptimalCalibration:
    """A configured ``UR10OptimalCalibration``."""
    robot = Robot(str(urdf or ur10_urdf()), load_geometry=False)
    opt = UR10OptimalCalibration(robot, str(config), n_candidates=n_candidates, seed=seed)
    if candidates is not None:
        opt.set_candidate_file(candidates)
    return opt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(CONFIG), help="unified config")
    parser.add_argument("--urdf", default=None, help="UR10 URDF (default: shared data)")
    parser.add_argument("--candidates", default=None, help="candidate postures (YAML/CSV)")
    parser.add_argument("--n-candidates", type=int, default=500, help="random candidates")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random candidates")
    parser.add_argument("--selection", choices=("threshold", "iroc"), default="threshold")
    parser.add_argument("--save", action="store_true", help="save the selection")
    parser.add_argument("--output", default="results/ur10_optimal", help="output folder")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    opt = make_optimizer(args.urdf, args.config, args.candidates, args.n_candidates, args.seed)
    try:
        opt.initialize()
        opt.calculate_optimal_configurations(args.selection)
    except InfeasibleDesignError as exc:
        print(f"infeasible design: {exc}", file=sys.stderr)
        return 1
    s = opt.results_data  # the selection's figures (see BaseOptimalCalibration)
    print(
        f"selected {s['n_chosen']} of {s['n_candidates']} postures "
        f"(ratio {s['n_chosen'] / s['n_candidates']:.3f}, minimum {s['min_nb_chosen']}, "
        f"{s['n_base_params']} base parameters)"
    )
    print(f"detroot_whole: {s['detroot_whole']:.6g}")
    print(f"log det of the selected information matrix: {s['log_det_information']:.6g}")
    print(f"sum of weights: {s['weight_sum']:.9f}")
    if args.save:
        files = opt.save_results(args.output)
        print(f"saved: {files}")
    if not args.no_plot:
        opt.plot()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
