"""Where the calibration data files are: path resolution of the data settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from figaroh.utils.error_handling import CalibrationError

__all__ = ["resolve_data_path"]


def resolve_data_path(value: Any, key: str, config_file: str) -> str:
    """Absolute path of a data file setting.

    Resolved from the working directory, then beside the configuration file
    (the working-directory path is returned when neither exists, so that the
    loader names it).

    Args:
        value: The configured path.
        key: Setting name, for the message.
        config_file: Path of the configuration file.

    Raises:
        CalibrationError: the setting is empty.
    """
    if value is None or not str(value).strip():
        raise CalibrationError(
            f"{key} is not set in {config_file}: name the calibration CSV "
            "(or call set_data_file(path) on a configured instance)"
        )
    p = Path(str(value)).expanduser()
    if p.is_absolute() or p.exists():
        return os.path.abspath(p)
    alt = Path(config_file).resolve().parent / p
    if alt.exists():
        return str(alt)
    return os.path.abspath(p)
