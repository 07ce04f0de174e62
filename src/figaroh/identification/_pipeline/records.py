"""Frozen records passed between the identification steps.

Every step of :mod:`figaroh.identification._pipeline` is a plain function from
these records (and arrays) to a record; none of them sees the
``BaseIdentification`` object. Arrays inside a record are not copied: a record
is frozen (its fields cannot be rebound), the arrays are treated as read-only
by every step.

Row convention: efforts and regressor rows are stacked joint-major, row
``j·N + i`` is joint ``j`` at sample ``i``; efforts are in N·m (revolute) or N
(prismatic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Tuple

import numpy as np

from figaroh.identification.settings import DEFAULT_SETTINGS

__all__ = [
    "BaseFit",
    "FitOptions",
    "FitProblem",
    "IdentificationRun",
    "PhysicalInputs",
    "PhysicalOutcome",
    "Quality",
    "Settings",
    "SignalSet",
]


@dataclass(frozen=True)
class Settings:
    """Model layout and identification settings every step may read.

    Attributes:
        config: The flat identification settings (``identif_config``).
        nv: Number of velocity DOF of the model.
        q0: Neutral configuration (nq,) the inactive joints stay at.
        act_idxq: Configuration index of each active joint.
        act_idxv: Velocity index of each active joint.
        continuous: Per active joint, True for a cos/sin (nq = 2) joint.
        active_joints: Active joint names, in active order.
        effort_units: ``"N·m"`` or ``"N"`` per active joint.
        tol_qr: Absolute QR rank tolerance.
    """

    config: Mapping[str, Any]
    nv: int
    q0: np.ndarray
    act_idxq: Tuple[int, ...]
    act_idxv: Tuple[int, ...]
    continuous: Tuple[bool, ...]
    active_joints: Tuple[str, ...]
    effort_units: Tuple[str, ...]
    tol_qr: float = 1e-6

    @property
    def n_active(self) -> int:
        """Number of active joints (effort blocks before joint selection)."""
        return len(self.act_idxv)

    @property
    def torque_fit_joints(self) -> Tuple[str, ...] | None:
        """``config["torque_fit_joints"]`` as a tuple, or None (every active joint)."""
        chosen = self.config.get("torque_fit_joints")
        return None if chosen is None else tuple(chosen)


@dataclass(frozen=True)
class SignalSet:
    """Conditioned signals of one trajectory, on the full model configuration.

    Attributes:
        timestamps: (N,) or (N, 1) sample times [s], or None (not recorded).
        positions: (N, nq) configurations.
        velocities: (N, nv) [rad/s or m/s].
        accelerations: (N, nv) [rad/s² or m/s²].
        torques: (N, n_active) measured efforts [N·m or N].
        mask: (N,) valid-sample mask, or None (every sample valid).
    """

    timestamps: np.ndarray | None
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    torques: np.ndarray
    mask: np.ndarray | None = None

    @property
    def num_samples(self) -> int:
        """Number of samples N."""
        return int(np.shape(self.positions)[0])


@dataclass(frozen=True)
class FitOptions:
    """How the fit rows are built.

    Attributes:
        decimate: Low-pass and down-sample the rows by ``decimation_factor``.
        decimation_factor: Down-sampling factor (default: see
            :class:`~figaroh.identification.settings.IdentificationSettings`).
        zero_tolerance: Squared column norm under which a regressor column is
            dropped (default: see ``IdentificationSettings``).
        apply_mask: Drop the rows of masked samples (``solve``; the custom
            solver path of figaroh 1.0.2 keeps them).
    """

    decimate: bool = False
    decimation_factor: int = DEFAULT_SETTINGS.decimation_factor
    zero_tolerance: float = DEFAULT_SETTINGS.zero_tolerance
    apply_mask: bool = True


@dataclass(frozen=True)
class FitProblem:
    """The linear system ``tau ≈ W · θ_r`` the base fit solves.

    Attributes:
        tau: (rows,) fitted efforts, stacked joint-major [N·m or N].
        W: (rows, p) reduced regressor of the fitted rows.
        W_reduced: (N·nv, p) full-row regressor without the eliminated columns
            (None when the caller has none, e.g. a hook given only the fitted rows).
        active_params: Names of the ``p`` kept standard parameters.
        idx_eliminated: Indices of the dropped standard columns.
        tau_decimated: Decimated efforts before masking/joint selection (or None).
        W_decimated: Decimated regressor before masking/joint selection (or None).
    """

    tau: np.ndarray
    W: np.ndarray
    W_reduced: np.ndarray | None
    active_params: Tuple[str, ...]
    idx_eliminated: Tuple[int, ...]
    tau_decimated: np.ndarray | None = None
    W_decimated: np.ndarray | None = None


@dataclass(frozen=True)
class BaseFit:
    """Base-parameter estimate ``phi_base`` of a :class:`FitProblem`.

    Attributes:
        W_b: (rows, n_base) base regressor.
        phi_base: (n_base,) estimate.
        params_base: Base-parameter expressions.
        tau_noised: (rows,) fitted efforts [N·m or N].
        tau_identif: (rows,) ``W_b @ phi_base`` [N·m or N].
        qr: The QR decomposition result (None for a fit without it).
        M: Base-to-reduced map of the QR step (None without it).
        params_r: Reduced parameter names of the QR step (None without it).
        base_indices: Reduced columns that are base columns (None without it).
        extra: Additional entries of the fit-results dict (custom solver info).
    """

    W_b: np.ndarray
    phi_base: np.ndarray
    params_base: Tuple[str, ...]
    tau_noised: np.ndarray
    tau_identif: np.ndarray
    qr: Any = None
    M: np.ndarray | None = None
    params_r: Tuple[str, ...] | None = None
    base_indices: Tuple[int, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Quality:
    """Quality indicators of a :class:`BaseFit`.

    Attributes:
        std_relative: Relative standard deviation of each base parameter [%]
            (None when an overriding quality hook did not compute it, likewise
            the next two).
        rms_error: Effort RMSE over the fitted rows [N·m or N].
        correlation: Pearson correlation of measured and fitted efforts.
        condition_number: Condition number of the base regressor.
    """

    std_relative: np.ndarray | None
    rms_error: float | None
    correlation: float | None
    condition_number: float


@dataclass(frozen=True)
class PhysicalInputs:
    """What the physical steps (consistency, reconstruction, physical fit, selection) read.

    Attributes:
        config: The flat identification settings.
        model: Pinocchio model (URDF prior, CAD constraints).
        joint_names: Model joint names without the universe, in model order.
        standard_parameter: Nominal standard parameters, in regressor column order.
        phi_base: The fitted base parameters (WLS included).
        M: Base-to-reduced map of the QR step (None without it).
        params_r: Reduced parameter names of the QR step (None without it).
        W: (rows, p) reduced regressor of the fitted rows (None before a fit).
        tau: (rows,) fitted efforts [N·m or N].
        idx_eliminated: Standard columns dropped before the QR step.
        row_weight: WLS row weights ``1/sqrt(σ²)`` of the fitted rows, or None.
        fit_joints: Names of the fitted joints (one effort block each).
    """

    config: Mapping[str, Any]
    model: Any
    joint_names: Tuple[str, ...]
    standard_parameter: Mapping[str, float]
    phi_base: np.ndarray | None = None
    M: np.ndarray | None = None
    params_r: Tuple[str, ...] | None = None
    W: np.ndarray | None = None
    tau: np.ndarray | None = None
    idx_eliminated: Tuple[int, ...] = ()
    row_weight: np.ndarray | None = None
    fit_joints: Tuple[str, ...] = ()


@dataclass(frozen=True)
class PhysicalOutcome:
    """Results of the physical steps (each entry None when the step did not run).

    Attributes:
        consistency: ``result["physical consistency"]`` entry.
        reconstruction: ``result["reconstruction"]`` entry.
        recon_result: The reconstruction solver result (``as_dict()`` → θ_r).
        physical_fit: Outcome of the direct LMI fit.
        physical_fit_entry: ``result["physical_fit"]`` entry.
        selected: The selected standard-space estimate.
        selected_entry: ``result["selected"]`` entry.
    """

    consistency: Mapping[str, Any] | None = None
    reconstruction: Mapping[str, Any] | None = None
    recon_result: Any = None
    physical_fit: Mapping[str, Any] | None = None
    physical_fit_entry: Mapping[str, Any] | None = None
    selected: Any = None
    selected_entry: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class IdentificationRun:
    """Everything one ``solve`` produced, step by step.

    The orchestrator starts it at step ``fit_rows`` (``settings``,
    ``options``) and fills the other fields as the steps run; a field stays
    None when its step did not run (or a subclass hook replaced it).

    Attributes:
        settings: The :class:`Settings` of the run.
        options: The :class:`FitOptions` the fit rows were built with.
        problem: The fitted :class:`FitProblem`.
        fit: The :class:`BaseFit` (after WLS refinement when requested).
        quality: The :class:`Quality` of ``fit``.
        physical: The :class:`PhysicalOutcome` (None before the physical steps).
        validation: Held-out validation metrics (None when not computed).
    """

    settings: Settings
    options: FitOptions | None = None
    problem: FitProblem | None = None
    fit: BaseFit | None = None
    quality: Quality | None = None
    physical: PhysicalOutcome | None = None
    validation: Mapping[str, Any] | None = None
