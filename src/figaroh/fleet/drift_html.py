"""Self-contained HTML drift report of a fleet (no network request, every text escaped).

The page is ``templates/drift_report.html.j2`` (package data, rendered with
autoescaping; its style and overlay script are the assets ``drift.css`` and
``drift.js``); this module builds the data of its sections.

The page, top to bottom:

* ``#drift-summary`` — the rule (false-discovery rate ``q`` or threshold
  ``k``), the window, counts, and the rule in one paragraph; attributes
  ``data-rule`` (``fdr``/``k``), ``data-q``, ``data-k`` (the other one
  empty), ``data-window``, ``data-flagged-robots`` (JSON list) and
  ``data-parameters`` (JSON list of the analysed names);
* ``#flagged`` — the flagged robots first: ``ul#flagged-robots[data-count]``
  with one ``li.flagged-robot[data-robot]`` per flagged robot (an empty list
  and a "no robot flagged" line when none is);
* ``#flags`` — ``table#drift-flags``, one ``tr.flag-row`` per flagged
  comparison with ``data-robot``, ``data-run``, ``data-param``,
  ``data-against`` (``history``/``fleet``) and ``data-z``; columns robot,
  run, session (and its time), parameter [unit], against, value (the mean of
  the runs from this one on for a history flag of the default rule),
  reference, difference, scale σ, z, then p and q-value (default rule) or k;
* ``#failures`` — only when the builder is given ``failures``:
  ``table#drift-failures``, one ``tr.failure-row[data-robot][data-error]
  [data-count][data-repeated]`` per (robot, error class): failures, last
  time, hosts and last message (repeated: count ≥ 2);
* ``#robots`` — ``table#drift-robots``, one ``tr.robot-row[data-robot]
  [data-flagged="true"|"false"]`` per robot of the report (flagged or not);
  the parameters that moved link to their chart (a long base-parameter
  name is shortened there, its full text in the link's title and in the
  parameter index);
* ``#parameter-index`` — the legend of the parameters:
  ``table#drift-parameters``, one ``tr.param-row[data-index][data-param]
  [data-flagged]`` per charted quantity (``P1``, ``P2`` … with the full
  name, which wraps, its unit, structure, robots, σ scale and flagged
  robots), and ``table#drift-structures``, one ``tr.structure-row
  [data-structure]`` per base-parameter structure (``S1`` … , its signature,
  robots and number of inertial parameters);
* ``#parameters`` — one ``div.drift-param[data-param][data-structure]
  [data-flagged][data-flagged-robots]`` per charted quantity, titled with
  its ``P`` number, holding one ``svg.drift-chart[data-param]``: value ± σ
  over session time per robot (one line per robot, flagged runs ringed in
  red as ``circle.drift-point.flagged[data-robot][data-run]``), the fleet
  median (dashed) and its ``±1.4826·MAD`` band (grey). With more than
  :data:`MAX_ROBOT_SERIES` robots only the flagged robots get a line (the
  band shows the rest). Charted are every stable quantity (per-joint terms,
  calibration parameters) and every flagged inertial base parameter; the
  others — one per robot and structure on a fleet of robots with their own
  trajectories — are counted in the structure table (``all_charts=True``
  charts them too). The chart is drawn by the run reports' chart engine
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
from typing import Any, Mapping, Sequence

from figaroh._run.charts import _json_text
from figaroh._run.page import _page_context
from figaroh._run.resources import read_asset
from figaroh._run.templating import format_number, render, trusted
from figaroh.fleet.drift import (
    AGAINST_FLEET,
    MAD_TO_SIGMA,
    RULE_FDR,
    DriftFlag,
    DriftReport,
    ParameterDrift,
    _epoch_seconds,
)
from figaroh.fleet.parameter_identity import STABLE
from figaroh.utils.fileio import PathLike, atomic_write_text, make_folder

__all__ = [
    "MAX_ROBOT_SERIES",
    "SHORT_NAME",
    "drift_html",
    "failure_rows",
    "parameter_unit",
    "write_drift_html",
]

#: Above this many robots a chart draws only the flagged robots (plus the fleet band).
MAX_ROBOT_SERIES = 12
#: Longest parameter name written out in the robot table (longer ones are shortened
#: there; the parameter index and the chart titles give them in full).
SHORT_NAME = 40
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


def _structure_ids(report: DriftReport) -> dict[str, str]:
    """Base-parameter structure signature → ``S1``, ``S2`` … in order of first appearance."""
    ids: dict[str, str] = {}
    for par in report.parameters:
        if par.structure != STABLE and par.structure not in ids:
            ids[par.structure] = f"S{len(ids) + 1}"
    return ids


def _charted(report: DriftReport, all_charts: bool) -> list[ParameterDrift]:
    """The quantities drawn: every stable one and every flagged structure-dependent one."""
    return [p for p in report.parameters if all_charts or p.structure == STABLE or p.flags]


def _short(name: str) -> str:
    return name if len(name) <= SHORT_NAME else name[: SHORT_NAME - 1].rstrip() + "…"


def _parameter_card(
    par: ParameterDrift,
    index: int,
    t0: float,
    colours: Mapping[str, str],
    structure_id: str,
) -> dict[str, Any]:
    """Data of one parameter's card: title, legend, chart payload and hint."""
    many = len(par.robots) > MAX_ROBOT_SERIES
    unit = parameter_unit(par.name)
    hint = f"Days since {_iso_day(t0)} on the horizontal axis; bars are ±σ of each run."
    if structure_id:
        hint += (
            f" Base-parameter structure {structure_id}: compared only between runs of "
            "that structure."
        )
    if par.sigma_scale > 1.0:
        hint += (
            f" The runs scatter more than their recorded σ: the history comparisons use "
            f"σ × {par.sigma_scale:.3g}."
        )
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
        "structure": par.structure,
        "flagged": bool(par.flags),
        "flagged_json": json.dumps(list(par.flagged_robots)),
        "payload": _json_text(_chart_payload(par, t0, colours, many)),
        "title": par.name
        + (f" [{unit}]" if unit else "")
        + (f" · structure {structure_id}" if structure_id else ""),
        "legend": [(colours[r], r) for r in par.robots if r in flagged or not many],
        "mad_to_sigma": f"{MAD_TO_SIGMA:.4f}",
        "hint": hint,
    }


