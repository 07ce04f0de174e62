"""Measured / identified / nominal efforts over time as small multiples (report blocks).

Efforts are in N·m (revolute joints) or N (prismatic joints); time in s.
Plain data in, HTML out: the stacked training-fit efforts ``(n_joints·L,)``
(joint blocks one after the other), the validation series per joint and the
recorded timestamps.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh._run.charts import _multi_panel_section

__all__ = ["fit_effort_panels", "time_axis", "validation_effort_panel"]

_NO_FIT = '<p class="muted">Training-fit efforts are unavailable for this run.</p>'
_NO_VALIDATION = '<p class="muted">No validation series available for this run.</p>'
#: Validation series keys, legend label and role (colour / dash) in the charts.
_VALIDATION_ROLES = (
    ("tau_measured_per_joint", "measured", "measured"),
    ("tau_nominal_per_joint", "nominal (CAD) prediction", "nominal"),
    ("tau_identified_per_joint", "identified prediction", "identified"),
)


def time_axis(timestamps: Any, n: int) -> Tuple[List[float], str, str]:
    """``(axis, x_label, hint)`` for ``n`` samples from the recorded timestamps [s].

    Timestamps of the same length are used as they are; ``m ≠ n`` recorded
    timestamps (a decimated fit) are interpolated linearly at ``n`` evenly
    spaced sample positions ``k (m − 1)/(n − 1)``; without (finite)
    timestamps the axis is the sample index.
    """
    t = None if timestamps is None else np.ravel(np.asarray(timestamps, dtype=float))
    if t is None or t.size < 2 or n < 2 or not np.all(np.isfinite(t)):
        return list(range(n)), "sample", "Sample index on the horizontal axis (no timestamps)."
    if t.size == n:
        return t.tolist(), "t [s]", "Time [s] on the horizontal axis."
    axis = np.interp(np.linspace(0.0, t.size - 1.0, n), np.arange(t.size), t)
    return (
        axis.tolist(),
        "t [s]",
        f"Time [s] on the horizontal axis ({t.size} recorded samples, {n} fitted: "
        "times interpolated).",
    )


def _joint(name: str, unit: str, series: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"name": name, "unit": unit, "series": series}


def fit_effort_panels(
    measured: Any,
    identified: Any,
    names: Sequence[str],
    units: Mapping[str, str],
    timestamps: Any,
    edge_samples: int = 0,
) -> Tuple[str, str]:
    """Training fit: measured vs identified per joint, and residuals with histograms.

    Args:
        measured: Stacked measured efforts ``(n_joints·L,)`` [N·m or N].
        identified: Stacked identified efforts, same shape.
        names: Fitted joints (block order).
        units: Effort unit per joint.
        timestamps: Recorded sample times [s] (or None).
        edge_samples: ``E > 0`` marks the first and last ``E`` residuals of
            every joint (a series of their own, role ``edge``) and leaves them
            out of the histograms: samples the kinematic filter distorts.

    Returns:
        ``(fit_html, residual_html)``; explanatory paragraphs when the shapes
        do not split into one block per joint.
    """
    m = np.ravel(np.asarray(measured if measured is not None else [], dtype=float))
    e = np.ravel(np.asarray(identified if identified is not None else [], dtype=float))
    if not names or m.size == 0 or m.size % len(names) or m.shape != e.shape:
        return _NO_FIT, _NO_FIT
    m_rows, e_rows = m.reshape(len(names), -1), e.reshape(len(names), -1)
    axis, x_label, hint = time_axis(timestamps, m_rows.shape[1])
    n = m_rows.shape[1]
    edge = int(edge_samples) if 0 < int(edge_samples) and 4 * int(edge_samples) < n else 0
    edge_mask = np.zeros(n, dtype=bool)
    if edge:
        edge_mask[:edge] = edge_mask[-edge:] = True
    fit, resid = [], []
    for k, name in enumerate(names):
        unit = units.get(name, "")
        fit.append(
            _joint(
                name,
                unit,
                [
                    {"label": "measured", "role": "measured", "y": m_rows[k].tolist()},
                    {"label": "identified", "role": "identified", "y": e_rows[k].tolist()},
                ],
            )
        )
        r = m_rows[k] - e_rows[k]
        residual = {"label": "residual τ_measured − τ_identified", "role": "residual"}
        cell = _joint(name, unit, [{**residual, "y": r.tolist()}])
        if edge:
            marked = np.where(edge_mask, r, np.nan)
            cell["series"].append(
                {"label": "edge samples (filter edge effect)", "role": "edge", "y": marked.tolist()}
            )
            cell["histogram"] = r[~edge_mask].tolist()
        resid.append(cell)
    residual_hint = hint + " Histogram under each chart."
    if edge:
        residual_hint += (
            f" The first and last {edge} samples (edge samples, highlighted) are distorted by "
            "the kinematic filter and left out of the histograms."
        )
    return (
        _multi_panel_section("fit-panel", axis, x_label, fit, hint),
        _multi_panel_section("residual-panel", axis, x_label, resid, residual_hint, True),
    )


def validation_effort_panel(
    validation: Mapping[str, Any] | None, units: Mapping[str, str], timestamps: Any
) -> str:
    """Validation trajectory per joint: measured, nominal (CAD) and identified efforts.

    Args:
        validation: ``result["validation_metrics"]`` (``joint_names`` and the
            ``tau_*_per_joint`` series) or None.
        units: Effort unit per joint.
        timestamps: Sample times of the validation trajectory [s] (or None).

    Returns:
        HTML of the small multiples (a paragraph when there is no series).
    """
    if not isinstance(validation, Mapping):
        return _NO_VALIDATION
    per = {key: validation.get(key) or {} for key, _, _ in _VALIDATION_ROLES}
    names = [str(n) for n in (validation.get("joint_names") or []) if all(n in per[k] for k in per)]
    if not names:
        return _NO_VALIDATION
    axis, x_label, hint = time_axis(
        timestamps, len(np.ravel(per["tau_identified_per_joint"][names[0]]))
    )
    joints = [
        _joint(
            name,
            units.get(name, ""),
            [
                {"label": label, "role": role, "y": np.ravel(per[key][name]).tolist()}
                for key, label, role in _VALIDATION_ROLES
            ],
        )
        for name in names
    ]
    return _multi_panel_section("validation-panel", axis, x_label, joints, hint)
