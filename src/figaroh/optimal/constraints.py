"""Correctly spelled alias of :mod:`figaroh.optimal.contraints` (upstream's module name)."""

from .contraints import (  # noqa: F401
    TrajectoryConstraintManager,
    add_non_adjacent_pairs,
    convexify_geometry_model,
)

__all__ = ["TrajectoryConstraintManager", "add_non_adjacent_pairs", "convexify_geometry_model"]
