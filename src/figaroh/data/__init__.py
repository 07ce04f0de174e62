"""Data contract: datasets that carry their conventions.

:class:`TrajectoryData` (identification input) and :class:`PoseObservations`
(calibration input) keep joint order, clock, signal origin, effort kind and
unit, valid-sample mask and source files together with the arrays, and convert
to and from the legacy dict/array representations.
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
