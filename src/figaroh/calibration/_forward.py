"""Forward model of a geometric calibration with its analytic parameter Jacobian.

For posture ``s`` and marker ``k``::

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

A parameter perturbation is mapped to a body twist of each measured frame
with Pinocchio placements and SE(3) adjoints (the construction of
Pinocchio's kinematic regressor); the elastic cross-term
``k·∂g/∂θ_geom`` comes from the gravity wrench of each rigid subtree
(:func:`_elastic_cross_terms`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from figaroh.calibration._measurements import _meas_mask, _to_flat
from figaroh.calibration._se3 import (
    _compose,
    _inv,
    _twist_map,
    adjoint,
    exp3,
    jexp3_right,
    matrix_to_rpy,
    rpy_jacobian_local,
    rpy_to_matrix,
)
from figaroh.calibration.parameter import parse_param_name

__all__ = ["PoseEvaluation", "evaluate_poses", "measurement_jacobian_analytic"]


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


def _place_joint_param(
    model: Any, by_joint: Dict[int, _JointParams], jid: int, pp: Any, i: int, name: str
) -> str | None:
    """Record vector index ``i`` of a joint parameter; an error message or None."""
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
        jp.elastic, jp.elastic_slot = i, pp.slot
        if model.joints[jid].nv != 1:
            return f"elastic parameter {name!r}: joint {pp.joint!r} is not 1-DoF"
    return None


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
            err = _place_joint_param(model, by_joint, joints_map[pp.joint], pp, i, name)
            if err:
                errors.append(err)
    if errors:
        raise ValueError("; ".join(errors))
    return _Layout(names, K, base, tip, [by_joint[j] for j in sorted(by_joint)])


def _checked_inputs(
    model: Any,
    var: Any,
    q: Any,
    calib_config: Mapping[str, Any],
    layout: _Layout | None,
) -> Tuple[_Layout, np.ndarray, np.ndarray]:
    """``(layout, var, q)`` of a forward-model call: ``var`` flat, ``q`` (N, nq).

    Raises:
        ValueError: ``len(var)`` differs from ``param_name``, unknown names, or
            ``q`` with the wrong number of columns.
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
    return lay, var, q


def _values(var: np.ndarray, idx: np.ndarray) -> np.ndarray:
    out = np.zeros(idx.shape)
    sel = idx >= 0
    out[sel] = var[idx[sel]]
    return out


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


@dataclass
class _JointPieces:
    """Per-joint geometric pieces of the parameter vector (constant over samples).

    ``Xf``: placement-error transform ``SE3(exp3(v[3:6]), v[0:3])``; ``Xo``:
    joint-offset transform ``SE3(rpy(o[3:6]), o[0:3])``; ``Lf``/``Lo``: their
    body-twist maps per unit parameter; ``el_value``: elastic gains.
    """

    Xf_R: np.ndarray
    Xf_p: np.ndarray
    Xo_R: np.ndarray
    Xo_p: np.ndarray
    Lf: np.ndarray
    Lo: np.ndarray
    el_value: np.ndarray


def _joint_pieces(var: np.ndarray, jps: List[_JointParams]) -> _JointPieces:
    nJ = len(jps)
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
    return _JointPieces(Xf_R, Xf_p, Xo_R, Xo_p, Lf, Lo, el_value)


@dataclass
class _SampleKinematics:
    """Placements of the corrected model at every posture (homogeneous 4×4).

    ``H_s``/``H_e``: start and end frames; ``H_P``: ``oMi[parent]·M_j`` of each
    parametrised joint (Jacobian only); ``A_cam``: start → camera (eye-hand);
    ``el_off``/``g_el``: elastic offsets and the gravity torques they scale;
    ``H_all``/``H_geo_P``/``S_loc``: geometric-model quantities of the elastic
    cross-term (Jacobian with elastic parameters only).
    """

    H_s: np.ndarray
    H_e: np.ndarray
    H_P: np.ndarray | None = None
    A_cam: np.ndarray | None = None
    el_off: np.ndarray | None = None
    g_el: np.ndarray | None = None
    H_all: np.ndarray | None = None
    H_geo_P: np.ndarray | None = None
    S_loc: np.ndarray | None = None


def _elastic_sample(model, data, qs, s, jps, geo, pieces, kin, el_joints, cross) -> None:
    """Gravity torques at posture ``s`` and the elastic joint placements they give."""
    g = pin.computeGeneralizedGravity(model, data, qs)
    if cross:
        pin.forwardKinematics(model, data, qs)
        for k in range(1, model.njoints):
            kin.H_all[s, k] = data.oMi[k].homogeneous
        for a, jp in enumerate(jps):
            kin.H_geo_P[s, a] = (data.oMi[jp.parent] * geo[a]).homogeneous
            kin.S_loc[s, a] = np.asarray(data.joints[jp.jid].S).reshape(6, -1)[:, 0]
    for a in el_joints:
        jp = jps[a]
        e = np.zeros(6)
        kin.g_el[s, a] = g[jp.idx_v]
        e[jp.elastic_slot] = pieces.el_value[a] * kin.g_el[s, a]
        kin.el_off[s, a] = e[jp.elastic_slot]
        model.jointPlacements[jp.jid] = geo[a] * pin.SE3(pin.rpy.rpyToMatrix(e[3:6]), e[0:3])


