"""What the reports say besides the parameter table: units, the solver's outcome, the
optimisation trace, the git state and the samples at the ends of a log.

Truths: the recorded trace entries, git's own answer for a broken checkout, the
residuals of a simulated UR10 log identified with figaroh 1.0.2's zero-padded
median filter and with the edge-repeating one, and the report fixtures of
:mod:`test_identification_report`.
"""

from __future__ import annotations

import contextlib
import html
import io
import re
import shutil
import subprocess
import types

import numpy as np
import pytest

from conftest import load_example
from figaroh._run import git as run_git
from figaroh._run.optimisation_trace import OptimisationTrace, StageOutcome, TraceEntry
from figaroh._run.provenance import git_text
from figaroh._run.trace_report import trace_section
from figaroh._run.trace_summary import stage_summaries, trace_lines
from figaroh.identification._edge_effects import EDGE_FACTOR, edge_effect
from figaroh.identification.quality_report import format_quality_report
from figaroh.tools import report as cr
from figaroh.tools.identification_report import generate_identification_report
from test_identification_report import make_calibration_fixture, parse

_ur10 = load_example("ur10/identification.py", "ur10_identification")


def _trace() -> OptimisationTrace:
    trace = OptimisationTrace()
    costs = [0.5, 0.02, 1.1e-3, 2.0e-4, 1.97e-4]
    trace = trace.with_entries(*(TraceEntry("lm:pass 1", k, c) for k, c in enumerate(costs)))
    trace = trace.with_outcome(StageOutcome("lm:pass 1", "converged", "`ftol` satisfied"))
    trace = trace.with_entries(
        TraceEntry("lm:pass 2", 0, 1.9e-4), TraceEntry("lm:pass 2", 1, 1.9e-4)
    )
    trace = trace.with_outcome(StageOutcome("lm:pass 2", "converged"))
    ipopt = [TraceEntry("ipopt:segment 1", k, 10.0 - k, 10.0**-k) for k in range(4)]
    trace = trace.with_entries(*ipopt).with_outcome(
        StageOutcome("ipopt:segment 1", "max_iterations", "Maximum_Iterations_Exceeded")
    )
    return trace


# ---------------------------------------------------------------------------
# optimisation trace
# ---------------------------------------------------------------------------


def test_trace_summary_per_solve():
    summaries = {s["stage"]: s for s in stage_summaries(_trace())}
    lm = summaries["lm:pass 1"]
    assert (lm["iterations"], lm["first"], lm["last"], lm["best"]) == (4, 0.5, 1.97e-4, 1.97e-4)
    assert lm["violation"] is None and lm["objective_name"] == "cost ½‖r‖²"
    ip = summaries["ipopt:segment 1"]
    assert ip["violation"] == pytest.approx(1e-3) and ip["status"] == "max_iterations"
    lines = trace_lines(_trace())
    assert lines[0] == "Optimisation trace (3 solve(s)):"
    assert lines[1] == (
        "  lm:pass 1: cost ½‖r‖² 0.5 → 0.000197 in 4 iteration(s), converged (`ftol` satisfied)"
    )
    assert "(no decrease: started at the optimum)" in lines[2]
    assert lines[3] == (
        "  ipopt:segment 1: objective 10 → 7 in 3 iteration(s), constraint violation 0.001, "
        "stopped at the iteration limit (Maximum_Iterations_Exceeded)"
    )
    assert trace_lines(None) == [] and trace_lines(OptimisationTrace()) == []


def test_trace_section_table_and_charts():
    doc = trace_section(_trace())
    p = parse(doc)
    text = html.unescape(" ".join(p.text))
    assert [r for r in re.findall(r'data-stage="([^"]+)"', doc)] == [
        "lm:pass 1",
        "lm:pass 2",
        "ipopt:segment 1",
    ]
    assert "stopped at the iteration limit" in text
    import json

    panel = json.loads(dict(p.attrs)["data-multi"])
    names = [j["name"] for j in panel["joints"]]
    assert names == [
        "lm:pass 1 — log₁₀ cost ½‖r‖²",
        "lm:pass 2 — log₁₀ cost ½‖r‖²",
        "ipopt:segment 1 — log₁₀ objective",
        "ipopt:segment 1 — log₁₀ constraint violation",
    ]
    assert panel["time"] == [0, 1, 2, 3, 4] and panel["xLabel"] == "iteration"
    np.testing.assert_allclose(
        panel["joints"][0]["series"][0]["y"], np.log10([0.5, 0.02, 1.1e-3, 2e-4, 1.97e-4])
    )
    assert panel["joints"][1]["series"][0]["y"][2:] == [None, None, None]  # padded, not drawn
    assert trace_section(None) is None


