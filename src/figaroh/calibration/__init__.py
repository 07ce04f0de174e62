"""Geometric (kinematic) calibration.

* :class:`~figaroh.calibration.base_calibration.BaseCalibration` — the workflow;
* :mod:`~figaroh.calibration.calibration_tools` — forward model, log-map
  residuals, analytic Jacobians, structural parameter selection;
* :mod:`~figaroh.calibration.config` — ``calib_config`` parsers;
* :mod:`~figaroh.calibration.data_loader` — legacy CSV loaders;
* :mod:`~figaroh.calibration.estimation` — estimation methods and the lift;
* :mod:`~figaroh.calibration.parameter` — parameter names and layout.

Importing the package does not import the submodules eagerly;
``figaroh.calibration.BaseCalibration`` (declared in :file:`__init__.pyi`) is
imported on first access.
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
