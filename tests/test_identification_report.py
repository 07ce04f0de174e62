"""Identification verdict (``verify``), identification and calibration HTML reports.

The identification side runs on a real ``UR10Identification`` (simulated data
with known noise, see examples/ur10); the calibration report runs on a
fixture object holding the attributes ``BaseCalibration`` provides after
``solve()`` (``evaluation_metrics``, ``calib_config``, ``results_data``,
``_run_provenance`` and the stage records).
"""

from __future__ import annotations

import copy
import html
import json
import re
import types
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import scipy.stats

from conftest import load_example  # noqa: E402

_ur10 = load_example("ur10/identification.py", "ur10_identification")
CONFIG, UR10Identification, generate_ur10_data = (
    _ur10.CONFIG,
    _ur10.UR10Identification,
    _ur10.generate_ur10_data,
)
load_ur10, simulate_ur10 = _ur10.load_ur10, _ur10.simulate_ur10

from figaroh._run import html as run_html  # noqa: E402
from figaroh._run import link_table as lt  # noqa: E402
from figaroh._run.html import _uncertainty_tier  # noqa: E402
from figaroh._run.verdict import evaluate_thresholds  # noqa: E402
from figaroh.identification._confidence import base_parameter_table  # noqa: E402
from figaroh.identification.quality_report import format_quality_report  # noqa: E402
from figaroh.tools import identification_report as ir  # noqa: E402
from figaroh.tools import report as cr  # noqa: E402
from figaroh.tools.stages import record_stage  # noqa: E402

N = 2000
NOISE = 0.5  # [N·m]
SEED = 3
XSS = "<script>alert(1)</script>"
EXPORT_KEYS = [
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
]


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.attrs, self.scripts = [], [], [], []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)


def parse(doc):
    p = _Collector()
    p.feed(doc)
    p.close()
    return p


def assert_self_contained(doc):
    """No external resource: no link/img/iframe, no src/href attribute, no URL but the SVG ns."""
    p = parse(doc)
    assert not {"link", "img", "iframe", "object", "embed", "base"} & set(p.tags)
    assert not [k for k, _ in p.attrs if k in ("src", "href", "srcset", "action", "poster")]
    urls = set(re.findall(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s\"'<>)]*", doc))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert "@import" not in doc and "@font-face" not in doc
    assert not re.search(r"url\((?!#)", doc.replace('"url(#" +', ""))


def strict_load(text):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def joint_limits(ident, limit):
    return {
        f"validation_rmse:{j}": {"threshold": float(limit[k]), "comparison": "max"}
        for k, j in enumerate(ident.identif_config["active_joints"])
    }


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def robot():
    return load_ur10()


@pytest.fixture(scope="module")
def data(tmp_path_factory, robot):
    return generate_ur10_data(tmp_path_factory.mktemp("ur10"), N, NOISE, SEED, robot)


def _solve(robot, train, validation=None):
    ident = UR10Identification(robot, CONFIG, data_dir=train)
    # Edge-repeating median: the trajectories move at both ends, where the default
    # (figaroh 1.0.2) zero padding adds kinematic artefacts above the noise level.
    ident.filter_config["filter_params"]["median_padding"] = "nearest"
    if validation is not None:
        ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    ident.print_quality_report = lambda: None
    ident.solve(decimate=False, plotting=False)
    return ident


@pytest.fixture(scope="module")
def ident(robot, data):
    """Solved with the held-out trajectory (independent validation)."""
    return _solve(robot, data[0], data[1])


@pytest.fixture(scope="module")
def ident_noval(robot, data):
    """Solved without validation data (training fallback)."""
    return _solve(robot, data[0])


# ---------------------------------------------------------------------------
# verify()
# ---------------------------------------------------------------------------


def test_prediction_without_validation_or_thresholds_is_not_evaluated(ident_noval):
    v = ident_noval.verify(scope="prediction")
    assert v.status == "not_evaluated" and v.passed is False and v.scope == "prediction"
    checks = {c.name: c for c in v.checks}
    assert checks["independent_validation"].status == "not_evaluated"
    assert checks["prediction_error_policy"].status == "not_evaluated"
    assert all(checks[n].status == "pass" for n in ("finite_parameters", "finite_prediction"))
    assert v.stages == {
        "data": "pass",
        "data_provenance": "pass",
        "fit": "pass",
        "validation": "fallback",
        "physical": "not_evaluated",
        "export": "not_evaluated",
        "numerical_execution": "pass",
        "prediction": "not_evaluated",
        "solver": "not_evaluated",
    }
    joints = ident_noval.identif_config["active_joints"]
    # training evidence is named training_*: it can never satisfy a prediction limit
    assert {f"training_rmse:{j}" for j in joints} <= set(v.metrics)
    assert not [k for k in v.metrics if k.startswith("validation_rmse:")]
    v2 = ident_noval.verify(joint_limits(ident_noval, [1e6] * len(joints)), "prediction")
    assert v2.status == "not_evaluated" and v2.passed is False
    # the execution scope certifies finite numerical outputs only: it passes
    ex = ident_noval.verify(scope="execution")
    assert ex.status == "pass" and ex.passed is True and ex.stages["prediction"] == "not_evaluated"


