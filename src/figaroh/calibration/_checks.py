"""Physical-plausibility checks of the calibration data, as ``BaseCalibration`` methods.

The checks themselves are the plain functions of
:mod:`figaroh.calibration._pipeline.data_checks`; this mixin feeds them the
loaded postures and measurements (:meth:`_check_input_data`, at
``initialize()`` and, when the data changed since, at ``solve()``) and the
solution (:meth:`_check_fit_data`, right after the fit), keeps the findings
in ``data_checks``, logs each failure as a warning and records the ``data``
stage (``failed`` when a check failed, the fit still runs and its numbers
are unchanged). ``verify()`` turns each failed finding into a failing
required guard ``data_check:<name>``.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Tuple

import numpy as np

from figaroh._run.data_checks import DataChecks
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration._pipeline import data_checks as checks
from figaroh.tools.stages import record_stage

logger = logging.getLogger(__name__)

__all__ = ["CalibrationDataChecks"]

_FAILED = "; data checks failed: "


class CalibrationDataChecks:
    """Mixin of :class:`~figaroh.calibration.base_calibration.BaseCalibration`."""

    @property
    def data_checks(self) -> DataChecks:
        """Findings of the data checks of this run (empty before :meth:`initialize`)."""
        return self.__dict__.get("_data_checks") or DataChecks()

    @data_checks.setter
    def data_checks(self, value: DataChecks) -> None:
        self.__dict__["_data_checks"] = value

    # ---------------------------------------------------------------- inputs
    def _active_joints(self) -> Tuple[List[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Names, (N, n) values, lower and upper limits and revolute flags of the active joints."""
        model, cfg = self.model, self.calib_config
        ids = [int(j) for j in cfg.get("actJoint_idx", [])]
        ids = [j for j in ids if model.joints[j].nq == 1]
        cols = [int(model.joints[j].idx_q) for j in ids]
        q = np.asarray(self.q_measured, dtype=float)[: self.n_samples][:, cols]
        names = [str(model.names[j]) for j in ids]
        lower = np.asarray(model.lowerPositionLimit, dtype=float)[cols]
        upper = np.asarray(model.upperPositionLimit, dtype=float)[cols]
        revolute = np.array(
            [not model.joints[j].shortname().startswith("JointModelP") for j in ids], dtype=bool
        )
        return names, q, lower, upper, revolute

    def _nominal_measurements(self) -> np.ndarray | None:
        """(N, K, 6) predictions of the nominal model (all parameters 0), None when unavailable."""
        cfg = self.calib_config
        try:
            var = np.zeros(len(cfg.get("param_name", [])))
            flat = ct.calc_updated_fkm(self.model, self.data, var, self.q_measured, cfg)
            return ct.measured_values(flat, cfg, self.n_samples)
        except Exception as exc:  # noqa: BLE001 - diagnostic only: the check is skipped
            logger.debug("nominal kinematics unavailable for the units check: %s", exc)
            return None

    def _identifiability(self, jacobian: np.ndarray | None = None) -> Any:
        cfg = self.calib_config
        names, q, _, _, _ = self._active_joints()
        params = [str(p) for p in cfg.get("param_name", [])]
        calibrated = params + [str(p) for p in cfg.get("absorbed_param_name", []) or []]
        weights = cfg.get("prior_weights")
        priors = 0 if weights is None else int(np.count_nonzero(np.asarray(weights, float)))
        per_posture = int(cfg.get("NbMarkers", 1)) * int(np.count_nonzero(cfg["measurability"]))
        return checks.identifiability_finding(
            q, names, params, calibrated, per_posture, priors, jacobian
        )

    def _check_input_data(self) -> DataChecks:
        """Run ``joint_limits``, ``measurement_units`` and ``identifiability`` on the loaded data.

        Stores the findings in ``data_checks`` (each failure logged as a
        warning) and records the ``data`` stage.
        """
        names, q, lower, upper, revolute = self._active_joints()
        measured = ct.measured_values(self.PEE_measured, self.calib_config, self.n_samples)
        found = (
            checks.joint_limits_finding(q, lower, upper, names, revolute),
            checks.measurement_units_finding(measured, self._nominal_measurements()),
            self._identifiability(),
        )
        checks.log_failed(found)
        self.data_checks = self.data_checks.with_findings(*found)
        self.__dict__["_checked_inputs"] = self._input_key()
        self._record_data_checks()
        return self.data_checks

    def _input_key(self) -> Tuple[int, int, Tuple[str, ...]]:
        return (
            id(self.PEE_measured),
            id(self.q_measured),
            tuple(self.calib_config.get("param_name", [])),
        )

    def _ensure_input_checks(self) -> None:
        """Run :meth:`_check_input_data` unless it ran on the current data and parameters."""
        if self.PEE_measured is None or self.q_measured is None:
            return
        if not self.calib_config.get("param_name"):
            return
        if self.__dict__.get("_checked_inputs") != self._input_key():
            self._check_input_data()

    # ---------------------------------------------------------------- results
    def _check_fit_data(self, result: Any) -> DataChecks:
        """Run ``outlier_fraction`` and ``identifiability`` (with the Jacobian) at the solution."""
        try:
            x = np.asarray(result.x, dtype=float)
            errors = self._sample_position_errors(ct._to_flat(self._residual_array(x)))
        except Exception as exc:  # noqa: BLE001 - diagnostic only: the check is skipped
            logger.debug("position errors unavailable for the outlier check: %s", exc)
            errors = None
        jac = getattr(result, "jac", None)
        found = (
            checks.outlier_fraction_finding(errors, self._outlier_threshold),
            self._identifiability(jac),
        )
        before = {f.check: f for f in self.data_checks.findings}
        checks.log_failed(f for f in found if before.get(f.check) != f)
        self.data_checks = self.data_checks.with_findings(*found)
        self._record_data_checks()
        return self.data_checks

    def _record_data_checks(self) -> None:
        """Re-record the ``data`` stage with the outcome of the checks (reason and metrics kept)."""
        previous = next((r for r in (self.stages or []) if r.stage == "data"), None)
        if previous is None or previous.status not in ("ok", "failed"):
            return
        reason = previous.reason.split(_FAILED)[0]
        metrics: Dict[str, Any] = {
            k: (v.get("value"), str(v.get("unit", ""))) for k, v in previous.metrics.items()
        }
        failed = self.data_checks.failed
        metrics["failed_data_checks"] = len(failed)
        if failed:
            record_stage(
                self, "data", "failed", reason + _FAILED + self.data_checks.summary(), metrics
            )
        else:
            record_stage(self, "data", "ok", reason, metrics)
