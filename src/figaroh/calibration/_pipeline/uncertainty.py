"""Step ``uncertainty``: parameter covariance and correlated pairs of a fit.

``σ² = Σ r² / (n − p)`` over the measurement rows of the fit (excluded
rows not counted in ``n``), or ``σ_noise²`` when Gaussian priors were
used; ``C = σ²·pinv(JᵀJ)`` with the full objective Jacobian ``J``.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Sequence

import numpy as np

from figaroh.calibration._pipeline.records import Uncertainty

logger = logging.getLogger(__name__)

__all__ = ["CORRELATION_THRESHOLD", "correlated_pairs", "parameter_uncertainty"]

#: ``|ρ|`` above which a parameter pair is reported as correlated.
CORRELATION_THRESHOLD = 0.8


def parameter_uncertainty(
    x: np.ndarray,
    fun: np.ndarray,
    jac: np.ndarray,
    n_measurement_rows: int,
    n_observed: int,
    prior_noise: float | None = None,
) -> Uncertainty:
    """Standard deviations, ratios and covariance of a fit.

    Args:
        x: (n,) fitted values.
        fun: Objective rows at ``x`` (measurement rows first).
        jac: Objective Jacobian at ``x``.
        n_measurement_rows: Number of flat measurement rows in ``fun``.
        n_observed: Observed, not excluded, measurement entries.
        prior_noise: ``σ_noise`` of the prior rows (MAP fits), or None.

    Returns:
        :class:`Uncertainty` (NaN deviations and no covariance when the
        residual degrees of freedom are ≤ 0 without priors).
    """
    x = np.asarray(x, dtype=float)
    nv = x.size
    r = np.asarray(fun, dtype=float)[:n_measurement_rows]
    dof = n_observed - nv
    if prior_noise is not None:
        sigma2 = float(prior_noise) ** 2
    elif dof <= 0:
        logger.warning(
            "%d residual degrees of freedom: parameter uncertainty is not estimable", dof
        )
        return Uncertainty(np.full(nv, np.nan), np.full(nv, np.nan), None)
    else:
        sigma2 = float(np.sum(r**2) / dof)
    J = np.asarray(jac, dtype=float)
    C = sigma2 * np.linalg.pinv(J.T @ J)
    sd = np.sqrt(np.abs(np.diag(C)))
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(x != 0, np.abs(sd / np.where(x != 0, x, 1.0)), 0.0)
    return Uncertainty(sd, pct, C)


def correlated_pairs(C: np.ndarray | None, names: Sequence[str]) -> List[Dict[str, Any]]:
    """Pairs with ``|ρ| > 0.8`` from the covariance ``C``, strongest first."""
    if C is None:
        return []
    d = np.sqrt(np.abs(np.diag(C)))
    names = list(names)
    if len(names) != C.shape[0]:
        names = [f"param_{i}" for i in range(C.shape[0])]
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = C / np.outer(d, d)
    out: List[Dict[str, Any]] = []
    iu, ju = np.triu_indices(C.shape[0], k=1)
    for i, j in zip(iu, ju, strict=True):
        r = rho[i, j]
        if np.isfinite(r) and abs(r) > CORRELATION_THRESHOLD:
            out.append({"param_i": names[i], "param_j": names[j], "correlation": float(r)})
    out.sort(key=lambda p: -abs(p["correlation"]))
    return out
