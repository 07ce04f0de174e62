"""Remove outputs and execution counts from the notebooks before committing them.

The walkthroughs are stored without outputs (``tests/test_notebooks.py``
checks it); after running one in Jupyter, strip it::

    .venv/bin/python examples/notebooks/strip_outputs.py            # every notebook here
    .venv/bin/python examples/notebooks/strip_outputs.py a.ipynb    # given files
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def strip(path: Path) -> bool:
    """Strip one notebook in place; returns True when it changed."""
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if cell.outputs or cell.execution_count is not None:
            cell.outputs, cell.execution_count = [], None
            changed = True
        for key in ("execution", "collapsed", "scrolled"):
            changed |= cell.metadata.pop(key, None) is not None
    if changed:
        nbformat.write(nb, path)
    return changed


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(Path(__file__).parent.glob("*.ipynb"))
    for path in paths:
        print(f"{'stripped' if strip(path) else 'clean   '} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
