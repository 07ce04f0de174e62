"""The optimisation trace of a run as an HTML report section.

:func:`trace_section` renders the solves of a run's ``optimisation_trace``
(see :mod:`figaroh._run.trace_summary`): a table (solve, iterations, first /
last / best objective, last constraint violation, outcome) and one
interactive chart per solve of the objective per iteration — the cost
``½‖r‖²`` of each Levenberg–Marquardt pass of a calibration, the objective of
an IPOPT design — plus one of the constraint violation ``inf_pr`` of a
constrained solve, drawn by the report's chart script. A run without a trace
gets no section.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence

from figaroh._run.charts import _multi_panel_section
from figaroh._run.html import _component
from figaroh._run.trace_summary import _finite, stage_summaries, status_text, task_trace

__all__ = ["task_trace", "trace_section"]


def _log_series(values: Sequence[float | None]) -> tuple[List[float | None], bool]:
    """``log₁₀`` of the values when every finite one is positive (a decade-spanning cost)."""
    finite = [v for v in values if v is not None]
    if finite and all(v > 0 for v in finite):
        return [None if v is None else math.log10(v) for v in values], True
    return list(values), False


def _chart(name: str, label: str, values: List[float | None], n: int) -> Dict[str, Any]:
    ys, logged = _log_series(values)
    ys = ys + [None] * (n - len(ys))
    return {
        "name": f"{name} — {'log₁₀ ' if logged else ''}{label}",
        "unit": "",
        "series": [{"label": ("log₁₀ " if logged else "") + label, "role": "calibrated", "y": ys}],
    }


def trace_section(trace: Any) -> str | None:
    """HTML of the trace section, or None without a trace.

    A table (solve, iterations, first / last / best objective, last constraint
    violation, outcome) and one chart per solve of the objective per
    iteration — on a ``log₁₀`` axis when every value is positive — plus one of
    the constraint violation for a constrained solve.
    """
    if trace is None or not getattr(trace, "entries", None):
        return None
    summaries = stage_summaries(trace)
    charts = []
    for s in summaries:
        entries = trace.of_stage(s["stage"])
        charts.append((s["stage"], s["objective_name"], [_finite(e.objective) for e in entries]))
        if s["violation"] is not None:
            viol = [_finite(e.constraint_violation) for e in entries]
            charts.append((s["stage"], "constraint violation", viol))
    n = max(len(values) for _, _, values in charts)
    joints = [_chart(stage, label, values, n) for stage, label, values in charts]
    rows = [{**s, "outcome": status_text(s["status"])} for s in summaries]
    hint = (
        "Objective of every iteration of each solve (the initial point is iteration 0); "
        "a cost spanning decades is drawn as log₁₀."
    )
    panel = _multi_panel_section("trace-panel", list(range(n)), "iteration", joints, hint)
    return _component("trace_table", rows) + panel
