"""Locating robot descriptions and resolving ``package://`` URIs.

A URDF names its meshes either by a path relative to itself or by a ROS-style
``package://<pkg>/<path>`` URI. Pinocchio resolves the latter by searching the
``package_dirs`` it is given for a folder named ``<pkg>``. This module builds
that search list so that users rarely need to pass ``package_dirs`` at all:

1. folders the caller passed explicitly (a relative folder is relative to
   the working directory);
2. every parent of the URDF file (a package usually contains its ``urdf/``
   folder, and description repositories keep packages side by side);
3. the working directory itself;
4. the ``models/`` folders of the project tree the script runs in (see
   :func:`project_models_dirs`);
5. the ``robots`` folder of the installed ``example-robot-data`` wheel.

It also maps short robot names (``"ur10"``, ``"talos"``, ``"panda"``) to URDF
files (:func:`resolve_robot_urdf`, :func:`robot_catalogue`): first the URDFs of
the installed ``example-robot-data`` distribution (version 6 ships no Python
module, only its ``share/example-robot-data/robots`` folder, located through
the distribution's files), then the ``robot_descriptions`` catalogue when that
package is installed. ``robot_descriptions`` downloads a description's
repository with git the first time the description is imported and keeps it in
its cache (:func:`robot_descriptions_cache_dir`); a description that is not
cached and cannot be fetched raises :class:`RobotDescriptionFetchError`, whose
message says how to fetch it (:func:`import_robot_description`).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import logging
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from figaroh._optional import is_installed, require

from .exceptions import (
    FigarohToolsError,
    MissingMeshError,
    MissingPackageError,
    RobotDescriptionFetchError,
)

logger = logging.getLogger(__name__)

MODELS_DIR_ENV = "FIGAROH_MODELS_DIR"

_PACKAGE_URI = re.compile(r"package://([^/\"'\s]+)/([^\"'\s<>]*)")
_FILE_URI = re.compile(r"<mesh[^>]*filename\s*=\s*[\"']([^\"']+)[\"']")


@lru_cache(maxsize=1)
def example_robot_data_dir() -> Path | None:
    """Folder holding the robot packages of the ``example-robot-data`` wheel.

    Returns:
        The ``.../share/example-robot-data/robots`` folder, or ``None`` when the
        wheel is not installed.
    """
    # The wheel unpacks into ``<site-packages>/cmeel.prefix``: a few stat()
    # calls find it; the package metadata (importlib.metadata, ~25 ms of
    # imports and a scan of every installed distribution) is asked only when
    # they do not.
    for entry in sys.path:
        if entry:
            path = Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
            if path.is_dir():
                return path.resolve()
    candidates: list[Path] = []
    try:
        from importlib import metadata

        dist = metadata.distribution("example-robot-data")
        candidates.append(
            Path(str(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")))
        )
    except Exception:  # noqa: BLE001 - metadata lookup is best effort
        pass
    candidates.append(Path(sys.prefix) / "share" / "example-robot-data" / "robots")
    for path in candidates:
        if path.is_dir():
            return path.resolve()
    return None


def referenced_packages(urdf_text: str) -> list[str]:
    """Names of the ROS packages referenced by ``package://`` URIs, in order of appearance."""
    seen: dict[str, None] = {}
    for match in _PACKAGE_URI.finditer(urdf_text):
        seen.setdefault(match.group(1), None)
    return list(seen)


def _as_list(package_dirs: str | os.PathLike | Sequence[str | os.PathLike] | None) -> list[Path]:
    if package_dirs is None:
        return []
    if isinstance(package_dirs, (str, os.PathLike)):
        text = str(package_dirs)
        return [Path(p) for p in text.split(os.pathsep) if p]
    return [Path(p) for p in package_dirs]


#: Files or folders marking the root of a project tree.
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


def _main_script_dir() -> Path | None:
    """Folder of the running script (``python path/to/script.py``), if any."""
    main = sys.modules.get("__main__")
    candidates = [getattr(main, "__file__", None)]
    if sys.argv and sys.argv[0] not in ("", "-c", "-m"):
        candidates.append(sys.argv[0])
    for entry in candidates:
        if entry:
            path = Path(entry)
            if path.is_file():
                return path.resolve().parent
    return None


