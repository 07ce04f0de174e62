"""After the run — the calibrated model used at new postures.

The calibrated model places measured frame ``k`` (marker ``k``) at posture
``q`` at::

    wMf_k(q, θ) = wMo(θ_base) · oMee(q, θ_joint) · eeMf_k(θ_tip,k)

the forward model the default cost minimises
(:func:`~figaroh.calibration._fkm.marker_poses`, the poses behind
:func:`~figaroh.calibration.calibration_tools.calc_updated_fkm`), with ``θ``
the fitted parameter vector. This step checks the postures a caller gives
and returns the poses as a :class:`CalibratedPoses`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping

import numpy as np
import pinocchio as pin

from figaroh.calibration._fkm import marker_poses, pose_vectors
from figaroh.utils.error_handling import ValidationError

__all__ = ["CalibratedPoses", "calibrated_poses", "checked_postures"]


@dataclass(frozen=True)
class CalibratedPoses:
    """Poses of the measured frames predicted by the calibrated model.

    ``N`` postures, ``K`` measured frames (markers, in configuration order).

    Attributes:
        position: (N, K, 3) frame origins in the measurement (world) frame [m].
        rotation: (N, K, 3, 3) frame orientations (rotation matrices).
        rpy: (N, K, 3) the same orientations as roll-pitch-yaw angles
            ``(φx, φy, φz)`` [rad], ``R = Rz(φz)·Ry(φy)·Rx(φx)``
            (``pinocchio.rpy.matrixToRpy``: the angles of a calibration CSV's
            ``phix``/``phiy``/``phiz`` columns).
        measurements: Flat vector of the measured components
            (``measurability``), in the layout of ``PEE_measured``:
            marker-major, then component ``[x, y, z, φx, φy, φz]``, then
            posture [m, rad].
    """

    position: np.ndarray
    rotation: np.ndarray
    rpy: np.ndarray
    measurements: np.ndarray

    @property
    def n_postures(self) -> int:
        """Number of postures N."""
        return int(self.position.shape[0])

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form (nested lists), e.g. for JSON.

        Returns:
            ``{"position" [m], "rotation", "rpy" [rad], "measurements" [m, rad]}``.
        """
        return {
            "position": self.position.tolist(),
            "rotation": self.rotation.tolist(),
            "rpy": self.rpy.tolist(),
            "measurements": self.measurements.tolist(),
        }


def checked_postures(q: Any, nq: int) -> np.ndarray:
    """``q`` as an (N, nq) float array of configurations.

    Args:
        q: (N, nq) configurations (a 1-D (nq,) array is one posture).
        nq: Configuration size of the model.

    Raises:
        ValidationError: (a ``ValueError``) ``q`` not numeric, not (N, nq), or
            with NaN/inf (the first bad posture and column named).
    """
    try:
        arr = np.asarray(q, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"predict: 'q' must hold numbers (configurations [rad or m]), got "
            f"{type(q).__name__} ({exc})"
        ) from None
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != nq or arr.shape[0] == 0:
        raise ValidationError(
            f"predict: 'q' must have shape (N, {nq}), one full model configuration per row "
            f"(the layout of q_measured), got shape {np.shape(q)}"
        )
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        s, j = (int(k) for k in bad[0])
        raise ValidationError(
            f"predict: 'q' contains NaN/inf (first at posture {s}, configuration index {j})"
        )
    return arr


def calibrated_poses(
    model: Any, data: Any, var: np.ndarray, q: Any, calib_config: Mapping[str, Any]
) -> CalibratedPoses:
    """Poses of every measured frame at every posture of ``q`` under the parameters ``var``.

    Args:
        model: ``pinocchio.Model`` (its joint placements are restored on return).
        data: Matching ``pinocchio.Data``.
        var: Parameter values in ``calib_config["param_name"]`` order [m, rad].
        q: (N, nq) configurations (1-D: one posture).
        calib_config: Calibration config (frames, markers, measurability).

    Returns:
        The poses.

    Raises:
        ValidationError: bad ``q`` (see :func:`checked_postures`).
        ValueError: ``var`` does not match ``param_name``.
    """
    postures = checked_postures(q, int(model.nq))
    R, p = marker_poses(model, data, var, postures, calib_config)
    rpy = np.empty(p.shape)
    for s in range(R.shape[0]):
        for k in range(R.shape[1]):
            rpy[s, k] = pin.rpy.matrixToRpy(R[s, k])
    return CalibratedPoses(
        position=p, rotation=R, rpy=rpy, measurements=pose_vectors(R, p, calib_config)
    )
