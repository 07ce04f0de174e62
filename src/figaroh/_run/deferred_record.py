"""A dict completed by a function at its first read.

Some fields of a record are costly to look up and only matter when the record
is written (the git state of run provenance costs a subprocess). A
:class:`DeferredRecord` holds the cheap fields at once and a ``complete``
function; the first read of any kind — ``record[key]``, ``get``, iteration,
``items()``, ``len``, ``in``, ``==``, ``repr``, ``dict(record)``,
``{**record}``, ``json.dumps``, ``yaml.safe_dump`` (C or Python dumper),
``copy.copy`` / ``copy.deepcopy``, pickling — or any write first replaces the
contents by ``complete(contents)``. From then on it behaves as an ordinary
dict; its copies and pickles are plain ``dict`` objects.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Mapping, Tuple

__all__ = ["DeferredRecord"]

Completion = Callable[[Dict[str, Any]], Dict[str, Any]]


class DeferredRecord(dict):
    """A ``dict`` whose contents are completed by a function at the first read.

    Args:
        fields: The fields known now.
        complete: Called once, with a plain copy of the fields, at the first
            read or write; returns the full contents (its key order is kept).
            ``None``: the record is complete already.
    """

    __slots__ = ("_complete",)

    def __init__(self, fields: Mapping[str, Any], complete: Completion | None = None) -> None:
        dict.__init__(self, fields)
        self._complete = complete
        _register_yaml_representers()

    @property
    def is_pending(self) -> bool:
        """Whether the completion has not run yet."""
        return getattr(self, "_complete", None) is not None

    def _fill(self) -> None:
        complete = getattr(self, "_complete", None)
        if complete is None:
            return
        self._complete = None
        full = complete(dict(dict.items(self)))
        dict.clear(self)
        dict.update(self, full)

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, DeferredRecord):
            other._fill()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # a dict is not hashable

    def __reduce_ex__(self, protocol: Any) -> Tuple[Any, ...]:
        self._fill()
        return (dict, (dict(dict.items(self)),))


def _filled_first(name: str) -> Callable[..., Any]:
    """The ``dict`` method ``name``, run after :meth:`DeferredRecord._fill`."""
    base = getattr(dict, name)

    def method(self: DeferredRecord, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        return base(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = base.__doc__
    return method


for _name in (
    "__getitem__",
    "__iter__",
    "__reversed__",
    "__len__",
    "__contains__",
    "__repr__",
    "__or__",
    "__ror__",
    "__ior__",
    "__setitem__",
    "__delitem__",
    "get",
    "keys",
    "values",
    "items",
    "copy",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "clear",
):
    setattr(DeferredRecord, _name, _filled_first(_name))
del _name


@functools.cache
def _register_yaml_representers() -> None:
    """Make ``yaml.safe_dump`` / ``yaml.dump`` write a record as a mapping.

    yaml's representers match the exact type: the record is registered on the
    two representer bases every yaml dumper class (C or Python) reads from.
    Done once, by the first record built, so that importing this module does
    not import PyYAML (~25 ms).
    """
    import yaml

    for representer in (yaml.representer.SafeRepresenter, yaml.representer.Representer):
        representer.add_representer(
            DeferredRecord, lambda dumper, data: dumper.represent_dict(dict(data.items()))
        )
