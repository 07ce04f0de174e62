"""Data of the shared report sections (insights, provenance, uncertainty, verdict).

Each ``_*_section`` function turns a run's values into rows and renders the
matching macro of ``templates/components.html.j2`` (:mod:`figaroh._run.templating`):
the template escapes every value, attribute values included. Chart data
travels as escaped JSON in a ``data-*`` attribute, never as raw ``<script>``
text. :func:`html_escape` (alias :func:`_esc`) escapes a value for markup
still built in Python.
"""

from __future__ import annotations

import functools
import html
import logging
from typing import Any, Iterable, List, Mapping, Sequence, Tuple

from figaroh._run.provenance import git_text
from figaroh._run.task_services import RunServices, current_verdict
from figaroh._run.templating import format_number, macro
from figaroh._run.uncertainty_grade import (
    UNCERTAINTY_CAUTION_PCT,
    UNCERTAINTY_WARN_PCT,
    _uncertainty_tier,  # noqa: F401 - the tier rule, re-exported for the report modules
)
from figaroh._run.values import _finite_or_none

logger = logging.getLogger(__name__)

__all__ = [
    "HEALTHY_INSIGHT",
    "MAX_NAMES_IN_INSIGHT",
    "UNCERTAINTY_CAUTION_PCT",
    "UNCERTAINTY_WARN_PCT",
    "VALIDATION_IMPROVEMENT_WARN_PCT",
    "html_escape",
]

#: Validation improvement over nominal [%] below which the reports warn.
VALIDATION_IMPROVEMENT_WARN_PCT = 50.0
_UNAVAILABLE_HASHES = ("unknown", "unavailable", "not_found")

#: Insight shown when no rule fired.
HEALTHY_INSIGHT = "No issues detected — fit looks healthy."
#: Most parameter names listed in one insight.
MAX_NAMES_IN_INSIGHT = 6


def html_escape(value: Any) -> str:
    """Escape any value for HTML text *and* attribute context.

    ``str(value)`` is escaped with :func:`html.escape` (``&``, ``<``, ``>``,
    ``"`` and ``'``), so ``<script>alert(1)</script>`` renders as text.

    Args:
        value: Anything; converted with ``str``.

    Returns:
        The escaped string.
    """
    return html.escape(str(value), quote=True)


def _esc(x: Any) -> str:
    """Short alias of :func:`html_escape` used by every report generator."""
    return html_escape(x)


def _fmt(value: Any, spec: str = ".4g") -> str:
    """Format a number for HTML; None/NaN/non-numbers become an em dash (escaped)."""
    return _esc(format_number(value, spec))


def _component(name: str, *args: Any) -> str:
    """Markup of macro ``name`` of ``components.html.j2`` (as ``str``: callers concatenate)."""
    return str(macro("components.html.j2", name)(*args))


def _hash_short(v: Any) -> str:
    """Shorten a hash for display.

    Falsy → ``"unavailable"``; ``unknown``/``unavailable``/``not_found`` (or an
    ``"unavailable: <reason>"`` string) → returned as is; otherwise the first
    12 characters.
    """
    if not v:
        return "unavailable"
    s = str(v)
    if s in _UNAVAILABLE_HASHES or s.startswith("unavailable"):
        return s
    return s[:12]


def _run_title(provenance: Mapping[str, Any] | None, fallback: str) -> str:
    """Human title of a run: ``"<asset_id> (<robot name>)"`` or the model name.

    Args:
        provenance: A record from
            :func:`figaroh.tools.provenance.collect_run_provenance`, or None.
        fallback: Title used when nothing better is known (e.g. class name).

    Returns:
        The title (not escaped).
    """
    if not isinstance(provenance, Mapping):
        return fallback
    asset = provenance.get("asset")
    model = provenance.get("model")
    model_name = model.get("robot_name") if isinstance(model, Mapping) else None
    if not isinstance(model_name, str) or not model_name or model_name.startswith("unavailable"):
        model_name = None
    if isinstance(asset, Mapping) and asset.get("is_specified"):
        return f"{asset.get('asset_id', 'unknown')} ({model_name or fallback})"
    return model_name or fallback


