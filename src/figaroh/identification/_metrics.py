"""Quality metrics of an identification: per-joint residuals, validation, WLS.

Plain functions on stacked joint-major effort vectors (block ``j`` holds the
samples of joint ``j``); all vectorised over samples.
"""

from __future__ import annotations

import logging
from typing import Mapping, Sequence

import numpy as np

from figaroh.tools.effort_units import effort_unit  # noqa: F401 - re-exported

logger = logging.getLogger(__name__)


def per_joint_residuals(
    tau_measured: np.ndarray, tau_estimated: np.ndarray, joint_names: Sequence[str]
) -> dict | None:
    """Mean, population std, RMSE and max |residual| of each joint block.

    Args:
        tau_measured: Stacked measured effort (n_blocks·L,) [N·m or N].
        tau_estimated: Stacked estimated effort, same shape.
        joint_names: Names of the blocks (``joint_<i>`` used when they run out).

    Returns:
        ``{"joint_names", "mean", "std", "rmse", "max_abs"}`` of plain floats,
        or None when the length is not a multiple of the block count.
    """
    measured = np.asarray(tau_measured, dtype=float).ravel()
    estimated = np.asarray(tau_estimated, dtype=float).ravel()
    n_blocks = len(joint_names)
    if (
        n_blocks == 0
        or measured.size == 0
        or measured.size % n_blocks
        or measured.shape != estimated.shape
    ):
        return None
    r = (measured - estimated).reshape(n_blocks, -1)
    names = [joint_names[i] if i < len(joint_names) else f"joint_{i}" for i in range(n_blocks)]
    return {
        "joint_names": names,
        "mean": r.mean(axis=1).tolist(),
        "std": r.std(axis=1).tolist(),
        "rmse": np.sqrt((r**2).mean(axis=1)).tolist(),
        "max_abs": np.abs(r).max(axis=1).tolist(),
    }


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2:
        return 1.0
    sa, sb = a.std(), b.std()
    if sa == 0 or sb == 0:
        return 1.0
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def validation_metrics(
    tau_measured: np.ndarray,
    tau_nominal: np.ndarray,
    tau_identified: np.ndarray,
    joint_names: Sequence[str],
    units: Sequence[str],
    mask: np.ndarray | None,
    source: str,
) -> dict:
    """Prediction quality of the identified model on a (held-out) trajectory.

    Each statistic is computed once on the valid samples: the residuals
    ``r = τ_measured − τ_model`` and their squares are shared by the pooled
    and per-joint RMSE (``sqrt(mean(r²))``), the per-joint standard deviation
    ``s_j`` gives ``nrmse = rmse_j / s_j`` and ``r2 = 1 − rmse_j² / s_j²``,
    and ``correlation_normalised`` is Pearson's coefficient of the per-joint
    standardised series ``(τ − mean_j(τ_measured)) / s_j``.

    Args:
        tau_measured: Measured effort [N·m or N], stacked (n_blocks·n,) or
            one row per block (n_blocks, n).
        tau_nominal: Effort of the nominal (URDF) model, same layout.
        tau_identified: Effort of the identified model, same layout.
        joint_names: One name per block.
        units: One effort unit per block.
        mask: (n,) valid-sample mask or None (all valid). Statistics use the
            valid samples; the per-joint series keep every sample.
        source: ``"validation_data"`` or ``"identification_data_fallback"``.

    Returns:
        ``{n_val_samples, validation_source, rmse_nominal, rmse_identified, max_*,
        improvement_pct [%], correlation(_normalised), per_joint: {name: {unit,
        rmse_*, std_measured, nrmse, r2, predictive}}, unpredictable_joints,
        joint_names, tau_{nominal,identified,measured}_per_joint}`` [N·m or N].
    """
    n_blocks = len(joint_names)
    meas, nom, ident = (
        np.ascontiguousarray(np.asarray(a, float).reshape(n_blocks, -1))
        for a in (tau_measured, tau_nominal, tau_identified)
    )
    n_val = meas.shape[1]
    keep = np.ones(n_val, bool) if mask is None else np.asarray(mask, bool)
    if keep.shape == (n_val,) and keep.all():
        m, nm, idn = meas, nom, ident  # every sample valid: no copies
    else:  # C order: every reduction below sums along contiguous rows
        m, nm, idn = (np.ascontiguousarray(a[:, keep]) for a in (meas, nom, ident))
    r_nom, r_id = m - nm, m - idn
    sq_nom, sq_id = r_nom**2, r_id**2
    rmse_nominal = float(np.sqrt(np.mean(sq_nom))) if r_nom.size else float("nan")
    rmse_identified = float(np.sqrt(np.mean(sq_id))) if r_id.size else float("nan")
    per_joint = {}
    std = m.std(axis=1)
    rmse_id_j = np.sqrt(np.mean(sq_id, axis=1))
    rmse_nom_j = np.sqrt(np.mean(sq_nom, axis=1))
    for j, name in enumerate(joint_names):
        s, rj = float(std[j]), float(rmse_id_j[j])
        per_joint[name] = {
            "unit": units[j],
            "rmse_identified": rj,
            "rmse_nominal": float(rmse_nom_j[j]),
            "std_measured": s,
            "nrmse": rj / s if s > 0 else float("inf"),
            "r2": 1.0 - rj**2 / s**2 if s > 0 else float("-inf"),
            "predictive": bool(rj < s),
        }
    good = std > 0
    if np.any(good):
        m_good, id_good, std_good = (
            (m, idn, std[:, None]) if good.all() else (m[good], idn[good], std[good, None])
        )
        mean = m_good.mean(axis=1, keepdims=True)
        z_meas = ((m_good - mean) / std_good).ravel()
        z_id = ((id_good - mean) / std_good).ravel()
        corr_norm = _pearson(z_meas, z_id)
    else:
        corr_norm = float("nan")
    return {
        "n_val_samples": int(keep.sum()),
        "validation_source": source,
        "rmse_nominal": rmse_nominal,
        "rmse_identified": rmse_identified,
        "max_nominal": float(np.abs(r_nom).max()) if r_nom.size else float("nan"),
        "max_identified": float(np.abs(r_id).max()) if r_id.size else float("nan"),
        "improvement_pct": (
            (rmse_nominal - rmse_identified) / rmse_nominal * 100.0 if rmse_nominal > 0 else 0.0
        ),
        "correlation": _pearson(m.ravel(), idn.ravel()),
        "correlation_normalised": corr_norm,
        "per_joint": per_joint,
        "unpredictable_joints": [n for n, v in per_joint.items() if not v["predictive"]],
        "joint_names": list(joint_names),
        "tau_nominal_per_joint": {n: nom[j].tolist() for j, n in enumerate(joint_names)},
        "tau_identified_per_joint": {n: ident[j].tolist() for j, n in enumerate(joint_names)},
        "tau_measured_per_joint": {n: meas[j].tolist() for j, n in enumerate(joint_names)},
    }


