"""Uncertainty of estimated parameters: σ, confidence interval and grade, row by row.

A relative standard deviation ``σ_i/|φ_i|`` says nothing when ``φ_i ≈ 0`` (a
product of inertia of a symmetric link gives thousands of percent for a tiny
absolute σ). Parameters are therefore grouped by physical kind (mass, first
moment, inertia, friction, …, from the leading letters of their names) and
graded by :mod:`figaroh._run.uncertainty_grade` (σ against the larger of the
value and the kind's scale). :func:`parameter_table` assembles, for each
parameter, the value, σ, the confidence interval of
:mod:`figaroh._run.confidence` and the grade: the terminal reports, the HTML
reports and the parameter CSV files all read this one table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from figaroh._run.confidence import (
    DEFAULT_CONFIDENCE_LEVEL,
    confidence_intervals,
    level_text,
)
from figaroh._run.uncertainty_grade import (
    GRADE_TIERS,
    SCALE_FRACTION,
    UNCERTAINTY_CAUTION_PCT,
    UNCERTAINTY_WARN_PCT,
    ParameterGrade,
    grade_parameters,
)

__all__ = [
    "NEAR_ZERO_FRACTION",
    "ParameterRow",
    "ParameterTable",
    "kind_unit",
    "parameter_kind",
    "parameter_table",
    "parameter_uncertainty",
    "uncertainty_note",
]

#: Parameter kind of each name prefix: parameters of one kind share a physical scale.
_PARAMETER_KINDS = {
    "m": "mass [kg]",
    **{k: "first moment [kg·m]" for k in ("mx", "my", "mz")},
    **{k: "inertia [kg·m²]" for k in ("Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")},
    "fv": "viscous friction",
    "fs": "Coulomb friction",
    "Ia": "armature [kg·m²]",
    "off": "effort offset",
}
#: |φ_i| at or below this fraction of its kind's scale counts as ≈ 0 (no relative σ).
NEAR_ZERO_FRACTION = 0.01


def parameter_kind(name: Any) -> str:
    """Physical kind of a (base) parameter from the leading letters of its name.

    ``"Ixy_elbow_joint + 0.5*m_wrist_1_joint"`` → ``"inertia [kg·m²]"``; a
    prefix that is not a dynamic-parameter prefix is its own kind.
    """
    match = re.match(r"[A-Za-z]+", str(name))
    key = match.group(0) if match else str(name)
    return _PARAMETER_KINDS.get(key, key)


def kind_unit(kind: str) -> str:
    """The unit in brackets of a kind label: ``"inertia [kg·m²]"`` → ``"kg·m²"`` (else ``""``)."""
    match = re.search(r"\[([^\]]+)\]\s*$", str(kind))
    return match.group(1) if match else ""


def parameter_uncertainty(
    names: Sequence[Any], values: Sequence[Any] | None, std_relative: Sequence[Any] | None
) -> Dict[str, List[Any]]:
    """Absolute σ, relative σ where meaningful, and σ against the physical scale.

    With ``σ_i = |std%_i / 100 · φ_i|`` (parameter units) and the scale of a
    kind ``s_k = max_{j ∈ k} |φ_j|`` (largest magnitude of that physical
    quantity in the fit, see :func:`parameter_kind`):

    * ``relative_pct[i] = std%_i`` only when ``|φ_i| > NEAR_ZERO_FRACTION · s_k``,
      else None (the relative σ of a value ≈ 0, e.g. a product of inertia of a
      symmetric link, says nothing about the fit);
    * ``scaled_pct[i] = σ_i / s_k · 100`` [%], which decides the quality tier.

    Args:
        names: Parameter names.
        values: Estimates φ (SI units).
        std_relative: Relative standard deviations σ_i/|φ_i|·100 [%].

    Returns:
        ``{"sigma", "relative_pct", "scaled_pct", "scale", "kind"}`` lists
        aligned with ``names`` (NaN / None where unavailable).
    """
    n = len(names)

    def floats(seq: Sequence[Any] | None) -> List[float]:
        raw = [] if seq is None else list(np.ravel(np.asarray(seq, dtype=float)))
        return (raw + [math.nan] * n)[:n]

    phi, pct = floats(values), floats(std_relative)
    kinds = [parameter_kind(nm) for nm in names]
    scale: Dict[str, float] = {}
    for kind, v in zip(kinds, phi, strict=True):
        if math.isfinite(v):
            scale[kind] = max(scale.get(kind, 0.0), abs(v))
    sigma = [
        abs(p / 100.0 * v) if math.isfinite(p) and math.isfinite(v) else math.nan
        for p, v in zip(pct, phi, strict=True)
    ]
    out: Dict[str, List[Any]] = {
        "sigma": sigma,
        "relative_pct": [],
        "scaled_pct": [],
        "scale": [],
        "kind": kinds,
    }
    for i, kind in enumerate(kinds):
        s_k = scale.get(kind, 0.0)
        out["scale"].append(s_k)
        near_zero = not math.isfinite(phi[i]) or abs(phi[i]) <= NEAR_ZERO_FRACTION * s_k
        out["relative_pct"].append(None if near_zero else pct[i])
        scaled = sigma[i] / s_k * 100.0 if s_k > 0 and math.isfinite(sigma[i]) else math.nan
        if not math.isfinite(sigma[i]) and math.isinf(pct[i]):
            scaled = math.inf  # an infinite spread is certainly poorly identified
        out["scaled_pct"].append(scaled)
    return out


def uncertainty_note(
    table: ParameterTable | None = None, kinds_text: str = "", unit_scales_text: str = ""
) -> str:
    """Plain text explaining the columns, the interval and the grading rule of the table.

    Args:
        table: The table (its level and degrees of freedom are quoted), or None.
        kinds_text: The kinds of the task, e.g. ``"mass, first moment, inertia,
            friction, …"``.
        unit_scales_text: The fixed unit scales of the task's kinds, e.g.
            ``"10 mm for lengths, 10 mrad for angles"`` ("" when none).
    """
    kinds = kinds_text or "mass, first moment, inertia, friction, …"
    text = "σ is the absolute standard deviation (parameter units). "
    if table is not None:
        text += f"{table.interval_text()}. "
    units = f", or {unit_scales_text} when larger" if unit_scales_text else ""
    return text + (
        "Grade: g = σ / max(|value|, S), the smaller of σ / |value| and σ / S, S being the "
        f"scale of the parameter's kind ({kinds}): {SCALE_FRACTION:g} × the largest |value| "
        f"of that kind{units}; good ≤ {UNCERTAINTY_CAUTION_PCT:.0f} % < fair ≤ "
        f"{UNCERTAINTY_WARN_PCT:.0f} % < poor. A parameter whose interval holds 0 is "
        "not distinguishable from 0 (the data cannot tell its sign)."
    )


@dataclass(frozen=True)
class ParameterRow:
    """One parameter of a report: value, σ, confidence interval and grade.

    Attributes:
        name: Parameter name (or base-parameter expression).
        kind: Its kind (parameters of one kind share a scale).
        value: Estimate θ̂ (parameter unit).
        sigma: Standard deviation σ (parameter unit; NaN when unknown).
        ci_low: Lower bound of the confidence interval (NaN when unknown).
        ci_high: Upper bound.
        grade: The grade (:mod:`figaroh._run.uncertainty_grade`).
        unit: The parameter's unit (``"kg·m²"``, ``"m"``, …; ``""`` when unknown).
    """

    name: str
    kind: str
    value: float
    sigma: float
    ci_low: float
    ci_high: float
    grade: ParameterGrade
    unit: str = ""


@dataclass(frozen=True)
class ParameterTable:
    """Every parameter of a fit with its σ, interval and grade, in the fit's order.

    Attributes:
        rows: One row per parameter.
        level: Confidence level of the intervals in ``(0, 1)``.
        dof: Residual degrees of freedom of the t quantile (None when unknown,
            ``inf`` when σ comes from a known noise level).
        t: The factor ``t_{1−α/2, dof}`` (NaN when unknown).
    """

    rows: Tuple[ParameterRow, ...]
    level: float
    dof: float | None
    t: float

    def ranked(self) -> List[ParameterRow]:
        """Rows by decreasing grade score ``g`` (the least certain first, unknown last)."""
        return sorted(
            self.rows,
            key=lambda r: (math.isnan(r.grade.score_pct), -np.nan_to_num(r.grade.score_pct)),
        )

    def counts(self) -> Dict[str, int]:
        """Number of rows of each tier (``good``, ``fair``, ``poor``, ``unknown``)."""
        return {t: sum(1 for r in self.rows if r.grade.tier == t) for t in GRADE_TIERS}

    def n_zero(self) -> int:
        """Rows whose interval holds 0."""
        return sum(1 for r in self.rows if r.grade.zero)

    def interval_text(self) -> str:
        """``"95 % confidence interval θ̂ ± t σ, t = 1.960 (Student t, 29952 residual
        degrees of freedom)"``."""
        head = f"{level_text(self.level)} confidence interval value ± t·σ"
        if self.dof is None or not math.isfinite(self.t):
            return head + " (unavailable: no residual degrees of freedom)"
        if math.isinf(self.dof):
            return head + f", t = {self.t:.3f} (normal quantile: σ from the known noise level)"
        return head + f", t = {self.t:.3f} (Student t, {int(self.dof)} residual degrees of freedom)"

    def summary_text(self) -> str:
        """``"40 good, 5 fair, 3 poor; 12 not distinguishable from 0"``."""
        counts = self.counts()
        parts = [f"{counts[t]} {t}" for t in GRADE_TIERS if counts[t] or t != "unknown"]
        return ", ".join(parts) + f"; {self.n_zero()} not distinguishable from 0"

    def column(self, field: str) -> List[float]:
        """One numeric field of every row (``value``, ``sigma``, ``ci_low``, ``ci_high``)."""
        return [float(getattr(r, field)) for r in self.rows]


