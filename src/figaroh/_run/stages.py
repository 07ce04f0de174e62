"""Stage records: what each step of a run did, and whether it succeeded.

A run (identification or calibration) records one :class:`StageResult` per
stage in ``obj.stages``: ``data`` (loading and the input data checks; an
identification records ``failed`` with the failed checks' messages as its
reason when a check failed, and still fits), ``fit`` (the estimate),
``validation``, ``physical`` (physical consistency) and ``export``. The records
feed the verdict (:func:`apply_to_verdict`), the one-line summary
(:func:`stages_line`) and the ``stages.json`` file of a run archive
(:func:`write_stages_json`).

JSON convention: records are written with ``allow_nan=False``; a non-finite
metric value (NaN, ±inf) is stored as ``null`` — the record's ``status`` and
``reason`` carry the failure.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Union

import numpy as np

from figaroh._run.json_io import verification_json_data
from figaroh._run.provenance import collect_splits
from figaroh.utils.fileio import atomic_write_text

logger = logging.getLogger(__name__)

__all__ = [
    "SCHEMA_VERSION",
    "STAGES",
    "STATUSES",
    "StageResult",
    "apply_to_verdict",
    "drop_stage",
    "record_stage",
    "stages_as_dicts",
    "stages_json_data",
    "stages_line",
    "with_schema",
    "write_stages_json",
]

STAGES = ("data", "fit", "validation", "physical", "export")
STATUSES = ("ok", "failed", "fallback", "not_run")
SCHEMA_VERSION = 1

_VERDICT_STATUS = {"ok": "pass", "failed": "fail", "fallback": "fallback", "not_run": "not_run"}


@dataclass
class StageResult:
    """Outcome of one stage of a run.

    Attributes:
        stage: One of :data:`STAGES`.
        status: One of :data:`STATUSES`.
        reason: Why this status (method used, error text, fallback reason).
        metrics: Name → ``{"value": v, "unit": str}`` (unit ``""`` when
            unitless; e.g. ``effort_rmse`` in ``"N·m or N"``).
        artifacts: Paths of files the stage wrote.

    Raises:
        ValueError: unknown stage or status.
    """

    stage: str
    status: str
    reason: str = ""
    metrics: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    artifacts: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, not {self.stage!r}")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {self.status!r}")


def _py(value: Any) -> Any:
    """numpy scalars → Python scalars (arrays → lists); anything else unchanged."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _normalise_metrics(metrics: Mapping[str, Any] | None) -> Dict[str, Dict[str, Any]]:
    out: Dict[str, Dict[str, Any]] = {}
    for name, val in (metrics or {}).items():
        if isinstance(val, tuple):
            if len(val) != 2 or not isinstance(val[1], str):
                raise ValueError(
                    f"metric {name!r}: expected (value, unit) with a string unit, got {val!r}"
                )
            value, unit = val
        else:
            value, unit = val, ""
        out[str(name)] = {"value": _py(value), "unit": unit}
    return out


def _records(obj: Any) -> List[StageResult]:
    return list(getattr(obj, "stages", None) or [])


def record_stage(
    obj: Any,
    stage: str,
    status: str,
    reason: str = "",
    metrics: Mapping[str, Any] | None = None,
    artifacts: List[Any] | None = None,
) -> StageResult:
    """Record the outcome of ``stage`` on ``obj`` (replacing an earlier record).

    Each metric value may be a ``(value, unit)`` tuple or a bare value (unit
    ``""``). ``obj.stages`` is **reassigned** to a new list sorted in
    :data:`STAGES` order (a missing or None attribute counts as empty).

    Args:
        obj: The run object (e.g. a ``BaseIdentification``).
        stage: One of :data:`STAGES`.
        status: One of :data:`STATUSES`.
        reason: Why this status.
        metrics: Name → ``(value, unit)`` or bare value.
        artifacts: Paths written by the stage.

    Returns:
        The new record.

    Raises:
        ValueError: unknown stage/status or a malformed metric tuple.
    """
    rec = StageResult(
        stage=stage,
        status=status,
        reason=str(reason or ""),
        metrics=_normalise_metrics(metrics),
        artifacts=[str(a) for a in (artifacts or [])],
    )
    kept = [r for r in _records(obj) if r.stage != stage]
    kept.append(rec)
    kept.sort(key=lambda r: STAGES.index(r.stage))
    obj.stages = kept
    logger.debug("stage %s: %s %s", stage, status, reason)
    return rec


