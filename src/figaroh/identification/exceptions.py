"""Named exceptions of :mod:`figaroh.identification`.

Each subclasses ``ValueError`` (bad input) or ``AssertionError``/``RuntimeError``
(workflow misuse) so that callers' existing ``except`` clauses keep working.
"""

from __future__ import annotations


class IdentificationError(Exception):
    """Base class of every error raised by :mod:`figaroh.identification`."""


class IdentificationConfigError(IdentificationError, ValueError):
    """An ``identif_config`` value is missing, malformed or inconsistent."""


class IdentificationDataError(IdentificationError, ValueError):
    """Trajectory data (positions, velocities, torques, timestamps) is unusable."""


class IdentificationStateError(IdentificationError, AssertionError, RuntimeError):
    """A workflow step was called before the steps it depends on.

    Subclasses ``AssertionError`` (what the API documents for unmet
    prerequisites of ``solve()``) and ``RuntimeError``; raised explicitly, so it
    is not stripped by ``python -O``.
    """
