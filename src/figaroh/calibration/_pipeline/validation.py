"""Step ``validation``: nominal vs calibrated errors on held-out (or training) postures.

Three models are compared on the validation postures: the nominal one (all
parameters 0), the nominal joints with best-fit metrology frames (the fair
"before": a nominal model still needs its base and tip frames to be
compared with measurements) and the calibrated one. Errors are per-point
Euclidean norms of the position [mm] and orientation [deg] components;
improvements are ``(before − after)/before`` [%].
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from figaroh.calibration._measurements import _to_flat
from figaroh.calibration._pipeline.metrics import DOF_SCALE

logger = logging.getLogger(__name__)

__all__ = ["fit_frames_only", "validation_metrics"]


def fit_frames_only(
    residuals: Callable[[np.ndarray], Tuple[np.ndarray, np.ndarray | None]],
    names: Sequence[str],
    frames: Sequence[str],
    x0: np.ndarray,
    weights: np.ndarray,
    excluded_rows: np.ndarray,
) -> np.ndarray | None:
    """Best-fit frames with the nominal joints (training postures, kept rows).

    Args:
        residuals: ``x -> (r, J)`` unweighted flat residuals and Jacobian (not None).
        names: Parameter names.
        frames: Frame names among ``names``.
        x0: Initial vector (frames used as the start).
        weights: Per-row measurement weights.
        excluded_rows: Rows left out (zeroed).

    Returns:
        The full parameter vector (joint parameters 0), or None when the fit fails.

    The fit is ``scipy.optimize.least_squares`` with the analytic Jacobian,
    ``method="lm"`` when there are at least as many rows as frame parameters,
    else ``"trf"``, at most 200 evaluations. (This reference is figaroh's own
    diagnostic: figaroh 1.0.2 has no such fit.)
    """
    idx = [list(names).index(f) for f in frames]
    rows = excluded_rows
    w = weights

    def fun(z: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        x = np.zeros(len(names))
        x[idx] = z
        r, J = residuals(x)
        if J is None:
            raise ValueError("fit_frames_only: residuals(x) must return the Jacobian")
        r, J = r * w, J[:, idx] * w[:, None]
        if rows.size:
            r, J = r.copy(), J.copy()
            r[rows], J[rows] = 0.0, 0.0
        return r, J

    try:
        from scipy.optimize import least_squares

        z0 = x0[idx]
        method = "lm" if len(w) >= len(idx) else "trf"
        res = least_squares(
            lambda z: fun(z)[0], z0, jac=lambda z: fun(z)[1], method=method, max_nfev=200
        )
        x = np.zeros(len(names))
        x[idx] = res.x
    except Exception as exc:  # noqa: BLE001 - diagnostic metric only
        logger.warning("frames-only reference fit failed: %s", exc)
        x = None
    return x


def _grp(r: np.ndarray, cols: List[int], scale: float) -> Tuple[float, float]:
    """``(rms, max)`` of the per-point norms of the components ``cols`` (NaN without any)."""
    if not cols:
        return math.nan, math.nan
    e = np.linalg.norm(r[..., cols], axis=-1) * scale  # (n,K)
    return float(np.sqrt(np.mean(e**2))), float(np.max(e))


def _per_point(r: np.ndarray, cols: List[int], scale: float, K: int) -> List[float]:
    """RMS of the per-point norms of the components ``cols``, one value per point."""
    if not cols:
        return []
    e = np.linalg.norm(r[..., cols], axis=-1) * scale  # (n,K)
    return [float(np.sqrt(np.mean(e[:, k] ** 2))) for k in range(K)]


def _improvement(before: float, after: float) -> float:
    if not np.isfinite(before):
        return math.nan
    if before == 0:
        return 0.0
    return (before - after) / before * 100.0


def _per_dof(r: np.ndarray, names: Sequence[str], comps: np.ndarray) -> Dict[str, List[float]]:
    n, K = r.shape[:2]
    pts = r.transpose(1, 0, 2).reshape(K * n, -1)
    return {
        nm: (pts[:, j] * DOF_SCALE[c]).tolist()
        for j, (nm, c) in enumerate(zip(names, comps, strict=False))
    }


def validation_metrics(
    r_nom: np.ndarray,
    r_cal: np.ndarray,
    r_ff: np.ndarray | None,
    mask: np.ndarray,
    names: Sequence[str],
    source: str,
) -> Dict[str, Any]:
    """The ``validation_metrics`` dictionary.

    Args:
        r_nom: (n, K, c) residuals of the nominal model [m, rad].
        r_cal: (n, K, c) residuals of the calibrated model.
        r_ff: (n, K, c) residuals of the frames-only model, or None.
        mask: (6,) measured components.
        names: Component labels.
        source: ``"validation_data"`` or ``"calibration_data_fallback"``.

    Returns:
        Nominal/calibrated errors and improvements ([mm], [deg], [%]).
    """
    comps = np.flatnonzero(np.asarray(mask, dtype=bool))
    n, K = r_nom.shape[:2]
    pos = [j for j, c in enumerate(comps) if c < 3]
    rot = [j for j, c in enumerate(comps) if c >= 3]
    deg = 180.0 / math.pi
    pn, pnm = _grp(r_nom, pos, 1e3)
    if r_ff is not None:
        pf, _ = _grp(r_ff, pos, 1e3)
        of, _ = _grp(r_ff, rot, deg)
    else:
        pf = of = math.nan
    pc, pcm = _grp(r_cal, pos, 1e3)
    on, onm = _grp(r_nom, rot, deg)
    oc, ocm = _grp(r_cal, rot, deg)
    return {
        "n_val_samples": int(n),
        "validation_source": source,
        "dof_names": list(names),
        "error_nominal_per_dof": _per_dof(r_nom, names, comps),
        "error_fitted_per_dof": _per_dof(r_cal, names, comps),
        "n_markers": K,
        "pos_rmse_nominal_per_point_mm": _per_point(r_nom, pos, 1e3, K),
        "pos_rmse_calibrated_per_point_mm": _per_point(r_cal, pos, 1e3, K),
        "pos_rmse_nominal_mm": pn,
        "pos_rmse_calibrated_mm": pc,
        "pos_max_nominal_mm": pnm,
        "pos_max_calibrated_mm": pcm,
        "pos_improvement_pct": _improvement(pn, pc),
        "orient_rmse_nominal_deg": on,
        "orient_rmse_calibrated_deg": oc,
        "orient_max_nominal_deg": onm,
        "orient_max_calibrated_deg": ocm,
        "orient_improvement_pct": _improvement(on, oc),
        "pos_rmse_nominal_fitted_frames_mm": pf,
        "orient_rmse_nominal_fitted_frames_deg": of,
        "pos_improvement_vs_fitted_frames_pct": _improvement(pf, pc),
        "residuals_nominal": _to_flat(r_nom),
        "residuals_calibrated": _to_flat(r_cal),
        "rmse_convention": "per-point Euclidean norm of the position (orientation) components",
    }
