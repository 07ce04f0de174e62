"""The ``figaroh`` command line.

Commands::

    figaroh identify CONFIG --urdf URDF --data DIR [--select-stage STAGE] [--report]
    figaroh calibrate CONFIG --urdf URDF --data CSV [--report]
    figaroh report RUN_DIR
    figaroh compare A.json B.json -o page.html
    figaroh migrate-config OLD NEW
    figaroh robots

Every command accepts ``--quiet`` (errors only, no progress bar) and
``--verbose`` (``-v`` info, ``-vv`` debug and tracebacks).

Exit codes: ``0`` success (for ``identify``/``calibrate``: the verdict
passed), ``1`` the verdict did not pass or the computation failed, ``2`` bad
input (missing file, malformed configuration or data, bad arguments) — always
with a one-line message on stderr and no traceback.

Importing this module is cheap: the library is imported by the command that
needs it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Dict, List, Sequence

from figaroh.cli.workflows import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    INPUT_ERRORS,
    CLIError,
    build_thresholds,
    one_line,
    require_file,
)

logger = logging.getLogger(__name__)

__all__ = ["build_parser", "main"]

PROG = "figaroh"
SELECT_STAGES = ("fit", "reconstruction", "physical_fit")


# ---------------------------------------------------------------------------
# logging: one line per record; errors deferred so a failing command prints one line
# ---------------------------------------------------------------------------
class _CLILogHandler(logging.Handler):
    """Writes log records as single lines on stderr.

    ERROR records are held back until the command ends: when the command
    fails, its own one-line message replaces them (the library logs an error
    before raising); when it succeeds they are written then.
    """

    def __init__(self, stream, verbose: int) -> None:
        super().__init__()
        self.stream = stream
        self.verbose = verbose
        self.deferred: List[logging.LogRecord] = []
        fmt = "%(levelname)s %(name)s: %(message)s" if verbose else "%(levelname)s: %(message)s"
        self.setFormatter(logging.Formatter(fmt))

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR and not self.verbose:
            self.deferred.append(record)
            return
        self._write(record)

    def _write(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            if not self.verbose:
                text = " ".join(text.split())
            self.stream.write(text + "\n")
            self.stream.flush()
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)

    def flush_deferred(self, discard: bool) -> None:
        records, self.deferred = self.deferred, []
        if not discard:
            for record in records:
                self._write(record)


class _Logging:
    """Install the CLI log handler on the root logger; restore everything on exit."""

    def __init__(self, quiet: bool, verbose: int) -> None:
        self.level = (
            logging.ERROR
            if quiet
            else (
                logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
            )
        )
        self.handler = _CLILogHandler(sys.stderr, verbose)
        self.root = logging.getLogger()
        self._saved_level = self.root.level

    def __enter__(self) -> _CLILogHandler:
        self.root.addHandler(self.handler)
        self.root.setLevel(self.level)
        logging.captureWarnings(True)
        return self.handler

    def __exit__(self, *exc: Any) -> None:
        logging.captureWarnings(False)
        self.root.removeHandler(self.handler)
        self.root.setLevel(self._saved_level)


# ---------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------
def _add_verbosity(parser: argparse.ArgumentParser, suppress: bool) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="print errors only (no report, no progress bar)",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if suppress else 0,
        help="more log output (-v info, -vv debug and tracebacks)",
    )


def _add_robot_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="unified configuration YAML")
    p.add_argument("--urdf", required=True, help="robot URDF file")
    p.add_argument(
        "--package-dir",
        action="append",
        default=None,
        metavar="DIR",
        help="folder holding package:// packages (repeatable; parents of the URDF and "
        "example-robot-data are searched anyway)",
    )
    p.add_argument("--free-flyer", action="store_true", help="floating-base robot")


def _add_verdict_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scope",
        choices=("auto", "execution", "prediction"),
        default="auto",
        help="verification scope (auto: prediction when a limit is given, else execution)",
    )
    p.add_argument(
        "--threshold",
        action="append",
        default=None,
        metavar="NAME=VALUE[:min|max]",
        help="acceptance limit on a verdict metric (repeatable; default comparison max)",
    )
    p.add_argument("--report", action="store_true", help="also write the HTML report")
    p.add_argument("--archive", action="store_true", help="archive the run under OUTPUT/runs")


def build_parser() -> argparse.ArgumentParser:
    """The ``figaroh`` argument parser (one sub-parser per command)."""
    from figaroh import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Dynamic identification and geometric calibration of robots.",
        epilog="Exit codes: 0 success, 1 verdict failed, 2 bad input.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_verbosity(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "identify",
        help="identify dynamic parameters from CSV logs",
        description="Identify the base dynamic parameters of a robot from CSV logs "
        "(columns t, q_<joint>, [dq_<joint>], [ddq_<joint>], tau_<joint>).",
    )
    _add_robot_options(p)
    p.add_argument(
        "--data", required=True, help="training log: a CSV file or a folder with identification.csv"
    )
    p.add_argument("--validation-data", metavar="PATH", help="held-out log (CSV file or folder)")
    p.add_argument(
        "--select-stage", choices=SELECT_STAGES, help="estimate to report, verify and export"
    )
    p.add_argument(
        "--decimate", type=int, metavar="N", help="low-pass and keep every N-th sample (N ≥ 2)"
    )
    p.add_argument(
        "--wls",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="weighted least squares (default: problem.wls of the configuration)",
    )
    p.add_argument(
        "--rmse-limit",
        type=float,
        metavar="TAU",
        help="maximum held-out effort RMSE of every fitted joint [N·m or N]",
    )
    p.add_argument("--export-urdf", metavar="PATH", help="write the selected estimate as a URDF")
    p.add_argument("-o", "--output", default="results/identification", help="output folder")
    _add_verdict_options(p)
    _add_verbosity(p, suppress=True)
    p.set_defaults(func=_cmd_identify)

    p = sub.add_parser(
        "calibrate",
        help="geometric calibration from a pose CSV",
        description="Calibrate the kinematic parameters of a robot from measured poses "
        "(columns x1, y1, z1, phix1, phiy1, phiz1 ... and one column per joint).",
    )
    _add_robot_options(p)
    p.add_argument("--data", required=True, help="calibration CSV")
    p.add_argument("--validation-data", metavar="CSV", help="held-out calibration CSV")
    p.add_argument("--known-base-frame", action="store_true", help="do not estimate base_*")
    p.add_argument("--known-tip-frame", action="store_true", help="do not estimate pEE*/phiEE*")
    p.add_argument(
        "--measurement-std",
        nargs=2,
        type=float,
        metavar=("POS_M", "ROT_RAD"),
        help="measurement noise: position [m] and orientation [rad]",
    )
    p.add_argument("--method", choices=("lm", "trf", "dogbox"), default="lm")
    p.add_argument("--max-iterations", type=int, default=3, help="outlier-loop fits")
    p.add_argument("--position-limit-mm", type=float, help="maximum held-out position RMSE [mm]")
    p.add_argument(
        "--orientation-limit-deg", type=float, help="maximum held-out orientation RMSE [deg]"
    )
    p.add_argument("--export-urdf", metavar="PATH", help="write the calibrated URDF")
    p.add_argument("-o", "--output", default="results/calibration", help="output folder")
    _add_verdict_options(p)
    _add_verbosity(p, suppress=True)
    p.set_defaults(func=_cmd_calibrate)

    p = sub.add_parser(
        "report",
        help="summarise an archived run (or an archive, or a verification JSON)",
        description="Summarise an archived run directory, the runs of an archive root "
        "(index.jsonl) or a *_verification.json file. Exit 1 when the verdict did not pass.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    _add_verbosity(p, suppress=True)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser(
        "compare",
        help="write the two-run comparison page",
        description="Write the static two-run comparison page with both verification "
        "exports already loaded.",
    )
    p.add_argument("run_a", metavar="A.json")
    p.add_argument("run_b", metavar="B.json")
    p.add_argument("-o", "--output", default="compare.html", help="page to write")
    p.add_argument("--title", default=None, help="page title")
    _add_verbosity(p, suppress=True)
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser(
        "migrate-config",
        help="convert a legacy flat configuration to the unified format",
        description="Convert a legacy flat configuration to the unified format "
        "(figaroh.utils.config_migration). Exit 1 when the self-check (--urdf) fails.",
    )
    p.add_argument("old", metavar="OLD")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--task", default=None, help="section(s) to migrate (default: all present)")
    p.add_argument("--template", default=None, help="base, manipulator, humanoid or a YAML path")
    p.add_argument("--urdf", default=None, help="robot URDF; enables the round-trip self-check")
    p.add_argument("--robot-name", default=None, help="robot.name to write")
    _add_verbosity(p, suppress=True)
    p.set_defaults(func=_cmd_migrate)

    p = sub.add_parser(
        "robots",
        help="list the robots that can be loaded by name",
        description="List the URDFs shipped by example-robot-data (absolute paths, usable "
        "with --urdf) or the robot_descriptions catalogue.",
    )
    p.add_argument(
        "--loader",
        choices=("figaroh", "robot_description"),
        default="figaroh",
        help="figaroh: example-robot-data URDFs; robot_description: robot_descriptions names",
    )
    _add_verbosity(p, suppress=True)
    p.set_defaults(func=_cmd_robots)
    return parser


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _steps(args: argparse.Namespace, names: Sequence[str]):
    from figaroh.cli.progress import Steps

    return Steps(names, enabled=False if args.quiet else None, desc=args.command)


def _say(args: argparse.Namespace, text: str = "") -> None:
    if not args.quiet:
        print(text)


def _scope(args: argparse.Namespace, thresholds: Dict[str, Any]) -> str:
    if args.scope != "auto":
        return args.scope
    return "prediction" if thresholds else "execution"


def _verdict_line(verdict: Any, scope: str) -> str:
    def describe(c: Any) -> str:
        reason = getattr(c, "reason", "")
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


def _archive(obj: Any, out: Path, thresholds: Dict[str, Any], scope: str) -> str:
    from figaroh.tools.run_archive import archive_run, compute_run_dir

    run_dir = Path(compute_run_dir(obj, root=str(out / "runs")))
    run_dir.mkdir(parents=True, exist_ok=True)
    obj.export_verification_report(
        output_path=str(run_dir / "verdict.json"), thresholds=thresholds or None, scope=scope
    )
    obj.export_html_report(output_path=str(run_dir / "report.html"))
    return archive_run(obj, run_dir)


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------
def _write_verdict_report_archive(task, args, out: Path, thresholds, scope) -> List[Path]:
    """Verification JSON, then the HTML report (``--report``) and archive (``--archive``)."""
    written = [
        Path(
            task.export_verification_report(
                output_dir=str(out), thresholds=thresholds or None, scope=scope
            )
        )
    ]
    if args.report:
        written.append(Path(task.export_html_report(output_dir=str(out))))
    if args.archive:
        written.append(Path(_archive(task, out, thresholds, scope)))
    return written


def _report_outcome(args, verdict, scope, written: Sequence[Path]) -> int:
    """Print the verdict line and the written files; exit code from the verdict."""
    _say(args, _verdict_line(verdict, scope))
    for path in written:
        _say(args, f"wrote {path}")
    return EXIT_OK if verdict.passed else EXIT_FAILED


def _cmd_identify(args: argparse.Namespace) -> int:
    from figaroh.cli.workflows import run_identification, write_parameter_csv

    if args.decimate is not None and args.decimate < 2:
        raise CLIError(f"--decimate must be at least 2, got {args.decimate}")
    thresholds = build_thresholds(args.threshold)  # validated before the long steps
    names = ["load robot", "read configuration", "load data and build the regressor", "solve"]
    names += ["verify and write"] + (["URDF export"] if args.export_urdf else [])
    out = Path(args.output)
    with _steps(args, names) as steps:
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
        written += _write_verdict_report_archive(ident, args, out, thresholds, scope)
        if args.export_urdf:
            steps.start("URDF export")
            try:
                written.append(Path(ident.export_urdf(args.urdf, output_path=args.export_urdf)))
            except ValueError as exc:
                raise CLIError(f"URDF export refused: {one_line(exc)}", EXIT_FAILED) from exc
    rmse = float(ident.rms_error)
    _say(args)
    _say(
        args,
        f"identified {len(ident.phi_base)} base parameters of {ident.model.name}: "
        f"effort RMSE {rmse:.4g}, condition number {ident.result['condition number']:.4g}",
    )
    return _report_outcome(args, verdict, scope, written)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from figaroh.cli.workflows import run_calibration, write_parameter_csv

    limits = {}
    if args.position_limit_mm is not None:
        limits["position_rmse_mm"] = args.position_limit_mm
    if args.orientation_limit_deg is not None:
        limits["orientation_rmse_deg"] = args.orientation_limit_deg
    thresholds = build_thresholds(args.threshold, limits)
    names = ["load robot", "read configuration", "load data", "solve", "verify and write"]
    names += ["URDF export"] if args.export_urdf else []
    out = Path(args.output)
    with _steps(args, names) as steps:
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
        written += _write_verdict_report_archive(calib, args, out, thresholds, scope)
        if args.export_urdf:
            steps.start("URDF export")
            from figaroh.tools.urdf_exporter import export_urdf

            params = {**calib.joint_corrections(lift=False), **calib.metrology_frames()}
            written.append(Path(export_urdf(args.urdf, params, output_path=args.export_urdf)))
    rmse = float((calib.evaluation_metrics or {}).get("rmse", float("nan")))
    _say(args)
    _say(
        args,
        f"calibrated {len(names_)} parameters of {calib.model.name} on "
        f"{calib.calib_config.get('NbSample')} postures: RMSE {rmse:.4g}",
    )
    return _report_outcome(args, verdict, scope, written)


def _load_json(path: Path, what: str) -> Dict[str, Any]:
    require_file(path, what)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CLIError(f"{what} {path} is not valid JSON: {one_line(exc)}") from exc
    if not isinstance(data, dict):
        raise CLIError(f"{what} {path} is not a JSON object")
    return data


def _require_verdict(data: Dict[str, Any], path: Path) -> Dict[str, Any]:
    if not isinstance(data.get("checks"), list) or not isinstance(data.get("metrics"), dict):
        raise CLIError(
            f"{path} is not a verification export (no 'checks'/'metrics'); use the "
            "*_verification.json written by export_verification_report() or figaroh identify"
        )
    return data


def _summarise_verdict(data: Dict[str, Any]) -> List[str]:
    meta = data.get("metadata") or {}
    model = meta.get("model") or {}
    asset = meta.get("asset") or {}
    checks = data.get("checks") or []
    count = {s: sum(1 for c in checks if c.get("status") == s) for s in ("pass", "fail")}
    unknown = len(checks) - count["pass"] - count["fail"]
    lines = []
    if meta.get("run_id"):
        lines.append(f"run          {meta['run_id']}")
    lines.append(
        f"task         {meta.get('task', '?')} · robot {model.get('robot_name', '?')} · "
        f"asset {asset.get('asset_id', '?')}"
    )
    status = data.get("status", "pass" if data.get("passed") else "fail")
    stage = data.get("selected_stage")
    lines.append(
        f"verdict      {status} (scope {data.get('scope', '?')}"
        + (f", selected stage {stage})" if stage else ")")
    )
    stages = data.get("stages") or {}
    if stages:
        lines.append("stages       " + " · ".join(f"{k} {v}" for k, v in stages.items()))
    lines.append(
        f"checks       {count['pass']} passed, {count['fail']} failed, {unknown} not evaluated"
    )
    for c in checks:
        if c.get("status") in ("fail", "not_evaluated"):
            value = c.get("value")
            shown = "n/a" if value is None else f"{value:.6g}"
            reason = f" — {c['reason']}" if c.get("reason") else ""
            lines.append(
                f"  {c['status'].upper():<13} {c.get('name')} = {shown} "
                f"({c.get('comparison', '?')} {c.get('threshold')}){reason}"
            )
    return lines


def _cmd_report(args: argparse.Namespace) -> int:
    path = Path(args.run_dir)
    if not path.exists():
        raise CLIError(f"run directory not found: {path}")
    if path.is_file():
        data = _require_verdict(_load_json(path, "verification file"), path)
        for line in _summarise_verdict(data):
            _say(args, line)
        return EXIT_OK if data.get("passed") else EXIT_FAILED
    if (path / "index.jsonl").is_file() and not (path / "provenance.json").is_file():
        from figaroh.tools.run_archive import read_index

        entries = read_index(path)
        _say(args, f"{len(entries)} archived run(s) in {path}")
        for e in entries:
            status = e.get("status") or ("pass" if e.get("passed") else "?")
            _say(
                args,
                f"  {e.get('archived_at', '?'):<33} {e.get('task', '?'):<15} "
                f"{e.get('asset_id', '?'):<12} {status:<14} {e.get('run_dir', '')}",
            )
        return EXIT_OK
    verdict_file, provenance_file = path / "verdict.json", path / "provenance.json"
    if not verdict_file.is_file() and not provenance_file.is_file():
        raise CLIError(
            f"{path} is not an archived run (no verdict.json or provenance.json); pass a run "
            "directory written by --archive / archive_run(), an archive root or a "
            "*_verification.json file"
        )
    _say(args, f"run directory {path}")
    if verdict_file.is_file():
        data = _require_verdict(_load_json(verdict_file, "verdict"), verdict_file)
        for line in _summarise_verdict(data):
            _say(args, line)
        passed = bool(data.get("passed"))
    else:
        prov = _load_json(provenance_file, "provenance")
        _say(args, f"run          {prov.get('run_id', '?')} (no verdict.json)")
        passed = True
    params = path / "parameters.csv"
    if params.is_file():
        n = max(0, len(params.read_text(encoding="utf-8").splitlines()) - 1)
        _say(args, f"parameters   {n} ({params})")
    report = path / "report.html"
    if report.is_file():
        _say(args, f"report       {report}")
    return EXIT_OK if passed else EXIT_FAILED


def _compat_notes(a: Dict[str, Any], b: Dict[str, Any]) -> List[str]:
    ca, cb = a.get("compat") or {}, b.get("compat") or {}
    ta = (a.get("metadata") or {}).get("task")
    tb = (b.get("metadata") or {}).get("task")
    notes = []
    if ta != tb:
        notes.append(f"different tasks ({ta} vs {tb})")
    for key in ("active_joints", "dof_names", "decimate"):
        if key in ca or key in cb:
            if ca.get(key) != cb.get(key):
                notes.append(f"different {key}")
    if a.get("schema_version") != b.get("schema_version"):
        notes.append("different schema_version")
    na, nb = ca.get("sample_count"), cb.get("sample_count")
    if isinstance(na, (int, float)) and isinstance(nb, (int, float)) and min(na, nb) > 0:
        from figaroh.tools.compare_report import SAMPLE_COUNT_RATIO_LIMIT

        if max(na, nb) / min(na, nb) > SAMPLE_COUNT_RATIO_LIMIT:
            notes.append(f"sample counts {na} and {nb} differ by more than ×2")
    sa, sb = ca.get("config_sha256"), cb.get("config_sha256")
    if sa and sb and sa != sb:
        notes.append("different configurations (sha256)")
    return notes


def _cmd_compare(args: argparse.Namespace) -> int:
    from figaroh.data.source import atomic_write_text
    from figaroh.tools.compare_report import generate_compare_page

    runs = []
    for arg in (args.run_a, args.run_b):
        path = Path(arg)
        runs.append((path, _require_verdict(_load_json(path, "verification file"), path)))
    page = generate_compare_page(title=args.title)
    preload = ["<script>", "(function () {", "  function go() {"]
    for slot, (path, data) in zip(("a", "b"), runs, strict=True):
        text = json.dumps(data, allow_nan=False)
        preload.append(
            f"    window.figarohCompare.load({json.dumps(slot)}, {_js_string(path.name)}, "
            f"{_js_string(text)});"
        )
    preload += [
        "  }",
        '  if (document.readyState === "loading") {',
        '    document.addEventListener("DOMContentLoaded", go);',
        "  } else { go(); }",
        "})();",
        "</script>",
    ]
    cut = page.rfind("</body>")
    page = page[:cut] + "\n".join(preload) + "\n" + page[cut:]
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, page)
    notes = _compat_notes(runs[0][1], runs[1][1])
    if notes:
        _say(args, "not directly comparable: " + "; ".join(notes) + " (the page asks to confirm)")
    _say(args, f"wrote {out}")
    return EXIT_OK


def _js_string(text: str) -> str:
    """A JavaScript string literal safe inside a ``<script>`` element."""
    return json.dumps(text, ensure_ascii=True).replace("</", "<\\/").replace("<!--", "<\\!--")


def _cmd_migrate(args: argparse.Namespace) -> int:
    from figaroh.utils import config_migration

    require_file(args.old, "legacy configuration")
    argv = [args.old, args.new]
    for flag, value in (
        ("--task", args.task),
        ("--template", args.template),
        ("--urdf", args.urdf),
        ("--robot-name", args.robot_name),
    ):
        if value is not None:
            argv += [flag, value]
    return int(config_migration.main(argv))


def _cmd_robots(args: argparse.Namespace) -> int:
    from figaroh.tools.load_robot import list_available_robots

    names = list_available_robots(args.loader)
    if not names:
        hint = (
            "pip install example-robot-data"
            if args.loader == "figaroh"
            else "pip install robot_descriptions"
        )
        raise CLIError(f"no robot found for loader {args.loader!r} ({hint})", EXIT_FAILED)
    if args.loader == "figaroh":
        from figaroh.tools.robot_paths import example_robot_data_dir

        base = example_robot_data_dir()
        names = [str(base / n) for n in names]
    for name in names:
        print(name)
    return EXIT_OK


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``figaroh`` command line; returns the exit code.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        ``0`` success, ``1`` verdict failed or computation failed, ``2`` bad input.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage error (2) or --help/--version (0)
        return EXIT_BAD_INPUT if exc.code not in (0, None) else EXIT_OK
    os.environ.setdefault("MPLBACKEND", "Agg")  # never open a window from a terminal
    where = f"{PROG} {args.command}"
    failed = True
    with _Logging(args.quiet, args.verbose) as handler:
        try:
            code = int(args.func(args))
            failed = False
        except CLIError as exc:
            code = exc.code
            _error(where, exc.message, args.verbose, exc)
        except KeyboardInterrupt:
            code = 130
            _error(where, "interrupted", 0, None)
        except BrokenPipeError:  # e.g. `figaroh robots | head`: the reader went away
            code = 141
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except INPUT_ERRORS as exc:
            code = EXIT_BAD_INPUT
            _error(where, one_line(exc), args.verbose, exc)
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line + exit 1
            code = EXIT_FAILED
            _error(
                where,
                f"{type(exc).__name__}: {one_line(exc)}"
                + ("" if args.verbose > 1 else " (run with -vv for the traceback)"),
                args.verbose,
                exc,
            )
        finally:
            handler.flush_deferred(discard=failed)
    return code


def _error(where: str, message: str, verbose: int, exc: BaseException | None) -> None:
    if exc is not None and verbose > 1:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.write(f"{where}: error: {one_line(message)}\n")
    sys.stderr.flush()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
