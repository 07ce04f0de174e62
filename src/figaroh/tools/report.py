"""HTML diagnostic report of a geometric calibration run.

Renders the statistics of ``BaseCalibration.print_quality_report()``
(convergence, excluded outliers, conditioning, per-DOF residuals, held-out
validation, parameter uncertainty and correlation) as one self-contained HTML
page — inline CSS and JavaScript, nothing fetched from the network — with:

* the verdict panel (status, each check with its value and limit);
* small multiples of the validation residuals per pose: the residual norm
  of every marker (position ‖Δp‖ [mm], orientation ‖Δφ‖ [mrad] for a 6-DoF
  marker) and the signed residual of every marker axis with its histogram,
  calibrated vs nominal (all parameters 0);
* the parameter table: value, absolute σ, the confidence interval
  ``θ̂ ± t_{1−α/2, n−p} σ`` (95 % by default), σ/|value|, σ against the scale
  of the parameter's kind (:func:`calibration_parameter_kind`) and the grade
  of the shared rule (:mod:`figaroh._run.uncertainty_grade`);
* the optimisation trace (cost per LM iteration of each outlier pass) when
  the run recorded one;
* an auto-generated list of insights flagging what deserves a second look.

The page is ``templates/calibration_report.html.j2`` (package data, rendered
with autoescaping); this module builds the data of its sections.

Only presentation happens here: every number comes from the calibrator's
``evaluation_metrics`` and ``results_data["validation_metrics"]``.

Units: the report quotes position errors in [mm] and orientation errors in
[deg], each kind on its own (``evaluation_metrics["rmse"]``, a norm over all
measured components mixing [m] and [rad], is not shown); per-DOF statistics
are in [mm] and [deg]; ``outlier_threshold`` in [m];
parameter σ and intervals in the parameter's unit ([m] or [rad]).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List

import numpy as np

from figaroh._run.charts import _multi_panel_section
from figaroh._run.confidence import DEFAULT_CONFIDENCE_LEVEL, configured_confidence_level
from figaroh._run.html import (
    HEALTHY_INSIGHT,
    UNCERTAINTY_CAUTION_PCT,  # noqa: F401 - a figaroh 1.0.2 name of this module
    UNCERTAINTY_WARN_PCT,
    VALIDATION_IMPROVEMENT_WARN_PCT,
    _change_pct,
    _correlation_section,
    _improvement_phrase,
    _names_text,
    _parameter_table_section,
    _provenance_section,
    _run_title,
    _verdict_block,
)
from figaroh._run.page import _page_context, _write_report
from figaroh._run.stages import stages_line
from figaroh._run.templating import render, trusted
from figaroh._run.trace_report import task_trace, trace_section
from figaroh._run.uncertainty import (
    ParameterTable,
    kind_unit,
    parameter_table,
    uncertainty_note,
)
from figaroh._run.values import _finite_or_none

logger = logging.getLogger(__name__)

__all__ = [
    "CALIBRATION_UNIT_SCALES",
    "NOMINAL_HIDE_RATIO",
    "OUTLIER_WARN_PCT",
    "calibration_parameter_kind",
    "calibration_parameter_table",
    "calibration_rmse_text",
    "calibrator_parameter_table",
    "convergence_text",
    "generate_calibration_report",
]

#: Share of excluded samples [%] above which the report warns.
OUTLIER_WARN_PCT = 10.0
#: The nominal series of a residual chart starts hidden when its largest value
#: exceeds this many times the calibrated one (a nominal model without its
#: metrology frames is metres off; tick it in the legend to show it).
NOMINAL_HIDE_RATIO = 20.0
_MRAD_PER_DEG = 1e3 * math.pi / 180.0
#: Physical kind of each calibration parameter prefix (longest prefix first):
#: ``(prefix, kind token, label)``; parameters of one kind share a scale.
_CALIBRATION_KINDS = (
    ("base_phi", "baseAngle", "base frame orientation [rad]"),
    ("base_p", "baseLength", "base frame position [m]"),
    ("phiEE", "toolAngle", "marker frame orientation [rad]"),
    ("pEE", "toolLength", "marker frame position [m]"),
    ("d_phi", "jointAngle", "joint placement angle [rad]"),
    ("d_p", "jointLength", "joint placement offset [m]"),
    ("offsetR", "jointAngle", "joint placement angle [rad]"),
    ("offsetP", "jointLength", "joint placement offset [m]"),
    ("k_", "stiffness", "joint compliance"),
)
#: Unit scale of a calibration length [m]: below it a length is judged by σ against it.
LENGTH_UNIT_SCALE_M = 0.01
#: Unit scale of a calibration angle [rad]: the length scale seen at a 1 m lever arm.
ANGLE_UNIT_SCALE_RAD = 0.01
#: Unit scale of each kind token of :data:`_CALIBRATION_KINDS` (see the grading rule,
#: :mod:`figaroh._run.uncertainty_grade`).
CALIBRATION_UNIT_SCALES = {
    "baseLength": LENGTH_UNIT_SCALE_M,
    "toolLength": LENGTH_UNIT_SCALE_M,
    "jointLength": LENGTH_UNIT_SCALE_M,
    "baseAngle": ANGLE_UNIT_SCALE_RAD,
    "toolAngle": ANGLE_UNIT_SCALE_RAD,
    "jointAngle": ANGLE_UNIT_SCALE_RAD,
}
#: The unit scales in words, for the notes of the reports.
CALIBRATION_UNIT_SCALES_TEXT = (
    f"{LENGTH_UNIT_SCALE_M * 1e3:g} mm for lengths, {ANGLE_UNIT_SCALE_RAD * 1e3:g} mrad for angles"
)


def _build_insights(
    eval_: Mapping[str, Any],
    n_samples: Any,
    param_names: Sequence[Any],
    validation: Mapping[str, Any] | None,
    table: ParameterTable | None = None,
) -> List[Dict[str, str]]:
    """Rule-based remarks on a calibration.

    Rules, in order: solver did not report success → warn; ill-conditioned →
    warn, moderately conditioned → info; more than 10 % of the samples
    excluded as outliers → warn; parameters graded ``poor`` by the shared
    rule (:mod:`figaroh._run.uncertainty_grade`) → warn (first 6 names);
    strongly correlated pairs (|ρ| > 0.8) → warn; no validation → info,
    training fallback → warn, position-RMSE improvement over nominal below
    50 % (or a deterioration) → warn. No rule fired → "No issues detected —
    fit looks healthy." (info).

    Args:
        eval_: ``evaluation_metrics`` (``optimization_success``,
            ``condition_number``, ``condition_label``, ``n_outliers``,
            ``outlier_percentage`` [%], ``param_values``, ``param_stdev``,
            ``residual_dof``, ``correlated_pairs``).
        n_samples: Number of calibration samples (``NbSample``).
        param_names: Parameter names (``calib_config["param_name"]``).
        validation: ``results_data["validation_metrics"]`` or None
            (``validation_source``, ``pos_improvement_pct`` [%]).
        table: The parameter table (None: built from ``eval_`` at 95 %).

    Returns:
        List of ``{"level": "warn" | "info", "text": str}``.
    """
    eval_ = eval_ if isinstance(eval_, Mapping) else {}
    if table is None:
        table = calibration_parameter_table(eval_, param_names)
    insights: List[Dict[str, str]] = [
        *_solver_insights(eval_),
        *_conditioning_insights(eval_),
        *_outlier_insights(eval_, n_samples),
        *_uncertainty_insights(table),
        *_correlation_insights(eval_),
        *_validation_insights(validation),
    ]
    if not insights:
        insights.append({"level": "info", "text": HEALTHY_INSIGHT})
    return insights


def _warn(text: str) -> Dict[str, str]:
    return {"level": "warn", "text": text}


def _info(text: str) -> Dict[str, str]:
    return {"level": "info", "text": text}


def _solver_insights(eval_: Mapping[str, Any]) -> List[Dict[str, str]]:
    """Warn when the solver did not report success."""
    if "optimization_success" in eval_ and not eval_.get("optimization_success"):
        return [_warn("Optimization did not report success — treat results with caution.")]
    return []


def _conditioning_insights(eval_: Mapping[str, Any]) -> List[Dict[str, str]]:
    """Warn on an ill-conditioned fit, inform on a moderately conditioned one."""
    label = eval_.get("condition_label")
    cond = _finite_or_none(eval_.get("condition_number"))
    cond_text = "unavailable" if cond is None else f"{cond:.1f}"
    if label == "ill-conditioned":
        return [
            _warn(
                f"Condition number {cond_text} is ill-conditioned — consider a richer "
                "excitation trajectory or fewer simultaneously identified parameters."
            )
        ]
    if label == "moderately conditioned":
        return [
            _info(
                f"Condition number {cond_text} is moderately conditioned — usable, but not optimal."
            )
        ]
    return []


def _outlier_insights(eval_: Mapping[str, Any], n_samples: Any) -> List[Dict[str, str]]:
    """Warn when more than ``OUTLIER_WARN_PCT`` % of the samples were excluded."""
    pct = _finite_or_none(eval_.get("outlier_percentage"))
    if pct is not None and pct > OUTLIER_WARN_PCT:
        return [
            _warn(
                f"{eval_.get('n_outliers', 0)} outliers removed ({pct:.1f}% of {n_samples} "
                "samples) — check data quality if this seems high."
            )
        ]
    return []


def _uncertainty_insights(table: ParameterTable) -> List[Dict[str, str]]:
    """Warn on the parameters the shared rule grades ``poor`` (g > 30 %).

    ``g = σ / max(|value|, S)``, ``S`` the scale of the parameter's kind (see
    :mod:`figaroh._run.uncertainty_grade`): a value ≈ 0 with a small σ is
    well identified whatever its relative σ.
    """
    poor = [r.name for r in table.ranked() if r.grade.tier == "poor"]
    if not poor:
        return []
    return [
        _warn(
            f"{len(poor)} parameter(s) are poorly identified (σ above "
            f"{UNCERTAINTY_WARN_PCT:.0f} % of max(|value|, scale of their kind)): "
            f"{_names_text(poor)}."
        )
    ]


def _correlation_insights(eval_: Mapping[str, Any]) -> List[Dict[str, str]]:
    """Warn when parameter pairs are strongly correlated (|ρ| > 0.8)."""
    pairs = eval_.get("correlated_pairs") or []
    if not len(pairs):
        return []
    return [
        _warn(
            f"{len(pairs)} parameter pair(s) are strongly correlated (|ρ| > 0.8) — the "
            "excitation trajectory may not separate them; consider fixing one or "
            "redesigning the trajectory."
        )
    ]


def _validation_insights(validation: Mapping[str, Any] | None) -> List[Dict[str, str]]:
    """No validation → info; training fallback → warn; weak improvement → warn."""
    if not isinstance(validation, Mapping):
        return [
            _info(
                "No held-out validation data provided — these metrics reflect fit quality "
                "on the training set only, not generalization."
            )
        ]
    out = []
    if validation.get("validation_source") == "calibration_data_fallback":
        out.append(
            _warn(
                "No separate validation data provided — validation metrics fall back "
                "to the calibration data itself and do NOT test generalization to new "
                "configurations."
            )
        )
    improvement = _finite_or_none(validation.get("pos_improvement_pct", 100.0))
    if improvement is not None and improvement < VALIDATION_IMPROVEMENT_WARN_PCT:
        out.append(
            _warn(
                f"{_improvement_phrase(improvement, 'Validation position RMSE', 'nominal')} — "
                "check model assumptions or configuration."
            )
        )
    return out


# ---------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------


def _plain(value: Any, spec: str, unit: str = "", missing: str = "unavailable") -> str:
    f = _finite_or_none(value)
    return missing if f is None else f"{format(f, spec)}{unit}"


def convergence_text(
    eval_: Mapping[str, Any], result: Any = None, trace: Any = None, sep: str = "; "
) -> str:
    """What the least-squares solver did, in words (terminal and HTML reports).

    scipy's ``least_squares`` reports its termination message, the number of
    residual evaluations (``nfev``; with the finite-difference Jacobian of
    method ``lm`` the evaluations made for the Jacobian are not counted) and
    no iteration count: the count ``evaluation_metrics["n_iterations"]`` (0)
    is not quoted. The number of Levenberg–Marquardt iterations comes from
    the run's optimisation trace when it was recorded, as does "started at
    the optimum" (the last pass did not lower the cost).

    Args:
        eval_: ``evaluation_metrics`` (``optimization_success``,
            ``n_function_evals``, ``jacobian``, ``cost``).
        result: The solver's ``OptimizeResult`` (``LM_result``), or None.
        trace: The run's optimisation trace, or None.
        sep: Separator of the parts after the termination message.

    Returns:
        E.g. ``"✓ converged — `xtol` termination condition is satisfied; 6
        residual evaluations (finite-difference Jacobian evaluations not
        counted; scipy reports no iteration count); final cost ½‖r‖² = 0.0001975"``.
    """
    success = eval_.get("optimization_success")
    head = "✓ converged" if success else "✗ did not report success" if success is not None else "—"
    parts: List[str] = []
    message = getattr(result, "message", None)
    if isinstance(message, str) and message.strip():
        parts.append(message.strip().rstrip("."))
    nfev = eval_.get("n_function_evals")
    notes = []
    if str(eval_.get("jacobian", "2-point")).startswith("analytic"):
        njev = getattr(result, "njev", None)
        if njev is not None:
            notes.append(f"{njev} Jacobian evaluations")
    else:
        notes.append("finite-difference Jacobian evaluations not counted")
    lm_stages = [] if trace is None else [s for s in trace.stages() if s.lower().startswith("lm")]
    if lm_stages:
        iterations = sum(
            max((e.iteration for e in trace.of_stage(s)), default=0) for s in lm_stages
        )
        notes.append(f"{iterations} LM iterations over {len(lm_stages)} pass(es)")
        last = trace.of_stage(lm_stages[-1])
        if last and last[0].objective == last[-1].objective:
            notes.append("the last pass started at the optimum: no decrease")
    else:
        notes.append("scipy reports no iteration count")
    if nfev is not None:
        parts.append(f"{nfev} residual evaluations ({'; '.join(notes)})")
    cost = _finite_or_none(eval_.get("cost"))
    if cost is not None:
        parts.append(f"final cost ½‖r‖² = {cost:.4g}")
    if not parts:
        return head
    first = parts.pop(0) if message and parts else None
    return head + " — " + (first + sep if first else "") + sep.join(parts)


def _overall(eval_: Mapping[str, Any]) -> Mapping[str, Any]:
    stats = eval_.get("per_dof_stats")
    overall = stats.get("overall") if isinstance(stats, Mapping) else None
    return overall if isinstance(overall, Mapping) else {}


def calibration_rmse_text(eval_: Mapping[str, Any]) -> str:
    """``"position RMSE 2.953 mm, orientation RMSE 0.333 deg"`` of a fit (training set).

    Position and orientation errors are reported separately: the RMSE of the
    per-point position error norm [mm] and of the orientation error norm
    [deg] (``per_dof_stats["overall"]``); a kind that is not measured is left
    out. Without those statistics: the mixed ``rmse`` with its units stated.
    """
    overall = _overall(eval_)
    parts = [
        f"{label} RMSE {value:.4g} {unit}"
        for label, key, unit in (
            ("position", "pos_rmse_mm", "mm"),
            ("orientation", "orient_rmse_deg", "deg"),
        )
        if (value := _finite_or_none(overall.get(key))) is not None
    ]
    if parts:
        return ", ".join(parts)
    rmse = _finite_or_none(eval_.get("rmse"))
    if rmse is None:
        return "RMSE unavailable"
    return (
        f"RMSE {rmse:.4g} (per-point norm: metres, mixed with radians when orientation is measured)"
    )


def _fit_error_rows(eval_: Mapping[str, Any]) -> List[tuple]:
    """Position [mm] and orientation [deg] RMSE / MAE / max of the fit, one row per kind."""
    overall = _overall(eval_)
    if not overall:
        return [
            ("RMSE (all measured components, m and rad mixed)", _plain(eval_.get("rmse"), ".6g")),
        ]
    rows = []
    for label, key, unit in (
        ("Position error", "pos", "mm"),
        ("Orientation error", "orient", "deg"),
    ):
        rmse = _finite_or_none(overall.get(f"{key}_rmse_{unit}"))
        if rmse is None:
            rows.append((f"{label} [{unit}]", "not measured"))
            continue
        rows.append(
            (
                f"{label} [{unit}]",
                f"RMSE {rmse:.4g} {unit}, MAE {_plain(overall.get(f'{key}_mae_{unit}'), '.4g')} "
                f"{unit}, max {_plain(overall.get(f'{key}_max_{unit}'), '.4g')} {unit}",
            )
        )
    return rows


def _summary_view(
    eval_: Mapping[str, Any],
    n_samples: Any,
    stages_text: str,
    result: Any = None,
    trace: Any = None,
) -> Dict[str, Any]:
    """Convergence, fit errors (position [mm], orientation [deg]), outliers and conditioning."""
    n_out = eval_.get("n_outliers", 0) or 0
    threshold = _finite_or_none(eval_.get("outlier_threshold"))
    thr_text = "no threshold" if threshold is None else f"threshold {threshold * 1000:.1f} mm"
    outliers = (
        f"{n_out} / {n_samples} ({_plain(eval_.get('outlier_percentage'), '.1f', '%', '—')}), "
        f"{thr_text}"
    )
    excluded = list(eval_.get("excluded_samples") or [])
    errors = list(eval_.get("excluded_sample_errors") or [])
    if excluded:
        shown = []
        for k, idx in enumerate(excluded[:20]):
            e = _finite_or_none(errors[k]) if k < len(errors) else None
            shown.append(f"#{idx}" + ("" if e is None else f" ({e * 1000:.1f} mm)"))
        outliers += "; excluded: " + ", ".join(shown) + (", ..." if len(excluded) > 20 else "")
    cond = _finite_or_none(eval_.get("condition_number"))
    label = eval_.get("condition_label") or "unavailable"
    cond_text = str(label) if cond is None else f"{cond:.1f} ({label})"
    rows = [
        ("Stages", stages_text),
        ("Convergence", convergence_text(eval_, result, trace)),
        ("Samples", n_samples),
        *_fit_error_rows(eval_),
        ("Residual degrees of freedom", eval_.get("residual_dof", "—")),
        ("Excluded outliers", outliers),
        ("Condition number", cond_text),
    ]
    note = (
        "Fit errors on the training set (outliers excluded): RMSE, MAE and max of the "
        "per-point Euclidean norm of the position error [mm] and of the orientation error "
        "[deg], each kind on its own."
    )
    return {"rows": rows, "note": note}


def _per_dof_view(stats: Mapping[str, Any] | None, n_kept: Any) -> Dict[str, Any] | None:
    """Per-DOF residual rows [mm / deg] and the overall group statistics; None when absent."""
    if not isinstance(stats, Mapping) or not stats.get("dof_names"):
        return None

    def at(key: str, i: int) -> Any:
        seq = stats.get(key) or []
        return seq[i] if i < len(seq) else None

    keys = ("mean", "std", "rmse", "max_abs", "r_squared")
    rows = [
        {"name": name, **{key: at(key, i) for key in keys}}
        for i, name in enumerate(stats["dof_names"])
    ]
    overall = stats.get("overall")
    groups = None
    if isinstance(overall, Mapping):
        groups = [
            (
                label,
                *(
                    _plain(overall.get(f"{prefix}_{stat}_{unit}"), ".4g", missing="not measured")
                    for stat in ("rmse", "mae", "max")
                ),
            )
            for label, prefix, unit in (
                ("Position [mm]", "pos", "mm"),
                ("Orientation [deg]", "orient", "deg"),
            )
        ]
    return {"n_kept": n_kept, "rows": rows, "overall": groups}


def _validation_view(validation: Mapping[str, Any] | None) -> Dict[str, Any] | None:
    """Nominal vs calibrated position / orientation errors (rows with NaN nominal skipped)."""
    if not isinstance(validation, Mapping):
        return None
    fallback = validation.get("validation_source") == "calibration_data_fallback"
    rows_kv = [
        (
            "Source",
            "calibration data (fallback, not independent)" if fallback else "held-out postures",
        ),
        ("Samples", validation.get("n_val_samples", "unavailable")),
    ]
    rows = []
    for label, nom, cal in (
        ("Position RMSE [mm]", "pos_rmse_nominal_mm", "pos_rmse_calibrated_mm"),
        ("Position max [mm]", "pos_max_nominal_mm", "pos_max_calibrated_mm"),
        ("Orientation RMSE [deg]", "orient_rmse_nominal_deg", "orient_rmse_calibrated_deg"),
        ("Orientation max [deg]", "orient_max_nominal_deg", "orient_max_calibrated_deg"),
        # nominal joints with re-fitted base/tool frames (a fairer "before"), when recorded
        (
            "Position RMSE, nominal joints + fitted frames [mm]",
            "pos_rmse_nominal_fitted_frames_mm",
            "pos_rmse_calibrated_mm",
        ),
        (
            "Orientation RMSE, nominal joints + fitted frames [deg]",
            "orient_rmse_nominal_fitted_frames_deg",
            "orient_rmse_calibrated_deg",
        ),
    ):
        if _finite_or_none(validation.get(nom)) is not None:
            rows.append((label, validation.get(nom), validation.get(cal)))
    per_nom = list(validation.get("pos_rmse_nominal_per_point_mm") or [])
    per_cal = list(validation.get("pos_rmse_calibrated_per_point_mm") or [])
    if len(per_nom) > 1:
        for k, nom in enumerate(per_nom):
            rows.append(
                (
                    f"Position RMSE, point {k + 1} [mm]",
                    nom,
                    per_cal[k] if k < len(per_cal) else None,
                )
            )
    metrics = [
        {"label": label, "nominal": b, "calibrated": a, "pct": _change_pct(b, a)}
        for label, b, a in rows
    ]
    return {"fallback": fallback, "rows": rows_kv, "metrics": metrics}


def calibration_parameter_kind(name: Any) -> str:
    """Physical kind of a calibration parameter, from its name.

    ``base_px`` → ``"base frame position [m]"``, ``d_phiz_elbow_joint`` →
    ``"joint placement angle [rad]"``, ``pEEy_1`` → ``"marker frame position
    [m]"``, ``offsetRZ_j`` → ``"joint placement angle [rad]"``, ``k_RZ_j`` →
    ``"joint compliance"``; any other name is its own kind.
    """
    return _calibration_kind(name)[1]


def _calibration_kind(name: Any) -> tuple[str, str]:
    """``(token, label)`` of a parameter's kind (the token is a letters-only key)."""
    text = str(name)
    for prefix, token, label in _CALIBRATION_KINDS:
        if text.startswith(prefix):
            return token, label
    token = "".join(ch for ch in text if ch.isalpha()) or "other"
    return token, text


