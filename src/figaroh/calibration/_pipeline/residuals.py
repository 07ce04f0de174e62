"""Step ``residuals``: the log-map residual model of a geometric calibration.

Residual of posture ``s`` and marker ``k`` (body frame, default):
``ξ = log6(M_meas⁻¹ · M_est)`` restricted to the measured components
[m, rad]; ``position_frame="world"`` replaces the linear part by
``p_est − p_meas``. The helpers here convert between the flat layout
(``(k·n_meas + c)·N + s``) and (N, K, n_meas) arrays, count observed rows
and compute the per-posture position error the outlier step thresholds.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from figaroh.calibration._forward import evaluate_poses
from figaroh.calibration._logmap import pose_residuals
from figaroh.calibration._measurements import _from_flat, _to_flat, measured_values
from figaroh.calibration._pipeline.records import MeasurementSpec

__all__ = [
    "measurement_residuals",
    "n_observations",
    "residual_array",
    "sample_position_errors",
    "sample_rows",
]


def measurement_residuals(
    model: Any,
    data: Any,
    var: ArrayLike,
    q: np.ndarray,
    measured: ArrayLike,
    calib_config: Mapping[str, Any],
    *,
    jacobian: bool = False,
    position_frame: str = "body",
    layout: Any = None,
) -> Tuple[np.ndarray, np.ndarray | None]:
    """Unweighted flat log-map residuals at ``var`` and, optionally, their Jacobian.

    Args:
        model, data: Pinocchio model and data.
        var: Parameter values (``param_name`` order) [m, rad].
        q: (N, nq) postures.
        measured: Flat measured vector matching ``q``.
        calib_config: Calibration config.
        jacobian: Also return the analytic (rows, n_param) Jacobian.
        position_frame: ``"body"`` or ``"world"``.
        layout: Cached parameter layout of ``calib_config["param_name"]``.

    Returns:
        ``(r, J)`` with ``J`` None unless requested [m, rad].
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    meas = measured_values(measured, calib_config, q.shape[0])
    ev = evaluate_poses(model, data, var, q, calib_config, jacobian=jacobian, layout=layout)
    mask = np.asarray(calib_config["measurability"], dtype=bool)
    res, J = pose_residuals(ev.R, ev.p, meas, mask, T=ev.T, position_frame=position_frame)
    return _to_flat(res), (_to_flat(J) if J is not None else None)


def residual_array(r: np.ndarray, spec: MeasurementSpec) -> np.ndarray:
    """Flat residuals → (N, K, n_meas)."""
    return _from_flat(r, spec.n_samples, spec.n_markers, spec.n_meas)


def n_observations(measured: ArrayLike, excluded_rows: np.ndarray | None = None) -> int:
    """Number of observed (finite) measurement entries, excluded rows not counted."""
    finite = np.isfinite(np.asarray(measured, dtype=float))
    if excluded_rows is not None and len(excluded_rows):
        finite = finite.copy()
        finite[np.asarray(excluded_rows, dtype=int)] = False
    return int(finite.sum())


def sample_position_errors(residuals: ArrayLike, spec: MeasurementSpec) -> np.ndarray | None:
    """Per-posture position error [m]: worst marker's norm of the measured x/y/z rows.

    None when no position component is measured or ``residuals`` does not
    have the flat size of ``spec``.
    """
    mask = spec.mask_array
    if not mask[:3].any():
        return None
    r = np.asarray(residuals, dtype=float).ravel()
    N, K, c = spec.n_samples, spec.n_markers, spec.n_meas
    if r.size != N * K * c:
        return None
    res = _from_flat(r, N, K, c)
    npos = int(mask[:3].sum())
    worst: np.ndarray = np.linalg.norm(res[..., :npos], axis=-1).max(axis=1)
    return worst


def sample_rows(samples: Sequence[int], n_rows: int, n_samples: int) -> np.ndarray:
    """Flat rows of the given postures (rows whose index modulo ``n_samples`` is listed)."""
    rows = np.arange(n_rows)
    return rows[np.isin(rows % n_samples, np.asarray(list(samples), dtype=int))]
