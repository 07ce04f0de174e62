"""Datasets from ROS bags: a :class:`TrajectoryData` or :class:`PoseObservations` per bag.

The reader (:mod:`figaroh.data.bag_reader`) streams ``sensor_msgs/JointState``
and pose messages into arrays; the time base is checked and, on request,
resampled (:mod:`figaroh.data.bag_time`); this module turns the arrays into the
datasets the CSV path produces, so identification and calibration from a bag
give the numbers they give from a CSV file holding the same samples.

Identification (:func:`trajectory_from_bag`):

* positions [rad or m], velocities (when every message carries them) and
  efforts of the model's active joints, matched by name;
* ``t_k = (stamp_k − stamp_0)·10⁻⁹`` [s] from ``header.stamp`` (the receive
  time when every header stamp is zero; recorded in the source notes);
* an irregular time base (gaps, duplicates, out-of-order or incomplete
  samples, jitter) is refused unless ``resample`` is ``linear`` or ``cubic``;
  the time-base report becomes the ``time_base`` data check of the verdict;
* efforts are joint efforts ([N·m] or [N]) unless ``effort:
  motor_current``: then ``τ_j = N_j · k_j · i_j`` with the reduction ratios
  ``N_j`` of ``mechanics.reduction_ratios`` and the motor constants ``k_j``
  [N·m/A] of ``data.bag.motor_constants``.

Calibration (:func:`observations_from_bag`): the static postures are the
windows where every active joint stays still (peak-to-peak ≤
``still_tolerance`` for at least ``still_window_s``); each posture is the mean
of its joint samples, paired with the mean of the pose samples stamped inside
the same window (position [m]; orientation as the roll-pitch-yaw [rad] of the
mean rotation, the convention of the calibration CSV).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence, Tuple, Union

import numpy as np

from figaroh._run.data_checks import DataFinding
from figaroh.data.bag_errors import BagError, EffortUnitError
from figaroh.data.bag_reader import bag_files, read_joint_states, read_poses
from figaroh.data.bag_time import (
    RESAMPLE_METHODS,
    TimeBaseReport,
    analyse_time_base,
    average_postures,
    poses_in_windows,
    resample,
    still_windows,
)
from figaroh.data.observations import PoseObservations
from figaroh.data.source import DataSource
from figaroh.data.trajectory import TrajectoryData
from figaroh.data.trajectory_fields import MOTOR_CURRENT, joint_effort_labels

logger = logging.getLogger(__name__)

__all__ = [
    "EFFORT_SOURCES",
    "BagTrajectory",
    "JointStateBagOptions",
    "PoseBagOptions",
    "is_bag_path",
    "observations_from_bag",
    "trajectory_from_bag",
]

PathLike = Union[str, "os.PathLike[str]"]

#: What the JointState ``effort`` field holds: joint effort, or motor current [A].
EFFORT_SOURCES = ("joint_effort", MOTOR_CURRENT)

_BAG_SUFFIXES = (".bag", ".mcap", ".db3")


def is_bag_path(path: PathLike) -> bool:
    """Whether ``path`` names a ROS bag rather than a CSV file.

    A ``.bag`` or ``.mcap`` file, or a folder holding a ROS 2 bag
    (``metadata.yaml``, ``*.db3`` or ``*.mcap`` files).
    """
    p = Path(path)
    if p.is_file():
        return p.suffix.lower() in _BAG_SUFFIXES
    if p.is_dir():
        return (p / "metadata.yaml").is_file() or any(
            f.suffix.lower() in (".db3", ".mcap") for f in p.iterdir() if f.is_file()
        )
    return False


def _topics(value: Any, key: str) -> Tuple[str, ...] | None:
    if value is None or value == "" or value == []:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(t, str) and t for t in items):
        raise BagError(f"{key} must be a topic name or a list of topic names, got {value!r}")
    return tuple(items)


def _positive(value: Any, key: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise BagError(f"{key} must be a positive number, got {value!r}")
    return float(value)


def _unknown_keys(section: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    unknown = sorted(set(section) - set(known))
    if unknown:
        raise BagError(f"{where}: unknown key(s) {unknown}; the keys are {sorted(known)}")


@dataclass(frozen=True)
class JointStateBagOptions:
    """How a joint-state bag becomes an identification trajectory.

    Attributes:
        topics: JointState topic(s) (None: the bag's only JointState topic;
            several: one per joint group, merged by stamp).
        resample: ``"none"`` (refuse an irregular time base), ``"linear"`` or
            ``"cubic"`` (resample onto the configured sampling frequency).
        effort: ``"joint_effort"`` ([N·m] or [N]) or ``"motor_current"`` [A].
        motor_constants: Joint name → motor torque constant [N·m/A] (with
            ``effort: motor_current``).
        jitter_tolerance: Largest accepted ``|Δt − T| / T`` of a regular base.
    """

    topics: Tuple[str, ...] | None = None
    resample: str = "none"
    effort: str = "joint_effort"
    motor_constants: Mapping[str, float] | None = None
    jitter_tolerance: float = 0.1

    def __post_init__(self) -> None:
        if self.resample not in RESAMPLE_METHODS:
            raise BagError(
                f"data.bag.resample must be one of {list(RESAMPLE_METHODS)}, got {self.resample!r}"
            )
        if self.effort not in EFFORT_SOURCES:
            raise BagError(
                f"data.bag.effort must be one of {list(EFFORT_SOURCES)}, got {self.effort!r}"
            )

    @classmethod
    def from_config(
        cls, section: Any, where: str = "tasks.identification.data.bag", **overrides: Any
    ) -> JointStateBagOptions:
        """The options of a ``data.bag`` mapping, with non-None ``overrides`` winning.

        Raises:
            BagError: an unknown key or a bad value, named with ``where``.
        """
        section = dict(section or {})
        if not isinstance(section, dict):
            raise BagError(f"{where} must be a mapping, got {section!r}")
        known = ("path", "validation_path", "joint_topics", "resample", "effort")
        _unknown_keys(section, (*known, "motor_constants", "jitter_tolerance"), where)
        section.update({k: v for k, v in overrides.items() if v is not None})
        constants = section.get("motor_constants")
        if constants is not None and not isinstance(constants, Mapping):
            raise BagError(
                f"{where}.motor_constants must map joint name → N·m/A, got {constants!r}"
            )
        return cls(
            topics=_topics(section.get("joint_topics"), f"{where}.joint_topics"),
            resample=str(section.get("resample", "none")),
            effort=str(section.get("effort", "joint_effort")),
            motor_constants=dict(constants) if constants is not None else None,
            jitter_tolerance=_positive(
                section.get("jitter_tolerance"), f"{where}.jitter_tolerance", 0.1
            ),
        )


@dataclass(frozen=True)
class PoseBagOptions:
    """How a bag of joint states and poses becomes calibration postures.

    Attributes:
        pose_topic: Topic of the measured pose (PoseStamped,
            PoseWithCovarianceStamped, TransformStamped or TFMessage).
        pose_frame: Child frame of the transform (TFMessage with several frames).
        joint_topics: JointState topic(s) (None: the only one).
        still_window_s: Shortest still window that makes a posture [s].
        still_tolerance: Largest joint peak-to-peak inside a still window [rad or m].
        min_pose_samples: Pose samples a window needs (fewer: the window is dropped).
    """

    pose_topic: str | None = None
    pose_frame: str | None = None
    joint_topics: Tuple[str, ...] | None = None
    still_window_s: float = 0.5
    still_tolerance: float = 1e-3
    min_pose_samples: int = 1

    @classmethod
    def from_config(
        cls, section: Any, where: str = "tasks.calibration.data.bag", **overrides: Any
    ) -> PoseBagOptions:
        """The options of a ``data.bag`` mapping, with non-None ``overrides`` winning.

        Raises:
            BagError: an unknown key or a bad value, named with ``where``.
        """
        section = dict(section or {})
        keys = ("joint_topics", "pose_topic", "pose_frame", "still_window_s", "still_tolerance")
        _unknown_keys(section, (*keys, "min_pose_samples"), where)
        section.update({k: v for k, v in overrides.items() if v is not None})
        pose_topic = section.get("pose_topic")
        if pose_topic is not None and not (isinstance(pose_topic, str) and pose_topic):
            raise BagError(f"{where}.pose_topic must be a topic name, got {pose_topic!r}")
        min_samples = section.get("min_pose_samples", 1)
        if isinstance(min_samples, bool) or not isinstance(min_samples, int) or min_samples < 1:
            raise BagError(f"{where}.min_pose_samples must be an integer ≥ 1, got {min_samples!r}")
        frame = section.get("pose_frame")
        return cls(
            pose_topic=pose_topic,
            pose_frame=str(frame) if frame else None,
            joint_topics=_topics(section.get("joint_topics"), f"{where}.joint_topics"),
            still_window_s=_positive(section.get("still_window_s"), f"{where}.still_window_s", 0.5),
            still_tolerance=_positive(
                section.get("still_tolerance"), f"{where}.still_tolerance", 1e-3
            ),
            min_pose_samples=min_samples,
        )


@dataclass(frozen=True)
class BagTrajectory:
    """A trajectory read from a bag and the report of its time base.

    Attributes:
        trajectory: The dataset (as the CSV path builds it).
        time_base: The stamps' regularity, before any resampling.
        resampled: The resampling applied (``"none"``: the stamps as recorded).
    """

    trajectory: TrajectoryData
    time_base: TimeBaseReport
    resampled: str

    def finding(self) -> DataFinding:
        """The ``time_base`` data check of the verdict.

        The stamps as recorded are checked; an irregular base reaches this
        point only when it was resampled on request (``resample: linear`` or
        ``cubic``): the check then passes and its message keeps the numbers.
        """
        if self.resampled == "none" or self.time_base.regular:
            return self.time_base.finding()
        return DataFinding(
            "time_base",
            True,
            f"resampled ({self.resampled}) onto the "
            f"{1.0 / self.time_base.expected_period_s:g} Hz grid: {self.time_base.summary()}",
        )


def _drive_gains(
    joints: Sequence[str], ratios: Any, options: JointStateBagOptions, path: PathLike
) -> np.ndarray:
    """``N_j · k_j`` per joint [N·m/A]; EffortUnitError naming the missing keys."""
    constants = options.motor_constants or {}
    missing = [j for j in joints if j not in constants]
    if isinstance(ratios, Mapping):
        ratio = [ratios.get(j) for j in joints]
    elif isinstance(ratios, (int, float)) and not isinstance(ratios, bool):
        ratio = [float(ratios)] * len(joints)
    elif isinstance(ratios, (list, tuple)) and len(ratios) == len(joints):
        ratio = list(ratios)
    else:
        ratio = [None] * len(joints)
    no_ratio = [j for j, r in zip(joints, ratio, strict=True) if r is None]
    if missing or no_ratio:
        raise EffortUnitError(
            f"{path}: data.bag.effort is motor_current, so the efforts [A] must be converted "
            "to joint torques τ = N·k·i: "
            + "; ".join(
                part
                for part in (
                    f"give data.bag.motor_constants [N·m/A] for {missing}" if missing else "",
                    f"give mechanics.reduction_ratios (one per active joint, or by name) for "
                    f"{no_ratio}"
                    if no_ratio
                    else "",
                )
                if part
            )
        )
    return np.asarray(ratio, dtype=float) * np.asarray([constants[j] for j in joints], dtype=float)


def trajectory_from_bag(
    path: PathLike,
    joint_names: Sequence[str],
    sampling_frequency: float,
    *,
    model: Any = None,
    options: JointStateBagOptions | None = None,
    reduction_ratios: Any = None,
) -> BagTrajectory:
    """Read the joint states of ``path`` into a :class:`TrajectoryData`.

    Args:
        path: ROS 1 ``.bag``, ROS 2 bag folder (sqlite3 or MCAP) or ``.mcap`` file.
        joint_names: Active joints, the column order of every signal.
        sampling_frequency: Configured sampling frequency [Hz]: the expected
            period of the stamps and the grid of any resampling.
        model: ``pinocchio.Model`` (revolute [N·m] vs prismatic [N] efforts).
        options: Topic, resampling and effort settings (default: the defaults).
        reduction_ratios: ``mechanics.reduction_ratios`` (with ``effort: motor_current``).

    Returns:
        The trajectory and its time-base report.

    Raises:
        BagError: any problem of the bag (its subclasses name it), an
            irregular time base with ``resample: none``
            (:class:`~figaroh.data.bag_errors.BagTimeBaseError`), messages
            without efforts, or motor currents the configuration cannot convert
            (:class:`~figaroh.data.bag_errors.EffortUnitError`).
    """
    opts = options or JointStateBagOptions()
    joints = [str(j) for j in joint_names]
    arrays = read_joint_states(path, joints, opts.topics)
    if arrays.effort is None:
        raise BagError(
            f"{path}: the JointState messages of {list(arrays.topics)} carry no effort: "
            "identification needs joint efforts (record the effort field, or give another topic)"
        )
    report = analyse_time_base(
        arrays.stamp_ns,
        sampling_frequency,
        position=arrays.position,
        stamp_source=arrays.stamp_source,
        jitter_tolerance=opts.jitter_tolerance,
    )
    velocity = arrays.velocity
    if velocity is not None and not np.all(np.isfinite(velocity)) and opts.resample == "none":
        logger.warning(
            "%s: some JointState messages carry no velocity: velocities are derived from positions",
            path,
        )
        velocity = None
    t, signals = resample(
        arrays.stamp_ns,
        {"position": arrays.position, "velocity": velocity, "effort": arrays.effort},
        sampling_frequency,
        opts.resample,
        stamp_source=arrays.stamp_source,
        jitter_tolerance=opts.jitter_tolerance,
    )
    if opts.resample != "none" and report.n_gaps:
        logger.warning(
            "%s: %s resampling interpolates across %d gap(s), the largest %.3g s",
            path,
            opts.resample,
            report.n_gaps,
            report.largest_gap_s,
        )
    kinds, units = joint_effort_labels(model, joints)
    current = opts.effort == MOTOR_CURRENT
    notes = (
        f"topics {', '.join(arrays.topics)}; stamps from {arrays.stamp_source}; "
        f"resample {opts.resample}"
        + (f"; truncated: {arrays.truncated}" if arrays.truncated else "")
    )
    trajectory = TrajectoryData.from_arrays(
        joints,
        signals["position"],
        signals["effort"],
        effort_kind=MOTOR_CURRENT if current else kinds,
        effort_unit="A" if current else units,
        dq=signals["velocity"],
        source=DataSource.from_files(
            bag_files(path), adapter="figaroh.data.bag_source.trajectory_from_bag", notes=notes
        ),
        t=t,
    )
    if current:
        gains = _drive_gains(joints, reduction_ratios, opts, path)
        trajectory = trajectory.converted(
            gains,
            effort_kind=kinds,
            effort_unit=units,
            description="joint effort = reduction ratio × motor constant × motor current",
        )
    return BagTrajectory(trajectory, report, opts.resample)


def _sorted_complete(stamp_ns: np.ndarray, position: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Samples in stamp order, without the rows where a joint is missing."""
    order = np.argsort(stamp_ns, kind="stable")
    stamp_ns, position = stamp_ns[order], position[order]
    complete = np.all(np.isfinite(position), axis=1)
    return stamp_ns[complete], position[complete]


