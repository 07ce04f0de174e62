"""Calibration data, as ``BaseCalibration`` methods.

:meth:`load_data_set` (a hook: robots with another file format override it)
reads the calibration CSV through the ``observations`` step
(:func:`~figaroh.calibration._pipeline.observations.read_observations`) and
the held-out validation CSV when one is configured; paths are resolved from
the working directory, then beside the configuration file.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from figaroh.calibration._pipeline.observations import read_observations
from figaroh.tools.stages import record_stage
from figaroh.utils.error_handling import CalibrationError

logger = logging.getLogger(__name__)

__all__ = ["CalibrationData"]


class CalibrationData:
    """Mixin of :class:`~figaroh.calibration.base_calibration.BaseCalibration`."""

    def _resolve_path(self, value: Any, key: str) -> str:
        if value is None or not str(value).strip():
            raise CalibrationError(
                f"{key} is not set in {self._config_file_path}: name the calibration CSV "
                "(or call set_data_file(path) on a configured instance)"
            )
        p = Path(str(value)).expanduser()
        if p.is_absolute() or p.exists():
            return os.path.abspath(p)
        alt = Path(self._config_file_path).resolve().parent / p
        if alt.exists():
            return str(alt)
        return os.path.abspath(p)

    def set_data_file(self, path: str | os.PathLike, validation: bool = False) -> str:
        """Point the calibration (or its validation set) at another CSV.

        Args:
            path: CSV file (the layout of
                :meth:`~figaroh.data.observations.PoseObservations.from_csv`).
            validation: Set the held-out validation file instead.

        Returns:
            The absolute path used.
        """
        resolved = self._resolve_path(str(path), "data file")
        if validation:
            self.calib_config["validation_data_file"] = resolved
        else:
            self.calib_config["data_file"] = resolved
            self._data_path = resolved
        return resolved

    def load_data_set(self) -> None:
        """Read the measured poses and postures.

        Sets ``observations``, ``PEE_measured``, ``q_measured`` and
        ``calib_config["NbSample"]``, records the ``data`` stage and loads the
        validation set when ``validation_data_file`` is configured.

        Raises:
            CalibrationError: ``"Data loading failed: …"`` naming the file and
                the missing columns / NaN rows.
        """
        try:
            obs = read_observations(self._data_path, self.model, self.calib_config, self.del_list_)
        except Exception as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            record_stage(self, "data", "failed", f"{type(exc).__name__}: {msg}")
            raise CalibrationError(f"Data loading failed: {msg}") from exc
        self.observations = obs.source
        self.PEE_measured, self.q_measured = obs.measured, obs.q
        self.calib_config["NbSample"] = int(len(obs.q))
        record_stage(
            self,
            "data",
            "ok",
            f"PoseObservations from {Path(self._data_path).name}",
            {"samples": len(obs.q), "masked_samples": obs.masked_samples},
        )
        val = self.calib_config.get("validation_data_file")
        if val:
            self._load_validation_data(val)

    def _load_validation_data(self, path: str) -> None:
        try:
            resolved = self._resolve_path(path, "data.validation_data_file")
            obs = read_observations(resolved, self.model, self.calib_config)
        except Exception as exc:  # noqa: BLE001 - documented: warning only
            logger.warning(
                "validation data file %s could not be loaded (%s); validation falls back to the "
                "training data",
                path,
                exc,
            )
            return
        self._val_observations = obs.source
        self._PEE_val, self._q_val = obs.measured, obs.q
        self._val_available = True
