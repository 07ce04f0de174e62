"""Shared pytest fixtures: robot URDF paths and the shared real-data folder."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import platform
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Tuple

import pytest

from figaroh.cli.main import main as figaroh_main
from figaroh.tools.robot_paths import example_robot_data_dir


def reference_blas_env() -> dict[str, str]:
    """Environment that runs OpenBLAS's Haswell (AVX2 + FMA) kernels, or ``{}``.

    OpenBLAS picks its kernels from the CPU at load time, and kernels of
    different widths round differently in the last bits: on an AVX-512 CPU
    (SkylakeX kernels) two exactly recorded ``qr_rules`` expression values of
    the golden kit differ by 1.6e-13 relative, and the ill-conditioned TALOS
    calibration converges to a different round-off. The golden values were
    recorded with the AVX2 kernels, so the golden-kit subprocesses run with
    them (on an x86-64 CPU with AVX2 and FMA, unless ``OPENBLAS_CORETYPE`` is
    set). Every other test runs with the kernels OpenBLAS picks, as a user's
    run does; the library never sets the variable.
    """
    if os.environ.get("OPENBLAS_CORETYPE") or platform.machine() not in ("x86_64", "AMD64"):
        return {}
    try:
        flags = set(Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace").split())
    except OSError:
        return {}
    return {"OPENBLAS_CORETYPE": "Haswell"} if {"avx2", "fma"} <= flags else {}


ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


def load_example(relative: str, name: str) -> ModuleType:
    """Import ``examples/<relative>`` under the unique module name ``name``.

    Every example ships an ``identification.py``: importing them by file under
    distinct names keeps ``import identification`` from returning whichever
    example a previous test imported first.
    """
    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / "examples" / relative
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def erd_path(relative: str) -> Path:
    """Path of a file inside the installed ``example-robot-data`` robots folder."""
    base = example_robot_data_dir()
    if base is None:
        pytest.skip("example-robot-data is not installed")
    path = base / relative
    if not path.exists():
        pytest.skip(f"{relative} is not shipped by this example-robot-data version")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The ``../shared/data`` folder of real robot data (skips when absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared robot data not found at {SHARED_DATA}")
    return SHARED_DATA


#: The UR10's six joints, in model order (example-robot-data's ``ur10_robot.urdf``).
UR10_JOINTS = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
)


def run_cli(*args: Any) -> Tuple[int, str, str]:
    """``figaroh ARGS`` in process: ``(exit code, stdout, stderr)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = figaroh_main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="session")
def ur10_urdf() -> Path:
    return erd_path("ur_description/urdf/ur10_robot.urdf")


@pytest.fixture(scope="session")
def tiago_urdf() -> Path:
    return erd_path("tiago_description/robots/tiago.urdf")


@pytest.fixture(scope="session")
def talos_urdf() -> Path:
    return erd_path("talos_data/robots/talos_reduced.urdf")


@pytest.fixture(scope="session")
def panda_urdf() -> Path:
    return erd_path("panda_description/urdf/panda.urdf")


@pytest.fixture(scope="session")
def ur10_robot(ur10_urdf):
    from figaroh.tools.robot import Robot

    return Robot(str(ur10_urdf), package_dirs=None, load_geometry=False)
