"""Physically implausible identification data: a named data check fails the verdict.

A simulated 2 000-sample UR10 log (example-robot-data URDF, torques from
Pinocchio's ``rnea`` plus friction and noise, exact analytic velocities) is fed
to the plain API — a ``BaseIdentification`` subclass whose loader returns
arrays — after one hostile edit. figaroh 1.0.2 ran each of them to completion,
so the script still runs and gets its numbers; the reaction owed is a warning
naming the field, the cause and the fix, stage ``data`` failed, and
``verify()`` (with an RMSE limit a clean run meets) failing on the guard
``data_check:<check>``. The clean log passes every check and the verdict.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any, Callable, Dict

import numpy as np
import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from bad_inputs._ur10_logs import ArrayIdentification, log_arrays, ur10_log, ur10_robot
from figaroh.identification._pipeline import plausibility

N = 2000
#: An RMSE limit [N·m] every clean run meets: only a data check can fail the verdict.
LIMITS = {"rmse": {"threshold": 100.0, "comparison": "max"}}
PLAUSIBILITY = ("joint_limits", "velocity_consistency", "excitation_retained")

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
      cutoff_frequency: 2.0            # [Hz]
      filter_order: 4
"""


def _robot():
    return ur10_robot()


def _clean() -> Dict[str, np.ndarray]:
    return ur10_log(N)


def _arrays(edit: Callable[[dict], Any] | None = None) -> dict:
    return log_arrays(N, edit)


def _config(tmp_path: Path, cutoff: float = 2.0) -> Path:
    path = tmp_path / "ur10.yaml"
    path.write_text(CONFIG_TEXT.replace("cutoff_frequency: 2.0 ", f"cutoff_frequency: {cutoff} "))
    return path


def _solve(tmp_path: Path, edit=None, cutoff: float = 2.0) -> ArrayIdentification:
    ident = ArrayIdentification(_robot(), _config(tmp_path, cutoff), _arrays(edit))
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False)
    return ident


def _failing(check: str, phrase: str, edit=None, cutoff: float = 2.0, also=()):
    """A run whose ``check`` fails with ``phrase``; only ``check`` (and ``also``) fail."""

    def call(tmp_path: Path) -> str:
        ident = _solve(tmp_path, edit, cutoff)
        failed = {f.check: f for f in ident.data_checks.failed}
        assert check in failed, ident.data_checks.findings
        assert set(failed) <= {check, *also}, failed
        assert re.search(phrase, failed[check].message, re.DOTALL), failed[check].message
        assert ident.stages[0].stage == "data" and ident.stages[0].status == "failed"
        verdict = ident.verify(thresholds=LIMITS, scope="execution")
        guard = {c.name: c for c in verdict.checks}[f"data_check:{check}"]
        assert guard.status == "fail" and guard.reason == failed[check].message
        assert not verdict.passed
        return verdict.status

    return call


def _degrees(d):
    d["positions"] = np.rad2deg(d["positions"])


def _swap_velocities(d):
    d["velocities"][:, [1, 2]] = d["velocities"][:, [2, 1]]


def _velocities_in_degrees(d):
    d["velocities"] = np.rad2deg(d["velocities"])


def _accelerations_swapped(d):
    d["accelerations"] = _clean()["ddq"][:, [0, 1, 2, 3, 5, 4]].copy()


def _clean_passes(tmp_path: Path) -> str:
    """The same log in the right units passes every check and the verdict."""
    ident = _solve(tmp_path, lambda d: d.__setitem__("accelerations", _clean()["ddq"].copy()))
    checks = {f.check: f for f in ident.data_checks.findings}
    assert all(checks[name].passed for name in (*PLAUSIBILITY, "acceleration_consistency"))
    assert not ident.data_checks.failed and ident.stages[0].status == "ok"
    verdict = ident.verify(thresholds=LIMITS, scope="execution")
    names = {c.name: c.status for c in verdict.checks}
    assert all(names[f"data_check:{name}"] == "pass" for name in PLAUSIBILITY)
    return verdict.status


class DegreesLog(ArrayIdentification):
    """The loader returns degrees (velocities in rad/s); the override converts the positions."""

    def process_kinematics_data(self, filter_config=None):
        raw = self.raw_data
        self.raw_data = {**raw, "positions": np.deg2rad(raw["positions"])}
        try:
            self.filter_kinematics_data(filter_config)
        finally:
            self.raw_data = raw  # the raw log stays in degrees


def _hook_converts_degrees(tmp_path: Path) -> str:
    """Raw positions in degrees converted by the subclass: the fitted signals are plausible.

    Only the conditioned signals enter the fit: the raw positions (degrees)
    disagree with the raw velocities, the conditioned ones do not.
    """
    ident = DegreesLog(_robot(), _config(tmp_path), _arrays(_degrees))
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False)
    assert not ident.data_checks.failed, ident.data_checks.failed
    return ident.verify(thresholds=LIMITS, scope="execution").status


def _low_cutoff_loses_parameters(tmp_path: Path) -> str:
    """0.01 Hz keeps fewer base parameters than 2 Hz, and only the cutoff check fails."""
    status = _failing(
        "excitation_retained",
        r"signal_processing\.cutoff_frequency = 0\.01 Hz.*removed the excitation.*"
        r"dominant frequency 0\.[12] Hz.*Raise signal_processing\.cutoff_frequency",
        cutoff=0.01,
    )(tmp_path)
    low = len(_solve(tmp_path, cutoff=0.01).params_base)
    assert low < len(_solve(tmp_path).params_base)
    return status