def _flag_row(f: DriftFlag, k: float | None) -> dict[str, Any]:
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
        "runs": f.runs,
        "reference": f.reference,
        "difference": f.difference,
        "scale": f.scale,
        "z": f.z,
        "k": k,
        "p": f.p,
        "q_value": f.q_value,
    }


def _robot_rows(report: DriftReport, card_of: Mapping[tuple[str, str], int]) -> list[dict]:
    """One row per robot: runs, flagged runs and the parameters that moved (linked)."""
    runs: dict[str, set[str]] = {r: set() for r in report.robots}
    for par in report.parameters:
        for robot, pts in par.robots.items():
            runs[robot].update(p.run_id for p in pts)
    flagged_runs: dict[str, set[str]] = {}
    moved: dict[str, dict[tuple[str, str], None]] = {}
    for f in report.flags:
        flagged_runs.setdefault(f.robot_id, set()).add(f.run_id)
        moved.setdefault(f.robot_id, {})[(f.name, f.structure)] = None
    rows = []
    for robot in sorted(set(runs) | set(flagged_runs)):
        params = [
            {"index": card_of[key], "short": _short(key[0]), "full": key[0]}
            for key in moved.get(robot, {})
            if key in card_of
        ]
        rows.append(
            {
                "robot": robot,
                "flagged": robot in report.flagged_robots,
                "runs": len(runs.get(robot, ())),
                "flagged_runs": len(flagged_runs.get(robot, ())),
                "params": params,
            }
        )
    return rows


