"""``figaroh identify`` and ``figaroh calibrate``: run, verify, write, archive.

Each command runs its workflow of :mod:`figaroh.cli.workflows`, checks the
verdict against the ``--threshold`` limits, writes the parameter CSV, the
verification JSON and, on request, the HTML report, the run archive and the
URDF export, and prints one summary line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict, List, Sequence

from figaroh.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    CLIError,
    one_line,
    require_output_dir,
    require_output_file,
    say,
    steps_for,
)
from figaroh.cli.thresholds import (
    POLICY_HINT,
    build_thresholds,
    check_calibration_limits,
    check_identification_limits,
)
from figaroh.cli.workflows import run_calibration, run_identification, write_parameter_csv
from figaroh.tools.run_archive import archive_run, compute_run_dir
from figaroh.tools.urdf_exporter import export_urdf

__all__ = ["calibrate", "identify"]


def _scope(args: argparse.Namespace, thresholds: Dict[str, Any]) -> str:
    if args.scope != "auto":
        return args.scope
    return "prediction" if thresholds else "execution"


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any computation, output paths that cannot be written (exit 2)."""
    require_output_dir(args.output, "-o/--output")
    if args.export_urdf:
        require_output_file(args.export_urdf, "--export-urdf")


def _verdict_line(verdict: Any, scope: str, command: str = "") -> str:
    def describe(c: Any) -> str:
        reason = getattr(c, "reason", "")
        if c.name == "prediction_error_policy" and command in POLICY_HINT:
            reason = f"{reason}: {POLICY_HINT[command]}" if reason else POLICY_HINT[command]
        return f"{c.name} ({reason})" if reason else c.name

    checks = getattr(verdict, "checks", []) or []
    failed = [c for c in checks if getattr(c, "status", "") == "fail"]
    missing = [c for c in checks if getattr(c, "status", "") == "not_evaluated"]
    line = f"verdict ({scope} scope): {verdict.status}"
    if failed:
        line += "; failed: " + ", ".join(describe(c) for c in failed[:6])
    if missing:
        line += "; not evaluated: " + ", ".join(describe(c) for c in missing[:6])
    return line


def _archive(obj: Any, out: Path, verdict: Any) -> str:
    run_dir = Path(compute_run_dir(obj, root=str(out / "runs")))  # exists on return
    obj.export_verification_report(output_path=str(run_dir / "verdict.json"), verdict=verdict)
    obj.export_html_report(output_path=str(run_dir / "report.html"), verdict=verdict)
    return archive_run(obj, run_dir)


def _write_verdict_report_archive(task, args, out: Path, verdict) -> List[Path]:
    """Verification JSON, then the HTML report (``--report``) and archive (``--archive``).

    Every file shows ``verdict`` (computed once by the command).
    """
    written = [Path(task.export_verification_report(output_dir=str(out), verdict=verdict))]
    if args.report:
        written.append(Path(task.export_html_report(output_dir=str(out), verdict=verdict)))
    if args.archive:
        written.append(Path(_archive(task, out, verdict)))
    return written


def _report_outcome(args, verdict, scope, written: Sequence[Path]) -> int:
    """Print the verdict line and the written files; exit code from the verdict."""
    say(args, _verdict_line(verdict, scope, args.command))
    for path in written:
        say(args, f"wrote {path}")
    return EXIT_OK if verdict.passed else EXIT_FAILED


