"""figaroh.fleet on a real Dask cluster: a scheduler and two worker subprocesses on 127.0.0.1.

The cluster (:mod:`fleet_cluster`) runs worker ``A`` in folder ``a/`` and
worker ``B`` (advertising ``ipopt=1``) in folder ``b/``; the driver (this
test process) works in ``driver/``. **One machine, three file-system views**:
the jobs name their configuration and logs by *relative* paths
(``stale/logs/robot_01/s00``), and each process resolves a relative path
against its own working directory — exactly as each machine of a cluster
resolves a job's path in its own file system. So:

* ``stale/`` exists everywhere, but in ``a/`` and ``b/`` the two logs of
  ``robot_01`` are the other night's (s00 and s01 swapped): the stale copy of
  another machine, same path, other bytes;
* ``shared/`` exists in ``driver/`` and ``a/`` only: worker B cannot read it;
* ``ship/`` exists in ``driver/`` only: no worker can read it.

The URDF is an absolute path every process reads. Shown:

* stale inputs fail with :class:`~figaroh.fleet.inputs.InputMismatchError`
  naming the host, the path and both sha256, the job is not indexed, the
  other robot's jobs are indexed with the driver's hashes;
* ``ship_inputs`` runs the ``ship/`` jobs, that no worker can read, and gives
  the parameters, σ and metrics of the serial run (``==``);
* a job B cannot read is run again on A (the task log shows the first
  attempt on B and the second on A); a job no worker can read fails with
  :class:`~figaroh.fleet.inputs.InputUnavailableError` after 2 attempts,
  naming the host and the path;
* a computation error is retried ``retries`` times, then recorded with the
  host and the attempts;
* trajectory jobs run on the ``ipopt`` worker only (needs cyipopt), and the
  embedded cluster's workers advertise ``ipopt`` exactly when cyipopt imports;
* ``figaroh fleet run --deadline`` ends with ``DeadlineExceeded`` failures
  and exit 1 within seconds;
* a worker SIGKILLed in the middle of a batch loses and duplicates no run.

A second cluster (two workers without nanny or resources) shows that
trajectory jobs fail at once with
:class:`~figaroh.fleet.cluster.MissingWorkerResourceError` when no worker has
``ipopt``, and that ``figaroh fleet run --stall-timeout`` ends with
``NoProgressTimeout`` failures and exit 1 once every worker is dead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import sys
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("distributed", reason="figaroh.fleet needs dask[distributed] (figaroh[fleet])")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import load_example, run_cli  # noqa: E402
from figaroh._optional import require  # noqa: E402
from figaroh.errors import MissingDependencyError  # noqa: E402
from figaroh.fleet.cluster import dask_client, embedded_resources, workers_with  # noqa: E402
from figaroh.fleet.jobs import Job, load_batch  # noqa: E402
from figaroh.fleet.record import RECORD_FILE  # noqa: E402
from figaroh.fleet.run_index import RunIndex, index_path  # noqa: E402
from figaroh.fleet.runner import run_batch, run_serial, task_key  # noqa: E402
from figaroh.tools.robot_paths import resolve_robot_urdf  # noqa: E402
from figaroh.utils.fileio import SEAL_MARKER  # noqa: E402
from fleet_cluster import (  # noqa: E402
    WorkerSpec,
    executed_keys,
    kill_plugin,
    subprocess_cluster,
    task_log_plugin,
)

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")

HOST = socket.gethostname()
ROBOTS, SESSIONS = ("robot_00", "robot_01"), ("s00", "s01")
STALE_ROBOT = "robot_01"


def _log(prefix: str, robot: str, session: str) -> str:
    return f"{prefix}/logs/{robot}/{session}"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The driver's, A's and B's folders (see the module docstring)."""
    root = tmp_path_factory.mktemp("fleet_cluster")
    driver, a, b = root / "driver", root / "a", root / "b"
    paths = fleet_example.write_fleet(
        root / "fleet", robots=len(ROBOTS), sessions=len(SESSIONS), n_samples=300, seed=11
    )
    views = {"stale": (driver, a, b), "shared": (driver, a), "ship": (driver,)}
    for prefix, folders in views.items():
        for folder in folders:
            shutil.copytree(paths.root, folder / prefix)
    for folder in (a, b):  # the other night's logs of robot_01 at the same paths
        logs = folder / "stale" / "logs" / STALE_ROBOT
        (logs / "s00").rename(logs / "tmp")
        (logs / "s01").rename(logs / "s00")
        (logs / "tmp").rename(logs / "s01")
    return {"root": root, "driver": driver, "a": a, "b": b, "paths": paths}