def _insights_section(insights: Iterable[Any] | None) -> str:
    """List of insights ``{"level": "warn"|"info", "text": str}`` (or plain strings)."""
    items = []
    for ins in insights or []:
        if isinstance(ins, Mapping):
            level = "warn" if ins.get("level") == "warn" else "info"
            text = ins.get("text", "")
        else:
            level, text = "info", ins
        items.append({"level": level, "text": text})
    return _component("insights", items)


def _kv_rows(rows: Iterable[Tuple[str, Any]]) -> str:
    """``<tr><th>key</th><td>value</td></tr>`` rows (both escaped)."""
    return _component("kv_rows", list(rows))


def _kv_table(rows: Iterable[Tuple[str, Any]]) -> str:
    """``<table class="kv">`` of ``(key, value)`` rows (both escaped)."""
    return _component("kv_table", list(rows))


def _asset_text(asset: Mapping[str, Any]) -> str:
    """``"<asset_id> (label: …, site: …)"`` or the not-specified notice."""
    if not asset.get("is_specified"):
        return "not specified (no robot.instance in the config)"
    text = str(asset.get("asset_id", ""))
    extras = [
        f"{k}: {asset[k]}"
        for k in ("label", "serial_number", "site", "operator")
        if asset.get(k) not in (None, "")
    ]
    return text + (" (" + ", ".join(extras) + ")" if extras else "")


def _data_file_rows(data: Mapping[str, Any]) -> List[Tuple[str, Any]]:
    """One ``("Data (<role>)", "<path> (sha256 …)")`` row per recorded data file.

    Then one ``("Read as (<role>)", notes)`` row per data source with notes
    (e.g. a bag's topics, stamp source and resampling).
    """
    raw_files, raw_sources = data.get("files"), data.get("sources")
    files = raw_files if isinstance(raw_files, list) else []
    sources = raw_sources if isinstance(raw_sources, list) else []
    return [
        (
            f"Data ({entry.get('role', 'file')})",
            f"{entry.get('path', '?')} (sha256 {_hash_short(entry.get('sha256'))})",
        )
        for entry in files
        if isinstance(entry, Mapping)
    ] + [
        (f"Read as ({entry.get('role', 'data')})", f"{entry.get('notes', '')}")
        for entry in sources
        if isinstance(entry, Mapping)
    ]


def _provenance_section(provenance: Mapping[str, Any] | None) -> str:
    """Table of a run provenance record (every value escaped)."""
    if not isinstance(provenance, Mapping):
        return _component("muted", "No provenance recorded for this run (run solve() first).")

    def sub(key: str) -> Mapping[str, Any]:
        v = provenance.get(key)
        return v if isinstance(v, Mapping) else {}

    asset, model, config = sub("asset"), sub("model"), sub("config")
    software, data, stamps = sub("software"), sub("data"), sub("timestamps")
    rows: List[Tuple[str, Any]] = [
        ("Run id", provenance.get("run_id", "unavailable")),
        ("Task", provenance.get("task", "unavailable")),
    ]
    rows.append(("Asset", _asset_text(asset)))
    rows.append(("Model", model.get("robot_name", "unavailable")))
    if model.get("urdf_path"):
        rows.append(
            ("URDF", f"{model['urdf_path']} (sha256 {_hash_short(model.get('urdf_sha256'))})")
        )
    rows.append(("Config", f"{config.get('path', 'unavailable')}"))
    rows.append(("Config sha256", _hash_short(config.get("sha256"))))
    rows.append(("Git commit", git_text(software)))
    versions = ", ".join(
        f"{k} {software[k]}"
        for k in ("python", "numpy", "scipy", "pinocchio", "figaroh")
        if k in software
    )
    rows.append(("Software", versions or "unavailable"))
    rows.append(("Host", software.get("hostname", "unavailable")))
    rows.extend(_data_file_rows(data))
    for key, label in (
        ("run_started", "Run started"),
        ("run_finished", "Run finished"),
        ("report_generated", "Report generated"),
    ):
        if key in stamps:
            rows.append((label, stamps[key]))
    return _kv_table(rows)


