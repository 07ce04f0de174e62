"""Step ``metrics``: evaluation metrics of a calibration fit.

Error convention: ``rmse`` is ``sqrt(mean(e²))`` with ``e`` the
**per-point Euclidean norm** over the measured components (a point is one
marker at one posture, excluded postures left out); per-component figures
(``per_dof_stats``) are in [mm] and [deg].
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

__all__ = [
    "DOF_LABELS",
    "DOF_SCALE",
    "condition",
    "condition_label",
    "dof_names",
    "evaluation_metrics",
    "per_dof_stats",
]

DOF_LABELS = ("X (mm)", "Y (mm)", "Z (mm)", "rx (deg)", "ry (deg)", "rz (deg)")
#: Scale of each component to the report units ([m] → [mm], [rad] → [deg]).
DOF_SCALE = (1e3, 1e3, 1e3, 180.0 / math.pi, 180.0 / math.pi, 180.0 / math.pi)


def condition_label(c: float) -> str:
    """Plain-words label of a condition number."""
    if not np.isfinite(c):
        return "unavailable (computation failed)"
    if c < 100:
        return "well-conditioned"
    if c < 1000:
        return "moderately conditioned"
    return "ill-conditioned"


def condition(result: Any) -> Tuple[float, str]:
    """``(cond(J), label)`` of a fit's Jacobian (NaN and a reason when unavailable)."""
    try:
        cond = float(np.linalg.cond(np.asarray(result.jac, dtype=float)))
        label = condition_label(cond)
    except Exception:  # noqa: BLE001 - diagnostic metric only
        cond, label = math.nan, "unavailable (computation failed)"
    if getattr(result, "jac", None) is None:
        cond, label = math.nan, "unavailable (no Jacobian)"
    return cond, label


def dof_names(calib_config: Mapping[str, Any]) -> List[str]:
    """Report labels of the measured components."""
    mask = np.asarray(calib_config["measurability"], dtype=bool)
    idx = int(calib_config.get("calibration_index", mask.sum()))
    names = [lab for lab, m in zip(DOF_LABELS, mask, strict=True) if m]
    return names if len(names) == idx else list(DOF_LABELS[:idx])


def _group(flat: np.ndarray, cols: Sequence[int], scale: float) -> Tuple[float, float, float]:
    if not cols:
        return math.nan, math.nan, math.nan
    e = np.linalg.norm(flat[:, cols], axis=1) * scale
    return float(np.sqrt(np.mean(e**2))), float(np.mean(e)), float(np.max(e))


def _component_stats(
    out: Dict[str, Any], flat: np.ndarray, mvals: np.ndarray, comps: np.ndarray
) -> None:
    for j, c in enumerate(comps):
        e = flat[:, j]
        s = DOF_SCALE[c]
        out["mean"].append(float(np.mean(e) * s))
        out["std"].append(float(np.std(e) * s))
        out["rmse"].append(float(np.sqrt(np.mean(e**2)) * s))
        out["max_abs"].append(float(np.max(np.abs(e)) * s))
        obs = np.isfinite(mvals[:, j])
        ss_res = float(np.sum(e[obs] ** 2))
        mv = mvals[obs, j]
        ss_tot = float(np.sum((mv - np.mean(mv)) ** 2)) if mv.size else 0.0
        out["r_squared"].append(1.0 if ss_tot <= 1e-15 else 1.0 - ss_res / ss_tot)


