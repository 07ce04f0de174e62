"""Safe YAML loading under a size budget.

YAML anchors and aliases (``&a`` / ``*a``) let a small document describe a
huge one: eight levels of nine aliases each (a "billion laughs" document of
about 1 kB) stand for 9⁸ ≈ 4.3·10⁷ nodes. ``yaml.safe_load`` builds such a
document with shared references, but any code that walks or copies it node by
node (variable expansion, deep merge, dumping) expands it in full and runs out
of memory.

:func:`load_yaml` composes the document with ``yaml.CSafeLoader`` (libyaml;
``yaml.SafeLoader`` when PyYAML lacks it) — the safe constructor and resolver
of ``yaml.safe_load``, so no Python object tags and the same values —
then counts the nodes of the fully expanded tree *before* constructing any
Python object. The count is linear in the size of the composed graph: the
expanded size of a node shared through aliases is computed once and reused,

.. math::

    n(\\text{scalar}) = 1, \\qquad
    n(\\text{collection}) = 1 + \\sum_{c \\in \\text{children}} n(c).

A document without aliases is a tree and its expanded size is simply its
number of nodes, counted by one walk; the memoised count runs only when the
walk meets a node twice (an alias) or the budget is exceeded.

A document whose expanded size exceeds the budget, or whose aliases form a
cycle (an anchor used inside its own value), is refused with
:class:`YamlBudgetError` naming the file, the count and how to raise the
limit: the ``max_nodes`` argument or the environment variable
``FIGAROH_YAML_MAX_NODES``.

Configuration files are read many times per process (``is_unified_config``
then the parse, a template shared by several robot files, a script building
several identification objects): :func:`load_yaml_file_cached` keeps the
parsed value of small files in an in-process cache keyed by the file's
text, so a file whose content has not changed is composed,
counted and constructed once, and every call returns its own deep copy
(:func:`plain_deepcopy`): no caller can alter what another receives.
"""

from __future__ import annotations

import copy
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from figaroh.utils.error_handling import ConfigurationError

if TYPE_CHECKING:  # annotations only; PyYAML (~25 ms) is imported by the first load
    import yaml

__all__ = [
    "DEFAULT_MAX_NODES",
    "MAX_NODES_ENV",
    "YamlBudgetError",
    "clear_yaml_cache",
    "expanded_node_count",
    "load_yaml",
    "load_yaml_file",
    "load_yaml_file_cached",
    "max_nodes_limit",
    "plain_deepcopy",
]

#: Default budget: nodes of the fully expanded document (a calibration file of
#: 500 joint configurations of a 40-joint robot holds about 2·10⁴ nodes).
DEFAULT_MAX_NODES = 1_000_000

#: Environment variable overriding :data:`DEFAULT_MAX_NODES`.
MAX_NODES_ENV = "FIGAROH_YAML_MAX_NODES"

#: Files longer than this (characters) are not kept by :func:`load_yaml_file_cached`.
CACHE_MAX_CHARS = 128_000

#: Parsed documents kept by :func:`load_yaml_file_cached` (least recently used dropped).
CACHE_ENTRIES = 32

#: Types ``copy.deepcopy`` returns as they are (immutable atoms).
_ATOMIC = frozenset({type(None), bool, int, float, complex, str, bytes})

_cache: OrderedDict[str, tuple[Any, int]] = OrderedDict()
_cache_lock = threading.Lock()


class YamlBudgetError(ConfigurationError):
    """A YAML document expands past the node budget, or its aliases form a cycle.

    A :class:`~figaroh.utils.error_handling.ConfigurationError`, hence a
    :class:`~figaroh.errors.FigarohError` and a ``ValueError``.
    """


