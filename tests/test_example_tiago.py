"""TIAGo identification example on the real torso + arm log (shared data).

The fit uses rows [921, 5600) of the log; rows [5600, 6791) — the end of the
exciting motion — are held out and must be predicted better by the identified
model than by the nominal URDF model.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy import signal

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tiago"

# Loaded from its file under its own name (no sys.path entry): every example
# ships an ``identification.py``, and ``import identification`` would return
# whichever example was imported first.
_spec = importlib.util.spec_from_file_location(
    "tiago_identification", EXAMPLE / "identification.py"
)
tiago = importlib.util.module_from_spec(_spec)
sys.modules["tiago_identification"] = tiago
_spec.loader.exec_module(tiago)

from figaroh.identification.exceptions import (  # noqa: E402
    IdentificationConfigError,
    IdentificationDataError,
)

ARM = ["arm_1_joint", "arm_2_joint", "arm_3_joint", "arm_4_joint"]
TRAIN = (921, 5600)
VALID = (5600, 6791)
# Spec §4.1 drive constants (independent of the YAML the example reads).
REDUCTION = [1, 100, 100, 100, 100, 336, 336, 336]
KMOTOR = [1, 0.136, 0.136, -0.087, -0.087, -0.0613, -0.0613, -0.0613]


@pytest.fixture(scope="module")
def tiago_dir(shared_data):
    folder = shared_data / "tiago"
    if not (folder / "identification" / "tiago_effort.csv").is_file():
        pytest.skip("TIAGo identification log not in the shared data")
    return folder


@pytest.fixture(scope="module")
def urdf(tiago_dir):
    return tiago_dir / "urdf" / tiago.DEFAULT_URDF


@pytest.fixture(scope="module")
def solved(tiago_dir):
    return tiago.run(tiago_dir)


def _raw_log(tiago_dir, name):
    return np.loadtxt(tiago_dir / "identification" / name, delimiter=",", skiprows=1)


def _ident(urdf, tiago_dir, config=tiago.DEFAULT_CONFIG):
    robot = tiago.load_tiago_robot(urdf)
    return tiago.TiagoIdentification(robot, config, data_dir=tiago_dir / "identification")


# ---------------------------------------------------------------------------
# end to end on the real data
# ---------------------------------------------------------------------------


def test_held_out_prediction_beats_nominal_urdf(solved):
    val = solved.result["validation_metrics"]
    assert val["validation_source"] == "validation_data"
    assert val["n_val_samples"] == VALID[1] - VALID[0]
    assert val["joint_names"] == ARM
    assert np.isfinite(val["rmse_identified"]) and np.isfinite(val["rmse_nominal"])
    assert val["improvement_pct"] > 0
    for name in ARM:
        joint = val["per_joint"][name]
        assert joint["rmse_identified"] < joint["rmse_nominal"], name
        assert joint["r2"] > 0, name
    assert np.all(np.isfinite(solved.phi_base))
    assert np.isfinite(solved.result["condition number"])
    assert len(solved.phi_base) == len(solved.params_base)
    assert [(s.stage, s.status) for s in solved.stages] == [
        ("data", "ok"),
        ("fit", "ok"),
        ("validation", "ok"),
    ]


def test_nominal_baseline_is_the_full_urdf_rigid_body_model(solved, urdf):
    """The nominal validation efforts are Pinocchio's rnea of the unreduced URDF."""
    full = pin.buildModelFromUrdf(str(urdf))
    data = full.createData()
    val = solved._val_processed_data
    names = list(solved.identif_config["active_joints"])
    iq = [full.joints[full.getJointId(n)].idx_q for n in names]
    iv = [full.joints[full.getJointId(n)].idx_v for n in names]
    red = solved.model
    rq = [red.joints[red.getJointId(n)].idx_q for n in names]
    rv = [red.joints[red.getJointId(n)].idx_v for n in names]
    nominal = solved.result["validation_metrics"]["tau_nominal_per_joint"]
    for i in range(0, solved._val_num_samples, 97):
        q = pin.neutral(full)
        v = np.zeros(full.nv)
        a = np.zeros(full.nv)
        q[iq] = val["positions"][i, rq]
        v[iv] = val["velocities"][i, rv]
        a[iv] = val["accelerations"][i, rv]
        tau = pin.rnea(full, data, q, v, a)
        for name in ARM:
            k = names.index(name)
            assert nominal[name][i] == pytest.approx(tau[iv[k]], abs=1e-9)


