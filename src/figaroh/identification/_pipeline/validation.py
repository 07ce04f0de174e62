"""Step 6 — validation: prediction quality on a held-out trajectory.

The identified model predicts ``W_full(q, dq, ddq) · x`` where ``x`` is the
accepted standard-space estimate, or ``phi_base`` scattered on the base
columns (``W_b · phi_base = W_full · x``); the nominal model predicts
``W_full · θ_nominal``. Both are compared with the measured efforts on the
fitted joints.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence

import numpy as np

from figaroh.identification import _metrics
from figaroh.identification._pipeline.records import Settings, SignalSet

__all__ = [
    "block_predictions",
    "identified_standard_vector",
    "same_kinematics",
    "validation_metrics",
    "validation_stage",
]


def same_kinematics(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two processed-data dicts hold equal q, dq and ddq arrays.

    Equal kinematics give the same regressor, so a held-out copy of the
    training data can be scored with the training regressor.
    """
    if a is None or b is None:
        return False
    for k in ("positions", "velocities", "accelerations"):
        x, y = np.asarray(a.get(k)), np.asarray(b.get(k))
        if x.shape != y.shape or not np.array_equal(x, y):
            return False
    return True


def identified_standard_vector(
    n_std: int,
    idx_eliminated: Sequence[int],
    base_indices: Sequence[int],
    phi_base: np.ndarray,
    values: np.ndarray | None = None,
) -> np.ndarray:
    """Standard-space vector ``x`` with ``W_full · x`` = the identified prediction.

    Args:
        n_std: Number of standard parameters (regressor columns).
        idx_eliminated: Columns dropped before the QR step.
        base_indices: Reduced columns that are base columns.
        phi_base: Base-parameter estimate.
        values: An accepted standard-space estimate (used as is), or None.
    """
    if values is not None:
        return np.asarray(values, dtype=float)
    keep = np.setdiff1d(np.arange(n_std), list(idx_eliminated))
    x = np.zeros(n_std)
    x[keep[list(base_indices)]] = phi_base
    return x


#: Bytes of regressor rows per chunk of :func:`block_predictions`: the chunk
#: stays in the per-core cache between its two matrix-vector products.
CHUNK_BYTES = 1 << 20


def block_predictions(
    W_full: np.ndarray,
    n: int,
    nv: int,
    dofs: np.ndarray | Sequence[int],
    theta_a: np.ndarray,
    theta_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Predicted efforts ``W_full · θ_a`` and ``W_full · θ_b`` on some DOF blocks.

    ``W_full`` stacks ``nv`` DOF blocks of ``n`` rows (row ``k·n + i`` is DOF
    ``k`` at sample ``i``). Only the blocks in ``dofs`` are evaluated, in row
    chunks of about :data:`CHUNK_BYTES` bytes, so that each chunk is read from
    memory once for both products: ``τ[k·n + i] = Σ_c W[k·n + i, c] θ_c``, a
    matrix-vector product per chunk (one dot product per row, as in
    ``W_full @ θ``; no ``(rows, 2)`` matrix product).

    Args:
        W_full: (nv·n, n_std) regressor.
        n: Samples per block.
        nv: Number of DOF blocks.
        dofs: DOF index of each wanted block, in output order.
        theta_a: (n_std,) first parameter vector (e.g. the nominal one).
        theta_b: (n_std,) second parameter vector (e.g. the identified one).

    Returns:
        ``(tau_a, tau_b)``, each (len(dofs), n) [N·m or N].

    Raises:
        ValueError: ``W_full`` is not (nv·n, n_std) with ``n_std`` the length of the vectors.
    """
    W = np.asarray(W_full, dtype=float)
    a = np.ascontiguousarray(theta_a, dtype=float).reshape(-1)
    b = np.ascontiguousarray(theta_b, dtype=float).reshape(-1)
    if W.ndim != 2 or W.shape[0] != nv * n or a.shape != (W.shape[1],) or b.shape != a.shape:
        raise ValueError(
            f"validation regressor of shape {W.shape} does not match {nv} DOF blocks of "
            f"{n} samples and parameter vectors of shapes {a.shape} and {b.shape}"
        )
    dofs = [int(k) for k in dofs]
    out_a = np.empty((len(dofs), n))
    out_b = np.empty((len(dofs), n))
    step = max(64, CHUNK_BYTES // max(1, 8 * W.shape[1]))
    for j, k in enumerate(dofs):
        for start in range(0, n, step):
            stop = min(n, start + step)
            rows = W[k * n + start : k * n + stop]
            np.matmul(rows, a, out=out_a[j, start:stop])
            np.matmul(rows, b, out=out_b[j, start:stop])
    return out_a, out_b


def validation_metrics(
    W_full: np.ndarray,
    signals: SignalSet,
    phi_nominal: np.ndarray,
    x: np.ndarray,
    settings: Settings,
    blocks: Sequence[int],
    source: str,
    estimate_stage: str | None = None,
) -> Dict[str, Any]:
    """Held-out metrics of the identified and nominal models.

    Args:
        W_full: (N·nv, n_std) regressor of ``signals``.
        signals: The evaluated trajectory (efforts and sample mask).
        phi_nominal: Nominal standard parameters (n_std,).
        x: Identified standard-space vector (see :func:`identified_standard_vector`).
        settings: Model layout and settings.
        blocks: Active-block index of each fitted joint.
        source: ``"validation_data"`` or ``"identification_data_fallback"``.
        estimate_stage: Stage of the predicting estimate (key omitted when None).

    Returns:
        The ``result["validation_metrics"]`` dict.
    """
    n = signals.num_samples
    blocks = list(blocks)
    dofs = np.asarray(settings.act_idxv, dtype=int)[blocks]
    tau_nominal, tau_identified = block_predictions(W_full, n, settings.nv, dofs, phi_nominal, x)
    tau_measured = np.asarray(signals.torques, float).reshape(n, -1).T[blocks]  # (n_fit, n)
    names = [settings.active_joints[b] for b in blocks]
    units = [settings.effort_units[b] for b in blocks]
    metrics = _metrics.validation_metrics(
        tau_measured,
        tau_nominal,
        tau_identified,
        names,
        units,
        signals.mask,
        source,
    )
    left_out = [name for name in settings.active_joints if name not in names]
    if left_out:
        metrics["not_fitted_joints"] = left_out
    if estimate_stage is not None:
        metrics["estimate_stage"] = estimate_stage
    return metrics


def validation_stage(metrics: Mapping[str, Any]) -> tuple[str, str, Dict[str, Any]]:
    """``(status, reason, metrics)`` of the ``validation`` stage record."""
    stage_metrics = {
        "effort_rmse": (metrics["rmse_identified"], "N·m or N"),
        "samples": metrics["n_val_samples"],
    }
    if metrics.get("validation_source") == "validation_data":
        return "ok", "held-out trajectory", stage_metrics
    return (
        "fallback",
        "no held-out data: evaluated on the identification data, not an independent test",
        stage_metrics,
    )
