"""Tests of figaroh.identification.config (unified task config → identif_config)."""

from __future__ import annotations

import copy
import math
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from figaroh.identification.config import (
    _LEGACY_CONFIG_DEPRECATION_MESSAGE,
    PHYSICAL_FIT_DEFAULTS,
    SELECT_STAGES,
    _extract_selection_config,
    fill_active_joint_indices,
    filter_config,
    get_param_from_yaml,
    unified_to_legacy_identif_config,
)
from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.utils.config_parser import UnifiedConfigParser, create_task_config

ROOT = Path(__file__).resolve().parents[1]
UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]
SPEC_KEYS = [
    "robot_name",
    "instance",
    "nb_samples",
    "ts",
    "cut_off_frequency_butterworth",
    "filter_config",
    "active_joints",
    "q_lim_def",
    "dq_lim_def",
    "ddq_lim_def",
    "torque_lim_def",
    "is_external_wrench",
    "is_joint_torques",
    "external_wrench_offsets",
    "force_torque",
    "has_friction",
    "has_actuator_inertia",
    "has_joint_offset",
    "wls",
    "qr_relative_tolerance",
    "torque_fit_joints",
    "fv",
    "fs",
    "Ia",
    "off",
    "reduction_ratio",
    "ratio_essential",
    "has_coupled_wrist",
    "Iam6",
    "fvm6",
    "fsm6",
    "mass_load",
    "which_body_loaded",
    "validation_data_file",
]


class Robot:
    """The tiny robot object the converters need: just ``.model``."""

    def __init__(self, model: pin.Model) -> None:
        self.model = model
        self.data = model.createData()
        self.q0 = pin.neutral(model)


@pytest.fixture(scope="module")
def ur10(ur10_urdf) -> Robot:
    return Robot(pin.buildModelFromUrdf(str(ur10_urdf)))


def identif_from_file(robot: Robot, path: Path, variant: str | None = None) -> dict:
    cfg = UnifiedConfigParser(path, variant).parse()
    return unified_to_legacy_identif_config(robot, create_task_config(robot, cfg, "identification"))


# ---------------------------------------------------------------------------
# the demo config
# ---------------------------------------------------------------------------


def test_repo_ur10_config_documented_values(ur10):
    identif = identif_from_file(ur10, ROOT / "config" / "ur10_unified_config.yaml")
    assert list(identif)[: len(SPEC_KEYS)] == SPEC_KEYS  # every key, in the documented order
    assert identif["robot_name"] == ur10.model.name == "ur10"
    assert identif["ts"] == pytest.approx(0.01)
    assert identif["nb_samples"] == 100
    assert identif["cut_off_frequency_butterworth"] == 10.0
    assert identif["filter_config"] == {
        "cutoff_frequency": 10.0,
        "sampling_frequency": 100.0,
        "filter_type": "butterworth",
        "differentiation_method": "gradient",
        "filter_params": {"f_sample": 100.0, "f_butter": 10.0, "nbutter": 4},
    }
    assert identif["has_friction"] is True
    assert identif["has_actuator_inertia"] is False
    assert identif["has_joint_offset"] is False
    assert identif["has_coupled_wrist"] is False  # manipulator template
    assert identif["is_joint_torques"] is True and identif["is_external_wrench"] is False
    assert identif["force_torque"] is None
    assert identif["active_joints"] == UR10_JOINTS
    assert identif["act_idxv"] == [0, 1, 2, 3, 4, 5]
    assert identif["act_idxq"] == [0, 1, 2, 3, 4, 5]
    assert identif["act_Jid"] == [1, 2, 3, 4, 5, 6]
    assert identif["idx_act_joints"] == [0, 1, 2, 3, 4, 5]
    assert [j.id for j in identif["act_J"]] == [1, 2, 3, 4, 5, 6]
    assert identif["fv"] == [0.0] * 6 and identif["fs"] == [0.0] * 6
    assert identif["torque_lim_def"] == list(ur10.model.effortLimit)
    assert identif["mass_load"] == 0.0 and identif["which_body_loaded"] == 0.0
    assert identif["validation_data_file"] == ""
    assert identif["qr_relative_tolerance"] is None and identif["torque_fit_joints"] is None
    for absent in ("select_stage", "physical_fit", "physical_consistency", "reconstruction"):
        assert absent not in identif
    clone = copy.deepcopy(identif)  # joint models survive a deep copy
    assert clone["act_idxv"] == identif["act_idxv"] and len(clone["act_J"]) == 6


