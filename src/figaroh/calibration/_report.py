"""Terminal quality report and scoped verification of a :class:`BaseCalibration` run.

Both read the attributes the calibration stores after ``solve()``
(``evaluation_metrics``, ``results_data``, ``calib_config``, ``stages``,
``LM_result``, ``optimisation_trace``, ``_run_provenance``); nothing is
re-fitted here. The validation metrics are recomputed by the report (this
re-records the ``validation`` stage, as figaroh 1.0.2 does). The parameter
section uses the table of the HTML report
(:func:`figaroh.tools.report.calibration_parameter_table`): the same σ,
confidence intervals and grades.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Dict, List, Mapping

import numpy as np

from figaroh._run.data_checks import DataChecks
from figaroh._run.trace_summary import task_trace, trace_lines
from figaroh._run.uncertainty import ParameterTable
from figaroh._run.verdict import (
    CALIBRATION_DEFAULT_THRESHOLDS,
    VerificationVerdict,
    scoped_verification,
)
from figaroh.calibration._pipeline import metrics as _metrics
from figaroh.tools.provenance import collect_run_provenance
from figaroh.tools.report import _build_insights, calibrator_parameter_table, convergence_text
from figaroh.tools.stages import apply_to_verdict, stages_line

logger = logging.getLogger(__name__)

__all__ = ["build_insights", "format_quality_report", "verify_calibration"]

_RULE = "=" * 70
_SUB = "-" * 70


def _float_or_nan(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _mm(v: Any) -> float:
    """A length in metres as millimetres (NaN when not a number)."""
    return _float_or_nan(v) * 1e3


def _f(v: Any, spec: str = ".3f") -> str:
    """``v`` formatted with ``spec``; ``n/a`` for None or a non-finite number."""
    if v is None:
        return "n/a"
    try:
        v = float(v)
    except (TypeError, ValueError):
        return str(v)
    return "n/a" if not math.isfinite(v) else format(v, spec)


def _header_lines(calib: Any, ev: Mapping[str, Any], N: int) -> List[str]:
    lines: List[str] = [_RULE, "CALIBRATION QUALITY REPORT".center(70), _RULE]
    lines.append(f"Stages: {stages_line(calib)}")
    text = convergence_text(
        ev, getattr(calib, "LM_result", None), task_trace(calib), sep="\n             "
    )
    lines.append(f"Convergence: {text}; Jacobian {ev.get('jacobian', 'n/a')}")
    thr = ev.get("outlier_threshold")
    thr_s = "no threshold" if thr is None else f"threshold {_f(_mm(thr), '.1f')} mm"
    lines.append(
        f"Excluded samples: {ev.get('n_outliers', 0)} / {N} "
        f"({_f(ev.get('outlier_percentage', 0.0), '.1f')}%), {thr_s}"
    )
    errs = ev.get("excluded_sample_errors") or []
    for k, i in enumerate(ev.get("excluded_samples", [])):
        e = f" ({_f(_mm(errs[k]), '.1f')} mm)" if k < len(errs) else ""
        lines.append(f"    #{i}{e}")
    lines.append(
        f"Condition number: {_f(ev.get('condition_number'), '.4g')} "
        f"({ev.get('condition_label', 'n/a')})"
    )
    return lines


def _residual_lines(ev: Mapping[str, Any], N: int) -> List[str]:
    stats = ev.get("per_dof_stats") or {}
    n_kept = N - int(ev.get("n_outliers", 0))
    lines = [f"Per-DOF Residuals (training set, n={n_kept})"]
    lines.append(f"  {'DOF':<10}{'Mean':>10}{'Std':>10}{'RMSE':>10}{'Max':>10}{'R²':>10}")
    for j, nm in enumerate(stats.get("dof_names", [])):
        if j >= len(stats.get("rmse", [])):
            break
        lines.append(
            f"  {str(nm):<10}{_f(stats['mean'][j]):>10}{_f(stats['std'][j]):>10}"
            f"{_f(stats['rmse'][j]):>10}{_f(stats['max_abs'][j]):>10}"
            f"{_f(stats['r_squared'][j], '.4f'):>10}"
        )
    overall = stats.get("overall")
    if overall:
        lines.append("Overall (measured components of each kind)")
        for kind, unit, key in (("Position", "mm", "pos"), ("Orientation", "deg", "orient")):
            rmse = overall.get(f"{key}_rmse_{unit}")
            if rmse is None or not math.isfinite(rmse):
                lines.append(f"  {kind}: not measured")
                continue
            extra = ""
            if key == "pos" and math.isfinite(overall.get("pos_rmse_component_mm", math.nan)):
                extra = f"; per-component RMS {overall['pos_rmse_component_mm']:.3f} mm"
            lines.append(
                f"  {kind}: RMSE {rmse:.3f} {unit} (per-point vector norm{extra}), "
                f"MAE {_f(overall.get(f'{key}_mae_{unit}'))} {unit}, "
                f"max {_f(overall.get(f'{key}_max_{unit}'))} {unit}"
            )
    return lines


_VALIDATION_ROWS = (
    ("Position RMSE [mm]", "pos_rmse_nominal_mm", "pos_rmse_calibrated_mm"),
    ("Position max [mm]", "pos_max_nominal_mm", "pos_max_calibrated_mm"),
    ("Orientation RMSE [deg]", "orient_rmse_nominal_deg", "orient_rmse_calibrated_deg"),
    ("Orientation max [deg]", "orient_max_nominal_deg", "orient_max_calibrated_deg"),
)


def _change(before: float, after: float) -> str:
    """``"99.8% better ↓"`` / ``"2.4% worse ↑"``: the change of an error from before to after."""
    if not before:
        return "n/a"
    pct = (before - after) / before * 100
    return f"{pct:.1f}% better ↓" if pct >= 0 else f"{-pct:.1f}% worse ↑"


def _validation_lines(validation: Mapping[str, Any] | None) -> List[str]:
    if validation is None:
        return ["Validation: not computed by this calibration."]
    lines: List[str] = []
    src = validation["validation_source"]
    if src != "validation_data":
        lines.append("!" * 70)
        lines.append("! WARNING: no held-out data — validation uses the CALIBRATION data itself;")
        lines.append("! these figures do NOT measure generalisation to new postures.")
        lines.append("!" * 70)
    lines.append(
        f"Validation ({'held-out' if src == 'validation_data' else 'training fallback'}, "
        f"n={validation['n_val_samples']}; nominal = all parameters 0, frames included)"
    )
    lines.append(f"  {'':<24}{'Nominal':>12}{'Calibrated':>12}{'Change':>16}")
    for label, a, b in _VALIDATION_ROWS:
        before, after = validation[a], validation[b]
        if not math.isfinite(before):
            continue
        lines.append(f"  {label:<24}{before:>12.3f}{after:>12.3f}{_change(before, after):>16}")
    pf = validation.get("pos_rmse_nominal_fitted_frames_mm", math.nan)
    if math.isfinite(pf):
        after = validation["pos_rmse_calibrated_mm"]
        lines.append(
            f"  {'Pos. RMSE [mm], nominal':<24}{pf:>12.3f}{after:>12.3f}{_change(pf, after):>16}"
            "  (joints nominal, frames re-fitted)"
        )
    if validation["n_markers"] > 1:
        for k, (a, b) in enumerate(
            zip(
                validation["pos_rmse_nominal_per_point_mm"],
                validation["pos_rmse_calibrated_per_point_mm"],
                strict=False,
            )
        ):
            lines.append(f"  {'point ' + str(k + 1) + ' RMSE [mm]':<24}{a:>12.3f}{b:>12.3f}")
    return lines


def _uncertainty_lines(
    ev: Mapping[str, Any], cfg: Mapping[str, Any], table: ParameterTable
) -> List[str]:
    lines: List[str] = []
    dof = ev.get("residual_dof", 0)
    if (not isinstance(dof, (int, float)) or dof <= 0) and cfg.get("prior_weights") is None:
        lines.append(f"{dof} residual degrees of freedom — uncertainty not estimable")
    else:
        lines.append(
            f"Parameter uncertainty: {table.summary_text()} "
            "(grade g = σ / max(|value|, scale of the kind))"
        )
        lines.append(f"  {table.interval_text()}; the 5 least certain:")
        lines.append(
            f"  {'parameter':<28}{'value':>11}{'σ':>10} {'unit':<5} {'interval':<24}{'g':>7}  grade"
        )
        for r in table.ranked()[:5]:
            interval = f"[{_f(r.ci_low, '.4g')}, {_f(r.ci_high, '.4g')}]"
            lines.append(
                f"  {r.name:<28}{_f(r.value, '.4g'):>11}{_f(r.sigma, '.3g'):>10} {r.unit:<5} "
                f"{interval:<24}{_f(r.grade.score_pct, '.3g') + '%':>7}  {r.grade.label}"
            )
    pairs = ev.get("correlated_pairs") or []
    if pairs:
        lines.append(f"Correlated parameter pairs (|ρ| > 0.8): {len(pairs)}")
        for p in pairs[:10]:
            lines.append(
                f"  {p.get('param_i')} ↔ {p.get('param_j')}: ρ = {_f(p.get('correlation'), '+.3f')}"
            )
        if len(pairs) > 10:
            lines.append(f"  ... {len(pairs) - 10} more")
    else:
        lines.append("Correlated parameter pairs: none exceed |ρ| > 0.8")
    return lines


def format_quality_report(calib: Any) -> str:
    """Plain-text report of a solved calibration.

    Sections: convergence and excluded samples, per-component residuals
    ([mm], [deg]), validation (nominal vs calibrated), parameter uncertainty
    (σ, confidence interval at the configuration's
    ``verification.confidence_level``, 95 % by default, and the shared grade),
    correlated pairs and, when the run recorded one, the optimisation trace.

    Args:
        calib: A solved ``BaseCalibration``.

    Returns:
        The report text.
    """
    ev: Mapping[str, Any] = calib.evaluation_metrics
    cfg = calib.calib_config
    N = int(cfg.get("NbSample", 0))
    validation = calib._compute_validation_metrics()
    if validation is not None and calib.results_data is not None:
        calib.results_data["validation_metrics"] = validation
    lines = _header_lines(calib, ev, N)
    lines.append(_SUB)
    lines += _residual_lines(ev, N)
    lines.append(_SUB)
    lines += _validation_lines(validation)
    lines.append(_SUB)
    lines += _uncertainty_lines(ev, cfg, calibrator_parameter_table(calib))
    trace = trace_lines(task_trace(calib))
    if trace:
        lines.append(_SUB)
        lines += trace
    lines.append(_RULE)
    return "\n".join(lines)


def build_insights(
    eval_: Mapping[str, Any], n_samples: int, param_names: List[str], validation: Any
) -> List[Dict[str, str]]:
    """Insight messages (solver, conditioning, outliers, validation) of a calibration report.

    The messages of :func:`figaroh.tools.report._build_insights`.
    """
    return list(_build_insights(eval_, n_samples, param_names, validation))


def verify_calibration(
    calib: Any, thresholds: Mapping[str, Mapping[str, Any]] | None, scope: str
) -> VerificationVerdict:
    """Scoped verification verdict of a solved calibration.

    Required guards: finite fit RMSE, parameters and residuals, solver
    success, the requested validation set loaded, and one
    ``data_check:<name>`` per finding of ``calib.data_checks`` (see
    :mod:`figaroh.calibration._pipeline.data_checks`): a failed data check
    fails the verdict, and adds an insight line with its message.
    """
    ev = calib.evaluation_metrics
    cfg = calib.calib_config
    thresholds = dict(CALIBRATION_DEFAULT_THRESHOLDS if thresholds is None else thresholds)
    validation = (calib.results_data or {}).get("validation_metrics")
    metrics: Dict[str, Any] = {
        "condition_number": ev.get("condition_number"),
        "rmse": ev.get("rmse"),
        "outlier_percentage": ev.get("outlier_percentage"),
    }
    mask = np.asarray(cfg["measurability"], dtype=bool)
    prediction_keys: List[str] = []
    independent = bool(validation and validation.get("validation_source") == "validation_data")
    if validation:
        prefix = "" if independent else "training_"
        if mask[:3].any():
            metrics[f"{prefix}position_rmse_mm"] = validation.get("pos_rmse_calibrated_mm")
            prediction_keys.append("position_rmse_mm")
        if mask[3:].any():
            metrics[f"{prefix}orientation_rmse_deg"] = validation.get("orient_rmse_calibrated_deg")
            prediction_keys.append("orientation_rmse_deg")
    residuals = (calib.results_data or {}).get("residuals")
    arrays = {
        "finite_fit_rmse": [ev.get("rmse")] if ev.get("rmse") is not None else None,
        "finite_parameters": ev.get("param_values"),
        "finite_residuals": None if residuals is None else np.asarray(residuals).ravel(),
    }
    requested = cfg.get("validation_data_file")
    facts: Dict[str, Any] = {
        "requested_validation_loaded": (not requested) or bool(calib._val_available)
    }
    checks = getattr(calib, "data_checks", None)
    checks = checks if isinstance(checks, DataChecks) else DataChecks()
    facts.update(checks.facts())
    verdict = scoped_verification(
        metrics,
        thresholds,
        scope,
        arrays,
        independent,
        prediction_keys,
        solver_success=bool(ev.get("optimization_success")),
        facts=facts,
    )
    insights = _build_insights(
        ev,
        int(cfg.get("NbSample", 0)),
        list(cfg["param_name"]),
        validation,
        calibrator_parameter_table(calib),
    )
    verdict.insights = [i["text"] if isinstance(i, Mapping) else str(i) for i in insights]
    verdict.insights += [f"Data check {f.check} failed: {f.message}" for f in checks.failed]
    prov = calib._run_provenance
    if prov is None:
        prov = collect_run_provenance(calib, "calibration")
    verdict.metadata = dict(prov or {})
    if validation and validation.get("error_nominal_per_dof"):
        names = list(validation["dof_names"])
        first = validation["error_nominal_per_dof"][names[0]]
        n = len(first)
        verdict.series = {
            "time": list(range(n)),
            "dof_names": names,
            "nominal": [validation["error_nominal_per_dof"][d] for d in names],
            "fitted": [validation["error_fitted_per_dof"][d] for d in names],
            "measured": [[0.0] * n for _ in names],
        }
    config_sha = (verdict.metadata.get("config") or {}).get("sha256") if verdict.metadata else None
    verdict.compat = {
        "dof_names": _metrics.dof_names(calib.calib_config),
        "sample_count": int(cfg.get("NbSample", 0)),
        "config_sha256": config_sha,
    }
    return apply_to_verdict(verdict, calib, selected_stage="fit")