def _sample_kinematics(
    model, data, q, jps, pieces: _JointPieces, frame_ids, jacobian: bool
) -> _SampleKinematics:
    """Forward kinematics of the corrected model at every posture.

    The model's joint placements are modified during the call and restored
    before returning (also on error).
    """
    sid, eid, start_fid, cam_fid = frame_ids
    N, nJ = q.shape[0], len(jps)
    eye_hand = cam_fid is not None
    el_joints = [a for a, jp in enumerate(jps) if jp.elastic >= 0]
    cross = bool(el_joints) and jacobian
    H_P = np.zeros((N, nJ, 4, 4)) if jacobian else None
    A_cam = np.zeros((N, 4, 4)) if eye_hand else None
    kin = _SampleKinematics(
        H_s=np.zeros((N, 4, 4)),
        H_e=np.zeros((N, 4, 4)),
        H_P=H_P,
        A_cam=A_cam,
        el_off=np.zeros((N, nJ)) if el_joints else None,
        g_el=np.zeros((N, nJ)) if el_joints else None,
    )
    if cross:
        kin.H_all = np.zeros((N, model.njoints, 4, 4))  # oMi of every joint (geometric model)
        kin.H_all[:, 0] = np.eye(4)
        kin.H_geo_P = np.zeros((N, nJ, 4, 4))  # oMi[parent]·M_geo of each parametrised joint
        kin.S_loc = np.zeros((N, nJ, 6))
    saved = [model.jointPlacements[jp.jid].copy() for jp in jps]
    geo: List[pin.SE3] = []
    try:
        for a, jp in enumerate(jps):
            M = (
                saved[a]
                * pin.SE3(pieces.Xf_R[a], pieces.Xf_p[a])
                * pin.SE3(pieces.Xo_R[a], pieces.Xo_p[a])
            )
            model.jointPlacements[jp.jid] = M
            geo.append(M)
        for s in range(N):
            qs = q[s]
            if el_joints:
                _elastic_sample(model, data, qs, s, jps, geo, pieces, kin, el_joints, cross)
            pin.forwardKinematics(model, data, qs)
            kin.H_s[s] = pin.updateFramePlacement(model, data, sid).homogeneous
            kin.H_e[s] = pin.updateFramePlacement(model, data, eid).homogeneous
            if A_cam is not None:  # eye-hand
                oMst = pin.updateFramePlacement(model, data, start_fid)
                oMc = pin.updateFramePlacement(model, data, cam_fid)
                A_cam[s] = (oMst.inverse() * oMc).homogeneous
            if H_P is not None:  # jacobian
                for a, jp in enumerate(jps):
                    H_P[s, a] = (data.oMi[jp.parent] * model.jointPlacements[jp.jid]).homogeneous
            for a in el_joints:
                model.jointPlacements[jps[a].jid] = geo[a]
    finally:
        for a, jp in enumerate(jps):
            model.jointPlacements[jp.jid] = saved[a]
    return kin


@dataclass
class _Chain:
    """Frames of the measurement chain at every posture.

    ``R_ee``/``p_ee``: start → end; ``b``/``R_b``: base parameters and
    rotation; ``tips``/``R_t``: (K, 6) tip parameters and rotations;
    ``R_f``/``p_f``: the measured frames ``wMf_k``.
    """

    R_ee: np.ndarray
    p_ee: np.ndarray
    b: np.ndarray
    R_b: np.ndarray
    tips: np.ndarray
    R_t: np.ndarray
    R_f: np.ndarray
    p_f: np.ndarray


def _measured_frames(lay: _Layout, var: np.ndarray, kin: _SampleKinematics) -> _Chain:
    """``wMf_k = wMo · oMee · eeMf_k`` at every posture."""
    N, K = kin.H_s.shape[0], lay.n_markers
    # start → end transform
    Rs_t, ps_i = _inv(kin.H_s[:, :3, :3], kin.H_s[:, :3, 3])
    R_ee, p_ee = _compose(Rs_t, ps_i, kin.H_e[:, :3, :3], kin.H_e[:, :3, 3])  # (N,3,3), (N,3)
    # base frame
    b = _values(var, lay.base)
    R_b = rpy_to_matrix(b[3:6])
    if kin.A_cam is not None:
        RB_t, pB_i = _inv(R_b, b[0:3])
        R_wo, p_wo = _compose(kin.A_cam[:, :3, :3], kin.A_cam[:, :3, 3], RB_t, pB_i)
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
    return _Chain(R_ee, p_ee, b, R_b, tips, R_t, R_f, p_f)


