"""Numerical helpers for dynamic identification.

* :func:`base_param_from_standard` — evaluate base-parameter expressions
  (``"Ixx_j2 + 1.0*Ixx_j1 - 0.5*Iyy_j3"``) on standard parameter values.
* :func:`relative_stdev` — relative standard deviation of least-squares
  estimates (residual error method); :func:`stdev_of_residual` — the
  absolute one, unrounded.
* :func:`index_in_base_params` — which base parameters involve a segment.
* :func:`weigthed_least_squares` (alias :func:`weighted_least_squares`) —
  Gautier's per-joint weighted least squares.
* :func:`calculate_first_second_order_differentiation` — Lie-group finite
  differences of sampled configurations (``nq != nv`` aware, non-uniform time).
* :func:`low_pass_filter_data` — zero-phase Butterworth low-pass filter (1.0.2 cut-off
  normalisation by default, ``cutoff_in_hz=True`` for a cut-off in Hz).

Stacked effort vectors and regressors are joint-major: row ``j·N + i`` is
DOF block ``j``, sample ``i``.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pinocchio as pin

# figaroh 1.0.2 scripts import these from this module
# (``from figaroh.identification.identification_tools import get_standard_parameters``).
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.identification.exceptions import (
    IdentificationConfigError,
    IdentificationDataError,
)
from figaroh.identification.parameter import (
    add_custom_parameters,
    add_standard_additional_parameters,
    get_parameter_info,
    get_standard_parameters,
    reorder_inertial_parameters,
)
from figaroh.tools.exceptions import RankDeficiencyError
from figaroh.tools.qrdecomposition import tall_qr_r

logger = logging.getLogger(__name__)

__all__ = [
    "base_param_from_standard",
    "relative_stdev",
    "stdev_of_residual",
    "index_in_base_params",
    "weigthed_least_squares",
    "weighted_least_squares",
    "calculate_first_second_order_differentiation",
    "low_pass_filter_data",
    # Re-exported for figaroh 1.0.2 compatibility.
    "add_custom_parameters",
    "add_standard_additional_parameters",
    "get_parameter_info",
    "get_standard_parameters",
    "reorder_inertial_parameters",
    "unified_to_legacy_identif_config",
]


# ---------------------------------------------------------------------------
# Base-parameter expressions
# ---------------------------------------------------------------------------

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_TERM_RE = re.compile(
    r"\s*(?P<sign>[+-](?=\s))?\s*"  # operator, separated by whitespace
    rf"(?:(?P<coef>{_NUMBER})\s*\*\s*)?"  # optional coefficient "c*"
    r"(?P<neg>-)?(?P<name>[A-Za-z_][^\s*]*)\s*"  # parameter name
)


def _parse_base_expression(expression: str) -> list[tuple[float, str]]:
    """Parse ``"a + c1*b - c2*d"`` into ``[(1.0, "a"), (c1, "b"), (-c2, "d")]``.

    The first term may carry a coefficient or a leading ``-``; every further
    term starts with a whitespace-separated ``+`` or ``-`` operator.
    Coefficients may use scientific notation (``1e-05``). Nothing is ``eval``-ed.

    Raises:
        ValueError: The expression does not follow that grammar.
    """
    if not isinstance(expression, str):
        raise ValueError(
            f"Base-parameter expression must be a string, got {type(expression).__name__}"
        )
    text = expression.strip()
    if not text:
        raise ValueError("Empty base-parameter expression")
    terms: list[tuple[float, str]] = []
    pos = 0
    while pos < len(text):
        match = _TERM_RE.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(
                f"Cannot parse base-parameter expression {expression!r} at position {pos}: "
                "expected '<name>' or '<coef>*<name>' terms joined by ' + ' / ' - '"
            )
        sign_token = match.group("sign")
        if terms and sign_token is None:
            raise ValueError(
                f"Cannot parse base-parameter expression {expression!r} at position {pos}: "
                "missing ' + ' or ' - ' between terms"
            )
        sign = -1.0 if sign_token == "-" else 1.0
        if match.group("neg"):
            sign = -sign
        coef = float(match.group("coef")) if match.group("coef") is not None else 1.0
        terms.append((sign * coef, match.group("name")))
        pos = match.end()
    return terms


def base_param_from_standard(
    phi_standard: Mapping[str, float], params_base: Sequence[str]
) -> list[float]:
    """Convert standard parameters to base parameters.

    Each base parameter is a linear combination of standard parameters,
    given as an expression string ``"p0 + c1*p1 - c2*p2"`` (the form produced
    by the QR decomposition): ``φ_b,i = Σ_k c_k φ_std[p_k]``. The strings are
    parsed, never evaluated.

    Args:
        phi_standard (dict): Standard parameter values by name (units of each
            parameter, e.g. [kg], [kg·m], [kg·m²], [N·m]).
        params_base (list): Base-parameter expression strings.

    Returns:
        list: Base parameter values (floats), one per expression.

    Raises:
        ValueError: An expression is malformed or names a parameter that is
            not in ``phi_standard``.
    """
    if isinstance(params_base, str):
        params_base = [params_base]
    phi_base: list[float] = []
    for expression in params_base:
        value = 0.0
        for coef, name in _parse_base_expression(expression):
            if name not in phi_standard:
                raise ValueError(
                    f"Unknown standard parameter {name!r} in base-parameter expression "
                    f"{expression!r}; it is not a key of phi_standard"
                )
            value += coef * float(phi_standard[name])
        phi_base.append(value)
    return phi_base


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------


def _all_finite(array: np.ndarray) -> bool:
    """Whether every entry of ``array`` is finite, without a boolean temporary.

    A NaN or ±inf entry makes the sum NaN or ±inf, so a finite sum proves every
    entry finite in one pass over the data; only a non-finite sum (a bad entry,
    or an overflow of finite entries) takes the exact element-wise test.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(array)
    return bool(np.isfinite(total)) or bool(np.all(np.isfinite(array)))


