"""Random joint samples and the efforts they produce, for tests and simulations.

Every function accepts an optional ``rng`` (a seeded ``numpy.random.Generator``)
so that results are reproducible; without it a fresh unseeded generator is used.
"""

from __future__ import annotations

import logging
from typing import Mapping

import numpy as np

from . import joint_terms
from .exceptions import RegressorShapeError

logger = logging.getLogger(__name__)


def _dims(robot) -> tuple[int, int]:
    if hasattr(robot, "backend"):
        return int(robot.backend.nq), int(robot.backend.nv)
    return int(robot.model.nq), int(robot.model.nv)


def _normalize_lie_components(model, q: np.ndarray) -> None:
    """Make quaternion / unit-complex parts of ``q`` (N, nq) unit-norm, in place.

    Loops over joints (never over samples): free-flyer and spherical joints
    hold a quaternion, planar joints ``[x, y, cos θ, sin θ]`` and unbounded
    (continuous) revolute joints ``[cos θ, sin θ]``.
    """
    for jid in range(1, model.njoints):
        joint = model.joints[jid]
        if joint.nq == joint.nv:
            continue
        kind = joint.shortname()
        if "FreeFlyer" in kind:
            sl = slice(joint.idx_q + 3, joint.idx_q + 7)
        elif "Planar" in kind:
            sl = slice(joint.idx_q + 2, joint.idx_q + 4)
        else:  # spherical quaternion, unbounded revolute (cos, sin)
            sl = slice(joint.idx_q, joint.idx_q + joint.nq)
        block = q[:, sl]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        norms[norms < 1e-12] = 1.0
        q[:, sl] = block / norms


def _rng(rng: np.random.Generator | None) -> np.random.Generator:
    return rng if rng is not None else np.random.default_rng()


def generate_waypoints(N, robot, mlow, mhigh, rng: np.random.Generator | None = None):
    """Uniformly random joint positions, velocities and accelerations.

    Args:
        N: Number of samples.
        robot: Robot with a Pinocchio ``model`` (or a ``backend``).
        mlow: Lower bound of the uniform draw [rad, rad/s, rad/s²].
        mhigh: Upper bound of the uniform draw.
        rng: Optional seeded generator for reproducible draws.

    Returns:
        ``(q, v, a)`` of shapes (N, nq), (N, nv), (N, nv). Quaternion and
        unit-complex components of ``q`` are normalised so every row is a valid
        configuration.
    """
    N = int(N)
    if N <= 0:
        raise ValueError(f"N must be a positive number of samples, got {N}")
    if not mlow < mhigh:
        raise ValueError(f"mlow ({mlow}) must be lower than mhigh ({mhigh})")
    gen = _rng(rng)
    nq, nv = _dims(robot)
    q = gen.uniform(mlow, mhigh, size=(N, nq))
    v = gen.uniform(mlow, mhigh, size=(N, nv))
    a = gen.uniform(mlow, mhigh, size=(N, nv))
    if nq != nv:
        _normalize_lie_components(robot.model, q)
    return q, v, a


def generate_waypoints_fext(N, robot, mlow, mhigh, rng: np.random.Generator | None = None):
    """Random samples for a floating-base robot with the base at rest at ``robot.q0``.

    The free-flyer part (first 7 configuration / 6 velocity entries) is fixed to
    the neutral placement with zero velocity and acceleration; the remaining
    joints are drawn uniformly in ``[mlow, mhigh]``.

    Returns:
        ``(q, v, a)`` of shapes (N, nq), (N, nv), (N, nv).
    """
    N = int(N)
    if N <= 0:
        raise ValueError(f"N must be a positive number of samples, got {N}")
    nq, nv = _dims(robot)
    if nq < 7 or nv < 6:
        raise ValueError(
            "generate_waypoints_fext needs a free-flyer robot (load it with isFext=True)"
        )
    gen = _rng(rng)
    q = np.empty((N, nq))
    q[:, :7] = np.asarray(robot.q0, dtype=float)[:7]
    q[:, 7:] = gen.uniform(mlow, mhigh, size=(N, nq - 7))
    v = np.zeros((N, nv))
    a = np.zeros((N, nv))
    v[:, 6:] = gen.uniform(mlow, mhigh, size=(N, nv - 6))
    a[:, 6:] = gen.uniform(mlow, mhigh, size=(N, nv - 6))
    if nq - 7 != nv - 6:
        _normalize_lie_components(robot.model, q)
    return q, v, a


def _coefficients(identif_config: Mapping, key: str, nv: int) -> np.ndarray:
    if key not in identif_config:
        raise KeyError(
            f"identif_config['{key}'] is required when its feature flag is set (one value per DOF)"
        )
    values = np.asarray(identif_config[key], dtype=float).ravel()
    if values.size < nv:
        raise RegressorShapeError(
            f"identif_config['{key}'] has {values.size} values, need one per DOF ({nv})"
        )
    return values[:nv]


