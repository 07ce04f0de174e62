"""Writes into a sealed (archived) run, and writes the disk refuses.

Sealed runs: every public call that would create or replace a file inside an
archived run folder — the folder itself or any sub-folder, through the
command line or the API — raises a named error (:class:`SealedRunError`, or
the command line's exit 2) that names the path, the sealed run and the fix
("choose another output folder"), and the run's bytes are unchanged: every
file (sub-folders included) is hashed before and after the call.

Disk errors: an ``OSError`` while writing (``ENOSPC``, ``EFBIG``,
``EACCES``) names the destination path, keeps its ``errno`` and subclass,
leaves the destination untouched and no temporary file behind. ``EFBIG`` is
the kernel's own (a child process with ``RLIMIT_FSIZE``); the others are
injected into the calls :func:`figaroh.utils.fileio.atomic_write` makes.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from conftest import ROOT, erd_path, load_example
from figaroh._run.archive import archive_run, compute_run_dir
from figaroh.cli import main as cli_main
from figaroh.cli.common import EXIT_BAD_INPUT
from figaroh.data.trajectory import TrajectoryData
from figaroh.errors import FigarohError
from figaroh.fleet.drift import drift_report
from figaroh.fleet.drift_html import write_drift_html
from figaroh.fleet.run_index import RunIndex
from figaroh.utils import fileio
from figaroh.utils.fileio import SEAL_MARKER, SealedRunError, atomic_write_text, file_sha256
from figaroh.utils.results_manager import ResultsManager, save_results

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
SEALED_PHRASE = r"lies inside .*an archived run.*nothing was written.*choose another output folder"


class Exit(Exception):
    """What a command did: ``exit <code>: <stderr>``."""


# --------------------------------------------------------------------------
# a sealed run and its fingerprint
# --------------------------------------------------------------------------
def _sealed_run(tmp: Path) -> Path:
    """A sealed run folder with files, a ``postures.csv`` and a sub-folder made before the seal."""
    run = tmp / "runs" / "ur10" / "identification" / "20260101T000000Z_nogit"
    (run / "plots").mkdir(parents=True)
    (run / "postures.csv").write_text("candidate,j1,weight\n3,0.1,1.0\n")
    (run / "verdict.json").write_text('{"passed": true}\n')
    (run / "plots" / "fit.png").write_bytes(b"\x89PNG old")
    (run / SEAL_MARKER).write_text("run-1\n")
    return run


def _fingerprint(run: Path) -> dict[str, str]:
    """sha256 of every file and the name of every folder under ``run``."""
    out = {}
    for p in sorted(run.rglob("*")):
        rel = p.relative_to(run).as_posix()
        out[rel] = file_sha256(p) if p.is_file() else "<dir>"
    return out


def sealed(action: Callable[[Path, Path], Any]) -> Callable[[Path], Any]:
    """A row's call: ``action(run, tmp)`` on a fresh sealed run; its bytes must not change."""

    def call(tmp: Path) -> Any:
        run = _sealed_run(tmp)
        before = _fingerprint(run)
        try:
            return action(run, tmp)
        finally:
            assert _fingerprint(run) == before, "the sealed run was modified"

    return call


def cli(*args: Any) -> Callable[[Path, Path], None]:
    """``figaroh ARGS`` in-process (``RUN`` stands for the sealed run); raises :class:`Exit`."""

    def action(run: Path, tmp: Path) -> None:
        argv = [str(run) + a[3:] if isinstance(a, str) and a.startswith("RUN") else a for a in args]
        argv = [
            str(erd_path("ur_description/urdf/ur10_robot.urdf")) if a == "URDF" else a for a in argv
        ]
        argv = [str(a(tmp)) if callable(a) else str(a) for a in argv]
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = cli_main.main(argv)
        text = err.getvalue().strip()
        assert "Traceback" not in text and text.count("\n") == 0, text
        raise Exit(f"exit {code}: {text}")

    return action


def _csv(tmp: Path) -> Path:
    path = tmp / "log.csv"
    path.write_text("t,q_a,tau_a\n0,0,0\n0.01,0,0\n")
    return path


