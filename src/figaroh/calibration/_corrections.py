"""Joint corrections and metrology frames of a solved calibration: plain functions.

:func:`candidate_corrections` and :func:`lifted_corrections` are the values of
``redistribute_parameters`` (non-structural and structural fits);
:func:`fitted_values` splits the fitted vector into joint corrections and
metrology frames (base and tip frames of the measurement setup, never
written into the URDF); :func:`unsupported` lists the names the URDF
exporter cannot write into joint origins; :func:`export_refusal` is the
reason a fit cannot be exported.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Sequence

import numpy as np

from figaroh.tools.urdf_exporter import is_kinematic_correction as _exporter_kinematic

logger = logging.getLogger(__name__)

__all__ = [
    "candidate_corrections",
    "export_refusal",
    "fitted_values",
    "is_kinematic_correction",
    "lifted_corrections",
    "unsupported",
]

Corrections = Dict[str, Dict[str, float]]


def candidate_corrections(
    names: Sequence[str], var: np.ndarray, covariance: np.ndarray, candidates: Sequence[str]
) -> Corrections:
    """Every candidate of a non-structural fit: fitted value and ``sqrt|C_ii|``, else 0."""
    names = list(names)
    out = {}
    for nm in candidates:
        if nm in names:
            i = names.index(nm)
            out[nm] = {
                "value": float(var[i]),
                "std_dev": float(np.sqrt(abs(covariance[i, i]))),
            }
        else:
            out[nm] = {"value": 0.0, "std_dev": 0.0}
    return out


def lifted_corrections(
    names: Sequence[str], theta: np.ndarray, covariance: np.ndarray
) -> Corrections:
    """Lifted joint values and ``sqrt|C_ii|`` of a structural fit."""
    return {
        nm: {"value": float(theta[i]), "std_dev": float(np.sqrt(abs(covariance[i, i])))}
        for i, nm in enumerate(names)
    }


def fitted_values(
    names: Sequence[str], var: np.ndarray, frames: Sequence[str], *, frame_values: bool
) -> Dict[str, float]:
    """Fitted values of the frame parameters (``frame_values``) or of the others [m, rad]."""
    frame_set = set(frames)
    return {
        n: float(v) for n, v in zip(names, var, strict=True) if (n in frame_set) == frame_values
    }


def unsupported(names: Sequence[str], model: Any) -> List[str]:
    """Names that cannot be written into a joint origin of ``model``."""
    return [n for n in names if not is_kinematic_correction(n, model)]


def export_refusal(lm_result: Any) -> str | None:
    """The optimiser's message when the fit did not converge, else None."""
    if bool(getattr(lm_result, "success", True)):
        return None
    return str(getattr(lm_result, "message", "no message"))


def is_kinematic_correction(name: str, model: Any = None) -> bool:
    """Whether a parameter can be written into a joint origin.

    ``d_p*``/``d_phi*``/``offset*`` names the URDF exporter writes into joint
    origins (:func:`figaroh.tools.urdf_exporter.is_kinematic_correction`), of
    a joint of ``model`` when a model is given.
    """
    if model is None:
        return bool(_exporter_kinematic(name))
    return bool(_exporter_kinematic(name, [str(n) for n in model.names[1:]]))
