"""Kinematic model, residuals and analytic Jacobians of a geometric calibration.

Forward model for posture ``s`` and marker ``k``::

    wMf_k(q_s, θ) = wMo(θ_base) · oMee(q_s, θ_joint) · eeMf_k(θ_tip,k)

* joint placement error ``d_*`` of joint ``j``:
  ``M_j ← M_j · SE3(exp3(v[3:6]), v[0:3])`` (joint-frame translation [m],
  rotation vector [rad]);
* joint offset ``offset*``: ``M_j ← M_j · SE3(rpy(o[3:6]), o[0:3])``;
* elasticity ``k_<AXIS>_<j>``: offset ``k · g_j(q)`` along/about the axis,
  ``g`` the generalised gravity [N·m or N] of the geometrically corrected
  model, ``k`` in [rad/(N·m)] or [m/N];
* base ``wMo = SE3(rpy(base[3:6]), base[0:3])`` (eye-hand:
  ``T(start → camera) · SE3(base)⁻¹``), tip ``eeMf_k = SE3(rpy, p)``.

Poses are 6-vectors ``[x, y, z, φx, φy, φz]`` with Pinocchio's RPY
convention ``R = Rz(φz)·Ry(φy)·Rx(φx)``.

Flat measurement layout (marker-major, then measured component, then
sample): ``index(k, c, s) = (k·n_meas + c)·NbSample + s``.

Jacobians are **analytic**: a parameter perturbation is mapped to a body
twist of each measured frame with Pinocchio placements and SE(3) adjoints
(the same construction as Pinocchio's kinematic regressor), then through the
exact derivative of the residual (``Jlog6`` for log-map residuals, the RPY
Jacobian for the ``[x, y, z, φ]`` measurement vector). Only the elastic
cross-term ``k·∂g/∂θ_geom`` (gravity-torque change caused by a geometric
error) is neglected. Samples are processed in vectorised numpy; Python
loops run only around Pinocchio calls (forward kinematics, ``log6``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, MutableMapping, Sequence, Tuple

import numpy as np
import pinocchio as pin
from scipy import linalg

from figaroh.calibration.config import get_sup_joints, unified_to_legacy_config
from figaroh.calibration.data_loader import get_idxq_from_jname, load_data, read_config_data
from figaroh.calibration.parameter import (
    BASE_TPL,
    EE_TPL,
    add_base_name,
    add_eemarker_frame,
    add_pee_name,
    get_fullparam_offset,
    get_joint_offset,
    parse_param_name,
)
from figaroh.tools.exceptions import RankDeficiencyError
from figaroh.tools.qrdecomposition import QRDecomposer
from figaroh.tools.regressor import eliminate_non_dynaffect

logger = logging.getLogger(__name__)

__all__ = [
    "PoseEvaluation",
    "adjoint",
    "apply_joint_offset",
    "calc_updated_fkm",
    "calculate_base_kinematics_regressor",
    "calculate_identifiable_kinematics_model",
    "calculate_kinematics_model",
    "cartesian_to_SE3",
    "drop_calibration_parameters",
    "estimate_frames_closed_form",
    "evaluate_poses",
    "exp3",
    "frame_names",
    "get_rel_jac",
    "get_rel_kinreg",
    "get_rel_transform",
    "initialize_variables",
    "jexp3_right",
    "logmap_residuals",
    "matrix_to_rpy",
    "measured_values",
    "measurement_jacobian",
    "measurement_weights",
    "pose_residuals",
    "random_joint_configuration",
    "rpy_jacobian_local",
    "rpy_to_matrix",
    "select_identifiable_parameters",
    "skew",
    "update_joint_placement",
    "xyzquat_to_SE3",
    # Re-exported for figaroh 1.0.2 compatibility.
    "add_base_name",
    "add_eemarker_frame",
    "add_pee_name",
    "get_fullparam_offset",
    "get_idxq_from_jname",
    "get_joint_offset",
    "get_sup_joints",
    "load_data",
    "read_config_data",
    "unified_to_legacy_config",
]

_SMALL = 1e-9


# ---------------------------------------------------------------------------
# batched SO(3)/SE(3) helpers (numpy, leading batch dimensions)
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# small public helpers
# ---------------------------------------------------------------------------


def cartesian_to_SE3(X: Sequence[float]) -> pin.SE3:
    """``SE3(rpy(X[3:6]), X[0:3])`` of a 6-vector ``[x, y, z, φx, φy, φz]`` [m, rad]."""
    X = np.asarray(X, dtype=float).ravel()
    if X.size != 6:
        raise ValueError(f"cartesian_to_SE3: expected 6 values [x, y, z, φx, φy, φz], got {X.size}")
    return pin.SE3(pin.rpy.rpyToMatrix(X[3:6]), X[0:3])


def xyzquat_to_SE3(xyzquat: Sequence[float]) -> pin.SE3:
    """SE3 of ``[x, y, z, qw, qx, qy, qz]`` [m, unit quaternion, **w first**].

    The quaternion is normalised. (Pinocchio's array constructor expects
    x, y, z, w; the w-first order is what is read here.)

    Args:
        xyzquat: Seven values: position [m] then the quaternion, w first.

    Raises:
        ValueError: not 7 values or a zero quaternion.
    """
    v = np.asarray(xyzquat, dtype=float).ravel()
    if v.size != 7:
        raise ValueError(f"xyzquat_to_SE3: expected [x, y, z, qw, qx, qy, qz], got {v.size} values")
    w, x, y, z = v[3:7]
    n = np.sqrt(w * w + x * x + y * y + z * z)
    if not np.isfinite(n) or n < 1e-12:
        raise ValueError("xyzquat_to_SE3: the quaternion has zero or non-finite norm")
    quat = pin.Quaternion(w / n, x / n, y / n, z / n)
    return pin.SE3(quat.matrix(), v[0:3])


def get_rel_transform(model: Any, data: Any, start_frame: str, end_frame: str) -> pin.SE3:
    """``oMf[start]⁻¹ · oMf[end]`` from the **current** ``data.oMf``.

    Raises:
        AssertionError: unknown frame (named).
    """
    for name in (start_frame, end_frame):
        if not model.existFrame(name):
            raise AssertionError(f"frame {name!r} does not exist in model {model.name!r}")
    sid, eid = model.getFrameId(start_frame), model.getFrameId(end_frame)
    return data.oMf[sid].inverse() * data.oMf[eid]


def update_joint_placement(model: Any, joint_idx: int, xyz_rpy: Sequence[float]) -> Any:
    """``M_j ← M_j · SE3(exp3(v[3:6]), v[0:3])`` in place (placement error ``d_*``).

    Args:
        model: ``pinocchio.Model`` (modified).
        joint_idx: Joint id.
        xyz_rpy: ``[dx, dy, dz]`` [m] in the joint frame and a rotation vector [rad].

    Returns:
        The model.
    """
    v = np.asarray(xyz_rpy, dtype=float).ravel()
    model.jointPlacements[joint_idx] = model.jointPlacements[joint_idx] * pin.SE3(
        pin.exp3(v[3:6]), v[0:3]
    )
    return model


def apply_joint_offset(model: Any, joint_idx: int, offset: Sequence[float]) -> Any:
    """``M_j ← M_j · SE3(rpy(v[3:6]), v[0:3])`` in place (joint offset ``offset*``).

    For a revolute-z joint, ``offsetRZ = d`` equals evaluating it at ``q + d``.

    Args:
        model: ``pinocchio.Model`` (modified).
        joint_idx: Joint id.
        offset: ``[dx, dy, dz]`` [m] and RPY angles [rad] in the joint frame.

    Returns:
        The model.
    """
    v = np.asarray(offset, dtype=float).ravel()
    model.jointPlacements[joint_idx] = model.jointPlacements[joint_idx] * pin.SE3(
        pin.rpy.rpyToMatrix(v[3:6]), v[0:3]
    )
    return model


def initialize_variables(
    calib_config: Mapping[str, Any], mode: int = 0, seed: float = 0
) -> Tuple[np.ndarray, int]:
    """Initial solver vector: zeros (``mode=0``) or uniform in ``[-seed, seed]`` (``mode=1``).

    Returns:
        ``(var, nvar)``.
    """
    n = len(calib_config["param_name"])
    if mode == 1:
        var = np.random.default_rng().uniform(-seed, seed, n)
    else:
        var = np.zeros(n)
    return var, n


def random_joint_configuration(model: Any, rng: np.random.Generator) -> np.ndarray:
    """Random configuration independent of Pinocchio's global generator.

    Neutral configuration; every joint with one configuration coordinate
    (revolute, prismatic) is drawn uniformly within its limits, or in
    ``[-π, π]`` when a limit is not finite or the range exceeds ``2π``; every
    other joint (continuous joints stored as cos/sin, free flyers, spherical
    joints) stays neutral and consumes no draw. One ``rng.uniform`` draw per
    drawn joint, in joint order, so a seed gives the same postures as
    figaroh 1.0.2.

    Args:
        model: ``pinocchio.Model``.
        rng: ``numpy.random.Generator``.

    Returns:
        (nq,) configuration [rad, m].
    """
    q = np.array(pin.neutral(model), dtype=float)
    lo_all, hi_all = model.lowerPositionLimit, model.upperPositionLimit
    for j in range(1, model.njoints):
        jm = model.joints[j]
        if jm.nv != 1 or jm.nq != 1:
            continue
        iq = jm.idx_q
        lo, hi = float(lo_all[iq]), float(hi_all[iq])
        if not (np.isfinite(lo) and np.isfinite(hi)) or hi - lo > 2 * np.pi or hi <= lo:
            lo, hi = -np.pi, np.pi
        q[iq] = rng.uniform(lo, hi)
    return q


# ---------------------------------------------------------------------------
# parameter layout
# ---------------------------------------------------------------------------


@dataclass
class _JointParams:
    jid: int
    parent: int
    full: np.ndarray  # (6,) var index or -1
    offset: np.ndarray  # (6,) var index or -1
    elastic: int = -1
    elastic_slot: int = -1
    idx_v: int = 0


@dataclass
class _Layout:
    names: List[str]
    n_markers: int
    base: np.ndarray  # (6,)
    tip: np.ndarray  # (K, 6)
    joints: List[_JointParams] = field(default_factory=list)

    @property
    def has_base(self) -> bool:
        return bool(np.any(self.base >= 0))

    @property
    def has_elastic(self) -> bool:
        return any(jp.elastic >= 0 for jp in self.joints)


def _layout(
    model: Any, calib_config: Mapping[str, Any], names: Sequence[str] | None = None
) -> _Layout:
    names = list(calib_config.get("param_name", []) if names is None else names)
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise ValueError(f"param_name: duplicate parameter names {dups}")
    K = int(calib_config.get("NbMarkers", 1))
    joints_map = {str(model.names[j]): j for j in range(1, model.njoints)}
    base = -np.ones(6, dtype=int)
    tip = -np.ones((K, 6), dtype=int)
    by_joint: Dict[int, _JointParams] = {}
    errors = []
    for i, name in enumerate(names):
        try:
            pp = parse_param_name(name, model, K, joints_map)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if pp.kind == "base":
            base[pp.slot] = i
        elif pp.kind == "tip":
            tip[pp.marker, pp.slot] = i
        else:
            jid = joints_map[pp.joint]
            jp = by_joint.get(jid)
            if jp is None:
                jm = model.joints[jid]
                jp = _JointParams(
                    jid,
                    int(model.parents[jid]),
                    -np.ones(6, dtype=int),
                    -np.ones(6, dtype=int),
                    idx_v=int(jm.idx_v),
                )
                by_joint[jid] = jp
            if pp.kind == "full":
                jp.full[pp.slot] = i
            elif pp.kind == "offset":
                jp.offset[pp.slot] = i
            else:
                if model.joints[jid].nv != 1:
                    errors.append(f"elastic parameter {name!r}: joint {pp.joint!r} is not 1-DoF")
                jp.elastic, jp.elastic_slot = i, pp.slot
    if errors:
        raise ValueError("; ".join(errors))
    return _Layout(names, K, base, tip, [by_joint[j] for j in sorted(by_joint)])


def _values(var: np.ndarray, idx: np.ndarray) -> np.ndarray:
    out = np.zeros(idx.shape)
    sel = idx >= 0
    out[sel] = var[idx[sel]]
    return out


# ---------------------------------------------------------------------------
# forward model with analytic Jacobian
# ---------------------------------------------------------------------------


@dataclass
class PoseEvaluation:
    """Poses of the measured frames and their parameter Jacobian.

    Attributes:
        R: (N, K, 3, 3) rotations of ``wMf_k`` at each posture.
        p: (N, K, 3) positions [m].
        T: (N, K, 6, n_param) body-twist Jacobian (``M(θ+dθ) ≈ M·Exp(T dθ)``,
            twist = linear [m], angular [rad]), or None.
    """

    R: np.ndarray
    p: np.ndarray
    T: np.ndarray | None = None


def _frame_ids(
    model: Any, calib_config: Mapping[str, Any]
) -> Tuple[int, int, int | None, int | None]:
    cam = calib_config.get("base_to_ref_frame")
    ref = calib_config.get("ref_frame")
    start = calib_config.get("start_frame", "universe")
    end = calib_config["end_frame"]
    chain_start = ref if cam else start
    for key, nm in (("start_frame", chain_start), ("end_frame", end)):
        if not model.existFrame(nm):
            raise ValueError(f"calib_config[{key!r}]: frame {nm!r} is not in model {model.name!r}")
    sid, eid = int(model.getFrameId(chain_start)), int(model.getFrameId(end))
    if cam:
        for nm in (start, cam):
            if not model.existFrame(nm):
                raise ValueError(f"eye-hand frame {nm!r} is not in model {model.name!r}")
        return sid, eid, int(model.getFrameId(start)), int(model.getFrameId(cam))
    return sid, eid, None, None


def evaluate_poses(
    model: Any,
    data: Any,
    var: Sequence[float],
    q: np.ndarray,
    calib_config: Mapping[str, Any],
    *,
    jacobian: bool = False,
    layout: Any = None,
) -> PoseEvaluation:
    """Poses of every measured frame at every posture, optionally with the Jacobian.

    The model's joint placements are modified during the call and restored
    before returning (also on error).

    Args:
        model: ``pinocchio.Model``.
        data: Matching ``pinocchio.Data``.
        var: Parameter values in ``calib_config["param_name"]`` order [m, rad,
            rad/(N·m)].
        q: (N, nq) configurations (all rows are used).
        calib_config: Calibration config (frames, ``NbMarkers``, names).
        jacobian: Also compute the (N, K, 6, n) body-twist Jacobian.
        layout: Cached parameter layout (internal).

    Returns:
        :class:`PoseEvaluation`.

    Raises:
        ValueError: ``len(var)`` differs from ``param_name``, unknown names,
            or ``q`` with the wrong number of columns.
    """
    lay = layout if layout is not None else _layout(model, calib_config)
    var = np.asarray(var, dtype=float).ravel()
    if var.size != len(lay.names):
        raise ValueError(
            f"var has {var.size} values but calib_config['param_name'] has {len(lay.names)}"
        )
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if q.shape[1] != model.nq:
        raise ValueError(f"q: expected (N, nq={model.nq}) configurations, got {q.shape}")
    N, K, n = q.shape[0], lay.n_markers, var.size
    sid, eid, start_fid, cam_fid = _frame_ids(model, calib_config)
    eye_hand = cam_fid is not None
    supports_e = set(int(j) for j in model.supports[model.frames[eid].parentJoint])
    supports_s = set(int(j) for j in model.supports[model.frames[sid].parentJoint])

    jps = lay.joints
    nJ = len(jps)
    saved = [model.jointPlacements[jp.jid].copy() for jp in jps]
    geo: List[pin.SE3] = []
    # per-joint geometric pieces (constant over samples)
    Xf_R = np.zeros((nJ, 3, 3))
    Xf_p = np.zeros((nJ, 3))
    Xo_R = np.zeros((nJ, 3, 3))
    Xo_p = np.zeros((nJ, 3))
    Lf = np.zeros((nJ, 6, 6))
    Lo = np.zeros((nJ, 6, 6))
    el_value = np.zeros(nJ)
    for a, jp in enumerate(jps):
        v, o = _values(var, jp.full), _values(var, jp.offset)
        Xf_R[a], Xf_p[a] = exp3(v[3:6]), v[0:3]
        Xo_R[a], Xo_p[a] = rpy_to_matrix(o[3:6]), o[0:3]
        Lf[a] = _twist_map(Xf_R[a], jexp3_right(v[3:6]))
        Lo[a] = _twist_map(Xo_R[a], rpy_jacobian_local(o[3:6]))
        if jp.elastic >= 0:
            el_value[a] = var[jp.elastic]
    H_s = np.zeros((N, 4, 4))
    H_e = np.zeros((N, 4, 4))
    H_P = np.zeros((N, nJ, 4, 4)) if jacobian else None
    A_cam = np.zeros((N, 4, 4)) if eye_hand else None
    el_joints = [a for a, jp in enumerate(jps) if jp.elastic >= 0]
    el_off = np.zeros((N, nJ)) if el_joints else None
    g_el = np.zeros((N, nJ)) if el_joints else None
    # geometric-model quantities for the elastic cross-term k·∂g/∂θ (Jacobian only)
    cross = bool(el_joints) and jacobian
    if cross:
        H_all = np.zeros((N, model.njoints, 4, 4))  # oMi of every joint (geometric model)
        H_all[:, 0] = np.eye(4)
        H_geo_P = np.zeros((N, nJ, 4, 4))  # oMi[parent]·M_geo of each parametrised joint
        S_loc = np.zeros((N, nJ, 6))
    try:
        for a, jp in enumerate(jps):
            M = saved[a] * pin.SE3(Xf_R[a], Xf_p[a]) * pin.SE3(Xo_R[a], Xo_p[a])
            model.jointPlacements[jp.jid] = M
            geo.append(M)
        for s in range(N):
            qs = q[s]
            if el_joints:
                g = pin.computeGeneralizedGravity(model, data, qs)
                if cross:
                    pin.forwardKinematics(model, data, qs)
                    for k in range(1, model.njoints):
                        H_all[s, k] = data.oMi[k].homogeneous
                    for a, jp in enumerate(jps):
                        H_geo_P[s, a] = (data.oMi[jp.parent] * geo[a]).homogeneous
                        S_loc[s, a] = np.asarray(data.joints[jp.jid].S).reshape(6, -1)[:, 0]
                for a in el_joints:
                    jp = jps[a]
                    e = np.zeros(6)
                    g_el[s, a] = g[jp.idx_v]
                    e[jp.elastic_slot] = el_value[a] * g_el[s, a]
                    el_off[s, a] = e[jp.elastic_slot]
                    model.jointPlacements[jp.jid] = geo[a] * pin.SE3(
                        pin.rpy.rpyToMatrix(e[3:6]), e[0:3]
                    )
            pin.forwardKinematics(model, data, qs)
            H_s[s] = pin.updateFramePlacement(model, data, sid).homogeneous
            H_e[s] = pin.updateFramePlacement(model, data, eid).homogeneous
            if eye_hand:
                oMst = pin.updateFramePlacement(model, data, start_fid)
                oMc = pin.updateFramePlacement(model, data, cam_fid)
                A_cam[s] = (oMst.inverse() * oMc).homogeneous
            if jacobian:
                for a, jp in enumerate(jps):
                    H_P[s, a] = (data.oMi[jp.parent] * model.jointPlacements[jp.jid]).homogeneous
            for a in el_joints:
                model.jointPlacements[jps[a].jid] = geo[a]
    finally:
        for a, jp in enumerate(jps):
            model.jointPlacements[jp.jid] = saved[a]

    # start → end transform
    Rs_t, ps_i = _inv(H_s[:, :3, :3], H_s[:, :3, 3])
    R_ee, p_ee = _compose(Rs_t, ps_i, H_e[:, :3, :3], H_e[:, :3, 3])  # (N,3,3), (N,3)

    # base frame
    b = _values(var, lay.base)
    R_b = rpy_to_matrix(b[3:6])
    if eye_hand:
        RB_t, pB_i = _inv(R_b, b[0:3])
        R_wo, p_wo = _compose(A_cam[:, :3, :3], A_cam[:, :3, 3], RB_t, pB_i)
    elif lay.has_base:
        R_wo = np.broadcast_to(R_b, (N, 3, 3))
        p_wo = np.broadcast_to(b[0:3], (N, 3))
    else:
        R_wo = np.broadcast_to(np.eye(3), (N, 3, 3))
        p_wo = np.zeros((N, 3))
    R_wee, p_wee = _compose(R_wo, p_wo, R_ee, p_ee)

    # tips
    tips = np.stack([_values(var, lay.tip[k]) for k in range(K)])  # (K, 6)
    R_t = rpy_to_matrix(tips[:, 3:6])  # (K,3,3)
    R_f, p_f = _compose(R_wee[:, None], p_wee[:, None], R_t[None], tips[None, :, 0:3])
    if not jacobian:
        return PoseEvaluation(R_f, p_f)

    T = np.zeros((N, K, 6, n))
    # adjoint from the end (ee) frame to each measured frame f_k: Ad(eeMf_k⁻¹)
    Rt_t, pt_i = _inv(R_t, tips[:, 0:3])
    Ad_f_ee = adjoint(Rt_t, pt_i)  # (K,6,6)
    # joints: twist at the end frame per unit parameter, then at each f_k
    if nJ:
        He_R_t, He_p_i = _inv(H_e[:, :3, :3], H_e[:, :3, 3])
        R_eP, p_eP = _compose(
            He_R_t[:, None], He_p_i[:, None], H_P[:, :, :3, :3], H_P[:, :, :3, 3]
        )  # (N,nJ,...)
        Ad_eP = adjoint(R_eP, p_eP)  # (N,nJ,6,6)
        coefs = [(jp.jid in supports_e) - (jp.jid in supports_s) for jp in jps]
        el_unit: Dict[int, np.ndarray] = {}  # joint → (N,K,6) twist at f_k per unit offset
        geo_cols: List[Tuple[int, np.ndarray, np.ndarray]] = []  # (joint, var idx, twist at P_geo)
        for a, jp in enumerate(jps):
            if jp.elastic >= 0:
                e6 = np.zeros((N, 6))
                e6[:, jp.elastic_slot] = el_off[:, a]
                Rel = rpy_to_matrix(e6[:, 3:6])
                Rel_t, pel_i = _inv(Rel, e6[:, 0:3])
                Ad_el_inv = adjoint(Rel_t, pel_i)  # (N,6,6)
                Lel = _twist_map(Rel, rpy_jacobian_local(e6[:, 3:6]))[:, :, jp.elastic_slot]
                el_unit[a] = coefs[a] * np.einsum(
                    "kij,nj->nki", Ad_f_ee, (Ad_eP[:, a] @ Lel[..., None])[..., 0]
                )
                T[:, :, :, jp.elastic] += el_unit[a] * g_el[:, a, None, None]
            else:
                Ad_el_inv = np.broadcast_to(np.eye(6), (N, 6, 6))
            groups = []
            if np.any(jp.full >= 0):
                Ro_t, po_i = _inv(Xo_R[a], Xo_p[a])
                groups.append((jp.full, adjoint(Ro_t, po_i) @ Lf[a]))
            if np.any(jp.offset >= 0):
                groups.append((jp.offset, Lo[a]))
            for idx, G_geo in groups:
                present = np.flatnonzero(idx >= 0)
                geo_cols.append((a, idx[present], G_geo[:, present]))
                if coefs[a] == 0:
                    continue
                Tee = coefs[a] * (Ad_eP[:, a] @ (Ad_el_inv @ G_geo[:, present]))  # (N,6,c)
                T[:, :, :, idx[present]] += np.einsum("kij,njl->nkil", Ad_f_ee, Tee)
        if cross and el_unit:
            # subtree masses and first moments (world frame) of each parametrised joint
            masses = np.array([model.inertias[k].mass for k in range(model.njoints)])
            levers = np.array([model.inertias[k].lever for k in range(model.njoints)])
            com_w = (H_all[..., :3, :3] @ levers[None, :, :, None])[..., 0] + H_all[..., :3, 3]
            B = np.array(
                [
                    [
                        float(jp.jid in set(int(x) for x in model.supports[k]))
                        for k in range(model.njoints)
                    ]
                    for jp in jps
                ]
            )
            sub_mass = np.broadcast_to(B @ masses, (N, nJ))
            sub_H = np.einsum("ak,nkc->nac", B * masses, com_w)
            H_geo_i = H_all[:, [jp.jid for jp in jps]]
            _elastic_cross_terms(
                model, jps, el_unit, el_value, geo_cols, T, H_geo_i, H_geo_P, S_loc, sub_mass, sub_H
            )
    # base
    if lay.has_base:
        present = np.flatnonzero(lay.base >= 0)
        Lb = _twist_map(R_b, rpy_jacobian_local(b[3:6]))
        R_of, p_of = _compose(R_ee[:, None], p_ee[:, None], R_t[None], tips[None, :, 0:3])
        Rfo, pfo = _inv(R_of, p_of)
        Ad_fo = adjoint(Rfo, pfo)  # (N,K,6,6)
        if eye_hand:
            G = -(adjoint(R_b, b[0:3]) @ Lb)
        else:
            G = Lb
        T[:, :, :, lay.base[present]] += (Ad_fo @ G)[..., present]
    # tips
    for k in range(K):
        present = np.flatnonzero(lay.tip[k] >= 0)
        if present.size:
            Lt = _twist_map(R_t[k], rpy_jacobian_local(tips[k, 3:6]))
            T[:, k][:, :, lay.tip[k, present]] += Lt[None, :, present]
    return PoseEvaluation(R_f, p_f, T)


def _elastic_cross_terms(
    model, jps, el_unit, el_value, geo_cols, T, H_geo_i, H_geo_P, S_loc, sub_mass, sub_H
) -> None:
    """Add ``k_i·∂τ_i/∂θ`` terms: geometric errors change the gravity torques.

    ``τ_i = −S_iᵀ W_i`` with ``S_i`` the world motion axis of joint ``i`` and
    ``W_i = (M g, M c × g)`` the gravity wrench of its subtree about the world
    origin. A placement error of joint ``j`` (world twist ``V = (v, ω)``)
    moves subtree(j) rigidly: for ``i`` in subtree(j)
    ``δτ_i = −ω·(s_v × F + s_ω × N) − ω·(H_i × (g × s_ω))``; for ``i`` a
    strict ancestor of ``j`` ``δτ_i = −M_j v·(g × s_ω) − ω·(H_j × (g × s_ω))``.
    """
    gvec = np.asarray(model.gravity.linear, dtype=float)
    for a, unit in el_unit.items():
        ia = jps[a].jid
        Sw = (adjoint(H_geo_i[:, a, :3, :3], H_geo_i[:, a, :3, 3]) @ S_loc[:, a, :, None])[..., 0]
        s_v, s_w = Sw[:, :3], Sw[:, 3:]
        g_x_sw = np.cross(gvec, s_w)  # (N,3)
        for b, idx, G_geo in geo_cols:
            jb = jps[b].jid
            in_subtree = jb in set(int(x) for x in model.supports[ia])
            ancestor = ia != jb and ia in set(int(x) for x in model.supports[jb])
            if not (in_subtree or ancestor):
                continue
            w = np.zeros((Sw.shape[0], 6))
            if in_subtree:
                M_i = sub_mass[:, a, None]
                H_i = sub_H[:, a]
                F = M_i * gvec
                Nm = np.cross(H_i, gvec)
                w[:, 3:] = -(np.cross(s_v, F) + np.cross(s_w, Nm)) - np.cross(H_i, g_x_sw)
            else:
                M_j = sub_mass[:, b, None]
                H_j = sub_H[:, b]
                w[:, :3] = -M_j * g_x_sw
                w[:, 3:] = -np.cross(H_j, g_x_sw)
            V = adjoint(H_geo_P[:, b, :3, :3], H_geo_P[:, b, :3, 3]) @ G_geo  # (N,6,c)
            de = el_value[a] * np.einsum("ni,nic->nc", w, V)  # (N,c)
            T[:, :, :, idx] += unit[..., None] * de[:, None, None, :]


# ---------------------------------------------------------------------------
# measurement vectors and residuals
# ---------------------------------------------------------------------------


def _meas_mask(calib_config: Mapping[str, Any]) -> np.ndarray:
    m = np.asarray(calib_config.get("measurability", [True] * 3 + [False] * 3), dtype=bool)
    if m.shape != (6,):
        raise ValueError(f"calib_config['measurability'] must have 6 booleans, got {m.tolist()}")
    return m


def _to_flat(arr: np.ndarray) -> np.ndarray:
    """(N, K, c, ...) → flat marker-major, component, sample (trailing dims kept)."""
    N, K, c = arr.shape[:3]
    return np.moveaxis(arr, 0, 2).reshape((K * c * N,) + arr.shape[3:])


def _from_flat(flat: np.ndarray, N: int, K: int, c: int) -> np.ndarray:
    """Flat (K·c·N, ...) → (N, K, c, ...)."""
    flat = np.asarray(flat)
    return np.moveaxis(flat.reshape((K, c, N) + flat.shape[1:]), 2, 0)


def measured_values(
    flat: Sequence[float], calib_config: Mapping[str, Any], n_samples: int
) -> np.ndarray:
    """Flat measurement vector → (N, K, 6) array with NaN for unmeasured components."""
    mask = _meas_mask(calib_config)
    K = int(calib_config.get("NbMarkers", 1))
    c = int(mask.sum())
    flat = np.asarray(flat, dtype=float).ravel()
    if flat.size != K * c * n_samples:
        raise ValueError(
            f"measurement vector has {flat.size} entries; expected NbMarkers·n_meas·NbSample = "
            f"{K}·{c}·{n_samples} = {K * c * n_samples}"
        )
    out = np.full((n_samples, K, 6), np.nan)
    out[:, :, mask] = _from_flat(flat, n_samples, K, c)
    return out


def calc_updated_fkm(
    model: Any,
    data: Any,
    var: Sequence[float],
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
    ev = evaluate_poses(model, data, var, q[:N], calib_config)
    return _pose_vector(ev.R, ev.p, calib_config)


def _pose_vector(R: np.ndarray, p: np.ndarray, calib_config: Mapping[str, Any]) -> np.ndarray:
    mask = _meas_mask(calib_config)
    loc = np.concatenate([p, matrix_to_rpy(R)], axis=-1)  # (N,K,6)
    return _to_flat(loc[:, :, mask])


def measurement_jacobian(
    model: Any,
    data: Any,
    var: Sequence[float],
    q: np.ndarray,
    calib_config: Mapping[str, Any],
    step: float = 1e-6,
    method: str = "analytic",
) -> np.ndarray:
    """Jacobian of :func:`calc_updated_fkm` w.r.t. the parameters (``NbSample = len(q)``).

    Args:
        model, data: Pinocchio model and data.
        var: Parameter values [m, rad].
        q: (N, nq) configurations.
        calib_config: Calibration config (``param_name`` gives the columns).
        step: Central-difference step (``method="central"`` only).
        method: ``"analytic"`` (default: position ``dp = R·v``, angles
            ``dφ = J_rpy⁻¹·ω``) or ``"central"`` (finite differences).

    Returns:
        (K·n_meas·N, n) matrix, rows in the flat measurement layout.
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    var = np.asarray(var, dtype=float).ravel()
    cfg = dict(calib_config)
    cfg["NbSample"] = q.shape[0]
    if method == "central":
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
    if method != "analytic":
        raise ValueError(
            f"measurement_jacobian: method must be 'analytic' or 'central', not {method!r}"
        )
    ev = evaluate_poses(model, data, var, q, cfg, jacobian=True)
    mask = _meas_mask(cfg)
    rpy = matrix_to_rpy(ev.R)
    dpos = ev.R @ ev.T[..., :3, :]  # (N,K,3,n)
    drpy = np.linalg.solve(rpy_jacobian_local(rpy), ev.T[..., 3:, :])
    full = np.concatenate([dpos, drpy], axis=-2)  # (N,K,6,n)
    return _to_flat(full[:, :, mask, :])


