"""The calibration data checks on plain arrays (no robot, no fit).

Truths: hand-built arrays whose answer is known (values past a limit, a
scaled copy, a rank-deficient matrix built from named columns).
"""

from __future__ import annotations

import math

import numpy as np

from figaroh.calibration._pipeline import data_checks as dc

NAMES = ["j1", "j2"]
LOWER = np.array([-math.pi, -1.0])
UPPER = np.array([math.pi, 1.0])
REVOLUTE = np.array([True, True])


def _q(n=20, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(-3.0, 3.0, n), rng.uniform(-0.9, 0.9, n)])


def test_joint_limits_pass_within_the_margin_and_name_degrees_beyond_it():
    q = _q()
    assert dc.joint_limits_finding(q, LOWER, UPPER, NAMES, REVOLUTE).passed
    q[0, 1] = 1.0 + 0.25 * 2.0 - 1e-9  # inside the relative margin (¼ of the range)
    assert dc.joint_limits_finding(q, LOWER, UPPER, NAMES, REVOLUTE).passed
    bad = dc.joint_limits_finding(np.degrees(_q()), LOWER, UPPER, NAMES, REVOLUTE)
    assert not bad.passed and "look like degrees" in bad.message and "j1 reaches" in bad.message


def test_joint_limits_without_a_degree_reading_say_units_and_order():
    q = _q()
    q[:, 1] = 2.0  # beyond the margin, but × π/180 is no fix (not above 2π)
    f = dc.joint_limits_finding(q, LOWER, UPPER, NAMES, REVOLUTE)
    assert not f.passed and "degrees" not in f.message and "order of the joint columns" in f.message


def test_joint_limits_skip_unlimited_joints():
    q = 100.0 * _q()
    inf = np.full(2, np.inf)
    assert dc.joint_limits_finding(q, -inf, inf, NAMES, REVOLUTE).passed


def _poses(scale=1.0, n=30, seed=1):
    rng = np.random.default_rng(seed)
    nominal = np.zeros((n, 1, 6))
    nominal[:, 0, :3] = rng.normal(0.0, 0.4, (n, 3))
    nominal[:, 0, 3:] = rng.uniform(-3.0, 3.0, (n, 3))
    measured = nominal.copy()
    measured[:, 0, :3] = scale * nominal[:, 0, :3] + np.array([1.0, -2.0, 0.5]) * scale
    return measured, nominal


def test_measurement_units_ratio_is_blind_to_an_offset_and_names_millimetres():
    measured, nominal = _poses()
    assert dc.measurement_units_finding(measured, nominal).passed
    mm = dc.measurement_units_finding(*_poses(1000.0))
    assert not mm.passed and "millimetres: divide the measured positions by 1000" in mm.message
    cm = dc.measurement_units_finding(*_poses(100.0))
    assert not cm.passed and "centimetres" in cm.message


def test_measurement_units_name_degrees_for_orientations():
    measured, nominal = _poses()
    measured[..., 3:] = np.degrees(measured[..., 3:])
    f = dc.measurement_units_finding(measured, nominal)
    assert not f.passed and "orientations look like degrees" in f.message


def test_outlier_fraction_fails_above_half():
    e = np.full(10, 0.001)
    assert dc.outlier_fraction_finding(e, 0.01).passed
    e[:5] = 0.5  # exactly half: passes
    assert dc.outlier_fraction_finding(e, 0.01).passed
    e[5] = 0.5
    f = dc.outlier_fraction_finding(e, 0.01)
    assert not f.passed and "6 of 10 postures" in f.message and "outlier_threshold" in f.message
    assert dc.outlier_fraction_finding(e, None).passed


def test_distinct_postures_count_within_the_tolerance():
    q = _q(5)
    assert dc.distinct_postures(q) == 5
    q2 = np.vstack([q, q + 1e-6, q[:1]])
    assert dc.distinct_postures(q2) == 5


def test_jacobian_problems_name_the_dependent_parameters():
    rng = np.random.default_rng(3)
    J = rng.normal(size=(40, 4))
    names = ["a", "b", "c", "d"]
    assert dc.jacobian_problems(J, names) == []
    J[:, 3] = J[:, 1] - J[:, 2]  # d = b - c: one null direction over b, c, d
    (msg,) = dc.jacobian_problems(J, names)
    assert "rank 3 for 4 parameters" in msg and "['b', 'c', 'd']" in msg


def test_identifiability_counts_distinct_postures_and_still_joints():
    q = _q(12)
    params = [f"d_px_{n}" for n in NAMES] + ["base_px"]
    assert dc.identifiability_finding(q, NAMES, params, params, 6).passed
    few = dc.identifiability_finding(q[:1].repeat(12, axis=0), NAMES, params, params, 1)
    assert not few.passed and "1 distinct posture (11 of the 12 postures repeat" in few.message
    q[:, 1] = 0.3
    still = dc.identifiability_finding(q, NAMES, params, params, 6)
    assert not still.passed and "joint j2 never moves" in still.message
    assert "d_px_j2" in still.message
