"""The calibration examples on the real shared data (UR10, TIAGo, TALOS, MATE).

Truths: the fitted model must beat the nominal kinematics *with the same
freedom on the metrology frames* (frames re-fitted, joints nominal) on the
same postures; reported correlations must be those of the covariance.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import load_example
from figaroh.calibration import calibration_tools as ct

ur10 = load_example("ur10/calibration.py", "ur10_calibration_example")
tiago = load_example("tiago/calibration.py", "tiago_calibration_example")
talos = load_example("talos/calibration.py", "talos_calibration_example")
mate = load_example("mate/calibration.py", "mate_calibration_example")


def _pairs_from_covariance(calib):
    C = calib._C_param
    d = np.sqrt(np.diag(C))
    rho = C / np.outer(d, d)
    return int(np.sum(np.abs(rho[np.triu_indices_from(rho, 1)]) > 0.8))


@pytest.fixture(scope="module")
def tiago_run(shared_data):
    calib = tiago.make_calibrator(
        shared_data / "tiago" / "urdf" / "tiago_48_schunk.urdf",
        shared_data / "tiago" / "calibration" / "qualysis_base_hand_calibration.csv",
    )
    calib.initialize()
    calib.solve(enable_logging=False)
    return calib


def test_tiago_mocap_calibration(tiago_run, capsys):
    calib = tiago_run
    s = tiago.summary(calib)
    assert s["converged"] and s["samples"] == 34
    assert calib.calib_config["param_name"][:6][0] == "base_px"  # base frame co-estimated
    assert calib.calib_config["measurability"] == [True, True, True, False, False, False]
    assert s["outliers_removed"] == len(s["excluded_samples"]) >= 0
    assert np.isfinite(s["condition_number"]) and s["condition_number"] > 1
    assert len(s["correlated_pairs"]) == _pairs_from_covariance(calib) > 0
    assert all(abs(p["correlation"]) > 0.8 for p in s["correlated_pairs"])
    assert s["position_rmse_point_norm_mm"] < s["position_rmse_nominal_fitted_frames_mm"]
    # conventions: vector norm of 3 components vs per-component RMS
    ratio = s["position_rmse_point_norm_mm"] / s["position_rmse_per_component_mm"]
    assert ratio == pytest.approx(np.sqrt(3), rel=1e-9)
    report = calib.format_quality_report()
    assert "per-point vector norm" in report and "per-component RMS" in report
    print(
        f"\nTIAGo: outliers {s['outliers_removed']}, cond {s['condition_number']:.1f}, "
        f"pairs {len(s['correlated_pairs'])}, RMSE {s['position_rmse_point_norm_mm']:.3f} mm "
        f"(vector norm) / {s['position_rmse_per_component_mm']:.3f} mm (per component)"
    )


def _per_axis_rmse_mm(calib):
    """Per-axis RMSE [mm] computed outside the report code, as figaroh 1.0.2 prints it.

    measured − estimated (``calc_updated_fkm`` at the fit), split DOF-major:
    reshape to (n_dof, n_samples) per marker, kept postures only.
    """
    cfg = calib.calib_config
    n = calib.n_samples
    est = ct.calc_updated_fkm(calib.model, calib.data, calib.var_, calib.q_measured, cfg)
    e = (np.asarray(calib.PEE_measured) - est).reshape(cfg["NbMarkers"], 3, n)
    kept = np.setdiff1d(np.arange(n), calib.outlier_indices)
    return np.sqrt(np.mean(e[:, :, kept] ** 2, axis=(0, 2))) * 1e3


def test_per_axis_table_splits_measured_minus_estimated_dof_major(tiago_run):
    calib = tiago_run
    expected = _per_axis_rmse_mm(calib)
    stats = calib.evaluation_metrics["per_dof_stats"]
    assert stats["dof_names"] == ["X (mm)", "Y (mm)", "Z (mm)"]
    np.testing.assert_allclose(stats["rmse"], expected, rtol=1e-9)
    report = calib.format_quality_report()
    for name, value in zip(("X (mm)", "Y (mm)", "Z (mm)"), expected, strict=True):
        (line,) = [ln for ln in report.splitlines() if ln.strip().startswith(name)]
        assert float(line.split()[4]) == pytest.approx(value, abs=5e-4)  # RMSE column, 3 decimals
    # the body-frame components (rotated into the estimated tool frame) are other numbers
    r, _ = calib.measurement_residuals(calib.var_)
    rotated = np.sqrt(np.mean(r.reshape(3, -1) ** 2, axis=1)) * 1e3
    assert np.abs(rotated - expected).max() > 0.05  # [mm]
    assert np.sqrt(np.sum(rotated**2)) == pytest.approx(np.sqrt(np.sum(expected**2)), rel=1e-9)


@pytest.mark.parametrize("robot", ["tiago", "talos", "ur10"])
def test_example_cost_jacobians_differentiate_the_example_costs(shared_data, robot):
    """``--analytic-jacobian``: each example's cost_jacobian is the derivative of its cost."""
    if robot == "tiago":
        calib = tiago.make_calibrator(
            shared_data / "tiago" / "urdf" / "tiago_48_schunk.urdf",
            shared_data / "tiago" / "calibration" / "qualysis_base_hand_calibration.csv",
            analytic_jacobian=True,
        )
    elif robot == "talos":
        calib = talos.make_calibrator(
            shared_data / "talos" / "talos_full_v2.urdf",
            shared_data / "talos" / "talos_left_arm_02_10_contact.csv",
            analytic_jacobian=True,
        )
    else:
        urdf = shared_data / "models" / "ur_description" / "urdf" / "ur10_robot.urdf"
        calib = ur10.make_calibrator(
            ur10.Robot(str(urdf), load_geometry=False),
            shared_data / "ur10" / "calibration.csv",
            analytic_jacobian=True,
        )
    calib.initialize()
    x = calib._objective_model.initial_vector() + 1e-3
    J = calib.cost_jacobian(x)
    h = 1e-6
    Jn = np.column_stack(
        [
            (calib.cost_function(x + h * e) - calib.cost_function(x - h * e)) / (2 * h)
            for e in np.eye(x.size)
        ]
    )
    assert J.shape == Jn.shape
    assert np.abs(J - Jn).max() < 1e-6 * max(1.0, np.abs(Jn).max())
    assert calib._objective_model.jacobian_mode() == "analytic (user)"