def measurement_weights(
    calib_config: Mapping[str, Any],
    n_samples: int,
    pos_weight: float | None = None,
    orient_weight: float | None = None,
) -> np.ndarray:
    """Per-row weights of the flat layout: ``1/σ_position`` and ``1/σ_orientation``.

    Defaults come from ``calib_config["measurement_std"]``
    (``{position: 0.001 m, orientation: 0.01 rad}``).

    Returns:
        (K·n_meas·N,) weights [1/m or 1/rad].

    Raises:
        ValueError: a non-positive standard deviation.
    """
    std = calib_config.get("measurement_std") or {}
    if pos_weight is None:
        s = float(std.get("position", 0.001))
        if not s > 0:
            raise ValueError(f"measurement_std.position must be > 0 [m], got {s}")
        pos_weight = 1.0 / s
    if orient_weight is None:
        s = float(std.get("orientation", 0.01))
        if not s > 0:
            raise ValueError(f"measurement_std.orientation must be > 0 [rad], got {s}")
        orient_weight = 1.0 / s
    mask = _meas_mask(calib_config)
    K = int(calib_config.get("NbMarkers", 1))
    comp_w = np.where(np.arange(6) < 3, pos_weight, orient_weight)[mask]
    return np.tile(np.repeat(comp_w, n_samples), K)


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
    N, K = p_f.shape[:2]
    avail = np.isfinite(measured) & mask  # (N,K,6)
    av_p, av_r = avail[..., :3], avail[..., 3:]
    pm = np.where(av_p, measured[..., :3], p_f)
    if not av_r.any():
        R_m, rot_case = R_f, "none"
    elif mask[3:].all() and av_r.all():
        R_m, rot_case = rpy_to_matrix(measured[..., 3:]), "all"
    else:
        rpy_f = matrix_to_rpy(R_f)
        rpy_m = np.where(av_r, measured[..., 3:], rpy_f)
        R_m, rot_case = rpy_to_matrix(rpy_m), "partial"
    R_mt = np.swapaxes(R_m, -1, -2)
    R_d = R_mt @ R_f
    p_d = (R_mt @ (p_f - pm)[..., None])[..., 0]
    xi = np.empty((N, K, 6))
    Jl = np.empty((N, K, 6, 6)) if T is not None else None
    for s in range(N):
        for k in range(K):
            M = pin.SE3(R_d[s, k], p_d[s, k])
            xi[s, k] = pin.log6(M).vector
            if Jl is not None:
                Jl[s, k] = pin.Jlog6(M)
    if position_frame == "world":
        xi[..., :3] = p_f - pm
    res = xi[..., mask]
    if T is None:
        return res, None
    # body twist of the (parameter-dependent) measurement: τ_m = C τ_f
    C = np.zeros((N, K, 6, 6))
    Sp = np.zeros((N, K, 3, 3))
    Sp[..., [0, 1, 2], [0, 1, 2]] = (~av_p).astype(float)
    C[..., :3, :3] = R_mt @ Sp @ R_f
    if rot_case == "none":
        C[..., 3:, 3:] = np.eye(3)
    elif rot_case == "partial":
        Sr = np.zeros((N, K, 3, 3))
        Sr[..., [0, 1, 2], [0, 1, 2]] = (~av_r).astype(float)
        C[..., 3:, 3:] = rpy_jacobian_local(rpy_m) @ Sr @ np.linalg.inv(rpy_jacobian_local(rpy_f))
    R_dt, p_di = _inv(R_d, p_d)
    D = np.eye(6) - adjoint(R_dt, p_di) @ C  # (N,K,6,6)
    Jres = Jl @ D @ T
    if position_frame == "world":
        Sm = np.zeros((N, K, 3, 3))
        Sm[..., [0, 1, 2], [0, 1, 2]] = av_p.astype(float)
        Jres[..., :3, :] = Sm @ R_f @ T[..., :3, :]
    return res, Jres[..., mask, :]