def _as_matrix(name: str, value: Any) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {array.shape}")
    if not _all_finite(array):
        raise ValueError(f"{name} contains NaN or inf; clean the data first")
    return array


def _as_vector(name: str, value: Any, length: int | None = None) -> np.ndarray:
    array = np.asarray(value, dtype=float).reshape(-1)
    if length is not None and array.size != length:
        raise ValueError(f"{name} must have {length} entries, got {array.size}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or inf; clean the data first")
    return array


def relative_stdev(
    W_b: np.ndarray,
    phi_b: np.ndarray | Sequence[float],
    tau: np.ndarray,
    *,
    r_factor: np.ndarray | None = None,
) -> np.ndarray:
    """Calculate relative standard deviation of identified parameters.

    Implements the residual error method from [Pressé & Gautier 1991]:
    ``σ² = ‖τ − W_b φ_b‖² / (r − n_b)`` (``r`` rows, ``n_b`` parameters),
    ``C = σ² (W_bᵀ W_b)⁻¹`` and ``std%_i = 100·sqrt(C_ii) / |φ_b,i|``, rounded to
    two decimals. ``(W_bᵀW_b)⁻¹`` is formed from the QR factor of ``W_b``
    (``R⁻¹R⁻ᵀ``), which is better conditioned than the normal equations.

    Args:
        W_b (ndarray): Base regressor matrix (r, n_b).
        phi_b (ndarray or list): Base parameter values (n_b,) (e.g. [kg], [kg·m²]).
        tau (ndarray): Measured joint efforts stacked joint-major (r,)
            [N·m] or [N].
        r_factor (ndarray, optional): An upper-triangular ``R`` with
            ``W_bᵀW_b = RᵀR`` (e.g. ``R1`` of the base-parameter QR), to skip
            re-factorising ``W_b``.

    Returns:
        ndarray: Relative standard deviation (%) for each base parameter
        (``inf`` where ``φ_b,i == 0``).

    Raises:
        ValueError: Shapes disagree, data are not finite, or ``r <= n_b``.
        RankDeficiencyError: ``W_b`` does not have full column rank.
    """
    W = _as_matrix("W_b", W_b)
    n_rows, n_b = W.shape
    phi = _as_vector("phi_b", phi_b, n_b)
    y = _as_vector("tau", tau, n_rows)
    _check_more_rows(n_rows, n_b)
    residual = y - W @ phi
    return _relative_stdev_of_residual(
        residual, phi, tall_qr_r(W) if r_factor is None else r_factor
    )


def _check_more_rows(n_rows: int, n_b: int) -> None:
    if n_rows <= n_b:
        raise ValueError(
            f"relative_stdev needs more rows than parameters, got {n_rows} rows for "
            f"{n_b} parameters; use more samples"
        )


