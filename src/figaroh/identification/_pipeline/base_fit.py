"""Step 3 — base fit: QR base parameters and their (weighted) least-squares estimate.

The QR decomposition of the reduced regressor ``W`` picks the base columns
``W_b`` and the base-parameter expressions; ``phi_base`` minimises
``‖tau − W_b · phi_base‖²`` (OLS), optionally refined by Gautier's weighted
least squares with one noise variance per joint block, or estimated by a
:class:`~figaroh.tools.solver.LinearSolver`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Dict, Mapping, Sequence, Tuple

import numpy as np

from figaroh.identification import _metrics
from figaroh.identification._pipeline.records import BaseFit, FitProblem, Quality, Settings
from figaroh.identification.exceptions import IdentificationError
from figaroh.identification.identification_tools import (
    _as_vector,
    _relative_stdev_of_residual,
    relative_stdev,
)
from figaroh.tools.qrdecomposition import QRDecomposer

__all__ = [
    "coulomb_at_rest",
    "custom_solver_fit",
    "estimate_pair",
    "fit_quality",
    "fit_results",
    "qr_base_fit",
    "variance_pair",
    "with_estimate",
]

logger = logging.getLogger(__name__)

#: cond(R1) above which the base regressor is reported ill-conditioned.
ILL_CONDITIONED = 1e6


def qr_base_fit(
    problem: FitProblem, standard_parameter: Mapping[str, float] | None, settings: Settings
) -> BaseFit:
    """Base parameters by double QR decomposition and their OLS estimate.

    Logs a warning when ``cond(R1) > 1e6`` (set ``qr_relative_tolerance``).
    """
    decomposer = QRDecomposer(
        tolerance=settings.tol_qr,
        relative_tolerance=settings.config.get("qr_relative_tolerance"),
    )
    qr = decomposer.decompose(
        problem.W,
        list(problem.active_params),
        problem.tau,
        _prior(standard_parameter),
        method="double",
    )
    if qr.phi_b is None:  # decompose estimates phi_b whenever tau is given
        raise IdentificationError("the QR decomposition returned no base-parameter estimate")
    if qr.cond_R1 > ILL_CONDITIONED:
        logger.warning(
            "The base regressor is ill-conditioned (cond(R1) = %.3g); consider setting "
            "tasks.identification.problem.qr_relative_tolerance (e.g. 1e-4)",
            qr.cond_R1,
        )
    return BaseFit(
        W_b=qr.W_b,
        phi_base=qr.phi_b,
        params_base=tuple(qr.base_param_expressions),
        tau_noised=problem.tau,
        tau_identif=qr.W_b @ qr.phi_b,
        qr=qr,
        M=qr.M,
        params_r=tuple(problem.active_params),
        base_indices=tuple(qr.base_indices),
    )


def custom_solver_fit(
    problem: FitProblem,
    standard_parameter: Mapping[str, float] | None,
    solver: Any,
    extra: Mapping[str, Any],
) -> BaseFit:
    """Base columns by (default) QR, values by ``solver.solve(W_b, tau)``.

    Args:
        problem: The fit rows.
        standard_parameter: Standard parameters, ordered like the columns.
        solver: Object with ``solve(W_b, tau) → phi_base`` (a ``LinearSolver``).
        extra: Additional fit-results entries (solver info, method …).
    """
    qr = QRDecomposer().decompose(
        problem.W, list(problem.active_params), problem.tau, _prior(standard_parameter)
    )
    phi_base = solver.solve(qr.W_b, problem.tau)
    return BaseFit(
        W_b=qr.W_b,
        phi_base=phi_base,
        params_base=tuple(qr.base_param_expressions),
        tau_noised=problem.tau,
        tau_identif=qr.W_b @ phi_base,
        extra=dict(extra),
    )


def _prior(standard_parameter: Mapping[str, float] | None) -> Dict[str, float] | None:
    """The QR's ``params_std`` (None without standard parameters: no ``phi_b_nom``)."""
    return None if standard_parameter is None else dict(standard_parameter)


def with_estimate(fit: BaseFit, phi_base: np.ndarray) -> BaseFit:
    """``fit`` with another estimate (e.g. the WLS one) and its predicted efforts."""
    return replace(fit, phi_base=phi_base, tau_identif=fit.W_b @ phi_base)


def variance_pair(variances: Any, rows: int) -> Tuple[np.ndarray | None, np.ndarray]:
    """``(sig_ro_joint, diag_SIGMA)`` from a joint-variance hook result.

    Raises:
        ValueError: ``diag_SIGMA`` does not hold one variance per fitted row.
    """
    if isinstance(variances, tuple) and len(variances) == 2:
        sig, diag = variances
        sig = None if sig is None else np.asarray(sig, dtype=float).ravel()
    else:
        sig, diag = None, variances
    diag = np.asarray(diag, dtype=float).ravel()
    if diag.shape != (rows,):
        raise ValueError(
            f"_calculate_joint_variances must return (sig_ro_joint, diag_SIGMA) with one "
            f"variance per fitted row ({rows}), got diag_SIGMA of shape {diag.shape}"
        )
    return sig, diag


