"""Recipe "A new robot" (docs/architecture.md): zero files in the library.

A robot figaroh has never seen — a two-link arm written here as a URDF — is
identified from a YAML configuration and a CSV log alone, through
``CSVIdentification`` and through ``figaroh identify``. The efforts are
Pinocchio's ``rnea`` on the log's motion, so the identified model must
reproduce them (the truth is independent of figaroh), and the identified base
parameters must equal the URDF's own (``W_base · φ_base`` reproduces the
efforts only for the right ones).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from figaroh.cli.csv_identification import CSVIdentification
from figaroh.cli.main import main as figaroh_main
from figaroh.tools.robot import Robot

JOINTS = ("shoulder", "elbow")
F_SAMPLE = 200.0  # [Hz]

URDF = """<?xml version="1.0"?>
<robot name="two_link_arm">
  <link name="base"/>
  <link name="upper">
    <inertial>
      <origin xyz="0.21 0 0.01"/>
      <mass value="2.3"/>
      <inertia ixx="0.011" ixy="0.001" ixz="0.0" iyy="0.052" iyz="0.0" izz="0.048"/>
    </inertial>
  </link>
  <link name="fore">
    <inertial>
      <origin xyz="0.17 0.01 0"/>
      <mass value="1.1"/>
      <inertia ixx="0.004" ixy="0.0" ixz="0.0005" iyy="0.021" iyz="0.0" izz="0.019"/>
    </inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
    <limit lower="-3.1" upper="3.1" effort="100" velocity="5"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="fore"/>
    <origin xyz="0.45 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2.8" upper="2.8" effort="60" velocity="6"/>
  </joint>
</robot>
"""

CONFIG = """\
extends: "templates/manipulator_robot.yaml"
robot:
  name: two_link_arm
  properties:
    joints:
      active_joints: [shoulder, elbow]
tasks:
  calibration:
    enabled: false
  identification:
    enabled: true
    problem:
      model_components: {friction: false, actuator_inertia: false, joint_offset: false}
    signal_processing:
      sampling_frequency: 200.0
      cutoff_frequency: 40.0
"""


def _fourier(t: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, dq, ddq) of a 3-harmonic trajectory per joint [rad, rad/s, rad/s²]."""
    rng = np.random.default_rng(seed)
    q = np.zeros((t.size, len(JOINTS)))
    dq, ddq = np.zeros_like(q), np.zeros_like(q)
    for j in range(len(JOINTS)):
        for k, w in enumerate(2 * np.pi * np.array([0.2, 0.45, 0.7]) * (1 + 0.1 * j)):
            a, b = rng.uniform(-0.5, 0.5, 2) / (k + 1)
            q[:, j] += a * np.sin(w * t) + b * np.cos(w * t)
            dq[:, j] += w * (a * np.cos(w * t) - b * np.sin(w * t))
            ddq[:, j] += -(w**2) * (a * np.sin(w * t) + b * np.cos(w * t))
    return q, dq, ddq


def _write_log(path: Path, model: pin.Model, seed: int) -> np.ndarray:
    """A CSV log with efforts from ``pin.rnea``; returns the efforts [N·m]."""
    t = np.arange(0.0, 20.0, 1.0 / F_SAMPLE)
    q, dq, ddq = _fourier(t, seed)
    data = model.createData()
    tau = np.array([pin.rnea(model, data, q[i], dq[i], ddq[i]) for i in range(t.size)])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["t"] + [f"{p}_{j}" for p in ("q", "dq", "ddq", "tau") for j in JOINTS])
        for i in range(t.size):
            row = np.r_[t[i], q[i], dq[i], ddq[i], tau[i]]
            out.writerow([repr(float(v)) for v in row])
    return tau


@pytest.fixture(scope="module")
def robot_folder(tmp_path_factory) -> Path:
    """my_robot/ as the guide lays it out: urdf/, config/ (with the templates), data/."""
    root = tmp_path_factory.mktemp("my_robot")
    (root / "urdf").mkdir()
    (root / "urdf" / "two_link_arm.urdf").write_text(URDF)
    (root / "config").mkdir()
    (root / "config" / "two_link_arm.yaml").write_text(CONFIG)
    model = pin.buildModelFromXML(URDF)
    _write_log(root / "data" / "train" / "identification.csv", model, seed=1)
    return root


def test_a_new_robot_is_identified_from_urdf_yaml_and_csv_only(robot_folder):
    urdf = robot_folder / "urdf" / "two_link_arm.urdf"
    robot = Robot(str(urdf), load_geometry=False)
    ident = CSVIdentification(
        robot,
        str(robot_folder / "config" / "two_link_arm.yaml"),
        data_dir=str(robot_folder / "data" / "train"),
    )
    ident.initialize()
    ident.solve(decimate=False, plotting=False, verbose=False)
    measured = np.asarray(ident.result["torque processed"], dtype=float)
    predicted = np.asarray(ident.result["torque estimated"], dtype=float)
    relative_rmse = np.sqrt(np.mean((predicted - measured) ** 2)) / np.std(measured)
    assert relative_rmse < 1e-3, relative_rmse
    # The identified base parameters are the URDF's: each base expression
    # ("Iyy_shoulder + 0.2025*m_elbow", …) evaluated on Pinocchio's inertial
    # parameters of the links [kg, kg·m, kg·m²] at the joint frames.
    model = pin.buildModelFromXML(URDF)
    truth = {}
    keys = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
    for jid, joint in enumerate(JOINTS, start=1):
        values = model.inertias[jid].toDynamicParameters()
        truth.update({f"{k}_{joint}": float(v) for k, v in zip(keys, values, strict=True)})
    names = ident.result["base parameters names"]
    expected = [eval(n, {"__builtins__": {}}, truth) for n in names]  # noqa: S307 - our own names
    identified = np.asarray(ident.result["base parameters values"], dtype=float)
    np.testing.assert_allclose(identified, expected, rtol=1e-3, atol=1e-4)


def test_a_new_robot_runs_through_the_command_line(robot_folder, tmp_path, capsys):
    code = figaroh_main(
        [
            "identify",
            str(robot_folder / "config" / "two_link_arm.yaml"),
            "--urdf",
            str(robot_folder / "urdf" / "two_link_arm.urdf"),
            "--data",
            str(robot_folder / "data" / "train"),
            "--scope",
            "execution",
            "-o",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0, capsys.readouterr()
    assert any((tmp_path / "out").iterdir())
