"""The one atomic-write helper: all or nothing, with an optional check."""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import sys
import time

import pytest

from figaroh.errors import FigarohError
from figaroh.utils import fileio
from figaroh.utils.fileio import (
    SEAL_MARKER,
    SealedRunError,
    atomic_write,
    atomic_write_text,
    file_sha256,
    is_sealed_dir,
    make_folder,
)


def test_atomic_write_replaces_whole_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    assert atomic_write_text(target, "new text") == str(target)
    assert target.read_text() == "new text"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]  # no temporary file left


def test_failing_writer_or_check_leaves_destination_untouched(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")

    def broken(stream):
        stream.write("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(target, broken)
    seen = []

    def refuse(tmp):
        seen.append(open(tmp, encoding="utf-8").read())  # the complete new bytes
        raise ValueError("does not load")

    with pytest.raises(ValueError, match="does not load"):
        atomic_write(target, lambda s: s.write("new"), check=refuse, suffix=".urdf")
    assert seen == ["new"]
    assert target.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        atomic_write_text(tmp_path / "nope" / "x.txt", "x")


def test_file_sha256_matches_hashlib(tmp_path):
    data = os.urandom(3 * (1 << 20) + 17)  # spans several 1 MiB blocks
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    with pytest.raises(FileNotFoundError, match="no such file"):
        file_sha256(tmp_path / "missing.bin")


def _temp_name(name: str, pid: int, host: str | None = None) -> str:
    return f".{name}.{pid}.{host or fileio._HOST}.0123abcd.tmp"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporary_file_is_named_after_the_writer_and_mode_follows_the_umask(tmp_path):
    seen = []

    def spy(tmp):
        seen.append(os.path.basename(tmp))

    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "a.txt", lambda s: s.write("x"), check=spy)
        atomic_write(tmp_path / "b.urdf", lambda s: s.write(b"x"), binary=True, suffix=".urdf")
    finally:
        os.umask(old)
    assert re.fullmatch(rf"\.a\.txt\.{os.getpid()}\.[0-9a-f]{{6}}\.[0-9a-f]{{8}}\.tmp", seen[0])
    assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "b.urdf").st_mode) == 0o640
    os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "c.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "c.txt").st_mode) == 0o644


def test_next_write_removes_temps_of_dead_writers_only(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        dead = tmp_path / _temp_name("out.yaml", _dead_pid())
        dead_urdf = tmp_path / (_temp_name("r.urdf", _dead_pid()) + ".urdf")
        alive = tmp_path / _temp_name("out.yaml", live.pid)
        mine = tmp_path / _temp_name("out.yaml", os.getpid())
        other_host = tmp_path / _temp_name("out.yaml", _dead_pid(), host="ffffff")
        user_file = tmp_path / ".notes.tmp"
        for p in (dead, dead_urdf, alive, mine, other_host, user_file):
            p.write_text("partial")
        atomic_write_text(tmp_path / "other.txt", "x")
        left = set(os.listdir(tmp_path))
        assert dead.name not in left and dead_urdf.name not in left
        assert {alive.name, mine.name, other_host.name, user_file.name} <= left
        # a writer that cannot be checked counts as gone after STALE_TEMP_AGE_S
        old = time.time() - fileio.STALE_TEMP_AGE_S - 10
        os.utime(other_host, (old, old))
        assert fileio.remove_stale_temps(tmp_path) == [str(other_host)]
    finally:
        live.kill()
        live.wait()


def test_temp_of_a_reused_pid_is_stale(tmp_path):
    # this process started before the file was written: kept; a file written
    # long before this process started cannot be ours: removed
    temp = tmp_path / _temp_name("out.csv", os.getppid())
    temp.write_text("partial")
    assert fileio.remove_stale_temps(tmp_path) == []
    started = fileio._process_start_time(os.getppid())
    if started is None:
        pytest.skip("no /proc process start time on this platform")
    before = started - 3600
    os.utime(temp, (before, before))
    assert fileio.remove_stale_temps(tmp_path) == [str(temp)]


def test_legacy_mkstemp_temps_are_removed_when_old_and_next_to_their_file(tmp_path):
    (tmp_path / "report.html").write_text("ok")
    legacy = tmp_path / ".report.html.k3j_9a2b.tmp"
    orphan = tmp_path / ".config.settings.tmp"  # no file "config": a user's file
    for p in (legacy, orphan):
        p.write_text("partial")
    assert fileio.remove_stale_temps(tmp_path) == []  # young: may be a live writer
    old = time.time() - fileio.STALE_TEMP_AGE_S - 10
    for p in (legacy, orphan):
        os.utime(p, (old, old))
    assert fileio.remove_stale_temps(tmp_path) == [str(legacy)]


def test_sealed_run_folder_refuses_every_write(tmp_path):
    run = tmp_path / "20260101T000000Z_nogit"
    (run / "plots").mkdir(parents=True)
    (run / "report.html").write_text("original")
    assert not is_sealed_dir(run)
    (run / SEAL_MARKER).write_text("run-1\n")
    assert is_sealed_dir(run)
    assert fileio.sealed_run_of(run / "plots" / "a.png") == run
    for name in ("report.html", "verdict.json", "provenance.json", "plots/plot.png", "a/b.txt"):
        with pytest.raises(SealedRunError, match="archived run") as info:
            atomic_write_text(run / name, "overwrite")
        assert isinstance(info.value, FileExistsError) and isinstance(info.value, FigarohError)
        message = str(info.value)
        assert str(run / name) in message and repr(str(run)) in message
        assert "choose another output folder" in message and "new run" in message
    assert (run / "report.html").read_text() == "original"
    assert sorted(os.listdir(run)) == [SEAL_MARKER, "plots", "report.html"]
    assert os.listdir(run / "plots") == []


def test_a_symlink_into_a_sealed_run_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / SEAL_MARKER).write_text("run-1\n")
    (tmp_path / "alias").symlink_to(run, target_is_directory=True)
    with pytest.raises(SealedRunError, match="archived run"):
        atomic_write_text(tmp_path / "alias" / "x.txt", "x")
    assert sorted(os.listdir(run)) == [SEAL_MARKER]


def test_no_sub_folder_is_created_inside_a_sealed_run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / SEAL_MARKER).write_text("run-1\n")
    for folder in (run / "plots" / "png", run):
        with pytest.raises(SealedRunError, match="choose another output folder"):
            make_folder(folder)
    assert sorted(os.listdir(run)) == [SEAL_MARKER]
    assert make_folder(tmp_path / "next" / "to").is_dir()
