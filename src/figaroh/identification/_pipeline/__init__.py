"""The identification pipeline: typed steps between frozen records.

``BaseIdentification`` (the public orchestrator) runs these steps in the
order of :data:`STEP_ORDER`, the one place the order is written; it runs
them through :func:`run_steps`, each step through the figaroh 1.0.2 methods
a robot subclass may override (the hooks, called through ``self``):

1. :mod:`.conditioning` — filtering, differentiation and full configurations
   (raw data → :class:`~.records.SignalSet`; ``make_settings`` →
   :class:`~.records.Settings`), in ``initialize()``: ``process_data`` →
   ``process_kinematics_data`` → ``filter_kinematics_data`` →
   ``_apply_filters`` / ``_differentiate_signal``, then
   ``_build_full_configuration``;
2. :mod:`.fit_rows` — zero-column elimination, decimation, sample mask and
   fitted joints (:func:`~.fit_rows.build_fit_problem` →
   :class:`~.records.FitProblem`), shared by ``solve`` and
   ``solve_with_custom_solver``; its sub-steps are the hooks
   ``_eliminate_zero_columns``, ``_apply_decimation`` (→
   ``_decimate_regressor_matrix``) or ``_prepare_undecimated_data``,
   ``_mask_rows`` (``solve`` only) and ``_select_fit_rows``;
3. :mod:`.base_fit` — QR base parameters and the OLS / WLS / custom-solver
   estimate (:class:`~.records.FitProblem` → :class:`~.records.BaseFit` →
   :class:`~.records.Quality`): ``_calculate_base_parameters``,
   ``_apply_weighted_least_squares``, ``_compute_quality_metrics``;

``_store_results`` then runs:

4. :mod:`.export` — the documented ``result`` dict of the fit (the next
   steps add their entries to it);
5. :mod:`.physical` — physical consistency, reconstruction of the full
   standard parameters, direct physical fit and selection of the estimate
   (→ :class:`~.records.PhysicalOutcome`): the ``_apply_*_if_enabled`` hooks;
6. :mod:`.validation` — held-out metrics of the selected estimate
   (``_compute_validation_metrics``).

After the run, :mod:`.prediction` serves ``predict`` and ``evaluate``: the
efforts of the selected estimate at given states, and the validation
metrics of another log as an :class:`~.prediction.EvaluationResult` (not a
step of ``solve``, so not in :data:`STEP_ORDER`).

No step takes or returns the orchestrator.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

#: Step modules, in run order (``physical`` holds several steps, in its own order).
STEP_ORDER = (
    "conditioning",
    "fit_rows",
    "base_fit",
    "export",
    "physical",
    "validation",
)

__all__ = ["STEP_ORDER", "run_steps"]


def run_steps(runners: Mapping[str, Callable[[Any], Any]], value: Any = None) -> Any:
    """Run the given steps in :data:`STEP_ORDER`, each on the output of the previous one.

    ``runners`` maps step names to callables; the first one present in
    :data:`STEP_ORDER` receives ``value``, each next one the return value of
    the one before. Steps absent from ``runners`` are skipped.

    Args:
        runners: ``{step name: callable(previous output) → output}``.
        value: Input of the first step run.

    Returns:
        The output of the last step run (``value`` when none ran).

    Raises:
        ValueError: A name of ``runners`` is not a step of :data:`STEP_ORDER`.
    """
    unknown = sorted(set(runners) - set(STEP_ORDER))
    if unknown:
        raise ValueError(f"unknown pipeline step(s) {unknown}; the steps are {list(STEP_ORDER)}")
    for name in STEP_ORDER:
        if name in runners:
            value = runners[name](value)
    return value
