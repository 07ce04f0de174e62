"""Robots by name: ``load_robot("ur10")``, the catalogue and ``figaroh robots``."""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

import pytest

import figaroh.tools.robot_paths as rp
from figaroh.cli.setup_commands import robot_list_lines, robots
from figaroh.errors import FigarohError
from figaroh.tools.load_robot import (
    UnknownRobotError,
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


def test_catalogue_has_one_short_name_per_urdf(erd):
    entries = robot_catalogue()
    names = [e.name for e in entries]
    assert len(names) == len(set(names))
    assert {"ur10", "talos", "tiago", "panda"} <= set(names)
    assert "ur10_robot" not in names  # longer aliases resolve but are not listed
    paths = [e.path for e in entries]
    assert len(paths) == len(set(paths)) == len(list(erd.glob("*/**/*.urdf")))
    assert all(e.source == rp.SOURCE_EXAMPLE_ROBOT_DATA for e in entries)


def test_robot_descriptions_names_and_urdfs(monkeypatch, ur10_urdf, erd):
    """robot_descriptions adds the names example-robot-data lacks and resolves them."""
    pkg = types.ModuleType("robot_descriptions")
    pkg.DESCRIPTIONS = {"ur10_description": object(), "cf2_description": object()}
    cf2 = types.ModuleType("robot_descriptions.cf2_description")
    cf2.URDF_PATH = str(ur10_urdf)
    monkeypatch.setitem(sys.modules, "robot_descriptions", pkg)
    monkeypatch.setitem(sys.modules, "robot_descriptions.cf2_description", cf2)
    monkeypatch.setattr(rp, "_check_package_available", lambda name: True)
    entries = {e.name: e for e in robot_catalogue()}
    assert entries["cf2"].source == rp.SOURCE_ROBOT_DESCRIPTIONS and entries["cf2"].path is None
    assert entries["ur10"].source == rp.SOURCE_EXAMPLE_ROBOT_DATA
    assert resolve_robot_urdf("cf2") == ur10_urdf


def test_figaroh_robots_lists_names_and_sources(erd, capsys):
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
