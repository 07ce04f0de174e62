"""Predicted measurements of a geometric calibration, computed as figaroh 1.0.2 does.

For posture ``s`` and marker ``k`` the measured frame is::

    wMf_k(q_s, θ) = (wMo(θ_base) · oMee(q_s, θ_joint)) · eeMf_k(θ_tip,k)

with every factor a Pinocchio ``SE3`` and every product Pinocchio's own
(``pin.SE3.__mul__``), in this order:

* joint placement error ``d_*`` of joint ``j``: the model's placement
  becomes ``M_j · SE3(pin.exp3(v[3:6]), v[0:3])`` (translation [m] in the
  joint frame, rotation vector [rad]); joint offset ``offset*``:
  ``M_j · SE3(pin.rpy.rpyToMatrix(o[3:6]), o[0:3])``;
* elasticity ``k_<AXIS>_<j>``: at each posture the placement of joint ``j``
  is further offset by ``k · g_j(q)`` along/about the axis, ``g`` the
  generalised gravity [N·m or N] of the geometrically corrected model
  (``pin.computeGeneralizedGravity``), ``k`` in [rad/(N·m)] or [m/N];
* ``oMee = oMf[start]⁻¹ · oMf[end]`` after ``pin.forwardKinematics`` and
  ``pin.updateFramePlacement``;
* base ``wMo = SE3(rpyToMatrix(base[3:6]), base[0:3])``; eye-hand (the chain
  starts at the reference frame): ``wMo = (oMf[start]⁻¹ · oMf[camera]) ·
  SE3(base)⁻¹``; tip ``eeMf_k = SE3(rpyToMatrix(tip[3:6]), tip[0:3])``;
* the pose vector is ``[translation, pin.rpy.matrixToRpy(rotation)]``.

These are the operations, in the order, that figaroh 1.0.2 uses. The order
matters for reproducing 1.0.2's fits: a least-squares fit with a
finite-difference Jacobian amplifies round-off, so the same products
associated differently move the fitted parameters in their last digits (up to
1e-5 relative on an ill-conditioned set). The vectorised forward model with
the analytic parameter Jacobian (:mod:`figaroh.calibration._forward`) is the
same function to round-off.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Tuple

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from figaroh.calibration._forward import (
    _checked_inputs,
    _frame_ids,
    _pinocchio_pair,
    _values,
    measurement_jacobian_analytic,
)
from figaroh.calibration._measurements import _meas_mask, _to_flat

__all__ = ["calc_updated_fkm", "marker_poses", "measurement_jacobian", "pose_vectors"]


def _rpy_se3(v: np.ndarray) -> pin.SE3:
    """``SE3(rpyToMatrix(v[3:6]), v[0:3])`` of a 6-vector [m, rad]."""
    return pin.SE3(pin.rpy.rpyToMatrix(v[3:6]), v[0:3])


def _corrected_placements(model: Any, var: np.ndarray, jps: List[Any]) -> List[pin.SE3]:
    """Joint placements with the geometric parameters applied (one per parametrised joint)."""
    out = []
    for jp in jps:
        M = model.jointPlacements[jp.jid].copy()
        if np.any(jp.full >= 0):
            v = _values(var, jp.full)
            M = M * pin.SE3(pin.exp3(v[3:6]), v[0:3])
        if np.any(jp.offset >= 0):
            M = M * _rpy_se3(_values(var, jp.offset))
        out.append(M)
    return out


def _apply_elasticity(model, data, qs: np.ndarray, var, jps, geo) -> None:
    """Offset the elastic joints by ``k · g(q)`` (geometric placements in ``geo``)."""
    g = pin.computeGeneralizedGravity(model, data, qs)
    for a, jp in enumerate(jps):
        if jp.elastic < 0:
            continue
        e = np.zeros(6)
        e[jp.elastic_slot] = var[jp.elastic] * g[jp.idx_v]
        model.jointPlacements[jp.jid] = geo[a] * _rpy_se3(e)


def marker_poses(
    model: Any,
    data: Any,
    var: ArrayLike,
    q: np.ndarray,
    calib_config: Mapping[str, Any],
    *,
    layout: Any = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """Poses ``wMf_k`` of every measured frame at every posture (all rows of ``q``).

    The model's joint placements are modified during the call and restored
    before returning (also on error).

    Args:
        model: ``pinocchio.Model``.
        data: Matching ``pinocchio.Data``.
        var: Values of ``calib_config["param_name"]`` [m, rad, rad/(N·m)].
        q: (N, nq) configurations.
        calib_config: Calibration config (frames, ``NbMarkers``, names).
        layout: Cached parameter layout (internal).

    Returns:
        ``(R, p)``: (N, K, 3, 3) rotations and (N, K, 3) positions [m].

    Raises:
        ValueError: ``len(var)`` differs from ``param_name``, unknown names,
            or ``q`` with the wrong number of columns.
    """
    lay, var, q = _checked_inputs(model, var, q, calib_config, layout)
    N, K = q.shape[0], lay.n_markers
    sid, eid, start_fid, cam_fid = _frame_ids(model, calib_config)
    base = _values(var, lay.base)
    tips = [_rpy_se3(_values(var, lay.tip[k])) for k in range(K)]
    eye_hand = cam_fid is not None
    wMo = _rpy_se3(base) if lay.has_base and not eye_hand else None
    base_inv = _rpy_se3(base).inverse() if eye_hand else None
    jps = lay.joints
    elastic = lay.has_elastic
    R = np.empty((N, K, 3, 3))
    p = np.empty((N, K, 3))
    saved = [model.jointPlacements[jp.jid].copy() for jp in jps]
    try:
        geo = _corrected_placements(model, var, jps)
        for jp, M in zip(jps, geo, strict=True):
            model.jointPlacements[jp.jid] = M
        for s in range(N):
            qs = q[s]
            if elastic:
                _apply_elasticity(model, data, qs, var, jps, geo)
            pin.forwardKinematics(model, data, qs)
            oMs = pin.updateFramePlacement(model, data, sid)
            oMe = pin.updateFramePlacement(model, data, eid)
            oMee = oMs.inverse() * oMe
            if eye_hand:
                oMst = pin.updateFramePlacement(model, data, start_fid)
                oMc = pin.updateFramePlacement(model, data, cam_fid)
                oMee = ((oMst.inverse() * oMc) * base_inv) * oMee
            elif wMo is not None:
                oMee = wMo * oMee
            for k in range(K):
                M = oMee * tips[k]
                R[s, k] = M.rotation
                p[s, k] = M.translation
            if elastic:
                for jp, M in zip(jps, geo, strict=True):
                    model.jointPlacements[jp.jid] = M
    finally:
        for jp, M in zip(jps, saved, strict=True):
            model.jointPlacements[jp.jid] = M
    return R, p


def pose_vectors(R: np.ndarray, p: np.ndarray, calib_config: Mapping[str, Any]) -> np.ndarray:
    """Flat measured components ``[x, y, z, φx, φy, φz]`` of (N, K) poses.

    Angles from ``pin.rpy.matrixToRpy`` (computed only when an angle is
    measured).
    """
    mask = _meas_mask(calib_config)
    N, K = p.shape[:2]
    loc = np.zeros((N, K, 6))
    loc[..., :3] = p
    if mask[3:].any():
        for s in range(N):
            for k in range(K):
                loc[s, k, 3:] = pin.rpy.matrixToRpy(R[s, k])
    return _to_flat(loc[:, :, mask])


def calc_updated_fkm(
    model: Any,
    data: Any,
    var: ArrayLike,
    q: np.ndarray,
    calib_config: Mapping[str, Any],
    verbose: int = 0,
    backend: Any = None,
) -> np.ndarray:
    """Predicted flat measurement vector for postures ``q``.

    Only the first ``calib_config["NbSample"]`` rows of ``q`` are used. The
    model is unchanged afterwards. A parameter-free call is plain nominal FK.

    Args:
        model: ``pinocchio.Model``.
        data: ``pinocchio.Data``.
        var: Values of ``calib_config["param_name"]`` [m, rad].
        q: (≥ NbSample, nq) configurations.
        calib_config: Calibration config.
        verbose: Unused (kept for call compatibility).
        backend: Optional :class:`~figaroh.backends.base.DynamicsBackend`
            wrapping a Pinocchio model: the poses are computed on that model
            (its joint placements are modified during the call and restored).

    Returns:
        Flat ``[x, y, z, φx, φy, φz]`` measured components, layout
        ``(k·n_meas + c)·NbSample + s`` [m, rad].

    Raises:
        ValueError: size mismatches, unknown parameter names.
        NotImplementedError: a backend that wraps no Pinocchio model.
    """
    del verbose
    model, data = _pinocchio_pair(model, data, backend, "calc_updated_fkm")
    q = np.atleast_2d(np.asarray(q, dtype=float))
    N = int(calib_config.get("NbSample", q.shape[0]))
    if q.shape[0] < N:
        raise ValueError(f"q has {q.shape[0]} rows but calib_config['NbSample'] = {N}")
    R, p = marker_poses(model, data, var, q[:N], calib_config)
    return pose_vectors(R, p, calib_config)


def measurement_jacobian(
    model: Any,
    data: Any,
    var: ArrayLike,
    q: np.ndarray,
    calib_config: Mapping[str, Any],
    step: float = 1e-6,
    method: str = "central",
) -> np.ndarray:
    """Jacobian of :func:`calc_updated_fkm` w.r.t. the parameters (``NbSample = len(q)``).

    Default (figaroh 1.0.2's): central differences, column ``i`` is
    ``(f(θ + h·e_i) − f(θ − h·e_i)) / 2h`` with ``f`` = :func:`calc_updated_fkm`
    and ``h = step``: truncation error O(h²), round-off O(ε·|f|/h) (about
    1e-10 for metre-scale poses at ``h = 1e-6``). ``method="analytic"`` is
    the exact derivative (position ``dp = R·v`` of the body twist ``v`` of
    each measured frame, angles ``dφ = J_rpy⁻¹·ω``) in one vectorised pass
    instead of ``2·n`` evaluations of the forward model; it differs from the
    default by that finite-difference error, so a rank decision on a nearly
    dependent column can differ.

    Args:
        model, data: Pinocchio model and data.
        var: Parameter values [m, rad].
        q: (N, nq) configurations.
        calib_config: Calibration config (``param_name`` gives the columns).
        step: Central-difference step ``h`` [m or rad] (``method="central"`` only).
        method: ``"central"`` (default) or ``"analytic"``.

    Returns:
        (K·n_meas·N, n) matrix, rows in the flat measurement layout
        [m/m, m/rad, rad/m, rad/rad].

    Raises:
        ValueError: an unknown ``method``.
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    var = np.asarray(var, dtype=float).ravel()
    if method == "analytic":
        return measurement_jacobian_analytic(model, data, var, q, calib_config)
    if method != "central":
        raise ValueError(
            "measurement_jacobian: method must be 'central' (default) or 'analytic', "
            f"not {method!r}"
        )
    cfg = dict(calib_config)
    cfg["NbSample"] = q.shape[0]
    cols = []
    for i in range(var.size):
        dv = np.zeros_like(var)
        dv[i] = step
        cols.append(
            (
                calc_updated_fkm(model, data, var + dv, q, cfg)
                - calc_updated_fkm(model, data, var - dv, q, cfg)
            )
            / (2 * step)
        )
    return np.column_stack(cols) if cols else np.zeros((0, 0))
