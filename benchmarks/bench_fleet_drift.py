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
  robots replaying the same trajectory share those names (``simulate(...,
  trajectories=)``: how many distinct trajectories the fleet uses; default
  one per robot), each robot has its own values (the regrouping differs, and
  so does the trajectory-dependent bias).

Each run's estimate is the robot's true value plus Gaussian noise of its σ
(times ``sigma_error``: 1 when the recorded σ is right, 1.3 when it
understates the run-to-run scatter by 30 %); the recorded σ carries a 5 %
estimation error of its own.

Drift: 5 % of the robots get a drift of the Coulomb friction of joint 2
(``fs_shoulder_lift_joint``) of known size (``--size``, default 3) in units
of that robot's σ, in one of two shapes:

* ``rampD`` — the friction grows by ``size·σ`` per session over the last
  ``D`` sessions (the wear model of ``examples/ur10/fleet.py``: ``+3σ``,
  ``+6σ``, ``+9σ`` for ``ramp3``);
* ``stepD`` — it jumps by ``size·σ`` at the first of the last ``D`` sessions
  and stays (``step1``: in the latest session only, the report the morning
  after the change).

For each fleet size and each rule (the default false-discovery-rate rule at
q = 0.05, the threshold rule at k = 3), over ``--reports`` seeded fleets:

* false alarms — the fraction of undrifted robots flagged per report (mean),
  and the fraction of reports flagging at least one undrifted robot;
* detection — the fraction of drifted robots flagged on the drifted parameter.

