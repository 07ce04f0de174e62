"""MeshCat visualisation of robots (``pip install "figaroh[meshcat]"``).

* :mod:`figaroh.visualisation.colors` — ``rgb2int``, named colours, ``material``;
* :mod:`figaroh.visualisation.visualizer` — ``MeshcatVisualizer`` (a subclass of
  Pinocchio's MeshCat visualiser) and ``materialFromColor``.

Importing this package needs neither meshcat nor ``pinocchio.visualize``:
``MeshcatVisualizer`` is created on first access.
"""

from __future__ import annotations

from figaroh.utils._lazy import lazy_reexports

__all__ = ["MeshcatVisualizer"]  # noqa: F822 - created by .visualizer on first access

# ``MeshcatVisualizer`` is created by :mod:`.visualizer` on first access; the
# submodules (``visualizer``, ``colors``) are imported when first reached.
__getattr__, __dir__ = lazy_reexports(
    __name__, {"MeshcatVisualizer": "figaroh.visualisation.visualizer"}, globals()
)
