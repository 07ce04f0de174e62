"""URDF exporter for identified/calibrated robot parameters.

Reads a nominal URDF and produces a modified URDF by applying parameter
overlays. Parameter names encode the semantics: ``d_px_joint2`` is additive
(geometric offset), ``m_joint1`` is absolute (mass override).

This is used after identification or calibration to materialise results into
a tangible URDF file for downstream use (simulation, visualisation,
model-based control).

Two parameter categories
------------------------

**Joint-level parameters** (auto-applied to the URDF):

- Joint placement (additive): ``d_px_{joint}``, ``d_py_{joint}``,
  ``d_pz_{joint}`` [m], ``d_phix_{joint}``, ``d_phiy_{joint}``,
  ``d_phiz_{joint}`` [rad]. The reloaded joint origin equals
  ``origin · SE3(exp3(d_phi), d_p)`` (translation in the joint frame,
  rotation vector) — the convention of the calibration forward model.
- Joint offset / calibration (additive): ``offsetPX_{joint}`` …
  ``offsetPZ_{joint}`` [m], ``offsetRX_{joint}`` … ``offsetRZ_{joint}``
  [rad]: the origin becomes ``origin · SE3(rpy(o_R), o_P)`` (for a revolute-z
  joint ``offsetRZ = d`` equals evaluating at ``q + d``);
  ``offsetRevoluteUnaligned_{joint}`` / ``offsetPrismaticUnaligned_{joint}``
  rotate about / translate along the URDF ``<axis>``. Placement is applied
  before the offset.
- Joint terms (absolute), one per row of
  :data:`figaroh.tools.joint_terms.JOINT_TERMS`, each written to its
  ``urdf_element``/``urdf_attribute``: ``fv_{joint}`` → ``<dynamics damping>``
  [N·m·s/rad], ``fs_{joint}`` → ``<dynamics friction>`` [N·m], ``Ia_{joint}``
  → ``<dynamics armature>`` [kg·m²] and the legacy offset ``off_{joint}`` →
  ``<calibration rising>``. Pinocchio's URDF parser reads ``damping`` and
  ``friction`` into ``model.damping`` / ``model.friction``; URDF has no
  armature field, so ``armature`` is an extension attribute that urdfdom,
  Pinocchio and MuJoCo's URDF import ignore (read it back with
  :func:`read_joint_dynamics` and set ``model.armature``).
  :func:`joint_term_parameters` picks these entries out of an identified
  standard-parameter dictionary (see *Joint-side convention* below).
- Mass (absolute): ``m_{target}`` [kg].
- First moments (absolute): ``mx_{target}``, ``my_{target}``, ``mz_{target}`` [kg·m].
- Inertia tensor (absolute): ``Ixx_{target}``, ``Ixy_{target}``, …,
  ``Izz_{target}`` [kg·m²], **about the frame origin** (identification
  convention, Pinocchio order ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``).
- Joint elasticity (additive): ``k_PX_{joint}``, …, ``k_RZ_{joint}`` →
  ``<dynamics elasticity_<AXIS>>`` (extension attribute).

Inertial targets: ``{target}`` is a **joint** name — the parameters then
describe that joint's Pinocchio body, expressed in the joint frame (the child
link frame), i.e. the child link plus every link attached to it by fixed
joints — or a **link** name (that link alone, in its own frame). A joint whose
body holds fixed-attached links with non-zero inertia is refused by default
(``merged_bodies="refuse"``); ``"subtract_fixed"`` writes the identified body
minus the nominal inertias of the fixed links into the child link. URDF
inertials are about the centre of mass: the exporter writes
``c = h/m``, ``I_C = I_O − m((cᵀc)E − ccᵀ)`` (rotated into the nominal
inertial frame orientation). Links whose ten parameters equal the nominal
ones (to 1e-12 relative) are left untouched, byte for byte.

**Metrology frame parameters** (user-defined, not auto-applied): ``base_px``
… ``base_phiz`` (metrology frame → robot base) and ``pEEx_{frame}`` …
``phiEEz_{frame}`` (last joint → measurement frame). They depend on the
calibration setup, not on the URDF; :func:`export_urdf` collects them
(``result.frame_params``) and logs a reminder — see :func:`frame_settings_doc`.

Joint-side convention
---------------------

URDF joint dynamics are **joint-side**: ``damping`` multiplies the joint
velocity ``dq`` [rad/s] and gives a joint effort [N·m], ``friction`` is a
joint effort [N·m], ``armature`` a joint-side (reflected) inertia [kg·m²].
figaroh identifies ``τ_j = … + fv_j·dq_j + fs_j·sign(dq_j) + Ia_j·ddq_j``
with ``q`` the model's joint coordinates and ``τ`` the efforts returned by
``process_torque_data`` — joint efforts: the rigid-body part of the same fit
is only right when they are (a robot subclass converts drive signals there,
e.g. ``τ = reduction_ratio · kmotor · effort``). The identified ``fv``,
``fs`` and ``Ia`` are therefore joint-side already and are written
unchanged; ``mechanics.reduction_ratios`` of the configuration is not applied
to them (it is read by such subclasses only). Motor-side values (rotor
inertia ``I_m``, motor viscous ``b_m`` and Coulomb ``c_m`` coefficients behind
a gear of ratio ``N``, motor turns per joint turn) reflect to the joint as
``Ia = N²·I_m``, ``fv = N²·b_m``, ``fs = |N|·c_m``:
:func:`joint_term_parameters` applies this with ``motor_side_ratios``. An
effort signal in another unit than [N·m] (e.g. a current) scales every
identified coefficient by the missing constant: convert the efforts before
identification.

The file is written atomically (temporary file, Pinocchio reload check, then
rename): on any error nothing is written. XML is produced with
:mod:`xml.etree.ElementTree` (comments kept), never by string concatenation.

Typical usage::

    from figaroh.tools.urdf_exporter import export_urdf, frame_settings_doc

    params = {"d_px_joint2": 0.05, "m_joint1": 2.5, "fv_joint1": 0.2}
    modified_path = export_urdf("robot.urdf", params, verbose=True)
    defaults = frame_settings_doc()
"""

