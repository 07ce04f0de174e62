"""Self-contained HTML drift report of a fleet (no network request, every text escaped).

The page is ``templates/drift_report.html.j2`` (package data, rendered with
autoescaping; its style and overlay script are the assets ``drift.css`` and
``drift.js``); this module builds the data of its sections.

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

from figaroh._run.charts import _json_text
from figaroh._run.page import _page_context
from figaroh._run.resources import read_asset
from figaroh._run.templating import format_number, render, trusted
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

_EXTRA_STYLE = read_asset("drift.css")

#: Draws every ``.drift-param[data-drift]`` with ``window.FigarohChart`` and
#: overlays the fleet band, ±σ bars and the run markers (flagged runs ringed)
#: after each render (zoom included).
_DRIFT_SCRIPT = read_asset("drift.js")


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


def _parameter_card(
    par: ParameterDrift, index: int, t0: float, colours: Mapping[str, str]
) -> dict[str, Any]:
    """Data of one parameter's card: title, legend, chart payload and hint."""
    many = len(par.robots) > MAX_ROBOT_SERIES
    unit = parameter_unit(par.name)
    hint = f"Days since {_iso_day(t0)} on the horizontal axis; bars are ±σ of each run."
    if many:
        hint += (
            f" {len(par.robots)} robots: only the flagged ones are drawn, "
            "the grey band shows the fleet."
        )
    hint += " Hover to read values, scroll or drag to zoom, double-click to reset."
    flagged = set(par.flagged_robots)
    return {
        "index": index,
        "name": par.name,
        "flagged": bool(par.flags),
        "flagged_json": json.dumps(list(par.flagged_robots)),
        "payload": _json_text(_chart_payload(par, t0, colours, many)),
        "title": par.name + (f" [{unit}]" if unit else ""),
        "legend": [(colours[r], r) for r in par.robots if r in flagged or not many],
        "mad_to_sigma": f"{MAD_TO_SIGMA:.4f}",
        "hint": hint,
    }


def _flag_row(f: DriftFlag, k: float) -> dict[str, Any]:
    """Data of one flagged comparison (values in the parameter's unit)."""
    unit = parameter_unit(f.name)
    return {
        "robot": f.robot_id,
        "run": f.run_id,
        "param": f.name,
        "against": f.against,
        "z_repr": repr(float(f.z)),
        "session": f.session,
        "when": _iso_day(_epoch_seconds(f.session_time, f.run_id)),
        "label": f.name + (f" [{unit}]" if unit else ""),
        "against_text": "fleet" if f.against == AGAINST_FLEET else "history",
        "value": f.value,
        "reference": f.reference,
        "difference": f.difference,
        "scale": f.scale,
        "z": f.z,
        "k": k,
    }


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


def _robot_rows(
    report: DriftReport, summary: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One row per robot: runs, flagged runs and the parameters that moved."""
    return [
        {
            "robot": robot,
            "flagged": robot in report.flagged_robots,
            "runs": len(entry["runs"]),
            "flagged_runs": len(entry["flagged_runs"]),
            "params": ", ".join(entry["params"]) or "—",
        }
        for robot, entry in summary.items()
    ]


def _flagged_view(report: DriftReport) -> dict[str, Any]:
    """The flagged robots, each with its parameters and its largest |z|."""
    items = []
    for robot in report.flagged_robots:
        flags = [f for f in report.flags if f.robot_id == robot]
        worst = max(flags, key=lambda f: abs(f.z))
        items.append(
            {
                "robot": robot,
                "names": ", ".join(dict.fromkeys(f.name for f in flags)),
                "z": abs(worst.z),
                "param": worst.name,
                "against": worst.against,
                "run": worst.run_id,
            }
        )
    return {"entries": items, "k_text": format_number(report.k, "g")}


def _summary_view(report: DriftReport) -> dict[str, Any]:
    """Counts, threshold and rule parameters of the summary paragraph."""
    n_runs = len({p.run_id for par in report.parameters for v in par.robots.values() for p in v})
    return {
        "k": repr(float(report.k)),
        "k_text": format_number(report.k, "g"),
        "flagged_json": json.dumps(list(report.flagged_robots)),
        "parameters_json": json.dumps([p.name for p in report.parameters]),
        "n_flagged": len(report.flagged_robots),
        "n_robots": len(report.robots),
        "n_runs": n_runs,
        "n_parameters": len(report.parameters),
        "mad_to_sigma": f"{MAD_TO_SIGMA:.4f}",
        "min_history": report.min_history,
        "min_fleet": report.min_fleet,
    }


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
    return render(
        "drift_report.html.j2",
        **_page_context(title, "figaroh fleet drift report", _EXTRA_STYLE),
        drift_script=trusted(_DRIFT_SCRIPT),
        summary_view=_summary_view(report),
        flagged=_flagged_view(report),
        flags=[_flag_row(f, report.k) for f in report.flags],
        robots=_robot_rows(report, _robot_summary(report)),
        cards=[_parameter_card(p, i, t0, colours) for i, p in enumerate(report.parameters)],
    )


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
