"""Optimal experiment design: exciting trajectories and calibration postures.

* :class:`BaseOptimalCalibration` — D-optimal posture selection from a
  candidate pool (:class:`SOCPOptimizer` on picos + cvxopt, :class:`Detmax`);

* :class:`BaseOptimalTrajectory` — waypoint-spline trajectories optimised by IPOPT
  (condition number or D-optimality of the base regressor) under joint
  position / velocity / effort limits and self-collision avoidance;
* :class:`BaseTrajectoryIPOPTProblem` — the IPOPT problem of one segment;
* :class:`BaseParameterComputer` — the fixed base-parameter column set;
* :class:`TrajectoryConstraintManager` — constraint blocks and collision checks;
* :func:`load_param` — ``(trajectory_config, identif_config)`` from a configuration.
"""

from figaroh.utils._lazy import lazy_reexports

from .base_optimal_calibration import (
    BaseOptimalCalibration,
    Detmax,
    InfeasibleDesignError,
    SOCPOptimizer,
    detroot,
    log_det_information,
    rearrange_rb,
    sub_info_matrix,
)
from .base_optimal_trajectory import (
    BaseOptimalTrajectory,
    BaseParameterComputer,
    BaseTrajectoryIPOPTProblem,
)
from .config import COLLISION_DEFAULTS, load_param
from .contraints import TrajectoryConstraintManager, add_non_adjacent_pairs

__all__ = [
    "BaseOptimalTrajectory",
    "BaseTrajectoryIPOPTProblem",
    "BaseParameterComputer",
    "TrajectoryConstraintManager",
    "add_non_adjacent_pairs",
    "load_param",
    "COLLISION_DEFAULTS",
    "BaseOptimalCalibration",
    "SOCPOptimizer",
    "Detmax",
    "InfeasibleDesignError",
    "rearrange_rb",
    "sub_info_matrix",
    "detroot",
    "log_det_information",
]

# Other submodules (``figaroh.optimal.base_parameter``…) are imported when first reached.
__getattr__, __dir__ = lazy_reexports(__name__, {}, globals())
