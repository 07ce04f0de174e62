"""The walkthrough notebooks run top to bottom and are stored with up-to-date outputs.

Each notebook asserts its own results against an independent truth (the
simulation ground truth, Pinocchio's RNEA / forward kinematics on the exported
URDF), so a notebook that executes is a notebook whose claims hold. The
outputs are stored (the repository page renders them): they must come from
the current code cells (``metadata["figaroh"]["code_sha256"]``, written by
``make notebooks-outputs``), hold no error and no machine-specific path, and
match a fresh execution (the same cells print and draw).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import ROOT

NOTEBOOK_DIR = ROOT / "examples" / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
#: Budget of one notebook [s] (each runs in well under it on a 2-core machine).
TIME_LIMIT = 120
REFRESH = "run `make notebooks-outputs` and commit the notebook"

nbformat = pytest.importorskip("nbformat")
sys.path.insert(0, str(NOTEBOOK_DIR))
import execute_notebooks  # noqa: E402


def test_both_walkthroughs_exist():
    names = {p.name for p in NOTEBOOKS}
    assert {"identification_walkthrough.ipynb", "calibration_walkthrough.ipynb"} <= names


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _signature(nb):
    """Per code cell: whether it prints, and the MIME types of its rich outputs (figures).

    Warnings on stderr and the exact printed text are left out: the library's
    wording may change without the notebook being wrong (``make notebooks-outputs``
    refreshes the stored text; the site always shows a fresh run).
    """
    signature = []
    for cell in _code_cells(nb):
        kinds = []
        for out in cell.outputs:
            if out.output_type == "stream":
                if out.name == "stdout" and "stdout" not in kinds:
                    kinds.append("stdout")
            else:
                kinds.append(",".join(sorted(out.get("data", {}))))
        signature.append(kinds)
    return signature


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_with_current_outputs(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = _code_cells(nb)
    assert code, f"{path.name} has no code cell"
    stored = (nb.metadata.get("figaroh") or {}).get("code_sha256")
    assert stored == execute_notebooks.code_sha256(nb), f"{path.name}: stale outputs; {REFRESH}"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), REFRESH
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"], f"{path.name} stored an error"
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name}: no figure"
    text = path.read_text(encoding="utf-8")
    for leak in ("/tmp/", str(ROOT), "Traceback"):
        assert leak not in text, f"{path.name} stores {leak!r}"
    assert len(text) < 250_000, f"{path.name} is {len(text)} bytes: keep the figures small"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_and_reproduces_its_outputs(path: Path, tmp_path: Path):
    if os.environ.get("CI") or os.environ.get("FIGAROH_REQUIRE_NOTEBOOKS"):
        from nbclient import NotebookClient  # noqa: F401 - must be installed in CI
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # raises CellExecutionError (with the cell and traceback) on failure
    nb, elapsed = execute_notebooks.execute(path, timeout=TIME_LIMIT)
    errors = [o for c in _code_cells(nb) for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert elapsed < TIME_LIMIT, f"{path.name} took {elapsed:.0f} s"
    stored = nbformat.read(path, as_version=4)
    assert _signature(nb) == _signature(stored), f"{path.name}: outputs changed; {REFRESH}"
    # the executed copy goes to tmp_path, never over the stored notebook
    nbformat.write(nb, tmp_path / path.name)
