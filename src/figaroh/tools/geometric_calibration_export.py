"""Export a geometric calibration as a PAL ``robot_state_publisher`` overlay.

PAL robots read joint-origin corrections from ``master_calibration.yaml``::

    robot_state_publisher:
      geometric_calibration:
        arm_1_dx: 0.0012        # [m]
        arm_1_droll: -0.0004    # [rad]

i.e. **additive** deltas on the URDF ``<origin xyz rpy>`` of each joint,
keyed by the joint name without its trailing ``_joint``.

The calibrated joint origin is ``C = P · SE3(exp3(v[3:6]), v[0:3])`` for
placement errors ``d_*`` (``P`` the nominal joint placement, ``v`` the six
``d_*`` values of the joint) and ``C = P · SE3(rpy(o[3:6]), o[0:3])`` for joint
offsets ``offset*``; the deltas are ``dxyz = C.t − P.t`` and
``drpy = wrap(rpy(C.R) − rpy(P.R))`` into (−π, π].
"""

from __future__ import annotations

import logging
import math
import os
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Any, Dict, Mapping

import numpy as np
import pinocchio as pin
import yaml

from figaroh.data.source import atomic_write_text
from figaroh.tools.urdf_exporter import _parse_param_name
from figaroh.utils.fileio import make_folder

logger = logging.getLogger(__name__)

__all__ = [
    "build_geometric_calibration",
    "export_geometric_calibration_yaml",
    "_pal_joint_name",
]

_DELTA_KEYS = ("dx", "dy", "dz", "droll", "dpitch", "dyaw")


def _pal_joint_name(name: str) -> str:
    """Strip one trailing ``_joint`` (``arm_1_joint`` → ``arm_1``)."""
    return name[: -len("_joint")] if name.endswith("_joint") else name


_KINDS = {"joint_placement": "full", "joint_offset": "offset"}


def _classify(name: str) -> tuple[str, str, int] | None:
    """``(kind, joint, slot)`` of a joint-origin parameter (``full``/``offset``), else None.

    ``d_<px|py|pz|phix|phiy|phiz>_<joint>`` is a placement error (``full``,
    slots 0–5), ``offset<PX|PY|PZ|RX|RY|RZ>_<joint>`` a joint offset
    (``offset``, slots 0–5), as the URDF exporter parses them
    (:func:`figaroh.tools.urdf_exporter._parse_param_name`).
    """
    try:
        parsed = _parse_param_name(name)
    except Exception:  # noqa: BLE001 - unknown to the exporter
        return None
    if parsed is None or str(parsed[0]) not in _KINDS:
        return None
    return _KINDS[str(parsed[0])], str(parsed[1]), int(parsed[2])


def _wrap(a: np.ndarray) -> np.ndarray:
    """Angles wrapped into (−π, π]."""
    w = np.mod(a + np.pi, 2 * np.pi) - np.pi
    return np.where(w <= -np.pi, w + 2 * np.pi, w)


