"""Bad identification data: a named error, or a loud warning and a failing verdict.

Each row feeds one bad trajectory (simulated UR10, 100 samples) through the
plain API — a ``BaseIdentification`` subclass whose loader returns arrays, or
``CSVIdentification`` on a CSV log — and checks the documented reaction:

* no meaningful result exists → a named ``IdentificationDataError`` (also a
  ``ValueError``) whose message names the field and the fix;
* figaroh 1.0.2 ran the script to completion → it still runs, a warning names
  the problem, stage ``data`` is ``failed`` and ``verify()`` (with an RMSE limit
  a clean run passes) is ``fail``, stopped by the ``data_check:<name>`` guard.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, Callable, Dict

import numpy as np
import pinocchio as pin
import pytest

from bad_inputs import _ur10_logs as _ur10
from bad_inputs._harness import BadInput, case_id, run_case
from bad_inputs._ur10_logs import ArrayIdentification, log_arrays, ur10_log, ur10_robot
from figaroh.cli.csv_identification import CSVIdentification, write_trajectory_csv
from figaroh.errors import FigarohError
from figaroh.identification.base_identification import BaseIdentification
from figaroh.identification.exceptions import IdentificationConfigError, IdentificationDataError
from figaroh.identification.quality_report import format_quality_report

N = 100
#: An RMSE limit [N·m] every clean run meets: only a data check can fail the verdict.
LIMITS = {"rmse": {"threshold": 100.0, "comparison": "max"}}


def _clean() -> Dict[str, np.ndarray]:
    return ur10_log(N)


def _robot():
    return ur10_robot()


def _arrays(edit: Callable[[dict], Any] | None = None) -> dict:
    return log_arrays(N, edit)


#: A self-contained UR10 identification config (no ``extends``: cheap to parse).
CONFIG_TEXT = """\
robot:
  name: ur10
  properties:
    joints:
      active_joints:
        - shoulder_pan_joint
        - shoulder_lift_joint
        - elbow_joint
        - wrist_1_joint
        - wrist_2_joint
        - wrist_3_joint
    coupling:
      has_coupled_wrist: false
tasks:
  identification:
    enabled: true
    problem:
      use_joint_torques: true
      model_components: {friction: true, actuator_inertia: false, joint_offset: false}
    signal_processing:
      sampling_frequency: 100.0        # [Hz]
      cutoff_frequency: 10.0           # [Hz]
      filter_order: 4
