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

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
