"""MuJoCoBackend against independent truths.

Truths: Pinocchio's own algorithms (rnea, crba, Coriolis, gravity, Jacobians,
forward kinematics) on a model loaded by Pinocchio from the same URDF;
MuJoCo's own inverse dynamics for the regressor (τ = Y θ); finite differences
of the forward kinematics for the Jacobian; algebraic identities
(M a + C v + g = τ, forward ∘ inverse = id, integrate/difference round trip).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("mujoco")

from figaroh.backends import get_backend, list_backends  # noqa: E402
from figaroh.backends.mujoco import MuJoCoBackend, detect_model_format  # noqa: E402

# A floating tree with every joint kind MuJoCo has: a free root, a body with two
# hinges (off-origin anchors, a non-zero reference position), a slide with a
# reference position, a ball joint; damping, armature and friction loss (which
# the rigid-body model removes) and a non-default gravity.
TREE_MJCF = """
<mujoco model="tree">
  <compiler angle="radian"/>
  <option gravity="0.3 -0.2 -9.7"/>
  <default><joint damping="0.7" armature="0.05" frictionloss="0.3"/></default>
  <worldbody>
    <body name="base" pos="0.1 0.2 1.0" quat="0.9 0.1 0.3 0.2">
      <freejoint name="root"/>
      <inertial pos="0.01 0.02 -0.03" mass="5" fullinertia="0.3 0.2 0.25 0.01 -0.02 0.015"/>
      <body name="arm1" pos="0.2 0 0" euler="0.2 0.1 -0.3">
        <joint name="h1" type="hinge" axis="0.3 0.4 0.866" pos="0.05 0 0.02" ref="0.3"
               range="-1 1" limited="true"/>
        <joint name="h2" type="hinge" axis="1 0 0" pos="0 0.03 0"/>
        <inertial pos="0.1 0.01 0" mass="1.2" diaginertia="0.02 0.03 0.015"/>
        <body name="arm2" pos="0.3 0 0">
          <joint name="s1" type="slide" axis="0 0.6 0.8" ref="0.1" range="-0.2 0.4"
                 limited="true"/>
          <inertial pos="0.05 0 0.01" quat="0.8 0.2 0.3 0.1" mass="0.7"
                    diaginertia="0.01 0.012 0.008"/>
          <body name="tip" pos="0.1 0 0">
            <inertial pos="0 0 0" mass="0.2" diaginertia="0.001 0.001 0.001"/>
            <site name="tip_site" pos="0.02 0.01 0"/>
          </body>
        </body>
      </body>
      <body name="leg" pos="0 -0.2 -0.1">
        <joint name="b1" type="ball" pos="0 0 0.05"/>
        <inertial pos="0 0 -0.2" mass="2" diaginertia="0.05 0.05 0.01"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def ur10_mj(ur10_urdf):
    return MuJoCoBackend(str(ur10_urdf))