def _relative_stdev_of_residual(
    residual: np.ndarray, phi: np.ndarray, r_factor: np.ndarray
) -> np.ndarray:
    """:func:`relative_stdev` from the residual ``r = τ − W_b φ_b`` already at hand.

    ``std%_i = 100·σ_i / |φ_b,i|`` rounded to two decimals, with ``σ_i`` the
    absolute standard deviation of :func:`stdev_of_residual`. Used by
    :func:`relative_stdev` and by callers that already hold the predicted
    efforts ``W_b φ_b`` (the fit quality step), which saves a pass over the
    tall regressor.

    Args:
        residual: (rows,) residual [N·m or N].
        phi: (n_b,) finite base-parameter values.
        r_factor: (n_b, n_b) upper-triangular factor of ``W_b``.

    Returns:
        ndarray: Relative standard deviation [%] of each base parameter.

    Raises:
        ValueError: ``rows <= n_b``, or ``r_factor`` has the wrong shape or is not finite.
        RankDeficiencyError: ``R`` is numerically singular.
    """
    sigma = stdev_of_residual(residual, phi.shape[0], r_factor)
    with np.errstate(divide="ignore", invalid="ignore"):
        std_xr = 100.0 * sigma / np.abs(phi)
    if np.any(phi == 0):
        logger.warning("relative_stdev: zero base parameter(s) %s → inf", np.flatnonzero(phi == 0))
        std_xr[phi == 0] = np.inf
    return np.round(std_xr, 2)


def stdev_of_residual(residual: np.ndarray, n_b: int, r_factor: np.ndarray) -> np.ndarray:
    """Absolute standard deviation of each least-squares estimate (residual error method).

    ``σ² = rᵀr / (rows − n_b)`` and ``σ_i = σ·‖row_i(R⁻¹)‖ = sqrt(σ² [(W_bᵀW_b)⁻¹]_ii)``,
    with ``R`` the (n_b, n_b) upper-triangular factor of ``W_b``
    (``W_bᵀW_b = RᵀR``); not rounded. :func:`relative_stdev` is
    ``round(100·σ_i / |φ_b,i|, 2)``.

    Args:
        residual: (rows,) residual ``τ − W_b φ_b`` [N·m or N].
        n_b: Number of base parameters.
        r_factor: (n_b, n_b) upper-triangular factor of ``W_b``.

    Returns:
        ndarray: (n_b,) standard deviations, in each parameter's unit
        ([kg], [kg·m], [kg·m²], [N·m·s/rad], …).

    Raises:
        ValueError: ``rows <= n_b``, or ``r_factor`` has the wrong shape or is not finite.
        RankDeficiencyError: ``R`` is numerically singular.
    """
    n_rows = residual.shape[0]
    _check_more_rows(n_rows, n_b)
    sigma_sqr = float(residual @ residual) / (n_rows - n_b)
    r_factor = _as_matrix("r_factor", r_factor)
    if r_factor.shape != (n_b, n_b):
        raise ValueError(f"r_factor must be ({n_b}, {n_b}), got {r_factor.shape}")
    diag = np.abs(np.diag(r_factor))
    if diag.size == 0 or diag.min() <= np.finfo(float).eps * max(n_rows, n_b) * diag.max():
        raise RankDeficiencyError(
            "W_b is rank deficient; relative_stdev needs a base regressor with full column rank"
        )
    r_inv = np.linalg.solve(r_factor, np.eye(n_b))
    var_x = sigma_sqr * np.sum(r_inv**2, axis=1)  # diag(R⁻¹R⁻ᵀ)
    return np.sqrt(var_x)


def index_in_base_params(params: Sequence[str], id_segments: Sequence[Any]) -> dict[int, list[int]]:
    """Map segment IDs to their base parameters.

    For each segment ID, finds which base parameters contain inertial
    parameters (``Ixx, Ixy, Ixz, Iyy, Iyz, Izz, mx, my, mz, m``) of that
    segment. A segment ``s`` matches the parameter names ``<p><s>`` (legacy
    naming, e.g. ``Ixx3``) and ``<p>_<s>`` (current naming, e.g.
    ``Ixx_elbow_joint`` for ``s = "elbow_joint"``).

    Args:
        params (list): Base parameter expressions.
        id_segments (list): Segment IDs (ints or joint names) to map.

    Returns:
        dict: Keys are the positions ``0 … len(id_segments) − 1`` of the
        segments in ``id_segments`` (as in the historical implementation);
        values are the sorted indices of the base parameters involving that
        segment (empty when none does).

    Raises:
        ValueError: An expression is malformed.
    """
    inertial = ("Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz", "mx", "my", "mz", "m")
    names_per_param = [{name for _, name in _parse_base_expression(expr)} for expr in params]
    result: dict[int, list[int]] = {}
    for position, segment in enumerate(id_segments):
        candidates = {f"{p}{segment}" for p in inertial} | {f"{p}_{segment}" for p in inertial}
        result[position] = [idx for idx, names in enumerate(names_per_param) if names & candidates]
    return result