def _cli_row(name: str, *args: Any) -> BadInput:
    return BadInput(
        name,
        sealed(cli(*args)),
        raises=Exit,
        match=rf"^exit {EXIT_BAD_INPUT}: figaroh.*-o/--output: .*{SEALED_PHRASE}",
    )


# --------------------------------------------------------------------------
# API actions
# --------------------------------------------------------------------------
RESULTS = {
    "base parameters names": ["p0", "p1"],
    "base parameters values": np.array([1.0, 2.0]),
    "torque processed": np.zeros(10),
}


def _save(sub: str) -> Callable[[Path, Path], Any]:
    def action(run: Path, tmp: Path) -> Any:
        return save_results(RESULTS, "identification", output_dir=run / sub if sub else run)

    return action


def _plot(raise_errors: bool) -> Callable[[Path, Path], Any]:
    def action(run: Path, tmp: Path) -> Any:
        manager = ResultsManager("identification", "ur10")
        paths = manager.plot_identification_results(
            np.zeros(20), np.ones(20), output_dir=run / "plots", raise_errors=raise_errors
        )
        assert paths == []
        return None

    return action


def _trajectory_csv(run: Path, tmp: Path) -> Any:
    data = TrajectoryData(
        t=np.arange(3) * 0.01,
        joint_names=["j1"],
        q=np.zeros((3, 1)),
        effort=np.zeros((3, 1)),
        effort_kind="joint_torque",
        effort_unit="N.m",
    )
    return data.to_csv(run / "plots" / "traj.csv")


def _atomic(rel: str) -> Callable[[Path, Path], Any]:
    return lambda run, tmp: atomic_write_text(run / rel, "new")


def _through_symlink(run: Path, tmp: Path) -> Any:
    alias = tmp / "alias"
    alias.symlink_to(run, target_is_directory=True)
    return atomic_write_text(alias / "plots" / "x.txt", "new")


def _archive_root_inside(run: Path, tmp: Path) -> Any:
    ident = _solved()
    return archive_run(ident, compute_run_dir(ident, run / "runs"))


def _fleet_index_inside(run: Path, tmp: Path) -> Any:
    return RunIndex(run / "fleet" / "index.sqlite")


def _drift_page_inside(run: Path, tmp: Path) -> Any:
    with RunIndex(tmp / "index.sqlite") as index:
        report = drift_report(index)
    return write_drift_html(report, run / "plots" / "drift.html")


@functools.lru_cache(maxsize=1)
def _solved_at(folder: str):
    """A solved UR10 identification (300 simulated samples)."""
    ur10 = load_example("ur10/identification.py", "ur10_identification")
    robot = ur10.load_ur10()
    train, _ = ur10.generate_ur10_data(Path(folder), 300, noise_std=0.5, seed=4, robot=robot)
    ident = ur10.UR10Identification(robot, ur10.CONFIG, data_dir=train)
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False)
    return ident


_SHARED: dict[str, Path] = {}


def _solved():
    return _solved_at(str(_SHARED["dir"]))


@pytest.fixture(scope="module", autouse=True)
def shared(tmp_path_factory):
    _SHARED["dir"] = tmp_path_factory.mktemp("sealed_writes_data")


def _export(kind: str, rel: str) -> Callable[[Path, Path], Any]:
    def action(run: Path, tmp: Path) -> Any:
        ident = _solved()
        if kind == "html":
            return ident.export_html_report(output_path=str(run / rel))
        if kind == "verdict":
            return ident.export_verification_report(output_path=str(run / rel))
        if kind == "html-dir":
            return ident.export_html_report(output_dir=str(run / rel))
        return ident.save_results(output_dir=str(run / rel))

    return action


def _api_row(name: str, action: Callable[[Path, Path], Any]) -> BadInput:
    return BadInput(name, sealed(action), raises=SealedRunError, match=SEALED_PHRASE)


