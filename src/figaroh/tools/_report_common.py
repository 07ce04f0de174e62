"""Shared report layer: verdict dataclasses, scoped verification, HTML/CSS helpers.

Calibration (iterative nonlinear fit with outlier removal) and identification
(one-shot linear QR solve) produce different diagnostics, so each has its own
report module (:mod:`figaroh.tools.report`,
:mod:`figaroh.tools.identification_report`). Both render a self-contained HTML
page with the same look, the same escaping rules and the same confidence-tier
vocabulary; this module holds that domain-independent layer, plus the
machine-checkable verdict used by ``verify()``.

Verification semantics (evidence based):

* a check is ``pass``, ``fail`` or ``not_evaluated``;
* missing required evidence is ``not_evaluated`` — never a pass;
* non-finite evidence (NaN, ±inf) is a ``fail``;
* the verdict passes only when every *required* check passes; an empty
  policy is ``not_evaluated`` (there is nothing that proves acceptance).

Strict JSON: exported verdicts go through :func:`verification_json_data`,
which turns every non-finite float into ``None`` (JSON ``null``; the check
``status`` still carries the failure) so the files are written with
``allow_nan=False`` and always load back with any JSON reader.

HTML escaping: every string that reaches HTML goes through :func:`html_escape`
(alias :func:`_esc`), including attribute values; data for the charts travels
in an escaped ``data-series`` attribute, never as raw ``<script>`` text.
"""

from __future__ import annotations

import dataclasses
import html
import json
import logging
import math
import numbers
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple, Union

import numpy as np

from figaroh.data.source import atomic_write_text, file_sha256

logger = logging.getLogger(__name__)

__all__ = [
    "CALIBRATION_DEFAULT_THRESHOLDS",
    "CHECK_STATUSES",
    "IDENTIFICATION_DEFAULT_THRESHOLDS",
    "UNCERTAINTY_CAUTION_PCT",
    "UNCERTAINTY_WARN_PCT",
    "VALIDATION_IMPROVEMENT_WARN_PCT",
    "VERIFICATION_SCOPES",
    "ThresholdCheck",
    "VerificationVerdict",
    "build_provenance_metadata",
    "evaluate_thresholds",
    "html_escape",
    "scoped_verification",
    "verification_json_data",
    "write_verification_json",
]

# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------

#: Relative standard deviation [%] above which a parameter is poorly identified.
UNCERTAINTY_WARN_PCT = 30.0
#: Relative standard deviation [%] above which a parameter is only fairly identified.
UNCERTAINTY_CAUTION_PCT = 10.0
#: Validation improvement over nominal [%] below which the reports warn.
VALIDATION_IMPROVEMENT_WARN_PCT = 50.0
#: Maximum number of points per chart series embedded in a report.
_MAX_SERIES_POINTS = 3000

#: Statuses of a :class:`ThresholdCheck` (and of a verdict).
CHECK_STATUSES = ("pass", "fail", "not_evaluated")
#: Scopes accepted by :func:`scoped_verification`.
VERIFICATION_SCOPES = ("execution", "prediction")

#: Default acceptance policy of ``BaseCalibration.verify()``: empty. Scientific
#: limits must come from the application (read-only mapping).
CALIBRATION_DEFAULT_THRESHOLDS: Mapping[str, Dict[str, Any]] = MappingProxyType({})
#: Default acceptance policy of ``BaseIdentification.verify()``: empty (read-only).
IDENTIFICATION_DEFAULT_THRESHOLDS: Mapping[str, Dict[str, Any]] = MappingProxyType({})

_UNAVAILABLE_HASHES = ("unknown", "unavailable", "not_found")
_GIT_TIMEOUT_S = 5.0

_REASON_MISSING_METRIC = "Required metric is unavailable"
_REASON_NONFINITE_METRIC = "Computed metric is nonfinite"
_REASON_NO_EVIDENCE = "Numerical evidence is unavailable"
_REASON_BAD_ARRAY = "Empty or nonfinite numerical output"
_REASON_BAD_FACT = "Numerical dimensions are missing or inconsistent"
_REASON_NO_INDEPENDENT = "No independently loaded validation data"
_REASON_NO_POLICY = "Specify nonnegative per-output maximum error limits before acceptance"


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def html_escape(value: Any) -> str:
    """Escape any value for HTML text *and* attribute context.

    ``str(value)`` is escaped with :func:`html.escape` (``&``, ``<``, ``>``,
    ``"`` and ``'``), so ``<script>alert(1)</script>`` renders as text.

    Args:
        value: Anything; converted with ``str``.

    Returns:
        The escaped string.
    """
    return html.escape(str(value), quote=True)


def _esc(x: Any) -> str:
    """Short alias of :func:`html_escape` used by every report generator."""
    return html_escape(x)