def logmap_residuals(
    measured_flat: Sequence[float],
    estimated_flat: Sequence[float],
    calib_config: Mapping[str, Any],
    *,
    position_frame: str = "body",
    n_samples: int | None = None,
) -> np.ndarray:
    """Log-map residuals between two flat measurement vectors.

    Both vectors hold only the measured components; unmeasured components
    of both poses are taken as 0 (identity rotation with position-only data,
    so the body and world frames coincide). Use :func:`pose_residuals` with
    full estimated poses for the exact body-frame residual.

    Args:
        measured_flat, estimated_flat: Flat vectors (same layout) [m, rad].
        calib_config: ``NbMarkers``, ``measurability``, ``NbSample``.
        position_frame: ``"body"`` or ``"world"``.
        n_samples: Samples per marker (default ``NbSample``).

    Returns:
        Flat residual vector [m, rad].
    """
    n = int(n_samples if n_samples is not None else calib_config["NbSample"])
    mask = _meas_mask(calib_config)
    m = measured_values(measured_flat, calib_config, n)
    e = measured_values(estimated_flat, calib_config, n)
    e = np.where(np.isnan(e), 0.0, e)
    res, _ = pose_residuals(
        rpy_to_matrix(e[..., 3:]), e[..., :3], m, mask, position_frame=position_frame
    )
    return _to_flat(res)


