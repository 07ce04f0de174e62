"""Legacy calibration data loaders (function API).

The calibration base class reads data through
:class:`figaroh.data.observations.PoseObservations`; these functions keep the
figaroh 1.0.2 function API: :func:`load_data` returns the flat measurement vector
and the full configurations, **deleting** the rows of ``del_list`` and writing
``calib_config["NbSample"]``.

CSV layout: columns ``x<i> y<i> z<i> phix<i>
phiy<i> phiz<i>`` [m, rad] for the measured components of marker ``i``, one
column per active joint named as the model joint [rad or m], optional
``session_id``; other columns are ignored.
"""

from __future__ import annotations

import csv
import io
import logging
import os
from pathlib import Path
from typing import Any, MutableMapping, Sequence, Tuple

import numpy as np

from figaroh.data.observations import PoseObservations
from figaroh.data.text_csv import read_csv_text

logger = logging.getLogger(__name__)

__all__ = ["get_idxq_from_jname", "load_data", "read_config_data"]


def get_idxq_from_jname(model: Any, joint_name: str) -> int:
    """Configuration index ``idx_q`` of a joint.

    Args:
        model: ``pinocchio.Model``.
        joint_name: Joint name.

    Returns:
        ``model.joints[id].idx_q``.

    Raises:
        AssertionError: unknown joint (figaroh 1.0.2 contract), naming the joint.
    """
    if not isinstance(joint_name, str) or not model.existJointName(joint_name):
        raise AssertionError(
            f"joint {joint_name!r} is not in model {model.name!r} (joints: {list(model.names[1:])})"
        )
    return int(model.joints[model.getJointId(joint_name)].idx_q)


def read_config_data(model: Any, path_to_file: str | os.PathLike) -> np.ndarray:
    """Joint values of every model joint, read by name from a CSV.

    Args:
        model: ``pinocchio.Model``.
        path_to_file: CSV with one column per model joint (``model.names[1:]``).

    Returns:
        (n, njoints-1) array [rad or m].

    Raises:
        FileNotFoundError: missing file.
        KeyError: missing joint columns (all listed).
        ValueError: non-numeric cells, an empty file, or a file that is not
            UTF-8 text (``NotTextCSVError``, naming the file).
    """
    p = Path(path_to_file)
    if not p.is_file():
        raise FileNotFoundError(f"configuration data file {str(p)!r} does not exist")
    text = read_csv_text(p, "configuration data file")
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    if not rows:
        raise ValueError(
            f"configuration data file {str(p)!r} is empty: expected a header row of joint names"
        )
    header = [c.strip() for c in rows[0]]
    names = [str(n) for n in model.names[1:]]
    missing = [n for n in names if n not in header]
    if missing:
        raise KeyError(f"{p}: missing joint columns {missing}")
    idx = [header.index(n) for n in names]
    try:
        return np.array([[float(r[i]) for i in idx] for r in rows[1:]], dtype=float)
    except ValueError as exc:
        raise ValueError(f"{p}: non-numeric joint value ({exc})") from exc


def load_data(
    path_to_file: str | os.PathLike,
    model: Any,
    calib_config: MutableMapping[str, Any],
    del_list: Sequence[int] = [],  # noqa: B006 - read only; the 1.0.2 default
) -> Tuple[np.ndarray, np.ndarray]:
    """Read a calibration CSV into ``(PEEm_exp, q_exp)``.

    Rows listed in ``del_list`` (0-based data rows) are **deleted**; a NaN
    cell in a used column of any other row raises a ``ValueError`` naming the
    rows (pass them in ``del_list`` to drop them). ``calib_config["NbSample"]``
    is set to the number of rows kept. Each ``q_exp`` row starts from a copy
    of ``calib_config["q0"]``.

    Args:
        path_to_file: CSV file.
        model: ``pinocchio.Model``.
        calib_config: Calibration config (``NbMarkers``, ``measurability``,
            ``actJoint_idx``, ``config_idx``, ``q0``); ``NbSample`` is written.
        del_list: Rows to delete.

    Returns:
        ``(PEEm_exp, q_exp)``: flat measurement vector (marker, component,
        sample) [m, rad] and (n, nq) configurations.

    Raises:
        FileNotFoundError: The file does not exist.
        KeyError: Missing columns (all listed).
        ValueError: Invalid values.
    """
    try:
        obs = PoseObservations.from_csv(path_to_file, model, calib_config, del_list=tuple(del_list))
    except KeyError:
        logger.warning("load_data: %s lacks some required columns", path_to_file)
        raise
    pee, q = obs.to_legacy(model, calib_config)
    calib_config["NbSample"] = int(q.shape[0])
    return pee, q
