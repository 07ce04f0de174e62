"""The ``figaroh fleet run``, ``fleet report`` and ``index rebuild`` commands and their exit codes.

Exit codes: 0 every job ran and passed (report: nothing flagged; rebuild:
every folder indexed), 1 a job failed or a verdict did not pass, 2 bad input.
"""

from __future__ import annotations

import pytest
import yaml

from conftest import load_example
from figaroh.cli.main import main
from figaroh.fleet.run_index import RunIndex, index_path

fleet_example = load_example("ur10/fleet.py", "ur10_fleet_example")


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_fleet")
    return fleet_example.write_fleet(root / "fleet", robots=2, sessions=2, n_samples=300, seed=7)


@pytest.fixture(scope="module")
def archive(small_fleet, tmp_path_factory):
    """The small fleet's batch run with ``figaroh fleet run --serial``."""
    out = tmp_path_factory.mktemp("cli_archive") / "archive"
    code = main(["fleet", "run", str(small_fleet.batch), "--archive", str(out), "--serial", "-q"])
    assert code == 0
    return out


def test_fleet_run_exit_0_when_every_job_passed(archive, small_fleet, capsys):
    with RunIndex(index_path(archive)) as index:
        assert len(index) == len(small_fleet.logs)
    code = main(["fleet", "run", str(small_fleet.batch), "--archive", str(archive), "--serial"])
    out = capsys.readouterr().out
    assert code == 0 and "0 runs" in out and f"{len(small_fleet.logs)} skipped" in out


def test_fleet_run_on_dask_exit_1_when_a_job_failed(small_fleet, tmp_path, capsys):
    pytest.importorskip("distributed")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "identification.csv").write_text("t,q_shoulder_pan_joint\n0,0\n")
    batch = yaml.safe_load(small_fleet.batch.read_text())
    batch["defaults"]["config"] = str(small_fleet.config)
    for job in batch["jobs"]:
        job["data"] = str(small_fleet.root / job["data"])
    batch["jobs"] = batch["jobs"][:1] + [{"robot_id": "robot_bad", "data": str(bad)}]
    path = tmp_path / "batch.yaml"
    path.write_text(yaml.safe_dump(batch))
    archive = tmp_path / "archive"
    code = main(["fleet", "run", str(path), "--archive", str(archive), "--workers", "2"])
    out = capsys.readouterr().out
    assert code == 1
    assert "failed: robot_bad/session" in out and "invalid trajectory data" in out
    assert "1 runs (0 without a passing verdict), 1 failed jobs" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "batch YAML not found"),
        ("jobs: [", "invalid batch YAML"),
        ("jobs:\n  - {kind: identification, robot_id: r, colour: red}\n", "unknown field"),
    ],
)
def test_fleet_run_exit_2_on_a_bad_batch(tmp_path, capsys, content, message):
    path = tmp_path / "batch.yaml"
    if content is not None:
        path.write_text(content)
    assert main(["fleet", "run", str(path), "--archive", str(tmp_path / "a"), "--serial"]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra",
    [
        ["--stall-timeout", "5"],
        ["--ship-inputs"],
        ["--dashboard"],
        ["--ship-inputs", "--dashboard"],
    ],
)
def test_fleet_run_serial_refuses_the_dask_only_options(small_fleet, tmp_path, capsys, extra):
    archive = tmp_path / "archive"
    args = ["fleet", "run", str(small_fleet.batch), "--archive", str(archive), "--serial", *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    named = [a for a in extra if a.startswith("--")]
    assert f"{', '.join(named)} apply to Dask workers and do nothing with --serial" in err
    assert not archive.exists()  # refused before any work


def test_fleet_report_writes_the_drift_page(archive, tmp_path, capsys):
    page = tmp_path / "drift.html"
    code = main(
        [
            "fleet",
            "report",
            "--archive",
            str(archive),
            "--param",
            fleet_example.DRIFT_PARAMETER,
            "-o",
            str(page),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "flagged robots: none" in out
    assert page.is_file() and "<html" in page.read_text().lower()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--param", "no_such_parameter"], "no_such_parameter"),
        (["--k", "-1"], "k"),
    ],
)
def test_fleet_report_exit_2_on_bad_input(archive, tmp_path, capsys, args, message):
    code = main(
        ["fleet", "report", "--archive", str(archive), "-o", str(tmp_path / "d.html"), *args]
    )
    assert code == 2 and message in capsys.readouterr().err


def test_fleet_report_exit_2_without_an_index(tmp_path, capsys):
    assert main(["fleet", "report", "--archive", str(tmp_path)]) == 2
    assert "no run index" in capsys.readouterr().err


def test_index_rebuild_gives_the_same_runs(archive, small_fleet, capsys):
    with RunIndex(index_path(archive)) as index:
        before = index.runs()
    assert main(["index", "rebuild", str(archive)]) == 0
    assert f"indexed {len(small_fleet.logs)} runs" in capsys.readouterr().out
    with RunIndex(index_path(archive)) as index:
        assert index.runs() == before


def test_index_rebuild_exit_2_without_the_archive(tmp_path, capsys):
    assert main(["index", "rebuild", str(tmp_path / "nowhere")]) == 2
    assert "archive folder not found" in capsys.readouterr().err
