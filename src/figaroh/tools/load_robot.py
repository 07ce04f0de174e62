"""Robot loaders: figaroh's Robot, ``robot_descriptions`` and yourdfpy.

Three loaders are offered behind :func:`load_robot`:

* ``"figaroh"`` (default): a :class:`~figaroh.tools.robot.Robot` built from a
  URDF file (or, with ``load_by_urdf=False``, from the ROS parameter server).
* ``"robot_description"``: a Pinocchio ``RobotWrapper`` from the
  ``robot_descriptions`` package, by robot name.
* ``"yourdfpy"``: a ``yourdfpy.URDF`` object (scene graph + meshes), for viser.

``package://`` URIs are resolved without the caller passing ``package_dirs``
when the package lives beside the URDF (any parent folder) or in the installed
``example-robot-data`` wheel; see :mod:`figaroh.tools.robot_paths`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import Any, Union

from pinocchio.robot_wrapper import RobotWrapper

from .robot import PackageDirs, Robot
from .robot_paths import candidate_package_roots, example_robot_data_dir, find_package

logger = logging.getLogger(__name__)

SUPPORTED_LOADERS = ("figaroh", "robot_description", "yourdfpy")
MODELS_DIR_ENV = "FIGAROH_MODELS_DIR"


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
    robot_urdf: str, package_dirs: PackageDirs, robot_pkg: str | None
) -> PackageDirs:
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


def _load_from_ros_param(isFext: bool) -> RobotWrapper:
    """Build a model from the ``robot_description`` ROS parameter (needs rospy)."""
    if not _check_package_available("rospy"):
        raise ImportError(
            "Loading from the ROS parameter server needs rospy (a ROS 1 installation). "
            "Pass a URDF path with load_by_urdf=True instead."
        )
    import pinocchio as pin
    import rospy  # type: ignore[import-not-found]

    xml = rospy.get_param("robot_description")
    if isFext:
        model = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    else:
        model = pin.buildModelFromXML(xml)
    return RobotWrapper(model)


def _load_figaroh_original(
    robot_urdf: str,
    package_dirs: PackageDirs,
    isFext: bool,
    load_by_urdf: bool,
    robot_pkg: str | None,
    **kwargs,
) -> Union[Robot, RobotWrapper]:
    if not load_by_urdf:
        return _load_from_ros_param(isFext)
    _validate_urdf_exists(robot_urdf)
    dirs = _prepare_package_dirs(robot_urdf, package_dirs, robot_pkg)
    return Robot(
        robot_urdf,
        package_dirs=dirs,
        isFext=isFext,
        freeflyer_ori=kwargs.get("freeflyer_ori"),
        freeflyer_limits=kwargs.get("freeflyer_limits"),
        load_geometry=kwargs.get("load_geometry", True),
    )


def _load_robot_description(robot_name: str, isFext: bool = False, **kwargs) -> RobotWrapper:
    if not _check_package_available("robot_descriptions"):
        raise ImportError(
            "The 'robot_description' loader needs the robot_descriptions package: "
            "pip install robot_descriptions (it downloads description repositories on "
            "first use, so it needs network access)."
        )
    import pinocchio as pin
    from robot_descriptions.loaders.pinocchio import (  # type: ignore[import-not-found]
        load_robot_description,
    )

    if isFext:
        kwargs.setdefault("root_joint", pin.JointModelFreeFlyer())
    errors = []
    for name in (robot_name, f"{robot_name}_description"):
        try:
            return load_robot_description(name, **kwargs)
        except (ImportError, ModuleNotFoundError, ValueError, AttributeError) as exc:
            errors.append(f"{name}: {exc}")
    raise ValueError(
        f"robot_descriptions has no robot named {robot_name!r} (tried {robot_name!r} and "
        f"{robot_name + '_description'!r}): {'; '.join(errors)}. "
        "See list_available_robots('robot_description')."
    )


def _load_yourdfpy(
    robot_urdf: str, package_dirs: PackageDirs, robot_pkg: str | None, **kwargs
) -> Any:
    if not _check_package_available("yourdfpy"):
        raise ImportError(
            "The 'yourdfpy' loader needs yourdfpy and trimesh: pip install 'figaroh[viz]'"
        )
    import yourdfpy

    _validate_urdf_exists(robot_urdf)
    dirs = _prepare_package_dirs(robot_urdf, package_dirs, robot_pkg)
    roots = candidate_package_roots(robot_urdf, dirs)
    urdf_dir = str(Path(robot_urdf).resolve().parent)

    def handler(fname: str) -> str:
        if fname.startswith("package://"):
            pkg, _, rel = fname[len("package://") :].partition("/")
            found = find_package(pkg, roots)
            if found is not None:
                return str(found / rel)
        return yourdfpy.filename_handler_magic(fname, dir=urdf_dir)

    options = {
        "build_scene_graph": True,
        "build_collision_scene_graph": True,
        "load_meshes": True,
        "load_collision_meshes": False,
        "force_collision_mesh": False,
        "force_mesh": False,
    }
    options.update(kwargs)
    options.setdefault("filename_handler", handler)
    options.setdefault("mesh_dir", urdf_dir)
    return yourdfpy.URDF.load(str(robot_urdf), **options)


def load_robot(
    robot_urdf: str,
    package_dirs: PackageDirs = None,
    isFext: bool = False,
    load_by_urdf: bool = True,
    robot_pkg: str | None = None,
    loader: str = "figaroh",
    **kwargs,
) -> Union[Robot, RobotWrapper, Any]:
    """Load a robot model with one of the supported loaders.

    Args:
        robot_urdf: URDF path, or the robot name for ``robot_description``.
        package_dirs: Folders holding mesh packages; ``"models"`` means the
            models folder (``FIGAROH_MODELS_DIR`` or example-robot-data).
        isFext: Add a floating-base (free-flyer) root joint.
        load_by_urdf: Load from the URDF file (False: ROS parameter server).
        robot_pkg: Package name used to find ``package_dirs`` when not given.
        loader: ``"figaroh"``, ``"robot_description"`` or ``"yourdfpy"``.
        **kwargs: Passed to the loader; the figaroh loader accepts
            ``load_geometry=False`` for a dynamics-only model (no meshes needed),
            ``freeflyer_ori`` and ``freeflyer_limits``.

    Returns:
        ``"figaroh"``: a :class:`Robot`; ``"robot_description"``: a Pinocchio
        ``RobotWrapper``; ``"yourdfpy"``: a ``yourdfpy.URDF``.

    Raises:
        FileNotFoundError: URDF, package or mesh not found.
        ImportError: The loader's package is not installed.
        ValueError: Unsupported loader.
    """
    if loader == "robot_description":
        return _load_robot_description(robot_urdf, isFext, **kwargs)
    if loader == "yourdfpy":
        return _load_yourdfpy(robot_urdf, package_dirs, robot_pkg, **kwargs)
    if loader == "figaroh":
        return _load_figaroh_original(
            robot_urdf, package_dirs, isFext, load_by_urdf, robot_pkg, **kwargs
        )
    raise ValueError(
        f"Unsupported loader: {loader!r}. Supported loaders: {', '.join(SUPPORTED_LOADERS)}"
    )


def get_available_loaders() -> dict:
    """Information about each loader and whether its package is installed.

    Returns:
        ``{loader: {"description", "available", "returns", "features"}}``.
    """
    return {
        "figaroh": {
            "description": "Original figaroh Robot class",
            "available": True,
            "returns": "Robot instance",
            "features": ["URDF loading", "ROS param server", "Free-flyer support"],
        },
        "robot_description": {
            "description": "Load from robot_descriptions package",
            "available": _check_package_available("robot_descriptions"),
            "returns": "RobotWrapper instance",
            "features": ["Pre-defined robot models", "Easy robot switching"],
        },
        "yourdfpy": {
            "description": "Load with yourdfpy (for visualization)",
            "available": _check_package_available("yourdfpy"),
            "returns": "URDF object",
            "features": ["Visualization support", "Mesh loading", "Scene graphs"],
        },
    }


def list_available_robots(loader: str = "robot_description") -> list:
    """Names of the robots a loader can load by name.

    Args:
        loader: ``"robot_description"`` lists the ``robot_descriptions``
            catalogue; ``"figaroh"`` lists the URDFs shipped by the installed
            ``example-robot-data`` wheel as ``"<package>/<relative path>"``.

    Returns:
        Sorted names (empty when the source is unavailable).
    """
    if loader == "robot_description":
        if not _check_package_available("robot_descriptions"):
            return []
        try:
            import robot_descriptions  # type: ignore[import-not-found]
        except Exception:  # noqa: BLE001 - an optional package may fail to import
            return []
        names = []
        descriptions = getattr(robot_descriptions, "DESCRIPTIONS", None)
        if isinstance(descriptions, dict):
            for name, info in descriptions.items():
                if getattr(info, "has_urdf", False) or hasattr(info, "URDF_PATH"):
                    names.append(name)
        else:
            for attr in dir(robot_descriptions):
                if not attr.startswith("_") and hasattr(
                    getattr(robot_descriptions, attr), "URDF_PATH"
                ):
                    names.append(attr)
        return sorted(names)
    if loader == "figaroh":
        base = example_robot_data_dir()
        if base is None:
            return []
        return sorted(str(p.relative_to(base)) for p in base.glob("*/**/*.urdf"))
    return []
