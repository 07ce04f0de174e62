"""Stage records (figaroh.tools.stages): recording, verdict mapping, summary line, JSON."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pytest

from figaroh._run import stages as run_stages
from figaroh._run.verdict import scoped_verification
from figaroh.tools import stages as st
from figaroh.tools.stages import (
    SCHEMA_VERSION,
    STAGES,
    STATUSES,
    StageResult,
    apply_to_verdict,
    drop_stage,
    record_stage,
    stages_as_dicts,
    stages_json_data,
    stages_line,
    with_schema,
    write_stages_json,
)


@dataclass
class _Verdict:
    """Minimal stand-in for VerificationVerdict (same attribute names)."""

    passed: bool = False
    stages: dict = field(default_factory=dict)
    stage_records: list = field(default_factory=list)
    selected_stage: str = ""
    splits: dict = field(default_factory=dict)


@pytest.fixture
def fake_provenance(monkeypatch):
    calls = []

    def collect_splits(obj):
        calls.append(obj)
        return {"training": {"samples": 7}, "validation": None}

    monkeypatch.setattr(run_stages, "collect_splits", collect_splits)
    return calls


def test_vocabulary():
    assert STAGES == ("data", "fit", "validation", "physical", "export")
    assert STATUSES == ("ok", "failed", "fallback", "not_run")
    assert SCHEMA_VERSION == 1


def test_stage_result_validation():
    with pytest.raises(ValueError, match=r"stage must be one of \(.*\), not 'solve'"):
        StageResult("solve", "ok")
    with pytest.raises(ValueError, match=r"status must be one of \(.*\), not 'pass'"):
        StageResult("fit", "pass")
    r = StageResult("fit", "ok")
    assert r.metrics == {} and r.artifacts == [] and r.reason == ""
    assert StageResult("fit", "ok").metrics is not r.metrics  # no shared default


def test_record_stage_metrics_replace_and_order():
    obj = SimpleNamespace()  # no ``stages`` attribute at all
    rec = record_stage(
        obj,
        "validation",
        "fallback",
        "no held-out data",
        {"effort_rmse": (np.float64(1.5), "N·m or N"), "samples": np.int64(40)},
    )
    assert rec.metrics == {
        "effort_rmse": {"value": 1.5, "unit": "N·m or N"},
        "samples": {"value": 40, "unit": ""},
    }
    assert type(rec.metrics["samples"]["value"]) is int
    first = obj.stages
    record_stage(obj, "data", "ok", "legacy dict")
    assert obj.stages is not first and len(first) == 1  # reassigned, old list untouched
    record_stage(obj, "export", "failed", "boom", artifacts=["/tmp/x.urdf"])
    record_stage(obj, "fit", "ok", "least squares")
    assert [r.stage for r in obj.stages] == ["data", "fit", "validation", "export"]
    record_stage(obj, "fit", "failed", "LinAlgError: singular")
    assert [r.stage for r in obj.stages] == ["data", "fit", "validation", "export"]
    assert obj.stages[1].status == "failed"
    obj2 = SimpleNamespace(stages=None)
    record_stage(obj2, "data", "ok")
    assert len(obj2.stages) == 1
    with pytest.raises(ValueError, match="metric 'x'"):
        record_stage(obj2, "fit", "ok", metrics={"x": (1.0, 2.0, 3.0)})
    with pytest.raises(ValueError, match="status must be one of"):
        record_stage(obj2, "fit", "done")
    assert [r.stage for r in obj2.stages] == ["data"]  # failed calls record nothing


def test_drop_stage_and_dicts():
    obj = SimpleNamespace(stages=[])
    record_stage(obj, "fit", "ok", "least squares", {"rows": 12})
    record_stage(obj, "export", "ok", "reconstruction link inertials written", artifacts=["a"])
    drop_stage(obj, "export")
    drop_stage(obj, "export")  # no-op
    drop_stage(SimpleNamespace(), "fit")  # missing attribute is fine
    assert stages_as_dicts(obj) == [
        {
            "stage": "fit",
            "status": "ok",
            "reason": "least squares",
            "metrics": {"rows": {"value": 12, "unit": ""}},
            "artifacts": [],
        }
    ]
    assert stages_as_dicts(SimpleNamespace()) == []


def test_with_schema_keeps_verdict_stage_map():
    obj = SimpleNamespace()
    record_stage(obj, "data", "ok")
    out = with_schema(obj, {"passed": True, "stages": {"fit": "pass"}})
    assert list(out)[0] == "schema_version" and out["schema_version"] == 1
    assert out["stages"] == {"fit": "pass"}  # #63: not overwritten
    assert out["stage_records"] == stages_as_dicts(obj)


def test_apply_to_verdict(fake_provenance):
    obj = SimpleNamespace()
    record_stage(obj, "data", "ok")
    record_stage(obj, "fit", "ok", "least squares")
    record_stage(obj, "validation", "fallback", "no held-out data")
    record_stage(obj, "physical", "not_run", "skipped")
    v = _Verdict(stages={"numerical_execution": "pass", "export": "pass"})
    assert apply_to_verdict(v, obj, selected_stage="reconstruction") is v
    assert v.stages == {
        "numerical_execution": "pass",
        "data": "pass",
        "fit": "pass",
        "validation": "fallback",
        "physical": "not_run",
        "export": "pass",  # unrecorded: setdefault keeps the existing entry
        "data_provenance": "pass",
    }
    assert v.selected_stage == "reconstruction"
    assert v.stage_records == stages_as_dicts(obj)
    assert v.splits == {"training": {"samples": 7}, "validation": None}
    assert fake_provenance == [obj]

    failed = SimpleNamespace()
    record_stage(failed, "fit", "failed", "ValueError: rank 0")
    v2 = _Verdict()
    apply_to_verdict(v2, failed)
    assert v2.stages["fit"] == "fail"
    assert v2.stages["data"] == "not_evaluated" == v2.stages["data_provenance"]
    assert v2.stages["export"] == "not_evaluated"
    assert v2.selected_stage == "none"
    v3 = _Verdict(stages=None)
    apply_to_verdict(v3, SimpleNamespace())
    assert v3.selected_stage == "none" and set(STAGES) <= set(v3.stages)


def test_apply_to_verdict_uses_the_real_split_provenance():
    v = _Verdict()
    apply_to_verdict(v, SimpleNamespace())
    assert v.splits["validation"] is None
    assert v.splits["validation_source"] == "training_fallback"


def test_stages_line():
    obj = SimpleNamespace()
    assert stages_line(obj) == "no stage records"
    record_stage(obj, "validation", "fallback", "no held-out data: evaluated on ...")
    record_stage(obj, "fit", "ok", "least squares")
    record_stage(obj, "data", "ok", "legacy dict")
    assert stages_line(obj) == (
        "data ok · fit ok · validation fallback (training data, not held-out)"
    )
    record_stage(obj, "export", "failed", "export failed: no estimate")
    record_stage(obj, "physical", "failed", "")
    assert stages_line(obj).endswith(
        " · physical failed · export failed (export failed: no estimate)"
    )
    record_stage(obj, "physical", "fallback", "nullspace used")
    assert " · physical fallback · " in stages_line(obj)  # only validation gets the suffix


def test_stage_json_nan_is_null(tmp_path):
    obj = SimpleNamespace()
    record_stage(
        obj,
        "fit",
        "ok",
        "least squares",
        {
            "effort_rmse": (float("nan"), "N·m or N (stacked joints)"),
            "cond": np.float64(np.inf),
            "rows": np.int64(12),
            "per_joint": np.array([1.0, np.nan]),
        },
    )
    # the raw records cannot be written as strict JSON ...
    with pytest.raises(ValueError):
        json.dumps(with_schema(obj, {}), allow_nan=False, default=list)
    # ... the stages.json helpers store non-finite values as null
    data = stages_json_data(obj)
    metrics = data["stages"][0]["metrics"]
    assert metrics["effort_rmse"] == {"value": None, "unit": "N·m or N (stacked joints)"}
    assert metrics["cond"]["value"] is None and metrics["rows"]["value"] == 12
    assert metrics["per_joint"]["value"] == [1.0, None]
    assert math.isnan(obj.stages[0].metrics["effort_rmse"]["value"])
    path = write_stages_json(obj, tmp_path / "stages.json")
    text = (tmp_path / "stages.json").read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text
    loaded = json.loads(text)
    assert loaded["schema_version"] == 1
    assert loaded["stages"][0]["metrics"]["effort_rmse"]["value"] is None
    assert loaded["stages"][0]["stage"] == "fit" and path.endswith("stages.json")
    assert [p.name for p in tmp_path.iterdir()] == ["stages.json"]


def test_records_round_trip_through_json(tmp_path):
    obj = SimpleNamespace()
    record_stage(
        obj,
        "data",
        "ok",
        "TrajectoryData, clock recorded, effort ['joint_torque']",
        {"samples": 400, "masked_samples": 3},
    )
    record_stage(
        obj,
        "export",
        "ok",
        "reconstruction link inertials written",
        artifacts=[tmp_path / "out.urdf"],
    )
    write_stages_json(obj, tmp_path / "s.json")
    loaded = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["stages"]
    rebuilt = [StageResult(**d) for d in loaded]
    assert [dataclasses.asdict(r) for r in rebuilt] == stages_as_dicts(obj)
    assert loaded[1]["artifacts"] == [str(tmp_path / "out.urdf")]


def test_module_all_names_exist():
    for name in st.__all__:
        assert hasattr(st, name)


def test_a_failed_data_check_is_a_failed_data_stage_and_a_failing_verdict(fake_provenance):
    obj = SimpleNamespace()
    reason = "legacy dict; data checks failed: joint j3 did not move: its parameters were dropped"
    record_stage(obj, "data", "failed", reason, {"failed_data_checks": 1})
    record_stage(obj, "fit", "ok", "least squares")
    assert stages_line(obj).startswith(f"data failed ({reason})")
    verdict = scoped_verification(
        {"rmse": 0.1},
        {"rmse": {"threshold": 1.0, "comparison": "max"}},
        "prediction",
        {"finite_parameters": [1.0]},
        True,
        ["validation_rmse:j1"],
        facts={"data_check:joint_motion": (False, "joint j3 did not move")},
        independence_failure="the validation data is identical to the training data",
    )
    apply_to_verdict(verdict, obj)
    checks = {c.name: c for c in verdict.checks}
    assert verdict.status == "fail" and not verdict.passed
    assert checks["data_check:joint_motion"].reason == "joint j3 did not move"
    assert checks["independent_validation"].status == "fail"
    assert "identical" in checks["independent_validation"].reason
    assert verdict.stages["data"] == "fail" and verdict.stages["data_provenance"] == "fail"