def _joint_term_efforts(cfg: Mapping, V: np.ndarray, A: np.ndarray) -> list[np.ndarray]:
    """Per-flag sums of the enabled joint terms ``coefficient · signal``, (N, nv) each [N·m].

    One array per enabling flag of :data:`~figaroh.tools.joint_terms.JOINT_TERMS`
    (in table order), holding the sum of that flag's terms: the friction flag
    gives ``fv·dq + fs·sign(dq)``. The Coulomb sign has no dead band here.
    """
    nv = V.shape[1]
    groups: dict[str, np.ndarray] = {}
    for row in joint_terms.enabled_terms(cfg):
        effort = row.evaluate(V, A, 0.0) * _coefficients(cfg, row.values_key, nv)
        previous = groups.get(row.enable_key)
        groups[row.enable_key] = effort if previous is None else previous + effort
    return list(groups.values())


def _coupled_wrist_efforts(cfg: Mapping, V: np.ndarray, A: np.ndarray, tau: np.ndarray) -> None:
    """Add the coupled-wrist terms of the last two DOFs to ``tau`` (N, nv), in place."""
    if V.shape[1] < 2:
        raise RegressorShapeError("has_coupled_wrist needs at least two DOFs")
    iam6, fvm6, fsm6 = (float(cfg.get(k, 0.0)) for k in ("Iam6", "fvm6", "fsm6"))
    coupled_sign = np.sign(V[:, -2] + V[:, -1])
    tau[:, -2] += iam6 * A[:, -1] + fvm6 * V[:, -1] + fsm6 * coupled_sign
    tau[:, -1] += iam6 * A[:, -2] + fvm6 * V[:, -2] + fsm6 * coupled_sign


def _rigid_body_efforts(robot, Q: np.ndarray, V: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``rnea(q, v, a)`` of every sample, (N, nv) [N·m]."""
    backend = robot.backend if hasattr(robot, "backend") else None
    if backend is not None and hasattr(backend, "compute_inverse_dynamics_batch"):
        return backend.compute_inverse_dynamics_batch(Q, V, A)
    import pinocchio as pin

    tau = np.empty(V.shape)
    for i in range(V.shape[0]):
        if backend is not None:
            tau[i] = backend.compute_inverse_dynamics(Q[i], V[i], A[i])
        else:
            tau[i] = pin.rnea(robot.model, robot.data, Q[i], V[i], A[i])
    return tau


def get_torque_rand(
    N,
    robot,
    q,
    v,
    a,
    identif_config,
    noise_std: float = 0.0,
    rng: np.random.Generator | None = None,
):
    """Efforts of N samples from the robot's nominal dynamics plus joint effects.

    ``τ = rnea(q, v, a) + fv·v + fs·sign(v) + Ia·a + off`` (each term of
    :data:`~figaroh.tools.joint_terms.JOINT_TERMS` only when its flag is set),
    with the coupled-wrist terms of the last two DOFs when
    ``has_coupled_wrist``: ``τ₅ += Iam6·a₆ + fvm6·v₆ + fsm6·sign(v₅+v₆)`` and
    ``τ₆ += Iam6·a₅ + fvm6·v₅ + fsm6·sign(v₅+v₆)``.

    Args:
        N: Number of samples.
        robot: Robot with a Pinocchio model (or a ``backend``).
        q: Configurations (N, nq) [rad].
        v: Velocities (N, nv) [rad/s].
        a: Accelerations (N, nv) [rad/s²].
        identif_config: Flags ``has_friction``, ``has_actuator_inertia``,
            ``has_joint_offset``, ``has_coupled_wrist`` (missing → False) and
            per-DOF values ``fv`` [N·m·s/rad], ``fs`` [N·m], ``Ia`` [kg·m²],
            ``off`` [N·m], ``Iam6``, ``fvm6``, ``fsm6``.
        noise_std: Standard deviation [N·m] of Gaussian noise added to every entry.
        rng: Generator for the noise (reproducible when seeded).

    Returns:
        Efforts stacked joint-major: ``tau[j·N + i]``, shape (N·nv,) [N·m].
    """
    N = int(N)
    nq, nv = _dims(robot)
    Q = np.asarray(q, dtype=float).reshape(-1, nq)
    V = np.asarray(v, dtype=float).reshape(-1, nv)
    A = np.asarray(a, dtype=float).reshape(-1, nv)
    if not (Q.shape[0] == V.shape[0] == A.shape[0] == N):
        raise RegressorShapeError(
            f"q, v, a must have N = {N} rows; got {Q.shape[0]}, {V.shape[0]}, {A.shape[0]}"
        )
    tau = _rigid_body_efforts(robot, Q, V, A)
    cfg = identif_config or {}
    for effort in _joint_term_efforts(cfg, V, A):
        tau += effort
    if cfg.get("has_coupled_wrist", False):
        _coupled_wrist_efforts(cfg, V, A, tau)
    out = tau.T.reshape(-1).copy()
    if noise_std:
        out += _rng(rng).normal(0.0, float(noise_std), size=out.shape)
    return out
