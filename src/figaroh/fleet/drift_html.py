"""Self-contained HTML drift report of a fleet (no network request, every text escaped).

The page, top to bottom:

* ``#drift-summary`` — threshold ``k``, counts, and the rule in one paragraph;
  attributes ``data-k``, ``data-flagged-robots`` (JSON list) and
  ``data-parameters`` (JSON list);
* ``#flagged`` — the flagged robots first: ``ul#flagged-robots[data-count]``
  with one ``li.flagged-robot[data-robot]`` per flagged robot (an empty list
  and a "no robot flagged" line when none is);
* ``#flags`` — ``table#drift-flags``, one ``tr.flag-row`` per flagged
  comparison with ``data-robot``, ``data-run``, ``data-param``,
  ``data-against`` (``history``/``fleet``) and ``data-z``; columns robot,
  run, session (and its time), parameter [unit], against, value, reference,
  difference, scale σ, z, k (values in the parameter's unit);
* ``#robots`` — ``table#drift-robots``, one ``tr.robot-row[data-robot]
  [data-flagged="true"|"false"]`` per robot of the report (flagged or not);
* ``#parameters`` — one ``div.drift-param[data-param][data-flagged]
  [data-flagged-robots]`` per parameter, holding one
  ``svg.drift-chart[data-param]``: value ± σ over session time per robot
  (one line per robot, flagged runs ringed in red as
  ``circle.drift-point.flagged[data-robot][data-run]``), the fleet median
  (dashed) and its ``±1.4826·MAD`` band (grey). With more than
  :data:`MAX_ROBOT_SERIES` robots only the flagged robots get a line (the
  band shows the rest). The chart is drawn by the run reports' chart engine
  (``window.FigarohChart``: hover read-out, wheel / drag zoom, double-click
  reset); once drawn the svg carries ``data-drift-ready="true"``.

A browser test reads the flagged robots with
``[...document.querySelectorAll('#drift-robots tr[data-flagged="true"]')]
.map(r => r.dataset.robot)``.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from figaroh._run.charts import _json_for_attribute
from figaroh._run.html import _esc, _fmt
from figaroh._run.page import _report_document, _report_section
from figaroh.fleet.drift import (
    AGAINST_FLEET,
    MAD_TO_SIGMA,
    DriftFlag,
    DriftReport,
    ParameterDrift,
    _epoch_seconds,
)
from figaroh.utils.fileio import PathLike, atomic_write_text, make_folder

__all__ = ["MAX_ROBOT_SERIES", "drift_html", "parameter_unit", "write_drift_html"]

#: Above this many robots a chart draws only the flagged robots (plus the fleet band).
MAX_ROBOT_SERIES = 12
#: Line colours of the robots (cycled).
_PALETTE = (
    "#1a73e8",
    "#e8710a",
    "#188038",
    "#9334e6",
    "#d01884",
    "#12b5cb",
    "#795548",
    "#f9ab00",
    "#3949ab",
    "#7cb342",
    "#e52592",
    "#00897b",
)
#: Unit of each parameter-name prefix (revolute joints for friction and offset).
_UNITS = (
    (r"^(m)(\d|_|$)", "kg"),
    (r"^(mx|my|mz)", "kg·m"),
    (r"^(Ixx|Ixy|Ixz|Iyy|Iyz|Izz|Ia)", "kg·m²"),
    (r"^fv", "N·m·s/rad"),
    (r"^(fs|off)(\d|_|$)", "N·m"),
    (r"^(d_p[xyz]|base_p[xyz]|pEE[xyz]|offsetP[XYZ])", "m"),
    (r"^(d_phi[xyz]|base_phi[xyz]|phiEE[xyz]|offsetR[XYZ])", "rad"),
)

_EXTRA_STYLE = """
.page { max-width:1200px; }
.drift-param { margin:12px 0; }
.drift-param h3 { font-size:15px; margin:0 0 4px; }
.drift-param[data-flagged="true"] h3::after { content:" — drift flagged"; color:var(--poor);
  font-weight:500; }
