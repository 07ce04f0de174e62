"""The ``validation`` stage of a calibration from its validation metrics."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

import numpy as np

__all__ = ["validation_stage"]


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
