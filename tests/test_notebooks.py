"""The walkthrough notebooks run top to bottom and are stored with up-to-date outputs.

Each notebook asserts its own results against an independent truth (the
simulation ground truth, Pinocchio's RNEA / forward kinematics on the exported
URDF), so a notebook that executes is a notebook whose claims hold. The
outputs are stored (the repository page renders them): they must come from
the current code cells (``metadata["figaroh"]["code_sha256"]``, written by
``make notebooks-outputs``), hold no error and no machine-specific path, and
match a fresh execution (the same cells print and draw).

The notebooks need only what a ``pip install figaroh`` user has: they import
figaroh, its dependencies and the standard library, name no file of the
repository, and run in a temporary folder with nothing of the checkout
importable (a check cell run first in the kernel proves it).
``tests/test_wheel.py`` runs one against the built wheel.
"""

from __future__ import annotations

import ast
import importlib.util
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


#: Top-level modules a notebook may import: figaroh and what installing it brings.
INSTALLED = {"figaroh", "numpy", "pinocchio", "matplotlib"}


def isolation_check(root: Path = ROOT) -> str:
    """Code of the check cell: nothing of the checkout at ``root`` is reachable from the kernel.

    The folder figaroh itself is imported from (``src/`` of an editable
    install) and the virtual environment's folders (``.venv/`` may sit in the
    checkout) are the repository folders allowed on ``sys.path``.
    """
    spec = importlib.util.find_spec("figaroh")
    package_parent = str(Path(next(iter(spec.submodule_search_locations))).resolve().parent)
    return f"""
import importlib.util
import sys
from pathlib import Path

repo = Path({str(root.resolve())!r})
figaroh_dir, venv = Path({package_parent!r}), Path(sys.prefix).resolve()
on_path = [Path(p).resolve() for p in sys.path if p]
inside = [p for p in on_path if p == repo or repo in p.parents]
leaks = [p for p in inside if p != figaroh_dir and p != venv and venv not in p.parents]
assert not leaks, f"repository folders on sys.path: {{leaks}}"
assert repo not in [Path.cwd().resolve(), *Path.cwd().resolve().parents], Path.cwd()
for name in ("simulate", "identification", "calibration", "execute_notebooks", "conftest"):
    assert importlib.util.find_spec(name) is None, f"{{name}} is importable"
"""


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
def test_notebook_needs_only_the_installed_package(path: Path):
    """Imports of figaroh, its dependencies and the standard library; no repository path."""
    nb = nbformat.read(path, as_version=4)
    imported = set()
    for cell in _code_cells(nb):
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {a.name.partition(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path.name}: relative import"
                imported.add(node.module.partition(".")[0])
        for text in ("sys.path", "pyproject", "examples/", "config/", "shared/", "ROOT"):
            assert text not in cell.source, f"{path.name} refers to the checkout: {text!r}"
    foreign = imported - INSTALLED - set(sys.stdlib_module_names)
    assert not foreign, f"{path.name} imports {sorted(foreign)}"
    assert {"figaroh", "numpy"} <= imported


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_and_reproduces_its_outputs(path: Path, tmp_path: Path):
    if os.environ.get("CI") or os.environ.get("FIGAROH_REQUIRE_NOTEBOOKS"):
        from nbclient import NotebookClient  # noqa: F401 - must be installed in CI
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # in a temporary folder, nothing of the checkout importable (the check cell asserts it);
    # raises CellExecutionError (with the cell and traceback) on failure
    nb, elapsed = execute_notebooks.execute(path, timeout=TIME_LIMIT, setup_cell=isolation_check())
    errors = [o for c in _code_cells(nb) for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert elapsed < TIME_LIMIT, f"{path.name} took {elapsed:.0f} s"
    stored = nbformat.read(path, as_version=4)
    assert _signature(nb) == _signature(stored), f"{path.name}: outputs changed; {REFRESH}"
    # the executed copy goes to tmp_path, never over the stored notebook
    nbformat.write(nb, tmp_path / path.name)
