"""Parameter drift of a fleet: which robot's identified parameter moved, when, and by how much.

Input: the history of identified/calibrated parameters, one
:class:`~figaroh.fleet.run_index.HistoryPoint` per (run, parameter) — robot id,
run id, session label, session time (ISO-8601), value ``x`` and absolute
standard deviation ``σ`` (same unit as the value, ``None`` when the run gave
none). Values keep the parameter's SI unit ([kg], [kg·m], [kg·m²], [N·m],
[N·m·s/rad], [m], [rad], …); every derived quantity below (reference,
difference, scale) is in that unit, and ``z`` is dimensionless.

**What is compared.** A *quantity* is a parameter name, plus for an inertial
base parameter the base-parameter structure of its run
(:mod:`figaroh.fleet.parameter_identity`): per-joint terms (friction,
armature, offsets) and calibration parameters are compared across every run
and robot; an inertial base parameter only between runs of the same
structure. Each quantity is one :class:`ParameterDrift` of the report.

Each run is compared twice, against its own history and against the fleet,
and a rule decides which comparisons are flags.

**Default rule: false-discovery rate** (``q``, default
:data:`~figaroh.fleet.drift_fdr.DEFAULT_FDR_LEVEL` = 0.05). For run ``i`` of
robot ``r`` (its ``n`` runs of the quantity in time order, ``m = i`` earlier
ones, ``m ≥ min_history``):

* *against its history* — did the quantity move at run ``i`` and stay
  there? The runs from ``i`` on against the runs before it::

      reference = mean(x_0 … x_{i−1})            level = mean(x_i … x_{n−1})
      scale²    = λ · (Σ_{j<i} σ_j² / m² + Σ_{j≥i} σ_j² / (n−i)²)
      z         = (level − reference) / scale,   z ~ N(0, 1) when nothing moved

  The σ are the runs' own least-squares standard deviations and ``λ ≥ 1``
  calibrates them on the fleet: least-squares σ cover white measurement
  noise, and runs scatter more than they say when the residuals are
  coloured or the trajectory changes. For every (robot, quantity) whose
  ``n ≥ 2`` runs all have a σ > 0, ``u = Σ_j (x_j − x̄_w)²/σ_j² /
  median(χ²_{n−1})`` (``x̄_w`` the inverse-variance weighted mean) is about 1
  when the σ are right and nothing moved; ``λ = max(1, median u)`` over the
  robots of the quantity (over every structure-dependent cell for an
  inertial base parameter, which each robot often has alone), so a minority
  of drifting robots does not move it; with fewer than
  :data:`SIGMA_POOL_MIN` such cells ``λ = 1``. The report gives ``√λ`` per
  quantity (:attr:`ParameterDrift.sigma_scale`). When a run of the robot has
  no σ, the scale is the pooled two-sample one instead, ``s_p·√(1/m + 1/(n−i))`` with
  ``s_p² = (Σ_{j<i}(x_j − reference)² + Σ_{j≥i}(x_j − level)²)/(n − 2)``,
  and ``z`` follows Student's t with ``n − 2`` degrees of freedom (no
  comparison below 3 runs). For the latest run (``i = n−1``) this is the run
  against the mean of all earlier runs; for an earlier ``i`` it pools the
  runs after a change, so a persistent step or a trend is judged on every run
  that shows it, not on one run at a time. Of a flagged robot's history
  comparisons the report keeps the one of largest ``|z|``: the run where the
  level changed (every split before it differs too).
* *against the fleet* — the other robots' values ``x_o`` in the session of
  run ``i`` (each other robot's latest run of the session; at least
  ``min_fleet`` of them, ``n_o``)::

      reference = median(x_o)
      spread    = 1.4826 · median(|x_o − reference|)        (MAD scaled to a σ)
      scale²    = max(spread, median(σ_o))² · (1 + π/(2·n_o)) + σ_i²
      z         = (x_i − reference) / scale

  The first term is the scatter of another robot's value about the fleet's
  centre (robot-to-robot spread and measurement; ``π/(2·n_o)`` is the
  relative variance of the median as that centre), the second the run's own
  measurement — counted twice when the robots hardly differ, which makes the
  comparison conservative then. ``z`` follows Student's t with
  ``ν = max(1, 0.3675·n_o)`` degrees of freedom: the MAD of ``n_o`` normal
  values is as variable as a standard deviation with ``0.3675·n_o`` degrees
  of freedom (its asymptotic efficiency).

Each comparison gets its two-sided p-value; the comparisons of one (robot,
quantity) cell are combined with Simes's method, the cells of the report
are tested together with Benjamini–Hochberg at level ``q``, and the
comparisons of a flagged cell at level ``q·R/N`` (``R`` flagged of ``N``
cells; :mod:`figaroh.fleet.drift_fdr`). When no robot drifts, at most a
fraction ``q`` of reports flag any robot at all.

**Threshold rule** (``k`` given: the rule of earlier figaroh versions, kept
for comparison). A comparison flags when ``|z| > k`` with, against the
history of run ``i`` (``m ≥ min_history`` previous runs)::

    reference = mean(x_0 … x_{m-1})
    σ_hist    = std(x_0 … x_{m-1}, ddof=1)          when m ≥ 2
              = σ_0 (the previous run's own σ)        when m = 1
    scale     = sqrt(σ_i² + σ_hist²)
    z         = (x_i − reference) / scale

and against the fleet (same ``reference`` and ``spread`` as above)::

    scale     = max(spread, sqrt(σ_i² + median(σ_o)²))
    z         = (x_i − reference) / scale

A missing σ counts as 0 in these sums. One comparison exceeds ``k`` by chance
with probability ``P(|N(0,1)| > k)`` (0.27 % at k = 3), so a report over
``N`` comparisons carries about ``N·P`` chance flags.

Under both rules a comparison whose scale is 0 (no σ and no scatter: nothing
says how much a change matters) is not made, and a robot is flagged when any
of its comparisons is.

The fleet's band drawn in the report is, per session, the median of every
robot's latest run and ``1.4826·MAD`` of those values (all robots, the robot
itself included).

Cost: the history comparisons of a robot are ``O(n)`` (cumulative sums;
``O(n²)`` for the threshold rule); the fleet comparison sorts each session
once for the exact leave-one-out median and median σ, and once per distinct
leave-one-out centre (at most four) for the exact leave-one-out MAD, for
fleets of at most :data:`EXACT_LOO_MAD_MAX` robots; larger fleets use the
MAD of the whole session (one robot more among thousands moves it by at most
one order statistic). A quantity with at most ``min_fleet`` robots (an
inertial base parameter of a robot with its own structure) skips the fleet
comparison.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Union

import numpy as np

from figaroh.fleet.drift_comparisons import (
    MAD_DOF_PER_ROBOT,
    SIGMA_POOL_MIN,
    _comparisons,
    _decide,
    _fleet,
    _parameters,
    _sigma_scales,
    _table,
)
from figaroh.fleet.drift_fdr import DEFAULT_FDR_LEVEL, check_level
from figaroh.fleet.drift_records import (
    AGAINST_FLEET,
    AGAINST_HISTORY,
    RULE_FDR,
    RULE_K,
    DriftFlag,
    DriftInputError,
    DriftReport,
    ParameterDrift,
    _frozen_mapping,
)
from figaroh.fleet.drift_scores import EXACT_LOO_MAD_MAX, MAD_TO_SIGMA
from figaroh.fleet.history_window import WindowError, read_window, unknown_names
from figaroh.fleet.parameter_identity import STABLE, is_structural, run_structures
from figaroh.fleet.run_index import HistoryPoint, RunIndex

logger = logging.getLogger(__name__)

__all__ = [
    "AGAINST_FLEET",
    "AGAINST_HISTORY",
    "DEFAULT_FDR_LEVEL",
    "EXACT_LOO_MAD_MAX",
    "MAD_DOF_PER_ROBOT",
    "MAD_TO_SIGMA",
    "RULE_FDR",
    "RULE_K",
    "SIGMA_POOL_MIN",
    "DriftFlag",
    "DriftInputError",
    "DriftReport",
    "ParameterDrift",
    "analyse_drift",
    "drift_report",
]


# --------------------------------------------------------------------------- #
# Input checks
# --------------------------------------------------------------------------- #
def _check_k(k: Any) -> float:
    try:
        value = float(k)
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(k, bool) or not math.isfinite(value) or value <= 0:
        raise DriftInputError(
            f"k must be a finite number > 0 (the threshold in standard deviations), got {k!r}; "
            "use e.g. k=3.0, or leave k out for the false-discovery-rate rule"
        )
    return value


def _check_rule(k: Any, q: Any) -> tuple[float | None, float | None]:
    """``(k, None)`` for the threshold rule, ``(None, q)`` for the default rule."""
    if k is not None and q is not None:
        raise DriftInputError(
            f"give k (the |z| > k threshold rule) or q (the false-discovery-rate rule), "
            f"not both: k={k!r}, q={q!r}"
        )
    if k is not None:
        return _check_k(k), None
    try:
        return None, check_level(DEFAULT_FDR_LEVEL if q is None else q)
    except ValueError as exc:
        raise DriftInputError(str(exc)) from None


def _check_count(value: Any, what: str, meaning: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise DriftInputError(f"{what} must be an integer >= 1 ({meaning}), got {value!r}")
    return int(value)


def _epoch_seconds(text: Any, run_id: str) -> float:
    """Seconds since 1970-01-01 UTC of an ISO-8601 time (naive times are UTC)."""
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        raise DriftInputError(
            f"session_time {text!r} of run {run_id!r} is not an ISO-8601 time; "
            "write it as e.g. 2026-03-01T08:00:00+00:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _check_point(p: HistoryPoint) -> float | None:
    """The point's σ as a float (None when absent); bad value or σ → DriftInputError."""
    where = f"parameter {p.name!r} of run {p.run_id!r} (robot {p.robot_id!r})"
    value = p.value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise DriftInputError(f"value of {where} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise DriftInputError(
            f"value of {where} is {value!r}; drift needs finite values: "
            "drop the point or fix the run that produced it"
        )
    if p.sigma is None:
        return None
    sigma = p.sigma
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.number)):
        raise DriftInputError(f"sigma of {where} must be a number or None, got {sigma!r}")
    if not math.isfinite(float(sigma)) or float(sigma) < 0:
        raise DriftInputError(
            f"sigma of {where} is {sigma!r}; it must be a finite standard deviation >= 0, "
            "or None when the run gave none"
        )
    return float(sigma)


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #
def analyse_drift(
    points: Sequence[HistoryPoint],
    k: float | None = None,
    min_history: int = 1,
    *,
    min_fleet: int = 2,
    q: float | None = None,
    structures: Mapping[str, str] | None = None,
) -> DriftReport:
    """Flag the runs whose parameter moved (false-discovery rate ``q``, or ``|z| > k``).

    The comparisons (against the robot's own earlier runs and against the
    other robots of the same session) and both rules are given with their
    maths in the module docstring.

    Args:
        points: One point per (run, parameter): robot_id, run_id, session,
            session_time (ISO-8601; naive = UTC), name, value (parameter
            unit), sigma (absolute, same unit, or None). Order does not matter.
        k: Threshold in standard deviations (> 0): the threshold rule, a
            comparison flags when ``|z| > k``. None (default): the
            false-discovery-rate rule.
        min_history: Earlier runs of the robot a history comparison needs (≥ 1).
        min_fleet: Other robots of the session a fleet comparison needs (≥ 1;
            the default 2 keeps a two-robot fleet from flagging both robots
            for the drift of one).
        q: False-discovery-rate level in (0, 1) of the default rule (None:
            :data:`~figaroh.fleet.drift_fdr.DEFAULT_FDR_LEVEL`); not with ``k``.
        structures: Run id → base-parameter structure signature
            (:func:`figaroh.fleet.parameter_identity.structure_signature` of
            all the run's parameter names). Default: computed from the names
            of each run's points — pass it when ``points`` hold only some of
            the parameters of each run.

    Returns:
        The :class:`DriftReport` (quantities sorted by name, then structure).

    Raises:
        DriftInputError: a non-finite value, a NaN/negative/non-finite σ,
            an unreadable session time, the same (run, parameter) twice,
            ``k`` not finite > 0, ``q`` not in (0, 1), both ``k`` and ``q``,
            ``min_history`` or ``min_fleet`` < 1.
    """
    k, q = _check_rule(k, q)
    min_history = _check_count(min_history, "min_history", "earlier runs a comparison needs")
    min_fleet = _check_count(min_fleet, "min_fleet", "other robots a comparison needs")
    points = list(points)
    sigma = np.array([_check_point(p) for p in points], dtype=float)  # None → NaN
    parsed: dict[str, float] = {}  # many runs share a session time: parse each text once
    for p in points:
        text = str(p.session_time)
        if text not in parsed:
            parsed[text] = _epoch_seconds(text, str(p.run_id))
    t = np.array([parsed[str(p.session_time)] for p in points], dtype=float)
    seen: set[tuple[str, str]] = set()
    names_by_run: dict[str, list[str]] = {}
    for p in points:
        key = (str(p.run_id), str(p.name))
        if key in seen:
            raise DriftInputError(
                f"parameter {p.name!r} of run {p.run_id!r} is given twice; "
                "pass one point per (run, parameter)"
            )
        seen.add(key)
        names_by_run.setdefault(key[0], []).append(key[1])
    known = dict(structures or {})
    known.update(run_structures({r: n for r, n in names_by_run.items() if r not in known}))
    structural = {name: is_structural(name) for name in {name for _, name in seen}}
    keys = [
        (str(p.name), known[str(p.run_id)] if structural[str(p.name)] else STABLE) for p in points
    ]
    table = _table(points, keys, t, sigma)
    fleet = _fleet(table, min_fleet)
    rule = RULE_K if k is not None else RULE_FDR
    sigma_scale = _sigma_scales(table) if rule == RULE_FDR else np.ones(len(table.quantities))
    comp = _comparisons(table, fleet, rule, min_history, sigma_scale)
    decision = _decide(comp, table.cell, table.start.size, k, q)
    run_times = {str(p.run_id): float(tt) for p, tt in zip(points, t, strict=True)}
    return _assemble(
        k,
        _parameters(table, fleet, comp, decision, sigma_scale),
        min_history,
        min_fleet,
        run_times,
        q=q,
        cutoff=decision.cutoff,
        cells=int(decision.tested.sum()),
    )


