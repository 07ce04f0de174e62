"""Read joint states and poses from ROS bags into numpy arrays.

A *bag* is one of:

* a ROS 1 ``.bag`` file (``"rosbag1"``);
* a ROS 2 bag folder, ``metadata.yaml`` beside its sqlite3 ``.db3`` or MCAP
  ``.mcap`` storage files (``"rosbag2-sqlite3"``, ``"rosbag2-mcap"``; a folder
  whose ``metadata.yaml`` was never written, as when the recording was
  killed, is read from its storage files);
* a bare ``.mcap`` file (``"mcap"``).

They are read with the ``rosbags`` package (:class:`rosbags.highlevel.AnyReader`
with the latest ROS 2 typestore as default, for ROS 2 bags that carry no
message definitions; ROS 1 message names are normalised to their ROS 2 form,
``sensor_msgs/JointState`` → ``sensor_msgs/msg/JointState``). An MCAP file
that ``rosbags`` cannot open (no summary section because the file is cut
short, another profile than ``ros2``) is read record by record with the
``mcap`` package and decoded with ``mcap_ros2``'s decoder; a ROS 1 bag whose
index is missing or damaged (cut short, never closed) is read chunk by chunk
with ``rosbags``' record reader. Both packages come with the ``ros`` extra
(``pip install "figaroh[ros]"``).

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
import os
import struct
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any, Union

import numpy as np

from figaroh._optional import require
from figaroh.data.bag_errors import (
    BagJointError,
    BagMessageTypeError,
    BagTopicError,
    NotABagError,
    TruncatedBagError,
)

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

PathLike = Union[str, "os.PathLike[str]"]

#: Storage forms a bag can take (``BagSummary.storage``).
BAG_STORAGES = ("rosbag1", "rosbag2-sqlite3", "rosbag2-mcap", "mcap")
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
_ROS1_MAGIC = b"#ROSBAG V2.0\n"
_MCAP_MAGIC = b"\x89MCAP0\r\n"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_STORAGE_SUFFIXES = (".db3", ".mcap", ".db3.zstd", ".mcap.zstd")
_ACCEPTED = (
    "a ROS 1 .bag file, a ROS 2 bag folder (metadata.yaml with .db3 or .mcap storage files) "
    "or an .mcap file"
)
_NS = 1_000_000_000
_PURPOSE = "Reading ROS bags"


# --------------------------------------------------------------------------- #
# Records
# --------------------------------------------------------------------------- #
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
        storage: One of :data:`BAG_STORAGES`.
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


# --------------------------------------------------------------------------- #
# What the path is
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _Layout:
    """A bag on disk: its storage form and the files it is made of."""

    path: Path
    storage: str
    files: tuple[Path, ...]  # metadata.yaml first (if any), then the storage files, sorted
    metadata: bool  # a ROS 2 folder with its metadata.yaml

    @property
    def storage_files(self) -> list[Path]:
        return [f for f in self.files if f.name != "metadata.yaml"]


def _magic(path: Path) -> bytes:
    with path.open("rb") as stream:
        return stream.read(16)


def _not_a_bag(path: Path, why: str) -> NotABagError:
    return NotABagError(f"{path} is not a bag: {why}. A bag is {_ACCEPTED}.")


def _layout(path: PathLike) -> _Layout:
    """Classify ``path`` (storage form and files), reading only file names and magic bytes."""
    bag = Path(path)
    if not bag.exists():
        raise FileNotFoundError(f"No such bag: {bag} (expected {_ACCEPTED}).")
    if bag.is_dir():
        storage = sorted(
            p for p in bag.iterdir() if p.is_file() and p.name.endswith(_STORAGE_SUFFIXES)
        )
        if not storage:
            raise _not_a_bag(bag, "the folder holds no .db3 or .mcap storage file")
        kinds = {"mcap" if ".mcap" in p.name else "sqlite3" for p in storage}
        if len(kinds) > 1:
            raise _not_a_bag(bag, "the folder mixes .db3 and .mcap files; keep one bag per folder")
        metadata = bag / "metadata.yaml"
        files = ([metadata] if metadata.is_file() else []) + storage
        return _Layout(bag, f"rosbag2-{kinds.pop()}", tuple(files), metadata.is_file())
    head = _magic(bag)
    if not head:
        raise _not_a_bag(bag, "the file is empty")
    if head.startswith(_ROS1_MAGIC):
        if bag.suffix != ".bag":
            raise _not_a_bag(bag, "a ROS 1 bag must end in .bag to be read; rename it")
        return _Layout(bag, "rosbag1", (bag,), False)
    if head.startswith(_MCAP_MAGIC):
        if bag.suffix != ".mcap":
            raise _not_a_bag(bag, "an MCAP file must end in .mcap to be read; rename it")
        return _Layout(bag, "mcap", (bag,), False)
    if head.startswith(_SQLITE_MAGIC):
        if bag.suffix != ".db3":
            raise _not_a_bag(bag, "a ROS 2 sqlite3 storage file must end in .db3; rename it")
        return _Layout(bag, "rosbag2-sqlite3", (bag,), False)
    if head.startswith(b"#ROSBAG"):
        raise _not_a_bag(bag, f"only ROS 1 bag version 2.0 is supported, found {head[:12]!r}")
    raise _not_a_bag(bag, "its first bytes are neither a ROS 1 bag, an MCAP nor a sqlite3 header")


def bag_files(path: PathLike) -> list[Path]:
    """The files that make up a bag, for provenance hashing.

    Args:
        path: A ``.bag`` or ``.mcap`` file, or a ROS 2 bag folder.

    Returns:
        A ROS 2 folder: its ``metadata.yaml`` (when present) followed by its
        storage files (``.db3`` / ``.mcap``), sorted by name; a ``.bag`` or
        ``.mcap`` file: the file itself.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        NotABagError: ``path`` is not a bag (the message says why and lists the
            accepted forms).
    """
    return list(_layout(path).files)


# --------------------------------------------------------------------------- #
# Opened bags: topics and a message stream
# --------------------------------------------------------------------------- #
def _normalise_msgtype(name: str) -> str:
    """``pkg/Type`` → ``pkg/msg/Type`` (ROS 1 and some MCAP writers drop the ``msg``)."""
    parts = name.split("/")
    return f"{parts[0]}/msg/{parts[1]}" if len(parts) == 2 else name


class _OpenBag:
    """An opened bag: its topics and a stream of its messages.

    Attributes:
        layout: What the bag is on disk.
        topics: ``{topic: (msgtype, message count)}``.
        stopped: After a :meth:`messages` iteration: None when the bag was
            read to its end, else why reading stopped early.
    """

    layout: _Layout
    topics: dict[str, tuple[str, int]]
    stopped: str | None

    def messages(self, topics: Collection[str], decode: bool) -> Iterator[tuple[str, int, Any]]:
        """``(topic, receive_ns, message)`` of ``topics`` in bag order (decoded or raw bytes)."""
        raise NotImplementedError

    def decode(self, topic: str, raw: Any) -> Any:
        """Decode one raw message of ``topic``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the files."""


def _reader_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean 'the bag's bytes stop making sense here' while streaming."""
    rosbag1 = require("rosbags.rosbag1", extra="ros", purpose=_PURPOSE, package="rosbags")
    rosbag2 = require("rosbags.rosbag2", extra="ros", purpose=_PURPOSE, package="rosbags")
    highlevel = require("rosbags.highlevel", extra="ros", purpose=_PURPOSE, package="rosbags")
    serde = require("rosbags.serde", extra="ros", purpose=_PURPOSE, package="rosbags")
    errors: tuple[type[BaseException], ...] = (
        rosbag1.ReaderError,
        rosbag2.ReaderError,
        highlevel.AnyReaderError,
        serde.SerdeError,
        struct.error,
        EOFError,
        OSError,
    )
    try:  # rosbags' sqlite3 storage reads through apsw
        apsw = require("apsw", extra="ros", purpose=_PURPOSE)
        errors += (apsw.Error,)
    except ImportError:
        pass
    return errors


