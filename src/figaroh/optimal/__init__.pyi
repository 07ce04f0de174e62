"""Lazy names of :mod:`figaroh.optimal` (read by ``lazy_loader.attach_stub``)."""

from . import (
    base_optimal_calibration as base_optimal_calibration,
)
from . import (
    base_optimal_trajectory as base_optimal_trajectory,
)
from . import (
    base_parameter as base_parameter,
)
from . import (
    config as config,
)
from . import (
    constraints as constraints,
)
from . import (
    contraints as contraints,
)
from .base_optimal_calibration import (
    BaseOptimalCalibration as BaseOptimalCalibration,
)
from .base_optimal_calibration import (
    Detmax as Detmax,
)
from .base_optimal_calibration import (
    InfeasibleDesignError as InfeasibleDesignError,
)
from .base_optimal_calibration import (
    SOCPOptimizer as SOCPOptimizer,
)
from .base_optimal_calibration import (
    detroot as detroot,
)
from .base_optimal_calibration import (
    log_det_information as log_det_information,
)
from .base_optimal_calibration import (
    rearrange_rb as rearrange_rb,
)
from .base_optimal_calibration import (
    sub_info_matrix as sub_info_matrix,
)
from .base_optimal_trajectory import (
    BaseOptimalTrajectory as BaseOptimalTrajectory,
)
from .base_optimal_trajectory import (
    BaseParameterComputer as BaseParameterComputer,
)
from .base_optimal_trajectory import (
    BaseTrajectoryIPOPTProblem as BaseTrajectoryIPOPTProblem,
)
from .config import (
    COLLISION_DEFAULTS as COLLISION_DEFAULTS,
)
from .config import (
    load_param as load_param,
)
from .contraints import (
    TrajectoryConstraintManager as TrajectoryConstraintManager,
)
from .contraints import (
    add_non_adjacent_pairs as add_non_adjacent_pairs,
)
