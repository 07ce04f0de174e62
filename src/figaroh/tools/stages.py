"""Stage records: what each step of a run did, and whether it succeeded.

A run (identification or calibration) records one :class:`StageResult` per
stage in ``obj.stages``: ``data`` (loading), ``fit`` (the estimate),
``validation``, ``physical`` (physical consistency) and ``export``. The records
feed the verdict (:func:`apply_to_verdict`), the one-line summary
(:func:`stages_line`) and the ``stages.json`` file of a run archive
(:func:`write_stages_json`).

This module is the public home of these names; the implementation lives in
:mod:`figaroh._run.stages`.
"""

from __future__ import annotations

from figaroh._run.stages import (
    SCHEMA_VERSION,
    STAGES,
    STATUSES,
    StageResult,
    apply_to_verdict,
    drop_stage,
    record_stage,
    stages_as_dicts,
    stages_json_data,
    stages_line,
    with_schema,
    write_stages_json,
)

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