def _flagged_view(report: DriftReport) -> dict[str, Any]:
    """The flagged robots, each with its parameters and its largest |z|."""
    by_robot: dict[str, list[DriftFlag]] = {}
    for f in report.flags:
        by_robot.setdefault(f.robot_id, []).append(f)
    items = []
    for robot in report.flagged_robots:
        flags = by_robot[robot]
        worst = max(flags, key=lambda f: abs(f.z))
        items.append(
            {
                "robot": robot,
                "names": ", ".join(_short(n) for n in dict.fromkeys(f.name for f in flags)),
                "z": abs(worst.z),
                "param": _short(worst.name),
                "against": worst.against,
                "run": worst.run_id,
            }
        )
    if report.rule == RULE_FDR:
        none_text = (
            "No robot flagged: no parameter moved at false-discovery rate "
            f"{format_number(report.q, 'g')} against its history or the fleet."
        )
    else:
        none_text = (
            f"No robot flagged: every parameter stayed within k = {format_number(report.k, 'g')}"
            " σ of its history and of the fleet."
        )
    return {"entries": items, "none_text": none_text}


def _summary_view(report: DriftReport) -> dict[str, Any]:
    """Counts, rule and window of the summary paragraph."""
    n_runs = len({p.run_id for par in report.parameters for v in par.robots.values() for p in v})
    fdr = report.rule == RULE_FDR
    return {
        "rule": report.rule,
        "k": "" if report.k is None else repr(float(report.k)),
        "q": "" if report.q is None else repr(float(report.q)),
        "q_text": format_number(report.q, "g") if fdr else "",
        "rule_text": (
            f"false-discovery rate q = {format_number(report.q, 'g')}"
            if fdr
            else f"threshold k = {format_number(report.k, 'g')}"
        ),
        "window": report.window or "the points given",
        "flagged_json": json.dumps(list(report.flagged_robots)),
        "parameters_json": json.dumps(list(dict.fromkeys(p.name for p in report.parameters))),
        "n_flagged": len(report.flagged_robots),
        "n_robots": len(report.robots),
        "n_runs": n_runs,
        "n_parameters": len(report.parameters),
        "n_cells": report.cells,
        "mad_to_sigma": f"{MAD_TO_SIGMA:.4f}",
        "min_history": report.min_history,
        "min_fleet": report.min_fleet,
    }


def _index_rows(
    charted: Sequence[ParameterDrift], structure_ids: Mapping[str, str]
) -> list[dict[str, Any]]:
    return [
        {
            "index": i,
            "full": par.name,
            "unit": parameter_unit(par.name),
            "structure": structure_ids.get(par.structure, "—"),
            "robots": len(par.robots),
            "sigma_scale": f"{par.sigma_scale:.3g}",
            "flagged": bool(par.flags),
            "flagged_text": ", ".join(par.flagged_robots) or "—",
        }
        for i, par in enumerate(charted)
    ]


def _structure_rows(report: DriftReport, structure_ids: Mapping[str, str]) -> list[dict]:
    robots: dict[str, set[str]] = {s: set() for s in structure_ids}
    count: dict[str, int] = dict.fromkeys(structure_ids, 0)
    for par in report.parameters:
        if par.structure in structure_ids:
            robots[par.structure].update(par.robots)
            count[par.structure] += 1
    return [
        {
            "id": sid,
            "signature": sig,
            "robots": ", ".join(sorted(robots[sig])),
            "names": count[sig],
        }
        for sig, sid in structure_ids.items()
    ]


