"""Log-map residuals ``ξ = log6(M_meas⁻¹·M_est)`` and their exact Jacobian.

The Jacobian goes through ``Jlog6`` of the residual pose and the
parameter-dependence of the components that are not measured (copied from
the estimate, so they carry no error).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Tuple

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from figaroh.calibration._measurements import _meas_mask, _to_flat, measured_values
from figaroh.calibration._se3 import _inv, adjoint, matrix_to_rpy, rpy_jacobian_local, rpy_to_matrix

__all__ = ["logmap_residuals", "pose_residuals"]


def pose_residuals(
    R_f: np.ndarray,
    p_f: np.ndarray,
    measured: np.ndarray,
    mask: np.ndarray,
    *,
    T: np.ndarray | None = None,
    position_frame: str = "body",
) -> Tuple[np.ndarray, np.ndarray | None]:
    """Log-map residuals ``ξ = log6(M_meas⁻¹·M_est)`` and their Jacobian.

    Components that are not measured (``mask`` False, or NaN in
    ``measured`` for that posture — e.g. a point constrained to a plane only
    observes one coordinate) are copied from the estimate, so they carry no
    error; the copy's dependence on the parameters is part of the Jacobian.

    Args:
        R_f, p_f: (N, K, 3, 3) / (N, K, 3) estimated poses.
        measured: (N, K, 6) measured ``[x, y, z, φx, φy, φz]`` [m, rad] (NaN
            where not observed).
        mask: (6,) components measured by the setup (residual rows kept).
        T: Optional (N, K, 6, n) body-twist Jacobian of the estimate.
        position_frame: ``"body"`` (linear part of ξ) or ``"world"``
            (``p_est − p_meas``).

    Returns:
        ``(res (N, K, n_meas), J (N, K, n_meas, n) or None)`` [m, rad].

    Raises:
        ValueError: unknown ``position_frame``.
    """
    if position_frame not in ("body", "world"):
        raise ValueError(f"position_frame must be 'body' or 'world', got {position_frame!r}")
    mask = np.asarray(mask, dtype=bool)
    avail = np.isfinite(measured) & mask  # (N,K,6)
    av_p = avail[..., :3]
    pm = np.where(av_p, measured[..., :3], p_f)
    rot = _measured_rotation(R_f, measured, mask, avail[..., 3:])
    R_mt = np.swapaxes(rot.R_m, -1, -2)
    R_d = R_mt @ R_f
    p_d = (R_mt @ (p_f - pm)[..., None])[..., 0]
    xi, Jl = _log6_batch(R_d, p_d, T is not None)
    if position_frame == "world":
        xi[..., :3] = p_f - pm
    res = xi[..., mask]
    if T is None:
        return res, None
    C = _measurement_twist_map(R_f, R_mt, av_p, avail[..., 3:], rot)
    R_dt, p_di = _inv(R_d, p_d)
    D = np.eye(6) - adjoint(R_dt, p_di) @ C  # (N,K,6,6)
    Jres = Jl @ D @ T
    if position_frame == "world":
        N, K = p_f.shape[:2]
        Sm = np.zeros((N, K, 3, 3))
        Sm[..., [0, 1, 2], [0, 1, 2]] = av_p.astype(float)
        Jres[..., :3, :] = Sm @ R_f @ T[..., :3, :]
    return res, Jres[..., mask, :]


@dataclass
class _MeasuredRotation:
    """Measured rotations with unobserved angles taken from the estimate.

    ``case``: ``"none"`` (no angle observed: ``R_m = R_f``), ``"all"`` (every
    angle observed) or ``"partial"`` (``rpy_f``/``rpy_m``: estimated and
    completed measured RPY angles [rad]).
    """

    R_m: np.ndarray
    case: str
    rpy_f: np.ndarray | None = None
    rpy_m: np.ndarray | None = None


def _measured_rotation(R_f, measured, mask, av_r) -> _MeasuredRotation:
    if not av_r.any():
        return _MeasuredRotation(R_f, "none")
    if mask[3:].all() and av_r.all():
        return _MeasuredRotation(rpy_to_matrix(measured[..., 3:]), "all")
    rpy_f = matrix_to_rpy(R_f)
    rpy_m = np.where(av_r, measured[..., 3:], rpy_f)
    return _MeasuredRotation(rpy_to_matrix(rpy_m), "partial", rpy_f, rpy_m)


def _log6_batch(R_d, p_d, jacobian: bool) -> Tuple[np.ndarray, np.ndarray | None]:
    """``log6`` (and ``Jlog6``) of (N, K) poses."""
    N, K = p_d.shape[:2]
    xi = np.empty((N, K, 6))
    Jl = np.empty((N, K, 6, 6)) if jacobian else None
    for s in range(N):
        for k in range(K):
            M = pin.SE3(R_d[s, k], p_d[s, k])
            xi[s, k] = pin.log6(M).vector
            if Jl is not None:
                Jl[s, k] = pin.Jlog6(M)
    return xi, Jl


def _measurement_twist_map(R_f, R_mt, av_p, av_r, rot: _MeasuredRotation) -> np.ndarray:
    """``C`` in ``τ_m = C τ_f``: body twist of the (parameter-dependent) measurement."""
    N, K = R_f.shape[:2]
    C = np.zeros((N, K, 6, 6))
    Sp = np.zeros((N, K, 3, 3))
    Sp[..., [0, 1, 2], [0, 1, 2]] = (~av_p).astype(float)
    C[..., :3, :3] = R_mt @ Sp @ R_f
    if rot.case == "none":
        C[..., 3:, 3:] = np.eye(3)
    elif rot.case == "partial":
        if rot.rpy_f is None or rot.rpy_m is None:
            raise ValueError("_MeasuredRotation: case 'partial' needs rpy_f and rpy_m")
        Sr = np.zeros((N, K, 3, 3))
        Sr[..., [0, 1, 2], [0, 1, 2]] = (~av_r).astype(float)
        C[..., 3:, 3:] = (
            rpy_jacobian_local(rot.rpy_m) @ Sr @ np.linalg.inv(rpy_jacobian_local(rot.rpy_f))
        )
    return C


def logmap_residuals(
    measured_flat: ArrayLike,
    estimated_flat: ArrayLike,
    calib_config: Mapping[str, Any],
    *,
    position_frame: str = "body",
    n_samples: int | None = None,
) -> np.ndarray:
    """Log-map residuals between two flat measurement vectors, as figaroh 1.0.2 computes them.

    For each marker and posture the measured components fill two 6-vectors
    ``[x, y, z, φx, φy, φz]``: the estimate's unmeasured components are 0,
    the measurement's unmeasured (or NaN) components are copied from the
    estimate. With ``M = SE3(pin.rpy.rpyToMatrix(φ), [x, y, z])`` the
    residual is ``ξ = pin.log6(M_meas⁻¹ · M_est)`` (Pinocchio's products,
    point by point); ``position_frame="world"`` replaces its linear part by
    ``p_est − p_meas``. The measured rows are kept. With position-only data
    both rotations are the identity, so the body and world frames coincide
    (``ξ = p_est − p_meas`` exactly). Use :func:`pose_residuals` with full
    estimated poses for the body-frame residual that rotates with the
    estimated orientation (the analytic-Jacobian path).

    Args:
        measured_flat, estimated_flat: Flat vectors (same layout) [m, rad].
        calib_config: ``NbMarkers``, ``measurability``, ``NbSample``.
        position_frame: ``"body"`` or ``"world"``.
        n_samples: Samples per marker (default ``NbSample``).

    Returns:
        Flat residual vector [m, rad].

    Raises:
        ValueError: unknown ``position_frame`` or vectors of the wrong size.
    """
    if position_frame not in ("body", "world"):
        raise ValueError(f"position_frame must be 'body' or 'world', got {position_frame!r}")
    n = int(n_samples if n_samples is not None else calib_config["NbSample"])
    mask = _meas_mask(calib_config)
    m = measured_values(measured_flat, calib_config, n)  # (n, K, 6), NaN where not measured
    e = measured_values(estimated_flat, calib_config, n)
    N, K = m.shape[:2]
    out = np.empty((N, K, int(mask.sum())))
    world = position_frame == "world"
    for s in range(N):
        for k in range(K):
            e6 = np.where(mask, e[s, k], 0.0)
            m6 = np.where(mask & np.isfinite(m[s, k]), m[s, k], e6)
            M_meas = pin.SE3(pin.rpy.rpyToMatrix(m6[3:]), m6[:3])
            M_est = pin.SE3(pin.rpy.rpyToMatrix(e6[3:]), e6[:3])
            xi = pin.log6(M_meas.inverse() * M_est).vector
            if world:
                xi[:3] = e6[:3] - m6[:3]
            out[s, k] = xi[mask]
    return _to_flat(out)
