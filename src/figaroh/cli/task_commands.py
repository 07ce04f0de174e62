"""``figaroh identify`` and ``figaroh calibrate``: run, verify, write, archive.

Each command runs its workflow of :mod:`figaroh.cli.workflows`, checks the
verdict against the configuration's ``verification`` limits and the
command-line ones (``--threshold`` and the dedicated options win metric by
metric), in the scope ``--scope`` names, else the configuration's, else
``prediction`` (the defaults of ``verify()``), writes the parameter CSV, the
verification JSON and, on request, the HTML report, the run archive
(``--archive``: under ``OUTPUT/runs``, or ``--archive DIR``) and the URDF
export, and prints one summary line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from figaroh._run.verification_policy import DEFAULT_SCOPE, config_policy
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
from figaroh.cli.options import ARCHIVE_UNDER_OUTPUT
from figaroh.cli.thresholds import (
    POLICY_HINT,
    build_thresholds,
    check_calibration_limits,
    check_identification_limits,
)
from figaroh.cli.workflows import (
    BagInput,
    base_parameter_table,
    calibration_rmse_text,
    calibrator_parameter_table,
    confidence_columns,
    effort_unit_text,
    run_calibration,
    run_identification,
    write_parameter_csv,
)
from figaroh.tools.run_archive import archive_run, compute_run_dir
from figaroh.tools.urdf_exporter import export_urdf

__all__ = ["calibrate", "identify"]


def _policy(
    args: argparse.Namespace, thresholds: Dict[str, Any], config: Any
) -> Tuple[Dict[str, Any], str]:
    """The thresholds and scope of the command's verdict (the rules of ``verify()``).

    Thresholds: the configuration's ``verification.thresholds``, overridden
    metric by metric by the command-line limits. Scope: ``--scope`` when
    given (``auto``: prediction when a limit is given, else execution), else
    the configuration's ``verification.scope``, else ``prediction`` — the
    default of ``verify()``.
    """
    config_thresholds, config_scope = config_policy(config)
    merged = {**(config_thresholds or {}), **thresholds}
    if args.scope is None:
        scope = config_scope or DEFAULT_SCOPE
    elif args.scope == "auto":
        scope = "prediction" if merged else "execution"
    else:
        scope = args.scope
    return merged, scope


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any computation, output paths that cannot be written (exit 2)."""
    require_output_dir(args.output, "-o/--output")
    if args.archive is not None:
        require_output_dir(_archive_root(args, Path(args.output)), "--archive")
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


def _archive_root(args: argparse.Namespace, out: Path) -> Path:
    """The archive root of ``--archive [DIR]`` (no DIR: ``OUTPUT/runs``)."""
    return out / "runs" if args.archive == ARCHIVE_UNDER_OUTPUT else Path(args.archive)


def _archive(obj: Any, root: Path, verdict: Any) -> str:
    run_dir = Path(compute_run_dir(obj, root=str(root)))  # exists on return
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
    if args.archive is not None:
        written.append(Path(_archive(task, _archive_root(args, out), verdict)))
    return written


def _report_outcome(args, verdict, scope, written: Sequence[Path]) -> int:
    """Print the verdict line and the written files; exit code from the verdict."""
    say(args, _verdict_line(verdict, scope, args.command))
    for path in written:
        say(args, f"wrote {path}")
    return EXIT_OK if verdict.passed else EXIT_FAILED


def _identify_bag(args: argparse.Namespace) -> BagInput | None:
    """The ``--bag`` input of ``figaroh identify`` (None for ``--data``)."""
    if args.bag is None:
        for option, value in (("--topic", args.topic), ("--validation-bag", args.validation_bag)):
            if value:
                raise CLIError(f"{option} reads a ROS bag: give the training log with --bag")
        return None
    return BagInput(
        path=args.bag,
        topics=tuple(args.topic) if args.topic else None,
        validation_path=args.validation_bag,
        resample=args.resample,
    )


def _calibrate_bag(args: argparse.Namespace) -> BagInput | None:
    """The ``--bag`` input of ``figaroh calibrate`` (None for ``--data``)."""
    options = ("--pose-topic", "--pose-frame", "--joint-topic", "--still-window")
    values = (args.pose_topic, args.pose_frame, args.joint_topic, args.still_window)
    if args.bag is None:
        for option, value in zip(options, values, strict=True):
            if value:
                raise CLIError(f"{option} reads a ROS bag: give the calibration data with --bag")
        return None
    return BagInput(
        path=args.bag,
        topics=tuple(args.joint_topic) if args.joint_topic else None,
        pose_topic=args.pose_topic,
        pose_frame=args.pose_frame,
        still_window_s=args.still_window,
    )


