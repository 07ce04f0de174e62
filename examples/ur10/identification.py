"""UR10 dynamic identification on data the project simulates itself.

``UR10Identification`` reads a trajectory log laid out like a robot controller
export — one CSV per trajectory, ``identification.csv`` in a folder, with
columns ``t`` [s], ``q_<joint>`` [rad], ``dq_<joint>`` [rad/s] and
``tau_<joint>`` [N·m] for the six joints — and lets the base class do the rest.

Run ``python examples/ur10/identification.py [--samples N] [--noise STD]``: it
simulates a training and a held-out trajectory (URDF inertias + friction +
Gaussian torque noise), identifies the base parameters, prints the quality
report and saves the results under ``results/``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulate import (  # noqa: E402,F401
    UR10_FS,
    UR10_FV,
    UR10_JOINTS,
    load_ur10,
    simulate_ur10,
)

from figaroh.identification.base_identification import BaseIdentification  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
CSV_NAME = "identification.csv"


def write_trajectory_csv(folder: str | os.PathLike, t, q, dq, tau, joints=UR10_JOINTS) -> Path:
    """Write one trajectory as ``<folder>/identification.csv`` (atomic write)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    header = (
        ["t"]
        + [f"q_{j}" for j in joints]
        + [f"dq_{j}" for j in joints]
        + [f"tau_{j}" for j in joints]
    )
    table = np.column_stack([t, q, dq, tau])
    path = folder / CSV_NAME
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".identification.", suffix=".csv")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(np.char.mod("%.15g", table).tolist())  # 15 digits parse fast
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def generate_ur10_data(
    out_dir: str | os.PathLike,
    n_samples: int = 5000,
    noise_std: float = 0.5,
    seed: int = 0,
    robot=None,
) -> tuple[Path, Path]:
    """Simulate a training and a held-out trajectory and write them as CSV.

    Returns:
        ``(train_folder, validation_folder)``.
    """
    robot = robot or load_ur10()
    out = Path(out_dir)
    folders = []
    for name, s in (("train", seed), ("validation", seed + 1)):
        traj, tau = simulate_ur10(robot, n_samples=n_samples, noise_std=noise_std, seed=s)
        folders.append(out / name)
        write_trajectory_csv(out / name, traj.t, traj.q, traj.dq, tau)
    return folders[0], folders[1]


class UR10Identification(BaseIdentification):
    """Identification of the UR10 from ``identification.csv`` logs.

    Args:
        robot: The UR10 :class:`~figaroh.tools.robot.Robot`.
        config_file: Unified configuration (default: ``config/ur10_unified_config.yaml``).
        data_dir: Folder holding the training ``identification.csv``.
    """

    def __init__(self, robot, config_file=CONFIG, data_dir: str | os.PathLike = "data/train"):
        super().__init__(robot, str(config_file))
        self.data_dir = Path(data_dir)

    def load_trajectory_data(self, data_source=None):
        folder = Path(data_source) if data_source else self.data_dir
        path = folder / CSV_NAME if folder.is_dir() else folder
        if not path.is_file():
            raise FileNotFoundError(f"UR10 trajectory log not found: {path}")
        with open(path, newline="") as f:
            header = next(csv.reader(f))
        table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        columns = {name: i for i, name in enumerate(header)}
        joints = self.identif_config["active_joints"]

        def block(prefix):
            missing = [f"{prefix}_{j}" for j in joints if f"{prefix}_{j}" not in columns]
            if missing:
                raise ValueError(f"{path} lacks the columns {missing}")
            return table[:, [columns[f"{prefix}_{j}"] for j in joints]]

        return {
            "timestamps": table[:, [columns["t"]]],
            "positions": block("q"),
            "velocities": block("dq"),
            "accelerations": None,
            "torques": block("tau"),
        }


def run(
    work_dir: str | os.PathLike = "results/ur10_identification",
    n_samples: int = 5000,
    noise_std: float = 0.5,
    seed: int = 0,
    plotting: bool = False,
    quiet: bool = False,
    config: str | os.PathLike = CONFIG,
) -> UR10Identification:
    """Generate data, identify and return the solved identification object.

    ``config`` is the unified configuration (default ``config/ur10_unified_config.yaml``).
    """
    robot = load_ur10()
    train, validation = generate_ur10_data(
        Path(work_dir) / "data", n_samples, noise_std, seed, robot
    )
    ident = UR10Identification(robot, config, data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    ident.solve(decimate=False, plotting=plotting, save_results=False, verbose=not quiet)
    return ident


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5000, help="samples per trajectory")
    parser.add_argument("--noise", type=float, default=0.5, help="torque noise std [N·m]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/ur10_identification")
    args = parser.parse_args(argv)
    ident = run(args.out, args.samples, args.noise, args.seed)
    saved = ident.save_results(output_dir=str(Path(args.out)))
    for fmt, path in (saved or {}).items():
        print(f"saved {fmt}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
