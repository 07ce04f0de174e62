"""TIAGo: D-optimal selection of eye-hand calibration postures from 500 candidates.

The head camera (``xtion_rgb_optical_frame``) observes a 6-DoF marker on the
hand (``hand_tool_link``); the joint offsets of the head and arm chain are
calibrated (``calib_level: joint_offset``, legacy config
``tiago_config_hey5.yaml`` of the upstream example). The candidate pool is the
500-posture YAML shipped with the TIAGo data
(``calibration_joint_names`` = arm 1–7 + head 1–2,
``calibration_joint_configurations`` in rad).

``TiagoOptimalCalibration`` adds nothing to the base class (upstream
example). Paths default to ``<repo>/../shared/data/tiago/...``; ``--data-root``
moves that root and ``--config/--urdf/--candidates`` override single files.

Run::

    python examples/tiago/optimal_config.py [--data-root ../shared/data]
        [--selection threshold|iroc] [--save] [--output results/tiago_optimal] [--no-plot]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Sequence

from figaroh.optimal.base_optimal_calibration import (
    BaseOptimalCalibration,
    InfeasibleDesignError,
)
from figaroh.tools.robot import Robot

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared" / "data"
CONFIG_REL = Path("tiago") / "config" / "tiago_config_hey5.yaml"
URDF_REL = Path("tiago") / "urdf" / "tiago_48_hey5.urdf"
CANDIDATES_REL = (
    Path("tiago") / "calibration" / "tiago_calibration_joint_configurations_500_pmb2_hey5.yaml"
)


class TiagoOptimalCalibration(BaseOptimalCalibration):
    """TIAGo posture selection (no override of the base class)."""


def make_optimizer(
    data_root: str | os.PathLike = SHARED,
    config: str | os.PathLike | None = None,
    urdf: str | os.PathLike | None = None,
    candidates: str | os.PathLike | None = None,
) -> TiagoOptimalCalibration:
    """A ``TiagoOptimalCalibration`` on the shared TIAGo files (or the given ones).

    Raises:
        FileNotFoundError: a default file is missing under ``data_root``.
    """
    root = Path(data_root)
    config = Path(config) if config else root / CONFIG_REL
    urdf = Path(urdf) if urdf else root / URDF_REL
    candidates = Path(candidates) if candidates else root / CANDIDATES_REL
    for p in (config, urdf, candidates):
        if not p.is_file():
            raise FileNotFoundError(f"{p} not found (pass --data-root or the file explicitly)")
    robot = Robot(str(urdf), load_geometry=False)
    with warnings.catch_warnings():
        # the upstream example config is in the legacy flat format; the
        # library warns once per load, which adds nothing in this script
        warnings.simplefilter("ignore", DeprecationWarning)
        opt = TiagoOptimalCalibration(robot, str(config))
    opt.set_candidate_file(candidates)
    return opt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default=str(SHARED), help="shared data folder")
    parser.add_argument("--config", default=None, help="calibration config (legacy or unified)")
    parser.add_argument("--urdf", default=None, help="TIAGo URDF")
    parser.add_argument("--candidates", default=None, help="candidate postures (YAML/CSV)")
    parser.add_argument("--selection", choices=("threshold", "iroc"), default="threshold")
    parser.add_argument("--save", action="store_true", help="save the selection")
    parser.add_argument("--output", default="results/tiago_optimal", help="output folder")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        opt = make_optimizer(args.data_root, args.config, args.urdf, args.candidates)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        opt.initialize()
        opt.calculate_optimal_configurations(args.selection)
    except InfeasibleDesignError as exc:
        print(f"infeasible design: {exc}", file=sys.stderr)
        return 1
    s = opt.results_data  # the selection's figures (see BaseOptimalCalibration)
    print(
        f"selected {s['n_chosen']} of {s['n_candidates']} postures "
        f"(minimum {s['min_nb_chosen']}, {s['n_base_params']} base parameters)"
    )
    print(f"detroot_whole: {s['detroot_whole']:.6g}")
    print(f"log det of the selected information matrix: {s['log_det_information']:.6g}")
    print(f"sum of weights: {s['weight_sum']:.9f}; D-efficiency >= {s['d_efficiency_bound']:.6f}")
    if args.save:
        print(f"saved: {opt.save_results(args.output)}")
    if not args.no_plot:
        opt.plot()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
