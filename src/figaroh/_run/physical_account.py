"""One account of the physical stages of an identification (report rows).

The physical stage record (the words the summary line shows), the
physical-consistency check and projection, the full-parameter reconstruction,
the direct physical (LMI) fit and the estimate the report's numbers come from,
each with its status and reason. A step that did not run because another one
stands in for it says so (a physical fit estimates physically consistent
parameters directly, so no separate check or projection runs).
"""

from __future__ import annotations

from typing import Any, List, Mapping, Sequence, Tuple

__all__ = ["SOURCE_LABELS", "consistency_source_label", "physical_stage_rows"]


#: Human-readable label of each physical-consistency ``source`` (reports).
SOURCE_LABELS = {
    "reconstruction": "reconstructed fit",
    "identif_results.parameter_dict": "given parameter_dict",
    "identif_results.standard_parameter_dict": "given standard_parameter_dict",
}


def consistency_source_label(pc: Mapping[str, Any]) -> str:
    """What a ``result["physical consistency"]`` entry checked, for reports."""
    source = pc.get("source")
    if source is None:
        return "nothing identified to check"
    return SOURCE_LABELS.get(str(source), str(source))


def _consistency_text(info: Mapping[str, Any]) -> str:
    """``status — checked parameters, n projected, failed: …`` of a physical-consistency entry."""
    text = str(info.get("status", "unknown"))
    details = [consistency_source_label(dict(info))]
    projection = info.get("projection")
    if isinstance(projection, Mapping):
        n = projection.get("projected_links")
        if n is not None:
            details.append(f"{int(n)} link(s) projected")
        failed = list(projection.get("failed_links") or [])
        if failed:
            details.append("failed: " + ", ".join(str(f) for f in failed))
    text += " — " + ", ".join(details)
    if info.get("reason"):
        text += f" ({info['reason']})"
    return text


def _status_text(info: Mapping[str, Any], *extra: str) -> str:
    """``"<status> (<reason>)"`` of a stage entry, with optional extra details."""
    text = str(info.get("status", "unknown"))
    details = [d for d in (*extra, str(info.get("reason") or "")) if d]
    return text + (f" ({'; '.join(details)})" if details else "")


def _physical_stage_record(records: Sequence[Any]) -> Any:
    """The ``physical`` stage record (None when the stage was not recorded)."""
    for record in records:
        if getattr(record, "stage", None) == "physical":
            return record
    return None


def physical_stage_rows(records: Sequence[Any], result: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """One ``(label, text)`` row per physical step, the ``physical`` stage record first.

    Args:
        records: Stage records of the run (``stage``, ``status``, ``reason``).
        result: ``BaseIdentification.result`` (reads ``physical consistency``,
            ``reconstruction``, ``physical_fit`` and ``selected``).

    A step that did not run says why when another one stands in for it (a
    physical fit produces physically consistent parameters directly, so no
    separate consistency check or projection runs).
    """
    record = _physical_stage_record(records)
    rows = [
        (
            "Physical stage (as in the summary)",
            "not recorded"
            if record is None
            else f"{record.status}" + (f" — {record.reason}" if record.reason else ""),
        )
    ]
    physical_fit = result.get("physical_fit")
    stand_in = (
        "not run: the physical fit estimates physically consistent parameters directly"
        if isinstance(physical_fit, Mapping)
        else "not run"
    )
    pc = result.get("physical consistency")
    rows.append(
        (
            "Physical-consistency check",
            _consistency_text(pc) if isinstance(pc, Mapping) else stand_in,
        )
    )
    recon = result.get("reconstruction")
    rows.append(
        (
            "Full-parameter reconstruction",
            _status_text(recon) if isinstance(recon, Mapping) else stand_in,
        )
    )
    if isinstance(physical_fit, Mapping):
        solvers = ", ".join(str(x) for x in physical_fit.get("solvers") or [])
        rows.append(
            (
                "Physical fit (LMI)",
                _status_text(physical_fit, f"solvers: {solvers}" if solvers else ""),
            )
        )
    else:
        rows.append(("Physical fit (LMI)", "not run"))
    sel = result.get("selected") if isinstance(result.get("selected"), Mapping) else None
    rows.append(
        (
            "Reported estimate",
            "base-parameter fit (select_stage: fit)"
            if sel is None
            else f"{sel.get('stage', '?')} — " + _status_text(sel),
        )
    )
    return rows