class _RosbagsBag(_OpenBag):
    """A bag ``rosbags.highlevel.AnyReader`` opens."""

    def __init__(self, layout: _Layout, paths: Sequence[Path]) -> None:
        highlevel = require("rosbags.highlevel", extra="ros", purpose=_PURPOSE, package="rosbags")
        typesys = require("rosbags.typesys", extra="ros", purpose=_PURPOSE, package="rosbags")
        self.layout = layout
        self.stopped = None
        self._errors = _reader_errors()
        self._reader = highlevel.AnyReader(
            list(paths), default_typestore=typesys.get_typestore(typesys.Stores.LATEST)
        )
        self._reader.open()
        self._store = self._reader.typestore
        self._deserialize = (
            self._store.deserialize_cdr if self._reader.is2 else self._store.deserialize_ros1
        )
        self.topics = {}
        for conn in self._reader.connections:
            msgtype, count = self.topics.get(conn.topic, (conn.msgtype, 0))
            self.topics[conn.topic] = (msgtype, count + max(int(conn.msgcount), 0))
        self._msgtypes = {t: m for t, (m, _) in self.topics.items()}

    def messages(self, topics: Collection[str], decode: bool) -> Iterator[tuple[str, int, Any]]:
        self.stopped = None
        conns = [c for c in self._reader.connections if c.topic in topics]
        if not conns:
            return
        deserialize = self._deserialize
        try:
            if decode:
                for conn, receive_ns, raw in self._reader.messages(connections=conns):
                    yield conn.topic, receive_ns, deserialize(raw, conn.msgtype)
            else:
                for conn, receive_ns, raw in self._reader.messages(connections=conns):
                    yield conn.topic, receive_ns, raw
        except self._errors as exc:
            self.stopped = f"{type(exc).__name__}: {exc}"

    def decode(self, topic: str, raw: Any) -> Any:
        return self._deserialize(raw, self._msgtypes[topic])

    def close(self) -> None:
        self._reader.close()


