"""Named exceptions of :mod:`figaroh.tools`.

Each subclasses the built-in exception the public API documents, so callers'
``except ValueError`` / ``except FileNotFoundError`` clauses keep working.
"""

from __future__ import annotations

from figaroh.errors import FigarohError


class FigarohToolsError(FigarohError):
    """Base class of every error raised by :mod:`figaroh.tools`."""


class RobotLoadError(FigarohToolsError, RuntimeError):
    """A robot description could not be turned into a Pinocchio model."""


class MissingPackageError(FigarohToolsError, FileNotFoundError):
    """A ``package://`` URI names a package found in none of the searched folders."""


class MissingMeshError(FigarohToolsError, FileNotFoundError):
    """A mesh referenced by the URDF does not exist on disk."""


class RegressorShapeError(FigarohToolsError, ValueError):
    """Joint positions, velocities or accelerations have the wrong shape or values."""


class RegressorConfigError(FigarohToolsError, ValueError):
    """A regressor setting (e.g. the Coulomb dead band) is out of its valid range."""


class RankDeficiencyError(FigarohToolsError, ValueError):
    """A regressor has no identifiable column left (rank zero) or is unusable."""


class SolverError(FigarohToolsError, RuntimeError):
    """A numerical solver failed to produce a solution."""


class SolverInputError(FigarohToolsError, ValueError):
    """A solver received ill-shaped or non-finite data."""
