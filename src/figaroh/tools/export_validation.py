"""URDF model comparison through forward kinematics.

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

The ``show_*`` viewer methods come from
:class:`figaroh.tools.validation_viewer.ComparisonViewerMixin` (viser, with
yourdfpy + trimesh for the meshes, imported only when a viewer is requested;
servers bind to ``127.0.0.1`` by default and every display takes a
``duration`` and/or a ``stop_event`` so it never blocks forever).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Sequence, Tuple, Union

import numpy as np
import pinocchio as pin

from .exceptions import RobotLoadError
from .validation_viewer import MOD_COLOR as MOD_COLOR
from .validation_viewer import ORIG_COLOR as ORIG_COLOR
from .validation_viewer import ComparisonViewerMixin, ConfigLike

logger = logging.getLogger(__name__)

__all__ = ["PoseDelta", "FkConsistencyResult", "PoseError", "URDFComparison"]

#: Number of default static poses of :meth:`URDFComparison.static_poses`.
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


class URDFComparison(ComparisonViewerMixin):
    """Compare two URDF models via FK analysis and viser visualisation.

    Both URDFs are loaded into Pinocchio (kinematics only, no meshes needed)
    and, for the viewers only, into yourdfpy.

    Args:
        nominal_urdf: Path of the original/reference URDF.
        modified_urdf: Path of the URDF after parameter application.
        ee_frame: Frame compared in both models. Default (figaroh 1.0.2's
            choice): the first frame, in the model's frame order, attached to
            the deepest joint (the joint with the most joints above it);
            frames fixed to the universe are skipped. That is the frame
            Pinocchio creates for that joint, e.g. ``wrist_3_joint`` on a
            UR10, not the tool frame below it.
        calibrated_chain: Pick the end of the calibrated chain instead (when
            ``ee_frame`` is None): among the frames below the most joint
            origins (or fixed-frame placements) that differ between the two
            URDFs, the deepest one (most joints above it, then the longest
            chain of fixed frames) — for a left-arm calibration of a humanoid
            a left-gripper frame; when the two URDFs have the same origins,
            the deepest frame of the tree. Off by default: it changes the
            compared frame, hence the figures, from figaroh 1.0.2's.
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
        calibrated_chain: bool = False,
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

        if ee_frame is None and calibrated_chain:
            self.ee_frame_a, self.ee_id_a = self._detect_ee(self.model_a, self.model_b)
        elif ee_frame is None:
            self.ee_frame_a, self.ee_id_a = self._deepest_joint_frame(self.model_a)
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
    def _deepest_joint_frame(model: pin.Model) -> Tuple[str, int]:
        """End-effector frame ``(name, id)`` as figaroh 1.0.2 picks it.

        The first frame, in frame order, whose parent joint has the most
        supporting joints; frames attached to the universe are skipped.
        """
        best: Tuple[int, int] | None = None  # (depth, frame id)
        for fid, frame in enumerate(model.frames):
            if frame.parentJoint == 0:
                continue
            depth = len(model.supports[frame.parentJoint])
            if best is None or depth > best[0]:
                best = (depth, fid)
        if best is None:
            raise ValueError(
                "The model has no frame attached to a moving joint: nothing to compare "
                "(does the URDF have any non-fixed joint?)"
            )
        return model.frames[best[1]].name, best[1]

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
        configs: Sequence[ConfigLike] = self._default_poses() if poses is None else poses
        results = []
        for i, q in enumerate(configs):
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
