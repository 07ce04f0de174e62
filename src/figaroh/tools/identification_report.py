"""HTML diagnostic report of a dynamic identification run.

Renders the statistics of :meth:`BaseIdentification.print_quality_report`
(condition number, effort residuals, base-parameter uncertainty, held-out
validation, optional physical-consistency / reconstruction status) as one
self-contained HTML page — inline CSS and JavaScript, no font, image, script
or style fetched from anywhere, so the file can be mailed or archived and
opened offline.

Identification (one-shot linear least squares on the base regressor) and
calibration (iterative nonlinear fit with outlier exclusion) produce
different diagnostics, so this module is the identification adapter; only the
domain-independent HTML/CSS/JS layer is shared, via the run-services
modules :mod:`figaroh._run.html`, :mod:`figaroh._run.charts` and
:mod:`figaroh._run.page`.

Sections: Verdict (status and every check with value, limit and reason),
Provenance, Summary, Insights, Per-joint torque residuals, Validation, Before /
after (interactive chart: wheel or drag to zoom, hover to read values),
Base-parameter uncertainty (σ, the confidence interval ``φ̂ ± t_{1−α/2, n−p} σ``
— 95 % by default — and the grade of the shared rule,
:mod:`figaroh._run.uncertainty_grade`, per parameter), Physical consistency /
reconstruction (and strongly correlated parameter pairs when the result holds
them), Identified links, and the Optimisation trace when the run recorded one.
Samples at the ends of the log whose residuals stand out (the kinematic
filter's edge effect, :mod:`figaroh.identification._edge_effects`) are marked
in the residual charts and left out of their histograms.

The page is ``templates/identification_report.html.j2`` (package data): this
module builds the data of each section (:func:`_report_context`) and the
template, rendered with autoescaping, escapes every value; chart data travels
as escaped JSON in an attribute, never inside a ``<script>`` element.

Efforts are in N·m (revolute joints) or N (prismatic joints).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List

import numpy as np

from figaroh._run.effort_series import fit_effort_panels, validation_effort_panel
from figaroh._run.html import (
    HEALTHY_INSIGHT,
    UNCERTAINTY_WARN_PCT,
    VALIDATION_IMPROVEMENT_WARN_PCT,
    _change_pct,
    _component,
    _correlation_section,
    _improvement_phrase,
    _names_text,
    _parameter_table_section,
    _provenance_section,
    _run_title,
    _verdict_block,
)
from figaroh._run.link_table import link_table_section, nominal_link_masses
from figaroh._run.page import _page_context, _write_report
from figaroh._run.physical_account import (
    SOURCE_LABELS,
    consistency_source_label,
    physical_stage_rows,
)
from figaroh._run.templating import render, trusted
from figaroh._run.trace_report import task_trace, trace_section
from figaroh._run.uncertainty import (
    NEAR_ZERO_FRACTION,
    ParameterTable,
    kind_unit,
    parameter_kind,
    parameter_table,
    parameter_uncertainty,
    uncertainty_note,
)
from figaroh._run.values import _finite_or_none
from figaroh.identification._confidence import base_parameter_table
from figaroh.identification._edge_effects import EdgeEffect, edge_effect
from figaroh.identification.quality_report import effort_unit_text
from figaroh.tools.effort_units import effort_unit
from figaroh.tools.stages import stages_line

logger = logging.getLogger(__name__)

__all__ = [
    "CONDITION_ILL_THRESHOLD",
    "CONDITION_MODERATE_THRESHOLD",
    "LOW_CORRELATION_WARN",
    "NEAR_ZERO_FRACTION",
    "SOURCE_LABELS",
    "consistency_source_label",
    "generate_identification_report",
    "parameter_kind",
    "parameter_uncertainty",
]

#: Condition number of the base regressor above which it is ill-conditioned.
CONDITION_ILL_THRESHOLD = 1000.0
#: Condition number above which the base regressor is moderately conditioned.
CONDITION_MODERATE_THRESHOLD = 100.0
#: Pooled validation correlation below which the report warns.
LOW_CORRELATION_WARN = 0.9

_EXTRA_STYLE = """
.flag-bad { color:var(--poor); }
"""


# ---------------------------------------------------------------------------
# Insights
# ---------------------------------------------------------------------------


def _condition_label(cond: Any) -> str:
    """Label of a condition number: unavailable / ill / moderately / well conditioned."""
    c = _finite_or_none(cond)
    if c is None:
        return "unavailable"
    if c > CONDITION_ILL_THRESHOLD:
        return "ill-conditioned"
    if c > CONDITION_MODERATE_THRESHOLD:
        return "moderately conditioned"
    return "well-conditioned"


def _fallback_table(
    result: Mapping[str, Any], std_relative: Sequence[Any] | None, base_names: Sequence[Any]
) -> ParameterTable:
    """The table from ``result`` alone: ``σ = |std%/100 · φ|``, dof of the base regressor."""
    values = result.get("base parameters values")
    unc = parameter_uncertainty(base_names, values, std_relative)
    W: Any = result.get("base regressor")
    dof = int(np.shape(W)[0] - np.shape(W)[1]) if W is not None and np.ndim(W) == 2 else None
    kinds = unc["kind"]
    return parameter_table(
        base_names, kinds, values, unc["sigma"], dof, units=[kind_unit(k) for k in kinds]
    )


def _build_insights(
    result: Mapping[str, Any],
    std_relative: Sequence[Any] | None,
    base_names: Sequence[Any],
    validation: Mapping[str, Any] | None,
    table: ParameterTable | None = None,
    edges: EdgeEffect | None = None,
) -> List[Dict[str, str]]:
    """Rule-based remarks on an identification result.

    Rules, in order:

    1. condition number ``> 1000`` → warn (ill-conditioned);
    2. ``> 100`` → info (moderately conditioned);
    3. base parameters graded ``poor`` by the shared rule
       (:mod:`figaroh._run.uncertainty_grade`: σ above 30 % of max(|value|,
       scale of the kind)) → warn, first 6 names listed;
    4. residual spikes at the ends of the log (``edges``) → warn, with the cause;
    5. no validation → info (training-set metrics only);
    6. with validation: training fallback → warn; pooled correlation
       ``< 0.9`` → warn; improvement over nominal ``< 50 %`` (or a
       deterioration) → warn;
    7. physical-consistency status other than ``already_feasible``/``feasible``
       → warn (``error``/``unavailable``) or info;
    8. reconstruction status other than ``success`` → warn.

    When no rule fires a single info insight "No issues detected — fit looks
    healthy." is returned.

    Args:
        result: ``BaseIdentification.result`` (reads ``"condition number"``,
            ``"base parameters values"``, ``"base regressor"``,
            ``"physical consistency"``, ``"reconstruction"``).
        std_relative: Relative standard deviation of each base parameter
            σ_i/|φ_i|·100 [%] (used when ``table`` is None).
        base_names: Base-parameter names (same order).
        validation: ``result["validation_metrics"]`` or None (reads
            ``validation_source``, ``correlation`` [-], ``improvement_pct`` [%]).
        table: The base-parameter table (None: built from ``result`` and
            ``std_relative``).
        edges: The edge effect of the training residuals, or None.

    Returns:
        List of ``{"level": "warn" | "info", "text": str}``.
    """
    result = result if isinstance(result, Mapping) else {}
    if table is None:
        table = _fallback_table(result, std_relative, list(base_names or []))
    insights = (
        _conditioning_insights(result.get("condition number", float("nan")))
        + _uncertainty_insights(table)
        + _edge_insights(edges)
        + _validation_insights(validation)
        + _stage_status_insights(result)
    )
    return insights or [_insight("info", HEALTHY_INSIGHT)]


def _insight(level: str, text: str) -> Dict[str, str]:
    return {"level": level, "text": text}


def _conditioning_insights(cond: Any) -> List[Dict[str, str]]:
    """Rules 1-2: an ill-conditioned (warn) or moderately conditioned (info) regressor."""
    label = _condition_label(cond)
    if label == "ill-conditioned":
        return [
            _insight(
                "warn",
                f"Condition number {float(cond):.1f} is ill-conditioned — consider a "
                "richer excitation trajectory or fewer simultaneously identified base "
                "parameters.",
            )
        ]
    if label == "moderately conditioned":
        return [
            _insight(
                "info",
                f"Condition number {float(cond):.1f} is moderately conditioned — usable, "
                "but not optimal.",
            )
        ]
    return []


def _uncertainty_insights(table: ParameterTable) -> List[Dict[str, str]]:
    """Rule 3: base parameters the shared rule grades ``poor``."""
    poor = [r.name for r in table.ranked() if r.grade.tier == "poor"]
    if not poor:
        return []
    return [
        _insight(
            "warn",
            f"{len(poor)} base parameter(s) are poorly identified (σ above "
            f"{UNCERTAINTY_WARN_PCT:.0f} % of max(|value|, scale of their kind)): "
            f"{_names_text(poor)}.",
        )
    ]


def _edge_insights(edges: EdgeEffect | None) -> List[Dict[str, str]]:
    """Rule 4: the largest training residuals sit at the ends of the log."""
    if edges is None:
        return []
    joint, peak, inner, _ = edges.worst()
    return [
        _insight(
            "warn",
            f"The largest training residuals sit in the first and last {edges.n_edge} samples "
            f"({joint}: {peak:.3g} there, at most {inner:.3g} elsewhere, in the joint's effort "
            f"unit): {edges.cause_text()}. They are marked in the residual charts of the HTML "
            "report and left out of its histograms.",
        )
    ]


def _validation_insights(validation: Mapping[str, Any] | None) -> List[Dict[str, str]]:
    """Rules 4-5: no validation, a training-data fallback, low correlation or improvement."""
    if not isinstance(validation, Mapping):
        return [
            _insight(
                "info",
                "No held-out validation data provided — these metrics reflect fit quality "
                "on the training set only, not generalization. Set validation_data_file in "
                "the identification config to enable it.",
            )
        ]
    out: List[Dict[str, str]] = []
    if validation.get("validation_source") == "identification_data_fallback":
        out.append(
            _insight(
                "warn",
                "No separate validation data provided — validation metrics fall back "
                "to the identification data itself and do NOT test generalization to "
                "new trajectories.",
            )
        )
    corr = _finite_or_none(validation.get("correlation", 1.0))
    if corr is not None and corr < LOW_CORRELATION_WARN:
        out.append(
            _insight(
                "warn",
                f"Validation torque correlation is only {corr:.3f} — the identified "
                "model may not generalize well beyond the excitation trajectory used "
                "for fitting.",
            )
        )
    improvement = _finite_or_none(validation.get("improvement_pct", 100.0))
    if improvement is not None and improvement < VALIDATION_IMPROVEMENT_WARN_PCT:
        out.append(
            _insight(
                "warn",
                _improvement_phrase(
                    improvement, "Validation torque RMSE", "the nominal/CAD parameters"
                )
                + " — check model assumptions or excitation trajectory coverage.",
            )
        )
    return out


def _stage_status_insights(result: Mapping[str, Any]) -> List[Dict[str, str]]:
    """Rules 6-7: physical-consistency and reconstruction statuses that need a look."""
    out: List[Dict[str, str]] = []
    pc = result.get("physical consistency")
    pc_status = pc.get("status") if isinstance(pc, Mapping) else None
    if pc_status not in (None, "already_feasible", "feasible"):
        level = "warn" if pc_status in ("error", "unavailable") else "info"
        out.append(_insight(level, f"Physical-consistency projection status: {pc_status}."))
    recon = result.get("reconstruction")
    recon_status = recon.get("status") if isinstance(recon, Mapping) else None
    if recon_status not in (None, "success"):
        out.append(_insight("warn", f"Full-parameter reconstruction status: {recon_status}."))
    return out


# ---------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------


def _selected_info(result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    sel = result.get("selected")
    return sel if isinstance(sel, Mapping) else None


def _summary_rows(
    result: Mapping[str, Any],
    correlation: Any,
    stages_text: str,
    has_selection: bool,
    unit: str = "N·m or N",
) -> List[tuple]:
    """Key/value rows: stages, base parameters, samples, RMSE [unit], correlation, condition."""
    cond = result.get("condition number", float("nan"))
    label = _condition_label(cond)
    cond_text = "unavailable" if label == "unavailable" else f"{float(cond):.1f} ({label})"
    rows = [
        ("Stages", stages_text),
        ("Base parameters", len(result.get("base parameters names", []) or [])),
        ("Samples", result.get("num samples", "unavailable")),
    ]
    rmse = _finite_or_none(result.get("rmse norm (N/m)"))
    rmse_text = (
        "unavailable" if rmse is None else f"{rmse:.4f} {unit} (training set, all fitted joints)"
    )
    rows.append(("RMSE (base fit)" if has_selection else "RMSE", rmse_text))
    sel = _selected_info(result)
    if sel is not None and sel.get("effort_rmse_fit") is not None:
        value = _finite_or_none(sel.get("effort_rmse_fit"))
        rows.append(
            (
                "RMSE (selected estimate)",
                f"{'unavailable' if value is None else f'{value:.4f} {unit}'} "
                f"({sel.get('stage', 'selected')} estimate)",
            )
        )
    corr = _finite_or_none(correlation)
    rows.append(("Correlation", "unavailable" if corr is None else f"{corr:.4f}"))
    rows.append(("Condition number", cond_text))
    return rows


def _per_joint_view(
    per_joint: Mapping[str, Any] | None,
    units: Mapping[str, str],
    result: Mapping[str, Any],
    has_selection: bool,
) -> Dict[str, Any] | None:
    """Per-joint mean, std, RMSE and max |residual| of the fit [N·m or N]; None when unavailable."""
    if not isinstance(per_joint, Mapping) or not per_joint.get("joint_names"):
        return None
    heading = (
        "Base fit residuals, per joint (training set)"
        if has_selection
        else "Residual τ_measured − τ_identified per joint (training set)"
    )
    rows = [
        {
            "name": name,
            "unit": units.get(name, ""),
            **{
                key: per_joint.get(key, [None] * (i + 1))[i]
                for key in ("mean", "std", "rmse", "max_abs")
            },
        }
        for i, name in enumerate(per_joint["joint_names"])
    ]
    sel = _selected_info(result)
    per_sel = (sel or {}).get("effort_rmse_fit_per_joint")
    selected = None
    if sel is not None and isinstance(per_sel, Mapping) and per_sel:
        selected = {"stage": sel.get("stage", "selected"), "rows": list(per_sel.items())}
    return {"heading": heading, "rows": rows, "selected": selected}


def _validation_view(
    validation: Mapping[str, Any] | None, unit: str = "N·m or N"
) -> Dict[str, Any] | None:
    """Validation summary (nominal vs identified) and the per-joint rows; None without data."""
    if not isinstance(validation, Mapping):
        return None
    fallback = validation.get("validation_source") == "identification_data_fallback"
    source = (
        "identification data (fallback, not independent)" if fallback else "held-out trajectory"
    )
    rows = [
        ("Source", source),
        ("Samples", validation.get("n_val_samples", "unavailable")),
        ("Correlation (pooled)", _plain(validation.get("correlation"), ".4f")),
        (
            "Correlation (per-joint normalised)",
            _plain(validation.get("correlation_normalised"), ".4f"),
        ),
    ]
    metrics = [
        {
            "label": label,
            "nominal": validation.get(f"{key}_nominal"),
            "identified": validation.get(f"{key}_identified"),
            "pct": _change_pct(
                validation.get(f"{key}_nominal"), validation.get(f"{key}_identified")
            ),
        }
        for label, key in ((f"RMSE [{unit}]", "rmse"), (f"Max |error| [{unit}]", "max"))
    ]
    per_joint = validation.get("per_joint")
    joints = []
    for name, m in per_joint.items() if isinstance(per_joint, Mapping) else ():
        m = m if isinstance(m, Mapping) else {}
        joints.append(
            {
                "name": name,
                "unit": m.get("unit", ""),
                "rmse_nominal": m.get("rmse_nominal"),
                "rmse_identified": m.get("rmse_identified"),
                "pct": _change_pct(m.get("rmse_nominal"), m.get("rmse_identified")),
                "std_measured": m.get("std_measured"),
                "r2": m.get("r2"),
                "predictive": m.get("predictive"),
            }
        )
    left_out = validation.get("not_fitted_joints")
    return {
        "fallback": fallback,
        "rows": rows,
        "metrics": metrics,
        "joints": joints,
        "left_out": ", ".join(str(j) for j in left_out) if left_out else "",
    }


def _plain(value: Any, spec: str) -> str:
    """Unescaped formatted number for :func:`_kv_rows` (which escapes)."""
    f = _finite_or_none(value)
    return "unavailable" if f is None else format(f, spec)


def _consistency_view(identifier: Any, result: Mapping[str, Any]) -> Dict[str, Any]:
    """Every physical step in one table (+ strongly correlated pairs if any).

    Rows: the ``physical`` stage record (the same words as the summary line),
    the physical-consistency check (which parameters were checked, how many
    links were projected, which failed), the reconstruction, the physical fit
    and the estimate the report's numbers come from.
    """
    rows = physical_stage_rows(getattr(identifier, "stages", None) or [], result)
    pairs = result.get("correlated_pairs")
    return {"rows": rows, "pairs": trusted(_correlation_section(pairs)) if pairs else None}


def _links_section(identifier: Any, result: Mapping[str, Any]) -> str:
    """Per-link mass, CoM, principal moments and feasibility of the selected estimate."""
    sel = _selected_info(result)
    joints = [
        str(j) for j in (getattr(identifier, "identif_config", None) or {}).get("active_joints", [])
    ]
    if isinstance(sel, Mapping) and not joints:
        joints = [str(j) for j in (sel.get("feasibility") or {})]
    nominal = nominal_link_masses(getattr(identifier, "model", None), joints)
    return link_table_section(sel, joints, nominal)


def _joint_units(ident: Any, validation: Mapping[str, Any] | None) -> Dict[str, str]:
    units: Dict[str, str] = {}
    per_joint = (validation or {}).get("per_joint") if isinstance(validation, Mapping) else None
    if isinstance(per_joint, Mapping):
        for name, m in per_joint.items():
            if isinstance(m, Mapping) and m.get("unit"):
                units[str(name)] = str(m["unit"])
    model = getattr(ident, "model", None)
    if model is not None:
        try:
            for name in list(getattr(ident, "identif_config", {}).get("active_joints", [])):
                units.setdefault(str(name), effort_unit(model, name))
        except Exception as exc:  # noqa: BLE001 - units are presentation only
            logger.debug("effort units unavailable: %s", exc)
    return units


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def _per_joint_stats(identifier: Any) -> Mapping[str, Any] | None:
    """``identifier._compute_per_joint_stats()``, None when unavailable (logged)."""
    if not hasattr(identifier, "_compute_per_joint_stats"):
        return None
    try:
        return identifier._compute_per_joint_stats()
    except Exception as exc:  # noqa: BLE001 - a missing table must not kill the report
        logger.warning("per-joint residuals unavailable for the report: %s", exc)
        return None


def _timestamps(data: Any) -> Any:
    return data.get("timestamps") if isinstance(data, Mapping) else None


def _validation_timestamps(identifier: Any, validation: Mapping[str, Any] | None) -> Any:
    """Sample times [s] of the validation trajectory (the training ones for a fallback)."""
    stamps = _timestamps(getattr(identifier, "_val_processed_data", None))
    fallback = isinstance(validation, Mapping) and (
        validation.get("validation_source") == "identification_data_fallback"
    )
    if stamps is None and fallback:
        stamps = _timestamps(getattr(identifier, "processed_data", None))
    return stamps


def _time_series(
    identifier: Any,
    result: Mapping[str, Any],
    fit_names: Sequence[str],
    units: Mapping[str, str],
    validation: Mapping[str, Any] | None,
    edges: EdgeEffect | None = None,
) -> Dict[str, Any]:
    """Training fit and residuals over time, and the validation trajectory (markup)."""
    fit_html, residual_html = fit_effort_panels(
        result.get("torque processed"),
        result.get("torque estimated"),
        fit_names,
        units,
        _timestamps(getattr(identifier, "processed_data", None)),
        edge_samples=0 if edges is None else edges.n_edge,
    )
    validation_html = validation_effort_panel(
        validation, units, _validation_timestamps(identifier, validation)
    )
    return {
        "fit": trusted(fit_html),
        "residual": trusted(residual_html),
        "validation": trusted(validation_html),
    }


def _uncertainty_section(table: ParameterTable | None) -> str:
    """Grades summary, the parameter table and the note on the interval and the rule."""
    if table is None:
        return _component("muted", "No base parameters to report.")
    return (
        _component("muted", f"Grades: {table.summary_text()}.")
        + _parameter_table_section(table)
        + _component("muted", uncertainty_note(table))
    )


def _report_context(
    identifier: Any,
    result: Mapping[str, Any],
    provenance: Any,
    verdict: Any = None,
    confidence_level: float | None = None,
) -> Dict[str, Any]:
    """Variables of ``identification_report.html.j2``: the data of every section."""
    base_names = list(result.get("base parameters names", []) or [])
    std_raw = getattr(identifier, "std_relative", None)
    std_relative = [] if std_raw is None else list(np.ravel(np.asarray(std_raw, dtype=float)))
    correlation = getattr(identifier, "correlation", None)
    validation = result.get("validation_metrics")
    if not isinstance(validation, Mapping):
        validation = None
    has_selection = getattr(identifier, "selected", None) is not None or (
        _selected_info(result) is not None
    )

    per_joint = _per_joint_stats(identifier)
    fit_names = list((per_joint or {}).get("joint_names") or [])

    try:
        stages_text = stages_line(identifier)
    except Exception as exc:  # noqa: BLE001 - presentation only
        stages_text = f"unavailable ({exc})"

    units = _joint_units(identifier, validation)
    unit = effort_unit_text(identifier)
    table = base_parameter_table(identifier, confidence_level)
    if table is None:
        table = _fallback_table(result, std_relative, base_names)
    edges = edge_effect(identifier)
    trace_html = trace_section(task_trace(identifier))
    return {
        "verdict": trusted(_verdict_block(identifier, verdict)),
        "provenance": trusted(_provenance_section(provenance)),
        "summary_rows": _summary_rows(result, correlation, stages_text, has_selection, unit),
        "insights": _build_insights(result, std_relative, base_names, validation, table, edges),
        "residual_heading": "Base fit residuals" if has_selection else "Per-joint torque residuals",
        "per_joint": _per_joint_view(per_joint, units, result, has_selection),
        "time_series": _time_series(identifier, result, fit_names, units, validation, edges),
        "validation": _validation_view(validation, unit),
        "uncertainty": trusted(_uncertainty_section(table)),
        "consistency": _consistency_view(identifier, result),
        "links": trusted(_links_section(identifier, result)),
        "trace": None if trace_html is None else trusted(trace_html),
    }


def generate_identification_report(
    identifier: Any,
    output_path: str | None = None,
    title: str | None = None,
    verdict: Any = None,
    confidence_level: float | None = None,
) -> str:
    """Render a self-contained HTML diagnostic report for an identification run.

    Reuses the metrics already computed by ``solve()`` and
    ``print_quality_report()`` — presentation only, no new estimation. The
    base-parameter table shows the value, the absolute ``σ_i = |std%_i/100 ·
    φ_i|``, the relative σ only where the value is not ≈ 0, and a bar of width
    ``min(σ_i/s_k·100, 100)`` coloured by confidence tier (good ≤ 10 % < fair ≤
    30 % < poor), ``s_k`` being the physical scale of the parameter's kind (see
    :func:`parameter_uncertainty`).

    Args:
        identifier: A ``BaseIdentification`` after ``solve()`` (reads
            ``result``, ``std_relative`` [%], ``phi_base``, ``correlation``,
            ``stages``, ``selected``, ``_run_provenance`` and
            ``_compute_per_joint_stats()``).
        output_path: If given, the HTML is also written there atomically
            (parent folders are created).
        title: Report title; default ``"<run title> — Identification Quality
            Report"`` where the run title is the asset id and robot name from
            the provenance, or the class name.
        verdict: The :class:`~figaroh._run.verdict.VerificationVerdict` to show
            in the verdict panel (e.g. the one ``verify(thresholds, scope)``
            returned with the application's limits); None shows the run's
            verdict (its last ``verify()``, else ``identifier.verify()`` with
            the configuration's policy — empty by default, hence
            ``not_evaluated``).
        confidence_level: Level of the base parameters' confidence intervals
            in ``(0, 1)``; None: the configuration's
            ``verification.confidence_level``, else 0.95.

    Returns:
        The HTML document.

    Raises:
        AttributeError: ``identifier`` has not been solved (``result`` is None).
        ValueError: ``confidence_level`` is not in ``(0, 1)``.
    """
    result = getattr(identifier, "result", None)
    if result is None:
        raise AttributeError("No identification results available. Run solve() first.")
    if not isinstance(result, Mapping):
        raise TypeError(
            f"identifier.result must be the dict produced by solve(), got {type(result).__name__}"
        )

    provenance = getattr(identifier, "_run_provenance", None)
    report_title = title or (
        f"{_run_title(provenance, type(identifier).__name__)} — Identification Quality Report"
    )
    doc = render(
        "identification_report.html.j2",
        **_page_context(
            report_title,
            "Generated by figaroh.tools.identification_report — self-contained, "
            "no network request.",
            _EXTRA_STYLE,
        ),
        **_report_context(identifier, result, provenance, verdict, confidence_level),
    )
    _write_report(doc, output_path, "identification")
    return doc