def test_calibration_report_shows_the_trace_only_when_recorded():
    calib = make_calibration_fixture()
    doc = cr.generate_calibration_report(calib)
    assert 'id="trace"' not in doc
    calib.optimisation_trace = _trace()
    calib.LM_result = types.SimpleNamespace(message="`ftol` termination condition is satisfied.")
    doc = cr.generate_calibration_report(calib)
    assert '<section id="trace">' in doc and "<h2>Optimisation trace</h2>" in doc
    text = html.unescape(" ".join(parse(doc).text))
    # the convergence row says what scipy reported, and the iterations the trace recorded
    assert (
        "✓ converged — `ftol` termination condition is satisfied; 14 residual evaluations "
        "(finite-difference Jacobian evaluations not counted; 5 LM iterations over 2 pass(es); "
        "the last pass started at the optimum: no decrease); final cost ½‖r‖² = 1.2e-05"
    ) in text
    assert "iterations 0" not in text


# ---------------------------------------------------------------------------
# units and wording
# ---------------------------------------------------------------------------


def test_calibration_errors_are_reported_in_mm_and_deg_separately():
    calib = make_calibration_fixture()
    ev = calib.evaluation_metrics
    assert cr.calibration_rmse_text(ev) == "position RMSE 0.69 mm"
    ev6 = dict(ev, per_dof_stats={"overall": {"pos_rmse_mm": 2.953, "orient_rmse_deg": 0.3331}})
    assert cr.calibration_rmse_text(ev6) == "position RMSE 2.953 mm, orientation RMSE 0.3331 deg"
    assert cr.calibration_rmse_text({"rmse": 4.173e-4}) == (
        "RMSE 0.0004173 (per-point norm: metres, mixed with radians when orientation is measured)"
    )
    text = html.unescape(" ".join(parse(cr.generate_calibration_report(calib)).text))
    assert "Position error [mm] RMSE 0.69 mm, MAE 0.6 mm, max 1.9 mm" in text
    assert "Orientation error [deg] not measured" in text
    assert "0.00071" not in text  # the mixed m/rad norm is not quoted


def test_convergence_without_trace_says_scipy_reports_no_iteration_count():
    ev = {"optimization_success": True, "n_function_evals": 4, "cost": 1e-3, "n_iterations": 0}
    text = cr.convergence_text(ev, types.SimpleNamespace(message="`xtol` termination."))
    assert text == (
        "✓ converged — `xtol` termination; 4 residual evaluations (finite-difference Jacobian "
        "evaluations not counted; scipy reports no iteration count); final cost ½‖r‖² = 0.001"
    )
    ev.update(optimization_success=False, jacobian="analytic")
    text = cr.convergence_text(ev, types.SimpleNamespace(message="", njev=3))
    assert text.startswith("✗ did not report success — 4 residual evaluations (3 Jacobian")


