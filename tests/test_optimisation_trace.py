"""The optimisation trace of trajectory design, posture selection and calibration.

Independent truths: the values cyipopt itself passes to the ``intermediate``
callback and the objective it returns (captured below the design, at the
adapter cyipopt calls); scipy's ``least_squares`` result (``cost``, ``nfev``,
``x``) and ``½‖r‖²`` recomputed from the objective; the designs and fits
computed with the recording switched off (``==``, not approximately).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import least_squares

from conftest import ROOT, load_example
from figaroh._run import optimisation_trace as ot
from figaroh._run.optimisation_trace import (
    OptimisationTrace,
    StageOutcome,
    TraceEntry,
    cost_recorded,
    recording_costs,
)
from figaroh.calibration import _objective
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.optimal import base_optimal_calibration as boc
from figaroh.optimal import base_optimal_trajectory as bot
from figaroh.tools import robotipopt as ri
from figaroh.tools.robot import Robot

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]
#: A design that runs in seconds: 3 waypoints, 20 Hz, 3 IPOPT iterations.
TINY = {"n_wps": 3, "freq": 20, "max_iterations": 3, "ipopt_print_level": 0}
#: A seed whose first random initial guess is feasible (no redraws: fast).
SEED = 30


# ---------------------------------------------------------------------------
# the record
# ---------------------------------------------------------------------------
def test_outcome_status_is_checked_and_trace_reports_non_converged_stages():
    with pytest.raises(ValueError, match="converged, max_iterations, fallback, failed"):
        StageOutcome("s", "ok")
    trace = (
        OptimisationTrace()
        .with_entries(TraceEntry("a", 0, 2.0), TraceEntry("b", 0, 1.0))
        .with_outcome(StageOutcome("a", "converged"))
    )
    assert not trace.fell_back and trace.not_converged() == ()
    late = trace.with_outcome(StageOutcome("b", "max_iterations", "limit"))
    assert late.fell_back and [o.stage for o in late.not_converged()] == ["b"]
    assert late.stages() == ["a", "b"] and trace.outcomes == (StageOutcome("a", "converged"),)


def _residuals(x):
    """Rosenbrock as least squares: r = (10(x1 − x0²), 1 − x0), minimum 0 at (1, 1)."""
    return np.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])


def test_cost_recording_returns_the_residuals_and_leaves_the_fit_unchanged():
    assert cost_recorded(_residuals) is _residuals  # no scope: the function itself
    plain = least_squares(_residuals, [-1.2, 1.0], method="lm")
    seen = []

    def spy(x):
        r = _residuals(x)
        seen.append(r)
        return r

    with recording_costs() as costs:
        wrapped = cost_recorded(spy)
        recorded = least_squares(wrapped, [-1.2, 1.0], method="lm")
    # the fit is the same, bit for bit
    assert np.array_equal(recorded.x, plain.x) and recorded.cost == plain.cost
    assert recorded.nfev == plain.nfev
    # one cost per evaluation, ½‖r‖² of what the function returned
    assert [c for c, _ in costs] == [0.5 * float(r @ r) for r in seen]
    # the probes are MINPACK's finite-difference columns: the rest are its nfev points
    steps = [c for c, probe in costs if not probe]
    assert len(steps) == plain.nfev and plain.cost in steps
    assert sum(probe for _, probe in costs) == len(costs) - plain.nfev
    assert ot._COST_SINK.get() is None  # the scope is closed


# ---------------------------------------------------------------------------
# IPOPT (a tiny UR10 design)
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ur10_geom(ur10_urdf):
    pytest.importorskip("cyipopt")
    return Robot(str(ur10_urdf))


def _design(robot, cls=bot.BaseOptimalTrajectory):
    opt = cls(robot, UR10_JOINTS, str(CONFIG), rng=SEED)
    opt.trajectory_config.update(TINY)
    opt.initialize()
    opt.solve(1)
    return opt


class _Watched(bot.BaseOptimalTrajectory):
    """A design whose progress hooks do something (as the CLI's does)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: list = []
        self.ended: list = []

    def on_iteration(self, entry):
        self.seen.append(entry)

    def on_stage_end(self, outcome):
        self.ended.append(outcome)


def test_ipopt_trace_is_what_cyipopt_reports_and_changes_nothing(ur10_geom, monkeypatch):
    reported, finals = [], []
    adapter_intermediate = ri._CyipoptAdapter.intermediate
    solution_results = ri.RobotIPOPTSolver._solution_results

    def capture(self, *args):  # what cyipopt passes, before the problem sees it
        reported.append(args)
        return adapter_intermediate(self, *args)

    def final(self, x_opt, info, solve_time):  # what cyipopt returns
        finals.append(float(info["obj_val"]))
        return solution_results(self, x_opt, info, solve_time)

    monkeypatch.setattr(ri._CyipoptAdapter, "intermediate", capture)
    monkeypatch.setattr(ri.RobotIPOPTSolver, "_solution_results", final)
    watched = _design(ur10_geom, _Watched)
    trace = watched.optimisation_trace
    entries = trace.of_stage("ipopt:segment 1")
    assert [(e.iteration, e.objective, e.constraint_violation) for e in entries] == [
        (a[1], a[2], a[3]) for a in reported
    ]
    assert len(entries) == TINY["max_iterations"] + 1  # iteration 0 is the start
    assert entries[-1].objective == finals[-1]
    assert watched.seen == list(entries)
    assert trace.outcomes == tuple(watched.ended)
    (outcome,) = trace.outcomes
    assert outcome.status == "max_iterations" and "limit 3 iterations" in outcome.message
    # the same design with the recording switched off (the base callback only)
    monkeypatch.setattr(
        bot.BaseTrajectoryIPOPTProblem, "intermediate", ri.BaseOptimizationProblem.intermediate
    )
    plain = _design(ur10_geom)
    assert plain.optimisation_trace.entries == ()
    for key in ("waypoints", "P_F", "V_F", "A_F", "condition_number"):
        assert all(
            np.array_equal(a, b)
            for a, b in zip(watched.results[key], plain.results[key], strict=True)
        ), key
    assert watched.final_condition_number == plain.final_condition_number


def test_segment_outcomes_from_the_solve_results():
    def outcome(**data):
        return bot._segment_outcome(data, 50)

    assert outcome(status=0, iter_data={"converged": True})[0] == "converged"
    status, message = outcome(status=-1, status_name="Maximum_Iterations_Exceeded", iter_data={})
    assert status == "max_iterations" and "limit 50 iterations" in message
    status, message = outcome(selected_from="initial guess", status=-1, iter_data={})
    assert status == "fallback" and "kept the initial guess" in message
    assert outcome(selected_from="iterate 4", status=0, iter_data={"converged": True})[0] == (
        "fallback"
    )
    assert outcome(selected_from="final of run 1", status=0, iter_data={"converged": True})[0] == (
        "converged"
    )
    assert outcome(status=3, iter_data={"converged": False})[0] == "failed"
    assert outcome()[0] == "converged"  # a custom problem that reports no status


# ---------------------------------------------------------------------------
# SOCP (posture selection)
# ---------------------------------------------------------------------------
class _WatchedPostures(boc.BaseOptimalCalibration):
    """A posture design whose progress hook records what it is told."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: list = []

    def on_iteration(self, entry):
        self.seen.append(entry)


def _postures(robot, n=30, cls=boc.BaseOptimalCalibration):
    pytest.importorskip("picos")
    pytest.importorskip("cvxopt")
    from figaroh.cli.design_commands import random_candidates

    opt = cls(robot, str(CONFIG))
    names, values = random_candidates(opt.model, opt.calib_config["actJoint_idx"], n, 0)
    opt.set_candidate_configurations(names, values)
    opt.calculate_regressor()
    return opt


def test_socp_iterations_are_recorded_and_the_weights_unchanged(ur10_robot, monkeypatch, capsys):
    opt = _postures(ur10_robot, cls=_WatchedPostures)
    opt.calculate_optimal_configurations()
    assert capsys.readouterr().out == ""  # CVXOPT's table is read, not printed
    trace = opt.optimisation_trace
    entries = trace.of_stage("socp")
    rows = opt.socp.iterations
    assert len(entries) == len(rows) > 5
    assert [e.objective for e in entries] == [r["pcost"] for r in rows]
    assert entries[0].iteration == 0 and entries[-1].extra["gap"] < 1e-6
    assert opt.seen == list(entries)
    assert trace.outcomes == (StageOutcome("socp", "converged", "CVXOPT status optimal"),)
    # without the iteration table (picos' default options, as figaroh 1.0.2)
    original = boc.SOCPOptimizer._attempt

    def silent(self, scale, options):
        self._X_attempt = self._X / scale
        self.add_constraints()
        self.set_objective()
        solution = self.problem.solve(solver="cvxopt", **options)
        raw = np.asarray(self.w_var.value, dtype=float).ravel()
        return raw, str(solution.claimedStatus)

    monkeypatch.setattr(boc.SOCPOptimizer, "_attempt", silent)
    plain = _postures(ur10_robot)
    plain.calculate_optimal_configurations()
    assert plain.w_list == opt.w_list and plain.chosen_indices == opt.chosen_indices

    # the 1.0.2 formulation fails: the accepted rescaled attempt is a fallback
    def first_fails(self, scale, options):
        if self._attempt_label == boc.SOCP_FIRST_ATTEMPT:
            raise ArithmeticError("singular KKT matrix")
        return original(self, scale, options)

    monkeypatch.setattr(boc.SOCPOptimizer, "_attempt", first_fails)
    fallback = _postures(ur10_robot)
    fallback.calculate_optimal_configurations()
    (outcome,) = fallback.optimisation_trace.outcomes
    assert outcome.status == "fallback" and "scaled, chol" in outcome.message
    assert "singular KKT matrix" in outcome.message


# ---------------------------------------------------------------------------
# calibration (outlier passes and their least-squares evaluations)
# ---------------------------------------------------------------------------
def _calibration(robot, train):
    calib = BaseCalibration(robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.set_data_file(train)
    calib.initialize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.solve(outlier_threshold=1.2e-3, enable_logging=False, verbose=False)
    return calib


def test_calibration_trace_records_each_pass_and_changes_nothing(ur10_robot, tmp_path, monkeypatch):
    ex = load_example("ur10/calibration.py", "ur10_calibration_example_trace")
    train, _, _ = ex.simulate_ur10_calibration(
        tmp_path, robot=ur10_robot, n_train=40, n_test=10, pos_noise=5e-4, rot_noise=1e-3, seed=3
    )
    calib = _calibration(ur10_robot, train)
    trace = calib.optimisation_trace
    passes = trace.of_stage("outliers")
    assert len(passes) >= 2 and [p.iteration for p in passes] == list(range(1, len(passes) + 1))
    last = passes[-1]
    assert last.objective == calib.LM_result.cost and last.extra["nfev"] == calib.LM_result.nfev
    assert last.extra["excluded"] == len(calib.outlier_indices) and last.extra["new_outliers"] == 0
    assert passes[0].extra["excluded"] == 0
    assert passes[0].extra["new_outliers"] == len(calib.outlier_indices)
    assert [o.stage for o in trace.outcomes][-1] == "outliers"
    assert {o.status for o in trace.outcomes} == {"converged"} and not trace.fell_back
    # per evaluation: the first is the start, ½‖r‖² of the objective there
    first = trace.of_stage("lm:pass 1")[0]
    x0 = calib._objective_model.initial_vector()
    saved, calib._excluded_rows = calib._excluded_rows, np.zeros(0, dtype=int)
    r0 = calib._objective(x0)
    calib._excluded_rows = saved
    assert first.iteration == 0 and first.objective == 0.5 * float(r0 @ r0)
    steps = trace.of_stage(f"lm:pass {len(passes)}")  # LM's evaluations, probes left out
    assert [e.iteration for e in steps] == list(range(calib.LM_result.nfev))
    assert calib.LM_result.cost in {e.objective for e in steps}
    # the same calibration without recording
    monkeypatch.setattr(_objective, "cost_recorded", lambda fun: fun)
    plain = _calibration(ur10_robot, train)
    assert all(e.stage == "outliers" for e in plain.optimisation_trace.entries)
    assert np.array_equal(plain.LM_result.x, calib.LM_result.x)
    assert plain.LM_result.cost == calib.LM_result.cost
    assert plain.outlier_indices == calib.outlier_indices
