"""Verification verdicts: where figaroh 1.0.2 documents them.

:class:`VerificationVerdict` (the return type of ``verify()``),
:class:`ThresholdCheck`, :func:`evaluate_thresholds` and
:func:`build_provenance_metadata` are defined in the run-services layer
(:mod:`figaroh._run.verdict`, :mod:`figaroh._run.provenance`) and re-exported
here, so scripts importing them from this module keep working. The
verification semantics are documented in :mod:`figaroh._run.verdict`.
"""

from __future__ import annotations

from figaroh._run.provenance import build_provenance_metadata
from figaroh._run.verdict import (
    CALIBRATION_DEFAULT_THRESHOLDS,
    CHECK_STATUSES,
    IDENTIFICATION_DEFAULT_THRESHOLDS,
    VERIFICATION_SCOPES,
    ThresholdCheck,
    VerificationVerdict,
    evaluate_thresholds,
    scoped_verification,
)

__all__ = [
    "CALIBRATION_DEFAULT_THRESHOLDS",
    "CHECK_STATUSES",
    "IDENTIFICATION_DEFAULT_THRESHOLDS",
    "VERIFICATION_SCOPES",
    "ThresholdCheck",
    "VerificationVerdict",
    "build_provenance_metadata",
    "evaluate_thresholds",
    "scoped_verification",
]
