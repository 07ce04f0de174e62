"""Report charts: interactive line charts (data in an escaped attribute) and histograms.

* :func:`_multi_panel_section` — small multiples, one interactive chart per
  joint over time;
* :func:`_histogram_svg` — a static inline-SVG histogram (hover a bar for its
  range and count).

Everything is inline SVG and plain JavaScript: no network request.
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh._run.html import _esc
from figaroh._run.json_io import verification_json_data
from figaroh._run.resources import read_asset

__all__ = [
    "_SERIES_CHART_SCRIPT",
    "_histogram_svg",
    "_multi_panel_section",
]

#: Maximum number of points per chart series embedded in a report.
_MAX_SERIES_POINTS = 3000

#: Interactive SVG line chart (``window.FigarohChart``): wheel zoom around the
#: cursor, drag-to-zoom, double-click reset, hover read-out of every series.
#: Plain JavaScript, no dependency and no network request; shared by the
#: report pages and the compare page.
_CHART_ENGINE_SCRIPT = read_asset("charts.js")
#: Initialisation of every ``.multi-panel[data-multi]`` element (small multiples).
_MULTI_SCRIPT = read_asset("small_multiples.js")
#: Engine + small-multiples initialisation, inlined in every report page.
_SERIES_CHART_SCRIPT = _CHART_ENGINE_SCRIPT + _MULTI_SCRIPT


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


def _json_text(data: Any) -> str:
    """Strict JSON text (NaN/inf → null), compact; a template escapes it into an attribute."""
    return json.dumps(verification_json_data(data), allow_nan=False, separators=(",", ":"))


def _json_for_attribute(data: Any) -> str:
    """Strict JSON text, escaped for an HTML attribute value."""
    return _esc(_json_text(data))


#: Legend swatch class and label of each series role of the small multiples.
_ROLE_SWATCH = {
    "measured": "measured-grey",
    "identified": "identified",
    "nominal": "nominal-blue",
    "residual": "residual",
    "calibrated": "calibrated",
    "reference": "reference",
    "edge": "edge",
}


def _multi_panel_section(
    panel_id: str,
    time: Sequence[float],
    x_label: str,
    joints: Sequence[Mapping[str, Any]],
    hint: str = "",
    histograms: bool = False,
    toggles: bool = False,
) -> str:
    """Small multiples: one interactive line chart per joint on a shared time axis.

    Args:
        panel_id: HTML id of the panel (escaped).
        time: Shared horizontal axis (time [s], or sample index), length n.
        x_label: Name of the horizontal axis in the hover read-out (``"t [s]"``).
        joints: One ``{"name", "unit", "series": [{"label", "role", "y"}]}``
            per joint (or per marker axis); ``role`` is ``measured``,
            ``identified``, ``nominal``, ``residual``, ``calibrated``,
            ``reference`` or ``edge`` (colour and dash); every ``y`` has
            length n (NaN: no point); a series with ``"hidden": True`` starts
            hidden; an optional ``"histogram"`` list replaces the values of
            the joint's histogram.
        hint: Sentence under the legend (escaped).
        histograms: Add a histogram of the first series of each joint (or of
            its ``"histogram"`` values) under its chart (residual
            distributions), with ``min(30, max(5, 2·⌈√n⌉))`` bins.
        toggles: Make each legend entry a checkbox that shows or hides the
            series of its role in every chart of the panel.

    Returns:
        HTML; the data travels as escaped JSON in a ``data-multi`` attribute
        and is drawn by ``_SERIES_CHART_SCRIPT``.
    """
    if not joints or not len(time):
        return '<p class="muted">No series available for this run.</p>'
    series_dicts = [{s["label"]: s["y"] for s in j["series"]} for j in joints]
    t_out, sub = _downsample_series(list(time), series_dicts, _MAX_MULTI_POINTS)
    payload = {
        "time": [float(t) for t in t_out],
        "xLabel": x_label,
        "joints": [_joint_payload(j, sub[k]) for k, j in enumerate(joints)],
    }
    text = hint
    if len(t_out) < len(time):
        text += f" {len(time)} samples subsampled to {len(t_out)} for display."
    text += " Hover to read values, scroll or drag to zoom, double-click to reset."
    cells = "".join(_joint_cell(k, j, histograms) for k, j in enumerate(joints))
    return (
        f'<div class="multi-panel" id="{_esc(panel_id)}" '
        f'data-multi="{_json_for_attribute(payload)}">'
        f'<div class="series-legend">{_legend(joints, toggles)}</div>'
        f'<p class="series-hint">{_esc(text.strip())}</p>'
        f'<div class="multi-grid">{cells}</div></div>'
    )


def _joint_payload(joint: Mapping[str, Any], subsampled: Mapping[str, List[Any]]) -> dict:
    """Chart data of one joint: its series with their subsampled values."""
    return {
        "name": str(joint["name"]),
        "unit": str(joint.get("unit", "")),
        "series": [
            {
                "label": s["label"],
                "role": s["role"],
                "y": subsampled[s["label"]],
                "hidden": bool(s.get("hidden", False)),
            }
            for s in joint["series"]
        ],
    }


def _joint_cell(k: int, joint: Mapping[str, Any], histogram: bool) -> str:
    """Title, chart placeholder and (optionally) the histogram of the first series."""
    unit = f" [{joint['unit']}]" if joint.get("unit") else ""
    cell = (
        f'<div class="joint-cell" data-joint-name="{_esc(joint["name"])}">'
        f"<h3>{_esc(joint['name'])}{_esc(unit)}</h3>"
        f'<svg class="multi-chart" data-joint="{k}" viewBox="0 0 480 220" role="img"></svg>'
    )
    if histogram:
        y = joint.get("histogram", joint["series"][0]["y"])
        bins = min(30, max(5, 2 * math.ceil(math.sqrt(max(len(y), 1)))))
        cell += _histogram_svg(y, str(joint.get("unit", "")), bins)
    return cell + "</div>"


def _legend(joints: Sequence[Mapping[str, Any]], toggles: bool) -> str:
    """One legend entry per series role, in order of first appearance."""
    roles: Dict[str, Tuple[str, bool]] = {}
    for j in joints:
        for s in j["series"]:
            roles.setdefault(s["role"], (s["label"], bool(s.get("hidden", False))))
    return "".join(_legend_item(r, label, hidden, toggles) for r, (label, hidden) in roles.items())


def _legend_item(role: str, label: str, hidden: bool, toggle: bool) -> str:
    """Legend entry of a series role: a swatch and the label, or a checkbox (``toggle``)."""
    swatch = f'<span class="swatch s-{_esc(_ROLE_SWATCH.get(role, role))}"></span>{_esc(label)}'
    if not toggle:
        return f'<span class="legend-item">{swatch}</span>'
    checked = "" if hidden else " checked"
    return (
        f'<label class="legend-item legend-toggle"><input type="checkbox" '
        f'data-role="{_esc(role)}"{checked}>{swatch}</label>'
    )


#: Maximum number of points per series of one small-multiple chart.
_MAX_MULTI_POINTS = 1500
#: Histogram drawing box [px] (viewBox) and margins.
_HIST_W, _HIST_H, _HIST_L, _HIST_B = 480, 150, 48, 26


def _svg_text(x: float, y: float, text: str, anchor: str = "start") -> str:
    """An SVG ``<text>`` label (10 px, grey; ``text`` escaped)."""
    return (
        f'<text x="{x:.0f}" y="{y:.0f}" font-size="10" fill="#5f6368" '
        f'text-anchor="{anchor}">{_esc(text)}</text>'
    )


def _histogram_svg(values: Sequence[Any], unit: str = "", bins: int = 30) -> str:
    """Static inline-SVG histogram of the finite ``values``.

    ``bins`` equal-width bins over ``[min, max]``; each bar carries a
    ``<title>`` with its range and count (shown on hover). The axis labels
    give the range, the largest count, the mean μ and the std-dev σ
    (population) in ``unit``.

    Args:
        values: Samples (e.g. residuals [N·m]); non-finite ones are ignored.
        unit: Unit of the values (escaped).
        bins: Number of bins (≥ 1).

    Returns:
        ``<svg class="histogram" data-count=...>`` markup (an explanatory
        paragraph when there is no finite value).
    """
    v = np.asarray(list(values), dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return '<p class="muted">No finite samples for a histogram.</p>'
    lo, hi = float(v.min()), float(v.max())
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    counts, edges = np.histogram(v, bins=max(1, int(bins)), range=(lo, hi))
    peak = max(int(counts.max()), 1)
    plot_w, plot_h = _HIST_W - _HIST_L - 8, _HIST_H - _HIST_B - 8
    bar_w = plot_w / len(counts)
    u = f" {unit}" if unit else ""
    bars = []
    for i, c in enumerate(counts):
        h = plot_h * int(c) / peak
        x = _HIST_L + i * bar_w
        title = f"[{edges[i]:.4g}, {edges[i + 1]:.4g}){u}: {int(c)} samples"
        bars.append(
            f'<rect class="bin" x="{x:.1f}" y="{8 + plot_h - h:.1f}" '
            f'width="{max(bar_w - 1, 0.5):.1f}" height="{h:.1f}">'
            f"<title>{_esc(title)}</title></rect>"
        )
    base = 8 + plot_h
    labels = (
        _svg_text(_HIST_L, base + 16, f"{lo:.4g}")
        + _svg_text(_HIST_W - 8, base + 16, f"{hi:.4g}{u}", "end")
        + _svg_text(_HIST_W / 2, base + 16, f"μ = {v.mean():.3g}, σ = {v.std():.3g}{u}", "middle")
        + _svg_text(_HIST_L - 4, 16, str(peak), "end")
        + _svg_text(_HIST_L - 4, base, "0", "end")
    )
    axes = (
        f'<line x1="{_HIST_L}" y1="{base}" x2="{_HIST_W - 8}" y2="{base}" stroke="#9aa0a6"/>'
        f'<line x1="{_HIST_L}" y1="8" x2="{_HIST_L}" y2="{base}" stroke="#9aa0a6"/>'
    )
    return (
        f'<svg class="histogram" viewBox="0 0 {_HIST_W} {_HIST_H}" role="img" '
        f'data-count="{int(counts.sum())}" data-bins="{len(counts)}">'
        f"<title>{_esc(f'histogram of {v.size} samples')}</title>"
        f"{axes}{''.join(bars)}{labels}</svg>"
    )
