"""The comparisons of a drift report: points as arrays, fleet references, σ scales, flags.

:func:`figaroh.fleet.drift.analyse_drift` turns the history points of one
quantity into a table (robots × runs), scores every run against its
history and against the fleet (:mod:`figaroh.fleet.drift_scores`),
calibrates the σ on the fleet (``λ``, :data:`SIGMA_POOL_MIN`), decides the
flags under the threshold or false-discovery-rate rule
(:mod:`figaroh.fleet.drift_fdr`) and builds one
:class:`~figaroh.fleet.drift_records.ParameterDrift`; the rule itself is
described in :mod:`figaroh.fleet.drift`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from figaroh.fleet.drift_fdr import fdr_decision, two_sided_p
from figaroh.fleet.drift_records import (
    _AGAINST,
    RULE_K,
    DriftFlag,
    ParameterDrift,
    _frozen_mapping,
)
from figaroh.fleet.drift_scores import _bands, _fleet_scores, _history_scores, _split_scores
from figaroh.fleet.index_schema import HistoryPoint
from figaroh.fleet.parameter_identity import STABLE

__all__ = ["MAD_DOF_PER_ROBOT", "SIGMA_POOL_MIN"]

MAD_DOF_PER_ROBOT = 0.3675
#: Cells a σ-calibration pool needs before its factor is used (default rule).
SIGMA_POOL_MIN = 5


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