def test_repo_ur10_variant(ur10):
    identif = identif_from_file(
        ur10, ROOT / "config" / "ur10_unified_config.yaml", "low_rate_identification"
    )
    assert identif["ts"] == pytest.approx(0.02) and identif["nb_samples"] == 50
    assert identif["filter_config"]["filter_params"]["f_butter"] == 5.0


def test_worked_example(ur10, tmp_path):
    """A template-based unified file gives the documented identif_config."""
    (tmp_path / "templates").mkdir()
    for name in ("base_robot_config.yaml", "manipulator_robot.yaml"):
        src = ROOT / "config" / "templates" / name
        (tmp_path / "templates" / name).write_text(src.read_text(encoding="utf-8"))
    path = tmp_path / "ur10" / "config" / "ur10.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        textwrap.dedent(
            """
            extends: "../../templates/manipulator_robot.yaml"
            robot:
              name: ur10
              instance: {asset_id: ur10-cell-2}
              properties:
                joints:
                  active_joints: [shoulder_pan_joint, shoulder_lift_joint, elbow_joint,
                                  wrist_1_joint, wrist_2_joint, wrist_3_joint]
                  joint_limits:
                    velocity: [2.094, 2.094, 3.142, 3.142, 3.142, 3.142]
                    torque:   [330.0, 330.0, 150.0, 54.0, 54.0, 54.0]
                mechanics:
                  reduction_ratios: [101, 101, 101, 101, 101, 101]
                  ratio_essential: 100.0
                  friction_coefficients: {viscous: [0,0,0,0,0,0], static: [0,0,0,0,0,0]}
                  actuator_inertias: [0,0,0,0,0,0]
                  joint_offsets: [0,0,0,0,0,0]
            tasks:
              identification:
                enabled: true
                problem:
                  use_joint_torques: true
                  model_components: {friction: true, actuator_inertia: false, joint_offset: false}
                  qr_relative_tolerance: 1.0e-4
                signal_processing: {sampling_frequency: 500.0, cutoff_frequency: 50.0,
                                    filter_order: 4}
                data: {validation_data_file: data/heldout}
                select_stage: physical_fit
                physical_fit: {second_solver: qics}
            """
        )
    )
    identif = identif_from_file(ur10, path)
    assert identif["instance"] == {"asset_id": "ur10-cell-2"}
    assert identif["ts"] == 0.002 and identif["nb_samples"] == 500
    assert identif["cut_off_frequency_butterworth"] == 50.0
    assert identif["filter_config"]["filter_params"] == {
        "f_sample": 500.0,
        "f_butter": 50.0,
        "nbutter": 4,
    }
    assert identif["has_friction"] is True
    assert identif["has_actuator_inertia"] is False and identif["has_joint_offset"] is False
    assert identif["has_coupled_wrist"] is False
    assert identif["fv"] == [0] * 6 and identif["fs"] == [0] * 6
    assert identif["qr_relative_tolerance"] == 1e-4
    assert identif["select_stage"] == "physical_fit"
    assert identif["physical_fit"] == {
        "enabled": False,
        "solver": "cvxopt",
        "second_solver": "qics",
        "mass_min": 1e-6,
        "prior_weight": 1e-6,
        "max_seconds": None,
    }
    assert identif["validation_data_file"] == "data/heldout"
    assert identif["mass_load"] == 0.0 and identif["which_body_loaded"] == 0.0


