"""figaroh: dynamic identification and geometric calibration of robots.

Importing the package is cheap: heavy dependencies (matplotlib, picos, viser,
cyipopt) are imported lazily by the modules that need them, and the
subpackages are imported when first reached: after ``import figaroh``,
``figaroh.tools.robot.Robot`` or ``figaroh.identification.base_identification``
imports what it names (PEP 562 module ``__getattr__``; the subpackages do the
same for their modules through :func:`figaroh.utils._lazy.lazy_reexports`).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["__version__"]


def __getattr__(name: str) -> object:
    """``figaroh.<subpackage>``, imported on first access.

    Written here rather than taken from ``figaroh.utils._lazy`` so that
    ``import figaroh`` imports no figaroh module (nor ``typing``).

    Raises:
        AttributeError: ``name`` is neither an attribute nor a public
            subpackage or module of figaroh.
    """
    if (
        name.isidentifier()
        and not name.startswith("_")
        and importlib.util.find_spec(f"{__name__}.{name}") is not None
    ):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    import pkgutil

    public = (m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return sorted(set(globals()) | set(public))
