"""Data contract (figaroh.data): TrajectoryData, PoseObservations, sources, protocols, adoption."""

from __future__ import annotations

import csv
import hashlib
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest

import figaroh.data as fd
from figaroh.data import (
    DRIVE_KINDS,
    JOINT_FORCE,
    JOINT_TORQUE,
    MOTOR_CURRENT,
    MOTOR_TORQUE,
    DataSource,
    PoseObservations,
    Protocol,
    ProtocolSession,
    Session,
    TrajectoryData,
    TrajectoryDataError,
    file_sha256,
)
from figaroh.data.adoption import (
    adopt_trajectory,
    adopt_trajectory_for,
    data_stage_reason,
    trajectory_mask,
)
from figaroh.data.source import atomic_write_text
from figaroh.identification._pipeline.fit_rows import mask_fit_rows as mask_rows
from figaroh.identification.base_identification import BaseIdentification

UR10_JOINTS = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
)


def make_traj(n=50, names=("a", "b", "c"), seed=0, **kw):
    rng = np.random.default_rng(seed)
    nj = len(names)
    t = np.cumsum(rng.uniform(0.005, 0.015, n))
    args = dict(
        t=t,
        joint_names=names,
        q=rng.normal(size=(n, nj)),
        effort=rng.normal(size=(n, nj)),
        effort_kind=JOINT_TORQUE,
        effort_unit="N·m",
    )
    args.update(kw)
    return TrajectoryData(**args)


