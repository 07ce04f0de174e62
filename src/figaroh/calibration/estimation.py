"""Estimation methods of a geometric calibration and the structural lift.

``calib_config["estimation"]["method"]`` selects how the joint parameters
are chosen and regularised; each method is a registered estimator of
:mod:`figaroh.calibration._pipeline.estimators`:

* ``structural`` (default) — QR selection of base representatives on random
  postures (see :meth:`BaseCalibration.create_param_list`);
* ``excitation`` — every identifiable candidate, then backward elimination
  of the parameter whose posterior std exceeds ``excitation_k`` times its
  prior std the most;
* ``cv_subset`` — the same elimination order, subset size chosen by k-fold
  cross-validation (``min`` or ``one_se`` rule);
* ``map`` — all candidates with Gaussian priors (rows
  ``(σ_noise/σ_prior,i)·θ_i`` appended to the objective);
* ``map_cv`` — ``map`` with the prior scale chosen by cross-validation.

Priors (defaults, merged key-wise): translation 1 mm, rotation 2 mrad,
joint offset 20 mrad, prismatic offset 2 mm. Frame parameters never get a
prior. :func:`lift_structural` maps a structural fit back to every joint
parameter with the minimum prior-weighted norm solution of ``M θ = t``.

The functions taking a calibrator (:func:`configure`, :func:`identifiable`,
:func:`lift_structural`) are the figaroh 1.0.2 entry points; they read the
calibrator and call the pipeline steps.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh.calibration._parameters import prepare_estimation, write_estimation
from figaroh.calibration._pipeline.errors import EstimationError
from figaroh.calibration._pipeline.estimators import estimate
from figaroh.calibration._pipeline.estimators.excitation import excitation_order
from figaroh.calibration._pipeline.lift import lift_structural_fit
from figaroh.calibration._pipeline.priors import (
    DEFAULTS,
    METHODS,
    PRIOR_GROUPS,
    joint_candidates,
    prior_group,
    prior_std,
    settings,
)
from figaroh.calibration.calibration_tools import (
    calc_updated_fkm,
    measurement_jacobian,
    select_identifiable_parameters,
)
from figaroh.calibration.parameter import (
    BASE_TPL,
    add_pee_name,
    get_fullparam_offset,
    get_joint_offset,
)

logger = logging.getLogger(__name__)

#: Default prior standard deviation of each group (``DEFAULTS["priors"]``, the
#: same dict): translation [m], rotation [rad], joint offset [rad], prismatic
#: offset [m].
DEFAULT_PRIORS: Dict[str, float] = DEFAULTS["priors"]
#: The prior groups of the joint parameters (:data:`PRIOR_GROUPS`).
GROUPS: Tuple[str, ...] = PRIOR_GROUPS

__all__ = [
    "DEFAULTS",
    "DEFAULT_PRIORS",
    "EstimationError",
    "GROUPS",
    "METHODS",
    "PRIOR_GROUPS",
    "configure",
    "excitation_order",
    "identifiable",
    "joint_candidates",
    "lift_structural",
    "prior_group",
    "prior_std",
    "settings",
    # Re-exported for figaroh 1.0.2 compatibility.
    "BASE_TPL",
    "add_pee_name",
    "calc_updated_fkm",
    "get_fullparam_offset",
    "get_joint_offset",
    "measurement_jacobian",
    "select_identifiable_parameters",
]


def identifiable(
    calib: Any, names: Sequence[str], frames: Sequence[str], tol: float
) -> Tuple[List[str], List[str]]:
    """Split ``names`` into identifiable and dependent parameters on the loaded postures.

    The measurement Jacobian (:func:`calibration_tools.measurement_jacobian`
    of the predicted measurements) is evaluated at the calibrator's initial
    vector for ``names`` (closed-form frames, joint parameters 0) and scanned
    by :func:`calibration_tools.select_identifiable_parameters` with
    ``frames`` always kept.

    Args:
        calib: A ``BaseCalibration`` with its data loaded.
        names: Candidate parameter names (the parameter vector layout).
        frames: Names always kept (base and tip frames).
        tol: Threshold on the residual norm of a unit column.

    Returns:
        ``(kept, dependent)``, both in ``names`` order.

    Raises:
        EstimationError: the data are not loaded.
    """
    if calib.PEE_measured is None or calib.q_measured is None:
        raise EstimationError("identifiable: load the data before selecting parameters")
    objective = calib._objective_model
    with objective.temporary_params(list(names), None):
        J = objective.identifiability_jacobian(objective.initial_vector())
    return select_identifiable_parameters(J, list(names), always_keep=frames, tol=float(tol))


def configure(calib: Any) -> Dict[str, Any]:
    """Set ``param_name`` (and priors) for a non-structural method.

    Runs the registered estimator of ``calib_config["estimation"]["method"]``
    on the calibrator's problem and writes its result into ``calib_config``
    (``param_name``, ``prior_weights``, ``prior_noise``,
    ``absorbed_param_name``, ``estimation_report``).

    Args:
        calib: A ``BaseCalibration`` with its data loaded.

    Returns:
        The estimation report (also in ``calib_config["estimation_report"]``).

    Raises:
        EstimationError: ``non_geom`` set, data not loaded, too few
            measurement rows for the noise estimate, bad CV settings.
    """
    objective = calib._objective_model
    loaded = calib.PEE_measured is not None and calib.q_measured is not None
    problem = prepare_estimation(calib.model, calib.calib_config, loaded, objective.residual_model)
    objective.forget_layout()
    result = estimate(problem)
    calib.estimation_report = write_estimation(calib.calib_config, result)
    objective.forget_layout()
    calib.nvars = len(result.param_name)
    return calib.estimation_report


def lift_structural(
    calib: Any, priors: Mapping[str, float] | None = None, refine_iterations: int = 3
) -> Tuple[List[str], np.ndarray, np.ndarray]:
    """Lift a structural fit back to every mapped joint parameter.

    ``θ = G t`` with ``G = P Mᵀ (M P Mᵀ)⁻¹`` (minimum ``P⁻¹``-norm solution
    of ``M θ = t``, ``P = diag(prior_std²)``), ``t`` the fitted base
    representatives (0 for dropped rows and base-frame rows), then
    ``refine_iterations`` Gauss–Newton steps (analytic Jacobian, step scaled by
    the prior stds) so that the lifted model reproduces the fitted
    predictions at the measured postures.

    Returns:
        ``(names, θ, cov)``: ``base_mapping_param_names``, lifted values [m,
        rad] and their covariance ``G C Gᵀ`` (fitted rows only).

    Raises:
        EstimationError: no structural mapping or no fit.
    """
    cfg = calib.calib_config
    if "base_mapping_matrix_full" not in cfg or calib.var_ is None:
        raise EstimationError("lift_structural needs a structural create_param_list() and a fit")
    pr = dict(settings(cfg)["priors"])
    if priors:
        pr.update(priors)
    s = prior_std(list(cfg["base_mapping_param_names"]), calib.model, pr)
    q = None if calib.q_measured is None else calib.q_measured[: calib.n_samples]
    return lift_structural_fit(
        calib.model, calib.data, cfg, calib.var_, calib._C_param, s, q, refine_iterations
    )
