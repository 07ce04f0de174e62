"""Batched SO(3)/SE(3) helpers of the calibration model (numpy, leading batch axes).

Poses are 6-vectors ``[x, y, z, φx, φy, φz]`` with Pinocchio's RPY
convention ``R = Rz(φz)·Ry(φy)·Rx(φx)``; twists are ``(linear, angular)``.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
import pinocchio as pin

__all__ = [
    "adjoint",
    "exp3",
    "jexp3_right",
    "matrix_to_rpy",
    "rpy_jacobian_local",
    "rpy_to_matrix",
    "skew",
]


def skew(v: np.ndarray) -> np.ndarray:
    """Skew-symmetric matrices ``[v]×`` of (..., 3) vectors → (..., 3, 3)."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def rpy_to_matrix(rpy: np.ndarray) -> np.ndarray:
    """``Rz(φz)·Ry(φy)·Rx(φx)`` of (..., 3) angles [rad] → (..., 3, 3)."""
    rpy = np.asarray(rpy, dtype=float)
    cr, sr = np.cos(rpy[..., 0]), np.sin(rpy[..., 0])
    cp, sp = np.cos(rpy[..., 1]), np.sin(rpy[..., 1])
    cy, sy = np.cos(rpy[..., 2]), np.sin(rpy[..., 2])
    R = np.empty(rpy.shape[:-1] + (3, 3))
    R[..., 0, 0] = cy * cp
    R[..., 0, 1] = cy * sp * sr - sy * cr
    R[..., 0, 2] = cy * sp * cr + sy * sr
    R[..., 1, 0] = sy * cp
    R[..., 1, 1] = sy * sp * sr + cy * cr
    R[..., 1, 2] = sy * sp * cr - cy * sr
    R[..., 2, 0] = -sp
    R[..., 2, 1] = cp * sr
    R[..., 2, 2] = cp * cr
    return R


def matrix_to_rpy(R: np.ndarray) -> np.ndarray:
    """RPY angles [rad] of (..., 3, 3) rotations (same branch as ``pin.rpy.matrixToRpy``)."""
    R = np.asarray(R, dtype=float)
    m = np.sqrt(R[..., 2, 1] ** 2 + R[..., 2, 2] ** 2)
    p = np.arctan2(-R[..., 2, 0], m)
    gimbal = np.abs(np.abs(p) - np.pi / 2) < 1e-3
    y = np.where(gimbal, 0.0, np.arctan2(R[..., 1, 0], R[..., 0, 0]))
    r = np.where(
        gimbal,
        np.where(p > 0, 1.0, -1.0) * np.arctan2(R[..., 0, 1], R[..., 1, 1]),
        np.arctan2(R[..., 2, 1], R[..., 2, 2]),
    )
    out = np.stack([r, p, y], axis=-1)
    if np.any(gimbal):  # rare: defer to Pinocchio for the exact branch convention
        flat_R, flat = R.reshape(-1, 3, 3), out.reshape(-1, 3)
        for i in np.flatnonzero(gimbal.ravel()):
            flat[i] = pin.rpy.matrixToRpy(flat_R[i])
        out = flat.reshape(out.shape)
    return out


def rpy_jacobian_local(rpy: np.ndarray) -> np.ndarray:
    """Local angular velocity per RPY rate: ``ω_local = J(φ) · dφ`` → (..., 3, 3)."""
    rpy = np.asarray(rpy, dtype=float)
    cr, sr = np.cos(rpy[..., 0]), np.sin(rpy[..., 0])
    cp, sp = np.cos(rpy[..., 1]), np.sin(rpy[..., 1])
    J = np.zeros(rpy.shape[:-1] + (3, 3))
    J[..., 0, 0] = 1.0
    J[..., 0, 2] = -sp
    J[..., 1, 1] = cr
    J[..., 1, 2] = sr * cp
    J[..., 2, 1] = -sr
    J[..., 2, 2] = cr * cp
    return J


def exp3(r: np.ndarray) -> np.ndarray:
    """Rotation matrices of (..., 3) rotation vectors [rad]."""
    r = np.asarray(r, dtype=float)
    th = np.linalg.norm(r, axis=-1)[..., None, None]
    K = skew(r)
    small = th < 1e-8
    ths = np.where(small, 1.0, th)
    a = np.where(small, 1.0 - th**2 / 6.0, np.sin(ths) / ths)
    b = np.where(small, 0.5 - th**2 / 24.0, (1.0 - np.cos(ths)) / ths**2)
    return np.eye(3) + a * K + b * (K @ K)


def jexp3_right(r: np.ndarray) -> np.ndarray:
    """Right Jacobian of SO(3): ``exp3(r + dr) = exp3(r)·exp3(Jr(r)·dr)`` → (..., 3, 3)."""
    r = np.asarray(r, dtype=float)
    th = np.linalg.norm(r, axis=-1)[..., None, None]
    K = skew(r)
    small = th < 1e-6
    ths = np.where(small, 1.0, th)
    a = np.where(small, 0.5 - th**2 / 24.0, (1.0 - np.cos(ths)) / ths**2)
    b = np.where(small, 1.0 / 6.0 - th**2 / 120.0, (ths - np.sin(ths)) / ths**3)
    return np.eye(3) - a * K + b * (K @ K)


def adjoint(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """SE(3) action matrices ``[[R, [p]×R], [0, R]]`` (twist = linear, angular) → (..., 6, 6)."""
    R, p = np.asarray(R, dtype=float), np.asarray(p, dtype=float)
    A = np.zeros(R.shape[:-2] + (6, 6))
    A[..., :3, :3] = R
    A[..., 3:, 3:] = R
    A[..., :3, 3:] = skew(p) @ R
    return A


def _inv(R: np.ndarray, p: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    Rt = np.swapaxes(R, -1, -2)
    return Rt, -(Rt @ p[..., None])[..., 0]


def _compose(Ra, pa, Rb, pb) -> Tuple[np.ndarray, np.ndarray]:
    return Ra @ Rb, (Ra @ pb[..., None])[..., 0] + pa


def _twist_map(R: np.ndarray, J: np.ndarray) -> np.ndarray:
    """Block-diagonal map ``[[Rᵀ, 0], [0, J]]`` (body twist of a pose 6-vector change)."""
    out = np.zeros(R.shape[:-2] + (6, 6))
    out[..., :3, :3] = np.swapaxes(R, -1, -2)
    out[..., 3:, 3:] = J
    return out
