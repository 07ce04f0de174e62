"""Evidence-based verification verdicts: threshold checks and scoped verification.

Verification semantics:

* a check is ``pass``, ``fail`` or ``not_evaluated``;
* missing required evidence is ``not_evaluated`` — never a pass;
* non-finite evidence (NaN, ±inf) is a ``fail``;
* the verdict passes only when every *required* check passes; an empty
  policy is ``not_evaluated`` (there is nothing that proves acceptance).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh._run.json_io import verification_json_data
from figaroh._run.values import _finite_or_none, _is_number

__all__ = [
    "CALIBRATION_DEFAULT_THRESHOLDS",
    "CHECK_STATUSES",
    "IDENTIFICATION_DEFAULT_THRESHOLDS",
    "VERIFICATION_SCOPES",
    "ThresholdCheck",
    "VerificationVerdict",
    "evaluate_thresholds",
    "scoped_verification",
    "verdict_status",
]

#: Statuses of a :class:`ThresholdCheck` (and of a verdict).
CHECK_STATUSES = ("pass", "fail", "not_evaluated")
#: Scopes accepted by :func:`scoped_verification`.
VERIFICATION_SCOPES = ("execution", "prediction")

#: Default acceptance policy of ``BaseCalibration.verify()``: empty. Scientific
#: limits must come from the application (read-only mapping).
CALIBRATION_DEFAULT_THRESHOLDS: Mapping[str, Dict[str, Any]] = MappingProxyType({})
#: Default acceptance policy of ``BaseIdentification.verify()``: empty (read-only).
IDENTIFICATION_DEFAULT_THRESHOLDS: Mapping[str, Dict[str, Any]] = MappingProxyType({})


_REASON_MISSING_METRIC = "Required metric is unavailable"
_REASON_NONFINITE_METRIC = "Computed metric is nonfinite"
_REASON_NO_EVIDENCE = "Numerical evidence is unavailable"
_REASON_BAD_ARRAY = "Empty or nonfinite numerical output"
_REASON_BAD_FACT = "Numerical dimensions are missing or inconsistent"
_REASON_NO_INDEPENDENT = "No independently loaded validation data"
_REASON_NO_POLICY = "Specify nonnegative per-output maximum error limits before acceptance"


@dataclass
class ThresholdCheck:
    """One piece of evidence checked against one limit.

    Attributes:
        name: Metric or evidence name (e.g. ``"validation_rmse:elbow_joint"``).
        value: Observed value (same unit as the metric), None when unavailable.
        threshold: The limit.
        comparison: ``"max"`` (pass iff value ≤ threshold) or ``"min"``
            (pass iff value ≥ threshold).
        passed: True only when ``status == "pass"``.
        status: ``"pass"``, ``"fail"`` or ``"not_evaluated"``.
        required: Whether this check decides the verdict.
        reason: Why the check did not pass (empty when it passed).
    """

    name: str
    value: float | None
    threshold: float
    comparison: str
    passed: bool
    status: str = "pass"
    required: bool = True
    reason: str = ""

    def __post_init__(self) -> None:
        if self.status not in CHECK_STATUSES:
            raise ValueError(f"status must be one of {CHECK_STATUSES}, not {self.status!r}")
        if self.status == "pass" and not self.passed:
            self.status = "fail"
        if self.status != "pass":
            self.passed = False
        self.passed = bool(self.passed)
        self.required = bool(self.required)


@dataclass
class VerificationVerdict:
    """Machine-checkable acceptance evidence for one run.

    Produced by :func:`evaluate_thresholds` / :func:`scoped_verification`;
    ``insights``, ``metadata`` (full provenance record), ``series`` and
    ``compat`` are filled in by ``verify()``; ``stage_records``,
    ``selected_stage`` and ``splits`` by
    :func:`figaroh._run.stages.apply_to_verdict`.

    Attributes:
        passed: True only when ``status == "pass"`` (for verdicts built by this
            module).
        checks: Every check, guards first.
        metrics: Metric name → value (units as produced by the caller).
        insights: Human-readable remarks.
        metadata: Provenance record.
        series: Before/after series for the compare page.
        compat: Keys the compare page uses to check two runs are comparable.
        status: ``pass``, ``fail`` or ``not_evaluated``.
        scope: ``thresholds`` (plain :func:`evaluate_thresholds`),
            ``execution`` or ``prediction``.
        stages: Per-stage status map (``numerical_execution``, ``prediction``,
            ``solver``, ``data``, ``fit``, …).
        policy: The thresholds that were applied.
        stage_records: Stage records (dicts) of the run.
        selected_stage: Stage whose estimate the verdict reports.
        splits: Data splits (training / validation) provenance.
    """

    passed: bool
    checks: List[ThresholdCheck]
    metrics: Dict[str, Any]
    insights: List[Any] = field(default_factory=list)
    metadata: Dict[str, Any] = field(default_factory=dict)
    series: Dict[str, Any] = field(default_factory=dict)
    compat: Dict[str, Any] = field(default_factory=dict)
    status: str = "not_evaluated"
    scope: str = "thresholds"
    stages: Dict[str, str] = field(default_factory=dict)
    policy: Dict[str, Any] = field(default_factory=dict)
    stage_records: List[Dict[str, Any]] = field(default_factory=list)
    selected_stage: str = ""
    splits: Dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        counts = {s: sum(1 for c in self.checks if c.status == s) for s in CHECK_STATUSES}
        summary = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        return (
            f"VerificationVerdict(status={self.status!r}, passed={self.passed}, "
            f"scope={self.scope!r}, checks={len(self.checks)}"
            f"{' (' + summary + ')' if summary else ''})"
        )

    def to_json_data(self) -> Dict[str, Any]:
        """Strict-JSON dict of the verdict (see :func:`verification_json_data`)."""
        return verification_json_data(dataclasses.asdict(self))


def verdict_status(checks: Iterable[ThresholdCheck | Mapping[str, Any]]) -> str:
    """Overall status of the *required* checks.

    Any ``fail`` → ``"fail"``; no required check, or any ``not_evaluated`` →
    ``"not_evaluated"``; otherwise ``"pass"``. A check is a
    :class:`ThresholdCheck` or its JSON form (a mapping with ``status`` and
    ``required``, default True), so a verdict read back from a file is judged
    by the same rule.
    """

    def field_of(check: Any, name: str, default: Any) -> Any:
        if isinstance(check, Mapping):
            return check.get(name, default)
        return getattr(check, name, default)

    required = [c for c in checks if field_of(c, "required", True) is not False]
    statuses = [field_of(c, "status", None) for c in required]
    if any(s == "fail" for s in statuses):
        return "fail"
    if not required or any(s != "pass" for s in statuses):
        return "not_evaluated"
    return "pass"


def _metric_value(name: str, value: Any) -> float | None:
    """A metric as a float (None stays None); raises on non-numeric input."""
    if value is None:
        return None
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, (bool, np.bool_)) or _is_number(value):
        return float(value)
    raise ValueError(
        f"metric {name!r} must be a real number or None, got {type(value).__name__} "
        f"({value!r:.60}); convert it to float before verification"
    )


def _threshold_spec(name: str, spec: Any) -> Tuple[float, str, bool]:
    if not isinstance(spec, Mapping):
        raise ValueError(
            f"threshold {name!r} must be a mapping like "
            "{'threshold': 2.0, 'comparison': 'max'}, got "
            f"{type(spec).__name__}"
        )
    for key in ("threshold", "comparison"):
        if key not in spec:
            raise ValueError(f"threshold {name!r} is missing the {key!r} entry")
    comparison = spec["comparison"]
    if comparison not in ("min", "max"):
        raise ValueError(
            f"Unknown comparison {comparison!r} for threshold {name!r} (expected 'max' or 'min')"
        )
    raw = spec["threshold"]
    if isinstance(raw, (bool, np.bool_)) or not _is_number(raw):
        raise ValueError(f"threshold {name!r}: 'threshold' must be a real number, got {raw!r}")
    limit = float(raw)
    if not math.isfinite(limit):
        raise ValueError(f"threshold {name!r}: 'threshold' must be finite, got {limit!r}")
    return limit, comparison, bool(spec.get("required", True))


def _threshold_check(name: Any, spec: Any, raw_value: Any) -> ThresholdCheck:
    """One check of a metric value against its limit specification.

    Missing value → ``not_evaluated``; non-finite → ``fail``; otherwise pass
    iff ``v ≤ τ`` (``max``) or ``v ≥ τ`` (``min``).
    """
    limit, comparison, required = _threshold_spec(name, spec)
    value = _metric_value(name, raw_value)
    label = str(name)
    if value is None:
        return ThresholdCheck(
            value=None,
            passed=False,
            status="not_evaluated",
            required=required,
            reason=_REASON_MISSING_METRIC,
            name=label,
            threshold=limit,
            comparison=comparison,
        )
    if not math.isfinite(value):
        return ThresholdCheck(
            value=value,
            passed=False,
            status="fail",
            required=required,
            reason=_REASON_NONFINITE_METRIC,
            name=label,
            threshold=limit,
            comparison=comparison,
        )
    ok = value <= limit if comparison == "max" else value >= limit
    reason = ""
    if not ok:
        word = "above the maximum" if comparison == "max" else "below the minimum"
        reason = f"{value:.6g} is {word} {limit:.6g}"
    return ThresholdCheck(
        value=value,
        passed=bool(ok),
        status="pass" if ok else "fail",
        required=required,
        reason=reason,
        name=label,
        threshold=limit,
        comparison=comparison,
    )


def evaluate_thresholds(
    metrics: Mapping[str, Any], thresholds: Mapping[str, Mapping[str, Any]]
) -> VerificationVerdict:
    """Check each metric named in ``thresholds`` against its limit.

    For every entry ``name → {"threshold": τ, "comparison": "max"|"min",
    "required": bool (default True)}`` with metric value ``v = metrics[name]``:

    * ``v`` missing or None → ``not_evaluated`` ("Required metric is
      unavailable"; a non-required check does not affect the status);
    * ``v`` non-finite (NaN, ±inf) → ``fail`` ("Computed metric is nonfinite");
    * otherwise pass iff ``v ≤ τ`` (max) or ``v ≥ τ`` (min).

    The verdict's ``status`` is :func:`verdict_status` of the checks and
    ``passed = (status == "pass")``; an empty policy is ``not_evaluated`` and
    does **not** pass.

    Args:
        metrics: Metric name → value (units are the caller's, e.g. RMSE in
            [N·m] or [m]).
        thresholds: Metric name → limit specification.

    Returns:
        The verdict (``scope="thresholds"``, ``policy = dict(thresholds)``).

    Raises:
        ValueError: unknown comparison, non-finite or non-numeric threshold,
            malformed specification, or a non-numeric metric value.
    """
    if not isinstance(metrics, Mapping):
        raise ValueError(f"metrics must be a mapping name -> value, got {type(metrics).__name__}")
    if not isinstance(thresholds, Mapping):
        raise ValueError(
            f"thresholds must be a mapping name -> spec, got {type(thresholds).__name__}"
        )
    checks = [_threshold_check(name, spec, metrics.get(name)) for name, spec in thresholds.items()]
    status = verdict_status(checks)
    return VerificationVerdict(
        passed=status == "pass",
        checks=checks,
        metrics=dict(metrics),
        status=status,
        policy=dict(thresholds),
    )


def _guard(name: str, ok: bool | None, reason_fail: str) -> ThresholdCheck:
    if ok is None:
        return ThresholdCheck(
            name=name,
            value=None,
            threshold=1.0,
            comparison="min",
            passed=False,
            status="not_evaluated",
            reason=_REASON_NO_EVIDENCE,
        )
    return ThresholdCheck(
        name=name,
        value=1.0 if ok else 0.0,
        threshold=1.0,
        comparison="min",
        passed=bool(ok),
        status="pass" if ok else "fail",
        reason="" if ok else reason_fail,
    )


def _array_is_finite(value: Any) -> bool:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(arr.size > 0 and np.isfinite(arr).all())


def _evidence_guards(
    arrays: Mapping[str, Any] | None,
    facts: Mapping[str, Any] | None,
    solver_success: bool | None,
) -> List[ThresholdCheck]:
    """Guards of :func:`scoped_verification`: finite arrays, facts, solver success."""
    guard: List[ThresholdCheck] = []
    for name, value in (arrays or {}).items():
        guard.append(
            _guard(str(name), None if value is None else _array_is_finite(value), _REASON_BAD_ARRAY)
        )
    for name, fact in (facts or {}).items():
        reason = _REASON_BAD_FACT
        if isinstance(fact, tuple):
            if len(fact) != 2:
                raise ValueError(
                    f"fact {name!r} must be a bool, None or a (bool_or_None, reason) tuple"
                )
            fact, reason = fact[0], str(fact[1])
        guard.append(_guard(str(name), None if fact is None else bool(fact), reason))
    if solver_success is not None:
        guard.append(
            _guard("solver_success", bool(solver_success), "The solver did not report success")
        )
    return guard


def _prediction_checks(
    thresholds: Mapping[str, Any],
    independent: bool,
    prediction_keys: Sequence[str],
    independence_failure: str | None = None,
) -> List[ThresholdCheck]:
    """``independent_validation`` and ``prediction_error_policy`` (prediction scope).

    ``independent_validation`` is ``fail`` with ``independence_failure`` as its
    reason when one is given (the validation data is known not to be
    independent), else ``pass`` iff ``independent`` (``not_evaluated``
    otherwise).
    """
    keys = list(prediction_keys or [])
    policy_ok = bool(keys) and all(_is_error_limit(thresholds.get(k)) for k in keys)
    independent = bool(independent) and not independence_failure
    if independence_failure:
        independence = ThresholdCheck(
            name="independent_validation",
            value=0.0,
            threshold=1.0,
            comparison="min",
            passed=False,
            status="fail",
            reason=str(independence_failure),
        )
    else:
        independence = ThresholdCheck(
            name="independent_validation",
            value=1.0 if independent else None,
            threshold=1.0,
            comparison="min",
            passed=independent,
            status="pass" if independent else "not_evaluated",
            reason="" if independent else _REASON_NO_INDEPENDENT,
        )
    return [
        independence,
        ThresholdCheck(
            name="prediction_error_policy",
            value=1.0 if policy_ok else None,
            threshold=1.0,
            comparison="min",
            passed=policy_ok,
            status="pass" if policy_ok else "not_evaluated",
            reason="" if policy_ok else _REASON_NO_POLICY,
        ),
    ]


def scoped_verification(
    metrics: Mapping[str, Any],
    thresholds: Mapping[str, Mapping[str, Any]],
    scope: str,
    arrays: Mapping[str, Any] | None,
    independent: bool,
    prediction_keys: Sequence[str],
    solver_success: bool | None = None,
    facts: Mapping[str, Any] | None = None,
    independence_failure: str | None = None,
) -> VerificationVerdict:
    """Evidence-based verdict for the ``execution`` or ``prediction`` scope.

    Checks, in order (all required):

    1. guards — one per ``arrays`` item (None → ``not_evaluated``; pass iff the
       array is non-empty and every entry finite), one per ``facts`` item
       (None → ``not_evaluated``; truthy → pass; a ``(bool_or_None, reason)``
       tuple uses its own failure reason), and ``solver_success`` when given;
    2. the threshold checks of :func:`evaluate_thresholds`;
    3. scope ``prediction`` only: ``independent_validation`` (pass iff
       ``independent``; ``fail`` when ``independence_failure`` is given) and
       ``prediction_error_policy`` (pass iff every key of ``prediction_keys``
       has a required ``max`` limit ≥ 0; empty keys → ``not_evaluated``).

    The status is :func:`verdict_status` of all checks; ``passed`` is True only
    for ``"pass"``. ``verdict.stages`` holds ``numerical_execution`` (guards),
    ``prediction`` (all checks in prediction scope, else ``not_evaluated``),
    ``solver`` and ``not_evaluated`` placeholders for ``data_provenance``,
    ``physical`` and ``export``.

    Args:
        metrics: Metric name → value (e.g. ``validation_rmse:<joint>`` [N·m]).
        thresholds: Metric name → ``{"threshold", "comparison", "required"}``.
        scope: ``"execution"`` or ``"prediction"``.
        arrays: Evidence name → numerical output that must be finite
            (parameters, predictions, measurements, RMSE), None when missing.
        independent: True when the validation data was loaded independently
            of the fitting data (held-out set).
        prediction_keys: Metric names that must carry an explicit error limit
            for a prediction to be accepted (``validation_rmse:<joint>``).
        solver_success: Whether the solver reported success (None: no check).
        facts: Evidence name → bool, None or ``(bool_or_None, reason)``.
        independence_failure: Why the validation data is known not to be
            independent (e.g. identical to the training data), or None.

    Returns:
        The verdict.

    Raises:
        ValueError: unknown scope, or a malformed threshold/metric (see
            :func:`evaluate_thresholds`).
    """
    if scope not in VERIFICATION_SCOPES:
        raise ValueError("Verification scope must be 'execution' or 'prediction'")
    verdict = evaluate_thresholds(metrics, thresholds)

    guard = _evidence_guards(arrays, facts, solver_success)
    numerical_status = verdict_status(guard)
    checks = guard + list(verdict.checks)

    prediction_status = "not_evaluated"
    if scope == "prediction":
        checks.extend(
            _prediction_checks(thresholds, independent, prediction_keys, independence_failure)
        )
        prediction_status = verdict_status(checks)

    verdict.checks = checks
    verdict.status = verdict_status(checks)
    verdict.passed = verdict.status == "pass"
    verdict.scope = scope
    verdict.stages = _stage_map(numerical_status, prediction_status, solver_success)
    return verdict


def _stage_map(numerical: str, prediction: str, solver_success: bool | None) -> Dict[str, str]:
    """The per-stage status map of a scoped verdict (placeholders for the run's stages)."""
    return {
        "numerical_execution": numerical,
        "prediction": prediction,
        "data_provenance": "not_evaluated",
        "solver": (
            "not_evaluated" if solver_success is None else ("pass" if solver_success else "fail")
        ),
        "physical": "not_evaluated",
        "export": "not_evaluated",
    }


def _is_error_limit(spec: Any) -> bool:
    if not isinstance(spec, Mapping):
        return False
    limit = _finite_or_none(spec.get("threshold"))
    return (
        bool(spec.get("required", True))
        and spec.get("comparison") == "max"
        and limit is not None
        and limit >= 0
    )