from __future__ import annotations

import logging
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Sequence, Tuple, Union

import numpy as np

from . import joint_terms
from ._urdf_xml import (
    NominalURDF,
    OriginCorrection,
    URDFExportError,
    URDFNotFoundError,
    add_to_attribute,
    atomic_write_checked,
    correct_origin,
    fixed_descendants,
    joint_dynamics,
    link_mci,
    set_attribute,
    transform_mci,
    write_inertial,
)
from .inertia import (
    INERTIAL_KEYS,
    check_p10_feasibility,
    mass_com_inertia_from_p10,
    p10_from_mass_com_inertia,
)

if TYPE_CHECKING:  # annotations only
    import xml.etree.ElementTree as ET

logger = logging.getLogger(__name__)

__all__ = [
    "ExportedURDF",
    "URDFExportError",
    "URDFNotFoundError",
    "export_urdf",
    "frame_settings_doc",
    "is_kinematic_correction",
    "joint_term_parameters",
    "read_joint_dynamics",
]

_AXES6 = ("PX", "PY", "PZ", "RX", "RY", "RZ")
_PLACEMENT = ("px", "py", "pz", "phix", "phiy", "phiz")
_MERGED_MODES = ("refuse", "subtract_fixed")
_UNCHANGED_RTOL = 1e-12

#: (name, category, index, description) of the metrology-frame parameters.
_METROLOGY_REGISTRY: Tuple[Tuple[str, str, int, str], ...] = (
    ("base_px", "base", 0, "metrology frame → base_link, x translation [m]"),
    ("base_py", "base", 1, "metrology frame → base_link, y translation [m]"),
    ("base_pz", "base", 2, "metrology frame → base_link, z translation [m]"),
    ("base_phix", "base", 3, "metrology frame → base_link, roll [rad]"),
    ("base_phiy", "base", 4, "metrology frame → base_link, pitch [rad]"),
    ("base_phiz", "base", 5, "metrology frame → base_link, yaw [rad]"),
    ("pEEx", "ee", 0, "last joint → measurement frame, x translation [m]"),
    ("pEEy", "ee", 1, "last joint → measurement frame, y translation [m]"),
    ("pEEz", "ee", 2, "last joint → measurement frame, z translation [m]"),
    ("phiEEx", "ee", 3, "last joint → measurement frame, roll [rad]"),
    ("phiEEy", "ee", 4, "last joint → measurement frame, pitch [rad]"),
    ("phiEEz", "ee", 5, "last joint → measurement frame, yaw [rad]"),
)

