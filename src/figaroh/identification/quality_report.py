"""Terminal quality report and basic plot of a solved identification.

:func:`format_quality_report` builds the text that
:meth:`BaseIdentification.print_quality_report` prints: stages, condition
number, effort RMSE and correlation, Coulomb-friction rows at rest, per-joint
residuals (and the samples at the ends of the log whose residuals stand out,
see :mod:`figaroh.identification._edge_effects`), the grades of the base
parameters and the five least certain ones with their confidence intervals
(the table of the HTML report, :mod:`figaroh.identification._confidence`),
held-out validation, optional physical-consistency status and, when the run
recorded one, its optimisation trace. Efforts are in N·m (revolute) or N
(prismatic); every figure carries its unit.
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any

import numpy as np

from figaroh._run.trace_summary import task_trace, trace_lines
from figaroh._run.uncertainty import ParameterTable
from figaroh.identification._confidence import base_parameter_table
from figaroh.identification._edge_effects import EdgeEffect, edge_effect
from figaroh.tools.effort_units import effort_unit
from figaroh.tools.stages import stages_line
from figaroh.utils.fileio import atomic_write, make_folder

logger = logging.getLogger(__name__)

_RULE = "=" * 70
_THIN = "-" * 70


def _condition_label(cond: float) -> str:
    if cond < 100:
        return "well-conditioned"
    if cond < 1000:
        return "moderately-conditioned"
    return "ill-conditioned"


def _num(value: Any, spec: str) -> str:
    """``value`` formatted with ``spec``; ``"unavailable"`` when it is not a number."""
    try:
        return format(float(value), spec)
    except (TypeError, ValueError):
        return "unavailable"


def joint_units(ident: Any, joints: Any) -> dict[str, str]:
    """Effort unit of each joint (``"N·m"`` revolute, ``"N"`` prismatic; ``""`` unknown)."""
    model = getattr(ident, "model", None)
    out = {}
    for name in joints or []:
        try:
            out[str(name)] = effort_unit(model, str(name)) if model is not None else ""
        except Exception:  # noqa: BLE001 - a unit is presentation only
            out[str(name)] = ""
    return out


def effort_unit_text(ident: Any) -> str:
    """The unit of the stacked efforts: ``"N·m"``, ``"N"``, or ``"N·m or N"`` for a mix."""
    try:
        joints = ident.fit_joints()
    except Exception:  # noqa: BLE001 - before a solve, or a duck-typed object
        joints = (getattr(ident, "identif_config", None) or {}).get("active_joints", [])
    units = {u for u in joint_units(ident, joints).values() if u}
    return units.pop() if len(units) == 1 else "N·m or N"


def _selected_rmse_line(selected_info: dict, unit: str) -> str:
    """RMSE line of the selected estimate; a rejected one has no RMSE and says why."""
    rmse = selected_info.get("effort_rmse_fit")
    if selected_info.get("status") == "accepted":
        return f"  RMSE ({selected_info.get('stage')} estimate): {_num(rmse, '.4f')} {unit}"
    label = f"rejected {selected_info.get('requested', '?')}"
    if rmse is None:
        reason = selected_info.get("reason") or "no estimate"
        return f"  RMSE ({label} estimate): unavailable (rejected: {reason})"
    return f"  RMSE ({label} estimate): {_num(rmse, '.4f')} {unit}"


def _summary_lines(ident: Any, result: dict, sel: Any) -> list[str]:
    """Stages, reported estimate, size, condition number, RMSE and correlation."""
    lines = [f"  Stages:          {stages_line(ident)}"]
    if sel is not None:
        lines.append(
            f"  Reported estimate: {sel.stage if sel.accepted else 'none'}"
            f" (requested {sel.requested}: {sel.status}; {sel.reason})"
        )
    try:
        cond = float(result.get("condition number", float("nan")))
    except (TypeError, ValueError):
        cond = float("nan")
    n_base = len(result.get("base parameters names", []))
    lines.append(f"  Base parameters: {n_base}    Samples: {result.get('num samples', 0)}")
    if math.isnan(cond):
        lines.append("  Condition:    unavailable")
    else:
        lines.append(f"  Condition:    {cond:.1f} ({_condition_label(cond)})")
    unit = effort_unit_text(ident)
    rmse_label = "RMSE:" if sel is None else "RMSE (base fit):"
    lines.append(
        f"  {rmse_label:<13s} {_num(result.get('rmse norm (N/m)'), '.4f')} {unit} "
        f"(training set, all fitted joints)    Correlation: {_num(ident.correlation, '.4f')}"
    )
    at_rest = result.get("coulomb_at_rest")
    if isinstance(at_rest, dict) and at_rest.get("message"):
        lines.append(f"  Coulomb friction: {at_rest['message']}")
    selected_info = result.get("selected")
    if isinstance(selected_info, dict) and "effort_rmse_fit" in selected_info:
        lines.append(_selected_rmse_line(selected_info, unit))
    return lines


def _per_joint_lines(
    per_joint: dict | None,
    selected_info: Any,
    has_selection: bool,
    units: dict[str, str],
    edges: EdgeEffect | None = None,
) -> list[str]:
    """Per-joint residual table of the base fit (and the selected estimate's RMSE)."""
    if per_joint is None:
        return ["  Per-joint residuals: unavailable"]
    heading = "Per-Joint Torque Residuals (training set)"
    if has_selection:
        heading = "Base fit residuals, per joint (training set)"
    lines = [
        f"  {heading}",
        f"  {'Joint':<22s} {'Mean':>10s} {'Std':>10s} {'RMSE':>10s} {'Max':>10s} Unit",
        f"  {'-' * 22} {'-' * 10} {'-' * 10} {'-' * 10} {'-' * 10} ----",
    ]
    for i, name in enumerate(per_joint["joint_names"]):
        cells = " ".join(
            f"{_num(per_joint[key][i], '.4f'):>10s}" for key in ("mean", "std", "rmse", "max_abs")
        )
        lines.append(f"  {str(name):<22s} {cells} {units.get(str(name), '')}")
    if edges is not None:
        joint, peak, inner, _ = edges.worst()
        unit = units.get(joint, "")
        lines.append(
            f"  Edge samples: the largest residuals sit in the first/last {edges.n_edge} samples "
            f"({joint}: {peak:.2f} {unit} there, at most {inner:.2f} {unit} elsewhere):"
        )
        lines.append(f"    {edges.cause_text()}.")
    selected_info = selected_info if isinstance(selected_info, dict) else {}
    per_joint_sel = selected_info.get("effort_rmse_fit_per_joint")
    if per_joint_sel:
        lines.append(f"  Selected estimate ({selected_info.get('stage')}) RMSE per joint")
        for name, value in per_joint_sel.items():
            lines.append(f"  {str(name):<22s} {_num(value, '.4f'):>10s} {units.get(str(name), '')}")
    return lines


def _uncertainty_lines(table: ParameterTable | None) -> list[str]:
    """Grades of the base parameters and the five least certain, with their intervals."""
    if table is None or not table.rows:
        return ["  Base-parameter uncertainty: unavailable"]
    lines = [
        f"  Base-Parameter Uncertainty: {table.summary_text()}",
        "    grade g = σ / max(|value|, scale of the kind), good ≤ 10 % < fair ≤ 30 % < poor",
        f"    {table.interval_text()}",
        "  The 5 least certain (largest g):",
        f"    {'base parameter':<40s} {'value':>10s} {'σ':>9s} {'unit':<6s} {'interval':<22s} "
        f"{'g':>6s}  grade",
    ]
    for r in table.ranked()[:5]:
        name = r.name if len(r.name) <= 40 else r.name[:39] + "…"
        interval = f"[{_num(r.ci_low, '.4g')}, {_num(r.ci_high, '.4g')}]"
        lines.append(
            f"    {name:<40s} {_num(r.value, '.4g'):>10s} {_num(r.sigma, '.3g'):>9s} "
            f"{r.unit:<6s} {interval:<22s} {_num(r.grade.score_pct, '.3g') + '%':>6s}  "
            f"{r.grade.label}"
        )
    return lines


def _improvement_text(pct: Any) -> str:
    """``"93.2 % lower RMSE than nominal"`` / ``"2.4 % higher RMSE than nominal (worse)"``."""
    try:
        f = float(pct)
    except (TypeError, ValueError):
        return "unavailable"
    if not math.isfinite(f):
        return "unavailable"
    if f < 0:
        return f"worse by {-f:.1f} % (higher RMSE than nominal)"
    return f"{f:.1f} % (lower RMSE than nominal)"


def _validation_lines(val: Any, unit: str) -> list[str]:
    """Held-out validation summary; a fallback to the training data is flagged."""
    if val is None:
        return [
            "  Validation: no separate validation data provided.",
            "    Set validation_data_file in the identification config to enable held-out "
            "FK/torque validation.",
        ]
    lines: list[str] = []
    if val.get("validation_source") == "identification_data_fallback":
        lines.append(
            "  ⚠ WARNING: no separate validation data provided — falling back to "
            "identification data. These are NOT an independent generalization test."
        )
        lines.append(f"  Validation (identification set, n={val.get('n_val_samples')})")
    else:
        lines.append(f"  Validation (separate set, n={val.get('n_val_samples')})")
    lines.append(
        f"    RMSE nominal:    {_num(val.get('rmse_nominal'), '.4f')} {unit}    "
        f"RMSE identified: {_num(val.get('rmse_identified'), '.4f')} {unit}"
    )
    lines.append(
        f"    Improvement:     {_improvement_text(val.get('improvement_pct'))}    "
        "Correlation (per-joint normalised): "
        f"{_num(val.get('correlation_normalised'), '.4f')}"
    )
    for name, m in (val.get("per_joint") or {}).items():
        flag = "" if m.get("predictive", True) else "  <- not better than a constant"
        u = m.get("unit", "")
        lines.append(
            f"    {str(name):24s} RMSE {_num(m.get('rmse_identified'), '.4g')} {u}  "
            f"std {_num(m.get('std_measured'), '.4g')} {u}  "
            f"R² {_num(m.get('r2'), '.3f')}{flag}"
        )
    return lines


def format_quality_report(ident: Any) -> str:
    """The identification quality report of a solved ``BaseIdentification``.

    Missing or non-numeric values (e.g. the RMSE of a rejected physical fit)
    are shown as ``unavailable``, never raised.

    Returns:
        Multi-line text (empty when the object has no result).
    """
    result = ident.result
    if result is None:
        return ""
    sel = getattr(ident, "selected", None)
    per_joint = ident._compute_per_joint_stats()
    units = joint_units(ident, (per_joint or {}).get("joint_names", []))
    lines: list[str] = ["", _RULE, "  IDENTIFICATION QUALITY REPORT", _RULE]
    lines += _summary_lines(ident, result, sel)
    lines.append(_THIN)
    lines += _per_joint_lines(
        per_joint, result.get("selected"), sel is not None, units, edge_effect(ident)
    )
    lines.append(_THIN)
    lines += _uncertainty_lines(base_parameter_table(ident))
    lines.append(_THIN)
    lines += _validation_lines(result.get("validation_metrics"), effort_unit_text(ident))
    for key, label in (
        ("physical consistency", "Physical consistency"),
        ("reconstruction", "Full-parameter reconstruction"),
    ):
        info = result.get(key)
        if info is not None:
            lines += [_THIN, f"  {label}: {info.get('status', 'unknown')}"]
    trace = trace_lines(task_trace(ident))
    if trace:
        lines += [_THIN, *(f"  {line}" for line in trace)]
    lines.append(_RULE)
    return "\n".join(lines)


def basic_identification_plot(ident: Any, output_dir: str = "results") -> str | None:
    """Two-panel figure: stacked measured vs identified effort, and the base parameters.

    Saved as ``<output_dir>/identification_basic.png`` with a non-interactive
    matplotlib backend, shown otherwise.

    Returns:
        The PNG path when saved, else None.
    """
    import matplotlib

    interactive = matplotlib.get_backend().lower() not in (
        "agg",
        "pdf",
        "svg",
        "ps",
        "cairo",
        "template",
    )
    import matplotlib.pyplot as plt

    tau_measured = np.asarray(ident.result.get("torque processed", []))
    tau_identified = np.asarray(ident.result.get("torque estimated", []))
    values = np.asarray(ident.result.get("base parameters values", []))
    if tau_measured.size == 0 or tau_identified.size == 0:
        logger.warning("No torque data available for plotting")
        return None
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 8))
    ax1.plot(tau_measured, label="Measured", alpha=0.7)
    ax1.plot(tau_identified, label="Identified", alpha=0.7)
    ax1.set_xlabel("Sample (stacked joints)")
    ax1.set_ylabel("Effort [N·m or N]")
    title = f"{ident.__class__.__name__} effort comparison"
    ax1.set_title(title + ("" if ident.selected is None else " (base fit)"))
    ax1.legend()
    ax1.grid(True, alpha=0.3)
    if values.size:
        ax2.bar(range(values.size), values, alpha=0.7, label="Base parameters")
        ax2.set_xlabel("Parameter index")
        ax2.set_ylabel("Value [SI unit of each parameter]")
        ax2.set_title("Identified base parameters")
        ax2.legend()
        ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    if interactive:
        plt.show()
        return None
    make_folder(output_dir)
    path = os.path.join(output_dir, "identification_basic.png")
    try:
        atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=100), binary=True)
    finally:
        plt.close(fig)
    return path
