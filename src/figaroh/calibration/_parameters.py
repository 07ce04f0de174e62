"""The calibration parameter set, as ``BaseCalibration`` methods.

Writing a structural layout or an estimator's result into ``calib_config``
(the figaroh 1.0.2 keys ``param_name``, ``base_mapping_*``,
``prior_weights``, ``prior_noise``, ``absorbed_param_name``,
``estimation_report``), the estimation problem of a non-structural method,
and the identifiability checks of a parameter set before a fit.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Dict, List

import numpy as np

from figaroh.calibration import calibration_tools as ct
from figaroh.calibration import estimation
from figaroh.calibration._pipeline.estimators import estimate
from figaroh.calibration._pipeline.layout import base_frame_rows
from figaroh.calibration._pipeline.priors import joint_candidates, prior_group
from figaroh.calibration._pipeline.records import (
    EstimationProblem,
    EstimationResult,
    EstimationSettings,
    StructuralLayout,
)
from figaroh.calibration.parameter import BASE_TPL, EE_TPL
from figaroh.utils.error_handling import CalibrationError

logger = logging.getLogger(__name__)

__all__ = ["CalibrationParameters"]


class CalibrationParameters:
    """Mixin of :class:`~figaroh.calibration.base_calibration.BaseCalibration`."""

    def _apply_layout(self, layout: StructuralLayout) -> None:
        """Write a structural layout into ``calib_config`` (1.0.2 keys).

        Sets ``param_name`` and the ``base_mapping_*`` keys of the layout, then
        calls the :meth:`_record_full_mapping` hook.
        """
        cfg = self.calib_config
        for k in [k for k in cfg if k.startswith("base_mapping")]:
            del cfg[k]
        cfg.pop("absorbed_param_name", None)
        cfg["param_name"] = list(layout.param_name)
        cfg["base_mapping_matrix"] = layout.matrix
        cfg["base_mapping_param_names"] = list(layout.param_names)
        cfg["base_mapping_row_names"] = list(layout.row_names)
        cfg["base_mapping_slice"] = layout.slice
        self._record_full_mapping()

    def _record_full_mapping(self) -> None:
        """Hook: copies of the structural base mapping before any row is dropped.

        Called by :meth:`create_param_list` (structural method) after the
        frame names are added and before
        :meth:`eliminate_absorbed_parameters` drops rows. Sets
        ``base_mapping_matrix_full`` and ``base_mapping_row_names_full``
        (copies of ``base_mapping_matrix`` / ``base_mapping_row_names``) and
        ``base_frame_row_names``: the representative rows the estimated base
        frame replaces (``full_params`` with an unknown base frame: the first
        ``max(0, 6 − start)`` rows of ``base_mapping_slice``), else ``[]``.
        :meth:`redistribute_parameters` lifts the fit through these copies.
        """
        cfg = self.calib_config
        rows = list(cfg["base_mapping_row_names"])
        cfg["base_mapping_matrix_full"] = np.array(cfg["base_mapping_matrix"], copy=True)
        cfg["base_mapping_row_names_full"] = rows
        cfg["base_frame_row_names"] = list(
            base_frame_rows(cfg, rows, int(cfg["base_mapping_slice"][0]))
        )

    def _configure_estimation(self) -> Dict[str, Any]:
        """Run the non-structural estimator and write its result into ``calib_config``.

        Returns:
            The estimation report (also ``calib_config["estimation_report"]``).

        Raises:
            EstimationError: ``non_geom`` set, data not loaded, bad settings.
        """
        result = estimate(self._estimation_problem())
        self._apply_estimation(result)
        return result.report

    def _estimation_problem(self) -> EstimationProblem:
        """The estimation problem of a non-structural method (candidate layout loaded)."""
        cfg = self.calib_config
        st = estimation.settings(cfg)
        method = st["method"]
        if cfg.get("non_geom"):
            raise estimation.EstimationError(
                f"estimation.method {method!r} does not support include_non_geometric; use "
                "structural"
            )
        if self.PEE_measured is None or self.q_measured is None:
            raise estimation.EstimationError(
                f"estimation.method {method!r} needs the measurements: load the data before "
                "create_param_list()"
            )
        cands = joint_candidates(self.model, cfg)
        K = int(cfg["NbMarkers"])
        mask = list(cfg["measurability"])
        base = [] if cfg.get("known_baseframe", False) else list(BASE_TPL)
        tips = (
            []
            if cfg.get("known_tipframe", False)
            else [f"{t}_{k}" for k in range(1, K + 1) for j, t in enumerate(EE_TPL) if mask[j]]
        )
        canonical = base + cands + tips
        for k in [k for k in cfg if k.startswith("base_mapping")]:
            del cfg[k]
        cfg["param_name"] = list(canonical)
        cfg["prior_weights"] = None
        cfg["prior_noise"] = None
        self._layout_cache = None
        return EstimationProblem(
            names=tuple(canonical),
            frames=tuple(base + tips),
            joint_names=tuple(cands),
            prior_groups={n: prior_group(n, self.model) for n in canonical},
            settings=EstimationSettings.from_mapping(st),
            model=self._residual_model(),
        )

    def _apply_estimation(self, result: EstimationResult) -> None:
        cfg = self.calib_config
        cfg["param_name"] = list(result.param_name)
        cfg["prior_weights"] = result.prior_weights
        cfg["prior_noise"] = result.prior_noise
        cfg["absorbed_param_name"] = list(result.absorbed)
        cfg["estimation_report"] = result.report
        self.estimation_report = result.report
        self._layout_cache = None
        self.nvars = len(result.param_name)

    def _check_problem_size(self, n_params: int) -> None:
        m = self._n_observations()
        w = self.calib_config.get("prior_weights")
        if w is not None:  # Gaussian priors are observations of the parameters too
            m += int(np.count_nonzero(np.asarray(w, dtype=float)))
        n_samples = self.n_samples
        rows = self._rows_per_sample()
        if m <= n_params:
            need = n_params // max(1, rows) + 1
            raise CalibrationError(
                f"{n_samples} postures give {m} measurement rows for {n_params} parameters: "
                f"collect at least {need} postures, or reduce the parameter set "
                "(calibration_level: joint_offset, known frames, or estimation.method: map)"
            )

    def _dependent_parameters(self, x0: np.ndarray, tol: float = 1e-6) -> List[str]:
        names = list(self.calib_config["param_name"])
        if self._has_analytic_jacobian():
            J = self._objective_jacobian(x0)
        else:
            J = _finite_difference(self._objective, x0)
        J = J[: len(self.PEE_measured)]
        _, dependent = ct.select_identifiable_parameters(J, names, tol=tol)
        return dependent

    def _check_structural_identifiability(self, x0: np.ndarray, tol: float = 1e-6) -> None:
        try:
            dependent = self._dependent_parameters(x0, tol)
        except Exception as exc:  # noqa: BLE001 - diagnostic only
            logger.debug("identifiability check skipped: %s", exc)
            return
        if dependent:
            warnings.warn(
                f"structurally singular parameter set: {dependent} are linear combinations of "
                "other parameters on these postures (not identifiable). Remove them with "
                "drop_unidentifiable_parameters() (or calibration_tools."
                "drop_calibration_parameters), or use estimation.method: map",
                UserWarning,
                stacklevel=3,
            )

    def drop_unidentifiable_parameters(self, tol: float = 1e-6) -> List[str]:
        """Remove parameters that are linear combinations of the others on the loaded postures.

        Scans the objective's measurement-row Jacobian at the initial vector
        (closed-form frames, joint parameters 0) in ``param_name`` order —
        frames included — and drops every dependent column (see
        :func:`~figaroh.calibration.calibration_tools.select_identifiable_parameters`).

        Returns:
            The dropped names (logged).

        Raises:
            CalibrationError: data or parameter list missing.
        """
        if self.PEE_measured is None or not self.calib_config.get("param_name"):
            raise CalibrationError("drop_unidentifiable_parameters: call initialize() first")
        dependent = self._dependent_parameters(self._initial_vector(), tol)
        if dependent:
            ct.drop_calibration_parameters(self.calib_config, dependent)
            self._layout_cache = None
            self.nvars = len(self.calib_config["param_name"])
            logger.info("dropped unidentifiable parameters: %s", dependent)
        return dependent


def _finite_difference(fun, x: np.ndarray, step: float = 1e-7) -> np.ndarray:
    f0 = np.asarray(fun(x), dtype=float)
    J = np.empty((f0.size, x.size))
    for i in range(x.size):
        dx = np.zeros_like(x)
        dx[i] = step * max(1.0, abs(x[i]))
        J[:, i] = (np.asarray(fun(x + dx), dtype=float) - f0) / dx[i]
    return J
