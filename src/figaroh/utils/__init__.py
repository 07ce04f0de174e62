"""Shared utilities: configuration parsing and migration, errors, results, file I/O, splines.

Submodules:

* :mod:`~figaroh.utils.config_parser` — unified YAML configuration (inheritance,
  variables, variants) and its task views;
* :mod:`~figaroh.utils.config_migration` — legacy flat config → unified format;
* :mod:`~figaroh.utils.error_handling` — exception classes, validators and
  error-wrapping decorators;
* :mod:`~figaroh.utils.results_manager` — plotting and saving of task results;
* :mod:`~figaroh.utils.fileio` — atomic file writes;
* :mod:`~figaroh.utils.cubic_spline` — waypoint-spline trajectories (1.0.2's ndcurves pieces).

The names below are importable from the package itself. They are resolved on
first access, so ``import figaroh.utils`` stays cheap (no numpy, no YAML).
"""

from __future__ import annotations

from figaroh.utils._lazy import lazy_reexports

__all__ = [
    # Re-exported for figaroh 1.0.2 compatibility.
    "CalibrationError",
    "FigarohExampleError",
    "IdentificationError",
    "ResultsManager",
    "handle_calibration_errors",
    "handle_identification_errors",
    "setup_example_logging",
    "validate_input_data",
]

_LAZY = {
    "CalibrationError": "figaroh.utils.error_handling",
    "FigarohExampleError": "figaroh.utils.error_handling",
    "IdentificationError": "figaroh.utils.error_handling",
    "handle_calibration_errors": "figaroh.utils.error_handling",
    "handle_identification_errors": "figaroh.utils.error_handling",
    "setup_example_logging": "figaroh.utils.error_handling",
    "validate_input_data": "figaroh.utils.error_handling",
    "ResultsManager": "figaroh.utils.results_manager",
}


__getattr__, __dir__ = lazy_reexports(__name__, _LAZY, globals())
