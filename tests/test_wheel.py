"""The built wheel works on its own: package data, templates, the CLI and the Python API.

The wheel is built offline from this checkout and installed (``--no-deps
--no-index``) into a fresh virtual environment. That environment sees the
third-party packages of the running interpreter through a ``.pth`` file of
plain path lines (which do not run the ``.pth`` hooks of those folders, so the
editable figaroh of the development environment stays invisible): what is
tested is the wheel's own ``figaroh`` package. The calibration walkthrough
notebook runs there too, in a kernel started by that environment's Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, load_example

_ur10 = load_example("ur10/identification.py", "ur10_identification")

N = 400
NOISE = 0.5  # [N·m]
TEMPLATES = ("base_robot_config.yaml", "manipulator_robot.yaml", "humanoid_robot.yaml")


def _setuptools_version() -> tuple[int, ...]:
    try:
        import setuptools
    except ImportError:
        return (0,)
    return tuple(int(p) for p in setuptools.__version__.split(".")[:2] if p.isdigit())


def _local_indexes() -> list[str]:
    """``file://`` package indexes of the pip configuration (no network)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    )
    urls = []
    for line in proc.stdout.splitlines():
        if "index-url" in line:
            value = line.split("=", 1)[1].strip().strip("'\"")
            urls += [u for u in value.split() if u.startswith("file://")]
    return list(dict.fromkeys(urls))


