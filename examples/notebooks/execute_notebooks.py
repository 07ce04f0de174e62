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

The notebooks depend on the installed ``figaroh`` package only, as a user's
do: each runs in a fresh temporary working folder, in a kernel whose
``PYTHONPATH`` holds nothing but the folder the calling interpreter imports
``figaroh`` from (its ``site-packages``, or ``src/`` of an editable install),
so nothing of this checkout (``examples/``, ``config/``) can be imported or
opened by a relative path.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import logging
import os
import subprocess
import sys
import tempfile
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


def kernel_env() -> dict[str, str]:
    """Environment of the notebook kernel: this one, with ``PYTHONPATH`` = figaroh's folder only.

    Returns:
        ``os.environ`` with ``MPLBACKEND`` set to the inline backend and
        ``PYTHONPATH`` replaced by the folder holding the ``figaroh`` package
        this interpreter imports (so the kernel runs the same figaroh, and
        nothing else the caller's ``PYTHONPATH`` held).
    """
    spec = importlib.util.find_spec("figaroh")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("figaroh is not installed: the notebooks import it")
    package = Path(next(iter(spec.submodule_search_locations)))
    return {**os.environ, "MPLBACKEND": INLINE_BACKEND, "PYTHONPATH": str(package.parent)}


def execute(
    path: Path,
    timeout: int = CELL_TIMEOUT,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    setup_cell: str | None = None,
) -> tuple[Any, float]:
    """Execute a copy of the notebook at ``path`` as a user would, from the installed figaroh.

    Args:
        path: The ``.ipynb`` file (never modified here).
        timeout: Budget of one cell [s].
        cwd: Working folder of the kernel (default: a fresh temporary folder,
            removed afterwards).
        env: Environment of the kernel (default: :func:`kernel_env`).
        setup_cell: Code run before the notebook's first cell (a check of the
            kernel's surroundings); its cell is left out of the result.

    Returns:
        ``(notebook, seconds)``: the executed notebook (outputs, execution
        counts, ``metadata["figaroh"]["code_sha256"]``) and the wall time.

    Raises:
        nbclient.exceptions.CellExecutionError: A cell raised (the message
            holds the cell and its traceback).
    """
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    if setup_cell is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(setup_cell))
    with tempfile.TemporaryDirectory(prefix="figaroh_notebook_") as scratch:
        client = NotebookClient(
            nb,
            kernel_name="python3",
            timeout=timeout,
            resources={"metadata": {"path": str(cwd or scratch)}},
        )
        start = time.perf_counter()
        # the kernel's own start-up chatter on stderr is not the notebook's output
        client.execute(stderr=subprocess.DEVNULL, env=env if env is not None else kernel_env())
        elapsed = time.perf_counter() - start
    if setup_cell is not None:
        del nb.cells[0]
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.execution_count:
                cell.execution_count -= 1
                for out in cell.outputs:
                    if "execution_count" in out:
                        out.execution_count = cell.execution_count
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
