"""Run provenance: what produced a given fit.

:func:`collect_run_provenance` builds the single record of "what produced this
result" (reference model, configuration file with sha256, software versions,
git state of figaroh's own source checkout, input data files with sha256,
asset identity, timestamps) that the terminal report, the HTML report, the
JSON verdict and the run archive all read; it never raises (a failed lookup
is ``"unavailable: <reason>"``).
:func:`collect_splits` describes the training / validation data splits.

This module is the public home of these names; the implementation lives in
:mod:`figaroh._run.provenance`.
"""

from __future__ import annotations

from figaroh._run.provenance import TASKS, collect_run_provenance, collect_splits

__all__ = ["TASKS", "collect_run_provenance", "collect_splits"]