def identify(args: argparse.Namespace) -> int:
    """``figaroh identify``: exit 0 when the verdict passed, else 1."""
    given = build_thresholds(args.threshold, command="identify")  # before the long steps
    _check_outputs(args)
    policy: Dict[str, Any] = {}

    def plan(ident: Any) -> None:
        """The verdict's policy, checked once the configuration is read (before the fit)."""
        limits = {}
        if args.rmse_limit is not None:  # a limit for every fitted joint; --threshold wins
            limits = {f"validation_rmse:{j}": args.rmse_limit for j in ident.fit_joints()}
        thresholds, scope = _policy(
            args, {**build_thresholds(None, limits), **given}, ident.identif_config
        )
        check_identification_limits(thresholds, scope, ident)
        policy.update(thresholds=thresholds, scope=scope)

    names = ["load robot", "read configuration", "load data and build the regressor", "solve"]
    names += ["verify and write"] + (["URDF export"] if args.export_urdf else [])
    out = Path(args.output)
    with steps_for(args, names) as steps:
        ident = run_identification(
            args.config,
            args.urdf,
            args.data,
            bag=_identify_bag(args),
            validation=args.validation_data,
            select_stage=args.select_stage,
            decimate=args.decimate,
            wls=args.wls,
            package_dirs=args.package_dir,
            free_flyer=args.free_flyer,
            show_report=not args.quiet,
            require_inertials=bool(args.export_urdf),
            steps=steps,
            check=plan,
        )
        steps.start("verify and write")
        if not policy:  # a workflow that skipped the check
            plan(ident)
        scope = policy["scope"]
        verdict = ident.verify(thresholds=policy["thresholds"], scope=scope)
        written = [
            write_parameter_csv(
                out / "base_parameters.csv",
                list(ident.params_base),
                {
                    "value": ident.phi_base,
                    "std_relative_pct": ident.std_relative,
                    **confidence_columns(base_parameter_table(ident)),
                },
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
        f"effort RMSE {rmse:.4g} {effort_unit_text(ident)} (training set), condition number "
        f"{ident.result['condition number']:.4g}",
    )
    return _report_outcome(args, verdict, scope, written)


def calibrate(args: argparse.Namespace) -> int:
    """``figaroh calibrate``: exit 0 when the verdict passed, else 1."""
    limits = {}
    if args.position_limit_mm is not None:
        limits["position_rmse_mm"] = args.position_limit_mm
    if args.orientation_limit_deg is not None:
        limits["orientation_rmse_deg"] = args.orientation_limit_deg
    given = build_thresholds(args.threshold, limits, command="calibrate")
    _check_outputs(args)
    policy: Dict[str, Any] = {}

    def plan(calib: Any) -> None:
        """The verdict's policy, checked once the configuration is read (before the fit)."""
        thresholds, scope = _policy(args, given, calib.calib_config)
        check_calibration_limits(thresholds, scope, calib.calib_config)
        policy.update(thresholds=thresholds, scope=scope)

    names = ["load robot", "read configuration", "load data", "solve", "verify and write"]
    names += ["URDF export"] if args.export_urdf else []
    out = Path(args.output)
    with steps_for(args, names) as steps:
        calib = run_calibration(
            args.config,
            args.urdf,
            args.data,
            bag=_calibrate_bag(args),
            validation=args.validation_data,
            known_base_frame=args.known_base_frame,
            known_tip_frame=args.known_tip_frame,
            measurement_std=args.measurement_std,
            method=args.method,
            max_iterations=args.outlier_passes,
            package_dirs=args.package_dir,
            free_flyer=args.free_flyer,
            show_report=not args.quiet,
            steps=steps,
            check=plan,
        )
        steps.start("verify and write")
        if not policy:  # a workflow that skipped the check
            plan(calib)
        scope = policy["scope"]
        verdict = calib.verify(thresholds=policy["thresholds"], scope=scope)
        names_ = list(calib.calib_config["param_name"])
        columns: Dict[str, Any] = {"value": calib.var_}
        std = getattr(calib, "std_dev", None)
        if std is not None and len(std) == len(names_):
            columns["std_dev"] = std
            columns.update(confidence_columns(calibrator_parameter_table(calib)))
        written = [write_parameter_csv(out / "calibration_parameters.csv", names_, columns)]
        written += _write_verdict_report_archive(calib, args, out, verdict)
        if args.export_urdf:
            steps.start("URDF export")
            params = {**calib.joint_corrections(lift=False), **calib.metrology_frames()}
            written.append(Path(export_urdf(args.urdf, params, output_path=args.export_urdf)))
    say(args)
    say(
        args,
        f"calibrated {len(names_)} parameters of {calib.model.name} on "
        f"{calib.calib_config.get('NbSample')} postures: "
        f"{calibration_rmse_text(calib.evaluation_metrics or {})} (training set)",
    )
    return _report_outcome(args, verdict, scope, written)
