"""Essential parameters of a base-parameter model (Pham & Gautier 1991).

The base parameters of a robot are identifiable, but some contribute so little
to the measured efforts that their estimate is pure noise (large relative
standard deviation). The *essential parameters* are the subset that explains
the data about as well as the full base set while every estimate stays
well determined. They are found by backward elimination:

1. estimate ``φ`` by (weighted) least squares on the current column set ``S``,
   ``σ² = ‖τ − W_S φ‖² / (r − |S|)``, ``C = σ² (W_Sᵀ W_S)⁻¹`` and the relative
   standard deviations ``%σ_i = 100·sqrt(C_ii) / |φ_i|``;
2. if ``max %σ / min %σ ≤ ratio_essential`` stop: ``S`` is the essential set;
3. otherwise drop the parameter with the largest ``%σ`` from ``S`` and go to 1.

Reference: C. M. Pham, M. Gautier, "Essential parameters of robots",
Proc. 30th IEEE Conference on Decision and Control, 1991, pp. 2769–2774.

The procedure only needs a full-column-rank base regressor and a stacked
effort vector, so it applies to any robot.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

import numpy as np

from figaroh.tools.exceptions import RankDeficiencyError

logger = logging.getLogger(__name__)

__all__ = ["EssentialParameters", "essential_parameters", "relative_std_percent"]


@dataclasses.dataclass
class EssentialParameters:
    """Result of :func:`essential_parameters`.

    Attributes:
        names: Essential parameter names, in base-parameter order.
        indices: Their column indices in the base regressor.
        phi: Their least-squares estimate (units of each base parameter).
        std_relative: Their relative standard deviations [%].
        removed: Names of the dropped parameters, in removal order.
        ratio: Final ``max %σ / min %σ`` of the essential set.
        ratio_essential: Threshold the ratio was compared with.
        rmse_base: RMS residual of the full base model (weighted units when
            row weights were given) [N·m or N].
        rmse_essential: RMS residual of the essential model, same units.
        history: One entry per iteration: ``{"n_parameters", "max_std",
            "min_std", "ratio", "rmse", "removed"}`` (``removed`` is None on
            the last entry).
    """

    names: list[str]
    indices: np.ndarray
    phi: np.ndarray
    std_relative: np.ndarray
    removed: list[str]
    ratio: float
    ratio_essential: float
    rmse_base: float
    rmse_essential: float
    history: list[dict]

    def as_dict(self) -> dict[str, float]:
        """``{name: value}`` of the essential parameters."""
        return dict(zip(self.names, self.phi.tolist(), strict=True))

    def __repr__(self) -> str:
        return (
            f"EssentialParameters(n={len(self.names)}, removed={len(self.removed)}, "
            f"ratio={self.ratio:.3g} (limit {self.ratio_essential:g}), "
            f"rmse_base={self.rmse_base:.4g}, rmse_essential={self.rmse_essential:.4g})"
        )


def relative_std_percent(W: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Least-squares estimate and relative standard deviations (residual error method).

    ``φ = argmin ‖τ − Wφ‖``, ``σ² = ‖τ − Wφ‖²/(r − p)``, ``C = σ²(WᵀW)⁻¹``
    (from the QR factor ``R``: ``(WᵀW)⁻¹ = R⁻¹R⁻ᵀ``) and
    ``%σ_i = 100·sqrt(C_ii)/|φ_i|`` (``inf`` where ``φ_i = 0``).

    Args:
        W: Regressor (r, p), full column rank, ``r > p``.
        tau: Stacked efforts (r,) [N·m or N].

    Returns:
        ``(phi, std_percent, rmse)`` with ``rmse = ‖τ − Wφ‖/sqrt(r)``.

    Raises:
        RankDeficiencyError: ``W`` is (numerically) rank deficient.
    """
    W = np.asarray(W, dtype=float)
    y = np.asarray(tau, dtype=float).reshape(-1)
    r, p = W.shape
    R, z, sse_perp = _reduce(W, y)
    return _subset_fit(R, z, sse_perp, r, np.arange(p))


