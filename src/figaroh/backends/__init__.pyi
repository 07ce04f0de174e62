"""Lazy names of :mod:`figaroh.backends` (read by ``lazy_loader.attach_stub``)."""

from . import (
    base as base,
)
from . import (
    mujoco as mujoco,
)
from . import (
    pinocchio as pinocchio,
)
from . import (
    registry as registry,
)
from .base import (
    DynamicsBackend as DynamicsBackend,
)
from .mujoco import (
    MuJoCoBackend as MuJoCoBackend,
)
from .pinocchio import (
    PINOCCHIO_AVAILABLE as PINOCCHIO_AVAILABLE,
)
from .pinocchio import (
    PinocchioBackend as PinocchioBackend,
)
from .registry import (
    MUJOCO_AVAILABLE as MUJOCO_AVAILABLE,
)
from .registry import (
    get_backend as get_backend,
)
from .registry import (
    get_backend_info as get_backend_info,
)
from .registry import (
    list_backends as list_backends,
)
