"""``figaroh postures``: design experiments before measuring.

``postures`` selects D-optimal calibration postures from a candidate pool
(:class:`figaroh.optimal.BaseOptimalCalibration`: SOCP relaxation of
``max log det Σ w_i X_i`` over the candidates' information matrices ``X_i``,
rounded to the candidates of largest weight). The candidates come from
``--candidates`` (YAML candidate schema or CSV with one column per joint),
else from the configuration's ``sample_configurations_file``, else
``--n-candidates`` postures drawn uniformly within the joint limits with the
seed ``--seed``.

Exit codes: ``0`` written, ``1`` the design is infeasible (too few postures
or a singular information matrix), ``2`` bad input or a missing optional
package (the message names the extra to install).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import yaml

from figaroh._optional import require
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
from figaroh.cli.workflows import input_phase, load_robot_model
from figaroh.errors import MissingDependencyError
from figaroh.optimal.base_optimal_calibration import (
    BaseOptimalCalibration,
    InfeasibleDesignError,
)
from figaroh.utils.fileio import atomic_write_text

__all__ = ["active_joint_values", "postures", "random_candidates", "require_extra"]


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


def _selection(opt: BaseOptimalCalibration, n_postures: int | None) -> List[int]:
    """Candidate rows selected: the SOCP's, or its ``n_postures`` of largest weight."""
    if n_postures is None:
        return list(opt.chosen_indices)
    return [int(k) for k in list(opt.w_dict_sort)[:n_postures]]


def _write_postures(
    out: Path, opt: BaseOptimalCalibration, chosen: Sequence[int]
) -> Dict[str, Path]:
    """``postures.csv`` (one column per joint + weight) and ``postures.yaml`` (candidate schema)."""
    ids = list(opt.calib_config["actJoint_idx"])
    names = [str(opt.model.names[j]) for j in ids]
    values = active_joint_values(opt.model, ids, np.asarray(opt.q_measured)[list(chosen)])
    weights = [float(opt.w_dict_sort.get(k, 0.0)) for k in chosen]
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "postures.csv"
    with open(csv_path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["candidate", *names, "weight"])
        for k, row, w in zip(chosen, values, weights, strict=True):
            writer.writerow([k, *(repr(float(v)) for v in row), repr(w)])
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
    """``figaroh postures``: exit 0 when written, 1 when the design is infeasible."""
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
            opt = BaseOptimalCalibration(robot, str(args.config))
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
    return EXIT_OK
