"""Lazy names of :mod:`figaroh.measurements` (read by ``lazy_loader.attach_stub``)."""

from . import (
    measurement as measurement,
)
from .measurement import (
    Measurement as Measurement,
)
