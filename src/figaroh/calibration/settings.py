"""The defaults of a geometric calibration run, each written once.

:data:`DEFAULT_SETTINGS` is the one place these defaults are written
(figaroh 1.0.2's values). Every reader takes them from here: the signatures
of ``BaseCalibration.solve``, ``solve_optimisation`` and
``_optimize_with_outlier_removal``, the outlier loop
(:func:`figaroh.calibration._pipeline.outliers.fit_with_outlier_exclusion`),
the configuration loader (:mod:`figaroh.calibration.config`), the measurement
weights (:func:`figaroh.calibration._measurements.measurement_weights`), and
the command line and fleet front ends (``figaroh calibrate
--outlier-passes``, :func:`figaroh.cli.workflows.run_calibration`, the fleet
worker).

The legacy-to-unified converter (:mod:`figaroh.utils._legacy_unified`) sits
in a lower layer than this module and writes its own ``outlier_threshold``
into a migrated file when the legacy file has none; the test suite checks
that value equals :attr:`CalibrationSettings.outlier_threshold`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_SETTINGS", "CalibrationSettings"]


@dataclass(frozen=True)
class CalibrationSettings:
    """Defaults of a calibration solve.

    Attributes:
        max_iterations: Fits of the outlier-exclusion loop [-] (≥ 1).
        outlier_threshold: Per-posture position error above which a posture
            is excluded [m] (``parameters.outlier_threshold``).
        measurement_std_position: Position measurement noise σ [m]
            (``measurement_std.position``); the residual weight is ``1/σ``.
        measurement_std_orientation: Orientation measurement noise σ [rad]
            (``measurement_std.orientation``).
    """

    max_iterations: int = 3
    outlier_threshold: float = 0.05
    measurement_std_position: float = 0.001
    measurement_std_orientation: float = 0.01


#: The defaults every reader uses (see the module docstring).
DEFAULT_SETTINGS = CalibrationSettings()
