"""Unified configuration parser: templates, variants, task inheritance, variables.

The parser the tasks build on (layer 1). figaroh 1.0.2's module name
:mod:`figaroh.utils.config_parser` re-exports its public names and adds the
entry points that also route legacy task files to the task packages' readers.

A *unified* configuration file describes one robot (``robot:``) and the tasks
run on it (``tasks: {calibration, identification, optimal_configuration,
optimal_trajectory}``), optionally inheriting from a template
(``extends: <file>``), declaring named ``variants`` and ``${VAR}`` references.
:class:`UnifiedConfigParser` resolves all of that into one plain dict;
:func:`create_task_config` then flattens the robot section and one task into
the *task config* consumed by ``unified_to_legacy_identif_config`` /
``unified_to_legacy_config``.

Resolution order of :meth:`UnifiedConfigParser.parse`:

1. load YAML (``yaml.safe_load`` semantics, under a node budget that refuses
   documents whose aliases expand past ``FIGAROH_YAML_MAX_NODES`` nodes; a
   file whose text is unchanged is parsed once per process and every caller
   receives its own copy, see :func:`~figaroh.utils.yaml_budget.load_yaml_file_cached`) and
   check its keys (unknown keys warned with a suggestion, refused in strict
   mode: ``strict=True`` or a top-level ``strict_keys: true``);
2. ``extends`` — recursive template inheritance, parent first, child
   deep-merged over the parent (mappings merge, lists and scalars replace);
3. the requested variant;
4. ``tasks.<name>.inherits_from``;
5. ``${VAR}`` expansion (environment, dotted config path, ``variables``);
6. validation;
7. ``_metadata``.

Template lookup for ``extends: <value>``:

* absolute path → as is;
* ``templates/<rest>`` → ``<rest>`` is searched in ``<dir>/templates``,
  ``<dir>/../templates``, ``<dir>/../../templates`` and ``<cwd>/templates``,
  where ``<dir>`` is the directory of the file holding the ``extends`` (and
  then of the top-level config file), then in the package's own templates
  (:data:`PACKAGED_TEMPLATES_DIR`, shipped in the wheel);
* anything else → relative to the directory of the file holding the
  ``extends``; when that file does not exist the path is also tried relative
  to the top-level config file's directory (figaroh 1.0.2 resolved every
  ``extends`` there, which the shipped example templates rely on).

Deviation from figaroh 1.0.2 (its documented intent implemented): a variant with
``extends: "tasks.identification"`` is merged back **at that path** (figaroh 1.0.2
merged it at the root of the document, where no task reads it).
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from figaroh.utils.config_keys import UnknownConfigKeyError, check_document, strict_requested
from figaroh.utils.error_handling import MIGRATION_COMMAND, ConfigurationError
from figaroh.utils.yaml_budget import YamlBudgetError, load_yaml_file_cached, plain_deepcopy

logger = logging.getLogger(__name__)

#: Why a legacy flat configuration is refused, and the command converting it.
LEGACY_CONFIG_MESSAGE = (
    "Legacy flat config format (top-level 'calibration:'/'identification:' sections with "
    "robot_params/problem_params/processing_params lists) is deprecated and no longer "
    "accepted by load_param(); convert the file to the unified format with: "
    f"{MIGRATION_COMMAND}"
)
#: The same message under the name figaroh 1.0.2 gives it.
LEGACY_CONFIG_REMOVED_MESSAGE: str = LEGACY_CONFIG_MESSAGE

__all__ = [
    "ConfigMetadata",
    "UnifiedConfigParser",
    "create_task_config",
    "load_unified_config",
    "parse_configuration",
    "is_unified_config",
    "legacy_config_error",
    "require_unified_config",
    "deep_merge",
]

#: Top-level keys that mark a file as unified (``is_unified_config``).
UNIFIED_MARKERS = (
    "_metadata",
    "schema_version",
    "extends",
    "variants",
    "tasks",
    "common",
    "variables",
)

_VAR_PATTERN = re.compile(r"\$\{([^}]+)\}")
_TEMPLATE_PREFIX = "templates/"
#: Templates shipped in the package, searched last for ``extends: "templates/<name>"``.
PACKAGED_TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "config" / "templates"
_MAX_VAR_DEPTH = 10
_EXTEND_SUFFIX = "_extend"


@dataclass
class ConfigMetadata:
    """Provenance of a parsed configuration, stored under ``_metadata``.

    Attributes:
        schema_version: Schema version of the configuration (``meta.schema_version``).
        config_type: Kind of configuration document.
        source_file: Absolute path of the parsed file.
        variant: Variant applied, or ``None``.
        resolved_at: Working directory at parse time (relative data paths are
            resolved against it).
    """

    schema_version: str = "2.0"
    config_type: str = "robot_configuration"
    source_file: str | None = None
    variant: str | None = None
    resolved_at: str | None = None


# ---------------------------------------------------------------------------
# generic helpers
# ---------------------------------------------------------------------------


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` deep-merged with ``override`` (``override`` wins).

    Mappings merge recursively; lists and scalars of ``override`` replace those
    of ``base``. A list under a key ``<name>_extend`` is appended to the list
    ``<name>`` of ``base`` instead (when that exists and is a list). Neither
    input is modified and the result shares no mutable object with them
    (values are deep-copied, :func:`~figaroh.utils.yaml_budget.plain_deepcopy`).

    Args:
        base: Parent mapping.
        override: Child mapping.

    Returns:
        A new dict.
    """
    result: dict[str, Any] = plain_deepcopy(dict(base))
    for key, value in override.items():
        if (
            isinstance(key, str)
            and key.endswith(_EXTEND_SUFFIX)
            and isinstance(value, list)
            and isinstance(result.get(key[: -len(_EXTEND_SUFFIX)]), list)
        ):
            target = key[: -len(_EXTEND_SUFFIX)]
            result[target] = result[target] + plain_deepcopy(value)
        elif isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = plain_deepcopy(value)
    return result


