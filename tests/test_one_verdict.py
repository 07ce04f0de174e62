"""One verdict per run: the terminal line, the JSON, the HTML and the archive agree.

Truths: the verdict ``verify()`` returned (status, scope and every check's
name and status) is what each written file holds — the JSON read back, the
HTML verdict panel parsed back, the archived ``verdict.json`` / ``report.html``
and the archive index line; ``figaroh report`` recomputes it from the checks.
The defaults of the API (``inspect.signature``) and of the command line
(its parser) resolve to the same scope, and both give the same verdict on the
same data.
"""

from __future__ import annotations

import contextlib
import html
import inspect
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, load_example
from figaroh._run.verification_policy import DEFAULT_SCOPE
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.cli import main as cli_main
from figaroh.identification.base_identification import BaseIdentification
from figaroh.tools.run_archive import archive_run, compute_run_dir, read_index

_ur10 = load_example("ur10/identification.py", "ur10_identification_one_verdict")
_demo = load_example("ur10/demo.py", "ur10_demo_one_verdict")

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
N = 1500  # samples per simulated trajectory
LIMIT = 1.5  # [N·m] held-out RMSE limit: 3 x the simulated noise


# --------------------------------------------------------------------------- #
# reading the verdict back from each file
# --------------------------------------------------------------------------- #
def json_verdict(path: Path) -> tuple[str, bool, str, list[tuple[str, str]]]:
    """``(status, passed, scope, [(check name, check status)])`` of a verification JSON."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    checks = [(c["name"], c["status"]) for c in data["checks"]]
    return data["status"], data["passed"], data["scope"], checks


def html_verdict(path: Path) -> tuple[str, str, list[tuple[str, str]]]:
    """``(status, scope, [(check name, check status)])`` of an HTML report's verdict panel."""
    doc = Path(path).read_text(encoding="utf-8")
    start = doc.index('<div class="verdict-panel"')
    panel = doc[start : doc.index("</div>", start)]
    status = re.search(r'data-status="(\w+)"', panel).group(1)
    scope = html.unescape(re.search(r"Scope: ([^ ]+) ·", panel).group(1))
    rows = re.findall(r'<tr class="check status-(\w+)"><td>([^<]*)</td>', panel)
    return status, scope, [(html.unescape(name), s) for s, name in rows]


def api_verdict(verdict) -> tuple[str, bool, str, list[tuple[str, str]]]:
    return (
        verdict.status,
        verdict.passed,
        verdict.scope,
        [(c.name, c.status) for c in verdict.checks],
    )


