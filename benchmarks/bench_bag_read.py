"""Reading a large JointState bag into arrays: speed and peak memory.

Writes a ``--messages`` × ``--joints`` JointState bag (default 600 000
messages of 7 joints: 10 min at 1 kHz, positions, velocities and efforts) with
``rosbags``' writer in a temporary folder, then measures, each in a fresh
Python process (best of ``--repeats``):

* ``rosbags``' own read-and-deserialize loop over the topic
  (``AnyReader.messages`` + ``AnyReader.deserialize``, the message objects
  dropped), from opening the bag to the last message;
* :func:`figaroh.data.bag_reader.read_joint_states` on the same bag, from the
  call to the returned arrays.

Prints the messages/s of both and their ratio (goal: ours ≥ 0.75 × rosbags'),
and the peak resident memory (``VmHWM``, else ``ru_maxrss``) of the process that reads with
:func:`read_joint_states`, beside the process's memory before the call and
the size of the arrays returned (goal: peak ≤ 2 × arrays + 200 MB).

    .venv/bin/python benchmarks/bench_bag_read.py [--messages 600000] [--joints 7]
        [--format rosbag2-mcap] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FORMATS = ("rosbag1", "rosbag2-sqlite3", "rosbag2-mcap")
TOPIC = "/joint_states"
MSGTYPE = "sensor_msgs/msg/JointState"


def write_bag(path: Path, fmt: str, n_messages: int, n_joints: int) -> Path:
    """Write the benchmark bag: 1 kHz stamps, seeded smooth joint signals."""
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC if fmt == "rosbag1" else Stores.LATEST)
    names = [f"joint_{j + 1}" for j in range(n_joints)]
    phase = np.random.default_rng(0).uniform(0, 2 * np.pi, n_joints)
    time_cls = store.types["builtin_interfaces/msg/Time"]
    header_cls = store.types["std_msgs/msg/Header"]
    ros1 = "seq" in header_cls.__dataclass_fields__
    joint_state = store.types[MSGTYPE]
    t0 = 1_700_000_000 * 1_000_000_000

    def messages():
        for k in range(n_messages):
            stamp_ns = t0 + k * 1_000_000
            angle = 2e-3 * np.pi * k * 1e-3 + phase
            stamp = time_cls(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
            header = (
                header_cls(seq=k, stamp=stamp, frame_id="")
                if ros1
                else header_cls(stamp=stamp, frame_id="")
            )
            msg = joint_state(
                header=header,
                name=names,
                position=np.sin(angle),
                velocity=np.cos(angle),
                effort=10 * np.sin(2 * angle),
            )
            yield stamp_ns, msg

    if fmt == "rosbag1":
        from rosbags.rosbag1 import Writer as Writer1

        with Writer1(path) as writer1:
            conn = writer1.add_connection(TOPIC, MSGTYPE, typestore=store)
            for stamp_ns, msg in messages():
                writer1.write(conn, stamp_ns, store.serialize_ros1(msg, MSGTYPE))
    else:
        from rosbags.rosbag2 import StoragePlugin, Writer

        plugin = StoragePlugin.MCAP if fmt == "rosbag2-mcap" else StoragePlugin.SQLITE3
        with Writer(path, version=9, storage_plugin=plugin) as writer2:
            conn = writer2.add_connection(TOPIC, MSGTYPE, typestore=store)
            for stamp_ns, msg in messages():
                writer2.write(conn, stamp_ns, store.serialize_cdr(msg, MSGTYPE))
    return path


_PEAK = '''
def peak_kb():
    """Peak resident memory of this process [kB]: VmHWM (Linux), else ru_maxrss.

    ru_maxrss survives exec on Linux (a child reports its parent's peak if
    larger), VmHWM starts afresh with the new program.
    """
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
'''

_ROSBAGS_LOOP = """
import json, sys, time
from pathlib import Path
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore
path, topic = Path(sys.argv[1]), sys.argv[2]
before = peak_kb()
start = time.perf_counter()
n = 0
with AnyReader([path], default_typestore=get_typestore(Stores.LATEST)) as reader:
    conns = [c for c in reader.connections if c.topic == topic]
    for conn, _, raw in reader.messages(connections=conns):
        msg = reader.deserialize(raw, conn.msgtype)
        n += 1
