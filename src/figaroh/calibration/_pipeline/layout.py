"""Step ``layout``: the structural parameter list and its base mapping.

The joint candidates (six ``d_*`` per joint at ``full_params``, the joint
offsets at ``joint_offset``) are reduced to the base representatives of the
stacked kinematic regressor at random postures (LAPACK column-pivoted QR,
see :func:`~figaroh.calibration.calibration_tools.calculate_base_kinematics_regressor`);
the base-frame names replace (``full_params``) or precede (``joint_offset``)
them unless ``known_baseframe``, the tip names follow unless
``known_tipframe``; elastic names (``non_geom``) come first.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Tuple

import numpy as np

from figaroh.calibration._pipeline.records import StructuralLayout
from figaroh.calibration.calibration_tools import calculate_base_kinematics_regressor
from figaroh.calibration.parameter import add_base_name, add_pee_name, get_elastic_names

__all__ = ["STRUCTURAL_TOL_QR", "base_frame_rows", "structural_layout"]

#: Rank tolerance of the structural QR.
STRUCTURAL_TOL_QR = 1e-6


def base_frame_rows(
    calib_config: Mapping[str, Any], row_names: Sequence[str], start: int
) -> Tuple[str, ...]:
    """Base-representative rows the estimated base frame replaces (``full_params`` only)."""
    if calib_config.get("calib_model") == "full_params" and not calib_config.get(
        "known_baseframe", True
    ):
        n = max(0, 6 - int(start))
        return tuple(row_names[:n])
    return ()


def structural_layout(
    model: Any, data: Any, calib_config: Mapping[str, Any], q: Any = None
) -> StructuralLayout:
    """Structural parameter list of ``calib_config`` (which is not modified).

    Args:
        model, data: Pinocchio model and data.
        calib_config: Calibration config (``calib_model``, frames, joints,
            ``known_baseframe``, ``known_tipframe``, ``non_geom``).
        q: Postures for the regressor (None or empty: random postures).

    Returns:
        The :class:`StructuralLayout`.

    Raises:
        KeyError: ``known_baseframe`` / ``known_tipframe`` not set.
        RankDeficiencyError: no identifiable joint parameter.
    """
    for key in ("known_baseframe", "known_tipframe"):
        if key not in calib_config:
            raise KeyError(
                f"calib_config[{key!r}] is not set: set it to False (frame estimated) or "
                "True (frame known) before initialize()"
            )
    cfg = {k: v for k, v in calib_config.items() if not k.startswith("base_mapping")}
    if cfg.get("non_geom"):
        cfg["param_name"] = get_elastic_names(model, cfg["actJoint_idx"])
    else:
        cfg["param_name"] = []
    calculate_base_kinematics_regressor(
        [] if q is None else q, model, data, cfg, tol_qr=STRUCTURAL_TOL_QR
    )
    if not cfg["known_baseframe"]:
        add_base_name(cfg)
    if not cfg["known_tipframe"]:
        add_pee_name(cfg)
    sl = cfg["base_mapping_slice"]
    rows = tuple(cfg["base_mapping_row_names"])
    return StructuralLayout(
        param_name=tuple(cfg["param_name"]),
        matrix=np.asarray(cfg["base_mapping_matrix"]),
        param_names=tuple(cfg["base_mapping_param_names"]),
        row_names=rows,
        slice=(int(sl[0]), int(sl[1])),
        base_frame_row_names=base_frame_rows(cfg, rows, sl[0]),
    )
