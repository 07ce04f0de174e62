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


class RobotDescriptionFetchError(FigarohToolsError, FileNotFoundError):
    """The files of a ``robot_descriptions`` description are not cached and could not be fetched.

    ``robot_descriptions`` downloads a description's repository (with git) the
    first time the description is imported; the message names the description,
    the cache folder and the command that fetches it.
    """


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