@pytest.fixture(scope="module")
def ur10_pin(ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    return model, model.createData()


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    path = tmp_path_factory.mktemp("mjcf") / "tree.xml"
    path.write_text(TREE_MJCF)
    return MuJoCoBackend(str(path))


def _samples(backend, n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = backend.random_configuration(rng)
        v, a = 2.0 * rng.standard_normal((2, backend.nv))
        yield q, v, a


def _stacked(backend, n, seed):
    """The samples of :func:`_samples` as (n, nq), (n, nv), (n, nv) arrays."""
    rows = list(_samples(backend, n, seed))
    return tuple(np.array([row[k] for row in rows]) for k in range(3))


def _theta(backend):
    return np.concatenate([inertia.toDynamicParameters() for inertia in backend.get_inertias()[1:]])


# --------------------------------------------------------------------------- UR10 vs Pinocchio
def test_ur10_inverse_dynamics_equals_pinocchio_rnea(ur10_mj, ur10_pin):
    model, data = ur10_pin
    assert (ur10_mj.nq, ur10_mj.nv, ur10_mj.model_format) == (6, 6, "urdf")
    for q, v, a in _samples(ur10_mj, 20, 0):
        tau = ur10_mj.compute_inverse_dynamics(q, v, a)
        np.testing.assert_allclose(tau, pin.rnea(model, data, q, v, a), rtol=0, atol=1e-6)
    batch = ur10_mj.compute_inverse_dynamics_batch(*_stacked(ur10_mj, 5, 1))
    for i, (q, v, a) in enumerate(_samples(ur10_mj, 5, 1)):
        np.testing.assert_allclose(batch[i], pin.rnea(model, data, q, v, a), atol=1e-6)


def test_ur10_regressor_times_standard_parameters_is_its_inverse_dynamics(ur10_mj, ur10_pin):
    model, data = ur10_pin
    theta = _theta(ur10_mj)
    urdf_theta = np.concatenate(
        [model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)]
    )
    np.testing.assert_allclose(theta, urdf_theta, rtol=1e-12, atol=1e-12)
    for q, v, a in _samples(ur10_mj, 10, 2):
        Y = ur10_mj.compute_regressor(q, v, a)
        assert Y.shape == (6, 60)
        np.testing.assert_allclose(Y @ theta, ur10_mj.compute_inverse_dynamics(q, v, a), atol=1e-9)
        np.testing.assert_allclose(
            Y, pin.computeJointTorqueRegressor(model, data, q, v, a), rtol=0, atol=1e-9
        )
    Q, V, A = _stacked(ur10_mj, 4, 3)
    Yb = ur10_mj.compute_regressor_batch(Q, V, A)
    for i in range(4):
        np.testing.assert_array_equal(Yb[:, i, :], ur10_mj.compute_regressor(Q[i], V[i], A[i]))


def test_ur10_dynamics_terms_and_kinematics_match_pinocchio(ur10_mj, ur10_pin):
    model, data = ur10_pin
    fid = model.getFrameId("tool0")
    for q, v, a in _samples(ur10_mj, 5, 4):
        M = ur10_mj.compute_mass_matrix(q)
        M_pin = pin.crba(model, data, q)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        np.testing.assert_allclose(M, M_pin, atol=1e-9)
        np.testing.assert_allclose(
            ur10_mj.compute_coriolis_matrix(q, v),
            pin.computeCoriolisMatrix(model, data, q, v),
            atol=1e-9,
        )
        np.testing.assert_allclose(
            ur10_mj.compute_gravity_vector(q),
            pin.computeGeneralizedGravity(model, data, q),
            atol=1e-9,
        )
        tau = pin.rnea(model, data, q, v, a)
        np.testing.assert_allclose(ur10_mj.compute_forward_dynamics(q, v, tau), a, atol=1e-8)
        np.testing.assert_allclose(
            ur10_mj.compute_jacobian(q, "tool0"),
            pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED),
            atol=1e-12,
        )
        np.testing.assert_allclose(
            ur10_mj.compute_jacobian(q, "tool0", reference="local"),
            pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL),
            atol=1e-12,
        )
        pin.framesForwardKinematics(model, data, q)
        fk = ur10_mj.compute_forward_kinematics(q)
        np.testing.assert_allclose(
            fk["tool0"]["transformation"], data.oMf[fid].homogeneous, atol=1e-12
        )
        w, x, y, z = fk["tool0"]["quaternion"]
        np.testing.assert_allclose(
            pin.Quaternion(w, x, y, z).toRotationMatrix(), data.oMf[fid].rotation, atol=1e-12
        )
    assert np.all(ur10_mj.compute_coriolis_matrix(np.zeros(6), np.zeros(6)) == 0.0)


def test_urdf_joint_damping_and_friction_are_removed(ur10_urdf, ur10_pin, tmp_path):
    """MuJoCo imports URDF <dynamics damping friction>; the rigid-body model drops them."""
    tree = ET.parse(str(ur10_urdf))
    for dyn in tree.getroot().iter("dynamics"):
        dyn.set("damping", "5.0")
    path = tmp_path / "ur10_damped.urdf"
    tree.write(path)
    model, data = ur10_pin
    rigid = MuJoCoBackend(str(path))
    damped = MuJoCoBackend(str(path), rigid_body=False)
    assert np.all(damped.model.dof_damping == 5.0) and np.all(rigid.model.dof_damping == 0.0)
    for q, v, a in _samples(rigid, 3, 5):
        np.testing.assert_allclose(
            rigid.compute_inverse_dynamics(q, v, a), pin.rnea(model, data, q, v, a), atol=1e-6
        )
        # without the rigid-body option the effort also overcomes the damping 5·v
        np.testing.assert_allclose(
            damped.compute_inverse_dynamics(q, v, a) - rigid.compute_inverse_dynamics(q, v, a),
            5.0 * v,
            atol=1e-6,
        )


