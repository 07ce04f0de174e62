"""Stäubli TX40 identification on the real log (examples/staubli_tx40).

Truths used: the published friction of the legacy TX40_config.yaml (read from
the shared data, never hard-coded), algebraic identities of the drive chain
(virtual power, inverse maps), the regressor definition of the coupled-wrist
columns, and exact recovery by the essential-parameter routine on synthetic
data.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "staubli_tx40"
sys.path.insert(0, str(EXAMPLE))

from staubli_tx40_tools import (  # noqa: E402
    CONFIG,
    JOINT_ZERO_SHIFT,
    TX40Identification,
    current_to_torque_matrix,
    load_tx40,
    motor_to_joint_matrix,
)

from figaroh.identification.essential import (  # noqa: E402
    essential_parameters,
    relative_std_percent,
)
from figaroh.identification.exceptions import (  # noqa: E402
    IdentificationConfigError,
    IdentificationDataError,
)
from figaroh.identification.quality_report import format_quality_report  # noqa: E402
from figaroh.tools.exceptions import RankDeficiencyError  # noqa: E402

RATIOS = [32.0, 32.0, 45.0, -48.0, 45.0, 32.0]


@pytest.fixture(scope="module")
def tx40_dir(shared_data) -> Path:
    folder = shared_data / "staubli_tx40"
    if not (folder / "pos_read_data.csv").is_file():
        pytest.skip(f"TX40 log not found in {folder}")
    return folder


@pytest.fixture(scope="module")
def reference(tx40_dir) -> dict:
    """robot_params of the legacy config: the published TX40 values."""
    with open(tx40_dir / "config" / "TX40_config.yaml") as f:
        legacy = yaml.safe_load(f)
    return legacy["identification"]["robot_params"][0]


@pytest.fixture(scope="module")
def robot(tx40_dir):
    return load_tx40(tx40_dir)


@pytest.fixture(scope="module")
def solved(robot, tx40_dir):
    """WLS + decimation + per-joint speed selection; (ident, seconds, report text)."""
    ident = TX40Identification(robot, CONFIG, data_dir=tx40_dir)
    reports = []
    ident.print_quality_report = lambda: reports.append(  # type: ignore[method-assign]
        format_quality_report(ident)
    )
    start = time.perf_counter()
    ident.initialize()
    ident.solve(decimate=True, wls=True, plotting=False)
    seconds = time.perf_counter() - start
    print(f"\nTX40 initialize + solve: {seconds:.2f} s")
    return ident, seconds, reports[-1]


# ---------------------------------------------------------------------------
# required results on the real data
# ---------------------------------------------------------------------------


def test_friction_of_joints_1_to_3_within_10_percent(solved, reference):
    ident, _, _ = solved
    found = ident.identified_friction()
    for j in range(3):
        joint = f"joint_{j + 1}"
        for kind in ("fv", "fs"):
            ref = float(reference[kind][j])
            value = found[kind][joint]
            err = abs(value - ref) / abs(ref)
            print(
                f"{kind}_{joint}: identified {value:.4f}, reference {ref:.4f} ({100 * err:.1f} %)"
            )
            assert err < 0.10, f"{kind}_{joint}: {value:.4f} vs reference {ref}"


def test_coupled_wrist_parameters_identified(solved, reference):
    ident, _, _ = solved
    coupled = ident.identified_friction()["coupled"]
    assert set(coupled) == {"Iam6", "fvm6", "fsm6"}
    # same physical sign and order of magnitude as the published values
    for key in coupled:
        assert 0.5 < coupled[key] / float(reference[key]) < 2.0, (key, coupled[key])


def test_torque_correlation(solved):
    ident, _, _ = solved
    print(f"correlation {ident.correlation:.4f}; per joint {ident.joint_correlations()}")
    assert ident.correlation > 0.95
    assert min(ident.joint_correlations().values()) > 0.95


def test_condition_number_finite_and_reported(solved):
    ident, _, report = solved
    cond = ident.result["condition number"]
    assert np.isfinite(cond) and cond >= 1.0
    assert f"Condition:    {cond:.1f}" in report
    np.testing.assert_allclose(cond, np.linalg.cond(ident.dynamic_regressor_base), rtol=1e-6)


def test_run_time(solved):
    _, seconds, _ = solved
    print(f"initialize + solve took {seconds:.2f} s (target < 30 s)")
    assert seconds < 60.0


def test_wls_variances_per_joint_block(solved):
    ident, _, _ = solved
    assert "wls_std_deviations" in ident.result
    assert np.all(np.isfinite(ident.result["wls_std_deviations"]))
    var = ident._joint_variances
    sizes = ident._row_block_sizes
    assert var.shape == (int(sizes.sum()),)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for s, n in zip(starts, sizes, strict=True):
        assert np.all(var[s : s + n] == var[s])  # one variance per joint
    # the weights make every joint block contribute a comparable residual
    assert len(np.unique(var[starts])) == 6


# ---------------------------------------------------------------------------
# sample selection
# ---------------------------------------------------------------------------


def test_rows_below_speed_threshold_are_dropped(solved):
    ident, _, _ = solved
    idxv = ident.identif_config["act_idxv"]
    dq = ident.processed_data["velocities"][::10][:, idxv]
    expected = (np.abs(dq) >= ident.speed_thresholds).sum(axis=0)
    np.testing.assert_array_equal(ident._row_block_sizes, expected)
    assert len(ident.tau_noised) == int(expected.sum())
    assert np.all(expected < dq.shape[0])  # every joint loses some rows


def test_thresholds_from_config_match_legacy(solved, reference):
    ident, _, _ = solved
    np.testing.assert_allclose(ident.speed_thresholds, reference["dq_lim_def"])
    np.testing.assert_allclose(ident.reduction_ratios, reference["reduction_ratio"])


def test_without_selection_coulomb_friction_is_biased(robot, tx40_dir, reference):
    """The selection is what makes the Coulomb friction right (not a no-op)."""
    ident = TX40Identification(robot, CONFIG, data_dir=tx40_dir)
    ident.print_quality_report = lambda: None  # type: ignore[method-assign]
    ident.speed_thresholds = None
    ident.initialize()
    ident.solve(decimate=True, wls=True, plotting=False)
    fs = ident.identified_friction()["fs"]
    errors = [abs(fs[f"joint_{j + 1}"] / reference["fs"][j] - 1.0) for j in range(3)]
    print(f"Coulomb friction errors without selection: {np.round(100 * np.array(errors), 1)} %")
    assert max(errors) > 0.10


# ---------------------------------------------------------------------------
# drive chain and regressor
# ---------------------------------------------------------------------------


def test_drive_matrices_conserve_power():
    rng = np.random.default_rng(0)
    kt = rng.uniform(0.5, 2.0, 6)
    N = motor_to_joint_matrix(RATIOS)
    T = current_to_torque_matrix(RATIOS, kt)
    assert N[5, 4] == RATIOS[5] and T[4, 5] == RATIOS[5] * kt[5]
    for _ in range(5):
        dq, i_m = rng.normal(size=6), rng.normal(size=6)
        # joint power τ·dq equals motor power (Kt i)·(N dq)
        np.testing.assert_allclose((T @ i_m) @ dq, (kt * i_m) @ (N @ dq), rtol=1e-12)


def test_joint_positions_map_back_to_motor_positions(solved):
    ident, _, _ = solved
    raw = ident.raw_data
    q_joint = raw["positions"] - JOINT_ZERO_SHIFT
    np.testing.assert_allclose(
        q_joint @ motor_to_joint_matrix(RATIOS).T, raw["motor_positions"], atol=1e-9
    )


def test_torques_are_drive_conversion_of_trimmed_currents(solved):
    ident, _, _ = solved
    current = ident.raw_data["torques"]
    e = ident.edge_samples
    assert e == 20 and ident.num_samples == current.shape[0] - 2 * e
    expected = current[e:-e] @ current_to_torque_matrix(RATIOS, ident.torque_constants).T
    np.testing.assert_allclose(ident.processed_data["torques"], expected)
    assert ident.processed_data["positions"].shape[0] == ident.num_samples


def test_coupled_wrist_columns(solved):
    ident, _, _ = solved
    n, nv = ident.num_samples, ident.model.nv
    keys = list(ident.standard_parameter)
    assert keys[-3:] == ["Iam6", "fvm6", "fsm6"]
    assert len(keys) == ident.dynamic_regressor.shape[1]
    W = ident.dynamic_regressor.reshape(nv, n, -1)[:, :, -3:]
    v, a = ident.processed_data["velocities"], ident.processed_data["accelerations"]
    s = np.sign(v[:, 4] + v[:, 5])
    np.testing.assert_array_equal(W[4], np.column_stack([a[:, 5], v[:, 5], s]))
    np.testing.assert_array_equal(W[5], np.column_stack([a[:, 4], v[:, 4], s]))
    assert not W[:4].any()
    # the nominal coupled-wrist values enter the reference torque of joints 5 and 6
    phi = np.fromiter(ident.standard_parameter.values(), float)
    assert phi[-3:].tolist() == [0.00964, 0.616, 1.95]


# ---------------------------------------------------------------------------
# essential parameters
# ---------------------------------------------------------------------------


def test_essential_parameters_on_real_fit(solved, reference):
    ident, _, _ = solved
    ess = ident.essential
    ratio = float(reference["ratio_essential"])
    assert ess.ratio_essential == ratio
    assert ess.std_relative.max() / ess.std_relative.min() <= ratio
    assert len(ess.names) + len(ess.removed) == len(ident.params_base)
    for j in range(1, 4):
        assert f"fv_joint_{j}" in ess.names and f"fs_joint_{j}" in ess.names
    assert ess.rmse_essential < 1.1 * ess.rmse_base  # the essential model fits about as well
    assert ident.result["essential parameters"] == ess.as_dict()


def test_essential_exact_recovery_and_elimination():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(2000, 5))
    phi = np.array([3.0, -2.0, 1.0, 1e-4, 5e-5])
    tau = W @ phi
    # noise-free: everything exactly determined, nothing dropped
    ess = essential_parameters(W, tau, list("abcde"), ratio_essential=10.0)
    assert ess.removed == [] and ess.ratio == 1.0
    np.testing.assert_allclose(ess.phi, phi, atol=1e-10)
    # with noise the two negligible parameters are the poorly determined ones
    noisy = tau + 0.05 * rng.normal(size=tau.size)
    ess = essential_parameters(W, noisy, list("abcde"), ratio_essential=10.0)
    assert sorted(ess.removed) == ["d", "e"] and ess.names == ["a", "b", "c"]
    np.testing.assert_allclose(ess.phi, phi[:3], atol=0.01)
    # the reduced fit equals an independent least-squares fit on the kept columns
    np.testing.assert_allclose(ess.phi, np.linalg.lstsq(W[:, :3], noisy, rcond=None)[0])
    _, std, _ = relative_std_percent(W[:, :3], noisy)
    np.testing.assert_allclose(ess.std_relative, std)


def test_essential_row_weights_equal_scaled_problem():
    rng = np.random.default_rng(2)
    W = rng.normal(size=(500, 3))
    tau = W @ np.array([1.0, 2.0, 3.0]) + 0.1 * rng.normal(size=500)
    w = rng.uniform(0.5, 2.0, 500)
    a = essential_parameters(W, tau, ["x", "y", "z"], row_weights=w)
    b = essential_parameters(W * w[:, None], tau * w, ["x", "y", "z"])
    np.testing.assert_allclose(a.phi, b.phi)
    np.testing.assert_allclose(a.std_relative, b.std_relative)


def test_essential_bad_input():
    W = np.ones((10, 2))
    with pytest.raises(RankDeficiencyError):
        essential_parameters(W, np.ones(10), ["a", "b"])
    with pytest.raises(ValueError, match="ratio_essential"):
        essential_parameters(np.eye(3)[:, :2], np.ones(3), ["a", "b"], ratio_essential=1.0)
    with pytest.raises(ValueError, match="names"):
        essential_parameters(np.eye(3)[:, :2], np.ones(3), ["a"])
    with pytest.raises(ValueError, match="finite"):
        essential_parameters(np.eye(3)[:, :2], np.array([1.0, np.nan, 0.0]), ["a", "b"])


# ---------------------------------------------------------------------------
# errors and the script
# ---------------------------------------------------------------------------


def test_missing_data_folder(robot, tmp_path):
    ident = TX40Identification(robot, CONFIG, data_dir=tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="pos_read_data.csv"):
        ident.initialize()


def test_row_count_mismatch(robot, tx40_dir, tmp_path):
    header = "Joint_1,Joint_2,Joint_3,Joint_4,Joint_5,Joint_6\n"
    (tmp_path / "pos_read_data.csv").write_text(header + "0,0,0,0,0,0\n" * 300)
    (tmp_path / "curr_data.csv").write_text(header + "0,0,0,0,0,0\n" * 299)
    ident = TX40Identification(robot, CONFIG, data_dir=tmp_path)
    with pytest.raises(IdentificationDataError, match="same samples"):
        ident.initialize()


def test_bad_header(robot, tmp_path):
    (tmp_path / "pos_read_data.csv").write_text("a,b,c,d,e,f\n" + "0,0,0,0,0,0\n" * 10)
    ident = TX40Identification(robot, CONFIG, data_dir=tmp_path)
    with pytest.raises(IdentificationDataError, match="header"):
        ident.initialize()


def test_config_without_torque_constants(robot, tmp_path):
    text = CONFIG.read_text().replace("motor_torque_constants", "unused_constants")
    text = text.replace(
        '"../../../config/templates/manipulator_robot.yaml"',
        f'"{CONFIG.parents[3] / "config" / "templates" / "manipulator_robot.yaml"}"',
    )
    cfg = tmp_path / "tx40.yaml"
    cfg.write_text(text)
    with pytest.raises(IdentificationConfigError, match="motor_torque_constants"):
        TX40Identification(robot, cfg)


def test_script_runs_on_data_folder(tx40_dir, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "tx40_identification_script", EXAMPLE / "identification.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    # the script takes the folder from the command line (a copy proves it is used)
    data = tmp_path / "tx40"
    data.mkdir()
    for name in ("pos_read_data.csv", "curr_data.csv", "tx40_mdh_modified.urdf"):
        shutil.copy(tx40_dir / name, data / name)
    assert script.main([str(data)]) == 0
    out = capsys.readouterr().out
    assert "Condition:" in out and "Essential parameters" in out and "fv nom" in out
    assert (
        script.DEFAULT_DATA_DIR
        == Path(__file__).resolve().parents[1].parent / "shared" / "data" / "staubli_tx40"
    )


def test_plot_per_joint_blocks(solved, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    ident, _, _ = solved
    path = ident.plot_results(output_dir=str(tmp_path))
    assert path is not None and Path(path).stat().st_size > 10_000
