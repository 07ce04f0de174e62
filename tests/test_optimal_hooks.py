"""Public hooks and the missing-extra error of the exciting-trajectory design.

Truths: the calls a subclass records (``on_segment`` before each segment, a
``_solve_segment`` override still used), and the error raised at the call
when cyipopt cannot be imported (simulated by ``sys.modules["cyipopt"] =
None``), which names the extra to install.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conftest import ROOT
from figaroh.errors import MissingDependencyError
from figaroh.optimal.base_optimal_trajectory import BaseOptimalTrajectory

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]


def test_missing_cyipopt_raises_at_the_call_naming_the_extra(ur10_robot, monkeypatch):
    opt = BaseOptimalTrajectory(ur10_robot, JOINTS, CONFIG)  # construction needs no cyipopt
    monkeypatch.setitem(sys.modules, "cyipopt", None)
    with pytest.raises(MissingDependencyError, match=r"figaroh\[ipopt\]") as info:
        opt.solve(stack_reps=1)  # checked first: before initialize() is even required
    assert isinstance(info.value, ImportError)
    assert "cyipopt" in str(info.value)


class _Recorded(BaseOptimalTrajectory):
    """Records the hooks; every segment "fails" at once (no IPOPT run)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[tuple] = []

    def on_segment(self, segment_index, n_segments):
        self.calls.append(("on_segment", segment_index, n_segments))

    def _solve_segment(self, s, wp_init, vel_wp_init, acc_wp_init, W_stack):
        self.calls.append(("_solve_segment", s))
        return False


def test_on_segment_runs_before_each_segment_and_private_override_still_used(ur10_robot):
    pytest.importorskip("cyipopt")
    opt = _Recorded(ur10_robot, JOINTS, CONFIG, rng=0)
    opt.trajectory_config.update(n_wps=3, freq=20, max_attempts=5)
    opt.initialize()
    res = opt.solve(stack_reps=3)
    assert opt.calls == [("on_segment", 0, 3), ("_solve_segment", 0)]  # the failure stops it
    assert res["P_F"] == []


def test_default_on_segment_is_a_documented_no_op(ur10_robot):
    opt = BaseOptimalTrajectory(ur10_robot, JOINTS, CONFIG)
    assert opt.on_segment(0, 1) is None
    doc = BaseOptimalTrajectory.on_segment.__doc__
    assert "segment_index" in doc and "n_segments" in doc


def _tiny(robot):
    opt = BaseOptimalTrajectory(robot, JOINTS, CONFIG, rng=3)
    opt.trajectory_config.update(
        n_wps=3, t_s=1.0, freq=20, max_iterations=4, collision_checks_per_interval=2
    )
    opt.initialize()
    return opt


def test_verbose_false_silences_ipopt_with_the_same_design(ur10_robot, capfd):
    pytest.importorskip("cyipopt")
    loud = _tiny(ur10_robot)
    loud.trajectory_config["ipopt_print_level"] = 3
    res_loud = loud.solve(stack_reps=1)
    assert "EXIT:" in capfd.readouterr().out  # IPOPT's own console log (C stdout)
    quiet = _tiny(ur10_robot)
    quiet.trajectory_config["ipopt_print_level"] = 3
    res_quiet = quiet.solve(stack_reps=1, verbose=False)
    assert capfd.readouterr().out == ""
    assert quiet.trajectory_config["ipopt_print_level"] == 3  # restored
    assert len(res_quiet["P_F"]) == len(res_loud["P_F"]) == 1
    np.testing.assert_array_equal(res_quiet["P_F"][0], res_loud["P_F"][0])
    assert res_quiet["condition_number"] == res_loud["condition_number"]
