"""Lazy names of :mod:`figaroh.integration` (read by ``lazy_loader.attach_stub``)."""

from . import (
    api as api,
)
from .api import (
    IdentificationResult as IdentificationResult,
)
from .api import (
    RobotIdentificationSystem as RobotIdentificationSystem,
)