def failure_rows(failures: Sequence[Any]) -> list[dict[str, Any]]:
    """The rows of the failed-runs section, most failures first.

    Args:
        failures: One entry per (robot, error class): a mapping or an object
            with ``robot_id`` (str), ``error_type`` (str), ``count`` (int ≥ 1,
            failures in the period summarised) and optionally ``last_time``
            (ISO-8601 text of the last failure), ``hosts`` (host names, a
            string or a sequence) and ``message`` (the last error message).

    Returns:
        Rows for the template (``repeated``: ``count ≥ 2``).

    Raises:
        ValueError: an entry without ``robot_id``, ``error_type`` or a
            positive integer ``count``.
    """

    def field_of(entry: Any, name: str, default: Any = None) -> Any:
        if isinstance(entry, Mapping):
            return entry.get(name, default)
        return getattr(entry, name, default)

    rows = []
    for n, entry in enumerate(failures):
        robot, error, count = (field_of(entry, k) for k in ("robot_id", "error_type", "count"))
        if not robot or not error or isinstance(count, bool) or not isinstance(count, int):
            raise ValueError(
                f"failure entry {n} needs robot_id, error_type and an integer count, got {entry!r}"
            )
        if count < 1:
            raise ValueError(f"failure entry {n} has count {count!r}; it must be >= 1")
        hosts = field_of(entry, "hosts", "") or ""
        rows.append(
            {
                "robot": str(robot),
                "error_type": str(error),
                "count": count,
                "last_time": str(field_of(entry, "last_time", "") or ""),
                "hosts": hosts if isinstance(hosts, str) else ", ".join(map(str, hosts)),
                "message": str(field_of(entry, "message", "") or ""),
                "repeated": count >= 2,
            }
        )
    return sorted(rows, key=lambda r: (-r["count"], r["robot"], r["error_type"]))


def drift_html(
    report: DriftReport,
    title: str = "Fleet drift report",
    *,
    failures: Sequence[Any] | None = None,
    all_charts: bool = False,
) -> str:
    """The drift report page as one self-contained HTML string.

    Args:
        report: The analysis (:func:`figaroh.fleet.drift.analyse_drift`).
        title: Page title (escaped).
        failures: Failed runs per (robot, error class) to show in a
            ``#failures`` section (see :func:`failure_rows`); None: no section.
        all_charts: Chart every quantity, also the unflagged inertial base
            parameters of each structure (default: stable quantities and
            flagged ones).

    Returns:
        HTML with inline CSS and scripts (no external resource); the element
        ids and data attributes are listed in the module docstring.
    """
    t0 = _t0(report)
    colours = {r: _PALETTE[i % len(_PALETTE)] for i, r in enumerate(report.robots)}
    structure_ids = _structure_ids(report)
    charted = _charted(report, all_charts)
    card_of = {(p.name, p.structure): i for i, p in enumerate(charted)}
    return render(
        "drift_report.html.j2",
        **_page_context(title, "figaroh fleet drift report", _EXTRA_STYLE),
        drift_script=trusted(_DRIFT_SCRIPT),
        summary_view=_summary_view(report),
        flagged=_flagged_view(report),
        flags={"rule": report.rule, "rows": [_flag_row(f, report.k) for f in report.flags]},
        failures=None if failures is None else failure_rows(failures),
        robots=_robot_rows(report, card_of),
        parameters=_index_rows(charted, structure_ids),
        structures=_structure_rows(report, structure_ids),
        cards=[
            _parameter_card(p, i, t0, colours, structure_ids.get(p.structure, ""))
            for i, p in enumerate(charted)
        ],
    )


def write_drift_html(
    report: DriftReport,
    path: PathLike,
    *,
    failures: Sequence[Any] | None = None,
    all_charts: bool = False,
) -> str:
    """Write the drift report page atomically.

    Args:
        report: The analysis.
        path: Output ``.html`` file (parent folders are created).
        failures: Failed runs per (robot, error class) (see :func:`drift_html`).
        all_charts: Chart every quantity (see :func:`drift_html`).

    Returns:
        The path written, as a string.
    """
    out = Path(path)
    make_folder(out.parent)
    atomic_write_text(out, drift_html(report, failures=failures, all_charts=all_charts))
    return str(out)