# ---------------------------------------------------------------------------
# kinematic regressors and structural selection
# ---------------------------------------------------------------------------


def _pinocchio_pair(model: Any, data: Any, backend: Any, what: str) -> Tuple[Any, Any]:
    """Pinocchio model and data to compute ``what`` on.

    Without a backend: ``(model, data)``. With a backend: the Pinocchio model
    it wraps (``backend.get_model_object()``) and its data (``backend.data``,
    else a fresh ``createData()``).

    Raises:
        NotImplementedError: the backend does not wrap a Pinocchio model
            (``what`` needs joint placements, which the backend interface
            does not expose).
    """
    if backend is None:
        return model, data
    getter = getattr(backend, "get_model_object", None)
    obj = None
    if getter is not None:
        try:
            obj = getter()
        except NotImplementedError:
            obj = None
    if not isinstance(obj, pin.Model):
        raise NotImplementedError(
            f"{what} needs a Pinocchio model (joint placements), but backend "
            f"{type(backend).__name__}.get_model_object() returned {type(obj).__name__}; "
            "pass backend=None to compute on the model given, or a PinocchioBackend"
        )
    bdata = data if obj is model else getattr(backend, "data", None)
    if not isinstance(bdata, pin.Data):
        bdata = obj.createData()
    return obj, bdata