def calibration_parameter_table(
    eval_: Mapping[str, Any],
    param_names: Sequence[Any],
    level: float = DEFAULT_CONFIDENCE_LEVEL,
    known_noise: bool = False,
) -> ParameterTable:
    """The calibrated parameters with σ, confidence interval and grade.

    σ is ``evaluation_metrics["param_stdev"]`` (``s²(JᵀJ)⁻¹`` at the optimum,
    ``s² = ‖r‖²/(n − p)``); the interval ``θ̂ ± t_{1−α/2, n−p} σ`` uses
    ``residual_dof = n − p`` (the normal quantile when ``known_noise``: a
    MAP fit whose σ comes from the prior noise level). Kinds and unit scales
    of the grade: :func:`calibration_parameter_kind`,
    :data:`CALIBRATION_UNIT_SCALES`.

    Args:
        eval_: ``evaluation_metrics`` (``param_values``, ``param_stdev``, ``residual_dof``).
        param_names: ``calib_config["param_name"]``.
        level: Confidence level in ``(0, 1)``.
        known_noise: σ from a known noise level (``calib_config["prior_noise"]`` set).

    Returns:
        The table (names ``param_<i>`` where a name is missing).
    """
    values = list(eval_.get("param_values") or [])
    stdev = list(eval_.get("param_stdev") or [])
    names_in = list(param_names or [])
    n = max(len(names_in), len(values), len(stdev))
    names = [str(names_in[i]) if i < len(names_in) else f"param_{i}" for i in range(n)]
    dof = math.inf if known_noise else eval_.get("residual_dof")
    kinds = [_calibration_kind(nm) for nm in names]
    return parameter_table(
        names,
        [token for token, _ in kinds],
        values,
        stdev,
        dof,
        level,
        CALIBRATION_UNIT_SCALES,
        [kind_unit(label) for _, label in kinds],
    )


