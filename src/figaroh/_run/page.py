"""Self-contained report pages: sections, the document shell and the atomic write."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from figaroh._run.charts import _SERIES_CHART_SCRIPT
from figaroh._run.html import _esc
from figaroh._run.resources import read_asset
from figaroh.utils.fileio import atomic_write_text, make_folder

logger = logging.getLogger(__name__)

__all__ = ["_STYLE", "_report_document", "_report_section", "_write_report"]

#: Style sheet of every report page (inlined; no external resource).
_STYLE = read_asset("report.css")
_ARROW_STYLE = """
.arrow-good { color:var(--good); font-weight:600; }
.arrow-bad { color:var(--poor); font-weight:600; }
"""


def _report_section(section_id: str, heading: str, inner_html: str, card: bool = True) -> str:
    """``<section>`` of a report page; ``heading`` is escaped, ``inner_html`` is trusted markup."""
    body = f'<div class="card">{inner_html}</div>' if card else inner_html
    return (
        f'  <section id="{_esc(section_id)}">\n    <h2>{_esc(heading)}</h2>\n    {body}\n'
        "  </section>\n"
    )


def _report_document(
    title: str, sections: Sequence[str], footer: str, extra_style: str = ""
) -> str:
    """Self-contained report page: inline CSS and chart script, no external resource."""
    timestamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title>
<style>{_STYLE}{_ARROW_STYLE}{extra_style}</style>
</head>
<body>
<div class="page">
  <h1>{_esc(title)}</h1>
  <p class="subtitle">Generated {_esc(timestamp)}</p>

{chr(10).join(sections)}
  <footer>{_esc(footer)}</footer>
</div>
<script>{_SERIES_CHART_SCRIPT}</script>
</body>
</html>
"""


def _write_report(doc: str, output_path: Any, what: str) -> None:
    """Write a report page atomically when ``output_path`` is given."""
    if output_path is None:
        return
    path = Path(output_path)
    make_folder(path.parent)
    atomic_write_text(path, doc)
    logger.info("%s report written to %s", what, path)