def _reduce(W: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``W = QR``: returns ``R``, ``z = Qᵀy`` and ``‖y − Qz‖²``.

    For any column subset ``S``, ``‖y − W_S φ‖² = ‖y − Qz‖² + ‖z − R_S φ‖²``,
    so every later fit works on the small ``(p, |S|)`` matrix ``R_S``.
    """
    q, R = np.linalg.qr(W)
    z = q.T @ y
    perp = y - q @ z
    return R, z, float(perp @ perp)


def _subset_fit(
    R: np.ndarray, z: np.ndarray, sse_perp: float, n_rows: int, subset: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """LS fit, relative std-devs [%] and RMSE on the columns ``subset`` (see :func:`_reduce`)."""
    Rs = R[:, subset]
    k = subset.size
    q, rf = np.linalg.qr(Rs)
    diag = np.abs(np.diag(rf))
    if k and (diag.min() <= 1e-12 * max(diag.max(), 1e-300)):
        raise RankDeficiencyError(
            "essential_parameters: the regressor is rank deficient; pass the base regressor "
            "(full column rank), not the standard one"
        )
    phi = np.linalg.solve(rf, q.T @ z)
    res = z - Rs @ phi
    sse = sse_perp + float(res @ res)
    sigma2 = sse / (n_rows - k)
    r_inv = np.linalg.solve(rf, np.eye(k))
    var = sigma2 * np.sum(r_inv**2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        std = 100.0 * np.sqrt(var) / np.abs(phi)
    std = np.where(np.isnan(std), np.inf, std)
    return phi, std, float(np.sqrt(sse / n_rows))


def essential_parameters(
    W_b: np.ndarray,
    tau: np.ndarray,
    names: Sequence[str],
    ratio_essential: float = 30.0,
    row_weights: np.ndarray | None = None,
    min_parameters: int = 1,
) -> EssentialParameters:
    """Backward elimination of the base parameters to the essential set.

    Iteratively drops the parameter with the largest relative standard
    deviation while ``max %σ / min %σ > ratio_essential`` (see the module
    docstring for the maths). A fit whose residual is at round-off level
    (RMS below ``1e-10`` × RMS of ``τ``, noise-free data) is exactly
    determined: nothing is dropped. With ``row_weights`` the problem is solved in
    weighted form (rows of ``W_b`` and ``τ`` multiplied by the weights, e.g.
    ``1/σ_j`` of Gautier's WLS), so the standard deviations are the WLS ones.

    Args:
        W_b: Base regressor (r, n_b), full column rank.
        tau: Stacked measured efforts (r,) [N·m or N].
        names: Base-parameter names (n_b,).
        ratio_essential: Stop once ``max %σ / min %σ`` is at most this (> 1).
        row_weights: Optional (r,) positive row weights (square roots of the
            WLS weights).
        min_parameters: Never go below this many parameters (≥ 1).

    Returns:
        :class:`EssentialParameters`.

    Raises:
        ValueError: Bad shapes, non-finite data, ``ratio_essential <= 1``,
            ``min_parameters < 1`` or not more rows than parameters.
        RankDeficiencyError: ``W_b`` is rank deficient.
    """
    W, y, names, ratio_essential = _checked_system(
        W_b, tau, names, ratio_essential, row_weights, min_parameters
    )
    r, p = W.shape
    R, z, sse_perp = _reduce(W, y)
    y_rms = float(np.sqrt(np.mean(y**2)))
    kept = np.arange(p)
    removed: list[str] = []
    history: list[dict] = []
    rmse_base = None
    while True:
        phi, std, rmse = _subset_fit(R, z, sse_perp, r, kept)
        if rmse_base is None:
            rmse_base = rmse
        worst = int(np.argmax(std))
        ratio = _std_ratio(std, rmse, y_rms)
        stop = ratio <= ratio_essential or kept.size <= int(min_parameters)
        history.append(
            {
                "n_parameters": int(kept.size),
                "max_std": float(std.max()),
                "min_std": float(std.min()),
                "ratio": ratio,
                "rmse": rmse,
                "removed": None if stop else names[kept[worst]],
            }
        )
        if stop:
            break
        removed.append(names[kept[worst]])
        kept = np.delete(kept, worst)
    logger.info(
        "Essential parameters: %d of %d kept (ratio %.3g <= %g), RMSE %.4g -> %.4g",
        kept.size,
        p,
        ratio,
        ratio_essential,
        rmse_base,
        rmse,
    )
    return EssentialParameters(
        names=[names[k] for k in kept],
        indices=kept,
        phi=phi,
        std_relative=std,
        removed=removed,
        ratio=ratio,
        ratio_essential=ratio_essential,
        rmse_base=float(rmse_base),
        rmse_essential=rmse,
        history=history,
    )


def _std_ratio(std: np.ndarray, rmse: float, y_rms: float) -> float:
    """``max %σ / min %σ`` (1 when the residual is at round-off level: exactly determined)."""
    if rmse <= 1e-10 * y_rms:
        return 1.0
    return float(std.max() / std.min()) if std.min() > 0 else float("inf")


def _checked_system(W_b, tau, names, ratio_essential, row_weights, min_parameters):
    """``(W, y, names, ratio_essential)`` checked, weighted by ``row_weights`` when given.

    Raises:
        ValueError: Bad shapes, non-finite data, ``ratio_essential <= 1``,
            ``min_parameters < 1`` or not more rows than parameters.
    """
    W = np.asarray(W_b, dtype=float)
    y = np.asarray(tau, dtype=float).reshape(-1)
    names = [str(n) for n in names]
    if W.ndim != 2:
        raise ValueError(f"W_b must be a 2-D base regressor (rows, n_b), got shape {W.shape}")
    r, p = W.shape
    if y.shape[0] != r:
        raise ValueError(f"tau has {y.shape[0]} rows but W_b has {r}; stack them the same way")
    if len(names) != p:
        raise ValueError(f"names has {len(names)} entries but W_b has {p} columns")
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(y))):
        raise ValueError("W_b and tau must be finite (no NaN/inf)")
    ratio_essential = float(ratio_essential)
    if not ratio_essential > 1.0:
        raise ValueError(
            f"ratio_essential must be > 1 (mechanics.ratio_essential), got {ratio_essential}"
        )
    if int(min_parameters) < 1:
        raise ValueError(f"min_parameters must be ≥ 1, got {min_parameters}")
    if r <= p:
        raise ValueError(f"need more rows ({r}) than base parameters ({p})")
    if row_weights is not None:
        w = np.asarray(row_weights, dtype=float).reshape(-1)
        if w.shape[0] != r or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"row_weights must be {r} positive finite numbers")
        W = W * w[:, None]
        y = y * w
    return W, y, names, ratio_essential
