"""Standard deviations, confidence intervals and grades of the base parameters of a solve.

The base fit ``φ̂ = argmin ‖τ − W_b φ‖²`` (``r`` rows, ``n_b`` base
parameters) estimates the effort noise variance ``s² = ‖τ − W_b φ̂‖² / (r −
n_b)`` and the standard deviation of each base parameter ``σ_i = s·‖row_i(R⁻¹)‖``
(``W_bᵀW_b = RᵀR``): the numbers behind ``std_relative`` (which is
``round(100·σ_i/|φ̂_i|, 2)``), computed here without the rounding — a
relative σ of 0.04 % rounded to two decimals is 12 % off. The confidence
interval of each base parameter is ``φ̂_i ± t_{1−α/2, r−n_b} σ_i``
(:mod:`figaroh._run.confidence`) and its grade the shared rule of
:mod:`figaroh._run.uncertainty_grade`, with the kinds of
:func:`figaroh._run.uncertainty.parameter_kind` (mass, first moment, inertia,
friction, …).

Nothing is re-fitted: the arrays are those the solve stored
(``dynamic_regressor_base``, ``phi_base``, ``tau_noised``, ``tau_identif``,
and the QR factor of the fit when it is at hand).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Tuple

import numpy as np

from figaroh._run.confidence import configured_confidence_level
from figaroh._run.uncertainty import ParameterTable, kind_unit, parameter_kind, parameter_table
from figaroh.identification.identification_tools import stdev_of_residual
from figaroh.tools.qrdecomposition import tall_qr_r

logger = logging.getLogger(__name__)

__all__ = ["base_parameter_sigma", "base_parameter_table"]


def _vector(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    try:
        return np.ravel(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        return None


#: σ already computed per identification, keyed by the identity of the fit arrays it came
#: from: the terminal report, the HTML report, the verdict and the CSV of one run share it
#: instead of each recomputing the residual (and, for a WLS estimate, a tall QR).
_SIGMA_CACHE: weakref.WeakKeyDictionary[Any, Tuple[Tuple[int, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def _fit_sigma(ident: Any) -> Tuple[np.ndarray, int] | None:
    """σ and ``r − n_b`` from the stored fit arrays (those ``std_relative`` came from)."""
    W = getattr(ident, "dynamic_regressor_base", None)
    phi = getattr(ident, "phi_base", None)
    tau = getattr(ident, "tau_noised", None)
    if W is None or phi is None or tau is None or np.ndim(W) != 2 or np.ndim(tau) != 1:
        return None
    key = (id(W), id(phi), id(tau), id(getattr(ident, "tau_identif", None)))
    try:
        cached = _SIGMA_CACHE.get(ident)
    except TypeError:  # not weak-referenceable: compute every time
        cached = None
    if cached is not None and cached[0] == key:
        return cached[1]
    result = _sigma_of_arrays(ident, W, phi, tau)
    try:
        _SIGMA_CACHE[ident] = (key, result)
    except TypeError:
        pass
    return result


def _sigma_of_arrays(ident: Any, W: Any, phi: Any, tau: Any) -> Tuple[np.ndarray, int] | None:
    """:func:`_fit_sigma` computed from the arrays."""
    W = np.asarray(W, dtype=float)
    n_rows, n_b = W.shape
    if np.size(phi) != n_b or np.size(tau) != n_rows or n_rows <= n_b:
        return None
    qr: Any = getattr(getattr(getattr(ident, "_run", None), "fit", None), "qr", None)
    own_qr = qr is not None and getattr(qr, "W_b", None) is W
    r1: Any = qr.R1 if own_qr else None
    tau_id = getattr(ident, "tau_identif", None)
    if own_qr and phi is qr.phi_b and tau_id is not None and np.size(tau_id) == n_rows:
        # the QR's own fit: the residual fit_quality used
        residual = np.asarray(tau, dtype=float) - np.asarray(tau_id, dtype=float)
    else:
        residual = np.asarray(tau, dtype=float) - W @ np.asarray(phi, dtype=float).ravel()
        r1 = tall_qr_r(W) if r1 is None else r1
    return stdev_of_residual(residual, n_b, r1), n_rows - n_b


def base_parameter_sigma(ident: Any) -> Tuple[np.ndarray | None, int | None]:
    """Absolute standard deviation of each base parameter and the residual degrees of freedom.

    From the fit arrays when the solve stored them (exact); else
    ``σ_i = |std_relative_i / 100 · φ̂_i|`` (rounded like ``std_relative``)
    with the degrees of freedom of ``result["base regressor"]`` when known.

    Args:
        ident: A solved ``BaseIdentification``.

    Returns:
        ``(σ [parameter units], r − n_b)``; ``(None, None)`` before ``solve()``.
    """
    try:
        exact = _fit_sigma(ident)
    except Exception as exc:  # noqa: BLE001 - a report must not die on a degenerate fit
        logger.warning("base-parameter σ from the fit arrays unavailable: %s", exc)
        exact = None
    if exact is not None:
        return exact
    phi = _vector(getattr(ident, "phi_base", None))
    result = getattr(ident, "result", None) or {}
    if phi is None:
        phi = _vector(result.get("base parameters values"))
    std = _vector(getattr(ident, "std_relative", None))
    if phi is None or std is None or std.shape != phi.shape:
        return None, None
    W: Any = result.get("base regressor")
    dof = int(np.shape(W)[0] - np.shape(W)[1]) if W is not None and np.ndim(W) == 2 else None
    return np.abs(std / 100.0 * phi), dof


def base_parameter_table(ident: Any, level: float | None = None) -> ParameterTable | None:
    """The base parameters of a solve with σ, confidence interval and grade.

    Args:
        ident: A solved ``BaseIdentification``.
        level: Confidence level in ``(0, 1)``; None: the configuration's
            ``verification.confidence_level``, else 0.95.

    Returns:
        The table, or None before ``solve()``.
    """
    result = getattr(ident, "result", None)
    if not isinstance(result, dict):
        return None
    names = list(result.get("base parameters names", []) or [])
    values = getattr(ident, "phi_base", None)
    if values is None:
        values = result.get("base parameters values")
    sigma: Any
    sigma, dof = base_parameter_sigma(ident)
    if level is None:
        level = configured_confidence_level(getattr(ident, "identif_config", None))
    kinds = [parameter_kind(n) for n in names]
    return parameter_table(
        names, kinds, values, sigma, dof, level, units=[kind_unit(k) for k in kinds]
    )
