"""figaroh.fleet jobs and the worker's computation, without Dask.

Small simulated UR10 logs (300 samples, ``examples/ur10/fleet.py``): the
job id follows the spec and the input bytes, the batch YAML resolves
defaults, matrix and relative paths, and :func:`run_job` gives the same
numbers every time for every job kind.
"""

from __future__ import annotations

import json
import pickle
import shutil

import numpy as np
import pytest
import yaml

from conftest import load_example
from figaroh import fleet
from figaroh._optional import require
from figaroh.errors import FigarohError, MissingDependencyError
from figaroh.fleet.jobs import FleetConfigError, Job, dedupe_jobs, load_batch
from figaroh.fleet.worker import VERDICT_FILE, add_torque_noise, run_job

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")
calibration_example = load_example("ur10/calibration.py", "ur10_calibration_example")


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet_jobs")
    return fleet_example.write_fleet(root, robots=2, sessions=1, n_samples=300, seed=3)


@pytest.fixture(scope="module")
def job(small_fleet):
    return load_batch(small_fleet.batch)[0]


@pytest.fixture(scope="module")
def output(job):
    return run_job(job)


def _values(out):
    return np.array([p.value for p in out.record.parameters])


def _sigmas(out):
    return np.array([np.nan if p.sigma is None else p.sigma for p in out.record.parameters])


# ---------------------------------------------------------------------------
# Job and job_id
# ---------------------------------------------------------------------------
def test_the_job_id_is_16_hex_of_the_spec_and_the_input_bytes(job, tmp_path):
    assert len(job.job_id) == 16 and int(job.job_id, 16) >= 0
    same = Job(**job.fields())
    assert same == job and hash(same) == hash(job) and same.job_id == job.job_id
    other_session = Job(**{**job.fields(), "session": "other"})
    assert other_session.job_id != job.job_id
    # the session time is metadata of the run, not part of the computation
    assert Job(**{**job.fields(), "session_time": "2027-01-01T00:00:00Z"}).job_id == job.job_id
    copy = tmp_path / "copy"
    shutil.copytree(job.data, copy)
    assert Job(**{**job.fields(), "data": str(copy)}).job_id == job.job_id  # same bytes
    csv = copy / "identification.csv"
    csv.write_text(csv.read_text() + "\n")
    assert Job(**{**job.fields(), "data": str(copy)}).job_id != job.job_id


def test_a_job_pickles_with_its_id(job):
    back = pickle.loads(pickle.dumps(job))
    assert back == job and back.job_id == job.job_id and back.options == job.options


def test_equal_jobs_are_deduplicated_in_batch_order(job):
    other = Job(**{**job.fields(), "session": "s99"})
    unique, repeats = dedupe_jobs([job, other, Job(**job.fields())])
    assert unique == [job, other] and repeats == [job]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"kind": "dance"}, "kind must be one of"),
        ({"robot_id": ""}, "robot_id must be a non-empty text"),
        ({"seed": 1.5}, "seed must be an integer"),
        ({"session_time": "yesterday"}, "session_time must be an ISO-8601"),
        ({"options": {"x": object()}}, "options must hold JSON values"),
        ({"kind": "monte_carlo", "seed": None}, "needs seed"),
        ({"kind": "monte_carlo", "seed": 1}, "needs options.noise_std"),
        ({"kind": "monte_carlo", "seed": 1, "options": {"noise_std": -1}}, "must be ≥ 0"),
        ({"data": None}, "needs data"),
    ],
)
def test_a_bad_job_field_is_named(job, change, match):
    with pytest.raises(FleetConfigError, match=match) as info:
        Job(**{**job.fields(), **change})
    assert isinstance(info.value, FigarohError) and isinstance(info.value, ValueError)


def test_a_missing_input_file_is_named_by_the_job_id(job, tmp_path):
    gone = Job(**{**job.fields(), "data": str(tmp_path / "nowhere.csv")})
    with pytest.raises(FleetConfigError, match="cannot read the data"):
        gone.job_id  # noqa: B018


# ---------------------------------------------------------------------------
# batch YAML
# ---------------------------------------------------------------------------
def test_the_batch_yaml_resolves_defaults_and_relative_paths(small_fleet):
    jobs = load_batch(small_fleet.batch)
    assert [(j.robot_id, j.session, j.kind) for j in jobs] == [
        ("robot_00", "s00", "identification"),
        ("robot_01", "s00", "identification"),
    ]
    assert all(j.config == str(small_fleet.config) for j in jobs)
    assert jobs[0].data == str(small_fleet.logs[("robot_00", "s00")])


