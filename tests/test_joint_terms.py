"""The joint-term table drives the regressor, parameters, efforts, URDF export and config."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from figaroh.identification import _pipeline_physical
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.identification.parameter import get_parameter_info, get_standard_parameters
from figaroh.tools import joint_terms
from figaroh.tools.randomdata import get_torque_rand
from figaroh.tools.regressor import RegressorConfig, build_regressor_basic
from figaroh.tools.urdf_exporter import export_urdf, joint_term_parameters
from figaroh.utils.config_keys import UnknownConfigKeyError, check_document

#: Independent expected entries of each 1.0.2 joint term.
EXPECTED_SIGNAL = {
    "fv": lambda v, a: v,
    "fs": lambda v, a: np.sign(v),
    "Ia": lambda v, a: a,
    "off": lambda v, a: np.ones_like(v),
}


class _Robot:
    def __init__(self, model):
        self.model = model
        self.data = model.createData()


@pytest.fixture(scope="module")
def ur10(ur10_urdf):
    return _Robot(pin.buildModelFromUrdf(str(ur10_urdf)))


def _samples(model, n, seed=3):
    rng = np.random.default_rng(seed)
    lo, hi = -np.ones(model.nq), np.ones(model.nq)
    q = np.array([pin.randomConfiguration(model, lo, hi) for _ in range(n)])
    v = rng.normal(size=(n, model.nv))
    a = rng.normal(size=(n, model.nv))
    v[0, :] = 0.0  # sign(0) = 0
    return q, v, a


def _all_flags(values=None, rng=None):
    cfg = {key: True for key in joint_terms.enable_keys()}
    for row in joint_terms.JOINT_TERMS:
        cfg[row.values_key] = values if values is not None else rng.uniform(0.1, 1.0, 6).tolist()
    return cfg


def _blocks(W, model, n):
    """``{prefix: (n, nv) entries on the diagonal of its block}`` of a joint-major W."""
    nv, start = model.nv, 10 * (model.njoints - 1)
    out = {}
    for b, row in enumerate(joint_terms.JOINT_TERMS):
        cols = start + b * nv + np.arange(nv)
        out[row.prefix] = np.stack([W[j * n : (j + 1) * n, cols[j]] for j in range(nv)], axis=1)
    return out


def test_table_reproduces_the_1_0_2_layout():
    rows = joint_terms.JOINT_TERMS
    assert [r.prefix for r in rows] == ["fv", "fs", "Ia", "off"]
    assert [r.signal for r in rows] == ["dq", "sign(dq)", "ddq", "1"]
    assert [r.unit for r in rows] == ["[N·m·s/rad]", "[N·m]", "[kg·m²]", "[N·m]"]
    assert [(r.urdf_element, r.urdf_attribute) for r in rows] == [
        ("dynamics", "damping"),
        ("dynamics", "friction"),
        ("dynamics", "armature"),
        ("calibration", "rising"),
    ]
    assert joint_terms.enable_keys() == ("has_friction", "has_actuator_inertia", "has_joint_offset")
    assert [r.values_key for r in rows] == ["fv", "fs", "Ia", "off"]
    assert [r.legacy_values_key for r in rows] == ["fv", "fs", "Ia", "offset"]
    assert [r.gear_power for r in rows] == [2, 1, 2, 1]
    assert joint_terms.exported_prefixes() == ("fv", "fs", "Ia")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].prefix = "x"  # type: ignore[misc]


def test_lookup_helpers():
    assert joint_terms.term("Ia").enable_key == "has_actuator_inertia"
    with pytest.raises(KeyError, match="known"):
        joint_terms.term("nope")
    row, joint = joint_terms.term_for_parameter("off_wrist_3_joint")
    assert row.prefix == "off" and joint == "wrist_3_joint"
    assert joint_terms.term_for_parameter("offsetRZ_j1") is None
    assert joint_terms.term_for_parameter("fv_") is None
    assert [t.prefix for t in joint_terms.enabled_terms({"has_friction": True})] == ["fv", "fs"]
    assert joint_terms.enabled_terms(None) == ()
    assert RegressorConfig(has_actuator_inertia=True, has_joint_offset=True).extra_blocks() == [
        "Ia",
        "off",
    ]


def test_each_row_drives_its_regressor_column(ur10):
    model = ur10.model
    n = 15
    q, v, a = _samples(model, n)
    cfg = _all_flags(values=[0.0] * model.nv)
    W = build_regressor_basic(ur10, q, v, a, cfg)
    assert W.shape == (n * model.nv, 10 * (model.njoints - 1) + 4 * model.nv)
    for prefix, entries in _blocks(W, model, n).items():
        expected = EXPECTED_SIGNAL[prefix](v, a)
        np.testing.assert_array_equal(entries, expected, err_msg=prefix)
    # the Coulomb dead band only touches the sign(dq) row
    W_db = build_regressor_basic(ur10, q, v, a, {**cfg, "coulomb_deadband": 0.5})
    blocks = _blocks(W_db, model, n)
    np.testing.assert_array_equal(blocks["fs"], np.sign(v) * (np.abs(v) >= 0.5))
    np.testing.assert_array_equal(blocks["fv"], v)


def test_rows_drive_parameter_names_and_info(ur10):
    model = ur10.model
    rng = np.random.default_rng(0)
    cfg = _all_flags(rng=rng)
    names = list(get_standard_parameters(model, cfg))
    joints = list(model.names)[1:]
    expected = [f"{r.prefix}_{j}" for r in joint_terms.JOINT_TERMS for j in joints]
    assert names[10 * len(joints) :] == expected
    params = get_standard_parameters(model, cfg)
    for row in joint_terms.JOINT_TERMS:
        assert [params[f"{row.prefix}_{j}"] for j in joints] == cfg[row.values_key]
    info = get_parameter_info()["standard_additional"]
    assert [v["name"] for v in info.values()] == [r.prefix for r in joint_terms.JOINT_TERMS]


def test_regressor_times_parameters_equals_simulated_efforts(ur10):
    model = ur10.model
    n = 10
    q, v, a = _samples(model, n, seed=5)
    cfg = _all_flags(rng=np.random.default_rng(1))
    W = build_regressor_basic(ur10, q, v, a, cfg)
    phi = np.array(list(get_standard_parameters(model, cfg).values()))
    tau = get_torque_rand(n, ur10, q, v, a, cfg)
    np.testing.assert_allclose(W @ phi, tau, rtol=1e-10, atol=1e-9)


def test_urdf_export_round_trip_of_every_row(ur10_urdf, tmp_path):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    joints = list(model.names)[1:]
    rng = np.random.default_rng(2)
    params = {
        f"{row.prefix}_{j}": float(rng.uniform(0.01, 1.0))
        for row in joint_terms.JOINT_TERMS
        for j in joints
    }
    out = export_urdf(ur10_urdf, params, output_path=tmp_path / "terms.urdf")
    assert sorted(out.applied) == sorted(params)
    root = ET.parse(out).getroot()
    for name, value in params.items():
        row, joint = joint_terms.term_for_parameter(name)
        elem = root.find(f"joint[@name='{joint}']/{row.urdf_element}")
        assert float(elem.get(row.urdf_attribute)) == value, name
    reloaded = pin.buildModelFromUrdf(out)
    for jid, joint in enumerate(joints, start=1):
        idx = reloaded.joints[jid].idx_v
        assert reloaded.damping[idx] == params[f"fv_{joint}"]
        assert reloaded.friction[idx] == params[f"fs_{joint}"]


def test_config_mapping_follows_the_table(ur10):
    unified = {
        "problem": {"model_components": {"friction": False, "actuator_inertia": True}},
        "mechanics": {
            "friction_coefficients": {"viscous": [1.0], "static": [2.0]},
            "actuator_inertias": [3.0],
            "joint_offsets": [4.0],
        },
    }
    cfg = unified_to_legacy_identif_config(ur10, unified)
    assert [cfg[k] for k in joint_terms.enable_keys()] == [False, True, True]
    assert [cfg[r.values_key] for r in joint_terms.JOINT_TERMS] == [[1.0], [2.0], [3.0], [4.0]]
    with pytest.raises(ValueError, match="mechanics.friction_coefficients must be a mapping"):
        unified_to_legacy_identif_config(ur10, {"mechanics": {"friction_coefficients": [1.0]}})


# -- one more row is all a new term needs ------------------------------------
def _quadratic(dq, ddq, coulomb_deadband):
    return dq * np.abs(dq)


QUADRATIC = joint_terms.JointTerm(
    prefix="fq",
    label="quadratic friction",
    summary="Quadratic (drag) friction coefficient",
    info_key="quadratic_friction",
    signal="dq·|dq|",
    evaluate=_quadratic,
    unit="[N·m·s²/rad²]",
    urdf_element="dynamics",
    urdf_attribute="quadratic_damping",
    enable_key="has_quadratic_friction",
    values_key="fq",
    component_key="quadratic_friction",
    mechanics_path=("quadratic_friction_coefficients",),
    legacy_values_key="fq",
    gear_power=3,  # τ = N·b_m·(N·dq)·|N·dq|
)

#: A unified document (strict mode) and a legacy document using the new row's keys.
QUADRATIC_UNIFIED = {
    "strict_keys": True,
    "robot": {"properties": {"mechanics": {"quadratic_friction_coefficients": [0.5]}}},
    "tasks": {
        "identification": {
            "problem": {"model_components": {"friction": True, "quadratic_friction": True}},
            "mechanics": {"quadratic_friction_coefficients": [0.5]},
        }
    },
}
QUADRATIC_LEGACY = {
    "identification": {
        "robot_params": [{"fv": [1.0], "fq": [0.5]}],
        "problem_params": [{"has_friction": True, "has_quadratic_friction": True}],
    }
}


def test_config_keys_of_a_new_row_are_unknown_without_it():
    with pytest.raises(UnknownConfigKeyError, match="quadratic_friction") as err:
        check_document(QUADRATIC_UNIFIED, "unified.yaml", strict=True)
    assert "tasks.identification.mechanics.quadratic_friction_coefficients" in str(err.value)
    assert "robot.properties.mechanics.quadratic_friction_coefficients" in str(err.value)
    with pytest.raises(UnknownConfigKeyError, match="has_quadratic_friction"):
        check_document(QUADRATIC_LEGACY, "legacy.yaml", strict=True, schema="legacy")


class _Selection:
    """An accepted standard-space selection holding only joint terms (no link inertials)."""

    space, accepted, stage, psd_eig_tol = "standard", True, "physical_fit", None

    def __init__(self, params):
        self._params = dict(params)

    def link_p10(self, joints):
        return {}

    def parameter_dict(self):
        return dict(self._params)


class _SolvedStub:
    """The attributes ``export_selected_urdf`` reads on a solved identification."""

    def __init__(self, joints, params, identif_config):
        self.selected = _Selection(params)
        self.identif_config = identif_config
        self.stages = []
        self._joints = list(joints)

    def _identified_joints(self):
        return self._joints

    def _refresh_result_stages(self):
        pass


@pytest.fixture()
def extra_row(monkeypatch):
    monkeypatch.setattr(joint_terms, "JOINT_TERMS", (*joint_terms.JOINT_TERMS, QUADRATIC))
    return QUADRATIC


def test_an_extra_row_is_enough(ur10, ur10_urdf, tmp_path, extra_row):
    model = ur10.model
    joints = list(model.names)[1:]
    n = 12
    q, v, a = _samples(model, n, seed=9)
    rng = np.random.default_rng(4)
    cfg = _all_flags(rng=rng)
    assert cfg["has_quadratic_friction"] and len(cfg["fq"]) == model.nv

    params = get_standard_parameters(model, cfg)
    assert list(params)[-model.nv :] == [f"fq_{j}" for j in joints]
    assert "quadratic_friction" in get_parameter_info()["standard_additional"]

    W = build_regressor_basic(ur10, q, v, a, cfg)
    assert W.shape[1] == len(params)
    np.testing.assert_array_equal(_blocks(W, model, n)["fq"], v * np.abs(v))
    tau = get_torque_rand(n, ur10, q, v, a, cfg)
    np.testing.assert_allclose(W @ np.array(list(params.values())), tau, rtol=1e-10, atol=1e-9)

    # disabled: no names, no columns
    off = {**cfg, "has_quadratic_friction": False}
    assert len(get_standard_parameters(model, off)) == W.shape[1] - model.nv
    assert build_regressor_basic(ur10, q, v, a, off).shape[1] == W.shape[1] - model.nv

    out = export_urdf(ur10_urdf, {f"fq_{joints[0]}": 0.25}, output_path=tmp_path / "fq.urdf")
    dyn = ET.parse(out).getroot().find(f"joint[@name='{joints[0]}']/dynamics")
    assert float(dyn.get("quadratic_damping")) == 0.25
    # exported by default, reflected through the gear with the row's power
    values = {f"fq_{j}": 0.5 for j in joints}
    assert joint_term_parameters(values, joints) == values
    motor = joint_term_parameters(values, joints[:1], motor_side_ratios={joints[0]: -2.0})
    assert motor == {f"fq_{joints[0]}": 0.5 * 8.0}

    # the identification's export step writes it when the configuration enabled it
    owner = _SolvedStub(joints, params, cfg)
    written = _pipeline_physical.export_selected_urdf(
        owner, str(ur10_urdf), str(tmp_path / "id.urdf")
    )
    root = ET.parse(written).getroot()
    for j in joints:
        dyn = root.find(f"joint[@name='{j}']/dynamics")
        assert float(dyn.get("quadratic_damping")) == params[f"fq_{j}"], j
        assert float(dyn.get("damping")) == params[f"fv_{j}"], j
    assert root.find(f"joint[@name='{joints[0]}']/calibration") is None  # off: not exported
    owner = _SolvedStub(joints, params, off)
    written = _pipeline_physical.export_selected_urdf(
        owner, str(ur10_urdf), str(tmp_path / "no.urdf")
    )
    dyn = ET.parse(written).getroot().find(f"joint[@name='{joints[0]}']/dynamics")
    assert dyn.get("quadratic_damping") is None and dyn.get("damping") is not None

    # its configuration keys are known (strict mode), unified and legacy
    assert check_document(QUADRATIC_UNIFIED, "unified.yaml", strict=True) == []
    assert check_document(QUADRATIC_LEGACY, "legacy.yaml", strict=True, schema="legacy") == []
    with pytest.raises(UnknownConfigKeyError, match="quadratic_fricton"):
        check_document(
            {
                "tasks": {
                    "identification": {"problem": {"model_components": {"quadratic_fricton": 1}}}
                }
            },
            "typo.yaml",
            strict=True,
        )

    unified = {
        "problem": {"model_components": {"quadratic_friction": False}},
        "mechanics": {"quadratic_friction_coefficients": [0.5] * model.nv},
    }
    mapped = unified_to_legacy_identif_config(ur10, unified)
    assert mapped["has_quadratic_friction"] is False and mapped["fq"] == [0.5] * model.nv
