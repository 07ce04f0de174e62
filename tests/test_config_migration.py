"""Tests of the legacy → unified migration (figaroh.utils.config_migration)."""

from __future__ import annotations

import copy
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pinocchio as pin
import pytest
import yaml

from figaroh.identification.config import (
    get_param_from_yaml as legacy_identif_parser,
)
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.utils import config_migration as cm
from figaroh.utils.config_parser import (
    UnifiedConfigParser,
    create_task_config,
    is_unified_config,
    require_unified_config,
)
from figaroh.utils.error_handling import ConfigurationError
from figaroh.utils.fileio import SEAL_MARKER, SealedRunError

ROOT = Path(__file__).resolve().parents[1]
MIGRATION_CLI = (
    "python -m figaroh.utils.config_migration --input <legacy.yaml> --output <unified.yaml>"
)


class Robot:
    def __init__(self, urdf: Path) -> None:
        self.model = pin.buildModelFromUrdf(str(urdf))
        self.data = self.model.createData()
        self.q0 = pin.neutral(self.model)


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def legacy_files(shared_data: Path) -> list[Path]:
    files = [
        p
        for p in sorted(shared_data.glob("*/config/*.yaml"))
        if not p.name.endswith("_unified_config.yaml")
        and not p.name.endswith("_unified_config_simple.yaml")
        and not is_unified_config(p)
    ]
    names = {p.name for p in files}
    assert {"ur10_config.yaml", "tiago_config.yaml", "TX40_config.yaml", "mate.yaml"} <= names
    return files


def urdf_for(shared_data: Path, legacy: Path) -> Path:
    robot_dir = legacy.parent.parent.name
    return {
        "ur10": shared_data / "models" / "ur_description" / "urdf" / "ur10_robot.urdf",
        "tiago": shared_data / "tiago" / "urdf" / "tiago.urdf",
        "staubli_tx40": shared_data / "staubli_tx40" / "tx40_mdh_modified.urdf",
        "talos": shared_data / "talos" / "talos_full_v2.urdf",
        "mate": shared_data / "mate" / "urdf" / "mate.urdf",
    }[robot_dir]


def nyquist_defect(legacy: dict) -> bool:
    ident = legacy.get("identification") or {}
    proc = (ident.get("processing_params") or [{}])[0]
    ts, cut = proc.get("ts"), proc.get("cut_off_frequency_butterworth")
    return ts is not None and cut is not None and cut >= 0.5 / ts


# ---------------------------------------------------------------------------
# every shared legacy file
# ---------------------------------------------------------------------------


def test_every_shared_legacy_config_is_refused_and_migrates(shared_data, tmp_path):
    for i, src in enumerate(legacy_files(shared_data)):
        with pytest.raises(ConfigurationError) as err:
            require_unified_config(src)
        assert MIGRATION_CLI in str(err.value), src

        out = tmp_path / f"case{i}" / f"{src.stem}_unified.yaml"
        urdf = urdf_for(shared_data, src)
        report = cm.migrate_file(src, out, urdf=urdf)
        assert out.is_file() and report["output"] == str(out.resolve())
        require_unified_config(out)
        cfg = UnifiedConfigParser(out).parse()  # parses where it was written
        assert report["extends"] is None and "extends" not in load(out)
        assert cfg["robot"]["name"] == Robot(urdf).model.name

        legacy = load(src)
        check = report["self_check"]
        if nyquist_defect(legacy):
            # ts = 0.01 s with a 100 Hz cutoff: the legacy file itself is unusable
            assert not check["ok"]
            assert "Nyquist" in check["mismatches"]["identification._conversion"]["got"]
            fixed = copy.deepcopy(legacy)
            proc = fixed["identification"]["processing_params"][0]
            proc["cut_off_frequency_butterworth"] = 0.25 / proc["ts"]
            doc = cm.convert_legacy_to_unified(fixed)
            check = cm.self_check(Robot(urdf), fixed, doc)
        assert check["ok"], (src, check["mismatches"])
        assert check["checked"], src
        for task in ("calibration", "identification"):
            if legacy.get(task) and cfg["tasks"][task].get("enabled", True):
                assert any(name.startswith(task) for name in check["checked"]), (src, task)