class _Ros1ScanBag(_OpenBag):
    """A ROS 1 bag read chunk by chunk, for one whose index is missing or damaged.

    The records are parsed with ``rosbags.rosbag1``'s record reader; the
    message definitions stored in the connection records give the typestore.
    A first pass finds the connections and counts the messages, a second one
    streams them; both stop at the first record that cannot be read.
    """

    def __init__(self, layout: _Layout, why: str) -> None:
        self._r1 = require(
            "rosbags.rosbag1.reader", extra="ros", purpose=_PURPOSE, package="rosbags"
        )
        typesys = require("rosbags.typesys", extra="ros", purpose=_PURPOSE, package="rosbags")
        self.layout = layout
        self._why = why
        self.stopped = None
        self._conns: dict[int, tuple[str, str]] = {}
        definitions: dict[str, str] = {}
        counts: dict[str, int] = {}
        for kind, *record in self._records():
            if kind == "conn":
                conn_id, topic, msgtype, msgdef = record
                self._conns[conn_id] = (topic, msgtype)
                definitions.setdefault(msgtype, msgdef)
                counts.setdefault(topic, 0)
            elif record[0] in self._conns:
                topic = self._conns[record[0]][0]
                counts[topic] += 1
        self._scan_end = self.stopped
        types: dict[str, Any] = {}
        for msgtype, msgdef in definitions.items():
            types.update(typesys.get_types_from_msg(msgdef, msgtype))
        self._store = typesys.get_typestore(typesys.Stores.EMPTY)
        self._store.register(types)
        self.topics = {}
        for topic, msgtype in self._conns.values():
            self.topics.setdefault(topic, (msgtype, counts.get(topic, 0)))
        self._msgtypes = {t: m for t, (m, _) in self.topics.items()}

    def _records(self) -> Iterator[tuple[Any, ...]]:
        """The bag's records: ``("conn", id, topic, msgtype, msgdef)``, ``("msg", id, ns, raw)``."""
        r1 = self._r1
        header_cls, kinds = r1.Header, r1.RecordType
        read_uint32 = r1.read_uint32
        self.stopped = None
        with self.layout.path.open("rb") as stream:
            stream.readline()
            try:
                header_cls.read(stream, kinds.BAGHEADER)
                stream.seek(read_uint32(stream), os.SEEK_CUR)
            except r1.ReaderError as exc:
                self.stopped = f"the bag header cannot be read ({exc})"
                return
            while True:
                offset = stream.tell()
                try:
                    header = header_cls.read(stream)
                    op = header.get_uint8("op")
                except r1.ReaderError as exc:
                    stream.seek(offset)
                    at_end = not stream.read(1)
                    self.stopped = (
                        f"end of file at byte {offset} without the bag's index ({self._why})"
                        if at_end
                        else f"unreadable record at byte {offset} ({exc})"
                    )
                    return
                if op == kinds.CHUNK:
                    try:
                        compression = header.get_string("compression")
                        size = read_uint32(stream)
                    except r1.ReaderError as exc:
                        self.stopped = f"chunk record at byte {offset} cut short ({exc})"
                        return
                    data = stream.read(size)
                    if len(data) < size and compression != "none":
                        self.stopped = f"{compression} chunk at byte {offset} cut short"
                        return
                    if len(data) == size:
                        try:
                            data = r1.decompressors[compression](data)
                        except (KeyError, ValueError, OSError, RuntimeError) as exc:
                            self.stopped = f"chunk at byte {offset} cannot be decompressed ({exc})"
                            return
                    yield from self._chunk_records(BytesIO(data), offset)
                    if self.stopped is not None:
                        return
                    if len(data) < size:  # an uncompressed chunk cut short: its prefix is read
                        self.stopped = f"chunk at byte {offset} cut short"
                        return
                elif op == kinds.CONNECTION:
                    try:
                        yield self._connection(header, stream)
                    except r1.ReaderError as exc:
                        self.stopped = f"connection record at byte {offset} cut short ({exc})"
                        return
                else:  # index records: skipped (the index is what a damaged bag lacks)
                    try:
                        stream.seek(read_uint32(stream), os.SEEK_CUR)
                    except r1.ReaderError as exc:
                        self.stopped = f"record at byte {offset} cut short ({exc})"
                        return

    def _connection(self, header: Any, stream: Any) -> tuple[Any, ...]:
        r1 = self._r1
        data = r1.Header.read(stream)
        return (
            header.get_uint32("conn"),
            r1.normalize(header.get_string("topic")),
            _normalise_msgtype(data.get_string("type")),
            data.get_string("message_definition"),
        )

    def _chunk_records(self, chunk: BytesIO, offset: int) -> Iterator[tuple[Any, ...]]:
        r1 = self._r1
        kinds = r1.RecordType
        end = len(chunk.getbuffer())
        while chunk.tell() < end:
            try:
                header = r1.Header.read(chunk)
                op = header.get_uint8("op")
                if op == kinds.CONNECTION:
                    record: tuple[Any, ...] = ("conn", *self._connection(header, chunk))
                elif op == kinds.MSGDATA:
                    raw = r1.read_bytes(chunk, r1.read_uint32(chunk))
                    record = ("msg", header.get_uint32("conn"), header.get_time("time"), raw)
                else:
                    chunk.seek(r1.read_uint32(chunk), os.SEEK_CUR)
                    continue
            except r1.ReaderError as exc:
                self.stopped = f"record cut short inside the chunk at byte {offset} ({exc})"
                return
            yield record

    def messages(self, topics: Collection[str], decode: bool) -> Iterator[tuple[str, int, Any]]:
        conns = self._conns
        deserialize = self._store.deserialize_ros1
        for kind, *record in self._records():
            if kind == "msg" and record[0] in conns:
                topic, msgtype = conns[record[0]]
                if topic in topics:
                    yield topic, record[1], deserialize(record[2], msgtype) if decode else record[2]
        self.stopped = self._scan_end

    def decode(self, topic: str, raw: Any) -> Any:
        return self._store.deserialize_ros1(raw, self._msgtypes[topic])


