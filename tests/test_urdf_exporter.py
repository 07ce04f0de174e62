"""URDF export: round trips, inertial conversions, joint placements, refusals.

Independent truth: the model Pinocchio builds from the written file (its body
inertias, joint placements and forward kinematics) against the requested
parameters, and the untouched nominal file.
"""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from figaroh.tools.urdf_exporter import (
    export_urdf,
    frame_settings_doc,
    is_kinematic_correction,
    joint_term_parameters,
    read_joint_dynamics,
)
from figaroh.utils.fileio import SEAL_MARKER, SealedRunError

KEYS = ["m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"]

ARM = """<?xml version="1.0"?>
<!-- a two-link test arm; this comment must survive the export -->
<robot name="arm">
  <link name="base"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/>
    <limit effort="10" lower="-3" upper="3" velocity="2"/>
  </joint>
  <link name="l1">
    <inertial>
      <origin xyz="0.01 0.02 0.15" rpy="0.1 -0.2 0.3"/>
      <mass value="2.0"/>
      <inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.0005" izz="0.015"/>
    </inertial>
  </link>
  <joint name="j2" type="revolute">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0 0.05 0.3" rpy="0 1.5707963267948966 0"/><axis xyz="0 1 0"/>
    <dynamics damping="0.1" friction="0.2"/>
    <limit effort="10" lower="-3" upper="3" velocity="2"/>
  </joint>
  <link name="l2">
    <inertial>
      <origin xyz="0 0 0.12" rpy="0 0 0"/>
      <mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.004"/>
    </inertial>
  </link>
  <joint name="tool_joint" type="fixed">
    <parent link="l2"/><child link="tool"/>
    <origin xyz="0 0 0.25" rpy="0.5 0 0"/>
  </joint>
  <link name="tool">
    <inertial>
      <origin xyz="0.01 0 0.03" rpy="0 0 0"/>
      <mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.0015"/>
    </inertial>
  </link>
</robot>
"""


@pytest.fixture()
def arm(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM)
    return path


def body_params(model):
    out = {}
    for j in range(1, model.njoints):
        for k, v in zip(KEYS, model.inertias[j].toDynamicParameters(), strict=True):
            out[f"{k}_{model.names[j]}"] = float(v)
    return out


def parsed_inertials(path):
    root = ET.parse(str(path)).getroot()
    out = {}
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        origin = inertial.find("origin")
        nums = [float(inertial.find("mass").get("value"))]
        nums += [float(v) for v in origin.get("xyz").split() + origin.get("rpy").split()]
        nums += [
            float(inertial.find("inertia").get(k)) for k in sorted(inertial.find("inertia").attrib)
        ]
        out[link.get("name")] = nums
    return out


@pytest.mark.parametrize("fixture", ["ur10_urdf", "panda_urdf"])
def test_round_trip_keeps_inertials_exactly(fixture, request, tmp_path):
    nominal = request.getfixturevalue(fixture)
    model = pin.buildModelFromUrdf(str(nominal))
    out = export_urdf(nominal, body_params(model), output_path=tmp_path / "rt.urdf")
    assert parsed_inertials(out) == parsed_inertials(nominal)  # exact float equality
    assert out.applied == [] and len(out.unchanged_links) == model.njoints - 1
    reloaded = pin.buildModelFromUrdf(out)
    for j in range(1, model.njoints):
        np.testing.assert_array_equal(
            reloaded.inertias[j].toDynamicParameters(), model.inertias[j].toDynamicParameters()
        )


