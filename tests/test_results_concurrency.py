"""Four processes saving results and archiving runs into one folder at the same moment.

Four small UR10 identifications (300 samples each, different noise seeds) are
solved in the test process; four forked children then wait at one barrier and
each call ``save_results()`` into one shared folder and ``archive_run()`` into
one shared archive root. Every run's files must be present, distinct and
intact (parsed back and compared with that run's own values), every archived
run must verify against the sha256 recorded in the index, and the index must
hold one intact line per run.

A second test checks the size layout on a UR10-sized save (10 000 samples'
worth of per-sample arrays): under 1 MB by default, arrays only in the NPZ and
only when asked.
"""

from __future__ import annotations

import contextlib
import csv
import io
import multiprocessing as mp
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import load_example
from figaroh.tools.run_archive import (
    archive_run,
    compute_run_dir,
    read_index,
    verify_archived_run,
)
from figaroh.utils.results_manager import ResultsManager

_ur10 = load_example("ur10/identification.py", "ur10_identification")

N_PROC = 4
FINISHED = "2026-01-01T00:00:00+00:00"  # one timestamp: every run claims the same names

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or "fork" not in mp.get_all_start_methods(),
    reason="needs fork",
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Four solved identifications with one shared provenance timestamp."""
    out = []
    for seed in range(N_PROC):
        work = tmp_path_factory.mktemp(f"ident{seed}")
        with contextlib.redirect_stdout(io.StringIO()):
            ident = _ur10.run(work, n_samples=300, noise_std=0.5, seed=10 * seed, quiet=True)
        ident._run_provenance["timestamps"]["run_finished"] = FINISHED
        ident._run_provenance["run_id"] = f"concurrency-run-{seed}"
        out.append(ident)
    return out


def _child(ident, index, barrier, results_dir, root, queue) -> None:
    try:
        barrier.wait(timeout=30)
        saved = ident.save_results(str(results_dir), include_arrays=index % 2 == 1)
        archived = archive_run(ident, compute_run_dir(ident, root))
        queue.put((index, saved, archived, None))
    except BaseException as exc:  # reported to the parent, which fails the test
        queue.put((index, None, None, repr(exc)))


def _csv_columns(path: str) -> dict[str, list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return {name: [r[i] for r in rows[1:] if r[i] != ""] for i, name in enumerate(rows[0])}


def _check_saved(ident, saved: dict, with_arrays: bool) -> None:
    assert set(saved) == {"yaml", "csv", "npz", "metadata"}
    phi = np.asarray(ident.phi_base, dtype=float)
    y = yaml.safe_load(Path(saved["yaml"]).read_text(encoding="utf-8"))
    np.testing.assert_array_equal(y["base parameters values"], phi)
    assert y["base parameters names"] == list(ident.result["base parameters names"])
    assert y["provenance"]["run_id"] == ident._run_provenance["run_id"]
    cols = _csv_columns(saved["csv"])
    np.testing.assert_array_equal([float(v) for v in cols["base parameters values"]], phi)
    with np.load(saved["npz"], allow_pickle=False) as z:
        np.testing.assert_array_equal(z["base parameters values"], phi)
        assert ("torque processed" in z.files) is with_arrays
        if with_arrays:
            np.testing.assert_array_equal(z["torque processed"], ident.result["torque processed"])
    meta = yaml.safe_load(Path(saved["metadata"]).read_text(encoding="utf-8"))
    assert meta["files"] == {k: Path(v).name for k, v in saved.items() if k != "metadata"}


def _check_archived(ident, run_dir: str, root: Path) -> None:
    check = verify_archived_run(run_dir, root)
    assert check.ok, check.problems
    with open(Path(run_dir) / "parameters.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))[1:]
    np.testing.assert_array_equal([float(v) for _, v in rows], np.asarray(ident.phi_base))


def test_four_processes_save_and_archive_into_one_folder(runs, tmp_path):
    results_dir, root = tmp_path / "results", tmp_path / "runs"
    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(N_PROC), ctx.Queue()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (numpy/BLAS)
        procs = [
            ctx.Process(target=_child, args=(runs[i], i, barrier, results_dir, root, queue))
            for i in range(N_PROC)
        ]
        for p in procs:
            p.start()
    outcomes = [queue.get(timeout=50) for _ in range(N_PROC)]
    for p in procs:
        p.join(timeout=10)
        assert p.exitcode == 0
    errors = [err for *_, err in outcomes if err]
    assert not errors, errors

    by_index = {i: (saved, archived) for i, saved, archived, _ in outcomes}
    all_paths = [p for saved, _ in by_index.values() for p in saved.values()]
    assert len(set(all_paths)) == len(all_paths) == 4 * N_PROC  # no name shared by two runs
    for i, (saved, archived) in by_index.items():
        _check_saved(runs[i], saved, with_arrays=i % 2 == 1)
        _check_archived(runs[i], archived, root)
    assert len({archived for _, archived in by_index.values()}) == N_PROC

    entries = read_index(root)
    assert len((root / "index.jsonl").read_text(encoding="utf-8").splitlines()) == N_PROC
    assert sorted(e["run_id"] for e in entries) == [f"concurrency-run-{i}" for i in range(N_PROC)]
    assert len({e["run_dir"] for e in entries}) == N_PROC
    assert not [n for n in os.listdir(results_dir) if n.startswith(".")]  # no claim, no temp


def test_ur10_sized_save_is_small_and_arrays_only_on_request(tmp_path):
    """60 000 stacked efforts × 48 base parameters (UR10, 10 000 samples)."""
    rng = np.random.default_rng(0)
    n_rows, n_base = 6 * 10_000, 48
    names = [f"p{i}" for i in range(n_base)]
    phi = rng.normal(size=n_base)
    per_joint = {f"joint{j}": rng.normal(size=10_000).tolist() for j in range(6)}
    results = {
        "base regressor": rng.normal(size=(n_rows, n_base)),
        "base parameters": dict(zip(names, phi.tolist(), strict=True)),
        "base parameters values": phi,
        "base parameters names": names,
        "condition number": 112.3,
        "torque estimated": rng.normal(size=n_rows),
        "torque processed": rng.normal(size=n_rows),
        "std dev of estimated param": np.abs(rng.normal(size=n_base)),
        "rmse norm (N/m)": 0.52,
        "num samples": 10_000,
        "task type": "identification",
        "validation_metrics": {
            "rmse_identified": 0.5,
            "tau_measured_per_joint": per_joint,
            "tau_identified_per_joint": per_joint,
            "tau_nominal_per_joint": per_joint,
        },
    }
    manager = ResultsManager("identification", "ur10", results)
    formats = ["yaml", "csv", "npz"]
    small = manager.save_results(output_dir=tmp_path / "a", save_formats=formats)
    assert sum(Path(p).stat().st_size for p in small.values()) < 1_000_000
    with np.load(small["npz"]) as z:
        assert not [
            k for k in z.files if k.startswith(("torque", "base regressor", "validation_metrics/"))
        ]
    full = manager.save_results(
        output_dir=tmp_path / "b", save_formats=formats, include_arrays=True
    )
    for fmt in ("yaml", "csv", "metadata"):
        assert Path(full[fmt]).stat().st_size < 100_000
    with np.load(full["npz"]) as z:
        np.testing.assert_array_equal(z["base regressor"], results["base regressor"])
        np.testing.assert_array_equal(
            z["validation_metrics/tau_measured_per_joint/joint3"], per_joint["joint3"]
        )