# --------------------------------------------------------------------------
# disk errors
# --------------------------------------------------------------------------
def _failing(monkeypatch_target: str, code: int, when: Callable[..., bool] = lambda *a: True):
    """Run ``atomic_write_text`` with ``os.<target>`` raising ``OSError(code)``."""

    def call(tmp: Path) -> None:
        dest = tmp / "out" / "verdict.json"
        dest.parent.mkdir()
        dest.write_text("old")
        real = getattr(os, monkeypatch_target)

        def fake(*args, **kwargs):
            if when(*args):
                raise OSError(code, os.strerror(code))
            return real(*args, **kwargs)

        setattr(os, monkeypatch_target, fake)
        try:
            atomic_write_text(dest, "new")
        finally:
            setattr(os, monkeypatch_target, real)
            assert dest.read_text() == "old", "the destination was changed"
            assert sorted(os.listdir(dest.parent)) == ["verdict.json"], "a temporary file is left"

    return call


def _stream_error(code: int) -> Callable[[Path], None]:
    """The stream write itself fails (as a full disk makes ``write()`` fail)."""

    def call(tmp: Path) -> None:
        dest = tmp / "table.csv"

        def write(fh):
            fh.write("a,b\n")
            raise OSError(code, os.strerror(code))

        try:
            fileio.atomic_write(dest, write)
        finally:
            assert os.listdir(tmp) == [], "a temporary file is left"

    return call


def _real_efbig(tmp: Path) -> None:
    """The kernel's EFBIG: a child whose file-size limit is 4 KiB writes 64 KiB."""
    dest = tmp / "big.txt"
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        from figaroh.utils.fileio import atomic_write_text
        try:
            atomic_write_text({str(dest)!r}, "x" * 65536)
        except OSError as exc:
            print(exc.errno, type(exc).__name__, exc, sep="|")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert os.listdir(tmp) == [], f"left behind: {os.listdir(tmp)}"
    code, kind, message = out.stdout.strip().split("|", 2)
    assert int(code) == errno.EFBIG and kind == "OSError", out
    raise OSError(int(code), message)


def _save_results_disk_full(tmp: Path) -> None:
    real = os.replace

    def fake(src, dst):
        if str(dst).endswith("r.csv"):  # the second file of the set
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(src, dst)

    os.replace = fake
    try:
        save_results(RESULTS, "identification", output_dir=tmp / "res", file_prefix="r")
    finally:
        os.replace = real
        assert sorted(os.listdir(tmp / "res")) == [], "a partial result set is left"