def _parameter_table_section(table: Any) -> str:
    """The parameter table of a report: value, σ, confidence interval, the two σ ratios and grade.

    Rows are sorted by decreasing grade score ``g`` (the least certain first,
    unknown last); the bar is ``min(g, 100)`` % wide and coloured by tier; the
    ratio ``g`` equals (σ / |value| or σ / scale) is shown in bold.

    Args:
        table: A :class:`~figaroh._run.uncertainty.ParameterTable`, or None.

    Returns:
        HTML (a muted paragraph when there is no parameter).
    """
    if table is None or not table.rows:
        return _component("muted", "No parameters to report.")
    rows = [
        {
            "name": r.name,
            "tier": r.grade.tier,
            "width": 0.0
            if r.grade.score_pct != r.grade.score_pct
            else min(r.grade.score_pct, 100.0),
            "value": r.value,
            "sd": r.sigma,
            "low": r.ci_low,
            "high": r.ci_high,
            "rel": r.grade.relative_pct,
            "scaled": r.grade.scaled_pct,
            "basis": r.grade.basis,
            "zero": bool(r.grade.zero),
        }
        for r in table.ranked()
    ]
    return _component("parameter_table", rows, f"{100.0 * table.level:g} % CI")


def _correlation_section(pairs: Iterable[Any] | None) -> str:
    """Strongly correlated parameter pairs (``{"param_i", "param_j", "correlation"}``).

    ``|ρ| > 0.95`` is tier ``poor``, otherwise ``fair``; an empty list reads
    "No parameter pairs exceed |ρ| > 0.8.".
    """
    rows = []
    for pair in pairs or []:
        if isinstance(pair, Mapping):
            a, b, rho = pair.get("param_i"), pair.get("param_j"), pair.get("correlation")
        else:
            a, b, rho = tuple(pair)[:3]
        r = _finite_or_none(rho)
        tier = "poor" if r is not None and abs(r) > 0.95 else "fair"
        rows.append({"a": a, "b": b, "rho": r, "tier": tier})
    return _component("correlation", rows)


def _names_text(names: Sequence[str]) -> str:
    """The first ``MAX_NAMES_IN_INSIGHT`` names, comma-separated, then ``...``."""
    text = ", ".join(names[:MAX_NAMES_IN_INSIGHT])
    return text + (", ..." if len(names) > MAX_NAMES_IN_INSIGHT else "")


def _change_pct(before: Any, after: Any) -> float | None:
    """Relative change ``(before − after) / before · 100`` [%]; None when undefined."""
    b, a = _finite_or_none(before), _finite_or_none(after)
    if b is None or a is None or b == 0:
        return None
    return (b - a) / b * 100.0


def _improvement_phrase(pct: Any, what: str, against: str) -> str:
    """``"<what> improved by only 12.3% over <against>"``, or ``"<what> is 2.4% worse than
    <against>"`` for a negative change.

    Args:
        pct: Relative change ``(before − after) / before · 100`` [%] (positive: better).
        what: The quantity, e.g. ``"Validation position RMSE"``.
        against: The reference, e.g. ``"nominal"``.
    """
    f = _finite_or_none(pct)
    if f is None:
        return f"{what}: change over {against} unavailable"
    if f < 0:
        return f"{what} is {-f:.1f}% worse than {against}"
    return f"{what} improved by only {f:.1f}% over {against}"


def _change_cell(before: Any, after: Any) -> str:
    """Table cell with the relative change after vs before: ↓ better, ↑ worse."""
    return _component("change_cell", _change_pct(before, after))


