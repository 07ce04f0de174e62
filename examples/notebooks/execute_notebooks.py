"""Execute the walkthrough notebooks and (optionally) store their outputs.

The notebooks are stored *with* their outputs, so that the repository page
shows the figures and the printed results. Each stored notebook records the
SHA-256 of its code cells (``metadata["figaroh"]["code_sha256"]``) at the
time it was executed; ``tests/test_notebooks.py`` fails when a code cell
changed without the outputs being refreshed. After editing a notebook::

    make notebooks-outputs                                   # every notebook here
    .venv/bin/python examples/notebooks/execute_notebooks.py --write a.ipynb

Without ``--write`` the notebooks are executed and nothing is written. The
documentation build (``docs/_hooks/notebooks.py``) executes them the same way.

Outputs are kept small and reproducible: figures are PNG (the inline backend
at its default resolution), every notebook seeds its simulation, and the
execution metadata (timings) is dropped.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat

logger = logging.getLogger("figaroh_examples.notebooks")

HERE = Path(__file__).resolve().parent
#: Budget of one cell [s].
CELL_TIMEOUT = 120
#: Matplotlib backend of the kernel: figures become PNG outputs.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def notebooks(folder: Path = HERE) -> list[Path]:
    """The walkthrough notebooks of ``folder``, sorted by name."""
    return sorted(folder.glob("*.ipynb"))


def code_sha256(nb: Any) -> str:
    """SHA-256 of the code cells' sources (in order, NUL-separated)."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        if cell.cell_type == "code":
            digest.update(cell.source.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _tidy(nb: Any) -> None:
    """Drop the volatile execution metadata (timings, widget state) of every cell."""
    for cell in nb.cells:
        for key in ("execution", "collapsed", "scrolled"):
            cell.metadata.pop(key, None)
    nb.metadata.pop("widgets", None)


def execute(path: Path, timeout: int = CELL_TIMEOUT) -> tuple[Any, float]:
    """Execute a copy of the notebook at ``path`` in its own folder.

    Args:
        path: The ``.ipynb`` file (never modified here).
        timeout: Budget of one cell [s].

    Returns:
        ``(notebook, seconds)``: the executed notebook (outputs, execution
        counts, ``metadata["figaroh"]["code_sha256"]``) and the wall time.

    Raises:
        nbclient.exceptions.CellExecutionError: A cell raised (the message
            holds the cell and its traceback).
    """
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout,
        resources={"metadata": {"path": str(path.parent)}},
    )
    previous = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    start = time.perf_counter()
    try:
        # the kernel's own start-up chatter on stderr is not the notebook's output
        client.execute(stderr=subprocess.DEVNULL)
    finally:
        if previous is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = previous
    elapsed = time.perf_counter() - start
    _tidy(nb)
    nb.metadata["figaroh"] = {"code_sha256": code_sha256(nb)}
    return nb, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all here)")
    parser.add_argument("--write", action="store_true", help="store the outputs in place")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for path in args.paths or notebooks():
        nb, seconds = execute(path)
        if args.write:
            nbformat.write(nb, path)
        logger.info("%s %s (%.1f s)", "wrote   " if args.write else "executed", path, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
