"""Bad inputs on the report side: reports, verdict files and archived runs.

Each row is a user action and the reaction owed: a named exception with a
phrase, or a report that states the problem instead of crashing.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import types
from pathlib import Path

import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from conftest import load_example
from figaroh._run.archive import archive_run, compute_run_dir
from figaroh.calibration._report import format_quality_report as format_calibration_quality_report
from figaroh.cli.common import CLIError
from figaroh.cli.main import build_parser
from figaroh.cli.run_commands import report as report_command
from figaroh.errors import FigarohError
from figaroh.identification.quality_report import format_quality_report
from figaroh.tools.compare_report import generate_compare_page
from figaroh.tools.identification_report import generate_identification_report
from figaroh.tools.report import generate_calibration_report
from figaroh.utils.fileio import SealedRunError, atomic_write_text

XSS = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@functools.lru_cache(maxsize=1)
def _rejected_fit(folder: str):
    """A real UR10 identification whose requested physical fit is rejected (300 samples)."""
    ur10 = load_example("ur10/identification.py", "ur10_identification")
    robot = ur10.load_ur10()
    root = Path(folder)
    train, _ = ur10.generate_ur10_data(root / "data", 300, noise_std=0.5, seed=4, robot=robot)
    cfg = root / "cfg.yaml"
    cfg.write_text(
        f'extends: "{ur10.CONFIG}"\ntasks:\n  identification:\n'
        "    select_stage: physical_fit\n    physical_fit:\n      solver: no-such-solver\n",
        encoding="utf-8",
    )
    ident = ur10.UR10Identification(robot, cfg, data_dir=train)
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        ident.solve(decimate=False, plotting=False)
    return ident, out.getvalue()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return tmp_path_factory.mktemp("reports_shared")


_SHARED: dict[str, Path] = {}


def _solved():
    return _rejected_fit(str(_SHARED["dir"]))


# -- a rejected physical fit is reported, not a crash -----------------------
def _rejected_fit_printed(tmp_path):
    ident, printed = _solved()
    assert ident.selected is not None and not ident.selected.accepted
    assert "RMSE (rejected physical_fit estimate): unavailable (rejected:" in printed
    return ident.verify(scope="execution").status


def _rejected_fit_plain_api(tmp_path):
    fake = types.SimpleNamespace(
        result={
            "condition number": None,
            "base parameters names": ["a", "b"],
            "num samples": 10,
            "rmse norm (N/m)": None,
            "selected": {
                "status": "rejected",
                "requested": "physical_fit",
                "reason": "solver failed",
                "effort_rmse_fit": None,
                "effort_rmse_fit_per_joint": {},
            },
        },
        selected=types.SimpleNamespace(
            stage="none",
            accepted=False,
            requested="physical_fit",
            status="rejected",
            reason="solver failed",
        ),
        correlation=None,
        std_relative=None,
        stages=[],
        _compute_per_joint_stats=lambda: None,
    )
    text = format_quality_report(fake)
    assert "unavailable (rejected: solver failed)" in text
    assert "Condition:    unavailable" in text
    return None


def _rejected_fit_html(tmp_path):
    ident, _ = _solved()
    doc = generate_identification_report(ident, output_path=str(tmp_path / "r.html"))
    assert "physical_fit" in doc and (tmp_path / "r.html").read_text(encoding="utf-8") == doc
    return None


# -- archived runs are immutable --------------------------------------------
def _archived_run(tmp_path) -> Path:
    ident, _ = _solved()
    run_dir = compute_run_dir(ident, tmp_path / "runs")
    ident.export_verification_report(output_path=str(run_dir / "verdict.json"))
    ident.export_html_report(output_path=str(run_dir / "report.html"))
    return Path(archive_run(ident, run_dir))


def _snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir())}


def _export_into_archive(what: str):
    def call(tmp_path):
        run = _archived_run(tmp_path)
        before = _snapshot(run)
        ident, _ = _solved()
        try:
            if what == "html":
                ident.export_html_report(output_path=str(run / "report.html"))
            elif what == "verdict":
                ident.export_verification_report(output_path=str(run / "verdict.json"))
            elif what == "provenance":
                ident.export_verification_report(output_path=str(run / "provenance.json"))
            elif what == "sub-folder":
                ident.export_html_report(output_path=str(run / "html" / "report.html"))
            elif what == "output-dir":
                ident.export_html_report(output_dir=str(run / "reports"))
            elif what == "verdict-output-dir":
                ident.export_verification_report(output_dir=str(run / "reports"))
            elif what == "new-file":
                ident.export_html_report(output_path=str(run / "other.html"))
            else:
                atomic_write_text(run / "plot.png", "x")
        finally:
            assert _snapshot(run) == before, "the archived run was modified"

    return call


def _save_results_into_archive(tmp_path):
    run = _archived_run(tmp_path)
    before = _snapshot(run)
    ident, _ = _solved()
    try:
        ident.save_results(output_dir=str(run))
    finally:
        assert _snapshot(run) == before, "the archived run was modified"


def _export_next_to_archive(tmp_path):
    run = _archived_run(tmp_path)
    ident, _ = _solved()
    out = run.parent / (run.name + "-reports")
    out.mkdir()
    written = ident.export_html_report(output_path=str(out / "report.html"))
    assert Path(written).is_file()
    return None


# -- figaroh report on a damaged verdict file --------------------------------
def _report_on(content):
    def call(tmp_path):
        path = tmp_path / "v_verification.json"
        path.write_text(json.dumps(content), encoding="utf-8")
        with contextlib.redirect_stdout(io.StringIO()):
            return report_command(build_parser().parse_args(["report", str(path)]))

    return call


_GOOD_VERDICT = {
    "status": "pass",
    "passed": True,
    "metrics": {},
    "checks": [{"name": "rmse", "status": "pass", "value": 0.5}],
}


def _report_good(tmp_path):
    assert _report_on(_GOOD_VERDICT)(tmp_path) == 0
    return None


# -- user strings are escaped in every report --------------------------------
def _identification_report_escapes_provenance(tmp_path):
    ident, _ = _solved()
    prov = dict(ident._run_provenance)
    prov["model"] = {**prov.get("model", {}), "robot_name": XSS, "urdf_path": f"/x/{XSS}.urdf"}
    prov["asset"] = {**prov.get("asset", {}), "asset_id": XSS}
    prov["config"] = {**prov.get("config", {}), "path": f"/cfg/{XSS}.yaml"}
    saved = ident._run_provenance
    ident._run_provenance = prov
    try:
        doc = generate_identification_report(ident)
    finally:
        ident._run_provenance = saved
    assert XSS not in doc and doc.count(ESCAPED) >= 4
    return None


def _calibration_report_escapes(tmp_path):
    calib = types.SimpleNamespace(
        evaluation_metrics={"rmse": 0.001, "param_values": [0.1], "param_stdev": [0.01]},
        calib_config={"NbSample": 3, "param_name": [XSS]},
        results_data={},
        stages=[],
        _run_provenance={
            "run_id": XSS,
            "asset": {"asset_id": XSS},
            "model": {"robot_name": XSS, "urdf_path": XSS},
            "config": {"path": XSS},
        },
    )
    doc = generate_calibration_report(calib)
    assert XSS not in doc and doc.count(ESCAPED) >= 4
    return None


def _calibration_text_report_with_missing_values(tmp_path):
    calib = types.SimpleNamespace(
        evaluation_metrics={
            "outlier_threshold": None,
            "excluded_samples": [3],
            "excluded_sample_errors": [None],
            "per_dof_stats": {
                "dof_names": [1],
                "mean": [None],
                "std": [0.1],
                "rmse": [0.1],
                "max_abs": [0.2],
                "r_squared": [None],
            },
            "residual_dof": None,
            "param_values": [0.1],
            "param_stdev": [],
            "param_stddev_percentage": [None, 0.5],
            "correlated_pairs": [{"param_i": "a", "param_j": "b", "correlation": None}],
        },
        calib_config={"NbSample": 3, "param_name": ["a"], "prior_weights": [1.0]},
        results_data=None,
        stages_line=lambda: "fit ok",
        _compute_validation_metrics=lambda: None,
    )
    text = format_calibration_quality_report(calib)
    assert "#3 (n/a mm)" in text and "1 unknown" in text and "ρ = n/a" in text
    return None


def _compare_page_escapes_title(tmp_path):
    doc = generate_compare_page(title=XSS)
    assert XSS not in doc and ESCAPED in doc
    return None


CASES: list[BadInput] = [
    BadInput(
        "rejected_physical_fit_quality_report",
        _rejected_fit_printed,
        match="physical_fit estimate was rejected",
        verdict="fail",
    ),
    BadInput("rejected_physical_fit_plain_api", _rejected_fit_plain_api),
    BadInput("rejected_physical_fit_html_report", _rejected_fit_html, already_good=True),
    BadInput(
        "html_report_into_archived_run",
        _export_into_archive("html"),
        raises=(SealedRunError, FileExistsError),
        match="archived run.*new run",
    ),
    BadInput(
        "verdict_into_archived_run",
        _export_into_archive("verdict"),
        raises=SealedRunError,
        match="archived run",
    ),
    BadInput(
        "provenance_into_archived_run",
        _export_into_archive("provenance"),
        raises=SealedRunError,
        match="archived run",
    ),
    BadInput(
        "report_into_sub_folder_of_archived_run",
        _export_into_archive("sub-folder"),
        raises=SealedRunError,
        match="archived run",
    ),
    BadInput(
        "report_into_sub_folder_of_archived_run_output_dir",
        _export_into_archive("output-dir"),
        raises=SealedRunError,
        match="archived run",
    ),
    BadInput(
        "report_into_sub_folder_of_archived_run_verdict_output_dir",
        _export_into_archive("verdict-output-dir"),
        raises=SealedRunError,
        match="archived run",
    ),
    BadInput(
        "new_report_file_into_archived_run",
        _export_into_archive("new-file"),
        raises=SealedRunError,
        match="write next to it",
    ),
    BadInput(
        "plot_into_archived_run",
        _export_into_archive("plot"),
        raises=SealedRunError,
        match="archived run",
    ),
    BadInput(
        "save_results_into_archived_run",
        _save_results_into_archive,
        raises=FigarohError,
        match="archived run.*write next to it",
    ),
    BadInput("report_next_to_archived_run", _export_next_to_archive, already_good=True),
    BadInput(
        "report_verdict_string_check",
        _report_on({**_GOOD_VERDICT, "checks": ["rmse"]}),
        raises=CLIError,
        match=r"checks\[0\].*not an object",
    ),
    BadInput(
        "report_verdict_non_dict_check",
        _report_on({**_GOOD_VERDICT, "checks": [3]}),
        raises=CLIError,
        match=r"checks\[0\]",
    ),
    BadInput(
        "report_verdict_string_value",
        _report_on(
            {**_GOOD_VERDICT, "checks": [{"name": "rmse", "status": "fail", "value": "big"}]}
        ),
        raises=CLIError,
        match="not a number",
    ),
    BadInput(
        "report_verdict_checks_not_list",
        _report_on({**_GOOD_VERDICT, "checks": "all"}),
        raises=CLIError,
        match="not a verification export",
        already_good=True,
    ),
    BadInput(
        "report_verdict_not_object",
        _report_on([1, 2]),
        raises=CLIError,
        match="not a JSON object",
        already_good=True,
    ),
    BadInput("report_good_verdict", _report_good, already_good=True),
    BadInput(
        "identification_report_escapes_provenance",
        _identification_report_escapes_provenance,
        already_good=True,
    ),
    BadInput("calibration_report_escapes_names", _calibration_report_escapes, already_good=True),
    BadInput(
        "calibration_text_report_missing_values", _calibration_text_report_with_missing_values
    ),
    BadInput("compare_page_escapes_title", _compare_page_escapes_title, already_good=True),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path, shared):
    _SHARED.setdefault("dir", shared)
    run_case(case, tmp_path)
