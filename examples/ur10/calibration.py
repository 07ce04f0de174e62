"""UR10 geometric calibration: real pose data, or a simulated case with known errors.

``UR10Calibration`` overrides the cost as figaroh 1.0.2's example does:
log-map residuals of the predicted poses (``calc_updated_fkm`` then
``_compute_logmap_residuals``) weighted ``pos_weight = 1.0``,
``orient_weight = 0.5``, or ``1/σ`` when ``calib_config["measurement_std"]``
is set, followed by the (deprecated) regularisation rows
``sqrt(coeff_regularize)·var[6:-n_tip]``. The solver differentiates it by
finite differences, as 1.0.2 does; ``--analytic-jacobian`` (config
``parameters.jacobian: analytic``) uses :meth:`UR10Calibration.cost_jacobian`
instead.

Real data (default)::

    python examples/ur10/calibration.py [--data ../shared/data/ur10/calibration.csv]

Simulated case (the project generates it itself): known joint-placement
errors are injected into the nominal model, postures are drawn at random and
the poses are measured through the perturbed model with Gaussian noise::

    python examples/ur10/calibration.py --simulate --noise-mm 0.5 --noise-deg 0.1

CSV layout: ``x1, y1, z1, phix1, phiy1, phiz1`` (m, RPY rad) and one column
per joint (rad).
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict, Sequence, Tuple

import numpy as np

from figaroh.calibration import calibration_tools as ct
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.tools.robot import Robot

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
DEFAULT_DATA = SHARED / "ur10" / "calibration.csv"
DEFAULT_URDF = SHARED / "models" / "ur_description" / "urdf" / "ur10_robot.urdf"
DOF = ("x1", "y1", "z1", "phix1", "phiy1", "phiz1")

logger = logging.getLogger("figaroh_examples.ur10_calibration")


def ur10_urdf() -> str:
    """The shared UR10 URDF, else the example-robot-data one."""
    if DEFAULT_URDF.is_file():
        return str(DEFAULT_URDF)
    from figaroh.tools.robot_paths import example_robot_data_dir

    base = example_robot_data_dir()
    if base is None:
        raise FileNotFoundError("no UR10 URDF: install example-robot-data or the shared data")
    return str(base / "ur_description" / "urdf" / "ur10_robot.urdf")


class UR10Calibration(BaseCalibration):
    """UR10 calibration: weighted log-map residuals plus regularisation rows."""

    POS_WEIGHT = 1.0
    ORIENT_WEIGHT = 0.5

    def _weights(self) -> Tuple[float | None, float | None]:
        if self.calib_config.get("measurement_std"):
            return None, None  # 1/σ from measurement_std
        return self.POS_WEIGHT, self.ORIENT_WEIGHT

    def _reg_slice(self, n: int) -> slice:
        n_tip = int(self.calib_config["NbMarkers"]) * int(self.calib_config["calibration_index"])
        return slice(6, n - n_tip)

    def cost_function(self, var):
        est = ct.calc_updated_fkm(self.model, self.data, var, self.q_measured, self.calib_config)
        r = self._compute_logmap_residuals(self.PEE_measured, est)
        r = self.apply_measurement_weighting(r, *self._weights())
        c = float(self.calib_config.get("coeff_regularize") or 0.0)
        var = np.asarray(var, dtype=float)
        return np.concatenate([r, np.sqrt(c) * var[self._reg_slice(var.size)]])

    def cost_jacobian(self, var):
        """Analytic Jacobian of :meth:`cost_function` (6-DoF measurements)."""
        r, J = self.measurement_residuals(var, jacobian=True)
        w = self.apply_measurement_weighting(np.ones_like(r), *self._weights())
        c = float(self.calib_config.get("coeff_regularize") or 0.0)
        var = np.asarray(var, dtype=float)
        reg = np.sqrt(c) * np.eye(var.size)[self._reg_slice(var.size)]
        return np.vstack([J * w[:, None], reg])


def make_calibrator(
    robot: Robot,
    data: str | os.PathLike | None = None,
    config: str | os.PathLike = CONFIG,
    analytic_jacobian: bool = False,
) -> UR10Calibration:
    """A configured ``UR10Calibration`` (frames estimated) reading ``data``."""
    calib = UR10Calibration(robot, str(config))
    calib.calib_config["known_baseframe"] = False
    calib.calib_config["known_tipframe"] = False
    if analytic_jacobian:
        calib.calib_config["jacobian"] = "analytic"
    if data is not None:
        calib.set_data_file(data)
    return calib


# ---------------------------------------------------------------------------
# simulation
# ---------------------------------------------------------------------------

#: Metrology frames of the simulated setup: mocap world → robot base, flange → marker.
SIM_BASE = (0.85, -0.32, 0.12, 0.015, -0.02, 2.4)
SIM_TIP = (0.021, -0.013, 0.118, 0.35, -0.2, 0.12)


def random_postures(robot: Robot, calib: BaseCalibration, n: int, seed: int) -> np.ndarray:
    """``n`` random configurations within the joint limits ([-π, π] for wide joints)."""
    rng = np.random.default_rng(seed)
    q0 = np.asarray(calib.calib_config["q0"], dtype=float)
    cidx = calib.calib_config["config_idx"]
    out = np.tile(q0, (n, 1))
    for i in range(n):
        qr = ct.random_joint_configuration(robot.model, rng)
        out[i, cidx] = qr[cidx]
    return out


def write_pose_csv(
    path: str | os.PathLike, pee: np.ndarray, q: np.ndarray, joints: Sequence[str]
) -> Path:
    """Write a single-marker 6-DoF calibration CSV (flat ``pee`` layout, full ``q``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = q.shape[0]
    poses = pee.reshape(6, n).T
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(list(DOF) + list(joints))
        for i in range(n):
            w.writerow([repr(float(v)) for v in poses[i]] + [repr(float(v)) for v in q[i]])
    return path


def measure(
    calib: BaseCalibration,
    truth: Dict[str, float],
    q: np.ndarray,
    pos_noise: float,
    rot_noise: float,
    seed: int,
) -> np.ndarray:
    """Flat 6-DoF measurements of ``q`` through the ``truth`` model, with noise.

    Position noise is N(0, pos_noise) [m] per axis; orientation noise is a
    rotation ``exp3(n)``, n ~ N(0, rot_noise) [rad] per axis, applied to the
    true marker frame.
    """
    cfg = dict(calib.calib_config)
    cfg["param_name"] = list(truth)
    cfg["NbSample"] = len(q)
    ev = ct.evaluate_poses(calib.model, calib.data, list(truth.values()), q, cfg)
    rng = np.random.default_rng(seed)
    R, p = ev.R[:, 0], ev.p[:, 0]
    if rot_noise > 0:
        R = R @ ct.exp3(rng.normal(0.0, rot_noise, (len(q), 3)))
    if pos_noise > 0:
        p = p + rng.normal(0.0, pos_noise, p.shape)
    loc = np.concatenate([p, ct.matrix_to_rpy(R)], axis=1)  # (n, 6)
    return loc.T.ravel()


def simulate_ur10_calibration(
    out_dir: str | os.PathLike,
    robot: Robot | None = None,
    n_train: int = 60,
    n_test: int = 100,
    pos_noise: float = 0.0,
    rot_noise: float = 0.0,
    seed: int = 0,
    joint_error_std: Tuple[float, float] = (1.0e-3, 2.0e-3),
    config: str | os.PathLike = CONFIG,
) -> Tuple[Path, Path, Dict[str, float]]:
    """Simulate a UR10 calibration with known joint-placement errors.

    The truth is defined on the parameters the pipeline identifies: a first
    pass (frames only) fixes the parameter list on the training postures;
    every joint placement error ``d_*`` of that list is then drawn from
    N(0, 1 mm) / N(0, 2 mrad), the metrology frames are :data:`SIM_BASE` /
    :data:`SIM_TIP`, and the training and held-out sets are measured through
    this model.

    Returns:
        ``(train_csv, test_csv, truth)`` with ``truth`` = {name: value} [m, rad].
    """
    robot = robot or Robot(ur10_urdf(), load_geometry=False)
    out = Path(out_dir)
    calib = make_calibrator(robot, config=config)
    joints = [robot.model.names[j] for j in calib.calib_config["actJoint_idx"]]
    q_train = random_postures(robot, calib, n_train, seed)
    q_test = random_postures(robot, calib, n_test, seed + 1)
    cidx = calib.calib_config["config_idx"]
    frames = dict(
        zip(
            [f"base_{a}" for a in ("px", "py", "pz", "phix", "phiy", "phiz")], SIM_BASE, strict=True
        )
    )
    frames.update(
        zip(
            [f"{t}_1" for t in ("pEEx", "pEEy", "pEEz", "phiEEx", "phiEEy", "phiEEz")],
            SIM_TIP,
            strict=True,
        )
    )
    train = out / "train" / "calibration.csv"
    write_pose_csv(train, measure(calib, frames, q_train, 0.0, 0.0, seed), q_train[:, cidx], joints)
    calib.set_data_file(train)
    calib.initialize()
    names = list(calib.calib_config["param_name"])
    rng = np.random.default_rng(seed + 7)
    truth = {}
    for n in names:
        if n in frames:
            truth[n] = frames[n]
        elif n.startswith("d_phi"):
            truth[n] = float(rng.normal(0.0, joint_error_std[1]))
        else:
            truth[n] = float(rng.normal(0.0, joint_error_std[0]))
    write_pose_csv(
        train,
        measure(calib, truth, q_train, pos_noise, rot_noise, seed + 11),
        q_train[:, cidx],
        joints,
    )
    test = out / "test" / "calibration.csv"
    write_pose_csv(
        test,
        measure(calib, truth, q_test, pos_noise, rot_noise, seed + 13),
        q_test[:, cidx],
        joints,
    )
    return train, test, truth


# ---------------------------------------------------------------------------
# script
# ---------------------------------------------------------------------------


def run(
    data: str | os.PathLike,
    urdf: str | None = None,
    config: str | os.PathLike = CONFIG,
    validation: str | os.PathLike | None = None,
    measurement_std: Tuple[float, float] | None = None,
    analytic_jacobian: bool = False,
) -> UR10Calibration:
    """Calibrate on ``data`` (optionally validating on ``validation``) and print the report."""
    robot = Robot(urdf or ur10_urdf(), load_geometry=False)
    calib = make_calibrator(robot, data, config, analytic_jacobian)
    if measurement_std is not None:
        calib.calib_config["measurement_std"] = {
            "position": measurement_std[0],
            "orientation": measurement_std[1],
        }
    if validation is not None:
        calib.set_data_file(validation, validation=True)
    calib.initialize()
    calib.solve(enable_logging=False)
    return calib


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="calibration CSV")
    parser.add_argument("--urdf", default=None, help="UR10 URDF (default: shared data)")
    parser.add_argument("--config", default=str(CONFIG), help="unified config")
    parser.add_argument("--validation-data", default=None, help="held-out CSV")
    parser.add_argument("--simulate", action="store_true", help="simulated case with known errors")
    parser.add_argument("--noise-mm", type=float, default=0.5, help="simulated position noise [mm]")
    parser.add_argument("--noise-deg", type=float, default=0.1, help="simulated angle noise [deg]")
    parser.add_argument(
        "--analytic-jacobian",
        action="store_true",
        help="analytic least-squares Jacobian (default: finite differences, as figaroh 1.0.2)",
    )
    parser.add_argument("--output", default="results/ur10_calibration", help="output folder")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    out = Path(args.output)
    if args.simulate:
        tmp = Path(tempfile.mkdtemp(prefix="ur10_sim_"))
        sp, sr = args.noise_mm * 1e-3, np.deg2rad(args.noise_deg)
        train, test, truth = simulate_ur10_calibration(tmp, pos_noise=sp, rot_noise=sr)
        calib = run(
            train,
            args.urdf,
            args.config,
            validation=test,
            measurement_std=(max(sp, 1e-6), max(sr, 1e-6)),
            analytic_jacobian=args.analytic_jacobian,
        )
        est = dict(zip(calib.calib_config["param_name"], calib.var_, strict=True))
        err = np.array([est[k] - v for k, v in truth.items()])
        print(
            f"simulated: {len(truth)} parameters, max |estimate - truth| = {np.abs(err).max():.3g}"
        )
    else:
        if not Path(args.data).is_file():
            print(f"data file not found: {args.data}", file=sys.stderr)
            return 2
        calib = run(
            args.data,
            args.urdf,
            args.config,
            args.validation_data,
            analytic_jacobian=args.analytic_jacobian,
        )
    v = calib.results_data["validation_metrics"]
    print(
        f"position RMSE (per-point vector norm): nominal joints with fitted frames "
        f"{v['pos_rmse_nominal_fitted_frames_mm']:.3f} mm -> calibrated "
        f"{v['pos_rmse_calibrated_mm']:.3f} mm ({v['validation_source']})"
    )
    out.mkdir(parents=True, exist_ok=True)
    calib.export_verification_report(output_dir=str(out))
    np.savez(
        out / "calibration_results.npz",
        result=calib.var_,
        param_names=np.array(calib.calib_config["param_name"]),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
