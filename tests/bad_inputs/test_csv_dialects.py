"""CSV dialects: Windows line ends, quoted cells and a byte-order mark read as the plain file.

Each reader of figaroh (the ``figaroh identify`` log layout, the
``TrajectoryData.to_csv`` layout, the calibration postures, ``figaroh view
--data``, the one-file-per-signal layout, candidate postures) reads one table
written five ways: LF with bare cells (the reference), CRLF, every cell quoted
(RFC 4180, CRLF, as Python's ``csv`` module and spreadsheets write it), BOM +
CRLF, and BOM + quoted. Every variant must give arrays ``==`` to the
reference. A header with a 1 MB cell (the symptom of a quote never closed)
raises :class:`~figaroh.data.text_csv.CSVFormatError` naming the file, the
line and the fix; through the command line it exits 2 with that one line.
"""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np
import pytest

from conftest import ROOT
from figaroh.cli.common import CLIError
from figaroh.cli.csv_identification import read_trajectory_csv
from figaroh.cli.main import main
from figaroh.cli.view_command import read_joint_samples
from figaroh.data.observations import PoseObservations
from figaroh.data.text_csv import CSVFormatError
from figaroh.data.trajectory import TrajectoryData
from figaroh.integration._data import _read_matrix

JOINTS = ["a", "b"]
HUGE = 1 << 20  # 1 MB cell
DIALECTS = ["crlf", "quoted", "bom_crlf", "bom_quoted"]


def _write(path: Path, header: List[str], rows: np.ndarray, dialect: str, preamble="") -> Path:
    """``header`` + ``rows`` (values in ``repr``) as ``dialect``; ``preamble``: ``#`` lines."""
    cells = [header] + [[repr(float(v)) for v in r] for r in rows]
    eol = "\n" if dialect in ("lf", "huge") else "\r\n"
    buf = io.StringIO()
    if "bom" in dialect:
        buf.write("\ufeff")
    buf.write(preamble.replace("\n", eol))
    quoting = csv.QUOTE_ALL if "quoted" in dialect else csv.QUOTE_MINIMAL
    if dialect == "huge":
        cells[0] = cells[0] + ["x" * HUGE]
        cells[1:] = [r + ["0"] for r in cells[1:]]
    csv.writer(buf, quoting=quoting, lineterminator=eol).writerows(cells)
    path.write_bytes(buf.getvalue().encode("utf-8"))
    return path


class _Model:
    names = ["universe", *JOINTS]


_CALIB = {"NbMarkers": 1, "measurability": [True] * 6, "actJoint_idx": [1, 2]}
_POSE_HEADER = ["x1", "y1", "z1", "phix1", "phiy1", "phiz1", *JOINTS]


def _to_csv_layout(tmp: Path) -> tuple[str, List[str], np.ndarray]:
    """The ``#`` metadata line, header and rows of a file written by ``TrajectoryData.to_csv``."""
    source = _write(tmp / "src.csv", ["t", "q_a", "q_b", "tau_a", "tau_b"], _rows(5), "lf")
    read_trajectory_csv(source, JOINTS).to_csv(tmp / "to_csv.csv")
    lines = (tmp / "to_csv.csv").read_text().splitlines(True)
    meta = "".join(line for line in lines if line.startswith("#"))
    body = [next(csv.reader([line])) for line in lines if not line.startswith("#")]
    return meta, body[0], np.array(body[1:], dtype=float)


def _rows(columns: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(20, columns))
    rows[:, 0] = np.arange(20) * 0.01  # t (strictly increasing where it is a clock)
    return rows


#: reader name → (build(tmp, dialect) -> path, read(path) -> arrays compared with ==)
READERS: Dict[str, tuple[Callable, Callable]] = {
    "identify_log": (
        lambda tmp, d: _write(tmp / f"{d}.csv", ["t", "q_a", "q_b", "tau_a", "tau_b"], _rows(5), d),
        lambda p: (lambda td: [td.t, td.q, td.effort])(read_trajectory_csv(p, JOINTS)),
    ),
    "to_csv_layout": (
        lambda tmp, d: _write(
            tmp / f"{d}.csv", *_to_csv_layout(tmp)[1:], d, _to_csv_layout(tmp)[0]
        ),
        lambda p: (lambda td: [td.t, td.q, td.effort])(TrajectoryData.from_csv(p, JOINTS)),
    ),
    "calibration_postures": (
        lambda tmp, d: _write(tmp / f"{d}.csv", _POSE_HEADER, _rows(8), d),
        lambda p: [PoseObservations.from_csv(p, _Model(), _CALIB).values],
    ),
    "view_data": (
        lambda tmp, d: _write(tmp / f"{d}.csv", ["t", "q_a", "q_b"], _rows(3), d),
        lambda p: list(read_joint_samples(p, JOINTS)[:2]),
    ),
    "signal_file": (
        lambda tmp, d: _write(tmp / f"{d}.csv", ["a", "b"], _rows(2), d),
        lambda p: [_read_matrix(p)],
    ),
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("reader", list(READERS))
def test_dialect_reads_as_the_plain_file(reader, dialect, tmp_path):
    build, read = READERS[reader]
    reference = read(build(tmp_path, "lf"))
    path = build(tmp_path, dialect)
    assert path.read_bytes() != (tmp_path / "lf.csv").read_bytes()  # really another dialect
    got = read(path)
    assert len(got) == len(reference)
    for a, b in zip(got, reference, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


@pytest.mark.parametrize("reader", [r for r in READERS if r != "signal_file"])
def test_a_huge_header_cell_names_the_file_and_the_fix(reader, tmp_path):
    build, read = READERS[reader]
    path = build(tmp_path, "huge")
    with pytest.raises((CSVFormatError, CLIError)) as info:
        read(path)
    message = str(info.value)
    line = 2 if reader == "to_csv_layout" else 1  # below the metadata line
    assert f"{path}, line {line}:" in message, message
    assert "131072 characters" in message and "quote" in message, message


def _cli(*args) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, err.getvalue()


@pytest.mark.parametrize("command", ["identify", "calibrate"])
def test_cli_huge_header_cell_exits_2_naming_the_file(command, ur10_urdf, tmp_path):
    joints = [
        "shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
        "wrist_1_joint", "wrist_2_joint", "wrist_3_joint",
    ]  # fmt: skip
    if command == "identify":
        header = ["t"] + [f"q_{j}" for j in joints] + [f"tau_{j}" for j in joints]
    else:
        header = _POSE_HEADER[:6] + joints
    path = _write(tmp_path / "data.csv", header, _rows(len(header)), "huge")
    config = ROOT / "config" / "ur10_unified_config.yaml"
    code, err = _cli(command, config, "--urdf", ur10_urdf, "--data", path, "-q")
    assert code == 2, err
    assert err.count("\n") == 1 and str(path) in err and "quote" in err, err
    assert "field larger than field limit" not in err
