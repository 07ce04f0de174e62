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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any, Union

import numpy as np

from figaroh.errors import FigarohError
from figaroh.fleet.drift_fdr import DEFAULT_FDR_LEVEL, check_level, fdr_decision, two_sided_p
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

#: ``DriftFlag.against`` of a comparison with the robot's own previous runs.
AGAINST_HISTORY = "history"
#: ``DriftFlag.against`` of a comparison with the other robots of the same session.
AGAINST_FLEET = "fleet"
#: ``DriftReport.rule`` of the false-discovery-rate rule (the default).
RULE_FDR = "fdr"
#: ``DriftReport.rule`` of the ``|z| > k`` threshold rule.
RULE_K = "k"
#: Factor turning a median absolute deviation into a σ (Gaussian consistency):
#: ``1 / Φ⁻¹(3/4)``, the factor of ``scipy.stats.median_abs_deviation(scale="normal")``.
MAD_TO_SIGMA = 1.482602218505602
#: Degrees of freedom per value of a MAD-based σ: the asymptotic efficiency of
#: the MAD relative to the standard deviation for normal data.
MAD_DOF_PER_ROBOT = 0.3675
#: Cells a σ-calibration pool needs before its factor is used (default rule).
SIGMA_POOL_MIN = 5
#: Largest fleet whose leave-one-out MAD is computed exactly (``R × R`` table per session).
EXACT_LOO_MAD_MAX = 1024

_AGAINST = (AGAINST_HISTORY, AGAINST_FLEET)


class DriftInputError(FigarohError, ValueError):
    """Bad input of the drift analysis (NaN value, negative σ, bad k or q, unknown name)."""