def test_tree_urdf_matches_pinocchio_after_joint_permutation(talos_urdf):
    """Talos: MuJoCo orders joints as the URDF file lists them, Pinocchio depth-first."""
    backend = MuJoCoBackend(str(talos_urdf))
    model = pin.buildModelFromUrdf(str(talos_urdf))
    data = model.createData()
    names = backend.get_joint_names()
    assert sorted(names) == sorted(model.names[1:]) and backend.nv == model.nv
    order = [model.joints[model.getJointId(n)].idx_v for n in names]  # mujoco dof k → pin idx
    rng = np.random.default_rng(6)
    for _ in range(3):
        q = backend.random_configuration(rng)
        v, a = rng.standard_normal((2, backend.nv))
        qp, vp, ap = np.empty(model.nq), np.empty(model.nv), np.empty(model.nv)
        qp[order], vp[order], ap[order] = q, v, a
        np.testing.assert_allclose(
            backend.compute_inverse_dynamics(q, v, a), pin.rnea(model, data, qp, vp, ap)[order],
            atol=1e-6,
        )  # fmt: skip
        theta = _theta(backend)
        np.testing.assert_allclose(
            backend.compute_regressor(q, v, a) @ theta,
            backend.compute_inverse_dynamics(q, v, a),
            atol=1e-8,
        )


# --------------------------------------------------------------------------- MJCF tree
def test_mjcf_tree_regressor_reproduces_mujoco_inverse_dynamics(tree):
    assert (tree.nq, tree.nv, tree.model_format) == (14, 12, "mjcf")
    assert np.all(tree.model.dof_armature == 0.0) and np.all(tree.model.dof_damping == 0.0)
    np.testing.assert_allclose(tree.pinocchio_model.gravity.linear, [0.3, -0.2, -9.7])
    theta = _theta(tree)
    assert theta.size == 10 * 5
    for q, v, a in _samples(tree, 10, 7):
        tau = tree.compute_inverse_dynamics(q, v, a)
        np.testing.assert_allclose(tree.compute_regressor(q, v, a) @ theta, tau, atol=1e-9)
        M = tree.compute_mass_matrix(q)
        np.testing.assert_allclose(M, M.T, atol=1e-12)
        assert np.all(np.linalg.eigvalsh(M) > 0)
        C = tree.compute_coriolis_matrix(q, v)
        g = tree.compute_gravity_vector(q)
        np.testing.assert_allclose(M @ a + C @ v + g, tau, atol=1e-9)
        np.testing.assert_allclose(tree.compute_forward_dynamics(q, v, tau), a, atol=1e-8)


def test_mjcf_tree_inertias_sum_to_the_model_mass(tree):
    inertias = tree.get_inertias()
    assert len(inertias) == tree.pinocchio_model.njoints == 6
    total = sum(i.mass for i in inertias)
    assert total == pytest.approx(float(np.sum(tree.model.body_mass)), rel=1e-12)
    # the tip body is welded to arm2: the s1 joint carries both masses
    assert inertias[4].mass == pytest.approx(0.7 + 0.2)
    # h1 is an intermediate joint of a two-hinge body: massless
    assert inertias[2].mass == 0.0


def test_mjcf_tree_configuration_space(tree):
    rng = np.random.default_rng(8)
    for _ in range(5):
        q = tree.random_configuration(rng)
        np.testing.assert_allclose(np.linalg.norm(q[3:7]), 1.0)
        np.testing.assert_allclose(np.linalg.norm(q[10:14]), 1.0)
        assert -1.0 <= q[7] <= 1.0 and -0.2 <= q[9] <= 0.4
        v = rng.standard_normal(tree.nv)
        q2 = tree.compute_integrate(q, v)
        np.testing.assert_allclose(tree.compute_difference(q, q2), v, atol=1e-10)
    np.testing.assert_array_equal(
        tree.random_configuration(3), tree.random_configuration(np.random.default_rng(3))
    )