def calibrator_parameter_table(calibrator: Any, level: float | None = None) -> ParameterTable:
    """:func:`calibration_parameter_table` of a solved calibration (level from its config)."""
    cfg = getattr(calibrator, "calib_config", None) or {}
    if level is None:
        level = configured_confidence_level(cfg)
    return calibration_parameter_table(
        _solved_metrics(calibrator),
        list(cfg.get("param_name", []) or []),
        level,
        known_noise=cfg.get("prior_noise") is not None,
    )


def _uncertainty_view(eval_: Mapping[str, Any], table: ParameterTable) -> Dict[str, Any]:
    """Parameter table (value, σ, interval, σ/|value|, σ/scale, grade) and its notes."""
    dof = eval_.get("residual_dof")
    dof_note = None
    if (
        isinstance(dof, (int, np.integer))
        and dof <= 0
        and all(r.sigma != r.sigma for r in table.rows)
    ):
        dof_note = f"{dof} residual degrees of freedom — uncertainty not estimable."
    note = uncertainty_note(
        table,
        "base frame position, base frame orientation, joint placement offset, joint "
        "placement angle, marker frame position, …",
        CALIBRATION_UNIT_SCALES_TEXT,
    )
    return {
        "dof_note": dof_note,
        "table": trusted(_parameter_table_section(table)),
        "note": note + " σ is in [m] for positions and offsets, [rad] for angles.",
        "summary": table.summary_text(),
    }


