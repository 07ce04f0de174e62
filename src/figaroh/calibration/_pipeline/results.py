"""Step ``results``: the ``results_data`` dictionary of a calibration run.

Keys and layouts are figaroh 1.0.2's: 2-D pose arrays are (K·N, n_meas),
marker-major (rows ``k·N + s``); ``rms residuals by samples`` is the (K, N)
per-point residual norm [m, rad mixed when orientation is measured].
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from figaroh.calibration._measurements import _from_flat
from figaroh.calibration._pipeline.records import MeasurementSpec

__all__ = ["assemble_results", "poses_2d"]


def poses_2d(flat: ArrayLike, spec: MeasurementSpec) -> np.ndarray:
    """Flat measurement vector → (K·N, n_meas) array (marker-major rows)."""
    N, K, c = spec.n_samples, spec.n_markers, spec.n_meas
    arr = _from_flat(np.asarray(flat), N, K, c)
    out: np.ndarray = arr.transpose(1, 0, 2).reshape(K * N, c)
    return out


def assemble_results(
    names: Sequence[str],
    x: np.ndarray,
    evaluation: Mapping[str, Any],
    res: np.ndarray,
    measured: np.ndarray,
    estimated: np.ndarray,
    outliers: Sequence[int],
    calib_config: Mapping[str, Any],
    spec: MeasurementSpec,
) -> Dict[str, Any]:
    """``results_data`` of a fit (validation metrics and stages added by the caller).

    Args:
        names: Parameter names.
        x: Fitted values [m, rad].
        evaluation: The evaluation metrics.
        res: (N, K, n_meas) residuals at ``x``.
        measured: Flat measured vector.
        estimated: Flat predicted vector at ``x``.
        outliers: Excluded postures.
        calib_config: The calibration config (stored by reference).
        spec: Measurement layout.
    """
    N, K, c = spec.n_samples, spec.n_markers, spec.n_meas
    dist = np.linalg.norm(res, axis=-1).T  # (K, N)
    return {
        "number of calibrated parameters": len(x),
        "calibrated parameters names": list(names),
        "calibrated parameters values": np.asarray(x, dtype=float).tolist(),
        **evaluation,
        "number of samples": N,
        "rms residuals by samples": dist,
        "residuals": res.transpose(1, 0, 2).reshape(K * N, c),
        "PEE measured (2D array)": poses_2d(measured, spec),
        "PEE estimated (2D array)": poses_2d(estimated, spec),
        "outlier indices": list(outliers),
        "calibration config": calib_config,
        "task type": "calibration",
        "condition_number": evaluation["condition_number"],
        "correlated_pairs": evaluation["correlated_pairs"],
    }
