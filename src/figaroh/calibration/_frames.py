"""Closed-form estimate of the metrology frames (base and tips) of a calibration."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from figaroh.calibration._fkm import marker_poses
from figaroh.calibration._measurements import _meas_mask, measured_values
from figaroh.calibration.parameter import BASE_TPL, EE_TPL

__all__ = ["estimate_frames_closed_form", "frame_names"]


def _kabsch(X: np.ndarray, Y: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """R, t minimising Σ‖R x + t − y‖² over point pairs (rows)."""
    cx, cy = X.mean(axis=0), Y.mean(axis=0)
    H = (X - cx).T @ (Y - cy)
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0
    R = Vt.T @ np.diag([1.0, 1.0, d]) @ U.T
    return R, cy - R @ cx


def _chordal_mean(Rs: np.ndarray) -> np.ndarray:
    U, _, Vt = np.linalg.svd(Rs.sum(axis=0))
    d = np.sign(np.linalg.det(U @ Vt)) or 1.0
    return U @ np.diag([1.0, 1.0, d]) @ Vt


def estimate_frames_closed_form(
    model: Any,
    data: Any,
    q: np.ndarray,
    PEE: ArrayLike,
    calib_config: Mapping[str, Any],
    n_iter: int = 50,
) -> Dict[str, float]:
    """Closed-form base and tip frames for the nominal kinematics.

    Model ``P_k,i = R_b (p_i + R_i t_k) + t_b`` with ``(R_i, p_i)`` the
    nominal start→end transform of posture ``i``. Alternates, ``n_iter``
    times, a rotation estimate (Kabsch on the point sets; with one marker
    and full orientation measured, chordal averaging of ``R_meas (R_i
    R_tip)ᵀ`` plus a chordal ``R_tip`` when tip rotations are parameters) and
    one linear least squares for every tip translation that is a parameter
    and ``t_b``.

    Args:
        model, data: Pinocchio model and data.
        q: (N, nq) configurations.
        PEE: Flat measured vector (layout of ``calib_config``).
        calib_config: Calibration config (``param_name`` decides the outputs).
        n_iter: Alternation rounds.

    Returns:
        ``{name: value}`` for the ``base_*`` and tip names present, or ``{}``
        when no ``base_*`` name is present, a camera anchor is set, or x, y, z
        are not all measured (for every posture).
    """
    names = list(calib_config.get("param_name", []))
    mask = _meas_mask(calib_config)
    if not any(n in BASE_TPL for n in names) or calib_config.get("base_to_ref_frame"):
        return {}
    if not mask[:3].all():
        return {}
    q = np.atleast_2d(np.asarray(q, dtype=float))
    N = q.shape[0]
    K = int(calib_config.get("NbMarkers", 1))
    meas = measured_values(PEE, calib_config, N)  # (N,K,6)
    if not np.all(np.isfinite(meas[..., :3])):
        return {}
    cfg = dict(calib_config)
    cfg["param_name"] = []
    R_nom, p_nom = marker_poses(model, data, [], q, cfg)
    R_i, p_i = R_nom[:, 0], p_nom[:, 0]  # nominal start→end (no tip)
    tip_pos = [all(f"{t}_{k + 1}" in names for t in EE_TPL[:3]) for k in range(K)]
    tip_rot = K == 1 and any(f"{t}_1" in names for t in EE_TPL[3:])
    full_orient = K == 1 and mask.all()
    t_tip = np.zeros((K, 3))
    R_tip = np.eye(3)
    R_b, t_b = np.eye(3), np.zeros(3)
    P = meas[..., :3]  # (N,K,3)
    R_meas = np.array([pin.rpy.rpyToMatrix(a) for a in meas[:, 0, 3:]]) if full_orient else None
    for _ in range(max(1, n_iter)):
        if R_meas is not None:  # full orientation measured
            R_b = _chordal_mean(R_meas @ np.swapaxes(R_i @ R_tip, -1, -2))
            if tip_rot:
                R_tip = _chordal_mean(np.swapaxes(R_b @ R_i, -1, -2) @ R_meas)
        else:
            X = (p_i[:, None] + (R_i[:, None] @ t_tip[None, :, :, None])[..., 0]).reshape(-1, 3)
            R_b, _ = _kabsch(X, P.reshape(-1, 3))
        t_b = _translation_step(P, p_i, R_i, R_b, t_tip, tip_pos)
    return _frame_values(names, K, R_b, t_b, R_tip, t_tip)


def _translation_step(P, p_i, R_i, R_b, t_tip, tip_pos) -> np.ndarray:
    """Linear least squares ``P − R_b p_i = R_b R_i t_k + t_b`` for the free tips and ``t_b``.

    The free tip translations are written into ``t_tip`` (in place).

    Returns:
        ``t_b`` [m].
    """
    N, K = P.shape[:2]
    free = [k for k in range(K) if tip_pos[k]]
    A = np.zeros((N, K, 3, 3 * len(free) + 3))
    for c, k in enumerate(free):
        A[:, k, :, 3 * c : 3 * c + 3] = R_b @ R_i
    A[..., 3 * len(free) :] = np.eye(3)
    rhs = P - (p_i @ R_b.T)[:, None, :]
    known = [k for k in range(K) if not tip_pos[k]]
    for k in known:
        rhs[:, k] -= R_b @ R_i @ t_tip[k]
    sol = np.linalg.lstsq(A.reshape(-1, A.shape[-1]), rhs.reshape(-1), rcond=None)[0]
    for c, k in enumerate(free):
        t_tip[k] = sol[3 * c : 3 * c + 3]
    return sol[-3:]


def _frame_values(names, K: int, R_b, t_b, R_tip, t_tip) -> Dict[str, float]:
    """``{name: value}`` of the base and tip names present in ``names``."""
    out: Dict[str, float] = {}
    rpy_b = pin.rpy.matrixToRpy(R_b)
    for i, nm in enumerate(BASE_TPL):
        if nm in names:
            out[nm] = float(t_b[i] if i < 3 else rpy_b[i - 3])
    rpy_t = pin.rpy.matrixToRpy(R_tip)
    for k in range(K):
        for i, tpl in enumerate(EE_TPL):
            nm = f"{tpl}_{k + 1}"
            if nm in names:
                out[nm] = float(t_tip[k, i] if i < 3 else (rpy_t[i - 3] if K == 1 else 0.0))
    return out


def frame_names(names: Sequence[str]) -> List[str]:
    """The base and tip (metrology frame) names among ``names``."""
    return [n for n in names if n in BASE_TPL or any(n.startswith(t + "_") for t in EE_TPL)]