def test_prediction_with_held_out_data_passes_and_fails_as_the_numbers_say(ident, robot):
    joints = ident.identif_config["active_joints"]
    v = ident.verify(scope="prediction")
    rmse = np.array([v.metrics[f"validation_rmse:{j}"] for j in joints])
    # independent truth: the held-out noise realisation (same seed, noise-free re-simulation)
    _, tau_noisy = simulate_ur10(robot, n_samples=N, noise_std=NOISE, seed=SEED + 1)
    _, tau_clean = simulate_ur10(robot, n_samples=N, noise_std=0.0, seed=SEED + 1)
    noise_rms = np.sqrt(np.mean((np.asarray(tau_noisy) - np.asarray(tau_clean)) ** 2, axis=0))
    np.testing.assert_allclose(rmse, noise_rms, rtol=0.05)
    val = ident.result["validation_metrics"]
    for j in joints:
        r = np.asarray(val["tau_measured_per_joint"][j]) - val["tau_identified_per_joint"][j]
        assert v.metrics[f"validation_abs_bias:{j}"] == pytest.approx(abs(r.mean()))
        assert v.metrics[f"validation_peak_error:{j}"] == pytest.approx(np.abs(r).max())

    ok = ident.verify(joint_limits(ident, rmse * (1 + 1e-9)), "prediction")
    assert ok.status == "pass" and ok.passed is True
    assert ok.stages["prediction"] == "pass" and ok.stages["validation"] == "pass"
    tight = rmse * (1 + 1e-9)
    tight[2] = rmse[2] * (1 - 1e-9)  # one joint just above its limit
    bad = ident.verify(joint_limits(ident, tight), "prediction")
    assert bad.status == "fail" and bad.passed is False
    failed = [c.name for c in bad.checks if c.status == "fail"]
    assert failed == [f"validation_rmse:{joints[2]}"]
    # a limit for only some joints is not an acceptance policy
    partial = {k: s for k, s in list(joint_limits(ident, [10.0] * 6).items())[:3]}
    assert ident.verify(partial, "prediction").status == "not_evaluated"


def test_nan_metric_fails_and_exports_strict_json(ident, tmp_path, monkeypatch):
    monkeypatch.setitem(ident.result, "rmse norm (N/m)", float("nan"))
    limits = {"rmse": {"threshold": 1.0, "comparison": "max"}}
    v = ident.verify(limits, scope="execution")
    checks = {c.name: c for c in v.checks}
    assert v.status == "fail" and v.passed is False
    assert checks["rmse"].status == "fail"
    assert checks["rmse"].reason == "Computed metric is nonfinite"
    assert checks["finite_fit_rmse"].status == "fail"
    assert v.stages["numerical_execution"] == "fail"
    path = ident.export_verification_report(
        output_dir=str(tmp_path), thresholds=limits, scope="execution"
    )
    assert Path(path) == tmp_path / "identification_verification.json"
    data = strict_load(Path(path).read_text())
    assert data["metrics"]["rmse"] is None and data["status"] == "fail"
    assert data["passed"] is False


def test_exported_verdict_round_trips(ident, tmp_path):
    limits = joint_limits(ident, [2.0] * 6)
    path = ident.export_verification_report(
        output_path=str(tmp_path / "v.json"), thresholds=limits, scope="prediction"
    )
    data = strict_load(Path(path).read_text())
    assert list(data) == EXPORT_KEYS
    v = ident.verify(limits, "prediction")
    assert data["status"] == v.status == "pass" and data["scope"] == "prediction"
    assert [c["name"] for c in data["checks"]] == [c.name for c in v.checks]
    assert data["policy"] == limits and data["selected_stage"] == "fit"
    assert [r["stage"] for r in data["stage_records"]] == ["data", "fit", "validation"]
    joints = ident.identif_config["active_joints"]
    assert data["compat"] == {
        "active_joints": joints,
        "decimate": False,
        "sample_count": N,
        "config_sha256": ident._run_provenance["config"]["sha256"],
    }
    import hashlib

    assert data["compat"]["config_sha256"] == hashlib.sha256(CONFIG.read_bytes()).hexdigest()
    series = data["series"]
    assert series["joint_names"] == joints and series["time"] == list(range(N))
    val = ident.result["validation_metrics"]
    for key, src in (
        ("nominal", "tau_nominal_per_joint"),
        ("fitted", "tau_identified_per_joint"),
        ("measured", "tau_measured_per_joint"),
    ):
        np.testing.assert_array_equal(series[key][joints[0]], val[src][joints[0]])
    assert data["metadata"]["task"] == "identification"
    assert data["insights"] == [
        i["text"]
        for i in ir._build_insights(
            ident.result,
            list(ident.std_relative),
            ident.result["base parameters names"],
            val,
        )
    ]


def test_verify_rejects_bad_input(ident, robot, data):
    with pytest.raises(ValueError, match="Verification scope"):
        ident.verify(scope="everything")
    with pytest.raises(ValueError, match="'wrist_9_joint'.*not a joint"):
        ident.verify({"validation_rmse:wrist_9_joint": {"threshold": 1.0, "comparison": "max"}})
    with pytest.raises(ValueError, match="thresholds must map metric names"):
        ident.verify(thresholds=[("rmse", 1.0)])
    fresh = UR10Identification(robot, CONFIG, data_dir=data[0])
    with pytest.raises(AttributeError, match="Run solve"):
        fresh.verify()
    with pytest.raises(AttributeError, match="Run solve"):
        ir.generate_identification_report(fresh)


def test_configured_but_unloadable_validation_fails_execution(robot, data, tmp_path):
    empty = tmp_path / "empty_validation"
    empty.mkdir()
    ident = _solve(robot, data[0], empty)  # folder exists, holds no log
    assert ident._val_available is False
    v = ident.verify(scope="execution")
    checks = {c.name: c for c in v.checks}
    assert checks["requested_validation_loaded"].status == "fail"
    assert v.status == "fail" and v.passed is False


