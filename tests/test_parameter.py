"""Tests of figaroh.identification.parameter: naming/value contract with the regressor."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pinocchio as pin
import pytest

from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.identification.parameter import (
    INERTIAL_PARAMETER_NAMES,
    add_custom_parameters,
    add_standard_additional_parameters,
    get_parameter_info,
    get_standard_parameters,
    reorder_inertial_parameters,
)

FLAG_COMBOS = list(itertools.product([False, True], repeat=3))


@pytest.fixture(scope="module")
def ur10_model(ur10_urdf):
    return pin.buildModelFromUrdf(str(ur10_urdf))


@pytest.fixture(scope="module")
def tiago_model(tiago_urdf):
    return pin.buildModelFromUrdf(str(tiago_urdf))


@pytest.fixture(scope="module")
def ur10_ff_model(ur10_urdf):
    return pin.buildModelFromUrdf(str(ur10_urdf), pin.JointModelFreeFlyer())


def _config(flags, values=None):
    friction, actuator, offset = flags
    cfg = {
        "has_friction": friction,
        "has_actuator_inertia": actuator,
        "has_joint_offset": offset,
    }
    if values:
        cfg.update(values)
    return cfg


def _random_state(model, n_samples, rng):
    """Valid configurations (any joint type), velocities and accelerations."""
    q0 = pin.neutral(model)
    q = np.array([pin.integrate(model, q0, rng.normal(size=model.nv)) for _ in range(n_samples)])
    v = rng.normal(size=(n_samples, model.nv))
    a = rng.normal(size=(n_samples, model.nv))
    v[0, 0] = 0.0  # sign(0) = 0 must hold
    return q, v, a


def _regressor(model, q, v, a, flags):
    """Joint-major regressor built independently of the library."""
    data = model.createData()
    n, nv = q.shape[0], model.nv
    n_extra = 2 * flags[0] + flags[1] + flags[2]
    n_inert = 10 * (model.njoints - 1)
    W = np.zeros((n * nv, n_inert + n_extra * nv))
    rows = np.arange(nv) * n
    for i in range(n):
        W[rows + i, :n_inert] = pin.computeJointTorqueRegressor(model, data, q[i], v[i], a[i])
    blocks = []
    if flags[0]:
        blocks += [v, np.sign(v)]
    if flags[1]:
        blocks.append(a)
    if flags[2]:
        blocks.append(np.ones_like(v))
    for b, block in enumerate(blocks):
        start = n_inert + b * nv
        for j in range(nv):
            W[j * n : (j + 1) * n, start + j] = block[:, j]
    return W


def _effort(model, q, v, a, flags, fv, fs, ia, off):
    """rnea + fv·dq + fs·sign(dq) + Ia·ddq + off, stacked joint-major."""
    data = model.createData()
    tau = np.array([pin.rnea(model, data, q[i], v[i], a[i]) for i in range(q.shape[0])])
    if flags[0]:
        tau = tau + fv * v + fs * np.sign(v)
    if flags[1]:
        tau = tau + ia * a
    if flags[2]:
        tau = tau + off
    return tau.T.reshape(-1)


@pytest.mark.parametrize("which", ["ur10_model", "tiago_model", "ur10_ff_model"])
@pytest.mark.parametrize("flags", FLAG_COMBOS)
def test_parameter_count_and_unique_names(request, which, flags):
    model = request.getfixturevalue(which)
    params = get_standard_parameters(model, _config(flags))
    n_extra = 2 * flags[0] + flags[1] + flags[2]
    assert len(params) == 10 * (model.njoints - 1) + n_extra * model.nv
    assert len(set(params)) == len(params)
    # Extra blocks are in fv, fs, Ia, off order and each spans nv columns.
    prefixes = [name.split("_", 1)[0] for name in list(params)[10 * (model.njoints - 1) :]]
    expected = []
    for prefix, on in (("fv", flags[0]), ("fs", flags[0]), ("Ia", flags[1]), ("off", flags[2])):
        if on:
            expected += [prefix] * model.nv
    assert prefixes == expected


@pytest.mark.parametrize("which", ["ur10_model", "tiago_model", "ur10_ff_model"])
def test_inertial_values_are_own_body_dynamic_parameters(request, which):
    model = request.getfixturevalue(which)
    params = get_standard_parameters(model)
    names = list(params)
    values = np.array(list(params.values()))
    assert len(params) == 10 * (model.njoints - 1)
    for k in range(model.njoints - 1):
        jname = model.names[k + 1]
        assert names[10 * k : 10 * k + 10] == [f"{p}_{jname}" for p in INERTIAL_PARAMETER_NAMES]
        np.testing.assert_array_equal(
            values[10 * k : 10 * k + 10], model.inertias[k + 1].toDynamicParameters()
        )


@pytest.mark.parametrize("which", ["ur10_model", "tiago_model"])
@pytest.mark.parametrize("flags", FLAG_COMBOS)
def test_regressor_times_parameters_reproduces_effort(request, which, flags):
    model = request.getfixturevalue(which)
    rng = np.random.default_rng([len(which), *map(int, flags)])
    n_joints = model.njoints - 1
    fv, fs, ia, off = (rng.uniform(0.1, 2.0, n_joints) for _ in range(4))
    cfg = _config(flags, {"fv": list(fv), "fs": list(fs), "Ia": list(ia), "off": list(off)})
    q, v, a = _random_state(model, 4, rng)

    phi = np.array(list(get_standard_parameters(model, cfg).values()))
    W = _regressor(model, q, v, a, flags)
    assert W.shape[1] == phi.size
    tau = _effort(model, q, v, a, flags, fv, fs, ia, off)
    np.testing.assert_allclose(W @ phi, tau, rtol=0, atol=1e-9 * max(1.0, np.abs(tau).max()))


@pytest.mark.parametrize("flags", [(True, True, True), (True, False, True), (False, True, False)])
def test_free_flyer_multi_dof_block_names_and_effort(ur10_ff_model, flags):
    model = ur10_ff_model
    rng = np.random.default_rng(7)
    per_dof = {k: rng.uniform(0.1, 1.0, model.nv) for k in ("fv", "fs", "Ia", "off")}
    cfg = _config(flags, {k: list(v) for k, v in per_dof.items()})
    params = get_standard_parameters(model, cfg)
    extra = list(params)[10 * (model.njoints - 1) :]
    first = "fv" if flags[0] else ("Ia" if flags[1] else "off")
    assert extra[:7] == [f"{first}_root_joint_{k}" for k in range(6)] + [
        f"{first}_{model.names[2]}"
    ]

    q, v, a = _random_state(model, 3, rng)
    W = _regressor(model, q, v, a, flags)
    phi = np.array(list(params.values()))
    tau = _effort(model, q, v, a, flags, *(per_dof[k] for k in ("fv", "fs", "Ia", "off")))
    np.testing.assert_allclose(W @ phi, tau, rtol=0, atol=1e-9 * max(1.0, np.abs(tau).max()))


def test_per_joint_values_expand_over_multi_dof_joints(ur10_ff_model):
    model = ur10_ff_model
    per_joint = [10.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # root + 6 revolute joints
    extra = add_standard_additional_parameters(model, {"has_friction": True, "fv": per_joint})
    fv = [extra[name] for name in extra if name.startswith("fv_")]
    assert fv == [10.0] * 6 + per_joint[1:]
    assert all(extra[name] == 0.0 for name in extra if name.startswith("fs_"))


def test_missing_and_short_lists_pad_with_zero_and_warn(ur10_model, caplog):
    with caplog.at_level(logging.WARNING, logger="figaroh.identification.parameter"):
        extra = add_standard_additional_parameters(
            ur10_model, {"has_actuator_inertia": True, "Ia": [0.5, 0.25]}
        )
    assert list(extra.values()) == [0.5, 0.25, 0.0, 0.0, 0.0, 0.0]
    assert "actuator inertia" in caplog.text and "elbow_joint" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="figaroh.identification.parameter"):
        extra = add_standard_additional_parameters(ur10_model, {"has_joint_offset": True})
    assert list(extra.values()) == [0.0] * 6
    assert "joint offset" in caplog.text


def test_flags_missing_count_as_false(ur10_model):
    assert add_standard_additional_parameters(ur10_model, {"fv": [1.0] * 6}) == {}
    assert len(get_standard_parameters(ur10_model, {})) == 60
    assert get_standard_parameters(ur10_model, None) == get_standard_parameters(ur10_model)


def test_wrong_length_raises_naming_key(ur10_ff_model, ur10_model):
    with pytest.raises(IdentificationConfigError, match=r"'fs'.*12.*7"):
        add_standard_additional_parameters(ur10_ff_model, {"has_friction": True, "fs": [1.0] * 9})
    with pytest.raises(IdentificationConfigError, match=r"'off'.*6"):
        add_standard_additional_parameters(ur10_model, {"has_joint_offset": True, "off": [1.0] * 7})
    with pytest.raises(IdentificationConfigError, match=r"'fv'\]\[1\]"):
        add_standard_additional_parameters(ur10_model, {"has_friction": True, "fv": [1.0, "x"]})
    with pytest.raises(IdentificationConfigError, match="finite"):
        add_standard_additional_parameters(ur10_model, {"has_friction": True, "fv": [np.nan]})
    with pytest.raises(IdentificationConfigError, match="list"):
        add_standard_additional_parameters(ur10_model, {"has_friction": True, "fv": 0.3})


def test_string_numbers_are_converted(ur10_model):
    extra = add_standard_additional_parameters(ur10_model, {"has_friction": True, "fv": ["0.5"]})
    assert extra["fv_shoulder_pan_joint"] == 0.5
    assert isinstance(extra["fv_shoulder_pan_joint"], float)


def test_name_collision_is_reported():
    model = pin.Model()
    jid = model.addJoint(0, pin.JointModelSpherical(), pin.SE3.Identity(), "a")
    model.appendBodyToJoint(jid, pin.Inertia.Random(), pin.SE3.Identity())
    jid = model.addJoint(jid, pin.JointModelRX(), pin.SE3.Identity(), "a_0")
    model.appendBodyToJoint(jid, pin.Inertia.Random(), pin.SE3.Identity())
    with pytest.raises(IdentificationConfigError, match="fv_a_0"):
        get_standard_parameters(model, {"has_friction": True})


def test_custom_parameters(ur10_model, caplog):
    custom = {
        "kt": {"values": [1.0, 2.0], "per_joint": True, "default": 9.0},
        "gain": {"values": [3.5], "per_joint": False},
        "bias": {"per_joint": False, "default": -1.0},
        "broken": 42,
    }
    with caplog.at_level(logging.WARNING, logger="figaroh.identification.parameter"):
        params = add_custom_parameters(ur10_model, custom)
    joints = list(ur10_model.names[1:])
    assert list(params) == [f"kt_{j}" for j in joints] + ["gain", "bias"]
    assert [params[f"kt_{j}"] for j in joints] == [1.0, 2.0] + [9.0] * 4
    assert params["gain"] == 3.5 and params["bias"] == -1.0
    assert "broken" in caplog.text and "kt" in caplog.text
    assert add_custom_parameters(ur10_model, None) == {}
    with pytest.raises(IdentificationConfigError, match="mapping"):
        add_custom_parameters(ur10_model, ["kt"])


def test_reorder_inertial_parameters_round_trip(ur10_model):
    pin_params = ur10_model.inertias[3].toDynamicParameters()
    legacy = reorder_inertial_parameters(pin_params)
    by_name = dict(zip(INERTIAL_PARAMETER_NAMES, pin_params, strict=True))
    legacy_names = ["Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz", "mx", "my", "mz", "m"]
    assert legacy == [by_name[n] for n in legacy_names]
    assert isinstance(legacy, list)
    with pytest.raises(ValueError, match="10"):
        reorder_inertial_parameters([1.0] * 9)


def test_parameter_info_matches_layout(ur10_model):
    info = get_parameter_info()
    assert info["inertial_parameters"] == list(INERTIAL_PARAMETER_NAMES)
    blocks = info["standard_additional"]
    assert list(blocks) == [
        "viscous_friction",
        "static_friction",
        "actuator_inertia",
        "joint_offset",
    ]
    names = [b["name"] for b in blocks.values()]
    assert names == ["fv", "fs", "Ia", "off"]
    cfg = {b["enabled_key"]: True for b in blocks.values()}
    params = get_standard_parameters(ur10_model, cfg)
    assert [p.split("_", 1)[0] for p in list(params)[60::6]] == names
    assert set(info["custom_parameters_format"]["parameter_name"]) == {
        "values",
        "per_joint",
        "default",
    }