# ---------------------------------------------------------------------------
# Per-pose residuals of the markers
# ---------------------------------------------------------------------------

_AXES = ("x", "y", "z", "rx", "ry", "rz")


def _components(names: Sequence[Any], mask: Sequence[Any] | None) -> List[tuple[str, bool]]:
    """``(axis label, is_angle)`` of each measured component.

    From the measurability mask (``x, y, z, rx, ry, rz``) when given, else
    from the DOF names (a name mentioning ``deg`` is an angle).
    """
    if mask is not None:
        comps = [int(c) for c in np.flatnonzero(np.asarray(mask, dtype=bool))]
        if len(comps) == len(names):
            return [(_AXES[c], c >= 3) for c in comps]
    return [(str(nm).split(" (")[0], "deg" in str(nm)) for nm in names]


def _marker_axes(
    validation: Mapping[str, Any], mask: Sequence[Any] | None
) -> List[Dict[str, Any]] | None:
    """Per-marker, per-axis validation residuals as (K, n) arrays.

    ``error_*_per_dof`` hold, per measured component, the K·n residuals of the
    validation poses marker after marker ([mm] for positions, [deg] for
    angles). Returns one ``{"axis", "kind", "unit", "nominal", "calibrated"}``
    per measured component (angles converted to [mrad]), or None when the
    series are missing or inconsistent.
    """
    names = list(validation.get("dof_names") or [])
    nominal = validation.get("error_nominal_per_dof") or {}
    fitted = validation.get("error_fitted_per_dof") or {}
    try:
        K, n = int(validation.get("n_markers") or 1), int(validation.get("n_val_samples") or 0)
    except (TypeError, ValueError):
        return None
    if not names or n <= 0 or K <= 0:
        return None
    out = []
    for name, (axis, angle) in zip(names, _components(names, mask), strict=True):
        nom = np.asarray(nominal.get(name, []), dtype=float).ravel()
        cal = np.asarray(fitted.get(name, []), dtype=float).ravel()
        if nom.size != K * n or cal.size != K * n:
            return None
        scale = _MRAD_PER_DEG if angle else 1.0
        out.append(
            {
                "axis": axis,
                "kind": "orientation" if angle else "position",
                "unit": "mrad" if angle else "mm",
                "nominal": nom.reshape(K, n) * scale,
                "calibrated": cal.reshape(K, n) * scale,
            }
        )
    return out


