"""Step 2 — fit rows: the linear system ``tau ≈ W · θ_r`` of the base fit.

In order (:func:`build_fit_problem`): drop the regressor columns that never
affect the efforts (squared column norm under ``zero_tolerance``), keep the
active joint blocks (optionally low-passed and down-sampled by
``decimation_factor``), drop the rows of masked samples and keep the blocks
of the fitted joints (``torque_fit_joints``). Each sub-step is a callable of
:class:`RowSteps`: :func:`row_steps` gives this module's functions, the
orchestrator passes its overridable methods instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh.identification._pipeline.records import FitOptions, FitProblem, Settings, SignalSet
from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.tools.regressor import get_index_eliminate

__all__ = [
    "RowSteps",
    "active_blocks",
    "build_fit_problem",
    "check_decimated_rows",
    "decimate_regressor",
    "decimate_signals",
    "decimate_torques",
    "decimated_rows",
    "eliminate_zero_columns",
    "fit_blocks",
    "fit_joint_names",
    "joint_blocks",
    "mask_fit_rows",
    "row_steps",
    "select_fit_joint_rows",
    "undecimated_rows",
]

#: Rows per chunk of the transposing copy of :func:`eliminate_zero_columns`
#: (a chunk of the source and of the destination stay in cache).
_TRANSPOSE_CHUNK = 1024


def fit_joint_names(settings: Settings) -> List[str]:
    """Active joints whose effort rows enter the fit, in active order.

    Raises:
        IdentificationConfigError: Unknown or empty ``torque_fit_joints``.
    """
    active = list(settings.active_joints)
    chosen = settings.torque_fit_joints
    if chosen is None:
        return active
    unknown = [j for j in chosen if j not in active]
    if unknown:
        raise IdentificationConfigError(
            f"torque_fit_joints {unknown} are not active joints {active} "
            "(problem.torque_fit_joints)"
        )
    if not chosen:
        raise IdentificationConfigError("torque_fit_joints is empty: nothing to fit")
    return [j for j in active if j in chosen]


def joint_blocks(active_joints: Sequence[str], names: Sequence[str]) -> List[int]:
    """Active-block index of each joint of ``names``, in active order."""
    chosen = set(names)
    return [i for i, name in enumerate(active_joints) if name in chosen]


def fit_blocks(settings: Settings) -> List[int]:
    """Active-block index of each fitted joint."""
    return joint_blocks(settings.active_joints, fit_joint_names(settings))


def eliminate_zero_columns(
    W: np.ndarray,
    standard_parameter: Mapping[str, float],
    zero_tolerance: float,
    column_major: bool = False,
) -> Tuple[np.ndarray, List[str], List[int]]:
    """Drop the columns whose squared norm is under ``zero_tolerance``.

    The column norms are computed once (one pass over ``W``); the reduced
    regressor is always a new array (never a view of ``W``).

    Args:
        W: (rows, n_std) regressor.
        standard_parameter: Standard parameters, ordered like the columns.
        zero_tolerance: Squared column norm under which a column is dropped.
        column_major: Lay the reduced regressor out column by column
            (Fortran order: each column's samples contiguous, the layout the
            decimation filters along); the values are the same.

    Returns:
        ``(W_reduced, active_params, idx_eliminated)``.
    """
    idx_e, params_r = get_index_eliminate(W, standard_parameter, tol_e=zero_tolerance)
    keep = np.setdiff1d(np.arange(W.shape[1]), idx_e)
    if not column_major:
        # np.take along axis 1 copies row by row, about twice as fast as W[:, keep]
        return np.take(W, keep, axis=1), params_r, list(idx_e)
    columns = np.empty((keep.size, W.shape[0]))  # W_reduced.T, C-contiguous
    for start in range(0, W.shape[0], _TRANSPOSE_CHUNK):
        stop = start + _TRANSPOSE_CHUNK
        columns[:, start:stop] = W[start:stop, keep].T
    return columns.T, params_r, list(idx_e)


def active_blocks(W: np.ndarray, n: int, settings: Settings) -> np.ndarray:
    """(n_active, n, p) array of the active DOF blocks of a stacked regressor.

    A view (no copy) when ``W`` is C-contiguous and every DOF is active in
    model order.
    """
    idx = np.asarray(settings.act_idxv, dtype=int)
    blocks = W.reshape(settings.nv, n, W.shape[1])
    if _every_dof_active(settings):
        return blocks
    active: np.ndarray = blocks[idx]
    return active


def _every_dof_active(settings: Settings) -> bool:
    idx = np.asarray(settings.act_idxv, dtype=int)
    return idx.size == settings.nv and np.array_equal(idx, np.arange(settings.nv))


def decimate_signals(x: np.ndarray, factor: int, axis: int = 0) -> np.ndarray:
    """Anti-aliased down-sampling by ``factor`` along ``axis`` (zero phase).

    ``scipy.signal.decimate(x, factor, zero_phase=True, axis=axis)`` (order-8
    Chebyshev type I, forward-backward), so sample ``k`` of the output is
    sample ``k·factor`` of the input; ``factor == 1`` returns ``x`` as floats.

    Raises:
        ValueError: ``factor < 1``, or no more than ``27·factor`` samples (the
            padding of the forward-backward filter).
    """
    from scipy import signal  # heavy import (~1 s), only where used

    factor = int(factor)
    if factor < 1:
        raise ValueError(f"decimation_factor must be ≥ 1, got {factor}")
    if factor == 1:
        return np.asarray(x, dtype=float)
    n = np.asarray(x).shape[axis]
    if n <= 27 * factor:  # filtfilt padding of the order-8 filter
        raise ValueError(
            f"decimation by {factor} needs more than {27 * factor} samples, got {n}; "
            "use a smaller decimation_factor or decimate=False"
        )
    out: np.ndarray = signal.decimate(
        np.asarray(x, dtype=float), factor, zero_phase=True, axis=axis
    )
    return out


def decimate_torques(torques: np.ndarray, n: int, factor: int) -> np.ndarray:
    """Decimated efforts of the active joints, stacked joint-major.

    Column ``j`` of ``torques`` (N, n_active) [N·m or N] goes through
    ``scipy.signal.decimate(·, factor, zero_phase=True)`` (one call on the
    whole array along the time axis: each column gets exactly the result of
    its own call); the ``n_active`` results of ``ceil(N/factor)`` samples are
    concatenated.
    """
    torques = np.asarray(torques, float).reshape(n, -1)
    stacked: np.ndarray = decimate_signals(torques, factor, axis=0).T.reshape(-1)
    return stacked


def decimate_regressor(W_red: np.ndarray, n: int, factor: int, settings: Settings) -> np.ndarray:
    """Decimated regressor of the active joint blocks, stacked joint-major.

    Every column of every active block (rows ``act_idxv[j]·N … +N``) goes
    through ``scipy.signal.decimate(·, factor, zero_phase=True)``, as if
    decimated on its own: the columns go through one call, along the time
    axis, in the layout of ``W_red`` — with a column-major ``W_red`` (see
    :func:`eliminate_zero_columns`) the time axis is already the contiguous
    last axis of a ``(p, nv, N)`` view, the layout scipy filters in, so no
    transposed copy is made before the filter. The result is C-contiguous,
    ``(n_active·ceil(N/factor), p)``.

    Args:
        W_red: (N·nv, p) reduced regressor (any memory layout).
        n: Number of samples N.
        factor: Decimation factor.
        settings: Model layout (``nv``, ``act_idxv``).
    """
    p = W_red.shape[1]
    columns = W_red.T
    if columns.flags.c_contiguous:
        per_column = columns.reshape(p, settings.nv, n)
        if not _every_dof_active(settings):
            per_column = per_column[:, np.asarray(settings.act_idxv, dtype=int), :]
        dec = decimate_signals(per_column, factor, axis=2)  # (p, n_active, L)
        contiguous: np.ndarray = dec.transpose(1, 2, 0).reshape(-1, p)
        return contiguous
    dec = decimate_signals(active_blocks(W_red, n, settings), factor, axis=1)
    rows: np.ndarray = dec.reshape(-1, p)
    return rows


def decimated_rows(
    torques: np.ndarray, W_red: np.ndarray, n: int, factor: int, settings: Settings
) -> Tuple[np.ndarray, np.ndarray]:
    """Low-pass and down-sample efforts and regressor blocks by ``factor``.

    Returns:
        ``(tau, W)`` stacked joint-major (:func:`decimate_torques`,
        :func:`decimate_regressor`).

    Raises:
        ValueError: The decimated regressor and efforts disagree in length.
    """
    tau = decimate_torques(torques, n, factor)
    W = decimate_regressor(W_red, n, factor, settings)
    check_decimated_rows(tau, W)
    return tau, W


def check_decimated_rows(tau: np.ndarray, W: np.ndarray) -> None:
    """Raise ``ValueError`` unless the decimated efforts and regressor have as many rows."""
    if W.shape[0] != tau.shape[0]:
        raise ValueError(
            f"Decimated data size mismatch: {W.shape[0]} regressor rows, {tau.shape[0]} torques"
        )


def undecimated_rows(
    torques: np.ndarray, W_reduced: np.ndarray, n: int, settings: Settings
) -> Tuple[np.ndarray, np.ndarray]:
    """Efforts and regressor rows of the active joint blocks, stacked joint-major."""
    tau = np.asarray(torques, float).reshape(n, -1).T.reshape(-1)
    W = active_blocks(W_reduced, n, settings).reshape(-1, W_reduced.shape[1])
    return tau, W


def mask_fit_rows(
    tau: np.ndarray,
    W: np.ndarray,
    mask: np.ndarray | None,
    n_active: int,
    factor: int = 1,
) -> Tuple[np.ndarray, np.ndarray]:
    """Drop the rows of masked samples from a joint-major stacked system.

    Decimated sample ``k`` is original sample ``k·factor``, so the kept samples
    are ``mask[::factor]`` and the kept rows ``np.tile(mask[::factor], n_active)``.

    Args:
        tau: (n_active·N,) stacked efforts [N·m or N].
        W: (n_active·N, p) regressor.
        mask: (n,) bool valid-sample mask, or None (inputs returned unchanged).
        n_active: Number of active joint blocks.
        factor: Decimation factor (1 without decimation).

    Returns:
        ``(tau[rows], W[rows])``.

    Raises:
        ValueError: ``"cannot apply the sample mask: …"`` on inconsistent sizes.
    """
    if mask is None:
        return tau, W
    factor = int(factor)
    if factor < 1:
        raise ValueError(f"cannot apply the sample mask: decimation factor {factor} < 1")
    kept = np.asarray(mask, dtype=bool)[::factor]
    if len(tau) != n_active * len(kept):
        raise ValueError(
            f"cannot apply the sample mask: {len(tau)} effort rows for {n_active} active "
            f"joints × {len(kept)} samples (mask of {len(mask)} samples, factor {factor})"
        )
    if W.shape[0] != len(tau):
        raise ValueError(
            f"cannot apply the sample mask: regressor has {W.shape[0]} rows but the "
            f"effort has {len(tau)}"
        )
    rows = np.tile(kept, n_active)
    return tau[rows], W[rows]


def select_fit_joint_rows(
    tau: np.ndarray, W: np.ndarray, n_active: int, blocks: Sequence[int]
) -> Tuple[np.ndarray, np.ndarray]:
    """Keep the joint blocks ``blocks`` (active-block indices) of the rows.

    The rows split into ``n_active`` blocks of equal length; the arrays are
    returned unchanged when every block is kept in order.

    Raises:
        IdentificationConfigError: ``blocks`` is empty.
    """
    blocks = [int(b) for b in blocks]
    if blocks == list(range(n_active)):
        return tau, W
    if not blocks:
        raise IdentificationConfigError("no joint to fit: fit_joints() selected no active joint")
    L = len(tau) // n_active
    rows = np.concatenate([np.arange(b * L, (b + 1) * L) for b in blocks])
    return tau[rows], W[rows]


@dataclass(frozen=True)
class RowSteps:
    """The sub-steps of :func:`build_fit_problem`, in run order.

    Attributes:
        eliminate_zero_columns: ``(zero_tolerance) → (W_reduced, active_params)``:
            the regressor without its zero columns and the kept parameter names.
        apply_decimation: ``(W_reduced, factor) → (tau, W)``: decimated rows of
            the active joint blocks.
        prepare_undecimated_data: ``(W_reduced) → (tau, W)``: every row of the
            active joint blocks.
        mask_rows: ``(tau, W, factor) → (tau, W)``: without the rows of masked
            samples.
        select_fit_rows: ``(tau, W) → (tau, W)``: the blocks of the fitted joints.
    """

    eliminate_zero_columns: Callable[[float], Tuple[np.ndarray, Sequence[str]]]
    apply_decimation: Callable[[np.ndarray, int], Tuple[np.ndarray, np.ndarray]]
    prepare_undecimated_data: Callable[[np.ndarray], Tuple[np.ndarray, np.ndarray]]
    mask_rows: Callable[[np.ndarray, np.ndarray, int], Tuple[np.ndarray, np.ndarray]]
    select_fit_rows: Callable[[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]


def row_steps(
    W_full: np.ndarray,
    standard_parameter: Mapping[str, float],
    signals: SignalSet,
    settings: Settings,
    *,
    column_major: bool = False,
) -> RowSteps:
    """The :class:`RowSteps` of this module for a full regressor and conditioned signals.

    Args:
        W_full: (N·nv, n_std) regressor of ``signals``.
        standard_parameter: Standard parameters, ordered like the columns.
        signals: Conditioned training signals (efforts and sample mask).
        settings: Model layout and settings.
        column_major: Lay the reduced regressor out column-major (faster
            decimation, same values; see :func:`eliminate_zero_columns`).
    """
    n = signals.num_samples

    def eliminate(zero_tolerance: float) -> Tuple[np.ndarray, List[str]]:
        W_red, params_r, _ = eliminate_zero_columns(
            W_full, standard_parameter, zero_tolerance, column_major
        )
        return W_red, params_r

    return RowSteps(
        eliminate_zero_columns=eliminate,
        apply_decimation=lambda W_red, factor: decimated_rows(
            signals.torques, W_red, n, factor, settings
        ),
        prepare_undecimated_data=lambda W_red: undecimated_rows(
            signals.torques, W_red, n, settings
        ),
        mask_rows=lambda tau, W, factor: mask_fit_rows(
            tau, W, signals.mask, settings.n_active, factor
        ),
        select_fit_rows=lambda tau, W: select_fit_joint_rows(
            tau, W, settings.n_active, fit_blocks(settings)
        ),
    )


def build_fit_problem(
    steps: RowSteps, options: FitOptions, standard_names: Sequence[str]
) -> FitProblem:
    """The :class:`FitProblem`: the sub-steps of ``steps`` run in order.

    :attr:`RowSteps.eliminate_zero_columns`, then
    :attr:`RowSteps.apply_decimation` (``options.decimate``) or
    :attr:`RowSteps.prepare_undecimated_data`, then :attr:`RowSteps.mask_rows`
    (``options.apply_mask``; factor ``decimation_factor`` or 1), then
    :attr:`RowSteps.select_fit_rows`.

    Args:
        steps: The sub-steps (:func:`row_steps`, or the orchestrator's hooks).
        options: Decimation, zero tolerance and masking.
        standard_names: Standard parameter names, in column order (the
            eliminated columns are those whose name is not kept).
    """
    W_red, active_params = steps.eliminate_zero_columns(options.zero_tolerance)
    kept = set(active_params)
    idx_e = tuple(i for i, name in enumerate(standard_names) if name not in kept)
    tau_dec = W_dec = None
    if options.decimate:
        tau, W = steps.apply_decimation(W_red, options.decimation_factor)
        tau_dec, W_dec = tau, W
    else:
        tau, W = steps.prepare_undecimated_data(W_red)
    if options.apply_mask:
        tau, W = steps.mask_rows(tau, W, options.decimation_factor if options.decimate else 1)
    tau, W = steps.select_fit_rows(tau, W)
    return FitProblem(
        tau=tau,
        W=W,
        W_reduced=W_red,
        active_params=tuple(active_params),
        idx_eliminated=idx_e,
        tau_decimated=tau_dec,
        W_decimated=W_dec,
    )
