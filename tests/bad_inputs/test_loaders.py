"""Bad data files through figaroh's loaders: a named error for each.

Rows call the loaders of the Python API (the trajectory CSV of
``figaroh identify``, ``TrajectoryData.from_csv``, the calibration CSV of
``PoseObservations.from_csv`` and ``BaseCalibration``) and expect the
documented exception type with a message naming the file (or the column,
row, field) and the fix.
"""

from __future__ import annotations

import contextlib
import io
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from conftest import ROOT, erd_path
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.cli.csv_identification import CSVIdentification, read_trajectory_csv, resolve_csv_path
from figaroh.data import NotTextCSVError, PoseObservations, TrajectoryData, TrajectoryDataError
from figaroh.errors import FigarohError
from figaroh.utils.error_handling import CalibrationError

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
JOINTS = ["a", "b"]
UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]
CALIB_HEADER = ",".join(["x1", "y1", "z1", "phix1", "phiy1", "phiz1", *UR10_JOINTS])
CALIB_ROW = ",".join(["0.1"] * 12)
BINARY = bytes(range(256)) * 4


@lru_cache(maxsize=1)
def _ur10():
    from figaroh.tools.robot import Robot

    return Robot(str(erd_path("ur_description/urdf/ur10_robot.urdf")), load_geometry=False)


@lru_cache(maxsize=1)
def _calib_config() -> dict:
    return dict(BaseCalibration(_ur10(), str(CONFIG)).calib_config)


def _write(tmp: Path, name: str, content: str | bytes) -> Path:
    path = tmp / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _log(rows: str, header: str = "t,q_a,q_b,tau_a,tau_b") -> str:
    return f"{header}\n{rows}"


GOOD_ROWS = "0,1,2,3,4\n0.1,1,2,3,4\n0.2,1,2,3,4\n"


def trajectory(content: str | bytes, name: str = "log.csv", **kw: Any) -> Callable[[Path], Any]:
    """``read_trajectory_csv`` of a file holding ``content`` (joints ``a``, ``b``)."""
    return lambda tmp: read_trajectory_csv(_write(tmp, name, content), JOINTS, **kw)


def traj_from_csv(content: str | bytes) -> Callable[[Path], Any]:
    return lambda tmp: TrajectoryData.from_csv(_write(tmp, "traj.csv", content), JOINTS)


def observations(content: str | bytes, **kw: Any) -> Callable[[Path], Any]:
    """``PoseObservations.from_csv`` of the UR10 calibration layout."""
    return lambda tmp: PoseObservations.from_csv(
        _write(tmp, "calib.csv", content), _ur10().model, _calib_config(), **kw
    )


def calibration_load(content: str | bytes) -> Callable[[Path], Any]:
    """``BaseCalibration.set_data_file`` + ``load_data_set`` (the 1.0.2 entry point)."""

    def call(tmp: Path) -> None:
        calib = BaseCalibration(_ur10(), str(CONFIG))
        calib.set_data_file(_write(tmp, "calib.csv", content))
        calib.load_data_set()

    return call


def csv_identification(content: str | bytes) -> Callable[[Path], Any]:
    """``CSVIdentification.load_trajectory_data`` of a UR10 log holding ``content``."""

    def call(tmp: Path) -> None:
        path = _write(tmp, "identification.csv", content)
        with contextlib.redirect_stdout(io.StringIO()):
            ident = CSVIdentification(_ur10(), CONFIG, data_dir=path)
        ident.load_trajectory_data()

    return call


def accepted(call: Callable[[Path], Any]) -> Callable[[Path], str]:
    """A row that must load: returns ``"ok"`` (compared with ``verdict``)."""

    def run(tmp: Path) -> str:
        call(tmp)
        return "ok"

    return run


def _folder_with(*names: str) -> Callable[[Path], Any]:
    def call(tmp: Path) -> Path:
        for n in names:
            (tmp / n).write_text("t\n")
        return resolve_csv_path(tmp)

    return call


