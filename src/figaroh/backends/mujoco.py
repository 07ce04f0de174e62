"""MuJoCo implementation of :class:`~figaroh.backends.base.DynamicsBackend`.

The model is compiled by MuJoCo from an MJCF file or from a URDF file, and every
dynamics quantity (mass matrix, bias and gravity efforts, inverse and forward
dynamics, Jacobians, Lie-group integration) is computed by MuJoCo itself.

**Rigid-body model.** MuJoCo adds effects that a joint-torque regressor does not
model: joint damping, stiffness, armature, dry friction (``frictionloss``),
joint limits, contacts, equality constraints and gravity compensation. With
``rigid_body=True`` (default) they are removed from the compiled model (the
coefficients are zeroed and the constraint solver is disabled), so that
``compute_inverse_dynamics`` is exactly the Newton-Euler effort
τ = M(q) q̈ + C(q, q̇) q̇ + g(q) that Pinocchio's ``rnea`` computes. Gravity is the
model's ``<option gravity>`` (MuJoCo's default is (0, 0, −9.81) m/s², the same as
Pinocchio's).

**URDF import.** MuJoCo resolves URDF meshes by file name only and merges links
attached by fixed joints (``fusestatic``). The URDF is therefore rewritten in
memory before compilation: ``<visual>`` and ``<collision>`` elements are removed
(no mesh file is needed; contacts are disabled anyway), and the compiler is told
``fusestatic="false"`` (every link stays a body, so every URDF link is a frame)
and ``inertiafromgeom="false"`` (a link without ``<inertial>`` is massless, as in
Pinocchio). Extra compiler attributes may be passed with ``compiler={...}``.

**Regressor.** MuJoCo cannot evaluate the effort of arbitrary inertial parameters,
so :meth:`MuJoCoBackend.compute_regressor` uses a Pinocchio model *built from the
compiled MuJoCo model* (same kinematic tree, joint axes and anchors, the inertia
of every body welded to a moving body summed into it, same gravity). Its columns
follow the Pinocchio convention, 10 per joint ``[m, m·cx, m·cy, m·cz, Ixx, Ixy,
Iyy, Ixz, Iyz, Izz]`` about the joint frame, whose origin is the joint anchor and
whose axes are the body's. For a URDF this is the URDF joint frame, so the columns
are those of a Pinocchio model loaded from the same URDF. The coordinates are
converted where the two engines differ: hinge/slide positions are the same (the
reference position ``qpos0`` is folded into the joint placement), quaternions
are reordered ([w, x, y, z] in MuJoCo, [x, y, z, w] in Pinocchio), and the
linear velocity, acceleration and force of a free joint are rotated between
MuJoCo's world axes and Pinocchio's body axes.
:meth:`MuJoCoBackend.get_inertias` returns the inertias of that model, so
``compute_regressor(q, v, a) @ θ == compute_inverse_dynamics(q, v, a)`` with
``θ`` the concatenated ``toDynamicParameters()`` of ``get_inertias()[1:]``.

Conventions of this backend: ``q``/``v`` are MuJoCo's ``qpos``/``qvel``; frames
are bodies (then sites) of the MuJoCo model; Jacobians are those of the frame
origin with world-aligned axes (``mj_jacBody``/``mj_jacSite``), i.e. Pinocchio's
``LOCAL_WORLD_ALIGNED``; pass ``reference="local"`` for body axes.
"""

from __future__ import annotations

import logging
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Tuple

import numpy as np
from numpy.typing import ArrayLike

from figaroh._optional import is_installed, require

from .base import DynamicsBackend

logger = logging.getLogger(__name__)

#: Whether the ``mujoco`` package is installed (looked up with
#: :func:`importlib.util.find_spec`; this module imports MuJoCo only when a
#: :class:`MuJoCoBackend` is created).
MUJOCO_AVAILABLE: bool = is_installed("mujoco")
#: Whether the ``pinocchio`` package is installed (the regressor of this
#: backend computes through a Pinocchio mirror of the MuJoCo model).
PINOCCHIO_AVAILABLE: bool = is_installed("pinocchio")

INSTALL_HINT = 'pip install "figaroh[mujoco]"  (or: pip install "mujoco>=3.0")'


def _require_mujoco() -> ModuleType:
    """The ``mujoco`` module, or a MissingDependencyError naming the ``mujoco`` extra."""
    return require("mujoco", extra="mujoco", purpose="The MuJoCo dynamics backend")


