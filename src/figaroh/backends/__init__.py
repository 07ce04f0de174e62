"""Dynamics backends: the engines figaroh's numerical tools compute through.

Two backends ship: ``"pinocchio"`` (core dependency) and ``"mujoco"`` (optional,
``pip install "figaroh[mujoco]"``). The names ``"genesis"`` and ``"isaacsim"``
are known but not shipped, so :func:`list_backends` reports them unavailable.

Importing this package imports neither MuJoCo nor the MuJoCo backend module:
the names of :file:`__init__.pyi` (:func:`~figaroh.backends.registry.get_backend`,
``figaroh.backends.MuJoCoBackend``…) are imported on first access, and the class
imports ``mujoco`` when an instance is created (raising a
:class:`~figaroh.errors.MissingDependencyError` naming the extra when it is
missing).
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
