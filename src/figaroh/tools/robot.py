"""The :class:`Robot` model and the loaders that build robot models.

A :class:`Robot` is what every figaroh workflow receives. It loads a URDF into a
Pinocchio model (``robot.model`` / ``robot.data``), optionally with a free-flyer
root joint (floating base, ``isFext=True``). Its geometry models
(``collision_model``, ``visual_model`` and their data) are parsed from the
meshes the first time something reads them (a viewer, collision checking,
export validation): dynamic identification and geometric calibration only need
the kinematic tree and the inertias, so they never pay for the meshes.
``load_geometry=False`` makes a dynamics-only model whose geometry attributes
are ``None``.

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

import inspect
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, Tuple, Union

import numpy as np
import pinocchio as pin
from pinocchio.robot_wrapper import RobotWrapper

# figaroh.tools.robotvisualization is reached as a lazy attribute of the package
# (only the viewer needs it).
import figaroh.tools as _tools

from .._optional import require
from ..backends.pinocchio import PinocchioBackend
from .exceptions import RobotLoadError
from .robot_paths import (
    _check_package_available,
    _prepare_package_dirs,
    _validate_urdf_exists,
    candidate_package_roots,
    description_fetch_error,
    example_robot_data_dir,
    find_package,
    import_robot_description,
    is_imported_description,
    resolve_package_dirs,
    resolve_robot_urdf,
    robot_description_module,
)

logger = logging.getLogger(__name__)

PackageDirs = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], None]

__all__ = [
    "PackageDirs",
    "Robot",
    "SUPPORTED_LOADERS",
    "create_robot",
    "get_available_loaders",
    "list_available_robots",
    "load_robot",
]


#: Geometry kinds a :class:`Robot` builds on demand, with their Pinocchio type.
_GEOMETRY_TYPES = {"collision": pin.GeometryType.COLLISION, "visual": pin.GeometryType.VISUAL}


def _build_model(path: str, isFext: bool) -> pin.Model:
    """Parse the kinematic/dynamic model of a URDF (no mesh is read).

    Raises:
        RobotLoadError: The file is not a valid URDF.
    """
    try:
        if isFext:
            return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        return pin.buildModelFromUrdf(path)
    except (ValueError, RuntimeError) as exc:
        raise RobotLoadError(
            f"Pinocchio could not build a model from {path}: {exc}. Check that the file "
            f"is a valid URDF (a <robot name=...> root with links and joints)."
        ) from exc


@dataclass(frozen=True)
class _GeometrySource:
    """Where a :class:`Robot` reads its meshes from when a geometry model is first used.

    Recorded when the robot is loaded, so that building the geometry later
    (after a ``chdir``, say) searches the same folders as loading it eagerly
    would have.

    Attributes:
        urdf: Absolute path of the URDF file.
        package_dirs: Absolute folders given by the caller, searched first.
        cwd: Working directory at load time (a ``package://`` search root).
        isFext: Whether the model has a free-flyer root joint.
    """

    urdf: str
    package_dirs: Tuple[str, ...]
    cwd: str
    isFext: bool

    @classmethod
    def record(cls, robot_urdf: str | os.PathLike, package_dirs: PackageDirs, isFext: bool):
        """The source of ``robot_urdf`` as seen from the current working directory."""
        cwd = os.getcwd()
        if package_dirs is None:
            dirs: list = []
        elif isinstance(package_dirs, (str, os.PathLike)):
            dirs = [p for p in os.fspath(package_dirs).split(os.pathsep) if p]
        else:
            dirs = list(package_dirs)
        return cls(
            urdf=os.path.join(cwd, os.fspath(robot_urdf)),
            package_dirs=tuple(os.path.join(cwd, os.fspath(p)) for p in dirs),
            cwd=cwd,
            isFext=bool(isFext),
        )

    def build(self, kind: str) -> pin.GeometryModel:
        """Parse the ``"collision"`` or ``"visual"`` meshes of the URDF.

        The geometry is attached to a freshly parsed model of the same URDF,
        so it equals what ``pin.buildModelsFromUrdf`` gives at load time even
        if the robot's own model was edited since.

        Raises:
            MissingPackageError: A ``package://`` package is in none of the folders.
            MissingMeshError: A referenced mesh file does not exist.
            RobotLoadError: Pinocchio could not read the meshes.
        """
        dirs = resolve_package_dirs(self.urdf, self.package_dirs, check_meshes=True, cwd=self.cwd)
        model = _build_model(self.urdf, self.isFext)
        try:
            return pin.buildGeomFromUrdf(model, self.urdf, _GEOMETRY_TYPES[kind], package_dirs=dirs)
        except (ValueError, RuntimeError) as exc:
            raise RobotLoadError(
                f"Pinocchio could not build the {kind} geometry of {self.urdf}: {exc}. "
                f"Check the mesh files, or load with load_geometry=False for dynamics only."
            ) from exc


class _OnDemandGeometry:
    """Data descriptor of one geometry attribute of :class:`Robot`, built on first read.

    ``Robot.visual_model`` / ``visual_data`` and ``collision_model`` /
    ``collision_data`` read ``robot.__dict__["_<kind>_model"]`` and
    ``["_<kind>_data"]``; while those are absent the kind is pending and the
    first read of either parses that kind's meshes from
    ``robot._geometry_source`` into the model and creates its data
    (``None`` source: no geometry, both are ``None``). Assigning a model
    stores it with a fresh ``createData()``; assigning data stores it as
    given.
    """

    def __init__(self, kind: str, part: str) -> None:
        self.kind, self.part = kind, part
        self.key = f"_{kind}_{part}"

    def __get__(self, robot: Any, owner: type | None = None) -> Any:
        if robot is None:
            return self
        state = robot.__dict__
        if f"_{self.kind}_model" not in state:
            source = state.get("_geometry_source")
            self._store(robot, source.build(self.kind) if source is not None else None)
        return state[self.key]

    def __set__(self, robot: Any, value: Any) -> None:
        if self.part == "model":
            self._store(robot, value)
        else:
            self.__get__(robot)  # resolve the pending model first
            robot.__dict__[self.key] = value

    def _store(self, robot: Any, model: pin.GeometryModel | None) -> None:
        robot.__dict__[f"_{self.kind}_model"] = model
        robot.__dict__[f"_{self.kind}_data"] = model.createData() if model is not None else None

    @staticmethod
    def is_built(robot: Any, kind: str) -> bool:
        """Whether ``kind`` (``"collision"`` / ``"visual"``) is no longer pending."""
        return f"_{kind}_model" in robot.__dict__

    @staticmethod
    def forget(robot: Any) -> None:
        """Make every kind pending again."""
        for kind in _GEOMETRY_TYPES:
            robot.__dict__.pop(f"_{kind}_model", None)
            robot.__dict__.pop(f"_{kind}_data", None)


class Robot(RobotWrapper):
    """Robot model loaded from a URDF, with free-flyer support.

    Only the kinematic/dynamic model is parsed at load time. The geometry
    models are built on demand: the first read of ``collision_model`` /
    ``collision_data`` / ``geom_model`` parses the collision meshes, the
    first read of ``visual_model`` / ``visual_data`` the visual meshes
    (viewers, collision checking and export validation read them; dynamic
    identification and geometric calibration never do). The result equals
    what an eager ``pin.buildModelsFromUrdf`` gives.

    Attributes:
        model: Pinocchio kinematic/dynamic model.
        data: Pinocchio data matching ``model``.
        collision_model: Collision geometry (``None`` without geometry);
            built on first read.
        collision_data: Data of ``collision_model``.
        visual_model: Visual geometry (``None`` without geometry); built on
            first read.
        visual_data: Data of ``visual_model``.
        geom_model: Alias of ``collision_model``.
        isFext: Whether a free-flyer root joint was added.
        robot_urdf: Path of the URDF the model was built from.
        load_geometry: Whether geometry is available.
    """

    DEFAULT_FREEFLYER_LIMITS: Tuple[float, float] = (-1.0, 1.0)

    collision_model = _OnDemandGeometry("collision", "model")
    collision_data = _OnDemandGeometry("collision", "data")
    visual_model = _OnDemandGeometry("visual", "model")
    visual_data = _OnDemandGeometry("visual", "data")

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
            load_geometry: Make the collision/visual geometry available (True:
                each is parsed from the meshes at its first read; a missing
                package or mesh raises ``MissingPackageError`` /
                ``MissingMeshError`` there). ``False``: a dynamics-only model,
                the geometry attributes are ``None``.

        Raises:
            FileNotFoundError: URDF missing.
            RobotLoadError: Invalid URDF.
            ValueError: Bad ``freeflyer_ori`` or ``freeflyer_limits``.
        """
        _validate_urdf_exists(robot_urdf)
        self.isFext = bool(isFext)
        self.robot_urdf = str(robot_urdf)
        self.load_geometry = bool(load_geometry)
        self._freeflyer_limits = self._check_limits(
            freeflyer_limits if freeflyer_limits is not None else self.DEFAULT_FREEFLYER_LIMITS
        )
        RobotWrapper.__init__(self, model=_build_model(self.robot_urdf, self.isFext))
        self._geometry_source = (
            _GeometrySource.record(robot_urdf, package_dirs, self.isFext)
            if self.load_geometry
            else None
        )
        _OnDemandGeometry.forget(self)
        if self.isFext:
            self._configure_freeflyer(freeflyer_ori)
        elif freeflyer_ori is not None:
            raise ValueError("freeflyer_ori was given but isFext is False: add isFext=True.")
        self._backend = None

    # ------------------------------------------------------------------ geometry
    @property
    def geom_model(self) -> pin.GeometryModel | None:
        """Alias of ``collision_model`` (built on first read)."""
        return self.collision_model

    @geom_model.setter
    def geom_model(self, value: pin.GeometryModel | None) -> None:
        self.collision_model = value

    def rebuildData(self) -> None:
        """Re-create ``data`` and the data of the geometry models already built.

        Pending geometry stays pending (its data is created when it is built).
        """
        if all(_OnDemandGeometry.is_built(self, kind) for kind in _GEOMETRY_TYPES):
            super().rebuildData()
            return
        self.data = self.model.createData()
        for kind in _GEOMETRY_TYPES:
            if _OnDemandGeometry.is_built(self, kind):
                model = self.__dict__[f"_{kind}_model"]
                self.__dict__[f"_{kind}_data"] = model.createData() if model is not None else None

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
            self.initViewer(viewer=_tools.robotvisualization.create_viser_server(port=8080))
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
    robot_urdf = str(resolve_robot_urdf(robot_urdf))
    dirs = _prepare_package_dirs(robot_urdf, package_dirs, robot_pkg)
    return Robot(
        robot_urdf,
        package_dirs=dirs,
        isFext=isFext,
        freeflyer_ori=kwargs.get("freeflyer_ori"),
        freeflyer_limits=kwargs.get("freeflyer_limits"),
        load_geometry=kwargs.get("load_geometry", True),
    )


#: Options of the ``robot_description`` loader handled by figaroh itself.
_DESCRIPTION_OWN_OPTIONS = ("load_geometry",)


def _description_loader_options(loader: Any, options: dict) -> None:
    """Refuse options the installed ``robot_descriptions`` Pinocchio loader does not take.

    Raises:
        TypeError: Naming the unknown options and every accepted one.
    """
    try:
        parameters = list(inspect.signature(loader).parameters.values())[1:]
    except (TypeError, ValueError):  # no signature to read: let the loader judge
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = [p.name for p in parameters]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(
            f"load_robot(loader='robot_description') got unknown option(s) {unknown}: it "
            f"takes isFext, {', '.join(_DESCRIPTION_OWN_OPTIONS)} and the options of the "
            f"installed robot_descriptions Pinocchio loader ({', '.join(accepted) or 'none'})"
        )


def _load_robot_description(robot_name: str, isFext: bool = False, **kwargs) -> RobotWrapper:
    """A Pinocchio ``RobotWrapper`` of the ``robot_descriptions`` description ``robot_name``.

    ``robot_name`` is a catalogue name, with or without its ``_description``
    suffix (``"ur10"`` or ``"ur10_description"``). ``robot_descriptions``
    downloads the description's repository on first use.

    Args:
        robot_name: Description name.
        isFext: Free-flyer root joint (``root_joint=pin.JointModelFreeFlyer()``).
        **kwargs: ``load_geometry=False`` builds the model from the
            description's URDF without its meshes (``visual_model`` and
            ``collision_model`` are ``None``); the other options go to
            ``robot_descriptions.loaders.pinocchio.load_robot_description``
            (``root_joint``, and ``commit`` in its recent versions).

    Raises:
        ImportError: robot_descriptions is not installed.
        ValueError: robot_descriptions has no description of that name.
        TypeError: An option neither figaroh nor the installed loader takes.
        RobotDescriptionFetchError: The description's files are not cached and
            could not be fetched (no network or no git); the message says how
            to fetch them.
    """
    if not _check_package_available("robot_descriptions"):
        raise ImportError(
            "The 'robot_description' loader needs the robot_descriptions package: "
            "pip install robot_descriptions (it downloads description repositories on "
            "first use, so it needs network access)."
        )
    options = dict(kwargs)
    load_geometry = bool(options.pop("load_geometry", True))
    if isFext:
        options.setdefault("root_joint", pin.JointModelFreeFlyer())
    module_name = robot_description_module(robot_name)
    if module_name is None:
        raise ValueError(
            f"robot_descriptions has no robot named {robot_name!r} (tried {robot_name!r} and "
            f"{robot_name + '_description'!r}). See list_available_robots('robot_description')."
        )
    if not load_geometry and set(options) <= {"root_joint"}:
        urdf = getattr(import_robot_description(module_name), "URDF_PATH", None)
        if urdf:
            root_joint = options.get("root_joint")
            model = (
                pin.buildModelFromUrdf(str(urdf))
                if root_joint is None
                else pin.buildModelFromUrdf(str(urdf), root_joint)
            )
            return RobotWrapper(model)
    loader = require(
        "robot_descriptions.loaders.pinocchio",
        package="robot_descriptions",
        purpose="The 'robot_description' loader",
    ).load_robot_description
    _description_loader_options(loader, options)
    try:
        robot = loader(module_name, **options)
    except Exception as exc:
        if is_imported_description(module_name):
            raise  # the files are there: a failure of the model itself
        raise description_fetch_error(module_name, exc) from exc
    if not load_geometry:
        robot.collision_model = robot.visual_model = None
        robot.collision_data = robot.visual_data = None
    return robot


def _load_yourdfpy(
    robot_urdf: str, package_dirs: PackageDirs, robot_pkg: str | None, **kwargs
) -> Any:
    if not _check_package_available("yourdfpy"):
        raise ImportError(
            "The 'yourdfpy' loader needs yourdfpy and trimesh: pip install 'figaroh[viz]'"
        )
    import yourdfpy

    robot_urdf = str(resolve_robot_urdf(robot_urdf))
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

    options: dict[str, Any] = {
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
        robot_urdf: URDF path or robot name (``"ur10"``: see
            :func:`figaroh.tools.robot_paths.resolve_robot_urdf`; for
            ``robot_description`` the catalogue name).
        package_dirs: Folders holding mesh packages; ``"models"`` means the
            models folder (``FIGAROH_MODELS_DIR`` or example-robot-data).
        isFext: Add a floating-base (free-flyer) root joint.
        load_by_urdf: Load from the URDF file (False: ROS parameter server).
        robot_pkg: Package name used to find ``package_dirs`` when not given.
        loader: ``"figaroh"``, ``"robot_description"`` or ``"yourdfpy"``.
        **kwargs: Passed to the loader; the figaroh loader accepts
            ``load_geometry=False`` for a dynamics-only model (no meshes needed),
            ``freeflyer_ori`` and ``freeflyer_limits``; the
            ``robot_description`` loader accepts ``load_geometry=False`` and
            the options of ``robot_descriptions``' Pinocchio loader
            (``root_joint``, ``commit``).

    Returns:
        ``"figaroh"``: a :class:`Robot`; ``"robot_description"``: a Pinocchio
        ``RobotWrapper``; ``"yourdfpy"``: a ``yourdfpy.URDF``.

    Raises:
        FileNotFoundError: URDF, package or mesh not found (an unknown robot
            name raises :class:`~figaroh.tools.robot_paths.UnknownRobotError`,
            which suggests close names; a ``robot_descriptions`` description
            whose files are not cached and cannot be fetched raises
            :class:`~figaroh.tools.exceptions.RobotDescriptionFetchError`,
            which says how to fetch them).
        ImportError: The loader's package is not installed.
        TypeError: An option the loader does not take.
        ValueError: Unsupported loader, or a name robot_descriptions does not have.
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


def _robot_description_names() -> list:
    """URDF robots of the ``robot_descriptions`` catalogue (empty when not installed)."""
    if not _check_package_available("robot_descriptions"):
        return []
    try:
        import robot_descriptions  # type: ignore[import-not-found]
    except Exception:  # noqa: BLE001 - an optional package may fail to import
        return []
    descriptions = getattr(robot_descriptions, "DESCRIPTIONS", None)
    if isinstance(descriptions, dict):
        return sorted(
            name
            for name, info in descriptions.items()
            if getattr(info, "has_urdf", False) or hasattr(info, "URDF_PATH")
        )
    return sorted(
        attr
        for attr in dir(robot_descriptions)
        if not attr.startswith("_") and hasattr(getattr(robot_descriptions, attr), "URDF_PATH")
    )


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
        return _robot_description_names()
    if loader == "figaroh":
        base = example_robot_data_dir()
        if base is None:
            return []
        return sorted(str(p.relative_to(base)) for p in base.glob("*/**/*.urdf"))
    return []