def test_tiago_round_trip_against_legacy_parser(shared_data, tmp_path):
    """Two independent paths must agree: legacy parser vs migrate + unified converter."""
    src = shared_data / "tiago" / "config" / "tiago_config.yaml"
    robot = Robot(urdf_for(shared_data, src))
    legacy = load(src)
    with pytest.warns(DeprecationWarning):
        expected = legacy_identif_parser(robot, legacy["identification"])
    out = tmp_path / "tiago.yaml"
    cm.migrate_file(src, out)
    cfg = UnifiedConfigParser(out).parse()
    got = unified_to_legacy_identif_config(robot, create_task_config(robot, cfg, "identification"))
    common = sorted((set(expected) & set(got)) - {"filter_config", "instance", "act_J"})
    assert len(common) >= 30
    for key in common:
        assert (
            got[key] == pytest.approx(expected[key])
            if isinstance(expected[key], float)
            else got[key] == expected[key]
        ), key
    sp = cfg["tasks"]["identification"]["signal_processing"]
    assert sp["sampling_frequency"] == 5000.0  # 1 / 0.0002, not 4999.999...
    calib = cfg["tasks"]["calibration"]
    assert calib["kinematics"]["tool_frame"] == legacy["calibration"]["tool_frame"]
    assert calib["measurements"]["poses"]["tool_pose"] == legacy["calibration"]["tip_pose"]
    custom = cfg["custom"]
    assert custom["legacy_problem_params"]["is_static_regressor"] is True
    assert custom["legacy_tls_params"] == {"sync_joint_motion": False}
    assert custom["legacy_trajectory_params"]["n_wps"] == 3


# ---------------------------------------------------------------------------
# templates and extends
# ---------------------------------------------------------------------------


