"""A fleet job's inputs read once, checked against the job's hashes, run from a private copy.

In this process, without Dask (:mod:`figaroh.fleet.inputs`, the worker side
of every task): small simulated UR10 logs (``examples/ur10/fleet.py``, 300
samples). The truths are the files' own sha256 (``hashlib``), the same job
run from its original paths (``==``), and the archive's index.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from conftest import load_example
from figaroh.cli.common import CLIError
from figaroh.fleet.inputs import (
    TEMPLATE_ROLE,
    InputMismatchError,
    InputUnavailableError,
    config_templates,
    task_inputs,
)
from figaroh.fleet.jobs import Job, load_batch
from figaroh.fleet.run_index import RunIndex, index_path
from figaroh.fleet.runner import run_serial, run_task
from figaroh.fleet.worker import run_job

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")

HOST = socket.gethostname()
CSV = "identification.csv"


@pytest.fixture
def fleet(tmp_path):
    return fleet_example.write_fleet(
        tmp_path / "fleet", robots=1, sessions=2, n_samples=300, seed=9
    )


@pytest.fixture
def job(fleet):
    return load_batch(fleet.batch)[0]


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    """The private copies go to a folder of this test (checked empty afterwards)."""
    folder = tmp_path / "private"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert list(folder.iterdir()) == []  # every private copy was removed


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _values(output):
    return [(p.name, p.value, p.sigma) for p in output.record.parameters]


def test_a_log_changed_after_the_job_id_fails_naming_host_path_and_both_hashes(job, tmp_path):
    log = Path(job.data) / CSV
    expected = _sha(log)
    assert job.job_id  # the driver hashed the inputs
    log.write_text(log.read_text().replace("\n0.", "\n1.", 1))  # another byte at the same path
    found = _sha(log)
    with pytest.raises(InputMismatchError) as caught:
        run_job(job)
    message = str(caught.value)
    for text in (f"host {HOST}", f"the data {log}", expected, found):
        assert text in message
    assert (caught.value.host, caught.value.role, caught.value.path) == (HOST, "data", str(log))
    result = run_serial([job], archive_root=tmp_path / "archive", progress=False)
    (failure,) = result.failures
    assert (failure.error_type, failure.host, failure.attempts) == ("InputMismatchError", HOST, 1)
    with RunIndex(index_path(tmp_path / "archive")) as index:
        assert len(index) == 0  # never indexed


@pytest.mark.parametrize("change", ["added", "removed"])
def test_a_data_folder_with_another_file_list_is_a_mismatch(job, change):
    folder = Path(job.data)
    assert job.job_id
    if change == "added":
        (folder / "notes.txt").write_text("calibrated twice\n")
        words = ("notes.txt", "none (not an input of the job)")
    else:
        (folder / CSV).unlink()
        words = (CSV, "none (no such file)")
    with pytest.raises(InputMismatchError) as caught:
        run_job(job)
    assert all(w in str(caught.value) for w in words)


def test_an_unreadable_input_names_the_host_and_the_path(job):
    assert job.job_id
    shutil.rmtree(job.data)
    failure = run_task(job)
    assert failure.error_type == "InputUnavailableError" and failure.host == HOST
    assert f"host {HOST} cannot read the data {job.data}" in failure.message
    with pytest.raises(InputUnavailableError) as caught:
        run_job(job)
    assert isinstance(caught.value, OSError)


@pytest.mark.parametrize("cls", [InputMismatchError, InputUnavailableError])
def test_the_errors_keep_host_role_and_path_through_pickle(cls):
    exc = pickle.loads(pickle.dumps(cls("message", host="h", role="data", path="/p")))
    assert (str(exc), exc.host, exc.role, exc.path) == ("message", "h", "data", "/p")


def test_shipped_inputs_need_no_file_and_give_the_same_run(job, fleet, tmp_path):
    reference = run_job(job)
    inputs = task_inputs(job, ship=True)
    files = [p for p in fleet.root.rglob("*") if p.is_file()]
    sizes = sum(p.stat().st_size for p in (Path(job.config), Path(job.data) / CSV))
    assert inputs.nbytes == sizes + Path(job.urdf).stat().st_size and files
    shutil.move(fleet.root, tmp_path / "elsewhere")  # nothing left at the job's paths
    shipped = run_job(job, inputs=inputs)
    assert _values(shipped) == _values(reference)
    assert shipped.record.metrics == reference.record.metrics
    assert shipped.record.data_sha256 == reference.record.data_sha256
    provenance = json.loads(shipped.files["provenance.json"])
    assert provenance["config"]["path"] == str(Path(job.config).resolve())
    assert provenance["data"]["files"][0]["path"] == str(Path(job.data).resolve() / CSV)
    assert all("figaroh-inputs-" not in text for text in shipped.files.values())


def test_a_configuration_naming_its_own_held_out_file_is_refused(job, tmp_path):
    config = Path(job.config)
    text = config.read_text().replace(
        "  identification:\n",
        "  identification:\n    data:\n      validation_data_file: v.csv\n",
        1,
    )
    assert "validation_data_file" in text
    own = tmp_path / "own.yaml"
    own.write_text(text)
    failure = run_task(Job(**{**job.fields(), "config": str(own)}))
    assert failure.error_type == "CLIError"
    assert "data.validation_data_file 'v.csv'" in failure.message
    assert "job's validation field" in failure.message
    with pytest.raises(CLIError):
        run_job(Job(**{**job.fields(), "config": str(own)}))


def _site_config(job: Job, folder: Path) -> Path:
    """The job's configuration extending a site template kept in ``templates/`` beside it."""
    (folder / "templates").mkdir(parents=True)
    (folder / "templates" / "site.yaml").write_text(
        'extends: "templates/manipulator_robot.yaml"\ncustom:\n  site: lyon\n'
    )
    config = folder / "site_fleet.yaml"
    text = Path(job.config).read_text()
    config.write_text(text.replace("templates/manipulator_robot.yaml", "templates/site.yaml", 1))
    return config


