"""Lazy re-exports and lazy modules: imports resolved on first access.

figaroh 1.0.2 exposed, in several modules and packages, names that those
modules merely imported (the results manager, configuration parsers,
calibration loaders, the physical-consistency functions…). They stay
importable from the same module paths, but are resolved on first access, so
that importing the re-exporting module does not import, and cannot form an
import cycle with, the modules they come from.

:func:`lazy_module` does the same for a module's own dependency that only
some of its calls need: importing ``figaroh.identification.base_identification``
does not import the physical-consistency, URDF-export and HTML-report code a
plain least-squares run never calls.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Callable, Dict, List, Mapping, Tuple


def lazy_reexports(
    module_name: str, table: Mapping[str, str], namespace: Dict[str, Any]
) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
    """Module-level ``__getattr__`` / ``__dir__`` resolving ``table`` names on first use.

    Args:
        module_name: ``__name__`` of the re-exporting module (for error messages).
        table: ``{public name: module that defines it}``.
        namespace: ``globals()`` of the re-exporting module; a resolved name is
            cached there, so later lookups are plain attribute accesses.

    Returns:
        ``(__getattr__, __dir__)`` to assign at module level.
    """
    table = dict(table)

    def __getattr__(name: str) -> Any:
        home = table.get(name)
        if home is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> List[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__


class LazyModule:
    """Stand-in for a module that imports it on the first attribute access.

    Used at module level for a dependency that only some calls need (the
    physical-consistency steps, the URDF export, the HTML report), so that
    importing the dependent module does not import it. ``proxy.name`` is
    ``importlib.import_module(module_name).name``; the module is imported once
    and kept. The import is declared where it is written
    (``_steps = lazy_module("package.module")`` at module level), and the
    architecture rules count it as an import of ``module_name`` (cycles and
    layers).

    Args:
        module_name: Absolute dotted name of the module.
    """

    __slots__ = ("_module_name", "_module")

    def __init__(self, module_name: str):
        self._module_name = module_name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._module_name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._module_name!r} ({state})>"


def lazy_module(module_name: str) -> Any:
    """A :class:`LazyModule` for ``module_name`` (imported on first attribute access)."""
    return LazyModule(module_name)
