"""The grading rule of a parameter's uncertainty, shared by every report (terminal and HTML).

A relative standard deviation ``σ/|θ̂|`` is the natural measure for a
parameter whose value is large, and a meaningless one for a value near zero:
a product of inertia of a symmetric link estimated at ``2·10⁻⁶ ± 8·10⁻⁵ kg·m²``
has ``σ/|θ̂| = 3900 %`` and is nevertheless known to within a tiny fraction of
the inertias of the robot. The rule therefore judges σ against the larger of
the value and the **scale of the parameter's kind** (mass, first moment,
inertia, friction, …; joint offset, joint angle, frame position, …):

.. math::

    g_i = \\frac{σ_i}{\\max(|θ̂_i|,\\; S_k)} = \\min\\Big(\\frac{σ_i}{|θ̂_i|},
    \\frac{σ_i}{S_k}\\Big), \\qquad
    S_k = \\max\\big(f \\cdot \\max_{j \\in k} |θ̂_j|,\\; u_k\\big)

* ``|θ̂_i| ≥ S_k`` (a value large against its scale): ``g_i`` is the relative
  σ; ``|θ̂_i| < S_k``: ``g_i`` is σ against the scale (absolute σ). The two
  meet at ``|θ̂_i| = S_k``: the grade is a continuous function of the value.
* ``S_k`` is a fraction ``f`` (:data:`SCALE_FRACTION` = 0.1) of the largest
  magnitude of that kind in the fit, never below ``u_k``, a fixed unit scale
  of the kind where one makes sense (a geometric calibration: 10 mm for
  lengths, 10 mrad for angles, i.e. 10 mm at 1 m); a kind whose values are
  all zero and which has no unit scale has no scale (grade ``unknown``).
* Tier: ``good`` for ``g ≤ 10 %``, ``fair`` for ``10 % < g ≤ 30 %``,
  ``poor`` above, ``unknown`` when σ or the value is not a number.
* Independently, a parameter whose confidence interval ``θ̂ ± t σ`` holds 0
  is flagged **not distinguishable from 0**: the data cannot tell its sign.
  A ``good`` parameter so flagged is precisely known to be near zero; a
  ``poor`` one is simply unknown.

Both reports and the insights call :func:`grade_parameters`; nothing else
decides a tier.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence

__all__ = [
    "GRADE_TIERS",
    "SCALE_FRACTION",
    "UNCERTAINTY_CAUTION_PCT",
    "UNCERTAINTY_WARN_PCT",
    "ZERO_TEXT",
    "ParameterGrade",
    "grade_parameter",
    "grade_parameters",
    "kind_scales",
]

#: Grade score ``g`` [%] above which a parameter is poorly identified.
UNCERTAINTY_WARN_PCT = 30.0
#: Grade score ``g`` [%] above which a parameter is only fairly identified.
UNCERTAINTY_CAUTION_PCT = 10.0
#: Fraction ``f`` of the largest magnitude of a kind that makes the kind's scale.
SCALE_FRACTION = 0.1
#: Tiers in order of confidence.
GRADE_TIERS = ("good", "fair", "poor", "unknown")
#: Flag of a parameter whose confidence interval holds 0.
ZERO_TEXT = "not distinguishable from 0"


@dataclass(frozen=True)
class ParameterGrade:
    """The grade of one parameter.

    Attributes:
        tier: ``"good"``, ``"fair"``, ``"poor"`` or ``"unknown"``.
        score_pct: ``g = 100·σ / max(|θ̂|, S)`` [%] (NaN when unknown, ``inf``
            for an infinite σ).
        relative_pct: ``100·σ / |θ̂|`` [%] (``inf`` for θ̂ = 0, NaN when unknown).
        scaled_pct: ``100·σ / S`` [%] (NaN without a scale).
        scale: ``S`` of the parameter's kind (parameter unit; 0 when none).
        basis: ``"relative"`` (``|θ̂| ≥ S``: g is the relative σ), ``"scale"``
            (g is σ against the scale) or ``"unknown"``.
        zero: True when the confidence interval holds 0, False when it does
            not, None when no interval is known.
    """

    tier: str
    score_pct: float
    relative_pct: float
    scaled_pct: float
    scale: float
    basis: str
    zero: bool | None = None

    @property
    def label(self) -> str:
        """``"good"``, or ``"good · not distinguishable from 0"`` for a flagged one."""
        return f"{self.tier} · {ZERO_TEXT}" if self.zero else self.tier


def _uncertainty_tier(std_pct: float | None) -> str:
    """Tier of a grade score (or any relative spread) ``g`` [%].

    Args:
        std_pct: The score [%], or None.

    Returns:
        ``"unknown"`` (None/NaN), ``"poor"`` (> 30 %), ``"fair"`` (> 10 %) or
        ``"good"``; boundaries are exclusive (exactly 30 % is ``fair``, exactly
        10 % is ``good``).
    """
    if std_pct is None:
        return "unknown"
    try:
        pct = abs(float(std_pct))
    except (TypeError, ValueError):
        return "unknown"
    if math.isnan(pct):
        return "unknown"
    if pct > UNCERTAINTY_WARN_PCT:
        return "poor"
    if pct > UNCERTAINTY_CAUTION_PCT:
        return "fair"
    return "good"


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def kind_scales(
    kinds: Sequence[Any],
    values: Sequence[Any],
    unit_scales: Mapping[Any, float] | None = None,
) -> Dict[Any, float]:
    """``S_k = max(f · max_{j∈k} |θ̂_j|, u_k)`` of every kind (0 when it has none).

    Args:
        kinds: Kind of each parameter (any hashable key).
        values: Estimates θ̂ (same order); non-finite ones are ignored.
        unit_scales: ``u_k`` of the kinds that have a fixed unit scale.

    Returns:
        Kind → scale.
    """
    largest: Dict[Any, float] = {}
    for kind, v in zip(kinds, values, strict=True):
        v = _float(v)
        largest.setdefault(kind, 0.0)
        if math.isfinite(v):
            largest[kind] = max(largest[kind], abs(v))
    units = unit_scales or {}
    return {k: max(SCALE_FRACTION * m, float(units.get(k, 0.0))) for k, m in largest.items()}


def grade_parameter(value: Any, sigma: Any, scale: float, half_width: Any = None) -> ParameterGrade:
    """The grade of one parameter (see the module for the rule).

    Args:
        value: Estimate θ̂.
        sigma: Its standard deviation σ (same unit).
        scale: Scale ``S`` of its kind (same unit; 0 when none).
        half_width: ``t σ``, half the width of its confidence interval (None
            when unknown).

    Returns:
        The grade.
    """
    theta, sd, s = _float(value), _float(sigma), max(_float(scale), 0.0)
    if not math.isfinite(s):
        s = 0.0
    h = _float(half_width)
    zero = None if not (math.isfinite(theta) and not math.isnan(h)) else bool(abs(theta) <= h)
    if math.isnan(theta) or math.isnan(sd):
        return ParameterGrade("unknown", math.nan, math.nan, math.nan, s, "unknown", zero)
    sd = abs(sd)
    relative = 100.0 * sd / abs(theta) if theta != 0 else (math.inf if sd > 0 else 0.0)
    scaled = 100.0 * sd / s if s > 0 else math.nan
    reference = max(abs(theta), s)
    if reference == 0.0:
        if sd == 0.0:
            return ParameterGrade("good", 0.0, relative, scaled, s, "relative", zero)
        return ParameterGrade("unknown", math.nan, relative, scaled, s, "unknown", zero)
    score = 100.0 * sd / reference
    basis = "relative" if abs(theta) >= s else "scale"
    return ParameterGrade(_uncertainty_tier(score), score, relative, scaled, s, basis, zero)


def grade_parameters(
    kinds: Sequence[Any],
    values: Sequence[Any],
    sigma: Sequence[Any],
    half_widths: Sequence[Any] | None = None,
    unit_scales: Mapping[Any, float] | None = None,
) -> List[ParameterGrade]:
    """The grade of every parameter of a fit (one rule for every report).

    Args:
        kinds: Kind of each parameter (parameters of one kind share a scale).
        values: Estimates θ̂.
        sigma: Standard deviations σ.
        half_widths: ``t σ`` of each confidence interval (None: no zero flag).
        unit_scales: Fixed unit scale ``u_k`` of the kinds that have one.

    Returns:
        One grade per parameter, in order.

    Raises:
        ValueError: The sequences differ in length.
    """
    n = len(kinds)
    if len(values) != n or len(sigma) != n or (half_widths is not None and len(half_widths) != n):
        raise ValueError(
            f"grade_parameters: {n} kinds, {len(values)} values, {len(sigma)} standard "
            f"deviations{'' if half_widths is None else f', {len(half_widths)} half widths'}"
        )
    scales = kind_scales(kinds, values, unit_scales)
    halves = [None] * n if half_widths is None else list(half_widths)
    return [grade_parameter(values[i], sigma[i], scales[kinds[i]], halves[i]) for i in range(n)]


def tier_limits_text() -> str:
    """``"good ≤ 10 % < fair ≤ 30 % < poor"``."""
    return f"good ≤ {UNCERTAINTY_CAUTION_PCT:.0f} % < fair ≤ {UNCERTAINTY_WARN_PCT:.0f} % < poor"
