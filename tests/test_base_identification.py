"""BaseIdentification end to end on simulated UR10 data with known parameters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import load_example

_ur10 = load_example("ur10/identification.py", "ur10_identification")
CONFIG, UR10Identification, generate_ur10_data = (
    _ur10.CONFIG,
    _ur10.UR10Identification,
    _ur10.generate_ur10_data,
)
UR10_FS, UR10_FV, load_ur10 = _ur10.UR10_FS, _ur10.UR10_FV, _ur10.load_ur10

from figaroh.data.trajectory import TrajectoryData  # noqa: E402
from figaroh.identification.base_identification import BaseIdentification  # noqa: E402
from figaroh.identification.identification_tools import base_param_from_standard  # noqa: E402
from figaroh.utils.error_handling import ConfigurationError  # noqa: E402

N = 4000


@pytest.fixture(scope="module")
def robot():
    return load_ur10()


@pytest.fixture(scope="module")
def noisy_data(tmp_path_factory, robot):
    return generate_ur10_data(
        tmp_path_factory.mktemp("noisy"), N, noise_std=0.5, seed=3, robot=robot
    )


@pytest.fixture(scope="module")
def clean_data(tmp_path_factory, robot):
    return generate_ur10_data(
        tmp_path_factory.mktemp("clean"), N, noise_std=0.0, seed=5, robot=robot
    )


def _identify(robot, data, *, validation=True, solve=True, median_padding=None, **solve_kw):
    train, val = data
    ident = UR10Identification(robot, CONFIG, data_dir=train)
    if median_padding is not None:
        ident.filter_config["filter_params"]["median_padding"] = median_padding
    if validation:
        ident.identif_config["validation_data_file"] = str(val)
    ident.initialize()
    if solve:
        ident.solve(**{"decimate": False, "plotting": False, **solve_kw})
    return ident


def _true_base(ident):
    theta = dict(ident.standard_parameter)
    for j, name in enumerate(ident.identif_config["active_joints"]):
        theta[f"fv_{name}"] = UR10_FV[j]
        theta[f"fs_{name}"] = UR10_FS[j]
    return np.asarray(base_param_from_standard(theta, ident.params_base))


def test_noise_free_data_recovers_base_parameters(robot, clean_data, capsys):
    # Edge-repeating median: the 1.0.2 zero padding corrupts the first and last
    # samples of this moving trajectory (see tests/test_compat_identification.py).
    ident = _identify(robot, clean_data, median_padding="nearest")
    truth = _true_base(ident)
    err = np.abs(ident.phi_base - truth)
    assert err.max() < 0.02, (ident.params_base[int(err.argmax())], err.max())
    # the only error left is the kinematic filter/differentiation: the fit is near exact
    assert ident.result["validation_metrics"]["rmse_identified"] < 0.02
    out = capsys.readouterr().out
    assert "IDENTIFICATION QUALITY REPORT" in out and "Validation (separate set" in out


def test_noisy_data_within_four_sigma_and_validation_rmse(robot, noisy_data):
    ident = _identify(robot, noisy_data)
    truth = _true_base(ident)
    sigma = np.asarray(ident.std_relative) / 100.0 * np.abs(ident.phi_base)
    z = np.abs(ident.phi_base - truth) / sigma
    assert np.all(z < 4.0), (ident.params_base[int(z.argmax())], z.max())
    val = ident.result["validation_metrics"]
    assert val["validation_source"] == "validation_data"
    assert val["rmse_identified"] <= 1.1 * 0.5
    assert val["improvement_pct"] > 50
    assert val["unpredictable_joints"] == []


def test_default_result_keys_and_identities(robot, noisy_data):
    ident = _identify(robot, noisy_data)
    expected = {
        "base parameters",
        "base parameters names",
        "base parameters values",
        "base regressor",
        "condition number",
        "effort rmse",
        "identification config",
        "num samples",
        "rmse norm (N/m)",
        "stages",
        "std dev of estimated param",
        "task type",
        "torque estimated",
        "torque processed",
        "validation_metrics",
    }
    assert set(ident.result) == expected
    r = ident.result
    assert r["num samples"] == N and r["task type"] == "identification"
    np.testing.assert_allclose(
        r["base regressor"] @ r["base parameters values"], r["torque estimated"]
    )
    assert r["condition number"] == pytest.approx(np.linalg.cond(r["base regressor"]), rel=1e-6)
    assert [s["stage"] for s in r["stages"]] == ["data", "fit", "validation"]
    # W_b @ phi_b == W_red @ M.T @ phi... : the base columns are columns of the reduced regressor
    W_red = ident._prepare_undecimated_data(ident.regressor_reduced)[1]
    np.testing.assert_allclose(W_red[:, ident._base_indices], r["base regressor"])
    assert r["effort rmse"] == pytest.approx(
        np.sqrt(np.mean((r["torque processed"] - r["torque estimated"]) ** 2))
    )
    assert "UR10Identification(robot='ur10'" in repr(ident)


def test_decimation_and_wls(robot, noisy_data):
    plain = _identify(robot, noisy_data, validation=False)
    dec = _identify(robot, noisy_data, validation=False, decimate=True, decimation_factor=5)
    assert dec.result["torque processed"].shape[0] == 6 * int(np.ceil(N / 5))
    assert dec.params_base == plain.params_base
    # well-determined parameters (relative std < 2 %) agree within 5 %
    sure = np.flatnonzero(np.asarray(plain.std_relative) < 2.0)
    assert sure.size >= 10
    np.testing.assert_allclose(dec.phi_base[sure], plain.phi_base[sure], rtol=0.05)
    wls = _identify(robot, noisy_data, validation=False, wls=True)
    assert "wls_std_deviations" in wls.result
    assert len(wls.result["wls_std_deviations"]) == len(wls.phi_base)
    assert wls.stages[1].reason == "weighted least squares"
    # validation falls back to the training data, and says so
    assert plain.result["validation_metrics"]["validation_source"] == "identification_data_fallback"
    assert plain.stages[-1].status == "fallback"


def test_torque_fit_joints_subset(robot, noisy_data):
    full = _identify(robot, noisy_data, validation=False)
    ident = _identify(robot, noisy_data, validation=False, solve=False)
    ident.identif_config["torque_fit_joints"] = [
        "shoulder_pan_joint",
        "shoulder_lift_joint",
        "elbow_joint",
        "wrist_1_joint",
    ]
    ident.solve(decimate=False, plotting=False)
    assert ident.result["torque processed"].shape[0] == 4 * N
    assert ident.fit_joints() == ident.identif_config["torque_fit_joints"]
    assert len(ident._compute_per_joint_stats()["joint_names"]) == 4
    explicit = _identify(robot, noisy_data, validation=False, solve=False)
    explicit.identif_config["torque_fit_joints"] = list(explicit.identif_config["active_joints"])
    explicit.solve(decimate=False, plotting=False)
    np.testing.assert_array_equal(explicit.phi_base, full.phi_base)


def test_solve_with_custom_solver_ridge_matches_lstsq_at_zero_alpha(robot, noisy_data):
    ref = _identify(robot, noisy_data, validation=False)
    ident = _identify(robot, noisy_data, validation=False, solve=False)
    phi = ident.solve_with_custom_solver(method="lstsq")
    np.testing.assert_allclose(phi, ref.phi_base, rtol=1e-8, atol=1e-10)


class MaskedUR10(UR10Identification):
    """Returns a TrajectoryData with an invalid stretch of samples."""

    bad = slice(1000, 1400)

    def load_trajectory_data(self, data_source=None):
        raw = super().load_trajectory_data(data_source)
        mask = np.ones(raw["positions"].shape[0], bool)
        mask[self.bad] = False
        return TrajectoryData.from_arrays(
            self.identif_config["active_joints"],
            raw["positions"],
            raw["torques"],
            effort_kind="joint_torque",
            effort_unit="N·m",
            t=raw["timestamps"][:, 0],
            dq=raw["velocities"],
            mask=mask,
        )


def test_sample_mask_removes_rows(robot, noisy_data):
    train, _ = noisy_data
    ident = MaskedUR10(robot, CONFIG, data_dir=train)
    ident.initialize()
    ident.solve(decimate=False, plotting=False)
    kept = N - 400
    assert ident.result["torque processed"].shape[0] == 6 * kept
    assert ident.stages[0].metrics["masked_samples"]["value"] == 400


# ---------------------------------------------------------------- bad inputs
class BrokenUR10(UR10Identification):
    mutate = staticmethod(lambda raw: raw)

    def load_trajectory_data(self, data_source=None):
        return self.mutate(super().load_trajectory_data(data_source))


def _broken(robot, data, mutate):
    ident = BrokenUR10(robot, CONFIG, data_dir=data[0])
    ident.mutate = mutate
    return ident


def _set(raw, key, value):
    raw[key] = value
    return raw


def _nan(raw):
    raw["positions"][10, 2] = np.nan
    return raw


def _non_monotonic(raw):
    raw["timestamps"][50] = raw["timestamps"][49]
    return raw


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda raw: _set(raw, "timestamps", None), "Timestamps are required"),
        (_nan, "'positions' contains NaN"),
        (_non_monotonic, "strictly increasing"),
        (
            lambda raw: _set(raw, "torques", raw["torques"][:, :5]),
            "'torques' has 5 columns but there are 6 active",
        ),
        (
            lambda raw: _set(raw, "velocities", raw["velocities"][:-3]),
            "'velocities' must have shape",
        ),
    ],
)
def test_bad_trajectory_data_is_refused(robot, noisy_data, mutate, match):
    ident = _broken(robot, noisy_data, mutate)
    with pytest.raises(ValueError, match=match):
        ident.initialize()


@pytest.mark.parametrize(
    "joints,match",
    [(["shoulder_pan_joint", "gripper_joint"], "not active joints"), ([], "is empty")],
)
def test_bad_torque_fit_joints(robot, noisy_data, joints, match):
    ident = _identify(robot, noisy_data, validation=False, solve=False)
    ident.identif_config["torque_fit_joints"] = joints
    with pytest.raises(ValueError, match=match):
        ident.solve(decimate=False, plotting=False)


def test_missing_validation_file_disables_validation(robot, noisy_data, caplog):
    # The value goes to load_trajectory_data unchanged; a loader that fails on it
    # leaves the run without held-out validation (a warning), as in 1.0.2.
    ident = UR10Identification(robot, CONFIG, data_dir=noisy_data[0])
    ident.identif_config["validation_data_file"] = "/nonexistent/heldout"
    with caplog.at_level("WARNING"):
        ident.initialize()
    assert "Validation data unavailable" in caplog.text and "/nonexistent/heldout" in caplog.text
    assert ident._val_available is False
    ident.solve(decimate=False, plotting=False)
    val = ident.result["validation_metrics"]
    assert val["validation_source"] == "identification_data_fallback"


def test_solve_before_process_data(robot, noisy_data):
    ident = UR10Identification(robot, CONFIG, data_dir=noisy_data[0])
    with pytest.raises(AssertionError, match="process_data"):
        ident.solve()
    with pytest.raises(RuntimeError, match="process_data"):
        ident.solve()
    with pytest.raises(AttributeError, match="solve"):
        ident.export_html_report()


def test_legacy_config_refused(robot, shared_data):
    legacy = shared_data / "ur10" / "config" / "ur10_config.yaml"

    class Dummy(BaseIdentification):
        def load_trajectory_data(self, data_source=None):
            return {}

    with pytest.raises(ConfigurationError, match="config_migration"):
        Dummy(robot, str(legacy))


def test_report_and_save(robot, noisy_data, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # plots go to ./results
    ident = _identify(robot, noisy_data)
    ident.print_quality_report()
    out = capsys.readouterr().out
    for heading in (
        "Stages:",
        "Condition:",
        "Per-Joint Torque Residuals",
        "Base-Parameter Uncertainty",
        "Validation (separate set",
    ):
        assert heading in out
    saved = ident.save_results(output_dir=str(tmp_path))
    assert saved and all(Path(p).exists() for p in saved.values())
    paths = ident.plot_results()
    assert paths is None or all(Path(p).exists() for p in paths)