_FRAME_PARAM_DESCRIPTIONS = {
    "base": "the transform from the metrology frame (mocap world, camera, ...) to base_link",
    "ee": "the transform from the last robot joint to the measurement frame "
    "(marker cluster, camera optical frame, chessboard)",
}

_JOINT_PATTERNS: Tuple[Tuple[str, re.Pattern[str], bool], ...] = (
    ("joint_placement", re.compile(r"^d_(px|py|pz|phix|phiy|phiz)_(.+)$"), True),
    ("joint_offset", re.compile(r"^offset(PX|PY|PZ|RX|RY|RZ)_(.+)$"), True),
    (
        "joint_offset_axis",
        re.compile(r"^offset(RevoluteUnaligned|PrismaticUnaligned)_(.+)$"),
        True,
    ),
    ("elasticity", re.compile(r"^k_(PX|PY|PZ|RX|RY|RZ)_(.+)$"), True),
    ("mass", re.compile(r"^m_(.+)$"), False),
    ("first_moment", re.compile(r"^(mx|my|mz)_(.+)$"), False),
    ("inertia", re.compile(r"^(Ixx|Ixy|Iyy|Ixz|Iyz|Izz)_(.+)$"), False),
)
#: Category of the joint-term names (``fv_*``, ``fs_*``, ``Ia_*``, ``off_*``, ...).
_JOINT_TERM = "joint_term"
_INERTIAL_CATEGORIES = ("mass", "first_moment", "inertia")
_BASE_FRAME = re.compile(r"^base_(px|py|pz|phix|phiy|phiz)$")
_EE_FRAME = re.compile(r"^(pEEx|pEEy|pEEz|phiEEx|phiEEy|phiEEz)(?:_(.+))?$")


class ExportedURDF(str):
    """Path of the written URDF (a ``str``) carrying export metadata.

    Attributes:
        frame_params: Metrology-frame parameters that were collected but not
            applied (``{name: value}``).
        applied: Names of the parameters written into the URDF.
        unchanged_links: Inertial targets left untouched (equal to nominal).
    """

    frame_params: Dict[str, float]
    applied: List[str]
    unchanged_links: List[str]

    def __new__(cls, path: str, frame_params=None, applied=None, unchanged_links=None):
        obj = super().__new__(cls, path)
        obj.frame_params = dict(frame_params or {})
        obj.applied = list(applied or [])
        obj.unchanged_links = list(unchanged_links or [])
        return obj


# ---------------------------------------------------------------------------
# Name parsing
# ---------------------------------------------------------------------------
def _parse_param_name(name: str) -> Tuple[str, str, Any, bool] | None:
    """``(category, target, idx, is_additive)`` of a joint-level name, or None.

    ``idx`` is the axis/slot index (placement 0–5, offset/elasticity axis
    0–5), the key (``mx``…, ``Ixx``…), the
    :class:`~figaroh.tools.joint_terms.JointTerm` row of a joint term
    (category ``"joint_term"``) or None.
    """
    found = joint_terms.term_for_parameter(name)
    if found is not None:
        row, target = found
        return _JOINT_TERM, target, row, False
    for category, pattern, additive in _JOINT_PATTERNS:
        m = pattern.match(name)
        if m is None:
            continue
        groups = m.groups()
        if len(groups) == 1:
            return category, groups[0], None, additive
        key, target = groups
        if category == "joint_placement":
            idx: Any = _PLACEMENT.index(key)
        elif category in ("joint_offset", "elasticity"):
            idx = _AXES6.index(key)
        else:
            idx = key
        return category, target, idx, additive
    return None


def _parse_frame_param_name(name: str) -> Tuple[str, str | None, int] | None:
    """``(category, target, idx)`` of a metrology-frame name (``base``/``ee``), or None."""
    m = _BASE_FRAME.match(name)
    if m:
        return "base", None, _PLACEMENT.index(m.group(1))
    m = _EE_FRAME.match(name)
    if m:
        keys = ("pEEx", "pEEy", "pEEz", "phiEEx", "phiEEy", "phiEEz")
        return "ee", m.group(2), keys.index(m.group(1))
    return None


