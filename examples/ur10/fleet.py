"""A simulated UR10 fleet: many robots, nightly sessions, known friction drift.

A factory re-identifies every arm of a line each night to watch friction
drift. This example builds that situation with known answers and runs it
through :mod:`figaroh.fleet`:

* ``robots`` UR10 "robots" (``robot_00`` …), each with its **own** seeded
  exciting trajectory (:func:`simulate.simulate_ur10`, a Fourier series inside
  the joint limits) that it replays every session;
* ``sessions`` nightly sessions (``s00`` …, one day apart, 02:00 UTC), each
  with fresh seeded Gaussian torque noise of ``noise_std`` [N·m];
* on the robots named in ``drifted``, the Coulomb friction of joint 2
  (``shoulder_lift_joint``) grows by ``drifted[robot]`` [N·m] per session:
  ``fs₂(s) = 6.0 + g·s`` for session index ``s = 0, 1, …``; every other
  parameter keeps the simulated URDF + friction values of ``simulate.py``.

Because the torque is linear in ``fs``, a drifted session is the noise-free
simulation plus ``g·s·sign(q̇₂)`` on joint 2 plus the session noise — the
same signal :func:`figaroh.tools.randomdata.get_torque_rand` would give with
the drifted ``fs``.

Files written by :func:`write_fleet` under ``root``::

    ur10_fleet.yaml                          unified configuration (one for the fleet)
    batch.yaml                               the batch `figaroh fleet run` reads
    logs/<robot>/<session>/identification.csv   t, q_<joint>, dq_<joint>, tau_<joint>
    truth.json                               the simulated fs₂ per robot and session

Run ``python examples/ur10/fleet.py [--robots 8] [--sessions 3] [--workers 2]``:
it simulates the fleet, runs the batch on an embedded Dask ``LocalCluster``
(or ``--scheduler tcp://host:8786``), and writes the drift report
``drift.html`` that flags the drifted robots. The same batch from the shell::

    figaroh fleet run results/ur10_fleet/batch.yaml --archive results/ur10_fleet/archive
    figaroh fleet report --archive results/ur10_fleet/archive \\
        --param fs_shoulder_lift_joint -o drift.html
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulate import UR10_FS, UR10_JOINTS, load_ur10, simulate_ur10, ur10_urdf  # noqa: E402

from figaroh.cli.csv_identification import write_trajectory_csv  # noqa: E402
from figaroh.fleet.drift import drift_report  # noqa: E402
from figaroh.fleet.drift_html import write_drift_html  # noqa: E402
from figaroh.fleet.jobs import load_batch  # noqa: E402
from figaroh.fleet.run_index import RunIndex, index_path  # noqa: E402
from figaroh.fleet.runner import run_batch  # noqa: E402

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
#: The UR10 unified configuration the fleet shares (copied beside the batch).
BASE_CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
CONFIG_NAME = "ur10_fleet.yaml"
BATCH_NAME = "batch.yaml"
TRUTH_NAME = "truth.json"
#: Joint whose Coulomb friction drifts (joint 2 of the UR10).
DRIFT_JOINT_INDEX = 1
DRIFT_JOINT = UR10_JOINTS[DRIFT_JOINT_INDEX]
#: Name of the drifting parameter in the identification results.
DRIFT_PARAMETER = f"fs_{DRIFT_JOINT}"
#: Default drift: Coulomb friction growth of joint 2 per session [N·m]. With
#: the default logs (500 samples, 2 N·m noise) σ(fs₂) ≈ 0.2 N·m per run, so
#: 2 and 3 N·m per session are 10–15σ per session and 0.1 N·m half a σ.
DEFAULT_DRIFTED: Mapping[str, float] = {"robot_02": 2.0, "robot_05": 3.0, "robot_07": 0.1}
#: Growth per session [N·m] from which a drift counts as detectable (≈ 3σ of one run).
MIN_DETECTABLE_GROWTH = 1.0
#: Date of session 0; session s is s days later.
FIRST_SESSION = datetime(2026, 3, 1, 2, 0, 0, tzinfo=timezone.utc)
SAMPLE_RATE = 100.0  # [Hz], the configuration's sampling_frequency


@dataclass(frozen=True)
class FleetPaths:
    """What :func:`write_fleet` wrote.

    Attributes:
        root: Folder of the fleet.
        config: The unified configuration shared by every job.
        batch: The batch YAML (paths relative to its folder).
        logs: ``{(robot_id, session): folder of identification.csv}``.
        robots: Robot ids, in order.
        sessions: Session names, in order.
        drifted: ``{robot_id: fs₂ growth per session [N·m]}`` (only the drifted robots).
        truth: ``{(robot_id, session): simulated fs₂ [N·m]}``.
    """

    root: Path
    config: Path
    batch: Path
    logs: Mapping[tuple[str, str], Path]
    robots: tuple[str, ...]
    sessions: tuple[str, ...]
    drifted: Mapping[str, float]
    truth: Mapping[tuple[str, str], float]


def robot_ids(n: int) -> tuple[str, ...]:
    """``("robot_00", "robot_01", …)`` for ``n`` robots."""
    return tuple(f"robot_{k:02d}" for k in range(n))


def session_names(n: int) -> tuple[str, ...]:
    """``("s00", "s01", …)`` for ``n`` sessions."""
    return tuple(f"s{k:02d}" for k in range(n))


def session_time(index: int) -> str:
    """ISO-8601 UTC time of session ``index`` (one night apart from :data:`FIRST_SESSION`)."""
    return (FIRST_SESSION + timedelta(days=index)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _session_torques(
    tau_clean: np.ndarray,
    dq: np.ndarray,
    fs_growth: float,
    index: int,
    noise_std: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Torques (N, 6) [N·m] of session ``index``: clean + drift + noise."""
    tau = tau_clean.copy()
    tau[:, DRIFT_JOINT_INDEX] += fs_growth * index * np.sign(dq[:, DRIFT_JOINT_INDEX])
    return tau + rng.normal(0.0, noise_std, size=tau.shape)