def _backend_jacobian(backend: Any, q: np.ndarray, frame: str) -> np.ndarray:
    """(6, nv) frame Jacobian ``[linear; angular]`` from ``backend.compute_jacobian``."""
    J = np.asarray(backend.compute_jacobian(np.asarray(q, dtype=float), frame), dtype=float)
    return J.reshape(6, -1)


def _frame_regressor(model: Any, data: Any, fid: int) -> np.ndarray:
    """LOCAL kinematic regressor of frame ``fid`` (zero for the universe frame 0).

    Forward kinematics must be up to date in ``data``.
    """
    if int(fid) == 0:
        return np.zeros((6, 6 * (model.njoints - 1)))
    return pin.computeFrameKinematicRegressor(model, data, int(fid), pin.LOCAL)


def _check_frame_name(model: Any, name: str, key: str) -> int:
    if not model.existFrame(name):
        raise ValueError(f"{key}: frame {name!r} is not in model {model.name!r}")
    return int(model.getFrameId(name))


def calculate_kinematics_model(
    q_i: Sequence[float],
    model: Any,
    data: Any,
    calib_config: Mapping[str, Any],
    backend: Any = None,
) -> Tuple[Any, Any, np.ndarray, np.ndarray]:
    """FK at ``q_i``; LOCAL Jacobian ``J`` (6×nv) and kinematic regressor ``R`` of ``IDX_TOOL``.

    Args:
        q_i: Configuration (nq,) [rad, m].
        model: ``pinocchio.Model``.
        data: Matching ``pinocchio.Data``.
        calib_config: Calibration config (``IDX_TOOL``).
        backend: Optional :class:`~figaroh.backends.base.DynamicsBackend`:
            ``J`` comes from ``backend.compute_jacobian`` and ``R`` is computed
            on the Pinocchio model the backend wraps.

    Returns:
        ``(model, data, R (6 × 6(njoints-1)), J (6 × nv))`` — the model and
        data the computation ran on.

    Raises:
        NotImplementedError: a backend that wraps no Pinocchio model.
    """
    fid = int(calib_config["IDX_TOOL"])
    q_i = np.asarray(q_i, dtype=float)
    m, d = _pinocchio_pair(model, data, backend, "the kinematic regressor")
    pin.forwardKinematics(m, d, q_i)
    pin.updateFramePlacements(m, d)
    R = _frame_regressor(m, d, fid)
    if backend is None:
        J = pin.computeFrameJacobian(m, d, q_i, fid, pin.LOCAL)
    else:
        J = _backend_jacobian(backend, q_i, str(m.frames[fid].name))
        pin.forwardKinematics(m, d, q_i)  # leave FK at q_i whatever the backend did
        pin.updateFramePlacements(m, d)
    return m, d, R, J