# ---------------------------------------------------------------------------
# provenance: the git state in words
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("software", "text"),
    [
        ({"git_commit": "0123456789abcdef0123", "git_dirty": False}, "0123456789ab"),
        (
            {"git_commit": "0123456789abcdef0123", "git_dirty": True},
            "0123456789ab (uncommitted changes)",
        ),
        ({"git_commit": f"unavailable: {run_git.NOT_A_CHECKOUT}"}, run_git.NOT_A_CHECKOUT),
        (
            {
                "git_commit": "unavailable: fatal: not a git repository (or any of the parent "
                "directories): .git"
            },
            run_git.NOT_A_CHECKOUT,
        ),
        (
            {"git_commit": "unavailable: git executable not found"},
            "unknown (git executable not found)",
        ),
        ({"git_commit": "unknown"}, "unknown"),
        ({}, "unknown"),
    ],
)
def test_git_state_in_words(software, text):
    assert git_text(software) == text


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_checkout_whose_git_is_broken_is_not_a_git_checkout(tmp_path, monkeypatch):
    """git's own 'fatal: not a git repository' becomes the plain reason."""
    top = tmp_path / "top"
    (top / "src" / "figaroh").mkdir(parents=True)
    (top / "pyproject.toml").write_text('[project]\nname = "figaroh"\n')
    (top / ".git").write_text(f"gitdir: {tmp_path / 'moved-away'}\n")  # a stale linked worktree
    raw = subprocess.run(
        ["git", "-C", str(top), "status"], capture_output=True, text=True, check=False
    )
    assert "not a git repository" in raw.stderr  # what git itself says
    monkeypatch.setattr(run_git, "_PACKAGE_DIR", top / "src" / "figaroh")
    state = run_git.worktree_state()
    assert (state.commit, state.dirty, state.reason) == (None, None, run_git.NOT_A_CHECKOUT)
    run_git._cached_head.cache_clear()
    try:
        assert run_git.git_head() == (False, run_git.NOT_A_CHECKOUT)
    finally:
        run_git._cached_head.cache_clear()


# ---------------------------------------------------------------------------
# the residual spike at the ends of a log
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ur10_log(tmp_path_factory):
    robot = _ur10.load_ur10()
    train, _ = _ur10.generate_ur10_data(tmp_path_factory.mktemp("edges"), 800, 0.5, 0, robot)
    return robot, train


def _identify(robot, train, padding=None):
    ident = _ur10.UR10Identification(robot, _ur10.CONFIG, data_dir=train)
    if padding is not None:
        ident.filter_config["filter_params"]["median_padding"] = padding
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False, save_results=False, verbose=False)
    return ident


def test_zero_padded_median_filter_spikes_the_ends_and_the_report_says_why(ur10_log):
    robot, train = ur10_log
    ident = _identify(robot, train)  # figaroh 1.0.2's filter: zero-padded median
    edges = edge_effect(ident)
    assert edges is not None and edges.zero_padding and edges.med_fil == 5
    assert edges.n_edge == 5 // 2 + 100 // 10  # half the median window + one cut-off period
    joint, peak, inner, k = edges.worst()
    residual = np.abs(ident.tau_noised - ident.tau_identif).reshape(6, -1)
    j = list(ident.fit_joints()).index(joint)
    assert peak == pytest.approx(residual[j, k]) and (k < edges.n_edge or k >= 800 - edges.n_edge)
    assert peak > EDGE_FACTOR * inner and peak == residual[j].max()
    report = format_quality_report(ident)
    assert (
        f"Edge samples: the largest residuals sit in the first/last {edges.n_edge} samples"
        in report
    )
    assert "median_padding: nearest removes it" in report
    # the HTML report marks the edge samples and leaves them out of the histograms
    doc = generate_identification_report(ident)
    assert "edge samples (filter edge effect)" in doc
    counts = re.findall(r'<svg class="histogram"[^>]*data-count="(\d+)"', doc)
    assert counts[:6] == [str(800 - 2 * edges.n_edge)] * 6
    # the cause: repeating the edge samples instead removes the spike
    nearest = _identify(robot, train, "nearest")
    assert edge_effect(nearest) is None
    assert np.abs(nearest.tau_noised - nearest.tau_identif).max() < peak / 3


def test_units_on_the_identification_terminal_report(ur10_log):
    robot, train = ur10_log
    ident = _identify(robot, train, "nearest")
    report = format_quality_report(ident)
    assert f"RMSE:         {ident.rms_error:.4f} N·m (training set, all fitted joints)" in report
    assert re.search(r"shoulder_pan_joint +(-?\d+\.\d{4} +){4}N·m", report)
    assert "95 % confidence interval value ± t·σ" in report
    assert re.search(r"RMSE nominal: +\d+\.\d{4} N·m +RMSE identified: +\d+\.\d{4} N·m", report)
    assert re.search(r"Improvement: +\d+\.\d % \(lower RMSE than nominal\)", report)
