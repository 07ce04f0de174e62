"""RobotIdentificationSystem: one-call identification recovers known parameters.

Truth: a UR10 whose inertial parameters are perturbed away from the URDF
(masses, centres of mass and inertias scaled/shifted with a fixed seed) drives
an analytic Fourier trajectory; its efforts are Pinocchio's ``rnea``. The
identification only sees the nominal URDF and the CSV log; its base
parameters must equal the true standard parameters mapped through the
base-parameter relation (``base_param_from_standard`` on the identified
expressions), and differ from the nominal ones.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from figaroh.cli.csv_identification import write_trajectory_csv
from figaroh.identification.identification_tools import base_param_from_standard
from figaroh.identification.parameter import get_standard_parameters
from figaroh.integration import IdentificationResult, RobotIdentificationSystem
from figaroh.integration.api import IdentificationResult as ApiResult

JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]
FS = 100.0  # [Hz]
N = 2000

CONFIG = """
robot:
  name: ur10
  properties:
    joints:
      active_joints: [{joints}]
tasks:
  identification:
    problem:
      use_joint_torques: true
      model_components: {{friction: false, actuator_inertia: false, joint_offset: false}}
    signal_processing:
      sampling_frequency: {fs}
      cutoff_frequency: 40.0
      filter_params: {{nbutter: 4, f_butter: 40.0, med_fil: 1, f_sample: {fs}}}
{extra}
"""


def _write_config(path, extra: str = ""):
    path.write_text(CONFIG.format(joints=", ".join(JOINTS), fs=FS, extra=extra))
    return path


@pytest.fixture(scope="module")
def true_model(ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    rng = np.random.default_rng(0)
    for j in range(1, model.njoints):
        inertia = model.inertias[j]
        model.inertias[j] = pin.Inertia(
            inertia.mass * rng.uniform(0.8, 1.2),
            inertia.lever + rng.uniform(-0.02, 0.02, 3),
            inertia.inertia * rng.uniform(0.8, 1.2),
        )
    return model


@pytest.fixture(scope="module")
def trajectory(true_model):
    """Analytic Fourier trajectory (0.1 Hz fundamental, 5 harmonics) and its rnea efforts."""
    rng = np.random.default_rng(1)
    t = np.arange(N) / FS
    w = 2 * np.pi * 0.1
    q, dq, ddq = np.zeros((3, N, 6))
    for j in range(6):
        for harmonic in range(1, 6):
            a, b = rng.uniform(-0.5, 0.5, 2)
            wl = w * harmonic
            q[:, j] += a / wl * np.sin(wl * t) - b / wl * np.cos(wl * t)
            dq[:, j] += a * np.cos(wl * t) + b * np.sin(wl * t)
            ddq[:, j] += -a * wl * np.sin(wl * t) + b * wl * np.cos(wl * t)
    data = true_model.createData()
    tau = np.array([pin.rnea(true_model, data, q[i], dq[i], ddq[i]) for i in range(N)])
    return t, q, dq, ddq, tau


@pytest.fixture(scope="module")
def files(tmp_path_factory, trajectory):
    root = tmp_path_factory.mktemp("integration")
    t, q, dq, ddq, tau = trajectory
    write_trajectory_csv(root / "data" / "identification.csv", JOINTS, t, q, tau, dq=dq, ddq=ddq)
    split = root / "split"
    split.mkdir()
    for name, arr in (("q", q), ("dq", dq), ("ddq", ddq), ("tau", tau)):
        np.savetxt(split / f"{name}.csv", arr, delimiter=",", fmt="%.17g")
    return root, _write_config(root / "ur10.yaml")


@pytest.fixture(scope="module")
def pinocchio_run(ur10_urdf, files):
    root, config = files
    system = RobotIdentificationSystem.from_urdf(str(ur10_urdf))
    return system, system.identify_parameters(str(config), data_dir=root / "data", decimate=False)


def _truth(model, result) -> np.ndarray:
    theta = get_standard_parameters(model, result.config)
    return np.asarray(base_param_from_standard(theta, result.params_base))


def test_recovers_the_true_base_parameters(pinocchio_run, true_model, ur10_urdf):
    _, result = pinocchio_run
    truth = _truth(true_model, result)
    nominal = _truth(pin.buildModelFromUrdf(str(ur10_urdf)), result)
    assert len(result.phi_base) == len(truth) == 36
    np.testing.assert_allclose(result.phi_base, truth, rtol=0, atol=1e-4)
    assert np.max(np.abs(nominal - truth)) > 0.3  # the nominal URDF would not pass
    assert result.rms_error < 1e-3 and result.correlation > 0.999999


def test_result_fields(pinocchio_run, ur10_urdf):
    system, result = pinocchio_run
    assert IdentificationResult is ApiResult and isinstance(result, IdentificationResult)
    assert result.backend == "pinocchio" and result.model_path == str(ur10_urdf)
    assert result.config["active_joints"] == JOINTS
    np.testing.assert_array_equal(result.raw["base parameters values"], result.phi_base)
    assert result.raw["base parameters names"] == result.params_base
    assert result.base_parameters == dict(zip(result.params_base, result.phi_base, strict=True))
    assert result.phi_standard is None and result.params_standard is None
    assert "backend='pinocchio', n_base=36" in repr(result)
    assert system.result is result and system.identification.phi_base is not None
    assert (system.nq, system.nv, system.backend_name) == (6, 6, "pinocchio")
    assert system.backend.model is system.robot.model  # the robot's own model
    assert repr(system) == "RobotIdentificationSystem(backend='pinocchio', nq=6, nv=6)"
    assert IdentificationResult().base_parameters == {}


def test_mujoco_backend_identifies_the_same_parameters(pinocchio_run, ur10_urdf, files):
    pytest.importorskip("mujoco")
    from figaroh.backends.mujoco import MuJoCoBackend

    _, reference = pinocchio_run
    root, config = files
    robot = pinocchio_run[0].robot
    system = RobotIdentificationSystem(robot, "mujoco")
    assert isinstance(system.backend, MuJoCoBackend) and system.robot is robot
    result = system.identify_parameters(str(config), data_dir=root / "data", decimate=False)
    assert result.backend == "mujoco" and result.params_base == reference.params_base
    np.testing.assert_allclose(result.phi_base, reference.phi_base, rtol=0, atol=1e-9)


def test_from_mjcf_recovers_the_true_base_parameters(true_model, ur10_urdf, files, tmp_path):
    mujoco = pytest.importorskip("mujoco")
    from figaroh.backends.mujoco import urdf_for_mujoco

    compiled = mujoco.MjModel.from_xml_string(urdf_for_mujoco(ur10_urdf))
    mjcf = tmp_path / "ur10.xml"
    mujoco.mj_saveLastXML(str(mjcf), compiled)
    root, config = files
    system = RobotIdentificationSystem.from_mjcf(str(mjcf))
    assert system.robot is None and system.backend.model_format == "mjcf"
    result = system.identify_parameters(str(config), data_dir=root / "data", decimate=False)
    np.testing.assert_allclose(result.phi_base, _truth(true_model, result), rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="needs the 'mujoco' backend"):
        RobotIdentificationSystem.from_mjcf(str(mjcf), backend="pinocchio")


def test_one_file_per_signal_layout_reads_the_same_data(pinocchio_run, files):
    system, reference = pinocchio_run
    root, config = files
    result = system.identify_parameters(str(config), data_dir=root / "split", decimate=False)
    np.testing.assert_allclose(result.phi_base, reference.phi_base, rtol=0, atol=1e-10)
    # without dq/ddq the derivatives are computed from q (timestamps k·ts)
    only = root / "split_q_tau"
    only.mkdir()
    for name in ("q", "tau"):
        (only / f"{name}.csv").write_text((root / "split" / f"{name}.csv").read_text())
    derived = system.identify_parameters(str(config), data_dir=only, decimate=False)
    assert len(derived.phi_base) == 36 and derived.correlation > 0.99


def test_data_dir_and_file_names_from_the_configuration(pinocchio_run, files):
    system, reference = pinocchio_run
    root, _ = files
    renamed = root / "renamed"
    renamed.mkdir()
    for name in ("q", "dq", "ddq", "tau"):
        (renamed / f"log_{name}.csv").write_text((root / "split" / f"{name}.csv").read_text())
    config = _write_config(
        root / "with_data.yaml",
        "    data:\n      data_dir: renamed\n      data_files: "
        "{q: log_q.csv, dq: log_dq.csv, ddq: log_ddq.csv, tau: log_tau.csv}",
    )
    result = system.identify_parameters(str(config), decimate=False)
    np.testing.assert_allclose(result.phi_base, reference.phi_base, rtol=0, atol=1e-10)


def test_solve_options_and_reconstruction(pinocchio_run, files):
    system, reference = pinocchio_run
    root, _ = files
    config = _write_config(
        root / "recon.yaml", "    reconstruction: {enabled: true, method: nullspace}"
    )
    result = system.identify_parameters(
        str(config), data_dir=root / "data", decimate=False, wls=True
    )
    assert "wls_std_deviations" in result.raw
    assert result.phi_standard is not None and len(result.params_standard) == len(
        result.phi_standard
    )
    M = system.identification._M_matrix
    np.testing.assert_allclose(M @ result.phi_standard, result.phi_base, atol=1e-8)


def test_errors_name_the_problem(pinocchio_run, files, ur10_urdf, tmp_path):
    system, _ = pinocchio_run
    root, config = files
    with pytest.raises(ValueError, match="config must be the path"):
        system.identify_parameters({"robot": {}}, data_dir=root / "data")
    with pytest.raises(FileNotFoundError, match="Configuration file not found"):
        system.identify_parameters(str(tmp_path / "missing.yaml"), data_dir=root / "data")
    with pytest.raises(ValueError, match="No data source specified"):
        system.identify_parameters(str(config))
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "q.csv").write_text("0,0,0,0,0,0\n")
    with pytest.raises(FileNotFoundError, match="not the efforts file"):
        system.identify_parameters(str(config), data_dir=lonely)
    with pytest.raises(ValueError, match="not available"):
        RobotIdentificationSystem.from_urdf(str(ur10_urdf), backend="bullet")