def _solved(config: Path, folder: Path, seed: int = 3):
    robot = _ur10.load_ur10()
    train, validation = _ur10.generate_ur10_data(folder, N, 0.5, seed=seed, robot=robot)
    ident = _ur10.UR10Identification(robot, config, data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    ident.solve(decimate=False, plotting=False, verbose=False)
    return ident, train, validation


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one_verdict")
    ident, train, validation = _solved(CONFIG, folder / "data")
    return ident, train, validation


def _limits(ident, limit: float = LIMIT) -> dict:
    return {
        f"validation_rmse:{j}": {"threshold": limit, "comparison": "max"}
        for j in ident.fit_joints()
    }


# --------------------------------------------------------------------------- #
# the API: thresholds given once
# --------------------------------------------------------------------------- #
def test_thresholds_given_once_reach_every_export_and_the_archive(solved, tmp_path):
    ident, _, _ = solved
    tight = _limits(ident, 0.1)  # below the 0.5 N·m noise: a failing verdict
    verdict = ident.verify(thresholds=tight)
    expected = api_verdict(verdict)
    assert expected[0] == "fail" and expected[2] == "prediction"

    json_path = ident.export_verification_report(output_dir=str(tmp_path))
    html_path = ident.export_html_report(output_dir=str(tmp_path))
    run_dir = Path(compute_run_dir(ident, root=str(tmp_path / "runs")))
    ident.export_verification_report(output_path=str(run_dir / "verdict.json"))
    ident.export_html_report(output_path=str(run_dir / "report.html"))
    archived = Path(archive_run(ident, run_dir))

    assert json_verdict(json_path) == expected
    assert json_verdict(archived / "verdict.json") == expected
    status, passed, scope, checks = expected
    assert html_verdict(html_path) == (status, scope, checks)
    assert html_verdict(archived / "report.html") == (status, scope, checks)
    (line,) = read_index(tmp_path / "runs")
    assert (line["status"], line["passed"], line["scope"]) == (status, passed, scope)


def test_explicit_arguments_replace_the_verdict_and_solve_discards_it(solved, tmp_path):
    ident, _, _ = solved
    failing = ident.verify(thresholds=_limits(ident, 0.1))
    assert failing.status == "fail"
    # an explicit threshold set computes a new verdict, which becomes the run's
    path = ident.export_verification_report(
        output_path=str(tmp_path / "a.json"), thresholds=_limits(ident, 1e3)
    )
    assert json_verdict(path)[0] == "pass"
    assert html_verdict(ident.export_html_report(output_path=str(tmp_path / "a.html")))[0] == "pass"
    # an explicit scope too
    ident.export_verification_report(output_path=str(tmp_path / "b.json"), scope="execution")
    assert json_verdict(tmp_path / "b.json")[2] == "execution"
    assert html_verdict(ident.export_html_report(output_path=str(tmp_path / "b.html")))[1] == (
        "execution"
    )
    # a given verdict is shown as is and kept
    ident.export_html_report(output_path=str(tmp_path / "c.html"), verdict=failing)
    assert json_verdict(ident.export_verification_report(output_path=str(tmp_path / "c.json")))[
        0
    ] == ("fail")
    # a new solve() discards the kept verdict: the default policy (no limits) again
    ident.solve(decimate=False, plotting=False, verbose=False)
    status, passed, scope, _ = json_verdict(
        ident.export_verification_report(output_path=str(tmp_path / "d.json"))
    )
    assert (status, passed, scope) == ("not_evaluated", False, "prediction")


def test_html_generator_without_a_verdict_does_not_replace_it(solved, tmp_path):
    """The report generators called directly show the run's verdict and keep it."""
    from figaroh.tools.identification_report import generate_identification_report

    ident, _, _ = solved
    verdict = ident.verify(thresholds=_limits(ident, 1e3))
    generate_identification_report(ident, output_path=str(tmp_path / "r.html"))
    assert html_verdict(tmp_path / "r.html")[0] == "pass"
    path = ident.export_verification_report(output_path=str(tmp_path / "r.json"))
    assert json_verdict(path) == api_verdict(verdict)


def test_the_configuration_policy_is_the_first_exports_verdict(tmp_path):
    """No verify(): the first export computes the verdict from ``verification``, once."""
    config = tmp_path / "limits.yaml"
    joints = "\n".join(f"        validation_rmse:{j}: {LIMIT}" for j in _ur10.UR10_JOINTS)
    config.write_text(
        f'extends: "{CONFIG}"\ntasks:\n  identification:\n    verification:\n'
        f"      scope: prediction\n      thresholds:\n{joints}\n",
        encoding="utf-8",
    )
    ident, _, _ = _solved(config, tmp_path / "data", seed=4)
    assert ident.identif_config["verification"]["thresholds"]["validation_rmse:elbow_joint"] == {
        "threshold": LIMIT,
        "comparison": "max",
        "required": True,
    }
    html_path = ident.export_html_report(output_dir=str(tmp_path))
    json_path = ident.export_verification_report(output_dir=str(tmp_path))
    status, passed, scope, checks = json_verdict(json_path)
    assert (status, passed, scope) == ("pass", True, "prediction")
    assert html_verdict(html_path) == (status, scope, checks)
    assert {n for n, _ in checks} >= {f"validation_rmse:{j}" for j in _ur10.UR10_JOINTS}
    # and verify() with its defaults judges with the same policy
    assert api_verdict(ident.verify()) == (status, passed, scope, checks)


# --------------------------------------------------------------------------- #
# API and command line: the same defaults, the same verdict
# --------------------------------------------------------------------------- #
def _cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _scope_default(command: str) -> object:
    parser = cli_main.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[command].get_default("scope")


def test_cli_and_api_default_scopes_are_equal():
    from figaroh.cli.task_commands import _policy

    api = {
        cls.__name__: {
            name: inspect.signature(getattr(cls, name)).parameters["scope"].default
            for name in ("verify", "export_verification_report", "export_html_report")
        }
        for cls in (BaseIdentification, BaseCalibration)
    }
    assert {s for methods in api.values() for s in methods.values()} == {DEFAULT_SCOPE}
    for command in ("identify", "calibrate"):
        args = type("Args", (), {"scope": _scope_default(command)})()
        assert args.scope is None  # not given: resolved like verify()'s default
        assert _policy(args, {}, {})[1] == DEFAULT_SCOPE == "prediction"
        # with limits too: the default never turns into 'auto'
        assert _policy(args, {"rmse": {"threshold": 1.0, "comparison": "max"}}, {})[1] == (
            "prediction"
        )
        # the configuration's scope is the default of both
        config = {"verification": {"scope": "execution", "thresholds": {}}}
        assert _policy(args, {}, config)[1] == "execution"
        auto = type("Args", (), {"scope": "auto"})()
        assert _policy(auto, {}, {})[1] == "execution"  # auto stays an explicit choice


def test_cli_without_limits_gives_the_api_default_verdict(solved, ur10_urdf, tmp_path):
    ident, train, validation = solved
    code, stdout, stderr = _cli(
        "identify", CONFIG, "--urdf", ur10_urdf, "--data", train,
        "--validation-data", validation, "-o", tmp_path, "--no-decimate",
    )  # fmt: skip
    ident.solve(decimate=False, plotting=False, verbose=False)
    api = api_verdict(ident.verify())
    assert api[:3] == ("not_evaluated", False, "prediction")
    assert code == 1, stderr
    assert "verdict (prediction scope): not_evaluated" in stdout
    assert "--rmse-limit TAU" in stdout  # the line says which option adds the limit
    cli_json = json_verdict(tmp_path / "identification_verification.json")
    assert cli_json == api


# --------------------------------------------------------------------------- #
# make demo: one verdict everywhere, with the limits of its configuration
# --------------------------------------------------------------------------- #
def test_demo_prints_the_verdict_of_its_reports_and_archive(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _demo.main(out=tmp_path / "results", n_samples=N) == 0
    printed = re.search(r"Verification \((\w+) scope\): (\w+), passed=(\w+)", out.getvalue())
    scope, status, passed = printed.group(1), printed.group(2), printed.group(3) == "True"
    assert (scope, status, passed) == ("prediction", "pass", True)

    results = tmp_path / "results"
    json_status, json_passed, json_scope, checks = json_verdict(
        results / "identification_verification.json"
    )
    assert (json_status, json_passed, json_scope) == (status, passed, scope)
    # every joint's held-out RMSE limit and the "better than a constant" check are judged
    names = {n for n, _ in checks}
    assert {f"validation_rmse:{j}" for j in _ur10.UR10_JOINTS} <= names
    assert "validation_unpredictable_joints" in names
    assert html_verdict(results / "identification_report.html") == (status, scope, checks)
    (run_dir,) = sorted((results / "runs").glob("*/identification/*"))
    assert json_verdict(run_dir / "verdict.json") == (status, passed, scope, checks)
    assert html_verdict(run_dir / "report.html") == (status, scope, checks)
    (line,) = read_index(results / "runs")
    assert (line["status"], line["passed"], line["scope"]) == (status, passed, scope)
    code, stdout, _ = _cli("report", run_dir)
    assert code == 0 and f"verdict      {status} (scope {scope}" in stdout


# --------------------------------------------------------------------------- #
# the demo's data excite every joint
# --------------------------------------------------------------------------- #
def per_joint_improvement(ident) -> dict[str, float]:
    """Held-out improvement of each joint over the URDF model [%]:
    ``100 (RMSE_nominal − RMSE_identified) / RMSE_nominal``."""
    per_joint = ident.result["validation_metrics"]["per_joint"]
    return {
        j: 100.0 * (m["rmse_nominal"] - m["rmse_identified"]) / m["rmse_nominal"]
        for j, m in per_joint.items()
    }


def test_demo_data_excite_every_joint(solved):
    """The demo's simulator on a short trajectory: every joint's held-out fit is informative."""
    ident, _, _ = solved
    improvement = per_joint_improvement(ident)
    assert set(improvement) == set(_ur10.UR10_JOINTS)
    assert min(improvement.values()) > 50.0, improvement
    r2 = {j: m["r2"] for j, m in ident.result["validation_metrics"]["per_joint"].items()}
    assert min(r2.values()) > 0.9, r2
    assert ident.result["validation_metrics"]["unpredictable_joints"] == []
    assert np.isfinite(list(improvement.values())).all()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q"]))