class _McapScanBag(_OpenBag):
    """MCAP storage read record by record (``mcap``), decoded with ``mcap_ros2``.

    For MCAP files ``rosbags`` does not open: no summary section (the file is
    cut short or was never closed), another profile than ``ros2``. A first
    pass finds the channels and counts the messages, a second one streams
    them; both stop at the first record that cannot be read.
    """

    def __init__(self, layout: _Layout, why: str) -> None:
        self._stream_reader = require(
            "mcap.stream_reader", extra="ros", purpose=_PURPOSE, package="mcap"
        )
        self._records_mod = require("mcap.records", extra="ros", purpose=_PURPOSE, package="mcap")
        exceptions = require("mcap.exceptions", extra="ros", purpose=_PURPOSE, package="mcap")
        decoder = require(
            "mcap_ros2.decoder", extra="ros", purpose=_PURPOSE, package="mcap-ros2-support"
        )
        self._errors: tuple[type[BaseException], ...] = (
            exceptions.McapError,
            struct.error,
            ValueError,
            EOFError,
            OSError,
            KeyError,
            IndexError,
            UnicodeDecodeError,
        )
        self._factory = decoder.DecoderFactory()
        self._end_of_file = exceptions.EndOfFile
        self.layout = layout
        self._why = why
        self.stopped = None
        self._schemas: dict[tuple[int, int], Any] = {}
        self._channels: dict[tuple[int, int], Any] = {}
        counts: dict[str, int] = {}
        self.topics = {}
        message_cls = self._records_mod.Message
        for part, record in self._records():
            if isinstance(record, message_cls):
                channel = self._channels.get((part, record.channel_id))
                if channel is not None:
                    counts[channel.topic] += 1
            elif isinstance(record, self._records_mod.Channel):
                schema = self._schemas.get((part, record.schema_id))
                msgtype = _normalise_msgtype(schema.name) if schema is not None else ""
                self.topics.setdefault(record.topic, (msgtype, 0))
                counts.setdefault(record.topic, 0)
        self._scan_end = self.stopped
        self.topics = {t: (m, counts[t]) for t, (m, _) in self.topics.items()}
        self._decoders: dict[tuple[int, int], Callable[[bytes], Any]] = {}
        self._topic_channel: dict[str, tuple[int, int]] = {}

    def _records(self) -> Iterator[tuple[int, Any]]:
        """``(file index, record)`` of every storage file, in file order."""
        records = self._records_mod
        self.stopped = None
        for part, path in enumerate(self.layout.storage_files):
            if not path.name.endswith(".mcap"):
                self.stopped = f"{path.name}: compressed storage files need the bag's metadata.yaml"
                return
            with path.open("rb") as stream:
                reader = self._stream_reader.StreamReader(stream, record_size_limit=None)
                footer = False
                try:
                    for record in reader.records:
                        if isinstance(record, records.Schema):
                            self._schemas[part, record.id] = record
                        elif isinstance(record, records.Channel):
                            self._channels[part, record.id] = record
                        elif isinstance(record, records.Footer):
                            footer = True
                        yield part, record
                except self._errors as exc:
                    where = stream.tell()
                    reason = (
                        "the file ends inside a record"
                        if isinstance(exc, (self._end_of_file, struct.error))
                        else f"{type(exc).__name__}: {exc}"
                    )
                    self.stopped = f"{path.name}: unreadable record before byte {where} ({reason})"
                    return
                if not footer:
                    self.stopped = f"{path.name}: end of file without the MCAP footer ({self._why})"
                    return

    def _decoder(self, part: int, channel_id: int) -> Callable[[bytes], Any]:
        key = (part, channel_id)
        decode = self._decoders.get(key)
        if decode is None:
            channel = self._channels[key]
            schema = self._schemas.get((part, channel.schema_id))
            made = self._factory.decoder_for(channel.message_encoding, schema)
            if made is None:
                encoding = schema.encoding if schema is not None else "no schema"
                raise BagMessageTypeError(
                    f"{self.layout.path}: topic {channel.topic} is encoded as "
                    f"{channel.message_encoding!r} with a {encoding!r} schema; only CDR "
                    "messages with ros2msg schemas can be read. Convert the file to a ROS 2 bag."
                )
            decode = self._decoders[key] = made
        return decode

    def messages(self, topics: Collection[str], decode: bool) -> Iterator[tuple[str, int, Any]]:
        message_cls = self._records_mod.Message
        channels = self._channels
        for part, record in self._records():
            if isinstance(record, message_cls):
                channel = channels.get((part, record.channel_id))
                if channel is not None and channel.topic in topics:
                    data = record.data
                    if decode:
                        data = self._decoder(part, record.channel_id)(data)
                    yield channel.topic, record.log_time, data
        self.stopped = self._scan_end

    def decode(self, topic: str, raw: Any) -> Any:
        key = self._topic_channel.get(topic)
        if key is None:
            key = next(k for k, channel in self._channels.items() if channel.topic == topic)
            self._topic_channel[topic] = key
        return self._decoder(*key)(raw)


