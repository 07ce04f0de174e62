"""``figaroh trajectory`` and ``figaroh postures``: design experiments before measuring.

``trajectory`` designs an exciting trajectory for dynamic identification
(:class:`figaroh.optimal.BaseOptimalTrajectory`: ``--segments`` stacked
rest-to-rest waypoint-spline segments whose waypoints IPOPT moves to minimise the
condition number of the base regressor under the joint position [rad],
velocity [rad/s] and effort [N·m] limits and self-collision avoidance). It
needs cyipopt (``pip install "figaroh[ipopt]"``) and writes
``trajectory.csv`` (``t, q_<joint>, dq_<joint>, ddq_<joint>`` of the active
joints, the CSV layout ``figaroh identify`` reads once ``tau_<joint>`` is
logged) and ``trajectory_summary.yaml``.

``postures`` selects D-optimal calibration postures from a candidate pool
(:class:`figaroh.optimal.BaseOptimalCalibration`: SOCP relaxation of
``max log det Σ w_i X_i`` over the candidates' information matrices ``X_i``,
rounded to the candidates of largest weight). The candidates come from
``--candidates`` (YAML candidate schema or CSV with one column per joint),
else from the configuration's ``sample_configurations_file``, else
``--n-candidates`` postures drawn uniformly within the joint limits with the
seed ``--seed``.

Progress: on a terminal the step bar shows the optimiser's latest iteration
(IPOPT's objective and constraint violation per iteration; the SOCP's
interior-point iterations); piped or with ``--quiet`` only the result lines
are printed.

Outcome: when an optimiser fell back (IPOPT's final point rejected and an
earlier iterate or the initial guess kept, a retried segment attempt, the
SOCP solved by a fallback formulation) or stopped early (IPOPT's iteration
limit), the command says so in one line and exits 1 — the result is written
all the same; ``--accept-fallback`` accepts it (exit 0, the line is printed as
a note).

Exit codes: ``0`` written, ``1`` the design failed (no trajectory segment
solved; too few postures or a singular information matrix) or its optimiser
fell back or stopped early (without ``--accept-fallback``), ``2`` bad input or
a missing optional package (the message names the extra to install).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import yaml

from figaroh._optional import require
from figaroh._run.optimisation_trace import OptimisationTrace, TraceEntry
from figaroh.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    CLIError,
    require_file,
    require_output_dir,
    say,
    steps_for,
)
from figaroh.cli.progress import iteration_text
from figaroh.cli.workflows import input_phase, load_robot_model
from figaroh.errors import MissingDependencyError
from figaroh.optimal.base_optimal_calibration import (
    BaseOptimalCalibration,
    InfeasibleDesignError,
)
from figaroh.optimal.base_optimal_trajectory import BaseOptimalTrajectory
from figaroh.optimal.config import load_param
from figaroh.tools.robot import Robot
from figaroh.utils.fileio import atomic_write, atomic_write_text, make_folder

__all__ = [
    "active_joint_values",
    "check_outcome",
    "postures",
    "random_candidates",
    "require_extra",
    "trajectory",
    "write_trajectory_csv",
]


def require_extra(module: str, extra: str | None, purpose: str) -> None:
    """Import the optional ``module`` now; its absence is bad input (exit 2) naming the extra.

    Raises:
        CLIError: ``module`` cannot be imported; the message says what to install.
    """
    try:
        require(module, extra=extra, purpose=purpose)
    except MissingDependencyError as exc:
        raise CLIError(str(exc), EXIT_BAD_INPUT) from exc


def random_candidates(
    model: Any, joint_ids: Sequence[int], n: int, seed: int
) -> Tuple[List[str], np.ndarray]:
    """``n`` postures drawn uniformly within the position limits of the joints ``joint_ids``.

    Unbounded limits are replaced by ``[-π, π]`` [rad].

    Returns:
        ``(joint names, (n, len(joint_ids)) values [rad or m])``.
    """
    rng = np.random.default_rng(seed)
    names = [str(model.names[j]) for j in joint_ids]
    idx = np.array([model.joints[j].idx_q for j in joint_ids], dtype=int)
    lo = np.where(np.isfinite(model.lowerPositionLimit[idx]), model.lowerPositionLimit[idx], -np.pi)
    hi = np.where(np.isfinite(model.upperPositionLimit[idx]), model.upperPositionLimit[idx], np.pi)
    return names, rng.uniform(lo, hi, size=(int(n), len(names)))


def active_joint_values(model: Any, joint_ids: Sequence[int], q: np.ndarray) -> np.ndarray:
    """Joint values [rad or m] of the joints ``joint_ids`` in configurations ``q`` (n, nq).

    A continuous joint (``nq = 2``, stored as ``cos θ, sin θ``) gives ``θ = atan2(sin, cos)``.
    """
    cols = []
    for j in joint_ids:
        iq, nq = int(model.joints[j].idx_q), int(model.joints[j].nq)
        cols.append(q[:, iq] if nq == 1 else np.arctan2(q[:, iq + 1], q[:, iq]))
    return np.column_stack(cols)


def check_outcome(
    args: argparse.Namespace, trace: OptimisationTrace, what: str, remedy: str
) -> None:
    """Say whether the optimiser fell back or stopped early; refuse it unless accepted.

    Args:
        args: The command's arguments (``accept_fallback``: accept such a
            result; absent means False).
        trace: The design's optimisation trace (its stage outcomes).
        what: What did not converge (e.g. ``"IPOPT"``), starts the message.
        remedy: What to change to converge (e.g. ``"raise --ipopt-max-iterations"``).

    Raises:
        CLIError: A stage did not converge and ``accept_fallback`` is not set
            (exit 1; one line naming each stage, its outcome and the remedy).
    """
    failed = trace.not_converged()
    if not failed:
        return
    text = "; ".join(
        f"{o.stage.split(':', 1)[-1]}: {o.status.replace('_', ' ')} — {o.message}" for o in failed
    )
    if getattr(args, "accept_fallback", False):
        say(args, f"accepted with --accept-fallback: {what} did not converge ({text})")
        return
    raise CLIError(
        f"{what} did not converge ({text}); the result is written — {remedy}, or pass "
        "--accept-fallback to accept it",
        EXIT_FAILED,
    )


class _SteppedPostures(BaseOptimalCalibration):
    """The posture design, showing each SOCP iteration on the command's progress bar."""

    def __init__(self, *args: Any, steps: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._steps = steps

    def on_iteration(self, entry: TraceEntry) -> None:
        self._steps.detail(iteration_text(entry))


def _load_candidates(opt: BaseOptimalCalibration, args: argparse.Namespace) -> None:
    """Fill the candidate pool of ``opt`` (file, configured file or random postures)."""
    if args.candidates:
        opt.set_candidate_file(require_file(args.candidates, "--candidates"))
        opt.load_candidate_configurations()
        return
    configured = opt.calib_config.get("sample_configs_file")
    if configured is not None and str(configured).strip() not in ("", "None"):
        opt.load_candidate_configurations()
        return
    names, values = random_candidates(
        opt.model, opt.calib_config["actJoint_idx"], args.n_candidates, args.seed
    )
    opt.set_candidate_configurations(names, values)


def _socp_result(opt: BaseOptimalCalibration) -> Tuple[List[int], Dict[int, float]]:
    """``(chosen candidates, {candidate: weight} by descending weight)`` of the solved SOCP."""
    if opt.chosen_indices is None or opt.w_dict_sort is None:
        raise CLIError("no posture selection: the SOCP has not been solved")
    return opt.chosen_indices, opt.w_dict_sort


def _selection(opt: BaseOptimalCalibration, n_postures: int | None) -> List[int]:
    """Candidate rows selected: the SOCP's, or its ``n_postures`` of largest weight."""
    chosen, weights = _socp_result(opt)
    if n_postures is None:
        return list(chosen)
    return [int(k) for k in list(weights)[:n_postures]]


def _write_postures(
    out: Path, opt: BaseOptimalCalibration, chosen: Sequence[int]
) -> Dict[str, Path]:
    """``postures.csv`` (one column per joint + weight) and ``postures.yaml`` (candidate schema)."""
    ids = list(opt.calib_config["actJoint_idx"])
    names = [str(opt.model.names[j]) for j in ids]
    values = active_joint_values(opt.model, ids, np.asarray(opt.q_measured)[list(chosen)])
    socp_weights = _socp_result(opt)[1]
    weights = [float(socp_weights.get(k, 0.0)) for k in chosen]
    make_folder(out)
    csv_path = out / "postures.csv"

    def write_csv(fh: Any) -> None:
        writer = csv.writer(fh)
        writer.writerow(["candidate", *names, "weight"])
        for k, row, w in zip(chosen, values, weights, strict=True):
            writer.writerow([k, *(repr(float(v)) for v in row), repr(w)])

    atomic_write(csv_path, write_csv)
    doc = {
        "calibration_joint_names": names,
        "calibration_joint_configurations": [[float(v) for v in row] for row in values],
    }
    yaml_path = out / "postures.yaml"
    atomic_write_text(
        yaml_path, yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=1000)
    )
    return {"csv": csv_path, "yaml": yaml_path}


