"""Bad inputs of the fleet drift analysis and its report.

A NaN/infinite value, a bad σ, an unreadable session time, a repeated point, a
bad threshold ``k`` or false-discovery rate ``q`` (or both given), a bad
window (``last`` not a positive integer, ``since`` not a time) and unknown
parameter or robot names raise
:class:`figaroh.fleet.drift.DriftInputError` (``FigarohError`` and
``ValueError``) naming the field and the fix. A run index holding a
non-finite estimate still gives a report (the estimate is left out with a
warning); an empty history and σ None are fine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from figaroh.errors import FigarohError
from figaroh.fleet.drift import DriftInputError, analyse_drift, drift_report
from figaroh.fleet.drift_html import write_drift_html
from figaroh.fleet.record import ParameterEstimate, RunRecord
from figaroh.fleet.run_index import HistoryPoint, RunIndex

NAMED = (DriftInputError, FigarohError, ValueError)


def _point(value=1.0, sigma=0.1, run="r0-s0", time="2026-03-01T08:00:00+00:00", robot="r0"):
    return HistoryPoint(robot, run, "s0", time, "fs1", value, sigma)


def _history(**bad):
    return [_point(run="r0-base", time="2026-02-01T08:00:00+00:00"), _point(**bad)]


def _analyse(k=3.0, min_history=1, min_fleet=2, q=None, **bad):
    def call(tmp_path: Path):
        return analyse_drift(
            _history(**bad), k=k, q=q, min_history=min_history, min_fleet=min_fleet
        )

    return call


def _index(tmp_path: Path, value=1.0) -> RunIndex:
    index = RunIndex(tmp_path / "index.sqlite")
    for r, v in enumerate([1.0, 1.0, 1.0, value]):
        index.add(
            RunRecord(
                run_id=f"run{r}",
                job_id=f"run{r}",
                robot_id=f"r{r}",
                task="identification",
                session="s0",
                session_time="2026-03-01T08:00:00+00:00",
                started="2026-03-01T08:00:00+00:00",
                finished="2026-03-01T08:00:00+00:00",
                config_sha256="0" * 64,
                data_sha256={},
                verdict_status="pass",
                passed=True,
                metrics={},
                parameters=(ParameterEstimate("fs1", v, 0.1),),
            )
        )
    return index


def _report(**kwargs):
    def call(tmp_path: Path):
        with _index(tmp_path) as index:
            return drift_report(index, **kwargs)

    return call


def _nan_in_index(tmp_path: Path):
    with _index(tmp_path, value=float("nan")) as index:
        report = drift_report(index)
    assert report.flagged_robots == () and len(report.parameter("fs1").robots) == 3
    return None


def _empty_history(tmp_path: Path):
    report = analyse_drift([])
    write_drift_html(report, tmp_path / "drift.html")
    assert (tmp_path / "drift.html").stat().st_size > 1000
    return None


def _sigma_none(tmp_path: Path):
    base = _point(sigma=None, run="r0-base", time="2026-02-01T08:00:00+00:00")
    report = analyse_drift([base, _point(sigma=None, value=5.0)])
    assert report.flags == ()  # no σ, one previous run: nothing says how much matters
    # threshold rule: the missing σ counts as 0, the earlier run's σ = 0.1 is the scale
    assert analyse_drift(_history(sigma=None, value=5.0), k=3.0).flagged_robots == ("r0",)
    # default rule: a robot with a run without σ is judged on the scatter of its values
    # (pooled two-sample t), which two runs do not give
    assert analyse_drift(_history(sigma=None, value=5.0)).flags == ()
    return None


def _integer_values(tmp_path: Path):
    report = analyse_drift(_history(value=30, sigma=1))
    assert report.flagged_robots == ("r0",)
    return None


CASES: list[BadInput] = [
    BadInput("nan_value", _analyse(value=float("nan")), NAMED, r"value of parameter 'fs1'.*finite"),
    BadInput("inf_value", _analyse(value=float("inf")), NAMED, r"r0-s0.*finite values"),
    BadInput("string_value", _analyse(value="1.2"), NAMED, r"value of .* must be a number"),
    BadInput("negative_sigma", _analyse(sigma=-0.1), NAMED, r"sigma of .*>= 0, or None"),
    BadInput("nan_sigma", _analyse(sigma=float("nan")), NAMED, r"sigma of .*finite"),
    BadInput("bad_session_time", _analyse(time="yesterday"), NAMED, r"session_time.*ISO-8601"),
    BadInput("duplicate_point", _analyse(run="r0-base"), NAMED, r"given twice.*one point per"),
    BadInput("k_zero", _analyse(k=0), NAMED, r"k must be a finite number > 0"),
    BadInput("k_nan", _analyse(k=float("nan")), NAMED, r"k must be .*k=3\.0"),
    BadInput("k_text", _analyse(k="three"), NAMED, r"k must be a finite number"),
    BadInput("q_one", _analyse(k=None, q=1.0), NAMED, r"q must be .* in \(0, 1\)"),
    BadInput("q_text", _analyse(k=None, q="five percent"), NAMED, r"q must be .*q=0\.05"),
    BadInput("k_and_q", _analyse(k=3.0, q=0.05), NAMED, r"give k .* or q .* not both"),
    BadInput("min_history_zero", _analyse(min_history=0), NAMED, r"min_history must be .*>= 1"),
    BadInput("min_fleet_float", _analyse(min_fleet=1.5), NAMED, r"min_fleet must be an integer"),
    BadInput("unknown_parameter", _report(names=["fs9"]), NAMED, r"parameter 'fs9'.*known"),
    BadInput("unknown_robot", _report(robots=["r9"]), NAMED, r"robot 'r9' not in the run index"),
    BadInput("names_as_one_string", _report(names="fs1"), NAMED, r"lists of strings"),
    BadInput("report_k_negative", _report(k=-1), NAMED, r"k must be a finite number > 0"),
    BadInput("report_last_zero", _report(last=0), NAMED, r"last must be .*>= 1"),
    BadInput("report_last_float", _report(last=2.5), NAMED, r"last must be a number of sessions"),
    BadInput("report_since_text", _report(since="yesterday"), NAMED, r"since 'yesterday'.*ISO"),
    BadInput("nan_estimate_in_index", _nan_in_index, None, r"non-finite estimate.*run3"),
    BadInput("empty_history", _empty_history, already_good=True),
    BadInput("sigma_none", _sigma_none, already_good=True),
    BadInput("integer_values", _integer_values, already_good=True),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)