def test_modified_inertials_reload_exactly_and_rnea_matches(ur10_urdf, tmp_path):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    target = model.copy()
    rng = np.random.default_rng(0)
    params = {}
    for j in range(1, model.njoints):
        I0 = model.inertias[j]
        I1 = pin.Inertia(
            I0.mass * 1.1, I0.lever + rng.normal(scale=0.02, size=3), I0.inertia + 1e-3 * np.eye(3)
        )
        target.inertias[j] = I1
        for k, v in zip(KEYS, I1.toDynamicParameters(), strict=True):
            params[f"{k}_{model.names[j]}"] = float(v)
    out = export_urdf(ur10_urdf, params, output_path=tmp_path / "mod.urdf")
    reloaded = pin.buildModelFromUrdf(out)
    for j in range(1, model.njoints):
        np.testing.assert_allclose(
            reloaded.inertias[j].toDynamicParameters(),
            target.inertias[j].toDynamicParameters(),
            rtol=1e-12,
            atol=1e-15,
        )
    d1, d2 = reloaded.createData(), target.createData()
    for _ in range(5):
        q, v, a = pin.randomConfiguration(model), rng.normal(size=6), rng.normal(size=6)
        np.testing.assert_allclose(
            pin.rnea(reloaded, d1, q, v, a), pin.rnea(target, d2, q, v, a), rtol=1e-10, atol=1e-10
        )


def test_inertial_frame_orientation_is_kept(arm, tmp_path):
    model = pin.buildModelFromUrdf(str(arm))
    params = {k: v * 1.2 for k, v in body_params(model).items() if k.endswith("_j1")}
    out = export_urdf(arm, params, output_path=tmp_path / "o.urdf")
    link = ET.parse(out).getroot().find("link[@name='l1']")
    assert link.find("inertial/origin").get("rpy") == "0.1 -0.2 0.3"
    reloaded = pin.buildModelFromUrdf(out)
    np.testing.assert_allclose(
        reloaded.inertias[1].toDynamicParameters(),
        [params[f"{k}_j1"] for k in KEYS],
        rtol=1e-12,
        atol=1e-15,
    )
    assert "this comment must survive" in open(out).read()


def test_merged_fixed_links_refused_or_subtracted(arm, tmp_path):
    model = pin.buildModelFromUrdf(str(arm))
    body = body_params(model)  # j2's body = l2 + tool (merged by Pinocchio)
    params = {k: v * 1.1 for k, v in body.items() if k.endswith("_j2")}
    out_path = tmp_path / "merged.urdf"
    with pytest.raises(ValueError, match=r"fixed-attached links \['tool'\].*subtract_fixed"):
        export_urdf(arm, params, output_path=out_path)
    assert not out_path.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["arm.urdf"]
    out = export_urdf(arm, params, output_path=out_path, merged_bodies="subtract_fixed")
    reloaded = pin.buildModelFromUrdf(out)
    np.testing.assert_allclose(
        reloaded.inertias[2].toDynamicParameters(),
        [params[f"{k}_j2"] for k in KEYS],
        rtol=1e-12,
        atol=1e-15,
    )
    tool = ET.parse(out).getroot().find("link[@name='tool']/inertial/mass")
    assert tool.get("value") == "0.5"  # the fixed link itself is untouched
    # a link target describes that link alone (no merge question)
    out2 = export_urdf(arm, {"m_tool": 0.7}, output_path=tmp_path / "tool.urdf")
    assert ET.parse(out2).getroot().find("link[@name='tool']/inertial/mass").get("value") == "0.7"
    with pytest.raises(ValueError, match="merged_bodies"):
        export_urdf(arm, params, output_path=out_path, merged_bodies="merge")


