"""Kinematic regressors, structural base columns and identifiable-parameter selection.

The structural selection of a geometric calibration stacks the kinematic
regressor (``full_params``) or the frame Jacobian (``joint_offset``) of the
measured frame at random postures, removes never-exciting columns and keeps
the base columns of LAPACK's column-pivoted QR; the dependent columns are
regrouped on them (``φ_base = M θ``).
"""

from __future__ import annotations

from typing import Any, List, Mapping, MutableMapping, Sequence, Tuple

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from figaroh.calibration._forward import _pinocchio_pair
from figaroh.calibration._measurements import _meas_mask
from figaroh.calibration.parameter import get_fullparam_offset, get_joint_offset
from figaroh.tools.exceptions import RankDeficiencyError
from figaroh.tools.qrdecomposition import QRDecomposer
from figaroh.tools.regressor import eliminate_non_dynaffect

__all__ = [
    "calculate_base_kinematics_regressor",
    "calculate_identifiable_kinematics_model",
    "calculate_kinematics_model",
    "drop_calibration_parameters",
    "get_rel_jac",
    "get_rel_kinreg",
    "random_joint_configuration",
    "select_identifiable_parameters",
]


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
    q_i: ArrayLike,
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
    q: ArrayLike,
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
    q: ArrayLike,
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

    LAPACK's column-pivoted QR (``scipy.linalg.qr(W, pivoting=True)``,
    ``dgeqp3``: at each step the remaining
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
    from scipy import linalg  # heavy import (~0.25 s), only where used

    _, R, P = linalg.qr(np.asarray(W, dtype=float), mode="raw", pivoting=True)
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