def test_a_matrix_expands_every_job(small_fleet, tmp_path):
    batch = tmp_path / "mc.yaml"
    log = small_fleet.logs[("robot_00", "s00")]
    batch.write_text(
        yaml.safe_dump(
            {
                "defaults": {"kind": "monte_carlo", "config": str(small_fleet.config)},
                "matrix": {"seed": [1, 2, 3], "options.noise_std": [0.5, 1.0]},
                "jobs": [{"robot_id": "robot_00", "data": str(log), "urdf": "ur10"}],
            },
            sort_keys=False,
        )
    )
    jobs = load_batch(batch)
    assert len(jobs) == 6 and len({j.job_id for j in jobs}) == 6
    assert [(j.seed, j.options["noise_std"]) for j in jobs[:2]] == [(1, 0.5), (1, 1.0)]
    assert jobs[0].urdf.endswith(".urdf")  # a robot name is resolved to its URDF


def test_tags_merge_batch_defaults_and_job_and_stay_out_of_the_job_id(small_fleet, tmp_path):
    log = small_fleet.logs[("robot_00", "s00")]
    entry = {"robot_id": "robot_00", "data": str(log), "urdf": "ur10"}
    batch = tmp_path / "tagged.yaml"
    batch.write_text(
        yaml.safe_dump(
            {
                "tags": {"site": "lyon", "line": "L1"},
                "defaults": {
                    "kind": "identification",
                    "config": str(small_fleet.config),
                    "tags": {"line": "L2", "firmware": "3.10"},
                },
                "jobs": [
                    {**entry, "tags": {"line": 4}},  # an integer value is kept as its text
                    {**entry, "session": "other"},
                ],
            }
        )
    )
    tagged, plain_tags = load_batch(batch)
    # the job's own keys win over the defaults', which win over the batch's
    assert tagged.tags == {"firmware": "3.10", "line": "4", "site": "lyon"}
    assert plain_tags.tags == {"firmware": "3.10", "line": "L2", "site": "lyon"}
    untagged = Job(**{**tagged.fields(), "tags": {}})
    assert untagged.job_id == tagged.job_id and untagged != tagged  # tags: not the computation
    back = pickle.loads(pickle.dumps(tagged))
    assert back.tags == tagged.tags and back.job_id == tagged.job_id


@pytest.mark.parametrize(
    ("tags", "match"),
    [
        ({"firmware": 3.1}, r"tag 'firmware' must be a text.*quote it"),
        ({"": "x"}, "tag name '' must be a non-empty text"),
        (["line"], "tags must map a tag name"),
    ],
)
def test_a_bad_tag_is_named(job, tags, match):
    with pytest.raises(FleetConfigError, match=match):
        Job(**{**job.fields(), "tags": tags})


def test_batch_tags_must_be_a_mapping(tmp_path):
    with pytest.raises(FleetConfigError, match="tags must map a tag name"):
        load_batch(_batch(tmp_path, {"tags": ["a"], "jobs": [{}]}))


def _batch(tmp_path, content) -> str:
    path = tmp_path / "batch.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return str(path)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("jobs: [", "invalid batch YAML"),
        ({"jobs": "robot"}, "a 'jobs' list"),
        ({"jobs": [], "extra": 1}, "unknown top-level key"),
        ({"jobs": []}, "no job"),
        ({"jobs": [{"kind": "identification", "robot_id": "r", "conf": "x"}]}, r"job 0 \(r\)"),
        ({"jobs": [{"kind": "identification", "robot_id": "r"}]}, "missing field 'config'"),
        ({"matrix": {"colour": [1]}, "jobs": [{}]}, "matrix key 'colour' is not a job field"),
        (
            {
                "jobs": [
                    {"kind": "trajectory", "robot_id": "r", "config": "no.yaml", "urdf": "ur10"}
                ]
            },
            "does not exist",
        ),
    ],
)
def test_a_bad_batch_names_the_job_and_field(tmp_path, content, match):
    with pytest.raises(FleetConfigError, match=match):
        load_batch(_batch(tmp_path, content))


# ---------------------------------------------------------------------------
# run_job
# ---------------------------------------------------------------------------
def test_an_identification_job_gives_its_record_and_files(job, output):
    record = output.record
    assert (record.job_id, record.run_id, record.task) == (job.job_id, job.job_id, "identification")
    assert (record.robot_id, record.session, record.session_time) == (
        job.robot_id,
        job.session,
        job.session_time,
    )
    assert record.run_dir == "" and record.passed is True and record.verdict_status == "pass"
    assert record.data_sha256 == {"identification.csv": record.data_sha256["identification.csv"]}
    assert {"provenance.json", "parameters.csv", VERDICT_FILE} <= set(output.files)
    assert "rmse" in record.metrics and "condition_number" in record.metrics
    (fs2,) = [p for p in record.parameters if p.name == fleet_example.DRIFT_PARAMETER]
    assert 0 < fs2.sigma < 1.0 and abs(fs2.value - 6.0) < 1.5