@pytest.fixture(scope="module")
def cluster(site):
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    workers = [
        WorkerSpec("A", site["a"]),
        WorkerSpec("B", site["b"], resources="ipopt=1"),
    ]
    keys = site["root"] / "task_keys"
    keys.mkdir()
    with subprocess_cluster(site["root"] / "cluster", workers) as running:
        with running.client() as client:
            client.register_plugin(task_log_plugin(str(keys)))
            assert sorted(client.run(os.getcwd).values()) == sorted(
                str(site[k].resolve()) for k in "ab"
            )
        running.keys = keys
        yield running


def _jobs(prefix: str) -> list[Job]:
    """The 4 identification jobs of the fleet, by paths relative to the working directory."""
    urdf = str(resolve_robot_urdf("ur10"))
    return [
        Job(
            "identification",
            robot,
            f"{prefix}/ur10_fleet.yaml",
            data=_log(prefix, robot, session),
            urdf=urdf,
            session=session,
            options={"decimate": 0},
        )
        for robot in ROBOTS
        for session in SESSIONS
    ]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _by_job(result):
    return {r.job_id: r for r in result.runs}


# ---------------------------------------------------------------------------
# verified inputs
# ---------------------------------------------------------------------------
def test_a_stale_input_fails_with_the_named_error_and_is_not_indexed(
    site, cluster, tmp_path, monkeypatch
):
    jobs = _jobs("stale")
    archive = tmp_path / "archive"
    monkeypatch.chdir(site["driver"])
    result = run_batch(jobs, cluster.address, archive_root=archive, progress=False)
    stale = {j.job_id: j for j in jobs if j.robot_id == STALE_ROBOT}
    good = {j.job_id: j for j in jobs if j.robot_id != STALE_ROBOT}
    assert sorted(_by_job(result)) == sorted(good)
    assert sorted(f.job.job_id for f in result.failures) == sorted(stale)
    for failure in result.failures:
        session = failure.job.session
        other = "s01" if session == "s00" else "s00"
        path = f"{_log('stale', STALE_ROBOT, session)}/identification.csv"
        expected = _sha(site["driver"] / path)  # the driver's bytes: the job's hash
        found = _sha(site["driver"] / _log("stale", STALE_ROBOT, other) / "identification.csv")
        assert expected != found
        assert failure.error_type == "InputMismatchError"
        assert (failure.host, failure.attempts) == (HOST, 1)
        for text in (f"host {HOST}", "data", path, expected, found):
            assert text in failure.message
    with RunIndex(index_path(archive)) as index:
        assert sorted(r.job_id for r in index.runs()) == sorted(good)
        assert not any(index.has_job(job_id) for job_id in stale)
        for record in index.runs():
            folder = site["driver"] / good[record.job_id].data
            assert record.data_sha256 == {"identification.csv": _sha(folder / "identification.csv")}
    assert not (archive / STALE_ROBOT).exists()


def test_ship_inputs_runs_jobs_no_worker_can_read_with_the_serial_numbers(
    site, cluster, tmp_path, monkeypatch
):
    jobs = _jobs("ship")
    with cluster.client() as client:
        seen = client.run(os.path.exists, jobs[0].config)
    assert list(seen.values()) == [False, False]  # neither worker sees the inputs
    monkeypatch.chdir(site["driver"])
    shipped = run_batch(
        jobs, cluster.address, archive_root=tmp_path / "dask", progress=False, ship_inputs=True
    )
    serial = run_serial(jobs, archive_root=tmp_path / "serial", progress=False)
    assert shipped.failures == () and serial.failures == ()
    on_dask, reference = _by_job(shipped), _by_job(serial)
    assert sorted(on_dask) == sorted(reference) == sorted(j.job_id for j in jobs)
    for job_id, record in on_dask.items():
        assert record.parameters == reference[job_id].parameters  # names, values, σ: ==
        assert record.metrics == reference[job_id].metrics
        assert record.data_sha256 == reference[job_id].data_sha256
        assert record.config_sha256 == reference[job_id].config_sha256
        run_dir = tmp_path / "dask" / record.run_dir
        provenance = json.loads((run_dir / "provenance.json").read_text())
        config = site["driver"].resolve() / "ship" / "ur10_fleet.yaml"
        assert provenance["config"]["path"] == str(config)  # the driver's file, not a copy