"""


def _config(tmp_path: Path, old: str = "", new: str = "") -> Path:
    """:data:`CONFIG_TEXT` with ``old`` replaced by ``new``."""
    text = CONFIG_TEXT
    if old:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "ur10.yaml"
    path.write_text(text)
    return path


def _solve(ident: BaseIdentification, scope: str = "execution") -> str:
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False)
    verdict = ident.verify(thresholds=LIMITS, scope=scope)
    if verdict.status == "fail":
        stopped = [c for c in verdict.checks if c.status == "fail"]
        assert stopped and all(c.reason for c in stopped), verdict.checks
        assert ident.stages[0].stage == "data" and ident.stages[0].status == "failed"
    return verdict.status


def _arrays_run(edit=None, config_edit: tuple = (), robot=None, scope="execution"):
    def call(tmp_path: Path) -> str:
        config = _config(tmp_path, *config_edit)
        ident = ArrayIdentification(robot() if robot else _robot(), config, _arrays(edit))
        return _solve(ident, scope)

    return call


def _csv_run(edit=None, columns: int = 6, mask=None, missing: bool = False):
    def call(tmp_path: Path) -> str:
        d = _arrays(edit)
        joints = list(_ur10.UR10_JOINTS)
        path = tmp_path / "log" / "identification.csv"
        if not missing:
            write_trajectory_csv(
                path,
                joints[:columns],
                d["timestamps"][:, 0],
                d["positions"][:, :columns],
                d["torques"][:, :columns],
                dq=d["velocities"][:, :columns],
            )
        if mask is not None:
            lines = path.read_text().splitlines()
            lines = [lines[0] + ",mask"] + [f"{row},{int(mask)}" for row in lines[1:]]
            path.write_text("\n".join(lines) + "\n")
        ident = CSVIdentification(_robot(), _config(tmp_path), data_dir=path.parent)
        return _solve(ident)

    return call


def _set(key, index, value):
    def edit(d):
        d[key][index] = value

    return edit


def _still_joint(d):
    d["positions"][:, 5] = 0.3
    d["velocities"][:, 5] = 0.0


def _nothing_moves(d):
    d["positions"][:] = 0.2
    d["velocities"][:] = 0.0


def _bad_inertia(kind: str):
    def robot():
        r = _ur10.load_ur10()
        old = r.model.inertias[3]
        if kind == "mass":
            r.model.inertias[3] = pin.Inertia(-abs(old.mass), old.lever, old.inertia)
        else:
            bad = old.copy()
            bad.inertia = np.diag([-0.1, 0.2, 0.2])  # pinocchio's constructor would refuse it
            r.model.inertias[3] = bad
        return r

    return robot


def _validation_is_training(tmp_path: Path) -> str:
    """README pattern: ``data_source`` ignored, so the held-out set is the training set."""
    ident = ArrayIdentification(_robot(), _config(tmp_path), _arrays())
    ident.identif_config["validation_data_file"] = "held_out.csv"
    status = _solve(ident, scope="prediction")
    verdict = ident.verify(thresholds=LIMITS, scope="prediction")
    check = {c.name: c for c in verdict.checks}["independent_validation"]
    assert check.status == "fail" and "identical" in check.reason
    assert ident.result["validation_metrics"]["validation_source"] != "validation_data"
    assert "separate set" not in format_quality_report(ident)
    assert verdict.splits["validation_source"] == "duplicates_training"
    return status


def _renamed_joint(tmp_path: Path) -> str:
    """A 1.0.2 script edits ``identif_config["active_joints"]`` after construction."""
    ident = ArrayIdentification(_robot(), _config(tmp_path), _arrays())
    ident.identif_config["active_joints"][0] = "shoulder pan_joint"
    return _solve(ident)


def _validation_contains_training(tmp_path: Path) -> str:
    """``data_source`` ignored and the training rows truncated: the held-out set contains them."""
    ident = ArrayIdentification(_robot(), _config(tmp_path), _arrays())
    ident.identif_config["validation_data_file"] = "held_out.csv"
    ident.initialize(truncate=(20, 80))
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False)
    return ident.verify(thresholds=LIMITS, scope="execution").status


def _clean_passes(tmp_path: Path) -> str:
    ident = ArrayIdentification(_robot(), _config(tmp_path), _arrays())
    status = _solve(ident)
    assert ident.stages[0].status == "ok" and not ident.data_checks.failed
    return status


def _separate_validation_passes(tmp_path: Path) -> str:
    """A genuinely different held-out trajectory is independent."""
    robot = _robot()
    traj, tau = _ur10.simulate_ur10(robot, n_samples=N, noise_std=0.5, seed=4)
    other = {
        "timestamps": traj.t[:, None],
        "positions": traj.q,
        "velocities": traj.dq,
        "accelerations": None,
        "torques": tau,
    }

    class TwoSets(ArrayIdentification):
        def load_trajectory_data(self, data_source=None):
            return dict(other if data_source else self.arrays)

    ident = TwoSets(robot, _config(tmp_path), _arrays())
    ident.identif_config["validation_data_file"] = "held_out"
    status = _solve(ident)
    assert ident.result["validation_metrics"]["validation_source"] == "validation_data"
    return status


DataError = (IdentificationDataError, ValueError, FigarohError)

CASES = [
    # ------------------------------------------------ named errors
    BadInput("no_joint_moved", _arrays_run(_nothing_moves), DataError, r"no joint moved"),
    BadInput(
        "every_torque_zero",
        _arrays_run(_set("torques", slice(None), 0.0)),
        DataError,
        r"every torque is zero",
    ),
    BadInput(
        "every_torque_constant",
        _arrays_run(_set("torques", slice(None), 4.0)),
        DataError,
        r"every torque is constant",
    ),
    BadInput(
        "torque_cell_1e308",
        _arrays_run(_set("torques", (7, 2), 1e308)),
        DataError,
        r"'torques' contains an overflowing value.*sample 7, joint elbow_joint",
    ),
    BadInput(
        "velocity_cell_inf",
        _arrays_run(_set("velocities", (3, 1), np.inf)),
        DataError,
        r"'velocities' contains NaN/inf.*shoulder_lift_joint",
        already_good=True,
    ),
    BadInput(
        "torque_cell_nan",
        _arrays_run(_set("torques", (0, 0), np.nan)),
        DataError,
        r"'torques' contains NaN/inf.*shoulder_pan_joint",
        already_good=True,
    ),
    BadInput(
        "positions_as_strings",
        _arrays_run(lambda d: d.__setitem__("positions", [["a"] * 6] * N)),
        DataError,
        r"'positions' must hold numbers",
    ),
    BadInput(
        "mask_excludes_every_sample",
        _csv_run(mask=False),
        DataError,
        r"mask excludes every one of the 100 samples",
    ),
    BadInput(
        "joint_name_with_space",
        _arrays_run(config_edit=("- shoulder_pan_joint", "- shoulder pan_joint")),
        IdentificationConfigError,
        r"'shoulder pan_joint'.*shoulder_pan_joint",
        already_good=True,
    ),
    BadInput(
        "active_joint_with_space_set_in_code",
        _renamed_joint,
        IdentificationConfigError,
        r"unknown active joint.*'shoulder pan_joint'.*the model's joints are.*shoulder_pan_joint",
    ),
    BadInput(
        "torque_fit_joint_with_space",
        _arrays_run(
            config_edit=(
                "      use_joint_torques: true\n",
                "      use_joint_torques: true\n      torque_fit_joints: [wrist 1_joint]\n",
            )
        ),
        ValueError,
        r"'wrist 1_joint'.*wrist_1_joint",
        already_good=True,
    ),
    BadInput(
        "timestamps_not_increasing",
        _arrays_run(_set("timestamps", (10, 0), 0.0)),
        DataError,
        r"strictly increasing",
        already_good=True,
    ),
    BadInput(
        "timestamps_missing",
        _arrays_run(lambda d: d.__setitem__("timestamps", None)),
        DataError,
        r"Timestamps are required",
        already_good=True,
    ),
    BadInput(
        "torques_missing",
        _arrays_run(lambda d: d.__setitem__("torques", None)),
        DataError,
        r"'torques' is required",
        already_good=True,
    ),
    BadInput(
        "wrong_column_count",
        _arrays_run(lambda d: d.__setitem__("positions", d["positions"][:, :5])),
        DataError,
        r"'positions' has 5 columns but there are 6 active joints",
        already_good=True,
    ),
    BadInput(
        "csv_missing_file",
        _csv_run(missing=True),
        (FileNotFoundError, FigarohError),
        r"identification\.csv|log",
        already_good=True,
    ),
    BadInput(
        "csv_wrong_column_count",
        _csv_run(columns=5),
        (ValueError, FigarohError),
        r"wrist_3_joint",
        already_good=True,
    ),
    # ------------------------------------------------ warning + failing verdict
    BadInput(
        "one_joint_still",
        _arrays_run(_still_joint),
        None,
        r"joint wrist_3_joint did not move: its parameters were dropped",
        "fail",
    ),
    BadInput(
        "timestamps_in_ms",
        _arrays_run(lambda d: d.__setitem__("timestamps", d["timestamps"] * 1000)),
        None,
        r"median sampling interval.*10 s.*100 Hz.*milliseconds",
        "fail",
    ),
    BadInput(
        "config_sampling_frequency_1000_on_100hz",
        _arrays_run(
            config_edit=("sampling_frequency: 100.0        # [Hz]", "sampling_frequency: 1000.0")
        ),
        None,
        r"0\.01 s \(100 Hz\).*configured sampling frequency is 1000 Hz",
        "fail",
    ),
    BadInput(
        "implausible_torque",
        _arrays_run(_set("torques", (20, 1), 2e5)),
        None,
        r"implausible magnitudes.*torque.*shoulder_lift_joint.*max_abs_torque",
        "fail",
    ),
    BadInput(
        "implausible_velocity",
        _arrays_run(_set("velocities", (slice(None), 0), _clean()["dq"][:, 0] * 300.0)),
        None,
        r"implausible magnitudes.*velocity.*shoulder_pan_joint.*max_abs_velocity",
        "fail",
    ),
    BadInput(
        "configured_torque_bound",
        _arrays_run(
            config_edit=(
                "    signal_processing:\n      sampling_frequency: 100.0",
                "    data_checks: {max_abs_torque: 10.0}\n"
                "    signal_processing:\n      sampling_frequency: 100.0",
            )
        ),
        None,
        r"above data_checks\.max_abs_torque = 10",
        "fail",
    ),
    BadInput(
        "validation_identical_to_training",
        _validation_is_training,
        None,
        r"validation data is identical to the training data",
        "fail",
    ),
    BadInput(
        "validation_contains_truncated_training",
        _validation_contains_training,
        None,
        r"validation data overlaps the training data",
        "fail",
    ),
    BadInput(
        "urdf_negative_mass",
        _arrays_run(robot=_bad_inertia("mass")),
        None,
        r"joint elbow_joint has mass -[0-9.]+ kg < 0",
        "fail",
    ),
    BadInput(
        "urdf_inertia_not_positive_definite",
        _arrays_run(robot=_bad_inertia("inertia")),
        None,
        r"elbow_joint has an inertia that is not positive definite",
        "fail",
    ),
    # ------------------------------------------------ clean data still passes
    BadInput("clean_data_passes", _clean_passes, None, "", "pass", already_good=True),
    BadInput(
        "separate_validation_passes",
        _separate_validation_passes,
        None,
        "",
        "pass",
        already_good=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_identification_data(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)