def test_defaults_of_an_empty_task(ur10):
    identif = unified_to_legacy_identif_config(ur10, {})
    assert list(identif) == SPEC_KEYS
    expected = {
        "robot_name": "ur10",
        "instance": {},
        "nb_samples": 5000,
        "ts": 1 / 5000,
        "cut_off_frequency_butterworth": 100.0,
        "active_joints": [],
        "q_lim_def": [],
        "dq_lim_def": [],
        "ddq_lim_def": [],
        "torque_lim_def": [],
        "is_external_wrench": False,
        "is_joint_torques": True,
        "external_wrench_offsets": False,
        "force_torque": None,
        "has_friction": True,
        "has_actuator_inertia": True,
        "has_joint_offset": True,
        "wls": False,
        "qr_relative_tolerance": None,
        "torque_fit_joints": None,
        "fv": [],
        "fs": [],
        "Ia": [],
        "off": [],
        "reduction_ratio": [],
        "ratio_essential": 30.0,
        "has_coupled_wrist": True,
        "Iam6": 0,
        "fvm6": 0,
        "fsm6": 0,
        "mass_load": 0.0,
        "which_body_loaded": 0.0,
        "validation_data_file": "",
    }
    assert {k: v for k, v in identif.items() if k != "filter_config"} == expected
    assert identif["filter_config"]["filter_params"] == {
        "f_sample": 5000.0,
        "f_butter": 100.0,
        "nbutter": 4,
    }
    assert "act_idxv" not in identif  # empty active_joints is left to the caller
    # None sections behave like absent ones; a non-mapping data section is ignored
    identif2 = unified_to_legacy_identif_config(ur10, {"problem": None, "data": "x"})
    assert identif2["has_friction"] is True and identif2["validation_data_file"] == ""


def test_force_torque_and_optional_sections(ur10):
    identif = unified_to_legacy_identif_config(
        ur10,
        {
            "problem": {"force_torque_sensors": [["Fx", "Fy", "Fz"], ["other"]], "wls": True},
            "physical_consistency": {"enabled": True},
            "reconstruction": {},
            "select_stage": None,
            "physical_fit": None,
            "load_configuration": {"additional_mass": 5.0},
        },
    )
    assert identif["force_torque"] == ["Fx", "Fy", "Fz"]
    assert identif["wls"] is True
    assert identif["physical_consistency"] == {"enabled": True}
    assert "reconstruction" not in identif  # empty mapping → absent
    assert "select_stage" not in identif and "physical_fit" not in identif
    assert identif["mass_load"] == 0.0  # load_configuration is not read


# ---------------------------------------------------------------------------
# signal processing
# ---------------------------------------------------------------------------


def test_explicit_filter_params_win():
    cfg = filter_config(
        {
            "sampling_frequency": 5000.0,
            "cutoff_frequency": 100.0,
            "filter_params": {"nbutter": 4, "f_butter": 2, "med_fil": 5, "f_sample": 500},
            "differentiation_method": "central",
        }
    )
    assert cfg["filter_params"] == {"nbutter": 4, "f_butter": 2, "med_fil": 5, "f_sample": 500}
    assert cfg["sampling_frequency"] == 5000.0 and cfg["differentiation_method"] == "central"
    # order falls back to filter_order, then 4
    assert filter_config({"filter_order": 6})["filter_params"]["nbutter"] == 6
    assert filter_config({"filter_order": None})["filter_params"]["nbutter"] == 4


@pytest.mark.parametrize(
    "sp",
    [
        {"sampling_frequency": 100.0, "cutoff_frequency": 50.0},  # exactly Nyquist
        {"sampling_frequency": 100.0, "cutoff_frequency": 80.0},
        {"sampling_frequency": 1000.0, "filter_params": {"f_butter": 600.0}},
        {"sampling_frequency": 1000.0, "cutoff_frequency": 10.0, "filter_params": {"f_sample": 15}},
    ],
)
def test_cutoff_at_or_above_nyquist_is_refused(ur10, sp):
    with pytest.raises(ValueError, match="Nyquist"):
        unified_to_legacy_identif_config(ur10, {"signal_processing": sp})