def test_an_unreadable_input_is_retried_on_another_worker(
    site, cluster, tmp_path, caplog, monkeypatch
):
    jobs = _jobs("shared")
    # in the driver's folder only (another session name: not a repeat of a shared job)
    nowhere = Job(**{**_jobs("ship")[0].fields(), "session": "nowhere"})
    monkeypatch.chdir(site["driver"])
    with caplog.at_level(logging.WARNING, "figaroh.fleet"):
        result = run_batch(
            [*jobs, nowhere], cluster.address, archive_root=tmp_path / "a", progress=False
        )
    assert sorted(_by_job(result)) == sorted(j.job_id for j in jobs)
    (failure,) = result.failures
    assert failure.job == nowhere and failure.error_type == "InputUnavailableError"
    assert failure.host == HOST and failure.attempts == 2
    assert f"host {HOST} cannot read the config {nowhere.config}" in failure.message
    keys = executed_keys(cluster.keys)
    on_b = [j for j in jobs if task_key(j) in keys.get("B", [])]
    assert on_b, "no shared job was first sent to worker B"
    for job in on_b:  # B could not read it: the second attempt ran on A
        assert f"{task_key(job)}-2" in keys["A"]
        assert f"{task_key(job)}-2" not in keys["B"]
    tried = {w for w, k in keys.items() if {task_key(nowhere), f"{task_key(nowhere)}-2"} & set(k)}
    assert tried == {"A", "B"}
    assert any("resubmitted to another worker" in r.getMessage() for r in caplog.records)


def test_a_computation_error_is_retried_then_recorded_with_host_and_attempts(
    site, cluster, tmp_path
):
    """A Monte-Carlo job on a log without effort columns raises ValueError (not bad input)."""
    log = tmp_path / "no_effort.csv"
    log.write_text("t,q_shoulder_pan_joint\n0,0\n0.01,0.1\n")
    (template,) = _jobs("shared")[:1]
    job = Job(
        **{
            **template.fields(),
            "kind": "monte_carlo",
            "config": str(site["driver"] / template.config),
            "data": str(log),
            "seed": 1,
            "options": {"noise_std": 0.1},
        }
    )
    result = run_batch(
        [job], cluster.address, archive_root=tmp_path / "a", retries=1, progress=False
    )
    (failure,) = result.failures
    assert failure.error_type == "ValueError" and "no effort column" in failure.message
    assert (failure.host, failure.attempts) == (HOST, 2)
    ran = [k for keys in executed_keys(cluster.keys).values() for k in keys]
    assert sorted(k for k in ran if k.startswith(task_key(job))) == [
        task_key(job),
        f"{task_key(job)}-2",
    ]


def test_trajectory_jobs_run_on_the_ipopt_worker_only(site, cluster, tmp_path):
    try:
        require("cyipopt", extra="ipopt")
    except MissingDependencyError:
        pytest.skip("the trajectory job needs cyipopt (figaroh[ipopt])")
    jobs = [
        Job(
            "trajectory",
            "robot_00",
            str(fleet_example.BASE_CONFIG),
            urdf=str(resolve_robot_urdf("ur10")),
            seed=seed,
            options={"max_iterations": 1, "n_wps": 2, "freq": 20},
        )
        for seed in (1, 2, 3)
    ]
    result = run_batch(jobs, cluster.address, archive_root=tmp_path / "t", progress=False)
    assert result.failures == () and len(result.runs) == 3
    keys = executed_keys(cluster.keys)
    assert {task_key(j) for j in jobs} <= set(keys["B"])
    assert not {task_key(j) for j in jobs} & set(keys.get("A", []))


def test_the_embedded_cluster_advertises_ipopt_when_cyipopt_imports():
    try:
        require("cyipopt", extra="ipopt")
        expected = {"ipopt": 1}
    except MissingDependencyError:
        expected = {}
    assert embedded_resources() == expected
    with dask_client(None, 1) as client:
        assert len(workers_with(client, expected)) == 1
        assert len(workers_with(client, {"ipopt": 1})) == len(expected)


# ---------------------------------------------------------------------------
# deadline, killed worker
# ---------------------------------------------------------------------------
def _batch_file(folder: Path, robots: int, seed: int, n_samples: int = 300) -> Path:
    paths = fleet_example.write_fleet(
        folder, robots=robots, sessions=len(SESSIONS), n_samples=n_samples, seed=seed
    )
    return paths.batch


