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
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from .exceptions import MissingMeshError, MissingPackageError

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
    candidates: list[Path] = []
    try:
        from importlib import metadata

        dist = metadata.distribution("example-robot-data")
        candidates.append(
            Path(str(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")))
        )
    except Exception:  # noqa: BLE001 - metadata lookup is best effort
        pass
    for entry in sys.path:
        if entry:
            candidates.append(
                Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
            )
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
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _validate_urdf_exists(robot_urdf: str | os.PathLike) -> None:
    """Raise ``FileNotFoundError`` naming the URDF path when it is not a file."""
    if not Path(robot_urdf).is_file():
        raise FileNotFoundError(
            f"URDF file not found: {robot_urdf}. Check the path (relative paths are "
            f"resolved from {Path.cwd()})."
        )


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