def test_cutoff_just_below_nyquist_is_accepted(ur10):
    identif = unified_to_legacy_identif_config(
        ur10, {"signal_processing": {"sampling_frequency": 100.0, "cutoff_frequency": 49.9}}
    )
    assert identif["filter_config"]["filter_params"]["f_butter"] == 49.9


@pytest.mark.parametrize(
    ("sp", "key"),
    [
        ({"sampling_frequency": 0}, "sampling_frequency"),
        ({"sampling_frequency": float("nan")}, "sampling_frequency"),
        ({"cutoff_frequency": "fast"}, "cutoff_frequency"),
        ({"filter_params": {"order": 4}}, "filter_params"),
        ({"filter_params": [4]}, "filter_params"),
        ({"filter_params": {"nbutter": 2.5}}, "nbutter"),
        ({"filter_params": {"med_fil": 4}}, "med_fil"),
        ({"differentiation_method": "spline"}, "differentiation_method"),
    ],
)
def test_bad_signal_processing_names_the_key(ur10, sp, key):
    with pytest.raises(ValueError, match=key):
        unified_to_legacy_identif_config(ur10, {"signal_processing": sp})


@pytest.mark.parametrize("fs", [93.0, 99.0, 117.0, 500.0, 5000.0, 1000.0])
def test_nb_samples_is_exact_for_integer_rates(ur10, fs):
    identif = unified_to_legacy_identif_config(
        ur10, {"signal_processing": {"sampling_frequency": fs, "cutoff_frequency": 1.0}}
    )
    assert identif["nb_samples"] == int(fs)  # int(1/(1/93)) would give 92
    assert identif["ts"] * fs == pytest.approx(1.0)


# ---------------------------------------------------------------------------
# problem / selection validation
# ---------------------------------------------------------------------------


def test_torque_fit_joints(ur10):
    base = {"joints": {"active_joints": UR10_JOINTS}}
    ok = unified_to_legacy_identif_config(
        ur10, {**base, "problem": {"torque_fit_joints": ["elbow_joint"]}}
    )
    assert ok["torque_fit_joints"] == ["elbow_joint"]
    with pytest.raises(ValueError, match="problem.torque_fit_joints must be a list of joint names"):
        unified_to_legacy_identif_config(ur10, {**base, "problem": {"torque_fit_joints": "elbow"}})
    with pytest.raises(ValueError, match=r"torque_fit_joints.*\['hip'\]"):
        unified_to_legacy_identif_config(ur10, {**base, "problem": {"torque_fit_joints": ["hip"]}})


def test_select_stage():
    assert SELECT_STAGES == ("fit", "reconstruction", "physical_fit")
    out: dict = {}
    _extract_selection_config(out, {"select_stage": "  Physical_Fit "})
    assert out == {"select_stage": "physical_fit"}
    with pytest.raises(ValueError, match="select_stage") as err:
        _extract_selection_config({}, {"select_stage": "best"})
    for stage in SELECT_STAGES:
        assert stage in str(err.value)
    with pytest.raises(ValueError, match="nominal"):
        _extract_selection_config({}, {"select_stage": "projected"})


def test_physical_fit():
    assert PHYSICAL_FIT_DEFAULTS == {
        "enabled": False,
        "solver": "cvxopt",
        "second_solver": None,
        "mass_min": 1e-6,
        "prior_weight": 1e-6,
        "max_seconds": None,
    }
    out: dict = {}
    _extract_selection_config(out, {"physical_fit": [{"enabled": True, "mass_min": 0.01}]})
    assert out["physical_fit"] == {**PHYSICAL_FIT_DEFAULTS, "enabled": True, "mass_min": 0.01}
    with pytest.raises(ValueError, match=r"unknown physical_fit keys \['solvr'\]; allowed"):
        _extract_selection_config({}, {"physical_fit": {"solvr": "mosek"}})
    with pytest.raises(ValueError, match="physical_fit must be a mapping"):
        _extract_selection_config({}, {"physical_fit": "yes"})
    PHYSICAL_FIT_DEFAULTS_COPY = dict(PHYSICAL_FIT_DEFAULTS)
    _extract_selection_config({}, {"physical_fit": {"solver": "clarabel"}})
    assert PHYSICAL_FIT_DEFAULTS == PHYSICAL_FIT_DEFAULTS_COPY  # defaults not mutated


