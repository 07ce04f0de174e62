"""The walkthrough notebooks run top to bottom and are stored without outputs.

Each notebook asserts its own results against an independent truth (the
simulation ground truth, Pinocchio's RNEA / forward kinematics on the exported
URDF), so a notebook that executes is a notebook whose claims hold.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "examples" / "notebooks").glob("*.ipynb"))
#: Budget of one notebook [s] (each runs in well under it on a 2-core machine).
TIME_LIMIT = 120

nbformat = pytest.importorskip("nbformat")


def test_both_walkthroughs_exist():
    names = {p.name for p in NOTEBOOKS}
    assert {"identification_walkthrough.ipynb", "calibration_walkthrough.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code cell"
    for k, cell in enumerate(code):
        assert cell.outputs == [], f"{path.name}: code cell {k} has stored outputs"
        assert cell.execution_count is None, f"{path.name}: code cell {k} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch):
    if os.environ.get("CI") or os.environ.get("FIGAROH_REQUIRE_NOTEBOOKS"):
        from nbclient import NotebookClient  # noqa: F401 - must be installed in CI
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=TIME_LIMIT,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError (with the cell and traceback) on failure
    elapsed = time.perf_counter() - start
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert not errors
    assert elapsed < TIME_LIMIT, f"{path.name} took {elapsed:.0f} s"
    # the executed copy goes to tmp_path, never over the stored notebook
    nbformat.write(nb, tmp_path / path.name)