def _block_bounds(identif_config: Mapping[str, Any] | None, n_rows: int) -> np.ndarray:
    """``[0, stop_1, …, n_rows]`` row bounds of the joint blocks from ``idx_tau_stop``.

    Raises:
        IdentificationConfigError: ``idx_tau_stop`` missing, not integers, not
            strictly increasing or not ending at ``n_rows``.
    """
    if identif_config is None or "idx_tau_stop" not in identif_config:
        raise IdentificationConfigError(
            "identif_config['idx_tau_stop'] is required: the cumulative end row of each "
            "joint block of the stacked effort vector, e.g. [N, 2N, ..., n_joints*N]"
        )
    try:
        stops = np.asarray(identif_config["idx_tau_stop"], dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise IdentificationConfigError(
            "identif_config['idx_tau_stop'] must be a list of integers"
        ) from exc
    if stops.size == 0 or not np.all(np.isfinite(stops)) or np.any(stops != np.round(stops)):
        raise IdentificationConfigError(
            "identif_config['idx_tau_stop'] must be a non-empty list of integers"
        )
    stops = stops.astype(int)
    bounds = np.concatenate(([0], stops))
    if np.any(np.diff(bounds) <= 0) or stops[-1] != n_rows:
        raise IdentificationConfigError(
            f"identif_config['idx_tau_stop'] = {stops.tolist()} must be strictly increasing "
            f"and end at the number of stacked rows ({n_rows})"
        )
    return bounds


def _block_sigmas(W: np.ndarray, residual: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``σ_j = sqrt(‖r_j‖² / (N_j − rank(W_j)))`` of each joint block [N·m or N].

    Raises:
        IdentificationDataError: A block has no more rows than its rank.
    """
    sigma = np.empty(bounds.size - 1)
    for j, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        n_j = stop - start
        rank_j = int(np.linalg.matrix_rank(W[start:stop])) if n_j else 0
        dof = n_j - rank_j
        if dof <= 0:
            raise IdentificationDataError(
                f"Joint block {j} has {n_j} rows for {rank_j} identifiable parameters; "
                "weighted least squares needs more samples per joint"
            )
        sigma[j] = math.sqrt(float(residual[start:stop] @ residual[start:stop]) / dof)
    return sigma


def weigthed_least_squares(
    robot: Any,
    phi_b: np.ndarray,
    W_b: np.ndarray,
    tau_meas: np.ndarray,
    tau_est: np.ndarray,
    identif_config: Mapping[str, Any],
) -> np.ndarray:
    """Compute weighted least squares solution for parameter identification.

    Implements the weighted least squares of [Gautier, 1997], which accounts
    for heteroscedastic noise across joints. The stacked effort vector is cut
    into joint blocks by ``identif_config["idx_tau_stop"]`` (cumulative end
    index of each block). For block ``j`` with ``N_j`` rows:

    ``σ_j² = ‖τ_j − τ̂_j‖² / (N_j − n_b,j)``, where ``n_b,j`` is the rank of
    the block's rows of ``W_b`` (the number of base parameters that block
    actually determines). Rows are then weighted by ``1/σ_j`` and
    ``φ_WLS = argmin ‖P (W_b φ − τ)‖``, ``P = diag(1/σ_j)``.

    Args:
        robot (Robot): Robot model (kept for API compatibility; unused).
        phi_b (ndarray): Initial (OLS) base parameters (n_b,).
        W_b (ndarray): Base regressor matrix (r, n_b).
        tau_meas (ndarray): Measured joint efforts, stacked (r,) [N·m] or [N].
        tau_est (ndarray): Estimated joint efforts ``W_b φ_b`` (r,).
        identif_config (dict): Settings including ``idx_tau_stop``.

    Returns:
        ndarray: Identified base parameters (n_b,), full precision.

    Raises:
        IdentificationConfigError: ``idx_tau_stop`` missing or inconsistent.
        IdentificationDataError: A block has no more rows than parameters.
        RankDeficiencyError: The weighted regressor is rank deficient.
        ValueError: Shapes disagree or data are not finite.
    """
    del robot  # the block structure comes from idx_tau_stop
    W = _as_matrix("W_b", W_b)
    n_rows, n_b = W.shape
    _as_vector("phi_b", phi_b, n_b)
    y = _as_vector("tau_meas", tau_meas, n_rows)
    y_est = _as_vector("tau_est", tau_est, n_rows)

    bounds = _block_bounds(identif_config, n_rows)
    sigma = _block_sigmas(W, y - y_est, bounds)
    row_weight = np.empty(n_rows)
    floor = max(float(sigma.max()) * 1e-12, np.finfo(float).tiny)
    if np.any(sigma < floor):
        logger.warning(
            "weigthed_least_squares: zero residual in joint block(s) %s; σ floored to %g",
            np.flatnonzero(sigma < floor).tolist(),
            floor,
        )
        sigma = np.maximum(sigma, floor)
    for j, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        row_weight[start:stop] = 1.0 / sigma[j]

    W_w = row_weight[:, None] * W
    solution, _, rank, _ = np.linalg.lstsq(W_w, row_weight * y, rcond=None)
    if rank < n_b:
        raise RankDeficiencyError(
            f"Weighted base regressor has rank {rank} < {n_b} parameters; "
            "recompute the base parameters"
        )
    return solution


#: Correctly spelled alias of :func:`weigthed_least_squares`.
weighted_least_squares = weigthed_least_squares


# ---------------------------------------------------------------------------
# Lie-group differentiation
# ---------------------------------------------------------------------------

_NORM_TOL = 1e-6


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (N, 4) quaternions stored ``(x, y, z, w)``."""
    av, aw = a[:, :3], a[:, 3:]
    bv, bw = b[:, :3], b[:, 3:]
    vec = aw * bv + bw * av + np.cross(av, bv)
    scal = aw * bw - np.sum(av * bv, axis=1, keepdims=True)
    return np.hstack((vec, scal))


def _quat_conj(q: np.ndarray) -> np.ndarray:
    return np.hstack((-q[:, :3], q[:, 3:]))


def _quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate (N, 3) vectors by unit quaternions ``(x, y, z, w)``."""
    u, w = q[:, :3], q[:, 3:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def _so3_log_quat(q: np.ndarray) -> np.ndarray:
    """Rotation vectors (N, 3) of unit quaternions ``(x, y, z, w)``."""
    q = np.where(q[:, 3:] < 0.0, -q, q)  # shortest rotation
    vec, w = q[:, :3], q[:, 3]
    s = np.linalg.norm(vec, axis=1)
    small = s < 1e-8
    safe_s = np.where(small, 1.0, s)
    factor = np.where(
        small,
        2.0 / np.where(w == 0.0, 1.0, w) * (1.0 - s**2 / (3.0 * w**2 + 1e-300)),
        2.0 * np.arctan2(s, w) / safe_s,
    )
    return factor[:, None] * vec


def _se3_difference(q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """``log6(M0⁻¹ M1)`` as ``[v, ω]`` for free-flyer configurations (N, 7)."""
    quat0, quat1 = q0[:, 3:7], q1[:, 3:7]
    rel_q = _quat_mul(_quat_conj(quat0), quat1)
    p = _quat_rotate(_quat_conj(quat0), q1[:, :3] - q0[:, :3])
    omega = _so3_log_quat(rel_q)
    theta = np.linalg.norm(omega, axis=1)
    # V⁻¹ = I − ½[ω]× + c(θ)[ω]×², c = (1 − (θ/2)·cot(θ/2)) / θ².
    small = theta < 1e-3
    half = 0.5 * np.where(small, 1.0, theta)
    coeff = np.where(
        small,
        1.0 / 12.0 + theta**2 / 720.0 + theta**4 / 30240.0,
        (1.0 - half / np.tan(half)) / (4.0 * half**2),
    )
    w_x_p = np.cross(omega, p)
    v = p - 0.5 * w_x_p + coeff[:, None] * np.cross(omega, w_x_p)
    return np.hstack((v, omega))


def _se2_difference(q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """SE(2) log of ``M0⁻¹ M1`` as ``[vx, vy, ω]`` for planar configurations (N, 4)."""
    c0, s0, c1, s1 = q0[:, 2], q0[:, 3], q1[:, 2], q1[:, 3]
    theta = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
    dx, dy = q1[:, 0] - q0[:, 0], q1[:, 1] - q0[:, 1]
    tx, ty = c0 * dx + s0 * dy, -s0 * dx + c0 * dy
    # V⁻¹ = [[a, b], [−b, a]] with a = (θ/2)·cot(θ/2), b = θ/2.
    small = np.abs(theta) < 1e-3
    half = 0.5 * np.where(small, 1.0, theta)
    a = np.where(small, 1.0 - theta**2 / 12.0 - theta**4 / 720.0, half / np.tan(half))
    b = 0.5 * theta
    return np.column_stack((a * tx + b * ty, -b * tx + a * ty, theta))


def _check_unit_norm(block: np.ndarray, what: str) -> None:
    norms = np.linalg.norm(block, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > _NORM_TOL)
    if bad.size:
        raise ValueError(
            f"q contains non-normalised {what} (sample {int(bad[0])}: norm {norms[bad[0]]:.6g}); "
            "normalise the configurations before differentiating"
        )


def _model_differences(model: Any, q: np.ndarray) -> np.ndarray:
    """``difference(q[i], q[i+1])`` for every consecutive pair, vectorised per joint."""
    q0, q1 = q[:-1], q[1:]
    out = np.empty((q0.shape[0], int(model.nv)))
    fallback: list[tuple[int, int]] = []
    for jid in range(1, int(model.njoints)):
        joint = model.joints[jid]
        iq, nq_j, iv, nv_j = int(joint.idx_q), int(joint.nq), int(joint.idx_v), int(joint.nv)
        if nv_j == 0:
            continue
        kind = joint.shortname()
        sq, sv = slice(iq, iq + nq_j), slice(iv, iv + nv_j)
        if nq_j == nv_j:
            out[:, sv] = q1[:, sq] - q0[:, sq]
        elif (
            nq_j == 2
            and nv_j == 1
            and (kind.startswith("JointModelRUB") or kind == "JointModelRevoluteUnboundedUnaligned")
        ):
            _check_unit_norm(q[:, sq], f"cos/sin pairs of joint {model.names[jid]!r}")
            c0, s0, c1, s1 = q0[:, iq], q0[:, iq + 1], q1[:, iq], q1[:, iq + 1]
            out[:, iv] = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        elif kind == "JointModelSpherical":
            _check_unit_norm(q[:, sq], f"quaternions of joint {model.names[jid]!r}")
            out[:, sv] = _so3_log_quat(_quat_mul(_quat_conj(q0[:, sq]), q1[:, sq]))
        elif kind == "JointModelFreeFlyer":
            _check_unit_norm(q[:, iq + 3 : iq + 7], f"quaternions of joint {model.names[jid]!r}")
            out[:, sv] = _se3_difference(q0[:, sq], q1[:, sq])
        elif kind == "JointModelPlanar":
            _check_unit_norm(q[:, iq + 2 : iq + 4], f"cos/sin pairs of joint {model.names[jid]!r}")
            out[:, sv] = _se2_difference(q0[:, sq], q1[:, sq])
        else:
            fallback.append((iv, nv_j))
    if fallback:
        # Unusual joints (composite, mimic…): per-sample Pinocchio difference.
        logger.debug("Per-sample pinocchio.difference for %d joint(s)", len(fallback))
        full = np.array([pin.difference(model, a, b) for a, b in zip(q0, q1, strict=True)])
        for iv, nv_j in fallback:
            out[:, iv : iv + nv_j] = full[:, iv : iv + nv_j]
    return out


def _backend_differences(backend: Any, q: np.ndarray, nv: int) -> np.ndarray:
    """Consecutive differences through ``backend.compute_difference``."""
    get_model = getattr(backend, "get_model_object", None)
    if callable(get_model):
        try:
            model = get_model()
        except Exception:  # optional fast path only; fall back to compute_difference
            model = None
        if isinstance(model, pin.Model) and model.nq == q.shape[1] and model.nv == nv:
            return _model_differences(model, q)
    compute = getattr(backend, "compute_difference", None)
    if not callable(compute):
        raise ValueError(
            f"Backend {type(backend).__name__} does not implement compute_difference(q1, q2); "
            "pass the Pinocchio model instead (backend=None)"
        )
    out = np.array(
        [
            np.asarray(compute(a, b), dtype=float).reshape(-1)
            for a, b in zip(q[:-1], q[1:], strict=True)
        ]
    )
    if out.shape != (q.shape[0] - 1, nv):
        raise ValueError(
            f"backend.compute_difference returned width {out.shape[-1]}, expected nv = {nv}"
        )
    return out


def _intervals(
    n_samples: int, identif_config: Mapping[str, Any] | None, dt: Any
) -> tuple[np.ndarray, bool]:
    """Sample intervals (n_samples − 1,) [s] and whether they are constant."""
    if dt is None:
        if not identif_config or "ts" not in identif_config:
            raise IdentificationConfigError(
                "identif_config['ts'] (sample time [s]) is required when dt is not given"
            )
        raw = identif_config["ts"]
        source = "identif_config['ts']"
    else:
        raw = dt
        source = "dt"
    try:
        values = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source} must be a positive number or an array, got {raw!r}") from exc
    if values.ndim == 0:
        step = float(values)
        if not math.isfinite(step) or step <= 0:
            raise ValueError(f"{source} = {step} must be finite and strictly positive")
        return np.full(n_samples - 1, step), True
    values = values.reshape(-1)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{source} contains NaN or inf")
    if values.size == n_samples - 1:
        intervals = values
        what = "Every timestep"
    elif values.size == n_samples:
        intervals = np.diff(values)  # absolute timestamps
        what = "Timestamps must be strictly increasing:"
    else:
        raise ValueError(
            f"{source} must be scalar, have one timestep per sample pair ({n_samples - 1}) "
            f"or one timestamp per sample ({n_samples}); got {values.size} values"
        )
    if np.any(intervals <= 0):
        raise ValueError(f"{what} {source} gives a non-positive interval")
    return intervals, False


def calculate_first_second_order_differentiation(
    model: Any,
    q: np.ndarray,
    identif_config: Mapping[str, Any] | None,
    dt: float | np.ndarray | None = None,
    backend: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimate interval tangent velocities and their coordinate derivatives.

    Configuration differences use the model/backend Lie-group operation
    (``Δ_i = q[i+1] ⊖ q[i]``, e.g. ``pinocchio.difference``), so positions
    have width ``nq`` and velocities/accelerations have width ``nv``:
    ``dq_i = Δ_i / dt_i`` [rad/s or m/s]; ``ddq = d(dq)/dt`` evaluated by
    ``numpy.gradient`` over the interval midpoint times [rad/s² or m/s²].
    The Pinocchio path is vectorised over samples per joint type (vector
    space, SO(2), SO(3), SE(2), SE(3)); unusual joints fall back to
    per-sample ``pinocchio.difference``. Effort-selection flags do not
    determine these dimensions.

    Args:
        model (pin.Model): Robot model; unused when backend is supplied.
        q (ndarray): Finite configurations of shape (n_samples, nq) [rad]/[m],
            with at least three samples. Manifold configurations must be
            valid for the selected model (normalized quaternions and cos/sin
            pairs, tolerance 1e-6).
        identif_config (dict): Contains positive finite ``ts`` [s] when dt is
            None.
        dt (float or ndarray, optional): Positive finite sample interval [s],
            one interval per consecutive configuration pair (n_samples - 1),
            or a strictly increasing time vector of length n_samples [s].
        backend (DynamicsBackend, optional): Supplies nq, nv and
            compute_difference instead of the Pinocchio model.

    Returns:
        tuple: Positions (n_samples - 2, nq), velocities and accelerations
        (n_samples - 2, nv). All tangent coordinates are differentiated.

    Raises:
        ValueError: Invalid configurations, sample count or timesteps.

    Note:
        Preserves the historical alignment: q[:-2] and the first n_samples-2
        forward interval velocities. Velocities represent interval midpoints,
        not the returned position timestamps. Acceleration is the gradient of
        those tangent components at the midpoint times (one-sided at
        endpoints). No interpolation to position timestamps or moving-frame
        transport is performed. Both discarded position samples are at the end.
    """
    source = backend if backend is not None else model
    if source is None:
        raise ValueError("Either model or backend must be given")
    nq, nv = int(source.nq), int(source.nv)
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape[1] != nq:
        raise ValueError(f"q must have shape (n_samples, {nq}), got {q.shape}")
    if q.shape[0] < 3:
        raise ValueError(f"q must contain at least three samples, got {q.shape[0]}")
    if not np.all(np.isfinite(q)):
        raise ValueError("q must contain only finite configurations (NaN/inf found)")

    intervals, constant_dt = _intervals(q.shape[0], identif_config, dt)
    if backend is not None:
        differences = _backend_differences(backend, q, nv)
    else:
        differences = _model_differences(model, q)
    dq = differences / intervals[:, None]

    if constant_dt:
        ddq = np.gradient(dq, axis=0, edge_order=1) / intervals[0]
    else:
        midpoint_times = np.cumsum(intervals) - 0.5 * intervals
        if np.any(np.diff(midpoint_times) <= 0):
            raise ValueError("dt produces invalid interval midpoint times")
        ddq = np.gradient(dq, midpoint_times, axis=0, edge_order=1)

    return q[:-2].copy(), dq[:-1], ddq[:-1]


# ---------------------------------------------------------------------------
# Filtering
# ---------------------------------------------------------------------------


def _normalised_cutoff(cutoff_hz: Any, sample_time: Any, cutoff_in_hz: bool = False) -> float:
    """Butterworth ``Wn`` (fraction of the Nyquist frequency) of a configured cut-off.

    * ``cutoff_in_hz=False`` (figaroh 1.0.2): ``Wn = ts·f_c / 2``. The Nyquist
      frequency is ``1 / (2·ts)``, so the effective cut-off is
      ``Wn / (2·ts) = f_c / 4`` [Hz]: four times below the configured value.
    * ``cutoff_in_hz=True``: ``Wn = f_c / (f_s / 2) = 2·f_c·ts``, the cut-off
      is ``f_c`` [Hz].

    Raises:
        IdentificationConfigError: Non-positive/non-finite values, or ``Wn ≥ 1``
            (an effective cut-off at or above the Nyquist frequency).
    """
    try:
        fc = float(cutoff_hz)
        ts = float(sample_time)
    except (TypeError, ValueError) as exc:
        raise IdentificationConfigError(
            "cut_off_frequency_butterworth [Hz] and ts [s] must be numbers"
        ) from exc
    if not math.isfinite(ts) or ts <= 0:
        raise IdentificationConfigError(f"identif_config['ts'] = {ts} must be a positive time [s]")
    if not math.isfinite(fc) or fc <= 0:
        raise IdentificationConfigError(
            f"identif_config['cut_off_frequency_butterworth'] = {fc} must be a positive "
            "frequency [Hz]"
        )
    nyquist = 0.5 / ts
    wn = 2.0 * fc * ts if cutoff_in_hz else ts * fc / 2.0
    if wn >= 1.0:
        effective = wn * nyquist
        raise IdentificationConfigError(
            f"Cut-off frequency {fc} Hz gives an effective cut-off of {effective:g} Hz, not "
            f"below the Nyquist frequency {nyquist} Hz (half the sampling rate 1/ts = "
            f"{1.0 / ts} Hz); lower cut_off_frequency_butterworth"
        )
    return wn


def low_pass_filter_data(
    data: np.ndarray,
    identif_config: Mapping[str, Any],
    nbutter: int = 5,
    *,
    cutoff_in_hz: bool = False,
) -> np.ndarray:
    """Apply zero-phase Butterworth low-pass filter to measurement data.

    Designs an order-``nbutter`` Butterworth filter ``(b, a) = butter(nbutter,
    Wn)`` and applies it forward and backward (``scipy.signal.filtfilt``, odd
    padding of ``3·(max(len(b), len(a)) − 1) = 3·nbutter`` samples), so the
    output has no phase lag; each column is filtered independently along axis 0.
    Then ``5·nbutter`` samples are trimmed at each end. These are figaroh
    1.0.2's ``scipy.signal`` calls with its arguments:
    ``filtfilt(b, a, data, axis=0, padtype="odd", padlen=padlen)``.

    The normalised cut-off is figaroh 1.0.2's by default:
    ``Wn = ts · f_c / 2`` with ``f_c = cut_off_frequency_butterworth`` [Hz].
    Since ``scipy`` normalises by the Nyquist frequency ``1/(2·ts)``, the
    effective cut-off is ``f_c / 4`` [Hz] (e.g. 1.25 Hz for a configured 5 Hz).
    ``cutoff_in_hz=True`` gives a cut-off of ``f_c`` [Hz]
    (``Wn = 2·f_c·ts``).

    Args:
        data (ndarray): Raw measurement data (n_samples,) or (n_samples, n).
        identif_config (dict): Filter parameters containing ``ts`` (sample
            time [s]) and ``cut_off_frequency_butterworth`` (cut-off [Hz]).
        nbutter (int, optional): Filter order. Higher order gives sharper
            frequency cutoff. Defaults to 5.
        cutoff_in_hz (bool, optional): Read ``cut_off_frequency_butterworth``
            as the actual cut-off [Hz] instead of 1.0.2's normalisation
            (four times lower). Defaults to False.

    Returns:
        ndarray: Filtered data with border regions removed
        (n_samples − 10·nbutter rows).

    Raises:
        IdentificationConfigError: Missing or invalid ``ts`` /
            ``cut_off_frequency_butterworth``, or an effective cut-off at or
            above the Nyquist frequency.
        ValueError: Invalid order, non-finite data, or too few samples for the
            padding and border trimming.
    """
    if identif_config is None:
        raise IdentificationConfigError(
            "identif_config with 'ts' and 'cut_off_frequency_butterworth' is required"
        )
    for key in ("ts", "cut_off_frequency_butterworth"):
        if key not in identif_config:
            raise IdentificationConfigError(f"identif_config[{key!r}] is required for filtering")
    if isinstance(nbutter, bool) or int(nbutter) != nbutter or int(nbutter) < 1:
        raise ValueError(f"nbutter must be a positive integer filter order, got {nbutter!r}")
    nbutter = int(nbutter)
    wn = _normalised_cutoff(
        identif_config["cut_off_frequency_butterworth"], identif_config["ts"], bool(cutoff_in_hz)
    )

    values = np.asarray(data, dtype=float)
    if values.ndim not in (1, 2):
        raise ValueError(f"data must be 1-D or 2-D (n_samples, n), got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("data contains NaN or inf; clean the data before filtering")
    from scipy import signal  # heavy import (0.3-1 s), only where used

    b, a = signal.butter(nbutter, wn, "low")
    padlen = 3 * (max(len(b), len(a)) - 1)
    nbord = 5 * nbutter
    n_samples = values.shape[0]
    minimum = max(padlen + 1, 2 * nbord + 1)
    if n_samples < minimum:
        raise ValueError(
            f"data has {n_samples} samples; a Butterworth filter of order {nbutter} needs at "
            f"least {minimum} (padding {padlen} and {nbord} border samples trimmed at each end)"
        )
    filtered = signal.filtfilt(b, a, values, axis=0, padtype="odd", padlen=padlen)
    return filtered[nbord : n_samples - nbord]
