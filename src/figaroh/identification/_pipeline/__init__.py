"""The identification pipeline: typed steps between frozen records.

``BaseIdentification`` (the public orchestrator) runs these steps in this
order, and this list is the one place the order is written:

1. :mod:`.conditioning` — filtering, differentiation and full configurations
   (raw data → :class:`~.records.SignalSet`; ``make_settings`` →
   :class:`~.records.Settings`);
2. :mod:`.fit_rows` — zero-column elimination, decimation, sample mask and
   fitted joints (``W_full`` + :class:`~.records.SignalSet` →
   :class:`~.records.FitProblem`), shared by ``solve`` and
   ``solve_with_custom_solver`` (the orchestrator runs its sub-steps in the
   same order through its overridable row methods, e.g. ``_mask_rows``);
3. :mod:`.base_fit` — QR base parameters and the OLS / WLS / custom-solver
   estimate (:class:`~.records.FitProblem` → :class:`~.records.BaseFit` →
   :class:`~.records.Quality`);
4. :mod:`.physical` — physical consistency of the identified parameters;
5. :mod:`.physical` — reconstruction of the full standard parameters;
6. :mod:`.physical` — direct physical fit and selection of the estimate
   (→ :class:`~.records.PhysicalOutcome`);
7. :mod:`.validation` — held-out metrics of the selected estimate;
8. :mod:`.export` — the documented ``result`` dict.

The subclass hooks (data loading, regressor, WLS pieces, the physical steps'
``_apply_*_if_enabled``) stay methods of ``BaseIdentification``, called
through ``self`` between these steps. No step takes or returns the
orchestrator.
"""

from __future__ import annotations

#: Step modules, in run order (``physical`` runs steps 4–6).
STEP_ORDER = (
    "conditioning",
    "fit_rows",
    "base_fit",
    "physical",
    "validation",
    "export",
)

__all__ = ["STEP_ORDER"]