def _real_dir(path: str | os.PathLike) -> str | None:
    """``path`` with symbolic links resolved, or ``None`` when it is not a folder."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return real if os.path.isdir(real) else None


def _project_models_dirs(start: str | os.PathLike | None, cwd: str | None = None) -> list[str]:
    starts: list[str | os.PathLike] = [start] if start is not None else [cwd or os.getcwd()]
    if start is None:
        script_dir = _main_script_dir()
        if script_dir is not None:
            starts.append(script_dir)
    found: dict[str, None] = {}
    for first in starts:
        current = _real_dir(first)
        while current is not None:
            models = os.path.join(current, "models")
            if os.path.isdir(models):
                found.setdefault(os.path.realpath(models), None)
            if any(os.path.exists(os.path.join(current, marker)) for marker in PROJECT_MARKERS):
                break
            parent = os.path.dirname(current)
            current = parent if parent != current else None
    return list(found)


def project_models_dirs(start: str | os.PathLike | None = None) -> list[Path]:
    """``models/`` folders of the project tree a script runs in, nearest first.

    Walks up from ``start`` (default: the working directory, then the folder
    of the running script) and keeps every existing ``<folder>/models``; the
    walk stops at the first folder holding a project marker
    (:data:`PROJECT_MARKERS`: ``.git``, ``pyproject.toml``, ...), included, or
    at the filesystem root. Example scripts written for figaroh 1.0.2 keep
    their robot packages in such a ``models/`` folder of the project.

    Args:
        start: Folder to start from.

    Returns:
        Existing ``models`` folders (resolved, de-duplicated).
    """
    return [Path(p) for p in _project_models_dirs(start)]


def _candidate_roots(
    urdf_path: str | os.PathLike,
    package_dirs: str | os.PathLike | Sequence[str | os.PathLike] | None,
    cwd: str | None = None,
) -> list[str]:
    """:func:`candidate_package_roots` as resolved path strings.

    ``cwd`` stands for the working directory (default: the current one), so
    that a search recorded earlier can be replayed after a ``chdir``. The
    parents of the resolved URDF path are real folders already: they skip
    ``realpath``.
    """
    cwd = cwd or os.getcwd()
    roots: dict[str, None] = {}
    for folder in _as_list(package_dirs):
        real = _real_dir(os.path.join(cwd, folder))
        if real is not None:
            roots.setdefault(real, None)
    urdf = os.path.realpath(os.path.join(cwd, urdf_path))
    urdf_exists = os.path.isfile(urdf)
    current = os.path.dirname(urdf)
    while True:
        if urdf_exists or os.path.isdir(current):
            roots.setdefault(current, None)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    real_cwd = _real_dir(cwd)
    if real_cwd is not None:
        roots.setdefault(real_cwd, None)
    for models in _project_models_dirs(None, cwd):
        roots.setdefault(models, None)
    erd = example_robot_data_dir()
    if erd is not None:
        # URDFs of the wheel say package://example-robot-data/robots/<pkg>/...
        roots.setdefault(str(erd), None)
        roots.setdefault(str(erd.parent), None)
    return list(roots)


def candidate_package_roots(
    urdf_path: str | os.PathLike,
    package_dirs: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
) -> list[Path]:
    """Ordered, de-duplicated folders in which ``package://<pkg>`` may live.

    Args:
        urdf_path: Path of the URDF file.
        package_dirs: Folders given by the caller (a string may hold several
            separated by ``os.pathsep``); searched first.

    Returns:
        Existing folders: the explicit ones (relative ones resolved against the
        working directory), then every parent of the URDF, the working
        directory, the project's ``models/`` folders
        (:func:`project_models_dirs`), then the ``example-robot-data`` robots
        folder and its parent (the wheel's own URDFs name their meshes
        ``package://example-robot-data/robots/...``).
    """
    return [Path(p) for p in _candidate_roots(urdf_path, package_dirs)]


def _find_package(name: str, roots: Iterable[str]) -> str | None:
    for root in roots:
        if os.path.basename(root) == name:
            return root
        candidate = os.path.join(root, name)
        if os.path.isdir(candidate):
            return candidate
    return None


def find_package(name: str, roots: Iterable[Path]) -> Path | None:
    """First ``root/<name>`` folder among ``roots`` (or a root that *is* the package)."""
    found = _find_package(name, (os.fspath(r) for r in roots))
    return Path(found) if found is not None else None


def _missing_package(urdf: Path, pkg: str, roots: list[str]) -> MissingPackageError:
    searched = "\n  ".join(roots)
    return MissingPackageError(
        f"URDF {urdf} references package '{pkg}' (package://{pkg}/...), which was not "
        f"found in any of these folders:\n  {searched}\n"
        f"Pass package_dirs=<folder containing '{pkg}'>, or load without geometry "
        f"(load_geometry=False) if you only need dynamics."
    )


def _check_meshes(urdf: Path, text: str, packages: dict[str, str], roots: list[str]) -> None:
    """Raise :class:`MissingMeshError` for the first referenced mesh that does not exist."""
    urdf_dir = os.fspath(urdf.parent)
    for match in _FILE_URI.finditer(text):
        uri = match.group(1)
        if uri.startswith("package://"):
            pkg, _, rel = uri[len("package://") :].partition("/")
            mesh = os.path.join(packages[pkg], rel)
            where = f"package '{pkg}' at {packages[pkg]}"
        elif uri.startswith("file://"):
            mesh = uri[len("file://") :]
            where = "an absolute file:// URI"
        else:
            mesh = uri if os.path.isabs(uri) else os.path.join(urdf_dir, uri)
            where = f"the URDF folder {urdf_dir}"
        if not os.path.exists(mesh):
            raise MissingMeshError(
                f"URDF {urdf} references mesh '{uri}', resolved through {where} to "
                f"{mesh}, which does not exist. Folders searched for packages: "
                f"{', '.join(roots)}. Provide the mesh files or load "
                f"without geometry (load_geometry=False)."
            )


def resolve_package_dirs(
    urdf_path: str | os.PathLike,
    package_dirs: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    *,
    check_meshes: bool = True,
    cwd: str | os.PathLike | None = None,
) -> list[str]:
    """Build the ``package_dirs`` list Pinocchio needs to load a URDF's meshes.

    Every package referenced by a ``package://`` URI must be found in one of the
    candidate roots (see :func:`candidate_package_roots`); with
    ``check_meshes`` every referenced mesh file must also exist (a ``stat``
    per mesh: nothing is parsed).

    Args:
        urdf_path: Path of the URDF file.
        package_dirs: Extra folders to search first.
        check_meshes: Also verify that each mesh file exists.
        cwd: Folder that relative paths (``urdf_path``, ``package_dirs``) and
            the working-directory candidates stand for (default: the current
            working directory).

    Returns:
        Folders to pass as Pinocchio's ``package_dirs`` (the parents of the
        resolved packages, then the remaining candidate roots).

    Raises:
        MissingPackageError: A referenced package is in none of the folders.
        MissingMeshError: A referenced mesh file does not exist.
    """
    cwd_s = os.fspath(cwd) if cwd is not None else os.getcwd()
    urdf = Path(os.path.join(cwd_s, urdf_path))
    text = urdf.read_text(encoding="utf-8", errors="replace")
    roots = _candidate_roots(urdf, package_dirs, cwd_s)
    packages: dict[str, str] = {}
    for pkg in referenced_packages(text):
        found = _find_package(pkg, roots)
        if found is None:
            raise _missing_package(urdf, pkg, roots)
        packages[pkg] = found
    if check_meshes:
        _check_meshes(urdf, text, packages, roots)
    dirs: dict[str, None] = {}
    for found in packages.values():
        dirs.setdefault(os.path.dirname(found), None)
    for root in roots:
        dirs.setdefault(root, None)
    return list(dirs)


def _check_package_available(name: str) -> bool:
    """Whether the Python package ``name`` can be imported (without importing it)."""
    return is_installed(name)


def _validate_urdf_exists(robot_urdf: str | os.PathLike) -> None:
    """Raise ``FileNotFoundError`` naming the URDF path when it is not a file."""
    if not Path(robot_urdf).is_file():
        raise FileNotFoundError(_missing_urdf_message(robot_urdf))


def _missing_urdf_message(robot_urdf: str | os.PathLike) -> str:
    return (
        f"URDF file not found: {robot_urdf}. Check the path (relative paths are "
        f"resolved from {Path.cwd()}); `figaroh robots` lists the robots loadable by name."
    )


class UnknownRobotError(FigarohToolsError, FileNotFoundError):
    """A robot name is neither a URDF file nor a name of a known robot source."""


#: Source label of the URDFs shipped by the ``example-robot-data`` distribution.
SOURCE_EXAMPLE_ROBOT_DATA = "example-robot-data"
#: Source label of the ``robot_descriptions`` catalogue.
SOURCE_ROBOT_DESCRIPTIONS = "robot_descriptions"

#: Short names of example-robot-data URDFs whose file stem is not the usual
#: name (the names of example-robot-data's former Python loaders).
_ERD_ALIASES = {
    "ur3": "ur_description/urdf/ur3_robot.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "ur10": "ur_description/urdf/ur10_robot.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "anymal": "anymal_b_simple_description/robots/anymal.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
}


@dataclass(frozen=True)
class RobotEntry:
    """One robot loadable by name.

    Attributes:
        name: Short name accepted by :func:`resolve_robot_urdf` (``"ur10"``).
        source: :data:`SOURCE_EXAMPLE_ROBOT_DATA` or :data:`SOURCE_ROBOT_DESCRIPTIONS`.
        path: URDF file for example-robot-data; ``None`` for robot_descriptions
            (its URDF is downloaded on first use).
    """

    name: str
    source: str
    path: Path | None


def _package_label(package: str) -> str:
    for suffix in ("_description", "_data"):
        if package.endswith(suffix):
            return package[: -len(suffix)]
    return package


def _erd_names(base: Path) -> dict[str, Path]:
    """``name → URDF`` for every URDF of the example-robot-data robots folder.

    A name is the file stem without a ``_robot`` suffix; a stem shared by two
    packages is prefixed by its package label (``anymal_c_simple_anymal``); the
    aliases of :data:`_ERD_ALIASES` come last and win (a file whose stem an
    alias takes keeps its prefixed name: ``ur3.urdf`` → ``ur_ur3``).
    """
    urdfs = sorted(base.glob("*/**/*.urdf"))
    stems: dict[str, list[Path]] = {}
    for urdf in urdfs:
        stems.setdefault(urdf.stem, []).append(urdf)
    names: dict[str, Path] = {}
    for stem, paths in stems.items():
        for urdf in paths:
            name = (
                stem
                if len(paths) == 1
                else f"{_package_label(urdf.relative_to(base).parts[0])}_{stem}"
            )
            names.setdefault(name, urdf)
    for urdf in urdfs:
        short = urdf.stem.removesuffix("_robot")
        if short != urdf.stem and short not in names:
            names[short] = urdf
    for name, relative in _ERD_ALIASES.items():
        if (base / relative).is_file():
            shadowed = names.get(name)
            if shadowed is not None and shadowed != base / relative:
                label = _package_label(shadowed.relative_to(base).parts[0])
                names.setdefault(f"{label}_{shadowed.stem}", shadowed)
            names[name] = base / relative
    return names


#: Environment variable naming the folder where ``robot_descriptions`` keeps
#: the repositories it downloads (default :data:`ROBOT_DESCRIPTIONS_DEFAULT_CACHE`).
ROBOT_DESCRIPTIONS_CACHE_ENV = "ROBOT_DESCRIPTIONS_CACHE"
#: Default download cache of ``robot_descriptions``.
ROBOT_DESCRIPTIONS_DEFAULT_CACHE = "~/.cache/robot_descriptions"


def robot_descriptions_cache_dir() -> Path:
    """Folder where ``robot_descriptions`` keeps the description repositories it downloads.

    Returns:
        ``$ROBOT_DESCRIPTIONS_CACHE`` when set, else
        ``~/.cache/robot_descriptions`` (user folder expanded); it may not exist.
    """
    return Path(
        os.environ.get(ROBOT_DESCRIPTIONS_CACHE_ENV, ROBOT_DESCRIPTIONS_DEFAULT_CACHE)
    ).expanduser()


def _robot_descriptions_catalogue() -> dict | None:
    """``robot_descriptions.DESCRIPTIONS`` (``None`` when not installed or not provided)."""
    if not _check_package_available(SOURCE_ROBOT_DESCRIPTIONS):
        return None
    try:
        module = importlib.import_module(SOURCE_ROBOT_DESCRIPTIONS)
    except Exception:  # noqa: BLE001 - an optional package may fail to import
        return None
    descriptions = getattr(module, "DESCRIPTIONS", None)
    return descriptions if isinstance(descriptions, dict) else None


def _robot_descriptions_names() -> list[str]:
    """Short names of the ``robot_descriptions`` URDF catalogue (empty when absent)."""
    descriptions = _robot_descriptions_catalogue() or {}
    return sorted(
        name.removesuffix("_description")
        for name, info in descriptions.items()
        if getattr(info, "has_urdf", True)
    )


def robot_description_module(name: str, urdf_only: bool = False) -> str | None:
    """The ``robot_descriptions`` module that ``name`` stands for, found without importing it.

    ``name`` and ``<name>_description`` are tried in that order (``"ur10"`` →
    ``"ur10_description"``); a candidate must be a module of the installed
    package (importing it would download the description, so only its
    presence is looked up) and, when the package lists its catalogue
    (``DESCRIPTIONS``), an entry of that catalogue.

    Args:
        name: Robot name (``"ur10"``) or module name (``"ur10_description"``).
        urdf_only: Skip catalogue entries that provide no URDF (MJCF only).

    Returns:
        The module name inside ``robot_descriptions``, or ``None`` when the
        package is not installed or has no such description.
    """
    if not name or not _check_package_available(SOURCE_ROBOT_DESCRIPTIONS):
        return None
    descriptions = _robot_descriptions_catalogue()
    for candidate in dict.fromkeys((name, f"{name}_description")):
        if descriptions is not None:
            if candidate not in descriptions:
                continue
            if urdf_only and not getattr(descriptions[candidate], "has_urdf", True):
                continue
        if is_installed(f"{SOURCE_ROBOT_DESCRIPTIONS}.{candidate}"):
            return candidate
    return None


def is_imported_description(module_name: str) -> bool:
    """Whether ``robot_descriptions.<module_name>`` was imported (its files were fetched)."""
    return f"{SOURCE_ROBOT_DESCRIPTIONS}.{module_name}" in sys.modules


def description_fetch_error(module_name: str, exc: BaseException) -> RobotDescriptionFetchError:
    """The error for a description whose import (its first-use download) failed with ``exc``.

    Args:
        module_name: Module name inside ``robot_descriptions`` (``"ur10_description"``).
        exc: What the import raised (a git error, an ``OSError``, ...).

    Returns:
        A :class:`RobotDescriptionFetchError` naming the description, the
        cache folder, the reason, the fetch command and the
        ``ROBOT_DESCRIPTIONS_CACHE`` variable (raise it ``from exc``).
    """
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())
    if len(reason) > 300:
        reason = reason[:299] + "…"
    cache = robot_descriptions_cache_dir()
    return RobotDescriptionFetchError(
        f"robot_descriptions description {module_name!r} is not available: its files are "
        f"not in the robot_descriptions cache {cache} (or not at the commit it pins) and "
        f"fetching them failed ({reason}). robot_descriptions downloads a description's "
        f"repository with git the first time it is used: fetch it once on a machine with "
        f'network access and git, `python -c "import {SOURCE_ROBOT_DESCRIPTIONS}.'
        f'{module_name}"`, or set {ROBOT_DESCRIPTIONS_CACHE_ENV} to a folder that holds '
        f"the downloaded repositories. Without them, pass the URDF file itself."
    )


def import_robot_description(module_name: str) -> ModuleType:
    """Import ``robot_descriptions.<module_name>``, which fetches its files on first use.

    Args:
        module_name: A name of :func:`robot_description_module`
            (``"ur10_description"``).

    Returns:
        The description module (``URDF_PATH``, ``PACKAGE_PATH``, ... as
        ``robot_descriptions`` documents them).

    Raises:
        MissingDependencyError: robot_descriptions is not installed (an
            ``ImportError`` naming ``pip install robot_descriptions``).
        RobotDescriptionFetchError: The import failed, i.e. the files are not
            cached and could not be downloaded (no network, no git, a proxy);
            the message names the description, the cache folder, the command
            that fetches it and the ``ROBOT_DESCRIPTIONS_CACHE`` variable.
    """
    require(
        SOURCE_ROBOT_DESCRIPTIONS,
        purpose=f"Loading the robot description {module_name!r} by name",
    )
    try:
        return importlib.import_module(f"{SOURCE_ROBOT_DESCRIPTIONS}.{module_name}")
    except Exception as exc:  # noqa: BLE001 - git, network and cache errors of any type
        raise description_fetch_error(module_name, exc) from exc


def robot_catalogue() -> list[RobotEntry]:
    """Every robot loadable by name, example-robot-data first, sorted by name.

    Returns:
        One :class:`RobotEntry` per URDF, under its shortest name (``"ur10"``
        for ``ur10_robot.urdf``; the longer names still resolve); a
        robot_descriptions name that example-robot-data also ships is listed
        once (example-robot-data).
    """
    entries: list[RobotEntry] = []
    base = example_robot_data_dir()
    if base is not None:
        shortest: dict[Path, str] = {}
        for name, urdf in _erd_names(base).items():
            if urdf not in shortest or (len(name), name) < (len(shortest[urdf]), shortest[urdf]):
                shortest[urdf] = name
        entries += sorted(
            (RobotEntry(n, SOURCE_EXAMPLE_ROBOT_DATA, p) for p, n in shortest.items()),
            key=lambda e: e.name,
        )
    known = {e.name for e in entries}
    entries += [
        RobotEntry(n, SOURCE_ROBOT_DESCRIPTIONS, None)
        for n in _robot_descriptions_names()
        if n not in known
    ]
    return entries


def _looks_like_path(name: str) -> bool:
    return name.endswith((".urdf", ".xml")) or "/" in name or os.sep in name


def _robot_descriptions_urdf(name: str) -> Path | None:
    """URDF of the ``robot_descriptions`` description ``name`` (fetched on first use).

    Raises:
        RobotDescriptionFetchError: The description exists but its files are
            not cached and could not be fetched.
    """
    module_name = robot_description_module(name, urdf_only=True)
    if module_name is None:
        return None
    urdf = getattr(import_robot_description(module_name), "URDF_PATH", None)
    if urdf and Path(urdf).is_file():
        return Path(urdf)
    return None


def _sources_sentence(entries: Sequence[RobotEntry]) -> str:
    """Where the known names come from, and how to get more (the truth of this machine)."""
    erd = sum(e.source == SOURCE_EXAMPLE_ROBOT_DATA for e in entries)
    erd_text = (
        f"{erd} from example-robot-data"
        if example_robot_data_dir() is not None
        else "example-robot-data is not installed (pip install example-robot-data)"
    )
    if _check_package_available(SOURCE_ROBOT_DESCRIPTIONS):
        rd = sum(e.source == SOURCE_ROBOT_DESCRIPTIONS for e in entries)
        rd_text = f"{rd} more from robot_descriptions, which is installed"
    else:
        rd_text = "robot_descriptions is not installed (pip install robot_descriptions adds more)"
    return f"{erd_text}; {rd_text}"


def _unknown_robot(name: str) -> UnknownRobotError:
    entries = robot_catalogue()
    names = [e.name for e in entries]
    close = difflib.get_close_matches(name, names, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return UnknownRobotError(
        f"URDF file or robot name {name!r} not found: it is not a file (relative paths "
        f"are resolved from {Path.cwd()}) nor a robot name ({len(names)} known: "
        f"{_sources_sentence(entries)}).{hint} List the names with `figaroh robots`."
    )


def resolve_robot_urdf(robot: str | os.PathLike) -> Path:
    """URDF file named by a path or a robot name.

    Resolution: an existing file → itself; a path relative to the
    example-robot-data robots folder (``"ur_description/urdf/ur10_robot.urdf"``,
    as listed by ``list_available_robots("figaroh")``); a name of
    :func:`robot_catalogue` (``"ur10"``); a ``robot_descriptions`` module name
    (``"ur10"`` → ``robot_descriptions.ur10_description``, downloaded on first
    use).

    Args:
        robot: URDF path or robot name.

    Returns:
        The URDF path (unchanged when ``robot`` is an existing file).

    Raises:
        UnknownRobotError: Neither a file nor a known name (a
            ``FileNotFoundError``); the message suggests close names and says
            which robot sources are installed.
        RobotDescriptionFetchError: A ``robot_descriptions`` name whose files
            are not cached and could not be fetched (a ``FileNotFoundError``
            naming the fetch command and ``ROBOT_DESCRIPTIONS_CACHE``).
    """
    path = Path(robot)
    if path.is_file():
        return path
    text = os.fspath(robot)
    base = example_robot_data_dir()
    if base is not None and (base / text).is_file():
        return base / text
    if _looks_like_path(text):
        raise UnknownRobotError(_missing_urdf_message(robot))
    if base is not None:
        found = _erd_names(base).get(text)
        if found is not None:
            return found
    found = _robot_descriptions_urdf(text)
    if found is not None:
        return found
    raise _unknown_robot(text)


def _get_models_directory() -> str:
    """A folder of robot description packages.

    Looks, in order, at the ``FIGAROH_MODELS_DIR`` environment variable and the
    robots folder of the installed ``example-robot-data`` wheel.

    Raises:
        FileNotFoundError: No models folder is available.
    """
    env = os.environ.get(MODELS_DIR_ENV)
    if env and Path(env).is_dir():
        return str(Path(env).resolve())
    erd = example_robot_data_dir()
    if erd is not None:
        return str(erd)
    raise FileNotFoundError(
        f"No robot models folder found: set {MODELS_DIR_ENV} to a folder of description "
        "packages or install example-robot-data (pip install example-robot-data)."
    )


def _prepare_package_dirs(
    robot_urdf: str,
    package_dirs: str | os.PathLike | Sequence[str | os.PathLike] | None,
    robot_pkg: str | None,
) -> str | os.PathLike | Sequence[str | os.PathLike] | None:
    """Resolve the ``package_dirs`` argument of the loaders.

    * explicit folders (other than the keyword ``"models"``) are returned unchanged;
    * ``"models"`` → :func:`_get_models_directory`;
    * ``None`` with ``robot_pkg`` → the parent of that package (via ``rospkg``
      when installed, else searched beside the URDF and in example-robot-data);
    * ``None`` otherwise → ``None``: the :class:`Robot` searches the URDF's
      parents and example-robot-data itself.
    """
    if package_dirs is not None:
        if isinstance(package_dirs, str) and package_dirs == "models":
            return _get_models_directory()
        return package_dirs
    if robot_pkg:
        if _check_package_available("rospkg"):
            try:
                import rospkg  # type: ignore[import-not-found]

                return str(Path(rospkg.RosPack().get_path(robot_pkg)).parent)
            except Exception as exc:  # noqa: BLE001 - rospkg raises its own types
                logger.debug("rospkg could not find %s: %s", robot_pkg, exc)
        found = find_package(robot_pkg, candidate_package_roots(robot_urdf))
        if found is not None:
            return str(found.parent)
        logger.warning(
            "robot_pkg %r not found beside %s nor in example-robot-data; searching defaults",
            robot_pkg,
            robot_urdf,
        )
    return None
