"""Lazy re-exports: names a module exposes but resolves only on first access.

figaroh 1.0.2 exposed, in several modules and packages, names that those
modules merely imported (the results manager, configuration parsers,
calibration loaders, the physical-consistency functions…). They stay
importable from the same module paths, but are resolved on first access, so
that importing the re-exporting module does not import, and cannot form an
import cycle with, the modules they come from.
"""

from __future__ import annotations

import importlib
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