def test_bad_inputs(ur10):
    with pytest.raises(TypeError, match="model"):
        unified_to_legacy_identif_config(object(), {})
    with pytest.raises(TypeError, match="mapping"):
        unified_to_legacy_identif_config(ur10, [1])
    with pytest.raises(ValueError, match="'problem'"):
        unified_to_legacy_identif_config(ur10, {"problem": [1]})
    with pytest.raises(ValueError, match="model_components.friction"):
        unified_to_legacy_identif_config(
            ur10, {"problem": {"model_components": {"friction": "yes"}}}
        )
    with pytest.raises(ValueError, match="active_joints"):
        unified_to_legacy_identif_config(ur10, {"joints": {"active_joints": "elbow_joint"}})


# ---------------------------------------------------------------------------
# active joints
# ---------------------------------------------------------------------------


def test_unknown_active_joint_lists_model_joints(ur10):
    with pytest.raises(IdentificationConfigError) as err:
        unified_to_legacy_identif_config(
            ur10, {"joints": {"active_joints": ["elbow", "wrist_1_joint"]}}
        )
    msg = str(err.value)
    assert "['elbow']" in msg and "shoulder_pan_joint" in msg and "wrist_3_joint" in msg


def test_fill_keeps_caller_keys_and_reorders(ur10):
    cfg = {"active_joints": ["wrist_3_joint", "shoulder_pan_joint"], "act_idxv": [42]}
    fill_active_joint_indices(ur10.model, cfg)
    assert cfg["act_idxv"] == [42]  # not overwritten
    assert cfg["act_idxq"] == [5, 0] and cfg["act_Jid"] == [6, 1]
    assert cfg["idx_act_joints"] == [5, 0]
    with pytest.raises(IdentificationConfigError, match="more than once"):
        fill_active_joint_indices(ur10.model, {"active_joints": ["elbow_joint", "elbow_joint"]})


def test_fill_empty_means_all_one_dof_joints(tiago_urdf, talos_urdf):
    tiago = pin.buildModelFromUrdf(str(tiago_urdf))
    cfg = fill_active_joint_indices(tiago, {"active_joints": []})
    one_dof = [j for j in range(1, tiago.njoints) if tiago.joints[j].nv == 1]
    assert cfg["act_Jid"] == one_dof
    assert cfg["active_joints"] == [tiago.names[j] for j in one_dof]
    # wheels are continuous joints (nq=2, nv=1): idx_q and idx_v differ
    wheel = cfg["active_joints"].index("wheel_right_joint")  # after one continuous joint
    assert cfg["act_idxq"][wheel] == cfg["act_idxv"][wheel] + 1
    assert cfg["act_idxq"] == [int(tiago.idx_qs[j]) for j in one_dof]
    assert cfg["act_idxv"] == [int(tiago.idx_vs[j]) for j in one_dof]
    assert len(cfg["act_idxv"]) == tiago.nv  # tiago has only 1-DoF joints

    talos = pin.buildModelFromUrdf(str(talos_urdf), pin.JointModelFreeFlyer())
    cfg = fill_active_joint_indices(talos, {})
    assert "root_joint" not in cfg["active_joints"]
    assert cfg["act_idxv"][0] == 6 and cfg["act_idxq"][0] == 7
    assert len(cfg["act_idxv"]) == talos.nv - 6
    with pytest.raises(IdentificationConfigError, match="root_joint"):
        fill_active_joint_indices(talos, {"active_joints": ["root_joint"]})