def drop_stage(obj: Any, stage: str) -> None:
    """Remove the record of ``stage`` from ``obj.stages`` (no-op if absent)."""
    records = _records(obj)
    kept = [r for r in records if r.stage != stage]
    if len(kept) != len(records):
        obj.stages = kept


def stages_as_dicts(obj: Any) -> List[Dict[str, Any]]:
    """``dataclasses.asdict`` of every record of ``obj.stages`` (in stage order)."""
    return [dataclasses.asdict(r) for r in _records(obj)]


def with_schema(obj: Any, verdict: Mapping[str, Any]) -> Dict[str, Any]:
    """Verdict dict with the schema version and the stage records.

    Args:
        obj: The run object holding ``stages`` (a missing attribute counts as
            no records).
        verdict: The verdict as a mapping (``dataclasses.asdict`` of a
            verdict).

    Returns:
        ``{"schema_version": SCHEMA_VERSION, **verdict, "stage_records":
        stages_as_dicts(obj)}`` (a new dict); the verdict's own ``stages``
        key (the per-stage status map) is kept.
    """
    return {
        "schema_version": SCHEMA_VERSION,
        **dict(verdict),
        "stage_records": stages_as_dicts(obj),
    }


def apply_to_verdict(verdict: Any, obj: Any, selected_stage: str = "fit") -> Any:
    """Copy the stage records of ``obj`` into ``verdict``.

    * ``verdict.stages[stage]`` ← ``pass``/``fail``/``fallback``/``not_run`` for
      recorded stages (``ok``→``pass``, ``failed``→``fail``); unrecorded stages
      default to ``not_evaluated`` (existing entries are kept);
    * ``verdict.stages["data_provenance"]`` ← ``verdict.stages["data"]``;
    * ``verdict.stage_records`` ← :func:`stages_as_dicts`;
    * ``verdict.selected_stage`` ← ``selected_stage`` when a ``fit`` record
      with status ``ok`` exists, else ``"none"``;
    * ``verdict.splits`` ← ``provenance.collect_splits(obj)``.

    Args:
        verdict: A ``VerificationVerdict`` (modified in place).
        obj: The run object holding ``stages``.
        selected_stage: Stage whose estimate the verdict reports.

    Returns:
        The same verdict.
    """
    stages = getattr(verdict, "stages", None)
    if stages is None:
        stages = {}
        verdict.stages = stages
    records = {r.stage: r for r in _records(obj)}
    for stage in STAGES:
        if stage in records:
            stages[stage] = _VERDICT_STATUS[records[stage].status]
        else:
            stages.setdefault(stage, "not_evaluated")
    stages["data_provenance"] = stages["data"]
    verdict.stage_records = stages_as_dicts(obj)
    fit = records.get("fit")
    verdict.selected_stage = selected_stage if fit is not None and fit.status == "ok" else "none"
    verdict.splits = collect_splits(obj)
    return verdict


def stages_line(obj: Any) -> str:
    """One-line summary ``"data ok · fit ok · validation fallback (…)"``.

    A validation fallback appends ``" (training data, not held-out)"``; a
    failed record with a reason appends ``" (<reason>)"``; no records →
    ``"no stage records"``.
    """
    records = _records(obj)
    if not records:
        return "no stage records"
    parts = []
    for r in records:
        text = f"{r.stage} {r.status}"
        if r.stage == "validation" and r.status == "fallback":
            text += " (training data, not held-out)"
        elif r.status == "failed" and r.reason:
            text += f" ({r.reason})"
        parts.append(text)
    return " · ".join(parts)


def stages_json_data(obj: Any) -> Dict[str, Any]:
    """Strict-JSON content of ``stages.json``.

    Returns ``{"schema_version": 1, "stages": [records]}`` with numpy values
    turned into Python values and every non-finite float (NaN, ±inf) stored
    as ``None`` (JSON ``null``).
    """
    return {
        "schema_version": SCHEMA_VERSION,
        "stages": verification_json_data(stages_as_dicts(obj)),
    }


def write_stages_json(obj: Any, path: Union[str, os.PathLike]) -> str:
    """Write :func:`stages_json_data` to ``path`` (``allow_nan=False``, atomic).

    Args:
        obj: The run object holding ``stages``.
        path: Destination file; its folder must exist.

    Returns:
        The written path.
    """
    text = json.dumps(stages_json_data(obj), indent=2, allow_nan=False, ensure_ascii=False)
    return atomic_write_text(path, text + "\n")
