"""Tests of figaroh.tools._report_common: thresholds, scoped verdicts, strict JSON, HTML."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import html
import json
import math
import re
import shutil
import subprocess
import types
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from figaroh._run import charts as run_charts
from figaroh._run import git as run_git
from figaroh._run import html as run_html
from figaroh._run import provenance as run_prov
from figaroh._run import verdict as run_verdict
from figaroh._run.html import html_escape
from figaroh._run.json_io import verification_json_data, write_verification_json
from figaroh._run.resources import read_asset
from figaroh._run.templating import format_number
from figaroh._run.uncertainty import parameter_table
from figaroh._run.verdict import (
    CALIBRATION_DEFAULT_THRESHOLDS,
    IDENTIFICATION_DEFAULT_THRESHOLDS,
    ThresholdCheck,
    VerificationVerdict,
    evaluate_thresholds,
    scoped_verification,
)
from figaroh.tools.stages import apply_to_verdict, record_stage, with_schema

XSS = "<script>alert(1)</script>"


def _by_name(verdict):
    return {c.name: c for c in verdict.checks}


# ---------------------------------------------------------------------------
# evaluate_thresholds / verdict_status
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "comparison", "limit", "expected"),
    [
        (2.0, "max", 2.0, "pass"),  # boundary is inclusive
        (np.nextafter(2.0, 3.0), "max", 2.0, "fail"),
        (0.9, "min", 0.9, "pass"),
        (np.nextafter(0.9, 0.0), "min", 0.9, "fail"),
        (float("nan"), "max", 1.0, "fail"),
        (float("inf"), "min", 1.0, "fail"),
        (-float("inf"), "max", 1.0, "fail"),
    ],
)
def test_threshold_comparisons(value, comparison, limit, expected):
    v = evaluate_thresholds({"m": value}, {"m": {"threshold": limit, "comparison": comparison}})
    (check,) = v.checks
    assert check.status == expected
    assert check.passed is (expected == "pass")
    assert v.status == expected and v.passed is (expected == "pass")
    if not math.isfinite(value):
        assert check.reason == "Computed metric is nonfinite"


def test_missing_metric_is_not_evaluated_never_pass():
    v = evaluate_thresholds(
        {"rmse": 0.1},
        {
            "rmse": {"threshold": 1.0, "comparison": "max"},
            "validation_rmse": {"threshold": 1.0, "comparison": "max"},
        },
    )
    checks = _by_name(v)
    assert checks["rmse"].status == "pass"
    assert checks["validation_rmse"].status == "not_evaluated"
    assert checks["validation_rmse"].value is None
    assert checks["validation_rmse"].reason == "Required metric is unavailable"
    assert v.status == "not_evaluated" and v.passed is False
    assert v.policy == {
        "rmse": {"threshold": 1.0, "comparison": "max"},
        "validation_rmse": {"threshold": 1.0, "comparison": "max"},
    }


def test_optional_missing_metric_does_not_block():
    v = evaluate_thresholds(
        {"rmse": 0.1, "other": None},
        {
            "rmse": {"threshold": 1.0, "comparison": "max"},
            "other": {"threshold": 1.0, "comparison": "max", "required": False},
        },
    )
    assert _by_name(v)["other"].status == "not_evaluated"
    assert v.status == "pass" and v.passed is True


def test_optional_failure_does_not_fail_verdict():
    v = evaluate_thresholds(
        {"rmse": 0.1, "corr": 0.5},
        {
            "rmse": {"threshold": 1.0, "comparison": "max"},
            "corr": {"threshold": 0.9, "comparison": "min", "required": False},
        },
    )
    assert _by_name(v)["corr"].status == "fail"
    assert v.status == "pass"


def test_empty_policy_is_not_evaluated():
    v = evaluate_thresholds({"rmse": 0.1}, {})
    assert v.checks == [] and v.status == "not_evaluated" and v.passed is False
    assert dict(IDENTIFICATION_DEFAULT_THRESHOLDS) == {} == dict(CALIBRATION_DEFAULT_THRESHOLDS)
    with pytest.raises(TypeError):
        IDENTIFICATION_DEFAULT_THRESHOLDS["rmse"] = {}  # read-only default


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"threshold": 1.0, "comparison": "between"}, "Unknown comparison"),
        ({"threshold": float("nan"), "comparison": "max"}, "finite"),
        ({"threshold": float("inf"), "comparison": "max"}, "finite"),
        ({"threshold": "1", "comparison": "max"}, "real number"),
        ({"comparison": "max"}, "'threshold'"),
        ({"threshold": 1.0}, "'comparison'"),
        (1.0, "mapping"),
    ],
)
def test_bad_threshold_spec_raises(spec, match):
    with pytest.raises(ValueError, match=match):
        evaluate_thresholds({"m": 1.0}, {"m": spec})


def test_non_numeric_metric_raises():
    with pytest.raises(ValueError, match="metric 'm'"):
        evaluate_thresholds({"m": "big"}, {"m": {"threshold": 1.0, "comparison": "max"}})


def test_check_status_table():
    def chk(status, required=True):
        return ThresholdCheck("x", 1.0, 1.0, "max", status == "pass", status, required)

    assert run_verdict.verdict_status([]) == "not_evaluated"
    assert run_verdict.verdict_status([chk("pass", False)]) == "not_evaluated"
    assert run_verdict.verdict_status([chk("pass")]) == "pass"
    assert run_verdict.verdict_status([chk("pass"), chk("not_evaluated")]) == "not_evaluated"
    assert run_verdict.verdict_status([chk("fail"), chk("not_evaluated")]) == "fail"
    assert run_verdict.verdict_status([chk("pass"), chk("fail", False)]) == "pass"


def test_threshold_check_post_init_and_old_constructors():
    c = ThresholdCheck("rmse", 3.0, 2.0, "max", False)  # old 5-argument form
    assert c.status == "fail" and c.passed is False
    c = ThresholdCheck("rmse", None, 2.0, "max", True, status="not_evaluated")
    assert c.passed is False
    with pytest.raises(ValueError, match="status"):
        ThresholdCheck("rmse", 1.0, 2.0, "max", True, status="ok")
    v = VerificationVerdict(True, [], {})  # old 3-argument form
    assert v.stage_records == [] and v.splits == {} and v.selected_stage == ""
    assert "VerificationVerdict(" in repr(v)


# ---------------------------------------------------------------------------
# scoped_verification
# ---------------------------------------------------------------------------


def _finite_arrays(rng):
    return {
        "finite_parameters": rng.normal(size=8),
        "finite_prediction": rng.normal(size=(50, 3)),
        "finite_measurements": rng.normal(size=(50, 3)),
        "finite_fit_rmse": 0.3,
    }


def test_prediction_without_validation_or_limits_is_not_evaluated():
    rng = np.random.default_rng(0)
    v = scoped_verification(
        {"condition_number": 1e12, "rmse": 0.3},
        IDENTIFICATION_DEFAULT_THRESHOLDS,
        "prediction",
        _finite_arrays(rng),
        independent=False,
        prediction_keys=[],
    )
    assert v.status == "not_evaluated"
    assert v.passed is False
    assert v.scope == "prediction"
    checks = _by_name(v)
    assert checks["independent_validation"].status == "not_evaluated"
    assert checks["prediction_error_policy"].status == "not_evaluated"
    assert v.stages["numerical_execution"] == "pass"
    assert v.stages["prediction"] == "not_evaluated"
    # huge raw condition number does not fail the execution scope
    ex = scoped_verification(
        {"condition_number": 1e12}, {}, "execution", _finite_arrays(rng), False, []
    )
    assert ex.status == "pass" and ex.passed is True
    assert ex.stages["prediction"] == "not_evaluated"
    assert [c.name for c in ex.checks] == list(_finite_arrays(rng))


def _independent_case(rng, n=400, joints=("j1", "j2", "j3")):
    scale = np.array([0.05, 0.2, 1.0])
    observed = rng.normal(size=(n, len(joints))) * 10
    predicted = observed + rng.normal(size=(n, len(joints))) * scale
    rmse = np.sqrt(np.mean((observed - predicted) ** 2, axis=0))
    metrics = {f"validation_rmse:{j}": float(r) for j, r in zip(joints, rmse, strict=True)}
    arrays = {"finite_prediction": predicted, "finite_measurements": observed}
    return metrics, arrays, rmse, list(joints)


def test_independent_validation_passes_and_fails_exactly_as_the_numbers_say():
    rng = np.random.default_rng(1)
    metrics, arrays, rmse, joints = _independent_case(rng)
    keys = [f"validation_rmse:{j}" for j in joints]

    def limits(factors):
        return {
            k: {"threshold": float(r * f), "comparison": "max"}
            for k, r, f in zip(keys, rmse, factors, strict=True)
        }

    ok = scoped_verification(metrics, limits([1.01, 1.01, 1.0]), "prediction", arrays, True, keys)
    assert ok.status == "pass" and ok.passed is True
    assert ok.stages["prediction"] == "pass"

    bad = scoped_verification(metrics, limits([1.01, 0.99, 1.01]), "prediction", arrays, True, keys)
    assert bad.status == "fail" and bad.passed is False
    statuses = {c.name: c.status for c in bad.checks}
    assert statuses[keys[0]] == "pass" and statuses[keys[1]] == "fail"
    assert statuses[keys[2]] == "pass"
    assert bad.stages["prediction"] == "fail"

    # a limit missing for one joint: the policy check is not satisfied
    partial = limits([2, 2, 2])
    del partial[keys[2]]
    v = scoped_verification(metrics, partial, "prediction", arrays, True, keys)
    assert v.status == "not_evaluated" and v.passed is False
    # a 'min' or negative limit is not a prediction-error policy
    weird = limits([2, 2, 2])
    weird[keys[0]] = {"threshold": 0.0, "comparison": "min"}
    assert scoped_verification(metrics, weird, "prediction", arrays, True, keys).passed is False


def test_training_fallback_can_never_pass_prediction():
    rng = np.random.default_rng(2)
    metrics, arrays, rmse, joints = _independent_case(rng)
    training = {k.replace("validation_", "training_"): v for k, v in metrics.items()}
    keys = [f"validation_rmse:{j}" for j in joints]
    limits = {k: {"threshold": 1e9, "comparison": "max"} for k in keys}
    v = scoped_verification(training, limits, "prediction", arrays, False, keys)
    assert v.passed is False and v.status == "not_evaluated"
    assert all(_by_name(v)[k].status == "not_evaluated" for k in keys)


def test_nan_metric_and_nonfinite_evidence_fail():
    rng = np.random.default_rng(3)
    arrays = _finite_arrays(rng)
    v = scoped_verification(
        {"rmse": float("nan")},
        {"rmse": {"threshold": 1.0, "comparison": "max"}},
        "execution",
        arrays,
        False,
        [],
    )
    assert v.status == "fail" and v.passed is False
    assert _by_name(v)["rmse"].reason == "Computed metric is nonfinite"

    arrays["finite_prediction"] = np.array([1.0, np.inf])
    v = scoped_verification({}, {}, "execution", arrays, False, [])
    assert _by_name(v)["finite_prediction"].status == "fail"
    assert _by_name(v)["finite_prediction"].reason == "Empty or nonfinite numerical output"
    assert v.status == "fail" and v.stages["numerical_execution"] == "fail"

    for bad in ([], np.zeros((0, 3)), [[1.0, 2.0], [3.0]], "abc"):
        v = scoped_verification({}, {}, "execution", {"x": bad}, False, [])
        assert v.status == "fail", bad


def test_missing_evidence_facts_and_solver():
    arrays = {"finite_parameters": None, "finite_fit_rmse": 0.1}
    v = scoped_verification({}, {}, "execution", arrays, False, [])
    assert _by_name(v)["finite_parameters"].status == "not_evaluated"
    assert v.status == "not_evaluated" and v.passed is False

    facts = {
        "requested_validation_loaded": False,
        "matching_torque_shapes": None,
        "selected_stage_accepted": (False, "The requested physical_fit estimate was rejected: x"),
        "shapes_ok": (True, "unused reason"),
    }
    v = scoped_verification({}, {}, "execution", {"a": [1.0]}, False, [], facts=facts)
    checks = _by_name(v)
    assert checks["requested_validation_loaded"].status == "fail"
    assert checks["requested_validation_loaded"].reason == (
        "Numerical dimensions are missing or inconsistent"
    )
    assert checks["matching_torque_shapes"].status == "not_evaluated"
    assert checks["selected_stage_accepted"].reason.startswith("The requested physical_fit")
    assert checks["shapes_ok"].status == "pass" and checks["shapes_ok"].reason == ""
    assert v.status == "fail"

    v = scoped_verification({}, {}, "execution", {"a": [1.0]}, False, [], solver_success=False)
    assert v.status == "fail" and v.stages["solver"] == "fail"
    v = scoped_verification({}, {}, "execution", {"a": [1.0]}, False, [], solver_success=True)
    assert v.status == "pass" and v.stages["solver"] == "pass"
    assert set(v.stages) == {
        "numerical_execution",
        "prediction",
        "data_provenance",
        "solver",
        "physical",
        "export",
    }


def test_bad_scope_raises():
    with pytest.raises(ValueError, match="Verification scope must be 'execution' or 'prediction'"):
        scoped_verification({}, {}, "thresholds", {}, False, [])


# ---------------------------------------------------------------------------
# Strict JSON
# ---------------------------------------------------------------------------


def test_strict_json_round_trip(tmp_path):
    v = scoped_verification(
        {"rmse": float("nan"), "n": np.int64(3), "arr": np.array([1.0, np.inf])},
        {"rmse": {"threshold": 1.0, "comparison": "max"}},
        "execution",
        {"finite_parameters": np.array([1.0, 2.0])},
        False,
        [],
    )
    raw = dataclasses.asdict(v)
    with pytest.raises(ValueError):  # the reason the conversion exists
        json.dumps(raw, allow_nan=False, default=str)
    data = verification_json_data(raw)
    text = json.dumps(data, allow_nan=False)
    back = json.loads(text)
    assert back["metrics"] == {"rmse": None, "n": 3, "arr": [1.0, None]}
    assert back["status"] == "fail"
    assert _by_name(v)["rmse"].status == "fail"
    assert {c["name"]: c["value"] for c in back["checks"]}["rmse"] is None

    path = write_verification_json(v, tmp_path / "verdict.json")
    loaded = json.loads((tmp_path / "verdict.json").read_text())
    assert path == str(tmp_path / "verdict.json")
    assert loaded == back
    assert set(loaded) >= {
        "passed",
        "checks",
        "metrics",
        "insights",
        "metadata",
        "series",
        "compat",
        "status",
        "scope",
        "stages",
        "policy",
        "stage_records",
        "selected_stage",
        "splits",
    }
    assert [p.name for p in tmp_path.iterdir()] == ["verdict.json"]  # no temp file left
    assert v.to_json_data() == back


def test_verdict_with_stage_records_exports_schema_keys(tmp_path):
    obj = types.SimpleNamespace(stages=[], num_samples=400, _sample_mask=None, trajectory=None)
    record_stage(obj, "data", "ok", "legacy dict", {"samples": 400})
    record_stage(obj, "fit", "ok", "least squares", {"effort_rmse": (float("nan"), "N·m")})
    v = scoped_verification({}, {}, "prediction", {"a": [1.0]}, False, [])
    apply_to_verdict(v, obj)
    assert v.selected_stage == "fit"
    assert v.splits["validation_source"] == "training_fallback"
    assert v.splits["training"]["samples"] == 400
    data = verification_json_data(with_schema(obj, dataclasses.asdict(v)))
    write_verification_json(data, tmp_path / "v.json")
    back = json.loads((tmp_path / "v.json").read_text())
    assert list(back)[0] == "schema_version"
    assert set(back) == {
        "schema_version",
        "passed",
        "checks",
        "metrics",
        "insights",
        "metadata",
        "series",
        "compat",
        "status",
        "scope",
        "stages",
        "policy",
        "stage_records",
        "selected_stage",
        "splits",
    }
    assert back["stages"]["data"] == "pass" == back["stages"]["data_provenance"]
    assert back["stages"]["validation"] == "not_evaluated"
    assert back["stage_records"][1]["metrics"]["effort_rmse"]["value"] is None


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pct", "tier"),
    [
        (None, "unknown"),
        (float("nan"), "unknown"),
        (30.0, "fair"),
        (30.0001, "poor"),
        (10.0, "good"),
        (10.0001, "fair"),
        (0.0, "good"),
        (-45.0, "poor"),
        (1e9, "poor"),
    ],
)
def test_uncertainty_tier(pct, tier):
    assert run_html._uncertainty_tier(pct) == tier


def test_hash_short_and_run_title():
    assert run_html._hash_short("") == "unavailable" and run_html._hash_short(None) == "unavailable"
    for v in ("unknown", "unavailable", "not_found", "unavailable: git not found"):
        assert run_html._hash_short(v) == v
    assert run_html._hash_short("0123456789abcdef") == "0123456789ab"
    prov = {
        "asset": {"asset_id": "ur10-cell-2", "is_specified": True},
        "model": {"robot_name": "ur10"},
    }
    assert run_html._run_title(prov, "Fallback") == "ur10-cell-2 (ur10)"
    prov["asset"]["is_specified"] = False
    assert run_html._run_title(prov, "Fallback") == "ur10"
    assert run_html._run_title(None, "Fallback") == "Fallback"
    assert run_html._run_title({"asset": {"is_specified": True, "asset_id": "a"}}, "F") == "a (F)"


def test_downsample_series_is_uniform_subsampling():
    n = 10_001
    t = np.arange(n) * 0.002
    s1 = {"a": np.sin(t), "b": np.cos(t)}
    s2 = {"a": t**2}
    t_out, (o1, o2) = run_charts._downsample_series(t, [s1, s2], 3000)
    step = math.ceil(n / 3000)
    idx = np.arange(0, n, step)
    assert len(t_out) == len(idx) <= 3000
    np.testing.assert_array_equal(t_out, t[idx])
    np.testing.assert_array_equal(o1["b"], np.cos(t)[idx])
    np.testing.assert_array_equal(o2["a"], (t**2)[idx])
    assert t_out[-1] == t[idx[-1]] and idx[-1] > n - step - 1  # spans the whole run
    t_same, (same,) = run_charts._downsample_series([0, 1, 2], [{"a": [1, 2, 3]}], 3)
    assert t_same == [0, 1, 2] and same == {"a": [1, 2, 3]}
    with pytest.raises(ValueError):
        run_charts._downsample_series([0], [], 0)


def test_git_and_config_hash(tmp_path, monkeypatch):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_bytes(b"robot: {name: ur10}\n")
    assert run_prov._config_file_sha256(cfg) == hashlib.sha256(cfg.read_bytes()).hexdigest()
    assert run_prov._config_file_sha256(tmp_path / "missing.yaml") == "unknown"
    assert run_prov._config_file_sha256(None) == "unknown"
    meta = run_prov.build_provenance_metadata(str(cfg), "ur10")
    assert set(meta) == {"git_commit", "config_sha256", "timestamp", "robot_name"}
    assert meta["config_sha256"] == hashlib.sha256(cfg.read_bytes()).hexdigest()

    if shutil.which("git"):
        repo = tmp_path / "repo"
        (repo / "src" / "figaroh").mkdir(parents=True)
        (repo / "pyproject.toml").write_text('[project]\nname = "figaroh"\n')
        env = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run(["git", "add", "pyproject.toml"], cwd=repo, check=True)
        subprocess.run(["git", *env, "commit", "-qm", "m"], cwd=repo, check=True)
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()
        monkeypatch.setattr(run_git, "_PACKAGE_DIR", repo / "src" / "figaroh")
        monkeypatch.chdir(tmp_path)  # the working directory plays no part
        assert run_git._git_commit_hash() == head
        monkeypatch.setattr(run_git, "_PACKAGE_DIR", tmp_path / "site-packages" / "figaroh")
        assert run_git.git_head() == (False, run_git.NOT_A_CHECKOUT)
        assert run_git._git_commit_hash() == "unknown"
        monkeypatch.undo()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert run_git._git_commit_hash() == "unknown"
    assert run_git._run_git(["status"], tmp_path) == (False, "git executable not found")


# ---------------------------------------------------------------------------
# HTML escaping
# ---------------------------------------------------------------------------


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.attrs = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_data(self, data):
        self.text.append(data)


def _parse(doc):
    p = _Collector()
    p.feed(doc)
    p.close()
    return p


def test_html_escape_turns_script_into_text():
    escaped = html_escape(XSS)
    assert escaped == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert run_html._esc(XSS) == escaped
    assert html.unescape(escaped) == XSS
    assert html_escape('" onmouseover="x') == "&quot; onmouseover=&quot;x"
    assert html_escape("it's") == "it&#x27;s"
    p = _parse(f"<p>{escaped}</p>")
    assert p.tags == ["p"] and "".join(p.text) == XSS


def test_every_shared_section_escapes_user_strings():
    prov = {
        "run_id": XSS,
        "task": XSS,
        "asset": {"asset_id": XSS, "is_specified": True, "label": XSS, "site": XSS},
        "model": {"robot_name": XSS, "urdf_path": XSS, "urdf_sha256": XSS},
        "config": {"path": XSS, "sha256": XSS},
        "software": {"python": XSS, "git_commit": XSS, "hostname": XSS},
        "data": {"files": [{"role": XSS, "path": XSS, "sha256": XSS}]},
        "timestamps": {"run_started": XSS},
    }
    joints = [
        {"name": XSS, "unit": XSS, "series": [{"label": XSS, "role": "measured", "y": [1.0, 2.0]}]},
        {
            "name": "j2",
            "unit": "N·m",
            "series": [{"label": "fit", "role": "identified", "y": [0.0, float("nan")]}],
        },
    ]
    sections = [
        run_html._provenance_section(prov),
        run_html._insights_section([{"level": "warn", "text": XSS}, XSS]),
        run_html._parameter_table_section(
            parameter_table([XSS, "b"], ["k", "k"], [1.0, 2.0], [0.1, 0.2], 10)
        ),
        run_html._correlation_section([{"param_i": XSS, "param_j": "b", "correlation": 0.99}]),
        run_charts._multi_panel_section(XSS, [0.0, 0.01], XSS, joints, hint=XSS, histograms=True),
    ]
    for doc in sections:
        assert "<script" not in doc and XSS not in doc
        p = _parse(doc)
        assert "script" not in p.tags
    # the chart payload survives the attribute escaping intact (strict JSON: NaN -> null)
    payload = json.loads(dict(_parse(sections[-1]).attrs)["data-multi"])
    text = json.dumps(payload)
    assert XSS in text and "NaN" not in text and "null" in text


def test_parameter_table_order_bars_and_interval():
    """Rows by decreasing grade, NaN last; bar width min(g, 100) %; interval θ̂ ± t σ."""
    table = parameter_table(
        ["a", "b", "c", "d"], ["k"] * 4, [10.0, 2.0, 1.0, 4.0], [0.5, float("nan"), 2.5, 0.8], 20
    )
    doc = run_html._parameter_table_section(table)
    rows = [r for r in doc.split("<tr")[2:]]
    names = [r.split("<td>")[1].split("</td>")[0] for r in rows]
    # g = σ / max(|θ|, S), S = 0.1·10 = 1: c 250 %, d 20 %, a 5 %, b unknown
    assert names == ["c", "d", "a", "b"]
    assert 'style="width:100.0%"' in rows[0] and "tier-poor" in rows[0]
    assert "tier-fair" in rows[1] and "tier-good" in rows[2] and "tier-unknown" in rows[3]
    t = scipy.stats.t.ppf(0.975, 20)
    assert f"[{format_number(10.0 - t * 0.5)}, {format_number(10.0 + t * 0.5)}]" in rows[2]
    assert 'data-zero="true"' in rows[0] and "not distinguishable from 0" in rows[0]
    assert "95 % CI" in doc.split("<tbody>")[0]
    empty = run_html._parameter_table_section(None)
    assert empty == '<p class="muted">No parameters to report.</p>'
    assert run_html._correlation_section([]) == (
        '<p class="muted">No parameter pairs exceed |ρ| &gt; 0.8.</p>'
    )
    doc = run_html._correlation_section([("a", "b", -0.97), ("c", "d", 0.85)])
    assert doc.index("tier-poor") < doc.index("tier-fair")


def test_assets_ship_as_package_data():
    """Every file of figaroh/_run/assets is read through importlib.resources and is
    matched by a pyproject package-data pattern (so wheels ship it)."""
    assets = [p.name for p in resources.files("figaroh._run").joinpath("assets").iterdir()]
    assert {
        "report.css",
        "charts.js",
        "small_multiples.js",
        "compare.css",
        "compare.js",
    } <= set(assets)
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text("utf-8")
    section = pyproject.split("[tool.setuptools.package-data]", 1)[1]
    block = re.search(r"^figaroh = \[(.*?)\]", section, re.M | re.S).group(1)
    patterns = re.findall(r'"([^"]+)"', block)
    for name in assets:
        assert read_asset(name).strip()
        assert any(fnmatch.fnmatch(f"_run/assets/{name}", p) for p in patterns), name
    templates = [p.name for p in resources.files("figaroh._run").joinpath("templates").iterdir()]
    assert {
        "page.html.j2",
        "components.html.j2",
        "identification_report.html.j2",
        "calibration_report.html.j2",
        "drift_report.html.j2",
    } <= set(templates)
    for name in templates:
        assert any(fnmatch.fnmatch(f"_run/templates/{name}", p) for p in patterns), name
    assert run_charts._SERIES_CHART_SCRIPT == (
        read_asset("charts.js") + read_asset("small_multiples.js")
    )