def test_tiago_script(shared_data, tmp_path, capsys):
    code = tiago.main(
        [
            "--data",
            str(shared_data / "tiago" / "calibration" / "qualysis_base_hand_calibration.csv"),
            "--urdf",
            str(shared_data / "tiago" / "urdf" / "tiago_48_schunk.urdf"),
            "--folds",
            "3",
            "--output",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    for text in (
        "outliers removed:",
        "condition number:",
        "correlated parameter pairs",
        "held-out",
    ):
        assert text in out
    doc = json.loads((tmp_path / "calibration_verification.json").read_text())
    assert doc["stages"]["fit"] == "pass"


def test_ur10_real_data_beats_nominal(shared_data):
    urdf = shared_data / "models" / "ur_description" / "urdf" / "ur10_robot.urdf"
    calib = ur10.run(shared_data / "ur10" / "calibration.csv", str(urdf))
    v = calib.results_data["validation_metrics"]
    assert calib.evaluation_metrics["optimization_success"]
    assert v["validation_source"] == "calibration_data_fallback"  # same poses
    assert v["pos_rmse_calibrated_mm"] < v["pos_rmse_nominal_fitted_frames_mm"]
    assert v["orient_rmse_calibrated_deg"] < v["orient_rmse_nominal_fitted_frames_deg"]
    assert v["pos_rmse_calibrated_mm"] < v["pos_rmse_nominal_mm"]
    assert calib.evaluation_metrics["jacobian"] == "2-point"  # as figaroh 1.0.2


def test_talos_contact_calibration(shared_data):
    calib = talos.make_calibrator(
        shared_data / "talos" / "talos_full_v2.urdf",
        shared_data / "talos" / "talos_left_arm_02_10_contact.csv",
    )
    calib.initialize()
    calib.solve(enable_logging=False)
    v = calib.results_data["validation_metrics"]
    assert calib.evaluation_metrics["optimization_success"] and calib.n_samples == 61
    assert v["pos_rmse_calibrated_mm"] < 0.5 * v["pos_rmse_nominal_fitted_frames_mm"]


def test_mate_planar_constraints(shared_data, capsys):
    calib = mate.make_calibrator(
        shared_data / "mate" / "urdf" / "mate.urdf", shared_data / "mate" / "data"
    )
    calib.initialize()
    # each posture observes one coordinate: the others are NaN in PEE_measured
    assert np.isfinite(calib.PEE_measured).sum() == calib.n_samples == 30
    # position-only contacts: the tool-axis offset (q_3) is absorbed by the tip offsets,
    # like the base-axis offset (q_1) by the jig frame; nothing else is dependent
    assert calib.calib_config["absorbed_param_name"] == ["offsetRZ_q_1", "offsetRZ_q_3"]
    assert calib.drop_unidentifiable_parameters() == []
    calib.solve(enable_logging=False)
    gaps = mate.gaps_by_set(calib)
    assert set(gaps) == {"10_points_x.csv", "10_points_y.csv", "10_points_z.csv"}
    assert max(gaps.values()) < 3.0  # [mm]
    assert calib.evaluation_metrics["condition_label"] != "ill-conditioned"
    # residual dof counts observed coordinates only
    assert calib.evaluation_metrics["residual_dof"] == 30 - len(calib.var_)


def test_tiago_joint_offset_absorbed_parameters(shared_data):
    calib = tiago.make_calibrator(
        shared_data / "tiago" / "urdf" / "tiago_48_schunk.urdf",
        shared_data / "tiago" / "calibration" / "qualysis_base_hand_calibration.csv",
    )
    calib.calib_config["calib_model"] = "joint_offset"
    calib.initialize()
    # vertical prismatic torso and first revolute joint are absorbed by base z and yaw
    assert calib.calib_config["absorbed_param_name"] == [
        "offsetPZ_torso_lift_joint",
        "offsetRZ_arm_1_joint",
    ]
    names = calib.calib_config["param_name"]
    assert names[:6][-1] == "base_phiz" and names[-3:] == ["pEEx_1", "pEEy_1", "pEEz_1"]
