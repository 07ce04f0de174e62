"""Write small ROS bags for the tests, with ``rosbags``' own writers.

Shared test helper (import it as ``from bag_writers import ...``: pytest puts
``tests/`` on ``sys.path`` because the folder is not a package). Every bag is
written by the library that reads it back, so a test compares the reader
against what the writer was given, value for value:

* ``"rosbag1"``: a ROS 1 ``.bag`` file (:class:`rosbags.rosbag1.Writer`,
  ROS 1 Noetic message definitions);
* ``"rosbag2-sqlite3"`` / ``"rosbag2-mcap"``: a ROS 2 bag folder
  (:class:`rosbags.rosbag2.Writer` with the sqlite3 or MCAP storage plugin,
  the latest ROS 2 message definitions);
* ``"mcap"``: a bare ``.mcap`` file written with :class:`mcap.writer.Writer`
  (``ros2`` profile, ``ros2msg`` schemas, CDR messages serialised by the
  rosbags typestore), with a chosen chunk size so a test can cut it between
  chunks.

Helpers:

* :func:`typestore_for` ``(fmt)``: the typestore a format's messages are
  built and serialised with;
* :func:`joint_state_msg` ``(typestore, stamp_ns, names, position, velocity=None,
  effort=None, frame_id="")``, :func:`pose_stamped_msg` ``(typestore, stamp_ns,
  frame_id, position, quaternion_xyzw)``, :func:`pose_with_covariance_msg` (same
  arguments), :func:`transform_stamped_msg`
  ``(typestore, stamp_ns, frame_id, child_frame_id, translation,
  quaternion_xyzw)``, :func:`tf_message` ``(typestore, transforms)``: message
  objects (``None`` velocity/effort → empty arrays, as a driver that does not
  publish them);
* :func:`write_bag` ``(path, fmt, messages, *, chunk_bytes=None, mcap_profile="ros2")``:
  the generic writer, ``messages`` a list of ``(topic, msgtype, receive_ns,
  message)`` written in list order (the message objects from
  :func:`typestore_for` ``(fmt)``);
* :func:`write_joint_state_bag` ``(path, fmt, stamp_ns, joint_names, position,
  velocity=None, effort=None, topic="/joint_states", receive_ns=None,
  extra=None, chunk_bytes=None)``: one JointState message per row (receive time
  = stamp unless given), plus ``extra`` messages built by a callable of the
  typestore, merged on receive time;
* :func:`bag_path` ``(tmp, fmt, stem="log")``: where to write a bag of ``fmt``
  (``.bag`` / ``.mcap`` file or folder); :func:`bare_mcap_from_folder`
  ``(folder, target)``: the ``.mcap`` of a ROS 2 MCAP bag copied out as a bare file.

Times are integer nanoseconds.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

BAG_FORMATS = ("rosbag1", "rosbag2-sqlite3", "rosbag2-mcap")
ALL_FORMATS = BAG_FORMATS + ("mcap",)
JOINT_STATE = "sensor_msgs/msg/JointState"
POSE_STAMPED = "geometry_msgs/msg/PoseStamped"
POSE_WITH_COVARIANCE = "geometry_msgs/msg/PoseWithCovarianceStamped"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
TRANSFORM_STAMPED = "geometry_msgs/msg/TransformStamped"

Message = tuple[str, str, int, Any]


def typestore_for(fmt: str) -> Any:
    """The rosbags typestore whose message classes ``fmt``'s messages use.

    Args:
        fmt: One of :data:`ALL_FORMATS`.

    Returns:
        ROS 1 Noetic's typestore (plus ``tf2_msgs/msg/TFMessage``) for
        ``"rosbag1"``, the latest ROS 2 one otherwise.
    """
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    if fmt not in ALL_FORMATS:
        raise ValueError(f"unknown bag format {fmt!r}; choose one of {ALL_FORMATS}")
    if fmt != "rosbag1":
        return get_typestore(Stores.LATEST)
    store = get_typestore(Stores.ROS1_NOETIC)
    # rosbags' Noetic store lacks tf2_msgs: register /tf's type from its ROS 1 definition
    store.register(get_types_from_msg("geometry_msgs/TransformStamped[] transforms", TF_MESSAGE))
    return store


def _header(typestore: Any, stamp_ns: int, frame_id: str) -> Any:
    time_cls = typestore.types["builtin_interfaces/msg/Time"]
    header_cls = typestore.types["std_msgs/msg/Header"]
    stamp = time_cls(sec=int(stamp_ns) // 1_000_000_000, nanosec=int(stamp_ns) % 1_000_000_000)
    if "seq" in header_cls.__dataclass_fields__:  # ROS 1
        return header_cls(seq=0, stamp=stamp, frame_id=frame_id)
    return header_cls(stamp=stamp, frame_id=frame_id)


def _floats(values: Any) -> np.ndarray:
    if values is None:
        return np.zeros(0, dtype=np.float64)
    return np.ascontiguousarray(values, dtype=np.float64)


def joint_state_msg(
    typestore: Any,
    stamp_ns: int,
    names: Sequence[str],
    position: Any,
    velocity: Any = None,
    effort: Any = None,
    frame_id: str = "",
) -> Any:
    """A ``sensor_msgs/msg/JointState`` message (empty arrays for absent fields)."""
    cls = typestore.types[JOINT_STATE]
    return cls(
        header=_header(typestore, stamp_ns, frame_id),
        name=list(names),
        position=_floats(position),
        velocity=_floats(velocity),
        effort=_floats(effort),
    )


def _quaternion(typestore: Any, xyzw: Sequence[float]) -> Any:
    x, y, z, w = (float(v) for v in xyzw)
    return typestore.types["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z, w=w)


def pose_stamped_msg(
    typestore: Any,
    stamp_ns: int,
    frame_id: str,
    position: Sequence[float],
    quaternion_xyzw: Sequence[float],
) -> Any:
    """A ``geometry_msgs/msg/PoseStamped`` message (position [m])."""
    x, y, z = (float(v) for v in position)
    pose = typestore.types["geometry_msgs/msg/Pose"](
        position=typestore.types["geometry_msgs/msg/Point"](x=x, y=y, z=z),
        orientation=_quaternion(typestore, quaternion_xyzw),
    )
    return typestore.types[POSE_STAMPED](header=_header(typestore, stamp_ns, frame_id), pose=pose)


def pose_with_covariance_msg(
    typestore: Any,
    stamp_ns: int,
    frame_id: str,
    position: Sequence[float],
    quaternion_xyzw: Sequence[float],
) -> Any:
    """A ``geometry_msgs/msg/PoseWithCovarianceStamped`` message (zero covariance)."""
    stamped = pose_stamped_msg(typestore, stamp_ns, frame_id, position, quaternion_xyzw)
    with_covariance = typestore.types["geometry_msgs/msg/PoseWithCovariance"](
        pose=stamped.pose, covariance=np.zeros(36)
    )
    return typestore.types[POSE_WITH_COVARIANCE](header=stamped.header, pose=with_covariance)


def transform_stamped_msg(
    typestore: Any,
    stamp_ns: int,
    frame_id: str,
    child_frame_id: str,
    translation: Sequence[float],
    quaternion_xyzw: Sequence[float],
) -> Any:
    """A ``geometry_msgs/msg/TransformStamped`` message (translation [m])."""
    x, y, z = (float(v) for v in translation)
    transform = typestore.types["geometry_msgs/msg/Transform"](
        translation=typestore.types["geometry_msgs/msg/Vector3"](x=x, y=y, z=z),
        rotation=_quaternion(typestore, quaternion_xyzw),
    )
    return typestore.types[TRANSFORM_STAMPED](
        header=_header(typestore, stamp_ns, frame_id),
        child_frame_id=child_frame_id,
        transform=transform,
    )


def tf_message(typestore: Any, transforms: Sequence[Any]) -> Any:
    """A ``tf2_msgs/msg/TFMessage`` holding ``transforms`` (TransformStamped messages)."""
    return typestore.types[TF_MESSAGE](transforms=list(transforms))


def _topics(messages: Sequence[Message]) -> dict[str, str]:
    topics: dict[str, str] = {}
    for topic, msgtype, _, _ in messages:
        if topics.setdefault(topic, msgtype) != msgtype:
            raise ValueError(f"topic {topic} written with two types")
    return topics


def write_bag(
    path: str | Path,
    fmt: str,
    messages: Iterable[Message],
    *,
    chunk_bytes: int | None = None,
    mcap_profile: str = "ros2",
) -> Path:
    """Write ``messages`` to a new bag of format ``fmt``.

    Args:
        path: The ``.bag`` / ``.mcap`` file or the ROS 2 bag folder to create
            (must not exist).
        fmt: One of :data:`ALL_FORMATS`.
        messages: ``(topic, msgtype, receive_ns, message)`` in writing order;
            the message objects come from :func:`typestore_for` ``(fmt)``.
        chunk_bytes: Chunk size of the ROS 1 and bare MCAP writers (small
            values give many chunks, so a cut file keeps an intact prefix);
            None keeps the writer's default.
        mcap_profile: Profile of a bare MCAP file (``""`` for a file another
            tool wrote, which ``rosbags`` does not open).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    messages = list(messages)
    store = typestore_for(fmt)
    topics = _topics(messages)
    if fmt == "rosbag1":
        from rosbags.rosbag1 import Writer as Writer1

        writer1 = Writer1(path)
        if chunk_bytes is not None:
            writer1.chunk_threshold = chunk_bytes
        with writer1:
            conns = {t: writer1.add_connection(t, m, typestore=store) for t, m in topics.items()}
            for topic, msgtype, receive_ns, msg in messages:
                writer1.write(conns[topic], int(receive_ns), store.serialize_ros1(msg, msgtype))
    elif fmt in ("rosbag2-sqlite3", "rosbag2-mcap"):
        from rosbags.rosbag2 import StoragePlugin, Writer

        plugin = StoragePlugin.SQLITE3 if fmt == "rosbag2-sqlite3" else StoragePlugin.MCAP
        with Writer(path, version=9, storage_plugin=plugin) as writer2:
            conns = {t: writer2.add_connection(t, m, typestore=store) for t, m in topics.items()}
            for topic, msgtype, receive_ns, msg in messages:
                writer2.write(conns[topic], int(receive_ns), store.serialize_cdr(msg, msgtype))
    else:
        from mcap.writer import CompressionType
        from mcap.writer import Writer as McapWriter

        with path.open("xb") as stream:
            writer = McapWriter(
                stream,
                chunk_size=chunk_bytes or 1024 * 1024,
                compression=CompressionType.NONE,
            )
            writer.start(profile=mcap_profile, library="figaroh tests")
            channels = {}
            for topic, msgtype in topics.items():
                msgdef, _ = store.generate_msgdef(msgtype, ros_version=2)
                schema = writer.register_schema(msgtype, "ros2msg", msgdef.encode())
                channels[topic] = writer.register_channel(topic, "cdr", schema)
            for seq, (topic, msgtype, receive_ns, msg) in enumerate(messages):
                writer.add_message(
                    channels[topic],
                    log_time=int(receive_ns),
                    data=bytes(store.serialize_cdr(msg, msgtype)),
                    publish_time=int(receive_ns),
                    sequence=seq,
                )
            writer.finish()
    return path