_VERDICT_HEADLINES = {
    "pass": "PASS — every required check passed",
    "fail": "FAIL — at least one required check failed",
    "not_evaluated": "NOT EVALUATED — required evidence or limits are missing",
}


def _verdict_field(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` of a mapping or ``obj.key`` of a verdict / check object."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _limit_text(check: Any) -> str:
    """``"≤ 1.5"`` / ``"≥ 0.9"`` of a threshold check (an em dash without a limit)."""
    limit = _finite_or_none(_verdict_field(check, "threshold"))
    if limit is None:
        return "—"
    sign = "≥" if _verdict_field(check, "comparison") == "min" else "≤"
    return f"{sign} {limit:.4g}"


def _verdict_status(value: Any) -> str:
    status = str(value or "not_evaluated")
    return status if status in _VERDICT_HEADLINES else "not_evaluated"


def _verdict_check_row(check: Any) -> dict:
    """Display record of one check: status, name, value, limit, role and reason."""
    return {
        "status": _verdict_status(_verdict_field(check, "status")),
        "name": _verdict_field(check, "name", "?"),
        "value": _verdict_field(check, "value"),
        "limit": _limit_text(check),
        "role": "required" if _verdict_field(check, "required", True) else "informative",
        "reason": _verdict_field(check, "reason", "") or "",
    }


def _verdict_section(verdict: Any, unavailable_reason: str = "") -> str:
    """Verdict panel: overall status, scope, and each check with value, limit and reason.

    Args:
        verdict: A :class:`~figaroh._run.verdict.VerificationVerdict` (or its
            dict form) with ``status``, ``scope``, ``policy`` and ``checks``
            (each ``name``, ``value``, ``threshold``, ``comparison``
            ``"max"`` (pass iff value ≤ limit) / ``"min"`` (pass iff value ≥
            limit), ``status``, ``required``, ``reason``); None when no
            verdict could be computed.
        unavailable_reason: Shown when ``verdict`` is None.

    Returns:
        HTML of the panel (``div.verdict-panel`` with ``data-status``).
    """
    if verdict is None:
        reason = unavailable_reason or "no verdict was computed for this run"
        return _component("verdict_panel", None, reason)
    status = _verdict_status(_verdict_field(verdict, "status"))
    checks = list(_verdict_field(verdict, "checks", []) or [])
    counts = {
        s: sum(1 for c in checks if _verdict_field(c, "status") == s) for s in _VERDICT_HEADLINES
    }
    policy = _verdict_field(verdict, "policy", {}) or {}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no checks"
    view = {
        "status": status,
        "headline": _VERDICT_HEADLINES[status],
        "scope": _verdict_field(verdict, "scope", "?"),
        "n_checks": len(checks),
        "summary": summary,
        "n_limits": len(policy),
        "checks": [_verdict_check_row(c) for c in checks],
    }
    return _component("verdict_panel", view, "")


def _run_verdict(task: Any) -> Tuple[Any, str]:
    """``(verdict, reason)``: the run's verdict, or None and why.

    The run's verdict is the one its last ``verify()`` kept (``RunServices``),
    else ``task.verify()`` with its default policy.
    """
    verify = (
        functools.partial(current_verdict, task)
        if isinstance(task, RunServices)
        else getattr(task, "verify", None)
    )
    if not callable(verify):
        return None, f"{type(task).__name__} has no verify()"
    try:
        return verify(), ""
    except Exception as exc:  # noqa: BLE001 - a report without a verdict beats no report
        logger.warning("verdict unavailable for the report: %s", exc)
        return None, f"verify() raised {type(exc).__name__}: {exc}"


def _verdict_block(task: Any, verdict: Any = None) -> str:
    """Verdict panel of ``verdict``, or of the run's verdict when None."""
    reason = ""
    if verdict is None:
        verdict, reason = _run_verdict(task)
    return _verdict_section(verdict, reason)
