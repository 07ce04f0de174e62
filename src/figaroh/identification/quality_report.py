"""Terminal quality report and basic plot of a solved identification.

:func:`format_quality_report` builds the text that
:meth:`BaseIdentification.print_quality_report` prints: stages, condition
number, effort RMSE and correlation, Coulomb-friction rows at rest, per-joint
residuals, the five least certain base parameters, held-out validation and
optional physical-consistency status. Efforts are in N·m (revolute) or N (prismatic).
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any

import numpy as np

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


def _selected_rmse_line(selected_info: dict) -> str:
    """RMSE line of the selected estimate; a rejected one has no RMSE and says why."""
    rmse = selected_info.get("effort_rmse_fit")
    if selected_info.get("status") == "accepted":
        return f"  RMSE ({selected_info.get('stage')} estimate): {_num(rmse, '.4f')}"
    label = f"rejected {selected_info.get('requested', '?')}"
    if rmse is None:
        reason = selected_info.get("reason") or "no estimate"
        return f"  RMSE ({label} estimate): unavailable (rejected: {reason})"
    return f"  RMSE ({label} estimate): {_num(rmse, '.4f')}"


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
    rmse_label = "RMSE:" if sel is None else "RMSE (base fit):"
    lines.append(
        f"  {rmse_label:<13s} {_num(result.get('rmse norm (N/m)'), '.4f')}    "
        f"Correlation: {_num(ident.correlation, '.4f')}"
    )
    at_rest = result.get("coulomb_at_rest")
    if isinstance(at_rest, dict) and at_rest.get("message"):
        lines.append(f"  Coulomb friction: {at_rest['message']}")
    selected_info = result.get("selected")
    if isinstance(selected_info, dict) and "effort_rmse_fit" in selected_info:
        lines.append(_selected_rmse_line(selected_info))
    return lines


def _per_joint_lines(per_joint: dict | None, selected_info: Any, has_selection: bool) -> list[str]:
    """Per-joint residual table of the base fit (and the selected estimate's RMSE)."""
    if per_joint is None:
        return ["  Per-joint residuals: unavailable"]
    heading = "Per-Joint Torque Residuals (training set)"
    if has_selection:
        heading = "Base fit residuals, per joint (training set)"
    lines = [
        f"  {heading}",
        f"  {'Joint':<22s} {'Mean':>10s} {'Std':>10s} {'RMSE':>10s} {'Max':>10s}",
        f"  {'-' * 22} {'-' * 10} {'-' * 10} {'-' * 10} {'-' * 10}",
    ]
    for i, name in enumerate(per_joint["joint_names"]):
        cells = " ".join(
            f"{_num(per_joint[key][i], '.4f'):>10s}" for key in ("mean", "std", "rmse", "max_abs")
        )
        lines.append(f"  {str(name):<22s} {cells}")
    selected_info = selected_info if isinstance(selected_info, dict) else {}
    per_joint_sel = selected_info.get("effort_rmse_fit_per_joint")
    if per_joint_sel:
        lines.append(f"  Selected estimate ({selected_info.get('stage')}) RMSE per joint")
        for name, value in per_joint_sel.items():
            lines.append(f"  {str(name):<22s} {_num(value, '.4f'):>10s}")
    return lines


def _uncertainty_lines(std_relative: Any, base_names: list) -> list[str]:
    """The five base parameters with the largest relative standard deviation [%]."""
    if std_relative is None or len(std_relative) != len(base_names):
        return ["  Base-parameter uncertainty: unavailable"]
    order = sorted(range(len(base_names)), key=lambda i: -abs(std_relative[i]))
    lines = ["  Base-Parameter Uncertainty (top 5 by relative std-dev)"]
    for i in order[:5]:
        name = str(base_names[i])
        name = name if len(name) <= 50 else name[:49] + "…"
        lines.append(f"    {name:<50s} {_num(std_relative[i], '8.1f')}%")
    return lines


def _validation_lines(val: Any) -> list[str]:
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
        f"    RMSE nominal:    {_num(val.get('rmse_nominal'), '.4f')}    "
        f"RMSE identified: {_num(val.get('rmse_identified'), '.4f')}"
    )
    lines.append(
        f"    Improvement:     {_num(val.get('improvement_pct'), '.1f')}%    "
        "Correlation (per-joint normalised): "
        f"{_num(val.get('correlation_normalised'), '.4f')}"
    )
    for name, m in (val.get("per_joint") or {}).items():
        flag = "" if m.get("predictive", True) else "  <- not better than a constant"
        lines.append(
            f"    {str(name):24s} RMSE {_num(m.get('rmse_identified'), '.4g')} "
            f"{m.get('unit', '')}  std {_num(m.get('std_measured'), '.4g')}  "
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
    lines: list[str] = ["", _RULE, "  IDENTIFICATION QUALITY REPORT", _RULE]
    lines += _summary_lines(ident, result, sel)
    lines.append(_THIN)
    lines += _per_joint_lines(
        ident._compute_per_joint_stats(), result.get("selected"), sel is not None
    )
    lines.append(_THIN)
    lines += _uncertainty_lines(
        getattr(ident, "std_relative", None), result.get("base parameters names", [])
    )
    lines.append(_THIN)
    lines += _validation_lines(result.get("validation_metrics"))
    for key, label in (
        ("physical consistency", "Physical consistency"),
        ("reconstruction", "Full-parameter reconstruction"),
    ):
        info = result.get(key)
        if info is not None:
            lines += [_THIN, f"  {label}: {info.get('status', 'unknown')}"]
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
        ax2.set_ylabel("Value")
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
