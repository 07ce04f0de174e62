"""Named exceptions of :mod:`figaroh.identification`.

Each subclasses ``ValueError`` (bad input) or ``RuntimeError`` (workflow
misuse) so that callers' existing ``except`` clauses keep working.
"""

from __future__ import annotations


class IdentificationError(Exception):
    """Base class of every error raised by :mod:`figaroh.identification`."""


class IdentificationConfigError(IdentificationError, ValueError):
    """An ``identif_config`` value is missing, malformed or inconsistent."""


class IdentificationDataError(IdentificationError, ValueError):
    """Trajectory data (positions, velocities, torques, timestamps) is unusable."""


class IdentificationStateError(IdentificationError, RuntimeError):
    """A workflow step was called before the steps it depends on."""
