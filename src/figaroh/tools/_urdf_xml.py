"""Reading and writing URDF elements: origins, joint attributes, link inertials, the file.

The parsed document (:class:`NominalURDF`, modified in place), joint-origin
corrections (:class:`OriginCorrection`, :func:`correct_origin`), joint
attributes (:func:`set_attribute`, :func:`add_to_attribute`,
:func:`joint_dynamics`), link inertials, fixed sub-trees and the checked
atomic write.

Geometry follows the URDF conventions: an ``<origin xyz rpy>`` is the pose
``(R, t)`` with ``R = Rz(yaw)·Ry(pitch)·Rx(roll)`` [rad] and ``t`` [m]; a link
``<inertial>`` holds the mass [kg], the centre of mass (the inertial origin)
and the inertia tensor about the centre of mass [kg·m²] in the inertial
frame. Helpers of :mod:`figaroh.tools.urdf_exporter`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Tuple

import numpy as np
import pinocchio as pin

from figaroh.errors import FigarohError
from figaroh.utils.fileio import atomic_write, make_folder

if TYPE_CHECKING:  # annotations only; the parser is imported by the call that parses
    import xml.etree.ElementTree as ET


def _sub_element(parent: ET.Element, tag: str) -> ET.Element:
    """``ET.SubElement(parent, tag)``: a new empty ``<tag>`` appended to ``parent``.

    Built from ``parent`` itself, so this module needs no ElementTree import
    until a file is parsed.
    """
    element = parent.makeelement(tag, {})
    parent.append(element)
    return element


class URDFExportError(FigarohError, ValueError):
    """The URDF export refused its input or its result; nothing was written.

    Raised for unknown parameter names or targets, non-finite values, a
    malformed nominal URDF, physically inconsistent inertials and a result
    Pinocchio cannot load; the message names the parameter, element or file.
    """


class URDFNotFoundError(FigarohError, FileNotFoundError):
    """The URDF file to read does not exist (the message names the path)."""


def floats(text: str | None, n: int, what: str) -> np.ndarray:
    """The ``n`` numbers of a whitespace-separated attribute (zeros when absent).

    Raises:
        URDFExportError: Not ``n`` numbers; the message names ``what``.
    """
    if text is None:
        return np.zeros(n)
    try:
        vals = np.array([float(t) for t in text.split()], dtype=float)
    except ValueError as exc:
        raise URDFExportError(f"malformed {what} {text!r} in the nominal URDF") from exc
    if vals.shape != (n,):
        raise URDFExportError(f"{what} must hold {n} numbers, got {text!r}")
    return vals


def fmt(values: Any) -> str:
    """Numbers as a URDF attribute, each written with ``repr`` (round-trips exactly)."""
    return " ".join(repr(float(v)) for v in np.atleast_1d(values))


def rpy_matrix(rpy: np.ndarray) -> np.ndarray:
    """URDF convention ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_rpy(R: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw [rad] of a rotation matrix (inverse of :func:`rpy_matrix`)."""
    return np.asarray(pin.rpy.matrixToRpy(np.asarray(R, dtype=float)), dtype=float)


def exp3(v: np.ndarray) -> np.ndarray:
    """Rotation matrix of a rotation vector [rad] (SO(3) exponential)."""
    return np.asarray(pin.exp3(np.asarray(v, dtype=float)), dtype=float)


def origin_of(elem: ET.Element | None, what: str) -> Tuple[np.ndarray, np.ndarray]:
    """(R, t) of an ``<origin>`` child (identity when absent)."""
    o = None if elem is None else elem.find("origin")
    if o is None:
        return np.eye(3), np.zeros(3)
    xyz = floats(o.get("xyz"), 3, f"{what} origin xyz")
    rpy = floats(o.get("rpy"), 3, f"{what} origin rpy")
    return rpy_matrix(rpy), xyz


def link_mci(link: ET.Element) -> Tuple[float, np.ndarray, np.ndarray]:
    """(mass, CoM, inertia about the CoM) of a link in its own frame."""
    inertial = link.find("inertial")
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    what = f"link {link.get('name')!r} inertial"
    R, c = origin_of(inertial, what)
    mass_el = inertial.find("mass")
    m = float(floats(None if mass_el is None else mass_el.get("value"), 1, f"{what} mass")[0])
    ie = inertial.find("inertia")
    vals = {}
    for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        vals[key] = float(floats(None if ie is None else ie.get(key, "0"), 1, f"{what} {key}")[0])
    I = np.array(
        [
            [vals["ixx"], vals["ixy"], vals["ixz"]],
            [vals["ixy"], vals["iyy"], vals["iyz"]],
            [vals["ixz"], vals["iyz"], vals["izz"]],
        ]
    )
    return m, c, R @ I @ R.T


def transform_mci(
    m: float, c: np.ndarray, Ic: np.ndarray, R: np.ndarray, t: np.ndarray
) -> Tuple[float, np.ndarray, np.ndarray]:
    """(m, c, I_C) expressed in a parent frame where the link frame has pose (R, t)."""
    return m, R @ c + t, R @ Ic @ R.T


def write_inertial(link: ET.Element, m: float, c: np.ndarray, Ic: np.ndarray) -> None:
    """Write (m, c, I_C) into ``link``'s ``<inertial>``, keeping its orientation (rpy)."""
    inertial = link.find("inertial")
    if inertial is None:
        inertial = _sub_element(link, "inertial")
    origin = inertial.find("origin")
    if origin is None:
        origin = _sub_element(inertial, "origin")
        origin.set("rpy", "0 0 0")
    R = rpy_matrix(floats(origin.get("rpy"), 3, "inertial origin rpy"))
    I = R.T @ Ic @ R  # tensor in the inertial frame
    origin.set("xyz", fmt(c))
    if origin.get("rpy") is None:
        origin.set("rpy", "0 0 0")
    mass_el = inertial.find("mass")
    if mass_el is None:
        mass_el = _sub_element(inertial, "mass")
    mass_el.set("value", repr(float(m)))
    ie = inertial.find("inertia")
    if ie is None:
        ie = _sub_element(inertial, "inertia")
    for key, (r, col) in (
        ("ixx", (0, 0)),
        ("ixy", (0, 1)),
        ("ixz", (0, 2)),
        ("iyy", (1, 1)),
        ("iyz", (1, 2)),
        ("izz", (2, 2)),
    ):
        ie.set(key, repr(float(I[r, col])))


def fixed_descendants(
    link_name: str, children_of: Dict[str, List[ET.Element]]
) -> List[Tuple[str, np.ndarray, np.ndarray]]:
    """Links attached to ``link_name`` through fixed joints, with their pose (R, t) in its frame."""
    out: List[Tuple[str, np.ndarray, np.ndarray]] = []
    stack = [(link_name, np.eye(3), np.zeros(3))]
    while stack:
        name, R0, t0 = stack.pop()
        for joint in children_of.get(name, []):
            if joint.get("type") != "fixed":
                continue
            child = joint.find("child")
            child_name = None if child is None else child.get("link")
            if child_name is None:
                continue
            R, t = origin_of(joint, f"joint {joint.get('name')!r}")
            Rc, tc = R0 @ R, R0 @ t + t0
            out.append((child_name, Rc, tc))
            stack.append((child_name, Rc, tc))
    return out


def set_attribute(joint: ET.Element, element: str, attribute: str, value: float) -> None:
    """``<joint><element attribute="value"/>`` (absolute), creating the element if needed."""
    elem = joint.find(element)
    if elem is None:
        elem = _sub_element(joint, element)
    elem.set(attribute, repr(float(value)))


def add_to_attribute(joint: ET.Element, element: str, attribute: str, value: float) -> None:
    """``<joint><element attribute>`` += value (additive; an absent attribute counts as 0)."""
    elem = joint.find(element)
    if elem is None:
        elem = _sub_element(joint, element)
    what = f"joint {joint.get('name')!r} {element} {attribute}"
    prev = float(floats(elem.get(attribute, "0"), 1, what)[0])
    elem.set(attribute, repr(prev + value))


def joint_dynamics(joint: ET.Element) -> Dict[str, float] | None:
    """Every attribute of the joint's ``<dynamics>`` as a number (None without one)."""
    dyn = joint.find("dynamics")
    if dyn is None:
        return None
    name = joint.get("name")
    return {
        key: float(floats(text, 1, f"joint {name!r} dynamics {key}")[0])
        for key, text in dyn.attrib.items()
    }


@dataclass
class OriginCorrection:
    """Accumulated additive corrections of one joint origin.

    ``add`` takes the category ``"joint_placement"`` (``idx`` 0–5 of
    ``d_px … d_phiz``), ``"joint_offset"`` (``idx`` 0–5 of ``offsetPX …
    offsetRZ``) or an axis offset (``idx`` ``"RevoluteUnaligned"`` /
    ``"PrismaticUnaligned"``).
    """

    placement: np.ndarray
    offset: np.ndarray
    axis_offsets: Dict[str, float]
    has_placement: bool = False
    has_offset: bool = False

    @classmethod
    def empty(cls) -> OriginCorrection:
        return cls(np.zeros(6), np.zeros(6), {})

    def add(self, category: str, idx: Any, value: float) -> None:
        if category == "joint_placement":
            self.placement[idx] += value
            self.has_placement = True
        elif category == "joint_offset":
            self.offset[idx] += value
            self.has_offset = True
        else:
            self.axis_offsets[idx] = self.axis_offsets.get(idx, 0.0) + value

    def any(self) -> bool:
        return self.has_placement or self.has_offset or bool(self.axis_offsets)


def unit_axis(joint: ET.Element) -> np.ndarray:
    """The joint's unit ``<axis>`` (URDF default ``x`` when absent)."""
    jname = joint.get("name")
    axis_el = joint.find("axis")
    axis = floats(None if axis_el is None else axis_el.get("xyz"), 3, f"joint {jname!r} axis")
    if axis_el is None:
        axis = np.array([1.0, 0.0, 0.0])
    nrm = float(np.linalg.norm(axis))
    if nrm == 0:
        raise URDFExportError(f"joint {jname!r}: zero <axis>, cannot apply an axis offset")
    return axis / nrm


def correct_origin(joint: ET.Element, corr: OriginCorrection) -> None:
    """Compose the joint origin with its placement, offset and axis corrections."""
    R, t = origin_of(joint, f"joint {joint.get('name')!r}")
    if corr.has_placement:  # origin · SE3(exp3(d_phi), d_p)
        t = t + R @ corr.placement[:3]
        R = R @ exp3(corr.placement[3:])
    if corr.has_offset:  # origin · SE3(rpy(o_R), o_P)
        t = t + R @ corr.offset[:3]
        R = R @ rpy_matrix(corr.offset[3:])
    if corr.axis_offsets:
        axis = unit_axis(joint)
        if "PrismaticUnaligned" in corr.axis_offsets:
            t = t + R @ (axis * corr.axis_offsets["PrismaticUnaligned"])
        if "RevoluteUnaligned" in corr.axis_offsets:
            R = R @ exp3(axis * corr.axis_offsets["RevoluteUnaligned"])
    origin = joint.find("origin")
    if origin is None:
        origin = _sub_element(joint, "origin")
    origin.set("xyz", fmt(t))
    origin.set("rpy", fmt(matrix_rpy(R)))


@dataclass
class NominalURDF:
    """The parsed nominal URDF (modified in place) with its joint/link indexes."""

    path: Path
    tree: ET.ElementTree[ET.Element]
    joints: Dict[str, ET.Element]
    links: Dict[str, ET.Element]
    children_of: Dict[str, List[ET.Element]]

    @classmethod
    def parse(cls, path: Path) -> NominalURDF:
        """Parse ``path`` keeping comments and processing instructions."""
        import xml.etree.ElementTree as ET  # stdlib, ~10 ms: paid by the export, not the import

        parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True, insert_pis=True))
        try:
            tree = ET.parse(str(path), parser=parser)
        except ET.ParseError as exc:
            raise URDFExportError(f"nominal URDF {path} is not valid XML: {exc}") from exc
        root = tree.getroot()
        if root.tag != "robot":
            raise URDFExportError(f"nominal URDF {path}: root element is <{root.tag}>, not <robot>")
        joints = {_name_of(j, path): j for j in root.findall("joint")}
        links = {_name_of(lk, path): lk for lk in root.findall("link")}
        children_of: Dict[str, List[ET.Element]] = {}
        for j in joints.values():
            parent = j.find("parent")
            parent_name = None if parent is None else parent.get("link")
            if parent_name is not None:
                children_of.setdefault(parent_name, []).append(j)
        return cls(path, tree, joints, links, children_of)

    def child_link(self, joint_name: str) -> str:
        """Name of the child link of a joint."""
        child = self.joints[joint_name].find("child")
        link = None if child is None else child.get("link")
        if link is None or link not in self.links:
            raise URDFExportError(f"nominal URDF: joint {joint_name!r} has no valid <child link>")
        return link

    def serialise(self) -> bytes:
        """The modified document, with the nominal file's leading comments."""
        import xml.etree.ElementTree as ET  # stdlib: paid by the export, not the import

        return (
            b"<?xml version='1.0' encoding='utf-8'?>\n"
            + prolog(self.path)
            + ET.tostring(self.tree.getroot(), encoding="utf-8")
            + b"\n"
        )