def postures(args: argparse.Namespace) -> int:
    """``figaroh postures``: exit 0 when written, 1 when infeasible or the SOCP fell back."""
    require_file(args.config, "CONFIG")
    out = require_output_dir(args.output, "-o/--output")
    require_extra("picos", None, "optimal calibration postures (the D-optimal SOCP)")
    require_extra("cvxopt", None, "optimal calibration postures (the SOCP solver)")
    names = ["load robot", "read configuration", "candidates", "regressor", "SOCP", "write"]
    with steps_for(args, names) as steps:
        steps.start("load robot")
        robot = load_robot_model(args.urdf, args.package_dir, args.free_flyer)
        steps.start("read configuration")
        with input_phase(f"cannot read the calibration task of {args.config}"):
            opt = _SteppedPostures(robot, str(args.config), steps=steps)
        if args.n_postures is not None and args.n_postures < opt.minNbChosen:
            raise CLIError(
                f"--n-postures {args.n_postures} is below the {opt.minNbChosen} postures "
                "the calibration model needs; pass a larger value"
            )
        steps.start("candidates")
        with input_phase("cannot read the candidate postures"):
            _load_candidates(opt, args)
        n_candidates = int(opt.calib_config["NbSample"])
        if args.n_postures is not None and args.n_postures > n_candidates:
            raise CLIError(
                f"--n-postures {args.n_postures} exceeds the {n_candidates} candidates; "
                "pass a smaller value or more candidates"
            )
        steps.start("regressor")
        opt.calculate_regressor()
        opt.calculate_detroot_whole()
        steps.start("SOCP")
        try:
            opt.calculate_optimal_configurations(args.selection)
        except InfeasibleDesignError as exc:
            raise CLIError(f"infeasible design: {exc}", EXIT_FAILED) from exc
        steps.start("write")
        chosen = _selection(opt, args.n_postures)
        written = _write_postures(out, opt, chosen)
    rd = opt.results_data
    say(
        args,
        f"selected {len(chosen)} of {n_candidates} postures (minimum {opt.minNbChosen}, "
        f"{rd.get('n_base_params')} base parameters, SOCP picked {rd.get('n_chosen')})",
    )
    for path in written.values():
        say(args, f"wrote {path}")
    check_outcome(
        args, opt.optimisation_trace, "the SOCP", "check the candidate pool (scale, coverage)"
    )
    return EXIT_OK


