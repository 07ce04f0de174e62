"""Viser viewers of a URDF comparison: overlay, trajectory, static grid, interactive.

:class:`ComparisonViewerMixin` gives :class:`figaroh.tools.export_validation.URDFComparison`
its ``show_*`` methods. The viewers draw the nominal model in blue
(:data:`ORIG_COLOR`) and the modified one in red (:data:`MOD_COLOR`), posed
at the same configuration q, with the end-effector pose errors computed by
the comparison: position error ``‖p_mod − p_nom‖`` [m] (shown in mm) and
orientation error, the rotation angle of ``M_nom⁻¹ · M_mod`` [rad] (shown in
degrees).

viser (with yourdfpy + trimesh for the meshes) is an optional dependency,
imported only when a viewer is requested. Servers bind to ``127.0.0.1`` by
default; a server created by a method is stopped when the method returns, one
passed in is left running. Every display takes a ``duration`` and/or a
``threading.Event`` (``stop_event``) so it never blocks a script or test
forever.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Protocol, Sequence, Tuple, Union

import numpy as np
import pinocchio as pin

from .robot_paths import candidate_package_roots, find_package
from .robotvisualization import DEFAULT_VISER_HOST, create_viser_server, require_viewer_package

logger = logging.getLogger(__name__)

__all__ = ["ComparisonViewerMixin", "ConfigLike", "MOD_COLOR", "ORIG_COLOR"]

#: A joint configuration q: a sequence of floats or an (nq,) array [rad, m].
ConfigLike = Union[Sequence[float], np.ndarray]

#: RGB (0–255) of the nominal model in every viewer (blue).
ORIG_COLOR: Tuple[int, int, int] = (51, 102, 229)
#: RGB (0–255) of the modified model in every viewer (red).
MOD_COLOR: Tuple[int, int, int] = (229, 51, 51)


class _PoseDeltaLike(Protocol):
    """A pose delta (:class:`figaroh.tools.export_validation.PoseDelta`) as the viewers read it."""

    def position_error(self) -> float:
        """Distance between the two end-effector origins [m]."""

    def orientation_error(self) -> float:
        """Angle of the relative end-effector rotation [rad]."""


# --------------------------------------------------------------------------- helpers
def _check_duration(duration: float | None) -> float | None:
    """``duration`` as a float [s] (None stays None).

    Raises:
        ValueError: ``duration`` is not a finite number of seconds ≥ 0.
    """
    if duration is None:
        return None
    try:
        value = float(duration)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"duration must be a number of seconds >= 0 or None, got {duration!r}"
        ) from exc
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"duration must be a finite number of seconds >= 0, got {duration}")
    return value


def _wait(duration: float | None, stop_event: threading.Event | None) -> None:
    """Block for ``duration`` seconds or until ``stop_event`` is set.

    Both ``None`` blocks until KeyboardInterrupt.
    """
    duration = _check_duration(duration)
    try:
        if stop_event is not None:
            stop_event.wait(duration)
        elif duration is not None:
            time.sleep(duration)
        else:
            while True:
                time.sleep(1.0)
    except KeyboardInterrupt:
        logger.info("display interrupted by the user")


class ComparisonViewerMixin:
    """viser viewers of two URDF models that differ only by their parameters.

    Mixed into :class:`figaroh.tools.export_validation.URDFComparison`, which
    provides what the viewers read:

    * ``nominal_path``, ``modified_path`` (:class:`~pathlib.Path`) and
      ``package_dirs`` (extra folders searched for ``package://`` meshes);
    * ``model_a``, the nominal Pinocchio model, and ``_joint_layout``, its
      one-coordinate joints ``(name, ...)`` in configuration order;
    * ``_yourdfpy_cache``, None until the meshes are loaded;
    * ``_as_q(q, label)`` → (nq,) configuration, ``_q_to_values(q)`` → joint
      values [rad, m], ``_sample_configs(n, seed)`` → random configurations,
      ``_default_poses()`` → the 20 default poses, ``_ee_placements(q)`` →
      both end-effector :class:`pinocchio.SE3`, ``_compute_delta(q)`` → the
      pose delta (``position_error()`` [m], ``orientation_error()`` [rad]) and
      ``static_poses(poses)`` → the per-pose errors.
    """

    if TYPE_CHECKING:  # provided by the host class (see above)
        nominal_path: Path
        modified_path: Path
        package_dirs: List[Path]
        model_a: pin.Model
        _joint_layout: List[Tuple[str, int, int, float, float]]
        _yourdfpy_cache: Tuple[Any, Any] | None

        def _as_q(self, q: ConfigLike, label: str = "pose") -> np.ndarray: ...
        def _q_to_values(self, q: np.ndarray) -> np.ndarray: ...
        def _sample_configs(self, n: int, seed: int) -> np.ndarray: ...
        def _default_poses(self) -> List[np.ndarray]: ...
        def _ee_placements(self, q: np.ndarray) -> Tuple[pin.SE3, pin.SE3]: ...
        def _compute_delta(self, q: np.ndarray) -> _PoseDeltaLike: ...
        def static_poses(self, poses: List[ConfigLike] | None = None) -> List[Any]: ...

    # ------------------------------------------------------------------ viewer plumbing
    def _package_roots(self) -> List[Path]:
        roots: List[Path] = []
        for urdf in (self.modified_path, self.nominal_path):
            for root in candidate_package_roots(urdf, self.package_dirs):
                if root not in roots:
                    roots.append(root)
        return roots

    def _filename_handler(self, urdf_path: Path) -> Callable[[str], str]:
        roots = self._package_roots()

        def handler(fname: str) -> str:
            if fname.startswith("package://"):
                pkg, _, rel = fname[len("package://") :].partition("/")
                found = find_package(pkg, roots)
                if found is not None:
                    return str(found / rel)
                logger.warning("mesh package %r not found for %s", pkg, fname)
                return fname
            if fname.startswith("file://"):
                return fname[len("file://") :]
            path = Path(fname)
            return str(path if path.is_absolute() else urdf_path.parent / path)

        return handler

    def _load_yourdfpy(self) -> Tuple[Any, Any]:
        """Both URDFs as yourdfpy objects with visual meshes (cached)."""
        if self._yourdfpy_cache is None:
            yourdfpy = require_viewer_package("yourdfpy", "Showing URDF models")
            loaded = []
            for path in (self.nominal_path, self.modified_path):
                loaded.append(
                    yourdfpy.URDF.load(
                        str(path),
                        filename_handler=self._filename_handler(path),
                        build_scene_graph=True,
                        load_meshes=True,
                        build_collision_scene_graph=False,
                        load_collision_meshes=False,
                    )
                )
            self._yourdfpy_cache = (loaded[0], loaded[1])
        return self._yourdfpy_cache

    @staticmethod
    def _get_viser_server(server, port: int, host: str = DEFAULT_VISER_HOST) -> Tuple[Any, bool]:
        """``(server, created)``: the given server, or a new one on ``host:port``."""
        if server is not None:
            return server, False
        return create_viser_server(host=host, port=port), True

    @staticmethod
    def _viser_urdf_class():
        extras = require_viewer_package("viser.extras", "Showing URDF models in viser")
        return extras.ViserUrdf

    def _pinocchio_config_to_dict(self, q: np.ndarray) -> Dict[str, float]:
        """Pinocchio q → ``{joint name: value [rad or m]}`` (continuous → atan2)."""
        values = self._q_to_values(np.asarray(q, dtype=float).ravel())
        return {name: float(v) for (name, *_), v in zip(self._joint_layout, values, strict=True)}

    @staticmethod
    def _cfg_array(urdf: Any, cfg: Dict[str, float]) -> np.ndarray:
        """yourdfpy configuration array in ``urdf.actuated_joint_names`` order."""
        return np.array([cfg.get(name, 0.0) for name in urdf.actuated_joint_names], dtype=float)

    def _add_urdf(self, server, urdf, root: str, color) -> Any:
        ViserUrdf = self._viser_urdf_class()
        return ViserUrdf(
            server,
            urdf_or_path=urdf,
            root_node_name=root,
            load_meshes=True,
            mesh_color_override=tuple(color),
        )

    def _pose_vis(self, vis: Any, urdf: Any, q: np.ndarray) -> None:
        vis.update_cfg(self._cfg_array(urdf, self._pinocchio_config_to_dict(q)))

    @staticmethod
    def _check_color(color, name: str) -> Tuple[int, int, int]:
        arr = np.asarray(color).ravel()
        if arr.size != 3 or not np.all((arr >= 0) & (arr <= 255)):
            raise ValueError(f"{name} must be an RGB triple of integers in [0, 255], got {color!r}")
        return tuple(int(v) for v in arr)  # type: ignore[return-value]

    # ------------------------------------------------------------------ viewers
    def show_overlay(
        self,
        server=None,
        port: int = 8080,
        orig_color: Tuple[int, int, int] = ORIG_COLOR,
        mod_color: Tuple[int, int, int] = MOD_COLOR,
        duration: float = 5.0,
        *,
        q: ConfigLike | None = None,
        host: str = DEFAULT_VISER_HOST,
        stop_event: threading.Event | None = None,
    ) -> None:
        """Display both models overlaid in viser.

        Args:
            server: Existing viser server, or None to create one.
            port: Port for a new server (ignored if ``server`` is given).
            orig_color: RGB (0–255) of the original model.
            mod_color: RGB (0–255) of the modified model.
            duration: Seconds to keep the display open (``None``: until
                ``stop_event`` or Ctrl-C).
            q: Configuration to show (default: neutral).
            host: Interface of a new server (loopback by default).
            stop_event: Set it to close the display early.
        """
        _check_duration(duration)
        orig_color = self._check_color(orig_color, "orig_color")
        mod_color = self._check_color(mod_color, "mod_color")
        q_arr = self._as_q(q, "q") if q is not None else pin.neutral(self.model_a)
        urdf_orig, urdf_mod = self._load_yourdfpy()
        viz, created = self._get_viser_server(server, port, host)
        try:
            viz.scene.remove_by_name("/robot")
            vis_orig = self._add_urdf(viz, urdf_orig, "/robot/original", orig_color)
            vis_mod = self._add_urdf(viz, urdf_mod, "/robot/modified", mod_color)
            self._pose_vis(vis_orig, urdf_orig, q_arr)
            self._pose_vis(vis_mod, urdf_mod, q_arr)
            logger.info(
                "Both models displayed at http://%s:%d (original RGB=%s, modified RGB=%s)",
                host,
                viz.get_port(),
                orig_color,
                mod_color,
            )
            _wait(duration, stop_event)
        finally:
            if created:
                viz.stop()

    def show_trajectory_animation(
        self,
        n_configs: int = 50,
        seed: int = 42,
        server=None,
        port: int = 8080,
        duration: float = 10.0,
        *,
        delay: float = 0.05,
        host: str = DEFAULT_VISER_HOST,
        stop_event: threading.Event | None = None,
    ) -> None:
        """Animate both models through random configurations and trace their EE paths.

        Spheres (radius 1 cm) mark the end-effector positions of the nominal
        (blue, ``/traces/orig_<i>``) and modified (red, ``/traces/mod_<i>``) models.

        Args:
            n_configs: Number of random configurations.
            seed: Random seed.
            server: Existing viser server, or None to create one.
            port: Port for a new server.
            duration: Seconds to keep the display open after the animation.
            delay: Seconds between two animation frames.
            host: Interface of a new server (loopback by default).
            stop_event: Set it to stop the animation and close the display.
        """
        _check_duration(duration)
        configs = self._sample_configs(n_configs, seed)
        urdf_orig, urdf_mod = self._load_yourdfpy()
        trimesh = require_viewer_package("trimesh", "Drawing the validation meshes")
        viz, created = self._get_viser_server(server, port, host)
        try:
            vis_orig = self._add_urdf(viz, urdf_orig, "/robot/orig_anim", ORIG_COLOR)
            vis_mod = self._add_urdf(viz, urdf_mod, "/robot/mod_anim", MOD_COLOR)
            orig_trace, mod_trace = [], []
            for q in configs:
                if stop_event is not None and stop_event.is_set():
                    break
                self._pose_vis(vis_orig, urdf_orig, q)
                self._pose_vis(vis_mod, urdf_mod, q)
                M_a, M_b = self._ee_placements(q)
                orig_trace.append(M_a.translation.copy())
                mod_trace.append(M_b.translation.copy())
                if delay > 0:
                    time.sleep(delay)
            sphere = trimesh.primitives.Sphere(radius=0.01)
            vertices = np.asarray(sphere.vertices, dtype=np.float32)
            faces = np.asarray(sphere.faces, dtype=np.uint32)
            for pts, color, label in (
                (orig_trace, ORIG_COLOR, "orig"),
                (mod_trace, MOD_COLOR, "mod"),
            ):
                for i, pt in enumerate(pts):
                    viz.scene.add_mesh_simple(
                        f"/traces/{label}_{i}", vertices, faces, color=color, position=tuple(pt)
                    )
            logger.info("Traced %d configurations at port %d", len(orig_trace), viz.get_port())
            _wait(duration, stop_event)
        finally:
            if created:
                viz.stop()

    def show_static_grid(
        self,
        poses: List[ConfigLike] | None = None,
        server=None,
        port: int = 8080,
        duration: float = 15.0,
        spacing: float = 2.0,
        *,
        host: str = DEFAULT_VISER_HOST,
        stop_event: threading.Event | None = None,
    ) -> None:
        """Display a grid of static configurations with their error labels.

        Cell i (row ``i // 4``, column ``i % 4``) is the frame ``/grid/<i>`` at
        ``(col·spacing, −row·spacing, 0)``; it holds both models at the same
        configuration and the label ``"<pos> mm / <ori>°"``.

        Args:
            poses: Configurations (see :meth:`static_poses`); None → the 20 defaults.
            server: Existing viser server, or None to create one.
            port: Port for a new server.
            duration: Seconds to keep the display open.
            spacing: Distance between grid cells [m].
            host: Interface of a new server (loopback by default).
            stop_event: Set it to close the display early.
        """
        _check_duration(duration)
        spacing = float(spacing)
        if not np.isfinite(spacing) or spacing <= 0:
            raise ValueError(f"spacing must be a positive distance [m], got {spacing}")
        errors = self.static_poses(poses)
        urdf_orig, urdf_mod = self._load_yourdfpy()
        viz, created = self._get_viser_server(server, port, host)
        try:
            for i, err in enumerate(errors):
                row, col = divmod(i, 4)
                viz.scene.add_frame(
                    f"/grid/{i}", show_axes=False, position=(col * spacing, -row * spacing, 0.0)
                )
                vis_orig = self._add_urdf(viz, urdf_orig, f"/grid/{i}/orig", ORIG_COLOR)
                vis_mod = self._add_urdf(viz, urdf_mod, f"/grid/{i}/mod", MOD_COLOR)
                self._pose_vis(vis_orig, urdf_orig, err.q)
                self._pose_vis(vis_mod, urdf_mod, err.q)
                M_a, _ = self._ee_placements(err.q)
                label_z = max(float(M_a.translation[2]), 0.0) + 0.3
                viz.scene.add_label(
                    f"/grid/{i}/label",
                    f"{err.position_error_mm:.1f}mm / {err.orientation_error_deg:.1f}°",
                    position=(0.0, 0.0, label_z),
                )
            logger.info("%d configurations in grid at port %d", len(errors), viz.get_port())
            _wait(duration, stop_event)
        finally:
            if created:
                viz.stop()

    def show_interactive_validation(
        self,
        n_trajectory: int = 50,
        seed: int = 42,
        port: int = 8080,
        *,
        server=None,
        host: str = DEFAULT_VISER_HOST,
        duration: float | None = None,
        stop_event: threading.Event | None = None,
        animation_delay: float = 0.05,
    ) -> None:
        """Interactive viewer: trajectory replay, static comparison, error plots.

        One viser scene holds

        * the trajectory animation: both models (nominal blue, modified red)
          through ``n_trajectory`` random configurations, with the EE paths drawn
          as line segments and a *Replay Trajectory* button and speed slider;
        * the static comparison (offset 2.5 m along x): both models overlaid at
          one of the 20 default poses, a pose slider and an opacity slider for
          the modified model, and the pose's error in the panel;
        * uPlot charts of the trajectory and static errors (mm, degrees).

        Blocks until ``duration`` elapses, ``stop_event`` is set or Ctrl-C
        (both ``None``: until Ctrl-C). A server created here is
        stopped on return.

        Args:
            n_trajectory: Number of random configurations to animate.
            seed: Random seed.
            port: Port of a new server.
            server: Existing viser server instead of a new one.
            host: Interface of a new server (loopback by default).
            duration: Seconds to keep the viewer open.
            stop_event: Set it to close the viewer.
            animation_delay: Initial seconds between animation frames.
        """
        _check_duration(duration)
        traj_configs = self._sample_configs(n_trajectory, seed)
        static_configs = self._default_poses()
        urdf_orig, urdf_mod = self._load_yourdfpy()
        uplot = require_viewer_package("viser.uplot", "The interactive validation plots")

        srv, created = self._get_viser_server(server, port, host)
        view = _InteractiveValidation(
            self, srv, (urdf_orig, urdf_mod), traj_configs, static_configs, stop_event
        )
        try:
            view.build_scene()
            view.build_gui(uplot, animation_delay)
            view.connect()
            view.update_static_pose()
            logger.info(
                "Interactive validation at http://%s:%d — trajectory: blue nominal / red "
                "modified; static overlay offset +2.5 m in x; controls: replay, speed, pose, "
                "opacity",
                host,
                srv.get_port(),
            )
            view.replay_btn.disabled = True
            view.run_animation()
            _wait(duration, stop_event)
        finally:
            view.closing.set()
            if created:
                srv.stop()


def _error_series(deltas: Sequence[_PoseDeltaLike]) -> Tuple[np.ndarray, np.ndarray]:
    """Position errors [mm] and orientation errors [deg] of a list of pose deltas."""
    pos = np.array([e.position_error() * 1e3 for e in deltas])
    ori = np.degrees([e.orientation_error() for e in deltas])
    return pos, ori


class _InteractiveValidation:
    """State and callbacks of :meth:`URDFComparison.show_interactive_validation`.

    Holds the viser server, the yourdfpy models (shared by the trajectory and
    static views, hence ``cfg_lock``), the scene handles and the GUI widgets.
    ``closing`` is set when the viewer call returns; the animation stops at
    the next frame.
    """

    def __init__(
        self,
        comparison: ComparisonViewerMixin,
        srv: Any,
        urdfs: Tuple[Any, Any],
        traj_configs: np.ndarray,
        static_configs: List[np.ndarray],
        stop_event: threading.Event | None,
    ) -> None:
        self.cmp = comparison
        self.srv = srv
        self.urdf_orig, self.urdf_mod = urdfs
        self.traj_configs = traj_configs
        self.static_configs = static_configs
        self.stop_event = stop_event
        self.closing = threading.Event()
        self.cfg_lock = threading.Lock()
        self.anim_lock = threading.Lock()
        self.state: Dict[str, Any] = {"idx": 0, "speed": 0.0, "running": False}
        self.static_err: List[_PoseDeltaLike] = []
        self.replay_btn: Any = None

    def stopped(self) -> bool:
        """Whether the viewer is closing or the caller asked it to stop."""
        return self.closing.is_set() or (self.stop_event is not None and self.stop_event.is_set())

    def build_scene(self) -> None:
        """Trajectory models at the origin, static overlay offset by 2.5 m along x."""
        cmp, srv = self.cmp, self.srv
        srv.scene.add_frame("/trajectory", show_axes=False)
        self.traj_orig = cmp._add_urdf(srv, self.urdf_orig, "/trajectory/orig", ORIG_COLOR)
        self.traj_mod = cmp._add_urdf(srv, self.urdf_mod, "/trajectory/mod", MOD_COLOR)
        srv.scene.add_frame("/static", show_axes=False, position=(2.5, 0.0, 0.0))
        self.static_nom = cmp._add_urdf(srv, self.urdf_orig, "/static/nominal", ORIG_COLOR)
        self.static_mod = cmp._add_urdf(srv, self.urdf_mod, "/static/modified", (*MOD_COLOR, 0.5))
        srv.scene.add_label("/static/label_nom", "Nominal (blue)", position=(0, 0, 1.8))
        srv.scene.add_label("/static/label_mod", "Modified (red)", position=(0, 0, 2.0))

    def build_gui(self, uplot: Any, animation_delay: float) -> None:
        """Control panel (replay, speed, pose, opacity) and the error plots."""
        self.state["speed"] = float(animation_delay)
        traj_err = [self.cmp._compute_delta(q) for q in self.traj_configs]
        self.static_err = [self.cmp._compute_delta(q) for q in self.static_configs]
        self._add_controls(animation_delay)
        self._add_error_plots(uplot, _error_series(traj_err), _error_series(self.static_err))

    def _add_controls(self, animation_delay: float) -> None:
        gui = self.srv.gui
        with gui.add_folder("Controls"):
            gui.add_markdown("**Trajectory**")
            self.replay_btn = gui.add_button("Replay Trajectory", icon="player-play-filled")
            self.speed_slider = gui.add_slider(
                "Animation Speed",
                0.0,
                0.2,
                0.01,
                min(max(float(animation_delay), 0.0), 0.2),
                hint="Delay between configurations (seconds)",
            )
            gui.add_markdown("**Static Comparison**")
            self.pose_slider = gui.add_slider(
                "Pose Index",
                0,
                max(len(self.static_configs) - 1, 1),
                1,
                0,
                hint="Select which static configuration to display",
            )
            self.opacity_slider = gui.add_slider(
                "Modified Model Opacity",
                0.0,
                1.0,
                0.01,
                0.5,
                hint="Transparency of the modified model overlay",
            )
            self.pose_label = gui.add_markdown("Pose 0: ...")

    def _add_error_plots(
        self,
        uplot: Any,
        traj: Tuple[np.ndarray, np.ndarray],
        static: Tuple[np.ndarray, np.ndarray],
    ) -> None:
        def series():
            return (
                uplot.Series(),
                uplot.Series(label="Position Error (mm)", stroke="rgb(51, 102, 229)"),
                uplot.Series(label="Orientation Error (deg)", stroke="rgb(229, 51, 51)"),
            )

        gui = self.srv.gui
        with gui.add_folder("Error Plots"):
            for heading, title, (pos, ori) in (
                ("**Trajectory FK Errors**", "Trajectory", traj),
                ("**Static Pose FK Errors**", "Static Poses", static),
            ):
                gui.add_markdown(heading)
                gui.add_uplot(
                    data=(np.arange(pos.size, dtype=float), pos, ori),
                    series=series(),
                    title=title,
                    aspect=2.0,
                )

    def draw_traces(self, orig_pts: List[np.ndarray], mod_pts: List[np.ndarray]) -> None:
        """End-effector paths of both models as line segments (replacing earlier ones)."""
        for name in ("/traces/orig_line", "/traces/mod_line"):
            self.srv.scene.remove_by_name(name)
        if len(orig_pts) < 2:
            return
        for name, pts, color in (
            ("/traces/orig_line", np.asarray(orig_pts), ORIG_COLOR),
            ("/traces/mod_line", np.asarray(mod_pts), MOD_COLOR),
        ):
            segments = np.stack([pts[:-1], pts[1:]], axis=1).astype(np.float32)
            self.srv.scene.add_line_segments(name, segments, colors=color, thickness=0.004)

    def run_animation(self) -> None:
        """Replay the trajectory once (no-op while another replay runs)."""
        if not self.anim_lock.acquire(blocking=False):
            return
        try:
            orig_pts: List[np.ndarray] = []
            mod_pts: List[np.ndarray] = []
            for q in self.traj_configs:
                if self.stopped():
                    break
                with self.cfg_lock:
                    self.cmp._pose_vis(self.traj_orig, self.urdf_orig, q)
                    self.cmp._pose_vis(self.traj_mod, self.urdf_mod, q)
                M_a, M_b = self.cmp._ee_placements(q)
                orig_pts.append(M_a.translation.copy())
                mod_pts.append(M_b.translation.copy())
                if self.state["speed"] > 0:
                    self.closing.wait(self.state["speed"])
            self.draw_traces(orig_pts, mod_pts)
        finally:
            self.anim_lock.release()
            self.replay_btn.disabled = False

    def update_static_pose(self) -> None:
        """Pose both static models at the selected pose and show its error."""
        idx = int(self.state["idx"])
        q = self.static_configs[idx]
        with self.cfg_lock:
            self.cmp._pose_vis(self.static_nom, self.urdf_orig, q)
            self.cmp._pose_vis(self.static_mod, self.urdf_mod, q)
        err = self.static_err[idx]
        self.pose_label.content = (
            f"Pose {idx}: {err.position_error() * 1e3:.2f} mm / "
            f"{np.degrees(err.orientation_error()):.3f}°"
        )

    def connect(self) -> None:
        """Wire the GUI callbacks (replay in a daemon thread, sliders update the state)."""

        @self.replay_btn.on_click
        def _on_replay(_event) -> None:
            self.replay_btn.disabled = True
            threading.Thread(target=self.run_animation, daemon=True).start()

        @self.speed_slider.on_update
        def _on_speed(_event) -> None:
            self.state["speed"] = float(self.speed_slider.value)

        @self.pose_slider.on_update
        def _on_pose(_event) -> None:
            self.state["idx"] = min(int(self.pose_slider.value), len(self.static_configs) - 1)
            self.update_static_pose()

        @self.opacity_slider.on_update
        def _on_opacity(_event) -> None:
            for mesh in getattr(self.static_mod, "_meshes", []):
                mesh.opacity = float(self.opacity_slider.value)