def test_the_configuration_templates_travel_with_the_configuration(job, tmp_path):
    config = _site_config(job, tmp_path / "site")
    template = (tmp_path / "site" / "templates" / "site.yaml").resolve()
    assert config_templates(config) == (str(template),)
    site_job = Job(**{**job.fields(), "config": str(config)})
    inputs = task_inputs(site_job, ship=True)
    assert inputs.templates == {str(template): _sha(template)}
    reference = run_job(site_job)  # the private copy loads the copied template (else mismatch)
    template.unlink()  # shipped: the worker needs it no more
    assert _values(run_job(site_job, inputs=inputs)) == _values(reference)


def test_a_changed_or_differently_resolved_template_is_a_mismatch(job, tmp_path, monkeypatch):
    config = _site_config(job, tmp_path / "site")
    template = tmp_path / "site" / "templates" / "site.yaml"
    site_job = Job(**{**job.fields(), "config": str(config)})
    inputs = task_inputs(site_job)
    template.write_text(template.read_text() + "  line: 3\n")
    with pytest.raises(InputMismatchError) as caught:
        run_job(site_job, inputs=inputs)
    assert caught.value.role == TEMPLATE_ROLE and str(template.resolve()) in str(caught.value)
    # the driver resolved figaroh's own manipulator template; this host has its own one
    inputs = task_inputs(job)
    assert inputs.templates == {}
    worker = tmp_path / "worker"
    (worker / "templates").mkdir(parents=True)
    (worker / "templates" / "manipulator_robot.yaml").write_text("custom:\n  site: old\n")
    monkeypatch.chdir(worker)  # <cwd>/templates comes before figaroh's own templates
    with pytest.raises(InputMismatchError, match="where the job was built") as caught:
        run_job(job, inputs=inputs)
    assert str(worker / "templates" / "manipulator_robot.yaml") in str(caught.value)


def test_run_serial_stops_at_its_deadline(fleet, tmp_path):
    jobs = load_batch(fleet.batch)
    result = run_serial(jobs, archive_root=tmp_path / "archive", progress=False, deadline_s=1e-9)
    assert result.runs == () and len(result.failures) == len(jobs)
    for failure in result.failures:
        assert (failure.error_type, failure.attempts) == ("DeadlineExceeded", 0)
        assert f"deadline of 1e-09 s (deadline_s, --deadline) was reached with {len(jobs)} of" in (
            failure.message
        )