def _before_after(label: str, unit: str, nominal: np.ndarray, calibrated: np.ndarray) -> dict:
    """One chart: calibrated then nominal (hidden when it dwarfs the calibrated one)."""
    peak_cal = float(np.nanmax(np.abs(calibrated))) if calibrated.size else 0.0
    peak_nom = float(np.nanmax(np.abs(nominal))) if nominal.size else 0.0
    hide = peak_nom > NOMINAL_HIDE_RATIO * max(peak_cal, 1e-12)
    return {
        "name": label,
        "unit": unit,
        "series": [
            {"label": "calibrated", "role": "calibrated", "y": calibrated.tolist()},
            {
                "label": "nominal (all parameters 0)",
                "role": "nominal",
                "y": nominal.tolist(),
                "hidden": hide,
            },
        ],
    }


def _norm_charts(axes: List[Dict[str, Any]], K: int) -> List[dict]:
    """Per marker: ‖Δp‖ [mm] and, when orientation is measured, ‖Δφ‖ [mrad] per pose."""
    charts = []
    for k in range(K):
        for kind, symbol, unit in (("position", "‖Δp‖", "mm"), ("orientation", "‖Δφ‖", "mrad")):
            group = [a for a in axes if a["kind"] == kind]
            if not group:
                continue
            nom = np.sqrt(sum(a["nominal"][k] ** 2 for a in group))
            cal = np.sqrt(sum(a["calibrated"][k] ** 2 for a in group))
            charts.append(_before_after(f"marker {k + 1} {kind} {symbol}", unit, nom, cal))
    return charts


