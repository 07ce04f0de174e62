"""The calibration pipeline: typed steps and the estimator registry.

Each step is a plain function of small frozen records
(:mod:`~figaroh.calibration._pipeline.records`) or arrays, one concept per
module; none of them sees the
:class:`~figaroh.calibration.base_calibration.BaseCalibration` instance,
which stays the public orchestrator (it calls its own hooks — e.g.
``load_data_set``, ``create_param_list``, ``cost_function``,
``solve_optimisation``, ``calc_stddev`` — at the points listed below and
passes the records between the steps).

Step order (:data:`STEP_ORDER`):

1. ``observations`` — :func:`~.observations.read_observations`
   (``load_data_set``);
2. ``layout`` — :func:`~.layout.structural_layout` (``create_param_list``);
3. ``estimation`` — :func:`~.estimators.estimate` over the registry
   (``create_param_list`` / ``eliminate_absorbed_parameters``);
4. ``outliers`` — :func:`~.outliers.fit_with_outlier_exclusion` on the
   residual model of :mod:`~.residuals` (``solve_optimisation``);
5. ``uncertainty`` — :func:`~.uncertainty.parameter_uncertainty`
   (``calc_stddev``);
6. ``metrics`` — :func:`~.metrics.evaluation_metrics`;
7. ``validation`` — :func:`~.validation.validation_metrics`;
8. ``results`` — :func:`~.results.assemble_results`.

After the run, :mod:`~.prediction` serves ``predict``: the poses of the
measured frames at given postures (not a step of ``solve``, so not in
:data:`STEP_ORDER`).

The data checks of :mod:`~.data_checks` read the data after step 3
(``joint_limits``, ``measurement_units``, ``identifiability``) and the
solution after step 6 (``outlier_fraction``, ``identifiability`` with the
Jacobian); they change no step's output.
"""

from __future__ import annotations

__all__ = ["STEP_ORDER"]

#: The pipeline steps in execution order (module names of this package).
STEP_ORDER = (
    "observations",
    "layout",
    "estimation",
    "outliers",
    "uncertainty",
    "metrics",
    "validation",
    "results",
)
