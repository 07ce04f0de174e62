"""figaroh.fleet.run_batch on an embedded Dask LocalCluster (2 worker processes).

A small batch (2 simulated UR10 robots × 2 sessions, 300 samples, plus a job
with a malformed log and a repeated job) run serially and on Dask: the same
numbers to the bit, the bad job collected as a failure while the others
finish, the repeat run once, and a second run of the batch (through a
scheduler address, then a caller's Client) adds no run.
"""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from conftest import load_example

pytest.importorskip("distributed", reason="figaroh.fleet.run_batch needs dask[distributed]")

from figaroh.errors import MissingDependencyError  # noqa: E402
from figaroh.fleet.cluster import dask_client  # noqa: E402
from figaroh.fleet.jobs import Job, load_batch  # noqa: E402
from figaroh.fleet.run_index import RunIndex, index_path  # noqa: E402
from figaroh.fleet.runner import BatchResult, run_batch, run_serial, task_key  # noqa: E402

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")


def _bad_job(template: Job, folder) -> Job:
    folder.mkdir()
    (folder / "identification.csv").write_text("t,q_shoulder_pan_joint\n0,0\n0.01,0.1\n")
    return Job(**{**template.fields(), "robot_id": "robot_bad", "data": str(folder)})


@pytest.fixture(scope="module")
def batches(tmp_path_factory):

    root = tmp_path_factory.mktemp("fleet_runner")
    paths = fleet_example.write_fleet(root / "fleet", robots=2, sessions=2, n_samples=300, seed=5)
    good = load_batch(paths.batch)
    bad = _bad_job(good[0], root / "bad_log")
    jobs = [*good, bad, good[0]]  # the last one repeats the first
    archive = root / "dask"
    serial = run_serial(jobs, archive_root=root / "serial", progress=False)
    on_dask = run_batch(jobs, None, archive_root=archive, n_workers=2, progress=False)
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with dask_client(None, 2) as client:
        by_address = run_batch(jobs, client.scheduler.address, archive_root=archive, progress=False)
        by_client = run_batch(good[:1], client, archive_root=archive, progress=False)
        client_open = client.status == "running"
    return {
        "good": good,
        "bad": bad,
        "archive": archive,
        "serial": serial,
        "dask": on_dask,
        "by_address": by_address,
        "by_client": by_client,
        "client_open": client_open,
    }


def _by_job(result: BatchResult):
    return {r.job_id: r for r in result.runs}


def test_every_good_job_runs_once_and_the_bad_one_is_collected(batches):
    for result in (batches["serial"], batches["dask"]):
        assert sorted(_by_job(result)) == sorted(j.job_id for j in batches["good"])
        assert len(result.runs) == len(batches["good"])  # the repeated job ran once
        (failure,) = result.failures
        assert failure.job == batches["bad"] and failure.error_type == "CLIError"
        assert "invalid trajectory data" in failure.message
        assert result.skipped == () and not result.passed


def test_dask_results_equal_the_serial_results_to_the_bit(batches):
    on_dask, serial = _by_job(batches["dask"]), _by_job(batches["serial"])
    for job_id, record in on_dask.items():
        reference = serial[job_id]
        assert [p.name for p in record.parameters] == [p.name for p in reference.parameters]
        values = np.array(
            [[p.value, np.nan if p.sigma is None else p.sigma] for p in record.parameters]
        )
        expected = np.array(
            [[p.value, np.nan if p.sigma is None else p.sigma] for p in reference.parameters]
        )
        np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-12)
        assert np.array_equal(values, expected, equal_nan=True)  # in fact bit-identical
        assert record.metrics.keys() == reference.metrics.keys()
        np.testing.assert_allclose(
            [record.metrics[k] for k in record.metrics],
            [reference.metrics[k] for k in record.metrics],
            rtol=1e-12,
            atol=1e-12,
        )
        assert (record.verdict_status, record.passed) == (
            reference.verdict_status,
            reference.passed,
        )
        assert record.run_dir.endswith(job_id) and record.run_dir.startswith(record.robot_id)


def test_running_the_batch_again_adds_no_run(batches):
    again = batches["by_address"]
    assert again.runs == ()
    assert sorted(again.skipped) == sorted(j.job_id for j in batches["good"])
    assert [f.job for f in again.failures] == [batches["bad"]]  # a failed job is retried
    assert batches["by_client"].runs == () and batches["by_client"].skipped == (
        batches["good"][0].job_id,
    )
    archive = batches["archive"]
    with RunIndex(index_path(archive)) as index:
        assert len(index) == len(batches["good"])
    assert len((archive / "index.jsonl").read_text().splitlines()) == len(batches["good"])


def test_a_passed_client_is_left_open(batches):
    assert batches["client_open"]


def test_the_task_key_names_the_job(batches):
    job = batches["good"][0]
    assert task_key(job) == f"figaroh-{job.job_id}"


def test_the_progress_bar_can_be_switched_off(batches, capsys):
    result = run_serial(batches["good"], archive_root=batches["archive"], progress=False)
    assert result.runs == () and len(result.skipped) == len(batches["good"])
    assert capsys.readouterr().err == ""


def test_without_distributed_run_batch_says_how_to_install_it(batches, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingDependencyError, match=r"figaroh\[fleet\]"):
        run_batch(batches["good"][:1], archive_root=batches["archive"].parent / "none")
