"""Tests of figaroh.tools.provenance and figaroh.tools.run_archive."""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import math
import os
import pickle
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

from figaroh._run import git as run_git
from figaroh._run import html as run_html
from figaroh._run import provenance as prov_mod
from figaroh._run.deferred_record import DeferredRecord
from figaroh.data.source import DataSource, Session
from figaroh.tools.provenance import collect_run_provenance, collect_splits
from figaroh.tools.run_archive import (
    _safe_path_component,
    archive_run,
    compute_run_dir,
    read_index,
)
from figaroh.tools.stages import record_stage

START = "2024-03-05T10:00:00+00:00"
FINISH = "2024-03-05T10:02:03.456000+00:00"


def _strict_loads(text):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _model(name="ur10"):
    return types.SimpleNamespace(name=name, nq=6, nv=6, njoints=7)


@pytest.fixture
def ident(tmp_path):
    """Duck-typed BaseIdentification after solve()."""
    cfg = _write(tmp_path / "cfg" / "ur10_config.yaml", b"robot: {name: ur10}\n# \xc3\xa9\n")
    train = _write(tmp_path / "data" / "train.csv", b"t,q\n0,1\n")
    _write(tmp_path / "cfg" / "heldout.csv", b"t,q\n0,2\n")
    trajectory = types.SimpleNamespace(
        source=DataSource.from_files(
            [train], adapter="TrajectoryData.from_csv", session=Session("s1", "2024-03-01")
        ),
        n_samples=5,
    )
    obj = types.SimpleNamespace(
        _config_file_path=str(cfg),
        identif_config={
            "robot_name": "ur10",
            "instance": {"asset_id": "ur10-cell-2", "site": "lab B", "operator": "ana"},
            "active_joints": ["j1", "j2"],
            "ts": 0.002,
            "qr_relative_tolerance": float("nan"),
            "validation_data_file": "heldout.csv",  # relative to the config folder
            "secret_internal_key": "must not be surfaced",
            "q0": np.zeros(6),
        },
        robot=types.SimpleNamespace(model=_model()),
        model=_model(),
        trajectory=trajectory,
        _sample_mask=np.array([True, False, True, True, False]),
        num_samples=5,
        _run_started_at=START,
        _run_finished_at=FINISH,
        result={
            "base parameters names": ["Izz1", "fv1", "m2"],
            "base parameters values": np.array([1.25, -0.5, float("nan")]),
        },
        stages=[],
    )
    return obj


def _solved(obj, task="identification"):
    obj._run_provenance = collect_run_provenance(obj, task)
    return obj


# ---------------------------------------------------------------------------
# Provenance
# ---------------------------------------------------------------------------


