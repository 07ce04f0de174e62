"""Step ``lift``: a structural fit mapped back to every joint parameter.

``θ = G t`` with ``G = P Mᵀ (M P Mᵀ)⁻¹`` (minimum ``P⁻¹``-norm solution of
``M θ = t``, ``P = diag(σ_prior²)``), ``t`` the fitted base representatives
(0 for dropped rows and base-frame rows), then ``refine_iterations``
Gauss–Newton steps (analytic Jacobian, step scaled by the prior standard
deviations) so that the lifted model reproduces the fitted predictions at
the measured postures. Covariance: ``G C Gᵀ`` (fitted rows only).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Set, Tuple

import numpy as np

from figaroh.calibration.calibration_tools import (
    calc_updated_fkm,
    frame_names,
    measurement_jacobian,
)

__all__ = ["lift_structural_fit"]


def _fitted_targets(
    rows: Sequence[str], frame_rows: Set[str], pnames: List[str], x: np.ndarray
) -> Tuple[np.ndarray, List[Tuple[int, int]]]:
    t = np.zeros(len(rows))
    fitted = []
    for i, rn in enumerate(rows):
        if rn in frame_rows or rn not in pnames:
            continue
        t[i] = x[pnames.index(rn)]
        fitted.append((i, pnames.index(rn)))
    return t, fitted


def _refinement_target(
    model: Any,
    data: Any,
    calib_config: Mapping[str, Any],
    x: np.ndarray,
    q: np.ndarray,
    names: Sequence[str],
) -> Tuple[np.ndarray, Dict[str, Any], List[float]]:
    """Fitted predictions at ``q``, the lifted layout config and the frame values."""
    pnames = list(calib_config["param_name"])
    frames = frame_names(pnames)
    fcfg = dict(calib_config)
    fcfg["NbSample"] = len(q)
    target = calc_updated_fkm(model, data, x, q, fcfg)
    lcfg = dict(fcfg)
    lcfg["param_name"] = frames + list(names)
    fvals = [x[pnames.index(f)] for f in frames]
    return target, lcfg, fvals


def lift_structural_fit(
    model: Any,
    data: Any,
    calib_config: Mapping[str, Any],
    x: np.ndarray,
    covariance: np.ndarray | None,
    prior: np.ndarray,
    q: np.ndarray | None,
    refine_iterations: int = 3,
) -> Tuple[List[str], np.ndarray, np.ndarray]:
    """Lift the structural fit ``x`` to ``base_mapping_param_names``.

    Args:
        model, data: Pinocchio model and data.
        calib_config: Calibration config with the structural base mapping.
        x: Fitted values (``param_name`` order) [m, rad].
        covariance: Fit covariance (``param_name`` order), or None.
        prior: Prior standard deviation of each mapped parameter [m, rad].
        q: Measured postures (refinement), or None.
        refine_iterations: Gauss–Newton refinement steps.

    Returns:
        ``(names, θ, cov)``.
    """
    names = list(calib_config["base_mapping_param_names"])
    M = np.asarray(calib_config["base_mapping_matrix_full"], dtype=float)
    rows = list(calib_config["base_mapping_row_names_full"])
    frame_rows = set(calib_config.get("base_frame_row_names", []))
    s = np.asarray(prior, dtype=float)
    P = np.diag(s**2)
    pnames = list(calib_config["param_name"])
    x = np.asarray(x, dtype=float)
    t, fitted_rows = _fitted_targets(rows, frame_rows, pnames, x)
    G = P @ M.T @ np.linalg.inv(M @ P @ M.T)
    theta = G @ t
    C = np.zeros((len(rows), len(rows)))
    if covariance is not None:
        for a, pa in fitted_rows:
            for b, pb in fitted_rows:
                C[a, b] = covariance[pa, pb]
    cov = G @ C @ G.T
    frames = frame_names(pnames)
    nonframe = [n for n in pnames if n not in frames]
    if (
        refine_iterations > 0
        and q is not None
        and all(n.startswith(("d_", "offset")) for n in nonframe)
    ):
        target, lcfg, fvals = _refinement_target(model, data, calib_config, x, q, names)
        for _ in range(int(refine_iterations)):
            var = np.concatenate([fvals, theta])
            r = calc_updated_fkm(model, data, var, q, lcfg) - target
            J = measurement_jacobian(model, data, var, q, lcfg)[:, len(frames) :]
            delta = np.linalg.lstsq(J * s[None, :], r, rcond=1e-6)[0]
            theta = theta - s * delta
    return names, theta, cov
