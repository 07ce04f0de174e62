"""Step 4 — export: the documented ``result`` dict of a run.

``result`` keys (figaroh 1.0.2): ``"base regressor"``, ``"base parameters"``
(name → value), ``"base parameters values"``, ``"base parameters names"``,
``"condition number"``, ``"torque estimated"``, ``"torque processed"``,
``"std dev of estimated param"`` [%], ``"effort rmse"`` and
``"rmse norm (N/m)"`` (the same RMSE [N·m or N]), ``"num samples"``,
``"identification config"`` and ``"task type"``. The later steps add
``"physical consistency"``, ``"reconstruction"``, ``"physical_fit"``,
``"selected"``, ``"validation_metrics"``, ``"stages"`` and, for ``solve``,
``"wls_std_deviations"`` and ``"coulomb_at_rest"``.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from figaroh.identification._pipeline.records import Quality

__all__ = ["base_result"]


def base_result(
    fit_results: Mapping[str, Any],
    quality: Quality,
    num_samples: int | None,
    config: Mapping[str, Any],
) -> Dict[str, Any]:
    """The ``result`` dict of the base fit.

    Args:
        fit_results: Output of :func:`~figaroh.identification._pipeline.base_fit.fit_results`.
        quality: Quality of the fit.
        num_samples: Number of training samples (None when unknown).
        config: The flat identification settings (stored by reference).
    """
    return {
        "base regressor": fit_results["base_regressor"],
        "base parameters": fit_results["base_param_dict"],
        "base parameters values": fit_results["phi_base"],
        "base parameters names": fit_results["base_parameters"],
        "condition number": quality.condition_number,
        "torque estimated": fit_results["tau_estimated"],
        "torque processed": fit_results["tau_processed"],
        "std dev of estimated param": quality.std_relative,
        "effort rmse": quality.rms_error,
        "rmse norm (N/m)": quality.rms_error,
        "num samples": num_samples,
        "identification config": config,
        "task type": "identification",
    }
