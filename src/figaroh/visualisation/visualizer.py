"""MeshCat viewer of a Pinocchio robot, with helpers to draw primitives.

:class:`MeshcatVisualizer` is a subclass of Pinocchio's
``pinocchio.visualize.MeshcatVisualizer`` that is built from a robot (or a model
and its geometry models), connects to a MeshCat server and loads the robot in
one call, and adds :meth:`~MeshcatVisualizer.addSphere`,
:meth:`~MeshcatVisualizer.addCylinder`, :meth:`~MeshcatVisualizer.addBox`,
:meth:`~MeshcatVisualizer.applyConfiguration` and
:meth:`~MeshcatVisualizer.delete` for markers, targets and measured points::

    viz = MeshcatVisualizer(robot)              # starts a local MeshCat server
    viz.display(q)
    viz.addSphere("world/target", 0.02, "red")
    viz.applyConfiguration("world/target", [0.5, 0.1, 0.8, 0, 0, 0, 1])

The class is created on first access of ``MeshcatVisualizer`` (importing
``pinocchio.visualize`` takes seconds), so importing this module is cheap and
works without meshcat; creating a visualiser without meshcat raises an
``ImportError`` naming the ``meshcat`` extra.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .colors import color_value, colormap, require_meshcat, rgb2int

#: Colour of primitives drawn without one (``materialFromColor(None)``).
DEFAULT_COLOR = colormap["gray"]

#: Address of a ``meshcat-server`` started with its default ports.
CLASSICAL_ZMQ_URL = "tcp://127.0.0.1:6000"


def materialFromColor(color: Any):
    """The ``meshcat.geometry.MeshPhongMaterial`` described by ``color``.

    Args:
        color: One of

            * a MeshCat material: returned unchanged;
            * a colour name of :data:`figaroh.visualisation.colors.colormap`
              or ``"#rrggbb"``;
            * an integer ``0xRRGGBB``;
            * a sequence ``[r, g, b]`` or ``[r, g, b, a]`` of floats in [0, 1]
              (Pinocchio's ``GeometryObject.meshColor`` convention); ``a < 1``
              makes the material transparent with opacity ``a``;
            * ``None``: the default gray.

    Returns:
        The material.

    Raises:
        ImportError: meshcat is not installed (the message names the extra).
        ValueError: Unknown name, or components outside [0, 1].
        TypeError: Any other type.
    """
    meshcat = require_meshcat()
    geometry = meshcat.geometry
    if isinstance(color, geometry.Material):
        return color
    mat = geometry.MeshPhongMaterial()
    if color is None:
        mat.color = DEFAULT_COLOR
        return mat
    if isinstance(color, (str, int)) and not isinstance(color, bool):
        mat.color = color_value(color)
        return mat
    try:
        rgba = np.asarray(color, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"materialFromColor: unsupported colour {color!r} (material, name, 0xRRGGBB or "
            "[r, g, b(, a)] in [0, 1])"
        ) from exc
    if rgba.size not in (3, 4) or np.any(rgba < 0.0) or np.any(rgba > 1.0):
        raise ValueError(
            f"materialFromColor: a colour sequence is [r, g, b] or [r, g, b, a] with entries in "
            f"[0, 1], got {list(rgba)}"
        )
    mat.color = rgb2int(*(int(round(255.0 * c)) for c in rgba[:3]))
    if rgba.size == 4 and rgba[3] < 1.0:
        mat.transparent = True
        mat.opacity = float(rgba[3])
    else:
        mat.transparent = False
    return mat


def _homogeneous(placement: Any) -> np.ndarray:
    """4×4 transform of a ``pin.SE3``, a 4×4 matrix or an ``[x, y, z, qx, qy, qz, qw]`` vector."""
    if hasattr(placement, "homogeneous"):
        return np.asarray(placement.homogeneous, dtype=float)
    arr = np.asarray(placement, dtype=float)
    if arr.shape == (4, 4):
        return arr
    if arr.size == 7:
        import pinocchio as pin

        return np.asarray(pin.XYZQUATToSE3(arr.reshape(-1)).homogeneous, dtype=float)
    if arr.size == 3:
        T = np.eye(4)
        T[:3, 3] = arr.reshape(-1)
        return T
    raise ValueError(
        "placement must be a pinocchio.SE3, a 4x4 matrix, a position [x, y, z] [m] or "
        f"[x, y, z, qx, qy, qz, qw]; got an array of shape {arr.shape}"
    )


#: Base of :class:`_MeshcatDrawing` for the type checker: Pinocchio's untyped
#: visualiser, whose methods (``initViewer``, ``viewer``, ``delete``) the mixin
#: uses through ``super()``. ``object`` at run time: :func:`_build_class` adds
#: the real ``pinocchio.visualize.MeshcatVisualizer`` base.
_PinocchioVisualizerBase: Any = object


class _MeshcatDrawing(_PinocchioVisualizerBase):
    """The figaroh part of :class:`MeshcatVisualizer`, mixed into Pinocchio's visualiser.

    Its methods call ``super()``, which resolves to Pinocchio's
    ``pinocchio.visualize.MeshcatVisualizer`` in the class :func:`_build_class`
    creates.
    """

    def __init__(
        self,
        robot=None,
        model=None,
        collision_model=None,
        visual_model=None,
        url=None,
        viewer=None,
        open: bool = False,
        load_model: bool | None = None,
    ):
        meshcat = require_meshcat()
        if robot is not None:
            model = robot.model
            collision_model = getattr(robot, "collision_model", None)
            visual_model = getattr(robot, "visual_model", None)
        if model is None:
            import pinocchio as pin

            model = pin.Model()
        super().__init__(model, collision_model, visual_model)
        if viewer is None:
            zmq_url = CLASSICAL_ZMQ_URL if url == "classical" else url
            viewer = meshcat.Visualizer(zmq_url=zmq_url)
        if load_model is None:
            load_model = collision_model is not None or visual_model is not None
        self.initViewer(viewer=viewer, open=open, loadModel=bool(load_model))

    def __getitem__(self, name: str):
        """The MeshCat node at path ``name`` (``self.viewer[name]``)."""
        return self.viewer[name]

    def addSphere(self, name: str, radius: float, color) -> None:
        """Draw a sphere of ``radius`` [m] at node ``name`` (see ``materialFromColor``)."""
        geometry = require_meshcat().geometry
        self.viewer[name].set_object(geometry.Sphere(float(radius)), materialFromColor(color))

    def addCylinder(self, name: str, length: float, radius: float, color=None) -> None:
        """Draw a cylinder of ``length`` and ``radius`` [m] at node ``name``.

        Its axis is the node's z axis and it is centred on the node origin,
        as Pinocchio/URDF cylinders (MeshCat's own cylinder is along y, so
        it is drawn in the child node ``name/cylinder`` rotated by +90° about x).
        """
        geometry = require_meshcat().geometry
        node = self.viewer[name]["cylinder"]
        node.set_object(geometry.Cylinder(float(length), float(radius)), materialFromColor(color))
        upright = np.eye(4)
        upright[1:3, 1:3] = [[0.0, -1.0], [1.0, 0.0]]  # y → z
        node.set_transform(upright)

    def addBox(self, name: str, dims, color) -> None:
        """Draw a box of edge lengths ``dims = [dx, dy, dz]`` [m] centred at node ``name``."""
        geometry = require_meshcat().geometry
        lengths = [float(d) for d in np.asarray(dims, dtype=float).reshape(-1)]
        if len(lengths) != 3:
            raise ValueError(f"addBox: dims must be [dx, dy, dz] [m], got {list(dims)}")
        self.viewer[name].set_object(geometry.Box(lengths), materialFromColor(color))

    def applyConfiguration(self, name: str, placement) -> None:
        """Place node ``name``: a ``pin.SE3``, a 4×4 matrix, ``[x, y, z]`` or a 7-vector.

        The 7-vector is ``[x, y, z, qx, qy, qz, qw]`` (position [m] and unit
        quaternion, Pinocchio's ``XYZQUAT`` order).
        """
        self.viewer[name].set_transform(_homogeneous(placement))

    def delete(self, name, geometry_type=None) -> None:
        """Remove node ``name`` and its children from the viewer.

        Called as ``delete(geometry_object, geometry_type)`` it removes that
        robot geometry, as Pinocchio's visualiser does.
        """
        import pinocchio as pin

        if geometry_type is not None or isinstance(name, pin.GeometryObject):
            super().delete(name, geometry_type)
            return
        self.viewer[name].delete()


def _build_class() -> type:
    """Create :class:`MeshcatVisualizer` (imports ``pinocchio.visualize``, which takes seconds)."""
    from pinocchio.visualize import MeshcatVisualizer as PinocchioMeshcatVisualizer

    namespace = {"__module__": __name__, "__qualname__": "MeshcatVisualizer", "__doc__": _DOC}
    return type("MeshcatVisualizer", (_MeshcatDrawing, PinocchioMeshcatVisualizer), namespace)


_DOC = """Pinocchio's MeshCat visualiser, connected and loaded in one call.

Args:
    robot: A ``RobotWrapper``/:class:`~figaroh.tools.robot.Robot`
        (its ``model``, ``collision_model`` and ``visual_model`` are used).
    model: ``pinocchio.Model`` when no ``robot`` is given.
    collision_model: Collision ``GeometryModel`` of ``model``.
    visual_model: Visual ``GeometryModel`` of ``model``.
    url: ZMQ address of a running ``meshcat-server`` (``"classical"``
        means ``tcp://127.0.0.1:6000``); None starts a new local server.
    viewer: An existing ``meshcat.Visualizer`` to draw into (overrides ``url``).
    open: Open the viewer page in a browser.
    load_model: Load the robot's geometry into the viewer (default: when
        a geometry model is given).

Raises:
    ImportError: meshcat is not installed (the message names the extra).
"""


def __getattr__(name: str):
    if name == "MeshcatVisualizer":
        cls = _build_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# MeshcatVisualizer is created on first access (module __getattr__).
__all__ = ["CLASSICAL_ZMQ_URL", "DEFAULT_COLOR", "MeshcatVisualizer", "materialFromColor"]  # noqa: F822
