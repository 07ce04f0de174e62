"""``figaroh check`` and the configuration ``figaroh init`` writes.

Truths: the configuration files themselves (a valid one passes and its
joints are printed; each defect is refused, exit 2, naming the field), the
URDF's joints, and the header of ``figaroh init`` against the YAML below it
(every section it names is written; the file passes ``figaroh check``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, List

import pytest
import yaml

from conftest import ROOT, UR10_JOINTS, run_cli
from figaroh.cli.init_command import ANNOUNCED_SECTIONS

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("figaroh check: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _variant(tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    text = CONFIG.read_text()
    assert text.count(old) >= count, old
    path = tmp_path / "variant.yaml"
    path.write_text(text.replace(old, new, count))
    return path


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------
def test_a_valid_config_exits_0_and_prints_what_a_run_uses(ur10_urdf):
    code, out, err = run_cli("check", CONFIG, "--urdf", ur10_urdf)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[-1] == "valid"
    joints = next(line for line in lines if line.strip().startswith("active joints"))
    assert joints.split(None, 2)[2] == f"{', '.join(UR10_JOINTS)} (6)"
    assert "  sampling frequency  100 Hz" in lines  # the file's signal_processing
    assert "  cutoff frequency    10 Hz (Butterworth order 4, differentiation gradient)" in lines
    assert any(
        line.startswith("  markers             1, measuring x y z rx ry rz") for line in lines
    )
    assert any(re.match(r"  parameters +\d+ with base and tool frames", line) for line in lines)
    assert "  frames              universe -> wrist_3_link" in lines


def test_without_a_model_only_the_keys_are_checked(ur10_urdf):
    code, out, _ = run_cli("check", CONFIG)
    assert code == 0
    assert "robot model         none: give --urdf URDF" in out
    assert "active joints" not in out


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        # a misspelt key: refused with the closest known key
        ("filter_order: 4", "filter_ordr: 4",
         "'tasks.identification.signal_processing.filter_ordr' (did you mean "
         "'tasks.identification.signal_processing.filter_order'?)"),
        # a joint the URDF does not have
        ("        - wrist_3_joint\n", "        - wrist_9_joint\n",
         "robot.properties.joints.active_joints: ['wrist_9_joint'] not joints of the model "
         "'ur10'"),
        # a negative frequency
        ("sampling_frequency: 100.0", "sampling_frequency: -100.0",
         "tasks.identification: signal_processing.sampling_frequency must be a positive "
         "finite number [Hz], got -100.0"),
        # a tool frame the URDF does not have
        ("tool_frame: wrist_3_link", "tool_frame: wrist_4_link", "kinematics.tool_frame"),
        # a unit error: a cutoff above Nyquist
        ("cutoff_frequency: 10.0", "cutoff_frequency: 60.0", "signal_processing.cutoff_frequency"),
    ],
    ids=["misspelt-key", "joint-not-in-urdf", "negative-frequency", "unknown-frame", "nyquist"],
)  # fmt: skip
def test_each_defect_exits_2_naming_the_field(old, new, field, ur10_urdf, tmp_path):
    path = _variant(tmp_path, old, new)
    code, out, err = run_cli("check", path, "--urdf", ur10_urdf)
    assert code == 2, (out, err)
    assert field in _error_line(err)
    assert "valid" not in out.splitlines()


def test_the_model_comes_from_robot_urdf(tmp_path):
    """``robot.urdf`` (a robot name here) is the model when no --urdf is given."""
    path = _variant(tmp_path, "robot:\n", "robot:\n  urdf: ur10\n")
    code, out, err = run_cli("check", path)
    assert code == 0, err
    assert "robot model         ur10" in out
    bad = _variant(tmp_path, "        - wrist_3_joint\n", "        - wrist_9_joint\n")
    bad.write_text(bad.read_text().replace("robot:\n", "robot:\n  urdf: ur10\n", 1))
    code, _, err = run_cli("check", bad)
    assert code == 2 and "wrist_9_joint" in _error_line(err)


def test_a_legacy_file_is_refused_with_the_migrate_command(tmp_path):
    path = tmp_path / "legacy.yaml"
    path.write_text("calibration:\n  calib_level: full_params\n")
    code, _, err = run_cli("check", path)
    assert code == 2 and "figaroh migrate-config OLD NEW" in _error_line(err)


# ---------------------------------------------------------------------------
# init writes the sections it announces
# ---------------------------------------------------------------------------
def _has(doc: Any, dotted: str) -> bool:
    node = doc
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _header_keys(text: str) -> List[str]:
    """Dotted keys the comment block names ("# key" and "#   sub.key" under it)."""
    lines = text.split("# Keys written below:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    keys, top = [], ""
    for line in lines:
        match = re.match(r"#( |   )([A-Za-z_][\w.]*)(?:\s|$)", line)
        if match is None:
            continue
        if match.group(1) == " ":
            top = match.group(2)
            keys.append(top)
        else:
            keys.append(f"{top}.{match.group(2)}")
    return keys


@pytest.fixture(scope="module")
def init_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("init_check") / "ur10.yaml"
    code, out, err = run_cli("init", "--urdf", "ur10", "-o", path)
    assert code == 0, err
    return path, out


def test_init_writes_every_section_its_header_announces(init_config):
    path, out = init_config
    text = path.read_text()
    doc = yaml.safe_load(text)
    keys = _header_keys(text)
    named = [s for s in ANNOUNCED_SECTIONS if any(k == s or k.startswith(s + ".") for k in keys)]
    assert named == list(ANNOUNCED_SECTIONS)
    assert "tasks.calibration" in keys and "tasks.calibration.kinematics" in keys
    assert [k for k in keys if not _has(doc, k)] == []
    assert [s for s in ANNOUNCED_SECTIONS if not _has(doc, s)] == []
    calibration = doc["tasks"]["calibration"]
    assert calibration["kinematics"]["tool_frame"] == "wrist_3_link"  # the link of wrist_3_joint
    assert calibration["measurements"]["markers"][0]["reference_joint"] == "wrist_3_joint"
    assert doc["robot"]["urdf"] == "ur10"  # a name stays a name
    assert "figaroh check" in text.split("# Keys written below:")[0]
    assert "calibration tool frame wrist_3_link" in out


def test_init_output_passes_check(init_config, ur10_urdf):
    path, _ = init_config
    for extra in ((), ("--urdf", ur10_urdf)):
        code, out, err = run_cli("check", path, *extra)
        assert code == 0, err
        assert out.splitlines()[-1] == "valid"
        assert "robot model         ur10" in out
        for task in ("identification", "calibration", "optimal_trajectory"):
            assert task in out.splitlines()


def test_init_output_calibrates_with_data(init_config, ur10_urdf, tmp_path):
    """The written calibration section runs: ``calibrate --data`` with no source_file."""
    from conftest import load_example

    sim = load_example("ur10/calibration.py", "ur10_calibration_example")
    train, _, _ = sim.simulate_ur10_calibration(tmp_path / "sim", n_train=30, n_test=10)
    path, _ = init_config
    code, _, err = run_cli(
        "calibrate", path, "--urdf", ur10_urdf, "--data", train, "-o", tmp_path / "out",
        "--scope", "execution", "-q",
    )  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "out" / "calibration_parameters.csv").is_file()
