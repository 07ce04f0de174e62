"""Static, offline two-run comparison page.

Unlike :mod:`figaroh.tools.report` and
:mod:`figaroh.tools.identification_report`, this module renders no run at
generation time. It emits one self-contained HTML file that a person opens in
a browser and then loads two ``*_verification.json`` files into (drag and drop
or file picker) — the exports of ``BaseIdentification.export_verification_report()``
/ ``BaseCalibration.export_verification_report()``. Everything happens
client-side in plain JavaScript: no backend, no network request, the files
never leave the page.

Before anything is compared, a compatibility check runs on the exports'
``compat`` (and ``metadata.task`` / ``schema_version``) fields:

===========================  =============================================  ======================
criterion                    compared                                       blocks the comparison
===========================  =============================================  ======================
Domain                       ``metadata.task`` (else inferred from compat)  when different/unknown
Active joints / DOF names    ``compat.active_joints`` / ``compat.dof_names`` when different/unknown
Schema version               ``schema_version``                             when different
Decimation (identification)  ``compat.decimate``                            when different
Sample count                 ``compat.sample_count``                        ratio > 2
Configuration sha256         ``compat.config_sha256``                       both known, different
Verification scope           ``scope``                                      never (shown)
===========================  =============================================  ======================

A blocked comparison stays hidden until the explicit "Compare anyway" box is
ticked (a banner then marks the results as forced); loading a new file
unticks it. The results are a metric diff table (Run A, Run B, Δ = B − A,
% change = Δ/|A|·100), a check-status table and an overlaid series chart
(both runs' residual, prediction, measurement or nominal series of one joint
/ DOF, wheel or drag to zoom, hover to read values). ``series.nominal`` /
``fitted`` / ``measured`` may map each name to its samples (identification
export) or be lists aligned with ``series.joint_names`` / ``dof_names``.

Every string taken from the loaded files is inserted with ``textContent``
(never as markup), so a joint named ``<script>alert(1)</script>`` is shown as
text.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from figaroh._run.charts import _CHART_ENGINE_SCRIPT
from figaroh._run.html import _esc
from figaroh._run.page import _STYLE, _write_report
from figaroh._run.resources import read_asset

logger = logging.getLogger(__name__)

__all__ = ["SAMPLE_COUNT_RATIO_LIMIT", "generate_compare_page"]

#: Two runs whose sample counts differ by more than this factor are blocked.
SAMPLE_COUNT_RATIO_LIMIT = 2.0

#: Extra style of the compare page (drop zones, banners, series controls).
_COMPARE_STYLE = read_asset("compare.css")
#: Client-side driver: file loading, compatibility check, diff tables, overlay chart.
_COMPARE_DRIVER_SCRIPT = read_asset("compare.js")
#: Static markup of the page body (loader, compatibility and results sections).
_COMPARE_BODY = read_asset("compare_body.html")


def _compare_head(report_title: str, timestamp: str) -> str:
    """``<head>`` and page heading (title and timestamp escaped)."""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(report_title)}</title>
<style>{_STYLE}{_COMPARE_STYLE}</style>
</head>
<body data-ratio-limit="{_esc(f"{SAMPLE_COUNT_RATIO_LIMIT:g}")}">
<div class="page">
  <h1>{_esc(report_title)}</h1>
  <p class="subtitle">Generated {_esc(timestamp)} &middot; static, offline — load two
    verification exports below. Nothing leaves this page.</p>

"""


def generate_compare_page(output_path: str | None = None, title: str | None = None) -> str:
    """Render the static, self-contained two-run comparison page.

    Takes no run object: the page loads two ``export_verification_report()``
    JSON files client-side (drag and drop or file picker), checks that they
    are comparable (see the module docstring; a mismatch blocks the
    comparison until "Compare anyway" is ticked), then renders the metric
    diff table (``Δ = B − A``, ``% = Δ/|A|·100``), the check statuses and an
    overlaid, zoomable series chart. No network request, no backend.

    Args:
        output_path: If given, the HTML is also written there atomically
            (parent folders are created).
        title: Page title (escaped); default ``"FIGAROH — Two-Run Comparison"``.

    Returns:
        The HTML document.
    """
    report_title = title or "FIGAROH — Two-Run Comparison"
    timestamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc = (
        _compare_head(report_title, timestamp)
        + _COMPARE_BODY
        + f"<script>{_CHART_ENGINE_SCRIPT}</script>\n"
        + f"<script>{_COMPARE_DRIVER_SCRIPT}</script>\n"
        + "</body>\n</html>\n"
    )
    _write_report(doc, output_path, "compare")
    return doc
