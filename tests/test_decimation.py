"""The decimated fit rows are figaroh 1.0.2's column-by-column ``scipy.signal.decimate`` calls.

figaroh 1.0.2 decimates each torque column and each column of each active
regressor block with its own ``scipy.signal.decimate(x, q, zero_phase=True)``
call. figaroh filters all columns in one call along the time axis (and, when
it decimates, lays the reduced regressor out column-major so that scipy makes
no transposed copy); the result must be the same array, bit for bit
(``np.array_equal``), whatever the memory layout and the set of active DOFs —
on synthetic blocks and on the real Stäubli TX40 logs (45 000 samples, rest
phases included).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from scipy import signal

from conftest import load_example
from figaroh.identification._pipeline import fit_rows
from figaroh.identification._pipeline.records import Settings

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "staubli_tx40"


def _settings(nv: int, act_idxv: list[int]) -> Settings:
    n = len(act_idxv)
    return Settings(
        config={},
        nv=nv,
        q0=np.zeros(nv),
        act_idxq=tuple(act_idxv),
        act_idxv=tuple(act_idxv),
        continuous=(False,) * n,
        active_joints=tuple(f"j{i}" for i in act_idxv),
        effort_units=("N·m",) * n,
    )


def column_by_column(W: np.ndarray, n: int, act_idxv, factor: int) -> np.ndarray:
    """figaroh 1.0.2: one decimate call per column of each active block, blocks stacked."""
    blocks = []
    for j in act_idxv:
        rows = np.asarray(W[j * n : (j + 1) * n])
        cols = [signal.decimate(rows[:, k], factor, zero_phase=True) for k in range(W.shape[1])]
        blocks.append(np.column_stack(cols))
    return np.vstack(blocks)


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize(("nv", "act_idxv"), [(4, [0, 1, 2, 3]), (6, [3, 0, 5])])
@pytest.mark.parametrize("factor", [3, 10])
def test_one_call_equals_column_by_column_calls(layout, nv, act_idxv, factor):
    rng = np.random.default_rng(nv * factor)
    n, p = 701, 7
    # smooth and noisy columns, a constant one and one with long rests at ±1e-15
    W = np.cumsum(rng.normal(size=(nv * n, p)), axis=0) + rng.normal(size=(nv * n, p))
    W[:, 2] = 3.0
    W[:, 5] = np.where(rng.random(nv * n) < 0.5, 1e-15, -1e-15)
    W = np.asarray(W, order=layout)
    got = fit_rows.decimate_regressor(W, n, factor, _settings(nv, act_idxv))
    expected = column_by_column(np.ascontiguousarray(W), n, act_idxv, factor)
    assert got.flags.c_contiguous and got.shape == (len(act_idxv) * -(-n // factor), p)
    assert np.array_equal(got, expected)


def test_torques_equal_joint_by_joint_calls():
    rng = np.random.default_rng(1)
    tau = np.cumsum(rng.normal(size=(900, 5)), axis=0)
    expected = np.concatenate([signal.decimate(tau[:, j], 10, zero_phase=True) for j in range(5)])
    assert np.array_equal(fit_rows.decimate_torques(tau, 900, 10), expected)


def test_column_major_elimination_has_the_same_values():
    rng = np.random.default_rng(2)
    W = rng.normal(size=(3000, 9))
    W[:, [1, 4]] = 0.0
    params = {f"p{i}": 0.0 for i in range(9)}
    C, names_c, idx_c = fit_rows.eliminate_zero_columns(W, params, 1e-3)
    F, names_f, idx_f = fit_rows.eliminate_zero_columns(W, params, 1e-3, column_major=True)
    assert (names_c, idx_c) == (names_f, idx_f) and idx_c == [1, 4]
    assert C.flags.c_contiguous and F.flags.f_contiguous and not np.shares_memory(F, W)
    assert np.array_equal(C, F) and np.array_equal(C, W[:, [0, 2, 3, 5, 6, 7, 8]])


@pytest.fixture(scope="module")
def tx40():
    if not (DATA / "pos_read_data.csv").is_file():
        pytest.skip(f"TX40 logs not found in {DATA}")
    ex = load_example("staubli_tx40/staubli_tx40_tools.py", "staubli_tx40_tools_decimation")
    robot = ex.load_tx40(DATA)
    ident = ex.TX40Identification(robot, ex.CONFIG, data_dir=DATA)
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=True, decimation_factor=10, plotting=False, wls=True, verbose=False)
    return ident


def test_tx40_decimated_regressor_is_column_by_column_decimate(tx40):
    n = tx40.num_samples
    W_red = tx40.regressor_reduced
    assert n == 44960 and W_red.shape[0] == 6 * n
    assert W_red.flags.f_contiguous  # decimation path: column-major, no transposed copy
    act = tx40.identif_config["act_idxv"]
    expected = column_by_column(np.ascontiguousarray(W_red), n, act, 10)
    assert np.array_equal(tx40.regressor_decimated, expected)
    torques = tx40.processed_data["torques"]
    expected_tau = np.concatenate(
        [signal.decimate(torques[:, j], 10, zero_phase=True) for j in range(6)]
    )
    assert np.array_equal(tx40.tau_decimated, expected_tau)
