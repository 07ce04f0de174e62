"""Parameter drift of a fleet: which robot's identified parameter moved, when, and by how much.

Input: the history of identified/calibrated parameters, one
:class:`~figaroh.fleet.run_index.HistoryPoint` per (run, parameter) — robot id,
run id, session label, session time (ISO-8601), value ``x`` and absolute
standard deviation ``σ`` (same unit as the value, ``None`` when the run gave
none). Values keep the parameter's SI unit ([kg], [kg·m], [kg·m²], [N·m],
[N·m·s/rad], [m], [rad], …); every derived quantity below (reference,
difference, scale) is in that unit, and ``z`` is dimensionless.

Each run is compared twice, and flagged when ``|z| > k``:

**Against its own history.** For run ``i`` of robot ``r`` (runs in time
order) and its ``m = i`` previous runs with values ``x_0 … x_{m-1}``
(a comparison needs ``m ≥ min_history``)::

    reference = mean(x_0 … x_{m-1})
    σ_hist    = std(x_0 … x_{m-1}, ddof=1)          when m ≥ 2
              = σ_0 (the previous run's own σ)        when m = 1
    scale     = sqrt(σ_i² + σ_hist²)
    z         = (x_i − reference) / scale

**Against the fleet.** For run ``i`` of robot ``r`` in session ``s``, the
other robots' values in ``s`` (each other robot contributes its latest run of
that session; a comparison needs at least ``min_fleet`` other robots)::

    reference = median(x_o)
    spread    = 1.4826 · median(|x_o − reference|)   (MAD scaled to a σ for Gaussian data)
    scale     = max(spread, sqrt(σ_i² + median(σ_o)²))
    z         = (x_i − reference) / scale

A missing σ counts as 0 in the sums above. A comparison whose scale is 0
(no σ and no scatter: nothing says how much a change matters) is not made, so
it never flags. A robot is flagged when any of its runs is flagged for any
parameter, against either reference.

Choosing ``k``: for Gaussian noise and correct σ, one comparison exceeds
``k`` by chance with probability ``P(|N(0,1)| > k)`` (0.27 % at k = 3,
0.006 % at k = 4), so a report over ``N`` comparisons (2 per run and
parameter) carries about ``N·P`` chance flags; restrict ``names`` to the
parameters being watched or raise ``k`` on large fleets.

The fleet's band drawn in the report is, per session, the median of every
robot's latest run and ``1.4826·MAD`` of those values (all robots, the robot
itself included).

Cost: the history comparison of a robot with ``n`` runs builds one ``n × n``
mask; the fleet comparison sorts each session once (median, median σ, exact
leave-one-out) and, for fleets of at most :data:`EXACT_LOO_MAD_MAX` robots,
builds an ``R × R`` table per session for the leave-one-out MAD; larger
fleets use the MAD of the whole session (one robot more among thousands moves
it by at most one order statistic).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any, Iterable

import numpy as np

from figaroh.errors import FigarohError
from figaroh.fleet.run_index import HistoryPoint, RunIndex

logger = logging.getLogger(__name__)

__all__ = [
    "AGAINST_FLEET",
    "AGAINST_HISTORY",
    "EXACT_LOO_MAD_MAX",
    "MAD_TO_SIGMA",
    "DriftFlag",
    "DriftInputError",
    "DriftReport",
    "ParameterDrift",
    "analyse_drift",
    "drift_report",
]

#: ``DriftFlag.against`` of a comparison with the robot's own previous runs.
AGAINST_HISTORY = "history"
#: ``DriftFlag.against`` of a comparison with the other robots of the same session.
AGAINST_FLEET = "fleet"
#: Factor turning a median absolute deviation into a σ (Gaussian consistency):
#: ``1 / Φ⁻¹(3/4)``, the factor of ``scipy.stats.median_abs_deviation(scale="normal")``.
MAD_TO_SIGMA = 1.482602218505602
#: Largest fleet whose leave-one-out MAD is computed exactly (``R × R`` table per session).
EXACT_LOO_MAD_MAX = 1024


class DriftInputError(FigarohError, ValueError):
    """Bad input of the drift analysis (a NaN value, a negative σ, a bad k, an unknown name)."""


@dataclass(frozen=True)
class DriftFlag:
    """One run of one robot whose parameter moved more than ``k·scale``.

    Attributes:
        robot_id: Robot of the run.
        run_id: Run flagged.
        name: Parameter that moved.
        session_time: Session time of the run (ISO-8601).
        value: The run's value ``x`` (parameter unit).
        reference: Mean of the robot's previous runs (``against="history"``)
            or median of the other robots in the session (``"fleet"``)
            (parameter unit).
        scale: Combined standard deviation the difference is judged against
            (parameter unit, > 0).
        z: ``(value − reference) / scale`` (dimensionless, signed).
        against: ``"history"`` or ``"fleet"``.
        session: Session label of the run.
    """

    robot_id: str
    run_id: str
    name: str
    session_time: str
    value: float
    reference: float
    scale: float
    z: float
    against: str
    session: str = ""

    @property
    def difference(self) -> float:
        """``value − reference`` (parameter unit)."""
        return self.value - self.reference


def _frozen_mapping(data: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True)
class ParameterDrift:
    """Drift analysis of one parameter over the fleet.

    Attributes:
        name: Parameter name.
        robots: Robot id → its points in time order (session time, run id).
        fleet_median: Session → median over robots of the session (parameter
            unit); sessions in time order.
        fleet_spread: Session → ``1.4826·MAD`` over robots of the session
            (parameter unit).
        flags: Flags of this parameter (robot, time, against order).
        session_times: Session → earliest session time of its runs (ISO-8601).
    """

    name: str
    robots: Mapping[str, tuple[HistoryPoint, ...]]
    fleet_median: Mapping[str, float]
    fleet_spread: Mapping[str, float]
    flags: tuple[DriftFlag, ...]
    session_times: Mapping[str, str] = field(default_factory=_frozen_mapping)

    @property
    def flagged_robots(self) -> tuple[str, ...]:
        """Robots with at least one flag on this parameter (sorted)."""
        return tuple(sorted({f.robot_id for f in self.flags}))


@dataclass(frozen=True)
class DriftReport:
    """Drift of every analysed parameter.

    Attributes:
        k: Threshold: a comparison flags when ``|z| > k``.
        parameters: One :class:`ParameterDrift` per parameter (sorted by name).
        flags: Every flag (robot, time, parameter, against order).
        flagged_robots: Robots with at least one flag (sorted).
        min_history: Previous runs a history comparison needs.
        min_fleet: Other robots of the session a fleet comparison needs.
    """

    k: float
    parameters: tuple[ParameterDrift, ...]
    flags: tuple[DriftFlag, ...]
    flagged_robots: tuple[str, ...]
    min_history: int = 1
    min_fleet: int = 2

    @property
    def robots(self) -> tuple[str, ...]:
        """Every robot with at least one point (sorted)."""
        return tuple(sorted({r for p in self.parameters for r in p.robots}))

    def parameter(self, name: str) -> ParameterDrift:
        """The analysis of parameter ``name``.

        Raises:
            KeyError: ``name`` was not analysed.
        """
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(f"parameter {name!r} is not in this drift report")


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
            "use e.g. k=3.0"
        )
    return value


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
# Statistics (vectorised)
# --------------------------------------------------------------------------- #
def _history_scores(
    x: np.ndarray, s: np.ndarray, min_history: int
) -> tuple[np.ndarray, np.ndarray]:
    """Reference and scale of each run against the robot's previous runs.

    Args:
        x: Values of one robot in time order, shape (n,).
        s: Their σ, NaN where absent, shape (n,).
        min_history: Previous runs a comparison needs.

    Returns:
        ``(reference, scale)``, shape (n,), NaN where no comparison is made.
    """
    n = x.size
    count = np.arange(n)
    before = count[None, :] < count[:, None]  # before[i, j]: run j precedes run i
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(before, x[None, :], 0.0).sum(axis=1) / count
        dev = np.where(before, x[None, :] - mean[:, None], 0.0)
        std = np.sqrt((dev**2).sum(axis=1) / (count - 1))
    prev_sigma = np.concatenate(([np.nan], s[:-1])) if n else s
    sigma_hist = np.where(count == 1, prev_sigma, std)
    scale = np.sqrt(np.nan_to_num(s) ** 2 + np.nan_to_num(sigma_hist) ** 2)
    ok = count >= min_history
    return np.where(ok, mean, np.nan), np.where(ok, scale, np.nan)


def _loo_median(v: np.ndarray) -> np.ndarray:
    """For each i, the median of the finite entries of ``v`` other than ``v[i]`` (NaN if none).

    Exact and O(R log R): with the finite values sorted, removing the one of
    rank ρ shifts the later order statistics down by one.
    """
    finite = np.isfinite(v)
    f = int(finite.sum())
    out = np.full(v.shape, np.nan)
    if f == 0:
        return out
    order = np.argsort(np.where(finite, v, np.inf), kind="stable")
    ordered = v[order][:f]
    rank = np.empty(v.size, dtype=int)
    rank[order] = np.arange(v.size)
    m = np.where(finite, f - 1, f)

    def remaining(pos: np.ndarray) -> np.ndarray:
        shifted = pos + (finite & (pos >= rank))
        return ordered[np.clip(shifted, 0, f - 1)]

    med = 0.5 * (remaining((m - 1) // 2) + remaining(m // 2))
    return np.where(m >= 1, med, out)


def _row_medians(a: np.ndarray) -> np.ndarray:
    """Median of the non-NaN entries of each row of ``a`` (NaN for a row without one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice": that row is NaN
        return np.nanmedian(a, axis=1)


def _loo_mad(v: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """For each i, ``median_{j ≠ i} |v_j − centre_i|`` over the finite ``v_j``."""
    n = v.size
    if n > EXACT_LOO_MAD_MAX:
        from scipy.stats import median_abs_deviation

        finite = v[np.isfinite(v)]
        mad = float(median_abs_deviation(finite)) if finite.size else np.nan
        return np.full(n, mad)
    dev = np.abs(v[None, :] - centre[:, None])
    dev[np.arange(n), np.arange(n)] = np.nan
    return _row_medians(dev)


def _fleet_scores(
    values: np.ndarray, sigmas: np.ndarray, min_fleet: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out fleet statistics of each (robot, session) cell.

    Args:
        values: Latest value of each robot in each session, NaN where the
            robot has no run, shape (R, S).
        sigmas: Their σ, NaN where absent, shape (R, S).
        min_fleet: Other robots a comparison needs.

    Returns:
        ``(reference, spread, median_sigma)``, shape (R, S): median,
        ``1.4826·MAD`` and median σ of the other robots (NaN where fewer
        than ``min_fleet`` other robots have a run in the session).
    """
    reference = np.full(values.shape, np.nan)
    spread = np.full(values.shape, np.nan)
    med_sigma = np.full(values.shape, np.nan)
    for j in range(values.shape[1]):
        v, s = values[:, j], sigmas[:, j]
        present = np.isfinite(v)
        others = present.sum() - present
        ok = others >= min_fleet
        ref = _loo_median(v)
        s_present = np.where(present, s, np.nan)
        reference[:, j] = np.where(ok, ref, np.nan)
        spread[:, j] = np.where(ok, MAD_TO_SIGMA * _loo_mad(v, ref), np.nan)
        med_sigma[:, j] = np.where(ok, _loo_median(s_present), np.nan)
    return reference, spread, med_sigma


def _median_mad(v: np.ndarray) -> tuple[float, float]:
    """Median and ``1.4826·MAD`` of the finite entries of ``v``."""
    from scipy.stats import median_abs_deviation

    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan
    return float(np.median(v)), float(median_abs_deviation(v, scale="normal"))


# --------------------------------------------------------------------------- #
# One parameter
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _Series:
    """The points of one parameter grouped by robot (time order) and its sessions (time order)."""

    robots: dict[str, tuple[HistoryPoint, ...]]
    sessions: tuple[str, ...]
    session_times: dict[str, str]
    times: dict[str, float]  # run_id -> epoch seconds


def _series(points: Sequence[HistoryPoint], times: Mapping[int, float]) -> _Series:
    by_robot: dict[str, list[HistoryPoint]] = {}
    for p in points:
        by_robot.setdefault(str(p.robot_id), []).append(p)
    robots = {
        r: tuple(sorted(pts, key=lambda p: (times[id(p)], str(p.run_id))))
        for r, pts in sorted(by_robot.items())
    }
    first: dict[str, tuple[float, str]] = {}
    for p in points:
        t = (times[id(p)], str(p.session_time))
        if p.session not in first or t < first[p.session]:
            first[p.session] = t
    sessions = tuple(sorted(first, key=lambda s: (first[s][0], str(s))))
    return _Series(
        robots=robots,
        sessions=sessions,
        session_times={s: first[s][1] for s in sessions},
        times={str(p.run_id): times[id(p)] for p in points},
    )


def _flags(
    pts: Sequence[HistoryPoint],
    x: np.ndarray,
    reference: np.ndarray,
    scale: np.ndarray,
    k: float,
    against: str,
) -> list[DriftFlag]:
    """Flags of the runs with ``|x − reference| > k·scale`` (finite reference, scale > 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (x - reference) / scale
    hit = np.isfinite(reference) & np.isfinite(scale) & (scale > 0) & (np.abs(z) > k)
    return [
        DriftFlag(
            robot_id=str(pts[n].robot_id),
            run_id=str(pts[n].run_id),
            name=str(pts[n].name),
            session_time=str(pts[n].session_time),
            value=float(x[n]),
            reference=float(reference[n]),
            scale=float(scale[n]),
            z=float(z[n]),
            against=against,
            session=str(pts[n].session),
        )
        for n in np.flatnonzero(hit).tolist()
    ]


def _session_matrix(series: _Series, sigma_of: Mapping[int, float | None]):
    """Latest value and σ of each robot in each session, shape (R, S), NaN where absent."""
    col = {s: j for j, s in enumerate(series.sessions)}
    values = np.full((len(series.robots), len(series.sessions)), np.nan)
    sigmas = np.full(values.shape, np.nan)
    for i, pts in enumerate(series.robots.values()):
        for p in pts:  # time order: the latest run of a session wins
            sigma = sigma_of[id(p)]
            values[i, col[p.session]] = float(p.value)
            sigmas[i, col[p.session]] = math.nan if sigma is None else sigma
    return values, sigmas


def _analyse_parameter(
    name: str,
    points: Sequence[HistoryPoint],
    times: Mapping[int, float],
    sigma_of: Mapping[int, float | None],
    k: float,
    min_history: int,
    min_fleet: int,
) -> ParameterDrift:
    series = _series(points, times)
    values, sigmas = _session_matrix(series, sigma_of)
    f_ref, f_spread, f_sigma = _fleet_scores(values, sigmas, min_fleet)
    col = {s: j for j, s in enumerate(series.sessions)}
    flags = []
    for i, pts in enumerate(series.robots.values()):
        x = np.array([float(p.value) for p in pts])
        s = np.array([math.nan if sigma_of[id(p)] is None else sigma_of[id(p)] for p in pts])
        h_ref, h_scale = _history_scores(x, s, min_history)
        cols = np.array([col[p.session] for p in pts], dtype=int)
        own = np.nan_to_num(s)
        fleet_scale = np.maximum(
            f_spread[i, cols], np.sqrt(own**2 + np.nan_to_num(f_sigma[i, cols]) ** 2)
        )
        flags += _flags(pts, x, h_ref, h_scale, k, AGAINST_HISTORY)
        flags += _flags(pts, x, f_ref[i, cols], fleet_scale, k, AGAINST_FLEET)
    band = {s: _median_mad(values[:, j]) for j, s in enumerate(series.sessions)}
    return ParameterDrift(
        name=name,
        robots=_frozen_mapping(series.robots),
        fleet_median=_frozen_mapping({s: m for s, (m, _) in band.items()}),
        fleet_spread=_frozen_mapping({s: d for s, (_, d) in band.items()}),
        flags=tuple(sorted(flags, key=lambda f: _flag_key(f, series.times))),
        session_times=_frozen_mapping(series.session_times),
    )


def _flag_key(f: DriftFlag, times: Mapping[str, float]) -> tuple:
    return (f.robot_id, times.get(f.run_id, 0.0), f.run_id, f.name, f.against)


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #
def analyse_drift(
    points: Sequence[HistoryPoint],
    k: float = 3.0,
    min_history: int = 1,
    *,
    min_fleet: int = 2,
) -> DriftReport:
    """Flag the runs whose parameter moved more than ``k`` standard deviations.

    The comparisons (against the robot's own previous runs and against the
    other robots of the same session) are given with their maths in the
    module docstring.

    Args:
        points: One point per (run, parameter): robot_id, run_id, session,
            session_time (ISO-8601; naive = UTC), name, value (parameter
            unit), sigma (absolute, same unit, or None). Order does not matter.
        k: Threshold in standard deviations (> 0): a comparison flags when
            ``|z| > k``.
        min_history: Previous runs of the robot a history comparison needs (≥ 1).
        min_fleet: Other robots of the session a fleet comparison needs (≥ 1;
            the default 2 keeps a two-robot fleet from flagging both robots
            for the drift of one).

    Returns:
        The :class:`DriftReport` (parameters sorted by name).

    Raises:
        DriftInputError: a non-finite value, a NaN/negative/non-finite σ,
            an unreadable session time, the same (run, parameter) twice,
            ``k`` not finite > 0, ``min_history`` or ``min_fleet`` < 1.
    """
    k = _check_k(k)
    min_history = _check_count(min_history, "min_history", "previous runs a comparison needs")
    min_fleet = _check_count(min_fleet, "min_fleet", "other robots a comparison needs")
    points = list(points)
    sigma_of = {id(p): _check_point(p) for p in points}
    parsed: dict[str, float] = {}  # many runs share a session time: parse each text once
    times = {}
    for p in points:
        text = str(p.session_time)
        if text not in parsed:
            parsed[text] = _epoch_seconds(text, str(p.run_id))
        times[id(p)] = parsed[text]
    by_name: dict[str, list[HistoryPoint]] = {}
    seen: set[tuple[str, str]] = set()
    for p in points:
        key = (str(p.run_id), str(p.name))
        if key in seen:
            raise DriftInputError(
                f"parameter {p.name!r} of run {p.run_id!r} is given twice; "
                "pass one point per (run, parameter)"
            )
        seen.add(key)
        by_name.setdefault(str(p.name), []).append(p)
    parameters = tuple(
        _analyse_parameter(name, pts, times, sigma_of, k, min_history, min_fleet)
        for name, pts in sorted(by_name.items())
    )
    return _assemble(k, parameters, min_history, min_fleet, _times_by_run(points, times))


def _times_by_run(points: Iterable[HistoryPoint], times: Mapping[int, float]) -> dict[str, float]:
    """Run id → epoch seconds of its session time."""
    return {str(p.run_id): times[id(p)] for p in points}


def _assemble(
    k: float,
    parameters: tuple[ParameterDrift, ...],
    min_history: int,
    min_fleet: int,
    run_times: Mapping[str, float],
) -> DriftReport:
    flags = tuple(
        sorted(
            (f for p in parameters for f in p.flags),
            key=lambda f: (f.robot_id, run_times.get(f.run_id, 0.0), f.run_id, f.name, f.against),
        )
    )
    return DriftReport(
        k=k,
        parameters=parameters,
        flags=flags,
        flagged_robots=tuple(sorted({f.robot_id for f in flags})),
        min_history=min_history,
        min_fleet=min_fleet,
    )


def _restrict(report: DriftReport, robots: Sequence[str]) -> DriftReport:
    """The report limited to ``robots`` (fleet statistics stay those of the whole fleet)."""
    keep = set(robots)
    parameters = tuple(
        ParameterDrift(
            name=p.name,
            robots=_frozen_mapping({r: v for r, v in p.robots.items() if r in keep}),
            fleet_median=p.fleet_median,
            fleet_spread=p.fleet_spread,
            flags=tuple(f for f in p.flags if f.robot_id in keep),
            session_times=p.session_times,
        )
        for p in report.parameters
    )
    flags = tuple(f for f in report.flags if f.robot_id in keep)
    return DriftReport(
        k=report.k,
        parameters=parameters,
        flags=flags,
        flagged_robots=tuple(sorted({f.robot_id for f in flags})),
        min_history=report.min_history,
        min_fleet=report.min_fleet,
    )


def _unknown(what: str, asked: Sequence[str], known: Sequence[str]) -> None:
    missing = [a for a in asked if a not in set(known)]
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


def drift_report(
    index: RunIndex,
    names: Sequence[str] | None = None,
    robots: Sequence[str] | None = None,
    task: str | None = None,
    k: float = 3.0,
) -> DriftReport:
    """Drift analysis of the parameters recorded in a run index.

    Every robot of the index (of ``task``) enters the fleet comparison; the
    report is then limited to ``robots`` when given (their flags, their
    points; the fleet band stays that of the whole fleet). Estimates stored
    as non-finite (a run that did not identify a parameter) are left out
    with a warning naming them.

    Args:
        index: Open :class:`~figaroh.fleet.run_index.RunIndex`.
        names: Parameters to analyse (default: every parameter of ``task``).
        robots: Robots to report (default: every robot).
        task: Task kind to read (``"identification"``, ``"calibration"``, …;
            default every task).
        k: Threshold in standard deviations (> 0).

    Returns:
        The :class:`DriftReport`.

    Raises:
        DriftInputError: ``k`` not finite > 0, a name or robot not in the
            index, or a bad stored point (see :func:`analyse_drift`).
    """
    k = _check_k(k)
    if isinstance(names, str) or isinstance(robots, str):
        raise DriftInputError("names and robots must be lists of strings, not one string")
    if names is not None:
        _unknown("parameter", list(names), index.parameter_names(task=task))
    if robots is not None:
        _unknown("robot", list(robots), index.robots())
    if names is None:
        points = list(index.parameter_history(None, task=task))
    else:
        points = [p for n in dict.fromkeys(names) for p in index.parameter_history(n, task=task)]
    report = analyse_drift(_finite_points(points), k=k)
    return report if robots is None else _restrict(report, list(robots))
