"""The :class:`Robot` model and the loaders that build robot models.

A :class:`Robot` is what every figaroh workflow receives. It loads a URDF into a
Pinocchio model (``robot.model`` / ``robot.data``), optionally with a free-flyer
root joint (floating base, ``isFext=True``), and optionally without geometry
(``load_geometry=False``): dynamic identification only needs the kinematic tree
and the inertias, so a URDF whose meshes are missing still loads that way.

:func:`load_robot` dispatches between three loaders (also reachable from
:mod:`figaroh.tools.load_robot`, their figaroh 1.0.2 module path):

* ``"figaroh"`` (default): a :class:`Robot` built from a URDF file, or a
  Pinocchio ``RobotWrapper`` built from the ROS ``robot_description`` parameter;
* ``"robot_description"``: a ``RobotWrapper`` from the ``robot_descriptions``
  catalogue (optional package);
* ``"yourdfpy"``: a ``yourdfpy.URDF`` for visualisation (optional package).

Units follow Pinocchio/URDF: lengths [m], angles [rad], masses [kg], inertias
[kg·m²] about the link origin.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Sequence, Tuple, Union

import numpy as np
import pinocchio as pin
from pinocchio.robot_wrapper import RobotWrapper

from ..backends.pinocchio import PinocchioBackend
from .exceptions import RobotLoadError
from .robot_paths import (
    _check_package_available,
    _prepare_package_dirs,
    _validate_urdf_exists,
    candidate_package_roots,
    example_robot_data_dir,
    find_package,
    resolve_package_dirs,
)
from .robotvisualization import create_viser_server

logger = logging.getLogger(__name__)

PackageDirs = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], None]

__all__ = [
    "PackageDirs",
    "Robot",
    "build_pinocchio_models",
    "SUPPORTED_LOADERS",
    "create_robot",
    "get_available_loaders",
    "list_available_robots",
    "load_robot",
]


def _validate_urdf_path(robot_urdf: str | os.PathLike) -> Path:
    path = Path(robot_urdf)
    if not path.is_file():
        raise FileNotFoundError(
            f"URDF file not found: {path}. Check the path (relative paths are resolved "
            f"from the current directory {Path.cwd()})."
        )
    return path


def build_pinocchio_models(
    robot_urdf: str | os.PathLike,
    package_dirs: PackageDirs = None,
    *,
    isFext: bool = False,
    load_geometry: bool = True,
) -> tuple[pin.Model, pin.GeometryModel | None, pin.GeometryModel | None]:
    """Parse a URDF into a Pinocchio model and, optionally, its geometry models.

    Args:
        robot_urdf: Path of the URDF file.
        package_dirs: Extra folders holding ``package://`` packages (searched
            before the URDF's parents and the ``example-robot-data`` wheel).
        isFext: Add a ``JointModelFreeFlyer`` root joint (floating base).
        load_geometry: Also build the collision and visual geometry models
            (requires every referenced mesh to exist).

    Returns:
        ``(model, collision_model, visual_model)``; the geometry models are
        ``None`` when ``load_geometry`` is False.

    Raises:
        FileNotFoundError: The URDF, a referenced package or a mesh is missing
            (the message names what is missing and the folders searched).
        RobotLoadError: The file is not a valid URDF.
    """
    path = _validate_urdf_path(robot_urdf)
    root_joint = pin.JointModelFreeFlyer() if isFext else None
    try:
        if not load_geometry:
            if root_joint is None:
                return pin.buildModelFromUrdf(str(path)), None, None
            return pin.buildModelFromUrdf(str(path), root_joint), None, None
        dirs = resolve_package_dirs(path, package_dirs, check_meshes=True)
        model, collision, visual = pin.buildModelsFromUrdf(
            str(path), package_dirs=dirs, root_joint=root_joint
        )
        return model, collision, visual
    except FileNotFoundError:
        raise
    except (ValueError, RuntimeError) as exc:
        raise RobotLoadError(
            f"Pinocchio could not build a model from {path}: {exc}. Check that the file "
            f"is a valid URDF (a <robot name=...> root with links and joints)."
        ) from exc


class Robot(RobotWrapper):
    """Robot model loaded from a URDF, with free-flyer support.

    Attributes:
        model: Pinocchio kinematic/dynamic model.
        data: Pinocchio data matching ``model``.
        collision_model: Collision geometry (``None`` without geometry).
        visual_model: Visual geometry (``None`` without geometry).
        geom_model: Alias of ``collision_model``.
        isFext: Whether a free-flyer root joint was added.
        robot_urdf: Path of the URDF the model was built from.
    """

    DEFAULT_FREEFLYER_LIMITS: Tuple[float, float] = (-1.0, 1.0)

    def __init__(
        self,
        robot_urdf: str,
        package_dirs: PackageDirs = None,
        isFext: bool = False,
        freeflyer_ori: np.ndarray | None = None,
        freeflyer_limits: Tuple[float, float] | None = None,
        *,
        load_geometry: bool = True,
    ):
        """Initialize the robot model from a URDF.

        Args:
            robot_urdf: Path to the URDF file.
            package_dirs: Folders holding the ``package://`` packages of the
                meshes. ``None`` searches the URDF's parent folders and the
                installed ``example-robot-data`` wheel.
            isFext: Add a floating-base (free-flyer) root joint.
            freeflyer_ori: Optional 3×3 rotation matrix: orientation of the
                floating base in the neutral configuration ``q0``.
            freeflyer_limits: ``(lower, upper)`` bounds [m] on the free-flyer
                translation (default ``(-1, 1)``).
            load_geometry: Build collision/visual geometry (needs the meshes).
                Pass ``False`` for a dynamics-only model.

        Raises:
            FileNotFoundError: URDF, package or mesh missing.
            RobotLoadError: Invalid URDF.
            ValueError: Bad ``freeflyer_ori`` or ``freeflyer_limits``.
        """
        self.isFext = bool(isFext)
        self.robot_urdf = str(robot_urdf)
        self.load_geometry = bool(load_geometry)
        self._freeflyer_limits = self._check_limits(
            freeflyer_limits if freeflyer_limits is not None else self.DEFAULT_FREEFLYER_LIMITS
        )
        model, collision, visual = build_pinocchio_models(
            robot_urdf, package_dirs, isFext=self.isFext, load_geometry=self.load_geometry
        )
        RobotWrapper.__init__(self, model=model, collision_model=collision, visual_model=visual)
        if self.isFext:
            self._configure_freeflyer(freeflyer_ori)
        elif freeflyer_ori is not None:
            raise ValueError("freeflyer_ori was given but isFext is False: add isFext=True.")
        self.geom_model = self.collision_model
        self._backend = None

    # ------------------------------------------------------------------ free flyer
    @staticmethod
    def _check_limits(limits) -> Tuple[float, float]:
        try:
            lo, hi = (float(limits[0]), float(limits[1]))
        except (TypeError, IndexError, ValueError) as exc:
            raise ValueError(
                f"freeflyer_limits must be a (lower, upper) pair of floats [m], got {limits!r}"
            ) from exc
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo >= hi:
            raise ValueError(
                f"freeflyer_limits must be finite with lower < upper, got ({lo}, {hi})"
            )
        return lo, hi

    def _configure_freeflyer(self, freeflyer_ori: np.ndarray | None) -> None:
        self._set_freeflyer_limits()
        if freeflyer_ori is not None:
            rot = np.asarray(freeflyer_ori, dtype=float)
            if rot.shape != (3, 3):
                raise ValueError(f"freeflyer_ori must be a 3x3 rotation matrix, got {rot.shape}")
            if not np.allclose(rot.T @ rot, np.eye(3), atol=1e-6) or np.linalg.det(rot) <= 0:
                raise ValueError(
                    "freeflyer_ori is not a proper rotation matrix (RᵀR ≠ I or det ≤ 0)"
                )
            quat = pin.Quaternion(rot)
            quat.normalize()
            self.q0[3:7] = quat.coeffs()

    def _set_freeflyer_limits(self) -> None:
        lo, hi = self._freeflyer_limits
        self.model.lowerPositionLimit[:3] = lo
        self.model.upperPositionLimit[:3] = hi
        self.model.lowerPositionLimit[3:7] = -1.0
        self.model.upperPositionLimit[3:7] = 1.0

    @property
    def freeflyer_limits(self) -> Tuple[float, float]:
        """Current free-flyer translation limits ``(lower, upper)`` [m]."""
        return self._freeflyer_limits

    def update_freeflyer_limits(self, limits: Tuple[float, float]) -> None:
        """Update the free-flyer translation limits [m].

        Raises:
            ValueError: The robot has no free-flyer, or the limits are invalid.
        """
        if not self.isFext:
            raise ValueError("Robot does not have a free-flyer joint (load it with isFext=True)")
        self._freeflyer_limits = self._check_limits(limits)
        self._set_freeflyer_limits()

    # ------------------------------------------------------------------ joints
    @property
    def num_joints(self) -> int:
        """Number of actuated joints (excluding universe and free-flyer)."""
        return self.model.njoints - 1 - (1 if self.isFext else 0)

    @property
    def actuated_joint_names(self) -> list[str]:
        """Names of the actuated joints, in model order."""
        return list(self.model.names[2 if self.isFext else 1 :])

    @property
    def backend(self):
        """Lazily created :class:`~figaroh.backends.pinocchio.PinocchioBackend`.

        It shares this robot's ``model`` and ``data`` (no reloading).
        """
        if self._backend is None:
            self._backend = PinocchioBackend.from_model(self.model, self.data)
        return self._backend

    # ------------------------------------------------------------------ configuration
    def get_configuration_bounds(self) -> Tuple[np.ndarray, np.ndarray]:
        """Lower and upper configuration bounds, quaternion entries set to ±1."""
        lb = np.array(self.model.lowerPositionLimit, dtype=float, copy=True)
        ub = np.array(self.model.upperPositionLimit, dtype=float, copy=True)
        if self.isFext:
            lb[3:7] = -1.0
            ub[3:7] = 1.0
        return lb, ub

    def validate_configuration(self, q: np.ndarray) -> bool:
        """Whether ``q`` has the model's size, lies within bounds and has a unit quaternion.

        Args:
            q: Configuration vector (nq,) [rad, m].

        Returns:
            True if valid; False otherwise (never raises for a wrong size).
        """
        q = np.asarray(q, dtype=float).ravel()
        if q.shape[0] != self.model.nq or not np.all(np.isfinite(q)):
            return False
        lb, ub = self.get_configuration_bounds()
        if not np.all((q >= lb) & (q <= ub)):
            return False
        if self.isFext and not np.isclose(np.linalg.norm(q[3:7]), 1.0, atol=1e-6):
            return False
        return True

    # ------------------------------------------------------------------ display
    @staticmethod
    def _get_visualizer_class(visualizer_type: str | None):
        import pinocchio.visualize as pvis

        name = (visualizer_type or "viser").lower()
        classes = {
            "viser": "ViserVisualizer",
            "meshcat": "MeshcatVisualizer",
            "gepetto": "GepettoVisualizer",
        }
        if name not in classes:
            raise ValueError(
                f"Unknown visualizer_type {visualizer_type!r}; choose one of {sorted(classes)}"
            )
        cls = getattr(pvis, classes[name], None)
        if cls is None:
            raise ImportError(f"Pinocchio has no {classes[name]} in this installation")
        return cls

    def display_q0(self, visualizer_type: str | None = None, q: np.ndarray | None = None) -> None:
        """Show the robot in a viewer at ``q`` (default: the neutral ``q0``).

        With viser (the default) a server is started on the loopback interface
        ``127.0.0.1`` (port 8080, or the next free one) and keeps serving from a
        background thread; it is ``self.viz.viewer`` — call
        ``self.viz.viewer.stop()`` to close it. The URL is logged at INFO level.

        Args:
            visualizer_type: ``"viser"`` (default), ``"meshcat"`` or ``"gepetto"``.
            q: Configuration to display (nq,).

        Raises:
            RuntimeError: The robot was loaded without geometry.
            ImportError: The viewer's Python package is not installed.
        """
        if self.visual_model is None:
            raise RuntimeError(
                "This robot was loaded without geometry (load_geometry=False); reload it "
                "with geometry to display it."
            )
        visualizer_class = self._get_visualizer_class(visualizer_type)
        self.setVisualizer(visualizer_class())
        if (visualizer_type or "viser").lower() == "viser":
            self.initViewer(viewer=create_viser_server(port=8080))
        else:
            self.initViewer()
        self.loadViewerModel()
        config = q if q is not None else self.q0
        if not self.validate_configuration(config):
            logger.warning("display_q0: configuration is outside the model's bounds")
        self.display(config)

    def __repr__(self) -> str:
        return (
            f"Robot(urdf='{self.robot_urdf}', "
            f"actuated_joints={self.num_joints}, "
            f"total_dofs={self.model.nv}, "
            f"free_flyer={self.isFext})"
        )


def create_robot(
    robot_urdf: str,
    package_dirs: PackageDirs = None,
    loader: str = "figaroh",
    enhanced_features: bool = True,
    **kwargs,
) -> Union[Robot, RobotWrapper]:
    """Factory: a :class:`Robot` (default) or whatever another loader returns.

    Args:
        robot_urdf: URDF path, or a robot name for the ``robot_description`` loader.
        package_dirs: Folders holding the mesh packages.
        loader: ``"figaroh"``, ``"robot_description"`` or ``"yourdfpy"``.
        enhanced_features: With the ``figaroh`` loader, return a :class:`Robot`.
        **kwargs: ``isFext``, ``freeflyer_ori``, ``freeflyer_limits``,
            ``load_geometry``, ``robot_pkg`` or loader-specific options.

    Returns:
        A :class:`Robot`, a Pinocchio ``RobotWrapper`` or a yourdfpy ``URDF``.
    """
    if enhanced_features and loader == "figaroh":
        _validate_urdf_exists(robot_urdf)
        dirs = _prepare_package_dirs(robot_urdf, package_dirs, kwargs.get("robot_pkg"))
        return Robot(
            robot_urdf,
            package_dirs=dirs,
            isFext=kwargs.get("isFext", False),
            freeflyer_ori=kwargs.get("freeflyer_ori"),
            freeflyer_limits=kwargs.get("freeflyer_limits"),
            load_geometry=kwargs.get("load_geometry", True),
        )
    return load_robot(robot_urdf, package_dirs, loader=loader, **kwargs)


SUPPORTED_LOADERS = ("figaroh", "robot_description", "yourdfpy")


def _load_from_ros_param(isFext: bool) -> RobotWrapper:
    """Build a model from the ``robot_description`` ROS parameter (needs rospy)."""
    if not _check_package_available("rospy"):
        raise ImportError(
            "Loading from the ROS parameter server needs rospy (a ROS 1 installation). "
            "Pass a URDF path with load_by_urdf=True instead."
        )
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
