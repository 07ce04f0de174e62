"""TALOS upper-body geometric calibration on real contact data.

The left gripper was brought into contact with points whose positions
(``x1, y1, z1`` [m], measurement frame) are known; the CSV also holds a time
stamp ``t`` (ignored) and the torso and left-arm joint angles [rad]. The
measurement→robot base frame and the gripper→contact-point offset are
estimated with the identifiable joint placement errors of the 9 joints.

``TALOSCalibration`` overrides only the cost (as figaroh 1.0.2's example):
unweighted log-map residuals of the predicted measurements
(``calc_updated_fkm`` then ``_compute_logmap_residuals``) plus
``sqrt(1e-3)·var[6:-3·NbMarkers]`` regularisation rows (a fixed coefficient,
independent of the config); the solver differentiates it by finite
differences, as 1.0.2 does (``--analytic-jacobian``: with
:meth:`TALOSCalibration.cost_jacobian`).

Run::

    python examples/talos/calibration.py [--data <csv>] [--urdf <urdf>]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.calibration.calibration_tools import calc_updated_fkm
from figaroh.tools.robot import Robot

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared" / "data"
CONFIG = HERE / "config" / "talos_calibration.yaml"
DEFAULT_DATA = SHARED / "talos" / "talos_left_arm_02_10_contact.csv"
DEFAULT_URDF = SHARED / "talos" / "talos_full_v2.urdf"


class TALOSCalibration(BaseCalibration):
    """TALOS calibration with a fixed regularisation of the joint parameters."""

    def __init__(self, robot, config_file: str = str(CONFIG), del_list=None):
        super().__init__(robot, config_file, del_list=del_list if del_list is not None else [])
        self.regularization_coefficient = 1e-3

    def _reg(self, n: int) -> np.ndarray:
        n_tip = 3 * int(self.calib_config["NbMarkers"])
        return np.sqrt(self.regularization_coefficient) * np.eye(n)[6 : n - n_tip]

    def cost_function(self, var):
        est = calc_updated_fkm(self.model, self.data, var, self.q_measured, self.calib_config)
        r = self._compute_logmap_residuals(self.PEE_measured, est)
        var = np.asarray(var, dtype=float)
        return np.concatenate([r, self._reg(var.size) @ var])

    def cost_jacobian(self, var):
        """Analytic Jacobian of :meth:`cost_function` (position-only contact point).

        With position-only measurements the log-map residual is
        ``p_est − p_meas`` (world frame), differentiated by
        ``measurement_residuals(..., position_frame="world")``.
        """
        _, J = self.measurement_residuals(var, jacobian=True, position_frame="world")
        return np.vstack([J, self._reg(np.asarray(var).size)])


def make_calibrator(
    urdf: str | os.PathLike = DEFAULT_URDF,
    data: str | os.PathLike | None = None,
    config: str | os.PathLike = CONFIG,
    analytic_jacobian: bool = False,
) -> TALOSCalibration:
    """A configured ``TALOSCalibration`` (base and tip frames estimated)."""
    robot = Robot(str(urdf), load_geometry=False)
    calib = TALOSCalibration(robot, str(config))
    calib.calib_config["known_baseframe"] = False
    calib.calib_config["known_tipframe"] = False
    if analytic_jacobian:
        calib.calib_config["jacobian"] = "analytic"
    if data is not None:
        calib.set_data_file(data)
    return calib


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="contact CSV")
    parser.add_argument("--urdf", default=str(DEFAULT_URDF), help="TALOS URDF")
    parser.add_argument("--config", default=str(CONFIG), help="unified config")
    parser.add_argument(
        "--analytic-jacobian",
        action="store_true",
        help="analytic least-squares Jacobian (default: finite differences, as figaroh 1.0.2)",
    )
    parser.add_argument("--output", default="results/talos_calibration", help="output folder")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    for p in (args.data, args.urdf):
        if not Path(p).is_file():
            print(f"file not found: {p}", file=sys.stderr)
            return 2
    calib = make_calibrator(
        args.urdf, args.data, args.config, analytic_jacobian=args.analytic_jacobian
    )
    calib.initialize()
    calib.solve(enable_logging=args.verbose)
    v = calib.results_data["validation_metrics"]
    print(
        f"position RMSE (per-point vector norm, training postures): nominal joints with "
        f"fitted frames {v['pos_rmse_nominal_fitted_frames_mm']:.3f} mm -> calibrated "
        f"{v['pos_rmse_calibrated_mm']:.3f} mm"
    )
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    calib.export_verification_report(output_dir=str(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
