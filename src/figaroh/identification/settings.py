"""The defaults of an identification run, each written once.

:data:`DEFAULT_SETTINGS` is the one place the defaults of
:meth:`figaroh.identification.base_identification.BaseIdentification.solve`
are written (figaroh 1.0.2's values). Every reader takes them from here: the
signatures of ``solve`` and ``solve_with_custom_solver``, the fit-row options
(:class:`figaroh.identification._pipeline.records.FitOptions`), the mapping
:data:`figaroh.identification.base_identification.SOLVE_DEFAULTS` (and the
command line's :data:`figaroh.cli.workflows.CLI_SOLVE_DEFAULTS` built on it)
and ``RobotIdentificationSystem.identify_parameters``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["DEFAULT_SETTINGS", "IdentificationSettings"]


@dataclass(frozen=True)
class IdentificationSettings:
    """Defaults of an identification solve.

    Attributes:
        decimate: Low-pass filter the fit rows and keep every
            ``decimation_factor``-th sample (``scipy.signal.decimate``).
        decimation_factor: Down-sampling factor [-] (≥ 1).
        zero_tolerance: Squared column norm under which a regressor column is
            dropped before the QR decomposition [(N·m)² per unit parameter].
        plotting: Plot measured against identified efforts.
        save_results: Save the results (yaml/csv/npz) under ``results/``.
        html_report: Also write the HTML report.
        wls: Refine the estimate by weighted least squares (one noise variance
            per joint).
        verbose: Print the quality report on stdout.
        save_plots: Folder the plots are written to (None: shown only).
    """

    decimate: bool = True
    decimation_factor: int = 10
    zero_tolerance: float = 0.001
    plotting: bool = True
    save_results: bool = False
    html_report: bool = False
    wls: bool = False
    verbose: bool = True
    save_plots: str | os.PathLike[str] | None = None

    def as_mapping(self) -> Mapping[str, Any]:
        """``{field: value}`` in field order, read-only."""
        return MappingProxyType({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})


#: The defaults every reader uses (see the module docstring).
DEFAULT_SETTINGS = IdentificationSettings()
