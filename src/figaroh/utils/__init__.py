"""Shared utilities: configuration parsing and migration, errors, results, file I/O, splines.

Submodules:

* :mod:`~figaroh.utils.unified_config` — unified YAML configuration (inheritance,
  variables, variants) and its task views;
* :mod:`~figaroh.utils.config_parser` — figaroh 1.0.2's module: the above plus
  ``get_param_from_yaml``, which also routes legacy task files;
* :mod:`~figaroh.utils.config_migration` — legacy flat config → unified format;
* :mod:`~figaroh.utils.error_handling` — exception classes, validators and
  error-wrapping decorators;
* :mod:`~figaroh.utils.results_manager` — plotting and saving of task results;
* :mod:`~figaroh.utils.fileio` — atomic file writes;
* :mod:`~figaroh.utils.cubic_spline` — waypoint-spline trajectories (1.0.2's ndcurves pieces).

The names declared in :file:`__init__.pyi` are importable from the package
itself. They are imported on first access, so ``import figaroh.utils`` stays
cheap (no numpy, no YAML).
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
