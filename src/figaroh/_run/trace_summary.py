"""The optimisation trace of a run in words: one terminal line per solve.

A run whose optimiser recorded its iterations carries them as the attribute
``optimisation_trace`` (:class:`~figaroh._run.optimisation_trace.OptimisationTrace`):
the cost ``½‖r‖²`` of every Levenberg–Marquardt iteration of each outlier pass
of a calibration, the objective and the constraint violation (``inf_pr``) of
every IPOPT iteration of a trajectory design. :func:`stage_summaries` reduces
each solve to its first, last and best objective, its iteration count and its
outcome; :func:`trace_lines` prints them (``lm:pass 1: cost ½‖r‖² 0.0123 →
0.000198 in 7 iteration(s), converged``). The HTML section is
:mod:`figaroh._run.trace_report`. A run without a trace gets no line.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List

__all__ = ["MAX_TERMINAL_STAGES", "stage_summaries", "status_text", "task_trace", "trace_lines"]

#: Most solves listed by :func:`trace_lines` (the rest counted).
MAX_TERMINAL_STAGES = 6

_STATUS_TEXT = {
    "converged": "converged",
    "max_iterations": "stopped at the iteration limit",
    "fallback": "fell back (the optimum was not used)",
    "failed": "failed",
}


def task_trace(task: Any) -> Any:
    """The ``optimisation_trace`` of a run when it holds at least one iteration, else None."""
    trace = getattr(task, "optimisation_trace", None)
    if trace is None or not getattr(trace, "entries", None):
        return None
    return trace


def _finite(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _objective_name(stage: str) -> str:
    """``"cost ½‖r‖²"`` for a least-squares solve, ``"objective"`` otherwise."""
    return "cost ½‖r‖²" if stage.lower().startswith("lm") else "objective"


def stage_summaries(trace: Any) -> List[Dict[str, Any]]:
    """One record per solve of the trace, in order.

    Returns:
        ``{"stage", "objective_name", "iterations" (last iteration number),
        "first", "last", "best" (objective), "violation" (last constraint
        violation or None), "status", "message"}`` per stage.
    """
    outcomes = {o.stage: o for o in getattr(trace, "outcomes", ())}
    out = []
    for stage in trace.stages():
        entries = trace.of_stage(stage)
        objectives = [_finite(e.objective) for e in entries]
        finite = [v for v in objectives if v is not None]
        violations = [e.constraint_violation for e in entries if e.constraint_violation is not None]
        outcome = outcomes.get(stage)
        out.append(
            {
                "stage": stage,
                "objective_name": _objective_name(stage),
                "iterations": max((int(e.iteration) for e in entries), default=0),
                "first": objectives[0] if objectives else None,
                "last": objectives[-1] if objectives else None,
                "best": min(finite) if finite else None,
                "violation": _finite(violations[-1]) if violations else None,
                "status": outcome.status if outcome is not None else "",
                "message": outcome.message if outcome is not None else "",
            }
        )
    return out


def status_text(status: str) -> str:
    """The outcome of a solve in words (``max_iterations`` → ``stopped at the iteration limit``)."""
    return _STATUS_TEXT.get(status, status or "outcome not recorded")


def _num(value: Any) -> str:
    f = _finite(value)
    return "n/a" if f is None else f"{f:.4g}"


def trace_lines(trace: Any) -> List[str]:
    """Terminal summary: one line per solve (at most :data:`MAX_TERMINAL_STAGES`).

    Args:
        trace: The run's trace, or None.

    Returns:
        ``["Optimisation trace (N solves):", "  lm:pass 1: cost ½‖r‖² 0.0123 →
        0.000198 in 7 iterations, converged", …]``; ``[]`` without a trace.
    """
    if trace is None or not getattr(trace, "entries", None):
        return []
    summaries = stage_summaries(trace)
    lines = [f"Optimisation trace ({len(summaries)} solve(s)):"]
    for s in summaries[:MAX_TERMINAL_STAGES]:
        text = (
            f"  {s['stage']}: {s['objective_name']} {_num(s['first'])} → {_num(s['last'])} "
            f"in {s['iterations']} iteration(s)"
        )
        if s["violation"] is not None:
            text += f", constraint violation {_num(s['violation'])}"
        if s["first"] is not None and s["first"] == s["last"] and s["iterations"] > 0:
            text += " (no decrease: started at the optimum)"
        text += f", {status_text(s['status'])}"
        if s["message"]:
            text += f" ({s['message']})"
        lines.append(text)
    if len(summaries) > MAX_TERMINAL_STAGES:
        lines.append(f"  ... {len(summaries) - MAX_TERMINAL_STAGES} more solve(s)")
    return lines
