"""Bad inputs to a fleet batch: each fails with a named error naming the job, the field and the fix.

A job whose data is unusable does not stop the batch: it is collected as a
failure (``verdict="fail"`` rows: the call returns ``"fail"`` when the batch
holds exactly the expected failure).
"""

from __future__ import annotations

import sys
from pathlib import Path
from unittest import mock

import pytest
import yaml

from bad_inputs._harness import BadInput, case_id, run_case
from figaroh.errors import MissingDependencyError
from figaroh.fleet.jobs import FleetConfigError, Job, load_batch
from figaroh.fleet.runner import run_batch, run_serial

CONFIG = Path(__file__).resolve().parents[2] / "config" / "ur10_unified_config.yaml"


def _log(tmp: Path, text: str = "t,q_shoulder_pan_joint,tau_shoulder_pan_joint\n0,0,0\n") -> Path:
    folder = tmp / "log"
    folder.mkdir(exist_ok=True)
    (folder / "identification.csv").write_text(text)
    return folder


def _batch(tmp: Path, data) -> list[Job]:
    path = tmp / "batch.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return load_batch(path)


def _one_job(tmp: Path, **fields) -> list[Job]:
    _log(tmp)
    (tmp / "c.yaml").write_text(CONFIG.read_text())
    job = {"kind": "identification", "robot_id": "r1", "config": "c.yaml", "data": "log"}
    job["urdf"] = "ur10"
    job.update(fields)
    return _batch(tmp, {"jobs": [job]})


def _relative_paths_resolve_beside_the_yaml(tmp: Path) -> None:
    (job,) = _one_job(tmp)
    assert job.config == str(tmp.resolve() / "c.yaml") and job.data == str(tmp.resolve() / "log")


def _missing_data_file_for_the_job_id(tmp: Path) -> None:
    (job,) = _one_job(tmp)
    (Path(job.data) / "identification.csv").unlink()
    Path(job.data).rmdir()
    job.job_id  # noqa: B018


def _serial_batch_with_a_malformed_log(tmp: Path) -> str:
    (job,) = _one_job(tmp)
    _log(tmp, "t,q_shoulder_pan_joint\n0,0\n")  # no effort column
    result = run_serial([job], archive_root=tmp / "archive", progress=False)
    ok = result.runs == () and [f.job for f in result.failures] == [job]
    return "fail" if ok and "invalid trajectory data" in result.failures[0].message else "?"


def _repeated_job_runs_once(tmp: Path) -> str:
    (job,) = _one_job(tmp)
    _log(tmp, "t,q_shoulder_pan_joint\n0,0\n")
    result = run_serial([job, Job(**job.fields())], archive_root=tmp / "a", progress=False)
    return "fail" if len(result.failures) == 1 else "?"


def _run_batch_without_distributed(tmp: Path) -> None:
    (job,) = _one_job(tmp)
    with mock.patch.dict(sys.modules, {"distributed": None}):
        run_batch([job], archive_root=tmp / "archive", progress=False)


CASES: list[BadInput] = [
    BadInput(
        "batch_file_missing",
        lambda t: load_batch(t / "nowhere.yaml"),
        FleetConfigError,
        "cannot read the batch",
    ),
    BadInput(
        "batch_invalid_yaml", lambda t: _batch(t, "jobs: ["), FleetConfigError, "invalid batch YAML"
    ),
    BadInput("batch_is_a_list", lambda t: _batch(t, ["a", "b"]), FleetConfigError, "a 'jobs' list"),
    BadInput(
        "batch_unknown_top_level_key",
        lambda t: _batch(t, {"jobs": [], "job": []}),
        FleetConfigError,
        "unknown top-level key.*use jobs, defaults, matrix and tags",
    ),
    BadInput("batch_without_jobs", lambda t: _batch(t, {"jobs": []}), FleetConfigError, "no job"),
    BadInput(
        "job_unknown_field",
        lambda t: _one_job(t, colour="red"),
        FleetConfigError,
        r"job 0 \(r1\): unknown field.*'colour'.*a job has kind, robot_id",
    ),
    BadInput(
        "job_bad_kind",
        lambda t: _one_job(t, kind="dance"),
        FleetConfigError,
        "job 0.*kind must be one of identification, calibration",
    ),
    BadInput(
        "job_missing_robot_id",
        lambda t: _batch(t, {"jobs": [{"kind": "identification", "config": "c.yaml"}]}),
        FleetConfigError,
        "missing field 'robot_id'; set it in the job or in defaults",
    ),
    BadInput(
        "job_without_urdf",
        lambda t: _one_job(t, urdf=None),
        FleetConfigError,
        "identification job needs urdf: the robot's URDF file",
    ),
    BadInput(
        "job_without_data",
        lambda t: _one_job(t, data=None),
        FleetConfigError,
        "identification job needs data",
    ),
    BadInput(
        "job_data_path_missing",
        lambda t: _one_job(t, data="no/such/log"),
        FleetConfigError,
        "data .*no/such/log does not exist; fix the path",
    ),
    BadInput(
        "job_bad_session_time",
        lambda t: _one_job(t, session_time="last tuesday"),
        FleetConfigError,
        "session_time must be an ISO-8601 time",
    ),
    BadInput(
        "job_seed_not_an_integer",
        lambda t: _one_job(t, seed="seven"),
        FleetConfigError,
        "seed must be an integer",
    ),
    BadInput(
        "monte_carlo_without_noise_std",
        lambda t: _one_job(t, kind="monte_carlo", seed=1),
        FleetConfigError,
        r"options\.noise_std.*\[N·m\]",
    ),
    BadInput(
        "matrix_not_lists",
        lambda t: _batch(t, {"matrix": {"seed": 3}, "jobs": [{}]}),
        FleetConfigError,
        "matrix must map a job field",
    ),
    BadInput(
        "job_id_of_a_vanished_data_folder",
        _missing_data_file_for_the_job_id,
        FleetConfigError,
        "cannot read the data",
    ),
    BadInput(
        "run_batch_without_distributed",
        _run_batch_without_distributed,
        MissingDependencyError,
        r'pip install "figaroh\[fleet\]"',
    ),
    BadInput(
        "relative_paths_resolve_beside_the_yaml",
        _relative_paths_resolve_beside_the_yaml,
        already_good=True,
    ),
    BadInput(
        "malformed_log_is_a_collected_failure",
        _serial_batch_with_a_malformed_log,
        verdict="fail",
    ),
    BadInput(
        "repeated_job_warns_and_runs_once",
        _repeated_job_runs_once,
        match="repeat an earlier job of the batch",
        verdict="fail",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)
