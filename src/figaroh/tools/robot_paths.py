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
    starts = [Path(start)] if start is not None else [Path.cwd()]
    if start is None:
        script_dir = _main_script_dir()
        if script_dir is not None:
            starts.append(script_dir)
    found: dict[Path, None] = {}
    for first in starts:
        try:
            folder = first.resolve()
        except OSError:
            continue
        for current in (folder, *folder.parents):
            models = current / "models"
            if models.is_dir():
                found.setdefault(models.resolve(), None)
            if any((current / marker).exists() for marker in PROJECT_MARKERS):
                break
    return list(found)


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
    roots: list[Path] = list(_as_list(package_dirs))
    urdf = Path(urdf_path).resolve()
    roots.extend(urdf.parents)
    roots.append(Path.cwd())
    roots.extend(project_models_dirs())
    erd = example_robot_data_dir()
    if erd is not None:
        # URDFs of the wheel say package://example-robot-data/robots/<pkg>/...
        roots.extend([erd, erd.parent])
    unique: dict[Path, None] = {}
    for root in roots:
        try:
            resolved = root.resolve()
        except OSError:
            continue
        if resolved.is_dir():
            unique.setdefault(resolved, None)
    return list(unique)


def find_package(name: str, roots: Iterable[Path]) -> Path | None:
    """First ``root/<name>`` folder among ``roots`` (or a root that *is* the package)."""
    for root in roots:
        if root.name == name:
            return root
        candidate = root / name
        if candidate.is_dir():
            return candidate
    return None


def resolve_package_dirs(
    urdf_path: str | os.PathLike,
    package_dirs: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    *,
    check_meshes: bool = True,
) -> list[str]:
    """Build the ``package_dirs`` list Pinocchio needs to load a URDF's meshes.

    Every package referenced by a ``package://`` URI must be found in one of the
    candidate roots (see :func:`candidate_package_roots`); with
    ``check_meshes`` every referenced mesh file must also exist.

    Args:
        urdf_path: Path of the URDF file.
        package_dirs: Extra folders to search first.
        check_meshes: Also verify that each mesh file exists.

    Returns:
        Folders to pass as Pinocchio's ``package_dirs`` (the parents of the
        resolved packages, then the remaining candidate roots).

    Raises:
        MissingPackageError: A referenced package is in none of the folders.
        MissingMeshError: A referenced mesh file does not exist.
    """
    urdf = Path(urdf_path)
    text = urdf.read_text(encoding="utf-8", errors="replace")
    roots = candidate_package_roots(urdf, package_dirs)
    resolved: dict[str, Path] = {}
    for pkg in referenced_packages(text):
        found = find_package(pkg, roots)
        if found is None:
            searched = "\n  ".join(str(r) for r in roots)
            raise MissingPackageError(
                f"URDF {urdf} references package '{pkg}' (package://{pkg}/...), which was not "
                f"found in any of these folders:\n  {searched}\n"
                f"Pass package_dirs=<folder containing '{pkg}'>, or load without geometry "
                f"(load_geometry=False) if you only need dynamics."
            )
        resolved[pkg] = found
    if check_meshes:
        for match in _FILE_URI.finditer(text):
            uri = match.group(1)
            if uri.startswith("package://"):
                pkg, _, rel = uri[len("package://") :].partition("/")
                mesh = resolved[pkg] / rel
                where = f"package '{pkg}' at {resolved[pkg]}"
            elif uri.startswith("file://"):
                mesh = Path(uri[len("file://") :])
                where = "an absolute file:// URI"
            else:
                mesh = (urdf.parent / uri) if not os.path.isabs(uri) else Path(uri)
                where = f"the URDF folder {urdf.parent}"
            if not mesh.exists():
                raise MissingMeshError(
                    f"URDF {urdf} references mesh '{uri}', resolved through {where} to "
                    f"{mesh}, which does not exist. Folders searched for packages: "
                    f"{', '.join(str(r) for r in roots)}. Provide the mesh files or load "
                    f"without geometry (load_geometry=False)."
                )
    dirs: dict[str, None] = {}
    for found in resolved.values():
        dirs.setdefault(str(found.parent), None)
    for root in roots:
        dirs.setdefault(str(root), None)
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
