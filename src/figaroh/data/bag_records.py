"""What reading a ROS bag returns: topic and bag summaries, joint-state and pose arrays.

The records are frozen dataclasses:

* :class:`TopicInfo`: one topic of a bag (type, message count, receive-time
  span and rate, joint names or frames);
* :class:`BagSummary`: a bag's storage form, topics and time span, as a
  plain-text table (``figaroh bag info``) or JSON-able builtins;
* :class:`JointStateArrays`: ``sensor_msgs/msg/JointState`` samples as
  ``(N, nj)`` arrays, columns in the requested joint order;
* :class:`PoseArrays`: the poses of one frame as ``(N, 3)`` positions [m]
  and ``(N, 4)`` unit quaternions (x, y, z, w).

Times are integer nanoseconds (``np.int64``): the ``header.stamp`` of each
message and its receive (log) time, as the recorder wrote it. A record's
``truncated`` field is None, or says where reading stopped in a bag that is
cut short and why.

The functions that fill them are in :mod:`figaroh.data.bag_reader`, which
re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from figaroh.data.bag_errors import BagTopicError

__all__ = ["BagSummary", "JointStateArrays", "PoseArrays", "TopicInfo"]


@dataclass(frozen=True)
class TopicInfo:
    """One topic of a bag.

    Attributes:
        name: Topic name (``"/joint_states"``).
        msgtype: Message type in ROS 2 form (``"sensor_msgs/msg/JointState"``).
        count: Messages read (all of them unless the bag is truncated).
        first_ns: Receive time of the earliest message [ns], None without messages.
        last_ns: Receive time of the latest message [ns], None without messages.
        rate_hz: ``(count - 1) / ((last_ns - first_ns) · 1e-9)`` [Hz]; None
            with fewer than two messages or a zero span.
        joint_names: JointState topics: every joint name the messages carry,
            in first-seen order (empty when not scanned).
        frames: TFMessage and TransformStamped topics: the child frames;
            other stamped poses: the ``header.frame_id`` values (first-seen
            order; empty when not scanned).
    """

    name: str
    msgtype: str
    count: int
    first_ns: int | None
    last_ns: int | None
    rate_hz: float | None
    joint_names: tuple[str, ...] = ()
    frames: tuple[str, ...] = ()


@dataclass(frozen=True)
class BagSummary:
    """What a bag holds: its storage form, topics and time span.

    Attributes:
        path: The bag as given.
        storage: One of :data:`~figaroh.data.bag_storage.BAG_STORAGES`.
        topics: One entry per topic, sorted by name.
        start_ns: Earliest receive time over all topics [ns] (None when empty).
        end_ns: Latest receive time over all topics [ns] (None when empty).
        truncated: None, or where reading stopped and why.
    """

    path: str
    storage: str
    topics: tuple[TopicInfo, ...]
    start_ns: int | None
    end_ns: int | None
    truncated: str | None

    def topic(self, name: str) -> TopicInfo:
        """The topic called ``name``.

        Raises:
            BagTopicError: The bag has no such topic (the message lists its topics).
        """
        for info in self.topics:
            if info.name == name:
                return info
        raise BagTopicError(
            f"{self.path} has no topic {name!r}; its topics are: {_topic_listing(self)}. "
            "Pick one of them (figaroh bag info PATH lists them)."
        )

    def table(self) -> str:
        """A plain-text table of the topics, with the bag's storage and time span."""
        span = (
            "no messages"
            if self.start_ns is None or self.end_ns is None
            else f"{(self.end_ns - self.start_ns) * 1e-9:.3f} s "
            f"(receive times {self.start_ns} … {self.end_ns} ns)"
        )
        lines = [f"bag: {self.path}", f"storage: {self.storage}", f"time span: {span}"]
        if self.truncated:
            lines.append(f"TRUNCATED: {self.truncated}")
        header = ("topic", "type", "messages", "rate [Hz]", "joints / frames")
        rows = [
            (
                t.name,
                t.msgtype,
                str(t.count),
                "-" if t.rate_hz is None else f"{t.rate_hz:.3f}",
                ", ".join(t.joint_names or t.frames),
            )
            for t in self.topics
        ]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
        for row in [header, *rows]:
            cells = [row[i].ljust(widths[i]) for i in range(4)] + [row[4]]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON-able builtins (tuples become lists)."""
        return {
            "path": self.path,
            "storage": self.storage,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "truncated": self.truncated,
            "topics": [
                {
                    "name": t.name,
                    "msgtype": t.msgtype,
                    "count": t.count,
                    "first_ns": t.first_ns,
                    "last_ns": t.last_ns,
                    "rate_hz": t.rate_hz,
                    "joint_names": list(t.joint_names),
                    "frames": list(t.frames),
                }
                for t in self.topics
            ],
        }


@dataclass(frozen=True)
class JointStateArrays:
    """Joint states of a bag, one row per sample, columns in the requested joint order.

    Attributes:
        joint_names: The requested joints, in the requested (model) order.
        stamp_ns: ``(N,)`` int64 sample times [ns]: ``header.stamp``, or the
            receive time when every header stamp is zero (see ``stamp_source``).
        receive_ns: ``(N,)`` int64 receive (log) times [ns].
        stamp_source: ``"header.stamp"`` or ``"receive time"``.
        position: ``(N, nj)`` float64 positions [rad or m]; NaN where a joint
            is absent from that sample.
        velocity: ``(N, nj)`` velocities [rad/s or m/s], NaN where absent;
            None when no message carries velocities.
        effort: ``(N, nj)`` efforts as logged [N·m or N, or the driver's
            unit], NaN where absent; None when no message carries efforts.
        topics: The topics read.
        truncated: None, or ``"stopped after message k of topic T at t=…:
            reason"`` when the bag is cut short.
        extra_joints: Joints the messages carry that were not requested
            (ignored), first-seen order.
    """

    joint_names: tuple[str, ...]
    stamp_ns: np.ndarray
    receive_ns: np.ndarray
    stamp_source: str
    position: np.ndarray
    velocity: np.ndarray | None
    effort: np.ndarray | None
    topics: tuple[str, ...]
    truncated: str | None
    extra_joints: tuple[str, ...]


@dataclass(frozen=True)
class PoseArrays:
    """Poses of one frame from a bag topic, one row per sample.

    Attributes:
        stamp_ns: ``(N,)`` int64 sample times [ns] (``header.stamp``, or the
            receive time when every stamp is zero).
        receive_ns: ``(N,)`` int64 receive (log) times [ns].
        stamp_source: ``"header.stamp"`` or ``"receive time"``.
        position: ``(N, 3)`` positions [m] of the pose in ``frame_id``.
        quaternion_xyzw: ``(N, 4)`` orientations as unit quaternions (x, y, z, w).
        frame_id: The reference frame (``header.frame_id``).
        child_frame_id: The transform's child frame ("" for PoseStamped and
            PoseWithCovarianceStamped).
        msgtype: The topic's message type.
        topic: The topic read.
        truncated: None, or where reading stopped and why.
    """

    stamp_ns: np.ndarray
    receive_ns: np.ndarray
    stamp_source: str
    position: np.ndarray
    quaternion_xyzw: np.ndarray
    frame_id: str
    child_frame_id: str
    msgtype: str
    topic: str
    truncated: str | None


def _topic_listing(summary: BagSummary) -> str:
    """``"/topic (pkg/msg/Type), ..."`` for the messages, ``"none"`` without topics."""
    return ", ".join(f"{t.name} ({t.msgtype})" for t in summary.topics) or "none"
