"""MATE calibration from planar (and point) contact constraints.

The data are sets of postures (``../shared/data/mate/data``): the tool tip
touching the plane ``x = 0.3044 m`` (``10_points_x.csv``), ``y = -0.43791 m``
(``10_points_y.csv``) and ``z = -0.004 m`` (``10_points_z.csv``) of a jig,
joint angles in **degrees**; ``--with-point`` adds a fixed-point set
(``10_points_in_radians.csv``, x = y = z = 0, radians), which turns out to be
inconsistent with the planes (see :data:`POINT_SET`).

A posture on a plane observes a single coordinate of the tool tip in the jig
frame; the other two are unobserved (NaN in ``PEE_measured``), so the library
copies them from the estimate and the residual is exactly the signed
distance to the plane — a planar constraint residual. ``MATECalibration``
overrides :meth:`load_data_set` (the four files, unit conversion) and uses
world-frame residuals (``p_est − p_meas``, i.e. the plane gaps) for its cost
with its analytic Jacobian (``calib_config["jacobian"] = "analytic"``, set by
:func:`make_calibrator`).
The jig→robot frame (6), the three joint offsets and the tool-tip offset (3)
are estimated.

Run::

    python examples/mate/calibration.py [--data-dir ../shared/data/mate/data] [--urdf <urdf>]
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np
from scipy.optimize import least_squares

from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.tools.robot import Robot
from figaroh.tools.stages import record_stage
from figaroh.utils.error_handling import CalibrationError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared" / "data"
CONFIG = HERE / "config" / "mate_calibration.yaml"
DEFAULT_DATA_DIR = SHARED / "mate" / "data"
DEFAULT_URDF = SHARED / "mate" / "urdf" / "mate.urdf"

#: (file, observed axes, joint unit) of each planar constraint set.
DATASETS: Tuple[Tuple[str, str, str], ...] = (
    ("10_points_x.csv", "x", "deg"),
    ("10_points_y.csv", "y", "deg"),
    ("10_points_z.csv", "z", "deg"),
)
#: The fixed-point set (x = y = z = 0). Not used by default: no jig frame makes it
#: consistent with the three plane sets (best joint-offset fit of all four sets
#: leaves ~37 mm RMS gaps vs 1.4 mm for the planes alone) — it was probably
#: recorded against another reference point.
POINT_SET = ("10_points_in_radians.csv", "xyz", "rad")


def read_constraint_csv(path: str | os.PathLike, joints: Sequence[str], axes: str, unit: str):
    """Joint angles [rad] and observed coordinates [m] of one constraint file.

    Returns:
        ``(q (n, nj), values (n, 3) with NaN on unobserved axes)``.

    Raises:
        KeyError: missing columns (all listed); ValueError: bad unit / cells.
    """
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh) if r]
    header = [c.strip() for c in rows[0]]
    need = list(joints) + [f"{a}1" for a in axes]
    missing = [c for c in need if c not in header]
    if missing:
        raise KeyError(f"{path}: missing columns {missing} (header {header})")
    body = np.array([[float(r[header.index(c)]) for c in need] for r in rows[1:]])
    if unit not in ("deg", "rad"):
        raise ValueError(f"joint unit must be 'deg' or 'rad', got {unit!r}")
    q = body[:, : len(joints)]
    if unit == "deg":
        q = np.deg2rad(q)
    values = np.full((len(body), 3), np.nan)
    for k, a in enumerate(axes):
        values[:, "xyz".index(a)] = body[:, len(joints) + k]
    return q, values


class MATECalibration(BaseCalibration):
    """Calibration from planar / point contact constraints (world-frame gap residuals)."""

    def __init__(
        self,
        robot,
        config_file: str = str(CONFIG),
        data_dir=DEFAULT_DATA_DIR,
        datasets: Sequence[Tuple[str, str, str]] = DATASETS,
    ):
        super().__init__(robot, config_file)
        self.data_dir = Path(data_dir)
        self.datasets = list(datasets)

    def load_data_set(self) -> None:
        """Read every constraint file into ``q_measured`` and a NaN-masked ``PEE_measured``."""
        joints = [self.model.names[j] for j in self.calib_config["actJoint_idx"]]
        qs, vals, origin = [], [], []
        try:
            for name, axes, unit in self.datasets:
                q, v = read_constraint_csv(self.data_dir / name, joints, axes, unit)
                qs.append(q)
                vals.append(v)
                origin += [name] * len(q)
        except Exception as exc:
            record_stage(self, "data", "failed", f"{type(exc).__name__}: {exc}")
            raise CalibrationError(f"Data loading failed: {exc}") from exc
        q = np.vstack(qs)
        values = np.vstack(vals)  # (n, 3)
        n = len(q)
        q_full = np.tile(np.asarray(self.calib_config["q0"], dtype=float), (n, 1))
        q_full[:, self.calib_config["config_idx"]] = q
        self.q_measured = q_full
        self.PEE_measured = values.T.ravel()  # component-major: x over samples, then y, z
        self.sample_origin = origin
        self.calib_config["NbSample"] = n
        record_stage(
            self,
            "data",
            "ok",
            f"{len(self.datasets)} constraint sets",
            {"samples": n, "observed_coordinates": int(np.isfinite(values).sum())},
        )

    def initial_frame_guess(self) -> Dict[str, float]:
        """Jig→robot frame by a small global search (joint parameters at 0).

        Planar constraints give no closed-form frame; the frames-only problem
        is solved by Levenberg–Marquardt from the config's ``base_pose`` and
        from 8 yaw/roll flips of it, keeping the lowest cost.
        """
        names = list(self.calib_config["param_name"])
        frames = [n for n in names if n.startswith("base_") or "EE" in n]
        idx = [names.index(f) for f in frames]
        base = np.array(self.calib_config.get("base_pose") or [0.0] * 6, dtype=float)
        starts = []
        for yaw in (0.0, np.pi / 2, np.pi, -np.pi / 2):
            for roll in (0.0, np.pi):
                s = base.copy()
                s[3] += roll
                s[5] += yaw
                starts.append(s)

        def fun(z):
            x = np.zeros(len(names))
            x[idx] = z
            r, J = self.measurement_residuals(x, jacobian=True, position_frame="world")
            return r, J[:, idx]

        best = None
        for s in starts:
            z0 = np.zeros(len(frames))
            for i, f in enumerate(frames):
                if f.startswith("base_"):
                    z0[i] = s[("px", "py", "pz", "phix", "phiy", "phiz").index(f[5:])]
            try:
                res = least_squares(
                    lambda z: fun(z)[0], z0, jac=lambda z: fun(z)[1], method="trf", max_nfev=200
                )
            except (ValueError, np.linalg.LinAlgError):
                continue
            if best is None or res.cost < best.cost:
                best = res
        if best is None:
            return {}
        return dict(zip(frames, (float(v) for v in best.x), strict=True))

    def cost_function(self, var):
        r, _ = self.measurement_residuals(var, position_frame="world")
        return r

    def cost_jacobian(self, var):
        return self.measurement_residuals(var, jacobian=True, position_frame="world")[1]


def make_calibrator(
    urdf=DEFAULT_URDF, data_dir=DEFAULT_DATA_DIR, config=CONFIG, datasets=DATASETS
) -> MATECalibration:
    """A configured ``MATECalibration`` (jig frame and tool tip estimated)."""
    robot = Robot(str(urdf), load_geometry=False)
    calib = MATECalibration(robot, str(config), data_dir=data_dir, datasets=datasets)
    calib.calib_config["known_baseframe"] = False
    calib.calib_config["known_tipframe"] = False
    calib.calib_config["jacobian"] = "analytic"  # MATECalibration.cost_jacobian
    return calib


def gaps_by_set(calib: MATECalibration) -> Dict[str, float]:
    """RMS constraint gap [mm] per constraint file at the fitted parameters."""
    r, _ = calib.measurement_residuals(calib.var_, position_frame="world")
    n = calib.n_samples
    per_sample = np.linalg.norm(r.reshape(3, n), axis=0)
    out: Dict[str, List[float]] = {}
    for name, e in zip(calib.sample_origin, per_sample, strict=True):
        out.setdefault(name, []).append(e)
    return {k: float(np.sqrt(np.mean(np.square(v))) * 1e3) for k, v in out.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR), help="folder of the CSVs")
    parser.add_argument("--urdf", default=str(DEFAULT_URDF), help="MATE URDF")
    parser.add_argument("--config", default=str(CONFIG), help="unified config")
    parser.add_argument("--with-point", action="store_true", help="also use the fixed-point set")
    parser.add_argument("--output", default="results/mate_calibration", help="output folder")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    if not Path(args.urdf).is_file() or not Path(args.data_dir).is_dir():
        print(f"missing {args.urdf} or {args.data_dir}", file=sys.stderr)
        return 2
    sets = DATASETS + ((POINT_SET,) if args.with_point else ())
    calib = make_calibrator(args.urdf, args.data_dir, args.config, datasets=sets)
    calib.initialize()
    dropped = calib.drop_unidentifiable_parameters()
    if dropped:
        print(f"not identifiable from planar contacts (dropped): {dropped}")
    calib.solve(enable_logging=args.verbose)
    for name, g in gaps_by_set(calib).items():
        print(f"RMS constraint gap {name}: {g:.2f} mm")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    calib.export_verification_report(output_dir=str(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
