"""Verdicts that cannot be fooled: doctored verification files and malformed policies.

Two tables:

* ``figaroh report`` / ``figaroh compare`` on verification JSON files and
  archived runs whose top-level ``status``/``passed`` contradict their own
  checks: exit code 2 with one stderr line naming the file, the stored value
  and the deciding checks. Honest files (including the rows a doctored file
  would imitate) print the recomputed status with exit 0 (pass) or 1.
* the ``verification`` section of a configuration: a malformed entry raises
  the task's configuration error naming the key and the fix, from the API
  and (exit 2) from the command line.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from conftest import ROOT, erd_path
from figaroh.cli import main as cli_main
from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.utils.error_handling import CalibrationError

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"


class Exit(Exception):
    """What a command did: ``exit <code>: <stderr> | <stdout>``."""


def _check(name: str, status: str, required: bool = True, value: float | None = 1.0) -> dict:
    return {
        "name": name,
        "status": status,
        "value": value,
        "threshold": 1.5,
        "comparison": "max",
        "passed": status == "pass",
        "required": required,
        "reason": "",
    }


def _json(name: str, checks: list, **top: Any) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        data = {"checks": checks, "metrics": {}, "scope": "prediction", **top}
        path = tmp / name
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    return make


def _run_dir(checks: list, **top: Any) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        run = tmp / "runs" / "ur10" / "identification" / "20260101T000000Z_nogit"
        run.mkdir(parents=True)
        _json("verdict.json", checks, **top)(run)
        return run

    return make


def cli(*args: Any) -> Callable[[Path], None]:
    """Run ``figaroh ARGS`` (a callable argument makes its file) and raise :class:`Exit`."""

    def call(tmp: Path) -> None:
        argv = [str(a(tmp)) if callable(a) else str(a) for a in args]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main.main(argv)
        text = err.getvalue().strip()
        assert "Traceback" not in text, text
        if code == 2:
            assert text.count("\n") == 0, f"more than one stderr line: {text!r}"
        raise Exit(f"exit {code}: {text} | {out.getvalue()}")

    return call


def row(name: str, call, code: int, phrase: str, already_good: bool = False) -> BadInput:
    return BadInput(
        name=name,
        call=call,
        raises=Exit,
        match=rf"^exit {code}: .*{phrase}",
        already_good=already_good,
    )


FAILED = [
    _check("finite_parameters", "pass"),
    _check("validation_rmse:elbow_joint", "fail", value=2.0),
]
MISSING = [_check("finite_parameters", "pass"), _check("prediction_error_policy", "not_evaluated")]
PASSING = [_check("finite_parameters", "pass"), _check("validation_rmse:elbow_joint", "pass")]
CONTRADICTS = r"contradicts? its own checks"

REPORT_CASES: list[BadInput] = [
    # ---- doctored files: refused, naming the file, the stored value and the deciding checks
    row(
        "passed-true-with-a-failed-required-check",
        cli("report", _json("v.json", FAILED, passed=True)),
        2,
        r'v\.json: "passed": true '
        + CONTRADICTS
        + r" \(its required checks validation_rmse:elbow_joint = fail\), whose verdict is 'fail'",
    ),
    row(
        "status-pass-with-a-not-evaluated-required-check",
        cli("report", _json("v.json", MISSING, status="pass", passed=True)),
        2,
        r'v\.json: "status": "pass" and "passed": true contradict its own checks'
        r" \(its required checks prediction_error_policy = not_evaluated\), "
        r"whose verdict is 'not_evaluated'",
    ),
    row(
        "status-pass-without-any-check",
        cli("report", _json("v.json", [], status="pass", passed=True)),
        2,
        r'"status": "pass" .*' + CONTRADICTS + r" \(it has no required check\)",
    ),
    row(
        "status-fail-when-every-required-check-passes",
        cli("report", _json("v.json", PASSING, status="fail", passed=False)),
        2,
        CONTRADICTS + r" \(every required check passes\), whose verdict is 'pass'",
    ),
    row(
        "passed-string-true",
        cli("report", _json("v.json", PASSING, status="pass", passed="true")),
        2,
        r'"passed": "true" ' + CONTRADICTS,
    ),
    row(
        "archived-run-with-a-doctored-verdict",
        cli("report", _run_dir(FAILED, status="pass", passed=True)),
        2,
        r"verdict\.json: .*" + CONTRADICTS + ".*regenerate it with export_verification_report",
    ),
    row(
        "compare-with-a-doctored-file",
        cli(
            "compare",
            _json("a.json", PASSING, status="pass", passed=True),
            _json("b.json", FAILED, status="pass", passed=True),
            "-o",
            lambda t: t / "compare.html",
        ),
        2,
        r"b\.json: .*" + CONTRADICTS,
    ),
    # ---- honest files: the recomputed status is printed, exit 0 only for pass
    row(
        "honest-pass",
        cli("report", _json("v.json", PASSING, status="pass", passed=True)),
        0,
        r"verdict      pass \(scope prediction",
    ),
    row(
        "honest-fail",
        cli("report", _json("v.json", FAILED, status="fail", passed=False)),
        1,
        r"verdict      fail .*FAIL +validation_rmse:elbow_joint",
    ),
    row(
        "honest-not-evaluated",
        cli("report", _json("v.json", MISSING, status="not_evaluated", passed=False)),
        1,
        r"verdict      not_evaluated",
    ),
    row(
        "informative-failure-does-not-decide",
        cli(
            "report",
            _json(
                "v.json",
                [*PASSING, _check("validation_correlation", "fail", required=False)],
                status="pass",
                passed=True,
            ),
        ),
        0,
        r"verdict      pass",
    ),
    row(
        "old-file-with-only-checks-is-judged-by-them",
        cli("report", _json("v.json", FAILED)),
        1,
        r"verdict      fail",
    ),
]


@pytest.mark.parametrize("case", REPORT_CASES, ids=case_id)
def test_report_table(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)


# --------------------------------------------------------------------------
# the configuration's verification section
# --------------------------------------------------------------------------
_ROBOT: list[Any] = []


def _robot():
    if not _ROBOT:
        from figaroh.tools.robot import Robot

        _ROBOT.append(Robot(str(erd_path("ur_description/urdf/ur10_robot.urdf"))))
    return _ROBOT[0]


def _config(tmp: Path, task: str, section: str) -> Path:
    path = tmp / "robot.yaml"
    body = "\n".join("      " + line for line in section.strip("\n").splitlines())
    path.write_text(
        f'extends: "{CONFIG}"\ntasks:\n  {task}:\n    verification:\n{body}\n', encoding="utf-8"
    )
    return path


def identification(section: str) -> Callable[[Path], None]:
    def call(tmp: Path) -> None:
        from figaroh.cli.csv_identification import CSVIdentification

        CSVIdentification(_robot(), str(_config(tmp, "identification", section)), data_dir=tmp)

    return call


def calibration(section: str) -> Callable[[Path], None]:
    def call(tmp: Path) -> None:
        from figaroh.calibration.base_calibration import BaseCalibration

        BaseCalibration(_robot(), str(_config(tmp, "calibration", section)))

    return call


KEY = r"tasks\.identification\.verification"
CONFIG_CASES: list[BadInput] = [
    BadInput(
        "limit-with-a-unit",
        identification('thresholds:\n  "validation_rmse:elbow_joint": "1.5 Nm"'),
        IdentificationConfigError,
        KEY + r"\.thresholds\.validation_rmse:elbow_joint: the limit must be a number, got "
        r"'1\.5 Nm'; write validation_rmse:elbow_joint: 1\.5 \(a YAML number",
    ),
    BadInput(
        "unknown-scope",
        identification("scope: everything"),
        IdentificationConfigError,
        KEY + r"\.scope: 'everything' is not a scope; use 'prediction' .* or 'execution'",
    ),
    BadInput(
        "auto-scope-is-command-line-only",
        identification("scope: auto"),
        IdentificationConfigError,
        KEY + r"\.scope: 'auto' is not a scope",
    ),
    BadInput(
        "thresholds-as-a-list",
        identification("thresholds: [1.5]"),
        IdentificationConfigError,
        KEY + r"\.thresholds: expected a mapping METRIC: LIMIT",
    ),
    BadInput(
        "unknown-section-key",
        identification("limits: {rmse: 1.0}"),
        IdentificationConfigError,
        KEY + r": unknown keys \['limits'\]; the section holds 'scope', 'thresholds' and "
        r"'confidence_level'",
    ),
    BadInput(
        "confidence-level-in-percent",
        identification("confidence_level: 95"),
        IdentificationConfigError,
        KEY + r"\.confidence_level: the confidence level must lie strictly between 0 and 1 "
        r"\(0\.95 for 95 %\), got 95; write 0\.95 for 95 %",
    ),
    BadInput(
        "confidence-level-as-text",
        identification("confidence_level: high"),
        IdentificationConfigError,
        KEY + r"\.confidence_level: the confidence level must be a number in \(0, 1\)",
    ),
    BadInput(
        "unknown-comparison",
        identification("thresholds:\n  rmse: {threshold: 1.0, comparison: less}"),
        IdentificationConfigError,
        KEY + r"\.thresholds\.rmse: comparison must be 'max' .* or 'min'",
    ),
    BadInput(
        "threshold-key-missing",
        identification("thresholds:\n  rmse: {comparison: max}"),
        IdentificationConfigError,
        KEY + r"\.thresholds\.rmse: no 'threshold' value",
    ),
    BadInput(
        "non-finite-limit",
        identification("thresholds:\n  rmse: .nan"),
        IdentificationConfigError,
        KEY + r"\.thresholds\.rmse: the limit must be finite",
    ),
    BadInput(
        "calibration-limit-as-text",
        calibration("thresholds:\n  position_rmse_mm: one"),
        CalibrationError,
        r"Failed to load configuration: tasks\.calibration\.verification\.thresholds\."
        r"position_rmse_mm: the limit must be a number, got 'one'",
    ),
]


@pytest.mark.parametrize("case", CONFIG_CASES, ids=case_id)
def test_configuration_table(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_the_command_line_refuses_a_malformed_policy(tmp_path: Path) -> None:
    config = _config(tmp_path, "identification", "scope: everything")
    log = tmp_path / "log.csv"
    log.write_text("t,q_a,tau_a\n0,0,0\n", encoding="utf-8")
    run = cli(
        "identify", config, "--urdf", erd_path("ur_description/urdf/ur10_robot.urdf"),
        "--data", log, "-o", tmp_path / "out",
    )  # fmt: skip
    with pytest.raises(Exit, match=r"^exit 2: figaroh.*verification\.scope: 'everything'"):
        run(tmp_path)
