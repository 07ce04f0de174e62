"""Verdict dataclasses, scoped verification and the HTML pieces of the reports.

This module re-exports names that now live in the run-services layer
(:mod:`figaroh._run.verdict`, :mod:`figaroh._run.json_io`,
:mod:`figaroh._run.html`, :mod:`figaroh._run.charts`, :mod:`figaroh._run.page`
and :mod:`figaroh._run.provenance`), so existing imports keep working.
:class:`VerificationVerdict` is the return type of ``verify()``.

Verification semantics (evidence based): a check is ``pass``, ``fail`` or
``not_evaluated``; missing required evidence is ``not_evaluated`` (never a
pass); non-finite evidence (NaN, ±inf) fails; a verdict passes only when every
required check passes, and an empty policy is ``not_evaluated``.
"""

from __future__ import annotations

from figaroh._run.charts import _series_panel_section
from figaroh._run.html import (
    HEALTHY_INSIGHT,
    UNCERTAINTY_CAUTION_PCT,
    UNCERTAINTY_WARN_PCT,
    VALIDATION_IMPROVEMENT_WARN_PCT,
    _change_cell,
    _correlation_section,
    _esc,
    _fmt,
    _insights_section,
    _kv_rows,
    _names_text,
    _param_uncertainty_section,
    _provenance_section,
    _run_title,
    _uncertainty_tier,
    html_escape,
)
from figaroh._run.json_io import verification_json_data, write_verification_json
from figaroh._run.page import _report_document, _report_section, _write_report
from figaroh._run.provenance import build_provenance_metadata
from figaroh._run.values import _finite_or_none
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
    "HEALTHY_INSIGHT",
    "IDENTIFICATION_DEFAULT_THRESHOLDS",
    "UNCERTAINTY_CAUTION_PCT",
    "UNCERTAINTY_WARN_PCT",
    "VALIDATION_IMPROVEMENT_WARN_PCT",
    "VERIFICATION_SCOPES",
    "ThresholdCheck",
    "VerificationVerdict",
    "_change_cell",
    "_correlation_section",
    "_esc",
    "_finite_or_none",
    "_fmt",
    "_insights_section",
    "_kv_rows",
    "_names_text",
    "_param_uncertainty_section",
    "_provenance_section",
    "_report_document",
    "_report_section",
    "_run_title",
    "_series_panel_section",
    "_uncertainty_tier",
    "_write_report",
    "build_provenance_metadata",
    "evaluate_thresholds",
    "html_escape",
    "scoped_verification",
    "verification_json_data",
    "write_verification_json",
]
