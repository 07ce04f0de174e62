"""Measurement descriptions (SE3 poses, wrenches, currents) attached to a model."""

from figaroh.measurements.measurement import Measurement
from figaroh.utils._lazy import lazy_reexports

__all__ = ["Measurement"]

__getattr__, __dir__ = lazy_reexports(__name__, {}, globals())
