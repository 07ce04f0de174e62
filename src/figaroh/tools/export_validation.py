"""URDF model comparison and validation utilities.

Compare two URDF models — typically the nominal one and the one written by
:func:`figaroh.tools.urdf_exporter.export_urdf` after calibration — through
forward kinematics, and look at them side by side in a viser viewer.

Typical usage::

    from figaroh.tools.export_validation import URDFComparison

    comp = URDFComparison("robot.urdf", "robot_modified.urdf")
    print(comp.fk_consistency_check())
    comp.show_static_grid(duration=30)

The pose difference at a configuration q is the SE(3) transform from the
nominal end-effector frame to the modified one,
``Δ(q) = M_nom(q)⁻¹ · M_mod(q)``, with twist ``ξ = log₆(Δ) = (v, ω)``. The
position error is ``‖Δ.translation‖ = ‖p_mod − p_nom‖`` [m] and the orientation
error the rotation angle ``‖ω‖`` [rad].

Viewer methods use viser (with yourdfpy + trimesh for the meshes), imported
only when a viewer is requested. Servers bind to ``127.0.0.1`` by default; a
server created by a method is stopped when the method returns, one passed in
is left running. Every display takes a ``duration`` and/or a
``threading.Event`` (``stop_event``) so it never blocks a script or test
forever.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple, Union

import numpy as np
import pinocchio as pin

from .exceptions import RobotLoadError
from .robot_paths import candidate_package_roots, find_package
from .robotvisualization import DEFAULT_VISER_HOST, ViewerUnavailableError, create_viser_server

logger = logging.getLogger(__name__)

__all__ = ["PoseDelta", "FkConsistencyResult", "PoseError", "URDFComparison"]

ConfigLike = Union[Sequence[float], np.ndarray]

ORIG_COLOR: Tuple[int, int, int] = (51, 102, 229)
MOD_COLOR: Tuple[int, int, int] = (229, 51, 51)
N_DEFAULT_POSES = 20


# --------------------------------------------------------------------------- results
@dataclass(repr=False)
class PoseDelta:
    """FK pose difference between two models at one configuration.

    The delta is ``M_nominal⁻¹ · M_modified``: the SE(3) transform from the
    nominal end-effector frame to the modified one.

    Attributes:
        translation: (3,) translation of the delta [m], in the nominal EE frame.
        rotation: (3, 3) rotation of the delta.
        twist: (6,) ``log₆`` of the delta, ``(v [m], ω [rad])``.
        q: (nq,) configuration it was computed at [rad, m].
    """

    translation: np.ndarray
    rotation: np.ndarray
    twist: np.ndarray
    q: np.ndarray

    def position_error(self) -> float:
        """Euclidean distance between the two end-effector origins [m]."""
        return float(np.linalg.norm(self.translation))

    def orientation_error(self) -> float:
        """Angle of the relative rotation (angle-axis magnitude) [rad]."""
        return float(np.linalg.norm(self.twist[3:]))

    def __repr__(self) -> str:
        return (
            f"PoseDelta(position_error={self.position_error():.6g} m, "
            f"orientation_error={self.orientation_error():.6g} rad)"
        )


@dataclass(repr=False)
class FkConsistencyResult:
    """Aggregated FK comparison of the nominal and exported URDF.

    Attributes:
        rmse_position: Root-mean-square position error [m].
        rmse_orientation: Root-mean-square orientation error [rad].
        max_position: Largest position error [m].
        max_orientation: Largest orientation error [rad].
        per_sample: One :class:`PoseDelta` per sampled configuration.
    """

    rmse_position: float
    rmse_orientation: float
    max_position: float
    max_orientation: float
    per_sample: List[PoseDelta] = field(default_factory=list)

    @property
    def n_samples(self) -> int:
        """Number of compared configurations."""
        return len(self.per_sample)

    def summary(self) -> str:
        """One line in mm / degrees."""
        return (
            f"FK consistency over {self.n_samples} configurations: position RMSE "
            f"{self.rmse_position * 1e3:.4f} mm (max {self.max_position * 1e3:.4f} mm), "
            f"orientation RMSE {np.degrees(self.rmse_orientation):.4f} deg "
            f"(max {np.degrees(self.max_orientation):.4f} deg)"
        )

    def __repr__(self) -> str:
        return (
            f"FkConsistencyResult(rmse_position={self.rmse_position:.6g}, "
            f"rmse_orientation={self.rmse_orientation:.6g}, "
            f"max_position={self.max_position:.6g}, "
            f"max_orientation={self.max_orientation:.6g}, "
            f"per_sample=<{self.n_samples} samples>)"
        )


@dataclass(repr=False)
class PoseError:
    """FK error at one static configuration.

    Attributes:
        q: (nq,) configuration [rad, m].
        position_error_mm: Position error [mm].
        orientation_error_deg: Orientation error [deg].
        pose_delta: The underlying :class:`PoseDelta`.
        label: User label (``"pose_<i>"`` by default).
    """

    q: np.ndarray
    position_error_mm: float
    orientation_error_deg: float
    pose_delta: PoseDelta
    label: str = ""

    def __repr__(self) -> str:
        return (
            f"PoseError(label={self.label!r}, position_error_mm={self.position_error_mm:.4f}, "
            f"orientation_error_deg={self.orientation_error_deg:.4f})"
        )


# --------------------------------------------------------------------------- helpers
def _check_duration(duration: float | None) -> float | None:
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


def _load_model(path: Path) -> pin.Model:
    try:
        return pin.buildModelFromUrdf(str(path))
    except (ValueError, RuntimeError) as exc:
        raise RobotLoadError(
            f"Pinocchio could not build a model from {path}: {exc}. Check that the file is "
            f"a valid URDF."
        ) from exc


def _frame_depth(model: pin.Model, frame_id: int) -> int:
    depth = 0
    f = frame_id
    while f != 0 and depth <= model.nframes:
        f = model.frames[f].parentFrame
        depth += 1
    return depth


class URDFComparison:
    """Compare two URDF models via FK analysis and viser visualisation.

    Both URDFs are loaded into Pinocchio (kinematics only, no meshes needed)
    and, for the viewers only, into yourdfpy.

    Args:
        nominal_urdf: Path of the original/reference URDF.
        modified_urdf: Path of the URDF after parameter application.
        ee_frame: Frame compared in both models. Default: the end of the
            calibrated chain — among the frames below the most joint origins
            (or fixed-frame placements) that differ between the two URDFs, the
            deepest one (most joints above it, then the longest chain of fixed
            frames); for a left-arm calibration of a humanoid that is a
            left-gripper frame. When the two URDFs have the same origins, the
            deepest frame of the tree. Frames fixed to the universe are
            skipped.
        package_dirs: Extra folders in which ``package://`` mesh packages are
            searched (viewers only; the folders of both URDFs and the
            example-robot-data wheel are always searched).

    Raises:
        FileNotFoundError: A URDF does not exist.
        RobotLoadError: A URDF is not valid.
        ValueError: The two models have different joints, or ``ee_frame`` is unknown.
    """

    def __init__(
        self,
        nominal_urdf: Union[str, Path],
        modified_urdf: Union[str, Path],
        *,
        ee_frame: str | None = None,
        package_dirs: Sequence[Union[str, Path]] | None = None,
    ):
        self.nominal_path = Path(nominal_urdf)
        self.modified_path = Path(modified_urdf)
        for label, p in (
            ("nominal_urdf", self.nominal_path),
            ("modified_urdf", self.modified_path),
        ):
            if not p.is_file():
                raise FileNotFoundError(f"URDF not found: {p} ({label})")
        self.package_dirs = [Path(p) for p in package_dirs] if package_dirs else []

        self.model_a = _load_model(self.nominal_path)
        self.model_b = _load_model(self.modified_path)
        self.data_a = self.model_a.createData()
        self.data_b = self.model_b.createData()
        self._check_compatible()

        if ee_frame is None:
            self.ee_frame_a, self.ee_id_a = self._detect_ee(self.model_a, self.model_b)
        else:
            self.ee_frame_a, self.ee_id_a = self._frame_by_name(self.model_a, ee_frame, "nominal")
        self.ee_frame_b, self.ee_id_b = self._frame_by_name(
            self.model_b, self.ee_frame_a, "modified"
        )

        self._joint_layout = self._build_layout(self.model_a)
        self._yourdfpy_cache: Tuple[Any, Any] | None = None
        self._fk_lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"URDFComparison(nominal='{self.nominal_path}', modified='{self.modified_path}', "
            f"ee_frame={self.ee_frame_a!r}, nq={self.model_a.nq})"
        )

    # ------------------------------------------------------------------ model structure
    @property
    def ee_frame(self) -> str:
        """Name of the compared end-effector frame."""
        return self.ee_frame_a

    @property
    def joint_names(self) -> List[str]:
        """Names of the joints with a single coordinate (revolute, prismatic, continuous)."""
        return [name for name, *_ in self._joint_layout]

    def _check_compatible(self) -> None:
        names_a = list(self.model_a.names)
        names_b = list(self.model_b.names)
        if names_a != names_b or self.model_a.nq != self.model_b.nq:
            only_a = sorted(set(names_a) - set(names_b))
            only_b = sorted(set(names_b) - set(names_a))
            raise ValueError(
                "The two URDFs do not have the same joints (in the same order): "
                f"only in nominal {only_a}, only in modified {only_b}, "
                f"nq {self.model_a.nq} vs {self.model_b.nq}. URDFComparison compares a URDF "
                f"with a copy whose parameters were changed, not different robots."
            )
        for j in range(1, self.model_a.njoints):
            if self.model_a.joints[j].shortname() != self.model_b.joints[j].shortname():
                raise ValueError(
                    f"Joint {names_a[j]!r} has type {self.model_a.joints[j].shortname()} in "
                    f"the nominal URDF but {self.model_b.joints[j].shortname()} in the modified one"
                )

    @staticmethod
    def _changed_origins(
        model_a: pin.Model, model_b: pin.Model, tol: float = 1e-12
    ) -> Tuple[set, set]:
        """Joints and frames whose placement differs between the models: ``(joints, frames)``.

        Joint origins are ``jointPlacements``; fixed URDF joints become frames,
        compared by their placement in the parent joint.
        """
        joints = {
            j
            for j in range(1, model_a.njoints)
            if not model_a.jointPlacements[j].isApprox(model_b.jointPlacements[j], tol)
        }
        frames = set()
        if model_a.nframes == model_b.nframes:
            for fid in range(1, model_a.nframes):
                fa, fb = model_a.frames[fid], model_b.frames[fid]
                if fa.name == fb.name and not fa.placement.isApprox(fb.placement, tol):
                    frames.add(fid)
        return joints, frames

    @staticmethod
    def _detect_ee(model: pin.Model, modified: pin.Model | None = None) -> Tuple[str, int]:
        """End-effector frame ``(name, id)``: the end of the chain that differs, else the deepest.

        Each frame not fixed to the universe is ranked by (number of changed
        joint origins above it and changed fixed-frame placements on its
        frame chain, joints above it, fixed frames above it, id): the first
        term selects the calibrated chain when ``modified`` differs from
        ``model``.
        """
        changed_j, changed_f = (
            URDFComparison._changed_origins(model, modified)
            if modified is not None
            else (set(), set())
        )
        best: Tuple[Tuple[int, int, int, int], int] | None = None
        for fid, frame in enumerate(model.frames):
            if frame.parentJoint == 0:
                continue
            supports = model.supports[frame.parentJoint]
            n_changed = sum(1 for j in supports if int(j) in changed_j)
            if changed_f:
                f, hops = fid, 0
                while f != 0 and hops <= model.nframes:
                    n_changed += f in changed_f
                    f, hops = model.frames[f].parentFrame, hops + 1
            key = (n_changed, len(supports), _frame_depth(model, fid), fid)
            if best is None or key > best[0]:
                best = (key, fid)
        if best is None:
            raise ValueError(
                "The model has no frame attached to a moving joint: nothing to compare "
                "(does the URDF have any non-fixed joint?)"
            )
        fid = best[1]
        if changed_j or changed_f:
            logger.info(
                "URDFComparison: end-effector %s (end of the chain of the %d changed joint "
                "origin(s) and %d frame placement(s))",
                model.frames[fid].name,
                len(changed_j),
                len(changed_f),
            )
        return model.frames[fid].name, fid

    @staticmethod
    def _frame_by_name(model: pin.Model, name: str, which: str) -> Tuple[str, int]:
        if not model.existFrame(name):
            raise ValueError(
                f"Frame {name!r} does not exist in the {which} URDF; pass ee_frame= with a "
                f"frame of both models."
            )
        return name, int(model.getFrameId(name))

    @staticmethod
    def _build_layout(model: pin.Model) -> List[Tuple[str, int, int, float, float]]:
        """Per 1-DoF joint: ``(name, idx_q, nq, lower, upper)`` (continuous: ±π)."""
        layout = []
        for j in range(1, model.njoints):
            joint = model.joints[j]
            if joint.nv != 1 or joint.nq not in (1, 2):
                if joint.nq > 0:
                    logger.warning(
                        "Joint %s (%s) is kept at its neutral value when sampling",
                        model.names[j],
                        joint.shortname(),
                    )
                continue
            iq = joint.idx_q
            if joint.nq == 2:  # continuous joint stored as (cos θ, sin θ)
                lo, hi = -np.pi, np.pi
            else:
                lo = float(model.lowerPositionLimit[iq])
                hi = float(model.upperPositionLimit[iq])
                if not np.isfinite(lo) or lo < -1e10:
                    lo = -np.pi
                if not np.isfinite(hi) or hi > 1e10:
                    hi = np.pi
                if hi < lo:
                    lo, hi = hi, lo
            layout.append((model.names[j], iq, joint.nq, lo, hi))
        return layout

    # ------------------------------------------------------------------ configurations
    def _values_to_q(self, values: np.ndarray) -> np.ndarray:
        """Joint values (n, n_dof) [rad, m] → Pinocchio configurations (n, nq)."""
        values = np.atleast_2d(np.asarray(values, dtype=float))
        Q = np.tile(pin.neutral(self.model_a), (values.shape[0], 1))
        for k, (_, iq, nq, _, _) in enumerate(self._joint_layout):
            if nq == 1:
                Q[:, iq] = values[:, k]
            else:
                Q[:, iq] = np.cos(values[:, k])
                Q[:, iq + 1] = np.sin(values[:, k])
        return Q

    def _q_to_values(self, q: np.ndarray) -> np.ndarray:
        out = np.empty(len(self._joint_layout))
        for k, (_, iq, nq, _, _) in enumerate(self._joint_layout):
            out[k] = q[iq] if nq == 1 else np.arctan2(q[iq + 1], q[iq])
        return out

    def _limits(self) -> Tuple[np.ndarray, np.ndarray]:
        lo = np.array([entry[3] for entry in self._joint_layout], dtype=float)
        hi = np.array([entry[4] for entry in self._joint_layout], dtype=float)
        return lo, hi

    def _sample_configs(self, n: int, seed: int) -> np.ndarray:
        """``n`` configurations (n, nq), joint values uniform within the limits."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"the number of configurations must be a positive integer, got {n!r}")
        rng = np.random.default_rng(seed)
        lo, hi = self._limits()
        values = rng.uniform(lo, hi, size=(int(n), lo.size))
        return self._values_to_q(values)

    def _default_poses(self) -> List[np.ndarray]:
        """20 poses: home, half/90 % towards each limit, alternating mixes, random."""
        lo, hi = self._limits()
        home = np.clip(np.zeros_like(lo), lo, hi)
        alt = (np.arange(lo.size) % 2).astype(bool)
        structured = [
            home,
            home + 0.5 * (lo - home),
            home + 0.5 * (hi - home),
            home + 0.9 * (lo - home),
            home + 0.9 * (hi - home),
            np.where(alt, home + 0.5 * (lo - home), home + 0.5 * (hi - home)),
            np.where(alt, home + 0.5 * (hi - home), home + 0.5 * (lo - home)),
            np.where(alt, home + 0.9 * (lo - home), home + 0.9 * (hi - home)),
        ]
        rng = np.random.default_rng(2024)
        n_random = N_DEFAULT_POSES - len(structured)
        random = rng.uniform(
            home + 0.8 * (lo - home), home + 0.8 * (hi - home), (n_random, lo.size)
        )
        values = np.vstack([np.vstack(structured), random])
        return list(self._values_to_q(values))

    def _as_q(self, q: ConfigLike, label: str = "pose") -> np.ndarray:
        """Accept a Pinocchio q (nq,) or one value per 1-DoF joint (n_dof,)."""
        arr = np.asarray(q, dtype=float).ravel()
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{label} contains NaN or inf")
        if arr.size == self.model_a.nq:
            return arr
        if arr.size == len(self._joint_layout):
            return self._values_to_q(arr)[0]
        raise ValueError(
            f"{label} must have nq = {self.model_a.nq} entries (Pinocchio configuration) or "
            f"{len(self._joint_layout)} joint values {self.joint_names} [rad, m]; got {arr.size}"
        )

    # ------------------------------------------------------------------ FK comparison
    def _ee_placements(self, q: np.ndarray) -> Tuple[pin.SE3, pin.SE3]:
        with self._fk_lock:
            pin.forwardKinematics(self.model_a, self.data_a, q)
            M_a = pin.updateFramePlacement(self.model_a, self.data_a, self.ee_id_a).copy()
            pin.forwardKinematics(self.model_b, self.data_b, q)
            M_b = pin.updateFramePlacement(self.model_b, self.data_b, self.ee_id_b).copy()
        return M_a, M_b

    def _compute_delta(self, q: np.ndarray) -> PoseDelta:
        q = np.asarray(q, dtype=float).ravel()
        M_a, M_b = self._ee_placements(q)
        delta = M_a.actInv(M_b)
        twist = pin.log6(delta).vector
        return PoseDelta(
            translation=np.array(delta.translation, copy=True),
            rotation=np.array(delta.rotation, copy=True),
            twist=np.array(twist, copy=True),
            q=q.copy(),
        )

    @staticmethod
    def _aggregate(deltas: List[PoseDelta]) -> FkConsistencyResult:
        pos = np.array([d.position_error() for d in deltas])
        ori = np.array([d.orientation_error() for d in deltas])
        return FkConsistencyResult(
            rmse_position=float(np.sqrt(np.mean(pos**2))),
            rmse_orientation=float(np.sqrt(np.mean(ori**2))),
            max_position=float(pos.max()),
            max_orientation=float(ori.max()),
            per_sample=list(deltas),
        )

    def fk_consistency_check(self, n_samples: int = 100, seed: int = 42) -> FkConsistencyResult:
        """Compare the end-effector pose of both models on random configurations.

        A file-integrity check: it verifies the exported URDF reproduces the
        calibrated kinematics (RMSE ``sqrt(mean ‖Δp‖²)`` [m] and
        ``sqrt(mean θ²)`` [rad] over the samples). It does not test against
        measurements (use the calibration validation for that).

        Args:
            n_samples: Number of configurations, joint values uniform within the
                nominal joint limits (continuous joints in [−π, π]).
            seed: Random seed.

        Returns:
            :class:`FkConsistencyResult` (metres / radians).
        """
        configs = self._sample_configs(n_samples, seed)
        return self._aggregate([self._compute_delta(q) for q in configs])

    def static_poses(self, poses: List[ConfigLike] | None = None) -> List[PoseError]:
        """FK errors at given configurations.

        Args:
            poses: Configurations, each either a Pinocchio q (nq,) or one value
                per 1-DoF joint (see :attr:`joint_names`) [rad, m]. ``None`` uses
                20 default poses (home, towards each limit, alternating mixes and
                seeded random poses).

        Returns:
            One :class:`PoseError` per configuration (mm / degrees), labelled
            ``pose_<i>``.
        """
        if poses is None:
            poses = self._default_poses()
        results = []
        for i, q in enumerate(poses):
            q_arr = self._as_q(q, f"poses[{i}]")
            delta = self._compute_delta(q_arr)
            results.append(
                PoseError(
                    q=q_arr,
                    position_error_mm=delta.position_error() * 1000.0,
                    orientation_error_deg=float(np.degrees(delta.orientation_error())),
                    pose_delta=delta,
                    label=f"pose_{i}",
                )
            )
        return results

    # ------------------------------------------------------------------ viewer plumbing
    def _package_roots(self) -> List[Path]:
        roots: List[Path] = []
        for urdf in (self.modified_path, self.nominal_path):
            for root in candidate_package_roots(urdf, self.package_dirs):
                if root not in roots:
                    roots.append(root)
        return roots

    def _filename_handler(self, urdf_path: Path):
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
            try:
                import yourdfpy
            except ImportError as exc:
                raise ViewerUnavailableError(
                    "Showing URDF models requires 'yourdfpy' (and trimesh). Install the "
                    "visualisation extras: pip install 'figaroh[viz]'."
                ) from exc
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
        try:
            from viser.extras import ViserUrdf
        except ImportError as exc:
            raise ViewerUnavailableError(
                "Showing URDF models requires viser with its URDF extras "
                "(pip install 'figaroh[viz]')."
            ) from exc
        return ViserUrdf

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
        try:
            import trimesh
        except ImportError as exc:  # pragma: no cover
            raise ViewerUnavailableError(
                "trimesh is required (pip install 'figaroh[viz]')"
            ) from exc
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
        (both ``None``: until Ctrl-C, as upstream). A server created here is
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
        try:
            from viser import uplot
        except ImportError as exc:
            raise ViewerUnavailableError("viser is required (pip install 'figaroh[viz]')") from exc

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


def _error_series(deltas: List[PoseDelta]) -> Tuple[np.ndarray, np.ndarray]:
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
        comparison: URDFComparison,
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
        self.static_err: List[PoseDelta] = []
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
