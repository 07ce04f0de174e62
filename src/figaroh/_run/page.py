"""Self-contained report pages: sections, the page shell (``page.html.j2``) and the atomic write."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from figaroh._run.charts import _SERIES_CHART_SCRIPT
from figaroh._run.resources import read_asset
from figaroh._run.templating import macro, render, trusted
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
    """``<section>`` of a report page; ``heading`` is escaped, ``inner_html`` is trusted markup.

    ``inner_html`` must be markup figaroh built: a rendered macro, or text
    escaped with :func:`~figaroh._run.html.html_escape`.
    """
    return str(
        macro("components.html.j2", "section")(section_id, heading, trusted(str(inner_html)), card)
    )


def _report_document(
    title: str, sections: Sequence[str], footer: str, extra_style: str = ""
) -> str:
    """Self-contained report page: inline CSS and chart script, no external resource.

    Renders ``templates/page.html.j2`` with the sections (markup from
    :func:`_report_section`) in order.
    """
    return render(
        "page.html.j2",
        **_page_context(title, footer, extra_style),
        sections=[trusted(str(s)) for s in sections],
    )


def _page_context(title: str, footer: str, extra_style: str = "") -> dict:
    """Variables of ``page.html.j2``: title, time stamp, footer, style sheet and chart script."""
    return {
        "title": title,
        "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "footer": footer,
        "style": trusted(_STYLE + _ARROW_STYLE + extra_style),
        "script": trusted(_SERIES_CHART_SCRIPT),
    }


def _write_report(doc: str, output_path: Any, what: str) -> None:
    """Write a report page atomically when ``output_path`` is given."""
    if output_path is None:
        return
    path = Path(output_path)
    make_folder(path.parent)
    atomic_write_text(path, doc)
    logger.info("%s report written to %s", what, path)