def write_joint_state_bag(
    path: str | Path,
    fmt: str,
    stamp_ns: Sequence[int] | np.ndarray,
    joint_names: Sequence[str],
    position: np.ndarray,
    velocity: np.ndarray | None = None,
    effort: np.ndarray | None = None,
    topic: str = "/joint_states",
    receive_ns: Sequence[int] | np.ndarray | None = None,
    extra: Callable[[Any], Iterable[Message]] | None = None,
    chunk_bytes: int | None = None,
) -> Path:
    """Write one JointState message per row of ``position`` (and more messages).

    Args:
        path: Bag to create (see :func:`write_bag`).
        fmt: One of :data:`ALL_FORMATS`.
        stamp_ns: ``header.stamp`` of each message [ns].
        joint_names: ``name`` field of every message.
        position: ``(N, nj)`` positions [rad or m].
        velocity: ``(N, nj)`` velocities, or None (empty arrays written).
        effort: ``(N, nj)`` efforts, or None (empty arrays written).
        topic: Topic name.
        receive_ns: Receive (log) time of each message [ns]; default the stamps.
        extra: Called with the typestore, returns further
            ``(topic, msgtype, receive_ns, message)`` to write; all messages
            are written in receive-time order (stable).
        chunk_bytes: See :func:`write_bag`.

    Returns:
        The bag path.
    """
    store = typestore_for(fmt)
    stamps = np.asarray(stamp_ns, dtype=np.int64)
    received = stamps if receive_ns is None else np.asarray(receive_ns, dtype=np.int64)
    messages: list[Message] = [
        (
            topic,
            JOINT_STATE,
            int(received[k]),
            joint_state_msg(
                store,
                int(stamps[k]),
                joint_names,
                position[k],
                None if velocity is None else velocity[k],
                None if effort is None else effort[k],
            ),
        )
        for k in range(len(stamps))
    ]
    if extra is not None:
        messages += list(extra(store))
        messages.sort(key=lambda m: m[2])
    return write_bag(path, fmt, messages, chunk_bytes=chunk_bytes)


def bare_mcap_from_folder(folder: str | Path, target: str | Path) -> Path:
    """Copy the storage file of a ROS 2 MCAP bag folder out as a bare ``.mcap`` file."""
    (storage,) = sorted(Path(folder).glob("*.mcap"))
    return Path(shutil.copyfile(storage, target))


def bag_path(tmp: str | Path, fmt: str, stem: str = "log") -> Path:
    """Where :func:`write_bag` should write a bag of ``fmt`` below ``tmp``."""
    suffix = {"rosbag1": ".bag", "mcap": ".mcap"}.get(fmt, "")
    return Path(tmp) / f"{stem}{suffix}"
