"""False-discovery-rate decision of a drift report: which comparisons and robots are flagged.

A drift report makes many comparisons: every run of every robot, for every
parameter, against the robot's history and against the fleet. Flagging each
comparison whose ``|z|`` exceeds a fixed ``k`` flags, on pure noise, about
``N·P(|Z| > k)`` of ``N`` comparisons — a fleet of 600 robots with 50
parameters each always has some. This module controls the false alarms of
the whole report instead.

**Cells.** The comparisons are grouped in cells, one per (robot, quantity)
(see :mod:`figaroh.fleet.parameter_identity` for what one quantity is). Each
comparison ``j`` of cell ``c`` has a two-sided p-value ``p_cj``
(:func:`two_sided_p`).

**Within a cell: Simes.** The cell's p-value is Simes's combination of its
``m_c`` comparisons, ``P_c = min_j m_c·p_c(j) / j`` over the sorted
``p_c(1) ≤ … ≤ p_c(m_c)`` — the smallest Benjamini–Hochberg adjusted p-value
of the cell, ``P_c = min_j p̃_cj``. It is a valid p-value for "nothing of this
cell moved" when the comparisons are independent or positively dependent (the
history comparisons of one robot share runs, the fleet comparisons of one
robot share its offset from the fleet: positive dependence), and it is never
smaller than the smallest ``p_cj`` nor larger than Bonferroni's
``m_c·min p_cj``.

**Across cells: Benjamini–Hochberg at level q.** The cell p-values of the
report are adjusted with :func:`scipy.stats.false_discovery_control`
(``method="bh"``) into q-values ``Q_c``; a cell is flagged when
``Q_c ≤ q``. Among the flagged cells of a report, the expected fraction of
cells that did not move is at most ``q``; when nothing moved anywhere, the
probability that a report flags anything at all is at most ``q``. A robot is
flagged when one of its cells is: on a fleet where nothing drifts, at most a
fraction ``q`` of reports flag any robot, so the expected fraction of robots
flagged per report is far below ``q``.

**Which runs.** Within the ``R`` flagged cells of ``N`` tested ones, the
comparisons are tested with Benjamini–Hochberg at level ``q·R/N``
(Benjamini and Bogomolov's selective inference on families: the average
false-discovery rate over the selected cells stays at most ``q``):
comparison ``j`` of a flagged cell is flagged when ``p̃_cj ≤ q·R/N``. Every
flagged cell has at least one flagged comparison (its ``P_c ≤ q·R/N`` by
the step-up rule).

Cost: one sort of the report's comparisons (by cell, then p) and one sort of
the cells; ``O(N log N)`` for ``N`` comparisons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_FDR_LEVEL",
    "FdrDecision",
    "bh_adjust",
    "check_level",
    "fdr_decision",
    "grouped_bh_adjust",
    "two_sided_p",
]

#: Default false-discovery-rate level ``q`` of a drift report.
DEFAULT_FDR_LEVEL = 0.05


def check_level(q: object) -> float:
    """``q`` as a float in (0, 1); raises ValueError naming the field otherwise."""
    try:
        value = float(q)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(q, bool) or not (0.0 < value < 1.0):
        raise ValueError(
            f"q must be a false-discovery-rate level in (0, 1), got {q!r}; "
            f"use e.g. q={DEFAULT_FDR_LEVEL}"
        )
    return value


def two_sided_p(z: np.ndarray, dof: np.ndarray | float = math.inf) -> np.ndarray:
    """Two-sided p-values ``P(|T| ≥ |z|)`` of scores ``z``.

    Args:
        z: Scores (dimensionless), any shape; NaN gives NaN.
        dof: Degrees of freedom of Student's t distribution of each score
            (broadcast with ``z``); ``inf`` means the standard normal.

    Returns:
        ``2·sf(|z|)`` of :data:`scipy.stats.norm` (``dof = inf``) or
        :data:`scipy.stats.t` (finite ``dof`` ≥ 1 … or any positive value).
    """
    from scipy import stats

    z = np.abs(np.asarray(z, dtype=float))
    dof = np.broadcast_to(np.asarray(dof, dtype=float), z.shape)
    normal = ~np.isfinite(dof)
    out = np.empty(z.shape)
    out[normal] = 2.0 * stats.norm.sf(z[normal])
    out[~normal] = 2.0 * stats.t.sf(z[~normal], dof[~normal])
    return np.minimum(out, 1.0)


def bh_adjust(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values of ``p`` (1-D, values in [0, 1]).

    :func:`scipy.stats.false_discovery_control` with ``method="bh"``; on a
    SciPy older than 1.11, which lacks it, the same step-up formula
    ``p̃_(i) = min_{j ≥ i} min(1, n·p_(j)/j)``.
    """
    p = np.asarray(p, dtype=float)
    if p.size == 0:
        return p.copy()
    from scipy import stats

    control = getattr(stats, "false_discovery_control", None)
    if control is not None:
        return np.asarray(control(p, method="bh"), dtype=float)
    return grouped_bh_adjust(p, np.zeros(p.size, dtype=np.int64))  # pragma: no cover - SciPy 1.10