def _source_text(validation: Mapping[str, Any]) -> str:
    n = validation.get("n_val_samples", "?")
    if validation.get("validation_source") == "calibration_data_fallback":
        return f"the {n} calibration poses (no held-out data: not an independent test)"
    return f"the {n} held-out validation poses"


def _marker_residual_panels(
    validation: Mapping[str, Any] | None, mask: Sequence[Any] | None
) -> Dict[str, Any]:
    """Residual-norm and per-axis small multiples (with histograms) of every marker.

    Returns:
        ``{"pose_panel", "axis_panel"}``: markup, or None when no per-pose
        residual is recorded.
    """
    if not isinstance(validation, Mapping):
        return {"pose_panel": None, "axis_panel": None}
    axes = _marker_axes(validation, mask)
    if not axes:
        return {"pose_panel": None, "axis_panel": None}
    K, n = axes[0]["calibrated"].shape
    poses = list(range(n))
    hidden = (
        " The nominal model (every parameter 0, metrology frames included) is far off;"
        " tick it in the legend to show it."
    )
    norms = _norm_charts(axes, K)
    hint = f"Residual norm of each marker on {_source_text(validation)}, per pose."
    if any(s.get("hidden") for c in norms for s in c["series"]):
        hint += hidden
    per_axis = [
        _before_after(f"marker {k + 1} {a['axis']}", a["unit"], a["nominal"][k], a["calibrated"][k])
        for k in range(K)
        for a in axes
    ]
    axis_hint = (
        f"Signed residual of each measured axis on {_source_text(validation)}; "
        "the histogram under each chart is that of the calibrated residual."
    )
    if any(s.get("hidden") for c in per_axis for s in c["series"]):
        axis_hint += hidden
    return {
        "pose_panel": trusted(
            _multi_panel_section("pose-panel", poses, "pose", norms, hint, toggles=True)
        ),
        "axis_panel": trusted(
            _multi_panel_section(
                "axis-panel", poses, "pose", per_axis, axis_hint, histograms=True, toggles=True
            )
        ),
    }


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def _solved_metrics(calibrator: Any) -> Mapping[str, Any]:
    """``calibrator.evaluation_metrics``; raises when the run is not solved."""
    eval_ = getattr(calibrator, "evaluation_metrics", None)
    if eval_ is None:
        raise AttributeError("No calibration results available. Run solve() first.")
    if not isinstance(eval_, Mapping):
        raise TypeError(
            "calibrator.evaluation_metrics must be the dict produced by solve(), got "
            f"{type(eval_).__name__}"
        )
    return eval_


