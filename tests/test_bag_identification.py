"""Identification from ROS bags gives the CSV path's numbers on the same samples.

Truth: the simulated UR10 log written once as a CSV file
(:func:`figaroh.cli.csv_identification.write_trajectory_csv`, 17 digits: an
exact round trip) and once as a bag with ``rosbags``' own writers (ROS 1,
ROS 2 sqlite3, ROS 2 MCAP, bare MCAP); :class:`CSVIdentification` on the
CSV and :class:`BagIdentification` on the bag must give the same base
parameters (to 1e-12). Bags with shuffled joints, extra joints, split topics,
jittered and dropped messages give their documented outcome; each bad bag its
named error.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from bag_writers import (
    ALL_FORMATS,
    JOINT_STATE,
    POSE_STAMPED,
    bag_path,
    joint_state_msg,
    pose_stamped_msg,
    write_bag,
    write_joint_state_bag,
)
from conftest import ROOT, load_example, run_cli
from figaroh.cli.bag_identification import BagIdentification
from figaroh.cli.csv_identification import CSVIdentification, write_trajectory_csv
from figaroh.data.bag_errors import (
    BagError,
    BagJointError,
    BagMessageTypeError,
    BagTimeBaseError,
    BagTopicError,
    EffortUnitError,
    NotABagError,
)

_sim = load_example("ur10/simulate.py", "ur10_simulate_bag_tests")
JOINTS = list(_sim.UR10_JOINTS)
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
N = 600
T0 = 1_700_000_000_000_000_000
PERIOD = 10_000_000  # 100 Hz [ns]


@pytest.fixture(scope="module")
def ur10():
    return _sim.load_ur10()


@pytest.fixture(scope="module")
def log(ur10):
    traj, tau = _sim.simulate_ur10(ur10, n_samples=N, noise_std=0.5, seed=5)
    stamps = T0 + PERIOD * np.arange(N, dtype=np.int64)
    t = (stamps - stamps[0]) * 1e-9
    return {"stamps": stamps, "t": t, "q": traj.q, "dq": traj.dq, "tau": tau}


def _solve(ident):
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False, verbose=False)
    return ident


@pytest.fixture(scope="module")
def csv_result(ur10, log, tmp_path_factory):
    path = write_trajectory_csv(
        tmp_path_factory.mktemp("csv") / "identification.csv",
        JOINTS,
        log["t"],
        log["q"],
        log["tau"],
        dq=log["dq"],
    )
    return _solve(CSVIdentification(ur10, CONFIG, data_dir=path))


def _bag_ident(ur10, bag, **kwargs):
    return _solve(BagIdentification(ur10, CONFIG, bag=bag, **kwargs))


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_each_bag_format_gives_the_csv_parameters(fmt, ur10, log, csv_result, tmp_path):
    bag = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, log["stamps"], JOINTS, log["q"], log["dq"], log["tau"]
    )
    ident = _bag_ident(ur10, bag)
    assert list(ident.params_base) == list(csv_result.params_base)
    np.testing.assert_allclose(ident.phi_base, csv_result.phi_base, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ident.trajectory.t, csv_result.trajectory.t)
    # the verdict carries the time-base check; the provenance names the bag, its topic and hashes
    assert ident.data_checks.facts()["data_check:time_base"][0] is True
    source = ident.trajectory.source
    assert source.adapter == "figaroh.data.bag_source.trajectory_from_bag"
    assert "topics /joint_states" in source.notes and "header.stamp" in source.notes
    assert source.files and all(len(sha) == 64 for sha in source.files.values())


def _shuffled_bag(path, fmt, log, rng):
    """Each message: the six joints in a random order, plus a gripper joint."""
    store_msgs = []

    def messages(store):
        for k in range(N):
            order = rng.permutation(7)
            names = [*JOINTS, "gripper_finger_joint"]
            q = np.append(log["q"][k], 0.01 * k)
            dq = np.append(log["dq"][k], 0.0)
            tau = np.append(log["tau"][k], 1.0)
            msg = joint_state_msg(
                store,
                int(log["stamps"][k]),
                [names[i] for i in order],
                q[order],
                dq[order],
                tau[order],
            )
            store_msgs.append(msg)
            yield ("/joint_states", JOINT_STATE, int(log["stamps"][k]), msg)

    from bag_writers import typestore_for

    return write_bag(path, fmt, list(messages(typestore_for(fmt))))


def test_shuffled_and_extra_joints_give_the_csv_parameters(ur10, log, csv_result, tmp_path):
    bag = _shuffled_bag(
        bag_path(tmp_path, "rosbag2-mcap"), "rosbag2-mcap", log, np.random.default_rng(0)
    )
    ident = _bag_ident(ur10, bag)
    np.testing.assert_allclose(ident.phi_base, csv_result.phi_base, rtol=1e-12, atol=1e-12)


def test_split_topics_are_merged_by_stamp(ur10, log, csv_result, tmp_path):
    from bag_writers import typestore_for

    fmt = "rosbag2-sqlite3"
    store = typestore_for(fmt)
    arm, wrist = slice(0, 3), slice(3, 6)
    messages = []
    for k in range(N):
        stamp = int(log["stamps"][k])
        for topic, cols in (("/arm/joint_states", arm), ("/wrist/joint_states", wrist)):
            msg = joint_state_msg(
                store,
                stamp,
                JOINTS[cols],
                log["q"][k, cols],
                log["dq"][k, cols],
                log["tau"][k, cols],
            )
            messages.append((topic, JOINT_STATE, stamp, msg))
    bag = write_bag(bag_path(tmp_path, fmt), fmt, messages)
    with pytest.raises(BagTopicError, match="/arm/joint_states.*/wrist/joint_states"):
        BagIdentification(ur10, CONFIG, bag=bag).initialize()  # two topics qualify: choose
    ident = _bag_ident(ur10, bag, topic=["/arm/joint_states", "/wrist/joint_states"])
    np.testing.assert_allclose(ident.phi_base, csv_result.phi_base, rtol=1e-12, atol=1e-12)


def _irregular_bag(tmp_path, log, stamps, keep):
    fmt = "rosbag2-mcap"
    return write_joint_state_bag(
        bag_path(tmp_path, fmt),
        fmt,
        stamps[keep],
        JOINTS,
        log["q"][keep],
        log["dq"][keep],
        log["tau"][keep],
    )


def test_jittered_stamps_are_refused_unless_resampled(ur10, log, csv_result, tmp_path):
    rng = np.random.default_rng(1)
    jitter = rng.integers(-3_000_000, 3_000_001, N)  # ±30 % of the 10 ms period
    bag = _irregular_bag(tmp_path, log, log["stamps"] + jitter, np.arange(N))
    with pytest.raises(BagTimeBaseError, match="resample"):
        BagIdentification(ur10, CONFIG, bag=bag).initialize()
    ident = _bag_ident(ur10, bag, resample="linear")
    assert ident.num_samples == N - 1 or ident.num_samples == N - 2  # grid inside the span
    found = ident.data_checks.facts()["data_check:time_base"]
    assert found[0] is True and "resampled (linear)" in found[1] and "jitter" in found[1]
    # resampling a ±3 ms jitter moves the fit, but not far: same model, same noise
    np.testing.assert_allclose(ident.phi_base[:3], csv_result.phi_base[:3], rtol=0.05, atol=0.5)


def test_dropped_messages_are_refused_unless_resampled(ur10, log, tmp_path):
    keep = np.ones(N, dtype=bool)
    keep[[50, 51, 52, 300, 451]] = False
    bag = _irregular_bag(tmp_path, log, log["stamps"], np.flatnonzero(keep))
    with pytest.raises(BagTimeBaseError, match=r"3 gaps \(largest 0\.04 s\)"):
        BagIdentification(ur10, CONFIG, bag=bag).initialize()
    ident = _bag_ident(ur10, bag, resample="cubic")
    assert ident.num_samples == N
    assert "3 gaps" in ident.data_checks.facts()["data_check:time_base"][1]


def test_out_of_order_and_duplicated_messages_are_named(ur10, log, tmp_path):
    order = np.arange(N)
    order[[100, 101]] = order[[101, 100]]
    stamps = np.concatenate([log["stamps"][order], log["stamps"][[200]]])
    idx = np.concatenate([order, [200]])
    fmt = "rosbag1"
    q, dq, tau = (log[key][idx] for key in ("q", "dq", "tau"))
    bag = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, stamps, JOINTS, q, dq, tau,
        receive_ns=T0 + PERIOD * np.arange(N + 1),
    )  # fmt: skip
    with pytest.raises(BagTimeBaseError, match=r"1 duplicate.*out of order|out of order"):
        BagIdentification(ur10, CONFIG, bag=bag).initialize()


# ---------------------------------------------------------------------------
# bad bags: named errors
# ---------------------------------------------------------------------------
def test_a_file_that_is_not_a_bag(ur10, tmp_path):
    fake = tmp_path / "log.bag"
    fake.write_text("t,q\n0,1\n")
    with pytest.raises(NotABagError, match="log.bag"):
        BagIdentification(ur10, CONFIG, bag=fake).initialize()


def test_no_such_topic_and_wrong_type(ur10, log, tmp_path):
    fmt = "rosbag2-mcap"

    def poses(store):
        stamps = [int(s) for s in log["stamps"][:5]]
        pose = [pose_stamped_msg(store, s, "world", [0, 0, 1], [0, 0, 0, 1]) for s in stamps]
        return [("/tool_pose", POSE_STAMPED, s, m) for s, m in zip(stamps, pose, strict=True)]

    bag = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, log["stamps"], JOINTS, log["q"], log["dq"], log["tau"],
        extra=poses,
    )  # fmt: skip
    with pytest.raises(BagTopicError, match=r"no topic '/nope'.*/joint_states"):
        BagIdentification(ur10, CONFIG, bag=bag, topic="/nope").initialize()
    with pytest.raises(BagMessageTypeError, match="PoseStamped"):
        BagIdentification(ur10, CONFIG, bag=bag, topic="/tool_pose").initialize()


def test_no_joint_of_the_model(ur10, log, tmp_path):
    fmt = "rosbag1"
    names = [f"other_{j}" for j in range(6)]
    bag = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, log["stamps"], names, log["q"], log["dq"], log["tau"]
    )
    with pytest.raises(BagJointError, match="shoulder_pan_joint"):
        BagIdentification(ur10, CONFIG, bag=bag).initialize()


def test_no_effort_field(ur10, log, tmp_path):
    fmt = "rosbag2-sqlite3"
    bag = write_joint_state_bag(bag_path(tmp_path, fmt), fmt, log["stamps"], JOINTS, log["q"])
    with pytest.raises(BagError, match="carry no effort"):
        BagIdentification(ur10, CONFIG, bag=bag).initialize()


def test_truncated_bag_reads_what_is_intact(ur10, log, tmp_path, caplog):
    fmt = "mcap"
    bag = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, log["stamps"], JOINTS, log["q"], log["dq"], log["tau"],
        chunk_bytes=4096,
    )  # fmt: skip
    data = bag.read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: len(data) // 2])
    ident = BagIdentification(ur10, CONFIG, bag=cut)
    ident.initialize()
    n = ident.num_samples
    assert 0 < n < N
    np.testing.assert_array_equal(ident.trajectory.q, log["q"][:n])  # the intact prefix, exact
    assert "truncated" in ident.trajectory.source.notes
    assert any("stopped" in r.getMessage() for r in caplog.records)


def test_motor_currents_need_ratios_and_motor_constants(ur10, log, csv_result, tmp_path):
    ratio, k_t = 100.0, np.array([0.1, 0.12, 0.09, 0.05, 0.05, 0.04])
    current = log["tau"] / (ratio * k_t)
    fmt = "rosbag2-mcap"
    bag = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, log["stamps"], JOINTS, log["q"], log["dq"], current
    )
    config = tmp_path / "motor.yaml"
    config.write_text(
        f"extends: {CONFIG}\n"
        "tasks:\n  identification:\n    data:\n      bag:\n        effort: motor_current\n"
    )
    with pytest.raises(
        EffortUnitError,
        match=r"give data\.bag\.motor_constants \[N·m/A\] for \[.shoulder_pan_joint",
    ):
        BagIdentification(ur10, config, bag=bag).initialize()
    constants = "".join(f"          {j}: {float(k)!r}\n" for j, k in zip(JOINTS, k_t, strict=True))
    config.write_text(
        f"extends: {CONFIG}\n"
        "tasks:\n  identification:\n    mechanics:\n"
        "      reduction_ratios: [100, 100, 100, 100, 100, 100]\n"
        "    data:\n      bag:\n        effort: motor_current\n        motor_constants:\n"
        + constants
    )
    ident = _solve(BagIdentification(ur10, config, bag=bag))
    assert ident.trajectory.effort_raw_kind[0] == "motor_current"
    np.testing.assert_allclose(ident.phi_base, csv_result.phi_base, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------


def test_cli_bag_info_and_identify(ur10, log, csv_result, tmp_path):
    fmt = "rosbag2-mcap"
    bag = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, log["stamps"], JOINTS, log["q"], log["dq"], log["tau"]
    )
    code, out, err = run_cli("bag", "info", bag)
    assert code == 0, err
    assert "/joint_states" in out and "sensor_msgs/msg/JointState" in out and f" {N} " in out
    assert "time span: 5.990 s" in out and "shoulder_pan_joint" in out
    code, out, err = run_cli("bag", "info", tmp_path)  # a folder that is not a bag
    assert code == 2 and "not" in err.lower()
    urdf = ur10.model_path if hasattr(ur10, "model_path") else _sim.ur10_urdf()
    code, out, err = run_cli(
        "identify", CONFIG, "--urdf", urdf, "--bag", bag, "--topic", "/joint_states",
        "--no-decimate", "--scope", "execution", "-o", tmp_path / "out", "-q",
    )  # fmt: skip
    assert code == 0, err
    rows = (tmp_path / "out" / "base_parameters.csv").read_text().splitlines()[1:]
    values = np.array([float(r.split(",")[1]) for r in rows])
    np.testing.assert_allclose(values, csv_result.phi_base, rtol=1e-12, atol=1e-12)
    code, _, err = run_cli(
        "identify", CONFIG, "--urdf", urdf, "--data", tmp_path, "--topic", "/joint_states"
    )
    assert code == 2 and "--topic reads a ROS bag" in err


def test_the_worked_example_runs(tmp_path):
    example = load_example("ur10/bag_identification.py", "ur10_bag_identification_example")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        ident = example.run(tmp_path, n_samples=800)
    assert "/joint_states" in out.getvalue() and "verdict:" in out.getvalue()
    assert Path(tmp_path / "identification_report.html").is_file()
    assert ident.trajectory.source.adapter == "figaroh.data.bag_source.trajectory_from_bag"


def test_bag_paths_of_the_configuration_are_read_beside_it(ur10, log, tmp_path, monkeypatch):
    fmt = "rosbag2-mcap"
    folder = tmp_path / "project"
    train = write_joint_state_bag(
        folder / "logs" / "train_bag", fmt, log["stamps"], JOINTS, log["q"], log["dq"], log["tau"]
    )
    config = folder / "robot.yaml"
    config.write_text(
        f"extends: {CONFIG}\n"
        "tasks:\n  identification:\n    data:\n      bag:\n"
        "        path: logs/train_bag\n        validation_path: logs/train_bag\n"
    )
    monkeypatch.chdir(tmp_path)  # the relative paths do not exist from here
    ident = BagIdentification(ur10, config)
    assert ident.bag_path == train
    assert ident.resolve_validation_source("logs/train_bag") == str(train)
    ident.initialize()
    assert ident.num_samples == N and ident._val_available


def test_a_held_out_csv_beside_a_training_bag(ur10, log, csv_result, tmp_path):
    """The held-out log may be a CSV file: read as CSVIdentification reads it (same metrics)."""
    fmt = "rosbag2-mcap"
    bag = write_joint_state_bag(
        bag_path(tmp_path, fmt), fmt, log["stamps"], JOINTS, log["q"], log["dq"], log["tau"]
    )
    held_out = str(csv_result.data_dir)
    ident = _bag_ident(ur10, bag, validation_bag=held_out)
    reference = CSVIdentification(ur10, CONFIG, data_dir=held_out)
    reference.identif_config["validation_data_file"] = held_out
    reference = _solve(reference)
    assert ident._val_available and ident._val_trajectory.source.adapter.endswith("csv")
    assert ident.result["validation_metrics"] == reference.result["validation_metrics"]