def test_the_same_job_gives_bit_identical_numbers(job, output):
    again = run_job(job)
    assert np.array_equal(_values(again), _values(output))
    assert np.array_equal(_sigmas(again), _sigmas(output), equal_nan=True)
    assert again.record.metrics == output.record.metrics


def test_torque_noise_is_seeded_and_touches_the_efforts_only():
    text = "# note\nt,q_a,tau_a,effort:b\n0,1.0,2.0,3.0\n0.01,1.5,2.5,3.5\n"
    noisy = add_torque_noise(text, 0.1, seed=4)
    assert noisy == add_torque_noise(text, 0.1, seed=4) != add_torque_noise(text, 0.1, seed=5)
    rows = [line.split(",") for line in noisy.splitlines()[2:]]
    assert noisy.startswith("# note\n") and [r[:2] for r in rows] == [["0", "1.0"], ["0.01", "1.5"]]
    expected = np.array([[2.0, 3.0], [2.5, 3.5]]) + np.random.default_rng(4).normal(0, 0.1, (2, 2))
    assert np.array_equal(np.array([[float(r[2]), float(r[3])] for r in rows]), expected)
    with pytest.raises(ValueError, match="no effort column"):
        add_torque_noise("t,q_a\n0,1\n", 0.1, seed=1)


def test_monte_carlo_replicates_are_seeded(job, output):
    def replicate(seed, noise):
        fields = {**job.fields(), "kind": "monte_carlo", "seed": seed}
        return run_job(Job(**{**fields, "options": {**job.options, "noise_std": noise}}))

    a, b, c = replicate(1, 1.0), replicate(1, 1.0), replicate(2, 1.0)
    assert a.record.task == "monte_carlo"
    assert np.array_equal(_values(a), _values(b))
    assert not np.array_equal(_values(a), _values(c))
    assert np.array_equal(_values(replicate(9, 0.0)), _values(output))  # no noise: the data's fit


def test_a_calibration_job_gives_the_parameters_with_sigma(tmp_path, ur10_urdf):
    train, test, truth = calibration_example.simulate_ur10_calibration(
        tmp_path, n_train=30, n_test=20, pos_noise=1e-4, rot_noise=1e-4
    )
    job = Job(
        "calibration",
        "robot_00",
        str(calibration_example.CONFIG),
        data=str(train),
        urdf=str(ur10_urdf),
        validation=str(test),
    )
    out = run_job(job)
    params = {p.name: p for p in out.record.parameters}
    assert set(params) == set(truth)
    assert all(p.sigma is not None and p.sigma > 0 for p in params.values())
    assert abs(params["base_px"].value - truth["base_px"]) < 1e-3
    assert out.record.task == "calibration" and VERDICT_FILE in out.files
    assert np.array_equal(_values(run_job(job)), _values(out))


def test_a_trajectory_job_is_one_seeded_ipopt_restart(ur10_urdf):
    try:
        require("cyipopt", extra="ipopt")
    except MissingDependencyError:
        pytest.skip("the trajectory job needs cyipopt (figaroh[ipopt])")
    job = Job(
        "trajectory",
        "robot_00",
        str(fleet_example.BASE_CONFIG),
        urdf=str(ur10_urdf),
        seed=3,
        options={"max_iterations": 1, "n_wps": 2, "freq": 20},
    )
    out = run_job(job)
    assert out.record.task == "trajectory" and out.record.parameters == ()
    assert out.record.metrics["segments_solved"] == 1.0
    assert out.files["trajectory.csv"].startswith("t,q_")
    assert run_job(job).files["trajectory.csv"] == out.files["trajectory.csv"]


def test_the_package_exports_the_api_lazily():
    assert fleet.run_batch.__module__ == "figaroh.fleet.runner"
    assert fleet.load_batch is load_batch and "run_serial" in dir(fleet)


def test_a_job_is_judged_by_its_configuration_verification_section(job, tmp_path):
    """No batch thresholds: the config's ``verification`` section decides (as API and CLI)."""
    config = yaml.safe_load(open(job.config, encoding="utf-8"))
    config["tasks"]["identification"]["verification"] = {
        "scope": "prediction",
        "thresholds": {"rmse": {"threshold": 1e-9, "comparison": "max", "required": True}},
    }
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = run_job(Job(**{**job.fields(), "config": str(strict)}))
    assert out.record.verdict_status == "fail" and out.record.passed is False
    verdict = json.loads(out.files[VERDICT_FILE])
    assert verdict["scope"] == "prediction"
    failed = {c["name"] for c in verdict["checks"] if c["status"] == "fail"}
    assert "rmse" in failed