def _validation_metrics(calibrator: Any) -> Mapping[str, Any] | None:
    """``results_data["validation_metrics"]`` when it is a mapping, else None."""
    results_data = getattr(calibrator, "results_data", None) or {}
    validation = (
        results_data.get("validation_metrics") if isinstance(results_data, Mapping) else None
    )
    return validation if isinstance(validation, Mapping) else None


def _stages_text(calibrator: Any) -> str:
    try:
        return stages_line(calibrator)
    except Exception as exc:  # noqa: BLE001 - presentation only
        return f"unavailable ({exc})"


def _report_context(
    calibrator: Any,
    eval_: Mapping[str, Any],
    n_samples: Any,
    param_names: List[Any],
    validation: Mapping[str, Any] | None,
    verdict: Any = None,
    confidence_level: float | None = None,
) -> Dict[str, Any]:
    """Variables of ``calibration_report.html.j2``: the data of every section."""
    table = calibrator_parameter_table(calibrator, confidence_level)
    insights = _build_insights(eval_, n_samples, param_names, validation, table)
    provenance = getattr(calibrator, "_run_provenance", None)
    calib_config = getattr(calibrator, "calib_config", None) or {}
    stages_text = _stages_text(calibrator)
    n_kept: int | str
    try:
        n_kept = int(n_samples) - int(eval_.get("n_outliers", 0) or 0)
    except (TypeError, ValueError):
        n_kept = "unavailable"
    trace = task_trace(calibrator)
    trace_html = trace_section(trace)
    return {
        "verdict": trusted(_verdict_block(calibrator, verdict)),
        "provenance": trusted(_provenance_section(provenance)),
        "summary": _summary_view(
            eval_, n_samples, stages_text, getattr(calibrator, "LM_result", None), trace
        ),
        "insights": insights,
        "per_dof": _per_dof_view(eval_.get("per_dof_stats"), n_kept),
        "validation": _validation_view(validation),
        **_marker_residual_panels(validation, calib_config.get("measurability")),
        "uncertainty": _uncertainty_view(eval_, table),
        "correlation": trusted(_correlation_section(eval_.get("correlated_pairs") or [])),
        "trace": None if trace_html is None else trusted(trace_html),
    }


