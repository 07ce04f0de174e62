"""MeshCat visualisation of robots (``pip install "figaroh[meshcat]"``).

* :mod:`figaroh.visualisation.colors` — ``rgb2int``, named colours, ``material``;
* :mod:`figaroh.visualisation.visualizer` — ``MeshcatVisualizer`` (a subclass of
  Pinocchio's MeshCat visualiser) and ``materialFromColor``.

Importing this package needs neither meshcat nor ``pinocchio.visualize``:
``MeshcatVisualizer`` is created on first access.
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
