"""Geometric (kinematic) calibration.

* :class:`~figaroh.calibration.base_calibration.BaseCalibration` — the workflow;
* :mod:`~figaroh.calibration.calibration_tools` — forward model, log-map
  residuals, analytic Jacobians, structural parameter selection;
* :mod:`~figaroh.calibration.config` — ``calib_config`` parsers;
* :mod:`~figaroh.calibration.data_loader` — legacy CSV loaders;
* :mod:`~figaroh.calibration.estimation` — estimation methods and the lift;
* :mod:`~figaroh.calibration.parameter` — parameter names and layout.

Importing the package does not import the submodules eagerly;
``figaroh.calibration.BaseCalibration`` is resolved on first access.
"""

from __future__ import annotations

from figaroh.utils._lazy import lazy_reexports

__all__ = [
    "base_calibration",
    "calibration_tools",
    "config",
    "data_loader",
    "estimation",
    "parameter",
    # Re-exported for figaroh 1.0.2 compatibility.
    "BaseCalibration",
]


__getattr__, __dir__ = lazy_reexports(
    __name__, {"BaseCalibration": "figaroh.calibration.base_calibration"}, globals()
)