def is_kinematic_correction(name: str, joint_names: List[str] | None = None) -> bool:
    """True for names the exporter writes into joint origins (``d_p*``, ``d_phi*``, ``offset*``).

    Args:
        name: Parameter name.
        joint_names: Optional model joint names; when given, the target must
            be one of them.
    """
    parsed = _parse_param_name(str(name))
    if parsed is None or parsed[0] not in ("joint_placement", "joint_offset", "joint_offset_axis"):
        return False
    return joint_names is None or parsed[1] in set(joint_names)


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------
def frame_settings_doc(*, calibration_type: str | None = None, verbose: bool = True) -> dict:
    """Return default metrology-frame parameter values with explanations.

    These parameters define the transformation between the robot and the
    external measurement system. They are **not** intrinsic to the URDF and
    must be configured by the user for each calibration setup.

    Args:
        calibration_type: Optional hint for context-specific defaults:
            ``"mocap"`` (EE frame on ``arm_7_link``), ``"eye_hand"``
            (``head_2_link``) or ``None`` (generic: base-frame entries only).
        verbose: If True (default), prints descriptions to stderr.

    Returns:
        dict with default (identity) values: the six ``base_*`` entries and,
        for a calibration type, the six ``pEE*/phiEE*_<frame>`` entries, e.g.
        ``{"base_px": 0.0, …, "pEEx_arm_7_link": 0.0, …}``.

    Raises:
        URDFExportError: unknown ``calibration_type`` (a ``ValueError``).
    """
    targets = {"mocap": "arm_7_link", "eye_hand": "head_2_link", None: None}
    if calibration_type not in targets:
        raise URDFExportError(
            f"calibration_type must be 'mocap', 'eye_hand' or None, got {calibration_type!r}"
        )
    target = targets[calibration_type]
    defaults: dict = {}
    for name, cat, _, _ in _METROLOGY_REGISTRY:
        if cat == "base":
            defaults[name] = 0.0
        elif target is not None:
            defaults[f"{name}_{target}"] = 0.0
    if verbose:
        if calibration_type == "mocap":
            note = (
                "Mocap calibration: EE measurement frame is the optical marker "
                "cluster attached to the end-effector (e.g. arm_7_link)."
            )
        elif calibration_type == "eye_hand":
            note = (
                "Eye-hand calibration: EE measurement frame is the camera optical "
                "frame (relative to head_2_link) or the chessboard attached to the gripper."
            )
        else:
            note = (
                "EE measurement frame: typically a marker cluster, camera optical frame, "
                "or chessboard attached to the end-effector (pEEx_<frame_name>, ...)."
            )
        lines = ["Metrology frame defaults (see frame_settings_doc()):"]
        lines += [f"  {name:<10s} {desc}" for name, _, _, desc in _METROLOGY_REGISTRY]
        lines += [
            "  Base frame : metrology origin -> robot base_link, default identity",
            "  EE frame   : last joint -> measurement frame, default identity",
            f"  {note}",
            "  They are never written into the URDF: configure them in your controller "
            "or calibration pipeline.",
        ]
        sys.stderr.write("\n".join(lines) + "\n")
    return defaults


