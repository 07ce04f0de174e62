"""Calibration from ROS bags gives the CSV path's numbers on the same postures.

Truth: the simulated UR10 calibration set (known joint-placement errors,
:func:`simulate_ur10_calibration`) written as the calibration CSV, and as a
bag where the robot holds each posture for 0.6 s between 0.4 s moves, a
``PoseStamped`` (or ``/tf``) stream measuring the marker at 100 Hz (junk poses
while moving). The still postures found in the bag, averaged and paired with
the mean pose inside them, must give the CSV's calibrated parameters (to
1e-12), through the Python API and ``figaroh calibrate --bag``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import warnings

import numpy as np
import pinocchio as pin
import pytest

from bag_writers import (
    BAG_FORMATS,
    JOINT_STATE,
    POSE_STAMPED,
    TF_MESSAGE,
    bag_path,
    joint_state_msg,
    pose_stamped_msg,
    tf_message,
    transform_stamped_msg,
    typestore_for,
    write_bag,
)
from conftest import ROOT, load_example
from figaroh.cli import main as cli_main
from figaroh.cli.workflows import BagInput, run_calibration
from figaroh.data.bag_errors import BagError

_cal = load_example("ur10/calibration.py", "ur10_calibration_bag_tests")
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
T0 = 1_700_000_000_000_000_000
PERIOD = 10_000_000  # 100 Hz [ns]
HOLD, MOVE = 60, 40  # samples per still posture, per move


@pytest.fixture(scope="module")
def ur10():
    return _cal.Robot(_cal.ur10_urdf(), load_geometry=False)


@pytest.fixture(scope="module")
def postures(ur10, tmp_path_factory):
    """The training CSV and its rows: joint names, (n, 6) q, (n, 6) poses [m, rad]."""
    train, _, _ = _cal.simulate_ur10_calibration(
        tmp_path_factory.mktemp("cal"), robot=ur10, n_train=30, n_test=5
    )
    with open(train, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], np.array(rows[1:], dtype=float)
    return train, header[6:], body[:, 6:], body[:, :6]


def _timeline(q: np.ndarray):
    """Stamps and joint positions: hold each posture, move linearly to the next."""
    blocks, still = [], []
    for i in range(len(q)):
        blocks.append(np.repeat(q[i][None], HOLD, axis=0))
        still.append(np.ones(HOLD, dtype=bool))
        if i + 1 < len(q):
            s = np.arange(1, MOVE + 1)[:, None] / (MOVE + 1)
            blocks.append(q[i] + s * (q[i + 1] - q[i]))
            still.append(np.zeros(MOVE, dtype=bool))
    positions = np.concatenate(blocks)
    stamps = T0 + PERIOD * np.arange(len(positions), dtype=np.int64)
    posture = np.repeat(np.arange(len(q)), HOLD + MOVE)[: len(positions)]
    return stamps, positions, np.concatenate(still), posture


def _quaternion_xyzw(rpy: np.ndarray) -> np.ndarray:
    return pin.Quaternion(pin.rpy.rpyToMatrix(*rpy)).coeffs()  # x, y, z, w


def _write_calibration_bag(path, fmt, joints, q, poses, tf: bool = False):
    store = typestore_for(fmt)
    stamps, positions, still, posture = _timeline(q)
    messages = []
    for k, stamp in enumerate(stamps.tolist()):
        messages.append(
            (
                "/joint_states",
                JOINT_STATE,
                stamp,
                joint_state_msg(store, stamp, joints, positions[k]),
            )
        )
        i = posture[k]
        xyz, quat = (
            (poses[i, :3], _quaternion_xyzw(poses[i, 3:]))
            if still[k]
            else ([0, 0, 0], [0, 0, 0, 1])
        )
        if tf:
            transforms = [
                transform_stamped_msg(store, stamp, "mocap", "marker", xyz, quat),
                transform_stamped_msg(store, stamp, "mocap", "table", [1, 2, 3], [0, 0, 0, 1]),
            ]
            messages.append(("/tf", TF_MESSAGE, stamp + 1, tf_message(store, transforms)))
        else:
            pose = pose_stamped_msg(store, stamp, "mocap", xyz, quat)
            messages.append(("/tool_pose", POSE_STAMPED, stamp + 1, pose))
    return write_bag(path, fmt, messages)


def _calibrate(urdf, data, bag=None):
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_calibration(CONFIG, urdf, data, bag=bag, show_report=False)


@pytest.fixture(scope="module")
def csv_result(ur10, postures):
    return _calibrate(_cal.ur10_urdf(), postures[0])


@pytest.mark.parametrize("fmt", BAG_FORMATS)
def test_each_bag_format_gives_the_csv_calibration(fmt, postures, csv_result, tmp_path):
    _, joints, q, poses = postures
    bag = _write_calibration_bag(bag_path(tmp_path, fmt), fmt, joints, q, poses)
    calib = _calibrate(_cal.ur10_urdf(), None, BagInput(path=str(bag), pose_topic="/tool_pose"))
    assert calib.calib_config["NbSample"] == len(q)
    np.testing.assert_allclose(calib.q_measured, csv_result.q_measured, rtol=0, atol=1e-15)
    np.testing.assert_allclose(calib.PEE_measured, csv_result.PEE_measured, rtol=0, atol=1e-14)
    assert list(calib.calib_config["param_name"]) == list(csv_result.calib_config["param_name"])
    np.testing.assert_allclose(calib.var_, csv_result.var_, rtol=0, atol=1e-12)
    source = calib.observations.source
    assert source.adapter == "figaroh.data.bag_source.observations_from_bag"
    assert "pose topic /tool_pose" in source.notes and source.files


def test_tf_child_frame_is_chosen(postures, csv_result, tmp_path):
    _, joints, q, poses = postures
    fmt = "rosbag2-mcap"
    bag = _write_calibration_bag(bag_path(tmp_path, fmt), fmt, joints, q, poses, tf=True)
    with pytest.raises(Exception, match="marker.*table|table.*marker"):
        _calibrate(_cal.ur10_urdf(), None, BagInput(path=str(bag), pose_topic="/tf"))
    calib = _calibrate(
        _cal.ur10_urdf(), None, BagInput(path=str(bag), pose_topic="/tf", pose_frame="marker")
    )
    np.testing.assert_allclose(calib.var_, csv_result.var_, rtol=0, atol=1e-12)


def test_no_still_posture_and_no_pose_topic_are_named(postures, tmp_path):
    _, joints, q, poses = postures
    fmt = "rosbag2-sqlite3"
    bag = _write_calibration_bag(bag_path(tmp_path, fmt), fmt, joints, q, poses)
    with pytest.raises(Exception, match=r"data\.bag\.pose_topic"):
        _calibrate(_cal.ur10_urdf(), None, BagInput(path=str(bag)))
    with pytest.raises(Exception, match="no still posture"):
        _calibrate(
            _cal.ur10_urdf(),
            None,
            BagInput(path=str(bag), pose_topic="/tool_pose", still_window_s=2.0),
        )


def test_options_are_checked_by_name(tmp_path):
    from figaroh.data.bag_source import PoseBagOptions

    with pytest.raises(
        BagError, match=r"tasks\.calibration\.data\.bag: unknown key\(s\) \['pose'\]"
    ):
        PoseBagOptions.from_config({"pose": "/x"})
    with pytest.raises(BagError, match="still_window_s must be a positive number"):
        PoseBagOptions.from_config({"still_window_s": -1})


def test_cli_calibrate_from_a_bag(postures, csv_result, tmp_path):
    _, joints, q, poses = postures
    fmt = "rosbag1"
    bag = _write_calibration_bag(bag_path(tmp_path, fmt), fmt, joints, q, poses)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main.main(
            ["calibrate", str(CONFIG), "--urdf", _cal.ur10_urdf(), "--bag", str(bag),
             "--pose-topic", "/tool_pose", "--scope", "execution", "-o", str(tmp_path / "o"), "-q"]
        )  # fmt: skip
    assert code == 0, err.getvalue()
    rows = (tmp_path / "o" / "calibration_parameters.csv").read_text().splitlines()[1:]
    values = np.array([float(r.split(",")[1]) for r in rows])
    np.testing.assert_allclose(values, csv_result.var_, rtol=0, atol=1e-12)