CASES = [
    BadInput(
        "positions_in_degrees",
        _failing(
            "joint_limits",
            r"'positions' outside the joint limits: joint shoulder_pan_joint reaches "
            r"-?[0-9.]+ rad, outside its URDF limits \[-6\.283, 6\.283\] rad.*"
            r"positions look like degrees: convert them to radians \(np\.deg2rad\)",
            _degrees,
            also=("velocity_consistency",),
        ),
        None,
        r"Data check joint_limits failed.*look like degrees",
        "fail",
    ),
    BadInput(
        "velocity_columns_swapped",
        _failing(
            "velocity_consistency",
            r"velocity columns of joints shoulder_lift_joint and elbow_joint look swapped",
            _swap_velocities,
        ),
        None,
        r"Data check velocity_consistency failed.*'velocities' are not the time derivative",
        "fail",
    ),
    BadInput(
        "velocities_in_degrees_per_second",
        _failing(
            "velocity_consistency",
            r"joints shoulder_pan_joint \(56\.3\), shoulder_lift_joint \(56\.3\), .*: "
            r"the velocities look like degrees \(×180/π\): convert the velocities to radians "
            r"\(np\.deg2rad\)",
            _velocities_in_degrees,
            also=("magnitudes",),
        ),
        None,
        r"Data check velocity_consistency failed",
        "fail",
    ),
    BadInput(
        "acceleration_columns_swapped",
        _failing(
            "acceleration_consistency",
            r"acceleration columns of joints wrist_2_joint and wrist_3_joint look swapped",
            _accelerations_swapped,
        ),
        None,
        r"Data check acceleration_consistency failed",
        "fail",
    ),
    BadInput(
        "cutoff_0.01_hz",
        _low_cutoff_loses_parameters,
        None,
        r"Data check excitation_retained failed.*cutoff_frequency",
        "fail",
    ),
    BadInput("clean_data_passes", _clean_passes, None, "", "pass", already_good=True),
    BadInput(
        "degrees_converted_by_the_subclass_pass",
        _hook_converts_degrees,
        None,
        "",
        "pass",
        already_good=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_identification_plausibility(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)


# ---------------------------------------------------------------- unit level
def test_prismatic_millimetres_are_named():
    """A prismatic joint logged in millimetres: the hint says divide by 1000."""
    q = np.linspace(20.0, 330.0, 50)[:, None]  # [mm] of a 0 … 0.35 m torso
    finding = plausibility.joint_limit_finding(
        q, np.array([0.0]), np.array([0.35]), np.array([True]), ["torso_lift_joint"]
    )
    assert not finding.passed
    assert "torso_lift_joint reaches 330 m" in finding.message
    assert "millimetres: divide them by 1000" in finding.message
    inside = plausibility.joint_limit_finding(
        q / 1000, np.array([0.0]), np.array([0.35]), np.array([True]), ["torso_lift_joint"]
    )
    assert inside.passed


def test_limits_margin_and_unset_limits():
    """Within the margin passes; infinite or unset limits are not checked."""
    q = np.array([[-0.05], [1.05]])
    args = (np.array([True]), ["j"])
    assert plausibility.joint_limit_finding(
        q, np.array([0.0]), np.array([1.0]), np.array([False]), ["j"]
    ).passed
    assert not plausibility.joint_limit_finding(
        q, np.array([0.0]), np.array([1.0]), np.array([False]), ["j"], margin=0.01
    ).passed
    for lo, hi in ((-np.inf, np.inf), (-1.8e308, 1.8e308), (0.0, 0.0)):
        assert plausibility.joint_limit_finding(
            q * 100, np.array([lo]), np.array([hi]), *args
        ).passed


def test_margins_and_tolerances_are_configurable():
    from figaroh.identification._pipeline.data_checks import magnitude_bounds

    opts = magnitude_bounds({"joint_limit_margin": 0.5, "excitation_tolerance": 0.2})
    assert opts["joint_limit_margin"] == 0.5 and opts["excitation_tolerance"] == 0.2
    assert opts["velocity_tolerance"] == plausibility.VELOCITY_TOLERANCE
    with pytest.raises(ValueError, match="data_checks.velocity_tolerance"):
        magnitude_bounds({"velocity_tolerance": 0})


def test_yaml_data_checks_margins_reach_the_checks(tmp_path):
    """``tasks.identification.data_checks`` margins and tolerances are the ones applied."""
    path = _config(tmp_path)
    path.write_text(
        path.read_text().replace(
            "    signal_processing:",
            "    data_checks: {joint_limit_margin: 1000.0, velocity_tolerance: 2.0}\n"
            "    signal_processing:",
        )
    )
    ident = ArrayIdentification(_robot(), path, _arrays(_degrees))
    ident.initialize()
    found = {f.check: f.passed for f in ident.data_checks.findings}
    assert found["joint_limits"] and found["velocity_consistency"]
    default = ArrayIdentification(_robot(), _config(tmp_path), _arrays(_degrees))
    default.initialize()
    assert {"joint_limits", "velocity_consistency"} <= {f.check for f in default.data_checks.failed}
