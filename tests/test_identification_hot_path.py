"""The identification hot path builds each regressor once and keeps the same numbers.

Small UR10 runs (a few hundred samples): the held-out regressor is built on the
first ``solve`` and reused by the next ones, rebuilt after a new
``initialize``; a held-out copy of the training data reuses the training
regressor; the reduced regressor equals the fancy-indexed column selection.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_example
from figaroh.identification._pipeline.fit_rows import eliminate_zero_columns

_ur10 = load_example("ur10/identification.py", "ur10_identification")

N = 300


@pytest.fixture(scope="module")
def robot():
    return _ur10.load_ur10()


@pytest.fixture(scope="module")
def data(tmp_path_factory, robot):
    return _ur10.generate_ur10_data(
        tmp_path_factory.mktemp("hot"), N, noise_std=0.5, seed=1, robot=robot
    )


def _ident(robot, train, validation):
    ident = _ur10.UR10Identification(robot, _ur10.CONFIG, data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    return ident


def _counting(ident):
    calls = []
    build = ident.build_regressor

    def counted(q, v, a):
        calls.append(q.shape[0])
        return build(q, v, a)

    ident.build_regressor = counted
    return calls


def test_held_out_regressor_built_once_and_same_numbers(robot, data, capsys):
    ident = _ident(robot, *data)
    calls = _counting(ident)
    ident.solve(decimate=False, plotting=False)
    first = ident.result["validation_metrics"]
    ident.solve(decimate=False, plotting=False)
    second = ident.result["validation_metrics"]
    assert calls == [N]
    assert first["rmse_identified"] == second["rmse_identified"]
    assert first["tau_identified_per_joint"] == second["tau_identified_per_joint"]
    # a fresh object gives the same numbers (the cache changes no value)
    fresh = _ident(robot, *data)
    fresh.solve(decimate=False, plotting=False)
    assert fresh.result["validation_metrics"]["rmse_identified"] == first["rmse_identified"]
    capsys.readouterr()


def test_new_initialize_rebuilds_held_out_regressor(robot, data, capsys):
    ident = _ident(robot, *data)
    ident.solve(decimate=False, plotting=False)
    ident.initialize()
    assert ident._val_regressor is None
    calls = _counting(ident)
    ident.solve(decimate=False, plotting=False)
    assert N in calls
    capsys.readouterr()


def test_held_out_copy_of_training_reuses_training_regressor(robot, data, capsys):
    train, _ = data
    ident = _ident(robot, train, train)
    calls = _counting(ident)
    ident.solve(decimate=False, plotting=False)
    assert calls == []
    assert ident.result["validation_metrics"]["validation_source"] == (
        "identification_data_fallback"
    )
    capsys.readouterr()


def test_eliminate_zero_columns_matches_column_selection():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((50, 8))
    W[:, [1, 4]] = 0.0
    params = {f"p{i}": float(i) for i in range(8)}
    W_red, names, idx = eliminate_zero_columns(W, params, 1e-3)
    keep = [0, 2, 3, 5, 6, 7]
    assert idx == [1, 4] and names == [f"p{i}" for i in keep]
    assert np.array_equal(W_red, W[:, keep]) and not np.shares_memory(W_red, W)
    W_all, _, none = eliminate_zero_columns(W[:, keep], params, 1e-3)
    assert none == [] and not np.shares_memory(W_all, W)