def test_act_idxv_selects_the_active_dofs(ur10):
    """Independent check: act_idxv picks the torque of the named joint out of RNEA."""
    cfg = fill_active_joint_indices(ur10.model, {"active_joints": ["elbow_joint", "wrist_2_joint"]})
    rng = np.random.default_rng(3)
    q = pin.randomConfiguration(ur10.model)
    v, a = rng.standard_normal(ur10.model.nv), rng.standard_normal(ur10.model.nv)
    tau = pin.rnea(ur10.model, ur10.data, q, v, a)
    data = ur10.model.createData()
    pin.rnea(ur10.model, data, q, v, a)
    for name, iv in zip(cfg["active_joints"], cfg["act_idxv"], strict=True):
        jid = ur10.model.getJointId(name)
        # the joint torque is the projection of the joint's spatial force on its motion subspace
        f = data.f[jid].vector
        s = ur10.model.joints[jid].shortname()
        axis = {"JointModelRZ": 5, "JointModelRY": 4, "JointModelRX": 3}[s]
        assert math.isclose(tau[iv], f[axis], rel_tol=1e-9, abs_tol=1e-9)


# ---------------------------------------------------------------------------
# shared robot configs
# ---------------------------------------------------------------------------


def test_shared_unified_configs_convert(shared_data):
    urdfs = {
        "staubli_tx40": shared_data / "staubli_tx40" / "tx40_mdh_modified.urdf",
        "tiago": shared_data / "tiago" / "urdf" / "tiago.urdf",
        "talos": shared_data / "talos" / "talos_full_v2.urdf",
        "ur10": shared_data / "models" / "ur_description" / "urdf" / "ur10_robot.urdf",
    }
    results = {}
    for robot_dir, urdf in urdfs.items():
        robot = Robot(pin.buildModelFromUrdf(str(urdf)))
        path = next((shared_data / robot_dir / "config").glob("*_unified_config.yaml"))
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        identif = identif_from_file(robot, path)
        active = raw["robot"]["properties"]["joints"]["active_joints"]
        assert identif["active_joints"] == active
        assert identif["act_idxv"] == [
            int(robot.model.idx_vs[robot.model.getJointId(n)]) for n in active
        ]
        results[robot_dir] = identif
    tx40 = results["staubli_tx40"]
    assert tx40["nb_samples"] == 5000 and tx40["has_coupled_wrist"] is True
    assert tx40["Iam6"] == 0.00964 and tx40["fv"][0] == 8.05
    tiago = results["tiago"]
    assert tiago["filter_config"]["filter_params"] == {
        "nbutter": 4,
        "f_butter": 2,
        "med_fil": 5,
        "f_sample": 500,
    }
    assert tiago["force_torque"] == "wrist_ft_sensor" and tiago["is_external_wrench"] is True
    talos = results["talos"]
    assert talos["ts"] == pytest.approx(1e-3) and talos["force_torque"] == "arm_left_ft_sensor"
    assert results["ur10"]["has_friction"] is False


# ---------------------------------------------------------------------------
# legacy parser
# ---------------------------------------------------------------------------


def test_legacy_parser(shared_data, ur10):
    data = yaml.safe_load(
        (shared_data / "tiago" / "config" / "tiago_config.yaml").read_text(encoding="utf-8")
    )
    with pytest.warns(DeprecationWarning, match="Legacy flat config format") as rec:
        cfg = get_param_from_yaml(ur10, data["identification"])
    assert "python -m figaroh.utils.config_migration --input" in str(rec[0].message)
    assert cfg["ts"] == pytest.approx(2e-4) and cfg["nb_samples"] == 5000
    assert cfg["cut_off_frequency_butterworth"] == 100.0
    assert cfg["reduction_ratio"] == [32.0, 32.0, 45.0, -48.0, 45.0, 32.0]
    assert cfg["has_coupled_wrist"] is True and cfg["force_torque"] is None
    assert cfg["mass_load"] == 0.0 and cfg["sync_joint_motion"] is False
    assert cfg["torque_lim_def"] == 4.0 and cfg["off"] == [0] * 12
    # "None" strings (ur10 legacy) fall back to defaults
    ur10_data = yaml.safe_load(
        (shared_data / "ur10" / "config" / "ur10_config.yaml").read_text(encoding="utf-8")
    )
    with pytest.warns(DeprecationWarning):
        cfg = get_param_from_yaml(ur10, ur10_data)  # whole document accepted too
    assert cfg["fv"] == [] and cfg["ratio_essential"] == 30.0 and cfg["mass_load"] == 0.0
    assert cfg["force_torque"] == ["All"] and cfg["has_friction"] is False


