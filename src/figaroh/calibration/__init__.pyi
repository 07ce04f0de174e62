"""Lazy names of :mod:`figaroh.calibration` (read by ``lazy_loader.attach_stub``)."""

from . import (
    base_calibration as base_calibration,
)
from . import (
    calibration_tools as calibration_tools,
)
from . import (
    config as config,
)
from . import (
    data_loader as data_loader,
)
from . import (
    estimation as estimation,
)
from . import (
    parameter as parameter,
)
from . import (
    settings as settings,
)
from .base_calibration import (
    BaseCalibration as BaseCalibration,
)