def estimate_pair(
    out: Any, W_b: np.ndarray, tau: np.ndarray, diag_SIGMA: np.ndarray
) -> Tuple[np.ndarray, np.ndarray]:
    """``(phi_wls, C_X)`` from a weighted-solve hook result (C_X computed if absent).

    Raises:
        ValueError: Wrong shapes.
    """
    if isinstance(out, tuple) and len(out) == 2:
        first, second = (np.asarray(v, dtype=float) for v in out)
        phi, cov = (second, first) if first.ndim == 2 else (first, second)
    else:
        phi = np.asarray(out, dtype=float)
        cov = _metrics.weighted_solve(W_b, tau, diag_SIGMA)[1]
    n_base = W_b.shape[1]
    phi = phi.ravel()
    if phi.shape != (n_base,) or cov.shape != (n_base, n_base):
        raise ValueError(
            f"_solve_weighted_least_squares must return (phi_wls ({n_base},), C_X "
            f"({n_base}, {n_base})), got {phi.shape} and {cov.shape}"
        )
    return phi, cov


def fit_quality(fit: BaseFit) -> Quality:
    """Relative std-devs [%], RMSE [N·m or N], correlation and condition number of ``fit``.

    With ``r = τ − W_b φ`` (``τ`` = ``tau_noised``, ``W_b φ`` = ``tau_identif``):
    ``rms = sqrt(mean(r²))``, the correlation is Pearson's of ``τ`` and
    ``W_b φ``, and the relative std-devs are those of
    :func:`~figaroh.identification.identification_tools.relative_stdev`.

    With the QR factor ``R1`` of ``W_b`` the std-devs use it and
    ``cond(W_b) = cond(R1)`` (no SVD of the tall matrix). When ``fit`` is the
    QR's own least-squares fit (its ``W_b`` and ``phi_base`` are the QR's
    arrays, so ``tau_identif`` is ``W_b @ phi_base`` computed from the same
    arrays, and ``W_b`` was checked finite by the QR), the residual is
    computed once and the tall regressor is not read again.
    """
    qr = fit.qr
    r1 = qr.R1 if qr is not None and qr.W_b is fit.W_b else None
    if r1 is not None and fit.phi_base is qr.phi_b and np.ndim(fit.tau_noised) == 1:
        n_rows, n_b = fit.W_b.shape
        _as_vector("tau", fit.tau_noised, n_rows)  # the checks relative_stdev makes
        phi = _as_vector("phi_b", fit.phi_base, n_b)
        residual = fit.tau_noised - fit.tau_identif
        std = _relative_stdev_of_residual(residual, phi, r1)
    else:
        std = relative_stdev(fit.W_b, fit.phi_base, fit.tau_noised, r_factor=r1)
        residual = fit.tau_noised - fit.tau_identif
    rms = float(np.sqrt(np.mean(residual**2)))
    corr = _metrics._pearson(fit.tau_noised, fit.tau_identif) if fit.tau_noised.size > 1 else 1.0
    cond = float(qr.cond_R1) if r1 is not None else float(np.linalg.cond(fit.W_b))
    return Quality(std_relative=std, rms_error=rms, correlation=corr, condition_number=cond)


def fit_results(fit: BaseFit) -> Dict[str, Any]:
    """The fit-results dict the physical steps and the result dict read."""
    params = list(fit.params_base)
    out: Dict[str, Any] = {
        "base_regressor": fit.W_b,
        "base_param_dict": dict(zip(params, np.asarray(fit.phi_base).tolist(), strict=True)),
        "base_parameters": params,
        "phi_base": fit.phi_base,
        "tau_estimated": fit.tau_identif,
        "tau_processed": fit.tau_noised,
    }
    if fit.M is not None:
        if fit.params_r is None:
            raise IdentificationError("a base fit with the QR map M must name its params_r")
        out["M"] = fit.M
        out["params_r"] = list(fit.params_r)
    out.update(fit.extra)
    return out


def coulomb_at_rest(
    velocities: np.ndarray, settings: Settings, blocks: Sequence[int], names: Sequence[str]
) -> Dict[str, Any] | None:
    """Coulomb-friction rows at rest, or None when not relevant.

    With friction identified, counts the samples of each fitted joint whose
    velocity [rad/s] is below the dead band ``coulomb_deadband`` (the Coulomb
    column is 0 there) or below ``_metrics.REST_SPEED`` (the column is then
    the sign of filtered noise), and the samples whose velocity is round-off
    (``|dq_j| <= _metrics.ROUND_OFF_SCALE · max|dq_j|`` and not zeroed by the
    dead band: their ``sign(dq)`` depends on the machine). Counted on the
    conditioned training velocities, before decimation and row selection.
    None without friction, or when no sample is round-off and either a dead
    band is set or fewer than ``_metrics.REST_FRACTION`` of the rows are at
    rest. Logs one warning when rows at rest keep a sign (no dead band) or
    round-off samples keep one.

    Args:
        velocities: (N, nv) conditioned velocities.
        settings: Model layout and settings.
        blocks: Active-block index of each fitted joint.
        names: Their names.
    """
    cfg = settings.config
    if not cfg.get("has_friction"):
        return None
    deadband = float(cfg.get("coulomb_deadband") or 0.0)
    idxv = np.asarray(settings.act_idxv, dtype=int)[blocks]
    v = np.asarray(velocities, dtype=float)[:, idxv]
    summary = _metrics.coulomb_at_rest(v, names, deadband)
    few_at_rest = summary["rows_at_rest"] < _metrics.REST_FRACTION * summary["rows"]
    if deadband <= 0 and few_at_rest and summary["round_off_rows"] == 0:
        return None  # zero crossings of a moving trajectory only
    summary["message"] = _metrics.coulomb_at_rest_message(summary)
    if deadband <= 0 or summary["round_off_rows"]:
        logger.warning("Coulomb friction: %s", summary["message"])
    else:
        logger.info("Coulomb friction: %s", summary["message"])
    return summary