.drift-chart { width:100%; height:auto; background:#fff; cursor:crosshair; user-select:none; }
#drift-flags { font-size:12px; }
#drift-flags td, #drift-flags th { white-space:nowrap; padding:3px 6px; }
tr.flag-row td.z { font-weight:600; color:var(--poor); }
tr.robot-row[data-flagged="true"] td:first-child { color:var(--poor); font-weight:600; }
ul#flagged-robots { margin:0; padding-left:20px; }
li.flagged-robot { margin:2px 0; }
li.flagged-robot b { color:var(--poor); }
.swatch.s-band { background:#dadce0; height:10px; }
.swatch.s-median { background:#5f6368; }
.swatch.s-flag { background:#fff; border:2px solid var(--poor); border-radius:50%; width:10px;
  height:10px; }
"""

#: Draws every ``.drift-param[data-drift]`` with ``window.FigarohChart`` and
#: overlays the fleet band, ±σ bars and the run markers (flagged runs ringed)
#: after each render (zoom included).
_DRIFT_SCRIPT = r"""
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  function node(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function band(chart, data, g) {
    var b = data.band, X = chart.X, Y = chart.Y, up = [], down = [];
    for (var i = 0; i < b.x.length; i++) {
      if (!isNum(b.lo[i]) || !isNum(b.hi[i])) { continue; }
      up.push(X(b.x[i]).toFixed(1) + "," + Y(b.hi[i]).toFixed(1));
      down.unshift(X(b.x[i]).toFixed(1) + "," + Y(b.lo[i]).toFixed(1));
    }
    if (up.length === 1) {
      var x = Number(up[0].split(",")[0]), y1 = Number(up[0].split(",")[1]);
      var y0 = Number(down[0].split(",")[1]);
      node("rect", {x: x - 5, y: y1, width: 10, height: Math.max(y0 - y1, 1),
        "class": "drift-band", fill: "#9aa0a6", opacity: 0.25}, g);
    } else if (up.length > 1) {
      node("polygon", {points: up.concat(down).join(" "), "class": "drift-band",
        fill: "#9aa0a6", opacity: 0.22}, g);
    }
  }
  function marks(chart, data, g) {
    var X = chart.X, Y = chart.Y, fmt = window.FigarohChart.format;
    var unit = data.unit ? " " + data.unit : "";
    data.robots.forEach(function (rb) {
      if (!rb.shown) { return; }
      rb.x.forEach(function (x, i) {
        var y = rb.y[i], s = rb.sigma[i], flagged = !!rb.flags[i];
        if (isNum(s) && s > 0) {
          node("line", {x1: X(x), x2: X(x), y1: Y(y - s), y2: Y(y + s), stroke: rb.color,
            "stroke-width": 1.2, "class": "drift-sigma"}, g);
        }
        var c = node("circle", {cx: X(x), cy: Y(y), r: flagged ? 5.5 : 2.8,
          fill: flagged ? "#ffffff" : rb.color, stroke: flagged ? "#c5221f" : rb.color,
          "stroke-width": flagged ? 2.5 : 1,
          "class": flagged ? "drift-point flagged" : "drift-point",
          "data-robot": rb.id, "data-run": rb.runs[i], "data-flagged": String(flagged)}, g);
        var t = node("title", {}, c);
        t.textContent = rb.id + " \u00b7 " + rb.times[i] + " \u00b7 " + fmt(y) +
          (isNum(s) ? " \u00b1 " + fmt(s) : "") + unit + (flagged ? " \u00b7 drift flagged" : "");
      });
    });
  }
  function overlay(chart, data) {
    var svg = chart.svg, lines = svg.querySelector("g.chart-lines");
    if (!lines || !chart.X || !chart.Y) { return; }
    var clip = "url(#" + chart.clipId + ")";
    var under = node("g", {"class": "drift-underlay", "clip-path": clip});
    svg.insertBefore(under, lines);
    band(chart, data, under);
    var over = node("g", {"class": "drift-marks", "clip-path": clip});
    svg.insertBefore(over, lines.nextSibling);
    marks(chart, data, over);
    svg.setAttribute("data-drift-ready", "true");
  }
  function init(panel) {
    var data;
    try { data = JSON.parse(panel.getAttribute("data-drift")); } catch (e) { return; }
    var svg = panel.querySelector("svg.drift-chart");
    if (!svg || !data || !window.FigarohChart) { return; }
    var chart = new window.FigarohChart(svg, {xLabel: data.xLabel, width: 720, height: 280});
    var render = window.FigarohChart.prototype.render;
    chart.render = function () { render.call(chart); overlay(chart, data); };
    var b = data.band, series = [
      {label: "fleet median", x: b.x, y: b.median, color: "#5f6368", dash: "6 3", width: 1.4},
      {label: "fleet median + spread", x: b.x, y: b.hi, color: "#bdc1c6", dash: "2 3", width: 1},
      {label: "fleet median \u2212 spread", x: b.x, y: b.lo, color: "#bdc1c6", dash: "2 3",
       width: 1}
    ];
    data.robots.forEach(function (rb) {
      if (rb.shown) {
        series.push({label: rb.id, x: rb.x, y: rb.y, color: rb.color,
                     width: rb.flagged ? 2.2 : 1.2});
      }
    });
    chart.setData([], series, data.unit || "", false);
    svg.figarohChart = chart;
  }
  function start() {
    Array.prototype.forEach.call(document.querySelectorAll(".drift-param[data-drift]"), init);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
"""


def parameter_unit(name: str) -> str:
    """SI unit of a figaroh parameter from its name prefix (``""`` when unknown).

    ``m*`` [kg], ``mx/my/mz*`` [kg·m], ``Ixx…Izz*``, ``Ia*`` [kg·m²],
    ``fv*`` [N·m·s/rad], ``fs*``, ``off*`` [N·m] (revolute joints; [N·s/m]
    and [N] on a prismatic joint), geometric offsets ``d_px…``, ``base_px…``,
    ``pEEx…``, ``offsetPX…`` [m] and ``d_phix…``, ``base_phix…``,
    ``phiEEx…``, ``offsetRX…`` [rad].
    """
    for pattern, unit in _UNITS:
        if re.match(pattern, str(name)):
            return unit
    return ""


def _days(seconds: float, t0: float) -> float:
    return round((seconds - t0) / 86400.0, 6)


def _t0(report: DriftReport) -> float:
    """Earliest session time of the report [s since 1970-01-01 UTC] (0 when empty)."""
    times = [
        _epoch_seconds(p.session_time, p.run_id)
        for par in report.parameters
        for pts in par.robots.values()
        for p in pts
    ]
    return min(times) if times else 0.0


def _iso_day(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _chart_payload(
    par: ParameterDrift, t0: float, colours: Mapping[str, str], many: bool
) -> dict[str, Any]:
    """Data of one parameter's chart (strict JSON: NaN → null)."""
    flagged_runs = {f.run_id for f in par.flags}
    flagged_robots = set(par.flagged_robots)
    robots = []
    for robot, pts in par.robots.items():
        if many and robot not in flagged_robots:
            continue  # drawn only through the fleet band
        robots.append(
            {
                "id": robot,
                "color": colours[robot],
                "flagged": robot in flagged_robots,
                "shown": True,
                "x": [_days(_epoch_seconds(p.session_time, p.run_id), t0) for p in pts],
                "y": [float(p.value) for p in pts],
                "sigma": [_finite(p.sigma) for p in pts],
                "runs": [str(p.run_id) for p in pts],
                "times": [str(p.session_time) for p in pts],
                "flags": [p.run_id in flagged_runs for p in pts],
            }
        )
    sessions = list(par.fleet_median)
    median = [_finite(par.fleet_median[s]) for s in sessions]
    spread = [_finite(par.fleet_spread[s]) or 0.0 for s in sessions]
    return {
        "name": par.name,
        "unit": parameter_unit(par.name),
        "xLabel": "day",
        "robots": robots,
        "band": {
            "x": [_days(_epoch_seconds(par.session_times[s], s), t0) for s in sessions],
            "sessions": sessions,
            "median": median,
            "lo": [None if m is None else m - d for m, d in zip(median, spread, strict=True)],
            "hi": [None if m is None else m + d for m, d in zip(median, spread, strict=True)],
        },
    }


def _legend(par: ParameterDrift, colours: Mapping[str, str], many: bool) -> str:
    flagged = set(par.flagged_robots)
    shown = [r for r in par.robots if r in flagged or not many]
    items = [
        f'<span class="legend-item"><span class="swatch" style="background:{colours[r]}">'
        f"</span>{_esc(r)}</span>"
        for r in shown
    ]
    items += [
        '<span class="legend-item"><span class="swatch s-median"></span>fleet median</span>',
        '<span class="legend-item"><span class="swatch s-band"></span>'
        f"fleet spread ±{MAD_TO_SIGMA}·MAD</span>",
        '<span class="legend-item"><span class="swatch s-flag"></span>flagged run</span>',
    ]
    return f'<div class="series-legend">{"".join(items)}</div>'


def _parameter_card(par: ParameterDrift, index: int, t0: float, colours: Mapping[str, str]) -> str:
    many = len(par.robots) > MAX_ROBOT_SERIES
    unit = parameter_unit(par.name)
    payload = _chart_payload(par, t0, colours, many)
    hint = f"Days since {_iso_day(t0)} on the horizontal axis; bars are ±σ of each run."
    if many:
        hint += (
            f" {len(par.robots)} robots: only the flagged ones are drawn, "
            "the grey band shows the fleet."
        )
    hint += " Hover to read values, scroll or drag to zoom, double-click to reset."
    flagged = json.dumps(list(par.flagged_robots))
    return (
        f'<div class="card drift-param" id="param-{index}" data-param="{_esc(par.name)}" '
        f'data-flagged="{"true" if par.flags else "false"}" '
        f'data-flagged-robots="{_esc(flagged)}" data-drift="{_json_for_attribute(payload)}">'
        f"<h3>{_esc(par.name)}{_esc(f' [{unit}]' if unit else '')}</h3>"
        f"{_legend(par, colours, many)}"
        f'<svg class="drift-chart" data-param="{_esc(par.name)}" viewBox="0 0 720 280" '
        'role="img"></svg>'
        f'<p class="series-hint">{_esc(hint)}</p></div>'
    )


def _flag_row(f: DriftFlag, k: float) -> str:
    unit = parameter_unit(f.name)
    when = _iso_day(_epoch_seconds(f.session_time, f.run_id))
    cells = (
        _esc(f.robot_id),
        _esc(f.run_id),
        f'{_esc(f.session)}<br><span class="muted">{_esc(when)}</span>',
        _esc(f.name + (f" [{unit}]" if unit else "")),
        _esc("fleet" if f.against == AGAINST_FLEET else "history"),
        _fmt(f.value, ".6g"),
        _fmt(f.reference, ".6g"),
        _fmt(f.difference, "+.4g"),
        _fmt(f.scale, ".4g"),
        _fmt(f.z, "+.2f"),
        _fmt(k, "g"),
    )
    tds = "".join(
        f'<td class="z">{c}</td>' if i == 9 else f"<td>{c}</td>" for i, c in enumerate(cells)
    )
    return (
        f'<tr class="flag-row" data-robot="{_esc(f.robot_id)}" data-run="{_esc(f.run_id)}" '
        f'data-param="{_esc(f.name)}" data-against="{_esc(f.against)}" '
        f'data-z="{_esc(repr(float(f.z)))}">{tds}</tr>'
    )


def _flags_table(report: DriftReport) -> str:
    if not report.flags:
        return '<p class="muted">No run moved more than k·σ.</p><table id="drift-flags"></table>'
    head = (
        "<thead><tr><th>Robot</th><th>Run</th><th>Session</th>"
        "<th>Parameter [unit]</th><th>Against</th><th>Value</th><th>Reference</th>"
        "<th>Difference</th><th>Scale σ</th><th>z</th><th>k</th></tr></thead>"
    )
    rows = "".join(_flag_row(f, report.k) for f in report.flags)
    return f'<table class="data" id="drift-flags">{head}<tbody>{rows}</tbody></table>'


def _robot_summary(report: DriftReport) -> dict[str, dict[str, Any]]:
    """Robot → runs, flagged runs and moved parameters."""
    out: dict[str, dict[str, Any]] = {
        r: {"runs": set(), "flagged_runs": set(), "params": []} for r in report.robots
    }
    for par in report.parameters:
        for robot, pts in par.robots.items():
            out[robot]["runs"].update(p.run_id for p in pts)
    for f in report.flags:
        entry = out.setdefault(f.robot_id, {"runs": set(), "flagged_runs": set(), "params": []})
        entry["flagged_runs"].add(f.run_id)
        if f.name not in entry["params"]:
            entry["params"].append(f.name)
    return out


def _robots_table(report: DriftReport, summary: Mapping[str, Mapping[str, Any]]) -> str:
    rows = []
    for robot, entry in summary.items():
        flagged = robot in report.flagged_robots
        rows.append(
            f'<tr class="robot-row" data-robot="{_esc(robot)}" '
            f'data-flagged="{"true" if flagged else "false"}">'
            f"<td>{_esc(robot)}</td><td>{len(entry['runs'])}</td>"
            f"<td>{len(entry['flagged_runs'])}</td>"
            f"<td>{_esc(', '.join(entry['params']) or '—')}</td></tr>"
        )
    return (
        '<table class="data" id="drift-robots"><thead><tr><th>Robot</th><th>Runs</th>'
        "<th>Flagged runs</th><th>Parameters moved</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _flagged_list(report: DriftReport) -> str:
    items = []
    for robot in report.flagged_robots:
        flags = [f for f in report.flags if f.robot_id == robot]
        worst = max(flags, key=lambda f: abs(f.z))
        names = ", ".join(dict.fromkeys(f.name for f in flags))
        items.append(
            f'<li class="flagged-robot" data-robot="{_esc(robot)}"><b>{_esc(robot)}</b>: '
            f"{_esc(names)} — largest |z| = {_fmt(abs(worst.z), '.2f')} "
            f"({_esc(worst.name)} against {_esc(worst.against)}, run {_esc(worst.run_id)})</li>"
        )
    text = (
        ""
        if items
        else f'<p class="muted">No robot flagged: every parameter stayed within k = '
        f"{_fmt(report.k, 'g')} σ of its history and of the fleet.</p>"
    )
    return f'{text}<ul id="flagged-robots" data-count="{len(items)}">{"".join(items)}</ul>'


def _summary(report: DriftReport) -> str:
    n_runs = len({p.run_id for par in report.parameters for v in par.robots.values() for p in v})
    return (
        f'<div id="drift-summary" data-k="{_esc(repr(float(report.k)))}" '
        f'data-flagged-robots="{_esc(json.dumps(list(report.flagged_robots)))}" '
        f'data-parameters="{_esc(json.dumps([p.name for p in report.parameters]))}">'
        f"<p><b>{len(report.flagged_robots)}</b> of {len(report.robots)} robots flagged over "
        f"{n_runs} runs and {len(report.parameters)} parameters, k = {_fmt(report.k, 'g')}.</p>"
        '<p class="muted">A run is flagged against its <b>own history</b> when '
        "|x − mean(previous runs)| &gt; k·√(σ² + σ<sub>hist</sub>²) (σ<sub>hist</sub>: std of "
        "the previous values, or the previous run's σ when there is only one), and against the "
        "<b>fleet</b> when |x − median(other robots, same session)| &gt; "
        f"k·max({MAD_TO_SIGMA}·MAD(other robots), √(σ² + median σ²)); z = difference / scale. "
        f"History comparisons need {report.min_history} previous run(s), fleet comparisons "
        f"{report.min_fleet} other robot(s). Values are in the parameter's SI unit "
        "(friction and offsets of revolute joints).</p></div>"
    )


def drift_html(report: DriftReport, title: str = "Fleet drift report") -> str:
    """The drift report page as one self-contained HTML string.

    Args:
        report: The analysis (:func:`figaroh.fleet.drift.analyse_drift`).
        title: Page title (escaped).

    Returns:
        HTML with inline CSS and scripts (no external resource); the element
        ids and data attributes are listed in the module docstring.
    """
    t0 = _t0(report)
    colours = {r: _PALETTE[i % len(_PALETTE)] for i, r in enumerate(report.robots)}
    cards = "".join(_parameter_card(p, i, t0, colours) for i, p in enumerate(report.parameters))
    if not cards:
        cards = '<p class="muted">No parameter history to draw.</p>'
    sections = [
        _report_section("summary", "Summary", _summary(report)),
        _report_section("flagged", "Flagged robots", _flagged_list(report)),
        _report_section("flags", "Flagged runs", _flags_table(report)),
        _report_section("robots", "Robots", _robots_table(report, _robot_summary(report))),
        _report_section("parameters", "Parameters over time", cards, card=False),
        f"<script>{_DRIFT_SCRIPT}</script>",
    ]
    return _report_document(title, sections, "figaroh fleet drift report", _EXTRA_STYLE)


def write_drift_html(report: DriftReport, path: PathLike) -> str:
    """Write the drift report page atomically.

    Args:
        report: The analysis.
        path: Output ``.html`` file (parent folders are created).

    Returns:
        The path written, as a string.
    """
    out = Path(path)
    make_folder(out.parent)
    atomic_write_text(out, drift_html(report))
    return str(out)
