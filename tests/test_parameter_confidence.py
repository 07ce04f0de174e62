"""Confidence intervals and the uncertainty grading rule of the reports.

Truths: scipy's Student t distribution (``scipy.stats.t.ppf``), the explicit
covariance ``s² (WᵀW)⁻¹`` of a linear least-squares fit, and repeated
simulated fits with known parameters and Gaussian noise — a linear regressor
(thousands of fits), the UR10 identification pipeline itself (its base
regressor built from Pinocchio's ``rnea``-consistent regressor, ``solve()``
end to end) and the UR10 calibration (injected joint-placement errors,
``solve()`` end to end, linearised intervals): the intervals must hold the
true value as often as their level says. The grading rule is checked on the
two cases that motivated it (a product of inertia estimated at 4·10⁻⁵ ±
1.6·10⁻³ kg·m², a marker-frame angle of 0 ± 0.18 mrad) and on its edges.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math

import numpy as np
import pytest
import scipy.stats

from conftest import load_example
from figaroh._run.confidence import (
    check_confidence_level,
    confidence_intervals,
    configured_confidence_level,
    t_quantile,
)
from figaroh._run.uncertainty import parameter_table
from figaroh._run.uncertainty_grade import (
    SCALE_FRACTION,
    grade_parameter,
    grade_parameters,
    kind_scales,
)
from figaroh.identification.identification_tools import stdev_of_residual
from figaroh.tools.report import CALIBRATION_UNIT_SCALES, calibration_parameter_table

# ---------------------------------------------------------------------------
# Student t intervals
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.5, 0.8, 0.95, 0.99, 0.999])
@pytest.mark.parametrize("dof", [1, 3, 10, 57, 29952])
def test_t_factor_is_scipys_student_t_quantile(level, dof):
    assert t_quantile(level, dof) == pytest.approx(
        scipy.stats.t.ppf(0.5 + level / 2, dof), rel=1e-12
    )


def test_t_factor_without_residual_degrees_of_freedom():
    assert t_quantile(0.95, math.inf) == pytest.approx(scipy.stats.norm.ppf(0.975), rel=1e-12)
    known_noise = confidence_intervals([1.0], [0.1], math.inf)  # a MAP fit: σ from the prior
    assert known_noise.dof == math.inf
    assert known_noise.high[0] == pytest.approx(1.0 + 0.1 * scipy.stats.norm.ppf(0.975))
    for dof in (0, -3, None, "n/a"):
        assert math.isnan(t_quantile(0.95, dof))


def test_intervals_are_estimate_plus_minus_t_sigma():
    theta, sigma = np.array([2.0, -0.5, 1e-4, 3.0]), np.array([0.1, 0.2, 1e-3, np.nan])
    ci = confidence_intervals(theta, sigma, 12, 0.9)
    t = scipy.stats.t.ppf(0.95, 12)
    np.testing.assert_allclose(ci.low[:3], theta[:3] - t * sigma[:3], rtol=1e-14)
    np.testing.assert_allclose(ci.high[:3], theta[:3] + t * sigma[:3], rtol=1e-14)
    assert np.isnan(ci.low[3]) and np.isnan(ci.high[3])
    assert ci.contains_zero().tolist() == [False, False, True, False]
    assert ci.level == 0.9 and ci.dof == 12 and ci.t == pytest.approx(t)
    no_dof = confidence_intervals(theta, sigma, 0)
    assert np.all(np.isnan(no_dof.low)) and not no_dof.contains_zero().any()
    with pytest.raises(ValueError, match="4 values but 3 standard deviations"):
        confidence_intervals(theta, sigma[:3], 12)


@pytest.mark.parametrize(
    ("level", "message"),
    [
        (95, r"strictly between 0 and 1 \(0\.95 for 95 %\), got 95; write 0\.95 for 95 %"),
        (0.0, "strictly between 0 and 1"),
        (1.0, "strictly between 0 and 1"),
        (float("nan"), "strictly between 0 and 1"),
        ("95%", "must be a number in \\(0, 1\\)"),
        (True, "must be a number in \\(0, 1\\)"),
    ],
)
def test_a_bad_level_names_the_option_and_the_fix(level, message):
    with pytest.raises(ValueError, match="^confidence_level: .*" + message):
        check_confidence_level(level)


def test_the_level_comes_from_the_verification_section():
    assert configured_confidence_level(None) == 0.95
    assert configured_confidence_level({"verification": {"scope": "execution"}}) == 0.95
    assert configured_confidence_level({"verification": {"confidence_level": 0.99}}) == 0.99


def test_sigma_is_the_diagonal_of_the_least_squares_covariance():
    rng = np.random.default_rng(4)
    W = rng.normal(size=(40, 6)) * [1.0, 10.0, 0.1, 3.0, 1.0, 0.5]
    tau = W @ rng.normal(size=6) + rng.normal(0, 0.3, 40)
    phi = np.linalg.lstsq(W, tau, rcond=None)[0]
    r = tau - W @ phi
    expected = np.sqrt(r @ r / (40 - 6) * np.diag(np.linalg.inv(W.T @ W)))
    R = np.linalg.qr(W, mode="r")
    np.testing.assert_allclose(stdev_of_residual(r, 6, R), expected, rtol=1e-10)


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_linear_fits_cover_the_true_parameters_at_the_nominal_rate(level):
    """4000 fits of 4 parameters on 14 rows (10 degrees of freedom): 16 000 intervals."""
    rng = np.random.default_rng(11)
    n, p, fits = 14, 4, 4000
    W = rng.normal(size=(n, p))
    theta = np.array([1.5, -0.2, 0.0, 3.0])
    R = np.linalg.qr(W, mode="r")
    hits_t = hits_normal = 0
    z = scipy.stats.norm.ppf(0.5 + level / 2)
    for _ in range(fits):
        tau = W @ theta + rng.normal(0.0, 0.7, n)
        phi = np.linalg.lstsq(W, tau, rcond=None)[0]
        sigma = stdev_of_residual(tau - W @ phi, p, R)
        ci = confidence_intervals(phi, sigma, n - p, level)
        hits_t += int(np.sum((ci.low <= theta) & (theta <= ci.high)))
        hits_normal += int(np.sum(np.abs(phi - theta) <= z * sigma))
    coverage = hits_t / (fits * p)
    assert abs(coverage - level) < 0.012  # binomial standard error ≤ 0.0032
    # the normal quantile undercovers with 10 degrees of freedom: the t factor matters
    assert hits_normal / (fits * p) < level - 0.015


# ---------------------------------------------------------------------------
# The UR10 identification: intervals of solve() on repeated simulated logs
# ---------------------------------------------------------------------------

_ur10 = load_example("ur10/identification.py", "ur10_identification")


class _Exact(_ur10.UR10Identification):
    """The UR10 on exact kinematics (no filter): the residual is the torque noise alone."""

    trajectory_log = None

    def load_trajectory_data(self, data_source=None):
        return dict(self.trajectory_log)

    @staticmethod
    def _apply_filters(*signals, **_):
        return signals if len(signals) > 1 else signals[0]


def _true_base_parameters(ident):
    from figaroh.identification.identification_tools import base_param_from_standard

    theta = dict(ident.standard_parameter)
    for j, name in enumerate(ident.identif_config["active_joints"]):
        theta[f"fv_{name}"], theta[f"fs_{name}"] = _ur10.UR10_FV[j], _ur10.UR10_FS[j]
    return np.asarray(base_param_from_standard(theta, ident.params_base))


@pytest.mark.slow
def test_ur10_identification_intervals_cover_the_true_base_parameters():
    """100 solves of a 400-sample UR10 log with fresh 0.5 N·m noise: 4800 intervals at 95 %."""
    from figaroh.identification._confidence import base_parameter_sigma, base_parameter_table

    robot = _ur10.load_ur10()
    traj, tau = _ur10.simulate_ur10(robot, n_samples=400, noise_std=0.0, seed=0)
    rng = np.random.default_rng(5)
    hits = total = 0
    truth = None
    logging.disable(logging.WARNING)
    try:
        for _ in range(100):
            ident = _Exact(robot, _ur10.CONFIG)
            ident.trajectory_log = {
                "timestamps": traj.t[:, None],
                "positions": traj.q,
                "velocities": traj.dq,
                "accelerations": traj.ddq,
                "torques": tau + rng.normal(0.0, 0.5, tau.shape),
            }
            ident.initialize()
            with contextlib.redirect_stdout(io.StringIO()):
                ident.solve(decimate=False, plotting=False, save_results=False, verbose=False)
            truth = _true_base_parameters(ident) if truth is None else truth
            table = base_parameter_table(ident)
            low, high = np.array(table.column("ci_low")), np.array(table.column("ci_high"))
            hits += int(np.sum((low <= truth) & (truth <= high)))
            total += truth.size
    finally:
        logging.disable(logging.NOTSET)
    assert table.dof == 6 * 400 - truth.size
    assert abs(hits / total - 0.95) < 0.02
    # σ is the one behind the 1.0.2 number: std_relative = round(100 σ / |φ|, 2)
    sigma, _ = base_parameter_sigma(ident)
    np.testing.assert_array_equal(
        np.round(100 * sigma / np.abs(ident.phi_base), 2), ident.std_relative
    )
    # computed once per fit: the reports of one run share it; a new estimate recomputes it
    assert base_parameter_sigma(ident)[0] is sigma
    ident.phi_base = ident.phi_base * 1.0  # another estimate (e.g. WLS): its own residual
    again, _ = base_parameter_sigma(ident)
    assert again is not sigma
    np.testing.assert_allclose(again, sigma, rtol=1e-12)


# ---------------------------------------------------------------------------
# The grading rule
# ---------------------------------------------------------------------------


def test_a_product_of_inertia_near_zero_is_graded_against_the_inertia_scale():
    """Ixy_wrist_3_joint of the UR10 demo: σ/|value| = 3918 %, but 0.7 % of the inertia scale."""
    names = ["Iyy_shoulder_lift_joint + 0.37*m_elbow_joint", "Ixy_wrist_3_joint", "m_wrist_2_joint"]
    kinds = ["inertia", "inertia", "mass"]
    values, sigma = [2.3437, 4.034e-05, 6.0592], [0.0073, 1.5806e-3, 0.0021]
    table = parameter_table(names, kinds, values, sigma, 29952)
    ixy = table.rows[1].grade
    assert ixy.relative_pct == pytest.approx(100 * 1.5806e-3 / 4.034e-05)  # ≈ 3918 %
    assert ixy.scale == pytest.approx(SCALE_FRACTION * 2.3437)
    assert ixy.score_pct == pytest.approx(100 * 1.5806e-3 / (0.1 * 2.3437))
    assert ixy.basis == "scale" and ixy.tier == "good" and ixy.zero is True
    assert ixy.label == "good · not distinguishable from 0"
    big = table.rows[0].grade
    assert big.basis == "relative" and big.score_pct == pytest.approx(100 * 0.0073 / 2.3437)
    assert table.ranked()[0].name == "Ixy_wrist_3_joint"  # largest g (0.67 % > 0.31 %)
    assert table.summary_text() == "3 good, 0 fair, 0 poor; 1 not distinguishable from 0"


def test_a_marker_angle_at_zero_is_judged_against_the_angle_unit_scale():
    """phiEE* = 0 ± 0.18 mrad: poor against a data scale of 0, good against 10 mrad."""
    ev = {
        "param_values": [0.0, 0.0, 0.0, 0.05, -0.3],
        "param_stdev": [1.8e-4, 1.7e-4, 1.9e-4, 2e-4, 2.5e-3],
        "residual_dof": 120,
    }
    names = ["phiEEx_1", "phiEEy_1", "phiEEz_1", "pEEx_1", "d_phiz_elbow_joint"]
    table = calibration_parameter_table(ev, names)
    phi = table.rows[0].grade
    assert phi.scale == CALIBRATION_UNIT_SCALES["toolAngle"] == 0.01
    assert phi.score_pct == pytest.approx(1.8) and phi.tier == "good" and phi.zero
    assert math.isinf(phi.relative_pct)
    assert [r.unit for r in table.rows] == ["rad", "rad", "rad", "m", "rad"]
    # a length far above its unit scale is judged by its relative σ
    assert table.rows[3].grade.basis == "relative"
    assert table.rows[3].grade.score_pct == pytest.approx(100 * 2e-4 / 0.05)
    # a joint angle of 0.3 rad: relative (0.83 %)
    assert table.rows[4].grade.score_pct == pytest.approx(100 * 2.5e-3 / 0.3)
    t = scipy.stats.t.ppf(0.975, 120)
    assert table.rows[0].ci_high == pytest.approx(t * 1.8e-4)


def test_the_grade_is_continuous_where_the_basis_changes():
    s = 0.2
    below = grade_parameter(s * (1 - 1e-12), 0.05, s)
    above = grade_parameter(s * (1 + 1e-12), 0.05, s)
    assert below.basis == "scale" and above.basis == "relative"
    assert below.score_pct == pytest.approx(above.score_pct, rel=1e-9) == pytest.approx(25.0)


@pytest.mark.parametrize(
    ("value", "sigma", "scale", "tier", "score"),
    [
        (1.0, 0.10, 0.1, "good", 10.0),  # boundary: exactly 10 % is good
        (1.0, 0.1000001, 0.1, "fair", 10.00001),
        (1.0, 0.30, 0.1, "fair", 30.0),  # exactly 30 % is fair
        (1.0, 0.31, 0.1, "poor", 31.0),
        (0.0, 0.0, 0.0, "good", 0.0),  # exactly known zero
        (0.0, 0.5, 0.0, "unknown", math.nan),  # no value, no scale: nothing to judge against
        (1.0, math.inf, 0.1, "poor", math.inf),
        (1.0, math.nan, 0.1, "unknown", math.nan),
        (math.nan, 0.1, 0.1, "unknown", math.nan),
        (-4.0, 0.4, 0.1, "good", 10.0),  # the sign does not matter
    ],
)
def test_grade_edges(value, sigma, scale, tier, score):
    g = grade_parameter(value, sigma, scale)
    assert g.tier == tier
    if math.isnan(score):
        assert math.isnan(g.score_pct)
    else:
        assert g.score_pct == pytest.approx(score)
    assert g.zero is None  # no interval given


def test_kind_scales_and_zero_flags():
    kinds = ["a", "a", "b", "c"]
    values = [2.0, -10.0, 0.0, 0.004]
    scales = kind_scales(kinds, values, {"b": 0.01, "c": 0.01})
    assert scales == {"a": 1.0, "b": 0.01, "c": 0.01}
    grades = grade_parameters(kinds, values, [0.5, 0.5, 0.001, 0.003], [2.5, 0.98, 0.002, 0.006])
    assert [g.zero for g in grades] == [True, False, True, True]
    with pytest.raises(ValueError, match="4 kinds, 3 values"):
        grade_parameters(kinds, values[:3], [0.1] * 4)


# ---------------------------------------------------------------------------
# The UR10 calibration: linearised intervals of solve() on repeated simulated poses
# ---------------------------------------------------------------------------

_ur10_cal = load_example("ur10/calibration.py", "ur10_calibration_example")


@pytest.mark.slow
def test_ur10_calibration_intervals_cover_the_injected_errors(tmp_path, ur10_urdf):
    """60 calibrations of 50 UR10 postures with fresh 0.5 mm / 0.1° noise: 1800 intervals."""
    import csv
    import warnings

    from figaroh.tools.report import calibrator_parameter_table
    from figaroh.tools.robot import Robot

    sigma_p, sigma_r = 0.5e-3, np.deg2rad(0.1)
    robot = Robot(str(ur10_urdf), load_geometry=False)
    train, _, truth = _ur10_cal.simulate_ur10_calibration(
        tmp_path / "sim", robot=robot, n_train=50, n_test=10
    )
    with open(train, newline="") as fh:
        rows = list(csv.reader(fh))
    header, joints = rows[0], np.asarray(rows[1:], dtype=float)[:, 6:]
    reference = _ur10_cal.make_calibrator(robot, train, _ur10_cal.CONFIG)
    reference.initialize()
    hits = total = 0
    logging.disable(logging.WARNING)
    try:
        for seed in range(60):
            pee = _ur10_cal.measure(reference, truth, reference.q_measured, sigma_p, sigma_r, seed)
            path = tmp_path / f"mc{seed}.csv"
            with open(path, "w", newline="") as fh:
                writer = csv.writer(fh)
                writer.writerow(header)
                for row in np.column_stack([pee.reshape(6, -1).T, joints]):
                    writer.writerow([repr(float(v)) for v in row])
            calib = _ur10_cal.make_calibrator(robot, path, _ur10_cal.CONFIG)
            calib.calib_config["measurement_std"] = {"position": sigma_p, "orientation": sigma_r}
            calib.initialize()
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                calib.solve(enable_logging=False)
            table = calibrator_parameter_table(calib)
            hits += sum(r.ci_low <= truth[r.name] <= r.ci_high for r in table.rows)
            total += len(table.rows)
    finally:
        logging.disable(logging.NOTSET)
    assert table.dof == calib.evaluation_metrics["residual_dof"] > 0
    assert abs(hits / total - 0.95) < 0.03
