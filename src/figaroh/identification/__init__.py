"""Dynamic parameter identification.

* :class:`~figaroh.identification.base_identification.BaseIdentification` — the
  workflow (data → regressor → base parameters → validation → report);
* :mod:`~figaroh.identification.identification_tools` and
  :mod:`~figaroh.identification.parameter` — standard parameters, friction,
  actuator inertia, offsets;
* :mod:`~figaroh.identification.config` — ``identif_config`` parsers;
* :mod:`~figaroh.identification.physical_consistency` — feasibility checks and
  LMI projection of link inertials;
* :mod:`~figaroh.identification.reconstruction` — base → full parameters;
* :mod:`~figaroh.identification.cad_constraints` — CAD mass / first-moment /
  symmetry bounds;
* :mod:`~figaroh.identification.physical_fit` and
  :mod:`~figaroh.identification.selection` — direct physically consistent fit
  and the choice of the reported estimate.

The names and submodules declared in :file:`__init__.pyi` are importable from
the package itself; they are imported on first access, so ``import
figaroh.identification`` stays cheap. The stub also declares the private
modules that the package's own modules reach lazily
(``figaroh.identification._verification``); ``__all__`` keeps the public ones.
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, _declared = _lazy.attach_stub(__name__, __file__)
__all__ = [name for name in _declared if not name.startswith("_")]