def _check_drifted(drifted: Mapping[str, float], robots: Sequence[str]) -> dict[str, float]:
    unknown = sorted(set(drifted) - set(robots))
    if unknown:
        raise ValueError(
            f"drifted names unknown robots {unknown}; the fleet has {robots[0]} … {robots[-1]}"
        )
    return {r: float(g) for r, g in drifted.items() if float(g) != 0.0}


def _batch_data(root: Path, logs: Mapping[tuple[str, str], Path], sessions: Sequence[str]) -> dict:
    """The batch YAML content: shared defaults and one identification job per log."""
    jobs = []
    for (robot_id, session), folder in logs.items():
        jobs.append(
            {
                "robot_id": robot_id,
                "session": session,
                "session_time": session_time(sessions.index(session)),
                "data": folder.relative_to(root).as_posix(),
            }
        )
    return {
        # decimate 0: fit every sample of these short 100 Hz logs (the default,
        # as for solve() and figaroh identify, keeps every 10th).
        "defaults": {
            "kind": "identification",
            "config": CONFIG_NAME,
            "urdf": ur10_urdf(),
            "options": {"decimate": 0},
        },
        "jobs": jobs,
    }


def write_fleet(
    root: str | Path,
    robots: int = 8,
    sessions: int = 3,
    drifted: Mapping[str, float] | None = None,
    seed: int = 0,
    *,
    n_samples: int = 500,
    noise_std: float = 2.0,
    robot=None,
) -> FleetPaths:
    """Simulate the fleet's logs and write them with the configuration and the batch YAML.

    Robot ``r`` replays the trajectory of ``simulate_ur10(seed=1000·seed + r)``
    every session; session ``s`` adds noise from
    ``default_rng([seed, r, s])``. Everything is reproducible from ``seed``.

    Args:
        root: Folder to write into (created).
        robots: Number of robots.
        sessions: Number of nightly sessions per robot.
        drifted: ``{robot_id: growth}``: the Coulomb friction of joint 2 of
            that robot grows by ``growth`` [N·m] per session. None: the
            :data:`DEFAULT_DRIFTED` robots that exist in the fleet.
        seed: Master seed.
        n_samples: Samples per log (at 100 Hz).
        noise_std: Torque noise standard deviation [N·m].
        robot: A loaded UR10 :class:`~figaroh.tools.robot.Robot` (loaded when None).

    Returns:
        The :class:`FleetPaths` of the written files.

    Raises:
        ValueError: ``drifted`` names a robot that is not in the fleet.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    ids, names = robot_ids(robots), session_names(sessions)
    if drifted is None:
        drifted = {r: g for r, g in DEFAULT_DRIFTED.items() if r in ids}
    growth = _check_drifted(drifted, ids)
    robot = robot or load_ur10()
    config = root / CONFIG_NAME
    shutil.copyfile(BASE_CONFIG, config)
    logs: dict[tuple[str, str], Path] = {}
    truth: dict[tuple[str, str], float] = {}
    for r, robot_id in enumerate(ids):
        traj, tau_clean = simulate_ur10(
            robot, n_samples=n_samples, sample_rate=SAMPLE_RATE, noise_std=0.0, seed=1000 * seed + r
        )
        g = growth.get(robot_id, 0.0)
        for s, session in enumerate(names):
            rng = np.random.default_rng([seed, r, s])
            tau = _session_torques(tau_clean, traj.dq, g, s, noise_std, rng)
            folder = root / "logs" / robot_id / session
            write_trajectory_csv(
                folder / "identification.csv", UR10_JOINTS, traj.t, traj.q, tau, dq=traj.dq
            )
            logs[(robot_id, session)] = folder
            truth[(robot_id, session)] = UR10_FS[DRIFT_JOINT_INDEX] + g * s
    batch = root / BATCH_NAME
    batch.write_text(yaml.safe_dump(_batch_data(root, logs, names), sort_keys=False))
    truth_json = {f"{r}/{s}": v for (r, s), v in truth.items()}
    (root / TRUTH_NAME).write_text(json.dumps({DRIFT_PARAMETER: truth_json}, indent=1) + "\n")
    return FleetPaths(root, config, batch, logs, ids, names, growth, truth)


def expected_flags(paths: FleetPaths, min_growth: float = MIN_DETECTABLE_GROWTH) -> list[str]:
    """Robots whose simulated drift is detectable: growth ≥ ``min_growth`` [N·m/session]."""
    return sorted(r for r, g in paths.drifted.items() if abs(g) >= min_growth)


def run_fleet(
    paths: FleetPaths,
    archive_root: str | Path | None = None,
    *,
    scheduler=None,
    n_workers: int | None = None,
    k: float | None = None,
    progress: bool = True,
    q: float | None = None,
):
    """Run the fleet's batch on Dask and write the drift report of ``fs₂``.

    Args:
        paths: The fleet written by :func:`write_fleet`.
        archive_root: Run archive (default ``<root>/archive``).
        scheduler: None (embedded ``LocalCluster``), a scheduler address
            ``tcp://host:8786`` or a ``distributed.Client``.
        n_workers: Worker processes of the embedded cluster (None: one per core).
        k: Threshold rule instead of the default one: flag ``|z| > k`` [σ].
        progress: Show the progress bar over jobs.
        q: False-discovery rate of the default rule (None: 0.05).

    Returns:
        ``(batch_result, drift_report, html_path)``.
    """

    archive = Path(archive_root) if archive_root is not None else paths.root / "archive"
    jobs = load_batch(paths.batch)
    result = run_batch(
        jobs, scheduler, archive_root=str(archive), n_workers=n_workers, progress=progress
    )
    with RunIndex(index_path(archive)) as index:
        report = drift_report(index, names=[DRIFT_PARAMETER], k=k, q=q)
    html = write_drift_html(report, paths.root / "drift.html")
    return result, report, html


def main(argv: Sequence[str] | None = None) -> int:
    """Simulate, run the batch and write the drift report (exit 0 when the flags are right)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/ur10_fleet", help="output folder")
    parser.add_argument("--robots", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="embedded cluster size")
    parser.add_argument("--scheduler", default=None, help="tcp://host:8786 of a running cluster")
    parser.add_argument("--q", type=float, default=None, help="false-discovery rate (0.05)")
    parser.add_argument("--k", type=float, default=None, help="threshold rule instead [σ]")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logger.setLevel(logging.INFO)  # this script's own lines; figaroh's and Dask's warnings only
    try:  # distributed sets its loggers to INFO when imported: quieten them after that
        import distributed  # noqa: F401

        logging.getLogger("distributed").setLevel(logging.WARNING)
    except ImportError:  # run_fleet then says which extra to install
        pass
    paths = write_fleet(
        args.out, args.robots, args.sessions, seed=args.seed, n_samples=args.samples
    )
    logger.info("fleet: %d robots x %d sessions in %s", args.robots, args.sessions, paths.root)
    result, report, html = run_fleet(
        paths, scheduler=args.scheduler, n_workers=args.workers, k=args.k, q=args.q
    )
    logger.info(
        "%d runs, %d failures, %d skipped in %.1f s",
        len(result.runs),
        len(result.failures),
        len(result.skipped),
        result.seconds,
    )
    expected = expected_flags(paths)
    logger.info(
        "drift per session %s; detectable %s; flagged %s",
        dict(paths.drifted),
        expected,
        list(report.flagged_robots),
    )
    logger.info("drift report: %s", html)
    return 0 if list(report.flagged_robots) == expected and not result.failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
