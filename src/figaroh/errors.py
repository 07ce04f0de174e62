"""The root of every exception figaroh raises.

Every error class in figaroh derives from :class:`FigarohError`, so a caller
can catch any library failure with one clause::

    try:
        ident.solve()
    except FigarohError as exc:
        ...

Each concrete error also subclasses the built-in exception the public API
documents for that failure (``ValueError`` for bad input, ``RuntimeError`` for a
failed computation, ``FileNotFoundError`` for a missing file, ``ImportError`` for
a missing optional dependency, ...), so ``except ValueError`` clauses written
against figaroh 1.0.2 keep working.

This module imports nothing, so any figaroh module can import it without
creating an import cycle.
"""

from __future__ import annotations

__all__ = ["FigarohError", "MissingDependencyError"]


class FigarohError(Exception):
    """Base class of every exception raised by figaroh."""


class MissingDependencyError(FigarohError, ImportError):
    """An optional (or lazily imported) package that a call needs is not installed.

    Raised by :func:`figaroh._optional.require`. The message names the
    package, what needs it and the command that installs it
    (``pip install "figaroh[<extra>]"``).

    Attributes:
        package: Distribution to install (``"cyipopt"``, ``"meshcat"``, ...).
        extra: figaroh extra that installs it (``"ipopt"``, ``"meshcat"``, ...),
            or None for a core dependency.
        purpose: What needs the package (``"IPOPT trajectory optimisation"``).
    """

    def __init__(
        self, message: str, *, package: str, extra: str | None = None, purpose: str = ""
    ) -> None:
        super().__init__(message, name=package)
        self.package = package
        self.extra = extra
        self.purpose = purpose