def _is_number(value: Any) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def _finite_or_none(value: Any) -> float | None:
    """``float(value)`` when it is a finite real number, else ``None``."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _fmt(value: Any, spec: str = ".4g") -> str:
    """Format a number for HTML; None/NaN/non-numbers become an em dash (escaped)."""
    f = _finite_or_none(value)
    if f is None:
        if isinstance(value, float) and math.isinf(value):
            return _esc("∞" if value > 0 else "-∞")
        return "—"
    return _esc(format(f, spec))


def _uncertainty_tier(std_pct: float | None) -> str:
    """Confidence tier of a relative standard deviation.

    Args:
        std_pct: Relative standard deviation σ/|θ|·100 [%], or None.

    Returns:
        ``"unknown"`` (None/NaN), ``"poor"`` (> 30 %), ``"fair"`` (> 10 %) or
        ``"good"``; boundaries are exclusive (exactly 30 % is ``fair``, exactly
        10 % is ``good``).
    """
    if std_pct is None:
        return "unknown"
    try:
        pct = abs(float(std_pct))
    except (TypeError, ValueError):
        return "unknown"
    if math.isnan(pct):
        return "unknown"
    if pct > UNCERTAINTY_WARN_PCT:
        return "poor"
    if pct > UNCERTAINTY_CAUTION_PCT:
        return "fair"
    return "good"


def _hash_short(v: Any) -> str:
    """Shorten a hash for display.

    Falsy → ``"unavailable"``; ``unknown``/``unavailable``/``not_found`` (or an
    ``"unavailable: <reason>"`` string) → returned as is; otherwise the first
    12 characters.
    """
    if not v:
        return "unavailable"
    s = str(v)
    if s in _UNAVAILABLE_HASHES or s.startswith("unavailable"):
        return s
    return s[:12]


def _run_title(provenance: Mapping[str, Any] | None, fallback: str) -> str:
    """Human title of a run: ``"<asset_id> (<robot name>)"`` or the model name.

    Args:
        provenance: A record from
            :func:`figaroh.tools.provenance.collect_run_provenance`, or None.
        fallback: Title used when nothing better is known (e.g. class name).

    Returns:
        The title (not escaped).
    """
    if not isinstance(provenance, Mapping):
        return fallback
    asset = provenance.get("asset")
    model = provenance.get("model")
    model_name = model.get("robot_name") if isinstance(model, Mapping) else None
    if not isinstance(model_name, str) or not model_name or model_name.startswith("unavailable"):
        model_name = None
    if isinstance(asset, Mapping) and asset.get("is_specified"):
        return f"{asset.get('asset_id', 'unknown')} ({model_name or fallback})"
    return model_name or fallback


def _run_git(args: Sequence[str], cwd: Union[str, os.PathLike] | None = None) -> Tuple[bool, str]:
    """Run ``git <args>`` with a 5 s timeout.

    Returns:
        ``(True, stdout stripped)`` on success, else ``(False, reason)``.
    """
    exe = shutil.which("git")
    if exe is None:
        return False, "git executable not found"
    try:
        proc = subprocess.run(
            [exe, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )
    except subprocess.TimeoutExpired:
        return False, f"git {' '.join(args)} timed out after {_GIT_TIMEOUT_S:g} s"
    except OSError as exc:
        return False, f"git could not run: {exc}"
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout or "").strip().splitlines()
        return False, msg[0] if msg else f"git exited with status {proc.returncode}"
    return True, proc.stdout.strip()


def _git_commit_hash() -> str:
    """``git rev-parse HEAD`` of the current working directory, ``"unknown"`` on failure."""
    ok, out = _run_git(["rev-parse", "HEAD"])
    return out if ok and out else "unknown"


def _config_file_sha256(path: Union[str, os.PathLike] | None) -> str:
    """sha256 of a file's bytes, ``"unknown"`` for an empty path or any failure."""
    if not path:
        return "unknown"
    try:
        return file_sha256(path)
    except (OSError, TypeError, ValueError):
        return "unknown"


def build_provenance_metadata(config_file_path: str | None, robot_name: str) -> Dict[str, str]:
    """Minimal provenance for a verdict (older API; see ``collect_run_provenance``).

    Args:
        config_file_path: Path of the configuration file, or None.
        robot_name: Robot/model name.

    Returns:
        ``{"git_commit", "config_sha256", "timestamp" (UTC ISO-8601), "robot_name"}``.
    """
    return {
        "git_commit": _git_commit_hash(),
        "config_sha256": _config_file_sha256(config_file_path),
        "timestamp": datetime.now(timezone.utc).isoformat(),
        "robot_name": str(robot_name),
    }


def _downsample_series(
    time: Sequence[Any],
    series_dicts: Sequence[Mapping[str, Sequence[Any]]],
    max_points: int = _MAX_SERIES_POINTS,
) -> Tuple[List[Any], List[Dict[str, List[Any]]]]:
    """Uniformly subsample a time axis and every series with it.

    When ``n = len(time) > max_points`` the indices
    ``range(0, n, ceil(n / max_points))`` are kept for the time axis and for
    every series of every dict (subsampling, never truncation).

    Args:
        time: Time (or sample-index) axis of length n.
        series_dicts: Dicts name → sequence aligned with ``time``.
        max_points: Maximum number of points to keep (≥ 1).

    Returns:
        ``(time, series_dicts)`` as lists (copies).

    Raises:
        ValueError: ``max_points`` < 1.
    """
    if int(max_points) < 1:
        raise ValueError(f"max_points must be >= 1, got {max_points!r}")
    n = len(time)
    step = math.ceil(n / max_points) if n > max_points else 1
    t_out = list(time)[::step]
    out = [{str(k): list(v)[::step] for k, v in d.items()} for d in series_dicts]
    return t_out, out


# ---------------------------------------------------------------------------
# Verdict dataclasses
# ---------------------------------------------------------------------------


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
    :func:`figaroh.tools.stages.apply_to_verdict`.

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


def _check_status(checks: Iterable[ThresholdCheck]) -> str:
    """Overall status of the *required* checks.

    Any ``fail`` → ``"fail"``; no required check, or any ``not_evaluated`` →
    ``"not_evaluated"``; otherwise ``"pass"``.
    """
    required = [c for c in checks if c.required]
    if any(c.status == "fail" for c in required):
        return "fail"
    if not required or any(c.status == "not_evaluated" for c in required):
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

    The verdict's ``status`` is :func:`_check_status` of the checks and
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
    checks: List[ThresholdCheck] = []
    for name, spec in thresholds.items():
        limit, comparison, required = _threshold_spec(name, spec)
        value = _metric_value(name, metrics.get(name))
        if value is None:
            checks.append(
                ThresholdCheck(
                    name=str(name),
                    value=None,
                    threshold=limit,
                    comparison=comparison,
                    passed=False,
                    status="not_evaluated",
                    required=required,
                    reason=_REASON_MISSING_METRIC,
                )
            )
            continue
        if not math.isfinite(value):
            checks.append(
                ThresholdCheck(
                    name=str(name),
                    value=value,
                    threshold=limit,
                    comparison=comparison,
                    passed=False,
                    status="fail",
                    required=required,
                    reason=_REASON_NONFINITE_METRIC,
                )
            )
            continue
        ok = value <= limit if comparison == "max" else value >= limit
        reason = ""
        if not ok:
            word = "above the maximum" if comparison == "max" else "below the minimum"
            reason = f"{value:.6g} is {word} {limit:.6g}"
        checks.append(
            ThresholdCheck(
                name=str(name),
                value=value,
                threshold=limit,
                comparison=comparison,
                passed=bool(ok),
                status="pass" if ok else "fail",
                required=required,
                reason=reason,
            )
        )
    status = _check_status(checks)
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


