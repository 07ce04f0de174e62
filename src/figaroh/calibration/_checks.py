"""Physical-plausibility checks of the calibration data: the inputs of the check steps.

The checks themselves are the plain functions of
:mod:`figaroh.calibration._pipeline.data_checks`; the functions here build
their inputs from the model, ``calib_config`` and the loaded arrays —
:func:`input_findings` (``joint_limits``, ``measurement_units``,
``identifiability``: at ``initialize()`` and, when the data changed since,
at ``solve()``) and :func:`fit_findings` (``outlier_fraction``,
``identifiability`` with the Jacobian: right after the fit) — and
:func:`data_stage` gives the ``data`` stage that reflects them (``failed``
when a check failed; the fit still runs and its numbers are unchanged).
``verify()`` turns each failed finding into a failing required guard
``data_check:<name>``.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh._run.data_checks import DataChecks, DataFinding
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration._pipeline import data_checks as checks

logger = logging.getLogger(__name__)

__all__ = ["data_stage", "fit_findings", "input_findings", "input_key"]

_FAILED = "; data checks failed: "


def _active_joints(
    model: Any, calib_config: Mapping[str, Any], q_measured: np.ndarray, n_samples: int
) -> Tuple[List[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Names, (N, n) values, lower and upper limits and revolute flags of the active joints."""
    ids = [int(j) for j in calib_config.get("actJoint_idx", [])]
    ids = [j for j in ids if model.joints[j].nq == 1]
    cols = [int(model.joints[j].idx_q) for j in ids]
    q = np.asarray(q_measured, dtype=float)[:n_samples][:, cols]
    names = [str(model.names[j]) for j in ids]
    lower = np.asarray(model.lowerPositionLimit, dtype=float)[cols]
    upper = np.asarray(model.upperPositionLimit, dtype=float)[cols]
    revolute = np.array(
        [not model.joints[j].shortname().startswith("JointModelP") for j in ids], dtype=bool
    )
    return names, q, lower, upper, revolute


def _nominal_measurements(
    model: Any, data: Any, calib_config: Any, q_measured: np.ndarray, n_samples: int
) -> np.ndarray | None:
    """(N, K, 6) predictions of the nominal model (all parameters 0), None when unavailable."""
    try:
        var = np.zeros(len(calib_config.get("param_name", [])))
        flat = ct.calc_updated_fkm(model, data, var, q_measured, calib_config)
        return ct.measured_values(flat, calib_config, n_samples)
    except Exception as exc:  # noqa: BLE001 - diagnostic only: the check is skipped
        logger.debug("nominal kinematics unavailable for the units check: %s", exc)
        return None


def _identifiability(
    model: Any,
    calib_config: Mapping[str, Any],
    q_measured: np.ndarray,
    n_samples: int,
    jacobian: np.ndarray | None = None,
) -> DataFinding:
    names, q, _, _, _ = _active_joints(model, calib_config, q_measured, n_samples)
    params = [str(p) for p in calib_config.get("param_name", [])]
    calibrated = params + [str(p) for p in calib_config.get("absorbed_param_name", []) or []]
    weights = calib_config.get("prior_weights")
    priors = 0 if weights is None else int(np.count_nonzero(np.asarray(weights, float)))
    per_posture = int(calib_config.get("NbMarkers", 1)) * int(
        np.count_nonzero(calib_config["measurability"])
    )
    return checks.identifiability_finding(
        q, names, params, calibrated, per_posture, priors, jacobian
    )


def input_findings(
    model: Any,
    data: Any,
    calib_config: Any,
    q_measured: np.ndarray,
    pee_measured: np.ndarray,
    n_samples: int,
) -> Tuple[DataFinding, ...]:
    """``joint_limits``, ``measurement_units`` and ``identifiability`` on the loaded data.

    Each failure is logged as a warning.
    """
    names, q, lower, upper, revolute = _active_joints(model, calib_config, q_measured, n_samples)
    measured = ct.measured_values(pee_measured, calib_config, n_samples)
    nominal = _nominal_measurements(model, data, calib_config, q_measured, n_samples)
    found = (
        checks.joint_limits_finding(q, lower, upper, names, revolute),
        checks.measurement_units_finding(measured, nominal),
        _identifiability(model, calib_config, q_measured, n_samples),
    )
    checks.log_failed(found)
    return found


def input_key(pee_measured: Any, q_measured: Any, calib_config: Mapping[str, Any]) -> tuple:
    """Identity of the checked inputs: the arrays and the parameter names."""
    return (id(pee_measured), id(q_measured), tuple(calib_config.get("param_name", [])))


def fit_findings(
    model: Any,
    calib_config: Mapping[str, Any],
    q_measured: np.ndarray,
    n_samples: int,
    position_errors: np.ndarray | None,
    outlier_threshold: float | None,
    jacobian: np.ndarray | None,
    previous: DataChecks,
) -> Tuple[DataFinding, ...]:
    """``outlier_fraction`` and ``identifiability`` (with the Jacobian) at the solution.

    A failure that differs from the ``previous`` finding of the same check
    is logged as a warning.
    """
    found = (
        checks.outlier_fraction_finding(position_errors, outlier_threshold),
        _identifiability(model, calib_config, q_measured, n_samples, jacobian),
    )
    before = {f.check: f for f in previous.findings}
    checks.log_failed(f for f in found if before.get(f.check) != f)
    return found


def data_stage(
    stages: Sequence[Any], data_checks: DataChecks
) -> Tuple[str, str, Dict[str, Any]] | None:
    """``(status, reason, metrics)`` of the ``data`` stage with the outcome of the checks.

    The reason and metrics of the recorded ``data`` stage are kept, the
    ``failed_data_checks`` count added; None when no ``data`` stage was
    recorded ``ok`` or ``failed``.
    """
    previous = next((r for r in (stages or []) if r.stage == "data"), None)
    if previous is None or previous.status not in ("ok", "failed"):
        return None
    reason = previous.reason.split(_FAILED)[0]
    metrics: Dict[str, Any] = {
        k: (v.get("value"), str(v.get("unit", ""))) for k, v in previous.metrics.items()
    }
    failed = data_checks.failed
    metrics["failed_data_checks"] = len(failed)
    if failed:
        return "failed", reason + _FAILED + data_checks.summary(), metrics
    return "ok", reason, metrics