def copy_templates(dest: Path, source: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("base_robot_config.yaml", "manipulator_robot.yaml", "humanoid_robot.yaml"):
        shutil.copy(source / name, dest / name)


def test_extends_written_when_template_exists(shared_data, tmp_path):
    src = shared_data / "ur10" / "config" / "ur10_config_new.yaml"
    # layout 1: <root>/templates + <root>/<robot>/config/out.yaml (TEMPLATE_PATHS)
    copy_templates(tmp_path / "a" / "templates", ROOT / "config" / "templates")
    out = tmp_path / "a" / "ur10" / "config" / "ur10.yaml"
    report = cm.migrate_file(src, out, template="manipulator")
    assert report["extends"] == "../../templates/manipulator_robot.yaml"
    assert load(out)["extends"] == report["extends"]
    cfg = UnifiedConfigParser(out).parse()
    assert cfg["robot"]["type"] == "manipulator"  # from the template
    assert cfg["tasks"]["identification"]["signal_processing"]["filter_order"] == 4
    assert cfg["robot"]["properties"]["mechanics"]["friction_coefficients"]["viscous"] == [0] * 12
    # layout 2: templates/ next to the output
    copy_templates(tmp_path / "b" / "templates", ROOT / "config" / "templates")
    out2 = tmp_path / "b" / "ur10.yaml"
    assert cm.migrate_file(src, out2)["extends"] == "templates/base_robot_config.yaml"
    assert UnifiedConfigParser(out2).parse()["tasks"]["optimal_trajectory"]["enabled"] is False
    # layout 3: the shared example templates (which chain with ../../templates/)
    copy_templates(tmp_path / "c" / "templates", shared_data / "templates")
    out3 = tmp_path / "c" / "robot" / "config" / "x.yaml"
    assert (
        cm.migrate_file(src, out3, template="humanoid")["extends"] == cm.TEMPLATE_PATHS["humanoid"]
    )
    cfg3 = UnifiedConfigParser(out3).parse()
    assert cfg3["robot"]["type"] == "humanoid" and cfg3["meta"]["schema_version"] == "2.0"
    # explicit template path
    out4 = tmp_path / "d" / "deep" / "y.yaml"
    tpl = tmp_path / "a" / "templates" / "base_robot_config.yaml"
    report4 = cm.migrate_file(src, out4, template=str(tpl))
    assert report4["extends"] == "../../a/templates/base_robot_config.yaml"
    UnifiedConfigParser(out4).parse()
    with pytest.raises(ConfigurationError, match="neither one of"):
        cm.migrate_file(src, tmp_path / "e.yaml", template="robotic")


def test_atomic_write_keeps_previous_file(shared_data, tmp_path, monkeypatch):
    src = shared_data / "tiago" / "config" / "tiago_config.yaml"
    out = tmp_path / "out.yaml"
    out.write_text("previous: content\n")

    class Broken:
        def __init__(self, *args, **kwargs):
            pass

        def parse(self):
            raise ConfigurationError("boom")

    monkeypatch.setattr(cm, "UnifiedConfigParser", Broken)
    with pytest.raises(ConfigurationError, match="does not parse"):
        cm.migrate_file(src, out)
    assert out.read_text() == "previous: content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]  # no temp file left


def test_written_file_mode_follows_the_umask_and_sealed_runs_are_refused(shared_data, tmp_path):
    src = shared_data / "tiago" / "config" / "tiago_config.yaml"
    old = os.umask(0o022)
    try:
        out = Path(cm.migrate_file(src, tmp_path / "out.yaml")["output"])
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644  # not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]
    run = tmp_path / "run"
    run.mkdir()
    (run / SEAL_MARKER).write_text("run\n")
    with pytest.raises(SealedRunError, match="archived run"):
        cm.migrate_file(src, run / "out.yaml")
    assert sorted(p.name for p in run.iterdir()) == [SEAL_MARKER]


def test_migrate_file_errors(shared_data, tmp_path):
    with pytest.raises(ConfigurationError, match="not found"):
        cm.migrate_file(tmp_path / "missing.yaml", tmp_path / "o.yaml")
    unified = shared_data / "ur10" / "config" / "ur10_unified_config.yaml"
    with pytest.raises(ConfigurationError, match="already uses the unified"):
        cm.migrate_file(unified, tmp_path / "o.yaml")
    src = shared_data / "ur10" / "config" / "ur10_config.yaml"
    with pytest.raises(ConfigurationError, match="must differ"):
        cm.migrate_file(src, src)
    with pytest.raises(ConfigurationError, match="URDF file not found"):
        cm.migrate_file(src, tmp_path / "o.yaml", urdf=tmp_path / "nope.urdf")
    calib_only = shared_data / "ur10" / "config" / "ur10_config_with_weighting.yaml"
    with pytest.raises(ConfigurationError, match="no 'identification' section"):
        cm.migrate_file(calib_only, tmp_path / "o.yaml", task="identification")
    assert not (tmp_path / "o.yaml").exists()


# ---------------------------------------------------------------------------
# section converters
# ---------------------------------------------------------------------------

FULL_CALIB = {
    "calib_level": "joint_offset",
    "non_geom": True,
    "coeff_regularize": "1e-6",
    "outlier_eps": 0.03,
    "base_frame": "xtion_rgb_optical_frame",
    "tool_frame": "hand_tool_link",
    "free_flyer": False,
    "markers": [{"ref_joint": "arm_7_joint", "measure": [True, True, True, True, False, False]}],
    "base_pose": [1, 2, 3, 0, 0, 0],
    "tip_pose": [0, 0, 0.1, 0, 0, 0],
    "data_file": "data/c.csv",
    "sample_configs_file": "None",
    "nb_sample": 42,
    "base_to_ref_frame": "xtion_link",
    "ref_frame": "head_2_link",
    "PLOT": 1,
}


def test_legacy_calibration_to_unified_mapping():
    out = cm.legacy_calibration_to_unified(FULL_CALIB)
    assert out["tasks"]["calibration"] == {
        "enabled": True,
        "type": "kinematic_calibration",
        "parameters": {
            "calibration_level": "joint_offset",
            "include_non_geometric": True,
            "regularization_coefficient": 0.0,  # non-zero is refused by the loader
            "outlier_threshold": 0.03,
        },
        "kinematics": {
            "base_frame": "xtion_rgb_optical_frame",
            "tool_frame": "hand_tool_link",
            "free_flying_base": False,
        },
        "measurements": {
            "markers": [
                {
                    "name": "marker_1",
                    "reference_joint": "arm_7_joint",
                    "measurable_dof": [True, True, True, True, False, False],
                }
            ],
            "poses": {"base_pose": [1, 2, 3, 0, 0, 0], "tool_pose": [0, 0, 0.1, 0, 0, 0]},
        },
        "data": {
            "source_file": "data/c.csv",
            "sample_configurations_file": None,  # the legacy "None" string
            "number_of_samples": 42,
        },
        "eye_hand": {
            "enabled": True,
            "camera_frame": "xtion_link",
            "reference_frame": "head_2_link",
        },
    }
    # the refused coefficient is kept verbatim (YAML-1.1 string converted)
    assert out["custom"] == {"legacy_calibration_params": {"PLOT": 1, "coeff_regularize": 1e-6}}


def test_legacy_calibration_defaults_and_skeleton():
    out = cm.legacy_calibration_to_unified({"tool_frame": "tool"})["tasks"]["calibration"]
    assert out["parameters"] == {
        "calibration_level": "full_params",
        "include_non_geometric": False,
        "regularization_coefficient": 0.0,
        "outlier_threshold": 0.05,
    }
    assert out["kinematics"]["base_frame"] == "universe"
    assert out["measurements"]["markers"][0]["measurable_dof"] == [True, True, True] + [False] * 3
    assert out["data"] == {"number_of_samples": 500}
    assert "eye_hand" not in out
    skeleton = {"calib_level": None, "tool_frame": None, "markers": [{"ref_joint": None}]}
    assert cm.legacy_calibration_to_unified(skeleton)["tasks"]["calibration"]["enabled"] is False
    with pytest.raises(ValueError, match="markers"):
        cm.legacy_calibration_to_unified({"tool_frame": "t", "markers": "m"})


def test_legacy_identification_to_unified_mapping():
    legacy = {
        "robot_params": [
            {
                "q_lim_def": 1.57,
                "dq_lim_def": [1.0, 2.0],
                "ddq_lim_def": 20.0,
                "tau_lim_def": 4.0,
                "fv": [0.1, 0.2],
                "fs": "None",
                "Ia": [0.01, 0.02],
                "offset": [0.3, 0.4],
                "Iam6": 0.5,
                "fvm6": 0.6,
                "fsm6": 0.7,
                "reduction_ratio": [100, 50],
                "ratio_essential": 30.0,
                "N": [1, 2],
            }
        ],
        "problem_params": [
            {
                "is_external_wrench": True,
                "is_joint_torques": False,
                "force_torque": ["Fx", "Fy"],
                "external_wrench_offsets": True,
                "has_friction": False,
                "has_joint_offset": True,
                "has_actuator_inertia": False,
                "is_static_regressor": True,
                "is_inertia_regressor": False,
                "embedded_forces": False,
                "active_joints": ["j1", "j2"],
            }
        ],
        "processing_params": [{"cut_off_frequency_butterworth": 20.0, "ts": 0.002}],
        "tls_params": [{"mass_load": 2.5, "which_body_loaded": 3.0, "sync_joint_motion": True}],
        "trajectory_params": [{"n_wps": 3}],
    }
    out = cm.legacy_identification_to_unified(legacy)
    assert out["robot"]["properties"] == {
        "joints": {
            "joint_limits": {
                "position": 1.57,
                "velocity": [1.0, 2.0],
                "acceleration": 20.0,
                "torque": 4.0,
            },
            "active_joints": ["j1", "j2"],
        },
        "mechanics": {
            "friction_coefficients": {"viscous": [0.1, 0.2]},
            "actuator_inertias": [0.01, 0.02],
            "joint_offsets": [0.3, 0.4],
            "reduction_ratios": [100, 50],
            "ratio_essential": 30.0,
        },
        "coupling": {"Iam6": 0.5, "fvm6": 0.6, "fsm6": 0.7, "has_coupled_wrist": False},
    }
    assert out["tasks"]["identification"] == {
        "enabled": True,
        "type": "dynamic_identification",
        "problem": {
            "include_external_forces": True,
            "use_joint_torques": False,
            "external_wrench_offsets": True,
            "model_components": {
                "friction": False,
                "actuator_inertia": False,
                "joint_offset": True,
            },
            "force_torque_sensors": [["Fx", "Fy"]],
        },
        "signal_processing": {"sampling_frequency": 500.0, "cutoff_frequency": 20.0},
        "load_configuration": {"additional_mass": 2.5, "loaded_body_index": 3},
    }
    assert out["custom"] == {
        "legacy_robot_params": {"N": [1, 2]},
        "legacy_problem_params": {
            "is_static_regressor": True,
            "is_inertia_regressor": False,
            "embedded_forces": False,
        },
        "legacy_tls_params": {"sync_joint_motion": True},
        "legacy_trajectory_params": {"n_wps": 3},
    }
    empty = cm.legacy_identification_to_unified({})["tasks"]["identification"]
    assert empty["signal_processing"] == {"sampling_frequency": 5000.0, "cutoff_frequency": 100.0}
    with pytest.raises(ValueError, match="ts"):
        cm.legacy_identification_to_unified({"processing_params": [{"ts": 0}]})


def test_convert_legacy_to_unified():
    legacy = {"calibration": dict(FULL_CALIB)}
    doc = cm.convert_legacy_to_unified(legacy, template="humanoid")
    assert list(doc)[0] == "extends" and doc["extends"] == cm.TEMPLATE_PATHS["humanoid"]
    assert doc["tasks"]["identification"] == {"enabled": False}
    assert doc["tasks"]["calibration"]["enabled"] is True
    only_ident = cm.convert_legacy_to_unified(
        {"calibration": dict(FULL_CALIB), "identification": {"robot_params": [{"fv": [1]}]}},
        task="identification",
    )
    assert only_ident["tasks"]["calibration"] == {"enabled": False}
    assert cm.TEMPLATE_PATHS == {
        "base": "../../templates/base_robot_config.yaml",
        "manipulator": "../../templates/manipulator_robot.yaml",
        "humanoid": "../../templates/humanoid_robot.yaml",
    }
    with pytest.raises(ValueError, match="Unknown template"):
        cm.convert_legacy_to_unified(legacy, template="mobile")
    with pytest.raises(ValueError, match="neither"):
        cm.convert_legacy_to_unified({"other": 1})
    with pytest.raises(ValueError, match="already uses the unified"):
        cm.convert_legacy_to_unified({"tasks": {}})
    with pytest.raises(ValueError, match="Unknown task"):
        cm.convert_legacy_to_unified(legacy, task="optimal")


def test_merge_unified_sections():
    merged = cm.merge_unified_sections(
        {"robot": {"properties": {"joints": {"a": 1}}}, "tasks": {"x": 1}, "custom": {"p": 1}},
        {"robot": {"properties": {"joints": {"b": 2}}}, "tasks": {"y": 2}, "custom": {"q": 2}},
    )
    assert merged == {
        "robot": {"properties": {"joints": {"a": 1, "b": 2}}},
        "tasks": {"x": 1, "y": 2},
        "custom": {"p": 1, "q": 2},
    }


def test_self_check_detects_a_changed_value(shared_data):
    src = shared_data / "staubli_tx40" / "config" / "TX40_config.yaml"
    robot = Robot(urdf_for(shared_data, src))
    legacy = load(src)
    doc = cm.convert_legacy_to_unified(legacy)
    assert cm.self_check(robot, legacy, doc)["ok"]
    doc["robot"]["properties"]["mechanics"]["friction_coefficients"]["viscous"][2] = 99.0
    doc["tasks"]["identification"]["signal_processing"]["sampling_frequency"] = 4000.0
    result = cm.self_check(robot, legacy, doc)
    assert not result["ok"]
    assert set(result["mismatches"]) == {"identification.fv", "identification.ts"}
    assert result["mismatches"]["identification.fv"]["expected"][2] == 1.97
    assert result["mismatches"]["identification.ts"]["got"] == 1 / 4000.0


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------


def test_cli_forms_and_exit_codes(shared_data, tmp_path, capsys):
    src = shared_data / "tiago" / "config" / "tiago_config.yaml"
    urdf = urdf_for(shared_data, src)
    out = tmp_path / "flags.yaml"
    assert cm.main(["--input", str(src), "--output", str(out), "--urdf", str(urdf)]) == 0
    assert "Self-check passed" in capsys.readouterr().out
    out2 = tmp_path / "positional.yaml"
    assert cm.main([str(src), str(out2)]) == 0
    assert load(out) == load(out2)
    out3 = tmp_path / "calib.yaml"
    assert (
        cm.main([str(src), str(out3), "--task", "calibration", "--robot-name", "tiago_hey5"]) == 0
    )
    doc = load(out3)
    assert doc["robot"]["name"] == "tiago_hey5"
    assert doc["tasks"]["identification"] == {"enabled": False}
    # defective legacy file (cutoff above Nyquist): written, self-check fails
    ur10 = shared_data / "ur10" / "config" / "ur10_config.yaml"
    out4 = tmp_path / "ur10.yaml"
    assert cm.main([str(ur10), str(out4), "--urdf", str(urdf_for(shared_data, ur10))]) == 1
    assert "Nyquist" in capsys.readouterr().err and out4.is_file()
    # usage and input errors: status 2, nothing written
    assert cm.main([str(src)]) == 2
    assert cm.main([str(src), str(out), "--output", str(tmp_path / "other.yaml")]) == 2
    assert (
        cm.main(["--input", str(tmp_path / "missing.yaml"), "--output", str(tmp_path / "m.yaml")])
        == 2
    )
    assert "not found" in capsys.readouterr().err
    assert not (tmp_path / "m.yaml").exists()
    assert cm.main([str(src), str(tmp_path / "t.yaml"), "--task", "everything"]) == 2
    assert cm.main(["--help"]) == 0


def test_module_entry_point(shared_data, tmp_path):
    src = shared_data / "mate" / "config" / "mate.yaml"
    out = tmp_path / "mate_unified.yaml"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "figaroh.utils.config_migration",
            "--input",
            str(src),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    cfg = UnifiedConfigParser(out).parse()
    assert cfg["robot"]["name"] == "mate"
    assert cfg["custom"]["legacy_calibration_params"]["camera_pose"] == [0.0, 0.0, 0.0, 0, 0.0, 0.0]
