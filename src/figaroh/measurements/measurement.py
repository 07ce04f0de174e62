"""A single measurement attached to a joint/frame of a Pinocchio model.

Not used by the calibration pipeline (which reads
:class:`figaroh.data.observations.PoseObservations`); kept because figaroh 1.0.2
scripts import it from ``figaroh.measurements.measurement``.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence, Tuple

import numpy as np
import pinocchio as pin

logger = logging.getLogger(__name__)

__all__ = ["Measurement"]

_TYPES = ("SE3", "wrench", "current")


class Measurement:
    """A measured quantity and where it is taken.

    Args:
        name: Measurement (and operational frame) name.
        joint: Name of the joint the measured frame is attached to.
        frame: Name of the frame the measured frame is defined from.
        type: ``"SE3"`` (pose ``[x, y, z, φx, φy, φz]`` [m, rad], RPY
            ``Rz·Ry·Rx``), ``"wrench"`` (``[fx, fy, fz, τx, τy, τz]`` [N, N·m])
            or ``"current"`` (motor currents [A]).
        value: The measured value.

    Attributes:
        SE3_value: ``pinocchio.SE3`` (type ``SE3``).
        wrench_value: ``pinocchio.Force`` (type ``wrench``).
        current_value: The currents (type ``current``).

    Raises:
        TypeError: ``"The type of your measurement is not valid"`` for any
            other type.
        ValueError: a pose or wrench that is not 6 finite numbers.
    """

    def __init__(self, name: str, joint: str, frame: str, type: str, value: Any):  # noqa: A002
        self.name = name
        self.joint = joint
        self.frame = frame
        self.type = type
        self.value = value
        if type == "SE3":
            v = _six(value, "SE3 value [x, y, z, φx, φy, φz]")
            self.SE3_value = pin.SE3(pin.rpy.rpyToMatrix(v[3:6]), v[0:3])
        elif type == "wrench":
            self.wrench_value = pin.Force(_six(value, "wrench [fx, fy, fz, τx, τy, τz]"))
        elif type == "current":
            self.current_value = value
        else:
            raise TypeError("The type of your measurement is not valid")

    def __repr__(self) -> str:
        return (
            f"Measurement(name={self.name!r}, joint={self.joint!r}, frame={self.frame!r}, "
            f"type={self.type!r})"
        )

    def add_SE3_measurement(self, model: Any) -> Tuple[Any, Any]:
        """Add an operational frame ``name`` at ``SE3_value`` to ``model``.

        The frame's parent joint is ``joint`` and its previous frame
        ``frame``; only ``SE3`` measurements add a frame.

        Args:
            model: ``pinocchio.Model`` (modified).

        Returns:
            ``(model, model.createData())``.

        Raises:
            ValueError: unknown joint or frame (named).
        """
        if self.type == "SE3":
            if not model.existJointName(self.joint):
                raise ValueError(f"joint {self.joint!r} is not in model {model.name!r}")
            if not model.existFrame(self.frame):
                raise ValueError(f"frame {self.frame!r} is not in model {model.name!r}")
            frame = pin.Frame(
                self.name,
                model.getJointId(self.joint),
                model.getFrameId(self.frame),
                self.SE3_value,
                pin.FrameType.OP_FRAME,
            )
            model.addFrame(frame, False)
        return model, model.createData()


def _six(value: Sequence[float], what: str) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: expected 6 numbers, got {value!r}") from exc
    if v.size != 6 or not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: expected 6 finite numbers, got {value!r}")
    return v