def test_joint_placement_offsets_and_dynamics(arm, tmp_path):
    model = pin.buildModelFromUrdf(str(arm))
    d = np.array([0.01, -0.02, 0.005, 0.02, -0.01, 0.03])
    params = {
        f"d_{a}_j2": float(v)
        for a, v in zip(["px", "py", "pz", "phix", "phiy", "phiz"], d, strict=True)
    }
    params.update(
        {
            "offsetRZ_j1": 0.3,
            "fv_j2": 1.5,
            "fs_j1": 0.7,
            "Ia_j2": 0.02,
            "k_RY_j2": 1e-3,
            "off_j1": 0.05,
            "base_px": 0.4,
            "pEEx_1": 0.1,
        }
    )
    out = export_urdf(arm, params, output_path=tmp_path / "k.urdf")
    assert out.frame_params == {"base_px": 0.4, "pEEx_1": 0.1}
    reloaded = pin.buildModelFromUrdf(out)
    expected = model.jointPlacements[2] * pin.SE3(pin.exp3(d[3:]), d[:3])
    np.testing.assert_allclose(
        reloaded.jointPlacements[2].homogeneous, expected.homogeneous, atol=1e-12
    )
    # offsetRZ on a z-revolute joint equals evaluating at q + offset
    data_n, data_r = model.createData(), reloaded.createData()
    q = np.array([0.4, -0.7])
    pin.forwardKinematics(model, data_n, q + np.array([0.3, 0.0]))
    pin.forwardKinematics(reloaded, data_r, q)
    np.testing.assert_allclose(data_r.oMi[1].homogeneous, data_n.oMi[1].homogeneous, atol=1e-12)
    root = ET.parse(out).getroot()
    dyn2 = root.find("joint[@name='j2']/dynamics")
    assert float(dyn2.get("damping")) == 1.5 and float(dyn2.get("friction")) == 0.2
    assert float(dyn2.get("armature")) == 0.02 and float(dyn2.get("elasticity_RY")) == 1e-3
    assert float(root.find("joint[@name='j1']/dynamics").get("friction")) == 0.7
    assert float(root.find("joint[@name='j1']/calibration").get("rising")) == 0.05
    # metrology parameters never change the file
    only_joint = {k: v for k, v in params.items() if k not in out.frame_params}
    out2 = export_urdf(arm, only_joint, output_path=tmp_path / "k2.urdf")
    assert open(out, "rb").read() == open(out2, "rb").read()


def test_joint_term_parameters_pick_convert_and_reload(arm, tmp_path, caplog):
    identified = {"fv_j1": 8.0, "fs_j1": 6.0, "Ia_j1": 0.3, "off_j1": 0.5, "fv_j2": -0.1}
    identified.update({"m_j1": 2.0, "fv_j3": 1.0})  # not a joint term / not a chosen joint
    with caplog.at_level("WARNING", logger="figaroh.tools.urdf_exporter"):
        terms = joint_term_parameters(identified, ["j1", "j2"])
    # joint-side values unchanged; the effort offset is not exported by default
    assert terms == {"fv_j1": 8.0, "fs_j1": 6.0, "Ia_j1": 0.3, "fv_j2": -0.1}
    assert "fv_j2 = -0.1 is negative" in caplog.text
    # motor-side values reflect through the gear: N² for fv and Ia, |N| for fs
    motor = joint_term_parameters(
        {"fv_j1": 2e-4, "fs_j1": 0.05, "Ia_j1": 1e-5}, ["j1"], motor_side_ratios={"j1": -100.0}
    )
    assert motor == pytest.approx({"fv_j1": 2.0, "fs_j1": 5.0, "Ia_j1": 0.1}, rel=1e-15)
    assert joint_term_parameters(identified, ["j1"], prefixes=("off",)) == {"off_j1": 0.5}
    with pytest.raises(ValueError, match="no gear ratio for joint 'j1'"):
        joint_term_parameters(identified, ["j1"], motor_side_ratios={"j2": 10.0})
    with pytest.raises(ValueError, match="not joint terms"):
        joint_term_parameters(identified, ["j1"], prefixes=("fc",))
    with pytest.raises(ValueError, match="not finite"):
        joint_term_parameters({"fv_j1": float("inf")}, ["j1"])
    out = export_urdf(arm, terms, output_path=tmp_path / "f.urdf")
    model = pin.buildModelFromUrdf(out)
    assert list(model.damping) == [8.0, -0.1] and list(model.friction) == [6.0, 0.2]
    dyn = read_joint_dynamics(out)
    assert dyn == {
        "j1": {"damping": 8.0, "friction": 6.0, "armature": 0.3},
        "j2": {"damping": -0.1, "friction": 0.2},
    }
    assert read_joint_dynamics(arm) == {"j2": {"damping": 0.1, "friction": 0.2}}
    with pytest.raises(FileNotFoundError):
        read_joint_dynamics(tmp_path / "missing.urdf")


