"""MkDocs hook: the walkthrough notebooks, executed at build time, as pages with their outputs.

Every ``examples/notebooks/*.ipynb`` becomes ``notebooks/<name>.md``: its
markdown cells as they are, each code cell as a Python block followed by its
outputs (printed text as a text block, figures as PNG files next to the page,
``notebooks/<name>/cell<k>_<n>.png``). Nothing is written into ``docs/``.

The notebooks are executed first (``examples/notebooks/execute_notebooks.py``,
the code ``make notebooks-outputs`` and ``tests/test_notebooks.py`` use: a
temporary working folder, the installed figaroh only), so the site shows what
the current code prints; a cell that raises fails the build. ``FIGAROH_DOCS_NOTEBOOKS=stored`` renders the outputs stored in the
notebooks instead (a quick local build). Plain Markdown and PNG only: no
JavaScript, nothing fetched.
"""

from __future__ import annotations

import base64
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "examples" / "notebooks"
#: Folder of the generated pages inside the site.
PAGES = "notebooks"

log = logging.getLogger("mkdocs.hooks.notebooks")


def _load(path: Path):
    """The notebook at ``path``, executed unless ``FIGAROH_DOCS_NOTEBOOKS=stored``."""
    import nbformat

    if os.environ.get("FIGAROH_DOCS_NOTEBOOKS", "") == "stored":
        return nbformat.read(path, as_version=4)
    sys.path.insert(0, str(NOTEBOOK_DIR))
    try:
        import execute_notebooks
    finally:
        sys.path.remove(str(NOTEBOOK_DIR))
    nb, seconds = execute_notebooks.execute(path)
    log.info("executed %s in %.1f s", path.name, seconds)
    return nb


def _fence(text: str, lang: str) -> str:
    """A fenced block long enough for any backticks inside ``text``."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}\n"


def render(nb, stem: str) -> tuple[str, dict[str, bytes]]:
    """Markdown of an (executed) notebook and its figures.

    Args:
        nb: The notebook (``nbformat`` v4 node).
        stem: Page name; figures are ``<stem>/cell<k>_<n>.png`` beside the page.

    Returns:
        ``(markdown, {path inside the site: PNG bytes})``.

    Raises:
        RuntimeError: A cell output is an error (the notebook did not run through).
    """
    parts: list[str] = []
    images: dict[str, bytes] = {}
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            parts.append(cell.source.rstrip() + "\n")
            continue
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        parts.append(_fence(cell.source, "python"))
        printed = ""  # consecutive printed text is one block
        for n, out in enumerate(cell.get("outputs", [])):
            if out.output_type == "error":
                raise RuntimeError(f"{stem}: cell {k} raised {out.ename}: {out.evalue}")
            if out.output_type == "stream":
                printed += out.text if out.name == "stdout" else ""
                continue
            if printed.strip():
                parts.append(_fence(printed, "text"))
            printed = ""
            data = out.get("data", {})
            if "image/png" in data:
                name = f"cell{k}_{n}.png"
                images[f"{PAGES}/{stem}/{name}"] = base64.b64decode(data["image/png"])
                parts.append(f"![figure of cell {k}]({stem}/{name})\n")
            elif "text/plain" in data:
                parts.append(_fence(data["text/plain"], "text"))
        if printed.strip():
            parts.append(_fence(printed, "text"))
    source = f"examples/notebooks/{stem}.ipynb"
    parts.append(f"<small>Rendered from `{source}`, executed when this site was built.</small>\n")
    return "\n".join(parts), images


def on_files(files, config, **kwargs):
    """Add one page per notebook (executed now) and its figures."""
    from mkdocs.structure.files import File

    for path in sorted(NOTEBOOK_DIR.glob("*.ipynb")):
        markdown, images = render(_load(path), path.stem)
        files.append(File.generated(config, f"{PAGES}/{path.stem}.md", content=markdown))
        for name, png in images.items():
            files.append(File.generated(config, name, content=png))
    return files