def scoped_verification(
    metrics: Mapping[str, Any],
    thresholds: Mapping[str, Mapping[str, Any]],
    scope: str,
    arrays: Mapping[str, Any] | None,
    independent: bool,
    prediction_keys: Sequence[str],
    solver_success: bool | None = None,
    facts: Mapping[str, Any] | None = None,
) -> VerificationVerdict:
    """Evidence-based verdict for the ``execution`` or ``prediction`` scope.

    Checks, in order (all required):

    1. guards — one per ``arrays`` item (None → ``not_evaluated``; pass iff the
       array is non-empty and every entry finite), one per ``facts`` item
       (None → ``not_evaluated``; truthy → pass; a ``(bool_or_None, reason)``
       tuple uses its own failure reason), and ``solver_success`` when given;
    2. the threshold checks of :func:`evaluate_thresholds`;
    3. scope ``prediction`` only: ``independent_validation`` (pass iff
       ``independent``) and ``prediction_error_policy`` (pass iff every key of
       ``prediction_keys`` has a required ``max`` limit ≥ 0; empty keys →
       ``not_evaluated``).

    The status is :func:`_check_status` of all checks; ``passed`` is True only
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

    Returns:
        The verdict.

    Raises:
        ValueError: unknown scope, or a malformed threshold/metric (see
            :func:`evaluate_thresholds`).
    """
    if scope not in VERIFICATION_SCOPES:
        raise ValueError("Verification scope must be 'execution' or 'prediction'")
    verdict = evaluate_thresholds(metrics, thresholds)

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
    numerical_status = _check_status(guard)
    checks = guard + list(verdict.checks)

    prediction_status = "not_evaluated"
    if scope == "prediction":
        checks.append(
            ThresholdCheck(
                name="independent_validation",
                value=1.0 if independent else None,
                threshold=1.0,
                comparison="min",
                passed=bool(independent),
                status="pass" if independent else "not_evaluated",
                reason="" if independent else _REASON_NO_INDEPENDENT,
            )
        )
        keys = list(prediction_keys or [])
        policy_ok = bool(keys) and all(_is_error_limit(thresholds.get(k)) for k in keys)
        checks.append(
            ThresholdCheck(
                name="prediction_error_policy",
                value=1.0 if policy_ok else None,
                threshold=1.0,
                comparison="min",
                passed=policy_ok,
                status="pass" if policy_ok else "not_evaluated",
                reason="" if policy_ok else _REASON_NO_POLICY,
            )
        )
        prediction_status = _check_status(checks)

    verdict.checks = checks
    verdict.status = _check_status(checks)
    verdict.passed = verdict.status == "pass"
    verdict.scope = scope
    verdict.stages = {
        "numerical_execution": numerical_status,
        "prediction": prediction_status,
        "data_provenance": "not_evaluated",
        "solver": (
            "not_evaluated" if solver_success is None else ("pass" if solver_success else "fail")
        ),
        "physical": "not_evaluated",
        "export": "not_evaluated",
    }
    return verdict


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


# ---------------------------------------------------------------------------
# Strict JSON
# ---------------------------------------------------------------------------


def verification_json_data(data: Any) -> Any:
    """Convert a verdict (or any nested data) for strict JSON.

    Dicts, lists and tuples are walked; numpy arrays become lists and numpy
    scalars Python scalars; dataclass instances go through
    :func:`dataclasses.asdict`; :class:`pathlib.Path` becomes ``str``; every
    **non-finite float (NaN, ±inf) becomes None** (JSON ``null``) — the
    status fields still carry the failure. Non-string dict keys are
    stringified. The result can be written with ``json.dump(...,
    allow_nan=False)``.

    Args:
        data: Any nested structure.

    Returns:
        A structure of dict/list/str/int/float/bool/None (other objects are
        returned unchanged).
    """
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = dataclasses.asdict(data)
    if isinstance(data, Mapping):
        return {
            (k if isinstance(k, str) else str(k)): verification_json_data(v)
            for k, v in data.items()
        }
    if isinstance(data, (list, tuple)):
        return [verification_json_data(v) for v in data]
    if isinstance(data, np.ndarray):
        return verification_json_data(data.tolist())
    if isinstance(data, np.generic):
        data = data.item()
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, Path):
        return str(data)
    return data


def write_verification_json(data: Any, path: Union[str, os.PathLike]) -> str:
    """Write :func:`verification_json_data` of ``data`` as strict JSON, atomically.

    ``allow_nan=False`` is always used (non-finite floats are ``null``); the
    file is written to a temporary file and renamed (no half-written file).

    Args:
        data: A verdict, its ``asdict`` dict, or any nested data.
        path: Destination; the folder must exist.

    Returns:
        The written path.

    Raises:
        TypeError: ``data`` holds an object JSON cannot represent.
        FileNotFoundError: the destination folder does not exist.
    """
    text = json.dumps(verification_json_data(data), indent=2, allow_nan=False, ensure_ascii=False)
    return atomic_write_text(path, text + "\n")


def _json_for_attribute(data: Any) -> str:
    """Strict JSON text, escaped for an HTML attribute value."""
    return _esc(json.dumps(verification_json_data(data), allow_nan=False, separators=(",", ":")))


# ---------------------------------------------------------------------------
# HTML sections shared by the report generators
# ---------------------------------------------------------------------------


def _insights_section(insights: Iterable[Any] | None) -> str:
    """List of insights ``{"level": "warn"|"info", "text": str}`` (or plain strings)."""
    items = []
    for ins in insights or []:
        if isinstance(ins, Mapping):
            level = "warn" if ins.get("level") == "warn" else "info"
            text = ins.get("text", "")
        else:
            level, text = "info", ins
        items.append(f'<li class="insight {level}">{_esc(text)}</li>')
    if not items:
        return '<p class="muted">No insights.</p>'
    return '<ul class="insights">' + "".join(items) + "</ul>"


def _kv_rows(rows: Iterable[Tuple[str, Any]]) -> str:
    return "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)