def export_urdf(
    nominal_urdf_path: Union[str, Path],
    params: Mapping[str, Any],
    *,
    output_path: Union[str, Path] | None = None,
    verbose: bool = False,
    allow_infeasible: bool = False,
    merged_bodies: str = "refuse",
    psd_eig_tol: float | None = -1e-10,
) -> str:
    """Apply identified/calibrated **joint-level** parameters to a nominal URDF.

    This function auto-applies parameters that modify the URDF directly
    (joint placements, mass, inertias, friction, etc. — see the module
    docstring). It does **not** apply metrology frame parameters
    (``base_*``, ``pEE*``, ``phiEE*``); those depend on the calibration setup
    and must be configured by the user — see :func:`frame_settings_doc`.

    Args:
        nominal_urdf_path: Path to the nominal (reference) URDF file.
        params: ``{parameter_name: value}``. **Joint-level params** are
            applied; **metrology frame params** are logged and collected in
            the returned object's ``frame_params`` but not applied.
        output_path: Path for the modified URDF; default
            ``<stem>_modified.urdf`` beside the nominal URDF. Must differ from
            the nominal file.
        verbose: If True, log which params were applied.
        allow_infeasible: Write link inertials that fail the
            physical-consistency check (pseudo-inertia eigenvalue below
            ``psd_eig_tol``) with a warning instead of refusing them — e.g. to
            inspect a raw least-squares estimate in a simulator. A negative
            mass is refused regardless (a URDF cannot hold it).
        merged_bodies: ``"refuse"`` (default) or ``"subtract_fixed"`` for
            inertial parameters of a joint whose body also holds links
            attached by fixed joints with non-zero inertia.
        psd_eig_tol: Every link inertial written must have a pseudo-inertia
            whose smallest eigenvalue is ≥ this [kg·m²] (physical
            consistency), unless ``allow_infeasible``; None disables the check
            (a negative mass is refused regardless).

    Returns:
        Absolute path of the modified URDF (an :class:`ExportedURDF`, a
        ``str`` with ``frame_params``, ``applied`` and ``unchanged_links``).

    Raises:
        URDFNotFoundError: *nominal_urdf_path* does not exist (a
            ``FileNotFoundError``).
        URDFExportError: (a ``ValueError``) Unknown parameter names or
            targets, non-finite values, a refused merged body, a physically
            inconsistent inertial, a malformed nominal URDF, or a result
            Pinocchio cannot load. Nothing is written then.
    """
    nominal_path, output = _checked_paths(nominal_urdf_path, output_path, params, merged_bodies)
    joint_params, frame_params = _classify_params(params)
    nominal = NominalURDF.parse(nominal_path)
    _check_targets(nominal, joint_params)
    options = _InertialOptions(merged_bodies, psd_eig_tol, allow_infeasible)
    applied: List[str] = []
    unchanged: List[str] = []
    for target, entries in joint_params.items():
        applied += [e[0] for e in entries if e[1] not in _INERTIAL_CATEGORIES]
        if _apply_target(nominal, target, entries, options):
            applied += [e[0] for e in entries if e[1] in _INERTIAL_CATEGORIES]
        else:
            unchanged.append(target)
        if verbose:
            _log_entries(target, entries)
    atomic_write_checked(output, nominal.serialise())
    if frame_params:
        logger.info(
            "The following metrology frame parameters were not applied to the URDF: %s. "
            "Use frame_settings_doc() to review defaults.",
            ", ".join(f"{k}={v:.6g}" for k, v in frame_params.items()),
        )
    logger.info("Modified URDF written to %s (%d parameters applied)", output, len(applied))
    return ExportedURDF(str(output.resolve()), frame_params, applied, unchanged)


