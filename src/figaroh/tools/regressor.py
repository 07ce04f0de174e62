"""Inverse-dynamics regressor: τ = W(q, dq, ddq) · φ.

Layout:

* **Rows** are joint-major: for N samples and ``nv`` DOFs, row ``j·N + i`` is
  DOF ``j`` at sample ``i``. Measured efforts stack the same way:
  ``tau.T.ravel()`` for a ``(N, nv)`` array.
* **Columns** start with the inertial block of ``10·nbodies`` columns
  (``nbodies = model.njoints − 1``), body ``k`` at ``10k … 10k+9`` in
  Pinocchio order ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` (inertia
  about the body origin): exactly ``pinocchio.computeJointTorqueRegressor``.
  Then, only for the enabled joint terms and in the order of
  :data:`figaroh.tools.joint_terms.JOINT_TERMS`, blocks of ``nv`` columns
  each: viscous friction ``fv`` (entry ``dq``), Coulomb friction ``fs``
  (``sign(dq)``, ``sign(0) = 0``; ``0`` where ``|dq| < coulomb_deadband`` when
  that optional dead band [rad/s or m/s] is set), actuator (armature) inertia
  ``Ia`` (``ddq``) and joint offset ``off`` (``1``). DOF ``j``'s entry sits at
  column ``block_start + j`` and only in DOF ``j``'s rows, and only for the
  DOFs in ``identif_config["act_idxv"]``; other entries stay zero (removed
  later by zero-column elimination).

Units: q [rad, m], dq [rad/s], ddq [rad/s²]; the inertial columns multiply
m [kg], m·c [kg·m], I [kg·m²]; fv [N·m·s/rad], fs [N·m], Ia [kg·m²], off [N·m].

The regressor loop over samples is the one irreducible Python loop: each sample
is one call to Pinocchio, written straight into a preallocated array. The extra
blocks are one strided copy, vectorised over samples; for large arrays a second
thread does it during the Pinocchio loop (the elements are disjoint), which also
takes the kernel's first-touch page zeroing off the loop's path.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..backends.pinocchio import PinocchioBackend
from . import joint_terms
from .exceptions import RegressorConfigError, RegressorShapeError

logger = logging.getLogger(__name__)

WRENCH_COMPONENTS = ("Fx", "Fy", "Fz", "Mx", "My", "Mz")

#: Joint-term flags that are attributes of :class:`RegressorConfig`.
_NAMED_FLAGS = ("has_friction", "has_actuator_inertia", "has_joint_offset")


@dataclass
class RegressorConfig:
    """Which columns the regressor has and what it regresses.

    The three ``has_*`` flags enable the joint terms of
    :data:`figaroh.tools.joint_terms.JOINT_TERMS` that use them as
    ``enable_key``; ``extra_flags`` holds the flag of any other row.

    Attributes:
        has_friction: Add the viscous ``fv`` and Coulomb ``fs`` blocks.
        has_actuator_inertia: Add the actuator-inertia ``Ia`` block.
        has_joint_offset: Add the effort-offset ``off`` block.
        is_joint_torques: Regress joint efforts (one row per DOF and sample).
        is_external_wrench: Regress the base wrench of a floating-base robot.
        force_torque: Wrench components measured in external-wrench mode
            (subset of ``"Fx" "Fy" "Fz" "Mx" "My" "Mz"``; ``None``/``"All"``: all).
        additional_columns: Number of extra columns per DOF/body
            (the number of enabled joint terms).
        coulomb_deadband: Speed [rad/s or m/s] under which the Coulomb column
            is 0 instead of ``sign(dq)`` (the friction direction is undefined
            at rest); 0 keeps ``sign(dq)`` everywhere.
        extra_flags: ``{enable_key: bool}`` for joint-term rows whose flag is
            not one of the attributes above.

    Raises:
        RegressorConfigError: ``coulomb_deadband`` negative, not finite or not a number.
    """

    has_friction: bool = False
    has_actuator_inertia: bool = False
    has_joint_offset: bool = False
    is_joint_torques: bool = True
    is_external_wrench: bool = False
    force_torque: Sequence[str] | None = None
    additional_columns: int = 0
    coulomb_deadband: float = 0.0
    extra_flags: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        band = self.coulomb_deadband
        if (
            isinstance(band, bool)
            or not isinstance(band, (int, float))
            or not (math.isfinite(band) and band >= 0.0)
        ):
            raise RegressorConfigError(
                "coulomb_deadband (problem.coulomb_deadband) must be a finite speed >= 0 "
                "[rad/s or m/s] under which the Coulomb column sign(dq) is set to 0 "
                f"(0 disables it), got {band!r}"
            )

    def _flag(self, key: str) -> bool:
        if key in _NAMED_FLAGS:
            return bool(getattr(self, key))
        return bool(self.extra_flags.get(key, False))

    def enabled_terms(self) -> list[joint_terms.JointTerm]:
        """The enabled joint-term rows, in column order."""
        return [t for t in joint_terms.JOINT_TERMS if self._flag(t.enable_key)]

    def extra_blocks(self) -> list[str]:
        """Names (parameter prefixes) of the enabled extra blocks, in column order."""
        return [t.prefix for t in self.enabled_terms()]


def default_active_dofs(model) -> list[int]:
    """Velocity indices of every 1-DoF joint (revolute, prismatic, continuous).

    Multi-DoF joints (free-flyer, spherical, planar) are excluded: they are
    not actuated, so friction/armature/offset terms make no sense for them.
    """
    dofs: list[int] = []
    for jid in range(1, model.njoints):
        joint = model.joints[jid]
        if joint.nv == 1:
            dofs.append(int(joint.idx_v))
    return dofs


def _as_samples(x, width: int, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise RegressorShapeError(f"{name} must be a 1-D or 2-D array, got {arr.ndim} dimensions")
    if arr.shape[1] != width:
        raise RegressorShapeError(f"{name} must have {width} columns, got {arr.shape[1]}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise RegressorShapeError(
            f"{name} contains NaN or inf (first at sample {bad[0]}, column {bad[1]}); "
            f"clean or interpolate the data first"
        )
    return arr


# Arrays smaller than this fill the extra columns inline (a thread costs ~0.1 ms).
_OVERLAP_MIN_BYTES = 4 << 20


def _extra_block_diagonals(W3: np.ndarray, start: int, n_blocks: int) -> np.ndarray:
    """Writable (n_blocks, nv, N) view of the extra-block entries of ``W3``.

    Element ``[b, j, i]`` is ``W3[j, i, start + b·nv + j]``: DOF ``j``'s entry of
    block ``b`` in DOF ``j``'s row at sample ``i``. ``W3`` must be C-contiguous
    with ``start + n_blocks·nv`` columns.
    """
    nv, N, ncols = W3.shape
    if not W3.flags.c_contiguous or ncols != start + n_blocks * nv:
        raise ValueError("internal: W3 must be C-contiguous with start + n_blocks·nv columns")
    item = W3.itemsize
    return np.lib.stride_tricks.as_strided(
        W3.reshape(-1)[start:],
        shape=(n_blocks, nv, N),
        strides=(nv * item, (N * ncols + 1) * item, ncols * item),
        writeable=True,
    )


class _BackgroundCopy(threading.Thread):
    """``np.copyto(dst, src)`` in a thread, for an array too large to copy inline.

    ``start`` returns once the thread is about to copy, so the caller's next
    Python bytecode runs while numpy copies without the GIL (otherwise the
    thread would wait for the caller's switch interval, ~5 ms, to begin).
    ``join`` re-raises the thread's exception.
    """

    def __init__(self, dst: np.ndarray, src: np.ndarray):
        super().__init__(name="figaroh-regressor-extras", daemon=True)
        self._dst, self._src = dst, src
        self._error: BaseException | None = None
        self._copying = threading.Event()

    def start(self) -> None:
        super().start()
        self._copying.wait()

    def run(self) -> None:
        try:
            self._copying.set()
            np.copyto(self._dst, self._src)
        except BaseException as exc:  # noqa: BLE001 - re-raised in join()
            self._error = exc
        finally:
            self._copying.set()

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self._error is not None:
            raise self._error


class RegressorBuilder:
    """Build joint-torque or external-wrench regressors for a robot.

    Args:
        robot: A :class:`~figaroh.tools.robot.Robot` (its ``backend`` is used) or
            any object with a Pinocchio ``model`` and ``data``.
        config: Column/mode configuration (default: rigid body only).
    """

    def __init__(self, robot, config: RegressorConfig | None = None):
        self.robot = robot
        self.config = config or RegressorConfig()
        self._has_backend = hasattr(robot, "backend")
        if self._has_backend:
            self.backend = robot.backend
        else:
            self.backend = PinocchioBackend.from_model(robot.model, getattr(robot, "data", None))
        self.model = getattr(self.backend, "model", None) or robot.model
        self.nq = int(self.backend.nq)
        self.nv = int(self.backend.nv)
        self.nbodies = self.model.njoints - 1
        self.nonzero_inertias = self._get_nonzero_inertias()

    def _get_nonzero_inertias(self) -> list[int]:
        """Indices (universe = 0) of the bodies with a non-zero mass."""
        inertias = (
            self.backend.get_inertias()
            if hasattr(self.backend, "get_inertias")
            else self.model.inertias
        )
        return [i for i, inertia in enumerate(inertias) if i > 0 and abs(inertia.mass) > 0.0]

    @property
    def n_columns(self) -> int:
        """Number of regressor columns in joint-torque mode."""
        return 10 * self.nbodies + len(self.config.extra_blocks()) * self.nv

    def __repr__(self) -> str:
        mode = "joint_torques" if self.config.is_joint_torques else "external_wrench"
        return (
            f"RegressorBuilder(model='{self.model.name}', nq={self.nq}, nv={self.nv}, "
            f"mode={mode}, extra_blocks={self.config.extra_blocks()})"
        )

    # ------------------------------------------------------------------ inputs
    def _normalize_inputs(self, q, v, a) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        Q = _as_samples(q, self.nq, "q")
        V = _as_samples(v, self.nv, "v")
        A = _as_samples(a, self.nv, "a")
        if not (Q.shape[0] == V.shape[0] == A.shape[0]):
            raise RegressorShapeError(
                f"Inconsistent sample counts: q has {Q.shape[0]}, v has {V.shape[0]}, "
                f"a has {A.shape[0]} rows"
            )
        if Q.shape[0] == 0:
            raise RegressorShapeError("q, v and a contain no samples")
        return np.ascontiguousarray(Q), np.ascontiguousarray(V), np.ascontiguousarray(A), Q.shape[0]

    def _active_dofs(self, identif_config: Mapping | None) -> np.ndarray:
        if identif_config is not None and identif_config.get("act_idxv") is not None:
            idx = np.asarray(identif_config["act_idxv"], dtype=int).ravel()
            if idx.size and (idx.min() < 0 or idx.max() >= self.nv):
                raise RegressorShapeError(
                    f"identif_config['act_idxv'] = {idx.tolist()} has indices outside "
                    f"[0, {self.nv}); they must be velocity indices (joint.idx_v)"
                )
            return idx
        return np.asarray(default_active_dofs(self.model), dtype=int)

    # ------------------------------------------------------------------ public
    def build_basic_regressor(self, q, v, a, identif_config=None) -> np.ndarray:
        """Build the regressor of N samples.

        Args:
            q: Joint configurations (N, nq) or (nq,) [rad, m].
            v: Joint velocities (N, nv) or (nv,) [rad/s].
            a: Joint accelerations (N, nv) or (nv,) [rad/s²].
            identif_config: Settings; ``act_idxv`` selects the DOFs that get
                extra (friction/armature/offset) entries (default: every
                1-DoF joint); ``force_torque`` in wrench mode.

        Returns:
            Joint-torque mode: (N·nv, 10·nbodies + n_extra·nv).
            External-wrench mode: (6·N, (10 + additional_columns)·nbodies).

        Raises:
            RegressorShapeError: Wrong widths, NaN/inf, inconsistent sample counts.
            ValueError: Neither joint-torque nor external-wrench mode.
        """
        Q, V, A, N = self._normalize_inputs(q, v, a)
        if self.config.is_joint_torques:
            return self._build_joint_torque_regressor(Q, V, A, N, identif_config)
        if self.config.is_external_wrench:
            return self._build_external_wrench_regressor(Q, V, A, N, identif_config)
        raise ValueError("Must specify either joint_torques or external_wrench mode")

    # ------------------------------------------------------------------ modes
    def _inertial_block(self, Q, V, A, N, ncols: int, out: np.ndarray | None = None) -> np.ndarray:
        """(nv, N, ncols) array with the inertial regressor in its first 10·nbodies columns.

        Writes only those columns of ``out`` (allocated zeroed when ``None``).
        """
        # zeros: the kernel maps zeroed pages as they are first written, so the
        # extra columns need no separate zeroing pass
        W3 = np.zeros((self.nv, N, ncols)) if out is None else out
        batch = getattr(self.backend, "compute_regressor_batch", None)
        if batch is not None:
            batch(Q, V, A, out=W3)
        else:
            n_in = 10 * self.nbodies
            for i in range(N):
                Y = np.asarray(self.backend.compute_regressor(Q[i], V[i], A[i]))
                W3[:, i, :n_in] = Y.reshape(self.nv, -1)[:, :n_in]
        return W3

    def _extra_signals(self, V, A, N, identif_config) -> np.ndarray:
        """(n_blocks, nv, N) entries of the extra blocks; zero rows for inactive DOFs."""
        terms = self.config.enabled_terms()
        dofs = self._active_dofs(identif_config)
        S = np.zeros((len(terms), self.nv, N))
        dq, ddq = V.T[dofs], A.T[dofs]
        deadband = float(self.config.coulomb_deadband)
        for b, row in enumerate(terms):
            S[b, dofs] = row.evaluate(dq, ddq, deadband)
        return S

    def _build_joint_torque_regressor(self, Q, V, A, N, identif_config) -> np.ndarray:
        ncols = self.n_columns
        W3 = np.zeros((self.nv, N, ncols))
        if not self.config.extra_blocks():
            self._inertial_block(Q, V, A, N, ncols, out=W3)
            return W3.reshape(self.nv * N, ncols)
        S = self._extra_signals(V, A, N, identif_config)
        extra = _extra_block_diagonals(W3, 10 * self.nbodies, S.shape[0])
        if W3.nbytes < _OVERLAP_MIN_BYTES:
            np.copyto(extra, S)
            self._inertial_block(Q, V, A, N, ncols, out=W3)
        else:
            # The extra columns and the inertial columns are disjoint elements
            # of W3, so a second thread can write the former while this one
            # runs the Pinocchio loop. numpy releases the GIL during the copy,
            # and its first touch of every page moves the kernel's page
            # zeroing (most of the cost of a fresh array of this size) off the
            # loop's path.
            writer = _BackgroundCopy(extra, S)
            writer.start()
            try:
                self._inertial_block(Q, V, A, N, ncols, out=W3)
            finally:
                writer.join()
        return W3.reshape(self.nv * N, ncols)

    def _build_external_wrench_regressor(self, Q, V, A, N, identif_config) -> np.ndarray:
        root = self.model.joints[1] if self.model.njoints > 1 else None
        if root is None or root.nv != 6:
            raise RegressorShapeError(
                "External-wrench mode needs a floating-base model (a free-flyer root joint "
                "with 6 DOFs: load the robot with isFext=True)"
            )
        n_in = 10 * self.nbodies
        extra = int(self.config.additional_columns)
        ncols = (10 + extra) * self.nbodies
        W3 = self._inertial_block(Q, V, A, N, n_in)
        components = self.config.force_torque
        if identif_config is not None and components is None:
            components = identif_config.get("force_torque")
        if components is None or components == "All" or list(components) == ["All"]:
            components = list(WRENCH_COMPONENTS)
        idx = []
        for name in components:
            if name not in WRENCH_COMPONENTS:
                raise ValueError(
                    f"force_torque component {name!r} is unknown; "
                    f"use a subset of {WRENCH_COMPONENTS}"
                )
            idx.append(WRENCH_COMPONENTS.index(name))
        W = np.zeros((6, N, ncols))
        W[idx, :, :n_in] = W3[idx, :, :n_in]
        return W.reshape(6 * N, ncols)


def _deadband_value(value) -> float:
    """``identif_config["coulomb_deadband"]`` as a float (None: 0, no dead band).

    Raises:
        RegressorConfigError: Not a number (checked again by :class:`RegressorConfig`).
    """
    if value is None:
        return 0.0
    try:
        return float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        raise RegressorConfigError(
            "coulomb_deadband (problem.coulomb_deadband) must be a finite speed >= 0 "
            f"[rad/s or m/s], got {value!r}"
        ) from None


def build_regressor_basic(robot, q, v, a, identif_config, tau=None) -> np.ndarray:
    """Build the regressor from an ``identif_config`` dict (legacy entry point).

    Args:
        robot: Robot with a Pinocchio model (see :class:`RegressorBuilder`).
        q: Configurations (N, nq) [rad, m].
        v: Velocities (N, nv) [rad/s].
        a: Accelerations (N, nv) [rad/s²].
        identif_config: Flags ``has_friction``, ``has_actuator_inertia``,
            ``has_joint_offset`` and any other ``enable_key`` of
            :data:`~figaroh.tools.joint_terms.JOINT_TERMS` (default False
            here), ``is_joint_torques``
            (default True), ``is_external_wrench``, ``force_torque``,
            ``act_idxv`` and the optional ``coulomb_deadband`` [rad/s or m/s]
            (default 0: ``sign(dq)`` everywhere).
        tau: Unused; kept for backward compatibility.

    Returns:
        The regressor (see :meth:`RegressorBuilder.build_basic_regressor`).

    Raises:
        RegressorConfigError: ``coulomb_deadband`` negative, not finite or not a number.
    """
    identif_config = identif_config or {}
    flags = {key: bool(identif_config.get(key, False)) for key in joint_terms.enable_keys()}
    config = RegressorConfig(
        **{key: bool(identif_config.get(key, False)) for key in _NAMED_FLAGS},
        is_joint_torques=bool(identif_config.get("is_joint_torques", True)),
        is_external_wrench=bool(identif_config.get("is_external_wrench", False)),
        force_torque=identif_config.get("force_torque", None),
        additional_columns=len(joint_terms.enabled_terms(flags)),
        coulomb_deadband=_deadband_value(identif_config.get("coulomb_deadband")),
        extra_flags={k: v for k, v in flags.items() if k not in _NAMED_FLAGS},
    )
    return RegressorBuilder(robot, config).build_basic_regressor(q, v, a, identif_config)


# ---------------------------------------------------------------------- column elimination
def _column_sq_norms(W: np.ndarray) -> np.ndarray:
    W = np.asarray(W, dtype=float)
    if W.ndim != 2:
        raise RegressorShapeError(f"W must be a 2-D regressor matrix, got shape {W.shape}")
    return np.einsum("ij,ij->j", W, W)


def _param_keys(params_std, n_cols: int) -> list[str]:
    keys = list(params_std.keys()) if hasattr(params_std, "keys") else list(params_std)
    if len(keys) < n_cols:
        raise RegressorShapeError(
            f"params_std has {len(keys)} names but W has {n_cols} columns; build both with the "
            f"same identif_config flags (has_friction, has_actuator_inertia, has_joint_offset)"
        )
    return keys


def get_index_eliminate(W, params_std, tol_e: float = 1e-6) -> tuple[list[int], list[str]]:
    """Columns whose squared norm ``‖W[:, i]‖²`` is below ``tol_e``.

    Args:
        W: Regressor (rows, n).
        params_std: Parameter names (a mapping or sequence) of W's columns.
        tol_e: Threshold on the squared column norm (strict ``<``).

    Returns:
        ``(idx_e, params_r)``: eliminated column indices and remaining names.
    """
    norms = _column_sq_norms(W)
    keys = _param_keys(params_std, norms.size)
    idx_e = np.flatnonzero(norms < tol_e).tolist()
    params_r = [keys[i] for i in np.flatnonzero(norms >= tol_e)]
    return idx_e, params_r


def eliminate_non_dynaffect(W, params_std, tol_e: float = 1e-6) -> tuple[np.ndarray, list[str]]:
    """Drop columns whose squared norm is below ``tol_e``.

    Returns:
        ``(W_reduced, params_r)``: the kept columns and their names.
    """
    norms = _column_sq_norms(W)
    keys = list(params_std.keys()) if hasattr(params_std, "keys") else list(params_std)
    keep = np.flatnonzero((norms >= tol_e) & (np.arange(norms.size) < len(keys)))
    return np.asarray(W)[:, keep], [keys[i] for i in keep]


def build_regressor_reduced(W, idx_e) -> np.ndarray:
    """``W`` without the columns ``idx_e``."""
    return np.delete(np.asarray(W), list(idx_e), axis=1)


# ---------------------------------------------------------------------- total least squares
def _payload_columns(W_l: np.ndarray, param_standard_l, body: int) -> tuple[np.ndarray, np.ndarray]:
    """Loaded body's inertial columns except the mass (reduced) and its mass column."""
    start = 10 * body
    if W_l.shape[1] < start + 10:
        raise RegressorShapeError(
            f"W_l has {W_l.shape[1]} columns; loaded body {body} needs columns {start}…{start + 9}"
        )
    others = W_l[:, start + 1 : start + 10]
    keys = (
        list(param_standard_l.keys())
        if hasattr(param_standard_l, "keys")
        else list(param_standard_l)
    )
    names = keys[start + 1 : start + 10] if len(keys) >= start + 10 else [f"p{i}" for i in range(9)]
    others_r, _ = eliminate_non_dynaffect(others, names, 1e-6)
    return others_r, W_l[:, start : start + 1]


def _block_diagonal_measurements(values: np.ndarray, n_blocks: int) -> np.ndarray:
    """(n_blocks·n, n_blocks) matrix with block k of ``values`` in column k."""
    n = values.size // n_blocks
    out = np.zeros((values.size, n_blocks))
    rows = np.arange(values.size)
    out[rows, rows // n] = values[: n * n_blocks]
    return out


def _tls_solve(W_tot: np.ndarray, mass_load: float) -> tuple[np.ndarray, np.ndarray]:
    _, _, Vh = np.linalg.svd(W_tot, full_matrices=False)
    v = Vh[-1]
    if abs(v[-1]) < 1e-12:
        raise RegressorShapeError(
            "Total least squares is degenerate: the payload mass column does not enter the "
            "null space (is the payload moving, and which_body_loaded correct?)"
        )
    V_norm = float(mass_load) * v / v[-1]
    return V_norm, W_tot @ V_norm


def build_total_regressor_current(W_b_u, W_b_l, W_l, I_u, I_l, param_standard_l, identif_config):
    """Total-least-squares regressor with motor currents and a known payload mass.

    The unknowns are the base parameters, one current-to-torque gain per joint
    for each of the two experiments, the payload's inertial parameters and its
    mass; the solution is the last right singular vector of the stacked system,
    scaled so that the payload mass equals ``identif_config["mass_load"]``.

    Args:
        W_b_u: Base regressor without payload (n·N, n_b).
        W_b_l: Base regressor with payload (n·N, n_b).
        W_l: Full standard regressor with payload (n·N, ≥10·(body+1)).
        I_u: Joint currents without payload, joint-major (n·N,) [A].
        I_l: Joint currents with payload, joint-major (n·N,) [A].
        param_standard_l: Standard parameter names of ``W_l``'s columns.
        identif_config: ``nb_samples`` (N), ``which_body_loaded``, ``mass_load`` [kg].

    Returns:
        ``(W_tot, V_norm, residue)`` with ``residue = W_tot @ V_norm``.
    """
    W_b_u, W_b_l, W_l = (np.asarray(x, float) for x in (W_b_u, W_b_l, W_l))
    I_u, I_l = np.asarray(I_u, float).ravel(), np.asarray(I_l, float).ravel()
    n_samples = int(identif_config["nb_samples"])
    if n_samples <= 0 or I_u.size % n_samples or I_l.size != I_u.size:
        raise RegressorShapeError(
            f"I_u ({I_u.size}) and I_l ({I_l.size}) must have the same length, a multiple of "
            f"identif_config['nb_samples'] = {n_samples}"
        )
    nb_joints = I_u.size // n_samples
    W_current = np.vstack(
        [
            _block_diagonal_measurements(I_u, nb_joints),
            _block_diagonal_measurements(I_l, nb_joints),
        ]
    )
    body = int(identif_config["which_body_loaded"])
    others, mass = _payload_columns(W_l, param_standard_l, body)
    zeros = np.zeros_like
    W_tot = np.hstack(
        [
            np.vstack([-W_b_u, -W_b_l]),
            W_current,
            np.vstack([zeros(others), -others]),
            np.vstack([zeros(mass), -mass]),
        ]
    )
    V_norm, residue = _tls_solve(W_tot, identif_config["mass_load"])
    return W_tot, V_norm, residue


def build_total_regressor_wrench(W_b_u, W_b_l, W_l, tau_u, tau_l, param_standard_l, identif_config):
    """Total-least-squares regressor with measured wrenches and a known payload mass.

    Same unknowns as :func:`build_total_regressor_current`, with one scale per
    wrench component (6 blocks of ``len/6`` samples) instead of per-joint gains.

    Args:
        W_b_u: Base regressor without payload (6·N, n_b).
        W_b_l: Base regressor with payload (6·N, n_b).
        W_l: Full standard regressor with payload.
        tau_u: Measured wrench without payload, component-major (6·N,) [N, N·m].
        tau_l: Measured wrench with payload, component-major (6·N,) [N, N·m].
        param_standard_l: Standard parameter names of ``W_l``'s columns.
        identif_config: ``which_body_loaded`` and ``mass_load`` [kg].

    Returns:
        ``(W_tot, V_norm, residue)``.
    """
    W_b_u, W_b_l, W_l = (np.asarray(x, float) for x in (W_b_u, W_b_l, W_l))
    tau_u, tau_l = np.asarray(tau_u, float).ravel(), np.asarray(tau_l, float).ravel()
    if tau_u.size % 6 or tau_l.size % 6:
        raise RegressorShapeError(
            f"tau_u ({tau_u.size}) and tau_l ({tau_l.size}) must hold 6 wrench components "
            "per sample"
        )
    W_tau = np.vstack(
        [_block_diagonal_measurements(tau_u, 6), _block_diagonal_measurements(tau_l, 6)]
    )
    body = int(identif_config["which_body_loaded"])
    start = 10 * body
    if W_l.shape[1] < start + 10:
        raise RegressorShapeError(
            f"W_l has {W_l.shape[1]} columns; loaded body {body} needs columns {start}…{start + 9}"
        )
    others, mass = W_l[:, start + 1 : start + 10], W_l[:, start : start + 1]
    W_tot = np.hstack(
        [
            np.vstack([-W_b_u, -W_b_l]),
            W_tau,
            np.vstack([np.zeros_like(others), -others]),
            np.vstack([np.zeros_like(mass), -mass]),
        ]
    )
    V_norm, residue = _tls_solve(W_tot, identif_config["mass_load"])
    return W_tot, V_norm, residue