def max_nodes_limit(max_nodes: int | None = None) -> int:
    """The node budget: ``max_nodes``, else ``$FIGAROH_YAML_MAX_NODES``, else the default.

    Raises:
        ConfigurationError: the environment variable is not a positive integer.
    """
    if max_nodes is not None:
        return int(max_nodes)
    raw = os.environ.get(MAX_NODES_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_NODES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigurationError(
            f"environment variable {MAX_NODES_ENV}={raw!r} must be a positive integer "
            f"(number of YAML nodes; default {DEFAULT_MAX_NODES})"
        )
    return value


def _children(
    node: yaml.Node, mapping: type[yaml.MappingNode], sequence: type[yaml.SequenceNode]
) -> list[yaml.Node]:
    if isinstance(node, mapping):
        return [part for pair in node.value for part in pair]
    if isinstance(node, sequence):
        return list(node.value)
    return []


def expanded_node_count(root: yaml.Node, limit: int, source: str = "<yaml>") -> int:
    """Number of nodes of ``root`` once every alias is expanded (stops past ``limit``).

    A document whose nodes are all distinct objects (no alias) is a tree:
    one walk counts it. Otherwise an iterative post-order walk with a memo
    of shared nodes counts it, so the cost is linear in the composed graph
    whatever the expansion factor.

    Args:
        root: Composed YAML node (``yaml.compose``).
        limit: Budget; the walk stops as soon as a partial count exceeds it.
        source: File name used in the error messages.

    Returns:
        The expanded node count (≤ ``limit``).

    Raises:
        YamlBudgetError: the count exceeds ``limit``, or an alias refers to a
            node that contains it (recursive document).
    """
    import yaml

    count = _tree_size(root, yaml.MappingNode, yaml.SequenceNode)
    if count is not None and count <= limit:
        return count
    return _shared_size(root, limit, source)


def _tree_size(
    root: yaml.Node, mapping: type[yaml.MappingNode], sequence: type[yaml.SequenceNode]
) -> int | None:
    """Node count of ``root`` when no node is reached twice, else ``None``.

    Without aliases the composed graph is a tree, its expanded size is its
    number of nodes and the walk visits each node once.
    """
    seen: set[int] = set()
    add = seen.add
    stack = [root]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        key = id(node)
        if key in seen:
            return None  # shared node (alias): counted by _shared_size
        add(key)
        if isinstance(node, mapping):
            for pair in node.value:
                extend(pair)
        elif isinstance(node, sequence):
            extend(node.value)
    return len(seen)


def _shared_size(root: yaml.Node, limit: int, source: str) -> int:
    """:func:`expanded_node_count` of a graph with shared nodes (memoised post-order walk)."""
    import yaml

    kinds = (yaml.MappingNode, yaml.SequenceNode)
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            total = 1 + sum(sizes[id(c)] for c in _children(node, *kinds))
            on_path.discard(key)
            sizes[key] = total
            if total > limit:
                raise _too_big(source, limit)
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise YamlBudgetError(
                f"YAML document {source} is recursive: an alias refers to a node that "
                f"contains it (line {node.start_mark.line + 1}); remove the self-referencing "
                "alias"
            )
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node, *kinds):
            if id(child) in on_path:
                raise YamlBudgetError(
                    f"YAML document {source} is recursive: an alias refers to a node that "
                    f"contains it (line {child.start_mark.line + 1}); remove the "
                    "self-referencing alias"
                )
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _too_big(source: str, limit: int) -> YamlBudgetError:
    return YamlBudgetError(
        f"YAML document {source} expands to more than {limit} nodes once its aliases "
        f"(*name references to &name anchors) are expanded; refused to protect memory. "
        f"If the file is genuine, raise the limit with the environment variable "
        f"{MAX_NODES_ENV}=<nodes> or the max_nodes argument"
    )


def load_yaml(stream: str | bytes | IO[Any], source: str = "<yaml>", max_nodes: int | None = None):
    """``yaml.safe_load(stream)`` refusing documents that expand past the budget.

    Args:
        stream: YAML text or an open text/binary stream.
        source: Name of the document used in the error messages (a file path).
        max_nodes: Budget of expanded nodes; ``None`` → :func:`max_nodes_limit`.

    Returns:
        The constructed Python object (``None`` for an empty document).

    Raises:
        YamlBudgetError: too many nodes once expanded, a recursive alias, or a
            document nested too deeply for the parser.
        yaml.YAMLError: invalid YAML (as ``yaml.safe_load``).
    """
    return _load(stream, source, max_nodes_limit(max_nodes))[0]


def _load(stream: str | bytes | IO[Any], source: str, limit: int) -> tuple[Any, int]:
    """``(value, expanded node count)`` of a document under the budget ``limit``."""
    import yaml

    # libyaml's parser when PyYAML was built with it (about 5x faster), else the
    # pure-Python one; both feed the same safe constructor and resolver.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(stream)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YamlBudgetError(
                f"YAML document {source} is nested too deeply to be parsed; flatten it"
            ) from None
        if node is None:
            return None, 0
        count = expanded_node_count(node, limit, source)
        return loader.construct_document(node), count
    finally:
        loader.dispose()