def _elastic_unit_twist(jp, a, kin, Ad_f_ee, Ad_eP, coef) -> Tuple[np.ndarray, np.ndarray]:
    """(N,K,6) twist at each f_k per unit elastic gain, and ``Ad(elastic offset)⁻¹``."""
    N = kin.H_e.shape[0]
    e6 = np.zeros((N, 6))
    e6[:, jp.elastic_slot] = kin.el_off[:, a]
    Rel = rpy_to_matrix(e6[:, 3:6])
    Rel_t, pel_i = _inv(Rel, e6[:, 0:3])
    Ad_el_inv = adjoint(Rel_t, pel_i)  # (N,6,6)
    Lel = _twist_map(Rel, rpy_jacobian_local(e6[:, 3:6]))[:, :, jp.elastic_slot]
    unit = coef * np.einsum("kij,nj->nki", Ad_f_ee, (Ad_eP[:, a] @ Lel[..., None])[..., 0])
    return unit, Ad_el_inv


def _subtree_gravity(model, jps, H_all: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Subtree masses [kg] and first moments [kg·m] (world frame) of each parametrised joint."""
    N, nJ = H_all.shape[0], len(jps)
    masses = np.array([model.inertias[k].mass for k in range(model.njoints)])
    levers = np.array([model.inertias[k].lever for k in range(model.njoints)])
    com_w = (H_all[..., :3, :3] @ levers[None, :, :, None])[..., 0] + H_all[..., :3, 3]
    B = np.array(
        [
            [float(jp.jid in set(int(x) for x in model.supports[k])) for k in range(model.njoints)]
            for jp in jps
        ]
    )
    sub_mass = np.broadcast_to(B @ masses, (N, nJ))
    sub_H = np.einsum("ak,nkc->nac", B * masses, com_w)
    return sub_mass, sub_H


def _joint_twists(
    T: np.ndarray,
    model: Any,
    jps: List[_JointParams],
    pieces: _JointPieces,
    kin: _SampleKinematics,
    Ad_f_ee: np.ndarray,
    coefs: List[int],
) -> None:
    """Add the joint-parameter columns of ``T`` (twist at the end frame, then at each f_k)."""
    if kin.H_P is None:
        raise ValueError("_joint_twists: the kinematics were computed without jacobian=True")
    N = kin.H_e.shape[0]
    He_R_t, He_p_i = _inv(kin.H_e[:, :3, :3], kin.H_e[:, :3, 3])
    R_eP, p_eP = _compose(
        He_R_t[:, None], He_p_i[:, None], kin.H_P[:, :, :3, :3], kin.H_P[:, :, :3, 3]
    )  # (N,nJ,...)
    Ad_eP = adjoint(R_eP, p_eP)  # (N,nJ,6,6)
    el_unit: Dict[int, np.ndarray] = {}  # joint → (N,K,6) twist at f_k per unit offset
    geo_cols: List[Tuple[int, np.ndarray, np.ndarray]] = []  # (joint, var idx, twist at P_geo)
    for a, jp in enumerate(jps):
        if jp.elastic >= 0:
            if kin.g_el is None:
                raise ValueError("_joint_twists: elastic joint without gravity torques (g_el)")
            el_unit[a], Ad_el_inv = _elastic_unit_twist(jp, a, kin, Ad_f_ee, Ad_eP, coefs[a])
            T[:, :, :, jp.elastic] += el_unit[a] * kin.g_el[:, a, None, None]
        else:
            Ad_el_inv = np.broadcast_to(np.eye(6), (N, 6, 6))
        groups = []
        if np.any(jp.full >= 0):
            Ro_t, po_i = _inv(pieces.Xo_R[a], pieces.Xo_p[a])
            groups.append((jp.full, adjoint(Ro_t, po_i) @ pieces.Lf[a]))
        if np.any(jp.offset >= 0):
            groups.append((jp.offset, pieces.Lo[a]))
        for idx, G_geo in groups:
            present = np.flatnonzero(idx >= 0)
            geo_cols.append((a, idx[present], G_geo[:, present]))
            if coefs[a] == 0:
                continue
            Tee = coefs[a] * (Ad_eP[:, a] @ (Ad_el_inv @ G_geo[:, present]))  # (N,6,c)
            T[:, :, :, idx[present]] += np.einsum("kij,njl->nkil", Ad_f_ee, Tee)
    if kin.H_all is not None and el_unit:
        sub_mass, sub_H = _subtree_gravity(model, jps, kin.H_all)
        H_geo_i = kin.H_all[:, [jp.jid for jp in jps]]
        _elastic_cross_terms(
            model,
            jps,
            el_unit,
            pieces.el_value,
            geo_cols,
            T,
            H_geo_i,
            kin.H_geo_P,
            kin.S_loc,
            sub_mass,
            sub_H,
        )


def _frame_twists(T: np.ndarray, lay: _Layout, ch: _Chain, eye_hand: bool) -> None:
    """Add the base- and tip-frame columns of ``T``."""
    if lay.has_base:
        present = np.flatnonzero(lay.base >= 0)
        Lb = _twist_map(ch.R_b, rpy_jacobian_local(ch.b[3:6]))
        R_of, p_of = _compose(
            ch.R_ee[:, None], ch.p_ee[:, None], ch.R_t[None], ch.tips[None, :, 0:3]
        )
        Rfo, pfo = _inv(R_of, p_of)
        Ad_fo = adjoint(Rfo, pfo)  # (N,K,6,6)
        if eye_hand:
            G = -(adjoint(ch.R_b, ch.b[0:3]) @ Lb)
        else:
            G = Lb
        T[:, :, :, lay.base[present]] += (Ad_fo @ G)[..., present]
    for k in range(lay.n_markers):
        present = np.flatnonzero(lay.tip[k] >= 0)
        if present.size:
            Lt = _twist_map(ch.R_t[k], rpy_jacobian_local(ch.tips[k, 3:6]))
            T[:, k][:, :, lay.tip[k, present]] += Lt[None, :, present]


def evaluate_poses(
    model: Any,
    data: Any,
    var: ArrayLike,
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
    lay, var, q = _checked_inputs(model, var, q, calib_config, layout)
    N, K, n = q.shape[0], lay.n_markers, var.size
    frame_ids = _frame_ids(model, calib_config)
    sid, eid, _, cam_fid = frame_ids
    jps = lay.joints
    pieces = _joint_pieces(var, jps)
    kin = _sample_kinematics(model, data, q, jps, pieces, frame_ids, jacobian)
    ch = _measured_frames(lay, var, kin)
    if not jacobian:
        return PoseEvaluation(ch.R_f, ch.p_f)
    T = np.zeros((N, K, 6, n))
    # adjoint from the end (ee) frame to each measured frame f_k: Ad(eeMf_k⁻¹)
    Rt_t, pt_i = _inv(ch.R_t, ch.tips[:, 0:3])
    Ad_f_ee = adjoint(Rt_t, pt_i)  # (K,6,6)
    if jps:
        supports_e = set(int(j) for j in model.supports[model.frames[eid].parentJoint])
        supports_s = set(int(j) for j in model.supports[model.frames[sid].parentJoint])
        coefs = [(jp.jid in supports_e) - (jp.jid in supports_s) for jp in jps]
        _joint_twists(T, model, jps, pieces, kin, Ad_f_ee, coefs)
    _frame_twists(T, lay, ch, cam_fid is not None)
    return PoseEvaluation(ch.R_f, ch.p_f, T)


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
    obj: Any = None
    if getter is not None:
        try:
            obj = getter()
        except NotImplementedError:
            obj = None
    if not hasattr(obj, "jointPlacements"):
        raise NotImplementedError(
            f"{what} needs a Pinocchio model (joint placements), but backend "
            f"{type(backend).__name__}.get_model_object() returned {type(obj).__name__}; "
            "pass backend=None to compute on the model given, or a PinocchioBackend"
        )
    bdata = data if obj is model else getattr(backend, "data", None)
    if not hasattr(bdata, "oMf"):
        bdata = obj.createData()
    return obj, bdata


def measurement_jacobian_analytic(
    model: Any, data: Any, var: ArrayLike, q: np.ndarray, calib_config: Mapping[str, Any]
) -> np.ndarray:
    """Analytic Jacobian of the predicted measurements (``NbSample = len(q)``).

    Position rows ``dp = R·v``, angle rows ``dφ = J_rpy⁻¹·ω`` with ``(v, ω)``
    the body twist of each measured frame per unit parameter.

    Returns:
        (K·n_meas·N, n) matrix, rows in the flat measurement layout.
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    cfg = dict(calib_config)
    cfg["NbSample"] = q.shape[0]
    ev = evaluate_poses(model, data, var, q, cfg, jacobian=True)
    if ev.T is None:
        raise ValueError("measurement_jacobian_analytic: evaluate_poses returned no Jacobian")
    mask = _meas_mask(cfg)
    rpy = matrix_to_rpy(ev.R)
    dpos = ev.R @ ev.T[..., :3, :]  # (N,K,3,n)
    drpy = np.linalg.solve(rpy_jacobian_local(rpy), ev.T[..., 3:, :])
    full = np.concatenate([dpos, drpy], axis=-2)  # (N,K,6,n)
    return _to_flat(full[:, :, mask, :])
