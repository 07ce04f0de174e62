"""The ``fit`` and ``validation`` stages of a calibration from its metrics."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

import numpy as np

__all__ = ["fit_stage", "validation_stage"]


def fit_stage(
    result: Any, evaluation: Mapping[str, Any], n_outliers: int
) -> Tuple[str, str, Dict[str, Any]]:
    """``(status, reason, metrics)`` of the ``fit`` stage.

    ``ok`` when the optimiser converged (``result.success``), else
    ``failed``; the reason is its message; metrics: the RMSE (per-point
    norm [m]; radians mixed in when orientation is measured), the number of
    parameters and of excluded outlier postures.
    """
    return (
        "ok" if result.success else "failed",
        str(result.message),
        {
            "rmse": (
                evaluation["rmse"],
                "m (per-point norm; rad mixed in when orientation is measured)",
            ),
            "parameters": len(result.x),
            "excluded_outliers": n_outliers,
        },
    )


def validation_stage(
    metrics: Mapping[str, Any], n_samples: int, source: str
) -> Tuple[str, str, Dict[str, Any]]:
    """``(status, reason, details)`` of the ``validation`` stage.

    ``ok`` on held-out postures (``source == "validation_data"``), else
    ``fallback`` (evaluated on the calibration data, not an independent
    test). Details: the calibrated position RMSE [m] and the number of
    postures.
    """
    pc = metrics["pos_rmse_calibrated_mm"]
    details = {"position_rmse": (pc / 1e3 if np.isfinite(pc) else pc, "m"), "samples": n_samples}
    if source == "validation_data":
        return "ok", "held-out postures", details
    return (
        "fallback",
        "no held-out data: evaluated on the calibration data, not an independent test",
        details,
    )
