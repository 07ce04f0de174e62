"""Lazy names of :mod:`figaroh.visualisation` (read by ``lazy_loader.attach_stub``)."""

from . import (
    colors as colors,
)
from . import (
    visualizer as visualizer,
)
from .visualizer import (
    MeshcatVisualizer as MeshcatVisualizer,
)