def test_mjcf_tree_site_jacobian_is_the_derivative_of_its_position(tree):
    rng = np.random.default_rng(9)
    q = tree.random_configuration(rng)
    v = rng.standard_normal(tree.nv)
    eps = 1e-7
    for frame in ("tip_site", "arm2", "leg"):
        J = tree.compute_jacobian(q, frame)
        p0 = tree.compute_forward_kinematics(q)[frame]["position"]
        p1 = tree.compute_forward_kinematics(tree.compute_integrate(q, eps * v))[frame]["position"]
        np.testing.assert_allclose(J[:3] @ v, (p1 - p0) / eps, atol=1e-5)
    assert tree.get_frame_id("tip_site") == 0  # site ids are their own index space
    assert tree.get_frame_id("arm2") == 3
    assert tree.get_frame_names()[-1] == "tip_site"
    assert tree.get_joint_names() == ["root", "h1", "h2", "s1", "b1"]
    with pytest.raises(ValueError, match="Unknown frame 'nope'.*tip_site"):
        tree.get_frame_id("nope")
    with pytest.raises(ValueError, match="reference"):
        tree.compute_jacobian(q, "arm2", reference="world")


def test_mjcf_hinge_reference_position_is_kept_in_q(tree):
    """MuJoCo's q is the joint coordinate (no qpos0 offset) in both models."""
    q0 = tree.neutral_configuration()
    assert q0[7] == pytest.approx(0.3) and q0[9] == pytest.approx(0.1)
    qp = tree.pinocchio_configuration(q0)
    assert qp[7] == pytest.approx(0.3) and qp[9] == pytest.approx(0.1)
    # at qpos0 the Pinocchio mirror puts arm1 where MuJoCo's model defines it
    pin_data = tree.pinocchio_model.createData()
    pin.framesForwardKinematics(tree.pinocchio_model, pin_data, qp)
    fid = tree.pinocchio_model.getFrameId("arm1")
    np.testing.assert_allclose(
        pin_data.oMf[fid].homogeneous,
        tree.compute_forward_kinematics(q0)["arm1"]["transformation"],
        atol=1e-12,
    )


# --------------------------------------------------------------------------- loading and errors
def test_registry_creates_the_mujoco_backend(ur10_urdf):
    assert list_backends()["mujoco"] is True
    backend = get_backend("MuJoCo", str(ur10_urdf))
    assert isinstance(backend, MuJoCoBackend)
    assert backend.get_model_object() is backend.model
    assert repr(backend).startswith("MuJoCoBackend(model_path=")


def test_model_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        MuJoCoBackend(str(tmp_path / "missing.xml"))
    other = tmp_path / "other.xml"
    other.write_text("<sdf/>")
    with pytest.raises(ValueError, match="neither <robot>"):
        detect_model_format(other)
    broken = tmp_path / "broken.xml"
    broken.write_text('<mujoco><worldbody><body><joint type="hinge"/></body></worldbody></mujoco>')
    with pytest.raises(RuntimeError, match="Failed to load model"):
        MuJoCoBackend(str(broken))


def test_massless_moving_link_needs_bound_mass(tmp_path):
    urdf = tmp_path / "massless.urdf"
    urdf.write_text(
        """<robot name="r"><link name="a"/><link name="b"/>
        <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""
    )
    with pytest.raises(RuntimeError, match="boundmass"):
        MuJoCoBackend(str(urdf))
    backend = MuJoCoBackend(str(urdf), compiler={"boundmass": 1e-6, "boundinertia": 1e-9})
    assert backend.get_inertias()[1].mass == pytest.approx(1e-6)


def test_missing_mujoco_names_the_extra(monkeypatch, ur10_urdf):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(ImportError, match=r"figaroh\[mujoco\]"):
        MuJoCoBackend(str(ur10_urdf))
    assert list_backends()["mujoco"] is False
    with pytest.raises(ValueError, match=r"not available.*figaroh\[mujoco\]"):
        get_backend("mujoco", str(ur10_urdf))
