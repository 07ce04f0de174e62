"""Step ``outliers``: the fit with iterative exclusion of outlier postures.

Up to ``max_iterations`` fits: after each successful fit, the postures
whose position error (worst marker, norm of the measured x/y/z residuals)
exceeds ``threshold`` [m] are excluded (their rows zeroed in the
objective) and the fit is repeated from the last solution. The loop stops
when no new posture exceeds the threshold, when the fit fails, when the
last iteration is reached (the new outliers stay in, with a warning) or
when excluding them would leave no more rows than parameters.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, List, Sequence

import numpy as np

from figaroh.calibration._pipeline.records import MeasurementSpec, OutlierFit
from figaroh.calibration._pipeline.residuals import (
    n_observations,
    sample_position_errors,
    sample_rows,
)
from figaroh.calibration.settings import DEFAULT_SETTINGS

logger = logging.getLogger(__name__)

__all__ = ["fit_with_outlier_exclusion"]


def _new_outliers(errors: np.ndarray, threshold: float, excluded: List[int]) -> List[int]:
    return [int(i) for i in np.flatnonzero(errors > float(threshold)) if i not in excluded]


def fit_with_outlier_exclusion(
    x0: np.ndarray,
    fit: Callable[[np.ndarray, np.ndarray], Any],
    residuals: Callable[[np.ndarray], np.ndarray],
    measured: np.ndarray,
    spec: MeasurementSpec,
    threshold: float | None,
    max_iterations: int = DEFAULT_SETTINGS.max_iterations,
    enable_logging: bool = False,
    *,
    position_errors: Callable[[np.ndarray], np.ndarray | None] | None = None,
    rows_of: Callable[[Sequence[int]], np.ndarray] | None = None,
    log: logging.Logger | None = None,
) -> OutlierFit:
    """Fit, exclude outlier postures, refit.

    Args:
        x0: Initial parameter vector [m, rad].
        fit: ``(x, excluded_rows) -> OptimizeResult``: one least-squares fit
            from ``x`` with those flat rows zeroed.
        residuals: ``x -> flat unweighted residuals`` [m, rad].
        measured: Flat measured vector (NaN entries are not observations).
        spec: Measurement layout.
        threshold: Per-posture position error threshold [m], or None (one fit).
        max_iterations: Maximum number of fits.
        enable_logging: Log every fit.
        position_errors: ``residuals -> (N,) per-posture position error [m]``
            (or None when not available); default
            :func:`~figaroh.calibration._pipeline.residuals.sample_position_errors`.
        rows_of: ``postures -> flat rows`` of those postures; default
            :func:`~figaroh.calibration._pipeline.residuals.sample_rows`.
        log: Logger of the per-fit messages (default this module's).

    Returns:
        The :class:`OutlierFit`.
    """
    log = log if log is not None else logger
    if position_errors is None:

        def position_errors(r: np.ndarray) -> np.ndarray | None:
            return sample_position_errors(r, spec)

    if rows_of is None:

        def rows_of(samples: Sequence[int]) -> np.ndarray:
            return sample_rows(samples, len(measured), spec.n_samples)

    excluded: List[int] = []
    rows_ex = np.zeros(0, dtype=int)
    x = np.asarray(x0, dtype=float)
    n_fits = max(1, int(max_iterations))
    result: Any = None  # the fit's OptimizeResult (at least one fit runs)
    res: np.ndarray | None = None
    for it in range(n_fits):
        result = fit(x, rows_ex)
        if enable_logging:
            log.info(
                "fit %d: cost %.6g, %d evaluations, %s",
                it + 1,
                result.cost,
                result.nfev,
                result.message,
            )
        if not result.success:
            log.warning("least squares did not converge: %s", result.message)
            break
        res = residuals(result.x)
        if threshold is None:
            break
        errors = position_errors(res)
        if errors is None:
            break
        new = _new_outliers(np.asarray(errors, dtype=float), threshold, excluded)
        if not new:
            break
        if it == n_fits - 1:
            log.warning(
                "max_iterations is reached: %d sample(s) above %.4g m kept in the fit (%s)",
                len(new),
                threshold,
                new,
            )
            break
        rows = np.asarray(rows_of(sorted(set(excluded) | set(new))), dtype=int)
        if n_observations(measured, rows) <= len(result.x):
            log.warning(
                "excluding samples %s would leave too few rows for %d parameters: kept",
                new,
                len(result.x),
            )
            break
        excluded = sorted(set(excluded) | set(new))
        rows_ex = rows
        log.info("excluding %d outlier sample(s) above %.4g m: %s", len(new), threshold, new)
        x = result.x
    if res is None:
        res = residuals(result.x)
    return OutlierFit(result, excluded, rows_ex, res, threshold)
