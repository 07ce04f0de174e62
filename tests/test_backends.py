"""Dynamics backends: PinocchioBackend against Pinocchio directly, and the registry."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest

from figaroh.backends import (
    DynamicsBackend,
    PinocchioBackend,
    get_backend,
    get_backend_info,
    list_backends,
)


@pytest.fixture(scope="module")
def backend(ur10_urdf):
    return PinocchioBackend(str(ur10_urdf))


def test_backend_dynamics_match_pinocchio(backend, ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    data = model.createData()
    rng = np.random.default_rng(0)
    q, v, a = rng.normal(size=(3, 6))
    M = backend.compute_mass_matrix(q)
    np.testing.assert_allclose(M, M.T)
    np.testing.assert_allclose(
        M @ a + backend.compute_coriolis_matrix(q, v) @ v + backend.compute_gravity_vector(q),
        pin.rnea(model, data, q, v, a),
        atol=1e-9,
    )
    tau = backend.compute_inverse_dynamics(q, v, a)
    np.testing.assert_allclose(backend.compute_forward_dynamics(q, v, tau), a, atol=1e-8)
    Y = backend.compute_regressor(q, v, a)
    theta = np.concatenate(
        [model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)]
    )
    np.testing.assert_allclose(Y @ theta, tau, atol=1e-9)
    assert backend.nq == backend.nv == 6 and backend.model_format == "urdf"


def test_batched_methods_match_per_sample(backend):
    rng = np.random.default_rng(1)
    Q, V, A = rng.normal(size=(3, 7, 6))
    Y = backend.compute_regressor_batch(Q, V, A)
    tau = backend.compute_inverse_dynamics_batch(Q, V, A)
    for i in range(7):
        np.testing.assert_array_equal(Y[:, i, :], backend.compute_regressor(Q[i], V[i], A[i]))
        np.testing.assert_allclose(tau[i], backend.compute_inverse_dynamics(Q[i], V[i], A[i]))


def test_kinematics_and_errors(backend):
    q = np.zeros(6)
    fk = backend.compute_forward_kinematics(q)
    assert "tool0" in fk and fk["tool0"]["transformation"].shape == (4, 4)
    J = backend.compute_jacobian(q, "tool0")
    assert J.shape == (6, 6)
    with pytest.raises(ValueError, match="Unknown frame 'nope'"):
        backend.compute_jacobian(q, "nope")
    assert "PinocchioBackend(model_path=" in repr(backend)


def test_free_flyer_difference(talos_urdf):
    backend = PinocchioBackend(str(talos_urdf), free_flyer=True)
    assert backend.nq == backend.nv + 1
    q1 = pin.neutral(backend.model)
    v = np.zeros(backend.nv)
    v[:6] = [0.1, -0.2, 0.3, 0.2, 0.1, -0.3]
    q2 = backend.compute_integrate(q1, v)
    np.testing.assert_allclose(backend.compute_difference(q1, q2), v, atol=1e-12)
    assert len(backend.get_inertias()) == backend.model.njoints
    assert backend.get_joint_names()[0] == "root_joint"


def test_from_model_shares_model_and_data(ur10_robot):
    backend = ur10_robot.backend
    assert backend.model is ur10_robot.model and backend.data is ur10_robot.data
    assert ur10_robot.backend is backend  # lazily created once


def test_registry(ur10_urdf):
    mujoco_installed = importlib.util.find_spec("mujoco") is not None
    assert list_backends() == {
        "pinocchio": True,
        "mujoco": mujoco_installed,
        "genesis": False,
        "isaacsim": False,
    }
    assert get_backend_info("Pinocchio")["available"] is True
    assert get_backend_info("mujoco")["install"] == 'pip install "figaroh[mujoco]"'
    assert list(inspect.signature(get_backend_info).parameters) == ["backend"]
    with pytest.raises(ValueError, match="Unknown backend"):
        get_backend_info("bullet")
    with pytest.raises(ValueError, match="not available"):
        get_backend("genesis", "x.xml")
    with pytest.raises(ValueError, match="model_path is required"):
        get_backend("pinocchio")
    assert isinstance(get_backend("PINOCCHIO", str(ur10_urdf)), PinocchioBackend)


def test_pinocchio_backend_configuration_space(backend):
    model = backend.get_model_object()
    assert isinstance(model, pin.Model) and model is backend.model
    for _ in range(10):
        q = backend.random_configuration()
        assert np.all(q >= model.lowerPositionLimit) and np.all(q <= model.upperPositionLimit)
    q = backend.random_configuration()
    v = np.linspace(-1.0, 1.0, 6)
    np.testing.assert_allclose(backend.compute_integrate(q, v), q + v)  # revolute joints
    np.testing.assert_allclose(backend.compute_difference(q, backend.compute_integrate(q, v)), v)
    assert backend.get_frame_id("tool0") == model.getFrameId("tool0")
    with pytest.raises(ValueError, match="Unknown frame 'nope'"):
        backend.get_frame_id("nope")


def test_optional_interface_methods_raise_not_implemented():
    class Minimal(DynamicsBackend):
        nq = nv = 1
        model_format = "none"

        def compute_mass_matrix(self, q):
            return np.eye(1)

        compute_coriolis_matrix = compute_gravity_vector = compute_mass_matrix
        compute_forward_kinematics = compute_jacobian = compute_mass_matrix
        compute_regressor = compute_inverse_dynamics = compute_mass_matrix
        compute_forward_dynamics = compute_mass_matrix

    backend = Minimal("x")
    for call in (
        lambda: backend.compute_integrate(np.zeros(1), np.zeros(1)),
        lambda: backend.get_frame_id("f"),
        backend.random_configuration,
        backend.get_model_object,
        backend.get_inertias,
    ):
        with pytest.raises(NotImplementedError, match="Minimal does not implement"):
            call()


def test_load_failure_is_runtime_error(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text("not xml")
    with pytest.raises(RuntimeError, match="Failed to load model"):
        PinocchioBackend(str(bad))


def test_abstract_interface_cannot_be_instantiated():
    with pytest.raises(TypeError):
        DynamicsBackend("x")  # type: ignore[abstract]


def test_import_figaroh_is_cheap():
    """Importing figaroh, the backends, integration and visualisation pulls no optional engine."""
    code = (
        "import sys, figaroh, figaroh.tools.robot, figaroh.tools.regressor, "
        "figaroh.identification.parameter, figaroh.backends, figaroh.backends.mujoco, "
        "figaroh.integration, figaroh.integration.api, figaroh.visualisation, "
        "figaroh.visualisation.colors, figaroh.visualisation.visualizer\n"
        "heavy = [m for m in ('matplotlib', 'picos', 'viser', 'cyipopt', 'cvxopt', 'yourdfpy', "
        "'mujoco', 'meshcat', 'pinocchio.visualize', 'pandas') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
