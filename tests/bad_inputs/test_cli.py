"""Bad inputs through the ``figaroh`` command line: exit code and one stderr line.

Every row runs ``figaroh.cli.main.main([...])`` in-process and expects the
documented exit code (``2`` bad input, ``1`` failed computation) with a single
stderr line, no traceback, naming the option or the file and the fix. None of
the rows reaches a fit: the command line checks its options, files and limits
before the long steps.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from conftest import ROOT, erd_path
from figaroh.cli import main as cli_main
from figaroh.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, exit_code_for
from figaroh.errors import FigarohError

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]
_URDF: list[Path] = []


class Exit(Exception):
    """What a command did: ``exit <code>: <stderr>`` (raised by every row)."""


def _urdf() -> Path:
    if not _URDF:
        _URDF.append(erd_path("ur_description/urdf/ur10_robot.urdf"))
    return _URDF[0]


# --------------------------------------------------------------------------
# input files
# --------------------------------------------------------------------------
def _ident_csv(tmp: Path, text: str | None = None, name: str = "identification.csv") -> Path:
    """A small identification log (20 samples) or the given text."""
    path = tmp / name
    if text is None:
        rng = np.random.default_rng(0)
        header = ["t"] + [f"q_{j}" for j in JOINTS] + [f"tau_{j}" for j in JOINTS]
        rows = np.column_stack([np.arange(20) * 0.01, rng.normal(size=(20, 12))])
        text = ",".join(header) + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n"
    path.write_text(text)
    return path


def _calib_csv(tmp: Path, name: str = "calibration.csv") -> Path:
    rng = np.random.default_rng(1)
    header = ["x1", "y1", "z1", "phix1", "phiy1", "phiz1", *JOINTS]
    rows = rng.normal(size=(10, 12))
    path = tmp / name
    text = ",".join(header) + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n"
    path.write_text(text)
    return path


def _binary(tmp: Path, name: str = "log.csv") -> Path:
    path = tmp / name
    path.write_bytes(bytes(range(256)) * 8)
    return path


def _file(name: str, content: str | bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    return make


def _verdict(checks: Any, **extra: Any) -> Callable[[Path], Path]:
    data = {"passed": True, "status": "pass", "checks": checks, "metrics": {}, **extra}
    return _file("run_verification.json", json.dumps(data))


def _run_dir(tmp: Path, checks: Any = None) -> Path:
    """An archived run folder: a failing verdict and a binary ``parameters.csv``."""
    run = tmp / "run"
    run.mkdir()
    failing = [{"name": "rmse", "status": "fail", "value": 2.0, "threshold": 1.0}]
    data = {"passed": False, "status": "fail", "checks": checks or failing, "metrics": {}}
    (run / "verdict.json").write_text(json.dumps(data))
    (run / "parameters.csv").write_bytes(bytes(range(256)))
    return run


def _folder(tmp: Path) -> Path:
    path = tmp / "folder"
    path.mkdir(exist_ok=True)
    return path


def _config_with(text: str) -> Callable[[Path], Path]:
    return _file("robot.yaml", f'extends: "{CONFIG}"\n{text}')


# --------------------------------------------------------------------------
# running a command
# --------------------------------------------------------------------------
def _resolve(arg: Any, tmp: Path) -> str:
    if callable(arg):
        return str(arg(tmp))
    if arg == "URDF":
        return str(_urdf())
    if arg == "CONFIG":
        return str(CONFIG)
    return str(arg)


def cli(*args: Any) -> Callable[[Path], None]:
    """A row's action: run ``figaroh ARGS`` and raise :class:`Exit` with its outcome.

    ``"URDF"``/``"CONFIG"`` stand for the UR10 files, a callable ``f(tmp)``
    for a file it creates. A bad-input exit must print exactly one line.
    """

    def call(tmp: Path) -> None:
        argv = [_resolve(a, tmp) for a in args]
        if "-o" not in argv and argv and argv[0] in ("identify", "calibrate"):
            argv += ["-o", str(tmp / "out")]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main.main(argv)
        text = err.getvalue().strip()
        assert "Traceback" not in text, text
        if code == EXIT_BAD_INPUT or (code == EXIT_FAILED and text):
            assert text.count("\n") == 0, f"more than one stderr line: {text!r}"
            assert text.startswith("figaroh"), text
        raise Exit(f"exit {code}: {text}")

    return call


def raising(exc: BaseException, *args: Any) -> Callable[[Path], None]:
    """Run ``figaroh ARGS`` with the command replaced by one that raises ``exc``."""
    run = cli(*args)

    def call(tmp: Path) -> None:
        saved = cli_main._command

        def fail(_args):
            raise exc

        cli_main._command = lambda name: fail
        try:
            run(tmp)
        finally:
            cli_main._command = saved

    return call


def row(name: str, call, code: int, phrase: str, already_good: bool = False) -> BadInput:
    """A row expecting exit ``code`` and ``phrase`` (regular expression) on stderr."""
    return BadInput(
        name=name,
        call=call,
        raises=Exit,
        match=rf"^exit {code}: .*{phrase}",
        already_good=already_good,
    )


IDENT = ("identify", "CONFIG", "--urdf", "URDF", "--data", _ident_csv)
CALIB = ("calibrate", "CONFIG", "--urdf", "URDF", "--data", _calib_csv)

CASES: list[BadInput] = [
    # ---- the command line itself (argparse): one line naming what is wrong
    row("unknown-subcommand", cli("frobnicate"), 2, "invalid choice: 'frobnicate'", True),
    row("no-subcommand", cli(), 2, "required: COMMAND", True),
    row(
        "identify-missing-required-options",
        cli("identify", "CONFIG"),
        2,
        r"required: --urdf",
        True,
    ),
    row(
        "identify-missing-data-source",
        cli("identify", "CONFIG", "--urdf", "URDF"),
        2,
        r"one of the arguments --data --bag is required",
        True,
    ),
    row("quiet-and-verbose", cli(*IDENT, "-q", "-v"), 2, "not allowed with argument", True),
    row("bad-scope-choice", cli(*IDENT, "--scope", "best"), 2, "--scope: invalid choice", True),
    row(
        "bad-select-stage",
        cli(*IDENT, "--select-stage", "best"),
        2,
        "--select-stage: invalid choice",
        True,
    ),
    row("bad-method", cli(*CALIB, "--method", "newton"), 2, "--method: invalid choice", True),
    # ---- numeric options: finite, and > 0 where zero or negative means nothing
    row("rmse-limit-negative", cli(*IDENT, "--rmse-limit", "-1"), 2, r"--rmse-limit: .*> 0"),
    row("rmse-limit-zero", cli(*IDENT, "--rmse-limit", "0"), 2, r"--rmse-limit: .*> 0"),
    row("rmse-limit-nan", cli(*IDENT, "--rmse-limit", "nan"), 2, "--rmse-limit: .*finite"),
    row("rmse-limit-text", cli(*IDENT, "--rmse-limit", "abc"), 2, "--rmse-limit: .*not a number"),
    row("decimate-one", cli(*IDENT, "--decimate", "1"), 2, r"--decimate: .*>= 2"),
    row("decimate-text", cli(*IDENT, "--decimate", "x"), 2, "--decimate: .*not an integer"),
    row("outlier-passes-zero", cli(*CALIB, "--outlier-passes", "0"), 2, "--outlier-passes: "),
    row("max-iterations-zero", cli(*CALIB, "--max-iterations", "0"), 2, "--max-iterations: "),
    row(
        "measurement-std-negative",
        cli(*CALIB, "--measurement-std", "-0.001", "0.01"),
        2,
        r"--measurement-std: .*> 0",
    ),
    row(
        "position-limit-negative",
        cli(*CALIB, "--position-limit-mm", "-2"),
        2,
        r"--position-limit-mm: .*> 0",
    ),
    row(
        "orientation-limit-inf",
        cli(*CALIB, "--orientation-limit-deg", "inf"),
        2,
        "--orientation-limit-deg: .*finite",
    ),
    # ---- --threshold: syntax, value, metric name
    row("threshold-no-equals", cli(*IDENT, "--threshold", "x"), 2, "NAME=VALUE", True),
    row("threshold-not-a-number", cli(*IDENT, "--threshold", "rmse=abc"), 2, "not a number", True),
    row(
        "threshold-bad-comparison",
        cli(*IDENT, "--threshold", "rmse=1:between"),
        2,
        "'min' or 'max'",
        True,
    ),
    row("threshold-nan", cli(*IDENT, "--threshold", "rmse=nan"), 2, "--threshold.*finite"),
    row("threshold-negative-max", cli(*IDENT, "--threshold", "rmse=-1"), 2, "never negative"),
    row(
        "threshold-misspelled-identify",
        cli(*IDENT, "--threshold", "validaton_rmse=1"),
        2,
        r"'validaton_rmse'.*did you mean 'validation_rmse:<joint>'.*valid names: condition_number",
    ),
    row(
        "threshold-misspelled-calibrate",
        cli(*CALIB, "--threshold", "position_rmse=1"),
        2,
        r"did you mean 'position_rmse_mm'.*valid names",
    ),
    row(
        "threshold-unknown-joint",
        cli(*IDENT, "--threshold", "validation_rmse:elbo=1"),
        2,
        r"names joint 'elbo'.*elbow_joint",
    ),
    row(
        "threshold-some-joints-only",
        cli(*IDENT, "--threshold", "validation_rmse:elbow_joint=1"),
        2,
        r"every fitted joint; missing \['shoulder_pan_joint'.*--rmse-limit",
    ),
    row(
        "position-limit-alone-6dof-marker",
        cli(*CALIB, "--position-limit-mm", "1"),
        2,
        r"measure position and orientation.*add --orientation-limit-deg",
    ),
    row(
        "orientation-limit-alone-6dof-marker",
        cli(*CALIB, "--orientation-limit-deg", "1"),
        2,
        r"add --position-limit-mm",
    ),
    row(
        "urdf-export-of-base-fit",
        cli(*IDENT, "--export-urdf", lambda t: t / "r.urdf"),
        2,
        "select the 'physical_fit' or 'reconstruction' stage",
        True,
    ),
    # ---- output paths
    row(
        "output-is-an-existing-file",
        cli(*IDENT, "-o", _ident_csv),
        2,
        r"-o/--output \S*identification\.csv is an existing file, not a folder; pass a folder",
    ),
    row(
        "output-below-a-file",
        cli(*CALIB, "-o", lambda t: _calib_csv(t, "c.csv") / "sub"),
        2,
        r"-o/--output .*c\.csv is an existing file",
    ),
    row(
        "export-urdf-is-a-folder",
        cli(*IDENT, "--select-stage", "physical_fit", "--export-urdf", _folder),
        2,
        r"--export-urdf .*folder is a folder; pass the name of the file",
    ),
    row(
        "compare-output-is-a-folder",
        cli("compare", _verdict([]), _verdict([]), "-o", _folder),
        2,
        r"-o/--output .*is a folder",
    ),
    # ---- missing or wrong files
    row(
        "config-missing",
        cli("identify", lambda t: t / "nope.yaml", "--urdf", "URDF", "--data", _ident_csv),
        2,
        r"configuration file not found: .*nope\.yaml",
        True,
    ),
    row(
        "config-is-a-folder",
        cli("identify", _folder, "--urdf", "URDF", "--data", _ident_csv),
        2,
        "configuration file is not a file: .*folder",
        True,
    ),
    row(
        "config-invalid-yaml",
        cli(
            "identify",
            _file("bad.yaml", "robot: [unclosed\n"),
            "--urdf",
            "URDF",
            "--data",
            _ident_csv,
        ),
        2,
        r"invalid configuration .*bad\.yaml.*YAML",
        True,
    ),
    row(
        "config-tool-frame-not-in-model",
        cli(
            "calibrate",
            _config_with("tasks:\n  calibration:\n    kinematics:\n      tool_frame: nope_link\n"),
            "--urdf",
            "URDF",
            "--data",
            _calib_csv,
        ),
        2,
        r"kinematics\.tool_frame: frame 'nope_link' does not exist",
        True,
    ),
    row(
        "urdf-missing",
        cli("identify", "CONFIG", "--urdf", lambda t: t / "r.urdf", "--data", _ident_csv),
        2,
        r"URDF file not found: .*r\.urdf",
        True,
    ),
    row(
        "urdf-not-xml",
        cli("identify", "CONFIG", "--urdf", _file("r.urdf", "not xml"), "--data", _ident_csv),
        2,
        r"cannot load the URDF .*r\.urdf",
        True,
    ),
    row(
        "data-missing",
        cli("identify", "CONFIG", "--urdf", "URDF", "--data", lambda t: t / "logs"),
        2,
        r"trajectory data not found: .*logs",
        True,
    ),
    row(
        "validation-data-missing",
        cli(*IDENT, "--validation-data", lambda t: t / "held"),
        2,
        r"validation data not found: .*held",
        True,
    ),
    row(
        "data-binary-identify",
        cli("identify", "CONFIG", "--urdf", "URDF", "--data", _binary),
        2,
        r"log\.csv is not a (UTF-8 )?text CSV file.*export it as comma-separated UTF-8 text",
    ),
    row(
        "data-binary-calibrate",
        cli("calibrate", "CONFIG", "--urdf", "URDF", "--data", _binary),
        2,
        r"log\.csv is not a (UTF-8 )?text CSV file",
    ),
    row(
        "data-lacks-columns",
        cli(
            "identify",
            "CONFIG",
            "--urdf",
            "URDF",
            "--data",
            _file("identification.csv", "t,q_shoulder_pan_joint\n0,1\n"),
        ),
        2,
        r"identification\.csv lacks the columns .*tau_shoulder_pan_joint",
        True,
    ),
    row(
        "data-folder-without-csv",
        cli("identify", "CONFIG", "--urdf", "URDF", "--data", _folder),
        2,
        r"no CSV file in .*folder",
        True,
    ),
    row(
        "calibration-data-lacks-columns",
        cli("calibrate", "CONFIG", "--urdf", "URDF", "--data", _file("c.csv", "x1,y1\n1,2\n")),
        2,
        r"c\.csv: missing columns \['z1'",
        True,
    ),
    row(
        "calibration-data-missing",
        cli("calibrate", "CONFIG", "--urdf", "URDF", "--data", lambda t: t / "c.csv"),
        2,
        r"calibration data not found: .*c\.csv",
        True,
    ),
    # ---- figaroh report / compare on malformed verification files
    row("report-missing", cli("report", lambda t: t / "run"), 2, "run directory not found", True),
    row("report-plain-folder", cli("report", _folder), 2, "not an archived run", True),
    row(
        "report-invalid-json",
        cli("report", _file("v.json", "{not json")),
        2,
        r"v\.json is not valid JSON",
        True,
    ),
    row(
        "report-binary-file",
        cli("report", _file("v.json", bytes(range(256)))),
        2,
        r"v\.json is not valid JSON",
        True,
    ),
    row("report-json-array", cli("report", _file("v.json", "[1]")), 2, "not a JSON object", True),
    row(
        "report-no-checks",
        cli("report", _file("v.json", "{}")),
        2,
        "not a verification export",
        True,
    ),
    row(
        "report-check-is-a-string",
        cli("report", _verdict(["rmse"])),
        2,
        r"run_verification\.json: checks\[0\] is str 'rmse', not an object.*regenerate",
    ),
    row(
        "report-check-value-is-a-string",
        cli("report", _verdict([{"name": "rmse", "status": "fail", "value": "0.5"}])),
        2,
        r"checks\[0\] \('rmse'\) has 'value' '0\.5', not a number",
    ),
    row(
        "report-check-without-name",
        cli("report", _verdict([{"status": "fail"}])),
        2,
        r"checks\[0\] has no string 'name'",
    ),
    row(
        "report-run-dir-with-a-failing-verdict",
        cli("report", _run_dir),
        1,
        "",
        True,
    ),
    row(
        "report-run-dir-with-a-bad-verdict",
        cli("report", lambda t: _run_dir(t, checks=[3])),
        2,
        r"verdict\.json: checks\[0\] is int 3, not an object",
    ),
    row(
        "compare-missing-file",
        cli("compare", lambda t: t / "a.json", _verdict([])),
        2,
        r"run not found: .*a\.json",
        True,
    ),
    row(
        "migrate-config-missing",
        cli("migrate-config", lambda t: t / "old.yaml", lambda t: t / "new.yaml"),
        2,
        r"legacy configuration not found: .*old\.yaml",
        True,
    ),
    row(
        "migrate-config-new-is-a-folder",
        cli("migrate-config", _file("old.yaml", "x: 1\n"), _folder),
        2,
        r"NEW \(the configuration to write\) .*folder is a folder",
    ),
    # ---- the central mapping of exceptions to exit codes
    row(
        "unexpected-error-exit-1",
        raising(RuntimeError("solver diverged"), "robots"),
        1,
        r"RuntimeError: solver diverged \(run with -vv for the traceback\)",
    ),
    row(
        "linear-algebra-failure-exit-1",
        raising(np.linalg.LinAlgError("singular matrix"), "robots"),
        1,
        "LinAlgError: singular matrix",
    ),
    row(
        "figaroh-value-error-exit-2",
        raising(type("BadField", (FigarohError, ValueError), {})("field x: fix it"), "robots"),
        2,
        "field x: fix it$",
    ),
    row(
        "key-error-with-a-message-shown-as-written",
        raising(KeyError("c.csv: missing columns ['x1']"), "robots"),
        2,
        r"error: c\.csv: missing columns \['x1'\]$",
    ),
    row("bare-key-error", raising(KeyError("dof"), "robots"), 2, "missing key 'dof'$", True),
    row(
        "permission-error-names-the-file",
        raising(PermissionError(13, "Permission denied", "/ro/out.csv"), "robots"),
        2,
        "Permission denied: /ro/out.csv",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_table_is_large_and_names_are_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 40


def test_exit_code_mapping() -> None:
    assert exit_code_for(KeyboardInterrupt()) == EXIT_FAILED  # main() maps it to 130 first
    assert exit_code_for(FileNotFoundError("x")) == EXIT_BAD_INPUT
    assert exit_code_for(KeyError("x")) == EXIT_BAD_INPUT
    assert exit_code_for(np.linalg.LinAlgError("x")) == EXIT_FAILED
    assert exit_code_for(RuntimeError("x")) == EXIT_FAILED


def test_threshold_names_match_the_verdict_metrics() -> None:
    """The CLI's metric names are those ``verify()`` produces (no silent drift)."""
    from figaroh.cli.thresholds import CALIBRATE_METRICS, IDENTIFY_METRICS

    source = (ROOT / "src/figaroh/identification/_verification.py").read_text()
    for name in IDENTIFY_METRICS:
        if ":" not in name:
            assert f'"{name}"' in source, name
    assert "(validation|training)_(rmse|abs_bias|peak_error)" in source
    source = (ROOT / "src/figaroh/calibration/_report.py").read_text()
    for name in CALIBRATE_METRICS:
        assert re.sub("^training_", "", name) in source, name


@pytest.mark.parametrize("command", [[], *([c] for c in cli_main.COMMANDS)])
def test_every_help_lists_the_exit_codes(command: list[str]) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main.main([*command, "--help"]) == 0
    text = " ".join(out.getvalue().split())
    assert "Exit codes: 0 success (verdict passed), 1 verdict failed" in text
    assert "2 bad input" in text