def _require_pinocchio() -> ModuleType:
    """The ``pinocchio`` module (a core dependency, distribution ``pin``)."""
    return require("pinocchio", package="pin", purpose="The MuJoCo backend's regressor")


# --------------------------------------------------------------------------- loading
def detect_model_format(model_path: str | os.PathLike[str]) -> str:
    """``"urdf"`` or ``"mjcf"`` from the root element of the file (``<robot>``/``<mujoco>``).

    Raises:
        FileNotFoundError: The file does not exist.
        ValueError: The file is neither a URDF nor an MJCF document.
    """
    path = os.fspath(model_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Model file not found: {path}")
    try:
        for _, element in ET.iterparse(path, events=("start",)):
            tag = element.tag
            break
        else:  # pragma: no cover - empty document raises ParseError first
            tag = ""
    except ET.ParseError as exc:
        raise ValueError(f"{path} is not an XML robot description: {exc}") from exc
    if tag == "robot":
        return "urdf"
    if tag == "mujoco":
        return "mjcf"
    raise ValueError(f"{path}: root element <{tag}> is neither <robot> (URDF) nor <mujoco> (MJCF)")


def urdf_for_mujoco(
    urdf_path: str | os.PathLike[str], compiler: Mapping[str, Any] | None = None
) -> str:
    """URDF text prepared for MuJoCo's URDF compiler (see the module docstring).

    ``<visual>`` and ``<collision>`` elements are removed and a
    ``<mujoco><compiler .../></mujoco>`` element sets ``fusestatic="false"``,
    ``inertiafromgeom="false"`` and ``discardvisual="true"``, then the
    attributes of ``compiler`` (e.g. ``{"boundmass": 1e-6}``).

    Args:
        urdf_path: URDF file.
        compiler: Extra MuJoCo compiler attributes (values converted with ``str``).

    Returns:
        The rewritten URDF document.
    """
    tree = ET.parse(os.fspath(urdf_path))
    root = tree.getroot()
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for element in link.findall(tag):
                link.remove(element)
    extension = root.find("mujoco")
    if extension is None:
        extension = ET.SubElement(root, "mujoco")
    compiler_element = extension.find("compiler")
    if compiler_element is None:
        compiler_element = ET.SubElement(extension, "compiler")
    attributes = {"fusestatic": "false", "inertiafromgeom": "false", "discardvisual": "true"}
    attributes.update({str(k): str(v) for k, v in (compiler or {}).items()})
    for key, value in attributes.items():
        compiler_element.set(key, value)
    return ET.tostring(root, encoding="unicode")


def _strip_non_rigid_effects(mujoco: ModuleType, model: Any) -> None:
    """Zero passive/actuator-side coefficients and disable constraints and contacts."""
    for name in ("dof_damping", "dof_armature", "dof_frictionloss", "jnt_stiffness"):
        getattr(model, name)[:] = 0.0
    if hasattr(model, "body_gravcomp"):
        model.body_gravcomp[:] = 0.0
    model.opt.density = 0.0
    model.opt.viscosity = 0.0
    model.opt.wind[:] = 0.0
    flags = mujoco.mjtDisableBit
    for name in ("mjDSBL_CONSTRAINT", "mjDSBL_CONTACT", "mjDSBL_SPRING", "mjDSBL_DAMPER"):
        if hasattr(flags, name):
            model.opt.disableflags |= int(getattr(flags, name))


# --------------------------------------------------------------------------- pinocchio mirror
def _joint_model_and_placement(
    pin: Any, mujoco: Any, m: Any, j: int, name: str, current: Any, not_single_root_joint: bool
) -> Tuple[Any, Any, np.ndarray]:
    """``(joint model, placement in the parent joint, anchor [m])`` of MuJoCo joint ``j``.

    Hinge and slide joints fold ``-qpos0`` into the placement, so that
    Pinocchio's ``q`` equals MuJoCo's ``qpos``.
    """
    types = mujoco.mjtJoint
    jtype = int(m.jnt_type[j])
    anchor = np.asarray(m.jnt_pos[j], float)
    if jtype == int(types.mjJNT_FREE):
        if not_single_root_joint:
            raise NotImplementedError(
                f"joint '{name}': a free joint is supported only as the single "
                "joint of a child of the world body"
            )
        joint_model, placement, anchor = (
            pin.JointModelFreeFlyer(),
            pin.SE3.Identity(),
            np.zeros(3),
        )
    elif jtype == int(types.mjJNT_BALL):
        joint_model = pin.JointModelSpherical()
        placement = current * _translation(pin, anchor)
    else:
        axis = np.asarray(m.jnt_axis[j], float)
        axis = axis / np.linalg.norm(axis)
        hinge = jtype == int(types.mjJNT_HINGE)
        joint_model = _axis_joint(pin, axis, hinge)
        # MuJoCo moves the body by (qpos - qpos0): fold -qpos0 into the
        # placement so that Pinocchio's q equals MuJoCo's qpos.
        ref = float(m.qpos0[int(m.jnt_qposadr[j])])
        shift = (
            pin.SE3(pin.AngleAxis(-ref, axis).matrix(), np.zeros(3))
            if hinge
            else _translation(pin, -ref * axis)
        )
        placement = current * _translation(pin, anchor) * shift
    return joint_model, placement, anchor


def _body_inertia(pin: Any, m: Any, b: int) -> Any:
    """Spatial inertia of MuJoCo body ``b`` (mass [kg], com [m], rotated inertia [kg·m²])."""
    rot = _rotation(pin, m.body_iquat[b])
    return pin.Inertia(
        float(m.body_mass[b]),
        np.asarray(m.body_ipos[b], float),
        rot @ np.diag(np.asarray(m.body_inertia[b], float)) @ rot.T,
    )


class _PinocchioMirror:
    """Pinocchio model of a compiled MuJoCo model, and the coordinate maps between them.

    Pinocchio joint ``k`` (1-based) is MuJoCo joint ``k − 1``; joints are added in
    MuJoCo's body order, so Pinocchio's velocity indices equal MuJoCo's DOF
    addresses. A body with several MuJoCo joints becomes a chain of Pinocchio
    joints, the inertia carried by the last one.
    """

    def __init__(self, mujoco: ModuleType, mj_model: Any) -> None:
        pin = _require_pinocchio()
        self.pin = pin
        m = mj_model
        model = pin.Model()
        model.name = bytes(m.names).split(b"\0", 1)[0].decode() or "mujoco_model"
        model.gravity = pin.Motion(np.concatenate([np.asarray(m.opt.gravity, float), np.zeros(3)]))
        joint_of_body = {0: 0}
        body_in_joint = {0: pin.SE3.Identity()}
        frame_of_body = {0: 0}
        # (mj qpos adr, pin idx_q, pin idx_v) of free joints
        self.free: list[tuple[int, int, int]] = []
        self.ball: list[tuple[int, int]] = []  # (mj qpos adr, pin idx_q)
        self.scalar_q: list[
            tuple[int, int]
        ] = []  # (mj qpos adr, pin idx_q) of hinge and slide joints
        types = mujoco.mjtJoint
        for b in range(1, m.nbody):
            parent = int(m.body_parentid[b])
            offset = body_in_joint[parent] * _se3(pin, m.body_quat[b], m.body_pos[b])
            jid = joint_of_body[parent]
            current = offset
            first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
            for j in range(first, first + count):
                jtype = int(m.jnt_type[j])
                name = _name(mujoco, m, mujoco.mjtObj.mjOBJ_JOINT, j, "joint")
                joint_model, placement, anchor = _joint_model_and_placement(
                    pin, mujoco, m, j, name, current, parent != 0 or count != 1
                )
                jid = model.addJoint(jid, joint_model, placement, name)
                model.addJointFrame(jid, -1)
                joint = model.joints[jid]
                if joint.idx_v != int(m.jnt_dofadr[j]):  # pragma: no cover - MuJoCo invariant
                    raise RuntimeError(
                        f"joint '{name}': DOF order differs between MuJoCo and Pinocchio"
                    )
                qadr = int(m.jnt_qposadr[j])
                if jtype == int(types.mjJNT_FREE):
                    self.free.append((qadr, joint.idx_q, joint.idx_v))
                elif jtype == int(types.mjJNT_BALL):
                    self.ball.append((qadr, joint.idx_q))
                else:
                    self.scalar_q.append((qadr, joint.idx_q))
                current = _translation(pin, -anchor)
            joint_of_body[b] = jid
            body_in_joint[b] = current
            inertia = _body_inertia(pin, m, b)
            model.appendBodyToJoint(jid, inertia, current)
            body_name = _name(mujoco, m, mujoco.mjtObj.mjOBJ_BODY, b, "body")
            frame_of_body[b] = model.addBodyFrame(body_name, jid, current, frame_of_body[parent])
        self.model = model
        self.data = model.createData()
        self.ncols = 10 * (model.njoints - 1)

    # --------------------------------------------------------------- conversions
    def configuration_to_pinocchio(self, q: ArrayLike) -> np.ndarray:
        """MuJoCo qpos → Pinocchio q (quaternions reordered; hinge/slide unchanged)."""
        return self.to_pinocchio(q, np.zeros(self.model.nv), np.zeros(self.model.nv))[0]

    def to_pinocchio(
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """MuJoCo (qpos, qvel, qacc) of one sample → Pinocchio (q, v, a)."""
        q = np.asarray(q, float)
        qp = np.empty(self.model.nq)
        vp = np.array(v, dtype=float, copy=True)
        ap = np.array(a, dtype=float, copy=True)
        for qadr, iq in self.scalar_q:
            qp[iq] = q[qadr]
        for qadr, iq in self.ball:
            qp[iq : iq + 4] = _wxyz_to_xyzw(q[qadr : qadr + 4])
        for (qadr, iq, iv), rot in zip(self.free, self._free_rotations(q), strict=True):
            qp[iq : iq + 3] = q[qadr : qadr + 3]
            qp[iq + 3 : iq + 7] = _wxyz_to_xyzw(q[qadr + 3 : qadr + 7])
            v_lin = rot.T @ vp[iv : iv + 3]
            omega = vp[iv + 3 : iv + 6]
            ap[iv : iv + 3] = rot.T @ ap[iv : iv + 3] - np.cross(omega, v_lin)
            vp[iv : iv + 3] = v_lin
        return qp, vp, ap

    def efforts_to_mujoco(self, rows: np.ndarray, q: ArrayLike) -> np.ndarray:
        """Pinocchio generalized-force rows (nv, …) → MuJoCo's, in place.

        A free joint's force is conjugate to its linear velocity: Pinocchio's is
        in body axes, MuJoCo's in world axes (f_world = R f_body).
        """
        for (_, _, iv), rot in zip(self.free, self._free_rotations(q), strict=True):
            rows[iv : iv + 3] = rot @ rows[iv : iv + 3]
        return rows

    def _free_rotations(self, q: ArrayLike) -> list[np.ndarray]:
        q = np.asarray(q, float)
        return [_rotation(self.pin, q[qadr + 3 : qadr + 7]) for qadr, _, _ in self.free]

    def regressor(self, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> np.ndarray:
        qp, vp, ap = self.to_pinocchio(q, v, a)
        Y = np.array(
            self.pin.computeJointTorqueRegressor(self.model, self.data, qp, vp, ap), copy=True
        ).reshape(self.model.nv, -1)
        return self.efforts_to_mujoco(Y, q)


def _name(mujoco: ModuleType, model: Any, kind: Any, index: int, prefix: str) -> str:
    name = mujoco.mj_id2name(model, kind, index)
    return str(name) if name else f"{prefix}_{index}"


def _wxyz_to_xyzw(quat: ArrayLike) -> np.ndarray:
    quat = np.asarray(quat, float)
    return np.array([quat[1], quat[2], quat[3], quat[0]])


def _rotation(pin: ModuleType, quat_wxyz: np.ndarray) -> np.ndarray:
    w, x, y, z = (float(c) for c in quat_wxyz)
    quat = pin.Quaternion(w, x, y, z)
    quat.normalize()
    return np.array(quat.toRotationMatrix())


def _se3(pin: ModuleType, quat_wxyz: np.ndarray, position: ArrayLike) -> Any:
    return pin.SE3(_rotation(pin, quat_wxyz), np.asarray(position, float))


def _translation(pin: ModuleType, offset: ArrayLike) -> Any:
    return pin.SE3(np.eye(3), np.asarray(offset, float))


def _axis_joint(pin: ModuleType, axis: np.ndarray, revolute: bool) -> Any:
    """Revolute/prismatic joint about ``axis`` (a unit vector of the joint frame)."""
    for k, letter in enumerate("XYZ"):
        unit = np.zeros(3)
        unit[k] = 1.0
        if np.allclose(axis, unit, atol=1e-12):
            return getattr(pin, f"JointModel{'R' if revolute else 'P'}{letter}")()
    if revolute:
        return pin.JointModelRevoluteUnaligned(axis)
    return pin.JointModelPrismaticUnaligned(axis)


# --------------------------------------------------------------------------- backend
class MuJoCoBackend(DynamicsBackend):
    """Dynamics computed by MuJoCo (``pip install "figaroh[mujoco]"``).

    Args:
        model_path: MJCF (``<mujoco>``) or URDF (``<robot>``) file.
        **kwargs: ``rigid_body`` (default True: remove damping, stiffness,
            armature, friction loss, gravity compensation, limits, contacts and
            equality constraints, see the module docstring); ``compiler``
            (extra MuJoCo compiler attributes for a URDF, e.g.
            ``{"boundmass": 1e-6, "boundinertia": 1e-9}`` for URDFs with
            massless moving links).

    Attributes:
        model: The compiled ``mujoco.MjModel``.
        data: The ``mujoco.MjData`` the computations use.

    Raises:
        ImportError: MuJoCo is missing (the message names the extra).
        FileNotFoundError: ``model_path`` does not exist.
        RuntimeError: MuJoCo could not compile the model.
    """

    def __init__(self, model_path: str | None = None, **kwargs: Any):
        super().__init__(model_path, **kwargs)
        mujoco = _require_mujoco()
        self._mujoco = mujoco
        if model_path is None:
            raise ValueError(
                "MuJoCoBackend needs model_path (an MJCF or URDF file); "
                "use MuJoCoBackend.from_model for an existing MjModel"
            )
        self._format = detect_model_format(model_path)
        try:
            if self._format == "urdf":
                text = urdf_for_mujoco(model_path, kwargs.get("compiler"))
                model = mujoco.MjModel.from_xml_string(text)
            else:
                model = mujoco.MjModel.from_xml_path(os.fspath(model_path))
        except Exception as exc:  # noqa: BLE001 - MuJoCo raises ValueError for compile errors
            hint = ""
            if "mass and inertia of moving bodies" in str(exc):
                hint = (
                    " (a moving link has no mass: pass compiler={'boundmass': 1e-6, "
                    "'boundinertia': 1e-9} or give the link an <inertial>)"
                )
            raise RuntimeError(
                f"Failed to load model {model_path} with MuJoCo: {exc}{hint}"
            ) from exc
        self._setup(model, bool(kwargs.get("rigid_body", True)))

    @classmethod
    def from_model(cls, mj_model: Any, rigid_body: bool = True, **kwargs: Any) -> MuJoCoBackend:
        """Wrap an existing ``mujoco.MjModel`` (modified in place when ``rigid_body``)."""
        backend = cls.__new__(cls)
        DynamicsBackend.__init__(backend, None, rigid_body=rigid_body, **kwargs)
        backend._mujoco = _require_mujoco()
        backend._format = "mjcf"
        backend._setup(mj_model, rigid_body)
        return backend

    def _setup(self, model: Any, rigid_body: bool) -> None:
        if rigid_body:
            _strip_non_rigid_effects(self._mujoco, model)
        self.model = model
        self.data = self._mujoco.MjData(model)
        self._mirror: _PinocchioMirror | None = None

    # ------------------------------------------------------------------ properties
    @property
    def nq(self) -> int:
        return int(self.model.nq)

    @property
    def nv(self) -> int:
        return int(self.model.nv)

    @property
    def model_format(self) -> str:
        """``"mjcf"`` or ``"urdf"``: the format of the file the model was compiled from."""
        return self._format

    @property
    def pinocchio_model(self) -> Any:
        """The Pinocchio model mirroring the MuJoCo model (built on first use)."""
        return self._pinocchio_mirror().model

    def _pinocchio_mirror(self) -> _PinocchioMirror:
        """The Pinocchio mirror of the MuJoCo model, built on first use."""
        if self._mirror is None:
            self._mirror = _PinocchioMirror(self._mujoco, self.model)
        return self._mirror

    def pinocchio_configuration(self, q: np.ndarray) -> np.ndarray:
        """``q`` (MuJoCo ``qpos``) in the coordinates of :attr:`pinocchio_model`.

        Hinge and slide entries are unchanged; quaternions become [x, y, z, w].
        """
        return self._pinocchio_mirror().configuration_to_pinocchio(self._vector(q, self.nq, "q"))

    def neutral_configuration(self) -> np.ndarray:
        """MuJoCo's reference configuration ``qpos0`` (nq,), where the model was defined."""
        return np.array(self.model.qpos0, dtype=float, copy=True)

    def get_model_object(self) -> Any:
        """The compiled ``mujoco.MjModel``."""
        return self.model

    # ------------------------------------------------------------------ state
    def _vector(self, x: ArrayLike, size: int, name: str) -> np.ndarray:
        arr = np.asarray(x, dtype=float).reshape(-1)
        if arr.shape[0] != size:
            raise ValueError(f"{name} must have {size} entries, got {arr.shape[0]}")
        return arr

    def _set_state(
        self, q: ArrayLike, v: ArrayLike | None = None, a: ArrayLike | None = None
    ) -> None:
        d = self.data
        d.qpos[:] = self._vector(q, self.nq, "q")
        d.qvel[:] = 0.0 if v is None else self._vector(v, self.nv, "v")
        d.qacc[:] = 0.0 if a is None else self._vector(a, self.nv, "a")

    def _inverse(
        self, q: ArrayLike, v: ArrayLike | None = None, a: ArrayLike | None = None
    ) -> np.ndarray:
        self._set_state(q, v, a)
        self._mujoco.mj_inverse(self.model, self.data)
        return np.array(self.data.qfrc_inverse, copy=True)

    # ------------------------------------------------------------------ dynamics
    def compute_mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """Joint-space inertia matrix M(q) (nv, nv) [kg·m², kg] from MuJoCo's CRB."""
        mujoco = self._mujoco
        self._set_state(q)
        mujoco.mj_fwdPosition(self.model, self.data)
        M = np.zeros((self.nv, self.nv))
        try:  # MuJoCo >= 4: mj_fullM(m, d, dst)
            mujoco.mj_fullM(self.model, self.data, M)
        except TypeError:  # MuJoCo 3: mj_fullM(m, dst, qM)
            mujoco.mj_fullM(self.model, M, self.data.qM)
        return M

    def compute_gravity_vector(self, q: np.ndarray) -> np.ndarray:
        """Generalized gravity effort g(q) (nv,) [N·m, N]: inverse dynamics at rest."""
        return self._inverse(q)

    def compute_coriolis_matrix(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Coriolis matrix C(q, v) (nv, nv) with C(q, v) v = b(q, v) − g(q).

        The velocity-dependent effort f(v) = b(q, v) − g(q) is a quadratic form
        in v, f(v) = Γ(v, v) with Γ symmetric; C(q, v) = Γ(v, ·), so column j is
        exactly (f(v + s eⱼ) − f(v − s eⱼ)) / (4 s) for any step s (s = 1 here).
        For holonomic coordinates this is the Christoffel-symbol Coriolis matrix
        (Ṁ − 2C skew-symmetric).
        """
        v = self._vector(v, self.nv, "v")
        g = self._inverse(q)
        C = np.zeros((self.nv, self.nv))
        if not np.any(v):
            return C
        for j in range(self.nv):
            step = np.zeros(self.nv)
            step[j] = 1.0
            plus = self._inverse(q, v + step) - g
            minus = self._inverse(q, v - step) - g
            C[:, j] = (plus - minus) / 4.0
        return C

    def compute_inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Inverse dynamics τ (nv,) [N·m, N]: MuJoCo's ``mj_inverse`` (``qfrc_inverse``)."""
        return self._inverse(q, v, a)

    def compute_inverse_dynamics_batch(
        self, Q: np.ndarray, V: np.ndarray, A: np.ndarray
    ) -> np.ndarray:
        """Inverse dynamics of N samples: array (N, nv) [N·m, N]."""
        Q, V, A = np.atleast_2d(Q), np.atleast_2d(V), np.atleast_2d(A)
        if not (len(Q) == len(V) == len(A)):
            raise ValueError(
                f"Q, V and A must hold the same number of samples, got {len(Q)}, {len(V)}, {len(A)}"
            )
        return np.array([self._inverse(q, v, a) for q, v, a in zip(Q, V, A, strict=True)]).reshape(
            -1, self.nv
        )

    def compute_forward_dynamics(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Joint accelerations (nv,) [rad/s², m/s²] produced by the generalized force ``tau``.

        ``tau`` is applied as ``qfrc_applied`` (actuator controls are zero), so
        the result does not depend on the model's actuators.
        """
        self._set_state(q, v)
        d = self.data
        d.qfrc_applied[:] = self._vector(tau, self.nv, "tau")
        d.ctrl[:] = 0.0
        d.xfrc_applied[:] = 0.0
        try:
            self._mujoco.mj_forward(self.model, d)
            return np.array(d.qacc, copy=True)
        finally:
            d.qfrc_applied[:] = 0.0

    def compute_regressor(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Joint-torque regressor Y (nv, 10·njoints) with τ = Y θ (see the module docstring)."""
        q = self._vector(q, self.nq, "q")
        v = self._vector(v, self.nv, "v")
        a = self._vector(a, self.nv, "a")
        return self._pinocchio_mirror().regressor(q, v, a)

    def compute_regressor_batch(
        self, Q: np.ndarray, V: np.ndarray, A: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Regressors of N samples, laid out like ``PinocchioBackend.compute_regressor_batch``.

        Returns:
            Array (nv, N, 10·njoints): ``out[j, i]`` is row j of sample i's regressor.
        """
        mirror = self._pinocchio_mirror()
        n = len(Q)
        if not (len(Q) == len(V) == len(A)):
            raise ValueError(
                f"Q, V and A must hold the same number of samples, got {len(Q)}, {len(V)}, {len(A)}"
            )
        ncols = mirror.ncols
        if out is None:
            out = np.empty((self.nv, n, ncols))
        for i in range(n):
            out[:, i, :ncols] = mirror.regressor(Q[i], V[i], A[i])
        return out

    # ------------------------------------------------------------------ kinematics
    def compute_forward_kinematics(self, q: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        """Pose of every body (but the world) and site.

        Returns:
            ``{name: {"position" (3,) [m], "orientation" (3, 3), "quaternion"
            [w, x, y, z], "transformation" (4, 4)}}``; unnamed bodies are
            ``body_<i>``, unnamed sites ``site_<i>``.
        """
        mujoco = self._mujoco
        self._set_state(q)
        mujoco.mj_kinematics(self.model, self.data)
        out: dict[str, dict[str, np.ndarray]] = {}
        for b in range(1, self.model.nbody):
            rotation = np.array(self.data.xmat[b], copy=True).reshape(3, 3)
            out[_name(mujoco, self.model, mujoco.mjtObj.mjOBJ_BODY, b, "body")] = _pose(
                np.array(self.data.xpos[b], copy=True),
                rotation,
                np.array(self.data.xquat[b], copy=True),
            )
        for s in range(self.model.nsite):
            rotation = np.array(self.data.site_xmat[s], copy=True).reshape(3, 3)
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, rotation.reshape(-1))
            out[_name(mujoco, self.model, mujoco.mjtObj.mjOBJ_SITE, s, "site")] = _pose(
                np.array(self.data.site_xpos[s], copy=True), rotation, quat
            )
        return out

    def _frame(self, frame: str) -> tuple[str, int]:
        mujoco = self._mujoco
        body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, str(frame))
        if body >= 0:
            return "body", int(body)
        site = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, str(frame))
        if site >= 0:
            return "site", int(site)
        raise ValueError(
            f"Unknown frame '{frame}'. Available frames (bodies, then sites): "
            f"{self.get_frame_names()}"
        )

    def get_frame_id(self, frame: str) -> int:
        """Index of ``frame``: its body id, or its site id when no body has that name.

        Raises:
            ValueError: No body or site is called ``frame`` (the message lists them).
        """
        return self._frame(frame)[1]

    def compute_jacobian(
        self, q: np.ndarray, frame: str, reference: str = "world_aligned"
    ) -> np.ndarray:
        """Jacobian (6, nv) of the frame origin, rows ``[linear; angular]``.

        Args:
            q: Configuration (nq,).
            frame: Body or site name.
            reference: ``"world_aligned"`` (default, MuJoCo's ``mj_jacBody``
                convention) or ``"local"`` (the frame's own axes).
        """
        mujoco = self._mujoco
        kind, index = self._frame(frame)
        self._set_state(q)
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        jacp = np.zeros((3, self.nv))
        jacr = np.zeros((3, self.nv))
        if kind == "body":
            mujoco.mj_jacBody(self.model, self.data, jacp, jacr, index)
            rotation = np.array(self.data.xmat[index]).reshape(3, 3)
        else:
            mujoco.mj_jacSite(self.model, self.data, jacp, jacr, index)
            rotation = np.array(self.data.site_xmat[index]).reshape(3, 3)
        J = np.vstack([jacp, jacr])
        if reference == "local":
            J = np.vstack([rotation.T @ jacp, rotation.T @ jacr])
        elif reference != "world_aligned":
            raise ValueError(f"reference must be 'world_aligned' or 'local', got {reference!r}")
        return J

    # ------------------------------------------------------------------ configuration space
    def compute_difference(self, q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
        """Lie-group difference ``q2 ⊖ q1`` (nv,) (``mj_differentiatePos`` over unit time)."""
        out = np.zeros(self.nv)
        self._mujoco.mj_differentiatePos(
            self.model, out, 1.0, self._vector(q1, self.nq, "q1"), self._vector(q2, self.nq, "q2")
        )
        return out

    def compute_integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Configuration reached from ``q`` by velocity ``v`` in unit time (``mj_integratePos``)."""
        out = np.array(self._vector(q, self.nq, "q"), copy=True)
        self._mujoco.mj_integratePos(self.model, out, self._vector(v, self.nv, "v"), 1.0)
        return out

    def random_configuration(self, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """A random configuration.

        Limited hinge/slide joints are drawn uniformly in their range; unlimited
        hinges uniformly within ±π rad, unlimited slides within ±1 m; ball joints
        get a uniformly random unit quaternion; free joints a position with each
        coordinate within ±1 m and a random unit quaternion.

        Args:
            rng: Generator or seed (default: a fresh generator).
        """
        rng = np.random.default_rng(rng)
        m = self.model
        q = np.array(m.qpos0, dtype=float, copy=True)
        types = self._mujoco.mjtJoint
        for j in range(m.njnt):
            adr = int(m.jnt_qposadr[j])
            jtype = int(m.jnt_type[j])
            if jtype == int(types.mjJNT_FREE):
                q[adr : adr + 3] = rng.uniform(-1.0, 1.0, 3)
                q[adr + 3 : adr + 7] = _random_quaternion(rng)
            elif jtype == int(types.mjJNT_BALL):
                q[adr : adr + 4] = _random_quaternion(rng)
            elif bool(m.jnt_limited[j]) and m.jnt_range[j][0] < m.jnt_range[j][1]:
                q[adr] = rng.uniform(*m.jnt_range[j])
            elif jtype == int(types.mjJNT_HINGE):
                q[adr] = rng.uniform(-np.pi, np.pi)
            else:
                q[adr] = rng.uniform(-1.0, 1.0)
        return q

    # ------------------------------------------------------------------ model data
    def get_inertias(self) -> list[Any]:
        """Spatial inertias (``pinocchio.Inertia``) per joint, index 0 the universe.

        Joint k's inertia is the sum of the MuJoCo bodies it moves rigidly (its
        body and the bodies welded to it), about its joint frame.
        """
        return list(self.pinocchio_model.inertias)

    def get_joint_names(self) -> list[str]:
        """MuJoCo joint names in joint order (unnamed joints ``joint_<i>``)."""
        mujoco = self._mujoco
        return [
            _name(mujoco, self.model, mujoco.mjtObj.mjOBJ_JOINT, j, "joint")
            for j in range(self.model.njnt)
        ]

    def get_frame_names(self) -> list[str]:
        """Body names (world first), then site names."""
        mujoco = self._mujoco
        bodies = [
            _name(mujoco, self.model, mujoco.mjtObj.mjOBJ_BODY, b, "body")
            for b in range(self.model.nbody)
        ]
        sites = [
            _name(mujoco, self.model, mujoco.mjtObj.mjOBJ_SITE, s, "site")
            for s in range(self.model.nsite)
        ]
        return bodies + sites


def _pose(
    position: np.ndarray, rotation: np.ndarray, quaternion: np.ndarray
) -> dict[str, np.ndarray]:
    T = np.eye(4)
    T[:3, :3] = rotation
    T[:3, 3] = position
    return {
        "position": position,
        "orientation": rotation,
        "quaternion": quaternion,
        "transformation": T,
    }


def _random_quaternion(rng: np.random.Generator) -> np.ndarray:
    """Uniformly distributed unit quaternion [w, x, y, z]."""
    quat = rng.normal(size=4)
    unit: np.ndarray = quat / np.linalg.norm(quat)
    return unit


__all__ = [
    "INSTALL_HINT",
    "MUJOCO_AVAILABLE",
    "PINOCCHIO_AVAILABLE",
    "MuJoCoBackend",
    "detect_model_format",
    "urdf_for_mujoco",
]