def test_selected_estimate_is_what_verify_and_report_judge(ident, monkeypatch):
    joints = ident.identif_config["active_joints"]
    sel = types.SimpleNamespace(
        stage="reconstruction",
        requested="reconstruction",
        accepted=True,
        status="accepted",
        reason="feasible",
        values=None,
        space="base",
    )
    monkeypatch.setattr(ident, "selected", sel)
    monkeypatch.setitem(
        ident.result,
        "selected",
        {
            "stage": "reconstruction",
            "effort_rmse_fit": 0.75,
            "effort_rmse_fit_per_joint": {j: 0.7 + 0.01 * k for k, j in enumerate(joints)},
        },
    )
    v = ident.verify({"rmse": {"threshold": 0.7, "comparison": "max"}}, "execution")
    assert v.metrics["rmse"] == 0.75 and v.status == "fail"
    assert v.selected_stage == "reconstruction"
    doc = ir.generate_identification_report(ident)
    for label in ("RMSE (base fit)", "Base fit residuals", "RMSE (selected estimate)"):
        assert label in doc
    assert "RMSE per joint" in doc
    sel.accepted, sel.reason = False, "not positive definite"
    v = ident.verify(scope="execution")
    check = {c.name: c for c in v.checks}["selected_stage_accepted"]
    assert check.status == "fail" and "rejected: not positive definite" in check.reason
    assert v.selected_stage == "none"


# ---------------------------------------------------------------------------
# Identification insights
# ---------------------------------------------------------------------------


def _texts(insights):
    return [(i["level"], i["text"]) for i in insights]


def test_parameter_uncertainty_scales_by_kind():
    names = ["m_a", "m_b + 0.5*mx_c", "Ixx_a", "Ixy_a", "fv_a"]
    values = [10.0, 2.0, 0.5, 1e-7, 0.0]
    std = [1.0, 5.0, 10.0, 1e6, float("inf")]
    unc = ir.parameter_uncertainty(names, values, std)
    assert unc["kind"][:4] == ["mass [kg]", "mass [kg]", "inertia [kg·m²]", "inertia [kg·m²]"]
    np.testing.assert_allclose(unc["sigma"][:4], [0.1, 0.1, 0.05, 0.001])
    assert unc["scale"][:4] == [10.0, 10.0, 0.5, 0.5]
    np.testing.assert_allclose(unc["scaled_pct"][:4], [1.0, 1.0, 10.0, 0.2])
    assert unc["relative_pct"][:4] == [1.0, 5.0, 10.0, None]  # 1e-7 ≈ 0 against 0.5
    assert unc["relative_pct"][4] is None and unc["scaled_pct"][4] == float("inf")
    # the report's table: g = σ / max(|value|, 0.1 × the largest |value| of the kind)
    table = ir._fallback_table({"base parameters values": values}, std, names)
    doc = run_html._parameter_table_section(table)
    tiers = re.findall(r'<tr class="tier-(\w+)" data-zero="\w+"><td>([^<]*)</td>', doc)
    assert ("good", "Ixy_a") in tiers  # σ/|value| = 10⁶ %, but 2 % of 0.1 × 0.5 kg·m²
    assert tiers[-1] == ("unknown", "fv_a")  # 0 ± ∞: σ undefined (inf·0), listed last
    assert "σ / scale [%]" in doc and "σ / |value| [%]" in doc


def test_link_table_from_pinocchio_inertias():
    """Independent truth: p10 built by Pinocchio from a mass, CoM and CoM inertia."""
    rot = pin.utils.rotate("z", 0.3) @ pin.utils.rotate("x", 0.2)
    I_c = rot @ np.diag([0.01, 0.02, 0.025]) @ rot.T
    good = pin.Inertia(3.0, np.array([0.1, -0.05, 0.2]), I_c).toDynamicParameters()
    props = lt.link_properties(good)
    assert props.mass == pytest.approx(3.0)
    np.testing.assert_allclose(props.com, [0.1, -0.05, 0.2], atol=1e-12)
    np.testing.assert_allclose(props.principal_moments, [0.01, 0.02, 0.025], atol=1e-12)
    assert props.pseudo_min_eig > 0
    bad = np.array(good)
    bad[0] = -1.0  # a negative mass is shown, not raised
    assert lt.link_properties(bad).pseudo_min_eig < 0
    keys = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
    selected = {
        "stage": "physical_fit",
        "status": "accepted",
        "reason": "ok",
        "names": [f"{k}_{j}" for j in ("j1", "j2") for k in keys] + ["fv_j1"],
        "values": [*good, *bad, 8.0],
        "feasibility": {},
    }
    doc = lt.link_table_section(selected, ["j1", "j2"], {"j1": 2.9})
    rows = re.findall(r'<tr data-link="(\w+)"><td>\w+</td><td>([^<]*)</td><td>([^<]*)</td>', doc)
    assert rows == [("j1", "3", "2.9"), ("j2", "-1", "—")]
    assert doc.count('tier-good">feasible') == 1 and doc.count("infeasible") == 1
    assert "No per-link estimate" in lt.link_table_section(None, ["j1"])