def test_the_deadline_ends_the_batch_with_named_failures_and_exit_1(cluster, tmp_path):
    # 8 jobs of ≥ 0.8 s each (4000 samples) on 2 workers: more than 2 s of work
    batch = _batch_file(tmp_path / "fleet", robots=4, seed=21, n_samples=4000)
    archive = tmp_path / "archive"
    started = time.monotonic()
    code, out, _ = run_cli(
        "fleet", "run", batch, "--scheduler", cluster.address, "--archive", archive,
        "--deadline", "2",
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert code == 1 and elapsed < 15.0
    failed = [line for line in out.splitlines() if line.startswith("failed:")]
    assert failed and all("DeadlineExceeded: the batch deadline of 2 s" in f for f in failed)
    assert "of 8 jobs unfinished" in failed[0]
    with RunIndex(index_path(archive)) as index:
        assert len(index) + len(failed) == 8


def test_a_killed_worker_loses_and_duplicates_no_run(cluster, tmp_path):
    jobs = load_batch(_batch_file(tmp_path / "fleet", robots=3, seed=31))
    archive, marker = tmp_path / "archive", tmp_path / "killed.json"
    with cluster.client() as client:
        before = set(client.run(os.getpid).values())
        client.register_plugin(kill_plugin(str(marker), at=2, once=True))
        try:
            first = run_batch(jobs, client, archive_root=archive, progress=False)
            again = run_batch(jobs, client, archive_root=archive, progress=False)
        finally:
            client.unregister_worker_plugin("figaroh-test-kill")
        client.wait_for_workers(2, timeout=60)  # the nanny restarted the killed worker
        after = set(client.run(os.getpid).values())
    killed = json.loads(marker.read_text())
    assert killed["pid"] in before and killed["pid"] not in after
    assert killed["key"] in {task_key(j) for j in jobs}
    assert first.failures == () and sorted(_by_job(first)) == sorted(j.job_id for j in jobs)
    records = [json.loads(p.read_text()) for p in archive.rglob(RECORD_FILE)]
    assert sorted(r["job_id"] for r in records) == sorted(j.job_id for j in jobs)
    assert len(list(archive.rglob(SEAL_MARKER))) == len(jobs)
    assert len((archive / "index.jsonl").read_text().splitlines()) == len(jobs)
    with RunIndex(index_path(archive)) as index:
        assert sorted(r.job_id for r in index.runs()) == sorted(j.job_id for j in jobs)
    assert again.runs == () and again.failures == () and len(again.skipped) == len(jobs)


# ---------------------------------------------------------------------------
# a cluster without ipopt, whose workers all die
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bare_cluster(site):
    """Two workers without nanny (a killed one stays dead) and without resources."""
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    workers = [WorkerSpec(n, site["root"] / f"bare_{n}", nanny=False) for n in ("C", "D")]
    with subprocess_cluster(site["root"] / "bare", workers) as running:
        yield running


def test_trajectory_jobs_fail_at_once_without_an_ipopt_worker(site, bare_cluster, tmp_path):
    trajectory = Job(
        "trajectory",
        "robot_00",
        str(fleet_example.BASE_CONFIG),
        urdf=str(resolve_robot_urdf("ur10")),
        seed=1,
    )
    (identification,) = load_batch(_batch_file(tmp_path / "fleet", robots=1, seed=41))[:1]
    started = time.monotonic()
    result = run_batch(
        [trajectory, identification],
        bare_cluster.address,
        archive_root=tmp_path / "archive",
        progress=False,
    )
    assert time.monotonic() - started < 30.0
    (failure,) = result.failures
    assert failure.job == trajectory and failure.error_type == "MissingWorkerResourceError"
    assert failure.attempts == 0
    assert "ipopt=1" in failure.message and "--resources ipopt=1" in failure.message
    assert [r.job_id for r in result.runs] == [identification.job_id]


def test_the_stall_timeout_ends_the_batch_when_every_worker_is_gone(bare_cluster, tmp_path):
    batch = _batch_file(tmp_path / "fleet", robots=2, seed=51)
    archive, marker = tmp_path / "archive", tmp_path / "killed"
    with bare_cluster.client() as client:
        client.register_plugin(kill_plugin(str(marker), at=1, once=False))  # every worker dies
        started = time.monotonic()
        code, out, _ = run_cli(
            "fleet", "run", batch, "--scheduler", bare_cluster.address, "--archive", archive,
            "--stall-timeout", "3",
        )  # fmt: skip
        elapsed = time.monotonic() - started
        assert bare_cluster.worker_addresses(client) == {}  # every worker is gone
    assert len(list(tmp_path.glob("killed.*"))) == 2
    assert code == 1 and elapsed < 20.0
    failed = [line for line in out.splitlines() if line.startswith("failed:")]
    assert len(failed) == len(yaml.safe_load(batch.read_text())["jobs"])
    assert all("NoProgressTimeout: no task finished for 3 s" in line for line in failed)
    with RunIndex(index_path(archive)) as index:
        assert len(index) == 0