def per_dof_stats(
    res: np.ndarray, meas: np.ndarray, calib_config: Mapping[str, Any]
) -> Dict[str, Any]:
    """Per-component statistics on (n, K, c) residuals of the kept postures.

    Args:
        res: (n, K, n_meas) residuals [m, rad].
        meas: (n, K, 6) measured values (NaN where not observed).
        calib_config: ``measurability``, ``calibration_index``.

    Returns:
        ``dof_names``, ``mean``, ``std``, ``rmse``, ``max_abs``, ``r_squared``
        (lists, [mm] / [deg]) and ``overall`` (group norms).
    """
    mask = np.asarray(calib_config["measurability"], dtype=bool)
    comps = np.flatnonzero(mask)
    out: Dict[str, Any] = {"dof_names": dof_names(calib_config)}
    for key in ("mean", "std", "rmse", "max_abs", "r_squared"):
        out[key] = []
    if res.size == 0 or res.shape[-1] != comps.size:
        return out
    flat = res.reshape(-1, comps.size)
    mvals = meas[..., comps].reshape(-1, comps.size)
    _component_stats(out, flat, mvals, comps)
    pos = [j for j, c in enumerate(comps) if c < 3]
    rot = [j for j, c in enumerate(comps) if c >= 3]
    p = _group(flat, pos, 1e3)
    o = _group(flat, rot, 180.0 / math.pi)
    out["overall"] = {
        "pos_rmse_mm": p[0],
        "orient_rmse_deg": o[0],
        "pos_mae_mm": p[1],
        "orient_mae_deg": o[1],
        "pos_max_mm": p[2],
        "orient_max_deg": o[2],
        "pos_rmse_component_mm": (
            float(np.sqrt(np.mean(flat[:, pos] ** 2)) * 1e3) if pos else math.nan
        ),
        "convention": "rmse = sqrt(mean(e^2)), e = per-point Euclidean norm of the group",
    }
    return out


def _error_stats(e: np.ndarray) -> Dict[str, Any]:
    return {
        "rmse": float(np.sqrt(np.mean(e**2))) if e.size else math.nan,
        "mae": float(np.mean(e)) if e.size else math.nan,
        "max_error": float(np.max(e)) if e.size else math.nan,
        "mean_sample_rms": float(np.mean(e)) if e.size else math.nan,
        "std_sample_rms": float(np.std(e)) if e.size else math.nan,
        "rmse_convention": "per-point Euclidean norm over the measured components",
    }


def evaluation_metrics(
    result: Any,
    res: np.ndarray,
    meas: np.ndarray,
    outliers: Sequence[int],
    std: Tuple[np.ndarray, np.ndarray],
    errors: np.ndarray | None,
    n_rows: int,
    threshold: float | None,
    jacobian_mode: str,
    correlated: List[Dict[str, Any]],
    calib_config: Mapping[str, Any],
) -> Dict[str, Any]:
    """The ``evaluation_metrics`` dictionary of a fit.

    Args:
        result: ``OptimizeResult`` of the fit.
        res: (N, K, n_meas) residuals at ``result.x`` [m, rad].
        meas: (N, K, 6) measured values.
        outliers: Excluded posture indices.
        std: ``(std_dev, std_pctg)`` of the parameters.
        errors: (N,) per-posture position errors [m], or None.
        n_rows: Observed, not excluded, measurement entries.
        threshold: Outlier threshold [m], or None.
        jacobian_mode: ``"analytic"``, ``"analytic (user)"`` or ``"2-point"``.
        correlated: Correlated parameter pairs.
        calib_config: Calibration config (component labels).

    Returns:
        The metrics (``rmse`` … ``correlated_pairs``).
    """
    N = res.shape[0]
    kept = np.setdiff1d(np.arange(N), np.asarray(list(outliers), dtype=int))
    res_k = res[kept]
    e = np.linalg.norm(res_k, axis=-1).ravel()
    std_dev, std_pctg = std
    cond, label = condition(result)
    return {
        **_error_stats(e),
        "param_values": [float(v) for v in result.x],
        "param_stdev": [float(v) for v in std_dev],
        "param_stddev_percentage": [float(v) for v in std_pctg],
        "residual_dof": int(n_rows - len(result.x)),
        "n_outliers": len(outliers),
        "outlier_percentage": 100.0 * len(outliers) / N if N else 0.0,
        "excluded_samples": [int(i) for i in outliers],
        "excluded_sample_errors": (
            [float(errors[i]) for i in outliers] if errors is not None else []
        ),
        "outlier_threshold": None if threshold is None else float(threshold),
        "optimization_success": bool(result.success),
        "cost": float(result.cost),
        "n_iterations": int(getattr(result, "nit", 0)),
        "n_function_evals": int(result.nfev),
        "jacobian": jacobian_mode,
        "per_dof_stats": per_dof_stats(res_k, meas[kept], calib_config),
        "condition_number": cond,
        "condition_label": label,
        "correlated_pairs": correlated,
    }