def test_identification_insight_rules():
    healthy = ir._build_insights(
        {"condition number": 100.0},
        [10.0, 30.0],
        ["a", "b"],
        {"validation_source": "validation_data", "correlation": 0.95, "improvement_pct": 60.0},
    )
    assert _texts(healthy) == [("info", "No issues detected — fit looks healthy.")]
    # a product of inertia ≈ 0 with a huge relative σ but a tiny absolute one is fine
    zero = ir._build_insights(
        {"condition number": 10.0, "base parameters values": [2.0, 1e-6]},
        [1.0, 77873.0],
        ["Ixx_link1", "Ixy_link1 + 0.5*m_link2"],
        {"validation_source": "validation_data", "correlation": 0.99, "improvement_pct": 90.0},
    )
    assert _texts(zero) == [("info", "No issues detected — fit looks healthy.")]
    out = ir._build_insights({"condition number": 1000.0}, [], [], None)
    assert out[0] == {
        "level": "info",
        "text": "Condition number 1000.0 is moderately conditioned — usable, but not optimal.",
    }
    assert "No held-out validation data provided" in out[1]["text"]
    out = ir._build_insights({"condition number": 1000.5}, [], [], {})
    assert out[0]["level"] == "warn" and out[0]["text"].startswith(
        "Condition number 1000.5 is ill-conditioned — consider a richer excitation"
    )
    names = [f"p{i}" for i in range(8)]
    out = ir._build_insights(
        {"condition number": float("nan"), "base parameters values": [1.0] * 8},
        [31.0, 30.0, -45.0, float("nan"), 50, 60, 70, 80],
        names,
        {
            "validation_source": "identification_data_fallback",
            "correlation": 0.5,
            "improvement_pct": 49.9,
        },
    )
    assert _texts(out) == [
        (
            "warn",
            "6 base parameter(s) are poorly identified (σ above 30 % of max(|value|, scale of "
            "their kind)): p7, p6, p5, p4, p2, p0.",
        ),
        (
            "warn",
            "No separate validation data provided — validation metrics fall back to the "
            "identification data itself and do NOT test generalization to new trajectories.",
        ),
        (
            "warn",
            "Validation torque correlation is only 0.500 — the identified model may not "
            "generalize well beyond the excitation trajectory used for fitting.",
        ),
        (
            "warn",
            "Validation torque RMSE improved by only 49.9% over the nominal/CAD parameters — "
            "check model assumptions or excitation trajectory coverage.",
        ),
    ]
    out = ir._build_insights(
        {"base parameters values": [1.0] * 7}, [99.0] * 7, [f"q{i}" for i in range(7)], {}
    )
    assert out[0]["text"].endswith("q0, q1, q2, q3, q4, q5, ....")
    worse = ir._build_insights(
        {"condition number": 10.0},
        [],
        [],
        {"validation_source": "validation_data", "correlation": 0.99, "improvement_pct": -2.4},
    )
    assert _texts(worse) == [
        (
            "warn",
            "Validation torque RMSE is 2.4% worse than the nominal/CAD parameters — check "
            "model assumptions or excitation trajectory coverage.",
        )
    ]
    out = ir._build_insights(
        {
            "physical consistency": {"status": "projected"},
            "reconstruction": {"status": "ok"},
        },
        [],
        [],
        {},
    )
    assert ("info", "Physical-consistency projection status: projected.") in _texts(out)
    assert ("warn", "Full-parameter reconstruction status: ok.") in _texts(out)
    out = ir._build_insights({"physical consistency": {"status": "error"}}, [], [], {})
    assert ("warn", "Physical-consistency projection status: error.") in _texts(out)
    out = ir._build_insights({"physical consistency": {"status": "feasible"}}, [], [], {})
    assert _texts(out) == [("info", "No issues detected — fit looks healthy.")]


# ---------------------------------------------------------------------------
# Identification HTML report
# ---------------------------------------------------------------------------