# ---------------------------------------------------------------------------
# trajectory
# ---------------------------------------------------------------------------
class _SteppedTrajectory(BaseOptimalTrajectory):
    """The base design, announcing each segment to the command's progress bar."""

    def __init__(self, *args: Any, steps: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._steps = steps

    def on_segment(self, segment_index: int, n_segments: int) -> None:
        self._steps.start(f"segment {segment_index + 1}/{n_segments}")

    def on_iteration(self, entry: TraceEntry) -> None:
        self._steps.detail(iteration_text(entry))


def _trajectory_overrides(args: argparse.Namespace) -> Dict[str, Any]:
    """``trajectory_config`` entries set by the options (IPOPT silent unless ``-vv``)."""
    overrides: Dict[str, Any] = {"ipopt_print_level": 5 if args.verbose > 1 else 0}
    for key, value in (
        ("max_iterations", args.max_iterations),
        ("n_wps", args.waypoints),
        ("freq", args.frequency),
    ):
        if value is not None:
            overrides[key] = value
    return overrides


def _active_joints(robot: Any, config: str) -> List[str]:
    """The configuration's identification active joints (``robot.properties.joints``)."""
    _, identif = _load_trajectory_param(robot, config)
    joints = list(identif.get("active_joints") or [])
    if not joints:
        raise CLIError(f"{config}: robot.properties.joints.active_joints is empty; name the joints")
    return joints


def _load_trajectory_param(robot: Any, config: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    with input_phase(f"cannot read the optimal_trajectory task of {config}"):
        return load_param(robot, config)


def write_trajectory_csv(
    path: Path,
    joints: Sequence[str],
    t: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
) -> Path:
    """Write ``t, q_<joint>, dq_<joint>, ddq_<joint>`` columns (one row per sample).

    Args:
        path: CSV file to write.
        joints: Active joint names, in the column order of ``q``, ``v``, ``a``.
        t: (N,) times [s].
        q, v, a: (N, n) positions [rad], velocities [rad/s], accelerations [rad/s²].
    """
    header = ["t"] + [f"{p}_{j}" for p in ("q", "dq", "ddq") for j in joints]
    table = np.column_stack([t, q, v, a])

    def write(fh: Any) -> None:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows([repr(float(x)) for x in row] for row in table)

    atomic_write(path, write)
    return path


def _trajectory_summary(opt: BaseOptimalTrajectory, segments: int) -> Dict[str, Any]:
    res = opt.results
    return {
        "robot": str(opt.model.name),
        "active_joints": list(opt.active_joints),
        "segments_requested": int(segments),
        "segments_solved": len(res["P_F"]),
        "objective": res.get("objective"),
        "initial_condition_number": [float(c) for c in res.get("initial_condition_number", [])],
        "condition_number": [float(c) for c in res.get("condition_number", [])],
        "final_condition_number": float(opt.final_condition_number),
        "feasible": [bool(f) for f in res.get("feasible", [])],
        "outcomes": [
            {"stage": o.stage, "status": o.status, "message": o.message}
            for o in opt.optimisation_trace.outcomes
        ],
        "ipopt_iterations": {
            stage: len(opt.optimisation_trace.of_stage(stage))
            for stage in opt.optimisation_trace.stages()
        },
        "failures": [
            {k: (v if isinstance(v, (bool, int, str)) else str(v)) for k, v in f.items()}
            for f in res.get("failures", [])
        ],
        "settings": {
            k: v
            for k, v in opt.trajectory_config.items()
            if isinstance(v, (bool, int, float, str)) or v is None
        },
    }


def trajectory(args: argparse.Namespace) -> int:
    """``figaroh trajectory``: exit 0 when every segment converged, else 1 (failed, fell back)."""
    require_file(args.config, "CONFIG")
    require_file(args.urdf, "URDF")
    out = require_output_dir(args.output, "-o/--output")
    require_extra("cyipopt", "ipopt", "exciting-trajectory design (IPOPT)")
    names = ["load robot", "set up"] + [
        f"segment {s + 1}/{args.segments}" for s in range(args.segments)
    ]
    names.append("write")
    with steps_for(args, names) as steps:
        steps.start("load robot")
        with input_phase(f"cannot load the URDF {args.urdf}"):
            robot = Robot(str(args.urdf), package_dirs=args.package_dir, isFext=args.free_flyer)
        steps.start("set up")
        joints = _active_joints(robot, str(args.config))
        with input_phase(f"cannot set up the trajectory design of {args.config}"):
            opt = _SteppedTrajectory(
                robot,
                joints,
                str(args.config),
                rng=args.seed,
                steps=steps,
            )
            opt.trajectory_config.update(_trajectory_overrides(args))
            opt.initialize()
        opt.solve(stack_reps=args.segments)
        steps.start("write")
        make_folder(out)
        summary = _trajectory_summary(opt, args.segments)
        summary_path = out / "trajectory_summary.yaml"
        atomic_write_text(summary_path, yaml.safe_dump(summary, sort_keys=False))
        written = [summary_path]
        if opt.results["P_F"]:
            t, q, v, a = opt.stacked_trajectory()
            cb = opt.CB
            written.insert(
                0,
                write_trajectory_csv(
                    out / "trajectory.csv",
                    joints,
                    t,
                    q[:, cb.act_idxq],
                    v[:, cb.act_idxv],
                    a[:, cb.act_idxv],
                ),
            )
    solved = summary["segments_solved"]
    for path in written:
        say(args, f"wrote {path}")
    if solved < args.segments:
        reasons = "; ".join(f["reason"] for f in summary["failures"][:3]) or "no reason reported"
        raise CLIError(
            f"{solved} of {args.segments} trajectory segments solved ({reasons}); try "
            "--ipopt-max-iterations, another --seed or fewer --waypoints",
            EXIT_FAILED,
        )
    say(
        args,
        f"designed {solved} segment(s) for {len(joints)} joints of {robot.model.name}: "
        f"condition number {summary['initial_condition_number'][0]:.4g} -> "
        f"{summary['final_condition_number']:.4g}",
    )
    check_outcome(
        args,
        opt.optimisation_trace,
        "IPOPT",
        "raise --ipopt-max-iterations or try another --seed",
    )
    return EXIT_OK
