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
Base-parameter uncertainty (bar + confidence tier per parameter), Physical
consistency / reconstruction (and strongly correlated parameter pairs when the
result holds them).

The page is ``templates/identification_report.html.j2`` (package data): this
module builds the data of each section (:func:`_report_context`) and the
template, rendered with autoescaping, escapes every value; chart data travels
as escaped JSON in an attribute, never inside a ``<script>`` element.

Efforts are in N·m (revolute joints) or N (prismatic joints).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List

import numpy as np

from figaroh._run.effort_series import fit_effort_panels, validation_effort_panel
from figaroh._run.html import (
    HEALTHY_INSIGHT,
    UNCERTAINTY_WARN_PCT,
    VALIDATION_IMPROVEMENT_WARN_PCT,
    _change_pct,
    _correlation_section,
    _names_text,
    _param_uncertainty_section,
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
from figaroh._run.uncertainty import (
    NEAR_ZERO_FRACTION,
    parameter_kind,
    parameter_uncertainty,
    uncertainty_note,
)
from figaroh._run.values import _finite_or_none
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


def _poorly_identified(names: Sequence[Any], scaled_pct: Sequence[Any] | None) -> List[str]:
    """Names whose σ against their kind's scale exceeds ``UNCERTAINTY_WARN_PCT`` (NaN skipped)."""
    out = []
    for i, pct in enumerate(list(scaled_pct) if scaled_pct is not None else []):
        p = _finite_or_none(pct)
        if p is None:
            if isinstance(pct, float) and math.isinf(pct):
                p = math.inf
            else:
                continue
        if abs(p) > UNCERTAINTY_WARN_PCT:
            out.append(str(names[i]) if i < len(names) else f"param_{i}")
    return out


def _build_insights(
    result: Mapping[str, Any],
    std_relative: Sequence[Any] | None,
    base_names: Sequence[Any],
    validation: Mapping[str, Any] | None,
) -> List[Dict[str, str]]:
    """Rule-based remarks on an identification result.

    Rules, in order:

    1. condition number ``> 1000`` → warn (ill-conditioned);
    2. ``> 100`` → info (moderately conditioned);
    3. base parameters whose σ exceeds 30 % of their kind's physical scale
       (:func:`parameter_uncertainty`) → warn, first 6 names listed;
    4. no validation → info (training-set metrics only);
    5. with validation: training fallback → warn; pooled correlation
       ``< 0.9`` → warn; improvement over nominal ``< 50 %`` → warn;
    6. physical-consistency status other than ``already_feasible``/``feasible``
       → warn (``error``/``unavailable``) or info;
    7. reconstruction status other than ``success`` → warn.

    When no rule fires a single info insight "No issues detected — fit looks
    healthy." is returned.

    Args:
        result: ``BaseIdentification.result`` (reads ``"condition number"``,
            ``"physical consistency"``, ``"reconstruction"``).
        std_relative: Relative standard deviation of each base parameter
            σ_i/|φ_i|·100 [%].
        base_names: Base-parameter names (same order).
        validation: ``result["validation_metrics"]`` or None (reads
            ``validation_source``, ``correlation`` [-], ``improvement_pct`` [%]).

    Returns:
        List of ``{"level": "warn" | "info", "text": str}``.
    """
    result = result if isinstance(result, Mapping) else {}
    insights = (
        _conditioning_insights(result.get("condition number", float("nan")))
        + _uncertainty_insights(
            base_names,
            parameter_uncertainty(base_names, result.get("base parameters values"), std_relative)[
                "scaled_pct"
            ],
        )
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


def _uncertainty_insights(
    base_names: Sequence[Any], scaled_pct: Sequence[Any] | None
) -> List[Dict[str, str]]:
    """Rule 3: base parameters whose σ exceeds the limit [%] of their physical scale."""
    poor = _poorly_identified(list(base_names or []), scaled_pct)
    if not poor:
        return []
    return [
        _insight(
            "warn",
            f"{len(poor)} base parameter(s) have a standard deviation above "
            f"{UNCERTAINTY_WARN_PCT:.0f}% of the largest parameter of their kind and are "
            f"poorly identified: {_names_text(poor)}.",
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
                f"Validation torque RMSE improved by only {improvement:.1f}% over the "
                "nominal/CAD parameters — check model assumptions or excitation "
                "trajectory coverage.",
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
) -> List[tuple]:
    """Key/value rows: stages, base parameters, samples, RMSE, correlation, condition."""
    cond = result.get("condition number", float("nan"))
    label = _condition_label(cond)
    cond_text = "unavailable" if label == "unavailable" else f"{float(cond):.1f} ({label})"
    rows = [
        ("Stages", stages_text),
        ("Base parameters", len(result.get("base parameters names", []) or [])),
        ("Samples", result.get("num samples", "unavailable")),
    ]
    rmse = _finite_or_none(result.get("rmse norm (N/m)"))
    rmse_text = "unavailable" if rmse is None else f"{rmse:.4f} N·m or N (stacked joints)"
    rows.append(("RMSE (base fit)" if has_selection else "RMSE", rmse_text))
    sel = _selected_info(result)
    if sel is not None and sel.get("effort_rmse_fit") is not None:
        value = _finite_or_none(sel.get("effort_rmse_fit"))
        rows.append(
            (
                "RMSE (selected estimate)",
                f"{'unavailable' if value is None else f'{value:.4f}'} "
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


def _validation_view(validation: Mapping[str, Any] | None) -> Dict[str, Any] | None:
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
        for label, key in (("RMSE", "rmse"), ("Max |error|", "max"))
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
) -> Dict[str, Any]:
    """Training fit and residuals over time, and the validation trajectory (markup)."""
    fit_html, residual_html = fit_effort_panels(
        result.get("torque processed"),
        result.get("torque estimated"),
        fit_names,
        units,
        _timestamps(getattr(identifier, "processed_data", None)),
    )
    validation_html = validation_effort_panel(
        validation, units, _validation_timestamps(identifier, validation)
    )
    return {
        "fit": trusted(fit_html),
        "residual": trusted(residual_html),
        "validation": trusted(validation_html),
    }


def _report_context(
    identifier: Any, result: Mapping[str, Any], provenance: Any, verdict: Any = None
) -> Dict[str, Any]:
    """Variables of ``identification_report.html.j2``: the data of every section."""
    base_names = list(result.get("base parameters names", []) or [])
    std_raw = getattr(identifier, "std_relative", None)
    std_relative = [] if std_raw is None else list(np.ravel(np.asarray(std_raw, dtype=float)))
    phi_base = getattr(identifier, "phi_base", None)
    if phi_base is None:
        phi_base = result.get("base parameters values")
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
    unc = parameter_uncertainty(base_names, phi_base, std_relative)
    uncertainty = uncertainty_note() + _param_uncertainty_section(
        base_names, unc["sigma"], unc["relative_pct"], phi_base, unc["scaled_pct"]
    )
    return {
        "verdict": trusted(_verdict_block(identifier, verdict)),
        "provenance": trusted(_provenance_section(provenance)),
        "summary_rows": _summary_rows(result, correlation, stages_text, has_selection),
        "insights": _build_insights(result, std_relative, base_names, validation),
        "residual_heading": "Base fit residuals" if has_selection else "Per-joint torque residuals",
        "per_joint": _per_joint_view(per_joint, units, result, has_selection),
        "time_series": _time_series(identifier, result, fit_names, units, validation),
        "validation": _validation_view(validation),
        "uncertainty": trusted(uncertainty),
        "consistency": _consistency_view(identifier, result),
        "links": trusted(_links_section(identifier, result)),
    }


def generate_identification_report(
    identifier: Any,
    output_path: str | None = None,
    title: str | None = None,
    verdict: Any = None,
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

    Returns:
        The HTML document.

    Raises:
        AttributeError: ``identifier`` has not been solved (``result`` is None).
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
        **_report_context(identifier, result, provenance, verdict),
    )
    _write_report(doc, output_path, "identification")
    return doc