def joint_term_parameters(
    parameters: Mapping[str, Any],
    joints: Sequence[str],
    *,
    prefixes: Sequence[str] | None = None,
    motor_side_ratios: Mapping[str, float] | None = None,
) -> Dict[str, float]:
    """The joint-dynamics entries ``{<prefix>_<joint>: value}`` to export.

    Picks the viscous friction ``fv_<joint>`` [N·m·s/rad], Coulomb friction
    ``fs_<joint>`` [N·m] and actuator inertia ``Ia_<joint>`` [kg·m²] of the
    given joints out of an identified standard-parameter dictionary (e.g.
    ``BaseIdentification.selected.parameter_dict()``), ready for
    :func:`export_urdf`. Entries absent from ``parameters`` (a term that was
    not identified) are skipped, so the nominal URDF value stays.

    Identified values are joint-side (see the module's *Joint-side
    convention*) and are returned unchanged. With ``motor_side_ratios`` the
    values are taken as motor-side and reflected through the gear ratio
    ``N`` of each joint, ``|N|^k`` with ``k`` the row's ``gear_power``:
    ``fv = N²·b_m``, ``fs = |N|·c_m``, ``Ia = N²·I_m``.

    Args:
        parameters: ``{name: value}``, e.g. the standard parameters.
        joints: Joints whose terms are exported, e.g. the active joints
            (a non-identified joint's entries hold configuration nominals).
        prefixes: Joint-term prefixes to export (rows of
            :data:`figaroh.tools.joint_terms.JOINT_TERMS`); None (default):
            the rows marked ``exported`` (:func:`~figaroh.tools.joint_terms.exported_prefixes`:
            ``("fv", "fs", "Ia")``, the effort offset ``off`` is left out).
        motor_side_ratios: ``{joint: N}`` (motor turns per joint turn) when
            the values are motor-side; None (default) when they are
            joint-side, as figaroh identifies them.

    Returns:
        ``{<prefix>_<joint>: joint-side value}``; a negative value (not
        physical; a simulator may become unstable) is kept and logged as a
        warning.

    Raises:
        URDFExportError: An unknown prefix, a non-finite value, or a joint
            missing from ``motor_side_ratios`` (a ``ValueError``).
    """
    if prefixes is None:
        prefixes = joint_terms.exported_prefixes()
    known = [t.prefix for t in joint_terms.JOINT_TERMS]
    unknown = [p for p in prefixes if p not in known]
    if unknown:
        raise URDFExportError(f"prefixes {unknown} are not joint terms; choose among {known}")
    ratios = dict(motor_side_ratios) if motor_side_ratios is not None else None
    out: Dict[str, float] = {}
    for joint in joints:
        for prefix in prefixes:
            name = f"{prefix}_{joint}"
            if name not in parameters:
                continue
            value = _finite_value(name, parameters[name])
            if ratios is not None:
                value *= _reflection(ratios, joint, prefix)
            if value < 0:
                logger.warning(
                    "%s = %.6g is negative (not physical): written as identified", name, value
                )
            out[name] = value
    return out


def _reflection(ratios: Mapping[str, float], joint: str, prefix: str) -> float:
    """``|N|^k`` reflecting a motor-side term of ``joint`` to the joint side."""
    if joint not in ratios:
        raise URDFExportError(
            f"motor_side_ratios has no gear ratio for joint {joint!r}; give one per "
            "exported joint (motor turns per joint turn)"
        )
    ratio = _finite_value(f"motor_side_ratios[{joint!r}]", ratios[joint])
    return abs(ratio) ** joint_terms.term(prefix).gear_power


def read_joint_dynamics(urdf_path: Union[str, Path]) -> Dict[str, Dict[str, float]]:
    """Every numeric ``<dynamics>`` attribute of each joint of a URDF.

    Reads back what :func:`export_urdf` wrote, including the ``armature``
    extension attribute [kg·m²] that URDF parsers ignore; to use it in
    Pinocchio::

        model = pin.buildModelFromUrdf(path)
        for joint, dyn in read_joint_dynamics(path).items():
            if "armature" in dyn and model.existJointName(joint):
                model.armature[model.joints[model.getJointId(joint)].idx_v] = dyn["armature"]

    Args:
        urdf_path: URDF file.

    Returns:
        ``{joint: {attribute: value}}`` for the joints that have a
        ``<dynamics>`` element (e.g. ``{"damping": 8.0, "friction": 6.0}``).

    Raises:
        URDFNotFoundError: ``urdf_path`` does not exist (a ``FileNotFoundError``).
        URDFExportError: Not a URDF, or a non-numeric ``<dynamics>`` attribute
            (a ``ValueError``).
    """
    nominal = NominalURDF.parse(_existing(Path(urdf_path)))
    out: Dict[str, Dict[str, float]] = {}
    for name, joint in nominal.joints.items():
        dyn = joint_dynamics(joint)
        if dyn is not None:
            out[name] = dyn
    return out


# ---------------------------------------------------------------------------
# Export steps
# ---------------------------------------------------------------------------
#: ``(name, category, idx, is_additive, value)`` of one joint-level parameter.
_Entry = Tuple[str, str, Any, bool, float]