def _archive_disk_full(tmp: Path) -> None:
    ident = _solved()
    run_dir = compute_run_dir(ident, tmp / "runs")
    real = os.replace

    def fake(src, dst):
        if str(dst).endswith("parameters.csv"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(src, dst)

    os.replace = fake
    try:
        archive_run(ident, run_dir)
    finally:
        os.replace = real
        assert os.listdir(run_dir) == [], "a partial archive is left"
        assert not (tmp / "runs" / "index.jsonl").exists()


def _oserror(path_phrase: str, fix: str) -> str:
    return rf"cannot write '.*{path_phrase}'.*{fix}.*nothing was written"


CASES: list[BadInput] = [
    # ---- the command line: exit 2 before any work, the run untouched
    _cli_row(
        "postures-into-sealed-run",
        "postures",
        lambda t: CONFIG,
        "--urdf",
        "URDF",
        "-o",
        "RUN",
    ),
    _cli_row(
        "postures-into-sealed-sub-folder",
        "postures",
        lambda t: CONFIG,
        "--urdf",
        "URDF",
        "-o",
        "RUN/new",
    ),
    _cli_row(
        "identify-into-sealed-sub-folder",
        "identify",
        lambda t: CONFIG,
        "--urdf",
        "URDF",
        "--data",
        _csv,
        "-o",
        "RUN/sub",
    ),
    _cli_row(
        "calibrate-into-sealed-run",
        "calibrate",
        lambda t: CONFIG,
        "--urdf",
        "URDF",
        "--data",
        _csv,
        "-o",
        "RUN",
    ),
    _cli_row(
        "trajectory-into-sealed-plots-folder",
        "trajectory",
        lambda t: CONFIG,
        "--urdf",
        "URDF",
        "-o",
        "RUN/plots",
    ),
    # ---- the API: SealedRunError, the run untouched
    _api_row("save_results-into-sealed-run", _save("")),
    _api_row("save_results-into-sealed-sub-folder", _save("sub")),
    _api_row("save_results-into-existing-sealed-sub-folder", _save("plots")),
    _api_row("plots-into-sealed-sub-folder-raise_errors", _plot(raise_errors=True)),
    # plotting logs its errors by default (figaroh 1.0.2): the log names the run and the fix
    BadInput("plots-into-sealed-sub-folder-logged", sealed(_plot(False)), match=SEALED_PHRASE),
    _api_row("trajectory-csv-into-sealed-sub-folder", _trajectory_csv),
    _api_row("atomic-write-into-existing-sub-folder", _atomic("plots/fit.png")),
    _api_row("atomic-write-deep-below-sealed-run", _atomic("a/b/c.txt")),
    _api_row("write-through-symlink-to-sealed-run", _through_symlink),
    _api_row("archive-root-inside-sealed-run", _archive_root_inside),
    _api_row("fleet-index-inside-sealed-run", _fleet_index_inside),
    _api_row("drift-page-into-sealed-sub-folder", _drift_page_inside),
    _api_row("export_html_report-into-sealed-sub-folder", _export("html", "plots/report.html")),
    _api_row("export_html_report-output_dir-sealed-run", _export("html-dir", ".")),
    _api_row("export_verification_report-into-sealed-run", _export("verdict", "verdict.json")),
    _api_row("task-save_results-into-sealed-sub-folder", _export("save", "plots/res")),
    # ---- disk errors name the path, keep errno, leave no temporary file
    BadInput(
        "disk-full-at-fsync",
        _failing("fsync", errno.ENOSPC),
        raises=OSError,
        match=_oserror("out/verdict.json", r"ENOSPC.*disk is full.*choose another output folder"),
    ),
    BadInput(
        "disk-full-at-temp-creation",
        _failing("open", errno.ENOSPC, lambda path, *a: ".tmp" in str(path)),
        raises=OSError,
        match=_oserror("out/verdict.json", r"ENOSPC.*disk is full"),
    ),
    BadInput(
        "no-permission-at-replace",
        _failing("replace", errno.EACCES),
        raises=PermissionError,
        match=_oserror("out/verdict.json", r"EACCES.*permission"),
    ),
    BadInput(
        "file-too-large-while-streaming",
        _stream_error(errno.EFBIG),
        raises=OSError,
        match=_oserror("table.csv", r"EFBIG.*largest file.*ulimit -f"),
    ),
    BadInput(
        "file-too-large-kernel-efbig",
        _real_efbig,
        raises=OSError,
        match=_oserror("big.txt", r"EFBIG.*ulimit -f"),
    ),
    BadInput(
        "save_results-disk-full-leaves-no-partial-set",
        _save_results_disk_full,
        raises=FigarohError,
        match=r"Failed to save results: .*" + _oserror("res/r.csv", "disk is full"),
    ),
    BadInput(
        "archive_run-disk-full-leaves-no-partial-archive",
        _archive_disk_full,
        raises=OSError,
        match=_oserror("parameters.csv", "disk is full"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_disk_errors_keep_errno_and_subclass(tmp_path):
    """``exc.errno == ENOSPC`` / ``except PermissionError`` keep working on the named error."""
    (tmp_path / "a").mkdir()
    with pytest.raises(OSError) as info:
        _failing("fsync", errno.ENOSPC)(tmp_path / "a")
    assert info.value.errno == errno.ENOSPC
    assert info.value.filename == str(tmp_path / "a" / "out" / "verdict.json")
    (tmp_path / "b").mkdir()
    with pytest.raises(PermissionError) as perm:
        _failing("replace", errno.EACCES)(tmp_path / "b")
    assert perm.value.errno == errno.EACCES
