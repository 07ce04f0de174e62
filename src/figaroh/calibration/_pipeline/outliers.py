"""Step ``outliers``: the fit with iterative exclusion of outlier postures.

Up to ``max_iterations`` fits: after each successful fit, the postures
whose position error (worst marker, norm of the measured x/y/z residuals)
exceeds ``threshold`` [m] are excluded (their rows zeroed in the
objective) and the fit is repeated from the last solution. The loop stops
when no new posture exceeds the threshold, when the fit fails, when the
last iteration is reached (the new outliers stay in, with a warning) or
when excluding them would leave no more rows than parameters.

Trace (:attr:`OutlierFit.trace`). Stage ``"outliers"``: one entry per pass
(``iteration`` = pass number from 1, ``objective`` = the fit's cost
``½‖r‖²`` (scipy's ``result.cost``, excluded rows zeroed, priors included)
[the objective rows' unit squared], ``extra``: ``excluded`` — postures
excluded during that fit —, ``new_outliers`` — postures found above the
threshold after it —, ``nfev``) and the loop's outcome (``converged``: no
new outlier or no threshold; ``max_iterations``: the last pass still found
outliers; ``fallback``: excluding them would leave too few rows, kept;
``failed``: a fit did not converge). Stage ``"lm:pass <k>"``: the cost
``½‖r‖²`` at each Levenberg–Marquardt iteration of that fit — the initial
point (``iteration`` 0), then each trial point, i.e. the ``nfev`` evaluations
scipy counts — and the fit's outcome from scipy's ``status`` (``> 0``
converged, ``0`` the evaluation limit, else failed). scipy's
``least_squares`` has no per-iteration callback for ``method="lm"``, so the
objective is wrapped by :func:`~figaroh._run.optimisation_trace.cost_recorded`,
which records every residual evaluation; the finite-difference probes of the
Jacobian it marks are left out of the trace.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, List, Sequence

import numpy as np

from figaroh._run.optimisation_trace import (
    OptimisationTrace,
    StageOutcome,
    TraceEntry,
    recording_costs,
)
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


def _fit_outcome(stage: str, result: Any) -> StageOutcome:
    """Outcome of one least-squares fit from scipy's ``status`` and ``message``."""
    status = int(getattr(result, "status", 1 if result.success else -1))
    message = str(getattr(result, "message", ""))
    if status > 0 and result.success:
        return StageOutcome(stage, "converged", message)
    if status == 0:
        return StageOutcome(stage, "max_iterations", message)
    return StageOutcome(stage, "failed", message)


def _pass_entry(k: int, result: Any, excluded: int, new: int) -> TraceEntry:
    """Trace entry of pass ``k``: the fit's cost, exclusions and evaluations."""
    return TraceEntry(
        stage="outliers",
        iteration=k,
        objective=float(result.cost),
        extra={"excluded": int(excluded), "new_outliers": int(new), "nfev": int(result.nfev)},
    )


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
        The :class:`OutlierFit` (its ``trace``: see the module docstring).
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
    trace = OptimisationTrace()
    passes: List[TraceEntry] = []  # stage "outliers", after the passes' own stages
    loop = ("converged", "no threshold")
    for it in range(n_fits):
        stage = f"lm:pass {it + 1}"
        with recording_costs() as costs:
            result = fit(x, rows_ex)
        steps = [cost for cost, probe in costs if not probe]
        trace = trace.with_entries(
            *(TraceEntry(stage, k, cost) for k, cost in enumerate(steps))
        ).with_outcome(_fit_outcome(stage, result))
        n_excluded, new = len(excluded), []
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
            loop = ("failed", f"pass {it + 1}: least squares did not converge: {result.message}")
            passes.append(_pass_entry(it + 1, result, n_excluded, 0))
            break
        res = residuals(result.x)
        if threshold is None:
            passes.append(_pass_entry(it + 1, result, n_excluded, 0))
            break
        errors = position_errors(res)
        if errors is None:
            loop = ("converged", "no per-posture position error: one fit")
            passes.append(_pass_entry(it + 1, result, n_excluded, 0))
            break
        new = _new_outliers(np.asarray(errors, dtype=float), threshold, excluded)
        passes.append(_pass_entry(it + 1, result, n_excluded, len(new)))
        if not new:
            loop = ("converged", f"no new posture above {threshold:.4g} m after pass {it + 1}")
            break
        if it == n_fits - 1:
            log.warning(
                "max_iterations is reached: %d sample(s) above %.4g m kept in the fit (%s)",
                len(new),
                threshold,
                new,
            )
            loop = (
                "max_iterations",
                f"{n_fits} passes: {len(new)} posture(s) above {threshold:.4g} m kept in the fit",
            )
            break
        rows = np.asarray(rows_of(sorted(set(excluded) | set(new))), dtype=int)
        if n_observations(measured, rows) <= len(result.x):
            log.warning(
                "excluding samples %s would leave too few rows for %d parameters: kept",
                new,
                len(result.x),
            )
            loop = (
                "fallback",
                f"pass {it + 1}: excluding {len(new)} posture(s) would leave too few rows: kept",
            )
            break
        excluded = sorted(set(excluded) | set(new))
        rows_ex = rows
        log.info("excluding %d outlier sample(s) above %.4g m: %s", len(new), threshold, new)
        x = result.x
    if res is None:
        res = residuals(result.x)
    trace = trace.with_entries(*passes).with_outcome(StageOutcome("outliers", *loop))
    return OutlierFit(result, excluded, rows_ex, res, threshold, trace)