def joint_block_variances(
    W_b: np.ndarray, tau: np.ndarray, phi: np.ndarray, n_blocks: int
) -> tuple[np.ndarray, np.ndarray]:
    """Residual variance ``σ_j²`` of each joint block (Gautier's WLS).

    ``σ_j² = mean(r_j²)`` over block ``j`` of the residual ``r = τ − W_b φ``
    (1e-6 for an empty block) [(N·m)² or N²].

    Returns:
        ``(sig_ro_joint, diag_SIGMA)``: the ``n_blocks`` variances, and the
        same repeated over each block's rows (the diagonal of the
        noise covariance ``Σ``).

    Raises:
        ValueError: The row count is not a multiple of ``n_blocks``.
    """
    rows = W_b.shape[0]
    if n_blocks <= 0 or rows % n_blocks or tau.shape[0] != rows:
        raise ValueError(
            f"Dimension mismatch: {rows} regressor rows, {tau.shape[0]} effort rows and "
            f"{n_blocks} joint blocks"
        )
    r = (tau - W_b @ phi).reshape(n_blocks, -1)
    var = (r**2).mean(axis=1) if r.shape[1] else np.full(n_blocks, 1e-6)
    return var, np.repeat(var, r.shape[1])


def wls_row_weights(diag_sigma: np.ndarray) -> np.ndarray:
    """``sqrt(w)`` per row with ``w = 1/(σ² + 1e-12)`` (the offset guards σ² = 0)."""
    return 1.0 / np.sqrt(np.asarray(diag_sigma, dtype=float) + 1e-12)


