"""Lazy re-exports, lazy subpackages and lazy modules: imports resolved on first access.

figaroh 1.0.2 exposed, in several modules and packages, names that those
modules merely imported (the results manager, configuration parsers,
calibration loaders, the physical-consistency functions…). They stay
importable from the same module paths, but are resolved on first access, so
that importing the re-exporting module does not import, and cannot form an
import cycle with, the modules they come from. The same hook makes the
submodules of a package reachable as attributes (``import figaroh`` then
``figaroh.tools.robot.Robot``), each imported when first reached.

:func:`lazy_module` does the same for a module's own dependency that only
some of its calls need: importing ``figaroh.identification.base_identification``
does not import the physical-consistency, URDF-export and HTML-report code a
plain least-squares run never calls.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from types import ModuleType
from typing import Any, Callable, Dict, Iterable, List, Mapping, Tuple


def _public_submodules(package_path: Iterable[str]) -> List[str]:
    """Names of the public (not ``_``-prefixed) modules and packages in ``package_path``."""
    return [m.name for m in pkgutil.iter_modules(list(package_path)) if not m.name.startswith("_")]


def lazy_reexports(
    module_name: str, table: Mapping[str, str], namespace: Dict[str, Any]
) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
    """Module-level ``__getattr__`` / ``__dir__`` resolving names on first use (PEP 562).

    * a name of ``table`` is the object of the same name in the module that
      defines it (the very object: ``pkg.name is home.name``);
    * in a package (``namespace`` has ``__path__``), a public submodule is an
      attribute too: ``package.submodule`` imports it on first access, as
      ``import package.submodule`` would, so that ``import figaroh`` then
      ``figaroh.tools.robot.Robot`` works without importing every submodule
      when the package is imported.

    Args:
        module_name: ``__name__`` of the re-exporting module.
        table: ``{public name: module that defines it}``.
        namespace: ``globals()`` of the re-exporting module; a resolved name is
            cached there (an imported submodule is bound there by the import
            system), so later lookups are plain attribute accesses.

    Returns:
        ``(__getattr__, __dir__)`` to assign at module level.
    """
    table = dict(table)
    package_path = namespace.get("__path__")

    def __getattr__(name: str) -> Any:
        home = table.get(name)
        if home is not None:
            value = getattr(importlib.import_module(home), name)
            namespace[name] = value
            return value
        if (
            package_path is not None
            and name.isidentifier()
            and not name.startswith("_")
            and importlib.util.find_spec(f"{module_name}.{name}") is not None
        ):
            return importlib.import_module(f"{module_name}.{name}")
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    def __dir__() -> List[str]:
        names = set(namespace) | set(table)
        if package_path is not None:
            names.update(_public_submodules(package_path))
        return sorted(names)

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
