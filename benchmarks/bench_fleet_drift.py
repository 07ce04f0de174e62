"""False alarms and detection of the fleet drift report on simulated fleets.

A simulated fleet: ``R`` UR10-like robots × ``S`` nightly sessions, each run
recording what a UR10 identification records (:mod:`figaroh.fleet.worker`):

* the per-joint terms of the 6 joints: viscous friction ``fv_<joint>``
  [N·m·s/rad], Coulomb friction ``fs_<joint>`` [N·m], actuator inertia
  ``Ia_<joint>`` [kg·m²], effort offset ``off_<joint>`` [N·m] — each robot
  has its own true value (robot-to-robot spread :data:`ROBOT_SPREAD` of the
  nominal value) and its own per-run σ (its trajectory's conditioning: the
  nominal σ times a log-normal factor, :data:`SIGMA_SPREAD`);
* inertial base parameters: :data:`SHARED_INERTIAL` plain standard
  parameters plus :data:`EXPRESSIONS` regrouped ones whose coefficients
  depend on the robot's trajectory (``Iyz_elbow_joint - 0.5723*my_wrist_1_joint``);
  robots replaying the same trajectory share those names (``--trajectories``:
  how many distinct trajectories the fleet uses), each robot has its own
  values (the regrouping differs, and so does the trajectory-dependent bias).

Each run's estimate is the robot's true value plus Gaussian noise of its σ
(times ``--sigma-error``: 1 when the recorded σ is right, 1.2 when it
understates the run-to-run scatter by 20 %); the recorded σ carries a 5 %
estimation error of its own.

Drift: a fraction of the robots (``--drifted``, default 5 %) get a drift of the
Coulomb friction of joint 2 (``fs_shoulder_lift_joint``) of known size in
units of that robot's σ, in one of three shapes:

* ``ramp`` — the friction grows by ``size·σ`` per session over the last
  :data:`DRIFT_SESSIONS` sessions (the wear model of ``examples/ur10/fleet.py``);
* ``step`` — it jumps by ``size·σ`` at the first of the last ``DRIFT_SESSIONS``
  sessions and stays;
* ``last`` — it jumps by ``size·σ`` in the latest session only (the report
  the morning after the change).

For each fleet size and each rule (the default false-discovery-rate rule at
q = 0.05, the threshold rule at k = 3), over ``--reports`` seeded fleets:

* false alarms — the fraction of undrifted robots flagged per report (mean),
  and the fraction of reports flagging at least one undrifted robot;
* detection — the fraction of drifted robots flagged, and the fraction of
  drifted robots flagged on the drifted parameter.

Both for the report of every parameter and of ``fs_shoulder_lift_joint`` alone.
No identification is run (the analysis gets the simulated history points
directly): seconds per report. Results go to ``docs/fleet.md`` ("The drift
rule").

    .venv/bin/python benchmarks/bench_fleet_drift.py [--sizes 200x10 600x10] [--reports 20]
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass

import numpy as np

from figaroh.fleet.drift import analyse_drift
from figaroh.fleet.run_index import HistoryPoint

JOINTS = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
)
#: Nominal value and per-run σ of each per-joint term, per joint (UR10 scale; σ(fs₂) ≈ 0.2 N·m
#: as in examples/ur10/fleet.py).
JOINT_TERMS = {
    "fv": ((10.0, 10.0, 6.0, 2.0, 2.0, 2.0), (0.3, 0.3, 0.2, 0.08, 0.08, 0.08)),
    "fs": ((6.0, 6.0, 4.0, 1.5, 1.5, 1.5), (0.2, 0.2, 0.15, 0.06, 0.06, 0.06)),
    "Ia": ((0.5, 0.5, 0.3, 0.05, 0.05, 0.05), (0.02, 0.02, 0.015, 0.004, 0.004, 0.004)),
    "off": ((0.3, -0.2, 0.1, 0.05, -0.05, 0.02), (0.1, 0.1, 0.08, 0.03, 0.03, 0.03)),
}
#: Robot-to-robot spread of the true values (fraction of the nominal value).
ROBOT_SPREAD = 0.10
#: Log-normal spread of each robot's σ (its trajectory's conditioning).
SIGMA_SPREAD = 0.3
#: Relative error of a recorded σ (the least-squares σ is itself estimated).
SIGMA_ESTIMATE_ERROR = 0.05
#: Plain standard inertial parameters every run identifies.
SHARED_INERTIAL = tuple(
    f"{key}_{joint}"
    for joint in JOINTS
    for key in ("Ixx", "Iyy", "Izz", "mx", "my")
)
#: Regrouped base parameters whose coefficients depend on the trajectory.
EXPRESSIONS = (
    ("Iyz_elbow_joint", "my_wrist_1_joint"),
    ("Ixz_shoulder_lift_joint", "mz_elbow_joint"),
    ("Ixy_wrist_1_joint", "mx_wrist_2_joint"),
    ("Izz_shoulder_pan_joint", "Iyy_shoulder_lift_joint"),
    ("mz_wrist_2_joint", "Ixz_wrist_3_joint"),
    ("Ixy_elbow_joint", "mz_wrist_3_joint"),
)
#: Sessions at the end of the window a drift shows in (``ramp``, ``step``).
DRIFT_SESSIONS = 3
DRIFT_PARAMETER = "fs_shoulder_lift_joint"


@dataclass(frozen=True)
class Fleet:
    """A simulated fleet's history and which robots drift."""

    points: list[HistoryPoint]
    drifted: frozenset[str]
    robots: tuple[str, ...]


