"""MeshCat visualisation of robots (``pip install "figaroh[meshcat]"``).

* :mod:`figaroh.visualisation.colors` — ``rgb2int``, named colours, ``material``;
* :mod:`figaroh.visualisation.visualizer` — ``MeshcatVisualizer`` (a subclass of
  Pinocchio's MeshCat visualiser) and ``materialFromColor``.

Importing this package needs neither meshcat nor ``pinocchio.visualize``:
``MeshcatVisualizer`` is created on first access.
"""

from __future__ import annotations

from . import visualizer

__all__ = ["MeshcatVisualizer"]


def __getattr__(name: str):
    """``MeshcatVisualizer``, created by :mod:`.visualizer` on first access."""
    if name == "MeshcatVisualizer":
        return visualizer.MeshcatVisualizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
