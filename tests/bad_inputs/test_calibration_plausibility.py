"""Implausible calibration data: the script still runs, a data check fails the verdict.

Each row edits the real UR10 calibration set (``../shared/data/ur10``, 23
postures, 6-DoF marker poses, 30 parameters; skipped when absent) the way a
careless user would, runs the plain API (``initialize()``, ``solve()``) as
figaroh 1.0.2 would run it, and checks the documented reaction: a warning
naming the cause and the fix, the named ``data_check:<name>`` guard failed and
``verify()`` with limits that the original data meet is ``fail``. The
original data pass every check and that verify.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from conftest import SHARED_DATA, load_example
from figaroh.calibration import base_calibration
from figaroh.calibration import calibration_tools as ct
from figaroh.tools.robot import Robot

_ur10 = load_example("ur10/calibration.py", "ur10_calibration_plausibility")
DATA = SHARED_DATA / "ur10" / "calibration.csv"
URDF = SHARED_DATA / "models" / "ur_description" / "urdf" / "ur10_robot.urdf"
#: Limits every run on the original data meets: only a data check can fail the verdict.
LIMITS = {"rmse": {"threshold": 10.0, "comparison": "max"}}
CHECKS = ("joint_limits", "measurement_units", "outlier_fraction", "identifiability")

_cache: dict = {}


def _skip_without_data() -> None:
    if not (DATA.is_file() and URDF.is_file()):
        pytest.skip(f"UR10 calibration data not found under {SHARED_DATA}")


def _robot() -> Robot:
    if "robot" not in _cache:
        _cache["robot"] = Robot(str(URDF), load_geometry=False)
    return _cache["robot"]


def _table() -> tuple:
    header = DATA.read_text().splitlines()[0]
    return header, np.loadtxt(DATA, delimiter=",", skiprows=1)


def _run(path: Path):
    calib = _ur10.make_calibrator(_robot(), path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "structurally singular", default cost
        calib.initialize()
        with contextlib.redirect_stdout(io.StringIO()):
            calib.solve(enable_logging=False)
    return calib


def _original():
    if "original" not in _cache:
        _cache["original"] = _run(DATA)
    return _cache["original"]


def _write(tmp_path: Path, table: np.ndarray) -> Path:
    header, _ = _table()
    path = tmp_path / "calibration.csv"
    np.savetxt(path, table, delimiter=",", header=header, comments="", fmt="%.17g")
    return path


def _consistent(q: np.ndarray) -> np.ndarray:
    """Poses the calibrated model of the original data predicts at postures ``q`` (N, 6)."""
    calib = _original()
    cfg = dict(calib.calib_config, NbSample=len(q))
    flat = ct.calc_updated_fkm(calib.model, calib.data, calib.var_, q, cfg)
    return np.hstack([ct.measured_values(flat, cfg, len(q))[:, 0, :], q])


def _millimetres(t):
    t[:, :3] *= 1000.0
    return t


def _orientation_degrees(t):
    t[:, 3:6] *= 180.0 / np.pi
    return t


def _joint_degrees(t):
    t[:, 6:] *= 180.0 / np.pi
    return t


def _wrist_constant(t):
    q = t[:, 6:].copy()
    q[:, 5] = q[0, 5]  # wrist_3_joint held at its first value, poses consistent with it
    return _consistent(q)


def _seven_poses(t):
    return t[:7]


def _one_posture_23_times(t):
    return np.repeat(t[:1], 23, axis=0)


def _every_sample_an_outlier(t):
    t[:, :3] += np.random.default_rng(0).normal(0.0, 0.2, (len(t), 3))  # 20 cm errors
    return t


def _case(check: str, edit: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], str]:
    def call(tmp_path: Path) -> str:
        _skip_without_data()
        _, table = _table()
        calib = _run(_write(tmp_path, edit(table.copy())))
        failed = {f.check for f in calib.data_checks.failed}
        assert check in failed, f"{check} did not fail: {calib.data_checks.findings}"
        assert calib.evaluation_metrics is not None  # the script ran to its numbers
        assert any(s.stage == "data" and s.status == "failed" for s in calib.stages)
        verdict = calib.verify(LIMITS, scope="execution")
        guard = {c.name: c for c in verdict.checks}[f"data_check:{check}"]
        assert guard.status == "fail" and guard.reason
        assert any(i.startswith(f"Data check {check} failed") for i in verdict.insights)
        return verdict.status

    return call


CASES = [
    BadInput(
        "positions_in_millimetres",
        _case("measurement_units", _millimetres),
        match=r"measurement_units failed: .*look like millimetres: divide the measured "
        r"positions by 1000",
        verdict="fail",
    ),
    BadInput(
        "orientations_in_degrees",
        _case("measurement_units", _orientation_degrees),
        match=r"measurement_units failed: .*beyond 2π rad: the orientations look like degrees: "
        r"convert the phix/phiy/phiz columns to radians",
        verdict="fail",
    ),
    BadInput(
        "joint_angles_in_degrees",
        _case("joint_limits", _joint_degrees),
        match=r"joint_limits failed: measured joint values lie outside the URDF joint limits: "
        r"shoulder_pan_joint reaches .*the joint angles look like degrees: convert the joint "
        r"columns of the calibration CSV to radians",
        verdict="fail",
    ),
    BadInput(
        "wrist_joint_held_constant",
        _case("identifiability", _wrist_constant),
        match=r"identifiability failed: .*joint wrist_3_joint never moves .*"
        r"d_px_wrist_3_joint.*move it across its range",
        verdict="fail",
    ),
    BadInput(
        "seven_poses_for_thirty_parameters",
        _case("identifiability", _seven_poses),
        match=r"identifiability failed: .*7 distinct postures × 6 measured components give 42 "
        r"independent equations for 30 parameters.*collect at least 10 distinct postures",
        verdict="fail",
    ),
    BadInput(
        "one_posture_23_times",
        _case("identifiability", _one_posture_23_times),
        match=r"identifiability failed: .*1 distinct posture \(22 of the 23 postures repeat "
        r"another.*figaroh postures",
        verdict="fail",
    ),
    BadInput(
        "every_sample_an_outlier",
        _case("outlier_fraction", _every_sample_an_outlier),
        match=r"outlier_fraction failed: 23 of 23 postures \(100%\) have a position error above "
        r"parameters.outlier_threshold = 0.02 m",
        verdict="fail",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_the_original_data_pass_every_check():
    _skip_without_data()
    calib = _original()
    assert [(f.check, f.passed) for f in calib.data_checks.findings] == [(c, True) for c in CHECKS]
    verdict = calib.verify(LIMITS, scope="execution")
    assert verdict.status == "pass"
    names = {c.name for c in verdict.checks}
    assert {f"data_check:{c}" for c in CHECKS} <= names


def test_the_checks_leave_the_numbers_alone(monkeypatch):
    """A run with the checks switched off gives the same (==) parameters and RMSE."""
    _skip_without_data()
    calib = _original()
    rerun = _ur10.make_calibrator(_robot(), DATA)
    ran = []
    # the checks do not run at all
    monkeypatch.setattr(base_calibration, "_check_inputs", lambda c: ran.append("inputs"))
    monkeypatch.setattr(base_calibration, "_check_fit", lambda c, result: ran.append("fit"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rerun.initialize()
        with contextlib.redirect_stdout(io.StringIO()):
            rerun.solve(enable_logging=False)
    assert ran == ["inputs", "inputs", "fit"]  # initialize, solve (no key stored), fit
    assert not rerun.data_checks.findings
    assert np.array_equal(rerun.var_, calib.var_)
    assert rerun.evaluation_metrics["rmse"] == calib.evaluation_metrics["rmse"]