def test_torques_follow_the_drive_table(solved, tiago_dir, urdf):
    effort = _raw_log(tiago_dir, "tiago_effort.csv")[TRAIN[0] : TRAIN[1], 1:]
    # subtree mass of the torso lift, summed link by link on the unreduced model
    full = pin.buildModelFromUrdf(str(urdf))
    torso = full.getJointId("torso_lift_joint")
    in_subtree = np.zeros(full.njoints, bool)
    in_subtree[torso] = True
    for j in range(torso + 1, full.njoints):  # parents precede children
        in_subtree[j] = in_subtree[full.parents[j]]
    mass = sum(full.inertias[j].mass for j in range(full.njoints) if in_subtree[j])
    expected = effort * np.multiply(REDUCTION, KMOTOR)
    expected[:, 0] += 9.81 * mass
    np.testing.assert_allclose(solved.processed_data["torques"], expected, rtol=1e-12)
    assert solved.identif_config["kmotor"]["arm_3_joint"] == -0.087
    assert solved.identif_config["reduction_ratio"]["arm_5_joint"] == 336


def test_split_is_disjoint_and_each_part_is_filtered_alone(solved, tiago_dir):
    t_train = solved.processed_data["timestamps"].ravel()
    t_val = solved._val_processed_data["timestamps"].ravel()
    assert t_train.size == TRAIN[1] - TRAIN[0] and t_val.size == VALID[1] - VALID[0]
    assert t_train.max() < t_val.min()
    log = _raw_log(tiago_dir, "tiago_position.csv")[:, 1:]
    params = solved.filter_config["filter_params"]
    assert params["f_sample"] == 100.0  # the log's rate, not upstream's 500

    def low_pass(x):  # figaroh 1.0.2: zero-padded medfilt, then (b, a) filtfilt
        b, a = signal.butter(params["nbutter"], params["f_butter"] / 50.0)
        pad = 3 * (max(len(b), len(a)) - 1)
        cols = [signal.medfilt(x[:, j], params["med_fil"]) for j in range(x.shape[1])]
        return np.column_stack([signal.filtfilt(b, a, c, padlen=pad) for c in cols])

    red = solved.model
    cols = [red.joints[red.getJointId(n)].idx_q for n in solved.identif_config["active_joints"]]
    got = solved._val_processed_data["positions"][:, cols]
    np.testing.assert_allclose(got, low_pass(log[VALID[0] : VALID[1]]), atol=1e-9)
    across = low_pass(log[TRAIN[0] : VALID[1]])[TRAIN[1] - TRAIN[0] :]
    assert np.abs(got - across).max() > 1e-6  # a filter across the split differs


def test_cli_prints_the_validation_summary(tiago_dir, capsys):
    assert tiago.main([str(tiago_dir)]) == 0
    out = capsys.readouterr().out
    assert "validation source : validation_data" in out
    assert "improvement" in out and "arm_4_joint" in out


# ---------------------------------------------------------------------------
# misuse is refused
# ---------------------------------------------------------------------------


def test_overlapping_or_training_folder_validation_refused(urdf, tiago_dir):
    ident = _ident(urdf, tiago_dir)
    ident.identif_config["validation_data_file"] = "range:5000:6000"
    with pytest.raises(IdentificationConfigError, match="overlaps the training rows"):
        ident.initialize()
    ident = _ident(urdf, tiago_dir)
    ident.identif_config["validation_data_file"] = str(tiago_dir / "identification")
    with pytest.raises(IdentificationConfigError, match="training log folder"):
        ident.initialize()
    ident = _ident(urdf, tiago_dir)
    ident.identif_config["validation_data_file"] = "range:abc"
    with pytest.raises(IdentificationConfigError, match="range:START:END"):
        ident.initialize()
    ident = _ident(urdf, tiago_dir)
    ident.identif_config["validation_data_file"] = "range:7000:9000"
    with pytest.raises(IdentificationConfigError, match="8022-sample log"):
        ident.initialize()