def _checked_paths(
    nominal_urdf_path: Union[str, Path],
    output_path: Union[str, Path] | None,
    params: Any,
    merged_bodies: str,
) -> Tuple[Path, Path]:
    """Validated ``(nominal, output)`` paths (output default ``<stem>_modified.urdf``)."""
    nominal_path = _existing(Path(nominal_urdf_path))
    if merged_bodies not in _MERGED_MODES:
        raise URDFExportError(
            f"merged_bodies must be one of {_MERGED_MODES}, got {merged_bodies!r}"
        )
    if not isinstance(params, Mapping):
        raise URDFExportError(
            f"params must be a mapping name -> value, got {type(params).__name__}"
        )
    if output_path is None:
        output_path = nominal_path.with_name(nominal_path.stem + "_modified" + nominal_path.suffix)
    output = Path(output_path)
    if output.resolve() == nominal_path.resolve():
        raise URDFExportError(
            f"output_path {str(output)!r} is the nominal URDF itself; choose another file"
        )
    return nominal_path, output


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise URDFNotFoundError(f"URDF not found: {path} (check the path)")
    return path


def _finite_value(name: str, raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError) as exc:
        raise URDFExportError(f"parameter {name!r}: value {raw!r} is not a number") from exc
    if not math.isfinite(value):
        raise URDFExportError(f"parameter {name!r}: value {value} is not finite")
    return value


def _unknown_names_message(unknown: List[str]) -> str:
    terms = ", ".join(f"{t.prefix}_* ({t.label})" for t in joint_terms.JOINT_TERMS)
    return (
        f"Unknown parameter(s) {unknown[:8]}. Recognized joint-level categories: joint "
        "placement (d_px_*, …, d_phiz_*), joint offset (offsetPX_* … offsetRZ_*), mass (m_*), "
        "first moments (mx_*, my_*, mz_*), inertia (Ixx_* … Izz_*), elasticity (k_PX_* … "
        f"k_RZ_*), joint terms {terms}. Metrology frame params: base_*, pEE*, phiEE*."
    )


def _classify_params(
    params: Mapping[str, Any],
) -> Tuple[Dict[str, List[_Entry]], Dict[str, float]]:
    """``({target: entries}, frame_params)``; unknown names or bad values raise URDFExportError."""
    joint_params: Dict[str, List[_Entry]] = {}
    frame_params: Dict[str, float] = {}
    unknown: List[str] = []
    for name, raw in params.items():
        name = str(name)
        value = _finite_value(name, raw)
        parsed = _parse_param_name(name)
        if parsed is not None:
            category, target, idx, additive = parsed
            joint_params.setdefault(target, []).append((name, category, idx, additive, value))
            continue
        frame = _parse_frame_param_name(name)
        if frame is None:
            unknown.append(name)
            continue
        frame_params[name] = value
        logger.info(
            "Metrology frame param '%s' = %.6g — not auto-applied to the URDF. This "
            "defines %s. See frame_settings_doc() for defaults and explanations.",
            name,
            value,
            _FRAME_PARAM_DESCRIPTIONS[frame[0]],
        )
    if unknown:
        raise URDFExportError(_unknown_names_message(unknown))
    return joint_params, frame_params


def _check_targets(nominal: NominalURDF, joint_params: Mapping[str, List[_Entry]]) -> None:
    """Every target names a joint (or, for inertial parameters, a joint or a link)."""
    bad = []
    for target, entries in joint_params.items():
        for name, category, *_ in entries:
            if category in _INERTIAL_CATEGORIES:
                if target not in nominal.joints and target not in nominal.links:
                    bad.append(f"{name} (no joint or link {target!r})")
            elif target not in nominal.joints:
                bad.append(f"{name} (no joint {target!r})")
    if bad:
        raise URDFExportError(f"parameters name targets absent from {nominal.path.name}: {bad[:8]}")


@dataclass(frozen=True)
class _InertialOptions:
    """How inertial parameters are written (see :func:`export_urdf`)."""

    merged_bodies: str
    psd_eig_tol: float | None
    allow_infeasible: bool


def _apply_target(
    nominal: NominalURDF, target: str, entries: List[_Entry], options: _InertialOptions
) -> bool:
    """Apply one target's entries; False when its inertial parameters equal the nominal ones."""
    other = [e for e in entries if e[1] not in _INERTIAL_CATEGORIES]
    inertial = [e for e in entries if e[1] in _INERTIAL_CATEGORIES]
    if other:
        _apply_joint_entries(nominal.joints[target], other)
    if not inertial:
        return True
    return _apply_inertial_entries(nominal, target, inertial, options)