@dataclass(frozen=True)
class DriftFlag:
    """One flagged comparison: a run of one robot whose parameter moved.

    Attributes:
        robot_id: Robot of the run.
        run_id: Run flagged (against the history under the default rule: the
            first run of the moved level).
        name: Parameter that moved.
        session_time: Session time of the run (ISO-8601).
        value: The run's value ``x`` (parameter unit); under the default rule
            against the history, the mean of the ``runs`` runs from this one on.
        reference: Mean of the robot's earlier runs (``against="history"``)
            or median of the other robots in the session (``"fleet"``)
            (parameter unit).
        scale: Standard deviation of ``value − reference`` the difference is
            judged against (parameter unit, > 0).
        z: ``(value − reference) / scale`` (dimensionless, signed).
        against: ``"history"`` or ``"fleet"``.
        session: Session label of the run.
        p: Two-sided p-value of ``z`` (default rule; None under the ``k`` rule).
        q_value: Benjamini–Hochberg q-value of the flag's (robot, quantity)
            cell (default rule; None under the ``k`` rule).
        runs: Runs averaged in ``value`` (1 but for history flags of the default rule).
        structure: Base-parameter structure of the quantity (``""``: stable).
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
    p: float | None = None
    q_value: float | None = None
    runs: int = 1
    structure: str = STABLE

    @property
    def difference(self) -> float:
        """``value − reference`` (parameter unit)."""
        return self.value - self.reference


def _frozen_mapping(data: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True)
class ParameterDrift:
    """Drift analysis of one quantity over the fleet.

    Attributes:
        name: Parameter name.
        robots: Robot id → its points in time order (session time, run id).
        fleet_median: Session → median over robots of the session (parameter
            unit); sessions in time order.
        fleet_spread: Session → ``1.4826·MAD`` over robots of the session
            (parameter unit).
        flags: Flags of this quantity (robot, time, against order).
        session_times: Session → earliest session time of its runs (ISO-8601).
        structure: Base-parameter structure signature of the runs compared
            (``""`` for a stable quantity: per-joint terms, calibration parameters).
        q_values: Robot → Benjamini–Hochberg q-value of its cell (default rule;
            empty under the ``k`` rule; robots without a comparison are absent).
        sigma_scale: Factor ``√λ ≥ 1`` the default rule applied to the recorded
            σ in the history comparisons (1: the runs scatter as their σ say;
            1 under the ``k`` rule).
    """

    name: str
    robots: Mapping[str, tuple[HistoryPoint, ...]]
    fleet_median: Mapping[str, float]
    fleet_spread: Mapping[str, float]
    flags: tuple[DriftFlag, ...]
    session_times: Mapping[str, str] = field(default_factory=_frozen_mapping)
    structure: str = STABLE
    q_values: Mapping[str, float] = field(default_factory=_frozen_mapping)
    sigma_scale: float = 1.0

    @property
    def flagged_robots(self) -> tuple[str, ...]:
        """Robots with at least one flag on this quantity (sorted)."""
        return tuple(sorted({f.robot_id for f in self.flags}))


@dataclass(frozen=True)
class DriftReport:
    """Drift of every analysed quantity.

    Attributes:
        k: Threshold of the ``k`` rule (a comparison flags when ``|z| > k``);
            None under the default false-discovery-rate rule.
        parameters: One :class:`ParameterDrift` per quantity (sorted by name,
            then structure).
        flags: Every flag (robot, time, parameter, against order).
        flagged_robots: Robots with at least one flag (sorted).
        min_history: Earlier runs a history comparison needs.
        min_fleet: Other robots of the session a fleet comparison needs.
        q: False-discovery-rate level of the default rule (None under the ``k`` rule).
        cutoff: The default rule's level within a flagged cell, ``q·R/N`` for ``R``
            flagged of ``N`` cells (0 when nothing is flagged): a comparison of a
            flagged cell is a flag when its within-cell adjusted p-value is at most this.
        cells: (robot, quantity) cells with at least one comparison: the tests
            the false-discovery rate is controlled over.
        window: The history window read (``"all sessions"``, ``"last 30
            sessions"``, ``"since 2026-03-01T00:00:00+00:00"`` …; ``""`` when the
            points were given directly).
    """

    k: float | None
    parameters: tuple[ParameterDrift, ...]
    flags: tuple[DriftFlag, ...]
    flagged_robots: tuple[str, ...]
    min_history: int = 1
    min_fleet: int = 2
    q: float | None = None
    cutoff: float = 0.0
    cells: int = 0
    window: str = ""

    @property
    def rule(self) -> str:
        """:data:`RULE_K` when ``k`` is set, else :data:`RULE_FDR`."""
        return RULE_K if self.k is not None else RULE_FDR

    @property
    def robots(self) -> tuple[str, ...]:
        """Every robot with at least one point (sorted)."""
        return tuple(sorted({r for p in self.parameters for r in p.robots}))

    def parameter(self, name: str, structure: str | None = None) -> ParameterDrift:
        """The analysis of parameter ``name`` (of base-parameter ``structure`` when given).

        Raises:
            KeyError: ``name`` was not analysed, or it was analysed under
                several structures and ``structure`` is not given.
        """
        found = [
            p
            for p in self.parameters
            if p.name == name and (structure is None or p.structure == structure)
        ]
        if len(found) == 1:
            return found[0]
        if not found:
            raise KeyError(f"parameter {name!r} is not in this drift report")
        raise KeyError(
            f"parameter {name!r} is analysed under {len(found)} base-parameter structures "
            f"({', '.join(p.structure for p in found)}); pass structure="
        )


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
# Statistics (vectorised)
# --------------------------------------------------------------------------- #
def _history_scores(
    x: np.ndarray, s: np.ndarray, min_history: int
) -> tuple[np.ndarray, np.ndarray]:
    """Threshold rule: reference and scale of each run against the robot's previous runs.

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


def _exclusive_prefix(v: np.ndarray, start: np.ndarray, cell: np.ndarray) -> np.ndarray:
    """``Σ_{j < i} v_j`` within each cell (contiguous cells; ``start[c]``: first index of c)."""
    excl = np.cumsum(v) - v
    return excl - excl[start][cell]


