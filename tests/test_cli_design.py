"""``figaroh init``, ``trajectory``, ``postures`` and ``view``: happy paths and exit codes.

Truths: the strict configuration parser (the scaffolded file loads with
unknown keys refused), ``figaroh identify`` accepting the scaffolded file on
simulated UR10 data, the files each command writes, and the documented exit
codes (0 success, 1 failed, 2 bad input) with a one-line error naming the
option or the extra to install.
"""

from __future__ import annotations

import contextlib
import io
import sys

import pytest
import yaml

from conftest import ROOT, load_example
from figaroh.cli import design_commands
from figaroh.cli.main import main
from figaroh.cli.progress import Steps
from figaroh.utils.config_parser import UnifiedConfigParser

_ur10 = load_example("ur10/identification.py", "ur10_identification")

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]


def _in_process(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _one_line_error(err: str, *needles: str) -> None:
    text = err.strip().splitlines()[-1]
    assert "Traceback" not in err, err
    for needle in needles:
        assert needle in text, text


# ---------------------------------------------------------------------------
# init
# ---------------------------------------------------------------------------
def test_init_writes_a_strict_commented_config(ur10_urdf, tmp_path):
    out = tmp_path / "cfg" / "ur10.yaml"
    code, stdout, err = _in_process("init", ur10_urdf, "-o", out)
    assert code == 0, err
    assert "6 active joints" in stdout
    cfg = UnifiedConfigParser(str(out), strict=True).parse()
    assert cfg["robot"]["properties"]["joints"]["active_joints"] == UR10_JOINTS
    ident = cfg["tasks"]["identification"]
    assert ident["problem"]["model_components"]["friction"] is False
    text = out.read_text()
    assert "extends:" in text and "manipulator_robot.yaml" in text
    assert text.count("#") > 20  # every key commented


def test_init_refuses_to_overwrite_without_force(ur10_urdf, tmp_path):
    out = tmp_path / "c.yaml"
    out.write_text("keep: me\n")
    code, _, err = _in_process("init", ur10_urdf, "-o", out, "-q")
    assert code == 2
    _one_line_error(err, "-o/--output", "--force")
    assert out.read_text() == "keep: me\n"
    code, _, err = _in_process("init", ur10_urdf, "-o", out, "--force", "-q")
    assert code == 0, err
    assert "active_joints" in out.read_text()


def test_init_by_name_and_bad_robot(tmp_path):
    code, _, err = _in_process("init", "ur10", "-o", tmp_path / "a.yaml", "-q")
    assert code == 0, err
    code, _, err = _in_process("init", "no_such_robot", "-o", tmp_path / "b.yaml", "-q")
    assert code == 2
    _one_line_error(err, "no_such_robot", "figaroh robots")
    code, _, err = _in_process("init", "-o", tmp_path / "b.yaml")
    assert code == 2


def test_init_then_identify_round_trip(ur10_urdf, tmp_path):
    cfg = tmp_path / "ur10.yaml"
    assert _in_process("init", ur10_urdf, "-o", cfg, "-q")[0] == 0
    train, _ = _ur10.generate_ur10_data(tmp_path / "data", 400, 0.1, seed=5)
    code, stdout, err = _in_process(
        "identify", cfg, "--urdf", ur10_urdf, "--data", train, "-o", tmp_path / "out",
        "--scope", "execution",
    )  # fmt: skip
    assert code == 0, err
    assert "identified" in stdout
    assert (tmp_path / "out" / "base_parameters.csv").is_file()


def test_help_ends_with_the_exit_codes():
    for command in ("init", "trajectory", "postures", "view"):
        code, stdout, _ = _in_process(command, "--help")
        assert code == 0
        assert "Exit codes: 0 success" in " ".join(stdout.split())


# ---------------------------------------------------------------------------
# postures
# ---------------------------------------------------------------------------
def test_postures_selects_and_writes_a_reusable_pool(ur10_urdf, tmp_path):
    out = tmp_path / "post"
    base = ("postures", CONFIG, "--urdf", ur10_urdf, "--n-candidates", 40, "--seed", 1)
    code, stdout, err = _in_process(*base, "-o", out)
    assert code == 0, err
    assert "of 40 postures" in stdout
    doc = yaml.safe_load((out / "postures.yaml").read_text())
    assert doc["calibration_joint_names"] == UR10_JOINTS
    n = len(doc["calibration_joint_configurations"])
    assert 7 <= n <= 40
    rows = (out / "postures.csv").read_text().splitlines()
    assert rows[0].split(",") == ["candidate", *UR10_JOINTS, "weight"] and len(rows) == n + 1
    # the written YAML is a candidate file again; --n-postures keeps the top weights
    code, stdout, err = _in_process(
        "postures", CONFIG, "--urdf", ur10_urdf, "--candidates", out / "postures.yaml",
        "--n-postures", 7, "-o", tmp_path / "again", "-q",
    )  # fmt: skip
    assert code == 0, err
    again = yaml.safe_load((tmp_path / "again" / "postures.yaml").read_text())
    assert len(again["calibration_joint_configurations"]) == 7


def test_postures_exit_codes(ur10_urdf, tmp_path, monkeypatch):
    base = ("postures", CONFIG, "--urdf", ur10_urdf, "-o", tmp_path / "p", "-q")
    code, _, err = _in_process(*base, "--n-candidates", 40, "--n-postures", 3)
    assert code == 2
    _one_line_error(err, "--n-postures 3", "7")
    code, _, err = _in_process(*base, "--n-candidates", 4)  # fewer than the 7 needed
    assert code == 1
    _one_line_error(err, "infeasible design")
    code, _, err = _in_process(*base, "--candidates", tmp_path / "none.yaml")
    assert code == 2
    _one_line_error(err, "--candidates not found")
    code, _, err = _in_process(*base, "--n-postures", 0)
    assert code == 2
    monkeypatch.setitem(sys.modules, "picos", None)
    code, _, err = _in_process(*base)
    assert code == 2
    _one_line_error(err, "picos", "pip install")


# ---------------------------------------------------------------------------
# trajectory
# ---------------------------------------------------------------------------
TINY = ("--waypoints", 3, "--frequency", 20, "--max-iterations", 4)


def test_trajectory_from_an_init_config(ur10_urdf, tmp_path, monkeypatch):
    pytest.importorskip("cyipopt")
    bars: list[Steps] = []

    def drawn_steps(args, names):  # the progress bar, drawn into a buffer
        bars.append(Steps(names, enabled=True, stream=io.StringIO(), desc=args.command))
        return bars[-1]

    monkeypatch.setattr(design_commands, "steps_for", drawn_steps)
    cfg = tmp_path / "ur10.yaml"
    assert _in_process("init", ur10_urdf, "-o", cfg, "-q")[0] == 0
    out = tmp_path / "traj"
    # 4 IPOPT iterations do not converge: accepted here (exit 1 otherwise, see test_cli_progress)
    code, stdout, err = _in_process(
        "trajectory", cfg, "--urdf", ur10_urdf, "-o", out, "--segments", 2, *TINY,
        "--accept-fallback",
    )  # fmt: skip
    assert code == 0, err
    assert "designed 2 segment(s)" in stdout
    assert "accepted with --accept-fallback: IPOPT did not converge (segment 1: " in stdout
    rows = (out / "trajectory.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert header[:2] == ["t", "q_shoulder_pan_joint"] and len(header) == 1 + 3 * 6
    assert len(rows) - 1 == 2 * (2 * 2 * 20 + 1) - 1  # 2 segments of 2 intervals of 2 s at 20 Hz
    summary = yaml.safe_load((out / "trajectory_summary.yaml").read_text())
    assert summary["segments_solved"] == 2 and summary["failures"] == []
    assert summary["final_condition_number"] > 1
    assert bars[0].done == ["load robot", "set up", "segment 1/2", "segment 2/2", "write"]
    assert bars[0].details == sum(summary["ipopt_iterations"].values()) > 0
    assert [o["stage"] for o in summary["outcomes"]] == ["ipopt:segment 1", "ipopt:segment 2"]


def test_trajectory_exit_codes(ur10_urdf, tmp_path, monkeypatch):
    base = ("trajectory", CONFIG, "--urdf", ur10_urdf, "-o", tmp_path / "t", "-q", *TINY)
    code, _, err = _in_process(*base, "--segments", 0)
    assert code == 2
    _one_line_error(err, "--segments")
    code, _, err = _in_process("trajectory", tmp_path / "none.yaml", "--urdf", ur10_urdf, "-q")
    assert code == 2
    _one_line_error(err, "CONFIG not found")
    code, _, err = _in_process(*base[:2], "--urdf", tmp_path / "none.urdf", "-q")
    assert code == 2
    _one_line_error(err, "URDF file not found")
    monkeypatch.setitem(sys.modules, "cyipopt", None)
    code, _, err = _in_process(*base)
    assert code == 2
    _one_line_error(err, "cyipopt", "figaroh[ipopt]")
    assert not (tmp_path / "t").exists()


# ---------------------------------------------------------------------------
# view (no server is started: --dry-run, argument checks, missing extra)
# ---------------------------------------------------------------------------
def test_view_dry_run_loads_meshes_and_data(ur10_urdf, tmp_path):
    pytest.importorskip("viser")
    pytest.importorskip("yourdfpy")
    log = tmp_path / "log.csv"
    log.write_text("t,q_elbow_joint,q_wrist_1_joint,other\n0,0.1,0.2,9\n0.1,0.2,0.3,9\n")
    cfg = tmp_path / "ur10.yaml"
    assert _in_process("init", ur10_urdf, "-o", cfg, "-q")[0] == 0
    code, stdout, err = _in_process("view", ur10_urdf, "--config", cfg, "--data", log, "--dry-run")
    assert code == 0, err
    assert "6 joints" in stdout and "2 samples" in stdout and "no server started" in stdout


def test_view_exit_codes(ur10_urdf, tmp_path, monkeypatch):
    bad = tmp_path / "bad.csv"
    bad.write_text("t,x\n0,1\n")
    code, _, err = _in_process("view", tmp_path / "none.urdf", "--dry-run")
    assert code == 2
    _one_line_error(err, "URDF file not found")
    code, _, err = _in_process("view", ur10_urdf, "--data", tmp_path / "none.csv", "--dry-run")
    assert code == 2
    _one_line_error(err, "--data not found")
    code, _, err = _in_process("view", ur10_urdf, "--port", -1)
    assert code == 2
    pytest.importorskip("yourdfpy")
    pytest.importorskip("viser")
    code, _, err = _in_process("view", ur10_urdf, "--data", bad, "--dry-run")
    assert code == 2
    _one_line_error(err, "--data", "q_shoulder_pan_joint")
    monkeypatch.setitem(sys.modules, "viser", None)
    code, _, err = _in_process("view", ur10_urdf, "--dry-run")
    assert code == 2
    _one_line_error(err, "viser", "figaroh[viz]")