def _log_entries(target: str, entries: List[_Entry]) -> None:
    for name, category, idx, additive, value in entries:
        what = idx.label if category == _JOINT_TERM else category
        logger.info(
            "%s → %s %s (%s, %.6g)",
            name,
            target,
            what,
            "additive" if additive else "absolute",
            value,
        )


_ORIGIN_CATEGORIES = ("joint_placement", "joint_offset", "joint_offset_axis")


def _apply_joint_entries(joint: ET.Element, entries: List[_Entry]) -> None:
    """Placement, offsets, joint terms (friction, armature, legacy offset) and elasticity."""
    correction = OriginCorrection.empty()
    for name, category, idx, _additive, value in entries:
        if category in _ORIGIN_CATEGORIES:
            correction.add(category, idx, value)
        elif category == _JOINT_TERM:
            set_attribute(joint, idx.urdf_element, idx.urdf_attribute, value)
        elif category == "elasticity":
            add_to_attribute(joint, "dynamics", f"elasticity_{_AXES6[idx]}", value)
        else:  # pragma: no cover - guarded by the caller
            raise URDFExportError(f"{name}: unsupported category {category}")
    if correction.any():
        correct_origin(joint, correction)


def _body_p10(
    nominal: NominalURDF, target: str
) -> Tuple[str, np.ndarray, List[Tuple[str, np.ndarray]]]:
    """``(link name, own p10, [(fixed link, p10 in the link frame)])`` of a target."""
    is_joint = target in nominal.joints
    link_name = nominal.child_link(target) if is_joint else target
    own = p10_from_mass_com_inertia(*link_mci(nominal.links[link_name]))
    merged: List[Tuple[str, np.ndarray]] = []
    if is_joint:
        for name, R, t in fixed_descendants(link_name, nominal.children_of):
            if name not in nominal.links:
                continue
            m, c, Ic = link_mci(nominal.links[name])
            merged.append((name, p10_from_mass_com_inertia(*transform_mci(m, c, Ic, R, t))))
    return link_name, own, merged


def _check_consistency(new: np.ndarray, where: str, options: _InertialOptions) -> None:
    """Refuse (or warn about, with ``allow_infeasible``) a physically inconsistent p10."""
    if options.psd_eig_tol is None:
        return
    rep = check_p10_feasibility(new, mass_min=0.0, psd_eig_tol=float(options.psd_eig_tol))
    if rep.status == "feasible":
        return
    if not options.allow_infeasible:
        raise URDFExportError(
            f"{where}: inertial parameters are not physically consistent "
            f"({rep.message}); refusing to write them (pass allow_infeasible=True "
            "to write them anyway)"
        )
    logger.warning(
        "%s: writing physically inconsistent inertial parameters (%s) because "
        "allow_infeasible=True",
        where,
        rep.message,
    )


def _apply_inertial_entries(
    nominal: NominalURDF, target: str, entries: List[_Entry], options: _InertialOptions
) -> bool:
    """Write the inertial parameters of one target; returns False when unchanged."""
    link_name, own, merged = _body_p10(nominal, target)
    body = own + sum((p for _, p in merged), np.zeros(10))
    new = body.copy()
    for _name, category, idx, _additive, value in entries:
        key = "m" if category == "mass" else idx
        new[INERTIAL_KEYS.index(key)] = value
    scale = max(float(np.max(np.abs(body))), 1e-300)
    if np.all(np.abs(new - body) <= _UNCHANGED_RTOL * scale):
        return False
    is_joint = target in nominal.joints
    where = f"joint {target!r} (link {link_name!r})" if is_joint else f"link {target!r}"
    heavy = [n for n, p in merged if np.any(p != 0)]
    if heavy:
        if options.merged_bodies == "refuse":
            raise URDFExportError(
                f"{where}: its Pinocchio body also holds the fixed-attached links {heavy} "
                "with non-zero inertia, so the identified parameters describe their sum; pass "
                "merged_bodies='subtract_fixed' to write the identified body minus their nominal "
                f"inertias into {link_name!r}"
            )
        new = new - sum((p for n, p in merged), np.zeros(10))
        where += f" after subtracting the fixed-attached links {heavy}"
    _check_consistency(new, where, options)
    m, c, Ic = mass_com_inertia_from_p10(new, where)
    write_inertial(nominal.links[link_name], m, c, Ic)
    return True
