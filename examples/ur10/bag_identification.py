"""UR10 identification from a ROS 2 bag: write a bag from the simulator, identify, report.

The robot's log is a ROS 2 bag (MCAP storage) of ``sensor_msgs/JointState``
messages on ``/joint_states``, one per sample at 100 Hz, as a
``joint_state_broadcaster`` records it: positions [rad], velocities [rad/s]
and efforts [N·m] of the six joints, stamped in ``header.stamp``. The bag is
written here with ``rosbags`` from the project's UR10 simulator (URDF
inertias, friction, 0.5 N·m torque noise), so the example needs no robot and
no ROS installation::

    pip install "figaroh[ros]"
    python examples/ur10/bag_identification.py [-o results/ur10_bag]

It writes a training and a held-out bag, prints ``figaroh bag info`` of the
training bag, identifies the base parameters with
:class:`~figaroh.cli.bag_identification.BagIdentification` (the held-out bag
judges the verdict) and writes the HTML report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulate import UR10_JOINTS, load_ur10, simulate_ur10  # noqa: E402

from figaroh.cli.bag_identification import BagIdentification  # noqa: E402
from figaroh.data.bag_reader import bag_summary  # noqa: E402

CONFIG = Path(__file__).resolve().parent / "demo_config.yaml"
TOPIC = "/joint_states"


# --8<-- [start:write_joint_state_bag]
def write_joint_state_bag(
    path: str | Path,
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray,
    tau: np.ndarray,
    joints: Sequence[str] = UR10_JOINTS,
    start_ns: int = 1_700_000_000_000_000_000,
) -> Path:
    """Write one ``sensor_msgs/JointState`` message per sample into a ROS 2 MCAP bag.

    Args:
        path: Bag folder to create (must not exist).
        t: (N,) sample times [s].
        q: (N, n) positions [rad]; ``dq`` [rad/s] and ``tau`` [N·m] alike.
        joints: Joint names of the columns.
        start_ns: Stamp of ``t = 0`` [ns since the epoch].

    Returns:
        The bag folder.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    typestore = get_typestore(Stores.ROS2_HUMBLE)
    types = typestore.types
    msgtype = "sensor_msgs/msg/JointState"
    stamps = start_ns + np.round(np.asarray(t) * 1e9).astype(np.int64)
    with Writer(Path(path), version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection(TOPIC, msgtype, typestore=typestore)
        for k, stamp in enumerate(stamps.tolist()):
            header = types["std_msgs/msg/Header"](
                stamp=types["builtin_interfaces/msg/Time"](
                    sec=stamp // 1_000_000_000, nanosec=stamp % 1_000_000_000
                ),
                frame_id="",
            )
            message = types[msgtype](
                header=header,
                name=list(joints),
                position=np.ascontiguousarray(q[k], dtype=np.float64),
                velocity=np.ascontiguousarray(dq[k], dtype=np.float64),
                effort=np.ascontiguousarray(tau[k], dtype=np.float64),
            )
            writer.write(connection, stamp, typestore.serialize_cdr(message, msgtype))
    return Path(path)


# --8<-- [end:write_joint_state_bag]


def simulate_bags(out: Path, n_samples: int = 2000, noise_std: float = 0.5) -> tuple[Path, Path]:
    """A training and a held-out bag of the simulated UR10 (different seeds)."""
    robot = load_ur10()
    bags = []
    for name, seed in (("train", 1), ("heldout", 2)):
        traj, tau = simulate_ur10(robot, n_samples=n_samples, noise_std=noise_std, seed=seed)
        bags.append(write_joint_state_bag(out / f"{name}_bag", traj.t, traj.q, traj.dq, tau))
    return bags[0], bags[1]


# --8<-- [start:run]
def run(out: Path, n_samples: int = 2000) -> BagIdentification:
    """Write the bags, identify from them, write the verdict and the HTML report."""
    train, heldout = simulate_bags(out, n_samples)
    print(bag_summary(train).table())
    ident = BagIdentification(load_ur10(), CONFIG, bag=train, validation_bag=heldout)
    ident.initialize()
    ident.solve(decimate=False, plotting=False)
    verdict = ident.verify()
    print(f"verdict: {verdict.status}")
    print(f"wrote {ident.export_html_report(output_dir=str(out))}")
    return ident


# --8<-- [end:run]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="results/ur10_bag", help="output folder")
    parser.add_argument("--samples", type=int, default=2000, help="samples per bag (100 Hz)")
    args = parser.parse_args(argv)
    out = Path(args.output)
    if (out / "train_bag").exists() or (out / "heldout_bag").exists():
        parser.error(f"{out} already holds bags: choose another -o folder")
    ident = run(out, args.samples)
    return 0 if ident.verify().passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
