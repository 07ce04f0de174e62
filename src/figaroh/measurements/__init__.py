"""Measurement descriptions (SE3 poses, wrenches, currents) attached to a model."""

from figaroh.measurements.measurement import Measurement

__all__ = ["Measurement"]