def identify(args: argparse.Namespace) -> int:
    """``figaroh identify``: exit 0 when the verdict passed, else 1."""
    thresholds = build_thresholds(args.threshold, command="identify")  # before the long steps
    _check_outputs(args)
    planned_scope = _scope(args, thresholds)  # --rmse-limit sets a limit for every joint
    names = ["load robot", "read configuration", "load data and build the regressor", "solve"]
    names += ["verify and write"] + (["URDF export"] if args.export_urdf else [])
    out = Path(args.output)
    with steps_for(args, names) as steps:
        ident = run_identification(
            args.config,
            args.urdf,
            args.data,
            validation=args.validation_data,
            select_stage=args.select_stage,
            decimate=args.decimate,
            wls=args.wls,
            package_dirs=args.package_dir,
            free_flyer=args.free_flyer,
            show_report=not args.quiet,
            require_inertials=bool(args.export_urdf),
            steps=steps,
            check=lambda ident: check_identification_limits(
                thresholds, "execution" if args.rmse_limit is not None else planned_scope, ident
            ),
        )
        steps.start("verify and write")
        if args.rmse_limit is not None:
            limits = {f"validation_rmse:{j}": args.rmse_limit for j in ident.fit_joints()}
            thresholds = {**build_thresholds(None, limits), **thresholds}
        scope = _scope(args, thresholds)
        verdict = ident.verify(thresholds=thresholds or None, scope=scope)
        written = [
            write_parameter_csv(
                out / "base_parameters.csv",
                list(ident.params_base),
                {"value": ident.phi_base, "std_relative_pct": ident.std_relative},
            )
        ]
        sel = getattr(ident, "selected", None)
        if sel is not None and getattr(sel, "status", "") == "accepted" and sel.values is not None:
            written.append(
                write_parameter_csv(
                    out / "selected_parameters.csv", list(sel.names), {"value": sel.values}
                )
            )
        written += _write_verdict_report_archive(ident, args, out, verdict)
        if args.export_urdf:
            steps.start("URDF export")
            try:
                written.append(Path(ident.export_urdf(args.urdf, output_path=args.export_urdf)))
            except ValueError as exc:
                raise CLIError(f"URDF export refused: {one_line(exc)}", EXIT_FAILED) from exc
    rmse = float(ident.rms_error)
    say(args)
    say(
        args,
        f"identified {len(ident.phi_base)} base parameters of {ident.model.name}: "
        f"effort RMSE {rmse:.4g}, condition number {ident.result['condition number']:.4g}",
    )
    return _report_outcome(args, verdict, scope, written)


def calibrate(args: argparse.Namespace) -> int:
    """``figaroh calibrate``: exit 0 when the verdict passed, else 1."""
    limits = {}
    if args.position_limit_mm is not None:
        limits["position_rmse_mm"] = args.position_limit_mm
    if args.orientation_limit_deg is not None:
        limits["orientation_rmse_deg"] = args.orientation_limit_deg
    thresholds = build_thresholds(args.threshold, limits, command="calibrate")
    _check_outputs(args)
    planned_scope = _scope(args, thresholds)
    names = ["load robot", "read configuration", "load data", "solve", "verify and write"]
    names += ["URDF export"] if args.export_urdf else []
    out = Path(args.output)
    with steps_for(args, names) as steps:
        calib = run_calibration(
            args.config,
            args.urdf,
            args.data,
            validation=args.validation_data,
            known_base_frame=args.known_base_frame,
            known_tip_frame=args.known_tip_frame,
            measurement_std=args.measurement_std,
            method=args.method,
            max_iterations=args.max_iterations,
            package_dirs=args.package_dir,
            free_flyer=args.free_flyer,
            show_report=not args.quiet,
            steps=steps,
            check=lambda calib: check_calibration_limits(
                thresholds, planned_scope, calib.calib_config
            ),
        )
        steps.start("verify and write")
        scope = _scope(args, thresholds)
        verdict = calib.verify(thresholds=thresholds or None, scope=scope)
        names_ = list(calib.calib_config["param_name"])
        columns: Dict[str, Any] = {"value": calib.var_}
        std = getattr(calib, "std_dev", None)
        if std is not None and len(std) == len(names_):
            columns["std_dev"] = std
        written = [write_parameter_csv(out / "calibration_parameters.csv", names_, columns)]
        written += _write_verdict_report_archive(calib, args, out, verdict)
        if args.export_urdf:
            steps.start("URDF export")
            params = {**calib.joint_corrections(lift=False), **calib.metrology_frames()}
            written.append(Path(export_urdf(args.urdf, params, output_path=args.export_urdf)))
    rmse = float((calib.evaluation_metrics or {}).get("rmse", float("nan")))
    say(args)
    say(
        args,
        f"calibrated {len(names_)} parameters of {calib.model.name} on "
        f"{calib.calib_config.get('NbSample')} postures: RMSE {rmse:.4g}",
    )
    return _report_outcome(args, verdict, scope, written)