def grouped_bh_adjust(p: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values within each group, all groups at once.

    Args:
        p: p-values, shape (N,).
        group: Integer group of each p-value, shape (N,).

    Returns:
        Shape (N,): for each group ``g`` with ``m_g`` values, the adjusted
        ``min_{j ≥ i} min(1, m_g·p_(j)/j)`` of its ``i``-th smallest value —
        what :func:`bh_adjust` gives on that group alone.
    """
    p = np.asarray(p, dtype=float)
    group = np.asarray(group)
    n = p.size
    if n == 0:
        return p.copy()
    order = np.lexsort((p, group))
    g = group[order]
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    sizes = np.diff(np.concatenate((starts, [n])))
    rank = np.arange(n) - np.repeat(starts, sizes) + 1
    scaled = np.minimum(1.0, np.repeat(sizes, sizes) * p[order] / rank)
    # step-up: cumulative minimum from each group's largest p-value down
    for a, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
        scaled[a : a + size] = np.minimum.accumulate(scaled[a : a + size][::-1])[::-1]
    adjusted = np.empty(n)
    adjusted[order] = scaled
    return adjusted


@dataclass(frozen=True)
class FdrDecision:
    """Outcome of :func:`fdr_decision`.

    Attributes:
        flagged: Flagged comparisons, shape (N,).
        within: Within-cell Benjamini–Hochberg adjusted p-value ``p̃`` of each
            comparison, shape (N,).
        cell_p: Simes p-value ``P_c`` of each cell, shape (C,).
        cell_q: Benjamini–Hochberg q-value ``Q_c`` of each cell, shape (C,).
        cell_flagged: ``Q_c ≤ q``, shape (C,).
        cutoff: The within-cell level ``q·R/N`` (0 when no cell is flagged).
        q: The level.
    """

    flagged: np.ndarray
    within: np.ndarray
    cell_p: np.ndarray
    cell_q: np.ndarray
    cell_flagged: np.ndarray
    cutoff: float
    q: float


def fdr_decision(p: np.ndarray, cell: np.ndarray, n_cells: int, q: float) -> FdrDecision:
    """Flag the comparisons of a report at false-discovery rate ``q`` (see the module docstring).

    Args:
        p: Two-sided p-value of each comparison, shape (N,), in [0, 1].
        cell: Cell index of each comparison in ``range(n_cells)``, shape (N,).
        n_cells: Number of cells; a cell without comparisons has ``P_c = 1``,
            ``Q_c = 1`` and does not count among the tests of the adjustment.
        q: False-discovery-rate level in (0, 1).

    Returns:
        The :class:`FdrDecision`.
    """
    q = check_level(q)
    p = np.asarray(p, dtype=float)
    cell = np.asarray(cell, dtype=np.int64)
    within = grouped_bh_adjust(p, cell)
    cell_p = np.ones(n_cells)
    if p.size:
        np.minimum.at(cell_p, cell, within)
    tested = np.bincount(cell, minlength=n_cells) > 0
    cell_q = np.ones(n_cells)
    cell_q[tested] = bh_adjust(cell_p[tested])
    cell_flagged = cell_q <= q
    cutoff = q * int(cell_flagged.sum()) / max(1, int(tested.sum()))
    flagged = cell_flagged[cell] & (within <= cutoff) if p.size else np.zeros(0, dtype=bool)
    return FdrDecision(
        flagged=flagged,
        within=within,
        cell_p=cell_p,
        cell_q=cell_q,
        cell_flagged=cell_flagged,
        cutoff=cutoff,
        q=q,
    )
