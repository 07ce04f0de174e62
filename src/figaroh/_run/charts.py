"""Validation series → interactive HTML chart panel (data in an escaped attribute)."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh._run.html import _esc
from figaroh._run.json_io import verification_json_data
from figaroh._run.resources import read_asset

__all__ = ["_SERIES_CHART_SCRIPT", "_series_panel_section"]

#: Maximum number of points per chart series embedded in a report.
_MAX_SERIES_POINTS = 3000

#: Interactive SVG line chart (``window.FigarohChart``): wheel zoom around the
#: cursor, drag-to-zoom, double-click reset, hover read-out of every series.
#: Plain JavaScript, no dependency and no network request; shared by the
#: report pages and the compare page.
_CHART_ENGINE_SCRIPT = read_asset("charts.js")
#: Initialisation of every ``.series-panel[data-series]`` element.
_PANEL_SCRIPT = read_asset("series_panel.js")
#: Engine + panel initialisation, inlined in every report page.
_SERIES_CHART_SCRIPT = _CHART_ENGINE_SCRIPT + _PANEL_SCRIPT


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


def _json_for_attribute(data: Any) -> str:
    """Strict JSON text, escaped for an HTML attribute value."""
    return _esc(json.dumps(verification_json_data(data), allow_nan=False, separators=(",", ":")))


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