def _session_time(s: int) -> str:
    return f"2026-{1 + s // 28:02d}-{1 + s % 28:02d}T02:00:00+00:00"


def simulate(
    robots: int,
    sessions: int,
    *,
    seed: int,
    drift_size: float = 0.0,
    shape: str = "ramp",
    drifted_fraction: float = 0.05,
    trajectories: int | None = None,
    sigma_error: float = 1.0,
    only: str | None = None,
) -> Fleet:
    """History points of one simulated fleet (see the module docstring)."""
    rng = np.random.default_rng(seed)
    ids = tuple(f"robot_{r:04d}" for r in range(robots))
    n_drift = round(drifted_fraction * robots) if drift_size else 0
    drifted = frozenset(rng.choice(ids, size=n_drift, replace=False).tolist()) if n_drift else frozenset()
    n_traj = robots if trajectories is None else trajectories
    coefficients = rng.uniform(0.05, 0.95, size=(n_traj, len(EXPRESSIONS)))
    traj_of = rng.integers(0, n_traj, size=robots)
    params: list[tuple[str, np.ndarray, np.ndarray]] = []  # name, truth (R,), sigma (R,)
    for prefix, (nominal, sigma) in JOINT_TERMS.items():
        for j, joint in enumerate(JOINTS):
            truth = nominal[j] + ROBOT_SPREAD * abs(nominal[j]) * rng.standard_normal(robots)
            sig = sigma[j] * np.exp(SIGMA_SPREAD * rng.standard_normal(robots))
            params.append((f"{prefix}_{joint}", truth, sig))
    inertial: list[tuple[list[str], np.ndarray, np.ndarray]] = []
    for name in SHARED_INERTIAL:
        nominal = 0.5 if name.startswith("I") else 2.0
        truth = nominal * (1 + ROBOT_SPREAD * rng.standard_normal(robots))
        sig = 0.02 * nominal * np.exp(SIGMA_SPREAD * rng.standard_normal(robots))
        inertial.append(([name] * robots, truth, sig))
    for e, (base, other) in enumerate(EXPRESSIONS):
        names = [f"{base} - {coefficients[traj_of[r], e]:.6g}*{other}" for r in range(robots)]
        truth = 0.3 - coefficients[traj_of, e] * 0.8 + 0.05 * rng.standard_normal(robots)
        sig = 0.01 * np.exp(SIGMA_SPREAD * rng.standard_normal(robots))
        inertial.append((names, truth, sig))
    points = []
    for r, robot in enumerate(ids):
        for s in range(sessions):
            run = f"{robot}-s{s:03d}"
            time_text = _session_time(s)
            entries = [(name, truth[r], sig[r]) for name, truth, sig in params]
            entries += [(names[r], truth[r], sig[r]) for names, truth, sig in inertial]
            for name, truth, sig in entries:
                if only is not None and name != only:
                    continue
                value = truth + sigma_error * sig * rng.standard_normal()
                if robot in drifted and name == DRIFT_PARAMETER:
                    value += _drift(shape, s, sessions) * drift_size * sig
                recorded = sig * (1 + SIGMA_ESTIMATE_ERROR * rng.standard_normal())
                points.append(
                    HistoryPoint(robot, run, f"s{s:03d}", time_text, name, float(value), float(recorded))
                )
    return Fleet(points, drifted, ids)


def _drift(shape: str, s: int, sessions: int) -> float:
    """Drift of session ``s`` in units of ``size·σ``."""
    onset = sessions - DRIFT_SESSIONS
    if shape == "ramp":
        return float(max(0, s - onset + 1))
    if shape == "step":
        return 1.0 if s >= onset else 0.0
    if shape == "last":
        return 1.0 if s == sessions - 1 else 0.0
    raise ValueError(f"unknown drift shape {shape!r}: ramp, step or last")


@dataclass(frozen=True)
class Outcome:
    """What one report flagged on one simulated fleet."""

    false_fraction: float  # undrifted robots flagged / undrifted robots
    any_false: bool  # at least one undrifted robot flagged
    detected: float  # drifted robots flagged / drifted robots (nan when none drift)
    detected_on_parameter: float  # … flagged on the drifted parameter
    seconds: float


def judge(fleet: Fleet, **rule) -> Outcome:
    """Analyse one fleet with ``rule`` (``k=`` or ``q=``) and score its flags."""
    start = time.perf_counter()
    report = analyse_drift(fleet.points, **rule)
    seconds = time.perf_counter() - start
    flagged = set(report.flagged_robots)
    calm = [r for r in fleet.robots if r not in fleet.drifted]
    false = [r for r in calm if r in flagged]
    on_param = {f.robot_id for f in report.flags if f.name == DRIFT_PARAMETER}
    n = len(fleet.drifted)
    return Outcome(
        false_fraction=len(false) / len(calm),
        any_false=bool(false),
        detected=len(fleet.drifted & flagged) / n if n else float("nan"),
        detected_on_parameter=len(fleet.drifted & on_param) / n if n else float("nan"),
        seconds=seconds,
    )
