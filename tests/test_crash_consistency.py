"""SIGKILL at random points: result sets, archived runs and fleet runs are complete or absent.

A forked child loops over one kind of write and is killed with SIGKILL after a
random (seeded) delay, ``KILLS`` times per kind:

* ``save_results()`` (yaml + csv + json + npz + ``_metadata.yaml``): after
  each kill, :func:`~figaroh.utils.results_manager.list_saved_results` lists
  only complete sets (every file there, the data files equal to an
  undisturbed save); the next save into the folder removes the killed save's
  incomplete set, after which every set in the folder is complete.
* ``archive_run()``: every sealed run folder has exactly one line in
  ``index.jsonl`` and verifies against it; :func:`read_index` lists exactly
  the sealed runs.
* the fleet driver's write (:func:`~figaroh.fleet.run_index.write_fleet_run`):
  ``figaroh index rebuild`` exits 0, reports the torn folders it finished or
  removed, and leaves every sealed folder indexed exactly once (``index.jsonl``
  and ``index.sqlite``) and no torn folder behind.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import sys
import time
import types
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml

from figaroh._run.archive import (
    INDEX_FILE,
    archive_run,
    claim_run_dir,
    compute_run_dir,
    read_index,
    sweep_interrupted_runs,
    verify_archived_run,
)
from figaroh.cli import main as cli_main
from figaroh.fleet.record import ParameterEstimate, RunRecord
from figaroh.fleet.run_index import RunIndex, index_path, write_fleet_run
from figaroh.utils.fileio import is_sealed_dir
from figaroh.utils.results_manager import ResultsManager, list_saved_results

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or not hasattr(os, "fork"), reason="needs fork and SIGKILL"
)

KILLS = 20
SEED = 20270127
FORMATS = ["yaml", "csv", "json", "npz"]

_RNG = np.random.default_rng(3)
RESULTS = {
    "base parameters names": [f"p{i}" for i in range(60)],
    "base parameters values": _RNG.normal(size=60),
    "torque processed": _RNG.normal(size=20000),
    "condition number": 57.0,
}


def _kill_loop(loop, seconds: float, seed: int) -> list[float]:
    """Fork ``loop()`` ``KILLS`` times, SIGKILL each after a random delay; yield after each.

    The delay starts when the child says it is running (a byte on a pipe), not
    at the fork: on a loaded machine a child can wait longer for its first
    time slice than the whole delay, and a kill before the first write hits
    nothing.
    """
    rng = random.Random(seed)
    for trial in range(KILLS):
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: write until killed
            try:
                os.close(ready_r)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.write(ready_w, b"1")
                loop(trial)
            finally:
                os._exit(0)
        os.close(ready_w)
        os.read(ready_r, 1)
        os.close(ready_r)
        time.sleep(rng.uniform(0.0, seconds))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        yield trial


# --------------------------------------------------------------------------
# save_results
# --------------------------------------------------------------------------
def _save(folder: Path) -> dict:
    return ResultsManager("identification", "kt", RESULTS).save_results(
        output_dir=folder, file_prefix="res", save_formats=FORMATS
    )


def _same_set(files: dict, reference: dict) -> None:
    assert files.keys() == reference.keys()
    for fmt in ("yaml", "csv", "json"):
        assert Path(files[fmt]).read_bytes() == Path(reference[fmt]).read_bytes(), files[fmt]
    with np.load(files["npz"]) as got, np.load(reference["npz"]) as want:
        assert sorted(got.files) == sorted(want.files)
        for key in want.files:
            np.testing.assert_array_equal(got[key], want[key])
    meta = yaml.safe_load(Path(files["metadata"]).read_text(encoding="utf-8"))
    assert meta["files"] == {f: Path(p).name for f, p in files.items() if f != "metadata"}


def _stems(folder: Path) -> Counter:
    """Stem → number of data files (yaml/csv/json/npz) in ``folder``."""
    found: Counter = Counter()
    for p in folder.iterdir():
        if not p.name.startswith(".") and not p.name.endswith("_metadata.yaml"):
            found[p.name.rsplit(".", 1)[0]] += 1
    return found


def test_killed_saves_leave_complete_sets_or_none(tmp_path):
    reference = _save(tmp_path / "reference")
    folder = tmp_path / "results"
    started = time.perf_counter()
    _save(folder)
    one_save = time.perf_counter() - started

    def loop(trial: int) -> None:
        while True:
            _save(folder)

    torn_seen = 0
    for _ in _kill_loop(loop, 3 * one_save, SEED):
        listed = list_saved_results(folder)
        complete = {s["prefix"] for s in listed}
        for result_set in listed:  # every listed set is whole and equals an undisturbed save
            _same_set(result_set["files"], reference)
        torn = [stem for stem in _stems(folder) if stem not in complete]
        torn_seen += len(torn)
        _save(folder)  # the next save removes the killed save's incomplete set
        after = {s["prefix"] for s in list_saved_results(folder)}
        assert set(_stems(folder)) == after, "an incomplete set survived the next save"
        assert not [p for p in folder.iterdir() if p.name.startswith(".")], "litter left"
    assert torn_seen > 0, "no kill hit a save in the middle: the test proves nothing"


# --------------------------------------------------------------------------
# archive_run
# --------------------------------------------------------------------------
def _run_object() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        _run_provenance={
            "run_id": "crash-run",
            "task": "identification",
            "asset": {"asset_id": "robot-1"},
            "software": {"git_commit": "0123456789abcdef"},
            "timestamps": {"run_finished": "2027-01-27T10:00:00+00:00"},
            "notes": ["x" * 100] * 500,
        },
        identif_config={"robot": "kt", "values": list(range(2000))},
        result={
            "base parameters names": RESULTS["base parameters names"],
            "base parameters values": RESULTS["base parameters values"],
        },
        stages=None,
    )


def _lines_per_folder(root: Path) -> Counter:
    lines = (root / INDEX_FILE).read_text().splitlines() if (root / INDEX_FILE).exists() else []
    return Counter(json.loads(line)["run_dir"] for line in lines if line.strip())


def test_killed_archives_are_sealed_and_indexed_or_absent(tmp_path):
    root = tmp_path / "runs"
    started = time.perf_counter()
    archive_run(_run_object(), compute_run_dir(_run_object(), tmp_path / "reference"))
    one_archive = time.perf_counter() - started

    def loop(trial: int) -> None:
        while True:
            obj = _run_object()
            archive_run(obj, compute_run_dir(obj, root))

    unsealed_seen = 0
    for _ in _kill_loop(loop, 4 * one_archive, SEED + 1):
        lines = _lines_per_folder(root)
        folders = [p for p in root.glob("*/*/*") if p.is_dir()]
        sealed = {p.relative_to(root).as_posix() for p in folders if is_sealed_dir(p)}
        for rel in sealed:
            assert lines[rel] == 1, f"sealed run {rel} has {lines[rel]} index lines"
            check = verify_archived_run(root / rel, root)
            assert check.ok, check.problems
        assert {e["run_dir"] for e in read_index(root)} == sealed
        assert all(n == 1 for n in lines.values()), "a folder was indexed twice"
        unsealed_seen += len(folders) - len(sealed)
    assert len(sealed) > 0, "no archive completed"
    assert unsealed_seen > 0, "no kill hit an archive in the middle: the test proves nothing"


# --------------------------------------------------------------------------
# fleet runs and figaroh index rebuild
# --------------------------------------------------------------------------
def _record(trial: int, k: int) -> RunRecord:
    job = f"t{trial:02d}k{k:04d}"
    return RunRecord(
        run_id=job,
        job_id=job,
        robot_id=f"ur10-{k % 3:02d}",
        task="identification",
        session=f"s{k}",
        session_time="2027-01-01T00:00:00+00:00",
        started="2027-01-02T05:00:00+00:00",
        finished="2027-01-02T05:00:03+00:00",
        config_sha256="c" * 64,
        data_sha256={"train.csv": "d" * 64},
        verdict_status="pass",
        passed=True,
        metrics={"rmse_Nm": 0.01 * k},
        parameters=(ParameterEstimate("fs2", 0.1 + k * 1e-3, 0.01),),
        figaroh_version="0.1.0",
    )


def _fleet_files(record: RunRecord) -> dict[str, str]:
    return {
        "provenance.json": json.dumps({"run_id": record.run_id, "pad": "x" * 50000}) + "\n",
        "parameters.csv": "parameter,value\nfs2,0.1\n" * 2000,
        "verdict.json": json.dumps({"status": "pass", "passed": True}),
    }


def _rebuild(root: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main.main(["index", "rebuild", str(root)])
    return code, out.getvalue() + err.getvalue()


def test_killed_fleet_writes_are_swept_and_rebuild_exits_0(tmp_path):
    root = tmp_path / "fleet"

    def loop(trial: int) -> None:
        with RunIndex(index_path(root)) as index:
            for k in range(10**6):
                rec = _record(trial, k)
                write_fleet_run(root, _fleet_files(rec), rec, index)

    reported = 0
    for _ in _kill_loop(loop, 0.3, SEED + 2):
        code, text = _rebuild(root)
        assert code == 0, text
        reported += text.count("interrupted: ")
        folders = [p for p in root.glob("*/*/*") if p.is_dir()]
        torn = [p for p in folders if not is_sealed_dir(p)]
        # nothing torn is left but a folder whose writer might still live (none here)
        assert torn == [], f"torn folders left: {torn} ({text})"
        lines = _lines_per_folder(root)
        sealed = {p.relative_to(root).as_posix() for p in folders}
        assert all(lines[rel] == 1 for rel in sealed), "a sealed run is not indexed exactly once"
        with RunIndex(index_path(root)) as index:
            assert {r.run_dir for r in index.runs()} == sealed
    assert len(sealed) > 0 and reported > 0, "no kill hit a fleet write in the middle"


def test_a_claim_killed_before_its_marker_leaves_an_empty_folder_the_sweep_removes(tmp_path):
    """mkdir done, marker not yet written: the sweep removes the empty folder, nothing else."""
    root = tmp_path / "fleet"
    empty = root / "ur10-00" / "identification" / "s0_t00k0000"
    empty.mkdir(parents=True)
    kept = root / "ur10-00" / "identification" / "mine"
    kept.mkdir()
    (kept / "notes.txt").write_text("the caller's own file\n")
    report = sweep_interrupted_runs(root)
    assert report == [
        "ur10-00/identification/mine: left in place (not sealed: not an archived run)",
        "ur10-00/identification/s0_t00k0000: removed (empty: a write was interrupted before "
        "its first file)",
    ]
    assert not empty.exists() and (kept / "notes.txt").is_file()


def test_a_claimer_whose_fresh_folder_is_swept_claims_it_again(tmp_path, monkeypatch):
    """A sweep between a live claimer's mkdir and its marker does not break the claim."""
    import figaroh._run.archive as archive

    real_mark = archive._mark_archiving
    swept: list[Path] = []

    def sweep_first(run_dir: Path, how: str) -> bool:
        if not swept:
            swept.append(run_dir)
            assert sweep_interrupted_runs(tmp_path) == [
                "r/identification/s0: removed (empty: a write was interrupted before its "
                "first file)"
            ]
        return real_mark(run_dir, how)

    monkeypatch.setattr(archive, "_mark_archiving", sweep_first)
    folder = claim_run_dir(tmp_path / "r" / "identification", "s0")
    assert swept == [folder] and folder.name == "s0"
    assert (folder / archive.ARCHIVING_MARKER).read_text().split()[-1] == "claimed"
