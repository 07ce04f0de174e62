"""Verification verdicts: where figaroh 1.0.2 documents them.

:class:`VerificationVerdict` (the return type of ``verify()``),
:class:`ThresholdCheck`, :func:`evaluate_thresholds` and
:func:`build_provenance_metadata` are defined in the run-services layer
(:mod:`figaroh._run.verdict`, :mod:`figaroh._run.provenance`) and re-exported
here, so scripts importing them from this module keep working.

Verification semantics (evidence based): a check is ``pass``, ``fail`` or
``not_evaluated``; missing required evidence is ``not_evaluated`` (never a
pass); non-finite evidence (NaN, ±inf) fails; a verdict passes only when every
required check passes, and an empty policy is ``not_evaluated``.
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
