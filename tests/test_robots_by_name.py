"""Robots by name: ``load_robot("ur10")``, the catalogue and ``figaroh robots``.

The ``robot_descriptions`` tests run against a stand-in package written to a
temporary folder: its documented API (``DESCRIPTIONS``, description modules
exposing ``URDF_PATH``/``PACKAGE_PATH``/``REPOSITORY_PATH`` and downloading
their repository into ``$ROBOT_DESCRIPTIONS_CACHE`` when imported,
``loaders.pinocchio.load_robot_description(name, root_joint=None,
commit=None)``), with a "download" that fails unless the repository is in the
cache. No test touches the network. When the real package is installed, one
test loads it with git forbidden to use any network transport.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import figaroh.tools.robot_paths as rp
from figaroh.cli.main import main as figaroh_main
from figaroh.cli.setup_commands import robot_list_lines, robots
from figaroh.errors import FigarohError
from figaroh.tools.exceptions import RobotDescriptionFetchError
from figaroh.tools.load_robot import (
    UnknownRobotError,
    list_available_robots,
    load_robot,
    resolve_robot_urdf,
    robot_catalogue,
)


@pytest.fixture()
def erd(ur10_urdf) -> Path:
    return rp.example_robot_data_dir()


@pytest.mark.parametrize(
    ("name", "relative"),
    [
        ("ur10", "ur_description/urdf/ur10_robot.urdf"),
        ("ur10_robot", "ur_description/urdf/ur10_robot.urdf"),
        ("talos", "talos_data/robots/talos_reduced.urdf"),
        ("tiago", "tiago_description/robots/tiago.urdf"),
        ("panda", "panda_description/urdf/panda.urdf"),
        ("ur_ur3", "ur_description/urdf/ur3.urdf"),
        ("ur_description/urdf/ur10_robot.urdf", "ur_description/urdf/ur10_robot.urdf"),
    ],
)
def test_names_resolve_to_example_robot_data_urdfs(erd, name, relative):
    assert resolve_robot_urdf(name) == erd / relative


def test_an_existing_file_is_returned_unchanged(ur10_urdf, tmp_path):
    local = tmp_path / "ur10.urdf"  # a local file wins over the name
    local.write_text(ur10_urdf.read_text())
    assert resolve_robot_urdf(local) == local


def test_load_robot_by_name(ur10_urdf):
    robot = load_robot("ur10", load_geometry=False)
    assert robot.model.nq == 6
    assert robot.model.names[1] == "shoulder_pan_joint"


def test_unknown_name_is_a_named_error_with_suggestions(erd):
    with pytest.raises(UnknownRobotError) as err:
        load_robot("ur11")
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, FigarohError)
    msg = str(err.value)
    assert "'ur11'" in msg and "Did you mean" in msg and "'ur10'" in msg
    assert "figaroh robots" in msg


def test_missing_path_is_not_treated_as_a_name(tmp_path):
    with pytest.raises(FileNotFoundError, match="URDF file not found"):
        resolve_robot_urdf(tmp_path / "absent.urdf")


def test_catalogue_has_one_short_name_per_urdf(erd, monkeypatch):
    monkeypatch.setattr(rp, "_check_package_available", lambda name: False)  # ERD only
    entries = robot_catalogue()
    names = [e.name for e in entries]
    assert len(names) == len(set(names))
    assert {"ur10", "talos", "tiago", "panda"} <= set(names)
    assert "ur10_robot" not in names  # longer aliases resolve but are not listed
    paths = [e.path for e in entries]
    assert len(paths) == len(set(paths)) == len(list(erd.glob("*/**/*.urdf")))
    assert all(e.source == rp.SOURCE_EXAMPLE_ROBOT_DATA for e in entries)


def test_figaroh_robots_lists_names_and_sources(erd, capsys, monkeypatch):
    monkeypatch.setattr(rp, "_check_package_available", lambda name: False)  # ERD only
    assert robots(argparse.Namespace(loader="figaroh", paths=False)) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("example-robot-data (")
    assert len(lines) < 20 and "ur10" in out and str(erd) not in out


def test_figaroh_robots_paths(erd, capsys):
    assert robots(argparse.Namespace(loader="figaroh", paths=True)) == 0
    paths = capsys.readouterr().out.split()
    assert str(erd / "ur_description/urdf/ur10_robot.urdf") in paths
    assert all(Path(p).is_file() for p in paths)


def test_robot_list_lines_wrap_per_source():
    entries = [
        rp.RobotEntry("a", "src1", Path("/a.urdf")),
        rp.RobotEntry("b", "src2", None),
    ]
    assert robot_list_lines(entries)[:4] == ["src1 (1):", "  a", "src2 (1):", "  b"]
    assert robot_list_lines(entries, paths=True) == [str(Path("/a.urdf"))]


# ---------------------------------------------------------------- robot_descriptions
_FAKE_PACKAGE = {
    "__init__.py": """
        class Description:
            def __init__(self, urdf):
                self.has_urdf = urdf
                self.has_mjcf = not urdf

        DESCRIPTIONS = {
            "ur10_description": Description(True),
            "cf2_description": Description(True),
            "arm_mj_description": Description(False),
        }
    """,
    "_cache.py": """
        import os

        class GitCommandError(Exception):
            pass

        def clone_to_cache(repository):
            cache = os.path.expanduser(
                os.environ.get("ROBOT_DESCRIPTIONS_CACHE", "~/.cache/robot_descriptions")
            )
            path = os.path.join(cache, repository)
            if not os.path.isdir(path):
                raise GitCommandError(
                    f"Cmd('git') failed due to: exit code(128) cmdline: git clone {repository}"
                    " stderr: 'fatal: unable to access: Could not resolve host'"
                )
            return path
    """,
    "ur10_description.py": """
        from os import path as _path
        from ._cache import clone_to_cache as _clone_to_cache

        REPOSITORY_PATH = _clone_to_cache("example-robot-data")
        PACKAGE_PATH = _path.join(REPOSITORY_PATH, "robots", "ur_description")
        URDF_PATH = _path.join(PACKAGE_PATH, "urdf", "ur10_robot.urdf")
    """,
    "cf2_description.py": """
        from os import path as _path
        from ._cache import clone_to_cache as _clone_to_cache

        REPOSITORY_PATH = _clone_to_cache("gym-pybullet-drones")
        PACKAGE_PATH = REPOSITORY_PATH
        URDF_PATH = _path.join(PACKAGE_PATH, "cf2x.urdf")
    """,
    "arm_mj_description.py": """
        raise AssertionError("an MJCF-only description must not be fetched for a URDF")
    """,
    "loaders/__init__.py": "",
    "loaders/pinocchio.py": """
        import os
        from importlib import import_module

        import pinocchio as pin

        def load_robot_description(description_name, root_joint=None, commit=None):
            module = import_module(f"robot_descriptions.{description_name}")
            return pin.RobotWrapper.BuildFromURDF(
                filename=module.URDF_PATH,
                package_dirs=[
                    module.PACKAGE_PATH,
                    module.REPOSITORY_PATH,
                    os.path.dirname(module.PACKAGE_PATH),
                    os.path.dirname(module.REPOSITORY_PATH),
                ],
                root_joint=root_joint,
            )
    """,
}


def _forget_robot_descriptions() -> None:
    for name in [m for m in sys.modules if m.partition(".")[0] == "robot_descriptions"]:
        del sys.modules[name]


@pytest.fixture()
def fake_robot_descriptions(tmp_path, monkeypatch, erd) -> Path:
    """The stand-in package on ``sys.path``; its cache holds example-robot-data only.

    Returns:
        The cache folder (``ROBOT_DESCRIPTIONS_CACHE``).
    """
    site = tmp_path / "site"
    for relative, text in _FAKE_PACKAGE.items():
        path = site / "robot_descriptions" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    cache = tmp_path / "cache"
    (cache / "example-robot-data" / "robots").mkdir(parents=True)
    (cache / "example-robot-data" / "robots" / "ur_description").symlink_to(
        erd / "ur_description", target_is_directory=True
    )
    _forget_robot_descriptions()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv(rp.ROBOT_DESCRIPTIONS_CACHE_ENV, str(cache))
    yield cache
    _forget_robot_descriptions()


def _same_dynamics(a: pin.Model, b: pin.Model) -> None:
    assert a.nq == b.nq and list(a.names) == list(b.names)
    for ia, ib in zip(a.inertias, b.inertias, strict=True):
        assert np.array_equal(ia.toDynamicParameters(), ib.toDynamicParameters())
    for pa, pb in zip(a.jointPlacements, b.jointPlacements, strict=True):
        assert np.array_equal(pa.homogeneous, pb.homogeneous)


def test_robot_description_loader_by_name_with_and_without_geometry(fake_robot_descriptions, erd):
    truth = pin.buildModelFromUrdf(str(erd / "ur_description/urdf/ur10_robot.urdf"))
    dynamics = load_robot("ur10", loader="robot_description", load_geometry=False)
    assert isinstance(dynamics, pin.RobotWrapper)
    assert dynamics.visual_model is None and dynamics.collision_model is None
    _same_dynamics(dynamics.model, truth)
    full = load_robot("ur10_description", loader="robot_description")
    assert full.visual_model.ngeoms > 0 and full.collision_model.ngeoms > 0
    _same_dynamics(full.model, truth)
    floating = load_robot("ur10", loader="robot_description", isFext=True, load_geometry=False)
    assert floating.model.joints[1].shortname() == "JointModelFreeFlyer"
    assert floating.model.nq == truth.nq + 7
    assert "ur10_description" in list_available_robots("robot_description")


def test_robot_description_loader_refuses_unknown_options(fake_robot_descriptions):
    with pytest.raises(TypeError) as err:
        load_robot("ur10", loader="robot_description", load_geomtry=False)
    msg = str(err.value)
    assert "load_geomtry" in msg and "load_geometry" in msg and "root_joint, commit" in msg
    with pytest.raises(ValueError, match="no robot named 'ur11'"):
        load_robot("ur11", loader="robot_description")


def test_an_uncached_description_says_so_and_how_to_fetch_it(fake_robot_descriptions, capsys):
    cache = fake_robot_descriptions
    for call in (
        lambda: load_robot("cf2", loader="robot_description", load_geometry=False),
        lambda: load_robot("cf2", loader="robot_description"),
        lambda: load_robot("cf2", load_geometry=False),  # the figaroh loader resolves the name
    ):
        _forget_robot_descriptions()
        with pytest.raises(RobotDescriptionFetchError) as err:
            call()
        exc = err.value
        assert isinstance(exc, FileNotFoundError) and isinstance(exc, FigarohError)
        assert type(exc.__cause__).__name__ == "GitCommandError"
        msg = str(exc)
        assert "'cf2_description'" in msg and str(cache) in msg
        assert 'python -c "import robot_descriptions.cf2_description"' in msg
        assert "ROBOT_DESCRIPTIONS_CACHE" in msg and "Could not resolve host" in msg
    # the command line: one line on stderr, exit code 2, no traceback
    _forget_robot_descriptions()
    out = cache.parent / "cf2.yaml"
    assert figaroh_main(["init", "--urdf", "cf2", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "robot_descriptions.cf2_description" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_names_of_both_sources_resolve(fake_robot_descriptions, erd):
    entries = {e.name: e for e in robot_catalogue()}
    assert entries["cf2"].source == rp.SOURCE_ROBOT_DESCRIPTIONS and entries["cf2"].path is None
    assert entries["ur10"].source == rp.SOURCE_EXAMPLE_ROBOT_DATA  # listed once
    assert "arm_mj" not in entries  # MJCF only
    assert resolve_robot_urdf("ur10") == erd / "ur_description/urdf/ur10_robot.urdf"
    assert rp.robot_description_module("ur10") == "ur10_description"
    assert rp.robot_description_module("arm_mj") == "arm_mj_description"
    assert rp.robot_description_module("arm_mj", urdf_only=True) is None
    with pytest.raises(UnknownRobotError):  # found, MJCF only: not fetched (it would raise)
        resolve_robot_urdf("arm_mj")


def test_unknown_name_says_whether_robot_descriptions_is_installed(
    fake_robot_descriptions, monkeypatch
):
    with pytest.raises(UnknownRobotError) as err:
        load_robot("ur11")
    msg = str(err.value)
    n_erd = sum(e.source == rp.SOURCE_EXAMPLE_ROBOT_DATA for e in robot_catalogue())
    assert f"{n_erd} from example-robot-data" in msg
    assert "1 more from robot_descriptions, which is installed" in msg  # cf2
    assert "not installed" not in msg
    monkeypatch.setattr(rp, "_check_package_available", lambda name: False)
    with pytest.raises(UnknownRobotError) as err:
        load_robot("ur11")
    assert "robot_descriptions is not installed (pip install robot_descriptions" in str(err.value)


def test_the_real_robot_descriptions_offline(tmp_path, monkeypatch):
    """The installed package: its catalogue, and an uncached description without network."""
    _forget_robot_descriptions()
    pytest.importorskip("git", reason="robot_descriptions needs GitPython")
    pytest.importorskip("robot_descriptions", reason="robot_descriptions is not installed")
    monkeypatch.setenv(rp.ROBOT_DESCRIPTIONS_CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")  # git may not reach the network
    assert "ur10_description" in list_available_robots("robot_description")
    with pytest.raises(RobotDescriptionFetchError) as err:
        load_robot("ur10", loader="robot_description", load_geometry=False)
    assert 'python -c "import robot_descriptions.ur10_description"' in str(err.value)
    _forget_robot_descriptions()
