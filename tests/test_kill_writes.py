"""SIGKILL while writing results, reports and archives never leaves a partial file.

A forked child loops over every kind of write figaroh does (an archived
run, a CSV streamed in flushed pieces through ``atomic_write``, a verdict
JSON, an HTML page, results in yaml/csv/json/npz + metadata)
and is killed with SIGKILL after a random (seeded) delay, 30 times. After each
kill:

* every file under a final name parses and equals what was intended (the
  same writes done once, undisturbed, in a reference folder);
* every run listed in the archive index holds exactly the reference run's
  files, byte for byte (sha256), and passes the archive's own check against
  the hashes it recorded (``verify_archived_run``);
* one more write into each folder leaves no temporary file behind (the dead
  child's temporary files are removed by that write).
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import signal
import sys
import time
import types
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import yaml

from figaroh._run.archive import archive_run, compute_run_dir, read_index, verify_archived_run
from figaroh._run.json_io import write_verification_json
from figaroh.tools.compare_report import generate_compare_page
from figaroh.utils.fileio import (
    SEAL_MARKER,
    SealedRunError,
    atomic_write,
    atomic_write_text,
    file_sha256,
)
from figaroh.utils.results_manager import ResultsManager

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or not hasattr(os, "fork"), reason="needs fork and SIGKILL"
)

TRIALS = 30
SEED = 20260418
_TEMP = re.compile(r"^\..+\.tmp(\.[A-Za-z0-9]+)?$")
_STAMP = re.compile(r"Generated [0-9-]+ [0-9:]+ UTC")

_RNG = np.random.default_rng(7)
RESULTS = {
    "task type": "identification",
    "base parameters names": [f"p{i}" for i in range(40)],
    "base parameters values": _RNG.normal(size=40),
    "torque processed": _RNG.normal(size=500),
    "torque estimated": _RNG.normal(size=500),
    "condition number": 112.5,
}
VERDICT = {
    "status": "pass",
    "passed": True,
    "checks": [{"name": f"c{i}", "status": "pass", "value": float(i)} for i in range(2000)],
}
PROVENANCE = {
    "run_id": "kill-test-run",
    "task": "identification",
    "asset": {"asset_id": "robot-1"},
    "model": {"robot_name": "kt"},
    "software": {"git_commit": "0123456789abcdef"},
    "timestamps": {"run_finished": "2026-04-18T10:00:00+00:00"},
    "notes": ["x" * 100] * 2000,
}


def _run_object() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        _run_provenance=PROVENANCE,
        identif_config={"robot": "kt", "values": list(range(3000))},
        result={
            "base parameters names": RESULTS["base parameters names"],
            "base parameters values": RESULTS["base parameters values"],
        },
        stages=None,
    )


def _streamed_table(fh) -> None:
    """A CSV streamed in flushed pieces, the way a slow disk sees it (about 0.1 s)."""
    writer = csv.writer(fh, lineterminator="\n")
    for row in range(400):
        writer.writerow([row, *(f"{row * 0.001 + k:.6f}" for k in range(8))])
        if row % 20 == 19:
            fh.flush()
            time.sleep(0.005)


def _write_everything(results_dir: Path, report_dir: Path, archive_root: Path) -> None:
    """One round of every kind of write."""
    obj = _run_object()
    archive_run(obj, compute_run_dir(obj, archive_root))
    atomic_write(report_dir / "table.csv", _streamed_table)
    write_verification_json(VERDICT, report_dir / "verdict.json")
    generate_compare_page(output_path=str(report_dir / "compare.html"), title="kill test")
    ResultsManager("identification", "kt", RESULTS).save_results(
        output_dir=results_dir, file_prefix="res", save_formats=["yaml", "csv", "json", "npz"]
    )


class _Strict(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "link", "br", "input", "img", "hr"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}>"
        self.stack.pop()


def _html_ok(text: str) -> None:
    parser = _Strict()
    parser.feed(text)
    parser.close()
    assert parser.stack == [], f"unclosed tags {parser.stack}"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("reference")
    dirs = [base / n for n in ("results", "reports", "runs")]
    for d in dirs[:2]:
        d.mkdir()
    started = time.perf_counter()
    _write_everything(*dirs)
    round_s = time.perf_counter() - started
    results, reports, runs = dirs
    (entry,) = read_index(runs)
    run_dir = runs / entry["run_dir"]
    return {
        "round_s": round_s,
        "results": {p.name.replace("res", "", 1): p for p in results.iterdir()},
        "verdict": (reports / "verdict.json").read_bytes(),
        "table": (reports / "table.csv").read_bytes(),
        "html": _STAMP.sub("", (reports / "compare.html").read_text(encoding="utf-8")),
        "archive": {p.name: file_sha256(p) for p in run_dir.iterdir() if p.name != SEAL_MARKER},
    }


def _check_result_file(path: Path, reference: dict) -> None:
    kind = re.sub(r"^res(_\d+)?", "", path.name)
    ref = reference["results"][kind]
    if kind == ".npz":
        with np.load(path) as got, np.load(ref) as want:
            assert sorted(got.files) == sorted(want.files)
            for key in want.files:
                np.testing.assert_array_equal(got[key], want[key])
    elif kind == "_metadata.yaml":
        meta = yaml.safe_load(path.read_text(encoding="utf-8"))
        want = yaml.safe_load(ref.read_text(encoding="utf-8"))
        assert meta.keys() == want.keys() and meta["data_shapes"] == want["data_shapes"]
    else:
        assert path.read_bytes() == ref.read_bytes(), f"{path.name} differs from the intended"


def _check_after_kill(dirs: list[Path], reference: dict) -> int:
    results, reports, runs = dirs
    for path in results.iterdir():
        if not path.name.startswith("."):
            _check_result_file(path, reference)
    if (reports / "table.csv").exists():
        assert (reports / "table.csv").read_bytes() == reference["table"], "partial table.csv"
    if (reports / "verdict.json").exists():
        assert (reports / "verdict.json").read_bytes() == reference["verdict"]
        json.loads((reports / "verdict.json").read_text(encoding="utf-8"))
    if (reports / "compare.html").exists():
        text = (reports / "compare.html").read_text(encoding="utf-8")
        assert _STAMP.sub("", text) == reference["html"]
        _html_ok(text)
    entries = read_index(runs)
    for entry in entries:
        run_dir = runs / entry["run_dir"]
        got = {p.name: file_sha256(p) for p in run_dir.iterdir() if p.name != SEAL_MARKER}
        assert got == reference["archive"], f"archived run {run_dir} does not verify"
        assert sorted(entry["files"]) == sorted(reference["archive"])
        check = verify_archived_run(run_dir, runs)  # against the hashes it recorded
        assert check.ok, check.problems
    # a run directory sealed by a killed archive: whatever it holds is complete
    for run_dir in runs.glob("*/*/*"):
        for p in run_dir.iterdir():
            if p.name in reference["archive"]:
                assert file_sha256(p) == reference["archive"][p.name], f"partial {p}"
    return len(entries)


def _next_write_leaves_no_temp(dirs: list[Path]) -> None:
    results, reports, runs = dirs
    folders = [results, reports, runs, *runs.glob("*/*/*")]
    for folder in folders:
        try:
            atomic_write_text(folder / "probe.txt", "probe")
        except SealedRunError:
            pass  # an archived run: refused, but cleaned
        left = [p.name for p in folder.iterdir() if _TEMP.match(p.name)]
        assert left == [], f"stale temporary files in {folder}: {left}"


def _fork_writer(dirs: list[Path]) -> int:
    pid = os.fork()
    if pid == 0:  # child: write until killed
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            while True:
                _write_everything(*dirs)
        finally:
            os._exit(0)
    return pid


def test_sigkill_at_random_points_leaves_only_complete_files(reference, tmp_path):
    dirs = [tmp_path / n for n in ("results", "reports", "runs")]
    for d in dirs:
        d.mkdir()
    rng = random.Random(SEED)
    # kill anywhere in the first ~1.5 rounds (one round: archive, verdict, page, results)
    longest = min(1.5 * reference["round_s"], 1.2)
    archived = 0
    for _ in range(TRIALS):
        pid = _fork_writer(dirs)
        time.sleep(rng.uniform(0.0, longest))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        archived = _check_after_kill(dirs, reference)
        _next_write_leaves_no_temp(dirs)
        for path in dirs[0].iterdir():  # keep the results folder small
            if not path.name.startswith("."):
                path.unlink()
    assert archived > 0, "no archive completed in any trial: the writes are too slow"