def _name_of(element: ET.Element, path: Path) -> str:
    """The ``name`` attribute of a ``<joint>``/``<link>`` (URDF requires one)."""
    name = element.get("name")
    if name is None:
        raise URDFExportError(
            f"nominal URDF {path}: a <{element.tag}> has no name attribute; name every "
            f"<{element.tag}> (URDF requires it)"
        )
    return name


PROLOG = re.compile(rb"^\s*(?:<\?xml[^>]*\?>)?(?P<prolog>(?:\s|<!--.*?-->)*)<", re.DOTALL)


def prolog(path: Path) -> bytes:
    """Comments between the XML declaration and the root element, verbatim.

    ElementTree keeps comments inside the root only; the leading ones (often
    a licence header) are re-emitted unchanged from the well-formed nominal
    file.
    """
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    m = PROLOG.match(head)
    if m is None or not m.group("prolog").strip():
        return b""
    return m.group("prolog").strip() + b"\n"


def _check_loads_in_pinocchio(urdf_path: str) -> None:
    """Raise :class:`URDFExportError` unless Pinocchio builds a model from ``urdf_path``."""
    try:
        pin.buildModelFromUrdf(urdf_path)
    except Exception as exc:  # noqa: BLE001 - reported as a refusal
        raise URDFExportError(f"the modified URDF does not load in Pinocchio: {exc}") from exc


def atomic_write_checked(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically after checking Pinocchio loads it."""
    make_folder(path.parent)
    atomic_write(
        path,
        lambda fh: fh.write(data),
        binary=True,
        check=_check_loads_in_pinocchio,
        suffix=".urdf",
    )
