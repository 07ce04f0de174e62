"""Evaluation of a calibration fit, as ``BaseCalibration`` methods.

Parameter uncertainty (:meth:`calc_stddev`), the evaluation metrics and the
validation metrics (nominal, frames-only and calibrated models on held-out or
training postures), computed by the steps of
:mod:`figaroh.calibration._pipeline` from the instance's state.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from figaroh.calibration import calibration_tools as ct
from figaroh.calibration._pipeline import metrics as _metrics
from figaroh.calibration._pipeline.uncertainty import correlated_pairs, parameter_uncertainty
from figaroh.calibration._pipeline.validation import fit_frames_only, validation_metrics
from figaroh.tools.stages import record_stage
from figaroh.utils.error_handling import CalibrationError

logger = logging.getLogger(__name__)

__all__ = ["CalibrationEvaluation"]


class CalibrationEvaluation:
    """Mixin of :class:`~figaroh.calibration.base_calibration.BaseCalibration`."""

    def _dof_names(self) -> List[str]:
        return _metrics.dof_names(self.calib_config)

    def _per_dof_stats(self, res: np.ndarray, meas: np.ndarray) -> Dict[str, Any]:
        """Per-component statistics on (n, K, c) residuals of kept samples."""
        return _metrics.per_dof_stats(res, meas, self.calib_config)

    def _evaluate_solution(self, result, outliers: Sequence[int]) -> Dict[str, Any]:
        N = self.n_samples
        res = self._residual_array(result.x)  # (N,K,c)
        std = self.calc_stddev(result)
        meas = ct.measured_values(self.PEE_measured, self.calib_config, N)
        errors = self._sample_position_errors(ct._to_flat(res))
        return _metrics.evaluation_metrics(
            result,
            res,
            meas,
            outliers,
            std,
            errors,
            self._n_observations(self._excluded_rows),
            self._outlier_threshold,
            self._jacobian_mode(),
            self._correlated_pairs(),
            self.calib_config,
        )

    def calc_stddev(self, result) -> Tuple[np.ndarray, np.ndarray]:
        """Parameter standard deviations from the fit.

        ``σ² = Σ r² / (n − p)`` over the measurement rows of ``result.fun``
        (excluded rows not counted), or ``prior_noise²`` with MAP priors;
        ``C = σ² · pinv(JᵀJ)`` with the full ``result.jac``.

        Returns:
            ``(std_dev, std_pctg)`` (std in parameter units; ``|σ/x|`` ratio).

        Raises:
            CalibrationError: ``"Standard deviation calculation failed: …"``.
        """
        try:
            x = np.asarray(result.x, dtype=float)
            self.nvars = x.size
            noise = self.calib_config.get("prior_noise")
            if self.calib_config.get("prior_weights") is None:
                noise = None
            u = parameter_uncertainty(
                x,
                result.fun,
                result.jac,
                len(self.PEE_measured),
                self._n_observations(self._excluded_rows),
                noise,
            )
            self._C_param = u.covariance
            self.std_dev, self.std_pctg = u.std_dev, u.std_pctg
            return self.std_dev, self.std_pctg
        except Exception as exc:
            raise CalibrationError(f"Standard deviation calculation failed: {exc}") from exc

    def _correlated_pairs(self) -> List[Dict[str, Any]]:
        """Pairs with ``|ρ| > 0.8`` from the parameter covariance (after :meth:`calc_stddev`)."""
        return correlated_pairs(self._C_param, self.calib_config.get("param_name", []))

    def _validation_set(self) -> Tuple[np.ndarray, np.ndarray, str] | None:
        """Postures, measurements and source label the validation metrics use."""
        if self._val_available and self._q_val is not None:
            return self._q_val, self._PEE_val, "validation_data"
        if self.q_measured is None:
            return None
        if getattr(self, "_fallback_warned", None) is not self.LM_result:
            logger.warning(
                "No held-out validation data: validation metrics are computed on the "
                "calibration data (not an independent test). Set data.validation_data_file."
            )
            self._fallback_warned = self.LM_result
        return self.q_measured[: self.n_samples], self.PEE_measured, "calibration_data_fallback"

    def _compute_validation_metrics(self) -> Dict[str, Any] | None:
        """Nominal (all parameters 0) vs calibrated errors."""
        if self.LM_result is None:
            return None
        chosen = self._validation_set()
        if chosen is None:
            return None
        q, pee, source = chosen
        x = np.asarray(self.LM_result.x, dtype=float)
        r_nom = self._residual_array(np.zeros_like(x), q=q, measured=pee)  # (n,K,c)
        r_cal = self._residual_array(x, q=q, measured=pee)
        x_ff = self._fit_frames_only()
        r_ff = None if x_ff is None else self._residual_array(x_ff, q=q, measured=pee)
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        out = validation_metrics(r_nom, r_cal, r_ff, mask, self._dof_names(), source)
        pc, n = out["pos_rmse_calibrated_mm"], len(q)
        details = {"position_rmse": (pc / 1e3 if np.isfinite(pc) else pc, "m"), "samples": n}
        if source == "validation_data":
            record_stage(self, "validation", "ok", "held-out postures", details)
        else:
            record_stage(
                self,
                "validation",
                "fallback",
                "no held-out data: evaluated on the calibration data, not an independent test",
                details,
            )
        return out

    def _fit_frames_only(self) -> np.ndarray | None:
        """Nominal joints with best-fit metrology frames (training data, kept samples).

        This is the fair "before" reference: the nominal model still needs its
        base and tip frames to be compared with measurements. Returns the full
        parameter vector (joint parameters 0), or None without frame
        parameters. Cached per fit.
        """
        cache = getattr(self, "_frames_only_cache", None)
        if cache is not None and cache[0] is self.LM_result:
            return cache[1]
        names = list(self.calib_config["param_name"])
        frames = self._frame_param_names()
        if not frames or self.q_measured is None:
            return None
        x = fit_frames_only(
            lambda v: self.measurement_residuals(v, jacobian=True),
            names,
            frames,
            self._initial_vector(),
            ct.measurement_weights(self.calib_config, self.n_samples),
            self._excluded_rows,
        )
        self._frames_only_cache = (self.LM_result, x)
        return x
