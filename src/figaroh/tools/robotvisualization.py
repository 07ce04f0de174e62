"""Robot visualisation helpers: centres of mass, joint frames, forces and boxes.

The drawing API follows the gepetto-gui convention of the original FIGAROH
(``viz.viewer.gui.addSphere(name, radius, rgba)``,
``applyConfiguration(name, xyzquat)``, ...). Three kinds of ``viz`` object are
accepted and detected by duck typing, so no viewer package is imported here:

* a gepetto-style visualizer exposing ``viz.viewer.gui`` (e.g. Pinocchio's
  ``GepettoVisualizer``) — the seed behaviour;
* Pinocchio's ``ViserVisualizer`` (``viz.viewer`` is a ``viser.ViserServer``);
* a bare ``viser.ViserServer`` (or a viser ``ClientHandle``).

With viser, node names get a leading ``/`` (``"world/com_sphere_0"`` becomes the
scene node ``"/world/com_sphere_0"``), colours given as RGBA floats in [0, 1]
are mapped to viser's RGB + opacity, arrows are drawn as a shaft + cone mesh
along the local x axis (as gepetto's ``addArrow``) and ``addXYZaxis`` becomes a
frame with axes.

viser itself is imported lazily, only by :func:`create_viser_server`; a missing
viser raises :class:`ViewerUnavailableError` (an ``ImportError``) at that point.

Units: lengths [m], forces [N], torques [N·m], masses [kg].
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple, Union

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from figaroh._optional import require
from figaroh.errors import MissingDependencyError

logger = logging.getLogger(__name__)

__all__ = [
    "VisualizationConfig",
    "RobotVisualizer",
    "ViewerUnavailableError",
    "create_viser_server",
    "place",
    "display_COM",
    "display_axes",
    "rotation_matrix_from_vectors",
    "display_force",
    "display_bounding_boxes",
    "display_joints",
]

RGBA = Tuple[float, float, float, float]

#: Default colours (RGBA in [0, 1]).
DEFAULT_COM_COLOR: RGBA = (1.0, 0.0, 0.0, 1.0)
DEFAULT_AXES_COLOR: RGBA = (0.0, 0.0, 1.0, 1.0)
DEFAULT_FORCE_COLOR: RGBA = (0.0, 0.8, 0.0, 1.0)
DEFAULT_BBOX_COLOR: RGBA = (1.0, 0.6, 0.0, 0.35)

#: Host a viser server binds to unless told otherwise (loopback only).
DEFAULT_VISER_HOST = "127.0.0.1"


class ViewerUnavailableError(MissingDependencyError):
    """The viewer package (viser, yourdfpy, trimesh) needed for a display is missing."""


def require_viewer_package(module_name: str, purpose: str) -> Any:
    """``module_name`` of the ``viz`` extra (viser, yourdfpy, trimesh), imported.

    Args:
        module_name: ``"viser"``, ``"viser.extras"``, ``"yourdfpy"`` or ``"trimesh"``.
        purpose: What needs it, for the message (``"Displaying a robot in viser"``).

    Raises:
        ViewerUnavailableError: The package is missing (the message names
            ``pip install "figaroh[viz]"``).
    """
    return require(module_name, extra="viz", purpose=purpose, error=ViewerUnavailableError)


def create_viser_server(host: str = DEFAULT_VISER_HOST, port: int = 8080, verbose: bool = False):
    """Start a viser server (non-blocking; it serves from a background thread).

    Args:
        host: Interface to bind; the loopback ``127.0.0.1`` by default so the
            viewer is not exposed on the network. Use ``"0.0.0.0"`` deliberately.
        port: TCP port; ``0`` lets the OS choose. When the port is busy viser
            tries the next ones — read the actual one with ``server.get_port()``.
        verbose: Let viser log its HTTP requests.

    Returns:
        The running ``viser.ViserServer``; call ``server.stop()`` to close it.

    Raises:
        ViewerUnavailableError: viser is not installed.
        ValueError: ``port`` is not an integer in [0, 65535].
    """
    if (
        isinstance(port, bool)
        or not isinstance(port, (int, np.integer))
        or not (0 <= int(port) <= 65535)
    ):
        raise ValueError(f"port must be an integer in [0, 65535], got {port!r}")
    viser = require_viewer_package("viser", "Displaying a robot in viser")
    server = viser.ViserServer(host=host, port=int(port), verbose=verbose)
    logger.info("viser server listening on http://%s:%d", host, server.get_port())
    return server


# --------------------------------------------------------------------------- colours
def _check_color(value: Sequence[float] | None, default: RGBA, field: str) -> RGBA:
    if value is None:
        return default
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field} must be an RGB or RGBA sequence of floats in [0, 1]") from exc
    if arr.size == 3:
        arr = np.append(arr, 1.0)
    if arr.size != 4 or not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(
            f"{field} must be an RGB or RGBA sequence of floats in [0, 1], got {value!r}"
        )
    r, g, b, a = (float(v) for v in arr)
    return (r, g, b, a)


@dataclass
class VisualizationConfig:
    """Configuration for robot visualisation.

    Attributes:
        com_color: RGBA in [0, 1] of the centre-of-mass spheres (default red).
        axes_color: RGBA of the joint axes (default blue).
        force_color: RGBA of force arrows (default green).
        bbox_color: RGBA of the COM bounding boxes (default translucent orange).
        scale_factor: Dimensionless multiplier applied to every drawn size.
    """

    com_color: Sequence[float] | None = None
    axes_color: Sequence[float] | None = None
    force_color: Sequence[float] | None = None
    bbox_color: Sequence[float] | None = None
    scale_factor: float = 1.0

    def __post_init__(self) -> None:
        self.com_color = _check_color(self.com_color, DEFAULT_COM_COLOR, "com_color")
        self.axes_color = _check_color(self.axes_color, DEFAULT_AXES_COLOR, "axes_color")
        self.force_color = _check_color(self.force_color, DEFAULT_FORCE_COLOR, "force_color")
        self.bbox_color = _check_color(self.bbox_color, DEFAULT_BBOX_COLOR, "bbox_color")
        scale = float(self.scale_factor)
        if not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"scale_factor must be a finite positive number, got {scale}")
        self.scale_factor = scale


# --------------------------------------------------------------------------- backends
class _GuiBackend:
    """Drawing through a gepetto-gui style ``gui`` object."""

    kind = "gepetto"

    def __init__(self, gui: Any):
        self.gui = gui

    def _fresh(self, name: str) -> None:
        node_exists = getattr(self.gui, "nodeExists", None)
        if node_exists is not None and node_exists(name):
            self.gui.deleteNode(name, True)

    def add_sphere(self, name: str, radius: float, color: RGBA) -> None:
        self._fresh(name)
        self.gui.addSphere(name, float(radius), list(color))

    def add_axes(self, name: str, color: RGBA, radius: float, length: float) -> None:
        self._fresh(name)
        self.gui.addXYZaxis(name, list(color), float(radius), float(length))

    def add_arrow(self, name: str, radius: float, length: float, color: RGBA) -> None:
        self._fresh(name)
        self.gui.addArrow(name, float(radius), float(length), list(color))

    def add_box(self, name: str, sx: float, sy: float, sz: float, color: RGBA) -> None:
        self._fresh(name)
        self.gui.addBox(name, float(sx), float(sy), float(sz), list(color))

    def place(self, name: str, M: pin.SE3) -> None:
        self.gui.applyConfiguration(name, list(pin.SE3ToXYZQUATtuple(M)))

    def remove(self, name: str) -> None:
        node_exists = getattr(self.gui, "nodeExists", None)
        if node_exists is None or node_exists(name):
            self.gui.deleteNode(name, True)

    def refresh(self) -> None:
        refresh = getattr(self.gui, "refresh", None)
        if refresh is not None:
            refresh()


def _rgb255(color: RGBA) -> Tuple[int, int, int]:
    return tuple(int(round(255 * c)) for c in color[:3])  # type: ignore[return-value]


class _ViserBackend:
    """Drawing through a viser ``scene`` (server- or client-scoped)."""

    kind = "viser"

    def __init__(self, scene: Any):
        self.scene = scene

    @staticmethod
    def node(name: str) -> str:
        return name if name.startswith("/") else "/" + name

    def add_sphere(self, name: str, radius: float, color: RGBA) -> None:
        self.scene.add_icosphere(
            self.node(name), radius=float(radius), color=_rgb255(color), opacity=color[3]
        )

    def add_axes(self, name: str, color: RGBA, radius: float, length: float) -> None:
        self.scene.add_frame(
            self.node(name),
            show_axes=True,
            axes_length=float(length),
            axes_radius=float(radius),
            origin_color=_rgb255(color),
        )

    def add_arrow(self, name: str, radius: float, length: float, color: RGBA) -> None:
        trimesh = require_viewer_package("trimesh", "Drawing meshes in viser")
        head_len = min(0.25 * length, 6.0 * radius) if length > 0 else 0.0
        shaft_len = max(length - head_len, 1e-9)
        shaft = trimesh.creation.cylinder(radius=radius, height=shaft_len)
        # trimesh cylinders and cones run along +z: rotate them onto +x.
        to_x = trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0])
        shaft.apply_translation([0.0, 0.0, shaft_len / 2])
        parts = [shaft]
        if head_len > 0:
            head = trimesh.creation.cone(radius=2.0 * radius, height=head_len)
            head.apply_translation([0.0, 0.0, shaft_len])
            parts.append(head)
        mesh = trimesh.util.concatenate(parts)
        mesh.apply_transform(to_x)
        self.scene.add_mesh_simple(
            self.node(name),
            np.asarray(mesh.vertices, dtype=np.float32),
            np.asarray(mesh.faces, dtype=np.uint32),
            color=_rgb255(color),
            opacity=color[3],
        )

    def add_box(self, name: str, sx: float, sy: float, sz: float, color: RGBA) -> None:
        self.scene.add_box(
            self.node(name),
            color=_rgb255(color),
            dimensions=(float(sx), float(sy), float(sz)),
            opacity=color[3],
        )

    def place(self, name: str, M: pin.SE3) -> None:
        handle = self.scene.get_handle_by_name(self.node(name))
        if handle is None:
            raise ValueError(
                f"place(): the viser scene has no node named {self.node(name)!r}; "
                f"create it (add_*) before placing it."
            )
        xyzw = pin.Quaternion(M.rotation).coeffs()
        handle.position = np.asarray(M.translation, dtype=float).copy()
        handle.wxyz = np.array([xyzw[3], xyzw[0], xyzw[1], xyzw[2]])

    def remove(self, name: str) -> None:
        self.scene.remove_by_name(self.node(name))

    def refresh(self) -> None:
        return None


def _is_viser_scene(obj: Any) -> bool:
    return obj is not None and hasattr(obj, "add_icosphere") and hasattr(obj, "add_frame")


def _resolve_backend(viz: Any):
    """Pick the drawing backend of a ``viz`` object (see module docstring)."""
    if viz is None:
        raise ValueError(
            "No viewer given (viz is None): pass a gepetto-style visualizer "
            "(viz.viewer.gui), a Pinocchio ViserVisualizer or a viser.ViserServer."
        )
    viewer = getattr(viz, "viewer", None)
    gui = getattr(viewer, "gui", None) if viewer is not None else None
    # a viser server also has a ``gui`` attribute (its GUI panel): require gepetto methods
    if gui is not None and hasattr(gui, "applyConfiguration"):
        return _GuiBackend(gui)
    if viewer is not None and _is_viser_scene(getattr(viewer, "scene", None)):
        return _ViserBackend(viewer.scene)
    if _is_viser_scene(getattr(viz, "scene", None)):
        return _ViserBackend(viz.scene)
    if _is_viser_scene(viz):
        return _ViserBackend(viz)
    raise TypeError(
        f"Unsupported viewer object {type(viz).__name__}: expected a gepetto-style "
        f"visualizer (viz.viewer.gui), a Pinocchio ViserVisualizer, a viser.ViserServer "
        f"or a viser scene."
    )


# --------------------------------------------------------------------------- maths
def _rotation_between(vec1: ArrayLike, vec2: ArrayLike) -> np.ndarray:
    """Rotation matrix R (3×3) with R·â = b̂, the smallest rotation doing so."""
    a = np.asarray(vec1, dtype=float).ravel()
    b = np.asarray(vec2, dtype=float).ravel()
    if a.shape != (3,) or b.shape != (3,):
        raise ValueError(f"vectors must have 3 components, got shapes {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("vectors must be finite (no NaN/inf)")
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na < 1e-12 or nb < 1e-12:
        raise ValueError("cannot align a zero-length vector: both vectors need a direction")
    a, b = a / na, b / nb
    v = np.cross(a, b)
    c = float(np.dot(a, b))
    s = float(np.linalg.norm(v))
    if s < 1e-12:
        if c > 0:
            return np.eye(3)
        # Anti-parallel: half-turn about any axis orthogonal to a.
        helper = np.eye(3)[int(np.argmin(np.abs(a)))]
        u = np.cross(a, helper)
        u /= np.linalg.norm(u)
        return 2.0 * np.outer(u, u) - np.eye(3)
    vx = pin.skew(v)
    # Rodrigues: R = I + [v]x + [v]x^2 (1 - c) / s^2
    return np.eye(3) + vx + vx @ vx * ((1.0 - c) / (s * s))


def _as_force(force: Union[pin.Force, Sequence[float]]) -> pin.Force:
    if isinstance(force, pin.Force):
        return force
    arr = np.asarray(force, dtype=float).ravel()
    if arr.size == 3:
        arr = np.concatenate([arr, np.zeros(3)])
    if arr.size != 6 or not np.all(np.isfinite(arr)):
        raise ValueError(
            "force must be a pinocchio.Force or a finite 6-vector [f (N), tau (N·m)] "
            f"(or a 3-vector f [N]); got {force!r}"
        )
    return pin.Force(arr[:3], arr[3:])


# --------------------------------------------------------------------------- visualizer
class RobotVisualizer:
    """Draw centres of mass, joint frames, forces and COM boxes of a robot.

    Args:
        model: Pinocchio model (may be ``None`` for model-free drawings such as
            :meth:`display_force`).
        data: Matching Pinocchio data (created from ``model`` when ``None``).
        viz: Viewer: gepetto-style (``viz.viewer.gui``), Pinocchio
            ``ViserVisualizer`` or ``viser.ViserServer``. Only needed to draw.
        config: Colours and global scale.
    """

    def __init__(
        self,
        model: pin.Model | None,
        data: pin.Data | None,
        viz: Any,
        config: VisualizationConfig | None = None,
    ):
        self.model = model
        if model is not None and data is None:
            data = model.createData()
        self.data = data
        self.viz = viz
        self.config = config or VisualizationConfig()
        self.joint_names = list(model.names) if model is not None else []
        self.nv = model.nv if model is not None else 0
        self._backend_cache = None

    def __repr__(self) -> str:
        name = self.model.name if self.model is not None else None
        viewer = type(self.viz).__name__ if self.viz is not None else None
        return (
            f"RobotVisualizer(model={name!r}, nv={self.nv}, viewer={viewer}, "
            f"scale_factor={self.config.scale_factor})"
        )

    # ------------------------------------------------------------------ helpers
    @property
    def _backend(self):
        if self._backend_cache is None:
            self._backend_cache = _resolve_backend(self.viz)
        return self._backend_cache

    def _require_model(self, what: str) -> pin.Model:
        return self._require_model_data(what)[0]

    def _require_model_data(self, what: str) -> Tuple[pin.Model, pin.Data]:
        if self.model is None or self.data is None:
            raise ValueError(f"{what} needs a Pinocchio model and data (model is None)")
        return self.model, self.data

    def _apply_placement(self, name: str, placement: pin.SE3) -> None:
        self._backend.place(name, placement)
        self._backend.refresh()

    @staticmethod
    def _rotation_from_vectors(vec1: ArrayLike, vec2: ArrayLike) -> np.ndarray:
        return _rotation_between(vec1, vec2)

    def _check_q(self, q: np.ndarray) -> np.ndarray:
        model = self._require_model("This display")
        arr = np.asarray(q, dtype=float).ravel()
        if arr.shape != (model.nq,):
            raise ValueError(f"q must have model.nq = {model.nq} entries [rad, m], got {arr.size}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("q contains NaN or inf")
        return arr

    def _frame_ids(self, frame_indices: Sequence[Union[int, str]]) -> List[int]:
        model = self._require_model("Frame displays")
        ids: List[int] = []
        for f in frame_indices:
            if isinstance(f, str):
                if not model.existFrame(f):
                    raise ValueError(f"Unknown frame name {f!r} in frame_indices")
                ids.append(int(model.getFrameId(f)))
                continue
            if isinstance(f, bool) or not isinstance(f, (int, np.integer)):
                raise ValueError(f"frame_indices must hold frame ids (int) or names, got {f!r}")
            if not 0 <= int(f) < model.nframes:
                raise ValueError(
                    f"frame index {f} out of range: the model has {model.nframes} frames"
                )
            ids.append(int(f))
        return ids

    def _segment_com(self, frame_id: int) -> Tuple[pin.SE3, float]:
        """World placement of a segment's COM and the segment mass [kg].

        The segment of frame ``f`` is the body carried by its parent joint j:
        ``c = oMi[j] · lever_j`` with mass ``m_j = model.inertias[j].mass``. Frames
        fixed to the universe keep their own placement (mass 0).
        """
        model, data = self._require_model_data("Segment COMs")
        placement = data.oMf[frame_id].copy()
        joint = model.frames[frame_id].parentJoint
        if joint == 0:
            return placement, 0.0
        inertia = model.inertias[joint]
        placement.translation = data.oMi[joint].act(inertia.lever)
        return placement, float(inertia.mass)

    # ------------------------------------------------------------------ public API
    def update_kinematics(self, q: np.ndarray) -> None:
        """Forward kinematics, frame placements, subtree COMs and masses at ``q``.

        Args:
            q: Configuration (nq,) [rad, m].
        """
        q = self._check_q(q)
        model, data = self._require_model_data("This display")
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacements(model, data)
        pin.centerOfMass(model, data, q, True)
        pin.computeSubtreeMasses(model, data)

    def display_com(self, q: np.ndarray, frame_indices: List[int]) -> None:
        """Draw one sphere per segment at its centre of mass.

        For consecutive frames ``f_i, f_{i+1}`` of ``frame_indices`` (the last one
        only closes the previous segment) the sphere ``world/com_sphere_<i>`` is
        placed at the COM of the body carried by ``f_i``'s parent joint, with
        radius ``r_i = ‖p(f_{i+1}) − p(f_i)‖ · (m_i / m_total) · scale_factor`` [m].

        Args:
            q: Configuration (nq,) [rad, m].
            frame_indices: Frame ids (or names) delimiting the segments.
        """
        self.update_kinematics(q)
        ids = self._frame_ids(frame_indices)
        data = self._require_model_data("COM displays")[1]
        total_mass = float(data.mass[0])
        for i, frame_idx in enumerate(ids[:-1]):
            next_idx = ids[i + 1]
            link_length = float(
                np.linalg.norm(data.oMf[next_idx].translation - data.oMf[frame_idx].translation)
            )
            placement, mass = self._segment_com(frame_idx)
            mass_ratio = mass / total_mass if total_mass > 0 else 0.1
            radius = link_length * mass_ratio * self.config.scale_factor
            name = f"world/com_sphere_{i}"
            self._backend.add_sphere(name, radius, self.config.com_color)
            self._apply_placement(name, placement)

    def display_axes(
        self, q: np.ndarray, axis_length: float = 0.15, axis_radius: float = 0.01
    ) -> None:
        """Draw an XYZ triad at every joint (``world/axis_<joint>_<i>``).

        Args:
            q: Configuration (nq,) [rad, m].
            axis_length: Axis length [m] (times ``scale_factor``).
            axis_radius: Axis radius [m] (times ``scale_factor``).
        """
        self.update_kinematics(q)
        model, data = self._require_model_data("Axis displays")
        s = self.config.scale_factor
        for i, joint_name in enumerate(self.joint_names):
            joint_id = model.getJointId(joint_name)
            name = f"world/axis_{joint_name}_{i}"
            self._backend.add_axes(name, self.config.axes_color, axis_radius * s, axis_length * s)
            self._apply_placement(name, data.oMi[joint_id])

    def display_force(
        self,
        force: pin.Force,
        placement: pin.SE3,
        scale: float = 1e-3,
        name: str = "force_vector",
    ) -> None:
        """Draw a force as an arrow at ``placement``.

        The force is expressed in the frame ``placement`` (world ← local); its
        world linear part is ``f_w = R f``. The arrow ``world/<name>_arrow`` starts
        at the placement origin, points along ``f_w`` and has length
        ``‖f_w‖ · scale · scale_factor`` [m]. Forces below 1e-10 N are skipped.

        Args:
            force: ``pinocchio.Force`` (or 6-vector [f (N), τ (N·m)], or 3-vector f [N]).
            placement: Application frame, world ← local (``pinocchio.SE3``).
            scale: Arrow length per newton [m/N].
            name: Node name stem.
        """
        force = _as_force(force)
        if not isinstance(placement, pin.SE3):
            raise ValueError(f"placement must be a pinocchio.SE3, got {type(placement).__name__}")
        world_force = placement.act(force)
        magnitude = float(np.linalg.norm(world_force.linear))
        if magnitude < 1e-10:
            logger.debug("display_force: negligible force (%.3g N) not drawn", magnitude)
            return
        length = magnitude * float(scale) * self.config.scale_factor
        radius = length * 0.05
        direction = world_force.linear / magnitude
        arrow_placement = placement.copy()
        arrow_placement.rotation = self._rotation_from_vectors([1.0, 0.0, 0.0], direction)
        arrow_name = f"world/{name}_arrow"
        self._backend.add_arrow(arrow_name, radius, length, self.config.force_color)
        self._apply_placement(arrow_name, arrow_placement)

    def display_bounding_boxes(
        self,
        q: np.ndarray,
        com_min: np.ndarray,
        com_max: np.ndarray,
        frame_indices: List[int],
    ) -> None:
        """Draw a box per segment showing the allowed COM range.

        Segment i uses ``com_min[3i:3i+3]`` and ``com_max[3i:3i+3]`` [m]: the box
        ``world/com_bbox_<i>`` has edge lengths ``(max − min) · scale_factor``, is
        centred on the segment COM and oriented like frame ``frame_indices[i]``.

        Args:
            q: Configuration (nq,) [rad, m].
            com_min: Lower COM bounds, 3 per segment [m].
            com_max: Upper COM bounds, 3 per segment [m].
            frame_indices: Frame ids (or names), one per segment.
        """
        self.update_kinematics(q)
        ids = self._frame_ids(frame_indices)
        lo = np.asarray(com_min, dtype=float).ravel()
        hi = np.asarray(com_max, dtype=float).ravel()
        need = 3 * len(ids)
        if lo.size < need or hi.size < need:
            raise ValueError(
                f"com_min/com_max need 3 values per frame ({need}), got {lo.size} and {hi.size}"
            )
        if not (np.all(np.isfinite(lo[:need])) and np.all(np.isfinite(hi[:need]))):
            raise ValueError("com_min/com_max contain NaN or inf")
        if np.any(hi[:need] < lo[:need]):
            raise ValueError("com_max must be >= com_min component-wise")
        for i, frame_idx in enumerate(ids):
            size = (hi[3 * i : 3 * i + 3] - lo[3 * i : 3 * i + 3]) * self.config.scale_factor
            placement, _ = self._segment_com(frame_idx)
            name = f"world/com_bbox_{i}"
            self._backend.add_box(name, size[0], size[1], size[2], self.config.bbox_color)
            self._apply_placement(name, placement)

    def display_joints(self, q: np.ndarray) -> None:
        """Draw a triad (0.15 m × 0.01 m, times ``scale_factor``) at every joint.

        Nodes are ``world/joint_frame_<j>`` for joints j = 1 … njoints−1 (the
        universe is skipped).

        Args:
            q: Configuration (nq,) [rad, m].
        """
        self.update_kinematics(q)
        model, data = self._require_model_data("Joint displays")
        s = self.config.scale_factor
        for j in range(1, model.njoints):
            name = f"world/joint_frame_{j}"
            self._backend.add_axes(name, self.config.axes_color, 0.01 * s, 0.15 * s)
            self._apply_placement(name, data.oMi[j])

    # ------------------------------------------------------------------ generic drawing
    def draw_sphere(
        self, name: str, radius: float, placement: pin.SE3, color: Sequence[float] | None = None
    ) -> None:
        """Draw a sphere of ``radius`` [m] at ``placement`` (used by collision display)."""
        rgba = _check_color(
            self.config.com_color if color is None else color, DEFAULT_COM_COLOR, "color"
        )
        self._backend.add_sphere(name, radius, rgba)
        self._apply_placement(name, placement)

    def draw_arrow(
        self,
        name: str,
        start: np.ndarray,
        vector: np.ndarray,
        radius: float,
        color: Sequence[float] | None = None,
    ) -> None:
        """Draw an arrow from ``start`` [m] along ``vector`` [m] (world frame)."""
        rgba = _check_color(
            self.config.force_color if color is None else color, DEFAULT_FORCE_COLOR, "color"
        )
        vec = np.asarray(vector, dtype=float).ravel()
        length = float(np.linalg.norm(vec))
        if length < 1e-12:
            return
        M = pin.SE3(self._rotation_from_vectors([1.0, 0.0, 0.0], vec), np.asarray(start, float))
        self._backend.add_arrow(name, radius, length, rgba)
        self._apply_placement(name, M)

    def remove(self, name: str) -> None:
        """Delete a node from the viewer (no error when it does not exist)."""
        try:
            self._backend.remove(name)
        except Exception as exc:  # noqa: BLE001 - viewer back-ends differ
            logger.debug("remove(%s) ignored: %s", name, exc)


# --------------------------------------------------------------------------- legacy API
def place(viz: Any, name: str, M: pin.SE3) -> None:
    """Set the placement (world ← node) of the viewer node ``name``.

    Args:
        viz: Viewer (see :class:`RobotVisualizer`).
        name: Node name (gepetto style, e.g. ``"world/com_sphere_0"``).
        M: Placement (``pinocchio.SE3``), translation in [m].
    """
    backend = _resolve_backend(viz)
    backend.place(name, M)
    backend.refresh()


def display_COM(model: pin.Model, data: pin.Data, viz: Any, q: np.ndarray, IDX: list) -> None:
    """Legacy form of :meth:`RobotVisualizer.display_com`."""
    RobotVisualizer(model, data, viz).display_com(q, IDX)


def display_axes(model: pin.Model, data: pin.Data, viz: Any, q: np.ndarray) -> None:
    """Legacy form of :meth:`RobotVisualizer.display_axes`."""
    RobotVisualizer(model, data, viz).display_axes(q)


def rotation_matrix_from_vectors(vec1: np.ndarray, vec2: np.ndarray) -> np.ndarray:
    """Smallest rotation R (3×3, det +1) with ``R · vec1/‖vec1‖ = vec2/‖vec2‖``.

    Rodrigues' formula ``R = I + [v]× + [v]×² (1 − c)/s²`` with ``v = â × b̂``,
    ``c = â·b̂``, ``s = ‖v‖``; anti-parallel vectors give a half turn about an
    axis orthogonal to ``vec1``.

    Raises:
        ValueError: Not 3-vectors, non-finite, or zero length.
    """
    return _rotation_between(vec1, vec2)


def display_force(viz: Any, phi: pin.Force, M_se3: pin.SE3) -> None:
    """Legacy form of :meth:`RobotVisualizer.display_force` (scale 1e-3 m/N)."""
    RobotVisualizer(None, None, viz).display_force(phi, M_se3)


def display_bounding_boxes(
    viz: Any,
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    COM_min: np.ndarray,
    COM_max: np.ndarray,
    IDX: list,
) -> None:
    """Legacy form of :meth:`RobotVisualizer.display_bounding_boxes`."""
    RobotVisualizer(model, data, viz).display_bounding_boxes(q, COM_min, COM_max, IDX)


def display_joints(viz: Any, model: pin.Model, data: pin.Data, q: np.ndarray) -> None:
    """Legacy form of :meth:`RobotVisualizer.display_joints`."""
    RobotVisualizer(model, data, viz).display_joints(q)
