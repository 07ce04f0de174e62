"""Named exceptions of :mod:`figaroh.identification`.

Every class derives from :class:`IdentificationError` — the same class as
:class:`figaroh.utils.error_handling.IdentificationError` (a
:class:`~figaroh.utils.error_handling.FigarohError` and ``RuntimeError``), so a
single ``except IdentificationError`` catches every identification failure,
whichever module raised it. Bad input is also a ``ValueError`` and workflow
misuse also an ``AssertionError``, so that callers' existing ``except`` clauses
keep working.
"""

from __future__ import annotations

from figaroh.utils.error_handling import IdentificationError

__all__ = [
    "IdentificationError",
    "IdentificationConfigError",
    "IdentificationDataError",
    "IdentificationStateError",
]


class IdentificationConfigError(IdentificationError, ValueError):
    """An ``identif_config`` value is missing, malformed or inconsistent."""


class IdentificationDataError(IdentificationError, ValueError):
    """Trajectory data (positions, velocities, torques, timestamps) is unusable."""


class IdentificationStateError(IdentificationError, AssertionError):
    """A workflow step was called before the steps it depends on.

    Subclasses ``AssertionError`` (what the API documents for unmet
    prerequisites of ``solve()``) and ``RuntimeError``; raised explicitly, so it
    is not stripped by ``python -O``.
    """
