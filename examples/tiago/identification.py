"""TIAGo dynamic identification on the real torso + arm log.

``TiagoIdentification`` is the :class:`BaseIdentification` subclass of the
TIAGo example. It reads the controller log of one exciting trajectory — three
CSV files in one folder, ``tiago_position.csv``, ``tiago_velocity.csv`` and
``tiago_effort.csv``, each with the time ``t`` [s] in its first column and one
column per joint whose header *contains* the joint name — and converts the raw
drive efforts into joint efforts:

    τ_j = reduction_ratio_j · kmotor_j · effort_j              [N·m]
    τ_torso = effort_torso + ‖g‖ · m_subtree(torso_lift_joint)   [N]

(the torso log holds the lift force relative to its gravity load; ``‖g‖`` is the
model's gravity, 9.81 m/s², and ``m_subtree`` the mass [kg] carried by the lift
joint). The drive constants live in the ``custom.drives`` table of the unified
configuration (``config/tiago_unified_config.yaml``).

Held-out validation. The log is split in time: ``custom.log.training_range``
names the rows ``[start, end)`` that are fitted, and
``tasks.identification.data.validation_data_file`` names the held-out part:

* ``"range:START:END"`` — rows ``[START, END)`` of the same log (``END`` empty =
  end of log). It must not overlap the training rows (refused at
  :meth:`~BaseIdentification.initialize` otherwise);
* a folder — another recording (its three CSVs, used whole); naming the
  training folder itself is refused (it would validate on the fitted samples).

Each part is loaded on its own and filtered/differentiated on its own by the
base class, so no filter runs across the split.

Run ``python examples/tiago/identification.py [DATA_DIR]`` where ``DATA_DIR``
holds ``identification/`` and ``urdf/`` (default ``<repo>/../shared/data/tiago``).
It identifies the base parameters, prints the quality report and the held-out
validation summary, and with ``--save`` writes the results under ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pinocchio as pin

from figaroh.identification.base_identification import BaseIdentification
from figaroh.identification.exceptions import (
    IdentificationConfigError,
    IdentificationDataError,
)
from figaroh.tools.robot import Robot
from figaroh.utils.config_parser import parse_configuration

logger = logging.getLogger(__name__)

EXAMPLE_DIR = Path(__file__).resolve().parent
ROOT = EXAMPLE_DIR.parents[1]
DEFAULT_CONFIG = EXAMPLE_DIR / "config" / "tiago_unified_config.yaml"
DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data" / "tiago"
DEFAULT_URDF = "tiago_48_schunk.urdf"

TORSO_JOINT = "torso_lift_joint"
TIAGO_JOINTS = (TORSO_JOINT,) + tuple(f"arm_{i}_joint" for i in range(1, 8))
#: Keys of ``custom.log.files`` and their default file names.
DEFAULT_LOG_FILES = {
    "positions": "tiago_position.csv",
    "velocities": "tiago_velocity.csv",
    "efforts": "tiago_effort.csv",
}
RANGE_PREFIX = "range:"

RowRange = tuple[int, "int | None"]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Drive:
    """Drive constants of one joint.

    Attributes:
        reduction_ratio: Gear ratio (motor turns per joint turn) [-].
        kmotor: Motor constant mapping the logged effort to motor torque
            [N·m per logged unit]; its sign encodes the drive's orientation.
    """

    reduction_ratio: float
    kmotor: float

    @property
    def gain(self) -> float:
        """``reduction_ratio · kmotor``: joint effort per logged unit [N·m or N]."""
        return self.reduction_ratio * self.kmotor


def parse_row_range(text: str) -> RowRange:
    """Parse ``"range:START:END"`` into ``(START, END)`` (``END`` None = end of log).

    Rows are 0-based sample indices of the log (header excluded), half-open.

    Raises:
        IdentificationConfigError: Not of that form, negative or empty range.
    """
    body = str(text).strip()
    if not body.lower().startswith(RANGE_PREFIX):
        raise IdentificationConfigError(
            f"validation_data_file {text!r} is not a row range; write 'range:START:END'"
        )
    parts = body[len(RANGE_PREFIX) :].split(":")
    try:
        if len(parts) != 2 or not parts[0].strip():
            raise ValueError
        start = int(parts[0])
        end = int(parts[1]) if parts[1].strip() else None
    except ValueError:
        raise IdentificationConfigError(
            f"validation_data_file {text!r}: expected 'range:START:END' with integer rows "
            "(END may be empty for the end of the log), e.g. 'range:5600:6791'"
        ) from None
    return _check_range((start, end), "validation_data_file")


def _check_range(rows: Any, field: str) -> RowRange:
    if rows is None:
        return (0, None)
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence) or len(rows) != 2:
        raise IdentificationConfigError(
            f"{field} must be [start, end] row indices (end null = end of log), got {rows!r}"
        )
    start = rows[0]
    end = rows[1]
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
        raise IdentificationConfigError(f"{field}: start must be an integer row, got {start!r}")
    if end is not None and (isinstance(end, bool) or not isinstance(end, (int, np.integer))):
        raise IdentificationConfigError(f"{field}: end must be an integer row or null, got {end!r}")
    start = int(start)
    end = None if end is None else int(end)
    if start < 0 or (end is not None and end <= start):
        raise IdentificationConfigError(
            f"{field} = [{start}, {end}] is empty or negative: need 0 <= start < end"
        )
    return (start, end)


def ranges_overlap(a: RowRange, b: RowRange) -> bool:
    """Whether two half-open row ranges share a row (``None`` end = unbounded)."""
    a_end = math.inf if a[1] is None else a[1]
    b_end = math.inf if b[1] is None else b[1]
    return a[0] < b_end and b[0] < a_end


def read_joint_columns(
    path: str | os.PathLike, joints: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Read a TIAGo log CSV: time column and one column per joint.

    The first column is the time [s]; for each joint the single column whose
    header contains the joint name is taken (``"- arm_1_joint_position"``).

    Args:
        path: CSV file with a header row.
        joints: Joint names, in the order of the returned columns.

    Returns:
        ``(t, values)``: ``t`` (N, 1) [s] and ``values`` (N, len(joints)).

    Raises:
        FileNotFoundError: The file does not exist.
        IdentificationDataError: Empty file, ragged rows, or a joint matching
            no column or several columns.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"TIAGo log file not found: {path}. Pass the data folder holding "
            "identification/tiago_{position,velocity,effort}.csv"
        )
    with open(path, newline="") as f:
        header = [h.strip() for h in next(csv.reader(f), [])]
    if len(header) < 2:
        raise IdentificationDataError(f"{path}: expected a header 't, <joint columns...>'")
    try:
        table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as exc:
        raise IdentificationDataError(f"{path}: unreadable numeric data ({exc})") from exc
    if table.shape[0] == 0 or table.shape[1] != len(header):
        raise IdentificationDataError(
            f"{path}: {table.shape[1] if table.size else 0} data columns for "
            f"{len(header)} header names"
        )
    columns = []
    for joint in joints:
        hits = [i for i, name in enumerate(header) if i > 0 and joint in name]
        if len(hits) != 1:
            found = [header[i] for i in hits]
            raise IdentificationDataError(
                f"{path}: joint {joint!r} must match exactly one column header, "
                f"found {found or 'none'} in {header[1:]}"
            )
        columns.append(hits[0])
    return table[:, :1], table[:, columns]


def load_tiago_robot(
    urdf: str | os.PathLike, keep_joints: Sequence[str] = TIAGO_JOINTS, reduce: bool = True
) -> Robot:
    """Load a TIAGo URDF as a dynamics-only :class:`Robot`.

    With ``reduce`` (default) every joint not in ``keep_joints`` (wheels,
    casters, head, gripper/hand fingers) is locked at the neutral
    configuration and its links are merged rigidly into their parents
    (``pinocchio.buildReducedModel``). The efforts of the kept joints are then
    exactly those of the full model with the other joints at rest in the
    neutral posture — what the identification assumes for unlogged joints —
    while the regressor shrinks from ``nv`` = 24–48 DOFs to 8.

    Args:
        urdf: TIAGo URDF (meshes are not needed).
        keep_joints: Joints kept movable.
        reduce: Lock the other joints.

    Returns:
        The robot (``model``, ``data``, ``q0``, ``v0`` of the reduced model).

    Raises:
        IdentificationConfigError: A kept joint is not in the URDF.
    """
    robot = Robot(str(urdf), load_geometry=False)
    model = robot.model
    missing = [j for j in keep_joints if not model.existJointName(j)]
    if missing:
        raise IdentificationConfigError(
            f"{urdf} has no joint(s) {missing}; use a TIAGo URDF with torso and arm"
        )
    if not reduce:
        return robot
    keep = set(keep_joints)
    lock = [jid for jid in range(1, model.njoints) if model.names[jid] not in keep]
    reduced = pin.buildReducedModel(model, lock, pin.neutral(model))
    reduced.name = model.name
    robot.model = reduced
    robot.data = reduced.createData()
    robot.q0 = pin.neutral(reduced)
    robot.v0 = np.zeros(reduced.nv)
    return robot


def subtree_mass(model: pin.Model, joint_name: str) -> float:
    """Mass [kg] of every body supported by ``joint_name`` (its subtree)."""
    data = model.createData()
    pin.computeSubtreeMasses(model, data)
    return float(data.mass[model.getJointId(joint_name)])


# ---------------------------------------------------------------------------
# identification subclass
# ---------------------------------------------------------------------------


class TiagoIdentification(BaseIdentification):
    """Dynamic identification of TIAGo's torso and arm from the controller log.

    Args:
        robot: TIAGo :class:`~figaroh.tools.robot.Robot` (see
            :func:`load_tiago_robot`).
        config_file: Unified configuration (default
            ``examples/tiago/config/tiago_unified_config.yaml``) with the
            ``custom.drives`` table and the ``custom.log`` section.
        data_dir: Folder of the three log CSVs (default: ``custom.log.directory``,
            relative to the configuration file).

    Attributes:
        drives: ``{joint: Drive}`` for every active joint.
        data_dir: Folder of the training log.
        training_range: Rows ``(start, end)`` of the log that are fitted
            (``end`` None = end of log).
        torso_gravity_load: ``‖g‖ · m_subtree(torso_lift_joint)`` [N] added to
            the torso effort (0 when disabled or the torso is not active).

    Raises:
        IdentificationConfigError: Missing or malformed drive constants, log
            section or row range.
    """

    def __init__(
        self,
        robot,
        config_file: str | os.PathLike = DEFAULT_CONFIG,
        data_dir: str | os.PathLike | None = None,
    ):
        super().__init__(robot, str(config_file))
        config_path = Path(config_file).resolve()
        custom = parse_configuration(config_path).get("custom") or {}
        if not isinstance(custom, Mapping):
            raise IdentificationConfigError(f"{config_path}: 'custom' must be a mapping")
        active = list(self.identif_config.get("active_joints") or [])
        if not active:
            raise IdentificationConfigError(
                f"{config_path}: robot.properties.joints.active_joints is empty; list the "
                f"logged joints, e.g. {list(TIAGO_JOINTS)}"
            )
        self.drives = self._read_drives(custom.get("drives"), active, config_path)
        self.identif_config["reduction_ratio"] = {
            j: d.reduction_ratio for j, d in self.drives.items()
        }
        self.identif_config["kmotor"] = {j: d.kmotor for j, d in self.drives.items()}

        compensate = bool(custom.get("torso_gravity_compensation", True))
        self.torso_gravity_load = 0.0
        if compensate and TORSO_JOINT in active:
            g = float(np.linalg.norm(self.model.gravity.linear))
            self.torso_gravity_load = g * subtree_mass(self.model, TORSO_JOINT)

        log = custom.get("log") or {}
        if not isinstance(log, Mapping):
            raise IdentificationConfigError(f"{config_path}: custom.log must be a mapping")
        files = log.get("files") or {}
        unknown = sorted(set(files) - set(DEFAULT_LOG_FILES))
        if not isinstance(files, Mapping) or unknown:
            raise IdentificationConfigError(
                f"{config_path}: custom.log.files must map {sorted(DEFAULT_LOG_FILES)} to file "
                f"names; unknown keys {unknown}"
            )
        self.log_files = {**DEFAULT_LOG_FILES, **{k: str(v) for k, v in files.items()}}
        if data_dir is None:
            directory = log.get("directory")
            if not directory:
                raise IdentificationConfigError(
                    f"{config_path}: no data folder; pass data_dir or set custom.log.directory"
                )
            data_dir = config_path.parent / str(directory)
        self.data_dir = Path(data_dir)
        self.training_range = _check_range(log.get("training_range"), "custom.log.training_range")
        self.identif_config["data_files"] = {
            key: str((self.data_dir / name).resolve()) for key, name in self.log_files.items()
        }

    def __repr__(self) -> str:
        return (
            f"{super().__repr__()[:-1]}, data_dir='{self.data_dir}', "
            f"training_range={self.training_range}, "
            f"validation='{self.identif_config.get('validation_data_file', '')}')"
        )

    @staticmethod
    def _read_drives(table: Any, active: Sequence[str], source: Path) -> dict[str, Drive]:
        if not isinstance(table, Mapping):
            raise IdentificationConfigError(
                f"{source}: custom.drives must map each active joint to {{reduction_ratio, kmotor}}"
            )
        unknown = sorted(set(table) - set(active))
        missing = [j for j in active if j not in table]
        if unknown or missing:
            raise IdentificationConfigError(
                f"{source}: custom.drives must cover exactly the active joints {list(active)}; "
                f"missing {missing}, not active {unknown}"
            )
        drives = {}
        for joint in active:
            entry = table[joint]
            if not isinstance(entry, Mapping):
                raise IdentificationConfigError(
                    f"{source}: custom.drives.{joint} must be {{reduction_ratio, kmotor}}"
                )
            values = []
            for key in ("reduction_ratio", "kmotor"):
                value = entry.get(key)
                try:
                    number = float(value)
                except (TypeError, ValueError):
                    number = float("nan")
                if isinstance(value, bool) or not np.isfinite(number) or number == 0.0:
                    raise IdentificationConfigError(
                        f"{source}: custom.drives.{joint}.{key} must be a finite non-zero "
                        f"number, got {value!r}"
                    )
                values.append(number)
            drives[joint] = Drive(*values)
        return drives

    # ------------------------------------------------------------------ data
    def _locate(self, data_source: str | None) -> tuple[Path, RowRange]:
        if data_source is None:
            return self.data_dir, self.training_range
        text = str(data_source).strip()
        if text.lower().startswith(RANGE_PREFIX):
            return self.data_dir, parse_row_range(text)
        folder = Path(text)
        if not folder.is_dir():
            raise IdentificationDataError(
                f"data source {text!r} must be 'range:START:END' or a folder holding "
                f"{sorted(self.log_files.values())}"
            )
        return folder, (0, None)

    def read_log(self, folder: str | os.PathLike) -> dict[str, np.ndarray]:
        """Read the three CSVs of a folder (all rows), columns in active-joint order.

        Returns:
            ``{"timestamps": (N, 1) [s], "positions": (N, n) [rad or m],
            "velocities": (N, n) [rad/s or m/s], "efforts": (N, n) [raw drive units]}``.

        Raises:
            IdentificationDataError: The files disagree on length or time stamps.
        """
        joints = list(self.identif_config["active_joints"])
        out: dict[str, np.ndarray] = {}
        t_ref = None
        for key in ("positions", "velocities", "efforts"):
            path = Path(folder) / self.log_files[key]
            t, values = read_joint_columns(path, joints)
            if t_ref is None:
                t_ref, out["timestamps"] = path, t
            elif t.shape != out["timestamps"].shape or not np.array_equal(t, out["timestamps"]):
                raise IdentificationDataError(
                    f"{path} and {t_ref} must share their time column (same rows, same time stamps)"
                )
            out[key] = values
        return out

    def load_trajectory_data(self, data_source: str | None = None) -> dict:
        """Load the training rows, or the held-out part named by ``data_source``.

        Args:
            data_source: ``None`` → rows ``training_range`` of ``data_dir``;
                ``"range:START:END"`` → those rows of ``data_dir``; a folder →
                all rows of that folder's log.

        Returns:
            ``timestamps`` (N, 1) [s], ``positions`` (N, 8) [rad; m for the
            torso], ``velocities`` (N, 8) [rad/s; m/s], ``accelerations`` None
            (derived from the filtered velocities), ``torques`` (N, 8) raw drive
            efforts (converted by :meth:`process_torque_data`).

        Raises:
            FileNotFoundError: A log file is missing.
            IdentificationDataError: Rows outside the log or unusable files.
        """
        folder, (start, end) = self._locate(data_source)
        log = self.read_log(folder)
        n = log["timestamps"].shape[0]
        stop = n if end is None else end
        if stop > n or start >= stop:
            raise IdentificationDataError(
                f"rows [{start}, {end}) are outside the {n}-sample log in {folder} "
                "(custom.log.training_range / validation_data_file)"
            )
        rows = slice(start, stop)
        logger.info("TIAGo log %s: rows [%d, %d) of %d", folder, start, stop, n)
        return {
            "timestamps": log["timestamps"][rows],
            "positions": log["positions"][rows],
            "velocities": log["velocities"][rows],
            "accelerations": None,
            "torques": log["efforts"][rows],
        }

    def process_torque_data(self, **kwargs) -> np.ndarray:
        """Joint efforts from the raw drive efforts.

        ``τ_j = reduction_ratio_j · kmotor_j · effort_j`` [N·m], plus
        ``torso_gravity_load`` [N] on ``torso_lift_joint``.

        Returns:
            ``processed_data["torques"]`` (N, n_active).
        """
        effort = np.asarray(self.raw_data["torques"], dtype=float)
        active = list(self.identif_config["active_joints"])
        gain = np.array([self.drives[j].gain for j in active])
        tau = effort * gain
        if self.torso_gravity_load and TORSO_JOINT in active:
            tau[:, active.index(TORSO_JOINT)] += self.torso_gravity_load
        self.processed_data["torques"] = tau
        return tau

    def resolve_validation_source(self, source: str):
        """Accept ``"range:START:END"`` (disjoint from the training rows) or a folder.

        Raises:
            IdentificationConfigError: Malformed range, a range overlapping
                ``training_range``, or the training folder itself.
            FileNotFoundError: A folder that does not exist.
        """
        text = str(source).strip()
        if text.lower().startswith(RANGE_PREFIX):
            rows = parse_row_range(text)
            if ranges_overlap(rows, self.training_range):
                raise IdentificationConfigError(
                    f"validation_data_file {text!r} overlaps the training rows "
                    f"custom.log.training_range = {list(self.training_range)}: held-out "
                    "rows must not be fitted. Move one of the two ranges"
                )
            n = self.read_log(self.data_dir)["timestamps"].shape[0]
            if (rows[1] is not None and rows[1] > n) or rows[0] >= n:
                raise IdentificationConfigError(
                    f"validation_data_file {text!r} lies outside the {n}-sample log in "
                    f"{self.data_dir}"
                )
            return text
        path = super().resolve_validation_source(text)
        if Path(path).resolve() == self.data_dir.resolve():
            raise IdentificationConfigError(
                f"validation_data_file {text!r} is the training log folder; validate on "
                "held-out rows with 'range:START:END' or on another recording"
            )
        return path


# ---------------------------------------------------------------------------
# script
# ---------------------------------------------------------------------------


def run(
    data_dir: str | os.PathLike = DEFAULT_DATA_DIR,
    config_file: str | os.PathLike = DEFAULT_CONFIG,
    urdf: str | os.PathLike | None = None,
    validation: str | None = None,
    decimate: bool = True,
    decimation_factor: int = 10,
    plotting: bool = False,
) -> TiagoIdentification:
    """Identify TIAGo from ``<data_dir>/identification`` and ``<data_dir>/urdf``.

    Args:
        data_dir: TIAGo data folder (``identification/`` and ``urdf/`` inside).
        config_file: Unified configuration.
        urdf: URDF path (default: ``custom.urdf`` of the config inside
            ``<data_dir>/urdf``).
        validation: Overrides ``validation_data_file`` (``"range:A:B"`` or folder).
        decimate: Low-pass and down-sample the fitted rows.
        decimation_factor: Down-sampling factor.
        plotting: Plot measured vs identified efforts.

    Returns:
        The solved identification object.
    """
    data_dir = Path(data_dir)
    if urdf is None:
        custom = parse_configuration(config_file).get("custom") or {}
        urdf = data_dir / "urdf" / str(custom.get("urdf", DEFAULT_URDF))
    robot = load_tiago_robot(urdf)
    ident = TiagoIdentification(robot, config_file, data_dir=data_dir / "identification")
    if validation is not None:
        ident.identif_config["validation_data_file"] = validation
    ident.initialize()
    ident.solve(
        decimate=decimate,
        decimation_factor=decimation_factor,
        plotting=plotting,
        save_results=False,
    )
    return ident


def summary(ident: TiagoIdentification, seconds: float | None = None) -> str:
    """Plain-text summary of the held-out validation (for the script)."""
    val = ident.result.get("validation_metrics") or {}
    lines = [
        "",
        f"TIAGo identification ({ident.model.name}, {len(ident.phi_base)} base parameters, "
        f"cond = {ident.result['condition number']:.3g})",
        f"  validation source : {val.get('validation_source')} "
        f"({ident.identif_config.get('validation_data_file')}, "
        f"{val.get('n_val_samples')} samples)",
        f"  effort RMSE       : nominal URDF {val.get('rmse_nominal', float('nan')):.3f}, "
        f"identified {val.get('rmse_identified', float('nan')):.3f} N·m",
        f"  improvement       : {val.get('improvement_pct', float('nan')):.1f} %",
    ]
    for name, stats in (val.get("per_joint") or {}).items():
        lines.append(
            f"    {name:<12} RMSE {stats['rmse_identified']:.3f} (nominal "
            f"{stats['rmse_nominal']:.3f}) {stats['unit']}, R² {stats['r2']:.3f}"
        )
    if seconds is not None:
        lines.append(f"  run time          : {seconds:.1f} s")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "data_dir",
        nargs="?",
        default=str(DEFAULT_DATA_DIR),
        help="TIAGo data folder holding identification/ and urdf/ (default: %(default)s)",
    )
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="unified config YAML")
    parser.add_argument("--urdf", default=None, help="URDF (default: <data_dir>/urdf/custom.urdf)")
    parser.add_argument(
        "--validation", default=None, help="held-out data: 'range:START:END' or a folder"
    )
    parser.add_argument("--no-decimate", action="store_true", help="fit every sample")
    parser.add_argument("--plot", action="store_true", help="plot the efforts")
    parser.add_argument("--save", action="store_true", help="save results under --out")
    parser.add_argument("--out", default="results/tiago_identification")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    start = time.perf_counter()
    ident = run(
        args.data_dir,
        args.config,
        args.urdf,
        validation=args.validation,
        decimate=not args.no_decimate,
        plotting=args.plot,
    )
    print(summary(ident, time.perf_counter() - start))
    if args.save:
        for fmt, path in (ident.save_results(output_dir=args.out) or {}).items():
            print(f"saved {fmt}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
