"""The ROS bag reader against bags written by ``rosbags``' own writers.

Every bag is written here (``tests/bag_writers.py``) from known arrays, in the
three bag formats (ROS 1, ROS 2 sqlite3, ROS 2 MCAP) and as a bare ``.mcap``
file; the reader must give back exactly what was written (``==`` on the float
arrays: the formats store IEEE doubles), map joints by name, merge joint
groups on stamps, and name the error of each bad bag.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from bag_writers import (
    ALL_FORMATS,
    BAG_FORMATS,
    JOINT_STATE,
    POSE_STAMPED,
    POSE_WITH_COVARIANCE,
    TF_MESSAGE,
    TRANSFORM_STAMPED,
    bag_path,
    bare_mcap_from_folder,
    joint_state_msg,
    pose_stamped_msg,
    pose_with_covariance_msg,
    tf_message,
    transform_stamped_msg,
    typestore_for,
    write_bag,
    write_joint_state_bag,
)
from conftest import UR10_JOINTS as UR10
from figaroh.data import bag_reader
from figaroh.data.bag_errors import (
    BagError,
    BagJointError,
    BagMessageTypeError,
    BagTopicError,
    NotABagError,
    TruncatedBagError,
)
from figaroh.data.bag_reader import (
    JOINT_STATE_TYPES,
    POSE_TYPES,
    bag_files,
    bag_summary,
    read_joint_states,
    read_poses,
    select_topics,
)
from figaroh.errors import MissingDependencyError

T0 = 1_700_000_000_000_000_000  # 2023-11-14 [ns]
N = 200


def _log(n: int = N, seed: int = 0):
    """Seeded arrays of a 100 Hz log with irregular stamps and a receive delay."""
    rng = np.random.default_rng(seed)
    stamps = T0 + np.cumsum(rng.integers(9_000_000, 11_000_000, n)).astype(np.int64)
    receive = stamps + rng.integers(100_000, 900_000, n)
    q, dq, tau = (rng.normal(size=(n, len(UR10))) for _ in range(3))
    return stamps, receive, q, dq, tau


# --------------------------------------------------------------------------- #
# Round trips
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_round_trip_is_exact_in_every_format(tmp_path, fmt):
    stamps, receive, q, dq, tau = _log()
    path = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, stamps, UR10, q, dq, tau, receive_ns=receive
    )
    got = read_joint_states(path, UR10)
    assert got.joint_names == UR10 and got.topics == ("/joint_states",)
    assert got.stamp_source == "header.stamp" and got.truncated is None
    assert got.extra_joints == ()
    assert got.stamp_ns.dtype == np.int64 and np.array_equal(got.stamp_ns, stamps)
    assert np.array_equal(got.receive_ns, receive)
    assert np.array_equal(got.position, q)
    assert np.array_equal(got.velocity, dq)
    assert np.array_equal(got.effort, tau)
    files = bag_files(path)
    if path.is_dir():
        assert files[0].name == "metadata.yaml" and len(files) == 2
        assert files[1].suffix in (".db3", ".mcap")
    else:
        assert files == [path]


def test_bare_mcap_copied_out_of_a_ros2_folder_reads_as_the_folder(tmp_path):
    stamps, receive, q, dq, tau = _log()
    folder = write_joint_state_bag(tmp_path / "bag", "rosbag2-mcap", stamps, UR10, q, dq, tau)
    bare = bare_mcap_from_folder(folder, tmp_path / "copy.mcap")
    from_folder, from_file = read_joint_states(folder, UR10), read_joint_states(bare, UR10)
    assert np.array_equal(from_file.position, from_folder.position)
    assert np.array_equal(from_file.stamp_ns, from_folder.stamp_ns)
    assert bag_summary(bare).storage == "mcap" and bag_summary(folder).storage == "rosbag2-mcap"


def test_mcap_file_rosbags_does_not_open_is_read_with_the_mcap_decoder(tmp_path, caplog):
    """Profile "" (another tool's file): rosbags refuses it, mcap + mcap_ros2 read it whole."""
    stamps, receive, q, dq, tau = _log()
    store = typestore_for("mcap")
    messages = [
        (
            "/joint_states",
            JOINT_STATE,
            int(receive[k]),
            joint_state_msg(store, int(stamps[k]), UR10, q[k], dq[k], tau[k]),
        )
        for k in range(N)
    ]
    path = write_bag(tmp_path / "other.mcap", "mcap", messages, mcap_profile="")
    from rosbags.highlevel import AnyReader, AnyReaderError

    with pytest.raises(AnyReaderError, match="Profile"):
        AnyReader([path]).open()
    got = read_joint_states(path, UR10)
    assert got.truncated is None
    assert np.array_equal(got.position, q) and np.array_equal(got.effort, tau)
    assert np.array_equal(got.stamp_ns, stamps) and np.array_equal(got.receive_ns, receive)


def test_ros2_folder_without_metadata_is_read_from_its_storage_file(tmp_path):
    """A recording killed before rosbag2 wrote metadata.yaml."""
    stamps, receive, q, _, _ = _log()
    folder = write_joint_state_bag(tmp_path / "bag", "rosbag2-sqlite3", stamps, UR10, q)
    (folder / "metadata.yaml").unlink()
    got = read_joint_states(folder, UR10)
    assert np.array_equal(got.position, q) and got.truncated is None
    assert [f.suffix for f in bag_files(folder)] == [".db3"]


# --------------------------------------------------------------------------- #
# Joints mapped by name
# --------------------------------------------------------------------------- #
def test_shuffled_joint_order_is_mapped_by_name(tmp_path):
    stamps, _, q, dq, tau = _log()
    order = [3, 0, 5, 1, 4, 2]
    names = [UR10[i] for i in order]
    path = write_joint_state_bag(
        tmp_path / "bag", "rosbag2-mcap", stamps, names, q[:, order], dq[:, order], tau[:, order]
    )
    got = read_joint_states(path, UR10)
    assert np.array_equal(got.position, q)
    assert np.array_equal(got.velocity, dq) and np.array_equal(got.effort, tau)


def test_extra_joints_are_ignored_and_listed(tmp_path):
    stamps, _, q, _, _ = _log()
    names = ("gripper_joint", *UR10, "head_pan")
    wide = np.column_stack([np.full(N, 7.0), q, np.full(N, -7.0)])
    path = write_joint_state_bag(tmp_path / "r.bag", "rosbag1", stamps, names, wide)
    got = read_joint_states(path, UR10)
    assert np.array_equal(got.position, q)
    assert got.extra_joints == ("gripper_joint", "head_pan")
    assert got.velocity is None and got.effort is None


def test_a_subset_of_the_messages_joints_is_read(tmp_path):
    stamps, _, q, _, _ = _log()
    path = write_joint_state_bag(tmp_path / "bag", "rosbag2-sqlite3", stamps, UR10, q)
    got = read_joint_states(path, ["elbow_joint", "shoulder_pan_joint"])
    assert np.array_equal(got.position, q[:, [2, 0]])
    assert got.extra_joints == tuple(
        n for n in UR10 if n not in ("elbow_joint", "shoulder_pan_joint")
    )


def test_a_requested_joint_in_no_message_is_named(tmp_path):
    stamps, _, q, _, _ = _log()
    path = write_joint_state_bag(tmp_path / "bag", "rosbag2-mcap", stamps, UR10[:5], q[:, :5])
    with pytest.raises(BagJointError, match="wrist_3_joint") as info:
        read_joint_states(path, UR10)
    assert "shoulder_pan_joint" in str(info.value)  # the joints the messages carry


def test_no_requested_joint_in_any_message_names_both_lists(tmp_path):
    stamps, _, q, _, _ = _log()
    path = write_joint_state_bag(tmp_path / "bag", "rosbag2-mcap", stamps, UR10, q)
    with pytest.raises(BagJointError) as info:
        read_joint_states(path, ["arm_1", "arm_2"])
    text = str(info.value)
    assert "arm_1, arm_2" in text and "elbow_joint" in text and "Asked for" in text


@pytest.mark.parametrize(
    "names", [[], ["elbow_joint", "elbow_joint"], "elbow_joint"], ids=["none", "twice", "str"]
)
def test_bad_joint_lists_are_refused(tmp_path, names):
    stamps, _, q, _, _ = _log(10)
    path = write_joint_state_bag(tmp_path / "bag", "rosbag2-mcap", stamps, UR10, q)
    with pytest.raises(BagJointError):
        read_joint_states(path, names)


def test_messages_of_other_groups_on_the_same_topic(tmp_path):
    """Arm messages in two name orders, gripper-only messages skipped (no requested joint)."""
    stamps, _, q, _, _ = _log()
    store = typestore_for("rosbag2-mcap")
    reverse = list(reversed(UR10))
    messages = []
    for k in range(N):
        names, row = (UR10, q[k]) if k % 2 else (reverse, q[k, ::-1])
        msg = joint_state_msg(store, int(stamps[k]), names, row)
        messages.append(("/joint_states", JOINT_STATE, int(stamps[k]), msg))
        gripper = joint_state_msg(store, int(stamps[k]), ["finger"], [0.01 * k])
        messages.append(("/joint_states", JOINT_STATE, int(stamps[k]) + 1, gripper))
    path = write_bag(tmp_path / "bag", "rosbag2-mcap", messages)
    got = read_joint_states(path, UR10)
    assert np.array_equal(got.position, q) and np.array_equal(got.stamp_ns, stamps)
    assert got.extra_joints == ("finger",)


def test_two_topics_of_joint_groups_are_merged_on_stamp(tmp_path):
    stamps, _, q, dq, _ = _log()
    arm, wrist = UR10[:3], UR10[3:]
    store = typestore_for("rosbag1")
    messages = []
    for k in range(N):
        t = int(stamps[k])
        messages.append(
            ("/arm", JOINT_STATE, t + 1000, joint_state_msg(store, t, arm, q[k, :3], dq[k, :3]))
        )
        if k != 50:  # the wrist misses one sample
            msg = joint_state_msg(store, t, wrist, q[k, 3:], dq[k, 3:])
            messages.append(("/wrist", JOINT_STATE, t + 2000, msg))
    messages.append(
        (
            "/wrist",
            JOINT_STATE,
            T0 + 10**12,
            joint_state_msg(store, T0 + 10**12, wrist, [1.0, 2, 3]),
        )
    )
    path = write_bag(tmp_path / "split.bag", "rosbag1", messages)
    with pytest.raises(BagTopicError, match="2 joint-state topics: /arm, /wrist"):
        read_joint_states(path, UR10)
    got = read_joint_states(path, UR10, ["/arm", "/wrist"])
    assert got.topics == ("/arm", "/wrist")
    assert np.array_equal(got.stamp_ns, np.append(stamps, T0 + 10**12))
    assert np.array_equal(got.receive_ns[:N], stamps + 1000)  # the first message of each stamp
    expected = np.vstack([q, np.full((1, 6), np.nan)])
    expected[50, 3:] = np.nan
    expected[N, 3:] = [1.0, 2, 3]
    assert np.array_equal(got.position, expected, equal_nan=True)
    assert np.array_equal(got.velocity[:N, :3], dq[:, :3])
    assert got.effort is None


def test_a_message_count_understated_by_the_metadata_grows_the_arrays(tmp_path):
    stamps, _, q, dq, _ = _log()
    path = write_joint_state_bag(tmp_path / "bag", "rosbag2-sqlite3", stamps, UR10, q, dq)
    meta = path / "metadata.yaml"
    meta.write_text(meta.read_text().replace(f"message_count: {N}", "message_count: 3"))
    got = read_joint_states(path, UR10)
    assert np.array_equal(got.position, q) and np.array_equal(got.velocity, dq)
    assert np.array_equal(got.stamp_ns, stamps) and got.position.flags.c_contiguous


def test_zero_header_stamps_fall_back_to_receive_time(tmp_path):
    _, receive, q, _, _ = _log()
    path = write_joint_state_bag(
        tmp_path / "bag", "rosbag2-sqlite3", np.zeros(N, np.int64), UR10, q, receive_ns=receive
    )
    got = read_joint_states(path, UR10)
    assert got.stamp_source == "receive time"
    assert np.array_equal(got.stamp_ns, receive) and np.array_equal(got.receive_ns, receive)


def test_stamps_are_kept_in_bag_order_not_sorted(tmp_path):
    stamps, receive, q, _, _ = _log()
    stamps[[10, 11]] = stamps[[11, 10]]  # published out of order, received in order
    stamps[20] = stamps[19]  # a duplicate
    path = write_joint_state_bag(
        tmp_path / "bag", "rosbag2-mcap", stamps, UR10, q, receive_ns=receive
    )
    got = read_joint_states(path, UR10)
    assert np.array_equal(got.stamp_ns, stamps) and np.array_equal(got.position, q)


def test_velocity_and_effort_absent_in_some_or_all_messages(tmp_path):
    stamps, _, q, dq, tau = _log()
    store = typestore_for("rosbag2-mcap")
    messages = [
        (
            "/joint_states",
            JOINT_STATE,
            int(stamps[k]),
            joint_state_msg(store, int(stamps[k]), UR10, q[k], dq[k] if k % 3 else None),
        )
        for k in range(N)
    ]
    path = write_bag(tmp_path / "bag", "rosbag2-mcap", messages)
    got = read_joint_states(path, UR10)
    assert got.effort is None  # no message publishes efforts
    expected = dq.copy()
    expected[::3] = np.nan
    assert np.array_equal(got.velocity, expected, equal_nan=True)
    assert np.array_equal(got.position, q)


def test_value_arrays_that_do_not_match_the_names_are_refused(tmp_path):
    store = typestore_for("rosbag2-mcap")
    msg = joint_state_msg(store, T0, UR10, np.zeros(6), np.zeros(5))
    path = write_bag(tmp_path / "bag", "rosbag2-mcap", [("/js", JOINT_STATE, T0, msg)])
    with pytest.raises(BagJointError, match="6 joint names but 5 velocity values"):
        read_joint_states(path, UR10)


# --------------------------------------------------------------------------- #
# Summary and topic selection
# --------------------------------------------------------------------------- #
def _mixed_bag(tmp_path: Path, fmt: str) -> Path:
    """Joint states on two topics, a PoseStamped topic and a /tf topic with two child frames."""
    store = typestore_for(fmt)
    messages = []
    names_a, names_b = ["a1", "a2"], ["a2", "a3", "a1"]
    for k in range(10):
        t = T0 + k * 10_000_000
        names = names_a if k < 5 else names_b
        msg = joint_state_msg(store, t, names, np.arange(len(names), dtype=float))
        messages.append(("/joint_states", JOINT_STATE, t, msg))
        if k % 2 == 0:
            messages.append(
                (
                    "/gripper/joint_states",
                    JOINT_STATE,
                    t + 5,
                    joint_state_msg(store, t, ["f"], [0.0]),
                )
            )
        messages.append(
            (
                "/marker",
                POSE_STAMPED,
                t + 7,
                pose_stamped_msg(store, t, "camera", [k, 0, 0], [0, 0, 0, 1]),
            )
        )
        transforms = [
            transform_stamped_msg(store, t, "base", "tool", [k, 1, 2], [0, 0, 0, 1]),
            transform_stamped_msg(store, t, "base", "camera", [0, 0, 1], [0, 0, 1, 0]),
        ]
        messages.append(("/tf", TF_MESSAGE, t + 9, tf_message(store, transforms)))
    messages.sort(key=lambda m: m[2])
    return write_bag(bag_path(tmp_path, fmt), fmt, messages)


@pytest.mark.parametrize("fmt", ["rosbag1", "rosbag2-sqlite3"])
def test_bag_summary_counts_rates_names_frames_and_span(tmp_path, fmt):
    path = _mixed_bag(tmp_path, fmt)
    summary = bag_summary(path)
    assert summary.storage == fmt and summary.truncated is None
    assert [t.name for t in summary.topics] == [
        "/gripper/joint_states",
        "/joint_states",
        "/marker",
        "/tf",
    ]
    joint = summary.topic("/joint_states")
    assert joint.msgtype == "sensor_msgs/msg/JointState" and joint.count == 10
    assert joint.first_ns == T0 and joint.last_ns == T0 + 90_000_000
    assert joint.rate_hz == pytest.approx(9 / 0.09, rel=1e-12)
    assert joint.joint_names == ("a1", "a2", "a3")
    assert summary.topic("/gripper/joint_states").count == 5
    assert summary.topic("/gripper/joint_states").rate_hz == pytest.approx(4 / 0.08, rel=1e-12)
    assert summary.topic("/tf").frames == ("tool", "camera")
    assert summary.topic("/marker").frames == ("camera",)
    assert summary.start_ns == T0 and summary.end_ns == T0 + 90_000_009
    table = summary.table()
    assert "/joint_states" in table and "a1, a2, a3" in table and "100.000" in table
    assert json.loads(json.dumps(summary.to_dict()))["topics"][1]["joint_names"] == [
        "a1",
        "a2",
        "a3",
    ]
    with pytest.raises(BagTopicError, match="/marker \\(geometry_msgs/msg/PoseStamped\\)"):
        summary.topic("/nope")
    quick = bag_summary(path, joint_names=False)
    assert quick.topic("/joint_states").joint_names == () and quick.topic("/tf").count == 10


def test_single_message_topic_has_no_rate(tmp_path):
    store = typestore_for("rosbag2-mcap")
    msg = joint_state_msg(store, T0, ["a"], [1.0])
    path = write_bag(tmp_path / "bag", "rosbag2-mcap", [("/js", JOINT_STATE, T0, msg)])
    info = bag_summary(path).topic("/js")
    assert info.count == 1 and info.rate_hz is None and info.first_ns == info.last_ns == T0


def test_select_topics_errors(tmp_path):
    summary = bag_summary(_mixed_bag(tmp_path, "rosbag2-mcap"), joint_names=False)
    with pytest.raises(BagTopicError, match="--topic") as several:
        select_topics(summary, JOINT_STATE_TYPES, None, "joint-state")
    assert "/gripper/joint_states, /joint_states" in str(several.value)
    with pytest.raises(BagTopicError, match="--pose-topic") as poses:
        select_topics(summary, POSE_TYPES, None, "pose")
    assert "/marker, /tf" in str(poses.value)
    with pytest.raises(BagTopicError, match="no wrench topic") as none:
        select_topics(summary, ("geometry_msgs/msg/WrenchStamped",), None, "wrench")
    assert "/tf (tf2_msgs/msg/TFMessage)" in str(none.value)
    with pytest.raises(BagMessageTypeError, match="PoseStamped") as wrong:
        select_topics(summary, JOINT_STATE_TYPES, "/marker", "joint-state")
    assert "sensor_msgs/msg/JointState" in str(wrong.value)
    with pytest.raises(BagTopicError, match="no topic '/joints'"):
        select_topics(summary, JOINT_STATE_TYPES, "/joints", "joint-state")
    assert select_topics(summary, JOINT_STATE_TYPES, "/joint_states", "joint-state") == (
        "/joint_states",
    )
    assert select_topics(summary, POSE_TYPES, ["/tf", "/marker"], "pose") == ("/tf", "/marker")


def test_read_joint_states_topic_errors(tmp_path):
    path = _mixed_bag(tmp_path, "rosbag2-mcap")
    with pytest.raises(BagTopicError, match="several|2 joint-state topics"):
        read_joint_states(path, ["a1"])
    with pytest.raises(BagMessageTypeError, match="/tf holds tf2_msgs/msg/TFMessage"):
        read_joint_states(path, ["a1"], "/tf")
    with pytest.raises(BagTopicError, match="no topic '/missing'"):
        read_joint_states(path, ["a1"], "/missing")
    got = read_joint_states(path, ["a3", "a1"], "/joint_states")
    assert np.array_equal(got.position[:5, 1], np.zeros(5)) and np.isnan(got.position[:5, 0]).all()
    assert np.array_equal(got.position[5:], np.tile([1.0, 2.0], (5, 1)))


# --------------------------------------------------------------------------- #
# Poses
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("fmt", BAG_FORMATS)
def test_read_poses_pose_stamped_and_tf(tmp_path, fmt):
    path = _mixed_bag(tmp_path, fmt)
    marker = read_poses(path, "/marker")
    assert marker.frame_id == "camera" and marker.child_frame_id == ""
    assert marker.msgtype == POSE_STAMPED and marker.stamp_source == "header.stamp"
    assert np.array_equal(marker.position, np.column_stack([np.arange(10.0), np.zeros((10, 2))]))
    assert np.array_equal(marker.quaternion_xyzw, np.tile([0.0, 0, 0, 1], (10, 1)))
    assert np.array_equal(marker.stamp_ns, T0 + np.arange(10) * 10_000_000)
    assert np.array_equal(marker.receive_ns, marker.stamp_ns + 7)
    with pytest.raises(BagTopicError, match="2 child frames: tool, camera"):
        read_poses(path, "/tf")
    tool = read_poses(path, "/tf", child_frame="tool")
    assert tool.frame_id == "base" and tool.child_frame_id == "tool" and tool.msgtype == TF_MESSAGE
    assert np.array_equal(tool.position[:, 0], np.arange(10.0))
    camera = read_poses(path, "/tf", child_frame="camera")
    assert np.array_equal(camera.quaternion_xyzw, np.tile([0.0, 0, 1, 0], (10, 1)))
    with pytest.raises(BagTopicError, match="no transform to child frame 'gripper'.*tool, camera"):
        read_poses(path, "/tf", child_frame="gripper")
    with pytest.raises(BagMessageTypeError, match="JointState"):
        read_poses(path, "/joint_states")
    with pytest.raises(BagTopicError, match="no child frame"):
        read_poses(path, "/marker", child_frame="tool")


def test_read_poses_of_a_busy_tf_topic(tmp_path):
    """Many frames on /tf: each frame's rows grow as they come (more than the first 1024)."""
    store = typestore_for("rosbag2-mcap")
    n = 1500
    messages = [
        (
            "/tf",
            TF_MESSAGE,
            T0 + k,
            tf_message(
                store,
                [
                    transform_stamped_msg(store, T0 + k, "odom", "base", [k, 0, 0], [0, 0, 0, 1]),
                    transform_stamped_msg(store, T0 + k, "base", "arm", [0, k, 0], [1, 0, 0, 0]),
                ],
            ),
        )
        for k in range(n)
    ]
    path = write_bag(tmp_path / "bag", "rosbag2-mcap", messages)
    arm = read_poses(path, "/tf", "arm")
    assert arm.frame_id == "base" and np.array_equal(arm.position[:, 1], np.arange(n, dtype=float))
    assert np.array_equal(arm.quaternion_xyzw, np.tile([1.0, 0, 0, 0], (n, 1)))
    assert np.array_equal(arm.stamp_ns, T0 + np.arange(n))


@pytest.mark.parametrize("fmt", ["rosbag1", "rosbag2-mcap"])
def test_read_poses_with_covariance(tmp_path, fmt):
    store = typestore_for(fmt)
    rng = np.random.default_rng(3)
    xyz, quat = rng.normal(size=(20, 3)), rng.normal(size=(20, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    messages = [
        (
            "/amcl_pose",
            POSE_WITH_COVARIANCE,
            T0 + k * 1000,
            pose_with_covariance_msg(store, T0 + k, "map", xyz[k], quat[k]),
        )
        for k in range(20)
    ]
    got = read_poses(write_bag(bag_path(tmp_path, fmt), fmt, messages), "/amcl_pose")
    assert (
        got.frame_id == "map" and got.child_frame_id == "" and got.msgtype == POSE_WITH_COVARIANCE
    )
    assert np.array_equal(got.position, xyz) and np.array_equal(got.quaternion_xyzw, quat)
    assert np.array_equal(got.stamp_ns, T0 + np.arange(20))
    assert np.array_equal(got.receive_ns, T0 + 1000 * np.arange(20))


def test_read_poses_transform_stamped_single_child(tmp_path):
    store = typestore_for("rosbag2-sqlite3")
    messages = [
        (
            "/tool",
            TRANSFORM_STAMPED,
            T0 + k,
            transform_stamped_msg(store, 0, "world", "tcp", [k, 0, 0], [0, 1, 0, 0]),
        )
        for k in range(5)
    ]
    got = read_poses(write_bag(tmp_path / "bag", "rosbag2-sqlite3", messages), "/tool")
    assert got.child_frame_id == "tcp" and got.frame_id == "world"
    assert got.stamp_source == "receive time" and np.array_equal(got.stamp_ns, T0 + np.arange(5))


# --------------------------------------------------------------------------- #
# Bad bags
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes.bag", b"time,q1\n0.0,1.0\n"),
        ("notes.txt", b"hello"),
        ("noise.mcap", bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8))),
        ("empty.bag", b""),
        ("old.bag", b"#ROSBAG V1.2\n" + b"\0" * 100),
    ],
)
def test_not_a_bag(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    for call in (bag_files, bag_summary, lambda p: read_joint_states(p, UR10)):
        with pytest.raises(NotABagError, match="is not a bag") as info:
            call(path)
        assert str(path) in str(info.value) and "ROS 2 bag folder" in str(info.value)


def test_empty_folder_and_missing_path(tmp_path):
    with pytest.raises(NotABagError, match="no .db3 or .mcap storage file"):
        read_joint_states(tmp_path, UR10)
    (tmp_path / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    with pytest.raises(NotABagError):
        bag_files(tmp_path)
    with pytest.raises(FileNotFoundError, match="No such bag"):
        bag_summary(tmp_path / "nowhere.bag")
    assert issubclass(NotABagError, BagError) and issubclass(NotABagError, ValueError)


def _cut(path: Path, fraction: float, target: Path) -> Path:
    """Copy ``path`` (file, or a folder's storage file with its metadata) cut at ``fraction``."""
    if path.is_dir():
        target.mkdir()
        for f in path.iterdir():
            data = f.read_bytes()
            keep = data if f.name == "metadata.yaml" else data[: int(len(data) * fraction)]
            (target / f.name).write_bytes(keep)
        return target
    data = path.read_bytes()
    target.write_bytes(data[: int(len(data) * fraction)])
    return target


@pytest.mark.parametrize("fmt", ["rosbag1", "mcap"])
def test_truncated_bag_gives_its_intact_prefix(tmp_path, fmt, caplog):
    stamps, receive, q, dq, _ = _log(1000)
    path = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, stamps, UR10, q, dq, receive_ns=receive, chunk_bytes=8192
    )
    cut = _cut(path, 0.5, tmp_path / f"cut{path.suffix}")
    with caplog.at_level(logging.WARNING, logger="figaroh.data.bag_reader"):
        got = read_joint_states(cut, UR10)
    k = len(got.stamp_ns)
    assert 300 < k < 700
    assert np.array_equal(got.position, q[:k]) and np.array_equal(got.velocity, dq[:k])
    assert np.array_equal(got.stamp_ns, stamps[:k]) and np.array_equal(got.receive_ns, receive[:k])
    assert got.truncated.startswith(
        f"stopped after message {k} of topic /joint_states at t={receive[k - 1]} ns"
    )
    assert "truncated" in caplog.text and got.truncated in caplog.text
    summary = bag_summary(cut)
    assert summary.topic("/joint_states").count == k and summary.truncated is not None
    # a cut before the first message leaves nothing to read
    with pytest.raises(TruncatedBagError, match="cut short"):
        read_joint_states(_cut(path, 0.003, tmp_path / f"start{path.suffix}"), UR10)


@pytest.mark.parametrize("fmt", ["rosbag1", "mcap", "rosbag2-mcap"])
def test_a_bag_cut_anywhere_gives_a_flagged_prefix_or_a_truncated_bag_error(tmp_path, fmt):
    stamps, _, q, dq, _ = _log(300)
    path = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, stamps, UR10, q, dq, chunk_bytes=4096
    )
    outcomes = set()
    for i, fraction in enumerate(np.linspace(0.01, 0.99, 13)):
        cut = _cut(path, fraction, tmp_path / f"cut{i}{path.suffix}")
        try:
            got = read_joint_states(cut, UR10)
        except TruncatedBagError:
            outcomes.add("nothing")
            continue
        k = len(got.stamp_ns)
        assert got.truncated.startswith(f"stopped after message {k} of topic /joint_states")
        assert np.array_equal(got.position, q[:k]) and np.array_equal(got.velocity, dq[:k])
        assert bag_summary(cut).topic("/joint_states").count == k
        outcomes.add("prefix")
    assert outcomes == {"nothing", "prefix"}