Both for the report of every parameter and of ``fs_shoulder_lift_joint``
alone; and, on no-drift fleets, with recorded σ that understate the scatter
(by 30 % for every robot; by 0–50 %, each robot its own). The threshold rule
runs on 5 of the fleets for the report of every parameter (it is slow there
and flags most robots anyway).
No identification is run (the analysis gets the simulated history points
directly): seconds per report. Results go to ``docs/fleet.md`` ("The drift
rule").

    .venv/bin/python benchmarks/bench_fleet_drift.py [--sizes 200x10 600x10] [--reports 20]
        [--shapes ramp2 ramp3 step1 step3 step5] [--size 3]
"""

from __future__ import annotations

import argparse
import logging
import math
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
    f"{key}_{joint}" for joint in JOINTS for key in ("Ixx", "Iyy", "Izz", "mx", "my")
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
    drift_sessions: int = DRIFT_SESSIONS,
    drifted_fraction: float = 0.05,
    trajectories: int | None = None,
    sigma_error: float | tuple[float, float] = 1.0,
) -> Fleet:
    """History points of one simulated fleet (see the module docstring).

    ``sigma_error``: factor of the true run-to-run scatter over the recorded σ,
    one for the fleet or ``(low, high)``: each robot its own, uniform in between.
    """
    rng = np.random.default_rng(seed)
    ids = tuple(f"robot_{r:04d}" for r in range(robots))
    n_drift = round(drifted_fraction * robots) if drift_size else 0
    drifted = (
        frozenset(rng.choice(ids, size=n_drift, replace=False).tolist()) if n_drift else frozenset()
    )
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
    low, high = sigma_error if isinstance(sigma_error, tuple) else (sigma_error, sigma_error)
    scatter = rng.uniform(low, high, size=robots)
    points = []
    for r, robot in enumerate(ids):
        for s in range(sessions):
            run = f"{robot}-s{s:03d}"
            time_text = _session_time(s)
            entries = [(name, truth[r], sig[r]) for name, truth, sig in params]
            entries += [(names[r], truth[r], sig[r]) for names, truth, sig in inertial]
            for name, truth, sig in entries:
                value = truth + scatter[r] * sig * rng.standard_normal()
                if robot in drifted and name == DRIFT_PARAMETER:
                    value += _drift(shape, s, sessions, drift_sessions) * drift_size * sig
                recorded = sig * (1 + SIGMA_ESTIMATE_ERROR * rng.standard_normal())
                points.append(
                    HistoryPoint(
                        robot, run, f"s{s:03d}", time_text, name, float(value), float(recorded)
                    )
                )
    return Fleet(points, drifted, ids)


def _drift(shape: str, s: int, sessions: int, drift_sessions: int) -> float:
    """Drift of session ``s`` in units of ``size·σ`` (it shows in the last ``drift_sessions``)."""
    onset = sessions - drift_sessions
    if shape == "ramp":
        return float(max(0, s - onset + 1))
    if shape == "step":
        return 1.0 if s >= onset else 0.0
    raise ValueError(f"unknown drift shape {shape!r}: ramp or step")


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


@dataclass
class Tally:
    """Outcomes of one (fleet size, scenario, rule, scope) over several reports."""

    outcomes: list[Outcome]

    def row(self) -> tuple[str, str, str, str]:
        """False alarms per report (mean %), reports with one (%), detection (%), s/report."""
        n = len(self.outcomes)
        false = 100 * sum(o.false_fraction for o in self.outcomes) / n
        anyf = 100 * sum(o.any_false for o in self.outcomes) / n
        det = [o.detected_on_parameter for o in self.outcomes if not math.isnan(o.detected)]
        detected = f"{100 * sum(det) / len(det):.1f}" if det else "—"
        seconds = sum(o.seconds for o in self.outcomes) / n
        return f"{false:.2f}", f"{anyf:.0f}", detected, f"{seconds:.1f}"


def _only(fleet: Fleet, name: str) -> Fleet:
    return Fleet([p for p in fleet.points if p.name == name], fleet.drifted, fleet.robots)


def _scenarios(shapes: list[str]) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = [
        ("no drift", {}),
        ("no drift, σ understated 30 %", {"sigma_error": 1.3}),
        ("no drift, σ understated 0–50 % per robot", {"sigma_error": (1.0, 1.5)}),
    ]
    for shape in shapes:
        kind, sessions = shape.rstrip("0123456789"), int(shape[len(shape.rstrip("0123456789")) :])
        out.append((shape, {"shape": kind, "drift_sessions": sessions}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["200x10", "600x10"], help="ROBOTSxSESSIONS")
    parser.add_argument("--reports", type=int, default=20, help="seeded fleets per scenario")
    parser.add_argument(
        "--shapes", nargs="+", default=["ramp2", "ramp3", "step1", "step3", "step5"]
    )
    parser.add_argument("--size", type=float, default=3.0, help="drift size [σ of the robot]")
    parser.add_argument("--k", type=float, default=3.0, help="threshold of the k rule compared")
    args = parser.parse_args()
    logging.getLogger("figaroh").setLevel(logging.ERROR)
    print(
        "| fleet | scenario | report | rule | undrifted robots flagged per report [%] "
        "| reports flagging an undrifted robot [%] | drifted robots found [%] | s/report |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for size in args.sizes:
        robots, sessions = (int(v) for v in size.lower().split("x"))
        for label, scenario in _scenarios(args.shapes):
            drift = {"drift_size": args.size} if "shape" in scenario else {}
            tallies: dict[tuple[str, str], list[Outcome]] = {}
            for rep in range(args.reports):
                fleet = simulate(robots, sessions, seed=1000 * rep + 7, **drift, **scenario)
                for scope, data in (
                    ("all", fleet),
                    (DRIFT_PARAMETER, _only(fleet, DRIFT_PARAMETER)),
                ):
                    rules = [("q = 0.05", {})]
                    if not label.startswith("no drift,") and (scope != "all" or rep < 5):
                        rules.append((f"k = {args.k:g}", {"k": args.k}))
                    for rule, kwargs in rules:
                        tallies.setdefault((scope, rule), []).append(judge(data, **kwargs))
            for (scope, rule), outcomes in tallies.items():
                cells = " | ".join(Tally(outcomes).row())
                print(
                    f"| {robots} × {sessions} | {label} | {scope} ({len(outcomes)}) | {rule} "
                    f"| {cells} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