def test_refusals_write_nothing(arm, tmp_path):
    out_path = tmp_path / "x.urdf"
    with pytest.raises(ValueError, match=r"Unknown parameter\(s\) \['zz_j1'\]"):
        export_urdf(arm, {"m_j1": 2.0, "zz_j1": 1.0}, output_path=out_path)
    with pytest.raises(ValueError, match="no joint 'j9'"):
        export_urdf(arm, {"fv_j9": 1.0}, output_path=out_path)
    with pytest.raises(ValueError, match="not finite"):
        export_urdf(arm, {"m_j1": float("nan")}, output_path=out_path)
    with pytest.raises(ValueError, match="not physically consistent"):
        export_urdf(arm, {"Izz_j1": 5.0}, output_path=out_path)  # triangle inequality broken
    with pytest.raises(ValueError, match="negative"):
        export_urdf(arm, {"m_j1": -1.0}, output_path=out_path, psd_eig_tol=None)
    with pytest.raises(ValueError, match="nominal URDF itself"):
        export_urdf(arm, {"m_j1": 2.0}, output_path=arm)
    with pytest.raises(FileNotFoundError):
        export_urdf(tmp_path / "missing.urdf", {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arm.urdf"]
    assert arm.read_text() == ARM
    # default output path beside the nominal file
    out = export_urdf(arm, {"m_j1": 2.5})
    assert out == str((tmp_path / "arm_modified.urdf").resolve())


def test_frame_settings_doc_and_helpers(capsys):
    base = frame_settings_doc(verbose=False)
    assert base == {f"base_{a}": 0.0 for a in ["px", "py", "pz", "phix", "phiy", "phiz"]}
    mocap = frame_settings_doc(calibration_type="mocap")
    assert mocap["pEEx_arm_7_link"] == 0.0 and len(mocap) == 12
    assert "Metrology frame defaults" in capsys.readouterr().err
    with pytest.raises(ValueError, match="calibration_type"):
        frame_settings_doc(calibration_type="laser")
    assert is_kinematic_correction("d_phiz_elbow_joint")
    assert is_kinematic_correction("offsetRZ_j1", ["j1"]) and not is_kinematic_correction(
        "offsetRZ_j1", ["j2"]
    )
    assert not is_kinematic_correction("k_RZ_j1") and not is_kinematic_correction("base_px")


def test_inertia_maths_round_trip_and_agree_with_physical_consistency():
    from figaroh.identification import physical_consistency as pc
    from figaroh.tools import inertia

    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3))
    sigma = A @ A.T + 0.1 * np.eye(3)  # second moment about the CoM, positive definite
    Ic = np.trace(sigma) * np.eye(3) - sigma
    m, c = 2.5, rng.normal(size=3)
    p10 = inertia.p10_from_mass_com_inertia(m, c, Ic)
    np.testing.assert_array_equal(p10, pc.p10_from_mass_com_inertia(m, c, Ic))
    m2, c2, Ic2 = inertia.mass_com_inertia_from_p10(p10)
    assert m2 == m
    np.testing.assert_allclose(c2, c, rtol=1e-13)
    np.testing.assert_allclose(Ic2, Ic, atol=1e-12)
    rep = inertia.check_p10_feasibility(p10)
    assert rep.status == "feasible" and rep.status == pc.check_p10_feasibility(p10).status
    bad = p10.copy()
    bad[9] = 50.0  # triangle inequality broken
    assert inertia.check_p10_feasibility(bad).status == "infeasible"
    with pytest.raises(ValueError, match="negative"):
        inertia.mass_com_inertia_from_p10(-bad)


def test_exported_urdf_mode_follows_the_umask_and_sealed_runs_are_refused(arm, tmp_path):
    old = os.umask(0o022)
    try:
        out = export_urdf(arm, {"m_j1": 2.5}, output_path=tmp_path / "m.urdf")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644  # not mkstemp's 0600
    run = tmp_path / "run"
    run.mkdir()
    (run / SEAL_MARKER).write_text("run\n")
    with pytest.raises(SealedRunError, match="archived run"):
        export_urdf(arm, {"m_j1": 2.5}, output_path=run / "m.urdf")
    assert sorted(p.name for p in run.iterdir()) == [SEAL_MARKER]
