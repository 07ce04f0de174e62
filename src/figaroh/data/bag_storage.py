"""What a ROS bag is on disk, and opening it as a stream of messages.

A *bag* is one of:

* a ROS 1 ``.bag`` file (``"rosbag1"``);
* a ROS 2 bag folder, ``metadata.yaml`` beside its sqlite3 ``.db3`` or MCAP
  ``.mcap`` storage files (``"rosbag2-sqlite3"``, ``"rosbag2-mcap"``; a folder
  whose ``metadata.yaml`` was never written, as when the recording was
  killed, is read from its storage files);
* a bare ``.mcap`` file (``"mcap"``).

The form is told from file names and magic bytes alone (:func:`bag_files`
lists the files, for provenance hashing). An opened bag gives its topics
with their message types and counts, and a stream of ``(topic, receive_ns,
message)`` in bag order, decoded or as raw bytes.

Bags are opened with the ``rosbags`` package (:class:`rosbags.highlevel.AnyReader`
with the latest ROS 2 typestore as default, for ROS 2 bags that carry no
message definitions). An MCAP file that ``rosbags`` cannot open (no summary
section because the file is cut short, another profile than ``ros2``) is read
record by record with the ``mcap`` package and decoded with ``mcap_ros2``'s
decoder; a ROS 1 bag whose index is missing or damaged (cut short, never
closed) is read chunk by chunk with ``rosbags``' record reader. In both
scans ROS 1 style message names are normalised to their ROS 2 form
(``sensor_msgs/JointState`` → ``sensor_msgs/msg/JointState``). The packages
come with the ``ros`` extra (``pip install "figaroh[ros]"``) and are imported
when a bag is opened.

A stream that meets bytes it cannot read stops there and records why; what
was read before stays valid. A bag of which nothing can be opened raises
:class:`~figaroh.data.bag_errors.TruncatedBagError`; a path that is not a bag
raises :class:`~figaroh.data.bag_errors.NotABagError` naming the accepted
forms.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any, Union

from figaroh._optional import require
from figaroh.data.bag_errors import BagMessageTypeError, NotABagError, TruncatedBagError

__all__ = ["BAG_STORAGES", "bag_files"]

#: A bag's path: a ``str`` or an ``os.PathLike``.
PathLike = Union[str, "os.PathLike[str]"]

#: Storage forms a bag can take (``BagSummary.storage``).
BAG_STORAGES = ("rosbag1", "rosbag2-sqlite3", "rosbag2-mcap", "mcap")

_ROS1_MAGIC = b"#ROSBAG V2.0\n"
_MCAP_MAGIC = b"\x89MCAP0\r\n"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_STORAGE_SUFFIXES = (".db3", ".mcap", ".db3.zstd", ".mcap.zstd")
_ACCEPTED = (
    "a ROS 1 .bag file, a ROS 2 bag folder (metadata.yaml with .db3 or .mcap storage files) "
    "or an .mcap file"
)
_PURPOSE = "Reading ROS bags"


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
