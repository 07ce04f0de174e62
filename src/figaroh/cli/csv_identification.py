"""Generic identification from a CSV trajectory log (used by ``figaroh identify``).

:class:`CSVIdentification` is a
:class:`~figaroh.identification.base_identification.BaseIdentification` that
reads one CSV file per trajectory, so a robot whose controller can export joint
positions and joint efforts needs no Python code at all.

Column layout (header row required, any column order, extra columns ignored)::

    t, q_<joint>..., [dq_<joint>...], [ddq_<joint>...], tau_<joint>..., [mask]

=================  ===========================================  ========================
column             meaning                                      unit
=================  ===========================================  ========================
``t``              sample time, strictly increasing (optional:  [s]
                   without it the clock is assumed from
                   ``signal_processing.sampling_frequency``)
``q_<joint>``      joint position, one per active joint          [rad] or [m] (prismatic)
``dq_<joint>``     joint velocity (optional, all joints or none; [rad/s] or [m/s]
                   derived from ``q`` when absent)
``ddq_<joint>``    joint acceleration (optional, all or none;    [rad/s²] or [m/s²]
                   derived from ``dq`` when absent)
``tau_<joint>``    joint effort at the joint (after the          [N·m] or [N] (prismatic)
                   reduction), one per active joint
``mask``           optional 0/1 flag; 0 excludes the sample      —
=================  ===========================================  ========================

``<joint>`` is the joint name of the URDF, exactly as listed in
``robot.properties.joints.active_joints`` of the configuration. This is the
layout of the UR10 example logs (``examples/ur10/identification.py``). A file
written by :meth:`figaroh.data.trajectory.TrajectoryData.to_csv` (columns
``q:<joint>``, ``effort:<joint>`` and a ``# figaroh-trajectory:`` metadata
line) is read as well.

``data_dir`` may name the CSV file itself or a folder holding
``identification.csv`` (or exactly one ``*.csv`` file). The held-out
trajectory (``tasks.identification.data.validation_data_file`` or
``figaroh identify --validation-data``) follows the same rules.

Efforts must be joint efforts: a log of motor currents needs a subclass that
converts them (see the TIAGo example).
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np

from figaroh.data.source import DataSource
from figaroh.data.text_csv import csv_rows, numeric_rows, read_csv_text
from figaroh.data.trajectory import TrajectoryData, TrajectoryDataError
from figaroh.data.trajectory_fields import joint_effort_labels
from figaroh.identification.base_identification import BaseIdentification
from figaroh.utils.fileio import atomic_write_text, make_folder

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_CSV_NAME",
    "CSVIdentification",
    "read_trajectory_csv",
    "resolve_csv_path",
    "path_beside_config",
    "read_configured_csv",
    "write_trajectory_csv",
]

#: File looked for when ``data_dir`` is a folder.
DEFAULT_CSV_NAME = "identification.csv"

_PREFIXES = ("q", "dq", "ddq", "tau")


def resolve_csv_path(source: str | os.PathLike, default_name: str = DEFAULT_CSV_NAME) -> Path:
    """The CSV file named by ``source`` (a file, or a folder holding one).

    Args:
        source: A CSV file, or a folder holding ``default_name`` or exactly one ``*.csv``.
        default_name: File name preferred inside a folder.

    Returns:
        The path of the CSV file.

    Raises:
        FileNotFoundError: ``source`` does not exist, or the folder holds no CSV file.
        ValueError: The folder holds several CSV files and none is ``default_name``.
    """
    path = Path(source)
    if path.is_file():
        return path
    if not path.exists():
        raise FileNotFoundError(f"trajectory data not found: {path}")
    preferred = path / default_name
    if preferred.is_file():
        return preferred
    found = sorted(p for p in path.glob("*.csv") if p.is_file())
    if not found:
        raise FileNotFoundError(f"no CSV file in {path} (expected {default_name})")
    if len(found) > 1:
        raise ValueError(
            f"{path} holds several CSV files {[p.name for p in found]}: name the file "
            f"itself or call the training log {default_name}"
        )
    return found[0]


def path_beside_config(source: str, config_path: str | os.PathLike) -> str:
    """``source`` as given when it exists (or is absolute), else beside the configuration file.

    A relative path written in a configuration usually means "next to this
    YAML"; a path typed on the command line means "from here". The current
    directory wins when both exist.

    Args:
        source: A file or folder path.
        config_path: The configuration file.

    Returns:
        The path to use, unchanged when it exists nowhere (the reader then reports it).
    """
    path = Path(source)
    if path.is_absolute() or path.exists():
        return source
    beside_config = Path(config_path).resolve().parent / path
    return str(beside_config) if beside_config.exists() else source


def _numeric_table(path: Path, text: str, header_row: int, n_columns: int) -> np.ndarray:
    """``(N, n_columns)`` float rows below the header (``#`` lines are comments)."""
    table = numeric_rows(path, text, header_row + 1, "trajectory CSV")
    if table.size == 0:
        raise ValueError(f"{path} has a header but no data rows")
    if table.shape[1] != n_columns:
        raise ValueError(
            f"{path}: the header names {n_columns} columns but the rows have {table.shape[1]}"
        )
    return table


def _signal_blocks(
    path: Path, table: np.ndarray, columns: Dict[str, int], joints: List[str]
) -> Dict[str, np.ndarray | None]:
    """``{prefix: (N, n_joints)}`` for ``q``, ``tau`` and, when present, ``dq``/``ddq``."""
    missing: List[str] = []
    blocks: Dict[str, np.ndarray | None] = {}
    for prefix in _PREFIXES:
        wanted = [f"{prefix}_{j}" for j in joints]
        present = [c for c in wanted if c in columns]
        if prefix in ("dq", "ddq") and not present:
            blocks[prefix] = None
            continue
        missing.extend(c for c in wanted if c not in columns)
        complete = len(present) == len(wanted)
        blocks[prefix] = table[:, [columns[c] for c in present]] if complete else None
    if missing:
        raise ValueError(
            f"{path} lacks the columns {missing} (active joints {joints}); the layout is "
            "t, q_<joint>, [dq_<joint>], [ddq_<joint>], tau_<joint> with the URDF joint names"
        )
    return blocks


def _mask_column(path: Path, table: np.ndarray, columns: Dict[str, int]) -> np.ndarray | None:
    """The 0/1 ``mask`` column as bools (None without the column)."""
    if "mask" not in columns:
        return None
    m = table[:, columns["mask"]]
    bad = np.flatnonzero((m != 0) & (m != 1))
    if bad.size:
        raise ValueError(f"{path}: column 'mask' must hold 0 or 1, row {int(bad[0])} does not")
    return m.astype(bool)


def read_trajectory_csv(
    path: str | os.PathLike,
    joints: Sequence[str],
    model=None,
    sample_period: float | None = None,
) -> TrajectoryData:
    """Read one trajectory log laid out as described in this module.

    Args:
        path: CSV file.
        joints: Active joint names, the column order of every returned signal.
        model: ``pinocchio.Model``, used to tell revolute joints (efforts in
            [N·m]) from prismatic ones ([N]); None assumes revolute joints.
        sample_period: Sample period Δt [s] used when the file has no ``t``
            column (then ``t_k = k·Δt`` and the clock is ``"assumed"``).

    Returns:
        The validated :class:`~figaroh.data.trajectory.TrajectoryData`; its
        ``source`` records the file and its sha256.

    Raises:
        FileNotFoundError: The file does not exist.
        ValueError: Missing or duplicated columns (all named in one message),
            a non-numeric cell, no ``t`` column and no ``sample_period``, a
            file that is not UTF-8 text
            (:class:`~figaroh.data.text_csv.NotTextCSVError`), or malformed
            data (:class:`~figaroh.data.trajectory.TrajectoryDataError`).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"trajectory CSV not found: {path}")
    joints = [str(j) for j in joints]
    text = read_csv_text(path, "trajectory CSV")
    header, header_row, has_meta = _read_header(path, text)
    if any(c.startswith("q:") for c in header):
        # the TrajectoryData.to_csv layout (q:<joint>, effort:<joint>, metadata line)
        kinds, units = (None, None) if has_meta else joint_effort_labels(model, joints)
        return TrajectoryData.from_csv(path, joints, effort_kind=kinds, effort_unit=units)
    duplicated = sorted({c for c in header if header.count(c) > 1})
    if duplicated:
        raise ValueError(f"{path}: duplicated columns {duplicated}")
    columns = {name: k for k, name in enumerate(header)}
    table = _numeric_table(path, text, header_row, len(header))
    blocks = _signal_blocks(path, table, columns, joints)
    unused = [c for c in header if not _is_known(c, joints)]
    if unused:
        logger.debug("%s: ignoring columns %s", path, unused)

    mask = _mask_column(path, table, columns)
    t: np.ndarray | None = None
    period: float | None = None
    if "t" in columns:
        t = table[:, columns["t"]]
    elif sample_period is not None:
        period = float(sample_period)
        logger.info("%s has no 't' column: assuming a sample period of %g s", path, sample_period)
    else:
        raise ValueError(f"{path} has no 't' column [s] and no sample period was given")
    kinds, units = joint_effort_labels(model, joints)
    try:
        return TrajectoryData.from_arrays(
            joints,
            blocks["q"],
            blocks["tau"],
            effort_kind=kinds,
            effort_unit=units,
            dq=blocks["dq"],
            ddq=blocks["ddq"],
            mask=mask,
            source=DataSource.from_files([path], adapter="figaroh.cli.read_trajectory_csv"),
            t=t,
            sample_period=period,
        )
    except TrajectoryDataError as exc:  # name the file; rows are data rows counted from 0
        raise TrajectoryDataError(
            f"{path}: {exc} (rows counted from 0 below the header)", exc.field
        ) from exc


def _read_header(path: Path, text: str) -> tuple[List[str], int, bool]:
    """Header cells, header line index and whether a ``# figaroh-trajectory:`` line precedes it."""
    has_meta = False
    for k, line in enumerate(io.StringIO(text, newline="")):
        if line.startswith("#") or not line.strip():
            has_meta = has_meta or line.startswith("# figaroh-trajectory:")
            continue
        (cells,) = csv_rows(path, [line], "trajectory CSV", first_line=k + 1)
        return [c.strip() for c in cells], k, has_meta
    raise ValueError(f"{path} is empty: expected a header row 't,q_<joint>,...,tau_<joint>'")


def _is_known(column: str, joints: Sequence[str]) -> bool:
    if column in ("t", "mask"):
        return True
    prefix, _, joint = column.partition("_")
    return prefix in _PREFIXES and joint in joints


def read_configured_csv(source: str | os.PathLike, ident: BaseIdentification) -> TrajectoryData:
    """:func:`read_trajectory_csv` of ``source`` with an identification's joints and clock.

    Args:
        source: A CSV file, or a folder holding one (:func:`resolve_csv_path`).
        ident: The identification: ``identif_config["active_joints"]`` (column
            order), ``identif_config["ts"]`` (sample period [s] when the file
            has no ``t`` column) and ``model`` (revolute vs prismatic efforts).

    Returns:
        The trajectory.
    """
    ts = ident.identif_config.get("ts")
    return read_trajectory_csv(
        resolve_csv_path(source),
        ident.identif_config["active_joints"],
        model=ident.model,
        sample_period=float(ts) if ts else None,
    )


def write_trajectory_csv(
    path: str | os.PathLike,
    joints: Sequence[str],
    t: np.ndarray,
    q: np.ndarray,
    tau: np.ndarray,
    dq: np.ndarray | None = None,
    ddq: np.ndarray | None = None,
) -> Path:
    """Write one trajectory in the layout :func:`read_trajectory_csv` reads.

    Floats are written with 17 significant digits, so reading the file back
    is exact.

    Args:
        path: Destination CSV file (parent folders are created).
        joints: Joint names (column suffixes).
        t: (N,) sample times [s].
        q: (N, n) positions [rad] or [m].
        tau: (N, n) joint efforts [N·m] or [N].
        dq: (N, n) velocities [rad/s] or [m/s], optional.
        ddq: (N, n) accelerations [rad/s²] or [m/s²], optional.

    Returns:
        The written path.

    Raises:
        ValueError: Inconsistent shapes.
    """
    t = np.asarray(t, dtype=float).reshape(-1)
    n, nj = t.size, len(joints)
    header = ["t"]
    blocks = [t[:, None]]
    for prefix, arr in (("q", q), ("dq", dq), ("ddq", ddq), ("tau", tau)):
        if arr is None:
            continue
        arr = np.asarray(arr, dtype=float)
        if arr.shape != (n, nj):
            raise ValueError(f"{prefix} must have shape ({n}, {nj}), got {arr.shape}")
        header.extend(f"{prefix}_{j}" for j in joints)
        blocks.append(arr)
    table = np.hstack(blocks)
    lines = [",".join(header)]
    lines.extend(",".join(row) for row in np.char.mod("%.17g", table).tolist())
    path = Path(path)
    make_folder(path.parent)
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


class CSVIdentification(BaseIdentification):
    """Dynamic identification of any robot from CSV logs of joint positions and efforts.

    Args:
        robot: The :class:`~figaroh.tools.robot.Robot`.
        config_file: Unified configuration YAML (``tasks.identification``).
        data_dir: Training log: a CSV file, or a folder holding
            ``identification.csv`` (or a single ``*.csv``).

    Example:
        ```python
        robot = Robot("my_robot.urdf", load_geometry=False)
        ident = CSVIdentification(robot, "my_robot.yaml", data_dir="logs/train")
        ident.initialize()
        ident.solve(decimate=False, plotting=False)
        ```
    """

    def __init__(self, robot, config_file: str | os.PathLike, data_dir: str | os.PathLike):
        super().__init__(robot, str(config_file))
        self.data_dir = Path(data_dir)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", data={str(self.data_dir)!r})"

    def resolve_validation_source(self, source: str) -> str:
        """Held-out log path: as given when it exists, else beside the config file.

        A relative ``validation_data_file`` written in a configuration usually
        means "next to this YAML"; a path typed on the command line means
        "from here". The current directory wins when both exist.

        Args:
            source: The configured ``validation_data_file`` (non-empty).

        Returns:
            The path handed to :meth:`load_trajectory_data`, unchanged when it
            exists nowhere (the loader then reports it).
        """
        return path_beside_config(source, self._config_file_path)

    def load_trajectory_data(self, data_source: str | None = None) -> TrajectoryData:
        """Read the training log, or the held-out log ``data_source``.

        Args:
            data_source: File or folder of the held-out trajectory (None: the
                training log ``data_dir``).

        Returns:
            The trajectory, columns in ``identif_config["active_joints"]`` order.
        """
        return read_configured_csv(data_source if data_source else self.data_dir, self)