def load_yaml_file(path: str | os.PathLike, max_nodes: int | None = None) -> Any:
    """:func:`load_yaml` of a UTF-8 file (the path names the file in every error).

    Raises:
        YamlBudgetError: see :func:`load_yaml`.
        yaml.YAMLError: invalid YAML.
        OSError, UnicodeDecodeError: unreadable file.
    """
    with open(path, encoding="utf-8") as stream:
        return load_yaml(stream, str(Path(path)), max_nodes)


def load_yaml_file_cached(path: str | os.PathLike, max_nodes: int | None = None) -> Any:
    """:func:`load_yaml_file` through an in-process cache of parsed documents.

    The file is read on every call; its text (UTF-8, universal newlines, as
    :func:`load_yaml_file` reads it) is the cache key itself (a dict lookup
    compares the whole text, so two files share an entry only when their
    texts are equal, and no hash library is imported). A text seen
    before is not parsed again: its stored value is deep-copied
    (:func:`plain_deepcopy`), so each caller owns what it receives and a
    mutation never reaches the cache or another caller. The budget is
    checked on every call against the stored expanded node count ``n``: the
    document is refused when ``n > limit``, exactly as a fresh parse would.
    Anything that fails (unreadable file, invalid YAML, budget) is redone by
    :func:`load_yaml_file`, which raises its usual error; failures are not
    cached. Files longer than :data:`CACHE_MAX_CHARS` characters are parsed
    every time; at most :data:`CACHE_ENTRIES` documents are kept.

    Args:
        path: YAML file.
        max_nodes: Budget of expanded nodes; ``None`` → :func:`max_nodes_limit`.

    Returns:
        The constructed Python object, owned by the caller.

    Raises:
        YamlBudgetError, yaml.YAMLError, OSError, UnicodeDecodeError: as
            :func:`load_yaml_file`.
    """
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except (OSError, UnicodeDecodeError, ValueError):
        return load_yaml_file(path, max_nodes)  # raises the uncached path's error
    limit = max_nodes_limit(max_nodes)
    with _cache_lock:
        entry = _cache.get(text)
        if entry is not None:
            _cache.move_to_end(text)
    if entry is not None:
        value, count = entry
        if count > limit:
            raise _too_big(str(Path(path)), limit)
        return plain_deepcopy(value)
    try:
        value, count = _load(text, str(Path(path)), limit)
    except Exception:  # noqa: BLE001 - the uncached path raises the exact error
        return load_yaml_file(path, max_nodes)
    if len(text) <= CACHE_MAX_CHARS:
        try:
            stored = plain_deepcopy(value)
        except RecursionError:  # nested too deeply to copy: not cached
            return value
        with _cache_lock:
            _cache[text] = (stored, count)
            _cache.move_to_end(text)
            while len(_cache) > CACHE_ENTRIES:
                _cache.popitem(last=False)
    return value


def clear_yaml_cache() -> None:
    """Empty the cache of :func:`load_yaml_file_cached`."""
    with _cache_lock:
        _cache.clear()


def plain_deepcopy(obj: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy(obj)`` with a fast path for plain ``dict`` / ``list`` trees.

    ``dict`` and ``list`` objects (exact types) are rebuilt directly, keys and
    items in the same order; the atoms ``copy.deepcopy`` returns unchanged
    (``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``)
    are shared; anything else goes to ``copy.deepcopy`` with the same memo.
    As with ``copy.deepcopy``, an object reached twice is copied once
    (sharing and cycles are preserved).

    Args:
        obj: Object to copy (typically a parsed YAML document).
        memo: ``copy.deepcopy`` memo (``id(original) → copy``), or ``None``.

    Returns:
        The copy.
    """
    if type(obj) in _ATOMIC:
        return obj
    return _copy(obj, {} if memo is None else memo)


def _copy(obj: Any, memo: dict[int, Any]) -> Any:
    key = id(obj)
    if key in memo:
        return memo[key]
    cls = type(obj)
    if cls is dict:
        new_dict: dict[Any, Any] = {}
        memo[key] = new_dict
        for k, v in obj.items():
            new_dict[k if type(k) in _ATOMIC else _copy(k, memo)] = (
                v if type(v) in _ATOMIC else _copy(v, memo)
            )
        return new_dict
    if cls is list:
        new_list: list[Any] = []
        memo[key] = new_list
        append = new_list.append
        for v in obj:
            append(v if type(v) in _ATOMIC else _copy(v, memo))
        return new_list
    return copy.deepcopy(obj, memo)
