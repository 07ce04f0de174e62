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

A document whose expanded size exceeds the budget, or whose aliases form a
cycle (an anchor used inside its own value), is refused with
:class:`YamlBudgetError` naming the file, the count and how to raise the
limit: the ``max_nodes`` argument or the environment variable
``FIGAROH_YAML_MAX_NODES``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from figaroh.utils.error_handling import ConfigurationError

if TYPE_CHECKING:  # annotations only; PyYAML (~25 ms) is imported by the first load
    import yaml

__all__ = [
    "DEFAULT_MAX_NODES",
    "MAX_NODES_ENV",
    "YamlBudgetError",
    "expanded_node_count",
    "load_yaml",
    "load_yaml_file",
    "max_nodes_limit",
]

#: Default budget: nodes of the fully expanded document (a calibration file of
#: 500 joint configurations of a 40-joint robot holds about 2·10⁴ nodes).
DEFAULT_MAX_NODES = 1_000_000

#: Environment variable overriding :data:`DEFAULT_MAX_NODES`.
MAX_NODES_ENV = "FIGAROH_YAML_MAX_NODES"


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


def _children(node: yaml.Node, mapping: type, sequence: type) -> list[yaml.Node]:
    if isinstance(node, mapping):
        return [part for pair in node.value for part in pair]
    if isinstance(node, sequence):
        return list(node.value)
    return []


def expanded_node_count(root: yaml.Node, limit: int, source: str = "<yaml>") -> int:
    """Number of nodes of ``root`` once every alias is expanded (stops past ``limit``).

    Iterative post-order walk with a memo of shared nodes, so the cost is
    linear in the composed graph whatever the expansion factor.

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
    import yaml

    limit = max_nodes_limit(max_nodes)
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
            return None
        expanded_node_count(node, limit, source)
        return loader.construct_document(node)
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
