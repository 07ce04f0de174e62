"""A repository planted in the working directory runs nothing through figaroh.

Run provenance quotes the git commit of figaroh's own source checkout. A
``.git/config`` in the folder a user works in (or beside the data) may name a
command as ``core.fsmonitor`` or install hooks; ``git status`` there would run
it. Every row below works from inside such a repository, whose fsmonitor and
hooks write a marker file, and asserts the marker never appears. The first
test proves the plant is live: a plain ``git status`` there does write it.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, load_example
from figaroh._run import git as run_git
from figaroh.cli.main import main
from figaroh.tools.provenance import collect_run_provenance

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
_HOOKS = (
    "pre-commit",
    "post-checkout",
    "post-index-change",
    "pre-auto-gc",
    "reference-transaction",
)


def _script(path: Path, marker: Path) -> None:
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _plant(repo: Path, marker: Path) -> Path:
    """A committed repository at ``repo`` whose fsmonitor and hooks append to ``marker``."""
    repo.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "tracked.txt").write_text("v1")
    ids = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "add", "tracked.txt"], cwd=repo, check=True)
    subprocess.run(["git", *ids, "commit", "-qm", "init"], cwd=repo, check=True)
    hooks = repo / ".git" / "hooks"  # planted once the repository is set up
    hooks.mkdir(exist_ok=True)
    for hook in _HOOKS:
        _script(hooks / hook, marker)
    monitor = repo.parent / f"{repo.name}-fsmonitor.sh"
    _script(monitor, marker)
    subprocess.run(["git", "config", "core.fsmonitor", str(monitor)], cwd=repo, check=True)
    return repo


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """``(repo, marker)``: the working directory is a planted repository."""
    marker = tmp_path / "MARKER"
    repo = _plant(tmp_path / "work", marker)
    monkeypatch.chdir(repo)
    return repo, marker


def _cli(*args) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, err.getvalue()


class _Run:
    """A duck-typed run object: enough for a provenance record."""

    identif_config = {"robot_name": "ur10"}
    calib_config = {"robot_name": "ur10"}


def test_the_planted_repository_is_live(planted):
    repo, marker = planted
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=True)
    assert marker.is_file(), "the planted fsmonitor did not run: this file proves nothing"


@pytest.mark.parametrize("task", ["identification", "calibration"])
def test_provenance_runs_nothing_from_the_working_directory(planted, task):
    repo, marker = planted
    record = dict(collect_run_provenance(_Run(), task))  # reading it queries git
    assert not marker.exists()
    commit = record["software"]["git_commit"]
    top = run_git.figaroh_checkout()
    if top is None:
        assert commit == f"unavailable: {run_git.NOT_A_CHECKOUT}"
    else:  # figaroh's own checkout, never the planted repository
        assert top != repo and not str(repo).startswith(str(top) + "/")
    planted_head = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "rev-parse", "HEAD"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert commit != planted_head


def test_figarohs_own_checkout_is_queried_with_fsmonitor_and_hooks_off(tmp_path, monkeypatch):
    marker = tmp_path / "MARKER"
    checkout = _plant(tmp_path / "checkout", marker)
    (checkout / "src" / "figaroh").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text('[project]\nname = "figaroh"\n')
    monkeypatch.setattr(run_git, "_PACKAGE_DIR", checkout / "src" / "figaroh")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))  # dropped from git's environment
    record = dict(collect_run_provenance(_Run(), "identification"))
    assert not marker.exists()
    head = (checkout / ".git" / "refs" / "heads").iterdir().__next__().read_text().strip()
    assert record["software"]["git_commit"] == head
    assert record["software"]["git_dirty"] is False
    assert run_git.git_head() == (True, head) and not marker.exists()


@pytest.fixture(scope="module")
def ur10_files(tmp_path_factory, ur10_urdf):
    """Small UR10 identification and calibration sets (simulated)."""
    from figaroh.tools.robot import Robot

    ident = load_example("ur10/identification.py", "ur10_identification_no_code_runs")
    calib = load_example("ur10/calibration.py", "ur10_calibration_no_code_runs")
    folder = tmp_path_factory.mktemp("no_code_runs")
    robot = Robot(str(ur10_urdf), load_geometry=False)
    train, validation = ident.generate_ur10_data(folder / "ident", 600, 0.5, seed=3, robot=robot)
    c_train, c_test, _ = calib.simulate_ur10_calibration(
        folder / "calib", robot=robot, n_train=40, n_test=30
    )
    return ur10_urdf, train, validation, c_train, c_test


@pytest.mark.parametrize("command", ["identify", "calibrate"])
def test_cli_runs_nothing_from_a_planted_working_directory(planted, ur10_files, command):
    repo, marker = planted
    urdf, train, validation, c_train, c_test = ur10_files
    data, held_out = (train, validation) if command == "identify" else (c_train, c_test)
    # the data folder is a planted repository too
    data_repo = _plant(repo / "data", marker)
    local = data_repo / Path(data).name
    shutil.copytree(data, local) if Path(data).is_dir() else shutil.copy(data, local)
    code, err = _cli(
        command, CONFIG, "--urdf", urdf, "--data", local, "--validation-data", held_out,
        "-o", repo / "out", "--archive", "-q",
    )  # fmt: skip
    assert code in (0, 1), err  # the verdict may pass or fail: it ran to the end
    assert not marker.exists()
    archived = list((repo / "out").rglob("provenance.json"))
    assert archived, "no archived provenance: the record was never read"
    software = json.loads(archived[0].read_text())["software"]
    assert "fatal" not in str(software["git_commit"])
