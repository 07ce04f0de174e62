"""Scoped acceptance evidence of a solved identification (``BaseIdentification.verify``).

:func:`verify_identification` turns a solved
:class:`~figaroh.identification.base_identification.BaseIdentification` into a
:class:`~figaroh._run.verdict.VerificationVerdict`:

* metrics — ``condition_number``, ``rmse`` (base fit effort RMSE [N·m or N],
  or the selected estimate's), and with validation metrics
  ``validation_correlation``, ``validation_unpredictable_joints``,
  ``validation_improvement_pct`` and, per validation joint ``j``,
  ``<prefix>_rmse:j = sqrt(mean(r²))``, ``<prefix>_abs_bias:j = |mean(r)|``
  and ``<prefix>_peak_error:j = max|r|`` with ``r = τ_measured − τ_identified``
  over every sample of the series. ``prefix`` is ``validation`` only for an
  independently loaded validation trajectory, ``training`` otherwise, so
  training evidence can never satisfy a prediction limit;
* evidence guards — finite parameters, predictions, measurements and fit
  RMSE; facts ``requested_validation_loaded`` and ``matching_torque_shapes``
  (and ``selected_stage_accepted`` with a non-default ``select_stage``);
* input data checks — one guard ``data_check:<name>`` per check of
  ``ident.data_checks`` (joint motion, sampling interval, magnitudes,
  validation independence, model inertias): a fit whose inputs failed a
  check never passes, and the failed guard's reason (also the first
  insights) says which check stopped it;
* scope ``prediction`` additionally needs independent validation data and an
  explicit ``validation_rmse:<joint>`` maximum for every validation joint;
  validation data identical to the training data fails
  ``independent_validation``.

No universal improvement, correlation or conditioning gate is imposed: the
default policy is empty, so a default ``verify()`` is ``not_evaluated``
unless the configuration's ``verification`` section gives limits
(:mod:`figaroh._run.verification_policy`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Dict, List, Sequence

import numpy as np

from figaroh._run.verdict import (
    IDENTIFICATION_DEFAULT_THRESHOLDS,
    VerificationVerdict,
    scoped_verification,
)
from figaroh.identification._confidence import base_parameter_table
from figaroh.identification._edge_effects import edge_effect
from figaroh.identification._pipeline.data_checks import DataChecks
from figaroh.tools.identification_report import _build_insights
from figaroh.tools.provenance import collect_run_provenance
from figaroh.tools.stages import apply_to_verdict

logger = logging.getLogger(__name__)

__all__ = ["verify_identification"]

#: Per-joint metric names: ``<prefix>_<kind>:<joint>``.
_PER_JOINT_METRIC = re.compile(r"^(validation|training)_(rmse|abs_bias|peak_error):(.+)$")


def _per_joint_metrics(validation: Mapping[str, Any], prefix: str) -> Dict[str, float]:
    """RMSE, |bias| and peak |error| of every validation joint [N·m or N].

    Joints whose measured and identified series are empty or differ in shape
    are skipped (their metrics stay missing, hence ``not_evaluated``).
    """
    measured = validation.get("tau_measured_per_joint") or {}
    identified = validation.get("tau_identified_per_joint") or {}
    out: Dict[str, float] = {}
    for joint in validation.get("joint_names", []) or []:
        observed = np.asarray(measured.get(joint, []), dtype=float)
        predicted = np.asarray(identified.get(joint, []), dtype=float)
        if not observed.size or observed.shape != predicted.shape:
            continue
        r = observed - predicted
        out[f"{prefix}_rmse:{joint}"] = float(np.sqrt(np.mean(r**2)))
        out[f"{prefix}_abs_bias:{joint}"] = float(abs(np.mean(r)))
        out[f"{prefix}_peak_error:{joint}"] = float(np.max(np.abs(r)))
    return out


def _check_threshold_joints(thresholds: Mapping[str, Any], joints: List[str]) -> None:
    """Reject per-joint limits that name no joint of the run (typos never pass silently)."""
    for name in thresholds:
        m = _PER_JOINT_METRIC.match(str(name))
        if m and m.group(3) not in joints:
            raise ValueError(
                f"threshold {name!r} names joint {m.group(3)!r}, which is not a joint of this "
                f"identification; use one of {joints}"
            )


def _judged_fit_rmse(result: Mapping[str, Any]) -> tuple:
    """``(fit RMSE, result["selected"])``: with a non-default ``select_stage`` the selected one."""
    fit_rmse = result.get("rmse norm (N/m)", float("nan"))
    selected_info = result.get("selected")
    if isinstance(selected_info, Mapping) and selected_info.get("effort_rmse_fit") is not None:
        fit_rmse = selected_info["effort_rmse_fit"]
    return fit_rmse, selected_info


def _verdict_metrics(
    result: Mapping[str, Any], fit_rmse: Any, validation: Mapping[str, Any] | None
) -> tuple:
    """``(metrics, independent, joint_names)`` judged by the thresholds."""
    metrics: Dict[str, Any] = {
        "condition_number": result.get("condition number", float("nan")),
        "rmse": fit_rmse,
    }
    independent = False
    joint_names: List[str] = []
    if validation is not None:
        # per-joint normalised: a pooled correlation is dominated by the largest
        # (gravity) efforts and mixes N with N·m
        metrics["validation_correlation"] = validation.get(
            "correlation_normalised", validation.get("correlation", float("nan"))
        )
        metrics["validation_unpredictable_joints"] = float(
            len(validation.get("unpredictable_joints", []) or [])
        )
        metrics["validation_improvement_pct"] = validation.get("improvement_pct", float("nan"))
        independent = validation.get("validation_source") == "validation_data"
        joint_names = [str(j) for j in validation.get("joint_names", []) or []]
        metrics.update(_per_joint_metrics(validation, "validation" if independent else "training"))
    return metrics, independent, joint_names


def _verdict_series(validation: Mapping[str, Any] | None, active_joints: List[str]):
    """Per-joint nominal / fitted / measured effort series of the validation (None without)."""
    if validation is None or not validation.get("tau_nominal_per_joint"):
        return None
    measured = validation.get("tau_measured_per_joint") or {}
    first: Sequence[Any] = next(iter(measured.values()), [])
    return {
        # every sample (masked ones too), like the per-joint series
        "time": list(range(len(first))),
        "joint_names": list(validation.get("joint_names", active_joints)),
        "nominal": validation["tau_nominal_per_joint"],
        "fitted": validation.get("tau_identified_per_joint", {}),
        "measured": measured,
    }


def _selected_evidence(sel: Any, solve_W, idx_eliminated, parameters, prediction) -> tuple:
    """``(parameters, prediction)`` judged for finiteness (the selection's when it has values).

    A standard-space selection predicts the fit rows ``solve_W @ values[kept]``
    (``kept`` = columns not eliminated) [N·m or N].
    """
    values = getattr(sel, "values", None)
    if values is None:
        return parameters, prediction
    if getattr(sel, "space", None) == "standard" and solve_W is not None:
        eliminated = set(idx_eliminated or [])
        keep = [i for i in range(len(values)) if i not in eliminated]
        prediction = solve_W @ np.asarray(values, dtype=float)[keep]
    return values, prediction


def _data_checks(ident: Any) -> DataChecks:
    """The run's input data checks (empty for an object that never ran them)."""
    checks = getattr(ident, "data_checks", None)
    return checks if isinstance(checks, DataChecks) else DataChecks()


def _evidence(
    ident: Any,
    result: Mapping[str, Any],
    identif_config: Mapping[str, Any],
    fit_rmse: Any,
    selected_info: Any,
) -> tuple:
    """``(arrays, facts)`` guards: finite outputs, loaded validation, matching shapes, selection."""
    finite_parameters = result.get("base parameters values")
    finite_prediction = result.get("torque estimated")
    facts: Dict[str, Any] = {
        "requested_validation_loaded": (
            not identif_config.get("validation_data_file")
            or bool(getattr(ident, "_val_available", False))
        ),
        "matching_torque_shapes": (
            np.shape(result["torque estimated"]) == np.shape(result["torque processed"])
            if result.get("torque estimated") is not None
            and result.get("torque processed") is not None
            else None
        ),
    }
    sel = getattr(ident, "selected", None)
    if sel is not None:
        finite_parameters, finite_prediction = _selected_evidence(
            sel,
            getattr(ident, "_solve_W", None),
            getattr(ident, "_idx_eliminated", None),
            finite_parameters,
            finite_prediction,
        )
        requested = getattr(sel, "requested", None) or getattr(sel, "stage", "selected")
        facts["selected_stage_accepted"] = (
            bool(getattr(sel, "accepted", False)),
            f"The requested {requested} estimate was rejected: {getattr(sel, 'reason', '')}",
        )
    arrays = {
        "finite_parameters": finite_parameters,
        "finite_prediction": finite_prediction,
        "finite_measurements": result.get("torque processed"),
        "finite_fit_rmse": (
            fit_rmse if isinstance(selected_info, Mapping) else result.get("rmse norm (N/m)")
        ),
    }
    return arrays, facts


def _attach_context(
    verdict: VerificationVerdict,
    ident: Any,
    result: Mapping[str, Any],
    validation: Mapping[str, Any] | None,
    active_joints: List[str],
) -> None:
    """Provenance ``metadata``, ``series``, ``compat`` and the stage records of the run."""
    metadata = getattr(ident, "_run_provenance", None)
    if not isinstance(metadata, Mapping) or not metadata:
        metadata = collect_run_provenance(ident, "identification")
    verdict.metadata = dict(metadata)
    series = _verdict_series(validation, active_joints)
    if series is not None:
        verdict.series = series
    config = verdict.metadata.get("config")
    verdict.compat = {
        "active_joints": active_joints,
        "decimate": bool(getattr(ident, "_decimate_used", False)),
        "sample_count": result.get("num samples", 0),
        "config_sha256": config.get("sha256") if isinstance(config, Mapping) else None,
    }
    sel = getattr(ident, "selected", None)
    selected_stage = (
        "fit"
        if sel is None
        else (getattr(sel, "stage", "none") if getattr(sel, "accepted", False) else "none")
    )
    apply_to_verdict(verdict, ident, selected_stage=selected_stage)


def verify_identification(
    ident: Any, thresholds: Mapping[str, Mapping[str, Any]] | None, scope: str
) -> VerificationVerdict:
    """Scoped, evidence-based verdict of a solved identification.

    Args:
        ident: A solved ``BaseIdentification`` (``result`` populated).
        thresholds: Metric name → ``{"threshold": τ, "comparison": "max"|"min",
            "required": bool}``; None uses the (empty)
            ``IDENTIFICATION_DEFAULT_THRESHOLDS``. Effort limits are in the
            joint's unit (N·m revolute, N prismatic), ``condition_number`` is
            dimensionless, ``validation_improvement_pct`` in %.
        scope: ``"execution"`` (finite numerical outputs) or ``"prediction"``
            (also independent validation and per-joint error limits).

    Returns:
        The verdict with ``insights`` (texts), ``metadata`` (run provenance),
        ``series`` (every validation sample: ``time`` = sample index,
        ``joint_names``, ``nominal``, ``fitted``, ``measured``), ``compat``
        (``active_joints``, ``decimate``, ``sample_count``, ``config_sha256``)
        and the stage map / records of
        :func:`figaroh.tools.stages.apply_to_verdict`.

    Raises:
        AttributeError: ``solve()`` has not been run.
        ValueError: unknown scope, malformed threshold, or a per-joint limit
            naming a joint that is not active.
    """
    result = getattr(ident, "result", None)
    if result is None:
        raise AttributeError("No identification results available. Run solve() first.")
    if thresholds is None:
        thresholds = IDENTIFICATION_DEFAULT_THRESHOLDS
    if not isinstance(thresholds, Mapping):
        raise ValueError(
            "thresholds must map metric names to {'threshold': ..., 'comparison': 'max'|'min'}, "
            f"got {type(thresholds).__name__}"
        )
    identif_config = getattr(ident, "identif_config", None) or {}
    active_joints = [str(j) for j in identif_config.get("active_joints", [])]
    _check_threshold_joints(thresholds, active_joints)

    base_names = list(result.get("base parameters names", []) or [])
    std_raw = getattr(ident, "std_relative", None)
    std_relative = [] if std_raw is None else list(np.ravel(np.asarray(std_raw, dtype=float)))
    validation = result.get("validation_metrics")
    if not isinstance(validation, Mapping):
        validation = None

    fit_rmse, selected_info = _judged_fit_rmse(result)
    metrics, independent, joint_names = _verdict_metrics(result, fit_rmse, validation)
    arrays, facts = _evidence(ident, result, identif_config, fit_rmse, selected_info)
    checks = _data_checks(ident)
    facts.update(checks.facts())
    duplicate = next((f for f in checks.failed if f.check == "validation_independent"), None)

    verdict = scoped_verification(
        metrics,
        thresholds,
        scope,
        arrays,
        independent,
        [f"validation_rmse:{j}" for j in joint_names],
        facts=facts,
        independence_failure=None if duplicate is None else duplicate.message,
    )
    verdict.insights = [
        f"Input data check {f.check} failed, so this fit cannot pass: {f.message}"
        for f in checks.failed
    ] + [
        i["text"]
        for i in _build_insights(
            result,
            std_relative,
            base_names,
            validation,
            base_parameter_table(ident),
            edge_effect(ident),
        )
    ]
    _attach_context(verdict, ident, result, validation, active_joints)
    stopped = [c.name for c in verdict.checks if c.required and c.status == "fail"]
    logger.info(
        "identification verdict (%s scope): %s%s",
        scope,
        verdict.status,
        f", stopped by {stopped}" if stopped else "",
    )
    return verdict