def test_deprecation_message_names_cli():
    assert (
        "python -m figaroh.utils.config_migration --input <legacy.yaml> --output <unified.yaml>"
        in _LEGACY_CONFIG_DEPRECATION_MESSAGE
    )


def test_one_identification_error_class_catches_every_identification_failure():
    from figaroh.identification import exceptions as ie
    from figaroh.utils import error_handling as eh

    assert ie.IdentificationError is eh.IdentificationError
    for cls, builtin in (
        (ie.IdentificationConfigError, ValueError),
        (ie.IdentificationDataError, ValueError),
        (ie.IdentificationStateError, AssertionError),
    ):
        with pytest.raises(eh.IdentificationError):
            raise cls("x")
        with pytest.raises(builtin):
            raise cls("x")
        assert issubclass(cls, eh.FigarohError)


# ---------------------------------------------------------------------------
# value checks: types named, values passed through unchanged
# ---------------------------------------------------------------------------


def _task(**sections) -> dict:
    base = {
        "joints": {"active_joints": list(UR10_JOINTS)},
        "problem": {"model_components": {"friction": True}},
        "signal_processing": {"sampling_frequency": 100.0, "cutoff_frequency": 10.0},
    }
    base.update(sections)
    return base


def test_mechanics_values_are_passed_through_unchanged(ur10):
    mechanics = {
        "friction_coefficients": {"viscous": [1, 2.5, 0, 0, 0, 0], "static": 0.5},
        "reduction_ratios": {name: 100 for name in UR10_JOINTS},
        "ratio_essential": 100,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cfg = unified_to_legacy_identif_config(ur10, _task(mechanics=mechanics))
    assert cfg["fv"] == [1, 2.5, 0, 0, 0, 0] and cfg["fs"] == 0.5
    assert cfg["reduction_ratio"] == {name: 100 for name in UR10_JOINTS}
    assert cfg["ratio_essential"] == 100 and isinstance(cfg["ratio_essential"], int)


def test_numeric_string_frequency_is_accepted(ur10):
    sp = {"sampling_frequency": "100", "cutoff_frequency": 10.0}
    cfg = unified_to_legacy_identif_config(ur10, _task(signal_processing=sp))
    assert cfg["ts"] == pytest.approx(0.01)


def test_reduction_ratio_count_per_active_or_model_joint(ur10):
    few = [101.0, 101.0]
    with pytest.warns(UserWarning, match=r"reduction_ratios has 2 entries for 6 active joints"):
        unified_to_legacy_identif_config(ur10, _task(mechanics={"reduction_ratios": few}))
    three = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint"]
    six = [101.0] * 6  # one per 1-DoF joint of the model: accepted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unified_to_legacy_identif_config(
            ur10, _task(joints={"active_joints": three}, mechanics={"reduction_ratios": six})
        )


@pytest.mark.parametrize(
    ("sections", "phrase"),
    [
        ({"coupling": {"fvm6": "x"}}, r"coupling\.fvm6 must be a finite number"),
        ({"mechanics": {"actuator_inertias": [0, None]}}, r"mechanics\.actuator_inertias"),
        ({"mechanics": {"joint_offsets": "zero"}}, r"mechanics\.joint_offsets"),
        (
            {"signal_processing": {"sampling_frequency": 100.0, "filter_order": 2.5}},
            r"signal_processing\.filter_order",
        ),
    ],
)
def test_wrong_value_types_name_the_key(ur10, sections, phrase):
    with pytest.raises(IdentificationConfigError, match=phrase):
        unified_to_legacy_identif_config(ur10, _task(**sections))