def test_config_sha256_matches_hashlib_and_sha256sum(ident):
    prov = collect_run_provenance(ident, "identification")
    data = Path(ident._config_file_path).read_bytes()
    assert prov["config"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert prov["config"]["path"] == ident._config_file_path
    if shutil.which("sha256sum"):
        out = subprocess.run(
            ["sha256sum", ident._config_file_path], capture_output=True, text=True, check=True
        ).stdout
        assert prov["config"]["sha256"] == out.split()[0]


def test_provenance_record_identification(ident, tmp_path):
    prov = collect_run_provenance(ident, "identification")
    text = json.dumps(prov, allow_nan=False)  # strict JSON, no error
    assert _strict_loads(text) == prov
    assert set(prov) == {
        "run_id",
        "task",
        "asset",
        "model",
        "config",
        "software",
        "data",
        "timestamps",
    }
    assert prov["task"] == "identification"
    assert prov["asset"]["asset_id"] == "ur10-cell-2" and prov["asset"]["is_specified"] is True
    assert prov["asset"]["site"] == "lab B" and prov["asset"]["serial_number"] is None
    assert prov["model"]["robot_name"] == "ur10" and prov["model"]["nv"] == 6
    values = prov["config"]["values"]
    assert values["active_joints"] == ["j1", "j2"] and values["ts"] == 0.002
    assert values["qr_relative_tolerance"] is None  # NaN -> null (strict JSON)
    assert "secret_internal_key" not in values and "q0" not in values
    sw = prov["software"]
    for key in (
        "python",
        "numpy",
        "scipy",
        "pinocchio",
        "figaroh",
        "git_commit",
        "git_dirty",
        "hostname",
    ):
        assert key in sw
    assert sw["numpy"] == np.__version__
    assert prov["timestamps"]["run_started"] == START
    assert prov["timestamps"]["run_finished"] == FINISH
    assert prov["run_id"].startswith("ur10-cell-2_identification_20240305T100203Z_")

    files = {(f["role"], Path(f.get("resolved", f["path"])).name): f for f in prov["data"]["files"]}
    train = files[("training", "train.csv")]
    assert train["sha256"] == hashlib.sha256(b"t,q\n0,1\n").hexdigest()
    assert train["modified_since_load"] is False
    held = files[("validation", "heldout.csv")]
    assert held["sha256"] == hashlib.sha256(b"t,q\n0,2\n").hexdigest()

    # the training file changes after loading: the record says so
    (tmp_path / "data" / "train.csv").write_bytes(b"tampered")
    again = collect_run_provenance(ident, "identification")
    train = next(f for f in again["data"]["files"] if f["path"].endswith("train.csv"))
    assert train["sha256"] == hashlib.sha256(b"t,q\n0,1\n").hexdigest()
    assert train["modified_since_load"] is True


def test_provenance_calibration_and_directories(tmp_path):
    cfg = _write(tmp_path / "calib.yaml", b"tasks: {}\n")
    data = _write(tmp_path / "calibration.csv", b"x1,y1\n1,2\n")
    _write(tmp_path / "heldout" / "a.csv", b"a")
    _write(tmp_path / "heldout" / "sub" / "b.csv", b"b")
    obj = types.SimpleNamespace(
        _config_file_path=cfg,
        calib_config={
            "robot_name": "tiago",
            "random_seed": 7,
            "NbSample": 29,
            "data_file": str(data),
            "validation_data_file": str(tmp_path / "heldout"),
            "sample_configs_file": "None",  # YAML quirk: the string "None"
        },
        _data_path=str(data),
        model=_model("tiago"),
    )
    prov = collect_run_provenance(obj, "calibration")
    assert prov["config"]["values"]["random_seed"] == 7
    assert prov["asset"] == {
        "asset_id": "tiago",
        "is_specified": False,
        "label": None,
        "serial_number": None,
        "site": None,
        "operator": None,
    }
    entries = prov["data"]["files"]
    by_name = {Path(e["path"]).name: e for e in entries}
    assert by_name["calibration.csv"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert [e["role"] for e in entries].count("training") == 1  # _data_path == data_file
    assert by_name["a.csv"]["role"] == "validation"
    assert by_name["b.csv"]["sha256"] == hashlib.sha256(b"b").hexdigest()
    assert not any(e["path"] == "None" for e in entries)
    assert prov["timestamps"]["run_started"].startswith("unavailable:")
    assert run_html._run_title(prov, "X") == "tiago"


class _Exploding:
    """Every attribute access fails."""

    def __getattr__(self, name):
        raise RuntimeError(f"boom {name}")


def test_provenance_never_raises(monkeypatch, tmp_path):
    for obj in (object(), _Exploding(), types.SimpleNamespace(identif_config="not a dict")):
        prov = collect_run_provenance(obj, "identification")
        json.dumps(prov, allow_nan=False)
        assert prov["config"]["path"].startswith("unavailable:")
        assert prov["config"]["sha256"].startswith("unavailable:")
        assert prov["model"]["robot_name"].startswith("unavailable:")
        assert prov["asset"]["asset_id"] == "unknown"

    obj = types.SimpleNamespace(
        _config_file_path=str(tmp_path / "missing.yaml"),
        identif_config={"instance": ["not", "a", "mapping"], "validation_data_file": 3.5},
    )
    monkeypatch.setattr(prov_mod, "host_name", lambda: 1 / 0)
    monkeypatch.setattr(prov_mod, "_software_versions", lambda: {}["missing"])
    prov = collect_run_provenance(obj, "bogus-task")
    assert prov["config"]["sha256"].startswith("unavailable: FileNotFoundError")
    assert prov["config"]["values"].startswith("unavailable: unknown task")
    assert prov["software"]["hostname"].startswith("unavailable: ZeroDivisionError")
    assert prov["software"]["versions"].startswith("unavailable: KeyError")
    assert prov["asset"]["is_specified"] is False
    json.dumps(prov, allow_nan=False)


def test_git_absent_is_unavailable(ident, monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    obj = _solved(ident)
    sw = obj._run_provenance["software"]
    assert sw["git_commit"] == "unavailable: git executable not found"
    assert sw["git_dirty"] == "unavailable: git executable not found"
    assert obj._run_provenance["run_id"].endswith("_nogit")
    run_dir = compute_run_dir(obj, tmp_path / "runs")
    assert run_dir.name == "20240305T100203Z_nogit"
    assert run_html._hash_short(sw["git_commit"]) == sw["git_commit"]


def _fake_checkout(top: Path, name: str = "figaroh") -> str:
    """A git repository laid out as figaroh's source checkout; returns its HEAD."""
    ids = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
    (top / "src" / "figaroh").mkdir(parents=True)
    (top / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    subprocess.run(["git", "init", "-q"], cwd=top, check=True)
    (top / "tracked.txt").write_text("v1")
    subprocess.run(["git", "add", "tracked.txt", "pyproject.toml"], cwd=top, check=True)
    subprocess.run(["git", *ids, "commit", "-qm", "init"], cwd=top, check=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=top, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_commit_and_dirty_state_of_figarohs_checkout(ident, tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    head = _fake_checkout(checkout)
    monkeypatch.setattr(run_git, "_PACKAGE_DIR", checkout / "src" / "figaroh")
    other = tmp_path / "other"  # a repository in the working directory is not asked
    other.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=other, check=True)
    monkeypatch.chdir(other)
    sw = collect_run_provenance(ident, "identification")["software"]
    assert sw["git_commit"] == head and sw["git_dirty"] is False
    (checkout / "tracked.txt").write_text("v2")
    sw = collect_run_provenance(ident, "identification")["software"]
    assert sw["git_commit"] == head and sw["git_dirty"] is True


@pytest.mark.parametrize(
    "layout",
    ["site-packages", "other-project", "no-git", "not-src"],
)
def test_outside_figarohs_checkout_no_git_runs(ident, tmp_path, monkeypatch, layout):
    top = tmp_path / "top"
    (top / "src" / "figaroh").mkdir(parents=True)
    (top / "pyproject.toml").write_text(
        '[project]\nname = "%s"\n' % ("other" if layout == "other-project" else "figaroh")
    )
    if layout != "no-git":
        (top / ".git").mkdir()
    package = {
        "site-packages": tmp_path / "lib" / "site-packages" / "figaroh",
        "not-src": top / "lib" / "figaroh",
    }.get(layout, top / "src" / "figaroh")
    package.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(run_git, "_PACKAGE_DIR", package)
    calls: list = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a))
    sw = collect_run_provenance(ident, "identification")["software"]
    assert calls == []
    assert sw["git_commit"] == sw["git_dirty"] == f"unavailable: {run_git.NOT_A_CHECKOUT}"
    assert "fatal" not in sw["git_commit"]


@pytest.fixture
def git_calls(monkeypatch):
    """The argument lists of every ``git`` subprocess started through figaroh._run.git."""
    calls: list = []
    real = subprocess.run

    def spy(args, *a, **k):
        if Path(str(args[0])).name.startswith("git"):
            calls.append(list(args[1:]))
        return real(args, *a, **k)

    monkeypatch.setattr(subprocess, "run", spy)  # figaroh._run.git imports it per call
    return calls


def test_capture_runs_no_git_until_the_record_is_read(ident, git_calls):
    obj = _solved(ident)
    assert git_calls == []  # solve() captures the record: no subprocess
    record = obj._run_provenance
    assert isinstance(record, dict) and record["task"] == "identification"
    assert len(git_calls) == 1 and "status" in git_calls[0]  # one call gives both fields
    assert git_calls[0][:2] == ["-C", str(run_git.figaroh_checkout())]  # never the cwd
    assert run_git.SAFE_GIT_OPTIONS == tuple(git_calls[0][2:8])  # no fsmonitor, no hooks
    assert list(record) == [
        "run_id",
        "task",
        "asset",
        "model",
        "config",
        "software",
        "data",
        "timestamps",
    ]
    assert {"git_commit", "git_dirty", "hostname", "numpy"} <= set(record["software"])
    json.dumps(record), record.get("run_id"), dict(record)
    assert len(git_calls) == 1  # filled once


def _pending(ident):
    return collect_run_provenance(ident, "identification")


@pytest.mark.parametrize(
    "serialise",
    [
        pytest.param(lambda r: _strict_loads(json.dumps(r, allow_nan=False)), id="json"),
        pytest.param(lambda r: _strict_loads(json.dumps(r, indent=2)), id="json-indent"),
        pytest.param(lambda r: _strict_loads(json.dumps({"p": r}))["p"], id="json-nested"),
        pytest.param(lambda r: yaml.safe_load(yaml.safe_dump(r)), id="yaml-safe"),
        pytest.param(
            lambda r: yaml.safe_load(yaml.dump({"p": r}, Dumper=yaml.CSafeDumper))["p"],
            id="yaml-c-nested",
            marks=pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="no libyaml"),
        ),
        pytest.param(lambda r: yaml.safe_load(yaml.dump(r)), id="yaml-dump"),
        pytest.param(dict, id="dict"),
        pytest.param(lambda r: {**r}, id="unpack"),
        pytest.param(copy.deepcopy, id="deepcopy"),
        pytest.param(copy.copy, id="copy"),
        pytest.param(lambda r: pickle.loads(pickle.dumps(r)), id="pickle"),
        pytest.param(lambda r: dict(r.items()), id="items"),
    ],
)
def test_a_pending_record_serialises_complete(ident, serialise):
    out = serialise(_pending(ident))
    assert type(out) is dict
    assert "run_id" in out and "git_commit" in out["software"]
    expected = dict(_pending(ident).items())
    for section in ("task", "asset", "model", "config", "data"):
        assert out[section] == expected[section]
    assert out["software"].keys() == expected["software"].keys()


def test_pending_records_compare_and_print_complete(ident):
    a, b = _pending(ident), _pending(ident)
    assert len(a) == 8 and "run_id" in b
    a, b = _pending(ident), _pending(ident)
    assert (a == b) is (dict(a.items()) == dict(b.items()))
    assert "git_commit" in repr(_pending(ident))


def test_deferred_record_completes_once_at_the_first_read():
    calls = []

    def complete(fields):
        calls.append(dict(fields))
        return {"first": 0, **fields}

    record = DeferredRecord({"b": 1}, complete)
    assert record.is_pending and calls == []
    assert list(record) == ["first", "b"] and not record.is_pending
    assert record == {"first": 0, "b": 1} and calls == [{"b": 1}]
    written = DeferredRecord({"b": 1}, complete)
    written["c"] = 2  # a write completes first, then applies
    assert dict(written) == {"first": 0, "b": 1, "c": 2}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_worktree_state_of_a_repository_without_commit(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    state = run_git.worktree_state(tmp_path)
    assert state.commit is None and state.dirty is False and "no commit" in state.reason
    (tmp_path / "f.txt").write_text("x")
    subprocess.run(["git", "add", "f.txt"], cwd=tmp_path, check=True)
    assert run_git.worktree_state(tmp_path).dirty is True


def test_calibration_solve_starts_no_git_subprocess(shared_data, git_calls, tmp_path):
    from conftest import load_example

    example = load_example("ur10/calibration.py", "ur10_calibration_provenance_test")
    robot = example.Robot(example.ur10_urdf(), load_geometry=False)
    calib = example.make_calibrator(robot, shared_data / "ur10" / "calibration.csv")
    calib.initialize()
    calib.solve(enable_logging=False)
    assert git_calls == []
    run_dir = compute_run_dir(calib, tmp_path / "runs")  # the first write reads the record
    assert len(git_calls) == 1 and run_dir.name.endswith(calib._run_provenance["run_id"][-8:])


def test_collect_splits(ident):
    splits = collect_splits(ident)
    assert splits == {
        "training": {
            "adapter": "TrajectoryData.from_csv",
            "files": dict(ident.trajectory.source.files),
            "masked_samples": 2,
            "samples": 5,
            "session": {"id": "s1", "date": "2024-03-01"},
        },
        "validation": None,
        "validation_source": "training_fallback",
    }
    ident._val_available = True
    ident._val_trajectory = types.SimpleNamespace(source=DataSource(adapter="held"), n_samples=9)
    ident._val_sample_mask = None
    ident._val_num_samples = 9
    splits = collect_splits(ident)
    assert splits["validation_source"] == "held_out"
    assert splits["validation"] == {
        "adapter": "held",
        "files": {},
        "masked_samples": 0,
        "samples": 9,
        "session": None,
    }
    legacy = types.SimpleNamespace(num_samples=400, _sample_mask=None, trajectory=None)
    assert collect_splits(legacy)["training"] == {
        "adapter": "",
        "files": {},
        "masked_samples": 0,
        "samples": 400,
        "session": None,
    }
    broken = types.SimpleNamespace(num_samples=4, _sample_mask=np.array([1, 0]), trajectory=None)
    out = collect_splits(broken)  # never raises
    assert out["training"] is None and out["validation_source"].startswith("unavailable:")


# ---------------------------------------------------------------------------
# Run directory
# ---------------------------------------------------------------------------


def test_compute_run_dir_is_deterministic_and_structured(ident, tmp_path):
    obj = _solved(ident)
    root = tmp_path / "runs"
    first = compute_run_dir(obj, root)
    assert first == compute_run_dir(obj, root) == compute_run_dir(obj, str(root))
    commit = obj._run_provenance["software"]["git_commit"]
    short = commit[:8] if not commit.startswith("unavailable") else "nogit"
    assert first == root / "ur10-cell-2" / "identification" / f"20240305T100203Z_{short}"
    assert first.is_dir()
    # another run object with the same provenance never shares the directory
    other = types.SimpleNamespace(_run_provenance=dict(obj._run_provenance))
    second = compute_run_dir(other, root)
    assert second != first and second.name == first.name + "-r2"


@pytest.mark.parametrize(
    "asset",
    ["../../etc", "a/b", "..", ".", "/abs/path", "..\\..\\win", "x\x00y\n\tz", "", "ü/../é"],
)
def test_path_traversal_asset_stays_inside_root(tmp_path, asset):
    prov = {
        "task": "../task/../../x",
        "asset": {"asset_id": asset},
        "timestamps": {"run_finished": FINISH},
        "software": {"git_commit": "../../../../"},
    }
    obj = types.SimpleNamespace(_run_provenance=prov)
    root = tmp_path / "root"
    run_dir = compute_run_dir(obj, root)
    rel = run_dir.resolve().relative_to(root.resolve())
    assert len(rel.parts) == 3
    for part in rel.parts:
        assert part not in ("", ".", "..") and ".." not in part
        assert "/" not in part and "\\" not in part
        assert all(ch.isprintable() and ord(ch) < 128 for ch in part)
    assert not (tmp_path / "etc").exists()
    assert rel.parts[2] == "20240305T100203Z_nogit"


def test_safe_path_component_examples():
    assert _safe_path_component("../../etc") == "etc"
    assert _safe_path_component("a/b") == "a_b"
    assert _safe_path_component("..") == "unknown"
    assert _safe_path_component("ur10-cell 2") == "ur10-cell_2"
    assert _safe_path_component("x" * 500) == "x" * 80


def test_run_dir_requires_provenance(tmp_path):
    with pytest.raises(AttributeError, match="Run solve\\(\\) first"):
        compute_run_dir(types.SimpleNamespace(), tmp_path)
    with pytest.raises(AttributeError, match="Run solve\\(\\) first"):
        archive_run(types.SimpleNamespace(), tmp_path)


# ---------------------------------------------------------------------------
# Archive
# ---------------------------------------------------------------------------


def _read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], [(n, float(v)) for n, v in rows[1:]]


def test_archive_twice_gives_two_directories_and_two_index_lines(ident, tmp_path):
    obj = _solved(ident)
    record_stage(obj, "fit", "ok", "least squares", {"effort_rmse": (float("nan"), "N·m")})
    root = tmp_path / "runs"
    run_dir = compute_run_dir(obj, root)
    (run_dir / "verdict.json").write_text(
        json.dumps(
            {"status": "fail", "passed": False, "scope": "prediction", "metrics": {"rmse": None}}
        )
    )
    d1 = archive_run(obj, run_dir)
    d2 = archive_run(obj, compute_run_dir(obj, root))
    assert d1 == str(run_dir) and d2 != d1
    assert Path(d2).parent == Path(d1).parent
    lines = (root / "index.jsonl").read_text().splitlines()
    assert len(lines) == 2
    entries = [_strict_loads(line) for line in lines]
    assert entries == read_index(root)
    assert [e["run_dir"] for e in entries] == [
        Path(d).relative_to(root).as_posix() for d in (d1, d2)
    ]
    assert entries[0]["status"] == "fail" and entries[0]["passed"] is False
    assert entries[1]["status"] is None  # no verdict written in the second directory
    assert (
        entries[0]["config_sha256"]
        == hashlib.sha256(Path(ident._config_file_path).read_bytes()).hexdigest()
    )

    for d in (d1, d2):
        d = Path(d)
        assert _strict_loads((d / "provenance.json").read_text()) == obj._run_provenance
        snap = yaml.safe_load((d / "config.snapshot.yaml").read_text())
        assert snap["instance"] == ident.identif_config["instance"]
        assert snap["q0"] == [0.0] * 6 and math.isnan(snap["qr_relative_tolerance"])
        header, rows = _read_csv(d / "parameters.csv")
        assert header == ["parameter", "value"]
        assert [n for n, _ in rows] == ["Izz1", "fv1", "m2"]
        assert rows[0][1] == 1.25 and rows[1][1] == -0.5 and math.isnan(rows[2][1])
        stages = _strict_loads((d / "stages.json").read_text())
        assert stages["stages"][0]["metrics"]["effort_rmse"]["value"] is None


def test_archiving_into_a_sealed_directory_never_overwrites(ident, tmp_path):
    obj = _solved(ident)
    root = tmp_path / "runs"
    d1 = Path(archive_run(obj, compute_run_dir(obj, root)))
    before = {p.name: p.read_bytes() for p in d1.iterdir()}
    ident.result["base parameters values"] = np.array([9.0, 9.0, 9.0])
    d2 = Path(archive_run(obj, d1))
    d3 = Path(archive_run(obj, d1))
    assert len({d1, d2, d3}) == 3
    assert {p.name: p.read_bytes() for p in d1.iterdir()} == before
    assert _read_csv(d2 / "parameters.csv")[1][0] == ("Izz1", 9.0)
    assert len(read_index(root)) == 3


def test_calibration_parameters_are_archived(tmp_path):
    obj = types.SimpleNamespace(
        calib_config={"robot_name": "tiago", "param_name": ["a"]},
        results_data={
            "calibrated parameters names": ["d_px_1", "d_pz_2"],
            "calibrated parameters values": [0.001, -0.002],
        },
        model=_model("tiago"),
        _run_finished_at=FINISH,
    )
    _solved(obj, "calibration")
    d = Path(archive_run(obj, compute_run_dir(obj, tmp_path)))
    assert d.relative_to(tmp_path).parts[:2] == ("tiago", "calibration")
    assert _read_csv(d / "parameters.csv")[1] == [("d_px_1", 0.001), ("d_pz_2", -0.002)]
    assert not (d / "stages.json").exists()


def test_inconsistent_parameters_raise_before_writing(ident, tmp_path):
    obj = _solved(ident)
    ident.result["base parameters values"] = np.array([1.0, 2.0])
    run_dir = compute_run_dir(obj, tmp_path)
    with pytest.raises(ValueError, match="3 names for 2 values"):
        archive_run(obj, run_dir)
    assert list(run_dir.iterdir()) == []
    assert not (tmp_path / "index.jsonl").exists()


@pytest.mark.parametrize("fail_at", ["fsync", "replace"])
def test_crash_while_writing_leaves_no_partial_file(ident, tmp_path, monkeypatch, fail_at):
    obj = _solved(ident)
    root = tmp_path / "runs"
    run_dir = compute_run_dir(obj, root)
    real = getattr(os, fail_at)
    calls = {"n": 0}

    def crash_on_config_snapshot(*args, **kwargs):
        # fsync: 1 = archiving marker, 2 = provenance.json, 3 = config.snapshot.yaml
        # replace: 1 = provenance.json, 2 = config.snapshot.yaml
        calls["n"] += 1
        if calls["n"] == (3 if fail_at == "fsync" else 2):
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(os, fail_at, crash_on_config_snapshot)
    with pytest.raises(OSError, match="No space left") as info:
        archive_run(obj, run_dir)
    monkeypatch.setattr(os, fail_at, real)
    assert str(run_dir / "config.snapshot.yaml") in str(info.value)  # the path is named

    # no temp file, no half file, no partial archive: nothing was sealed or indexed
    assert sorted(p.name for p in run_dir.iterdir()) == []
    assert not (root / "index.jsonl").exists()

    # the failed archive left nothing: the retry archives into the same directory
    retry = Path(archive_run(obj, compute_run_dir(obj, root)))
    assert retry == run_dir
    assert {"provenance.json", "config.snapshot.yaml", "parameters.csv"} <= {
        p.name for p in retry.iterdir()
    }
    assert len(read_index(root)) == 1


def test_torn_index_line_is_repaired(ident, tmp_path):
    obj = _solved(ident)
    root = tmp_path / "runs"
    root.mkdir()
    (root / "index.jsonl").write_text('{"run_id": "complete"}\n{"run_id": "torn')
    archive_run(obj, compute_run_dir(obj, root))
    lines = (root / "index.jsonl").read_text().splitlines()
    assert len(lines) == 3
    assert _strict_loads(lines[2])["run_id"] == obj._run_provenance["run_id"]
    assert [e["run_id"] for e in read_index(root)] == ["complete", obj._run_provenance["run_id"]]


def test_archived_run_verifies_against_its_index_hashes(ident, tmp_path):
    from figaroh.tools.run_archive import verify_archived_run

    obj = _solved(ident)
    root = tmp_path / "runs"
    run_dir = compute_run_dir(obj, root)
    (run_dir / "verdict.json").write_text('{"status": "pass"}', encoding="utf-8")
    archived = Path(archive_run(obj, run_dir))
    (entry,) = read_index(root)
    names = sorted(p.name for p in archived.iterdir() if p.name != ".archived")
    assert entry["files"] == names and sorted(entry["sha256"]) == names
    assert entry["sha256"]["verdict.json"] == hashlib.sha256(b'{"status": "pass"}').hexdigest()
    check = verify_archived_run(archived)  # root defaults to the grand-grand-parent
    assert check.ok and check.problems == () and check.run_dir == str(archived)

    os.chmod(archived / "parameters.csv", 0o644)
    (archived / "parameters.csv").write_text("parameter,value\nIzz1,0.0\n", encoding="utf-8")
    (archived / "stages.json").unlink(missing_ok=True)
    (archived / "provenance.json").unlink()
    (archived / "notes.txt").write_text("added", encoding="utf-8")
    bad = verify_archived_run(archived, root)
    assert not bad.ok
    text = "\n".join(bad.problems)
    assert "parameters.csv: altered" in text and "provenance.json: missing" in text
    assert "notes.txt: added after archiving" in text


def test_unfinished_archive_does_not_verify(ident, tmp_path):
    from figaroh.tools.run_archive import verify_archived_run

    obj = _solved(ident)
    run_dir = compute_run_dir(obj, tmp_path / "runs")
    check = verify_archived_run(run_dir, tmp_path / "runs")
    assert not check.ok
    assert any("not sealed" in p for p in check.problems)
    assert any("did not finish" in p for p in check.problems)