def test_row_range_parsing():
    assert tiago.parse_row_range("range:5600:6791") == (5600, 6791)
    assert tiago.parse_row_range(" range:6791: ") == (6791, None)
    for bad in ("range:10:5", "range:-1:4", "range::4", "5600:6791"):
        with pytest.raises(IdentificationConfigError):
            tiago.parse_row_range(bad)
    assert tiago.ranges_overlap((0, 10), (9, None))
    assert not tiago.ranges_overlap((0, 10), (10, 20))


def test_bad_drive_table_refused(urdf, tiago_dir, tmp_path):
    cases = {
        "arm_7_joint: null": "custom.drives.arm_7_joint",
        "arm_2_joint: {reduction_ratio: 100.0, kmotor: 0}": "arm_2_joint.kmotor",
        "head_1_joint: {reduction_ratio: 1.0, kmotor: 1.0}": "not active",
    }
    for i, (entry, message) in enumerate(cases.items()):
        config = tmp_path / f"bad_{i}.yaml"
        config.write_text(f'extends: "{tiago.DEFAULT_CONFIG}"\ncustom:\n  drives:\n    {entry}\n')
        with pytest.raises(IdentificationConfigError, match=message):
            _ident(urdf, tiago_dir, config)


# ---------------------------------------------------------------------------
# log reading and the reduced model
# ---------------------------------------------------------------------------


def test_columns_are_selected_by_joint_name(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("t,- b_joint_effort,extra,- a_joint_effort\n0.0,2,9,1\n0.01,4,9,3\n")
    t, values = tiago.read_joint_columns(path, ["a_joint", "b_joint"])
    np.testing.assert_array_equal(t, [[0.0], [0.01]])
    np.testing.assert_array_equal(values, [[1, 2], [3, 4]])
    with pytest.raises(IdentificationDataError, match="'c_joint' must match exactly one"):
        tiago.read_joint_columns(path, ["c_joint"])
    with pytest.raises(IdentificationDataError, match="exactly one"):
        tiago.read_joint_columns(path, ["_joint"])
    with pytest.raises(FileNotFoundError, match="TIAGo log file not found"):
        tiago.read_joint_columns(tmp_path / "none.csv", ["a_joint"])


def test_log_files_must_share_their_time_column(urdf, tiago_dir, tmp_path):
    ident = _ident(urdf, tiago_dir)
    names = ident.identif_config["active_joints"]
    for key, fname in tiago.DEFAULT_LOG_FILES.items():
        header = "t," + ",".join(f"- {n}_{key}" for n in names)
        t = np.arange(400) * 0.01 + (0.005 if key == "efforts" else 0.0)
        table = np.column_stack([t, np.zeros((400, len(names)))])
        np.savetxt(tmp_path / fname, table, delimiter=",", header=header, comments="")
    with pytest.raises(IdentificationDataError, match="share their time column"):
        ident.load_trajectory_data(str(tmp_path))


def test_reduced_model_has_the_full_model_dynamics(urdf):
    robot = tiago.load_tiago_robot(urdf)
    full = pin.buildModelFromUrdf(str(urdf))
    assert robot.model.nv == 8 and list(robot.model.names[1:]) == list(tiago.TIAGO_JOINTS)
    rng = np.random.default_rng(0)
    fq = [full.joints[full.getJointId(n)].idx_q for n in tiago.TIAGO_JOINTS]
    fv = [full.joints[full.getJointId(n)].idx_v for n in tiago.TIAGO_JOINTS]
    for _ in range(5):
        q, v, a = rng.uniform(-1, 1, (3, 8)) * [[0.3] + [1.0] * 7]
        qf, vf, af = pin.neutral(full), np.zeros(full.nv), np.zeros(full.nv)
        qf[fq], vf[fv], af[fv] = q, v, a
        expected = pin.rnea(full, full.createData(), qf, vf, af)[fv]
        got = pin.rnea(robot.model, robot.data, q, v, a)
        np.testing.assert_allclose(got, expected, atol=1e-10)
    with pytest.raises(IdentificationConfigError, match="no joint"):
        tiago.load_tiago_robot(urdf, keep_joints=["nonexistent_joint"])
