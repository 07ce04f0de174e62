"""Coulomb friction on round-off velocities: the diagnostic and the dead band option.

At rest the filtered velocities are round-off, and the Coulomb column
``sign(dq)`` then depends on the order of the floating-point operations (the
machine's BLAS kernels). Truths: counts built into synthetic data, a
round-off perturbation of the velocities (the column changes without the
dead band and is bit-identical with it), and on the real TX40 log an
independent numpy count of the processed velocities.
"""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from conftest import ROOT
from figaroh.errors import FigarohError
from figaroh.identification import _metrics
from figaroh.identification.quality_report import format_quality_report
from figaroh.tools.exceptions import RegressorConfigError
from figaroh.tools.regressor import RegressorConfig, build_regressor_basic

JOINTS = [f"j{k}" for k in range(3)]


def _rest_and_motion(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Velocities (n, 3): a motion, then rest samples of round-off size; and the rest mask."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 100.0
    v = np.column_stack([np.sin(2.0 * t + k + 0.5) * (k + 1) for k in range(3)])
    rest = np.zeros((n, 3), dtype=bool)
    rest[100:160, 0] = True  # 60 samples of joint 0
    rest[200:205, 2] = True  # 5 samples of joint 2; joint 1 never rests
    v[rest] = rng.choice([-1.0, 1.0], rest.sum()) * rng.uniform(1e-16, 1e-14, rest.sum())
    return v, rest


def test_round_off_samples_counted_per_joint() -> None:
    v, rest = _rest_and_motion(0)
    summary = _metrics.coulomb_at_rest(v, JOINTS)
    assert summary["round_off_per_joint"] == {"j0": 60, "j2": 5}
    assert summary["round_off_rows"] == 65
    assert summary["round_off_scale"] == _metrics.ROUND_OFF_SCALE
    text = _metrics.coulomb_at_rest_message(summary)
    assert "65 samples (j0: 60, j2: 5) have round-off velocities" in text
    assert "problem.coulomb_deadband" in text


def test_a_dead_band_above_the_round_off_removes_it_one_below_does_not() -> None:
    v, _ = _rest_and_motion(1)
    covered = _metrics.coulomb_at_rest(v, JOINTS, deadband=1e-6)
    assert covered["round_off_rows"] == 0 and covered["round_off_per_joint"] == {}
    assert "round-off" not in _metrics.coulomb_at_rest_message(covered)
    too_small = _metrics.coulomb_at_rest(v, JOINTS, deadband=1e-20)
    assert too_small["round_off_rows"] == 65


def test_moving_joints_have_no_round_off_samples() -> None:
    t = np.arange(1000) / 100.0
    v = np.column_stack([np.cos(t), 0.5 + np.sin(3 * t)])  # zero crossings, no rest
    assert _metrics.coulomb_at_rest(v, JOINTS[:2])["round_off_rows"] == 0


def test_dead_band_makes_the_coulomb_column_independent_of_round_off(ur10_robot) -> None:
    model = ur10_robot.model
    rng = np.random.default_rng(3)
    n = 200
    q = rng.uniform(-1.0, 1.0, (n, model.nq))
    v = rng.uniform(-1.0, 1.0, (n, model.nv))
    v[50:120] = 0.0  # the robot rests
    a = rng.uniform(-1.0, 1.0, (n, model.nv))
    other = v.copy()  # the same rest on another machine: other round-off signs
    other[50:120] = rng.choice([-1.0, 1.0], (70, model.nv)) * 1e-15
    config = {"has_friction": True, "act_idxv": list(range(model.nv))}
    n_in = 10 * (model.njoints - 1)
    fs_cols = n_in + model.nv + np.arange(model.nv)

    def coulomb(vel, band=None):
        cfg = config if band is None else {**config, "coulomb_deadband": band}
        W = build_regressor_basic(ur10_robot, q, vel, a, cfg)
        return W[:, fs_cols]

    assert not np.array_equal(coulomb(v), coulomb(other))  # 1.0.2: machine-dependent
    assert np.array_equal(coulomb(v, 1e-6), coulomb(other, 1e-6))
    assert np.array_equal(coulomb(v, 0.0), coulomb(v))  # 0 is 1.0.2's sign(dq)


@pytest.mark.parametrize("band", [-1e-3, float("nan"), float("inf"), "fast", True])
def test_invalid_dead_band_names_the_key(ur10_robot, band) -> None:
    nv = ur10_robot.model.nv
    zeros = np.zeros((5, nv))
    config = {"has_friction": True, "act_idxv": list(range(nv)), "coulomb_deadband": band}
    with pytest.raises(RegressorConfigError, match="coulomb_deadband") as info:
        build_regressor_basic(ur10_robot, np.zeros((5, ur10_robot.model.nq)), zeros, zeros, config)
    assert isinstance(info.value, ValueError) and isinstance(info.value, FigarohError)
    if not isinstance(band, str):
        with pytest.raises(RegressorConfigError, match="finite speed >= 0"):
            RegressorConfig(has_friction=True, coulomb_deadband=band)


# ---------------------------------------------------------------- real log at rest


@pytest.fixture(scope="module")
def tx40(shared_data):
    folder = shared_data / "staubli_tx40"
    if not (folder / "pos_read_data.csv").is_file():
        pytest.skip(f"TX40 log not found in {folder}")
    sys.path.insert(0, str(ROOT / "examples" / "staubli_tx40"))
    try:
        from staubli_tx40_tools import CONFIG, TX40Identification, load_tx40
    finally:
        sys.path.remove(str(ROOT / "examples" / "staubli_tx40"))
    return TX40Identification, load_tx40(folder), CONFIG, folder


def _solve(tx40, caplog, deadband=None):
    cls, robot, config, folder = tx40
    ident = cls(robot, config, data_dir=folder)
    ident.print_quality_report = lambda: None  # type: ignore[method-assign]
    if deadband is not None:
        ident.identif_config["coulomb_deadband"] = deadband
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        ident.initialize()
        ident.solve(decimate=True, wls=True, plotting=False)
    warnings = [r for r in caplog.records if "Coulomb friction" in r.getMessage()]
    return ident, warnings


def test_tx40_report_counts_the_round_off_samples_and_recommends_the_dead_band(tx40, caplog):
    ident, warnings = _solve(tx40, caplog)
    v = np.abs(np.asarray(ident.processed_data["velocities"]))[:, ident.identif_config["act_idxv"]]
    expected = {
        name: int(c)
        for name, c in zip(
            ident.identif_config["active_joints"],
            (v <= 1e-9 * v.max(axis=0)).sum(axis=0),
            strict=True,
        )
        if c
    }
    at_rest = ident.result["coulomb_at_rest"]
    assert at_rest["round_off_per_joint"] == expected
    assert expected["joint_2"] > 4000 and expected["joint_3"] > 4000
    assert len(warnings) == 1 and "round-off velocities" in warnings[0].getMessage()
    assert "problem.coulomb_deadband" in warnings[0].getMessage()
    assert "round-off velocities" in format_quality_report(ident)
    fit = next(s for s in ident.stages if s.stage == "fit")
    assert fit.metrics["coulomb_round_off_rows"]["value"] == sum(expected.values())


def test_tx40_with_a_dead_band_no_round_off_sign_is_left(tx40, caplog):
    ident, warnings = _solve(tx40, caplog, deadband=1e-6)
    assert ident.result["coulomb_at_rest"]["round_off_rows"] == 0
    assert warnings == []
    # the example's coupled-wrist Coulomb column sign(v5 + v6) honours the band too
    n, nv = ident.num_samples, ident.model.nv
    coupled = ident.dynamic_regressor.reshape(nv, n, -1)[4, :, -1]
    v = ident.processed_data["velocities"]
    s = v[:, 4] + v[:, 5]
    assert np.array_equal(coupled, np.where(np.abs(s) < 1e-6, 0.0, np.sign(s)))
    assert np.sum(np.abs(s) < 1e-6) > 100