def _urdf_origins(path: str | os.PathLike[str]) -> Dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{joint: (xyz, rpy)}`` of every joint origin as written in a URDF."""
    root = ET.parse(str(path)).getroot()
    out: Dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for joint in root.iter("joint"):
        name = joint.get("name")
        if name is None:  # a nameless joint cannot be looked up by name
            continue
        origin = joint.find("origin")
        xyz = np.zeros(3)
        rpy = np.zeros(3)
        if origin is not None:
            xyz_text, rpy_text = origin.get("xyz"), origin.get("rpy")
            if xyz_text:
                xyz = np.array([float(v) for v in xyz_text.split()])
            if rpy_text:
                rpy = np.array([float(v) for v in rpy_text.split()])
        out[name] = (xyz, rpy)
    return out


def _joint_values(
    params: Mapping[str, Mapping[str, float]], min_sigma: float | None
) -> Dict[str, Dict[str, np.ndarray]]:
    """``{joint: {"full": (6,), "offset": (6,)}}`` of the (significant) joint corrections."""
    per_joint: Dict[str, Dict[str, np.ndarray]] = defaultdict(
        lambda: {"full": np.zeros(6), "offset": np.zeros(6)}
    )
    for name, entry in params.items():
        parsed = _classify(name)
        if parsed is None:
            continue
        value = float(entry["value"])
        std = float(entry.get("std_dev", 0.0))
        if min_sigma is not None:
            ratio = math.inf if std == 0 else abs(value) / std
            if ratio < min_sigma:
                continue
        kind, joint, slot = parsed
        per_joint[joint][kind][slot] += value
    return per_joint


def build_geometric_calibration(
    calibrator: Any,
    *,
    min_sigma: float | None = None,
    nominal_urdf: str | None = None,
    allow_failed_fit: bool = False,
) -> Dict[str, Dict[str, Dict[str, float]]]:
    """PAL overlay of a calibration's joint corrections.

    Args:
        calibrator: A solved ``BaseCalibration`` (uses
            ``redistribute_parameters()``; ``model`` for the nominal placements).
        min_sigma: Keep only corrections with ``|value|/std ≥ min_sigma``
            (std 0 counts as infinitely significant).
        nominal_urdf: URDF whose ``<origin rpy>`` as written is the
            reference of ``drpy`` (matters at pitch ±π/2, where several RPY
            triples describe the same rotation).
        allow_failed_fit: Export a fit whose optimiser did not converge
            (``calibrator.require_exportable(allow_failed_fit)``).

    Returns:
        ``{"robot_state_publisher": {"geometric_calibration": {key: value}}}``
        with keys ``<joint without _joint>_<dx|dy|dz|droll|dpitch|dyaw>``
        [m, rad]; values with ``|v| ≤ 1e-12`` are omitted.

    Raises:
        CalibrationError: the calibrator has no successful fit (and
            ``allow_failed_fit`` is False).
    """
    require = getattr(calibrator, "require_exportable", None)
    if require is not None:
        require(allow_failed_fit=allow_failed_fit)
    params = calibrator.redistribute_parameters()
    model = getattr(calibrator, "model", None)
    origins = _urdf_origins(nominal_urdf) if nominal_urdf else {}
    per_joint = _joint_values(params, min_sigma)
    out: Dict[str, float] = {}
    for joint, vals in per_joint.items():
        P = pin.SE3.Identity()
        if model is not None and model.existJointName(joint):
            P = model.jointPlacements[model.getJointId(joint)].copy()
        v, o = vals["full"], vals["offset"]
        C = P * pin.SE3(pin.exp3(v[3:6]), v[0:3]) * pin.SE3(pin.rpy.rpyToMatrix(o[3:6]), o[0:3])
        if joint in origins:
            ref_xyz, ref_rpy = origins[joint]
        else:
            ref_xyz, ref_rpy = P.translation, pin.rpy.matrixToRpy(P.rotation)
        rpy_c = pin.rpy.matrixToRpy(C.rotation)
        if joint in origins:
            # choose the RPY triple of C closest to the URDF's own triple
            rpy_c = _closest_rpy(C.rotation, ref_rpy)
        deltas = np.concatenate([C.translation - ref_xyz, _wrap(rpy_c - ref_rpy)])
        base = _pal_joint_name(joint)
        for key, d in zip(_DELTA_KEYS, deltas, strict=True):
            if abs(d) > 1e-12:
                out[f"{base}_{key}"] = float(d)
    return {"robot_state_publisher": {"geometric_calibration": out}}


def _closest_rpy(R: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The RPY triple of ``R`` closest to ``ref`` (both branches and 2π shifts)."""
    r, p, y = pin.rpy.matrixToRpy(R)
    cands = [np.array([r, p, y]), np.array([r + np.pi, np.pi - p, y + np.pi])]
    if abs(abs(p) - np.pi / 2) < 1e-6:
        # gimbal: only r ∓ y is defined; keep the reference's split
        s = 1.0 if p > 0 else -1.0
        combo = r - s * y
        cands.append(np.array([ref[0], p, s * (ref[0] - combo)]))
    best = min(cands, key=lambda c: float(np.sum(_wrap(c - ref) ** 2)))
    return ref + _wrap(best - ref)


def export_geometric_calibration_yaml(
    calibrator: Any,
    output_path: str | os.PathLike,
    *,
    min_sigma: float | None = None,
    header_comment: str | None = None,
    nominal_urdf: str | None = None,
    allow_failed_fit: bool = False,
) -> str:
    """Write :func:`build_geometric_calibration` as PAL ``master_calibration.yaml``.

    Args:
        calibrator: A solved ``BaseCalibration``.
        output_path: Destination file (parent folders created).
        min_sigma: See :func:`build_geometric_calibration`.
        header_comment: Optional first line, written as ``# <comment>``.
        nominal_urdf: See :func:`build_geometric_calibration`.
        allow_failed_fit: See :func:`build_geometric_calibration`.

    Returns:
        ``output_path`` (as given, as a string).

    Raises:
        CalibrationError: no successful fit (nothing is written).
    """
    doc = build_geometric_calibration(
        calibrator,
        min_sigma=min_sigma,
        nominal_urdf=nominal_urdf,
        allow_failed_fit=allow_failed_fit,
    )
    text = yaml.safe_dump(doc, default_flow_style=False, sort_keys=True)
    if header_comment:
        text = "".join(f"# {line}\n" for line in str(header_comment).splitlines()) + text
    folder = os.path.dirname(os.fspath(output_path))
    if folder:
        make_folder(folder)
    atomic_write_text(output_path, text)
    logger.info("PAL geometric calibration written to %s", output_path)
    return str(output_path)


def _as_mapping(doc: Mapping[str, Any]) -> Dict[str, float]:
    """The inner ``{key: value}`` map of an overlay document (helper for tests/tools)."""
    return dict(doc["robot_state_publisher"]["geometric_calibration"])
