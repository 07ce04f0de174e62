"""The optimisation trace of a run: what the optimiser did, iteration by iteration.

Every iterative solve a run performs — an IPOPT trajectory design, the
Levenberg–Marquardt fits of a calibration and its outlier passes — appends
its iterations here, so the report can show the cost going down (or not) and
the terminal can show progress. Recording never changes a number: it only
reads the values the optimiser already computed.

A trace is a tuple of :class:`TraceEntry`; :class:`OptimisationTrace` holds
the entries of one run, grouped by ``stage`` (``"ipopt:segment 1"``,
``"lm:pass 1"``…), with the outcome of each stage.

Least-squares costs. ``scipy.optimize.least_squares`` has no per-iteration
callback for ``method="lm"`` (MINPACK), so a least-squares fit is traced by
its residual evaluations: inside a :func:`recording_costs` scope, an
objective passed through :func:`cost_recorded` appends the cost
``½‖r‖²`` of every evaluation (the finite-difference probes of the Jacobian
included, and marked) and returns ``r`` itself, so the solver sees the same
numbers.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterator, List, Mapping, Tuple

import numpy as np

__all__ = [
    "PROBE_STEP",
    "STATUSES",
    "OptimisationTrace",
    "StageOutcome",
    "TraceEntry",
    "cost_recorded",
    "recording_costs",
]

#: The statuses a :class:`StageOutcome` may carry.
STATUSES = ("converged", "max_iterations", "fallback", "failed")


@dataclass(frozen=True)
class TraceEntry:
    """One iteration of an optimiser.

    Attributes:
        stage: Which solve it belongs to (e.g. ``"ipopt:segment 1"``, ``"lm:pass 2"``).
        iteration: Iteration number within the stage (0 = the initial point).
        objective: Objective value: IPOPT's ``obj_value``; for least squares
            the cost ``½‖r‖²`` [the residuals' unit squared].
        constraint_violation: IPOPT's primal infeasibility ``inf_pr``
            (None for an unconstrained solve).
        extra: Other per-iteration values (e.g. ``{"step": …}``), JSON-able.
    """

    stage: str
    iteration: int
    objective: float
    constraint_violation: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """Strict-JSON-able dict (floats as given; the caller checks finiteness)."""
        return {
            "stage": self.stage,
            "iteration": int(self.iteration),
            "objective": float(self.objective),
            "constraint_violation": (
                None if self.constraint_violation is None else float(self.constraint_violation)
            ),
            **({"extra": dict(self.extra)} if self.extra else {}),
        }


@dataclass(frozen=True)
class StageOutcome:
    """How one solve of the trace ended.

    Attributes:
        stage: The stage name (as in its entries).
        status: ``"converged"``, ``"max_iterations"``, ``"fallback"`` (the
            initial guess or another fallback was kept) or ``"failed"``.
        message: The optimiser's own message (IPOPT status, scipy message).
    """

    stage: str
    status: str
    message: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(
                f"StageOutcome.status must be one of {', '.join(STATUSES)}, got {self.status!r}"
            )

    @property
    def converged(self) -> bool:
        """True when the solve ended normally (``status == "converged"``)."""
        return self.status == "converged"


@dataclass(frozen=True)
class OptimisationTrace:
    """The iterations and outcomes of every solve of a run (immutable; add returns a copy).

    Attributes:
        entries: Every recorded iteration, in order.
        outcomes: The outcome of each finished stage, in order.
    """

    entries: Tuple[TraceEntry, ...] = ()
    outcomes: Tuple[StageOutcome, ...] = ()

    def with_entries(self, *entries: TraceEntry) -> OptimisationTrace:
        """A copy with ``entries`` appended."""
        return replace(self, entries=self.entries + tuple(entries))

    def with_outcome(self, outcome: StageOutcome) -> OptimisationTrace:
        """A copy with ``outcome`` appended."""
        return replace(self, outcomes=self.outcomes + (outcome,))

    def stages(self) -> List[str]:
        """Stage names in first-seen order."""
        seen: Dict[str, None] = {}
        for e in self.entries:
            seen.setdefault(e.stage, None)
        for o in self.outcomes:
            seen.setdefault(o.stage, None)
        return list(seen)

    def of_stage(self, stage: str) -> Tuple[TraceEntry, ...]:
        """The entries of one stage."""
        return tuple(e for e in self.entries if e.stage == stage)

    @property
    def fell_back(self) -> bool:
        """True when any stage ended in ``fallback``, ``max_iterations`` or ``failed``."""
        return any(o.status != "converged" for o in self.outcomes)

    def not_converged(self) -> Tuple[StageOutcome, ...]:
        """The outcomes other than ``converged``, in order."""
        return tuple(o for o in self.outcomes if o.status != "converged")

    def to_dict(self) -> Dict[str, Any]:
        """Strict-JSON-able dict ``{"entries": [...], "outcomes": [...]}``."""
        return {
            "entries": [e.to_dict() for e in self.entries],
            "outcomes": [
                {"stage": o.stage, "status": o.status, "message": o.message} for o in self.outcomes
            ],
        }


#: Largest relative change of one coordinate read as a finite-difference probe.
PROBE_STEP = 1e-6

#: The record list of the innermost open :func:`recording_costs` scope (None: not recording).
_COST_SINK: ContextVar[List[Tuple[float, bool]] | None] = ContextVar(
    "figaroh_cost_sink", default=None
)


@contextmanager
def recording_costs() -> Iterator[List[Tuple[float, bool]]]:
    """Scope in which :func:`cost_recorded` objectives append their costs to the yielded list.

    Yields:
        The list receiving ``(½‖r‖², probe)`` of each residual evaluation, in
        call order; ``probe`` is True for a finite-difference probe of the
        Jacobian (see :func:`cost_recorded`).
    """
    costs: List[Tuple[float, bool]] = []
    token = _COST_SINK.set(costs)
    try:
        yield costs
    finally:
        _COST_SINK.reset(token)


def cost_recorded(fun: Callable[..., Any]) -> Callable[..., Any]:
    """``fun`` itself outside a :func:`recording_costs` scope; inside, a recording wrapper.

    The wrapper calls ``fun``, appends ``(½‖r‖² = ½ Σ r_i², probe)`` of its
    residual vector ``r`` (cost in the residuals' unit squared) to the
    scope's list and returns ``r`` unchanged (the same object), so the
    solver's numbers do not change. ``probe`` marks a finite-difference
    probe: a point that differs from the last non-probe point in exactly one
    coordinate, by at most :data:`PROBE_STEP` relative (``|Δx_j| ≤ PROBE_STEP
    · max(1, |x_j|)``; MINPACK's step is about 1.5e-8 relative).
    """
    sink = _COST_SINK.get()
    if sink is None:
        return fun
    last: List[np.ndarray] = []  # the last non-probe point

    def recorded(x: Any, *args: Any, **kwargs: Any) -> Any:
        r = fun(x, *args, **kwargs)
        flat = np.asarray(r, dtype=float).ravel()
        point = np.array(x, dtype=float, copy=True).ravel()
        probe = False
        if last and last[0].shape == point.shape:
            moved = np.flatnonzero(point != last[0])
            probe = moved.size == 1 and bool(
                abs(point[moved[0]] - last[0][moved[0]])
                <= PROBE_STEP * max(1.0, abs(last[0][moved[0]]))
            )
        if not probe:
            last[:] = [point]
        sink.append((0.5 * float(np.dot(flat, flat)), probe))
        return r

    return recorded