def test_identification_report_sections_and_numbers(ident, tmp_path):
    path = ident.export_html_report(output_dir=str(tmp_path / "nested" / "out"))
    doc = Path(path).read_text(encoding="utf-8")
    assert path.endswith("identification_report.html")
    assert_self_contained(doc)
    p = parse(doc)
    text = html.unescape(" ".join(p.text))
    assert p.tags.count("script") == 1  # the chart script, nothing else
    for heading in (
        "Provenance",
        "Summary",
        "Insights",
        "Per-joint torque residuals",
        "Measured vs identified effort over time (training fit)",
        "Residuals over time and their distribution",
        "Validation",
        "Validation trajectory over time",
        "Base-parameter uncertainty",
        "Physical consistency / reconstruction",
    ):
        assert f"<h2>{heading}</h2>" in doc
    assert "ur10 — Identification Quality Report" in text
    assert ident._run_provenance["run_id"] in text
    assert f"{ident.rms_error:.4f} N·m (training set, all fitted joints)" in text
    assert f"{ident.result['condition number']:.1f} (well-conditioned)" in text
    assert "data ok · fit ok · validation ok" in text
    # uncertainty: one row per base parameter, in the order and with the grade of the
    # table the terminal report prints (one grading rule)
    table = base_parameter_table(ident)
    rows = re.findall(r'<tr class="tier-(\w+)" data-zero="(\w+)"><td>([^<]*)</td>', doc)
    assert [(t, n) for t, _, n in rows] == [(r.grade.tier, r.name) for r in table.ranked()]
    assert [z == "true" for (z,) in [(z,) for _, z, _ in rows]] == [
        bool(r.grade.zero) for r in table.ranked()
    ]
    terminal = format_quality_report(ident)
    for r in table.ranked()[:5]:
        assert f"{r.grade.label}" in terminal
    # σ: the residual-error σ behind std_relative (unrounded), and its 95 % interval
    std = np.asarray(ident.std_relative)
    k = int(np.argmax(std))
    row = table.rows[k]
    assert row.sigma == pytest.approx(std[k] / 100 * abs(ident.phi_base[k]), rel=1e-3)
    t = scipy.stats.t.ppf(0.975, table.dof)
    assert row.ci_high - row.value == pytest.approx(t * row.sigma, rel=1e-12)
    assert f"[{row.ci_low:.4g}, {row.ci_high:.4g}]" in text
    assert "95 % CI" in text and f"Student t, {int(table.dof)} residual degrees of freedom" in text
    # validation numbers and the per-joint residual table
    val = ident.result["validation_metrics"]
    assert f"{val['rmse_identified']:.4g}" in text and f"{val['rmse_nominal']:.4g}" in text
    improvement = (val["rmse_nominal"] - val["rmse_identified"]) / val["rmse_nominal"] * 100
    assert f"↓ {improvement:.1f}%" in text
    per_joint = ident._compute_per_joint_stats()
    assert f"{per_joint['rmse'][0]:.4g}" in text
    # small multiples over time: every active joint, every sample, timestamps [s]
    panels = {
        k: json.loads(v)
        for k, v in re.findall(r'id="([\w-]+)" data-multi="([^"]*)"', doc)
        for k, v in [(k, html.unescape(v))]
    }
    joints = ident.identif_config["active_joints"]
    assert set(panels) == {"fit-panel", "residual-panel", "validation-panel"}
    for panel in panels.values():
        assert [j["name"] for j in panel["joints"]] == joints and panel["xLabel"] == "t [s]"
        assert [j["unit"] for j in panel["joints"]] == ["N·m"] * len(joints)
    step = -(-N // 1500)  # shown subsampled to at most 1500 points per chart
    np.testing.assert_allclose(
        panels["fit-panel"]["time"], np.ravel(ident.processed_data["timestamps"])[::step]
    )
    np.testing.assert_allclose(
        panels["validation-panel"]["time"],
        np.ravel(ident._val_processed_data["timestamps"])[::step],
    )
    measured = np.reshape(ident.result["torque processed"], (len(joints), -1))[:, ::step]
    estimated = np.reshape(ident.result["torque estimated"], (len(joints), -1))[:, ::step]
    fit1 = {s["role"]: s["y"] for s in panels["fit-panel"]["joints"][1]["series"]}
    np.testing.assert_allclose(fit1["measured"], measured[1])
    np.testing.assert_allclose(fit1["identified"], estimated[1])
    res1 = panels["residual-panel"]["joints"][1]["series"][0]["y"]
    np.testing.assert_allclose(res1, measured[1] - estimated[1], atol=1e-12)
    val1 = {s["role"]: s["y"] for s in panels["validation-panel"]["joints"][1]["series"]}
    for role, key in (("measured", "tau_measured_per_joint"), ("nominal", "tau_nominal_per_joint")):
        np.testing.assert_allclose(val1[role], np.ravel(val[key][joints[1]])[::step])
    # one residual histogram per joint, of every sample
    counts = re.findall(r'<svg class="histogram"[^>]*data-count="(\d+)"', doc)
    assert counts == [str(N)] * len(joints)
    # the returned document is what was written
    assert ir.generate_identification_report(ident).count("<section") == doc.count("<section")


def _verdict_rows(doc):
    panel = doc[
        doc.index('<div class="verdict-panel"') : doc.index("</div>", doc.index("verdict-panel"))
    ]
    return panel, re.findall(
        r'<tr class="check status-(\w+)"><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>', panel
    )


def test_identification_report_verdict_panel(ident):
    """Default: the report shows the run's verdict, here verify()'s (empty policy)."""
    default = ident.verify()  # the run's verdict from now on: not evaluated
    panel, rows = _verdict_rows(ir.generate_identification_report(ident))
    assert 'data-status="not_evaluated"' in panel and "NOT EVALUATED" in panel
    assert "No acceptance limits were given" in panel
    assert [(s, html.unescape(n)) for s, n, _, _ in rows] == [
        (c.status, c.name) for c in default.checks
    ]
    # a given verdict is shown as is: status, value, limit and the failed check
    joints = ident.identif_config["active_joints"]
    rmse = np.array([default.metrics[f"validation_rmse:{j}"] for j in joints])
    tight = rmse * (1 + 1e-9)
    tight[2] = rmse[2] * 0.5
    bad = ident.verify(joint_limits(ident, tight), "prediction")
    panel, rows = _verdict_rows(ir.generate_identification_report(ident, verdict=bad))
    assert 'data-status="fail"' in panel and "FAIL" in panel
    failed = [r for r in rows if r[0] == "fail"]
    assert [html.unescape(r[1]) for r in failed] == [f"validation_rmse:{joints[2]}"]
    assert failed[0][2] == f"{rmse[2]:.4g}"
    assert html.unescape(failed[0][3]) == f"≤ {tight[2]:.4g}"


def test_identification_report_fallback_banner(ident_noval):
    doc = ir.generate_identification_report(ident_noval, title="Fallback run")
    assert "<title>Fallback run</title>" in doc
    assert "do NOT test generalization" in doc and "banner-warn" in doc
    assert "identification data (fallback, not independent)" in doc


def test_identification_report_escapes_joint_and_parameter_names(ident, monkeypatch, tmp_path):
    joints = list(ident.identif_config["active_joints"])
    evil = [XSS] + joints[1:]
    val = copy.deepcopy(ident.result["validation_metrics"])
    for key in ("tau_nominal_per_joint", "tau_identified_per_joint", "tau_measured_per_joint"):
        val[key][XSS] = val[key].pop(joints[0])
    val["per_joint"][XSS] = val["per_joint"].pop(joints[0])
    val["joint_names"] = evil
    names = list(ident.result["base parameters names"])
    monkeypatch.setitem(ident.result, "validation_metrics", val)
    monkeypatch.setitem(ident.result, "base parameters names", [XSS] + names[1:])
    monkeypatch.setitem(ident.identif_config, "active_joints", evil)
    monkeypatch.setattr(ident, "_run_provenance", {**ident._run_provenance, "run_id": XSS})
    doc = ir.generate_identification_report(
        ident, output_path=str(tmp_path / "x.html"), title=f"T {XSS}"
    )
    assert XSS not in doc and "alert(1)</script>" not in doc
    p = parse(doc)
    assert p.tags.count("script") == 1 and "".join(p.scripts).count("alert") == 0
    text = " ".join(p.text)
    # text in: title, run id, per-joint table, validation table, parameter table
    assert text.count(XSS) >= 5
    payload = json.loads(dict(p.attrs)["data-multi"])
    assert payload["joints"][0]["name"] == XSS
    assert f'data-joint-name="{html.escape(XSS)}"' in doc
    verdict = ident.verify(scope="execution")
    assert verdict.series["joint_names"][0] == XSS  # data, never markup


def test_recipe_a_new_report_section(ident, monkeypatch, tmp_path):
    """docs/architecture.md, "A new report section": one line in the page template and
    one entry in the template's data make a new section, placed and escaped."""
    import shutil

    from figaroh._run import templating

    for template in templating._TEMPLATES.glob("*.html.j2"):
        shutil.copy(template, tmp_path / template.name)
    page = tmp_path / "identification_report.html.j2"
    last = '{{ c.section("links", "Identified links", links) }}\n'
    added = '{{ c.section("notes", "Operator notes", c.kv_table(operator_notes)) }}\n'
    assert page.read_text("utf-8").count(last) == 1
    page.write_text(page.read_text("utf-8").replace(last, last + added), "utf-8")
    monkeypatch.setattr(templating, "_TEMPLATES", tmp_path)
    templating.environment.cache_clear()
    try:
        context = ir._report_context
        monkeypatch.setattr(
            ir,
            "_report_context",
            lambda *a, **k: {**context(*a, **k), "operator_notes": [("Checked by", XSS)]},
        )
        doc = ir.generate_identification_report(ident)
    finally:
        templating.environment.cache_clear()
    assert XSS not in doc and html.escape(XSS, quote=False) in doc
    assert doc.index('<section id="links">') < doc.index('<section id="notes">')
    notes = doc[doc.index('<section id="notes">') :]
    notes = notes[: notes.index("</section>")]
    assert "<h2>Operator notes</h2>" in notes and "<th>Checked by</th>" in notes
    assert parse(notes).tags.count("script") == 0


# ---------------------------------------------------------------------------
# Calibration report (fixture with BaseCalibration's post-solve attributes)
# ---------------------------------------------------------------------------


class FakeCalibration:
    """The attributes ``generate_calibration_report`` reads after ``BaseCalibration.solve()``."""

    def __repr__(self):
        return "FakeCalibration()"


def make_calibration_fixture(
    dof_name="X (mm)",
    param_name="d_px_base",
    validation_source="validation_data",
    n_markers=2,
    seed=0,
):
    """A solved-calibration look-alike: 30 samples, 6 parameters, 3 position DOFs, 2 markers."""
    rng = np.random.default_rng(seed)
    n_samples, n_val = 30, 12
    dof_names = [dof_name, "Y (mm)", "Z (mm)"]
    names = [param_name, "d_py_base", "d_pz_base", "d_phix_base", "d_phiy_base", "d_phiz_base"]
    values = np.array([0.012, -0.004, 0.0021, 0.003, -0.0015, 0.02])
    stdev = np.array([0.0006, 0.0008, 0.0011, 0.00005, 0.0009, 0.0002])
    residuals_mm = rng.normal(0.0, 0.4, size=(n_samples * n_markers, 3))
    mean = residuals_mm.mean(axis=0)
    nominal_err = rng.normal(0.0, 3.0, size=(n_val * n_markers, 3))
    fitted_err = rng.normal(0.0, 0.5, size=(n_val * n_markers, 3))
    nom_pt = [float(np.sqrt(np.mean(np.sum(nominal_err[k::n_markers] ** 2, 1)))) for k in range(2)]
    cal_pt = [float(np.sqrt(np.mean(np.sum(fitted_err[k::n_markers] ** 2, 1)))) for k in range(2)]
    pos_nom = float(np.sqrt(np.mean(np.sum(nominal_err**2, 1))))
    pos_cal = float(np.sqrt(np.mean(np.sum(fitted_err**2, 1))))
    evaluation = {
        "rmse": 0.00071,
        "mae": 0.00062,
        "max_error": 0.0019,
        "mean_sample_rms": 0.00062,
        "std_sample_rms": 0.0002,
        "param_values": values.tolist(),
        "param_stdev": stdev.tolist(),
        "param_stddev_percentage": (np.abs(stdev / values)).tolist(),  # a ratio
        "residual_dof": n_samples * n_markers * 3 - 6,
        "n_outliers": 4,
        "outlier_percentage": 4 / n_samples * 100,
        "excluded_samples": [3, 7, 11, 21],
        "excluded_sample_errors": [0.031, 0.025, 0.022, 0.1],
        "outlier_threshold": 0.02,
        "optimization_success": True,
        "cost": 1.2e-5,
        "n_iterations": 0,
        "n_function_evals": 14,
        "per_dof_stats": {
            "dof_names": dof_names,
            "mean": mean.tolist(),
            "std": residuals_mm.std(axis=0).tolist(),
            "rmse": np.sqrt((residuals_mm**2).mean(axis=0)).tolist(),
            "max_abs": np.abs(residuals_mm).max(axis=0).tolist(),
            "r_squared": [0.9991, 0.9987, 0.9979],
            "overall": {
                "pos_rmse_mm": 0.69,
                "orient_rmse_deg": float("nan"),
                "pos_mae_mm": 0.6,
                "orient_mae_deg": float("nan"),
                "pos_max_mm": 1.9,
                "orient_max_deg": float("nan"),
            },
        },
        "condition_number": 412.3,
        "condition_label": "moderately conditioned",
        "correlated_pairs": [
            {"param_i": param_name, "param_j": "d_phiz_base", "correlation": -0.97}
        ],
    }
    validation = {
        "n_val_samples": n_val,
        "validation_source": validation_source,
        "dof_names": dof_names,
        "error_nominal_per_dof": {d: nominal_err[:, k].tolist() for k, d in enumerate(dof_names)},
        "error_fitted_per_dof": {d: fitted_err[:, k].tolist() for k, d in enumerate(dof_names)},
        "n_markers": n_markers,
        "pos_rmse_nominal_per_point_mm": nom_pt[:n_markers],
        "pos_rmse_calibrated_per_point_mm": cal_pt[:n_markers],
        "pos_rmse_nominal_mm": pos_nom,
        "pos_rmse_calibrated_mm": pos_cal,
        "pos_max_nominal_mm": float(np.abs(nominal_err).max()),
        "pos_max_calibrated_mm": float(np.abs(fitted_err).max()),
        "pos_improvement_pct": (pos_nom - pos_cal) / pos_nom * 100,
        "pos_rmse_nominal_fitted_frames_mm": 1.25,
        "orient_rmse_nominal_deg": float("nan"),
        "orient_rmse_calibrated_deg": float("nan"),
        "orient_max_nominal_deg": float("nan"),
        "orient_max_calibrated_deg": float("nan"),
        "orient_improvement_pct": float("nan"),
    }
    calib = FakeCalibration()
    calib.evaluation_metrics = evaluation
    calib.calib_config = {"NbSample": n_samples, "param_name": names}
    calib.results_data = {**evaluation, "validation_metrics": validation}
    calib._run_provenance = {
        "run_id": "ur10_calibration_20250101T000000Z_nogit",
        "task": "calibration",
        "asset": {"asset_id": "ur10-sn42", "is_specified": True, "site": "lab"},
        "model": {"robot_name": "ur10"},
        "config": {"path": "config/ur10.yaml", "sha256": "ab" * 32},
        "software": {"python": "3.11", "git_commit": "unknown"},
        "data": {"files": []},
        "timestamps": {"run_finished": "2025-01-01T00:00:00+00:00"},
    }
    record_stage(calib, "data", "ok", "legacy dict")
    record_stage(calib, "fit", "ok", "lm", {"rmse": (0.00071, "m")})
    record_stage(
        calib, "validation", "ok" if validation_source == "validation_data" else "fallback"
    )
    return calib


def test_calibration_report_sections_and_numbers(tmp_path):
    calib = make_calibration_fixture()
    path = tmp_path / "sub" / "calibration_report.html"
    doc = cr.generate_calibration_report(calib, output_path=str(path))
    assert path.read_text(encoding="utf-8") == doc
    assert_self_contained(doc)
    p = parse(doc)
    text = html.unescape(" ".join(p.text))
    assert "ur10-sn42 (ur10) — Calibration Quality Report" in text
    for heading in (
        "Provenance",
        "Summary",
        "Insights",
        "Per-DOF residuals",
        "Validation",
        "Residual per pose",
        "Residual per marker axis",
        "Parameter uncertainty",
        "Parameter correlation",
    ):
        assert f"<h2>{heading}</h2>" in doc
    ev = calib.evaluation_metrics
    assert "4 / 30 (13.3%), threshold 20.0 mm" in text and "#21 (100.0 mm)" in text
    assert "412.3 (moderately conditioned)" in text and "✓ converged" in text
    assert "Per-DOF residuals (training set, n=26)" in text
    assert f"{ev['per_dof_stats']['rmse'][1]:.4g}" in text
    assert "not measured" in text  # orientation group of a position-only setup
    val = calib.results_data["validation_metrics"]
    assert "Position RMSE, point 2 [mm]" in text and "Orientation RMSE" not in text
    assert f"↓ {val['pos_improvement_pct']:.1f}%" in text
    frames = (1.25 - val["pos_rmse_calibrated_mm"]) / 1.25 * 100
    assert (
        f"fitted frames [mm] 1.25 {val['pos_rmse_calibrated_mm']:.4g} ↓ {frames:.1f}%"
        in " ".join(text.split())
    )
    # uncertainty: g = σ / max(|value|, S), S = max(0.1 × the largest |value| of the kind,
    # 10 mm for lengths d_p*, 10 mrad for angles d_phi*); rows by decreasing g
    rows = re.findall(r'<tr class="tier-(\w+)" data-zero="\w+"><td>([^<]*)</td>', doc)
    values, stdev = np.abs(ev["param_values"]), np.asarray(ev["param_stdev"])
    scale = np.r_[[max(0.1 * values[:3].max(), 0.01)] * 3, [max(0.1 * values[3:].max(), 0.01)] * 3]
    g = 100 * stdev / np.maximum(values, scale)
    order = np.argsort(-g)
    names = calib.calib_config["param_name"]
    assert [r[1] for r in rows[: len(names)]] == [names[i] for i in order]
    assert [r[0] for r in rows[: len(names)]] == [_uncertainty_tier(g[i]) for i in order]
    assert [r[0] for r in rows[: len(names)]] == ["fair", "good", "good", "good", "good", "good"]
    t = scipy.stats.t.ppf(0.975, ev["residual_dof"])
    worst = order[0]
    low, high = (
        ev["param_values"][worst] - t * stdev[worst],
        ev["param_values"][worst] + t * stdev[worst],
    )
    assert f"[{low:.4g}, {high:.4g}]" in text and f"{g[worst]:.3g}" in text
    assert "Grades: 5 good, 1 fair, 0 poor" in text
    assert "−0.970" in text or "-0.970" in text
    pose, axes = [json.loads(v) for k, v in p.attrs if k == "data-multi"]
    assert [j["name"] for j in pose["joints"]] == [
        "marker 1 position ‖Δp‖",
        "marker 2 position ‖Δp‖",
    ]
    assert [j["name"] for j in axes["joints"]] == [
        f"marker {k} {a}" for k in (1, 2) for a in ("X", "Y", "Z")
    ]
    fitted_y = val["error_fitted_per_dof"]["Y (mm)"]
    assert axes["joints"][4]["series"][0]["y"] == pytest.approx(fitted_y[12:])  # marker 2
    with pytest.raises(AttributeError, match="Run solve"):
        cr.generate_calibration_report(types.SimpleNamespace(evaluation_metrics=None))


def test_calibration_report_verdict_panel():
    calib = make_calibration_fixture()
    panel, _ = _verdict_rows(cr.generate_calibration_report(calib))
    assert 'data-status="unavailable"' in panel and "has no verify()" in panel
    verdict = evaluate_thresholds(
        {"rmse_mm": 0.8, "condition_number": 40.0},
        {
            "rmse_mm": {"threshold": 0.5, "comparison": "max"},
            "condition_number": {"threshold": 100.0, "comparison": "max"},
        },
    )
    panel, rows = _verdict_rows(cr.generate_calibration_report(calib, verdict=verdict))
    assert 'data-status="fail"' in panel
    assert [(st, n, v, html.unescape(lim)) for st, n, v, lim in rows] == [
        ("fail", "rmse_mm", "0.8", "≤ 0.5"),
        ("pass", "condition_number", "40", "≤ 100"),
    ]


def test_calibration_report_escapes_names():
    calib = make_calibration_fixture(dof_name=XSS, param_name=XSS)
    calib._run_provenance["asset"]["asset_id"] = XSS
    doc = cr.generate_calibration_report(calib)
    assert XSS not in doc and "alert(1)</script>" not in doc
    p = parse(doc)
    assert p.tags.count("script") == 1
    text = " ".join(p.text)
    # title (2x), per-DOF table, uncertainty table, correlation table, provenance
    assert text.count(XSS) >= 5
    axes = [json.loads(v) for k, v in p.attrs if k == "data-multi"][1]
    assert axes["joints"][0]["name"] == f"marker 1 {XSS}"


def test_calibration_insight_rules():
    calib = make_calibration_fixture(validation_source="calibration_data_fallback")
    ev = dict(calib.evaluation_metrics)
    names = calib.calib_config["param_name"]
    val = dict(calib.results_data["validation_metrics"])
    out = cr._build_insights(ev, 30, names, val)
    levels_texts = _texts(out)
    assert levels_texts[0] == (
        "info",
        "Condition number 412.3 is moderately conditioned — usable, but not optimal.",
    )
    assert levels_texts[1] == (
        "warn",
        "4 outliers removed (13.3% of 30 samples) — check data quality if this seems high.",
    )
    # 100·|σ/x| is 52 % and 60 % for d_pz_base and d_phiy_base, but their values are below
    # the unit scale of their kind (10 mm, 10 mrad): σ/S is 11 % and 9 %, no parameter is poor
    assert levels_texts[2][1].startswith("1 parameter pair(s) are strongly correlated")
    assert levels_texts[3:] == [
        (
            "warn",
            "No separate validation data provided — validation metrics fall back to the "
            "calibration data itself and do NOT test generalization to new configurations.",
        )
    ]
    ev.update(
        optimization_success=False,
        condition_label="ill-conditioned",
        condition_number=5e4,
        n_outliers=4,
        outlier_percentage=13.3333,
        correlated_pairs=[],
        param_stddev_percentage=[0.01] * 6,
    )
    poor = dict(ev, param_stdev=[0.0006, 0.0008, 0.004, 0.00005, 0.005, 0.0002])
    assert (
        "warn",
        "2 parameter(s) are poorly identified (σ above 30 % of max(|value|, scale of their "
        "kind)): d_phiy_base, d_pz_base.",
    ) in (_texts(cr._build_insights(poor, 30, names, val)))
    val.update(validation_source="validation_data", pos_improvement_pct=12.34)
    assert _texts(cr._build_insights(ev, 30, names, val)) == [
        ("warn", "Optimization did not report success — treat results with caution."),
        (
            "warn",
            "Condition number 50000.0 is ill-conditioned — consider a richer excitation "
            "trajectory or fewer simultaneously identified parameters.",
        ),
        (
            "warn",
            "4 outliers removed (13.3% of 30 samples) — check data quality if this seems high.",
        ),
        (
            "warn",
            "Validation position RMSE improved by only 12.3% over nominal — check model "
            "assumptions or configuration.",
        ),
    ]
    worse = dict(val, pos_improvement_pct=-2.4)
    assert _texts(cr._build_insights(ev, 30, names, worse))[-1] == (
        "warn",
        "Validation position RMSE is 2.4% worse than nominal — check model assumptions or "
        "configuration.",
    )
    ev.update(
        optimization_success=True,
        condition_label="well-conditioned",
        outlier_percentage=10.0,
    )
    val.update(pos_improvement_pct=float("nan"))
    assert _texts(cr._build_insights(ev, 30, names, val)) == [
        ("info", "No issues detected — fit looks healthy.")
    ]
    out = cr._build_insights(ev, 30, names, None)
    assert out[0]["text"].startswith("No held-out validation data provided")