def get_rel_kinreg(
    model: Any,
    data: Any,
    start_frame: str,
    end_frame: str,
    q: Sequence[float],
    backend: Any = None,
) -> np.ndarray:
    """Relative kinematic regressor of ``end`` w.r.t. ``start`` (6 × 6(njoints-1)).

    Block ``j`` maps a placement error of joint ``j`` (body twist in its own
    frame) to the twist of ``start⁻¹·end`` expressed in the end frame:
    ``R_end − Ad(end⁻¹·start)·R_start`` (joints supporting both frames
    cancel). ``start_frame="universe"`` gives ``R_end``.

    Args:
        model, data: Pinocchio model and data.
        start_frame, end_frame: Frame names.
        q: Configuration (nq,).
        backend: Optional :class:`~figaroh.backends.base.DynamicsBackend`
            wrapping a Pinocchio model; the computation runs on that model.

    Raises:
        ValueError: unknown frame.
        NotImplementedError: a backend that wraps no Pinocchio model.
    """
    m, d = _pinocchio_pair(model, data, backend, "the kinematic regressor")
    sid = _check_frame_name(m, start_frame, "start_frame")
    eid = _check_frame_name(m, end_frame, "end_frame")
    pin.forwardKinematics(m, d, np.asarray(q, dtype=float))
    pin.updateFramePlacements(m, d)
    Re = _frame_regressor(m, d, eid)
    if sid == 0:
        return Re
    Rs = _frame_regressor(m, d, sid)
    eMs = d.oMf[eid].inverse() * d.oMf[sid]
    return Re - eMs.action @ Rs