def parameter_table(
    names: Sequence[Any],
    kinds: Sequence[Any],
    values: Sequence[Any] | None,
    sigma: Sequence[Any] | None,
    dof: Any,
    level: float = DEFAULT_CONFIDENCE_LEVEL,
    unit_scales: Mapping[Any, float] | None = None,
    units: Sequence[str] | None = None,
) -> ParameterTable:
    """The parameter table of a fit: σ, ``θ̂ ± t_{1−α/2, dof} σ`` and the grade of each parameter.

    Args:
        names: Parameter names.
        kinds: Kind of each parameter (grouping key of the scales).
        values: Estimates θ̂ (missing entries NaN).
        sigma: Standard deviations σ (same units; missing entries NaN).
        dof: Residual degrees of freedom ``n − p`` (``inf``: σ from a known
            noise level, normal quantile; None or ≤ 0: no interval).
        level: Confidence level in ``(0, 1)``.
        unit_scales: Fixed unit scale of the kinds that have one.
        units: Unit of each parameter (None: ``""``).

    Returns:
        The table.
    """
    n = len(names)
    unit_of = list(units) if units is not None else [""] * n

    def floats(seq: Sequence[Any] | None) -> np.ndarray:
        raw = [] if seq is None else list(np.ravel(np.asarray(seq, dtype=float)))
        return np.asarray((raw + [math.nan] * n)[:n], dtype=float)

    theta, sd = floats(values), floats(sigma)
    ci = confidence_intervals(theta, sd, dof, level)
    halves = ci.half_width if math.isfinite(ci.t) else None
    grades = grade_parameters(
        list(kinds),
        theta.tolist(),
        sd.tolist(),
        None if halves is None else halves.tolist(),
        unit_scales,
    )
    rows = tuple(
        ParameterRow(
            str(names[i]),
            str(kinds[i]),
            float(theta[i]),
            float(sd[i]),
            float(ci.low[i]),
            float(ci.high[i]),
            grades[i],
            str(unit_of[i]) if i < len(unit_of) else "",
        )
        for i in range(n)
    )
    try:
        nu = float(dof) if dof is not None else None
    except (TypeError, ValueError):
        nu = None
    return ParameterTable(rows=rows, level=ci.level, dof=nu, t=ci.t)