def _provenance_section(provenance: Mapping[str, Any] | None) -> str:
    """Table of a run provenance record (every value escaped)."""
    if not isinstance(provenance, Mapping):
        return '<p class="muted">No provenance recorded for this run (run solve() first).</p>'

    def sub(key: str) -> Mapping[str, Any]:
        v = provenance.get(key)
        return v if isinstance(v, Mapping) else {}

    asset, model, config = sub("asset"), sub("model"), sub("config")
    software, data, stamps = sub("software"), sub("data"), sub("timestamps")
    rows: List[Tuple[str, Any]] = [
        ("Run id", provenance.get("run_id", "unavailable")),
        ("Task", provenance.get("task", "unavailable")),
    ]
    if asset.get("is_specified"):
        asset_text = str(asset.get("asset_id", ""))
        extras = [
            f"{k}: {asset[k]}"
            for k in ("label", "serial_number", "site", "operator")
            if asset.get(k) not in (None, "")
        ]
        if extras:
            asset_text += " (" + ", ".join(extras) + ")"
        rows.append(("Asset", asset_text))
    else:
        rows.append(("Asset", "not specified (no robot.instance in the config)"))
    rows.append(("Model", model.get("robot_name", "unavailable")))
    if model.get("urdf_path"):
        rows.append(
            ("URDF", f"{model['urdf_path']} (sha256 {_hash_short(model.get('urdf_sha256'))})")
        )
    rows.append(("Config", f"{config.get('path', 'unavailable')}"))
    rows.append(("Config sha256", _hash_short(config.get("sha256"))))
    git = _hash_short(software.get("git_commit"))
    dirty = software.get("git_dirty")
    if dirty is True:
        git += " (uncommitted changes)"
    rows.append(("Git commit", git))
    versions = ", ".join(
        f"{k} {software[k]}"
        for k in ("python", "numpy", "scipy", "pinocchio", "figaroh")
        if k in software
    )
    rows.append(("Software", versions or "unavailable"))
    rows.append(("Host", software.get("hostname", "unavailable")))
    files = data.get("files") if isinstance(data.get("files"), list) else []
    for entry in files:
        if isinstance(entry, Mapping):
            rows.append(
                (
                    f"Data ({entry.get('role', 'file')})",
                    f"{entry.get('path', '?')} (sha256 {_hash_short(entry.get('sha256'))})",
                )
            )
    for key, label in (
        ("run_started", "Run started"),
        ("run_finished", "Run finished"),
        ("report_generated", "Report generated"),
    ):
        if key in stamps:
            rows.append((label, stamps[key]))
    return f'<table class="kv">{_kv_rows(rows)}</table>'


