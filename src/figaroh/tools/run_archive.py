"""Longitudinal run archive: a fleet's verification history.

:func:`archive_run` keeps every run in its own immutable directory::

    <root>/<asset_id>/<task>/<YYYYmmddTHHMMSSZ>_<git8|nogit>[-r<k>]/
        provenance.json        run provenance (strict JSON)
        config.snapshot.yaml   the configuration dict as used
        parameters.csv         parameter,value
        stages.json            stage records (when the run has any)

and appends one JSON line per run to ``<root>/index.jsonl`` (with the sha256
of every file of the run); :func:`compute_run_dir` names the directory,
:func:`read_index` reads the index back and :func:`verify_archived_run`
checks a run against its recorded hashes. Paths are sanitised, directories
are never overwritten, every file is written atomically and JSON is strict
(non-finite floats → ``null``).

This module is the public home of these names; the implementation lives in
:mod:`figaroh._run.archive`.
"""

from __future__ import annotations

from figaroh._run.archive import (
    INDEX_FILE,
    RunCheck,
    archive_run,
    compute_run_dir,
    read_index,
    verify_archived_run,
)
from figaroh._run.naming import _safe_path_component as _safe_path_component

__all__ = [
    "INDEX_FILE",
    "RunCheck",
    "archive_run",
    "compute_run_dir",
    "read_index",
    "verify_archived_run",
]
