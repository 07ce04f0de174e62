"""The run index: one SQLite file next to a fleet archive that answers history queries.

Every fleet run is archived as an immutable, sealed run folder
``<archive_root>/<robot_id>/<task>/<session>_<job_id>/`` holding
``run_record.json`` (:class:`~figaroh.fleet.record.RunRecord`); the index
``<archive_root>/index.sqlite`` (:data:`INDEX_DB`) holds the same records as
rows, so "how did ``fs2`` of robot 17 evolve since March?" is one query
(:meth:`RunIndex.parameter_history`). A job that failed has no folder: the
batch driver appends it to ``<archive_root>/failures.jsonl``
(:data:`FAILURES_FILE`) and to the ``failures`` table. The folders and
``failures.jsonl`` are the truth: the index can be rebuilt from them at any
time (:func:`rebuild_index`).

The run index is four modules, all of whose public names this module
re-exports:

* :mod:`figaroh.fleet.index_schema` — the schema (tables, indexes,
  :data:`MIGRATIONS`, :data:`SCHEMA_VERSION`), file names and row records
  (:class:`HistoryPoint`, :class:`FailureRow`, :class:`BatchInfo`).
* :mod:`figaroh.fleet.index_store` — :class:`RunIndex`, the database: writes
  (one transaction each, or grouped), queries, durability and concurrency.
* :mod:`figaroh.fleet.run_writer` — the driver's write path
  (:func:`write_fleet_run`, :func:`append_failure`,
  :func:`recover_interrupted_batches`).
* :mod:`figaroh.fleet.index_rebuild` — :func:`rebuild_index`.
"""

from __future__ import annotations

from figaroh.fleet.index_rebuild import rebuild_index
from figaroh.fleet.index_schema import (
    FAILURES_FILE,
    INDEX_DB,
    MIGRATIONS,
    SCHEMA_VERSION,
    BatchInfo,
    FailureRow,
    HistoryPoint,
    RebuildSummary,
    RunIndexError,
    index_path,
    new_batch_id,
    utc_now,
)
from figaroh.fleet.index_store import BUSY_TIMEOUT_S, COMMIT_EVERY, COMMIT_INTERVAL_S, RunIndex
from figaroh.fleet.run_writer import (
    append_failure,
    recover_interrupted_batches,
    run_folder,
    write_fleet_run,
)

__all__ = [
    "BUSY_TIMEOUT_S",
    "COMMIT_EVERY",
    "COMMIT_INTERVAL_S",
    "FAILURES_FILE",
    "INDEX_DB",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "BatchInfo",
    "FailureRow",
    "HistoryPoint",
    "RebuildSummary",
    "RunIndex",
    "RunIndexError",
    "append_failure",
    "index_path",
    "new_batch_id",
    "rebuild_index",
    "recover_interrupted_batches",
    "run_folder",
    "utc_now",
    "write_fleet_run",
]
