"""Step 2 — fit rows: the linear system ``tau ≈ W · θ_r`` of the base fit.

In order: drop the regressor columns that never affect the efforts
(squared column norm under ``zero_tolerance``), keep the active joint blocks
(optionally low-passed and down-sampled by ``decimation_factor``), drop the
rows of masked samples and keep the blocks of the fitted joints
(``torque_fit_joints``).
"""

from __future__ import annotations

from typing import List, Mapping, Tuple

import numpy as np

from figaroh.data.adoption import mask_rows
from figaroh.identification import _signal
from figaroh.identification._pipeline.records import FitOptions, FitProblem, Settings, SignalSet
from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.tools.regressor import get_index_eliminate

__all__ = [
    "active_blocks",
    "build_fit_problem",
    "decimated_rows",
    "eliminate_zero_columns",
    "fit_blocks",
    "fit_joint_names",
    "mask_fit_rows",
    "select_fit_joint_rows",
    "undecimated_rows",
]


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


def fit_blocks(settings: Settings) -> List[int]:
    """Active-block index of each fitted joint."""
    fit = set(fit_joint_names(settings))
    return [i for i, name in enumerate(settings.active_joints) if name in fit]


def eliminate_zero_columns(
    W: np.ndarray, standard_parameter: Mapping[str, float], zero_tolerance: float
) -> Tuple[np.ndarray, List[str], List[int]]:
    """Drop the columns whose squared norm is under ``zero_tolerance``.

    The column norms are computed once (one pass over ``W``); the reduced
    regressor is always a new array (never a view of ``W``).

    Returns:
        ``(W_reduced, active_params, idx_eliminated)``.
    """
    idx_e, params_r = get_index_eliminate(W, standard_parameter, tol_e=zero_tolerance)
    keep = np.setdiff1d(np.arange(W.shape[1]), idx_e)
    # np.take along axis 1 copies row by row, about twice as fast as W[:, keep]
    return np.take(W, keep, axis=1), params_r, list(idx_e)


def active_blocks(W: np.ndarray, n: int, settings: Settings) -> np.ndarray:
    """(n_active, n, p) array of the active DOF blocks of a stacked regressor.

    A view (no copy) when every DOF is active in model order.
    """
    idx = np.asarray(settings.act_idxv, dtype=int)
    blocks = W.reshape(settings.nv, n, W.shape[1])
    if idx.size == settings.nv and np.array_equal(idx, np.arange(settings.nv)):
        return blocks
    return blocks[idx]


def decimated_rows(
    torques: np.ndarray, W_reduced: np.ndarray, n: int, factor: int, settings: Settings
) -> Tuple[np.ndarray, np.ndarray]:
    """Low-pass and down-sample efforts and regressor blocks by ``factor``.

    Returns:
        ``(tau, W)`` stacked joint-major.

    Raises:
        ValueError: The decimated regressor and efforts disagree in length.
    """
    torques = np.asarray(torques, float).reshape(n, -1)
    tau = _signal.decimate_blocks(torques, factor, axis=0).T.reshape(-1)
    dec = _signal.decimate_blocks(active_blocks(W_reduced, n, settings), factor, axis=1)
    W = dec.reshape(-1, dec.shape[2])
    if W.shape[0] != tau.shape[0]:
        raise ValueError(
            f"Decimated data size mismatch: {W.shape[0]} regressor rows, {tau.shape[0]} torques"
        )
    return tau, W


def undecimated_rows(
    torques: np.ndarray, W_reduced: np.ndarray, n: int, settings: Settings
) -> Tuple[np.ndarray, np.ndarray]:
    """Efforts and regressor rows of the active joint blocks, stacked joint-major."""
    tau = np.asarray(torques, float).reshape(n, -1).T.reshape(-1)
    W = active_blocks(W_reduced, n, settings).reshape(-1, W_reduced.shape[1])
    return tau, W


def mask_fit_rows(
    tau: np.ndarray, W: np.ndarray, mask: np.ndarray | None, settings: Settings, factor: int = 1
) -> Tuple[np.ndarray, np.ndarray]:
    """Drop the rows of masked samples (decimated sample ``k`` is sample ``k·factor``)."""
    return mask_rows(tau, W, mask, settings.n_active, factor)


def select_fit_joint_rows(
    tau: np.ndarray, W: np.ndarray, settings: Settings
) -> Tuple[np.ndarray, np.ndarray]:
    """Keep the blocks of the fitted joints (unchanged without ``torque_fit_joints``)."""
    if settings.torque_fit_joints is None:
        return tau, W
    blocks = fit_blocks(settings)
    L = len(tau) // settings.n_active
    rows = np.concatenate([np.arange(b * L, (b + 1) * L) for b in blocks])
    return tau[rows], W[rows]


def build_fit_problem(
    W_full: np.ndarray,
    standard_parameter: Mapping[str, float],
    signals: SignalSet,
    settings: Settings,
    options: FitOptions,
) -> FitProblem:
    """The :class:`FitProblem` of a full regressor and conditioned signals.

    Args:
        W_full: (N·nv, n_std) regressor of ``signals``.
        standard_parameter: Standard parameters, ordered like the columns.
        signals: Conditioned training signals (efforts and sample mask).
        settings: Model layout and settings.
        options: Decimation, zero tolerance and masking.
    """
    W_red, params_r, idx_e = eliminate_zero_columns(
        W_full, standard_parameter, options.zero_tolerance
    )
    n = signals.num_samples
    tau_dec = W_dec = None
    if options.decimate:
        tau, W = decimated_rows(signals.torques, W_red, n, options.decimation_factor, settings)
        tau_dec, W_dec = tau, W
    else:
        tau, W = undecimated_rows(signals.torques, W_red, n, settings)
    if options.apply_mask:
        factor = options.decimation_factor if options.decimate else 1
        tau, W = mask_fit_rows(tau, W, signals.mask, settings, factor)
    tau, W = select_fit_joint_rows(tau, W, settings)
    return FitProblem(
        tau=tau,
        W=W,
        W_reduced=W_red,
        active_params=tuple(params_r),
        idx_eliminated=tuple(idx_e),
        tau_decimated=tau_dec,
        W_decimated=W_dec,
    )