def get_rel_jac(
    model: Any,
    data: Any,
    start_frame: str,
    end_frame: str,
    q: Sequence[float],
    backend: Any = None,
) -> np.ndarray:
    """LOCAL Jacobian of ``end`` minus LOCAL Jacobian of ``start`` (6 × nv).

    A plain difference of the two frame Jacobians (each in its own frame);
    ``start_frame="universe"`` gives the end frame's Jacobian.

    Args:
        model, data: Pinocchio model and data.
        start_frame, end_frame: Frame names.
        q: Configuration (nq,).
        backend: Optional :class:`~figaroh.backends.base.DynamicsBackend`;
            both Jacobians come from ``backend.compute_jacobian(q, frame)``.

    Raises:
        ValueError: unknown frame.
    """
    q = np.asarray(q, dtype=float)
    sid = _check_frame_name(model, start_frame, "start_frame")
    eid = _check_frame_name(model, end_frame, "end_frame")
    if backend is not None:
        Je = _backend_jacobian(backend, q, end_frame)
        Js = np.zeros_like(Je) if sid == 0 else _backend_jacobian(backend, q, start_frame)
        return Je - Js
    pin.computeJointJacobians(model, data, q)
    pin.updateFramePlacements(model, data)
    Je = pin.getFrameJacobian(model, data, eid, pin.LOCAL)
    if sid == 0:
        return np.array(Je, copy=True)
    Js = pin.getFrameJacobian(model, data, sid, pin.LOCAL)
    return Je - Js


def _random_postures(model: Any, calib_config: Mapping[str, Any], n: int) -> np.ndarray:
    rng = np.random.default_rng(calib_config.get("random_seed", 0))
    q0 = np.asarray(calib_config["q0"], dtype=float)
    cidx = np.asarray(calib_config["config_idx"], dtype=int)
    out = np.tile(q0, (n, 1))
    widths = [model.joints[j].nq for j in calib_config["actJoint_idx"]]
    for i in range(n):
        qr = random_joint_configuration(model, rng)
        for c, w in zip(cidx, widths, strict=True):
            out[i, c : c + w] = qr[c : c + w]
    return out


def calculate_identifiable_kinematics_model(
    q: Any, model: Any, data: Any, calib_config: Mapping[str, Any], backend: Any = None
) -> np.ndarray:
    """Stacked kinematic regressor (``full_params``) or Jacobian (``joint_offset``).

    With ``q`` empty or all zero, ``NbSample`` random postures are drawn
    (``random_seed``; ``q0`` is never written). Rows are component-major
    (row ``NbSample·j + i`` is measured component ``j`` of posture ``i``);
    unmeasured components and rows with norm < 1e-6 are removed.

    Args:
        q: (N, nq) postures, or empty for random postures.
        model, data: Pinocchio model and data.
        calib_config: Calibration config.
        backend: Optional :class:`~figaroh.backends.base.DynamicsBackend`
            (see :func:`calculate_kinematics_model`, :func:`get_rel_kinreg`,
            :func:`get_rel_jac`); at ``joint_offset`` level only the
            backend's Jacobians are used.

    Returns:
        The stacked matrix.
    """
    q = np.asarray(q if q is not None else [], dtype=float)
    if q.size == 0 or not np.any(q):
        qs = _random_postures(model, calib_config, int(calib_config["NbSample"]))
    else:
        qs = np.atleast_2d(q)
    mask = _meas_mask(calib_config)
    start = calib_config.get("start_frame", "universe")
    end = calib_config["end_frame"]
    offset_level = calib_config.get("calib_model") == "joint_offset"
    rows = []
    for qi in qs:
        if offset_level:
            rows.append(get_rel_jac(model, data, start, end, qi, backend=backend))
        elif start == "universe":
            _, _, R, _ = calculate_kinematics_model(qi, model, data, calib_config, backend=backend)
            rows.append(R)
        else:
            rows.append(get_rel_kinreg(model, data, start, end, qi, backend=backend))
    mat = np.stack(rows)  # (N,6,c)
    mat = np.where(mask[None, :, None], mat, 0.0)
    stacked = np.swapaxes(mat, 0, 1).reshape(-1, mat.shape[2])
    keep = np.linalg.norm(stacked, axis=1) >= 1e-6
    return stacked[keep]


def calculate_base_kinematics_regressor(
    q: Any,
    model: Any,
    data: Any,
    calib_config: MutableMapping[str, Any],
    tol_qr: float = 1e-8,
    backend: Any = None,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, List[str], List[str]]:
    """Structural selection of the identifiable joint parameters (base representatives).

    Builds the stacked regressor at random postures (or ``q`` for a free
    flyer), drops never-exciting columns (squared norm < 1e-6), runs the
    double QR with ``tol_qr`` and appends the base representatives to
    ``param_name``; records ``base_mapping_matrix`` (M, ``φ_base = M θ_e``),
    ``base_mapping_param_names``, ``base_mapping_row_names`` and
    ``base_mapping_slice``. With several markers the structural regressor
    assumes all six components measured. The base columns are those of
    LAPACK's column-pivoted QR of the stacked regressor (see
    :func:`_structural_base_columns`), sorted ascending.

    Args:
        q: Postures (empty: random postures, see
            :func:`calculate_identifiable_kinematics_model`).
        model, data: Pinocchio model and data.
        calib_config: Calibration config (``param_name`` and the
            ``base_mapping_*`` keys are written).
        tol_qr: QR rank tolerance.
        backend: Optional :class:`~figaroh.backends.base.DynamicsBackend`
            the regressors are computed with.

    Returns:
        ``(Rrand_b, R_b, R_e, base_exprs, names_e)``.

    Raises:
        RankDeficiencyError: no identifiable column.
    """
    level = calib_config.get("calib_model", "full_params")
    if level == "full_params":
        names = list(get_fullparam_offset([str(n) for n in model.names[1:]]))
    else:
        names = list(get_joint_offset(model))
    cfg = dict(calib_config)
    if int(cfg.get("NbMarkers", 1)) > 1:
        cfg["measurability"] = [True] * 6
        cfg["calibration_index"] = 6
    q = np.asarray(q if q is not None else [], dtype=float)
    if cfg.get("free_flyer") and q.size:
        Rrand = calculate_identifiable_kinematics_model(q, model, data, cfg, backend)
    else:
        Rrand = calculate_identifiable_kinematics_model([], model, data, cfg, backend)
    R = calculate_identifiable_kinematics_model(q, model, data, cfg, backend) if q.size else Rrand
    if Rrand.shape[1] != len(names):
        raise ValueError(
            f"structural regressor has {Rrand.shape[1]} columns for {len(names)} candidate names"
        )
    Rrand_e, names_e = eliminate_non_dynaffect(Rrand, names, tol_e=1e-6)
    keep = [names.index(nm) for nm in names_e]
    R_e = R[:, keep]
    idx_base = _structural_base_columns(Rrand_e, tol_qr)
    M, base_exprs = _base_mapping(Rrand_e, names_e, idx_base, tol_qr)
    Rrand_b, R_b = Rrand_e[:, idx_base], R_e[:, idx_base]
    pname = list(calib_config.get("param_name", []))
    start = len(pname)
    rows = [names_e[j] for j in idx_base]
    calib_config["param_name"] = pname + rows
    calib_config["base_mapping_matrix"] = np.asarray(M)
    calib_config["base_mapping_param_names"] = list(names_e)
    calib_config["base_mapping_row_names"] = list(rows)
    calib_config["base_mapping_slice"] = (start, start + len(rows))
    return Rrand_b, R_b, R_e, list(base_exprs), list(names_e)


