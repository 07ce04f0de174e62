"""Parameter names of a geometric calibration, and their layout in the solver vector.

Templates:

* :data:`FULL_PARAMTPL` — ``d_px, d_py, d_pz, d_phix, d_phiy, d_phiz``:
  placement error of a joint;
* :data:`JOINT_OFFSETTPL` — ``offsetPX … offsetRZ``: offset along/about the
  joint's own axes;
* :data:`ELAS_TPL` — ``k_PX … k_RZ``: joint compliance;
* :data:`EE_TPL` — ``pEEx, pEEy, pEEz, phiEEx, phiEEy, phiEEz``: tip (marker) frame;
* :data:`BASE_TPL` — ``base_px … base_phiz``: base/measurement frame.

Full names: ``d_px_<joint>``, ``offsetRZ_<joint>``, ``k_RZ_<joint>``,
``pEEx_<k>`` (marker ``k`` = 1…NbMarkers, measured components only) and the
six ``base_*`` names. Translations are in metres, rotations in radians.

Solver-vector layout after ``create_param_list()``::

    [base_* (6, if the base frame is unknown)] + [k_* (non_geom)] + [joint params] + [tip params]

:func:`parse_param_name` maps a name back to its role; unlike figaroh 1.0.2's
substring matching it requires the joint part to be an **exact** joint name
(``joint1`` never captures ``joint10``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, MutableMapping, Sequence

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

logger = logging.getLogger(__name__)

__all__ = [
    "AXES",
    "BASE_TPL",
    "EE_TPL",
    "ELAS_TPL",
    "FULL_PARAMTPL",
    "JOINT_OFFSETTPL",
    "ParsedParam",
    "add_base_name",
    "add_eemarker_frame",
    "add_pee_name",
    "elastic_axis",
    "get_elastic_names",
    "get_fullparam_offset",
    "get_joint_offset",
    "joint_axis",
    "parse_param_name",
]

FULL_PARAMTPL = ["d_px", "d_py", "d_pz", "d_phix", "d_phiy", "d_phiz"]
JOINT_OFFSETTPL = ["offsetPX", "offsetPY", "offsetPZ", "offsetRX", "offsetRY", "offsetRZ"]
ELAS_TPL = ["k_PX", "k_PY", "k_PZ", "k_RX", "k_RY", "k_RZ"]
EE_TPL = ["pEEx", "pEEy", "pEEz", "phiEEx", "phiEEy", "phiEEz"]
BASE_TPL = ["base_px", "base_py", "base_pz", "base_phix", "base_phiy", "base_phiz"]

#: Axis codes in slot order: slot ``i`` of a 6-vector ``[x, y, z, φx, φy, φz]``.
AXES = ("PX", "PY", "PZ", "RX", "RY", "RZ")


@dataclass(frozen=True)
class ParsedParam:
    """Role of one calibration parameter name.

    Attributes:
        kind: ``"base"``, ``"tip"``, ``"full"`` (joint placement ``d_*``),
            ``"offset"`` (joint offset), ``"elastic"`` (``k_*``).
        slot: Component 0…5 of ``[x, y, z, φx, φy, φz]``.
        joint: Joint name (joint kinds), else ``""``.
        marker: 0-based marker index (tip kind), else -1.
    """

    kind: str
    slot: int
    joint: str = ""
    marker: int = -1


def _short_axis(shortname: str, model_name: str = "") -> str | None:
    """Axis code of a Pinocchio joint short name (``JointModelRZ`` → ``RZ``)."""
    core = shortname.replace("JointModel", "")
    if core in AXES:
        return core
    if core in ("RUBX", "RUBY", "RUBZ"):  # unbounded revolute (continuous joint)
        return "R" + core[-1]
    if core == "RevoluteUnaligned" and model_name == "canopies":
        return "RZ"
    return None


def joint_axis(model: Any, joint_id: int) -> str | None:
    """Axis code (``"PX"`` … ``"RZ"``) of an axis-aligned 1-DoF joint, else None.

    Args:
        model: ``pinocchio.Model``.
        joint_id: Joint index (≥ 1).
    """
    return _short_axis(model.joints[joint_id].shortname(), getattr(model, "name", ""))


def elastic_axis(model: Any, joint_id: int) -> str:
    """Axis code of the elastic parameter of a joint.

    The first of ``PX, PY, PZ, RX, RY, RZ`` contained in the joint short
    name; ``RevoluteUnaligned`` and anything else fall back to ``RZ``
    (figaroh 1.0.2 rule).
    """
    short = model.joints[joint_id].shortname()
    ax = _short_axis(short, getattr(model, "name", ""))
    if ax is not None:
        return ax
    for cand in AXES:
        if cand in short:
            return cand
    return "RZ"


def get_fullparam_offset(joint_names: Sequence[str]) -> OrderedDict[str, float]:
    """Six placement-error names per joint, in the given joint order, all 0.

    Args:
        joint_names: Joint names.

    Returns:
        Ordered dict ``d_px_<j> … d_phiz_<j>`` → 0.0 [m, rad].
    """
    out: OrderedDict[str, float] = OrderedDict()
    for j in joint_names:
        for tpl in FULL_PARAMTPL:
            out[f"{tpl}_{j}"] = 0.0
    return out


def get_joint_offset(
    model: Any, joint_names: Sequence[str] | None = None
) -> OrderedDict[str, float]:
    """Joint-offset names of **every** model joint (``model.names[1:]``), all 0.

    ``joint_names`` is ignored (figaroh 1.0.2 signature). The axis part comes from
    the joint short name with ``JointModel`` replaced by ``offset``
    (``JointModelRZ`` → ``offsetRZ``); a joint with ``nv > 1`` gets one name
    per DoF, the i-th (i ≥ 1) with ``i+1`` appended to the axis part. A model
    named ``canopies`` maps ``RevoluteUnaligned`` to ``RZ``.

    Args:
        model: ``pinocchio.Model``.
        joint_names: Ignored.

    Returns:
        Ordered dict name → 0.0 [m or rad].
    """
    del joint_names
    out: OrderedDict[str, float] = OrderedDict()
    canopies = getattr(model, "name", "") == "canopies"
    for jid in range(1, model.njoints):
        joint = model.joints[jid]
        short = joint.shortname()
        if canopies and short == "JointModelRevoluteUnaligned":
            short = "JointModelRZ"
        if short in ("JointModelRUBX", "JointModelRUBY", "JointModelRUBZ"):
            short = "JointModelR" + short[-1]
        axis = short.replace("JointModel", "offset")
        name = model.names[jid]
        for i in range(joint.nv):
            suffix = "" if i == 0 else str(i + 1)
            out[f"{axis}{suffix}_{name}"] = 0.0
    return out


def get_elastic_names(model: Any, joint_ids: Sequence[int]) -> List[str]:
    """``k_<AXIS>_<joint>`` for each joint id (one per active joint)."""
    return [f"k_{elastic_axis(model, j)}_{model.names[j]}" for j in joint_ids]


def add_base_name(calib_config: MutableMapping[str, Any]) -> List[str]:
    """Insert the six base-frame names into ``param_name``.

    ``full_params``: **overwrites** ``param_name[0:6]`` with :data:`BASE_TPL`
    (the first six structural representatives — the placement of the first
    chain joint — are re-interpreted as the base frame). ``joint_offset``:
    prepends :data:`BASE_TPL` and shifts ``base_mapping_slice`` by 6.
    Upstream quirk kept: with ``non_geom`` at ``full_params`` the overwritten
    entries are the elastic names.

    Returns:
        The new ``param_name`` list.
    """
    names = list(calib_config.get("param_name", []))
    if calib_config.get("calib_model", "full_params") == "full_params":
        if len(names) < 6:
            raise ValueError(
                f"add_base_name: param_name has {len(names)} entries; at full_params the "
                "first six structural parameters are renamed to the base frame"
            )
        names[0:6] = list(BASE_TPL)
    else:
        names = list(BASE_TPL) + names
        sl = calib_config.get("base_mapping_slice")
        if sl is not None:
            calib_config["base_mapping_slice"] = (int(sl[0]) + 6, int(sl[1]) + 6)
    calib_config["param_name"] = names
    return names


def add_pee_name(calib_config: MutableMapping[str, Any]) -> List[str]:
    """Append ``<EE_TPL>_<k>`` for every marker ``k`` and measured component.

    Returns:
        The new ``param_name`` list.
    """
    names = list(calib_config.get("param_name", []))
    meas = list(calib_config.get("measurability", [True, True, True, False, False, False]))
    for k in range(1, int(calib_config.get("NbMarkers", 1)) + 1):
        for j, tpl in enumerate(EE_TPL):
            if meas[j]:
                names.append(f"{tpl}_{k}")
    calib_config["param_name"] = names
    return names


def add_eemarker_frame(frame_name: str, p: ArrayLike, rpy: ArrayLike, model: Any, data: Any) -> int:
    """Add a marker frame rigidly attached to an existing frame of the model.

    The new operational frame ``<frame_name>_marker`` hangs on the joint of
    ``frame_name`` with placement ``placement(frame_name) · SE3(rpy(rpy), p)``,
    i.e. ``p`` [m] and ``rpy`` [rad] are expressed in ``frame_name``. Adding a
    frame to an existing name is refused rather than shadowing it.

    ``data`` is not resized by Pinocchio: create a new one with
    ``model.createData()`` before using the frame.

    Args:
        frame_name: Existing frame the marker is fixed to (e.g. the tool frame).
        p: Marker position in ``frame_name`` [m].
        rpy: Marker orientation in ``frame_name`` (roll, pitch, yaw) [rad].
        model: ``pinocchio.Model`` (modified: one frame is added).
        data: The model's current data (kept for call compatibility).

    Returns:
        Id of the new frame.

    Raises:
        ValueError: unknown ``frame_name``, the marker frame already exists,
            or ``p`` / ``rpy`` do not have 3 values.
    """
    import numpy as np
    import pinocchio as pin

    del data
    p = np.asarray(p, dtype=float).ravel()
    rpy = np.asarray(rpy, dtype=float).ravel()
    if p.size != 3 or rpy.size != 3:
        raise ValueError(f"add_eemarker_frame: p and rpy need 3 values each, got {p}, {rpy}")
    if not model.existFrame(frame_name):
        raise ValueError(f"add_eemarker_frame: frame {frame_name!r} is not in model {model.name!r}")
    marker = f"{frame_name}_marker"
    if model.existFrame(marker):
        raise ValueError(f"add_eemarker_frame: frame {marker!r} already exists")
    fid = model.getFrameId(frame_name)
    parent = model.frames[fid]
    placement = parent.placement * pin.SE3(pin.rpy.rpyToMatrix(rpy), p)
    frame = pin.Frame(marker, parent.parentJoint, fid, placement, pin.FrameType.OP_FRAME)
    return int(model.addFrame(frame))


def _joint_names_set(model: Any) -> Dict[str, int]:
    return {str(model.names[j]): j for j in range(1, model.njoints)}


def parse_param_name(
    name: str, model: Any, n_markers: int | None = None, joints: Mapping[str, int] | None = None
) -> ParsedParam:
    """Role of a calibration parameter name.

    Args:
        name: Parameter name.
        model: ``pinocchio.Model`` (joint names).
        n_markers: Number of markers (tip names above it are refused).
        joints: Optional precomputed ``{joint name: id}``.

    Returns:
        The :class:`ParsedParam`.

    Raises:
        ValueError: the name matches no template, names an unknown joint or
            marker (message lists the accepted forms).
    """
    joints = joints if joints is not None else _joint_names_set(model)
    if name in BASE_TPL:
        return ParsedParam("base", BASE_TPL.index(name))
    for slot, tpl in enumerate(EE_TPL):
        prefix = tpl + "_"
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            k = int(name[len(prefix) :])
            if k < 1 or (n_markers is not None and k > n_markers):
                raise ValueError(
                    f"parameter {name!r}: marker {k} does not exist (NbMarkers={n_markers})"
                )
            return ParsedParam("tip", slot, marker=k - 1)
    for kind, tpls in (("full", FULL_PARAMTPL), ("offset", JOINT_OFFSETTPL), ("elastic", ELAS_TPL)):
        for slot, tpl in enumerate(tpls):
            prefix = tpl + "_"
            if name.startswith(prefix):
                joint = name[len(prefix) :]
                if joint in joints:
                    return ParsedParam(kind, slot, joint=joint)
                raise ValueError(
                    f"parameter {name!r}: {joint!r} is not a joint of model "
                    f"{getattr(model, 'name', '')!r}"
                )
    raise ValueError(
        f"unknown calibration parameter {name!r}; accepted forms: base_px…base_phiz, "
        "pEEx_<k>…phiEEz_<k>, d_px_<joint>…d_phiz_<joint>, offsetPX_<joint>…offsetRZ_<joint>, "
        "k_PX_<joint>…k_RZ_<joint>"
    )
