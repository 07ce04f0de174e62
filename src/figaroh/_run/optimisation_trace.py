"""The optimisation trace of a run: what the optimiser did, iteration by iteration.

Every iterative solve a run performs — an IPOPT trajectory design, the
Levenberg–Marquardt fits of a calibration and its outlier passes — appends
its iterations here, so the report can show the cost going down (or not) and
the terminal can show progress. Recording never changes a number: it only
reads the values the optimiser already computed.

A trace is a tuple of :class:`TraceEntry`; :class:`OptimisationTrace` holds
the entries of one run, grouped by ``stage`` (``"ipopt:segment 1"``,
``"lm:pass 1"``…), with the outcome of each stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Tuple

__all__ = ["OptimisationTrace", "StageOutcome", "TraceEntry"]


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

    def to_dict(self) -> Dict[str, Any]:
        """Strict-JSON-able dict ``{"entries": [...], "outcomes": [...]}``."""
        return {
            "entries": [e.to_dict() for e in self.entries],
            "outcomes": [
                {"stage": o.stage, "status": o.status, "message": o.message} for o in self.outcomes
            ],
        }
