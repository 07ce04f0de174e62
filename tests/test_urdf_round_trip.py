"""URDF round trip: identify a simulated UR10 with friction, export, reload with Pinocchio.

Independent truth: the model Pinocchio builds from the written file. Its
``damping`` / ``friction`` vectors (read from ``<dynamics damping friction>``)
and its body inertias must equal the identified values of the accepted
physically consistent estimate. figaroh identifies joint-side coefficients
(joint coordinates, joint efforts), which are the URDF convention, so no
conversion applies.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pinocchio as pin
import pytest

from conftest import load_example
from figaroh.tools.inertia import INERTIAL_KEYS
from figaroh.tools.urdf_exporter import export_urdf, joint_term_parameters, read_joint_dynamics

_ur10 = load_example("ur10/identification.py", "ur10_identification")

N = 300  # samples: enough for the 6-joint fit with small noise, a few seconds
RTOL = 1e-9


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    robot = _ur10.load_ur10()
    folder = tmp_path_factory.mktemp("urdf_rt")
    train, validation = _ur10.generate_ur10_data(
        folder / "data", N, noise_std=0.05, seed=3, robot=robot
    )
    config = folder / "config.yaml"
    config.write_text(
        f'extends: "{_ur10.CONFIG}"\ntasks:\n  identification:\n    select_stage: physical_fit\n',
        encoding="utf-8",
    )
    ident = _ur10.UR10Identification(robot, config, data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False)
    assert ident.selected is not None and ident.selected.accepted, ident.selected
    return ident, robot.robot_urdf


def _assert_inertias(model, p10_by_joint):
    for joint, p10 in p10_by_joint.items():
        got = model.inertias[model.getJointId(joint)]
        scale = np.max(np.abs(p10))
        np.testing.assert_allclose(got.toDynamicParameters(), p10, rtol=0, atol=RTOL * scale)
        want = pin.Inertia.FromDynamicParameters(np.asarray(p10))
        assert got.mass == pytest.approx(want.mass, rel=RTOL)
        np.testing.assert_allclose(
            got.lever, want.lever, rtol=0, atol=RTOL * np.abs(want.lever).max()
        )
        np.testing.assert_allclose(
            got.inertia, want.inertia, rtol=0, atol=RTOL * np.abs(want.inertia).max()
        )


def test_friction_and_inertias_round_trip(identified, tmp_path):
    ident, nominal = identified
    sel = ident.selected
    active = list(ident.identif_config["active_joints"])
    values = sel.parameter_dict()
    p10 = sel.link_p10(active)
    terms = joint_term_parameters(values, active)
    assert sorted(terms) == sorted(f"{p}_{j}" for p in ("fv", "fs") for j in active)
    assert 5.0 < terms["fv_shoulder_pan_joint"] < 11.0  # simulated 8 N·m·s/rad
    inertials = {
        f"{k}_{j}": float(v) for j, p in p10.items() for k, v in zip(INERTIAL_KEYS, p, strict=True)
    }
    out = export_urdf(
        nominal,
        {**inertials, **terms},
        output_path=tmp_path / "ur10_identified.urdf",
        psd_eig_tol=sel.psd_eig_tol,
    )
    model = pin.buildModelFromUrdf(out)
    for joint in active:
        idx = model.joints[model.getJointId(joint)].idx_v
        assert model.damping[idx] == pytest.approx(values[f"fv_{joint}"], rel=RTOL)
        assert model.friction[idx] == pytest.approx(values[f"fs_{joint}"], rel=RTOL)
    assert read_joint_dynamics(out)["elbow_joint"] == {
        "damping": terms["fv_elbow_joint"],
        "friction": terms["fs_elbow_joint"],
    }
    _assert_inertias(model, p10)


def test_identification_export_writes_the_identified_inertias_and_friction(identified, tmp_path):
    ident, nominal = identified
    out = ident.export_urdf(nominal, output_path=str(tmp_path / "ur10_fit.urdf"))
    model = pin.buildModelFromUrdf(out)
    _assert_inertias(model, ident.selected.link_p10(ident._identified_joints()))
    values = ident.selected.parameter_dict()
    for joint in ident._identified_joints():
        idx = model.joints[model.getJointId(joint)].idx_v
        assert model.damping[idx] == pytest.approx(values[f"fv_{joint}"], rel=RTOL)
        assert model.friction[idx] == pytest.approx(values[f"fs_{joint}"], rel=RTOL)
    assert model.damping.min() > 1.0  # identified, not the nominal zeros


def test_identification_export_without_joint_dynamics_keeps_the_nominal_ones(identified, tmp_path):
    ident, nominal = identified
    out = ident.export_urdf(
        nominal, output_path=str(tmp_path / "ur10_inertials.urdf"), joint_dynamics=False
    )
    model = pin.buildModelFromUrdf(out)
    nominal_model = pin.buildModelFromUrdf(nominal)
    np.testing.assert_array_equal(model.damping, nominal_model.damping)
    np.testing.assert_array_equal(model.friction, nominal_model.friction)
    _assert_inertias(model, ident.selected.link_p10(ident._identified_joints()))
