"""Read joint states and poses from ROS bags into numpy arrays.

The public functions:

* :func:`bag_summary`: topics, message types and counts, rates, joint names,
  frames and time span of a bag (one pass over the raw messages);
* :func:`select_topics`: the topic(s) to read, chosen or checked against a
  bag's summary;
* :func:`read_joint_states`: ``sensor_msgs/msg/JointState`` messages into
  :class:`JointStateArrays`, columns in the requested joint order;
* :func:`read_poses`: the poses of one frame from a PoseStamped,
  PoseWithCovarianceStamped, TransformStamped or TFMessage topic into
  :class:`PoseArrays`.

A bag is a ROS 1 ``.bag`` file, a ROS 2 bag folder (sqlite3 or MCAP storage)
or a bare ``.mcap`` file; :mod:`figaroh.data.bag_storage` tells the form and
opens it (with ``rosbags``, or record by record when the bag is damaged).
The records returned are defined in :mod:`figaroh.data.bag_records`; this
module re-exports them with :func:`bag_files` and :data:`BAG_STORAGES`, so
``from figaroh.data.bag_reader import BagSummary, bag_files`` works. Reading
needs the ``ros`` extra (``pip install "figaroh[ros]"``).

Messages stream one by one into preallocated arrays (their number comes from
the bag's per-topic message counts): no list of message objects is built, so
reading a bag needs little more memory than the arrays it returns.

Times are integer nanoseconds (``np.int64``): the ``header.stamp`` of each
message and its receive (log) time, as the recorder wrote it. A bag that is
cut short gives what is intact; the record's ``truncated`` field says where
reading stopped and why, and a warning is logged.

Every bad input raises a :class:`~figaroh.data.bag_errors.BagError` naming the
bag, the topic or the joints at fault and what to do about it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from figaroh.data.bag_errors import (
    BagJointError,
    BagMessageTypeError,
    BagTopicError,
    TruncatedBagError,
)
from figaroh.data.bag_records import (
    BagSummary,
    JointStateArrays,
    PoseArrays,
    TopicInfo,
    _topic_listing,
)
from figaroh.data.bag_storage import BAG_STORAGES, PathLike, _open_bag, _OpenBag, bag_files

logger = logging.getLogger(__name__)

__all__ = [
    "BAG_STORAGES",
    "JOINT_STATE_TYPES",
    "POSE_TYPES",
    "BagSummary",
    "JointStateArrays",
    "PoseArrays",
    "TopicInfo",
    "bag_files",
    "bag_summary",
    "read_joint_states",
    "read_poses",
    "select_topics",
]

#: Message types read as joint states (ROS 1 names normalised to this form).
JOINT_STATE_TYPES = ("sensor_msgs/msg/JointState",)
#: Message types read as poses.
POSE_TYPES = (
    "geometry_msgs/msg/PoseStamped",
    "geometry_msgs/msg/PoseWithCovarianceStamped",
    "geometry_msgs/msg/TransformStamped",
    "tf2_msgs/msg/TFMessage",
)

#: Types whose frames are child frames (the transform's target), not ``header.frame_id``.
_TRANSFORM_TYPES = ("geometry_msgs/msg/TransformStamped", "tf2_msgs/msg/TFMessage")
_NS = 1_000_000_000


def _declared_summary(bag: _OpenBag) -> BagSummary:
    """Topics and counts as the bag declares them (no message read)."""
    topics = tuple(
        TopicInfo(name, msgtype, count, None, None, None)
        for name, (msgtype, count) in sorted(bag.topics.items())
    )
    return BagSummary(str(bag.layout.path), bag.layout.storage, topics, None, None, None)


# --------------------------------------------------------------------------- #
# Summary and topic selection
# --------------------------------------------------------------------------- #
def _rate(count: int, first: int | None, last: int | None) -> float | None:
    if count < 2 or first is None or last is None or last <= first:
        return None
    return (count - 1) / ((last - first) * 1e-9)


def _frames_of(msgtype: str, msg: Any) -> list[str]:
    if msgtype == "tf2_msgs/msg/TFMessage":
        return [t.child_frame_id for t in msg.transforms]
    if msgtype == "geometry_msgs/msg/TransformStamped":
        return [msg.child_frame_id]
    return [msg.header.frame_id]


def bag_summary(path: PathLike, *, joint_names: bool = True) -> BagSummary:
    """Topics, types, message counts, rates, joint names and time span of a bag.

    One pass over the messages (raw bytes). With ``joint_names``, the
    JointState messages are decoded to collect their joint names and the pose
    messages to collect their frames.

    Args:
        path: The bag (see :func:`bag_files`).
        joint_names: Whether to decode JointState and pose messages for their
            joint names and frames.

    Returns:
        The summary; a bag cut short gives the counts of what could be read
        and ``truncated`` says where reading stopped.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        NotABagError: ``path`` is not a bag.
        TruncatedBagError: Nothing of the bag can be opened.
    """
    with _open_bag(path) as bag:
        names = sorted(bag.topics)
        msgtypes = {t: bag.topics[t][0] for t in names}
        count = dict.fromkeys(names, 0)
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        seen: dict[str, dict[str, None]] = {t: {} for t in names}  # ordered sets
        decoded_names: dict[str, set[tuple[str, ...]]] = {t: set() for t in names}
        scanned = {
            t
            for t in names
            if joint_names and (msgtypes[t] in JOINT_STATE_TYPES or msgtypes[t] in POSE_TYPES)
        }
        for topic, receive_ns, raw in bag.messages(names, decode=False):
            count[topic] += 1
            if topic not in first or receive_ns < first[topic]:
                first[topic] = receive_ns
            if topic not in last or receive_ns > last[topic]:
                last[topic] = receive_ns
            if topic in scanned:
                msg = bag.decode(topic, raw)
                if msgtypes[topic] in JOINT_STATE_TYPES:
                    key = tuple(msg.name)
                    if key not in decoded_names[topic]:
                        decoded_names[topic].add(key)
                        seen[topic].update(dict.fromkeys(key))
                else:
                    seen[topic].update(dict.fromkeys(_frames_of(msgtypes[topic], msg)))
        stopped = bag.stopped
        storage = bag.layout.storage
    topics = []
    for t in names:
        is_joint = msgtypes[t] in JOINT_STATE_TYPES
        topics.append(
            TopicInfo(
                name=t,
                msgtype=msgtypes[t],
                count=count[t],
                first_ns=first.get(t),
                last_ns=last.get(t),
                rate_hz=_rate(count[t], first.get(t), last.get(t)),
                joint_names=tuple(seen[t]) if is_joint else (),
                frames=() if is_joint else tuple(seen[t]),
            )
        )
    truncated = None
    if stopped is not None:
        total = sum(count.values())
        truncated = f"stopped after {total} messages: {stopped}"
        logger.warning("bag %s is truncated: %s", path, truncated)
    return BagSummary(
        path=str(path),
        storage=storage,
        topics=tuple(topics),
        start_ns=min(first.values()) if first else None,
        end_ns=max(last.values()) if last else None,
        truncated=truncated,
    )


def select_topics(
    summary: BagSummary,
    msgtypes: Sequence[str],
    topic: str | Sequence[str] | None,
    what: str,
) -> tuple[str, ...]:
    """The topic(s) to read for ``what``, chosen or checked against the bag.

    Args:
        summary: The bag's summary (:func:`bag_summary`, counts suffice).
        msgtypes: The message types accepted (e.g. :data:`JOINT_STATE_TYPES`).
        topic: None to take the single topic of one of ``msgtypes``; a name,
            or several (one per joint group), to check them.
        what: What the topics hold, for the messages (``"joint-state"``).

    Returns:
        The topic names.

    Raises:
        BagTopicError: ``topic`` is None and no topic, or several, have one of
            ``msgtypes`` (the message lists them and names the option that
            chooses); a named topic is not in the bag (the message lists the
            bag's topics).
        BagMessageTypeError: A named topic has another type (the message
            names its type and the accepted ones).
    """
    accepted = tuple(msgtypes)
    poses = set(accepted) <= set(POSE_TYPES)
    option = "--pose-topic (data.bag.pose_topic)" if poses else "--topic (data.bag.joint_topic)"
    if topic is None:
        found = [t.name for t in summary.topics if t.msgtype in accepted]
        if len(found) == 1:
            return (found[0],)
        if not found:
            raise BagTopicError(
                f"{summary.path} has no {what} topic (type {' or '.join(accepted)}); "
                f"its topics are: {_topic_listing(summary)}. Record one, or name the topic "
                f"with {option}."
            )
        raise BagTopicError(
            f"{summary.path} has {len(found)} {what} topics: {', '.join(found)}. Choose one "
            f"(or several, one per joint group) with {option}."
        )
    names = (topic,) if isinstance(topic, str) else tuple(topic)
    if not names:
        raise BagTopicError(f"no {what} topic given for {summary.path}; name one with {option}.")
    for name in names:
        info = summary.topic(name)
        if info.msgtype not in accepted:
            raise BagMessageTypeError(
                f"{summary.path}: topic {name} holds {info.msgtype} messages; {what} topics "
                f"must be {' or '.join(accepted)}. Choose another topic with {option}."
            )
    if len(set(names)) != len(names):
        raise BagTopicError(f"{what} topics of {summary.path} given twice: {', '.join(names)}")
    return names


# --------------------------------------------------------------------------- #
# Joint states
# --------------------------------------------------------------------------- #
#: How one distinct ``name`` tuple maps onto the requested columns:
#: (number of names, message indices, their columns, same names in the same order).
_NameMap = tuple[int, np.ndarray, np.ndarray, bool]


def _requested(joint_names: Sequence[str]) -> tuple[str, ...]:
    if isinstance(joint_names, str):
        raise BagJointError(
            f"joint_names must be a sequence of names, got the string {joint_names!r}"
        )
    wanted = tuple(str(n) for n in joint_names)
    if not wanted:
        raise BagJointError("no joint asked for: give the model's active joint names")
    repeated = sorted({n for n in wanted if wanted.count(n) > 1})
    if repeated:
        raise BagJointError(f"joints asked for twice: {', '.join(repeated)}")
    return wanted


def _stop_note(topic: str, k: int, receive_ns: int, first_ns: int, reason: str) -> str:
    return (
        f"stopped after message {k} of topic {topic} at t={receive_ns} ns "
        f"({(receive_ns - first_ns) * 1e-9:.3f} s after the first): {reason}"
    )


def _first_per_row(row: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """``(n_rows, nj)``: per row and column, the first finite value of the messages of that row."""
    out = np.full((n_rows, values.shape[1]), np.nan)
    for j in range(values.shape[1]):
        finite = np.flatnonzero(~np.isnan(values[:, j]))
        rows, first = np.unique(row[finite], return_index=True)
        out[rows, j] = values[finite[first], j]
    return out


def read_joint_states(
    path: PathLike, joint_names: Sequence[str], topics: str | Sequence[str] | None = None
) -> JointStateArrays:
    """Read JointState messages into arrays, columns in the order of ``joint_names``.

    Message joints are mapped to the requested ones by name: messages may
    carry more joints (ignored, listed in ``extra_joints``), a subset, or
    another order; the mapping is computed once per distinct ``name`` list.
    Messages that carry none of the requested joints are skipped. Rows
    follow the bag (receive-time) order; they are not sorted by stamp.

    With several topics (one per joint group), the messages are merged on
    equal stamps: one row per distinct stamp, in first-seen order, each joint
    taken from the first message of that stamp that carries it (NaN when
    none does).

    Args:
        path: The bag (see :func:`bag_files`).
        joint_names: The joints to read (the model's active joints), in
            column order.
        topics: The JointState topic, or one topic per joint group; None
            takes the bag's single JointState topic.

    Returns:
        The arrays. ``stamp_ns`` is ``header.stamp`` unless every stamp is
        zero (then the receive time, and ``stamp_source`` says so).
        Velocity and effort arrays are empty in messages that do not publish
        them: those rows are NaN, and the field is None when no message
        publishes it.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        NotABagError: ``path`` is not a bag.
        BagTopicError: No JointState topic, several and none chosen, a named
            topic is absent, or the topic holds no message.
        BagMessageTypeError: A named topic is not a JointState topic.
        BagJointError: No requested joint in any message, a requested joint
            in none, or a message whose value arrays do not match its names.
        TruncatedBagError: The bag is cut short before any message of the
            topics could be read.
    """
    wanted = _requested(joint_names)
    with _open_bag(path) as bag:
        chosen = select_topics(_declared_summary(bag), JOINT_STATE_TYPES, topics, "joint-state")
        capacity = sum(bag.topics[t][1] for t in chosen)
        read = _stream_joint_states(bag, chosen, wanted, capacity)
        stopped = bag.stopped
    stamp, receive, topic_of, pos, vel, eff, maps = read
    if len(stamp) == 0:
        if stopped is not None:
            raise TruncatedBagError(
                f"{path} is cut short before any message of {', '.join(chosen)} could be read "
                f"({stopped}); nothing can be read from it."
            )
        if not maps:
            raise BagTopicError(
                f"{path}: topic {', '.join(chosen)} holds no message; record joint states "
                "or choose another topic."
            )
    seen = {n: None for key in maps for n in key}
    carried = [n for n in wanted if n in seen]
    if not carried:
        raise BagJointError(
            f"{path}: no joint asked for is in the messages of {', '.join(chosen)}. "
            f"Asked for: {', '.join(wanted)}; the messages carry: {', '.join(seen) or 'none'}. "
            "Check the model (its active joints) against the robot's joint names."
        )
    missing = [n for n in wanted if n not in seen]
    if missing:
        raise BagJointError(
            f"{path}: joint(s) {', '.join(missing)} are in no message of {', '.join(chosen)} "
            f"(they carry: {', '.join(seen)}). Add the topic of their joint group, or check "
            "the model's joint names."
        )
    stamp_source = "header.stamp"
    if not stamp.any():
        stamp, stamp_source = receive, "receive time"
    elif not stamp.all():
        logger.warning(
            "%s: %d of %d header stamps are zero (kept as they are)",
            path,
            int(np.count_nonzero(stamp == 0)),
            len(stamp),
        )
    truncated = None
    if stopped is not None:
        last = len(receive) - 1
        topic = chosen[int(topic_of[last])] if len(chosen) > 1 else chosen[0]
        k = int(np.count_nonzero(topic_of == topic_of[last])) if len(chosen) > 1 else len(receive)
        truncated = _stop_note(topic, k, int(receive[last]), int(receive[0]), stopped)
        logger.warning("bag %s is truncated: %s", path, truncated)
    if len(chosen) > 1:
        _, first, inverse = np.unique(stamp, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        row = rank[inverse.ravel()]
        keep = first[order]
        n_rows = len(keep)
        stamp, receive = stamp[keep], receive[keep]
        pos = _first_per_row(row, pos, n_rows)
        vel = None if vel is None else _first_per_row(row, vel, n_rows)
        eff = None if eff is None else _first_per_row(row, eff, n_rows)
    extra = tuple(n for n in seen if n not in set(wanted))
    return JointStateArrays(
        joint_names=wanted,
        stamp_ns=stamp,
        receive_ns=receive,
        stamp_source=stamp_source,
        position=pos,
        velocity=vel,
        effort=eff,
        topics=chosen,
        truncated=truncated,
        extra_joints=extra,
    )


def _stream_joint_states(
    bag: _OpenBag, chosen: tuple[str, ...], wanted: tuple[str, ...], capacity: int
) -> tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray | None,
    np.ndarray | None,
    dict[tuple[str, ...], _NameMap],
]:
    """Stream the JointState messages of ``chosen`` into arrays, one row per message.

    Returns:
        ``(stamp_ns, receive_ns, topic index, position, velocity or None,
        effort or None, {names tuple: mapping})``, trimmed to the rows read.
    """
    nj = len(wanted)
    column = {n: j for j, n in enumerate(wanted)}
    topic_index = {t: i for i, t in enumerate(chosen)}
    cap = max(int(capacity), 1)
    stamp: np.ndarray = np.empty(cap, dtype=np.int64)
    receive: np.ndarray = np.empty(cap, dtype=np.int64)
    topic_of: np.ndarray = np.zeros(cap, dtype=np.int16)
    pos: np.ndarray = np.full((cap, nj), np.nan)
    vel: np.ndarray = np.full((cap, nj), np.nan)
    eff: np.ndarray = np.full((cap, nj), np.nan)
    maps: dict[tuple[str, ...], _NameMap] = {}
    has_vel = has_eff = False
    multi = len(chosen) > 1
    asarray = np.asarray
    k = 0

    def mapping(key: tuple[str, ...]) -> _NameMap:
        src = [i for i, n in enumerate(key) if n in column]
        dst = [column[key[i]] for i in src]
        return (len(key), np.array(src, dtype=np.intp), np.array(dst, dtype=np.intp), key == wanted)

    def bad(
        topic: str, receive_ns: int, field_name: str, n_names: int, n_values: int
    ) -> BagJointError:
        return BagJointError(
            f"{bag.layout.path}: a message of {topic} (receive time {receive_ns} ns) has "
            f"{n_names} joint names but {n_values} {field_name} values; a JointState's "
            f"{field_name} must be empty or have one value per name. Fix the publisher."
        )

    for topic, receive_ns, msg in bag.messages(chosen, decode=True):
        key = tuple(msg.name)
        m = maps.get(key)
        if m is None:
            m = maps[key] = mapping(key)
        n, src, dst, same = m
        if not len(src):  # none of the requested joints (another joint group)
            continue
        if k == cap:
            cap = 2 * cap
            stamp, receive, topic_of = (np.resize(a, cap) for a in (stamp, receive, topic_of))
            pos, vel, eff = (
                np.concatenate([a, np.full((cap - k, nj), np.nan)]) for a in (pos, vel, eff)
            )
        time = msg.header.stamp
        stamp[k] = time.sec * _NS + time.nanosec
        receive[k] = receive_ns
        if multi:
            topic_of[k] = topic_index[topic]
        values = msg.position
        if len(values) == n:
            if same:
                pos[k] = values
            else:
                pos[k, dst] = asarray(values)[src]
        elif len(values):
            raise bad(topic, receive_ns, "position", n, len(values))
        values = msg.velocity
        if len(values) == n:
            has_vel = True
            if same:
                vel[k] = values
            else:
                vel[k, dst] = asarray(values)[src]
        elif len(values):
            raise bad(topic, receive_ns, "velocity", n, len(values))
        values = msg.effort
        if len(values) == n:
            has_eff = True
            if same:
                eff[k] = values
            else:
                eff[k, dst] = asarray(values)[src]
        elif len(values):
            raise bad(topic, receive_ns, "effort", n, len(values))
        k += 1
    if k < cap:
        stamp, receive, topic_of = stamp[:k].copy(), receive[:k].copy(), topic_of[:k].copy()
        pos, vel, eff = pos[:k].copy(), vel[:k].copy(), eff[:k].copy()
    return (
        stamp,
        receive,
        topic_of,
        pos,
        vel if has_vel else None,
        eff if has_eff else None,
        maps,
    )


# --------------------------------------------------------------------------- #
# Poses
# --------------------------------------------------------------------------- #
#: One pose sample: (frame_id, child_frame_id, stamp_ns, x, y, z, qx, qy, qz, qw).
_PoseSample = tuple[str, str, int, float, float, float, float, float, float, float]


def _transform_sample(t: Any) -> _PoseSample:
    s, p, q = t.header.stamp, t.transform.translation, t.transform.rotation
    return (
        t.header.frame_id,
        t.child_frame_id,
        s.sec * _NS + s.nanosec,
        p.x,
        p.y,
        p.z,
        q.x,
        q.y,
        q.z,
        q.w,
    )


def _pose_samples(msgtype: str, msg: Any) -> list[_PoseSample]:
    if msgtype == "tf2_msgs/msg/TFMessage":
        return [_transform_sample(t) for t in msg.transforms]
    if msgtype == "geometry_msgs/msg/TransformStamped":
        return [_transform_sample(msg)]
    pose = msg.pose.pose if msgtype == "geometry_msgs/msg/PoseWithCovarianceStamped" else msg.pose
    s, p, q = msg.header.stamp, pose.position, pose.orientation
    return [(msg.header.frame_id, "", s.sec * _NS + s.nanosec, p.x, p.y, p.z, q.x, q.y, q.z, q.w)]


@dataclass
class _PoseRows:
    """Growable rows of one child frame's poses."""

    capacity: int
    n: int = 0
    parents: dict[str, None] = field(default_factory=dict)
    stamp: np.ndarray = field(init=False)
    receive: np.ndarray = field(init=False)
    values: np.ndarray = field(init=False)  # (N, 7): x y z qx qy qz qw

    def __post_init__(self) -> None:
        self.stamp = np.empty(self.capacity, dtype=np.int64)
        self.receive = np.empty(self.capacity, dtype=np.int64)
        self.values = np.empty((self.capacity, 7))

    def add(self, receive_ns: int, sample: _PoseSample) -> None:
        if self.n == self.capacity:
            self.capacity *= 2
            self.stamp = np.resize(self.stamp, self.capacity)
            self.receive = np.resize(self.receive, self.capacity)
            self.values = np.resize(self.values, (self.capacity, 7))
        self.parents.setdefault(sample[0])
        self.stamp[self.n] = sample[2]
        self.receive[self.n] = receive_ns
        self.values[self.n] = sample[3:]
        self.n += 1


def read_poses(path: PathLike, topic: str, child_frame: str | None = None) -> PoseArrays:
    """Read the poses of one frame from a pose or transform topic.

    Args:
        path: The bag (see :func:`bag_files`).
        topic: A PoseStamped, PoseWithCovarianceStamped, TransformStamped or
            TFMessage topic.
        child_frame: The transform to read (TFMessage / TransformStamped):
            its ``child_frame_id``; None when the topic has a single child
            frame. Not used by PoseStamped topics (leave it None).

    Returns:
        The poses in bag (receive-time) order; ``stamp_ns`` is the
        ``header.stamp`` of each pose unless every stamp is zero (then the
        receive time).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        NotABagError: ``path`` is not a bag.
        BagTopicError: No such topic (the bag's topics are listed), no
            message, ``child_frame`` absent or needed (the child frames are
            listed), or the frame's poses change reference frame.
        BagMessageTypeError: The topic is not one of :data:`POSE_TYPES`.
        TruncatedBagError: The bag is cut short before any pose was read.
    """
    with _open_bag(path) as bag:
        (name,) = select_topics(_declared_summary(bag), POSE_TYPES, topic, "pose")
        msgtype, count = bag.topics[name]
        transforms = msgtype in _TRANSFORM_TYPES
        one_per = msgtype != "tf2_msgs/msg/TFMessage"  # one pose per message
        if child_frame is not None and not transforms:
            raise BagTopicError(
                f"{path}: topic {name} holds {msgtype} messages, which have no child frame; "
                f"leave child_frame unset (it selects a transform of a TF topic)."
            )
        rows: dict[str, _PoseRows] = {}
        for _, receive_ns, msg in bag.messages((name,), decode=True):
            for sample in _pose_samples(msgtype, msg):
                child = sample[1]
                if child_frame is not None and child != child_frame:
                    rows.setdefault(child, _PoseRows(1))
                    continue
                target = rows.get(child)
                if target is None:  # a TF topic mixes frames: grow from a small start
                    target = rows[child] = _PoseRows(max(int(count), 1) if one_per else 1024)
                target.add(receive_ns, sample)
        stopped = bag.stopped
    children = [c for c, r in rows.items() if r.n or c == child_frame]
    if child_frame is None and len(children) > 1:
        raise BagTopicError(
            f"{path}: topic {name} holds transforms of {len(children)} child frames: "
            f"{', '.join(children)}. Choose one with child_frame."
        )
    chosen = child_frame if child_frame is not None else (children[0] if children else "")
    found = rows.get(chosen)
    if found is None or found.n == 0:
        if stopped is not None:
            raise TruncatedBagError(
                f"{path} is cut short before any pose of {name} could be read ({stopped})."
            )
        if child_frame is not None and rows:
            raise BagTopicError(
                f"{path}: topic {name} has no transform to child frame {child_frame!r}; "
                f"its child frames are: {', '.join(rows)}."
            )
        raise BagTopicError(f"{path}: topic {name} holds no message; choose another pose topic.")
    if len(found.parents) > 1:
        raise BagTopicError(
            f"{path}: the poses of {name}{' → ' + chosen if chosen else ''} change reference "
            f"frame ({', '.join(found.parents)}); record them in one frame."
        )
    n = found.n
    stamp, receive, values = found.stamp[:n].copy(), found.receive[:n].copy(), found.values[:n]
    stamp_source = "header.stamp"
    if not stamp.any():
        stamp, stamp_source = receive, "receive time"
    truncated = None
    if stopped is not None:
        truncated = _stop_note(name, n, int(receive[-1]), int(receive[0]), stopped)
        logger.warning("bag %s is truncated: %s", path, truncated)
    return PoseArrays(
        stamp_ns=stamp,
        receive_ns=receive,
        stamp_source=stamp_source,
        position=values[:, :3].copy(),
        quaternion_xyzw=values[:, 3:].copy(),
        frame_id=next(iter(found.parents)),
        child_frame_id=chosen,
        msgtype=msgtype,
        topic=name,
        truncated=truncated,
    )
