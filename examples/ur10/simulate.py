"""Simulated UR10 identification data: an exciting trajectory and its joint torques.

The trajectory is a finite Fourier series per joint (the classic exciting
trajectory of Swevers et al.), scaled to stay inside the UR10's position and
velocity limits. Torques come from the URDF's inertias (Pinocchio ``rnea``)
plus viscous/Coulomb friction and optional Gaussian noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from figaroh.tools.randomdata import get_torque_rand
from figaroh.tools.robot import Robot
from figaroh.tools.robot_paths import example_robot_data_dir

UR10_JOINTS = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
)
# Friction used to simulate the data: viscous [N·m·s/rad] and Coulomb [N·m].
UR10_FV = (8.0, 8.0, 5.0, 1.5, 1.5, 1.5)
UR10_FS = (6.0, 6.0, 4.0, 1.5, 1.5, 1.5)


def ur10_urdf() -> str:
    """Path of the UR10 URDF shipped by the example-robot-data wheel."""
    base = example_robot_data_dir()
    if base is None:
        raise FileNotFoundError(
            "example-robot-data is not installed: pip install example-robot-data"
        )
    return str(base / "ur_description" / "urdf" / "ur10_robot.urdf")


def load_ur10(load_geometry: bool = False) -> Robot:
    """The UR10 of example-robot-data as a :class:`~figaroh.tools.robot.Robot`."""
    return Robot(ur10_urdf(), load_geometry=load_geometry)


@dataclass
class FourierTrajectory:
    """Joint trajectory ``q(t) = q0 + Σ_k a_k sin(k ω t) + b_k cos(k ω t)`` per joint.

    Attributes:
        t: Time stamps (N,) [s].
        q: Positions (N, n) [rad].
        dq: Velocities (N, n) [rad/s].
        ddq: Accelerations (N, n) [rad/s²].
    """

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray


def fourier_trajectory(
    n_samples: int,
    sample_rate: float,
    q_center: np.ndarray,
    q_amplitude: np.ndarray,
    dq_limit: np.ndarray,
    *,
    base_frequency: float = 0.1,
    n_harmonics: int = 5,
    rng: np.random.Generator,
) -> FourierTrajectory:
    """Random band-limited exciting trajectory within position and velocity limits.

    Args:
        n_samples: Number of samples N.
        sample_rate: Sampling frequency [Hz].
        q_center: Centre of each joint's motion (n,) [rad].
        q_amplitude: Maximum excursion from the centre (n,) [rad].
        dq_limit: Maximum joint speed (n,) [rad/s].
        base_frequency: Fundamental frequency ω/2π [Hz].
        n_harmonics: Number of harmonics per joint.
        rng: Seeded generator.

    Returns:
        The sampled trajectory with exact analytic derivatives.
    """
    n = len(q_center)
    t = np.arange(n_samples) / sample_rate
    w = 2 * np.pi * base_frequency
    k = np.arange(1, n_harmonics + 1)
    a = rng.normal(size=(n, n_harmonics)) / k
    b = rng.normal(size=(n, n_harmonics)) / k
    phase = np.outer(t, k * w)  # (N, H)
    s, c = np.sin(phase), np.cos(phase)
    q = s @ a.T + c @ b.T
    dq = (c * (k * w)) @ a.T - (s * (k * w)) @ b.T
    ddq = -(s * (k * w) ** 2) @ a.T - (c * (k * w) ** 2) @ b.T
    # one scale per joint so that both the position and the speed limits hold
    scale = np.minimum(q_amplitude / np.abs(q).max(axis=0), dq_limit / np.abs(dq).max(axis=0))
    return FourierTrajectory(t, q_center + q * scale, dq * scale, ddq * scale)


def simulate_ur10(
    robot: Robot,
    n_samples: int = 5000,
    sample_rate: float = 100.0,
    noise_std: float = 0.5,
    seed: int = 0,
) -> tuple[FourierTrajectory, np.ndarray]:
    """An exciting UR10 trajectory and its noisy joint torques.

    Returns:
        ``(trajectory, tau)`` with ``tau`` of shape (N, 6) [N·m].
    """
    rng = np.random.default_rng(seed)
    model = robot.model
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    center = np.zeros(6)
    amplitude = np.minimum(0.8 * (hi - lo) / 2, np.array([2.5, 1.2, 2.0, 2.5, 2.5, 2.5]))
    dq_limit = 0.8 * np.asarray(model.velocityLimit)
    traj = fourier_trajectory(n_samples, sample_rate, center, amplitude, dq_limit, rng=rng)
    cfg = {"has_friction": True, "fv": list(UR10_FV), "fs": list(UR10_FS)}
    tau = get_torque_rand(
        n_samples, robot, traj.q, traj.dq, traj.ddq, cfg, noise_std=noise_std, rng=rng
    )
    return traj, tau.reshape(6, n_samples).T
