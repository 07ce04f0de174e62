"""``figaroh init`` writes YAML through the YAML emitter: names read back as written.

Rows run ``figaroh init`` in-process with robot names (and URDF joint names)
that YAML 1.1 reads as another type when written bare (``yes``, ``on``,
``null``, ``1e3``), names with YAML syntax in them, unicode, and a name with a
line break. Each written file is read back with ``yaml.safe_load`` (the exact
name, ``==``) and with figaroh's strict config parser. A refused name exits 2
with one line naming ``--robot-name`` and leaves no file; a file that fails
the strict parse is never written (an existing ``-o`` keeps its bytes).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml

from figaroh.cli import init_command
from figaroh.cli.main import main
from figaroh.utils.config_parser import UnifiedConfigParser

NAMES = [
    "yes",
    "no",
    "on",
    "off",
    "null",
    "~",
    "true",
    "1e3",
    "0x1F",
    "12:30",
    "a: b",
    "- x",
    "#not a comment",
    "'quoted'",
    '"dq"',
    "ロボット_é",
    " padded ",
]

#: Joint names of the test URDF (each a YAML trap when written bare).
JOINTS = ["on", "yes", "null", "1e3"]


def _cli(*args) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, err.getvalue()


def _urdf(tmp_path: Path) -> Path:
    """A four-link chain whose revolute joints are named :data:`JOINTS`."""
    links = "".join(
        f'<link name="l{k}"><inertial><mass value="1"/><origin xyz="0 0 0"/>'
        '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        for k in range(len(JOINTS) + 1)
    )
    joints = "".join(
        f'<joint name="{name}" type="revolute"><parent link="l{k}"/><child link="l{k + 1}"/>'
        '<origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>'
        for k, name in enumerate(JOINTS)
    )
    path = tmp_path / "traps.urdf"
    path.write_text(f'<?xml version="1.0"?><robot name="traps">{links}{joints}</robot>')
    return path


@pytest.fixture(scope="module")
def urdf(tmp_path_factory) -> Path:
    return _urdf(tmp_path_factory.mktemp("init_yaml"))


@pytest.mark.parametrize("name", NAMES)
def test_robot_name_round_trips(name, urdf, tmp_path):
    out = tmp_path / "robot.yaml"
    code, err = _cli("init", urdf, "-o", out, "--robot-name", name, "-q")
    assert code == 0, err
    raw = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert raw["robot"]["name"] == name and type(raw["robot"]["name"]) is str
    assert raw["robot"]["properties"]["joints"]["active_joints"] == JOINTS
    parsed = UnifiedConfigParser(str(out), strict=True).parse()
    assert parsed["robot"]["name"] == name
    assert parsed["robot"]["properties"]["joints"]["active_joints"] == JOINTS


def test_default_name_and_joint_named_on_round_trip(urdf, tmp_path):
    out = tmp_path / "robot.yaml"
    code, err = _cli("init", urdf, "-o", out, "-q")
    assert code == 0, err
    raw = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert raw["robot"]["name"] == "traps"
    joints = raw["robot"]["properties"]["joints"]["active_joints"]
    assert joints == JOINTS and all(type(j) is str for j in joints)  # 'on' is not True


@pytest.mark.parametrize(
    "name", ["a\nb: 1", "robot\r\nextends: x", "tab\there", "nul\x00", "", "   "]
)
def test_robot_name_with_a_line_break_is_refused(name, urdf, tmp_path):
    out = tmp_path / "robot.yaml"
    code, err = _cli("init", urdf, "-o", out, "--robot-name", name, "-q")
    assert code == 2
    assert err.count("\n") == 1 and "--robot-name" in err and "line break" in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file left


@pytest.mark.parametrize("existing", [False, True], ids=["new", "force-over-existing"])
def test_a_file_that_does_not_parse_is_never_written(existing, urdf, tmp_path, monkeypatch):
    out = tmp_path / "robot.yaml"
    if existing:
        out.write_bytes(b"keep: me\n")
    real = init_command.config_document

    def broken(*args):
        doc = real(*args)
        doc["robot"]["no_such_key"] = 1  # refused by the strict parser
        return doc

    monkeypatch.setattr(init_command, "config_document", broken)
    code, err = _cli("init", urdf, "-o", out, "--force", "-q")
    assert code == 1 and "does not load" in err and "nothing was written" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["robot.yaml"] if existing else [])
    if existing:
        assert out.read_bytes() == b"keep: me\n"