def _load_yaml_mapping(path: Path) -> dict[str, Any]:
    """Read ``path`` (``yaml.safe_load`` under the node budget) and require a mapping.

    The file goes through the parsed-document cache
    (:func:`~figaroh.utils.yaml_budget.load_yaml_file_cached`): an unchanged
    file is parsed once per process and the caller owns the returned dict.

    Raises:
        YamlBudgetError: the document expands past the node budget
            (:mod:`figaroh.utils.yaml_budget`).
        ConfigurationError: invalid YAML, not UTF-8, unreadable, not a mapping.
    """
    import yaml  # PyYAML (~25 ms): imported by the load, not by this module

    try:
        data = load_yaml_file_cached(path)
    except YamlBudgetError:
        raise
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"Invalid YAML in file {path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"Configuration file {path} is not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise ConfigurationError(f"Cannot read configuration file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"Configuration file must contain a YAML dictionary: {path} holds {type(data).__name__}"
        )
    return data


def _lookup_dotted(config: Mapping[str, Any], dotted: str) -> Any:
    """``config["a"]["b"]`` for ``"a.b"``; ``None`` when any step is missing."""
    node: Any = config
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            return None
    return node


def _suggest(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    return f" Did you mean '{close[0]}'?" if close else ""


def _source_of(config: Mapping[str, Any]) -> str:
    meta = config.get("_metadata") if isinstance(config, Mapping) else None
    if isinstance(meta, Mapping) and meta.get("source_file"):
        return str(meta["source_file"])
    return "configuration"


def _search_templates(ref: str, holder: Path, base_dirs: list[Path]) -> Path:
    """``templates/<rest>``: ``<rest>`` in ``templates`` at/above ``base_dirs``, cwd, package."""
    rest = ref[len(_TEMPLATE_PREFIX) :]
    ups = [up for base in base_dirs for up in (base, base.parent, base.parent.parent)]
    searched = [*(up / "templates" for up in ups), Path.cwd() / "templates", PACKAGED_TEMPLATES_DIR]
    seen: list[Path] = []
    for directory in (d.resolve() for d in searched):
        if directory in seen:
            continue
        seen.append(directory)
        if (directory / rest).is_file():
            return (directory / rest).resolve()
    shipped = sorted(p.name for p in PACKAGED_TEMPLATES_DIR.glob("*.yaml"))
    raise ConfigurationError(
        f"Template '{ref}' (key 'extends' in {holder}) not found; searched "
        f"directories: {[str(d) for d in seen]}. Put the file in one of them, give an "
        f"absolute path, or extend a shipped template: "
        f"{', '.join(_TEMPLATE_PREFIX + n for n in shipped)}.{_suggest(rest, shipped)}"
    )


#: Sections a task of a given ``type`` must declare.
_REQUIRED_SECTIONS: dict[Any, tuple[str, ...]] = {
    "kinematic_calibration": ("kinematics", "measurements"),
    "dynamic_identification": ("problem", "signal_processing"),
}


def _check_schema_version(meta: Any, source: Path) -> None:
    """Warn when ``meta.schema_version`` is not a version number or is newer than 2.x."""
    if not isinstance(meta, Mapping) or meta.get("schema_version") is None:
        return
    version = str(meta["schema_version"])
    try:
        major = int(version.split(".")[0])
    except ValueError:
        logger.warning("meta.schema_version %r in %s is not a version number", version, source)
        return
    if major > 2:
        logger.warning(
            "meta.schema_version %s of %s is newer than the supported 2.x", version, source
        )


def _check_robot_section(robot: Any) -> None:
    """``robot`` is a mapping with a ``name``; ``properties.joints.active_joints`` names."""
    if not isinstance(robot, Mapping):
        raise ConfigurationError(f"key 'robot' must be a mapping, got {robot!r}")
    if not robot.get("name"):
        raise ConfigurationError("Robot name is required (key 'robot.name')")
    props = robot.get("properties")
    if props is not None and not isinstance(props, Mapping):
        raise ConfigurationError(f"key 'robot.properties' must be a mapping, got {props!r}")
    joints = (props or {}).get("joints")
    if not isinstance(joints, Mapping) or "active_joints" not in joints:
        return
    active = joints["active_joints"]
    if not isinstance(active, list):
        raise ConfigurationError(
            "key 'robot.properties.joints.active_joints' must be a list of joint "
            f"names, got {active!r}"
        )
    bad = [n for n in active if not isinstance(n, str)]
    if bad:
        raise ConfigurationError(
            "key 'robot.properties.joints.active_joints' must hold joint name "
            f"strings; offending entries: {bad}"
        )


def _check_tasks_section(tasks: Any) -> None:
    """``tasks`` maps names to mappings holding the sections their ``type`` requires."""
    if not isinstance(tasks, Mapping):
        raise ConfigurationError(f"key 'tasks' must be a mapping, got {tasks!r}")
    for name, task in tasks.items():
        if not isinstance(task, Mapping):
            raise ConfigurationError(
                f"Task '{name}' (key 'tasks.{name}') must be a mapping, got {task!r}"
            )
        task_type = task.get("type")
        for section in _REQUIRED_SECTIONS.get(task_type, ()):
            if section not in task:
                raise ConfigurationError(
                    f"Task '{name}' of type '{task_type}' missing required section: "
                    f"{section} (key 'tasks.{name}.{section}')"
                )


# ---------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------


class UnifiedConfigParser:
    """Parse a unified configuration file into one resolved dict.

    Every file read (the configuration and its templates) is loaded under the
    YAML node budget of :mod:`figaroh.utils.yaml_budget` and its keys are
    checked against :mod:`figaroh.utils.config_keys`: an unknown key is
    warned about with the closest known key, or refused in strict mode.

    Args:
        config_path: Path of the configuration file.
        variant: Name of a variant (``variants.<name>``) to apply, or ``None``.
        strict: Refuse unknown keys (``True``), only warn (``False``), or
            (``None``, default) follow the top-level ``strict_keys`` key of the
            configuration file, else the ``FIGAROH_STRICT_KEYS`` environment
            variable (``1``/``true``), else warn.

    Raises:
        ConfigurationError: ``config_path`` does not exist
            ("Configuration file not found: ...").
    """

    def __init__(
        self,
        config_path: str | os.PathLike,
        variant: str | None = None,
        *,
        strict: bool | None = None,
    ) -> None:
        path = Path(config_path).expanduser()
        try:
            path = path.resolve()
        except OSError:
            path = path.absolute()
        if not path.is_file():
            raise ConfigurationError(f"Configuration file not found: {path}")
        self.config_path = path
        self.variant = variant
        self.strict = strict
        self._strict_effective = bool(strict)
        self.template_cache: dict[Path, dict[str, Any]] = {}
        self.variable_cache: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (
            f"UnifiedConfigParser(config_path='{self.config_path}', variant={self.variant!r}, "
            f"cached_templates={len(self.template_cache)})"
        )

    # -- public -------------------------------------------------------------

    def parse(self) -> dict[str, Any]:
        """Resolve and validate the configuration.

        Returns:
            The resolved configuration, with ``_metadata`` added.

        Raises:
            ConfigurationError: "Failed to parse configuration <path>: <reason>"
                for any problem (bad YAML, missing template, ``extends`` cycle,
                unknown variant, bad task inheritance, validation failure).
            YamlBudgetError: a file expands past the YAML node budget (raised
                as is; the message names the file and how to raise the limit).
            UnknownConfigKeyError: unknown keys under strict mode (raised as is).
        """
        return self._parse(None)

    def _parse(self, root: dict[str, Any] | None) -> dict[str, Any]:
        """:meth:`parse`, the top-level file's mapping given as ``root`` (owned) if not None."""
        try:
            config = self._load_resolved(self.config_path, (), root)
            if self.variant is not None:
                config = self._apply_variant(config, self.variant)
            self._resolve_task_inheritance(config)
            config = self._expand_variables(config)
            self._validate(config)
            config["_metadata"] = self._metadata(config).__dict__
            return config
        except (YamlBudgetError, UnknownConfigKeyError):
            raise
        except Exception as exc:
            raise ConfigurationError(
                f"Failed to parse configuration {self.config_path}: {exc}"
            ) from exc

    # -- step 1/2: load + extends ------------------------------------------

    def _load_resolved(
        self, path: Path, chain: tuple[Path, ...], data: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Load ``path`` and resolve its ``extends`` chain (``chain`` = files above).

        ``data``: the mapping of ``path`` when the caller has read it already
        (the parser takes ownership), else ``None``.
        """
        if data is None:
            data = _load_yaml_mapping(path)
        if not chain:
            self._strict_effective = strict_requested(data, self.strict)
        check_document(data, str(path), strict=self._strict_effective)
        if "extends" not in data:
            return data
        ref = data.pop("extends")
        if ref is None:
            return data
        if not isinstance(ref, str) or not ref.strip():
            raise ConfigurationError(
                f"key 'extends' in {path} must be a template path string, got {ref!r}"
            )
        parent_path = self._resolve_template_path(ref.strip(), path)
        here = chain + (path,)
        if parent_path in here:
            cycle = " -> ".join(str(p) for p in here[here.index(parent_path) :] + (parent_path,))
            raise ConfigurationError(f"Circular 'extends' chain detected: {cycle}")
        if parent_path not in self.template_cache:
            self.template_cache[parent_path] = self._load_resolved(parent_path, here)
        parent = self.template_cache[parent_path]
        return deep_merge(parent, data)

    def _resolve_template_path(self, ref: str, holder: Path) -> Path:
        """Absolute path of the template named by ``extends: ref`` inside ``holder``."""
        candidate = Path(ref).expanduser()
        if candidate.is_absolute():
            if not candidate.is_file():
                raise ConfigurationError(
                    f"Template file not found: {candidate} (key 'extends' in {holder})"
                )
            return candidate.resolve()
        base_dirs = [holder.parent]
        if self.config_path.parent != holder.parent:
            base_dirs.append(self.config_path.parent)

        if ref.startswith(_TEMPLATE_PREFIX):
            return _search_templates(ref, holder, base_dirs)

        tried = []
        for base in base_dirs:
            path = (base / candidate).resolve()
            tried.append(path)
            if path.is_file():
                if base != holder.parent:
                    logger.debug(
                        "extends '%s' in %s resolved relative to the top-level config: %s",
                        ref,
                        holder,
                        path,
                    )
                return path
        raise ConfigurationError(
            f"Template file not found: {tried[0]} (key 'extends': '{ref}' in {holder}; "
            f"also tried {[str(p) for p in tried[1:]]})"
            if len(tried) > 1
            else f"Template file not found: {tried[0]} (key 'extends': '{ref}' in {holder})"
        )

    # -- step 3: variants ---------------------------------------------------

    def _apply_variant(self, config: dict[str, Any], name: str) -> dict[str, Any]:
        variants = config.pop("variants", None)
        if not isinstance(variants, Mapping) or not variants:
            raise ConfigurationError(
                f"No variants defined in {self.config_path}; cannot apply variant '{name}'"
            )
        if name not in variants:
            available = sorted(str(k) for k in variants)
            raise ConfigurationError(
                f"Variant '{name}' not found in {self.config_path}. "
                f"Available variants: {available}.{_suggest(name, available)}"
            )
        body = variants[name]
        if body is None:
            return config
        if not isinstance(body, Mapping):
            raise ConfigurationError(
                f"variants.{name} in {self.config_path} must be a mapping, got {body!r}"
            )
        body = dict(body)
        target = body.pop("extends", None)
        if target is None:
            return deep_merge(config, body)
        if not isinstance(target, str):
            raise ConfigurationError(
                f"variants.{name}.extends in {self.config_path} must be a dotted path "
                f"such as 'tasks.identification', got {target!r}"
            )
        base = _lookup_dotted(config, target)
        if not isinstance(base, Mapping):
            raise ConfigurationError(
                f"variants.{name}.extends: '{target}' does not name a mapping in {self.config_path}"
            )
        merged = deep_merge(base, body)
        # Write the merged section back where it came from.
        node = config
        parts = target.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = merged
        logger.info("Applied variant '%s' (extends %s) of %s", name, target, self.config_path)
        return config

    # -- step 4: task inheritance -------------------------------------------

    def _resolve_task_inheritance(self, config: dict[str, Any]) -> None:
        tasks = config.get("tasks")
        if not isinstance(tasks, dict):
            return
        resolved: dict[str, dict[str, Any]] = {}

        def resolve(name: str, stack: tuple[str, ...]) -> Any:
            """Task ``name`` merged over its parents (any other value: as written)."""
            if name in resolved:
                return resolved[name]
            body = tasks[name]
            if not isinstance(body, Mapping) or "inherits_from" not in body:
                return body  # validated later
            parent = body["inherits_from"]
            if parent in stack + (name,):
                cycle = " -> ".join(stack + (name, parent))
                raise ConfigurationError(f"Circular task inheritance detected involving: {cycle}")
            if parent not in tasks:
                raise ConfigurationError(
                    f"Parent task '{parent}' not found for '{name}' "
                    f"(key tasks.{name}.inherits_from). Available tasks: {sorted(tasks)}"
                )
            parent_body = resolve(parent, stack + (name,))
            if not isinstance(parent_body, Mapping):
                raise ConfigurationError(
                    f"tasks.{parent} must be a mapping to be inherited by '{name}'"
                )
            own = {k: v for k, v in body.items() if k != "inherits_from"}
            resolved[name] = deep_merge(parent_body, own)
            return resolved[name]

        for task_name in list(tasks):
            result = resolve(task_name, ())
            if task_name in resolved:
                tasks[task_name] = result

    # -- step 5: variables --------------------------------------------------

    def _lookup_variable(self, name: str, config: Mapping[str, Any]) -> Any:
        env = os.environ.get(name)
        if env:
            return env
        value = _lookup_dotted(config, name)
        if value is not None and value != "":
            return value
        variables = config.get("variables")
        if isinstance(variables, Mapping):
            value = _lookup_dotted(variables, name)
            if value is not None and value != "":
                return value
        return self.variable_cache.get(name)

    def _expand_string(self, text: str, config: Mapping[str, Any], depth: int) -> Any:
        full = _VAR_PATTERN.fullmatch(text)

        def resolve(name: str) -> Any:
            name = name.strip()
            value = self._lookup_variable(name, config)
            if value is None:
                logger.warning(
                    "Unresolved variable ${%s} in %s left verbatim", name, self.config_path
                )
                return None
            if isinstance(value, str) and "${" in value:
                if depth >= _MAX_VAR_DEPTH:
                    logger.warning(
                        "Variable ${%s} in %s nests more than %d levels (cycle?); left verbatim",
                        name,
                        self.config_path,
                        _MAX_VAR_DEPTH,
                    )
                    return None
                value = self._expand_string(value, config, depth + 1)
            self.variable_cache[name] = value
            return value

        if full:
            value = resolve(full.group(1))
            return text if value is None else value

        def substitute(match: re.Match) -> str:
            value = resolve(match.group(1))
            return match.group(0) if value is None else str(value)

        return _VAR_PATTERN.sub(substitute, text)

    def _expand_variables(self, config: dict[str, Any]) -> dict[str, Any]:
        # References resolve against a copy of the unexpanded configuration (a
        # ${a.b} naming a mapping receives that copy's mapping). ``walk`` never
        # modifies ``config``, so the copy is taken when the first reference is
        # met: a configuration without references is not copied.
        snapshot: list[dict[str, Any]] = []

        def walk(node: Any) -> Any:
            if isinstance(node, str):
                if "${" not in node:
                    return node
                if not snapshot:
                    snapshot.append(plain_deepcopy(config))
                return self._expand_string(node, snapshot[0], 0)
            if isinstance(node, dict):
                return {k: walk(v) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v) for v in node]
            return node

        return walk(config)

    # -- step 6: validation ---------------------------------------------------

    def _validate(self, config: dict[str, Any]) -> None:
        _check_schema_version(config.get("meta"), self.config_path)
        if "robot" in config:
            _check_robot_section(config["robot"])
        tasks = config.get("tasks")
        if tasks is not None:
            _check_tasks_section(tasks)

    # -- step 7 -------------------------------------------------------------

    def _metadata(self, config: Mapping[str, Any]) -> ConfigMetadata:
        raw_meta = config.get("meta")
        meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
        return ConfigMetadata(
            schema_version=str(meta.get("schema_version", "2.0")),
            config_type=str(meta.get("config_type", "robot_configuration")),
            source_file=str(self.config_path),
            variant=self.variant,
            resolved_at=str(Path.cwd()),
        )


# ---------------------------------------------------------------------------
# task configs
# ---------------------------------------------------------------------------


def _robot_name(robot: Any, robot_section: Mapping[str, Any]) -> Any:
    """``robot.name``, else ``robot.model.name``, else the YAML ``robot.name``."""
    name = getattr(robot, "name", None) if robot is not None else None
    if isinstance(name, str) and name:
        return name
    model = getattr(robot, "model", None)
    return getattr(model, "name", None) or robot_section.get("name")


def _task_section(unified_config: Mapping[str, Any], task_name: str) -> Mapping[str, Any]:
    """The enabled ``tasks.<task_name>`` mapping (named errors otherwise)."""
    if not isinstance(unified_config, Mapping):
        raise ConfigurationError(
            f"unified_config must be a parsed configuration mapping, got "
            f"{type(unified_config).__name__}"
        )
    source = _source_of(unified_config)
    tasks = unified_config.get("tasks")
    available = sorted(tasks) if isinstance(tasks, Mapping) else []
    if not isinstance(tasks, Mapping) or task_name not in tasks:
        raise ConfigurationError(
            f"Task '{task_name}' not found in {source}. Available tasks: {available}."
            f"{_suggest(task_name, available)}"
        )
    task = tasks[task_name]
    if not isinstance(task, Mapping):
        raise ConfigurationError(f"Task '{task_name}' in {source} must be a mapping, got {task!r}")
    if not task.get("enabled", True):
        raise ConfigurationError(
            f"Task '{task_name}' is disabled in configuration {source} "
            f"(set tasks.{task_name}.enabled: true)"
        )
    return task


def create_task_config(robot: Any, unified_config: Mapping[str, Any], task_name: str) -> dict:
    """Flatten the robot section and one task into a *task config*.

    Keys, later ones overwriting earlier ones: ``robot_name`` (``robot.name``,
    else ``robot.model.name``, else the YAML ``robot.name``) and
    ``task_type`` (the task's ``type`` or its name); every key of
    ``robot.properties``; ``instance`` (``robot.instance``); every task key
    except ``enabled``, ``type`` and keys starting with ``_``; ``custom``; and,
    when ``environment`` is present, ``working_directory``,
    ``data_directory``, ``results_directory``.

    Args:
        robot: Robot object (``.name`` or ``.model.name``), or ``None``.
        unified_config: Output of :meth:`UnifiedConfigParser.parse`.
        task_name: Task to extract, e.g. ``"identification"``.

    Returns:
        dict: the task configuration.

    Raises:
        ConfigurationError: the task is missing (message lists the available
            tasks and names the file) or disabled.
    """
    task = _task_section(unified_config, task_name)
    robot_section = unified_config.get("robot") or {}
    if not isinstance(robot_section, Mapping):
        robot_section = {}
    task_config: dict[str, Any] = {
        "robot_name": _robot_name(robot, robot_section),
        "task_type": task.get("type") or task_name,
    }
    properties = robot_section.get("properties") or {}
    if isinstance(properties, Mapping):
        task_config.update(plain_deepcopy(dict(properties)))
    if "instance" in robot_section:
        task_config["instance"] = plain_deepcopy(robot_section["instance"])
    for key, value in task.items():
        if key in ("enabled", "type") or (isinstance(key, str) and key.startswith("_")):
            continue
        task_config[key] = plain_deepcopy(value)
    if "custom" in unified_config:
        task_config["custom"] = plain_deepcopy(unified_config["custom"])
    environment = unified_config.get("environment")
    if environment is not None:
        env = environment if isinstance(environment, Mapping) else {}
        task_config["working_directory"] = env.get("working_directory", ".")
        task_config["data_directory"] = env.get("data_directory", "data")
        task_config["results_directory"] = env.get("results_directory", "results")
    return task_config


def parse_configuration(
    config_path: str | os.PathLike, variant: str | None = None, *, strict: bool | None = None
) -> dict:
    """Parse a unified configuration file (``UnifiedConfigParser(...).parse()``).

    Args:
        config_path: Path of the configuration file.
        variant: Variant to apply, or ``None``.
        strict: Unknown-key policy (see :class:`UnifiedConfigParser`).

    Returns:
        dict: the resolved configuration.
    """
    return UnifiedConfigParser(config_path, variant, strict=strict).parse()


def load_unified_config(
    config_file: str | os.PathLike, variant: str | None = None, *, strict: bool | None = None
) -> dict:
    """``require_unified_config(config_file)`` then its parse, reading the file once.

    Same result and same errors as::

        require_unified_config(config_file)
        UnifiedConfigParser(config_file, variant, strict=strict).parse()

    but the top-level file is read and parsed once (its mapping is handed to
    the parser); templates are read by the parse as usual.

    Args:
        config_file: Path of a unified configuration file.
        variant: Variant to apply, or ``None``.
        strict: Unknown-key policy (see :class:`UnifiedConfigParser`).

    Returns:
        dict: the resolved configuration.

    Raises:
        ConfigurationError: as :func:`require_unified_config` (missing file,
            invalid YAML, not a mapping, legacy format), then as
            :meth:`UnifiedConfigParser.parse`.
        YamlBudgetError, UnknownConfigKeyError: as :meth:`UnifiedConfigParser.parse`.
    """
    path = Path(config_file)
    if not path.is_file():
        raise ConfigurationError(f"Configuration file not found: {path}")
    data = _load_yaml_mapping(path)
    if not _has_unified_marker(data):
        raise legacy_config_error(path)
    return UnifiedConfigParser(path, variant, strict=strict)._parse(data)


def _auto_task(tasks: Mapping[str, Any], source: str) -> str:
    enabled = [
        name
        for name, body in tasks.items()
        if isinstance(body, Mapping) and body.get("enabled", True)
    ]
    if len(enabled) != 1:
        raise ConfigurationError(
            f"Cannot auto-detect task type in {source}. Available tasks: {enabled} "
            "(pass task_type explicitly)"
        )
    return enabled[0]


def is_unified_config(config_file: str | os.PathLike) -> bool:
    """True if the file's top-level mapping has a unified-format marker.

    Markers: any of ``_metadata``, ``schema_version``, ``extends``,
    ``variants``, ``tasks``, ``common``, ``variables``, or a top-level mapping
    containing ``inherits_from``. Never raises: a missing, unreadable or
    non-mapping file gives ``False``.

    Args:
        config_file: Path of the YAML configuration file.
    """
    try:
        data = load_yaml_file_cached(config_file)
    except Exception:  # noqa: BLE001 - documented: never raises
        return False
    return _has_unified_marker(data)


def _has_unified_marker(data: Any) -> bool:
    """The test of :func:`is_unified_config` on the parsed document ``data``."""
    if not isinstance(data, dict):
        return False
    if any(key in data for key in UNIFIED_MARKERS):
        return True
    return any(isinstance(v, dict) and "inherits_from" in v for v in data.values())


def require_unified_config(config_file: str | os.PathLike) -> None:
    """Refuse anything but an existing, readable unified configuration file.

    Args:
        config_file: Path of the YAML configuration file.

    Raises:
        ConfigurationError: the file is missing, is not valid YAML, is not a
            mapping, or uses the legacy flat format; the last message quotes
            ``python -m figaroh.utils.config_migration --input <legacy.yaml>
            --output <unified.yaml>``.
    """
    path = Path(config_file)
    if not path.is_file():
        raise ConfigurationError(f"Configuration file not found: {path}")
    if is_unified_config(path):
        return
    _load_yaml_mapping(path)  # raises a precise error for bad YAML / non-mapping
    raise legacy_config_error(path)


def legacy_config_error(config_file: str | os.PathLike | None = None) -> ConfigurationError:
    """The error refusing a legacy flat configuration (returned, for ``raise``).

    Args:
        config_file: The refused file, or None when it is not known.

    Returns:
        A :class:`~figaroh.utils.error_handling.ConfigurationError` whose
        message is :data:`LEGACY_CONFIG_REMOVED_MESSAGE` (which quotes
        ``python -m figaroh.utils.config_migration --input <legacy.yaml>
        --output <unified.yaml>``), preceded by the file name and followed by
        the command for that file (``--output <stem>_unified.yaml`` beside it)
        when ``config_file`` is given.

    Example:
        ``raise legacy_config_error("robot.yaml")``.
    """
    if config_file is None:
        return ConfigurationError(LEGACY_CONFIG_REMOVED_MESSAGE)
    path = Path(config_file)
    suggestion = path.with_name(f"{path.stem}_unified.yaml")
    return ConfigurationError(
        f"{path} uses the legacy flat configuration format, which is no longer supported. "
        f"{LEGACY_CONFIG_REMOVED_MESSAGE} "
        f"(here: python -m figaroh.utils.config_migration --input {path} --output {suggestion})"
    )