def _split_scores(
    x: np.ndarray,
    s: np.ndarray,
    cell: np.ndarray,
    start: np.ndarray,
    min_history: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Default rule: the runs from ``i`` on against the runs before ``i``, every run of every cell.

    Args:
        x: Values, shape (N,), grouped in contiguous cells (one robot's runs
            of one quantity), time order within a cell.
        s: Their σ, NaN where absent, shape (N,).
        cell: Cell of each value, shape (N,), non-decreasing from 0.
        start: First index of each cell, shape (C,).
        min_history: Earlier runs a comparison needs.

    Returns:
        ``(reference, level, scale, dof)``, shape (N,): for the ``i``-th run
        of its cell (``n`` runs), the mean before it, the mean from it on, the
        standard deviation of their difference (the runs' σ when every run of
        the cell has one, else the pooled two-sample one) and the degrees of
        freedom of ``z`` (``inf``: normal; ``n − 2``: Student's t); NaN where
        no comparison is made (``i < max(1, min_history)``, or fewer than 3
        runs without σ).
    """
    n_cells = start.size
    count = np.bincount(cell, minlength=n_cells).astype(float)
    size = count[cell]
    i = np.arange(x.size) - start[cell]
    after = size - i
    # sums within a cell are taken on centred, normalised values: no cancellation
    centre = np.bincount(cell, weights=x, minlength=n_cells) / count
    dev = x - centre[cell]
    unit = np.sqrt(np.bincount(cell, weights=dev**2, minlength=n_cells) / count)
    unit = np.where(unit > 0, unit, 1.0)
    d = dev / unit[cell]
    d_before = _exclusive_prefix(d, start, cell)
    d_total = np.bincount(cell, weights=d, minlength=n_cells)[cell]
    known = np.bincount(cell, weights=~np.isfinite(s), minlength=n_cells)[cell] == 0
    s2 = np.where(np.isfinite(s), s, 0.0) ** 2
    unit2 = np.bincount(cell, weights=s2, minlength=n_cells) / count
    unit2 = np.where(unit2 > 0, unit2, 1.0)
    w = s2 / unit2[cell]
    w_before = _exclusive_prefix(w, start, cell)
    w_total = np.bincount(cell, weights=w, minlength=n_cells)[cell]
    d2_before = _exclusive_prefix(d**2, start, cell)
    d2_total = np.bincount(cell, weights=d**2, minlength=n_cells)[cell]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_before = d_before / i
        mean_after = (d_total - d_before) / after
        reference = centre[cell] + unit[cell] * mean_before
        level = centre[cell] + unit[cell] * mean_after
        var_known = unit2[cell] * (w_before / i**2 + (w_total - w_before) / after**2)
        ss = (d2_before - i * mean_before**2) + (d2_total - d2_before - after * mean_after**2)
        pooled = np.maximum(ss, 0.0) / (size - 2)
        var_pooled = unit[cell] ** 2 * pooled * (1.0 / i + 1.0 / after)
    var = np.where(known, var_known, var_pooled)
    dof = np.where(known, np.inf, size - 2)
    ok = (i >= 1) & (i >= min_history) & (known | (size >= 3))
    nan = np.nan
    return (
        np.where(ok, reference, nan),
        np.where(ok, level, nan),
        np.where(ok, np.sqrt(np.maximum(var, 0.0)), nan),
        np.where(ok, dof, nan),
    )


def _columns(v: np.ndarray) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    return a.reshape(a.shape[0], -1) if a.ndim else a.reshape(1, 1)


def _loo_median(v: np.ndarray) -> np.ndarray:
    """For each entry of each column, the median of the column's other finite entries.

    Args:
        v: Shape (R,) or (R, S); NaN where absent.

    Returns:
        Same shape; NaN where the column has no other finite entry. Exact and
        O(R log R) per column: with the finite values sorted, removing the one
        of rank ρ shifts the later order statistics down by one.
    """
    a = _columns(v)
    finite = np.isfinite(a)
    f = finite.sum(axis=0)
    order = np.argsort(np.where(finite, a, np.inf), axis=0, kind="stable")
    ordered = np.take_along_axis(a, order, axis=0)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(a.shape[0])[:, None], a.shape), 0)
    m = np.where(finite, f - 1, f)
    top = np.maximum(f - 1, 0)

    def remaining(pos: np.ndarray) -> np.ndarray:
        shifted = pos + (finite & (pos >= rank))
        return np.take_along_axis(ordered, np.clip(shifted, 0, top), axis=0)

    with np.errstate(invalid="ignore"):
        med = 0.5 * (remaining((m - 1) // 2) + remaining(m // 2))
    return np.where(m >= 1, med, np.nan).reshape(np.shape(v))


def _loo_mad(v: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """For each entry ``i`` of each column, ``median_{j ≠ i} |v_j − centre_i|`` over finite ``v_j``.

    Args:
        v: Shape (R,) or (R, S).
        centre: Same shape (the leave-one-out medians: a column holds at most
            three distinct centres).

    Returns:
        Same shape. Exact, ``O(R log R)`` per distinct centre: with
        ``d = |v − c|``, the leave-one-out median of ``d``
        (:func:`_loo_median`). Above :data:`EXACT_LOO_MAD_MAX` robots, the MAD
        of the whole column (:func:`scipy.stats.median_abs_deviation`) for
        every entry.
    """
    a, c = _columns(v), _columns(centre)
    n, n_cols = a.shape
    if n > EXACT_LOO_MAD_MAX:
        from scipy.stats import median_abs_deviation

        mad = median_abs_deviation(a, axis=0, nan_policy="omit")
        return np.broadcast_to(np.asarray(mad, dtype=float), a.shape).reshape(np.shape(v)).copy()
    out = np.full(a.shape, np.nan)
    # the distinct centres of each column, as slots: slot k holds each column's k-th one
    ordered = np.sort(c, axis=0)
    finite = np.isfinite(ordered)
    distinct = finite.copy()
    distinct[1:] &= ordered[1:] != ordered[:-1]
    slot = np.cumsum(distinct, axis=0) - 1
    rows, cols = np.nonzero(distinct)
    slots = np.full((int(distinct.sum(axis=0).max(initial=0)), n_cols), np.nan)
    slots[slot[rows, cols], cols] = ordered[rows, cols]
    for centre_k in slots:
        hit = c == centre_k[None, :]
        if hit.any():
            out = np.where(hit, _loo_median(np.abs(a - centre_k[None, :])), out)
    return out.reshape(np.shape(v))


def _fleet_scores(
    values: np.ndarray, sigmas: np.ndarray, min_fleet: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out fleet statistics of each (robot, session) cell.

    Args:
        values: Latest value of each robot in each session, NaN where the
            robot has no run, shape (R, S).
        sigmas: Their σ, NaN where absent, shape (R, S).
        min_fleet: Other robots a comparison needs.

    Returns:
        ``(reference, spread, median_sigma, others)``, shape (R, S): median,
        ``1.4826·MAD`` and median σ of the other robots (NaN where fewer
        than ``min_fleet`` other robots have a run in the session), and the
        number of those other robots.
    """
    present = np.isfinite(values)
    others = present.sum(axis=0)[None, :] - present
    ok = others >= min_fleet
    ref = _loo_median(values)
    reference = np.where(ok, ref, np.nan)
    spread = np.where(ok, MAD_TO_SIGMA * _loo_mad(values, ref), np.nan)
    med_sigma = np.where(ok, _loo_median(np.where(present, sigmas, np.nan)), np.nan)
    return reference, spread, med_sigma, others.astype(float)


def _band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per session (column): median and ``1.4826·MAD`` of the robots' finite values.

    Args:
        values: Shape (R, S), NaN where a robot has no run in the session.

    Returns:
        ``(median, spread)``, shape (S,), NaN for a session without a value
        (:func:`scipy.stats.median_abs_deviation` with ``scale="normal"``; a
        lone robot's spread is 0).
    """
    n_robots, n_sessions = values.shape
    if n_sessions == 0:
        return np.zeros(0), np.zeros(0)
    if n_robots == 1:
        v = values[0]
        return v.copy(), np.where(np.isfinite(v), 0.0, np.nan)
    from scipy.stats import median_abs_deviation

    present = np.isfinite(values)
    if present.all():  # every robot in every session: one call
        return np.median(values, axis=0), median_abs_deviation(values, axis=0, scale="normal")
    median = np.full(n_sessions, np.nan)
    spread = np.full(n_sessions, np.nan)
    for j in np.flatnonzero(present.any(axis=0)).tolist():
        v = values[present[:, j], j]
        median[j] = np.median(v)
        spread[j] = median_abs_deviation(v, scale="normal")
    return median, spread


def _bands(matrices: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`_band` of each matrix; full matrices with the same number of robots in one call."""
    out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(matrices)
    groups: dict[int, list[int]] = {}
    for i, m in enumerate(matrices):
        if m.shape[0] > 1 and m.shape[1] and np.isfinite(m).all():
            groups.setdefault(m.shape[0], []).append(i)
        else:
            out[i] = _band(m)
    for members in groups.values():
        median, spread = _band(np.concatenate([matrices[i] for i in members], axis=1))
        edges = np.cumsum([0] + [matrices[i].shape[1] for i in members])
        for i, a, b in zip(members, edges[:-1], edges[1:], strict=True):
            out[i] = (median[a:b], spread[a:b])
    return [band for band in out if band is not None]


# --------------------------------------------------------------------------- #
# The points as arrays
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _Table:
    """The points sorted by quantity, robot, session time and run id, as arrays.

    A *cell* is one robot's runs of one quantity (contiguous, time order);
    cells are numbered in sorted order, so a quantity's cells are contiguous too.
    """

    points: list[HistoryPoint]  # sorted
    x: np.ndarray  # values
    s: np.ndarray  # σ, NaN where absent
    t: np.ndarray  # epoch seconds of the session time
    session: np.ndarray  # index into ``sessions``
    cell: np.ndarray
    start: np.ndarray  # first point of each cell, shape (C,)
    cell_robot: list[str]
    quantities: list[tuple[str, str]]  # (name, structure), sorted
    quantity_start: np.ndarray  # first cell of each quantity, shape (Q + 1,)
    sessions: list[str]


def _table(
    points: Sequence[HistoryPoint],
    keys: Sequence[tuple[str, str]],
    t: np.ndarray,
    sigma: np.ndarray,
) -> _Table:
    quantities = sorted(set(keys))
    qid = {k: n for n, k in enumerate(quantities)}
    robot_names = sorted({str(p.robot_id) for p in points})
    rid = {r: n for n, r in enumerate(robot_names)}
    run_rank = {r: n for n, r in enumerate(sorted({str(p.run_id) for p in points}))}
    sessions = sorted({str(p.session) for p in points})
    sid = {label: n for n, label in enumerate(sessions)}
    q = np.array([qid[k] for k in keys], dtype=np.int64)
    r = np.array([rid[str(p.robot_id)] for p in points], dtype=np.int64)
    run = np.array([run_rank[str(p.run_id)] for p in points], dtype=np.int64)
    order = np.lexsort((run, t, r, q)) if len(points) else np.zeros(0, dtype=np.int64)
    q, r = q[order], r[order]
    new_cell = np.ones(q.size, dtype=bool)
    new_cell[1:] = (q[1:] != q[:-1]) | (r[1:] != r[:-1])
    start = np.flatnonzero(new_cell)
    cell = np.cumsum(new_cell) - 1
    cell_quantity = q[start]
    return _Table(
        points=[points[n] for n in order.tolist()],
        x=np.array([float(points[n].value) for n in order.tolist()]),
        s=sigma[order],
        t=t[order],
        session=np.array([sid[str(points[n].session)] for n in order.tolist()], dtype=np.int64),
        cell=cell,
        start=start,
        cell_robot=[robot_names[n] for n in r[start].tolist()],
        quantities=quantities,
        quantity_start=np.searchsorted(cell_quantity, np.arange(len(quantities) + 1)),
        sessions=sessions,
    )


@dataclass(frozen=True)
class _Fleet:
    """Per point: the fleet comparison's reference, spread, median σ and other robots;
    per quantity: its sessions in time order with their band and first time."""

    reference: np.ndarray
    spread: np.ndarray
    med_sigma: np.ndarray
    others: np.ndarray
    bands: list[dict[str, tuple[float, float]]]
    session_times: list[dict[str, str]]


def _fleet(table: _Table, min_fleet: int) -> _Fleet:
    n = table.x.size
    reference, spread, med_sigma = (np.full(n, np.nan) for _ in range(3))
    others = np.zeros(n)
    matrices, orders, session_times = [], [], []
    end = np.append(table.start, n)
    for qi in range(len(table.quantities)):
        c0, c1 = int(table.quantity_start[qi]), int(table.quantity_start[qi + 1])
        p0, p1 = int(end[c0]), int(end[c1])
        rows = table.cell[p0:p1] - c0
        labels, col = np.unique(table.session[p0:p1], return_inverse=True)
        latest = np.full((c1 - c0, labels.size), -1, dtype=np.int64)
        np.maximum.at(latest, (rows, col), np.arange(p0, p1))  # time order: the latest run wins
        values = np.where(latest >= 0, table.x[latest], np.nan)
        if c1 - c0 > min_fleet:
            sigmas = np.where(latest >= 0, table.s[latest], np.nan)
            f_ref, f_spread, f_sigma, f_count = _fleet_scores(values, sigmas, min_fleet)
            reference[p0:p1] = f_ref[rows, col]
            spread[p0:p1] = f_spread[rows, col]
            med_sigma[p0:p1] = f_sigma[rows, col]
            others[p0:p1] = f_count[rows, col]
        first = np.full(labels.size, -1, dtype=np.int64)
        by_time = np.lexsort((np.arange(p0, p1), table.t[p0:p1], col))
        is_first = np.ones(by_time.size, dtype=bool)
        is_first[1:] = col[by_time][1:] != col[by_time][:-1]
        first[col[by_time][is_first]] = p0 + by_time[is_first]
        names = [table.sessions[k] for k in labels.tolist()]
        chrono = sorted(range(labels.size), key=lambda j: (table.t[first[j]], names[j]))
        matrices.append(values)
        orders.append([(j, names[j]) for j in chrono])
        session_times.append({names[j]: str(table.points[first[j]].session_time) for j in chrono})
    bands = [
        {name: (float(median[j]), float(mad[j])) for j, name in order}
        for (median, mad), order in zip(_bands(matrices), orders, strict=True)
    ]
    return _Fleet(reference, spread, med_sigma, others, bands, session_times)


@dataclass(frozen=True)
class _Comparisons:
    """Every comparison made (finite reference, scale > 0), one entry each."""

    position: np.ndarray  # index of the run's point in the table
    against: np.ndarray  # 0 history, 1 fleet
    value: np.ndarray
    reference: np.ndarray
    scale: np.ndarray
    dof: np.ndarray
    runs: np.ndarray

    @staticmethod
    def of(history: tuple[np.ndarray, ...], fleet: tuple[np.ndarray, ...]) -> _Comparisons:
        """Comparisons from ``(value, reference, scale, dof, runs)`` per point, of each kind."""
        parts = []
        for against, (value, reference, scale, dof, runs) in enumerate((history, fleet)):
            made = np.flatnonzero(np.isfinite(reference) & np.isfinite(scale) & (scale > 0))
            parts.append(
                (
                    made,
                    np.full(made.size, against),
                    value[made],
                    reference[made],
                    scale[made],
                    dof[made],
                    runs[made],
                )
            )
        return _Comparisons(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def _sigma_scales(table: _Table) -> np.ndarray:
    """Default rule: the factor ``√λ ≥ 1`` applied to the recorded σ of each quantity's runs.

    For every cell whose runs all have a σ > 0 (``n ≥ 2`` runs), the scatter
    about the cell's weighted mean against those σ,
    ``u = Σ (x_j − x̄_w)² / σ_j² / median(χ²_{n−1})``, is about 1 when the σ
    are right and nothing moved. ``λ`` is the median of ``u`` over a pool of
    cells — the robots of a stable quantity; every cell of every
    structure-dependent quantity — and never below 1; a pool of fewer than
    :data:`SIGMA_POOL_MIN` cells keeps ``λ = 1``.

    Returns:
        Shape (Q,): ``√λ`` of each quantity of the table.
    """
    from scipy.stats import chi2

    n_cells = table.start.size
    cell = table.cell
    count = np.bincount(cell, minlength=n_cells)
    good = np.isfinite(table.s) & (table.s > 0)
    usable = (np.bincount(cell, weights=~good, minlength=n_cells) == 0) & (count >= 2)
    with np.errstate(divide="ignore"):
        w = np.where(usable[cell] & good, 1.0 / np.where(good, table.s, 1.0) ** 2, 0.0)
    d = table.x - (np.bincount(cell, weights=table.x, minlength=n_cells) / count)[cell]
    sw = np.bincount(cell, weights=w, minlength=n_cells)
    swd = np.bincount(cell, weights=w * d, minlength=n_cells)
    swd2 = np.bincount(cell, weights=w * d * d, minlength=n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        birge = np.maximum(swd2 - swd**2 / sw, 0.0) / chi2.median(np.maximum(count - 1, 1))
    n_quantities = len(table.quantities)
    cell_quantity = np.repeat(np.arange(n_quantities), np.diff(table.quantity_start))
    structural = np.array([structure != STABLE for _, structure in table.quantities], dtype=bool)
    pool = np.where(structural[cell_quantity], n_quantities, cell_quantity)[usable]
    u = birge[usable]
    factor = np.ones(n_quantities + 1)
    order = np.argsort(pool, kind="stable")
    pools, first, sizes = np.unique(pool[order], return_index=True, return_counts=True)
    for p, a, size in zip(pools.tolist(), first.tolist(), sizes.tolist(), strict=True):
        if size >= SIGMA_POOL_MIN:
            factor[p] = max(1.0, float(np.median(u[order[a : a + size]])))
    return np.sqrt(np.where(structural, factor[n_quantities], factor[:n_quantities]))


def _comparisons(
    table: _Table, fleet: _Fleet, rule: str, min_history: int, sigma_scale: np.ndarray
) -> _Comparisons:
    own = np.nan_to_num(table.s)
    n = table.x.size
    ones = np.ones(n)
    if rule == RULE_K:
        h_ref, h_scale = np.full(n, np.nan), np.full(n, np.nan)
        end = np.append(table.start, n)
        for a, b in zip(end[:-1].tolist(), end[1:].tolist(), strict=True):
            h_ref[a:b], h_scale[a:b] = _history_scores(table.x[a:b], table.s[a:b], min_history)
        f_scale = np.maximum(fleet.spread, np.sqrt(own**2 + np.nan_to_num(fleet.med_sigma) ** 2))
        inf = np.full(n, np.inf)
        return _Comparisons.of(
            (table.x, h_ref, h_scale, inf, ones), (table.x, fleet.reference, f_scale, inf, ones)
        )
    h_ref, level, h_scale, h_dof = _split_scores(
        table.x, table.s, table.cell, table.start, min_history
    )
    cell_quantity = np.repeat(np.arange(len(table.quantities)), np.diff(table.quantity_start))
    calibrated = sigma_scale[cell_quantity[table.cell]]
    h_scale = np.where(np.isinf(h_dof), h_scale * calibrated, h_scale)
    runs = np.bincount(table.cell, minlength=table.start.size)[table.cell] - (
        np.arange(n) - table.start[table.cell]
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.maximum(fleet.spread, np.nan_to_num(fleet.med_sigma))
        f_scale = np.sqrt(spread**2 * (1.0 + math.pi / (2.0 * fleet.others)) + own**2)
    f_dof = np.maximum(1.0, MAD_DOF_PER_ROBOT * fleet.others)
    return _Comparisons.of(
        (level, h_ref, h_scale, h_dof, runs.astype(float)),
        (table.x, fleet.reference, f_scale, f_dof, ones),
    )


def _flag_key(f: DriftFlag, times: Mapping[str, float]) -> tuple:
    return (f.robot_id, times.get(f.run_id, 0.0), f.run_id, f.name, f.structure, f.against)


@dataclass(frozen=True)
class _Decision:
    flagged: np.ndarray  # per comparison
    z: np.ndarray
    p: np.ndarray  # NaN under the k rule
    cell_q: np.ndarray  # per cell, NaN under the k rule
    cutoff: float
    tested: np.ndarray  # per cell: has a comparison


def _decide(
    comp: _Comparisons, cell: np.ndarray, n_cells: int, k: float | None, q: float | None
) -> _Decision:
    z = (comp.value - comp.reference) / comp.scale
    comp_cell = cell[comp.position]
    tested = np.bincount(comp_cell, minlength=n_cells) > 0
    if k is not None:
        nan = np.full(z.size, np.nan)
        return _Decision(np.abs(z) > k, z, nan, np.full(n_cells, np.nan), 0.0, tested)
    assert q is not None
    p = two_sided_p(z, comp.dof)
    decision = fdr_decision(p, comp_cell, n_cells, q)
    return _Decision(
        _one_change_point(decision.flagged, z, comp.against, comp_cell),
        z,
        p,
        decision.cell_q,
        decision.cutoff,
        tested,
    )


def _one_change_point(
    flagged: np.ndarray, z: np.ndarray, against: np.ndarray, cell: np.ndarray
) -> np.ndarray:
    """Keep, of each cell's flagged history comparisons, the one with the largest ``|z|``.

    Every split before a change also differs (its later runs hold the changed
    ones); the split of largest ``|z|`` is where the level changed (the
    likelihood-ratio estimate of a single change point). Fleet flags are kept.
    """
    history = np.flatnonzero(flagged & (against == 0))
    if history.size == 0:
        return flagged
    order = history[np.lexsort((-np.abs(z[history]), cell[history]))]
    first = np.ones(order.size, dtype=bool)
    first[1:] = cell[order][1:] != cell[order][:-1]
    out = flagged & (against != 0)
    out[order[first]] = True
    return out


def _optional(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _parameters(
    table: _Table,
    fleet: _Fleet,
    comp: _Comparisons,
    decision: _Decision,
    sigma_scale: np.ndarray,
) -> tuple[ParameterDrift, ...]:
    cell_structure = np.repeat(np.arange(len(table.quantities)), np.diff(table.quantity_start))
    flags_of: dict[int, list[DriftFlag]] = {}
    for n in np.flatnonzero(decision.flagged).tolist():
        position = int(comp.position[n])
        pt = table.points[position]
        cell = int(table.cell[position])
        flags_of.setdefault(int(cell_structure[cell]), []).append(
            DriftFlag(
                robot_id=str(pt.robot_id),
                run_id=str(pt.run_id),
                name=str(pt.name),
                session_time=str(pt.session_time),
                value=float(comp.value[n]),
                reference=float(comp.reference[n]),
                scale=float(comp.scale[n]),
                z=float(decision.z[n]),
                against=_AGAINST[int(comp.against[n])],
                session=str(pt.session),
                p=_optional(decision.p[n]),
                q_value=_optional(decision.cell_q[cell]),
                runs=int(comp.runs[n]),
                structure=table.quantities[int(cell_structure[cell])][1],
            )
        )
    end = np.append(table.start, table.x.size)
    out = []
    for qi, (name, structure) in enumerate(table.quantities):
        cells = range(int(table.quantity_start[qi]), int(table.quantity_start[qi + 1]))
        robots = {table.cell_robot[c]: tuple(table.points[end[c] : end[c + 1]]) for c in cells}
        times = {
            str(p.run_id): float(table.t[end[c]])
            for c in cells
            for p in robots[table.cell_robot[c]]
        }
        q_values = {
            table.cell_robot[c]: float(decision.cell_q[c])
            for c in cells
            if decision.tested[c] and not math.isnan(decision.cell_q[c])
        }
        band = fleet.bands[qi]
        out.append(
            ParameterDrift(
                name=name,
                robots=_frozen_mapping(robots),
                fleet_median=_frozen_mapping({s: m for s, (m, _) in band.items()}),
                fleet_spread=_frozen_mapping({s: d for s, (_, d) in band.items()}),
                flags=tuple(sorted(flags_of.get(qi, ()), key=lambda f: _flag_key(f, times))),
                session_times=_frozen_mapping(fleet.session_times[qi]),
                structure=structure,
                q_values=_frozen_mapping(q_values),
                sigma_scale=float(sigma_scale[qi]),
            )
        )
    return tuple(out)


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
