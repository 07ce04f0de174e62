"""CSV data of :class:`~figaroh.integration.api.RobotIdentificationSystem`.

:class:`SystemIdentification` is the
:class:`~figaroh.cli.csv_identification.CSVIdentification` the system runs: it
reads the header layout of :mod:`figaroh.cli.csv_identification` and the
one-file-per-signal layout (``q.csv``, ``tau.csv``, optional ``dq.csv`` and
``ddq.csv``), and finds the data in ``tasks.identification.data.data_dir`` when
no folder is given. One concept per module: the API
(:mod:`figaroh.integration.api`) orchestrates, this module reads data.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from figaroh.cli.csv_identification import CSVIdentification
from figaroh.data.text_csv import numeric_rows, read_csv_text
from figaroh.identification.exceptions import IdentificationDataError

logger = logging.getLogger(__name__)

#: Signal → default file name of the one-file-per-signal layout.
SPLIT_LAYOUT_FILES = {"q": "q.csv", "dq": "dq.csv", "ddq": "ddq.csv", "tau": "tau.csv"}


class SystemIdentification(CSVIdentification):
    """CSV identification that also reads the one-file-per-signal layout.

    Args:
        robot: Robot (or robot view) with a Pinocchio ``model``.
        config_file: Unified configuration YAML.
        data_dir: CSV file or folder; None reads
            ``tasks.identification.data.data_dir`` (relative to the configuration file).

    Raises:
        ValueError: No data source is given or configured.
    """

    def __init__(self, robot, config_file: str, data_dir: str | os.PathLike | None):
        super().__init__(robot, config_file, data_dir if data_dir is not None else ".")
        self.data_dir = _resolve_data_dir(
            data_dir, getattr(self, "task_config", None), self._config_file_path
        )

    def load_trajectory_data(self, data_source: str | None = None):
        """Read the training log (or ``data_source``) in either supported layout."""
        folder = Path(data_source) if data_source else self.data_dir
        files = (
            _split_files(folder, getattr(self, "task_config", None)) if folder.is_dir() else None
        )
        if files is None:
            return super().load_trajectory_data(data_source)
        if not files["tau"].is_file():
            raise FileNotFoundError(
                f"{folder} holds {files['q'].name} but not the efforts file {files['tau']}"
            )
        signals = {k: _read_matrix(p) for k, p in files.items() if p.is_file()}
        n = signals["q"].shape[0]
        ts = float(self.identif_config.get("ts") or 0.01)
        logger.info("Read %d samples from %s (one file per signal, ts = %g s)", n, folder, ts)
        return {
            "timestamps": (np.arange(n, dtype=float) * ts)[:, None],
            "positions": signals["q"],
            "velocities": signals.get("dq"),
            "accelerations": signals.get("ddq"),
            "torques": signals["tau"],
        }


def _data_section(task_config: dict | None) -> dict:
    """``tasks.identification.data`` of the task configuration (empty when absent)."""
    section = (task_config or {}).get("data") or {}
    return dict(section) if isinstance(section, dict) else {}


def _resolve_data_dir(data_dir, task_config: dict | None, config_file: str) -> Path:
    """``data_dir``, else the configured ``data.data_dir`` (relative to ``config_file``).

    Raises:
        ValueError: Neither is given.
    """
    if data_dir is not None:
        return Path(data_dir)
    configured = _data_section(task_config).get("data_dir")
    if not configured:
        raise ValueError(
            "No data source specified: pass data_dir= to identify_parameters() or set "
            "tasks.identification.data.data_dir in the configuration"
        )
    path = Path(configured)
    if not path.is_absolute():
        path = Path(config_file).resolve().parent / path
    return path


def _split_files(folder: Path, task_config: dict | None) -> dict[str, Path] | None:
    """The one-file-per-signal files of ``folder`` (None when its ``q`` file is absent).

    Raises:
        ValueError: ``data.data_files`` names an unknown signal.
    """
    names = dict(SPLIT_LAYOUT_FILES)
    names.update({k: v for k, v in (_data_section(task_config).get("data_files") or {}).items()})
    unknown = sorted(set(names) - set(SPLIT_LAYOUT_FILES))
    if unknown:
        raise ValueError(
            f"tasks.identification.data.data_files has unknown keys {unknown}; "
            f"use {sorted(SPLIT_LAYOUT_FILES)}"
        )
    files = {k: folder / v for k, v in names.items()}  # an absolute v replaces folder
    return files if files["q"].is_file() else None


def _read_matrix(path: Path) -> np.ndarray:
    """A comma-separated numeric table (an optional header row is skipped); 1-D → one column."""
    text = read_csv_text(path, "signal CSV")
    try:
        table = numeric_rows(path, text, 0, "signal CSV")
    except ValueError:
        try:
            table = numeric_rows(path, text, 1, "signal CSV")
        except ValueError as exc:
            raise IdentificationDataError(str(exc)) from exc
    return table
