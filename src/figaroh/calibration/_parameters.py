"""The calibration parameter set in ``calib_config``: plain functions of the config.

Writing a structural layout or an estimator's result into ``calib_config``
(the figaroh 1.0.2 keys ``param_name``, ``base_mapping_*``,
``prior_weights``, ``prior_noise``, ``absorbed_param_name``,
``estimation_report``), the estimation problem of a non-structural method,
the full-mapping copies and the problem-size check before a fit.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, MutableMapping

import numpy as np

from figaroh.calibration._pipeline.errors import EstimationError
from figaroh.calibration._pipeline.layout import base_frame_rows
from figaroh.calibration._pipeline.priors import joint_candidates, prior_group, settings
from figaroh.calibration._pipeline.records import (
    EstimationProblem,
    EstimationResult,
    EstimationSettings,
    ResidualModel,
    StructuralLayout,
)
from figaroh.calibration.parameter import BASE_TPL, EE_TPL
from figaroh.utils.error_handling import CalibrationError

logger = logging.getLogger(__name__)

__all__ = [
    "check_problem_size",
    "full_mapping",
    "prepare_estimation",
    "write_estimation",
    "write_layout",
]

Config = MutableMapping[str, Any]


def _drop_mapping(calib_config: Config) -> None:
    for k in [k for k in calib_config if k.startswith("base_mapping")]:
        del calib_config[k]


def write_layout(calib_config: Config, layout: StructuralLayout) -> None:
    """Write a structural layout into ``calib_config`` (1.0.2 keys).

    Sets ``param_name`` and the ``base_mapping_*`` keys of the layout (a
    previous mapping and ``absorbed_param_name`` removed).
    """
    _drop_mapping(calib_config)
    calib_config.pop("absorbed_param_name", None)
    calib_config["param_name"] = list(layout.param_name)
    calib_config["base_mapping_matrix"] = layout.matrix
    calib_config["base_mapping_param_names"] = list(layout.param_names)
    calib_config["base_mapping_row_names"] = list(layout.row_names)
    calib_config["base_mapping_slice"] = layout.slice


def full_mapping(calib_config: Config) -> None:
    """Copy the structural base mapping before any row is dropped.

    Sets ``base_mapping_matrix_full`` and ``base_mapping_row_names_full``
    (copies of ``base_mapping_matrix`` / ``base_mapping_row_names``) and
    ``base_frame_row_names``: the representative rows the estimated base
    frame replaces (``full_params`` with an unknown base frame: the first
    ``max(0, 6 − start)`` rows of ``base_mapping_slice``), else ``[]``.
    """
    rows = list(calib_config["base_mapping_row_names"])
    calib_config["base_mapping_matrix_full"] = np.array(
        calib_config["base_mapping_matrix"], copy=True
    )
    calib_config["base_mapping_row_names_full"] = rows
    calib_config["base_frame_row_names"] = list(
        base_frame_rows(calib_config, rows, int(calib_config["base_mapping_slice"][0]))
    )


def prepare_estimation(
    model: Any, calib_config: Config, data_loaded: bool, residual_model: Any
) -> EstimationProblem:
    """Load the candidate layout of a non-structural method and return its problem.

    ``param_name`` becomes base frame + joint candidates + tip frames (the
    frames unless known), priors cleared; ``residual_model`` is called
    afterwards to build the estimators' view of the objective.

    Args:
        model: Pinocchio model.
        calib_config: Calibration config (modified).
        data_loaded: Whether the measurements are loaded.
        residual_model: ``() -> ResidualModel`` of the calibration objective.

    Raises:
        EstimationError: ``non_geom`` set, or the data are not loaded.
    """
    st = settings(calib_config)
    method = st["method"]
    if calib_config.get("non_geom"):
        raise EstimationError(
            f"estimation.method {method!r} does not support include_non_geometric; use structural"
        )
    if not data_loaded:
        raise EstimationError(
            f"estimation.method {method!r} needs the measurements: load the data before "
            "create_param_list()"
        )
    cands = joint_candidates(model, calib_config)
    K = int(calib_config["NbMarkers"])
    mask = list(calib_config["measurability"])
    base = [] if calib_config.get("known_baseframe", False) else list(BASE_TPL)
    tips = (
        []
        if calib_config.get("known_tipframe", False)
        else [f"{t}_{k}" for k in range(1, K + 1) for j, t in enumerate(EE_TPL) if mask[j]]
    )
    canonical = base + cands + tips
    _drop_mapping(calib_config)
    calib_config["param_name"] = list(canonical)
    calib_config["prior_weights"] = None
    calib_config["prior_noise"] = None
    rm: ResidualModel = residual_model()
    return EstimationProblem(
        names=tuple(canonical),
        frames=tuple(base + tips),
        joint_names=tuple(cands),
        prior_groups={n: prior_group(n, model) for n in canonical},
        settings=EstimationSettings.from_mapping(st),
        model=rm,
    )


def write_estimation(calib_config: Config, result: EstimationResult) -> Dict[str, Any] | None:
    """Write an estimator's result into ``calib_config``; returns its report (None: structural)."""
    calib_config["param_name"] = list(result.param_name)
    calib_config["prior_weights"] = result.prior_weights
    calib_config["prior_noise"] = result.prior_noise
    calib_config["absorbed_param_name"] = list(result.absorbed)
    calib_config["estimation_report"] = result.report
    return result.report


def check_problem_size(
    n_observations: int, prior_weights: Any, n_samples: int, rows_per_sample: int, n_params: int
) -> None:
    """Refuse a fit with no more measurement rows (priors included) than parameters.

    Raises:
        CalibrationError: naming the postures needed.
    """
    m = n_observations
    if prior_weights is not None:  # Gaussian priors are observations of the parameters too
        m += int(np.count_nonzero(np.asarray(prior_weights, dtype=float)))
    if m <= n_params:
        need = n_params // max(1, rows_per_sample) + 1
        raise CalibrationError(
            f"{n_samples} postures give {m} measurement rows for {n_params} parameters: "
            f"collect at least {need} postures, or reduce the parameter set "
            "(calibration_level: joint_offset, known frames, or estimation.method: map)"
        )
