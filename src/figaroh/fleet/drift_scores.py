"""Vectorised statistics of the drift rule: history splits, leave-one-out fleet scores, bands.

Each function takes one quantity's values ``x`` and standard deviations ``σ``
as arrays (one robot's runs in time order, or one session's robots) and
returns the reference and scale of every comparison, ``z = (x − reference) /
scale``; the formulas, and the rules that turn ``z`` into flags, are given in
:mod:`figaroh.fleet.drift`. Values keep the parameter's own SI unit; ``z`` is
dimensionless.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["EXACT_LOO_MAD_MAX", "MAD_TO_SIGMA"]

#: ``1 / Φ⁻¹(3/4)``, the factor of ``scipy.stats.median_abs_deviation(scale="normal")``.
MAD_TO_SIGMA = 1.482602218505602
#: Degrees of freedom per value of a MAD-based σ: the asymptotic efficiency of
#: the MAD relative to the standard deviation for normal data.
#: Largest fleet whose leave-one-out MAD is computed exactly (``R × R`` table per session).
EXACT_LOO_MAD_MAX = 1024


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
