"""RunServices: the shared report / verify / save / plot methods of a run class.

Two kinds of tests:

* a tiny concrete subclass (no robot) checks each service and its hooks;
* the UR10 identification and calibration examples (whose base classes get
  these methods from the mixin) check that each service writes what the task
  functions it assembles produce: the verdict of ``verify_identification`` /
  ``verify_calibration``, its strict JSON, the task's HTML report, the quality
  report text and the saved arrays.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from pathlib import Path
from types import SimpleNamespace
from unittest.mock import patch

import numpy as np
import pytest

from conftest import ROOT, load_example
from figaroh._run import task_services
from figaroh._run.json_io import verification_json_data
from figaroh._run.stages import apply_to_verdict, record_stage, with_schema
from figaroh._run.task_services import RunServices, TaskHooks, make_results_manager, plot_into
from figaroh._run.verdict import VerificationVerdict, scoped_verification
from figaroh.utils.results_manager import ResultsManager

_ident_ex = load_example("ur10/identification.py", "ur10_identification")
_calib_ex = load_example("ur10/calibration.py", "ur10_calibration_example")

from figaroh.calibration._report import format_quality_report as calib_quality_text  # noqa: E402
from figaroh.calibration._report import verify_calibration  # noqa: E402
from figaroh.calibration.base_calibration import BaseCalibration  # noqa: E402
from figaroh.identification._verification import verify_identification  # noqa: E402
from figaroh.identification.base_identification import BaseIdentification  # noqa: E402
from figaroh.identification.quality_report import (  # noqa: E402
    format_quality_report,
)
from figaroh.tools.identification_report import generate_identification_report  # noqa: E402
from figaroh.tools.report import generate_calibration_report  # noqa: E402
from figaroh.tools.robot import Robot  # noqa: E402


# --------------------------------------------------------------------------- #
# A tiny concrete run
# --------------------------------------------------------------------------- #
def _tiny_verification(run, thresholds, scope):
    verdict = scoped_verification(
        {"rmse": run.rmse},
        {"rmse": {"threshold": 1.0, "comparison": "max"}} if thresholds is None else thresholds,
        scope,
        {"finite_parameters": run.result["values"]},
        False,
        ["rmse"],
    )
    return apply_to_verdict(verdict, run)


def _tiny_html(run, output_path, verdict):
    Path(output_path).write_text(f"<html>tiny {verdict.status}</html>", encoding="utf-8")


def _tiny_plots(run):
    run.calls.append("primary")
    raise RuntimeError("no display")


def _tiny_basic_plots(run):
    run.calls.append("fallback")
    return ["basic.png"]


class TinyRun(RunServices):
    """Smallest run: a results dict, stage records and a two-metric verdict."""

    _hooks = TaskHooks(
        task="identification",
        is_solved=lambda run: run.result is not None,
        results=lambda run: run.result,
        verification=_tiny_verification,
        html_report=_tiny_html,
        quality_report=lambda run: f"tiny report rmse={run.rmse}",
        plots=_tiny_plots,
        basic_plots=_tiny_basic_plots,
        repr_fields=lambda run: [f"robot={run.model.name!r}", f"solved={run.result is not None}"],
        show_plots=lambda run: run.calls.append("show"),
    )

    def __init__(self, rmse=0.5):
        self.model = SimpleNamespace(name="tiny")
        self.results_manager = None
        self.result = None
        self.rmse = rmse
        self.calls = []

    def solve(self):
        self.result = {"rmse": np.array([self.rmse]), "values": np.arange(3.0)}
        record_stage(self, "data", "ok", "in memory")
        record_stage(self, "fit", "ok", "least squares", {"effort_rmse": (self.rmse, "N·m")})
        return self


def _expected_verification_text(run, verdict):
    """The JSON text the run classes write today for ``verdict``."""
    return json.dumps(
        verification_json_data(with_schema(run, dataclasses.asdict(verdict))),
        indent=2,
        allow_nan=False,
    )


def test_unsolved_run_raises_or_warns(tmp_path, caplog, capsys):
    run = TinyRun()
    with pytest.raises(AttributeError, match=r"No identification results available\. Run solve"):
        run.verify()
    with pytest.raises(AttributeError, match="Run solve"):
        run.export_html_report(output_dir=str(tmp_path))
    with pytest.raises(AttributeError, match="Run solve"):
        run.export_verification_report(output_dir=str(tmp_path))
    with caplog.at_level(logging.WARNING):
        assert run.print_quality_report() is None
        with pytest.warns(UserWarning, match=r"Run solve\(\) first"):
            assert run.save_results(str(tmp_path)) is None
        assert run.plot_results() is None
    for action in ("report", "save", "plot"):
        assert f"No identification results to {action}. Run solve() first." in caplog.text
    assert capsys.readouterr().out == ""
    assert list(tmp_path.iterdir()) == [] and run.calls == []


def test_verify_and_verification_file(tmp_path):
    run = TinyRun().solve()
    verdict = run.verify(scope="execution")
    assert isinstance(verdict, VerificationVerdict)
    assert verdict.status == "pass" and verdict.passed
    assert verdict.stages["fit"] == "pass" and verdict.selected_stage == "fit"
    assert run.verify().status == "not_evaluated"  # prediction: no independent data

    path = run.export_verification_report(output_dir=str(tmp_path / "out"), scope="execution")
    assert path == str(tmp_path / "out" / "identification_verification.json")
    text = Path(path).read_text(encoding="utf-8")
    assert text == _expected_verification_text(run, run.verify(scope="execution"))
    data = json.loads(text)
    assert data["schema_version"] == 1 and [r["stage"] for r in data["stage_records"]] == [
        "data",
        "fit",
    ]
    explicit = tmp_path / "explicit.json"
    assert run.export_verification_report(output_path=explicit) == str(explicit)


def test_non_finite_metric_is_null_and_fails(tmp_path):
    run = TinyRun(rmse=math.nan).solve()
    path = run.export_verification_report(output_path=str(tmp_path / "v.json"), scope="execution")
    data = json.loads(Path(path).read_text(encoding="utf-8"))  # strict JSON: no NaN token
    assert data["status"] == "fail" and data["metrics"]["rmse"] is None
    assert "NaN" not in Path(path).read_text(encoding="utf-8")


def test_html_report_paths(tmp_path):
    run = TinyRun().solve()
    path = run.export_html_report(output_dir=str(tmp_path / "html"))
    assert path == str(tmp_path / "html" / "identification_report.html")
    # the default verify(): prediction scope without validation evidence
    assert Path(path).read_text(encoding="utf-8") == "<html>tiny not_evaluated</html>"
    explicit = str(tmp_path / "r.html")
    assert run.export_html_report(output_path=explicit) == explicit


def test_print_save_plot_and_repr(tmp_path, capsys, caplog):
    run = TinyRun().solve()
    run.print_quality_report()
    assert capsys.readouterr().out == "tiny report rmse=0.5\n"

    saved = run.save_results(str(tmp_path))
    assert set(saved) >= {"yaml", "csv", "npz"}
    assert isinstance(run.results_manager, ResultsManager)
    assert all(Path(p).is_file() for p in saved.values())
    assert all(Path(p).name.startswith("tiny_identification_") for p in saved.values())

    run.results_manager = None
    assert plot_into(run, tmp_path) == ["basic.png"]
    assert run.calls == ["fallback", "show"]
    run.calls.clear()
    run.results_manager = make_results_manager(run)
    with caplog.at_level(logging.WARNING):
        assert plot_into(run, tmp_path) == ["basic.png"]
    assert run.calls == ["primary", "fallback", "show"]
    assert "identification plotting failed" in caplog.text
    run.calls.clear()
    with patch.object(task_services._result_plots, "_is_headless", return_value=True):
        assert run.plot_results() == []  # no folder, no display: nothing drawn
        run.results_manager = None
        assert run.plot_results() is None
    assert run.calls == ["show", "show"]

    assert repr(run) == "TinyRun(robot='tiny', solved=True)"


def test_results_manager_name():
    run = TinyRun().solve()
    assert make_results_manager(run).robot_name == "tiny"
    run.robot_name = "named"
    assert make_results_manager(run).robot_name == "named"
    del run.robot_name
    run.model = SimpleNamespace(name="")
    assert make_results_manager(run).robot_name == "tinyrun"


# --------------------------------------------------------------------------- #
# The UR10 examples: the services assemble the task functions
# --------------------------------------------------------------------------- #
SERVICES = (
    "verify",
    "export_html_report",
    "export_verification_report",
    "save_results",
    "plot_results",
    "print_quality_report",
    "__repr__",
)

_GENERATED = re.compile(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")


@pytest.mark.parametrize("cls", [BaseIdentification, BaseCalibration])
def test_base_classes_take_the_services_from_the_mixin(cls):
    assert issubclass(cls, RunServices)
    for name in SERVICES:
        assert getattr(cls, name) is getattr(RunServices, name), f"{cls.__name__}.{name} redefined"


def _without_capture_time(data):
    """A verdict dict without the provenance capture time (differs between two calls)."""
    stamps = (data.get("metadata") or {}).get("timestamps") or {}
    stamps.pop("report_generated", None)
    return data


def _same_html(a, b):
    ta = _GENERATED.sub("", Path(a).read_text(encoding="utf-8"))
    tb = _GENERATED.sub("", Path(b).read_text(encoding="utf-8"))
    assert ta == tb


@pytest.fixture(scope="module")
def ident(tmp_path_factory):
    robot = _ident_ex.load_ur10()
    train, val = _ident_ex.generate_ur10_data(
        tmp_path_factory.mktemp("ident"), 1500, noise_std=0.5, seed=3, robot=robot
    )
    run = _ident_ex.UR10Identification(robot, _ident_ex.CONFIG, data_dir=train)
    run.identif_config["validation_data_file"] = str(val)
    run.initialize()
    run.solve(decimate=False, plotting=False)
    return run


@pytest.fixture(scope="module")
def calib(ur10_urdf, tmp_path_factory):
    robot = Robot(str(ur10_urdf), load_geometry=False)
    d = tmp_path_factory.mktemp("calib")
    train, test, _ = _calib_ex.simulate_ur10_calibration(d, robot=robot, n_train=50, n_test=60)
    run = _calib_ex.UR10Calibration(robot, str(ROOT / "config" / "ur10_unified_config.yaml"))
    run.calib_config.update(known_baseframe=False, known_tipframe=False)
    run.set_data_file(train)
    run.set_data_file(test, validation=True)
    run.initialize()
    run.solve(enable_logging=False)
    return run


def _expected_json(run, verdict):
    data = dataclasses.asdict(verdict)
    data = run.results_manager._convert_for_serialization(data)
    return verification_json_data(with_schema(run, data))


@pytest.mark.parametrize("scope", ["execution", "prediction"])
def test_identification_verdict_and_json(ident, tmp_path, scope):
    limits = {
        f"validation_rmse:{j}": {"threshold": 50.0, "comparison": "max"}
        for j in ident.identif_config["active_joints"]
    }
    verdict = ident.verify(thresholds=limits, scope=scope)
    direct = verify_identification(ident, limits, scope)
    assert _without_capture_time(dataclasses.asdict(verdict)) == _without_capture_time(
        dataclasses.asdict(direct)
    )
    path = ident.export_verification_report(
        output_dir=str(tmp_path), thresholds=limits, scope=scope
    )
    assert Path(path).name == "identification_verification.json"
    written = json.loads(Path(path).read_text(encoding="utf-8"))
    assert _without_capture_time(written) == _without_capture_time(
        json.loads(json.dumps(_expected_json(ident, direct)))
    )


def test_identification_reports_repr_and_save(ident, tmp_path, capsys):
    path = ident.export_html_report(output_dir=str(tmp_path / "a"))
    assert Path(path).name == "identification_report.html"
    generate_identification_report(ident, output_path=str(tmp_path / "direct.html"))
    _same_html(path, tmp_path / "direct.html")
    text = repr(ident)
    assert text.startswith("UR10Identification(robot='") and "state=solved" in text
    ident.print_quality_report()
    assert capsys.readouterr().out == format_quality_report(ident) + "\n"
    saved = ident.save_results(str(tmp_path / "saved"))
    assert {Path(p).suffix for p in saved.values()} >= {".npz"}
    with np.load(saved["npz"]) as arrays:
        np.testing.assert_array_equal(arrays["base parameters values"], ident.phi_base)
    manager = make_results_manager(ident)
    assert (manager.task_type, manager.robot_name) == ("identification", ident.model.name)


@pytest.mark.parametrize("scope", ["execution", "prediction"])
def test_calibration_verdict_and_json(calib, tmp_path, scope):
    verdict = calib.verify(scope=scope)
    direct = verify_calibration(calib, None, scope)
    assert dataclasses.asdict(verdict) == dataclasses.asdict(direct)
    path = calib.export_verification_report(output_dir=str(tmp_path), scope=scope)
    assert Path(path).name == "calibration_verification.json"
    written = json.loads(Path(path).read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(_expected_json(calib, direct)))


def test_calibration_reports_repr_and_save(calib, tmp_path, capsys, caplog):
    path = calib.export_html_report(output_dir=str(tmp_path / "a"))
    assert Path(path).name == "calibration_report.html"
    generate_calibration_report(calib, output_path=str(tmp_path / "direct.html"))
    _same_html(path, tmp_path / "direct.html")
    text = repr(calib)
    assert text.startswith("UR10Calibration(robot=") and "status='CALIBRATED'" in text
    calib.print_quality_report()
    assert capsys.readouterr().out == calib_quality_text(calib) + "\n"
    with caplog.at_level(logging.WARNING), pytest.warns(UserWarning, match="no 'result'"):
        assert calib.save_results(str(tmp_path / "s")) is None
    assert "no 'result' attribute on UR10Calibration" in caplog.text
    manager = make_results_manager(calib)
    assert (manager.task_type, manager.robot_name) == ("calibration", calib.model.name)