def _assemble(
    k: float | None,
    parameters: tuple[ParameterDrift, ...],
    min_history: int,
    min_fleet: int,
    run_times: Mapping[str, float],
    *,
    q: float | None = None,
    cutoff: float = 0.0,
    cells: int = 0,
) -> DriftReport:
    flags = tuple(
        sorted(
            (f for p in parameters for f in p.flags),
            key=lambda f: (
                f.robot_id,
                run_times.get(f.run_id, 0.0),
                f.run_id,
                f.name,
                f.structure,
                f.against,
            ),
        )
    )
    return DriftReport(
        k=k,
        parameters=parameters,
        flags=flags,
        flagged_robots=tuple(sorted({f.robot_id for f in flags})),
        min_history=min_history,
        min_fleet=min_fleet,
        q=q,
        cutoff=cutoff,
        cells=cells,
    )


def _restrict(report: DriftReport, robots: Sequence[str]) -> DriftReport:
    """The report limited to ``robots`` (fleet statistics and q-values: the whole fleet's)."""
    keep = set(robots)
    parameters = tuple(
        dataclasses.replace(
            p,
            robots=_frozen_mapping({r: v for r, v in p.robots.items() if r in keep}),
            flags=tuple(f for f in p.flags if f.robot_id in keep),
            q_values=_frozen_mapping({r: v for r, v in p.q_values.items() if r in keep}),
        )
        for p in report.parameters
    )
    flags = tuple(f for f in report.flags if f.robot_id in keep)
    return dataclasses.replace(
        report,
        parameters=parameters,
        flags=flags,
        flagged_robots=tuple(sorted({f.robot_id for f in flags})),
    )