def observations_from_bag(
    path: PathLike,
    model: Any,
    calib_config: Mapping[str, Any],
    *,
    options: PoseBagOptions | None = None,
    del_list: Sequence[int] = (),
) -> PoseObservations:
    """Static postures of a bag paired with the measured pose (one row per posture).

    Args:
        path: The bag.
        model: ``pinocchio.Model`` (joint names).
        calib_config: Calibration config (``NbMarkers`` = 1, ``measurability``,
            ``actJoint_idx``).
        options: Topics and still-window settings (``pose_topic`` required).
        del_list: 0-based postures to mask.

    Returns:
        The observations, as :meth:`PoseObservations.from_csv` builds them.

    Raises:
        BagError: no pose topic given, several markers configured, no still
            posture, or no pose sample in any posture (and the reader's errors).
    """
    opts = options or PoseBagOptions()
    if not opts.pose_topic:
        raise BagError(
            f"{path}: calibration from a bag needs the pose topic: set "
            "tasks.calibration.data.bag.pose_topic (or figaroh calibrate --pose-topic T)"
        )
    nmark = int(calib_config.get("NbMarkers", 1))
    if nmark != 1:
        raise BagError(
            f"{path}: one pose topic measures one marker, but NbMarkers is {nmark}: "
            "calibrate from a CSV file for several markers"
        )
    joints = PoseObservations._active_joint_names(model, calib_config)
    states = read_joint_states(path, joints, opts.joint_topics)
    stamp_ns, position = _sorted_complete(states.stamp_ns, states.position)
    windows = still_windows(
        stamp_ns, position, window_s=opts.still_window_s, tolerance=opts.still_tolerance
    )
    if not windows:
        raise BagError(
            f"{path}: no still posture: no window of {opts.still_window_s} s where every joint "
            f"stays within {opts.still_tolerance} (raise data.bag.still_tolerance or lower "
            "data.bag.still_window_s)"
        )
    q = average_postures(position, windows)
    poses = read_poses(path, opts.pose_topic, opts.pose_frame)
    pos, rpy, counts = poses_in_windows(
        windows,
        poses.stamp_ns,
        poses.position,
        poses.quaternion_xyzw,
        min_samples=opts.min_pose_samples,
    )
    keep = counts >= opts.min_pose_samples
    if not np.any(keep):
        raise BagError(
            f"{path}: none of the {len(windows)} still postures has a pose sample of "
            f"{opts.pose_topic} inside it: check the topic and that both were recorded together"
        )
    if not np.all(keep):
        logger.warning(
            "%s: %d of %d still postures have fewer than %d pose samples of %s: dropped",
            path,
            int((~keep).sum()),
            len(windows),
            opts.min_pose_samples,
            opts.pose_topic,
        )
    meas6 = np.asarray(calib_config.get("measurability", [True] * 6), dtype=bool)
    values = np.concatenate([pos[keep], rpy[keep]], axis=1)[:, None, :]
    n = int(keep.sum())
    mask = np.ones(n, dtype=bool)
    rows = [int(i) for i in del_list]
    if any(not 0 <= i < n for i in rows):
        raise BagError(f"{path}: del_list {rows} names postures outside 0..{n - 1}")
    mask[rows] = False
    notes = (
        f"joint topics {', '.join(states.topics)}; pose topic {poses.topic} ({poses.msgtype}); "
        f"{n} still postures of ≥ {opts.still_window_s} s within {opts.still_tolerance}"
    )
    return PoseObservations(
        joint_names=tuple(joints),
        q=q[keep],
        values=values,
        point_names=("1",),
        measurability=meas6[None, :],
        frame=poses.frame_id,
        mask=mask,
        sample_index=np.arange(n),
        source=DataSource.from_files(
            bag_files(path), adapter="figaroh.data.bag_source.observations_from_bag", notes=notes
        ),
    )
