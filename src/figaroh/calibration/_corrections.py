"""Joint corrections and metrology frames of a solved calibration.

:meth:`redistribute_parameters` lifts a structural fit back to every mapped
joint parameter; :meth:`joint_corrections` is what the URDF and PAL exporters
write into joint origins (after :meth:`require_exportable`);
:meth:`metrology_frames` are the base and tip frames of the measurement
setup, never written into the URDF.
"""

from __future__ import annotations

import logging
from typing import Any, Dict

import numpy as np

from figaroh.calibration import estimation
from figaroh.tools.stages import record_stage
from figaroh.tools.urdf_exporter import is_kinematic_correction as _exporter_kinematic
from figaroh.utils.error_handling import CalibrationError

logger = logging.getLogger(__name__)

__all__ = ["CalibrationCorrections", "is_kinematic_correction"]


class CalibrationCorrections:
    """Mixin of :class:`~figaroh.calibration.base_calibration.BaseCalibration`."""

    def redistribute_parameters(self) -> Dict[str, Dict[str, float]]:
        """Joint corrections with their standard deviations.

        Structural fits are lifted back to every mapped joint parameter
        (:func:`figaroh.calibration.estimation.lift_structural`); other
        methods report every candidate (0 when not fitted).

        Returns:
            ``{name: {"value": v, "std_dev": s}}`` (no frame parameters).

        Raises:
            CalibrationError: no fit / no covariance / no base mapping.
        """
        if self.var_ is None or self._C_param is None:
            raise CalibrationError(
                "redistribute_parameters needs a fit with a parameter covariance: run solve() "
                "(the covariance is unavailable when the residual degrees of freedom are ≤ 0)"
            )
        cfg = self.calib_config
        method = estimation.settings(cfg)["method"]
        names = list(cfg["param_name"])
        if method != "structural":
            report = cfg.get("estimation_report") or {}
            out = {}
            for nm in report.get("candidates", []):
                if nm in names:
                    i = names.index(nm)
                    out[nm] = {
                        "value": float(self.var_[i]),
                        "std_dev": float(np.sqrt(abs(self._C_param[i, i]))),
                    }
                else:
                    out[nm] = {"value": 0.0, "std_dev": 0.0}
            return out
        if "base_mapping_matrix" not in cfg or "base_mapping_param_names" not in cfg:
            raise CalibrationError(
                "no base mapping in calib_config: was create_param_list() run with the "
                "structural method?"
            )
        lnames, theta, cov = estimation.lift_structural(self)
        return {
            nm: {"value": float(theta[i]), "std_dev": float(np.sqrt(abs(cov[i, i])))}
            for i, nm in enumerate(lnames)
        }

    def require_exportable(self, allow_failed_fit: bool = False) -> None:
        """Refuse to export corrections that no successful fit produced.

        Exports (:meth:`joint_corrections`, the URDF and PAL overlays) call
        it first. A run without :meth:`solve`, or whose optimiser reported
        failure (``LM_result.success`` False: the values are wherever the
        solver stopped), is refused; ``allow_failed_fit=True`` exports the
        values of a failed fit anyway, with a warning.

        Args:
            allow_failed_fit: Accept a fit whose optimiser did not converge.

        Raises:
            CalibrationError: no fit yet, or a failed fit without
                ``allow_failed_fit``; records stage ``export`` = failed.
        """
        if self.var_ is None or self.LM_result is None:
            raise CalibrationError("Calibration not performed yet: run solve()")
        if bool(getattr(self.LM_result, "success", True)):
            return
        message = str(getattr(self.LM_result, "message", "no message"))
        if allow_failed_fit:
            logger.warning(
                "exporting the values of a calibration whose optimiser did not converge (%s)",
                message,
            )
            return
        record_stage(self, "export", "failed", f"the fit did not converge: {message}")
        raise CalibrationError(
            f"the calibration fit did not converge ({message}): its values are not a solution. "
            "Fix the fit (data, parameters, max_iterations), or pass allow_failed_fit=True to "
            "export them anyway"
        )

    def joint_corrections(
        self, lift: bool = True, drop_unsupported: bool = False, allow_failed_fit: bool = False
    ) -> Dict[str, float]:
        """Joint-level corrections for the URDF exporter.

        Args:
            lift: Lifted corrections (:meth:`redistribute_parameters`); False
                gives the fitted non-frame parameters as estimated (these
                reproduce the calibrated model exactly).
            drop_unsupported: Omit names the exporter cannot write into joint
                origins instead of raising.
            allow_failed_fit: Export the values of a fit whose optimiser did
                not converge (see :meth:`require_exportable`).

        Returns:
            ``{name: value}`` [m, rad].

        Raises:
            CalibrationError: no successful fit (see :meth:`require_exportable`);
                unsupported names (e.g. elastic ``k_*``) unless
                ``drop_unsupported``; records stage ``export`` = failed.
        """
        self.require_exportable(allow_failed_fit=allow_failed_fit)
        if lift:
            values = {k: v["value"] for k, v in self.redistribute_parameters().items()}
        else:
            frames = set(self._frame_param_names())
            values = {
                n: float(v)
                for n, v in zip(self.calib_config["param_name"], self.var_, strict=True)
                if n not in frames
            }
        bad = [n for n in values if not is_kinematic_correction(n, self.model)]
        if bad and not drop_unsupported:
            record_stage(
                self,
                "export",
                "failed",
                f"not joint-origin corrections: {bad[:6]}",
            )
            raise CalibrationError(
                f"parameters {bad[:6]}{' ...' if len(bad) > 6 else ''} cannot be written into "
                "joint origins (elastic or non-kinematic); pass drop_unsupported=True to omit them"
            )
        return {n: v for n, v in values.items() if n not in bad}

    def metrology_frames(self) -> Dict[str, float]:
        """Fitted base (``base_*``) and tip (``pEE*``/``phiEE*``) values.

        They describe the measurement setup and are never written into the
        URDF.

        Raises:
            CalibrationError: before :meth:`solve`.
        """
        if self.var_ is None:
            raise CalibrationError("Calibration not performed yet: run solve()")
        frames = set(self._frame_param_names())
        return {
            n: float(v)
            for n, v in zip(self.calib_config["param_name"], self.var_, strict=True)
            if n in frames
        }


def is_kinematic_correction(name: str, model: Any = None) -> bool:
    """Whether a parameter can be written into a joint origin.

    ``d_p*``/``d_phi*``/``offset*`` names the URDF exporter writes into joint
    origins (:func:`figaroh.tools.urdf_exporter.is_kinematic_correction`), of
    a joint of ``model`` when a model is given.
    """
    if model is None:
        return bool(_exporter_kinematic(name))
    return bool(_exporter_kinematic(name, [str(n) for n in model.names[1:]]))
