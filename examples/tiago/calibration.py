"""TIAGo geometric calibration on real Qualisys mocap data (position only).

One marker on the wrist (``x1, y1, z1`` of the CSV; the file holds four
markers) is measured in the mocap frame; the mocap→robot base frame (6
parameters) and the flange→marker offset (3) are estimated together with the
identifiable joint placement errors of the torso and arm.

``TiagoCalibration`` overrides only the cost (as figaroh 1.0.2's example):
unweighted log-map residuals of the predicted measurements
(``calc_updated_fkm`` then ``_compute_logmap_residuals``) followed by
``sqrt(coeff_regularize)·var[6:-n_tip]`` rows; the solver differentiates it
by finite differences, as 1.0.2 does (``--analytic-jacobian``: with
:meth:`TiagoCalibration.cost_jacobian`).

Run::

    python examples/tiago/calibration.py [--data <csv>] [--urdf <urdf>] [--folds 5]

It prints the quality report, the figures asked for by the project (outliers
removed, condition number, correlated pairs, post-calibration RMSE with its
convention) and a k-fold cross-validated position RMSE (held-out postures).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Dict, Sequence

import numpy as np

from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.calibration.calibration_tools import calc_updated_fkm
from figaroh.tools.robot import Robot

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared" / "data"
CONFIG = HERE / "config" / "tiago_calibration.yaml"
DEFAULT_DATA = SHARED / "tiago" / "calibration" / "qualysis_base_hand_calibration.csv"
DEFAULT_URDF = SHARED / "tiago" / "urdf" / "tiago_48_schunk.urdf"


class TiagoCalibration(BaseCalibration):
    """TIAGo mocap calibration: unweighted log-map residuals + regularisation rows."""

    def _n_tip(self) -> int:
        return int(self.calib_config["NbMarkers"]) * int(self.calib_config["calibration_index"])

    def cost_function(self, var):
        est = calc_updated_fkm(self.model, self.data, var, self.q_measured, self.calib_config)
        r = self._compute_logmap_residuals(self.PEE_measured, est)
        var = np.asarray(var, dtype=float)
        c = float(self.calib_config.get("coeff_regularize") or 0.0)
        return np.concatenate([r, np.sqrt(c) * var[6 : var.size - self._n_tip()]])

    def cost_jacobian(self, var):
        """Analytic Jacobian of :meth:`cost_function` (position-only marker).

        With position-only measurements the log-map residual is
        ``p_est − p_meas`` (world frame), differentiated by
        ``measurement_residuals(..., position_frame="world")``.
        """
        _, J = self.measurement_residuals(var, jacobian=True, position_frame="world")
        var = np.asarray(var, dtype=float)
        c = float(self.calib_config.get("coeff_regularize") or 0.0)
        reg = np.sqrt(c) * np.eye(var.size)[6 : var.size - self._n_tip()]
        return np.vstack([J, reg])


def make_calibrator(
    urdf: str | os.PathLike = DEFAULT_URDF,
    data: str | os.PathLike | None = None,
    config: str | os.PathLike = CONFIG,
    del_list: Sequence[int] | None = None,
    analytic_jacobian: bool = False,
) -> TiagoCalibration:
    """A configured ``TiagoCalibration`` (base and tip frames estimated)."""
    robot = Robot(str(urdf), load_geometry=False)
    calib = TiagoCalibration(robot, str(config), del_list=del_list)
    calib.calib_config["known_baseframe"] = False
    calib.calib_config["known_tipframe"] = False
    if analytic_jacobian:
        calib.calib_config["jacobian"] = "analytic"
    if data is not None:
        calib.set_data_file(data)
    return calib


def summary(calib: BaseCalibration) -> Dict[str, object]:
    """The figures reported for a calibration run (units in the keys)."""
    ev = calib.evaluation_metrics
    overall = ev["per_dof_stats"]["overall"]
    return {
        "converged": ev["optimization_success"],
        "samples": calib.n_samples,
        "parameters": len(ev["param_values"]),
        "outliers_removed": ev["n_outliers"],
        "excluded_samples": ev["excluded_samples"],
        "condition_number": ev["condition_number"],
        "condition_label": ev["condition_label"],
        "correlated_pairs": ev["correlated_pairs"],
        "position_rmse_point_norm_mm": overall["pos_rmse_mm"],
        "position_rmse_per_component_mm": overall["pos_rmse_component_mm"],
        "position_rmse_nominal_fitted_frames_mm": calib.results_data["validation_metrics"][
            "pos_rmse_nominal_fitted_frames_mm"
        ],
    }


def cross_validated_rmse(
    urdf: str | os.PathLike, data: str | os.PathLike, folds: int = 5, seed: int = 0
) -> Dict[str, float]:
    """k-fold held-out position RMSE [mm] (per-point vector norm) of the calibrated model.

    Each fold calibrates on the other postures (``del_list`` masks the held-out
    ones) and predicts the held-out postures with the fitted frames and joint
    parameters; the "nominal" figure uses the same folds with only the frames
    fitted.
    """
    full = make_calibrator(urdf, data)
    full.load_data_set()
    n = full.n_samples
    perm = np.random.default_rng(seed).permutation(n)
    errs_cal, errs_nom = [], []
    for test in np.array_split(perm, folds):
        test = np.sort(test)
        calib = make_calibrator(urdf, data, del_list=test.tolist())
        calib.initialize()
        result, _ = calib.solve_optimisation()
        q = full.q_measured[test]
        rows = np.arange(len(full.PEE_measured))
        pee = full.PEE_measured[np.isin(rows % n, test)]
        r, _ = calib.measurement_residuals(result.x, q=q, measured=pee)
        errs_cal.append(np.linalg.norm(r.reshape(3, -1), axis=0))
        calib.LM_result = result
        x_ff = calib._objective_model.frames_only_fit()
        r0, _ = calib.measurement_residuals(x_ff, q=q, measured=pee)
        errs_nom.append(np.linalg.norm(r0.reshape(3, -1), axis=0))
    e, e0 = np.concatenate(errs_cal), np.concatenate(errs_nom)
    return {
        "cv_position_rmse_mm": float(np.sqrt(np.mean(e**2)) * 1e3),
        "cv_position_rmse_nominal_fitted_frames_mm": float(np.sqrt(np.mean(e0**2)) * 1e3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="mocap calibration CSV")
    parser.add_argument("--urdf", default=str(DEFAULT_URDF), help="TIAGo URDF")
    parser.add_argument("--config", default=str(CONFIG), help="unified config")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (0: skip)")
    parser.add_argument(
        "--analytic-jacobian",
        action="store_true",
        help="analytic least-squares Jacobian (default: finite differences, as figaroh 1.0.2)",
    )
    parser.add_argument("--output", default="results/tiago_calibration", help="output folder")
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
    s = summary(calib)
    print(f"converged: {s['converged']}  ({s['parameters']} parameters, {s['samples']} postures)")
    print(f"outliers removed: {s['outliers_removed']} {s['excluded_samples']}")
    print(f"condition number: {s['condition_number']:.4g} ({s['condition_label']})")
    print(f"correlated parameter pairs (|rho| > 0.8): {len(s['correlated_pairs'])}")
    for p in s["correlated_pairs"]:
        print(f"    {p['param_i']} <-> {p['param_j']}: {p['correlation']:+.3f}")
    print(
        "post-calibration position RMSE (training postures): "
        f"{s['position_rmse_point_norm_mm']:.3f} mm per-point vector norm, "
        f"{s['position_rmse_per_component_mm']:.3f} mm per component "
        f"(nominal joints, fitted frames: {s['position_rmse_nominal_fitted_frames_mm']:.3f} mm)"
    )
    if args.folds:
        cv = cross_validated_rmse(args.urdf, args.data, args.folds)
        print(
            f"{args.folds}-fold held-out position RMSE (per-point vector norm): calibrated "
            f"{cv['cv_position_rmse_mm']:.3f} mm, nominal joints with fitted frames "
            f"{cv['cv_position_rmse_nominal_fitted_frames_mm']:.3f} mm"
        )
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    calib.export_verification_report(output_dir=str(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