def test_ros1_bag_cut_after_its_last_chunk_reads_every_message(tmp_path):
    """The index is written last: a bag cut inside it has all its messages."""
    stamps, _, q, _, _ = _log()
    path = write_joint_state_bag(tmp_path / "r.bag", "rosbag1", stamps, UR10, q)
    got = read_joint_states(_cut(path, 0.995, tmp_path / "cut.bag"), UR10)
    assert np.array_equal(got.position, q) and np.array_equal(got.stamp_ns, stamps)
    assert got.truncated.startswith(f"stopped after message {N} of topic /joint_states")


def test_truncated_ros2_mcap_folder_is_read_record_by_record(tmp_path):
    stamps, _, q, _, _ = _log()
    path = write_joint_state_bag(tmp_path / "bag", "rosbag2-mcap", stamps, UR10, q)
    got = read_joint_states(_cut(path, 0.99, tmp_path / "cut"), UR10)
    assert np.array_equal(got.position, q)
    assert got.truncated.startswith(f"stopped after message {N} of topic /joint_states")
    with pytest.raises(TruncatedBagError):  # its single chunk cut: no topic declared
        read_joint_states(_cut(path, 0.5, tmp_path / "half"), UR10)


def test_truncated_sqlite3_bag_names_the_recovery(tmp_path):
    stamps, _, q, _, _ = _log()
    path = write_joint_state_bag(tmp_path / "bag", "rosbag2-sqlite3", stamps, UR10, q)
    with pytest.raises(TruncatedBagError, match=r"\.recover"):
        read_joint_states(_cut(path, 0.5, tmp_path / "cut"), UR10)


def test_topic_with_no_message(tmp_path):
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = typestore_for("rosbag2-mcap")
    with Writer(tmp_path / "bag", version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        writer.add_connection("/joint_states", JOINT_STATE, typestore=store)
    with pytest.raises(BagTopicError, match="holds no message"):
        read_joint_states(tmp_path / "bag", UR10)
    assert bag_summary(tmp_path / "bag").topic("/joint_states").count == 0


def test_missing_ros_extra_is_named(tmp_path, monkeypatch):
    stamps, _, q, _, _ = _log(5)
    path = write_joint_state_bag(tmp_path / "bag", "rosbag2-mcap", stamps, UR10, q)
    monkeypatch.setitem(sys.modules, "rosbags.highlevel", None)
    with pytest.raises(MissingDependencyError, match=r"figaroh\[ros\]"):
        read_joint_states(path, UR10)


def test_import_does_not_load_rosbags():
    import subprocess

    code = (
        "import sys, figaroh.data.bag_reader\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rosbags', 'mcap', 'scipy')))"
    )
    src = str(Path(bag_reader.__file__).resolve().parents[2])
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {src!r})\n" + code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
