"""Import only what the call needs; a missing optional package is a named error.

* Importing every public figaroh module in a fresh interpreter loads none of
  the heavy or optional packages (scipy.linalg/optimize/signal/stats/interpolate,
  matplotlib, picos, cvxopt, clarabel, cyipopt, viser, trimesh, yourdfpy,
  pandas, mujoco, meshcat, dask, ``pinocchio.visualize``): the functions that
  use them import them.
* :func:`figaroh._optional.require` raises
  :class:`~figaroh.errors.MissingDependencyError` naming the package, what
  needs it and ``pip install "figaroh[<extra>]"``.
* Optimal trajectory generation without cyipopt raises that error at the call
  instead of returning zero solved segments.

No timing here: ``benchmarks/bench_startup.py`` measures the start-up time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from figaroh._optional import missing_message, require
from figaroh.errors import FigarohError, MissingDependencyError

#: Packages no ``import figaroh…`` may load.
HEAVY = (
    "scipy.linalg",
    "scipy.optimize",
    "scipy.signal",
    "scipy.stats",
    "scipy.interpolate",
    "scipy.sparse",
    "matplotlib",
    "picos",
    "cvxopt",
    "clarabel",
    "cyipopt",
    "viser",
    "trimesh",
    "yourdfpy",
    "pandas",
    "mujoco",
    "meshcat",
    "dask",
    "pinocchio.visualize",
)

_WALK = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    import figaroh
    names = ["figaroh"]
    for info in pkgutil.walk_packages(figaroh.__path__, "figaroh."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    for name in names:
        importlib.import_module(name)
    heavy = json.loads(sys.argv[1])
    loaded = {h: sorted(m for m in sys.modules if m == h or m.startswith(h + ".")) for h in heavy}
    print(json.dumps({"modules": names, "loaded": {h: m for h, m in loaded.items() if m}}))
    """
)


def _fresh_python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_importing_every_public_module_loads_no_heavy_package():
    proc = _fresh_python(_WALK, json.dumps(HEAVY))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(report["modules"]) > 50, report["modules"]  # the walk saw the package
    assert "figaroh.identification.base_identification" in report["modules"]
    assert "figaroh.calibration.base_calibration" in report["modules"]
    assert "figaroh.visualisation" in report["modules"]
    assert report["loaded"] == {}, f"imported at module level: {report['loaded']}"


#: Standard-library and light packages whose import costs a task module
#: 10-30 ms each (regex tables, OpenSSL, the XML parser), imported by the
#: call that reads or writes YAML, hashes or edits a URDF.
_DEFERRED = {
    "figaroh.identification.base_identification": ("yaml", "xml.etree", "hashlib", "_hashlib"),
    "figaroh.calibration.base_calibration": ("yaml", "xml.etree", "hashlib", "_hashlib"),
}

#: figaroh's own modules that a plain least-squares identification never calls
#: (physical steps, URDF export, verification, HTML report, the viewer):
#: reached as lazy attributes of their package (declared in its ``__init__.pyi``)
#: and imported on first access.
_DEFERRED_OWN = (
    "figaroh.identification.physical_fit",
    "figaroh.identification.physical_consistency",
    "figaroh.identification.reconstruction",
    "figaroh.identification.cad_constraints",
    "figaroh.identification._pipeline_physical",
    "figaroh.identification._verification",
    "figaroh.tools.urdf_exporter",
    "figaroh.tools.robotvisualization",
    "figaroh._run.verdict",
    "figaroh.data.trajectory",
    "figaroh.data.observations",
    "figaroh.tools.identification_report",
    "figaroh._run.html",
    "figaroh._run.charts",
)


@pytest.mark.parametrize("module", sorted(_DEFERRED))
def test_task_module_import_defers_yaml_xml_and_hashlib(module):
    code = (
        "import json, sys\n"
        f"import {module}\n"
        "names = json.loads(sys.argv[1])\n"
        "print(json.dumps(sorted(m for m in sys.modules for n in names "
        "if m == n or m.startswith(n + '.'))))\n"
    )
    proc = _fresh_python(code, json.dumps(_DEFERRED[module]))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_identification_import_defers_the_steps_a_plain_fit_never_calls():
    code = (
        "import json, sys\n"
        "import figaroh.identification.base_identification as bi, figaroh.tools.robot\n"
        "import figaroh.identification as ident, figaroh.tools as tools\n"
        "names = json.loads(sys.argv[1])\n"
        "before = sorted(n for n in names if n in sys.modules)\n"
        "ident._verification.verify_identification, tools.robotvisualization, bi.LinearSolver\n"
        "print(json.dumps([before, sorted(n for n in names if n in sys.modules)]))\n"
    )
    proc = _fresh_python(code, json.dumps(_DEFERRED_OWN))
    assert proc.returncode == 0, proc.stderr
    before, after = json.loads(proc.stdout.strip().splitlines()[-1])
    assert before == []
    # the first attribute access imports the module (and what it needs)
    assert {"figaroh.identification._verification", "figaroh.tools.robotvisualization"} <= set(
        after
    )


def test_require_names_package_purpose_and_extra():
    with pytest.raises(MissingDependencyError) as info:
        require("figaroh_no_such_package", extra="ipopt", purpose="A test feature")
    err = info.value
    assert isinstance(err, FigarohError) and isinstance(err, ImportError)
    message = str(err)
    assert "A test feature" in message
    assert "'figaroh_no_such_package'" in message
    assert 'pip install "figaroh[ipopt]"' in message
    assert (err.package, err.extra, err.name) == ("figaroh_no_such_package", "ipopt", err.package)
    assert isinstance(err.__cause__, ImportError)


def test_require_returns_the_module_and_honours_a_blocked_import(monkeypatch):
    assert require("json") is json
    monkeypatch.setitem(sys.modules, "cyipopt", None)  # what an absent package looks like
    with pytest.raises(MissingDependencyError, match=r"figaroh\[ipopt\]"):
        require("cyipopt", extra="ipopt", purpose="IPOPT")


def test_missing_message_without_extra_names_the_distribution():
    text = missing_message("pin", purpose="The regressor")
    assert text.startswith("The regressor needs the 'pin' package")
    assert "pip install pin" in text and "figaroh[" not in text


def test_optimal_trajectory_without_cyipopt_raises_at_the_call(monkeypatch, ur10_robot):
    """Not zero solved segments and a log line: the error, before any work."""
    from figaroh.optimal import BaseOptimalTrajectory

    config = ROOT / "config" / "ur10_unified_config.yaml"
    joints = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint"]
    opt = BaseOptimalTrajectory(ur10_robot, joints, config, rng=0)
    monkeypatch.setitem(sys.modules, "cyipopt", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "figaroh\[ipopt\]"') as info:
        opt.solve(stack_reps=1)
    assert info.value.package == "cyipopt"