def assert_same(a: TrajectoryData, b: TrajectoryData):
    for f in ("t", "q", "effort", "mask", "sample_index"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    for f in ("dq", "ddq", "effort_raw"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)
    for f in (
        "joint_names",
        "effort_kind",
        "effort_unit",
        "clock",
        "origin",
        "effort_conversion",
        "effort_raw_kind",
        "effort_raw_unit",
    ):
        assert getattr(a, f) == getattr(b, f), f


# --------------------------------------------------------------------------
# exports and constants
# --------------------------------------------------------------------------


def test_package_exports():
    for name in (
        "DataSource",
        "Session",
        "file_sha256",
        "Protocol",
        "ProtocolSession",
        "TrajectoryData",
        "PoseObservations",
        "JOINT_TORQUE",
        "JOINT_FORCE",
        "MOTOR_CURRENT",
        "MOTOR_TORQUE",
        "LOAD_FRACTION",
        "DRIVE_KINDS",
    ):
        assert hasattr(fd, name), name
    assert DRIVE_KINDS == {"motor_current", "motor_torque", "load_fraction"}
    assert issubclass(TrajectoryDataError, ValueError)


# --------------------------------------------------------------------------
# TrajectoryData: construction and defaults
# --------------------------------------------------------------------------


def test_defaults_broadcast_and_immutability():
    d = make_traj(dq=np.zeros((50, 3)))
    assert d.n_samples == 50
    assert d.effort_kind == (JOINT_TORQUE,) * 3 and d.effort_unit == ("N·m",) * 3
    assert d.mask.dtype == bool and d.mask.all()
    np.testing.assert_array_equal(d.sample_index, np.arange(50))
    assert d.origin == {"q": "measured", "dq": "measured", "ddq": "absent"}
    assert d.clock == "recorded"
    with pytest.raises(ValueError):
        d.q[0, 0] = 1.0  # read-only
    with pytest.raises(AttributeError):
        d.clock = "assumed"  # frozen
    assert "n_samples=50" in repr(d)


def test_input_arrays_are_copied():
    q = np.ones((10, 1))
    d = TrajectoryData(np.arange(10.0), ("j",), q, q[:, 0], JOINT_TORQUE, "Nm")
    q[0, 0] = 5.0
    assert d.q[0, 0] == 1.0
    assert d.effort.shape == (10, 1)  # 1-D accepted for a single joint


def test_origin_override_and_validation():
    d = make_traj(origin={"dq": "derived:gradient", "effort": "measured"})
    assert d.origin["dq"] == "derived:gradient" and d.origin["effort"] == "measured"
    with pytest.raises(TrajectoryDataError, match="origin"):
        make_traj(origin={"dq": "guessed"})


def test_per_joint_kind_and_unit_lengths():
    d = make_traj(effort_kind=[JOINT_TORQUE, JOINT_FORCE, JOINT_TORQUE], effort_unit="Nm")
    assert d.effort_kind[1] == JOINT_FORCE
    with pytest.raises(TrajectoryDataError, match="effort_unit"):
        make_traj(effort_unit=["Nm", "Nm"])
    with pytest.raises(TrajectoryDataError, match="effort_kind"):
        make_traj(effort_kind="torque")


# --------------------------------------------------------------------------
# TrajectoryData: bad inputs
# --------------------------------------------------------------------------


def test_missing_timestamps():
    with pytest.raises(TrajectoryDataError, match=r"^t: timestamps are missing") as ei:
        make_traj(t=None)
    assert ei.value.field == "t"
    with pytest.raises(TrajectoryDataError, match="timestamps"):
        TrajectoryData.from_legacy(
            {"positions": np.zeros((5, 1)), "torques": np.zeros((5, 1))},
            ["j"],
            effort_kind=JOINT_TORQUE,
            effort_unit="Nm",
        )
    with pytest.raises(TrajectoryDataError, match="sample_period"):
        TrajectoryData.from_arrays(
            ["j"], np.zeros((5, 1)), np.zeros((5, 1)), effort_kind=JOINT_TORQUE, effort_unit="Nm"
        )


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("field", ["q", "dq", "ddq", "effort", "effort_raw"])
def test_non_finite_samples_name_column_and_row(field, bad):
    arr = np.ones((50, 3))
    arr[17, 1] = bad
    arr[30, 2] = bad
    kw = {field: arr}
    if field == "effort_raw":
        kw.update(effort_raw_kind=MOTOR_CURRENT, effort_raw_unit="A")
    with pytest.raises(TrajectoryDataError) as ei:
        make_traj(**kw)
    msg = str(ei.value)
    assert msg.startswith(f"{field}:")
    assert "column 1 ('b')" in msg and "row 17" in msg
    assert ei.value.field == field


def test_non_finite_time():
    t = np.arange(10.0)
    t[4] = np.nan
    with pytest.raises(TrajectoryDataError, match=r"^t: .*row 4"):
        make_traj(n=10, t=t)


def test_non_monotonic_time_says_where():
    t = np.arange(20.0) * 0.01
    t[12] = t[11]  # duplicate
    t[15] = t[13]  # goes back
    with pytest.raises(TrajectoryDataError, match=r"^t: time must be strictly increasing") as ei:
        make_traj(n=20, t=t)
    assert "t[12]" in str(ei.value) and "2 non-increasing steps" in str(ei.value)


def test_too_few_samples():
    with pytest.raises(TrajectoryDataError, match="at least 2"):
        make_traj(n=1)


def test_wrong_column_count_names_joints():
    with pytest.raises(TrajectoryDataError) as ei:
        make_traj(q=np.zeros((50, 2)))
    msg = str(ei.value)
    assert msg.startswith("q:") and "expected 3 columns" in msg and "got 2" in msg
    assert "['a', 'b', 'c']" in msg
    with pytest.raises(TrajectoryDataError, match="1-D array is only accepted for a single joint"):
        make_traj(effort=np.zeros(50))


def test_mismatched_sample_counts():
    with pytest.raises(TrajectoryDataError, match=r"^effort: has 49 samples .* t has 50"):
        make_traj(effort=np.zeros((49, 3)))


def test_joint_name_errors():
    with pytest.raises(TrajectoryDataError, match="duplicate joint names"):
        make_traj(names=("a", "a", "c"))
    with pytest.raises(TrajectoryDataError, match="at least one joint"):
        make_traj(names=())
    d = make_traj()
    with pytest.raises(TrajectoryDataError, match=r"joint_names: unknown joint\(s\) \['z'\]"):
        d.select_joints(["a", "z"])


def test_clock_mask_and_sample_index_validation():
    with pytest.raises(TrajectoryDataError, match="clock"):
        make_traj(clock="wall")
    with pytest.raises(TrajectoryDataError, match="mask: must be a bool array"):
        make_traj(mask=np.ones(50, dtype=int))
    with pytest.raises(TrajectoryDataError, match=r"mask: expected shape \(50,\)"):
        make_traj(mask=np.ones(49, dtype=bool))
    with pytest.raises(TrajectoryDataError, match="sample_index: must be strictly increasing"):
        make_traj(n=5, sample_index=[0, 2, 2, 3, 4])
    with pytest.raises(TrajectoryDataError, match="sample_index: must be an integer"):
        make_traj(n=5, sample_index=np.arange(5.0))
    d = make_traj(n=5, sample_index=[3, 4, 8, 9, 12])
    assert d.sample_index.tolist() == [3, 4, 8, 9, 12]


def test_effort_raw_needs_kind_and_unit():
    with pytest.raises(TrajectoryDataError, match="effort_raw_kind"):
        make_traj(effort_raw=np.zeros((50, 3)))


# --------------------------------------------------------------------------
# legacy dict
# --------------------------------------------------------------------------


def test_legacy_round_trip_every_sample():
    mask = np.ones(50, dtype=bool)
    mask[[3, 7]] = False
    d = make_traj(dq=np.full((50, 3), 2.0), mask=mask)
    raw = d.to_legacy()
    assert set(raw) == {"timestamps", "positions", "velocities", "accelerations", "torques"}
    assert raw["timestamps"].shape == (50, 1)
    assert raw["positions"].shape == (50, 3)  # the mask is NOT applied here
    assert raw["accelerations"] is None
    raw["positions"][0, 0] = 99.0  # a writable copy, the object is unaffected
    assert d.q[0, 0] != 99.0
    back = TrajectoryData.from_legacy(
        d.to_legacy(), d.joint_names, effort_kind=JOINT_TORQUE, effort_unit="N·m"
    ).with_mask(mask)
    assert_same(d, back)


def test_from_legacy_names_legacy_key():
    raw = {
        "timestamps": np.arange(10.0).reshape(-1, 1),
        "positions": np.zeros((10, 2)),
        "velocities": None,
        "accelerations": None,
        "torques": np.zeros((9, 2)),
    }
    with pytest.raises(TrajectoryDataError, match="'torques'.*effort: has 9 samples") as ei:
        TrajectoryData.from_legacy(raw, ["a", "b"], effort_kind=JOINT_TORQUE, effort_unit="Nm")
    assert ei.value.field == "effort"
    with pytest.raises(TypeError):
        TrajectoryData.from_legacy(raw, ["a", "b"])  # kind and unit are mandatory


def test_from_arrays_assumed_clock():
    d = TrajectoryData.from_arrays(
        ["j"],
        np.zeros((4, 1)),
        np.zeros((4, 1)),
        effort_kind=JOINT_TORQUE,
        effort_unit="Nm",
        sample_period=0.01,
        t0=1.0,
    )
    assert d.clock == "assumed"
    np.testing.assert_allclose(d.t, [1.0, 1.01, 1.02, 1.03])
    with pytest.raises(TrajectoryDataError, match="sample_period"):
        TrajectoryData.from_arrays(
            ["j"],
            np.zeros((4, 1)),
            np.zeros((4, 1)),
            effort_kind=JOINT_TORQUE,
            effort_unit="Nm",
            sample_period=0.0,
        )


def test_real_ur10_simulation_files_have_mismatched_counts(shared_data):
    """The shipped UR10 q/tau files have 100 and 98 rows: the contract refuses them."""
    q = np.loadtxt(
        shared_data / "ur10" / "identification_q_simulation.csv", delimiter=",", skiprows=1
    )
    tau = np.loadtxt(
        shared_data / "ur10" / "identification_tau_simulation.csv", delimiter=",", skiprows=1
    )
    with pytest.raises(TrajectoryDataError, match=r"effort: has 98 samples .* t has 100"):
        TrajectoryData.from_arrays(
            UR10_JOINTS, q, tau, effort_kind=JOINT_TORQUE, effort_unit="N·m", sample_period=0.01
        )
    d = TrajectoryData.from_arrays(
        UR10_JOINTS, q[:98], tau, effort_kind=JOINT_TORQUE, effort_unit="N·m", sample_period=0.01
    )
    assert d.n_samples == 98


# --------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------


def test_csv_round_trip_exact(tmp_path):
    rng = np.random.default_rng(3)
    mask = rng.uniform(size=40) > 0.2
    d0 = make_traj(
        n=40,
        dq=rng.normal(size=(40, 3)),
        ddq=rng.normal(size=(40, 3)),
        sample_index=np.arange(40) * 3 + 7,
        mask=mask,
        effort_kind=MOTOR_CURRENT,
        effort_unit="A",
        origin={"ddq": "derived:gradient"},
        source=DataSource(session=Session("s1", "2024-01-02")),
    )
    d = d0.converted(
        [1.5, 2.0, -3.0],
        0.25,
        effort_kind=JOINT_TORQUE,
        effort_unit="N·m",
        description="current x gain",
    )
    path = d.to_csv(tmp_path / "traj.csv")
    assert [p.name for p in tmp_path.iterdir()] == ["traj.csv"]  # no temp left behind
    back = TrajectoryData.from_csv(path)
    assert_same(d, back)
    assert back.source.adapter == "TrajectoryData.from_csv"
    assert back.source.files == {str(Path(path)): file_sha256(path)}
    assert back.source.session == Session("s1", "2024-01-02")
    # joint selection and reordering
    sub = TrajectoryData.from_csv(path, ["c", "a"])
    np.testing.assert_array_equal(sub.effort, d.effort[:, [2, 0]])
    assert sub.effort_raw_kind == (MOTOR_CURRENT,) * 2
    with pytest.raises(TrajectoryDataError, match=r"unknown joint\(s\) \['zz'\]"):
        TrajectoryData.from_csv(path, ["zz"])
    with pytest.raises(TrajectoryDataError, match="effort_unit: .* declares"):
        TrajectoryData.from_csv(path, effort_unit="Nm")


def test_csv_without_metadata(tmp_path):
    p = tmp_path / "plain.csv"
    p.write_text("t,q:j1,q:j2,effort:j1,effort:j2\n0,1,2,3,4\n0.1,1,2,3,4\n0.2,1,2,3,nan\n")
    with pytest.raises(TrajectoryDataError, match="effort_kind: .* does not declare"):
        TrajectoryData.from_csv(p)
    with pytest.raises(TrajectoryDataError, match=r"effort: .*'j2'.*row 2"):
        TrajectoryData.from_csv(p, effort_kind=JOINT_TORQUE, effort_unit="Nm")
    p.write_text("t,q:j1,q:j2,effort:j1\n0,1,2,3\n0.1,1,2,3\n")
    with pytest.raises(TrajectoryDataError, match=r"effort: .*missing columns \['effort:j2'\]"):
        TrajectoryData.from_csv(p, effort_kind=JOINT_TORQUE, effort_unit="Nm")
    p.write_text("q:j1,effort:j1\n1,3\n1,3\n")
    with pytest.raises(TrajectoryDataError, match=r"^t: .*no 't' column"):
        TrajectoryData.from_csv(p, effort_kind=JOINT_TORQUE, effort_unit="Nm")
    p.write_text("t,q:j1,effort:j1\n0,1,3\n0.1,,3\n")
    with pytest.raises(TrajectoryDataError, match="cannot parse"):
        TrajectoryData.from_csv(p, effort_kind=JOINT_TORQUE, effort_unit="Nm")
    with pytest.raises(FileNotFoundError):
        TrajectoryData.from_csv(tmp_path / "nope.csv")


def test_atomic_write_keeps_original_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    target.write_text("original")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new content")
    assert target.read_text() == "original"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        atomic_write_text(tmp_path / "missing_dir" / "x.txt", "x")


# --------------------------------------------------------------------------
# stacking, masks, conversion
# --------------------------------------------------------------------------


def test_stacked_effort_is_joint_major():
    d = make_traj(n=7)
    s = d.stacked_effort()
    for j in range(3):
        for i in range(7):
            assert s[j * 7 + i] == d.effort[i, j]
    m = np.ones(7, dtype=bool)
    m[[1, 5]] = False
    dm = d.with_mask(m)
    sm = dm.stacked_mask()
    assert sm.shape == (21,)
    for j in range(3):
        np.testing.assert_array_equal(sm[j * 7 : (j + 1) * 7], m)
    with pytest.raises(TrajectoryDataError, match="mask"):
        d.with_mask(m.astype(int))
    assert d.mask.all()  # with_mask returns a copy


def test_converted_records_and_keeps_first_raw():
    d = make_traj(effort_kind=MOTOR_CURRENT, effort_unit="A")
    gain = np.array([2.0, -1.0, 0.5])
    c1 = d.converted(gain, effort_kind=MOTOR_TORQUE, effort_unit="N·m", description="kt")
    np.testing.assert_allclose(c1.effort, d.effort * gain)
    assert c1.effort_conversion == "kt"
    np.testing.assert_array_equal(c1.effort_raw, d.effort)
    assert c1.effort_raw_kind == (MOTOR_CURRENT,) * 3 and c1.effort_raw_unit == ("A",) * 3
    c2 = c1.converted(
        10.0, [0.0, 1.0, 2.0], effort_kind=JOINT_TORQUE, effort_unit="N·m", description="reduction"
    )
    np.testing.assert_allclose(c2.effort, d.effort * gain * 10.0 + [0.0, 1.0, 2.0])
    assert c2.effort_conversion == "kt; reduction"
    np.testing.assert_array_equal(c2.effort_raw, d.effort)  # first recording kept
    assert c2.effort_raw_kind == (MOTOR_CURRENT,) * 3
    with pytest.raises(TrajectoryDataError, match="scale"):
        d.converted([1.0, 2.0], effort_kind=JOINT_TORQUE, effort_unit="Nm", description="x")
    with pytest.raises(TrajectoryDataError, match="offset"):
        d.converted(1.0, np.nan, effort_kind=JOINT_TORQUE, effort_unit="Nm", description="x")


# --------------------------------------------------------------------------
# check_effort against Pinocchio models
# --------------------------------------------------------------------------


def test_check_effort_ur10(ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    d = make_traj(names=UR10_JOINTS)
    d.check_effort(model)  # revolute joints, joint torque in N·m
    cur = make_traj(names=UR10_JOINTS, effort_kind=MOTOR_CURRENT, effort_unit="A")
    with pytest.raises(TrajectoryDataError, match=r"^Effort is not joint effort for: ") as ei:
        cur.check_effort(model)
    msg = str(ei.value)
    assert "shoulder_pan_joint (revolute): motor_current in A (declare a drive gain" in msg
    assert msg.count(";") == 5  # all six joints collected
    cur.check_effort(model, drive_gain_joints=UR10_JOINTS)
    bad = make_traj(names=("shoulder_pan_joint", "nope"), effort_unit=["N·m", "A"])
    with pytest.raises(ValueError, match="nope: not in the model"):
        bad.check_effort(model)
    force = make_traj(names=("elbow_joint",), effort_kind=JOINT_FORCE, effort_unit="N")
    with pytest.raises(ValueError, match=r"elbow_joint \(revolute\): joint_force in N$"):
        force.check_effort(model)


def test_check_effort_prismatic_tiago(tiago_urdf):
    model = pin.buildModelFromUrdf(str(tiago_urdf))
    names = ("torso_lift_joint", "arm_1_joint")
    ok = make_traj(names=names, effort_kind=[JOINT_FORCE, JOINT_TORQUE], effort_unit=["N", "Nm"])
    ok.check_effort(model)
    bad = make_traj(names=names, effort_kind=JOINT_TORQUE, effort_unit="N·m")
    with pytest.raises(ValueError, match=r"torso_lift_joint \(prismatic\): joint_torque in N·m"):
        bad.check_effort(model)


# --------------------------------------------------------------------------
# adoption by BaseIdentification
# --------------------------------------------------------------------------


class _Base:
    def __init__(self, model, active=None):
        self.model = model
        self.identif_config = {"active_joints": active or []}
        self.stages = []
        self.trajectory = "unset"

    def process_torque_data(self):
        return None


class _Override(_Base):
    def process_torque_data(self):
        return 1


def test_adopt_legacy_dict_unchanged(ur10_urdf):
    owner = _Base(pin.buildModelFromUrdf(str(ur10_urdf)))
    raw = {"timestamps": None}
    assert adopt_trajectory(raw) is raw
    assert adopt_trajectory_for(owner, raw) is raw
    assert owner.trajectory is None


def test_adopt_trajectory_checks(ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    d = make_traj(names=UR10_JOINTS)
    owner = _Base(model, list(UR10_JOINTS))
    raw = adopt_trajectory_for(owner, d, base=_Base)
    assert owner.trajectory is d
    np.testing.assert_array_equal(raw["torques"], d.effort)
    raw2 = adopt_trajectory_for(owner, d, attr="_val_trajectory")  # MRO-based override check
    assert owner._val_trajectory is d and raw2["positions"].shape == (50, 6)
    with pytest.raises(TypeError, match="converted"):
        adopt_trajectory_for(_Override(model), d, base=_Base)
    with pytest.raises(TypeError, match="converted"):
        adopt_trajectory_for(_Override(model), d)
    rev = list(reversed(UR10_JOINTS))
    with pytest.raises(ValueError, match="joint order") as ei:
        adopt_trajectory_for(_Base(model, rev), d)
    assert str(rev) in str(ei.value) and str(list(UR10_JOINTS)) in str(ei.value)
    cur = make_traj(names=UR10_JOINTS, effort_kind=MOTOR_CURRENT, effort_unit="A")
    with pytest.raises(ValueError, match="Effort is not joint effort"):
        adopt_trajectory_for(_Base(model), cur)


def test_trajectory_mask_and_truncate():
    assert trajectory_mask(None) is None
    d = make_traj(n=10)
    assert trajectory_mask(d) is None  # all valid == no mask
    m = np.ones(10, dtype=bool)
    m[[2, 8]] = False
    dm = d.with_mask(m)
    np.testing.assert_array_equal(trajectory_mask(dm), m)
    np.testing.assert_array_equal(trajectory_mask(dm, (1, 5)), m[1:5])
    assert trajectory_mask(dm, (3, 8)) is None  # masked samples cut away
    assert trajectory_mask(dm, (0, None)).shape == (10,)


def test_record_data_stage_reason():
    owner = SimpleNamespace(stages=None, trajectory=None, num_samples=40, _sample_mask=None)
    rec = BaseIdentification._record_data_stage(owner)
    assert rec.reason == "legacy dict"
    # the data stage may record more (data checks); these two are always there
    assert {k: rec.metrics[k] for k in ("samples", "masked_samples")} == {
        "samples": {"value": 40, "unit": ""},
        "masked_samples": {"value": 0, "unit": ""},
    }
    d = make_traj(effort_kind=[MOTOR_CURRENT, JOINT_TORQUE, JOINT_TORQUE], effort_unit="A")
    assert data_stage_reason(make_traj()) == (
        "TrajectoryData, clock recorded, effort ['joint_torque']"
    )
    conv = d.converted(2.0, effort_kind=JOINT_TORQUE, effort_unit="Nm", description="gain 2")
    assert data_stage_reason(d) == (
        "TrajectoryData, clock recorded, effort ['joint_torque', 'motor_current']"
    )
    owner.trajectory = conv
    owner._sample_mask = np.array([True, False, False, True])
    rec = BaseIdentification._record_data_stage(owner)
    assert rec.reason == "TrajectoryData, clock recorded, effort ['joint_torque'] (gain 2)"
    assert rec.metrics["masked_samples"]["value"] == 2
    assert len(owner.stages) == 1


@pytest.mark.parametrize("factor", [1, 3])
def test_mask_rows_matches_tiled_mask(factor):
    rng = np.random.default_rng(1)
    n, n_active = 30, 4
    mask = rng.uniform(size=n) > 0.3
    kept = mask[::factor]
    N = len(kept)
    tau = rng.normal(size=n_active * N)
    W = rng.normal(size=(n_active * N, 5))
    t2, W2 = mask_rows(tau, W, mask, n_active, factor)
    rows = [j * N + i for j in range(n_active) for i in range(N) if kept[i]]
    np.testing.assert_array_equal(t2, tau[rows])
    np.testing.assert_array_equal(W2, W[rows])
    assert mask_rows(tau, W, None, n_active)[0] is tau
    with pytest.raises(ValueError, match="cannot apply the sample mask"):
        mask_rows(tau[:-1], W[:-1], mask, n_active, factor)


# --------------------------------------------------------------------------
# DataSource and Protocol
# --------------------------------------------------------------------------


def test_file_sha256_and_source(tmp_path):
    p = tmp_path / "big.bin"
    payload = os.urandom(3 * (1 << 20) + 17)  # spans several 1 MiB blocks
    p.write_bytes(payload)
    assert file_sha256(p) == hashlib.sha256(payload).hexdigest()
    src = DataSource.from_files([p], adapter="x", session=Session("s"))
    assert src.files == {str(p): hashlib.sha256(payload).hexdigest()}
    assert src.session.id == "s" and "adapter='x'" in repr(src)
    with pytest.raises(FileNotFoundError):
        file_sha256(tmp_path / "missing")
    with pytest.raises(AttributeError):
        src.adapter = "y"


def test_protocol_load_and_verify(tmp_path):
    (tmp_path / "data").mkdir()
    a = tmp_path / "data" / "a.csv"
    b = tmp_path / "data" / "b.csv"
    a.write_text("1,2\n")
    b.write_text("3,4\n")
    yml = tmp_path / "protocol.yaml"
    yml.write_text(
        "name: demo\nversion: 2\nsessions:\n"
        "  - id: 2021-11-30-1544\n    role: training\n"
        f"    files: {{data/a.csv: {file_sha256(a)}}}\n"
        f"  - id: 7\n    role: validation\n    files: {{data/b.csv: {file_sha256(b)}}}\n"
        "  - id: s3\n    role: validation\n"
    )
    prot = Protocol.load(yml)
    assert prot.version == 2
    assert prot.session("7").role == "validation"  # ids stringified
    assert [s.id for s in prot.with_role("validation")] == ["7", "s3"]
    assert prot.session("s3").files == {}
    prot.verify(tmp_path)
    with pytest.raises(KeyError, match="Protocol demo: no session 'x'"):
        prot.session("x")
    a.write_text("changed\n")
    b.unlink()
    with pytest.raises(ValueError) as ei:
        prot.verify(tmp_path)
    assert str(ei.value) == (
        "Protocol demo v2: 2021-11-30-1544: data/a.csv does not match its sha256; "
        "7: data/b.csv is missing"
    )
    with pytest.raises(ValueError, match=r"Protocol p: duplicate session ids \['x'\]"):
        Protocol("p", 1, [ProtocolSession("x", "training"), ProtocolSession("x", "validation")])
    yml.write_text("name: [unclosed\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        Protocol.load(yml)


# --------------------------------------------------------------------------
# PoseObservations
# --------------------------------------------------------------------------


def _ur10_calib_config(model, measurability=(True,) * 6, nmark=1):
    ids = [model.getJointId(n) for n in UR10_JOINTS]
    return {
        "NbMarkers": nmark,
        "measurability": list(measurability),
        "calibration_index": int(sum(measurability)),
        "actJoint_idx": ids,
        "config_idx": [model.joints[i].idx_q for i in ids],
        "q0": np.full(model.nq, 0.123),
    }


def _read_columns(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


def test_pose_observations_real_ur10(shared_data, ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    cfg = _ur10_calib_config(model)
    path = shared_data / "ur10" / "calibration.csv"
    obs = PoseObservations.from_csv(path, model, cfg, del_list=[0, 5])
    cols = _read_columns(path)
    n = len(cols["x1"])
    assert obs.n_samples == n == 23
    assert obs.mask.sum() == n - 2 and not obs.mask[0] and not obs.mask[5]
    assert obs.source.adapter == "PoseObservations.from_csv"
    assert obs.point_names == ("1",)
    pee, q_meas = obs.to_legacy(model, cfg)
    keep = np.setdiff1d(np.arange(n), [0, 5])
    expected = np.concatenate(
        [cols[c][keep] for c in ("x1", "y1", "z1", "phix1", "phiy1", "phiz1")]
    )
    np.testing.assert_array_equal(pee, expected)
    full = PoseObservations.from_csv(path, model, cfg)
    assert full.to_legacy(model, cfg)[0].size == 6 * 23  # 138 entries
    assert q_meas.shape == (n - 2, model.nq)
    np.testing.assert_array_equal(q_meas[:, 2], cols["elbow_joint"][keep])
    assert "nq" not in cfg and cfg["NbMarkers"] == 1  # config untouched


def test_pose_observations_layout_two_markers(tmp_path, ur10_urdf):
    """PEE index (k·n_meas + c)·n_valid + s for two markers measuring x, y, z."""
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    meas = (True, True, True, False, False, False)
    cfg = _ur10_calib_config(model, meas, nmark=2)
    rng = np.random.default_rng(5)
    n = 6
    header = ["t", "x1", "y1", "z1", "x2", "y2", "z2", *UR10_JOINTS, "session_id"]
    data = rng.normal(size=(n, 12))
    p = tmp_path / "c.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for i in range(n):
            w.writerow([i * 0.1, *data[i], f"sess{i % 2}"])
    obs = PoseObservations.from_csv(p, model, cfg, del_list=[2])
    assert obs.session.tolist() == ["sess0", "sess1"] * 3
    assert obs.measurability.shape == (2, 6) and np.isnan(obs.values[:, :, 3:]).all()
    pee, q_meas = obs.to_legacy(model, cfg)
    valid = [0, 1, 3, 4, 5]
    nv = len(valid)
    for k in range(2):
        for c in range(3):
            for s_i, s in enumerate(valid):
                assert pee[(k * 3 + c) * nv + s_i] == data[s, k * 3 + c]
    np.testing.assert_array_equal(q_meas, data[valid][:, 6:12])
    sel = obs.select_points(["2"])
    assert sel.point_names == ("2",)
    np.testing.assert_array_equal(sel.values[:, 0, :3], data[:, 3:6])
    with pytest.raises(KeyError, match=r"\['7', '9'\]"):
        obs.select_points(["7", "9"])
    wrong = dict(cfg, actJoint_idx=list(reversed(cfg["actJoint_idx"])))
    with pytest.raises(ValueError, match="differs from the calibration's active joints"):
        obs.to_legacy(model, wrong)


def test_pose_observations_bad_inputs(tmp_path, ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    cfg = _ur10_calib_config(model, (True, True, True, False, False, False))
    p = tmp_path / "c.csv"
    p.write_text("x1,y1,elbow_joint\n1,2,3\n")
    with pytest.raises(KeyError) as ei:
        PoseObservations.from_csv(p, model, cfg)
    msg = str(ei.value)
    for c in ("z1", "shoulder_pan_joint", "wrist_3_joint"):
        assert c in msg
    rows = ["x1,y1,z1," + ",".join(UR10_JOINTS)]
    for i in range(4):
        rows.append(",".join(["1", "" if i == 2 else "2", "3"] + ["0.1"] * 6))
    p.write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"rows \[2\]"):
        PoseObservations.from_csv(p, model, cfg)
    obs = PoseObservations.from_csv(p, model, cfg, del_list=[2])  # masked, not deleted
    assert obs.n_samples == 4 and obs.to_legacy(model, cfg)[1].shape == (3, model.nq)
    with pytest.raises(ValueError, match="non-finite"):
        obs.with_mask(np.ones(4, dtype=bool))
    with pytest.raises(ValueError, match="constraint"):
        PoseObservations(("a",), np.zeros((3, 1)))
    c_only = PoseObservations(("a",), np.zeros((3, 1)), constraint="contact_gap")
    with pytest.raises(ValueError, match="constraint-only"):
        c_only.select_points(["1"])
    with pytest.raises(ValueError, match="sample_index"):
        PoseObservations(("a",), np.zeros((3, 1)), constraint="c", sample_index=[1, 1, 2])
    ok = PoseObservations(
        ("a",),
        np.zeros((3, 1)),
        constraint="c",
        sample_index=[5, 1, 2],
        source=DataSource(session=Session("S")),
    )
    assert ok.session.tolist() == ["S"] * 3
    with pytest.raises(ValueError, match="q: expected shape"):
        PoseObservations(("a", "b"), np.zeros((3, 1)), constraint="c")