def generate_calibration_report(
    calibrator: Any,
    output_path: str | None = None,
    title: str | None = None,
    verdict: Any = None,
    confidence_level: float | None = None,
) -> str:
    """Render a self-contained HTML diagnostic report for a calibration run.

    Reuses the metrics computed by ``BaseCalibration.solve()`` /
    ``print_quality_report()`` — presentation only.

    Args:
        calibrator: A ``BaseCalibration`` after ``solve()``: reads
            ``evaluation_metrics``,
            ``calib_config["NbSample"]``, ``["param_name"]`` and
            ``["verification"]["confidence_level"]`` (optional),
            ``results_data["validation_metrics"]`` (optional),
            ``LM_result`` (optional), ``optimisation_trace`` (optional),
            ``_run_provenance`` (optional) and ``stages`` (optional).
        output_path: If given, the HTML is also written there atomically
            (parent folders are created).
        title: Report title; default ``"<run title> — Calibration Quality
            Report"`` (asset id and robot name from the provenance, or the
            class name).
        verdict: The :class:`~figaroh._run.verdict.VerificationVerdict` shown in
            the verdict panel (status, each check with value, limit and
            reason); None shows the run's verdict (its last ``verify()``,
            else ``calibrator.verify()`` with the configuration's policy —
            empty by default).
        confidence_level: Level of the parameters' confidence intervals in
            ``(0, 1)``; None: the configuration's
            ``verification.confidence_level``, else 0.95.

    Returns:
        The HTML document.

    Raises:
        AttributeError: ``calibrator`` has not been solved
            (``evaluation_metrics`` missing or None).
        ValueError: ``confidence_level`` is not in ``(0, 1)``.
    """
    eval_ = _solved_metrics(calibrator)
    calib_config = getattr(calibrator, "calib_config", None) or {}
    n_samples = calib_config.get("NbSample", 0)
    param_names = list(calib_config.get("param_name", []) or [])
    validation = _validation_metrics(calibrator)
    provenance = getattr(calibrator, "_run_provenance", None)
    report_title = title or (
        f"{_run_title(provenance, type(calibrator).__name__)} — Calibration Quality Report"
    )
    doc = render(
        "calibration_report.html.j2",
        **_page_context(
            report_title,
            "Generated by figaroh.tools.report — self-contained, no network request.",
        ),
        **_report_context(
            calibrator, eval_, n_samples, param_names, validation, verdict, confidence_level
        ),
    )
    _write_report(doc, output_path, "calibration")
    return doc