seconds = time.perf_counter() - start
peak = peak_kb()
print(json.dumps({"n": n, "seconds": seconds, "before_kb": before, "peak_kb": peak}))
"""

_OURS = """
import json, sys, time
import numpy as np
import rosbags.highlevel, rosbags.typesys  # imported before the baseline, as in the loop above
from figaroh.data.bag_reader import read_joint_states
path, topic, n_joints = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = [f"joint_{j + 1}" for j in range(n_joints)]
before = peak_kb()
start = time.perf_counter()
arrays = read_joint_states(path, names, topic)
seconds = time.perf_counter() - start
peak = peak_kb()
size = sum(a.nbytes for a in (arrays.stamp_ns, arrays.receive_ns, arrays.position,
                              arrays.velocity, arrays.effort) if a is not None)
print(json.dumps({"n": len(arrays.stamp_ns), "seconds": seconds, "before_kb": before,
                  "peak_kb": peak, "array_bytes": size, "truncated": arrays.truncated}))
"""


def _run(code: str, *args: str) -> dict:
    src = str(Path(__file__).resolve().parents[1] / "src")
    env_path = f"import sys; sys.path.insert(0, {src!r})\n"
    proc = subprocess.run(
        [sys.executable, "-c", env_path + _PEAK + code, *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _best(code: str, repeats: int, *args: str) -> dict:
    runs = [_run(code, *args) for _ in range(repeats)]
    return min(runs, key=lambda r: r["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=600_000)
    parser.add_argument("--joints", type=int, default=7)
    parser.add_argument("--format", choices=FORMATS, default="rosbag2-mcap")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("log.bag" if args.format == "rosbag1" else "log")
        start = time.perf_counter()
        write_bag(path, args.format, args.messages, args.joints)
        t_write = time.perf_counter() - start
        size = sum(f.stat().st_size for f in ([path] if path.is_file() else path.iterdir()))
        theirs = _best(_ROSBAGS_LOOP, args.repeats, str(path), TOPIC)
        ours = _best(_OURS, args.repeats, str(path), TOPIC, str(args.joints))
    assert ours["n"] == theirs["n"] == args.messages, (ours["n"], theirs["n"])
    rate_theirs = theirs["n"] / theirs["seconds"]
    rate_ours = ours["n"] / ours["seconds"]
    mb = 1e-3  # kB → MB
    arrays_mb = ours["array_bytes"] / 1e6
    goal_mb = 2 * arrays_mb + 200
    print(
        f"{args.messages} JointState messages × {args.joints} joints, {args.format} "
        f"({size / 1e6:.1f} MB on disk, written in {t_write:.1f} s)"
    )
    print(f"rosbags read + deserialize loop: {theirs['seconds']:7.2f} s  {rate_theirs:10.0f} msg/s")
    print(f"read_joint_states:               {ours['seconds']:7.2f} s  {rate_ours:10.0f} msg/s")
    print(f"  ours / rosbags rate: {rate_ours / rate_theirs:.3f} (goal ≥ 0.75)")
    print(
        f"peak RSS of read_joint_states' process: {ours['peak_kb'] * mb:.0f} MB "
        f"({ours['before_kb'] * mb:.0f} MB before the call; arrays {arrays_mb:.1f} MB; "
        f"goal ≤ 2 × arrays + 200 MB = {goal_mb:.0f} MB)"
    )
    print(
        f"  peak / goal: {ours['peak_kb'] * mb / goal_mb:.3f}; "
        f"rosbags loop's process for comparison: {theirs['peak_kb'] * mb:.0f} MB"
    )


if __name__ == "__main__":
    main()
