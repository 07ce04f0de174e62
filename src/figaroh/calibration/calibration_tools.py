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

The predicted measurements (:func:`calc_updated_fkm`, :func:`marker_poses`)
are computed with Pinocchio's SE(3) products posture by posture, in the order
figaroh 1.0.2 uses (a finite-difference fit amplifies round-off, so the order
matters for reproducing 1.0.2's results). The log-map residuals of
two flat measurement vectors (:func:`logmap_residuals`) are Pinocchio's
``log6`` of ``M_meas⁻¹ · M_est`` per point, as in 1.0.2.

:func:`measurement_jacobian` is, as in 1.0.2, central differences of
:func:`calc_updated_fkm` (step 1e-6) by default; the identifiability checks
use it. The analytic Jacobians (:func:`evaluate_poses`,
:func:`pose_residuals`, ``measurement_jacobian(method="analytic")``) serve
the optional analytic least-squares Jacobian: a parameter
perturbation is mapped to a body twist of each measured frame with Pinocchio
placements and SE(3) adjoints (the same construction as Pinocchio's
kinematic regressor), then through the exact derivative of the residual
(``Jlog6`` for log-map residuals, the RPY Jacobian for the
``[x, y, z, φ]`` measurement vector); the elastic cross-term
``k·∂g/∂θ_geom`` (gravity-torque change caused by a geometric error) comes
from the subtree gravity wrenches. There the samples are processed in
vectorised numpy, which agrees with the Pinocchio products to round-off.

This module is the public (figaroh 1.0.2) path of these functions; they are
implemented one concept per private module: ``_se3`` (SO(3)/SE(3) helpers),
``_measurements`` (flat layout, weights), ``_fkm`` (predicted measurements
as 1.0.2 computes them), ``_forward`` (vectorised forward model and its
Jacobian), ``_logmap`` (residuals), ``_regressors`` (kinematic regressors,
structural selection) and ``_frames`` (closed-form frames).
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Tuple

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from figaroh.calibration._fkm import calc_updated_fkm, marker_poses, measurement_jacobian
from figaroh.calibration._forward import (
    PoseEvaluation,
    _frame_ids,
    _layout,
    _pinocchio_pair,
    _values,
    evaluate_poses,
)
from figaroh.calibration._frames import estimate_frames_closed_form, frame_names
from figaroh.calibration._logmap import logmap_residuals, pose_residuals
from figaroh.calibration._measurements import (
    _from_flat,
    _meas_mask,
    _pose_vector,
    _to_flat,
    measured_values,
    measurement_weights,
)
from figaroh.calibration._regressors import (
    calculate_base_kinematics_regressor,
    calculate_identifiable_kinematics_model,
    calculate_kinematics_model,
    drop_calibration_parameters,
    get_rel_jac,
    get_rel_kinreg,
    random_joint_configuration,
    select_identifiable_parameters,
)
from figaroh.calibration._se3 import (
    adjoint,
    exp3,
    jexp3_right,
    matrix_to_rpy,
    rpy_jacobian_local,
    rpy_to_matrix,
    skew,
)
from figaroh.calibration.config import get_sup_joints, unified_to_legacy_config
from figaroh.calibration.data_loader import get_idxq_from_jname, load_data, read_config_data
from figaroh.calibration.parameter import (
    BASE_TPL,
    EE_TPL,
    ELAS_TPL,
    FULL_PARAMTPL,
    JOINT_OFFSETTPL,
    add_base_name,
    add_eemarker_frame,
    add_pee_name,
    get_fullparam_offset,
    get_joint_offset,
)
from figaroh.tools.qrdecomposition import TOL_QR, QRDecomposer, build_baseRegressor
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
    "marker_poses",
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
    "ELAS_TPL",
    "FULL_PARAMTPL",
    "JOINT_OFFSETTPL",
    "QRDecomposer",
    "TOL_QR",
    "add_base_name",
    "add_eemarker_frame",
    "add_pee_name",
    "build_baseRegressor",
    "eliminate_non_dynaffect",
    "get_fullparam_offset",
    "get_idxq_from_jname",
    "get_joint_offset",
    "get_sup_joints",
    "load_data",
    "read_config_data",
    "unified_to_legacy_config",
]

# Private helpers other calibration modules and tests use through this module.
_PRIVATE_REEXPORTS = (
    _frame_ids,
    _from_flat,
    _layout,
    _meas_mask,
    _pinocchio_pair,
    _pose_vector,
    _to_flat,
    _values,
    BASE_TPL,
    EE_TPL,
)


def cartesian_to_SE3(X: ArrayLike) -> pin.SE3:
    """``SE3(rpy(X[3:6]), X[0:3])`` of a 6-vector ``[x, y, z, φx, φy, φz]`` [m, rad]."""
    X = np.asarray(X, dtype=float).ravel()
    if X.size != 6:
        raise ValueError(f"cartesian_to_SE3: expected 6 values [x, y, z, φx, φy, φz], got {X.size}")
    return pin.SE3(pin.rpy.rpyToMatrix(X[3:6]), X[0:3])


def xyzquat_to_SE3(xyzquat: ArrayLike) -> pin.SE3:
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


def update_joint_placement(model: Any, joint_idx: int, xyz_rpy: ArrayLike) -> Any:
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


def apply_joint_offset(model: Any, joint_idx: int, offset: ArrayLike) -> Any:
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
