"""Confidence intervals of estimated parameters: Student t on the residual degrees of freedom.

A least-squares fit of ``p`` parameters to ``n`` residual rows estimates the
residual variance ``s² = ‖r‖² / (n − p)`` and, from it, the standard deviation
``σ̂_i`` of each estimate ``θ̂_i`` (``σ̂_i² = s² [(JᵀJ)⁻¹]_ii``, ``J`` the
regressor or the Jacobian at the optimum). The confidence interval of the true
``θ_i`` at level ``1 − α`` is

.. math::

    θ̂_i ± t_{1−α/2,\\,n−p} \\; σ̂_i

with ``t_{q,ν}`` the ``q``-quantile of Student's t distribution with ``ν``
degrees of freedom: :func:`scipy.special.stdtrit`, the inverse distribution
function that ``scipy.stats.t.ppf`` evaluates, called directly so that a
report does not import ``scipy.stats`` (seconds on a loaded machine). For a linear model with
independent Gaussian errors of equal variance the interval holds the true
value with probability exactly ``1 − α``; for a nonlinear least-squares fit
(geometric calibration) it is the usual first-order (linearised) interval.

The level is a fraction in ``(0, 1)`` (0.95 by default). A configuration
gives it once, for every report of the task::

    tasks:
      identification:
        verification:
          confidence_level: 0.99

The intervals never change an estimate or its σ: they are computed from them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = [
    "CONFIG_KEY",
    "DEFAULT_CONFIDENCE_LEVEL",
    "ConfidenceIntervals",
    "check_confidence_level",
    "confidence_intervals",
    "configured_confidence_level",
    "level_text",
    "t_quantile",
]

#: Level of the intervals when neither the caller nor the configuration names one.
DEFAULT_CONFIDENCE_LEVEL = 0.95
#: Key of the level in a task's ``verification`` section.
CONFIG_KEY = "confidence_level"


def check_confidence_level(
    level: Any, where: str = CONFIG_KEY, error: type[Exception] = ValueError
) -> float:
    """``level`` as a float in ``(0, 1)``, or a clear error naming ``where`` and the fix.

    Args:
        level: The confidence level (a fraction: 0.95 for 95 %).
        where: Name of the option or key, for the message.
        error: Exception class raised.

    Returns:
        The level as a float.

    Raises:
        ValueError: (or ``error``) not a number, or not strictly between 0 and 1
            (a percentage such as 95 is refused with the fraction to write).
    """
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating, np.integer)):
        raise error(f"{where}: the confidence level must be a number in (0, 1), got {level!r}")
    value = float(level)
    if not 0.0 < value < 1.0 or not math.isfinite(value):
        hint = f"; write {value / 100:g} for {value:g} %" if 1.0 < value < 100.0 else ""
        raise error(
            f"{where}: the confidence level must lie strictly between 0 and 1 "
            f"(0.95 for 95 %), got {level!r}{hint}"
        )
    return value


def t_quantile(level: float, dof: Any) -> float:
    """``t_{(1+level)/2, dof}``: the two-sided Student t factor of a level.

    Args:
        level: Confidence level in ``(0, 1)``.
        dof: Residual degrees of freedom ``n − p``.

    Returns:
        ``scipy.special.stdtrit(dof, 0.5 + level / 2)`` (equal to
        ``scipy.stats.t.ppf(0.5 + level / 2, dof)``; the normal quantile for
        ``dof = inf``); NaN when ``dof`` is unknown (None) or not positive (no
        residual left to estimate σ).
    """
    level = check_confidence_level(level, "level")
    try:
        nu = float(dof)
    except (TypeError, ValueError):
        return math.nan
    if not nu > 0:
        return math.nan
    from scipy.special import stdtrit  # only where intervals are computed

    return float(stdtrit(nu, 0.5 + level / 2.0))


@dataclass(frozen=True)
class ConfidenceIntervals:
    """Intervals ``θ̂ ± t σ̂`` of a set of estimates.

    Attributes:
        level: Confidence level ``1 − α`` in ``(0, 1)``.
        dof: Residual degrees of freedom ``n − p`` (None when unknown, ``inf``
            when σ comes from a known noise level: the normal quantile).
        t: The factor ``t_{1−α/2, n−p}`` (NaN without degrees of freedom).
        low: Lower bounds, in the parameters' units (NaN where σ is unknown).
        high: Upper bounds.
    """

    level: float
    dof: float | None
    t: float
    low: np.ndarray
    high: np.ndarray

    @property
    def half_width(self) -> np.ndarray:
        """``t σ̂``: half the width of each interval."""
        return (self.high - self.low) / 2.0

    def contains_zero(self) -> np.ndarray:
        """True where the interval holds 0 (the estimate is not distinguishable from 0).

        False where the interval is unknown (NaN bounds).
        """
        with np.errstate(invalid="ignore"):
            return (self.low <= 0.0) & (self.high >= 0.0)


def confidence_intervals(
    values: Sequence[Any] | np.ndarray,
    sigma: Sequence[Any] | np.ndarray,
    dof: Any,
    level: float = DEFAULT_CONFIDENCE_LEVEL,
) -> ConfidenceIntervals:
    """``θ̂ ± t_{1−α/2, dof} σ̂`` for every estimate.

    Args:
        values: Estimates ``θ̂`` (n,).
        sigma: Their standard deviations ``σ̂`` (n,), same units; an infinite
            σ gives an unbounded interval, a NaN σ a NaN one.
        dof: Residual degrees of freedom ``n_rows − p``.
        level: Confidence level ``1 − α`` in ``(0, 1)``.

    Returns:
        The intervals.

    Raises:
        ValueError: ``values`` and ``sigma`` differ in length, or a bad level.
    """
    level = check_confidence_level(level, "level")
    theta = np.ravel(np.asarray(values, dtype=float))
    sd = np.ravel(np.asarray(sigma, dtype=float))
    if theta.shape != sd.shape:
        raise ValueError(
            f"confidence_intervals: {theta.size} values but {sd.size} standard deviations"
        )
    t = t_quantile(level, dof)
    with np.errstate(invalid="ignore"):
        half = t * np.abs(sd)
    try:
        nu: float | None = float(dof)
    except (TypeError, ValueError):
        nu = None
    if nu is not None and math.isfinite(nu):
        nu = int(nu)
    return ConfidenceIntervals(level=level, dof=nu, t=t, low=theta - half, high=theta + half)


def configured_confidence_level(config: Mapping[str, Any] | None) -> float:
    """The level of a converted task configuration's ``verification`` section (else 0.95)."""
    section = (config or {}).get("verification") if isinstance(config, Mapping) else None
    if isinstance(section, Mapping) and section.get(CONFIG_KEY) is not None:
        return check_confidence_level(section[CONFIG_KEY], f"verification.{CONFIG_KEY}")
    return DEFAULT_CONFIDENCE_LEVEL


def level_text(level: float) -> str:
    """``0.95`` → ``"95 %"``, ``0.999`` → ``"99.9 %"``."""
    return f"{100.0 * float(level):g} %"