def _param_uncertainty_section(
    names: Sequence[Any],
    std_dev: Sequence[Any] | None,
    std_pct: Sequence[Any] | None,
    values: Sequence[Any] | None = None,
) -> str:
    """Parameter table sorted by decreasing relative standard deviation.

    Args:
        names: Parameter names.
        std_dev: Absolute standard deviations (parameter units: [kg], [kg·m],
            [kg·m²], [m], [rad], …).
        std_pct: Relative standard deviations [%]; NaN/None rows are sorted last.
        values: Parameter estimates (optional; missing shown as an em dash).

    Returns:
        HTML (bar width ``min(pct, 100)`` %, tier class per row).
    """
    names = list(names or [])
    if not names:
        return '<p class="muted">No parameters to report.</p>'

    def col(seq: Sequence[Any] | None, label: str) -> List[Any]:
        seq = [] if seq is None else list(np.asarray(seq, dtype=object).ravel())
        if len(seq) != len(names) and seq:
            logger.warning(
                "uncertainty table: %d %s for %d parameters; missing entries shown as '—'",
                len(seq),
                label,
                len(names),
            )
        return seq + [None] * max(0, len(names) - len(seq))

    sd, pct, val = (
        col(std_dev, "std devs"),
        col(std_pct, "relative std devs"),
        col(values, "values"),
    )
    pct_f = [_finite_or_none(p) for p in pct]
    order = sorted(
        range(len(names)),
        key=lambda i: (pct_f[i] is None, -abs(pct_f[i]) if pct_f[i] is not None else 0.0),
    )
    rows = []
    for i in order:
        p = pct_f[i]
        tier = _uncertainty_tier(p)
        width = 0.0 if p is None else min(abs(p), 100.0)
        rows.append(
            f'<tr class="tier-{tier}"><td>{_esc(names[i])}</td>'
            f"<td>{_fmt(val[i])}</td><td>{_fmt(sd[i])}</td><td>{_fmt(p, '.1f')}</td>"
            f'<td><div class="bar"><div class="bar-fill tier-{tier}" '
            f'style="width:{width:.1f}%"></div></div></td>'
            f'<td><span class="badge tier-{tier}">{_esc(tier)}</span></td></tr>'
        )
    return (
        '<table class="data"><thead><tr><th>Parameter</th><th>Value</th><th>σ</th>'
        "<th>σ [%]</th><th></th><th>Confidence</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _correlation_section(pairs: Iterable[Any] | None) -> str:
    """Strongly correlated parameter pairs (``{"param_i", "param_j", "correlation"}``).

    ``|ρ| > 0.95`` is tier ``poor``, otherwise ``fair``; an empty list reads
    "No parameter pairs exceed |ρ| > 0.8.".
    """
    rows = []
    for pair in pairs or []:
        if isinstance(pair, Mapping):
            a, b, rho = pair.get("param_i"), pair.get("param_j"), pair.get("correlation")
        else:
            a, b, rho = tuple(pair)[:3]
        r = _finite_or_none(rho)
        tier = "poor" if r is not None and abs(r) > 0.95 else "fair"
        rows.append(
            f'<tr class="tier-{tier}"><td>{_esc(a)}</td><td>{_esc(b)}</td>'
            f"<td>{_fmt(r, '+.3f')}</td>"
            f'<td><span class="badge tier-{tier}">{_esc(tier)}</span></td></tr>'
        )
    if not rows:
        return '<p class="muted">No parameter pairs exceed |ρ| &gt; 0.8.</p>'
    return (
        '<table class="data"><thead><tr><th>Parameter</th><th>Parameter</th><th>ρ</th>'
        "<th>Severity</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


_SERIES_DOMAINS = {
    "calibration": {
        "names": "dof_names",
        "nominal": "error_nominal_per_dof",
        "fitted": "error_fitted_per_dof",
        "measured": None,
        "unit": "",
        "labels": ("nominal error", "calibrated error", "zero error"),
    },
    "identification": {
        "names": "joint_names",
        "nominal": "tau_nominal_per_joint",
        "fitted": "tau_identified_per_joint",
        "measured": "tau_measured_per_joint",
        "unit": "Nm",
        "labels": ("nominal (CAD) prediction", "identified prediction", "measured"),
    },
}


def _series_panel_section(validation: Mapping[str, Any] | None, domain: str, panel_id: str) -> str:
    """Interactive before/after chart of the validation series.

    Args:
        validation: Validation-metrics dict of the run (or None).
        domain: ``"calibration"`` (per-DOF errors, reference zero, unitless
            scaled residuals) or ``"identification"`` (per-joint efforts [N·m]
            or [N]).
        panel_id: HTML id of the panel (escaped).

    Returns:
        HTML; the data travels as escaped JSON in a ``data-series`` attribute
        and is drawn by ``_SERIES_CHART_SCRIPT`` (no network request).

    Raises:
        ValueError: unknown ``domain``.
    """
    if domain not in _SERIES_DOMAINS:
        raise ValueError(
            f"unknown series domain {domain!r}; expected 'calibration' or 'identification'"
        )
    spec = _SERIES_DOMAINS[domain]
    if not isinstance(validation, Mapping):
        return '<p class="muted">No validation series available for this run.</p>'
    nominal = validation.get(spec["nominal"]) or {}
    fitted = validation.get(spec["fitted"]) or {}
    names = [str(n) for n in (validation.get(spec["names"]) or []) if n in nominal and n in fitted]
    if not names:
        return '<p class="muted">No validation series available for this run.</p>'
    nominal = {n: list(np.ravel(nominal[n])) for n in names}
    fitted = {n: list(np.ravel(fitted[n])) for n in names}
    if spec["measured"] is None:
        measured = {n: [0.0] * len(fitted[n]) for n in names}
    else:
        src = validation.get(spec["measured"]) or {}
        measured = {n: list(np.ravel(src.get(n, []))) for n in names}
    n_points = max(len(v) for v in fitted.values())
    time = list(range(n_points))
    t_out, (nominal, fitted, measured) = _downsample_series(
        time, [nominal, fitted, measured], _MAX_SERIES_POINTS
    )
    payload = {
        "names": names,
        "time": t_out,
        "nominal": nominal,
        "fitted": fitted,
        "measured": measured,
        "unit": spec["unit"],
        "labels": list(spec["labels"]),
    }
    hint = "Sample index on the horizontal axis"
    if len(t_out) < n_points:
        hint += f"; {n_points} samples subsampled to {len(t_out)} for display"
    hint += "; scroll or drag to zoom, double-click to reset, hover to read values"
    legend = "".join(
        f'<span class="legend-item"><span class="swatch s-{cls}"></span>{_esc(label)}</span>'
        for cls, label in zip(("nominal", "fitted", "measured"), spec["labels"], strict=True)
    )
    unit = f" [{spec['unit']}]" if spec["unit"] else ""
    return (
        f'<div class="series-panel" id="{_esc(panel_id)}" '
        f'data-series="{_json_for_attribute(payload)}">'
        f"<label>{_esc('Joint' if domain == 'identification' else 'DOF')}{_esc(unit)} "
        "<select></select></label>"
        f'<div class="series-legend">{legend}</div>'
        '<svg class="series-chart" viewBox="0 0 720 260" role="img"></svg>'
        f'<p class="series-hint">{_esc(hint)}.</p></div>'
    )


# ---------------------------------------------------------------------------
# Presentation payloads (self-contained; no network requests)
# ---------------------------------------------------------------------------

_STYLE = """
:root { --fg:#202124; --muted:#5f6368; --bg:#f8f9fa; --card:#ffffff; --line:#dadce0;
  --good:#188038; --fair:#b06000; --poor:#c5221f; --unknown:#80868b; --accent:#1a73e8; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  color:var(--fg); background:var(--bg); }
.page { max-width:1040px; margin:0 auto; padding:24px; }
h1 { font-size:24px; margin:0 0 4px; } h2 { font-size:18px; margin:28px 0 8px; }
.subtitle, .muted, .series-hint { color:var(--muted); }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:16px;
  overflow-x:auto; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line);
  vertical-align:top; }
table.kv th { width:200px; color:var(--muted); font-weight:500; }
table.data td { font-variant-numeric: tabular-nums; }
.badge { display:inline-block; padding:0 8px; border-radius:10px; color:#fff; font-size:12px; }
.badge.tier-good, .bar-fill.tier-good { background:var(--good); }
.badge.tier-fair, .bar-fill.tier-fair { background:var(--fair); }
.badge.tier-poor, .bar-fill.tier-poor { background:var(--poor); }
.badge.tier-unknown, .bar-fill.tier-unknown { background:var(--unknown); }
.status-pass { color:var(--good); } .status-fail { color:var(--poor); }
.status-not_evaluated { color:var(--fair); }
.bar { width:120px; height:8px; background:#eceff1; border-radius:4px; }
.bar-fill { height:8px; border-radius:4px; }
ul.insights { list-style:none; padding:0; margin:0; }
.insight { padding:8px 12px; margin:6px 0; border-radius:6px; border-left:4px solid; }
.insight.warn { background:#fef7e0; border-color:var(--fair); }
.insight.info { background:#e8f0fe; border-color:var(--accent); }
.banner-warn { background:#fce8e6; border:1px solid var(--poor); padding:8px 12px;
  border-radius:6px; }
.series-chart { width:100%; height:auto; background:#fff; }
.series-legend { margin:6px 0; }
.legend-item { margin-right:16px; white-space:nowrap; }
.swatch { display:inline-block; width:14px; height:3px; margin-right:6px; vertical-align:middle; }
.s-nominal { background:#9aa0a6; } .s-fitted { background:#1a73e8; }
.s-measured { background:#202124; }
.series-chart { cursor:crosshair; user-select:none; }
.chart-reset { margin:4px 0 4px 12px; font:inherit; font-size:12px; padding:2px 10px;
  border:1px solid var(--line); border-radius:4px; background:#fff; cursor:pointer; }
footer { margin-top:32px; color:var(--muted); font-size:12px; }
"""

#: Interactive SVG line chart (``window.FigarohChart``): wheel zoom around the
#: cursor, drag-to-zoom, double-click reset, hover read-out of every series.
#: Plain JavaScript, no dependency and no network request; shared by the
#: report pages and the compare page.
_CHART_ENGINE_SCRIPT = r"""
(function () {
  "use strict";
  if (window.FigarohChart) { return; }
  var SVGNS = "http://www.w3.org/2000/svg";
  var W = 720, H = 260, L = 64, R = 12, T = 12, B = 30;
  var clipCounter = 0;

  function node(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function fmt(v) {
    if (!isNum(v)) { return "\u2014"; }
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) { return v.toExponential(3); }
    return String(Number(v.toPrecision(5)));
  }
  function ticks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) { return [lo]; }
    var step = Math.pow(10, Math.floor(Math.log(span / n) / Math.LN10));
    var err = span / n / step;
    if (err >= 7.5) { step *= 10; }
    else if (err >= 3.5) { step *= 5; }
    else if (err >= 1.5) { step *= 2; }
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 50; v += step) {
      out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    return out;
  }
  function lowerBound(arr, v) {
    var lo = 0, hi = arr.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (arr[mid] < v) { lo = mid + 1; } else { hi = mid; }
    }
    return lo;
  }

  /* An interactive line chart drawn into an <svg viewBox="0 0 720 260">.
     Wheel: zoom around the cursor; drag: zoom to the selected range;
     double-click (or reset()): full range; hover: values of every series
     at the nearest sample. */
  function Chart(svg, options) {
    this.svg = svg;
    this.options = options || {};
    this.x = [];
    this.series = [];
    this.unit = "";
    this.view = null;
    this.drag = null;
    this.clipId = "figaroh-clip-" + (++clipCounter);
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var self = this;
    svg.addEventListener("wheel", function (ev) { self.onWheel(ev); }, {passive: false});
    svg.addEventListener("mousedown", function (ev) { self.onDown(ev); });
    svg.addEventListener("mousemove", function (ev) { self.onMove(ev); });
    svg.addEventListener("mouseup", function (ev) { self.onUp(ev); });
    svg.addEventListener("mouseleave", function () { self.drag = null; self.hideHover(); });
    svg.addEventListener("dblclick", function (ev) { ev.preventDefault(); self.reset(); });
  }
  /* series: [{label, color, dash, width, y: [...], x: optional own axis, visible}] */
  Chart.prototype.setData = function (x, series, unit, keepView) {
    this.x = x || [];
    this.series = series || [];
    this.unit = unit || "";
    if (!keepView) { this.view = null; }
    this.render();
  };
  Chart.prototype.xOf = function (s) { return s.x || this.x; };
  Chart.prototype.fullRange = function () {
    var lo = Infinity, hi = -Infinity, self = this;
    this.series.forEach(function (s) {
      var x = self.xOf(s);
      if (x.length) { lo = Math.min(lo, x[0]); hi = Math.max(hi, x[x.length - 1]); }
    });
    if (!isFinite(lo)) { return null; }
    if (hi === lo) { hi = lo + 1; }
    return [lo, hi];
  };
  Chart.prototype.range = function () {
    var full = this.fullRange();
    if (!full) { return null; }
    return this.view || full;
  };
  Chart.prototype.zoomTo = function (x0, x1) {
    var full = this.fullRange();
    if (!full || !isNum(x0) || !isNum(x1)) { return; }
    var lo = Math.max(full[0], Math.min(x0, x1)), hi = Math.min(full[1], Math.max(x0, x1));
    var minSpan = (full[1] - full[0]) * 1e-6;
    if (hi - lo <= minSpan) { return; }
    this.view = (lo <= full[0] && hi >= full[1]) ? null : [lo, hi];
    this.render();
  };
  Chart.prototype.reset = function () { this.view = null; this.render(); };
  Chart.prototype.toPlot = function (ev) {
    var ctm = this.svg.getScreenCTM();
    if (!ctm) { return null; }
    var pt = this.svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    return pt.matrixTransform(ctm.inverse());
  };
  Chart.prototype.invX = function (px) {
    var r = this.range();
    return r[0] + (px - L) / (W - L - R) * (r[1] - r[0]);
  };
  Chart.prototype.onWheel = function (ev) {
    var p = this.toPlot(ev), r = this.range();
    if (!p || !r || p.x < L || p.x > W - R) { return; }
    ev.preventDefault();
    var c = this.invX(p.x), f = ev.deltaY < 0 ? 0.8 : 1.25;
    var full = this.fullRange();
    var lo = c - (c - r[0]) * f, hi = c + (r[1] - c) * f;
    if (hi - lo >= full[1] - full[0]) { this.reset(); return; }
    if (lo < full[0]) { hi += full[0] - lo; lo = full[0]; }
    if (hi > full[1]) { lo -= hi - full[1]; hi = full[1]; }
    this.zoomTo(lo, hi);
  };
  Chart.prototype.onDown = function (ev) {
    var p = this.toPlot(ev);
    if (ev.button !== 0 || !p || p.x < L || p.x > W - R || !this.range()) { return; }
    ev.preventDefault();
    this.drag = {x0: p.x, x1: p.x};
  };
  Chart.prototype.onMove = function (ev) {
    var p = this.toPlot(ev);
    if (!p) { return; }
    if (this.drag) {
      this.drag.x1 = Math.max(L, Math.min(W - R, p.x));
      var a = Math.min(this.drag.x0, this.drag.x1), b = Math.max(this.drag.x0, this.drag.x1);
      this.selRect.setAttribute("x", a);
      this.selRect.setAttribute("width", b - a);
      this.selRect.setAttribute("visibility", "visible");
      this.hideHover();
      return;
    }
    this.showHover(p.x);
  };
  Chart.prototype.onUp = function () {
    var d = this.drag;
    this.drag = null;
    if (this.selRect) { this.selRect.setAttribute("visibility", "hidden"); }
    if (d && Math.abs(d.x1 - d.x0) > 4) { this.zoomTo(this.invX(d.x0), this.invX(d.x1)); }
  };
  Chart.prototype.hideHover = function () {
    if (this.hover) { this.hover.setAttribute("visibility", "hidden"); }
  };
  Chart.prototype.showHover = function (px) {
    var r = this.range();
    if (!r || !this.hover || px < L || px > W - R) { this.hideHover(); return; }
    var xv = this.invX(px), self = this, rows = [], snap = null;
    while (this.hover.firstChild) { this.hover.removeChild(this.hover.firstChild); }
    this.series.forEach(function (s) {
      if (s.visible === false) { return; }
      var x = self.xOf(s), i = lowerBound(x, xv);
      if (i >= x.length) { i = x.length - 1; }
      if (i > 0 && Math.abs(x[i - 1] - xv) <= Math.abs(x[i] - xv)) { i -= 1; }
      if (i < 0) { return; }
      if (snap === null) { snap = x[i]; }
      var v = s.y[i];
      rows.push({label: s.label, color: s.color, value: v});
      if (isNum(v) && x[i] >= r[0] && x[i] <= r[1]) {
        node("circle", {cx: self.X(x[i]), cy: self.Y(v), r: 3, fill: s.color}, self.hover);
      }
    });
    if (snap === null) { this.hideHover(); return; }
    var gx = this.X(Math.max(r[0], Math.min(r[1], snap)));
    this.hover.insertBefore(node("line", {x1: gx, y1: T, x2: gx, y2: H - B, stroke: "#5f6368",
      "stroke-dasharray": "3 3"}), this.hover.firstChild);
    var unit = this.unit ? " " + this.unit : "";
    var lines = [{text: (this.options.xLabel || "sample") + " " + fmt(snap), color: "#202124"}];
    rows.forEach(function (row) {
      lines.push({text: row.label + ": " + fmt(row.value) + unit, color: row.color});
    });
    var box = node("g", {"class": "chart-tooltip"}, this.hover);
    var bg = node("rect", {x: 0, y: 0, width: 10, height: 10, rx: 4, fill: "#ffffff",
      stroke: "#dadce0", opacity: 0.95}, box);
    var width = 0;
    lines.forEach(function (ln, k) {
      var t = node("text", {x: 8, y: 16 + 15 * k, "font-size": 11, fill: ln.color}, box);
      t.textContent = ln.text;
      var w;
      try { w = t.getComputedTextLength(); } catch (e) { w = ln.text.length * 6.5; }
      width = Math.max(width, w || ln.text.length * 6.5);
    });
    var bw = width + 16, bh = 15 * lines.length + 10;
    bg.setAttribute("width", bw);
    bg.setAttribute("height", bh);
    var tx = gx + 12 + bw > W - R ? gx - 12 - bw : gx + 12;
    box.setAttribute("transform", "translate(" + Math.max(0, tx) + "," + (T + 4) + ")");
    this.hover.setAttribute("visibility", "visible");
    this.svg.setAttribute("data-hover", String(snap));
  };
  Chart.prototype.render = function () {
    var svg = this.svg, self = this;
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    this.hover = null;
    this.selRect = null;
    var r = this.range();
    function message(text) {
      var t = node("text", {x: L, y: H / 2, "font-size": 12, fill: "#5f6368"}, svg);
      t.textContent = text;
      svg.setAttribute("data-points", "0");
    }
    if (!r) { message("No series to draw."); return; }
    var lo = Infinity, hi = -Infinity, visible = [];
    this.series.forEach(function (s) {
      if (s.visible === false) { return; }
      var x = self.xOf(s), y = s.y || [];
      var i0 = Math.max(0, lowerBound(x, r[0]) - 1);
      var i1 = Math.min(x.length - 1, lowerBound(x, r[1]));
      for (var i = i0; i <= i1; i++) {
        var v = y[i];
        if (isNum(v)) { if (v < lo) { lo = v; } if (v > hi) { hi = v; } }
      }
      visible.push({s: s, x: x, i0: i0, i1: i1});
    });
    if (!isFinite(lo)) { message("No finite samples in this range."); return; }
    if (hi === lo) { hi += 1; lo -= 1; }
    var pad = (hi - lo) * 0.05;
    lo -= pad; hi += pad;
    this.X = function (v) { return L + (v - r[0]) / (r[1] - r[0]) * (W - L - R); };
    this.Y = function (v) { return T + (hi - v) / (hi - lo) * (H - T - B); };
    var X = this.X, Y = this.Y;
    var axes = node("g", {"class": "chart-axes"}, svg);
    ticks(lo, hi, 5).forEach(function (v) {
      if (v < lo || v > hi) { return; }
      node("line", {x1: L, y1: Y(v), x2: W - R, y2: Y(v), stroke: "#eceff1"}, axes);
      var t = node("text", {x: L - 6, y: Y(v) + 4, "font-size": 10, fill: "#5f6368",
        "text-anchor": "end"}, axes);
      t.textContent = fmt(v);
    });
    ticks(r[0], r[1], 6).forEach(function (v) {
      if (v < r[0] || v > r[1]) { return; }
      node("line", {x1: X(v), y1: H - B, x2: X(v), y2: H - B + 4, stroke: "#9aa0a6"}, axes);
      var t = node("text", {x: X(v), y: H - B + 16, "font-size": 10, fill: "#5f6368",
        "text-anchor": "middle"}, axes);
      t.textContent = fmt(v);
    });
    node("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#9aa0a6"}, axes);
    node("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#9aa0a6"}, axes);
    if (this.unit) {
      var u = node("text", {x: 4, y: T + 8, "font-size": 10, fill: "#5f6368"}, axes);
      u.textContent = "[" + this.unit + "]";
    }
    var defs = node("defs", {}, svg);
    var clip = node("clipPath", {id: this.clipId}, defs);
    node("rect", {x: L, y: T, width: W - L - R, height: H - T - B}, clip);
    var plot = node("g", {"clip-path": "url(#" + this.clipId + ")", "class": "chart-lines"}, svg);
    var budget = 2 * (W - L - R), drawn = 0;
    visible.forEach(function (vs) {
      var s = vs.s, x = vs.x, y = s.y || [], d = "", pen = false;
      var count = vs.i1 - vs.i0 + 1;
      function add(xi, v) {
        d += (pen ? "L" : "M") + X(xi).toFixed(1) + " " + Y(v).toFixed(1);
        pen = true;
        drawn += 1;
      }
      if (count <= budget) {
        for (var i = vs.i0; i <= vs.i1; i++) {
          if (isNum(y[i])) { add(x[i], y[i]); } else { pen = false; }
        }
      } else {
        var per = count / (budget / 2);
        for (var b = 0; b < budget / 2; b++) {
          var a0 = vs.i0 + Math.floor(b * per);
          var a1 = Math.min(vs.i1, vs.i0 + Math.floor((b + 1) * per) - 1);
          var imin = -1, imax = -1;
          for (var k = a0; k <= a1; k++) {
            if (!isNum(y[k])) { continue; }
            if (imin < 0 || y[k] < y[imin]) { imin = k; }
            if (imax < 0 || y[k] > y[imax]) { imax = k; }
          }
          if (imin < 0) { pen = false; continue; }
          var first = Math.min(imin, imax), second = Math.max(imin, imax);
          add(x[first], y[first]);
          if (second !== first) { add(x[second], y[second]); }
        }
      }
      if (d) {
        var attrs = {d: d, fill: "none", stroke: s.color || "#1a73e8",
                     "stroke-width": s.width || 1.3};
        if (s.dash) { attrs["stroke-dasharray"] = s.dash; }
        node("path", attrs, plot);
      }
    });
    this.selRect = node("rect", {x: L, y: T, width: 0, height: H - T - B, fill: "#1a73e8",
      opacity: 0.15, visibility: "hidden"}, svg);
    this.hover = node("g", {"class": "chart-hover", visibility: "hidden",
      "pointer-events": "none"}, svg);
    svg.setAttribute("data-x0", String(r[0]));
    svg.setAttribute("data-x1", String(r[1]));
    svg.setAttribute("data-points", String(drawn));
    svg.setAttribute("data-zoomed", this.view ? "true" : "false");
  };
  window.FigarohChart = Chart;
  window.FigarohChart.format = fmt;
})();
"""

#: Engine + initialisation of every ``.series-panel[data-series]`` element.
_PANEL_SCRIPT = r"""
(function () {
  "use strict";
  var KEYS = ["nominal", "fitted", "measured"];
  var STYLE = {nominal: {color: "#9aa0a6", dash: "5 3"}, fitted: {color: "#1a73e8"},
               measured: {color: "#202124", width: 1}};
  function init(panel) {
    var data;
    try { data = JSON.parse(panel.getAttribute("data-series")); } catch (e) { return; }
    var select = panel.querySelector("select"), svg = panel.querySelector("svg");
    if (!select || !svg || !data || !data.names || !window.FigarohChart) { return; }
    data.names.forEach(function (n, i) {
      var o = document.createElement("option");
      o.value = String(i);
      o.textContent = n;
      select.appendChild(o);
    });
    var chart = new window.FigarohChart(svg, {xLabel: "sample"});
    var reset = document.createElement("button");
    reset.type = "button";
    reset.className = "chart-reset";
    reset.textContent = "Reset zoom";
    reset.addEventListener("click", function () { chart.reset(); });
    select.parentNode.parentNode.insertBefore(reset, select.parentNode.nextSibling);
    var labels = data.labels || KEYS;
    function redraw(keepView) {
      var name = data.names[Number(select.value) || 0];
      var series = [];
      KEYS.forEach(function (k, j) {
        var y = (data[k] || {})[name];
        if (!y) { return; }
        series.push({label: labels[j] || k, y: y, color: STYLE[k].color, dash: STYLE[k].dash,
                     width: STYLE[k].width});
      });
      chart.setData(data.time || [], series, data.unit || "", keepView);
    }
    select.addEventListener("change", function () { redraw(true); });
    panel.figarohChart = chart;
    redraw(false);
  }
  function start() {
    Array.prototype.forEach.call(document.querySelectorAll(".series-panel[data-series]"), init);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
"""

_SERIES_CHART_SCRIPT = _CHART_ENGINE_SCRIPT + _PANEL_SCRIPT


# ---------------------------------------------------------------------------
# Pieces shared by the identification and calibration report pages
# ---------------------------------------------------------------------------

#: Insight shown when no rule fired.
HEALTHY_INSIGHT = "No issues detected — fit looks healthy."
#: Most parameter names listed in one insight.
MAX_NAMES_IN_INSIGHT = 6
_ARROW_STYLE = """
.arrow-good { color:var(--good); font-weight:600; }
.arrow-bad { color:var(--poor); font-weight:600; }
"""


def _names_text(names: Sequence[str]) -> str:
    """The first ``MAX_NAMES_IN_INSIGHT`` names, comma-separated, then ``...``."""
    text = ", ".join(names[:MAX_NAMES_IN_INSIGHT])
    return text + (", ..." if len(names) > MAX_NAMES_IN_INSIGHT else "")


def _change_cell(before: Any, after: Any) -> str:
    """Table cell with the relative change after vs before: ↓ better, ↑ worse."""
    b, a = _finite_or_none(before), _finite_or_none(after)
    if b is None or a is None or b == 0:
        return "<td>—</td>"
    pct = (b - a) / b * 100.0
    if pct >= 0:
        return f'<td><span class="arrow-good">↓ {_esc(f"{pct:.1f}")}%</span></td>'
    return f'<td><span class="arrow-bad">↑ {_esc(f"{-pct:.1f}")}%</span></td>'


def _report_section(section_id: str, heading: str, inner_html: str, card: bool = True) -> str:
    """``<section>`` of a report page; ``heading`` is escaped, ``inner_html`` is trusted markup."""
    body = f'<div class="card">{inner_html}</div>' if card else inner_html
    return (
        f'  <section id="{_esc(section_id)}">\n    <h2>{_esc(heading)}</h2>\n    {body}\n'
        "  </section>\n"
    )


def _report_document(
    title: str, sections: Sequence[str], footer: str, extra_style: str = ""
) -> str:
    """Self-contained report page: inline CSS and chart script, no external resource."""
    timestamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title>
<style>{_STYLE}{_ARROW_STYLE}{extra_style}</style>
</head>
<body>
<div class="page">
  <h1>{_esc(title)}</h1>
  <p class="subtitle">Generated {_esc(timestamp)}</p>

{chr(10).join(sections)}
  <footer>{_esc(footer)}</footer>
</div>
<script>{_SERIES_CHART_SCRIPT}</script>
</body>
</html>
"""


def _write_report(doc: str, output_path: Any, what: str) -> None:
    """Write a report page atomically when ``output_path`` is given."""
    if output_path is None:
        return
    path = Path(output_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, doc)
    logger.info("%s report written to %s", what, path)