def _structural_base_columns(W: np.ndarray, tol_qr: float) -> List[int]:
    """Base columns of a structural kinematic regressor, ascending.

    LAPACK's column-pivoted QR (``dgeqp3``: at each step the remaining
    column of largest residual norm, the first in its current position on a
    tie) of the stacked regressor ``W`` itself; the rank is the number of
    leading ``|R_ii| > tol_qr``. This is figaroh 1.0.2's selection for
    geometric calibration, and it is not the rule of
    :mod:`figaroh.tools.qrdecomposition` for dynamic parameters: in a
    kinematic regressor many columns are exactly tied (every translation
    column has norm ``sqrt(rows)``, translations along parallel joint axes
    are identical columns), and ``dgeqp3`` settles those ties by its own
    column swaps and round-off, on the tall matrix.

    Raises:
        RankDeficiencyError: no column above ``tol_qr``.
    """
    _, R, P = linalg.qr(np.asarray(W, dtype=float), mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    below = np.flatnonzero(diag <= tol_qr)
    rank = int(below[0]) if below.size else int(diag.size)
    if rank == 0:
        raise RankDeficiencyError(
            f"structural kinematic regressor {W.shape} has rank 0 at tol_qr={tol_qr:g}: "
            "no joint parameter moves the measured frame (check start/end frames and "
            "active joints)"
        )
    return sorted(int(p) for p in P[:rank])


def _base_mapping(
    W: np.ndarray, names: Sequence[str], base: Sequence[int], tol_qr: float
) -> Tuple[np.ndarray, List[str]]:
    """``M`` (``φ_base = M θ``) and the base expressions for the base columns ``base``.

    QR of ``[W_base | W_rest]``: ``β = R1⁻¹ R2`` regroups every other column
    on the base ones; ``M`` has the identity on the base columns and ``β`` on
    the others; expressions are written by
    :class:`~figaroh.tools.qrdecomposition.QRDecomposer`.
    """
    base = list(base)
    taken = set(base)
    rest = [j for j in range(W.shape[1]) if j not in taken]
    r = len(base)
    _, Rr = np.linalg.qr(np.asarray(W, dtype=float)[:, base + rest])
    R1, R2 = Rr[:r, :r], Rr[:r, r:]
    beta = np.linalg.solve(R1, R2) if R2.size else np.zeros((r, 0))
    M = np.zeros((r, W.shape[1]))
    M[np.arange(r), base] = 1.0
    if rest:
        M[:, rest] = beta
    exprs = QRDecomposer(tolerance=tol_qr)._build_parameter_expressions(
        [names[j] for j in base], [names[j] for j in rest], beta
    )
    return M, list(exprs)


def select_identifiable_parameters(
    jacobian: np.ndarray, names: Sequence[str], always_keep: Sequence[str] = (), tol: float = 1e-4
) -> Tuple[List[str], List[str]]:
    """Greedy selection of linearly independent (identifiable) columns.

    Visit order: ``always_keep`` names (in ``names`` order) first, then the
    rest. Each column is normalised; its residual after projecting out the
    current orthonormal basis (projection applied twice) is kept when its
    norm exceeds ``tol`` (its normalised residual then joins the basis).
    ``always_keep`` names are kept even when dependent (without enlarging the
    basis). A zero column is absorbed.

    Args:
        jacobian: (m, n) Jacobian.
        names: Column names.
        always_keep: Names kept unconditionally (frames).
        tol: Threshold on the residual norm of a unit column.

    Returns:
        ``(kept, absorbed)``, both in ``names`` order.
    """
    J = np.asarray(jacobian, dtype=float)
    names = list(names)
    if J.ndim != 2 or J.shape[1] != len(names):
        raise ValueError(f"J has shape {J.shape} for {len(names)} names")
    keep_set = set(always_keep)
    order = [i for i, n in enumerate(names) if n in keep_set] + [
        i for i, n in enumerate(names) if n not in keep_set
    ]
    basis = np.zeros((J.shape[0], 0))
    kept = set()
    for i in order:
        col = J[:, i]
        nrm = np.linalg.norm(col)
        forced = names[i] in keep_set
        if nrm == 0.0:
            if forced:
                kept.add(i)
            continue
        u = col / nrm
        for _ in range(2):
            u = u - basis @ (basis.T @ u)
        r = np.linalg.norm(u)
        if r > tol:
            basis = np.column_stack([basis, u / r])
            kept.add(i)
        elif forced:
            kept.add(i)
    return [n for i, n in enumerate(names) if i in kept], [
        n for i, n in enumerate(names) if i not in kept
    ]


def drop_calibration_parameters(
    calib_config: MutableMapping[str, Any], dropped: Sequence[str]
) -> List[str]:
    """Remove names from ``param_name`` keeping the base mapping aligned.

    A dropped name inside ``base_mapping_slice`` deletes its row of
    ``base_mapping_matrix`` / ``base_mapping_row_names`` and shrinks the
    slice; a name before the slice shifts it left.

    Returns:
        The new ``param_name``.
    """
    names = list(calib_config.get("param_name", []))
    drop = set(dropped)
    idxs = sorted((i for i, n in enumerate(names) if n in drop), reverse=True)
    sl = calib_config.get("base_mapping_slice")
    M = calib_config.get("base_mapping_matrix")
    rows = list(calib_config.get("base_mapping_row_names", []))
    for i in idxs:
        del names[i]
        if sl is not None:
            a, b = int(sl[0]), int(sl[1])
            if a <= i < b:
                r = i - a
                if M is not None:
                    M = np.delete(np.asarray(M), r, axis=0)
                if r < len(rows):
                    del rows[r]
                sl = (a, b - 1)
            elif i < a:
                sl = (a - 1, b - 1)
    calib_config["param_name"] = names
    if sl is not None:
        calib_config["base_mapping_slice"] = sl
        if M is not None:
            calib_config["base_mapping_matrix"] = M
        calib_config["base_mapping_row_names"] = rows
    return names


# ---------------------------------------------------------------------------
# closed-form frame estimate
# ---------------------------------------------------------------------------


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
    PEE: Sequence[float],
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
    ev = evaluate_poses(model, data, [], q, cfg)
    R_i, p_i = ev.R[:, 0], ev.p[:, 0]  # nominal start→end (no tip)
    tip_pos = [all(f"{t}_{k + 1}" in names for t in EE_TPL[:3]) for k in range(K)]
    tip_rot = K == 1 and any(f"{t}_1" in names for t in EE_TPL[3:])
    full_orient = K == 1 and mask.all()
    t_tip = np.zeros((K, 3))
    R_tip = np.eye(3)
    R_b, t_b = np.eye(3), np.zeros(3)
    P = meas[..., :3]  # (N,K,3)
    for _ in range(max(1, n_iter)):
        if full_orient:
            R_meas = rpy_to_matrix(meas[:, 0, 3:])
            R_b = _chordal_mean(R_meas @ np.swapaxes(R_i @ R_tip, -1, -2))
            if tip_rot:
                R_tip = _chordal_mean(np.swapaxes(R_b @ R_i, -1, -2) @ R_meas)
        else:
            X = (p_i[:, None] + (R_i[:, None] @ t_tip[None, :, :, None])[..., 0]).reshape(-1, 3)
            R_b, _ = _kabsch(X, P.reshape(-1, 3))
        # linear LS for tips (present) and t_b: P - R_b p_i = R_b R_i t_k + t_b
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
        t_b = sol[-3:]
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