CASES: list[BadInput] = [
    # ---- read_trajectory_csv (figaroh identify, CSVIdentification)
    BadInput(
        "trajectory-missing",
        lambda tmp: read_trajectory_csv(tmp / "nope.csv", JOINTS),
        FileNotFoundError,
        r"trajectory CSV not found: .*nope\.csv",
        already_good=True,
    ),
    BadInput(
        "trajectory-binary",
        trajectory(BINARY),
        NotTextCSVError,
        r"trajectory CSV .*log\.csv is not a text CSV file.*comma-separated UTF-8 text",
    ),
    BadInput(
        "trajectory-latin1",
        trajectory(_log(GOOD_ROWS, "t,q_a,q_b,tau_a,tau_b,r\xe9f").encode("latin-1")),
        NotTextCSVError,
        r"log\.csv is not a UTF-8 text CSV file \(byte 0xe9 at offset \d+",
    ),
    BadInput(
        "trajectory-binary-is-a-value-error",
        trajectory(BINARY),
        (ValueError, FigarohError),
        r"log\.csv",
    ),
    BadInput("trajectory-empty", trajectory(""), ValueError, r"log\.csv is empty", True),
    BadInput(
        "trajectory-header-only",
        trajectory(_log("")),
        ValueError,
        r"log\.csv has a header but no data rows",
        True,
    ),
    BadInput(
        "trajectory-wrong-column-count",
        trajectory(_log("0,1,2,3\n0.1,1,2,3\n")),
        ValueError,
        r"log\.csv: the header names 5 columns but the rows have 4",
        True,
    ),
    BadInput(
        "trajectory-ragged-rows",
        trajectory(_log("0,1,2,3,4\n0.1,1,2,3\n")),
        ValueError,
        r"log\.csv: cannot parse the numeric rows",
        True,
    ),
    BadInput(
        "trajectory-non-numeric-cell",
        trajectory(_log("0,1,2,x,4\n0.1,1,2,3,4\n")),
        ValueError,
        r"log\.csv: cannot parse .*every cell must be a number",
        True,
    ),
    BadInput(
        "trajectory-missing-columns",
        trajectory("t,q_a,q_b,dq_a,tau_a,tau_b\n0,1,2,3,4,5\n0.1,1,2,3,4,5\n"),
        ValueError,
        r"log\.csv lacks the columns \['dq_b'\].*URDF joint names",
        True,
    ),
    BadInput(
        "trajectory-duplicated-columns",
        trajectory("t,q_a,q_a,q_b,tau_a,tau_b\n0,1,1,2,3,4\n"),
        ValueError,
        r"log\.csv: duplicated columns \['q_a'\]",
        True,
    ),
    BadInput(
        "trajectory-no-time",
        trajectory("q_a,q_b,tau_a,tau_b\n1,2,3,4\n"),
        ValueError,
        r"log\.csv has no 't' column \[s\] and no sample period",
        True,
    ),
    BadInput(
        "trajectory-bad-mask",
        trajectory(_log("0,1,2,3,4,1\n0.1,1,2,3,4,2\n", "t,q_a,q_b,tau_a,tau_b,mask")),
        ValueError,
        r"log\.csv: column 'mask' must hold 0 or 1, row 1",
        True,
    ),
    BadInput(
        "trajectory-time-not-increasing",
        trajectory(_log("0,1,2,3,4\n0,1,2,3,4\n0.2,1,2,3,4\n")),
        TrajectoryDataError,
        r"log\.csv: t: time must be strictly increasing",
    ),
    BadInput(
        "trajectory-nan-position",
        trajectory(_log("0,1,2,3,4\n0.1,nan,2,3,4\n0.2,1,2,3,4\n")),
        TrajectoryDataError,
        r"log\.csv: q: non-finite value nan in column 0 \('a'\) at row 1",
    ),
    BadInput(
        "trajectory-overflowing-effort",
        trajectory(_log("0,1,2,3,4\n0.1,1,2,1e309,4\n0.2,1,2,3,4\n")),
        TrajectoryDataError,
        r"log\.csv: .*non-finite value inf",
    ),
    BadInput(
        "trajectory-with-bom",
        accepted(trajectory(b"\xef\xbb\xbf" + _log(GOOD_ROWS).encode())),
        verdict="ok",
    ),
    BadInput(
        "csv-identification-binary",
        csv_identification(BINARY),
        NotTextCSVError,
        r"identification\.csv is not a text CSV file",
    ),
    # ---- resolve_csv_path (a file or a folder holding the log)
    BadInput(
        "resolve-missing",
        lambda tmp: resolve_csv_path(tmp / "logs"),
        FileNotFoundError,
        r"trajectory data not found: .*logs",
        already_good=True,
    ),
    BadInput(
        "resolve-empty-folder",
        _folder_with(),
        FileNotFoundError,
        r"no CSV file in .* \(expected identification\.csv\)",
        already_good=True,
    ),
    BadInput(
        "resolve-several-csv",
        _folder_with("a.csv", "b.csv"),
        ValueError,
        r"several CSV files \['a\.csv', 'b\.csv'\]: name the file",
        already_good=True,
    ),
    # ---- TrajectoryData.from_csv (the TrajectoryData.to_csv layout)
    BadInput(
        "trajectory-data-from-csv-missing",
        lambda tmp: TrajectoryData.from_csv(tmp / "nope.csv", JOINTS),
        FileNotFoundError,
        r"trajectory CSV .*nope\.csv.* does not exist",
        already_good=True,
    ),
    BadInput(
        "trajectory-data-from-csv-binary",
        traj_from_csv(BINARY),
        NotTextCSVError,
        r"traj\.csv is not a text CSV file",
    ),
    BadInput(
        "trajectory-data-from-csv-bad-metadata",
        traj_from_csv("# figaroh-trajectory: {oops\nt,q:a\n0,1\n"),
        TrajectoryDataError,
        r"traj\.csv: the metadata line is not valid JSON.*TrajectoryData\.to_csv",
        already_good=True,
    ),
    BadInput(
        "trajectory-data-from-csv-no-header",
        traj_from_csv("# only a comment\n"),
        TrajectoryDataError,
        r"traj\.csv: no header row",
        already_good=True,
    ),
    # ---- PoseObservations.from_csv (the calibration CSV)
    BadInput(
        "observations-missing",
        lambda tmp: PoseObservations.from_csv(tmp / "nope.csv", _ur10().model, _calib_config()),
        FileNotFoundError,
        r"calibration data file .*nope\.csv.* does not exist",
        already_good=True,
    ),
    BadInput(
        "observations-binary",
        observations(BINARY),
        NotTextCSVError,
        r"calibration data file .*calib\.csv is not a text CSV file",
    ),
    BadInput(
        "observations-empty",
        observations(""),
        ValueError,
        r"calib\.csv: empty file \(expected a header row\)",
        already_good=True,
    ),
    BadInput(
        "observations-header-only",
        observations(CALIB_HEADER + "\n"),
        ValueError,
        r"calib\.csv: no data rows",
        already_good=True,
    ),
    BadInput(
        "observations-wrong-column-count",
        observations(f"{CALIB_HEADER}\n{CALIB_ROW}\n{CALIB_ROW},5\n"),
        ValueError,
        r"calib\.csv: rows \[1\] do not have 12 cells like the header",
        already_good=True,
    ),
    BadInput(
        "observations-missing-columns",
        observations("x1,y1,z1," + ",".join(UR10_JOINTS) + "\n" + ",".join(["0"] * 9) + "\n"),
        KeyError,
        r"calib\.csv: missing columns \['phix1', 'phiy1', 'phiz1'\]",
        already_good=True,
    ),
    BadInput(
        "observations-missing-joint-column",
        observations(CALIB_HEADER.replace("elbow_joint", "elbow") + "\n" + CALIB_ROW + "\n"),
        KeyError,
        r"calib\.csv: missing columns \['elbow_joint'\]",
        already_good=True,
    ),
    BadInput(
        "observations-non-numeric",
        observations(f"{CALIB_HEADER}\n{CALIB_ROW}\n{CALIB_ROW.replace('0.1', 'abc', 1)}\n"),
        ValueError,
        r"calib\.csv: column 'x1' has non-numeric cells in rows \[1\]",
        already_good=True,
    ),
    BadInput(
        "observations-nan-posture",
        observations(f"{CALIB_HEADER}\n{CALIB_ROW}\n" + ",".join(["nan"] * 12) + "\n"),
        ValueError,
        r"calib\.csv: q: non-finite joint values in rows \[1\]; mask those postures",
    ),
    BadInput(
        "observations-del-list-out-of-range",
        observations(f"{CALIB_HEADER}\n{CALIB_ROW}\n", del_list=[5]),
        ValueError,
        r"calib\.csv: del_list: rows \[5\] are outside 0\.\.0",
    ),
    BadInput(
        "observations-with-bom",
        accepted(observations(b"\xef\xbb\xbf" + f"{CALIB_HEADER}\n{CALIB_ROW}\n".encode())),
        verdict="ok",
    ),
    # ---- BaseCalibration (the 1.0.2 entry point wraps the loader's error)
    BadInput(
        "calibration-binary",
        calibration_load(BINARY),
        CalibrationError,
        r"Data loading failed: calibration data file .*calib\.csv is not a text CSV file",
    ),
    BadInput(
        "calibration-missing-columns",
        calibration_load("x1,y1\n1,2\n"),
        CalibrationError,
        r"Data loading failed: .*calib\.csv: missing columns",
        already_good=True,
    ),
    BadInput(
        "calibration-data-file-unset",
        lambda tmp: BaseCalibration(_ur10(), str(CONFIG)).set_data_file(" "),
        CalibrationError,
        r"data file is not set in .*ur10_unified_config\.yaml: name the calibration CSV",
        already_good=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_not_text_csv_error_carries_the_path(tmp_path: Path) -> None:
    path = _write(tmp_path, "x.csv", BINARY)
    with pytest.raises(NotTextCSVError) as info:
        read_trajectory_csv(path, JOINTS)
    assert info.value.path == str(path)
    assert isinstance(info.value, ValueError) and isinstance(info.value, FigarohError)


def test_a_good_log_still_reads_exactly(tmp_path: Path) -> None:
    traj = read_trajectory_csv(_write(tmp_path, "log.csv", _log(GOOD_ROWS)), JOINTS)
    np.testing.assert_array_equal(traj.q, [[1, 2], [1, 2], [1, 2]])
    np.testing.assert_array_equal(traj.t, [0, 0.1, 0.2])
