"""The one atomic-write helper: all or nothing, with an optional check."""

from __future__ import annotations

import hashlib
import os

import pytest

from figaroh.utils.fileio import atomic_write, atomic_write_text, file_sha256


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