@contextmanager
def _open_bag(path: PathLike) -> Iterator[_OpenBag]:
    """Open a bag with the reader its form needs; see the module docstring."""
    layout = _layout(path)
    highlevel = require("rosbags.highlevel", extra="ros", purpose=_PURPOSE, package="rosbags")
    open_errors = _reader_errors() + (highlevel.AnyReaderError, FileNotFoundError)
    paths = [layout.path] if layout.metadata or not layout.path.is_dir() else layout.storage_files
    bag: _OpenBag
    try:
        bag = _RosbagsBag(layout, paths)
    except open_errors as exc:
        why = f"rosbags: {exc}"
        if layout.storage == "rosbag1":
            bag = _Ros1ScanBag(layout, why)
        elif layout.storage in ("mcap", "rosbag2-mcap"):
            bag = _McapScanBag(layout, why)
        else:
            raise TruncatedBagError(
                f"{layout.path} cannot be opened ({exc}). A sqlite3 storage file cut short "
                "cannot be read in part: recover what it holds with "
                "`sqlite3 BROKEN.db3 .recover | sqlite3 FIXED.db3` and read the fixed copy."
            ) from exc
        if not bag.topics:
            bag.close()
            raise TruncatedBagError(
                f"{layout.path} is cut short before any topic was declared "
                f"({bag.stopped or why}); nothing can be read from it."
            ) from exc
    try:
        yield bag
    finally:
        bag.close()


def _topic_listing(summary: BagSummary) -> str:
    return ", ".join(f"{t.name} ({t.msgtype})" for t in summary.topics) or "none"


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