def _unknown(what: str, missing: Sequence[str], known: Sequence[str]) -> None:
    if missing:
        shown = ", ".join(repr(x) for x in list(known)[:20]) or "none"
        raise DriftInputError(
            f"{what} {', '.join(repr(m) for m in missing)} not in the run index; "
            f"known {what}s: {shown}"
        )


def _finite_points(points: Sequence[HistoryPoint]) -> list[HistoryPoint]:
    """The points with a finite value; the others are dropped with one warning naming them."""
    kept = [p for p in points if _is_finite_number(p.value)]
    dropped = [p for p in points if not _is_finite_number(p.value)]
    if dropped:
        shown = ", ".join(f"{p.name} of run {p.run_id}" for p in dropped[:5])
        more = f" and {len(dropped) - 5} more" if len(dropped) > 5 else ""
        logger.warning(
            "drift report: %d non-finite estimate(s) left out (%s%s); "
            "the runs that produced them did not identify these parameters",
            len(dropped),
            shown,
            more,
        )
    return kept


def _is_finite_number(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return True  # not a number at all: analyse_drift names it


def _window_text(since: str | None, last: int | None) -> str:
    parts = []
    if last is not None:
        parts.append(f"last {last} session{'s' if last != 1 else ''}")
    if since is not None:
        parts.append(f"since {since}")
    return ", ".join(parts) or "all sessions"


def drift_report(
    index: RunIndex,
    names: Sequence[str] | None = None,
    robots: Sequence[str] | None = None,
    task: str | None = None,
    k: float | None = None,
    *,
    q: float | None = None,
    since: Union[str, datetime, None] = None,
    last: int | None = None,
    min_history: int = 1,
    min_fleet: int = 2,
) -> DriftReport:
    """Drift analysis of the parameters recorded in a run index, over a window of sessions.

    Only the window's rows are read, with SQL
    (:func:`figaroh.fleet.history_window.read_window`: ``since`` and ``last``).
    Every robot of the window (of ``task``) enters the fleet comparison and
    the false-discovery-rate control; the report is then limited to
    ``robots`` when given (their flags, their points; the fleet band and the
    q-values stay those of the whole fleet). Estimates stored as non-finite
    (a run that did not identify a parameter) are left out with a warning
    naming them.

    Args:
        index: Open :class:`~figaroh.fleet.run_index.RunIndex`.
        names: Parameters to analyse (default: every parameter of ``task``).
        robots: Robots to report (default: every robot).
        task: Task kind to read (``"identification"``, ``"calibration"``, …;
            default every task).
        k: Threshold in standard deviations (> 0) of the threshold rule; None
            (default) for the false-discovery-rate rule.
        q: False-discovery-rate level in (0, 1) (default 0.05); not with ``k``.
        since: Only runs with ``session_time >= since`` (ISO-8601 text or datetime).
        last: Only the runs of the ``last`` most recent sessions (≥ 1).
        min_history: Earlier runs a history comparison needs (≥ 1).
        min_fleet: Other robots a fleet comparison needs (≥ 1).

    Returns:
        The :class:`DriftReport` (its ``window`` says which sessions were read).

    Raises:
        DriftInputError: a bad ``k``, ``q``, ``since`` or ``last``, both ``k``
            and ``q``, a name or robot not in the index, or a bad stored
            point (see :func:`analyse_drift`).
    """
    _check_rule(k, q)
    if isinstance(names, str) or isinstance(robots, str):
        raise DriftInputError("names and robots must be lists of strings, not one string")
    if names is not None:
        missing = unknown_names(index, list(names), task=task)
        if missing:
            _unknown("parameter", missing, index.parameter_names(task=task))
    if robots is not None:
        known_robots = index.robots()
        _unknown("robot", [r for r in robots if r not in set(known_robots)], known_robots)
    try:
        window = read_window(index, names=names, task=task, since=since, last=last)
    except WindowError as exc:
        raise DriftInputError(str(exc)) from None
    report = analyse_drift(
        _finite_points(window.points),
        k=k,
        q=q,
        min_history=min_history,
        min_fleet=min_fleet,
        structures=window.structures,
    )
    report = dataclasses.replace(report, window=_window_text(window.since, window.last))
    return report if robots is None else _restrict(report, list(robots))