def weighted_solve(
    W_b: np.ndarray, tau: np.ndarray, diag_sigma: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least squares with weights ``w = 1/σ²`` per row.

    With ``W_w = sqrt(w)·W_b`` and ``τ_w = sqrt(w)·τ``:
    ``C_X = (W_wᵀ W_w)⁻¹`` and ``φ = C_X W_wᵀ τ_w``, computed from the QR
    factorisation ``W_w = Q R`` (``φ = R⁻¹ Qᵀ τ_w``, ``C_X = R⁻¹ R⁻ᵀ``), which
    avoids squaring the condition number. ``C_X`` is the covariance of ``φ``
    when the weights are the inverse noise variances.

    Returns:
        ``(phi, C_X)``.
    """
    sqrt_w = wls_row_weights(diag_sigma)
    Ww = W_b * sqrt_w[:, None]
    tw = tau * sqrt_w
    q, r = np.linalg.qr(Ww)
    phi = np.linalg.solve(r, q.T @ tw)
    r_inv = np.linalg.solve(r, np.eye(r.shape[0]))
    return phi, r_inv @ r_inv.T


def wls_relative_std(C_X: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``round(100·sqrt(diag C_X)/|φ|, 2)`` [%] (``inf`` where ``φ_i = 0``)."""
    var = np.diag(np.asarray(C_X, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.round(100.0 * np.sqrt(var) / np.abs(np.asarray(phi, dtype=float)), 2)


#: Speed [rad/s or m/s] under which a sample counts as at rest for the Coulomb
#: diagnostic when no dead band is configured.
REST_SPEED = 1e-3

#: Fraction of effort rows at rest from which a run without dead band is
#: reported as affected (below it, the rows are zero crossings of the motion).
REST_FRACTION = 0.01

#: Relative round-off scale of a velocity: a sample of joint ``j`` with
#: ``|dq_j| <= ROUND_OFF_SCALE · max|dq_j|`` is treated as round-off. A joint
#: at rest (constant encoder reading) gets filtered and differentiated
#: velocities of about 1e-16 to 1e-13 of its largest speed (the round-off of
#: the zero-phase filter and of the finite differences; up to ~1e-10 for a
#: high-order filter at a low cut-off), whose sign depends on the order of the
#: floating-point operations (the BLAS kernels of the CPU, the library
#: versions). 1e-9 sits above that round-off and far below any measured motion.
ROUND_OFF_SCALE = 1e-9


def coulomb_at_rest(
    velocities: np.ndarray, joint_names: Sequence[str], deadband: float = 0.0
) -> dict:
    """Samples whose Coulomb-friction direction is undefined (joint at rest).

    A sample of joint ``j`` is at rest when ``|dq_j| < threshold`` with
    ``threshold = deadband`` if a dead band is set (those entries of the
    Coulomb column are 0), else :data:`REST_SPEED`. Without a dead band the
    column holds ``sign(dq)`` of filtered noise there: ±1 at random.

    A sample is *round-off* when ``|dq_j| <= ROUND_OFF_SCALE · max_k |dq_j[k]|``
    (:data:`ROUND_OFF_SCALE`) and the dead band does not zero it
    (``|dq_j| >= deadband``): its Coulomb entry ``sign(dq_j)`` is the sign of
    round-off, so the fit can change with the machine that runs it.

    Args:
        velocities: (N, n) joint velocities of the fitted joints [rad/s or m/s].
        joint_names: The n joint names.
        deadband: The configured ``coulomb_deadband`` [rad/s or m/s] (0: none).

    Returns:
        ``{"rows_at_rest", "rows", "threshold", "deadband", "per_joint": {joint: count},
        "round_off_rows", "round_off_scale", "round_off_per_joint": {joint: count}}``
        (``rows`` = N·n effort rows).
    """
    v = np.abs(np.asarray(velocities, dtype=float))
    threshold = float(deadband) if deadband > 0 else REST_SPEED
    counts = (v < threshold).sum(axis=0)
    peak = v.max(axis=0) if v.shape[0] else np.zeros(v.shape[1])
    round_off = ((v <= ROUND_OFF_SCALE * peak) & (v >= deadband)).sum(axis=0)
    return {
        "rows_at_rest": int(counts.sum()),
        "rows": int(v.size),
        "threshold": threshold,
        "deadband": float(deadband),
        "per_joint": {name: int(c) for name, c in zip(joint_names, counts, strict=True)},
        "round_off_rows": int(round_off.sum()),
        "round_off_scale": ROUND_OFF_SCALE,
        "round_off_per_joint": {
            name: int(c) for name, c in zip(joint_names, round_off, strict=True) if c
        },
    }


def coulomb_at_rest_message(summary: Mapping) -> str:
    """One line describing :func:`coulomb_at_rest` for logs and reports."""
    n, rows, thr = summary["rows_at_rest"], summary["rows"], summary["threshold"]
    if summary["deadband"] > 0:
        text = (
            f"{n} of {rows} effort rows inside the Coulomb dead band |dq| < {thr:g} rad/s "
            "(Coulomb sign set to 0 there)"
        )
    else:
        text = (
            f"{n} of {rows} effort rows at rest (|dq| < {thr:g} rad/s): the Coulomb sign is "
            "undefined there (set problem.coulomb_deadband to zero it)"
        )
    round_off = summary.get("round_off_rows", 0)
    if round_off:
        per_joint = ", ".join(f"{k}: {c}" for k, c in summary["round_off_per_joint"].items())
        text += (
            f"; {round_off} samples ({per_joint}) have round-off velocities "
            f"(|dq| <= {summary['round_off_scale']:g}·max|dq| of the joint) whose sign(dq) "
            "depends on the machine's floating-point kernels, so the identified parameters "
            "may differ between machines: set problem.coulomb_deadband (e.g. 1e-6 rad/s) "
            "above them"
        )
    return text