def _build_wheel(dest: Path) -> Path:
    """Build the figaroh wheel into ``dest`` without network access."""
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dest), str(ROOT)]
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    if _setuptools_version() >= (77,):
        cmd.insert(4, "--no-build-isolation")
    else:
        # The build backend of this interpreter is older than build-system.requires:
        # build in isolation from the local package indexes only.
        indexes = _local_indexes()
        if not indexes:
            pytest.skip("setuptools>=77 is not installed and no local package index is configured")
        env.update(PIP_INDEX_URL=indexes[0], PIP_EXTRA_INDEX_URL=" ".join(indexes[1:]))
        env.pop("PIP_FIND_LINKS", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = dest.glob("figaroh-*.whl")
    return wheel


def _dependency_paths() -> list[str]:
    """``sys.path`` folders of the running interpreter except the figaroh sources."""
    stdlib = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
    keep = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry) or entry in stdlib:
            continue
        if Path(entry, "figaroh").exists() or Path(entry).resolve() == (ROOT / "src").resolve():
            continue
        if Path(entry).resolve() == (ROOT / "tests").resolve():
            continue
        if "site-packages" in entry or "dist-packages" in entry:
            keep.append(entry)
    return keep


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory) -> tuple[Path, Path]:
    """``(wheel, venv python)``: the wheel installed into a fresh virtual environment."""
    root = tmp_path_factory.mktemp("wheel")
    wheel = _build_wheel(root / "dist")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "dev_dependencies.pth").write_text("\n".join(_dependency_paths()) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
        # --ignore-installed: the development install's figaroh metadata is visible through
        # the .pth file, and pip would otherwise take it for an installed figaroh and skip
        + ["--no-deps", "--no-index", "--ignore-installed", str(wheel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return wheel, python


def test_wheel_ships_templates_and_report_assets(wheel_env):
    wheel, _ = wheel_env
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in TEMPLATES:
        assert f"figaroh/config/templates/{template}" in names
    assets = sorted(p.name for p in (ROOT / "src/figaroh/_run/assets").iterdir())
    assert assets and all(f"figaroh/_run/assets/{a}" in names for a in assets)
    assert "figaroh/py.typed" in names
    # lazy_loader.attach_stub reads each package's stub when the package is imported
    stubs = sorted(p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src").rglob("*.pyi"))
    assert len(stubs) >= 10 and all(stub in names for stub in stubs), stubs


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MPLBACKEND"] = "Agg"
    return subprocess.run(
        [str(python), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


@pytest.fixture(scope="module")
def outside_project(tmp_path_factory, ur10_urdf) -> tuple[Path, Path, Path]:
    """``(config, train, validation)`` in a folder with no ``templates/`` around it."""
    folder = tmp_path_factory.mktemp("user_project")
    from figaroh.tools.robot import Robot

    robot = Robot(str(ur10_urdf), load_geometry=False)
    train, validation = _ur10.generate_ur10_data(folder / "data", N, NOISE, seed=5, robot=robot)
    config = folder / "ur10.yaml"
    shutil.copy(ROOT / "config" / "ur10_unified_config.yaml", config)
    assert 'extends: "templates/manipulator_robot.yaml"' in config.read_text()
    return config, train, validation


def test_snippet_runs_on_the_installed_wheel(wheel_env, outside_project):
    """The README's flow (load by name, identify from CSV logs) on the installed wheel."""
    _, python = wheel_env
    config, train, validation = outside_project
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        import figaroh
        from figaroh.cli.csv_identification import CSVIdentification
        from figaroh.tools.load_robot import load_robot
        from figaroh.utils.config_parser import PACKAGED_TEMPLATES_DIR, UnifiedConfigParser

        venv = Path({str(python.parent.parent)!r}).resolve()
        assert venv in Path(figaroh.__file__).resolve().parents, figaroh.__file__
        parser = UnifiedConfigParser({str(config)!r})
        parser.parse()
        used = sorted(str(p) for p in parser.template_cache)
        assert used and all(Path(p).parent == PACKAGED_TEMPLATES_DIR for p in used), used
        assert venv in PACKAGED_TEMPLATES_DIR.parents, PACKAGED_TEMPLATES_DIR

        robot = load_robot("ur10", load_geometry=False)
        ident = CSVIdentification(robot, {str(config)!r}, data_dir={str(train)!r})
        ident.identif_config["validation_data_file"] = {str(validation)!r}
        ident.initialize()
        ident.solve(decimate=False, plotting=False)
        assert len(ident.phi_base) > 0
        print("OK", len(ident.phi_base))
        """
    )
    proc = _run(python, "-c", script, cwd=config.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK" in proc.stdout


def test_figaroh_identify_runs_on_the_installed_wheel(wheel_env, outside_project, ur10_urdf):
    _, python = wheel_env
    config, train, validation = outside_project
    figaroh = python.parent / "figaroh"
    assert figaroh.is_file()
    out = config.parent / "out"
    proc = subprocess.run(
        [str(figaroh), "identify", str(config), "--urdf", str(ur10_urdf), "--data", str(train)]
        + ["--validation-data", str(validation), "-o", str(out), "--scope", "execution", "-q"],
        capture_output=True,
        text=True,
        cwd=config.parent,
        env=dict(os.environ, MPLBACKEND="Agg"),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "base_parameters.csv").is_file()


def test_a_walkthrough_notebook_runs_on_the_installed_wheel(wheel_env, tmp_path):
    """The calibration walkthrough, executed by the wheel's Python in an empty folder."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    _, python = wheel_env
    notebooks = ROOT / "examples" / "notebooks"
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path

        sys.path.insert(0, {str(notebooks)!r})  # the runner only; the kernel gets figaroh's folder
        import execute_notebooks

        venv = Path({str(python.parent.parent)!r}).resolve()
        check = (  # the kernel imports the wheel's figaroh and none of the example modules
            "import importlib.util, figaroh\\n"
            "from pathlib import Path\\n"
            f"assert Path({{str(venv)!r}}) in Path(figaroh.__file__).resolve().parents\\n"
            "for name in ('simulate', 'calibration', 'identification'):\\n"
            "    assert importlib.util.find_spec(name) is None, name\\n"
        )
        nb, seconds = execute_notebooks.execute(
            Path({str(notebooks / "calibration_walkthrough.ipynb")!r}), setup_cell=check
        )
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                  if o.output_type == "error"]
        assert not errors, errors
        print(f"OK {{seconds:.1f}}")
        """
    )
    proc = _run(python, "-c", script, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "OK" in proc.stdout
