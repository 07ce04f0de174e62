"""Uncertainty of identified parameters against their physical scale.

A relative standard deviation ``σ_i/|φ_i|`` says nothing when ``φ_i ≈ 0`` (a
product of inertia of a symmetric link gives thousands of percent for a tiny
absolute σ). Parameters are therefore grouped by physical kind (mass, first
moment, inertia, friction, …, from the leading letters of their names) and
each σ is judged against the largest magnitude of its kind.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Sequence

import numpy as np

from figaroh._run.html import UNCERTAINTY_CAUTION_PCT, UNCERTAINTY_WARN_PCT

__all__ = ["NEAR_ZERO_FRACTION", "parameter_kind", "parameter_uncertainty", "uncertainty_note"]

#: Parameter kind of each name prefix: parameters of one kind share a physical scale.
_PARAMETER_KINDS = {
    "m": "mass [kg]",
    **{k: "first moment [kg·m]" for k in ("mx", "my", "mz")},
    **{k: "inertia [kg·m²]" for k in ("Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")},
    "fv": "viscous friction",
    "fs": "Coulomb friction",
    "Ia": "armature [kg·m²]",
    "off": "effort offset",
}
#: |φ_i| at or below this fraction of its kind's scale counts as ≈ 0 (no relative σ).
NEAR_ZERO_FRACTION = 0.01


def parameter_kind(name: Any) -> str:
    """Physical kind of a (base) parameter from the leading letters of its name.

    ``"Ixy_elbow_joint + 0.5*m_wrist_1_joint"`` → ``"inertia [kg·m²]"``; a
    prefix that is not a dynamic-parameter prefix is its own kind.
    """
    match = re.match(r"[A-Za-z]+", str(name))
    key = match.group(0) if match else str(name)
    return _PARAMETER_KINDS.get(key, key)


def parameter_uncertainty(
    names: Sequence[Any], values: Sequence[Any] | None, std_relative: Sequence[Any] | None
) -> Dict[str, List[Any]]:
    """Absolute σ, relative σ where meaningful, and σ against the physical scale.

    With ``σ_i = |std%_i / 100 · φ_i|`` (parameter units) and the scale of a
    kind ``s_k = max_{j ∈ k} |φ_j|`` (largest magnitude of that physical
    quantity in the fit, see :func:`parameter_kind`):

    * ``relative_pct[i] = std%_i`` only when ``|φ_i| > NEAR_ZERO_FRACTION · s_k``,
      else None (the relative σ of a value ≈ 0, e.g. a product of inertia of a
      symmetric link, says nothing about the fit);
    * ``scaled_pct[i] = σ_i / s_k · 100`` [%], which decides the quality tier.

    Args:
        names: Parameter names.
        values: Estimates φ (SI units).
        std_relative: Relative standard deviations σ_i/|φ_i|·100 [%].

    Returns:
        ``{"sigma", "relative_pct", "scaled_pct", "scale", "kind"}`` lists
        aligned with ``names`` (NaN / None where unavailable).
    """
    n = len(names)

    def floats(seq: Sequence[Any] | None) -> List[float]:
        raw = [] if seq is None else list(np.ravel(np.asarray(seq, dtype=float)))
        return (raw + [math.nan] * n)[:n]

    phi, pct = floats(values), floats(std_relative)
    kinds = [parameter_kind(nm) for nm in names]
    scale: Dict[str, float] = {}
    for kind, v in zip(kinds, phi, strict=True):
        if math.isfinite(v):
            scale[kind] = max(scale.get(kind, 0.0), abs(v))
    sigma = [
        abs(p / 100.0 * v) if math.isfinite(p) and math.isfinite(v) else math.nan
        for p, v in zip(pct, phi, strict=True)
    ]
    out: Dict[str, List[Any]] = {
        "sigma": sigma,
        "relative_pct": [],
        "scaled_pct": [],
        "scale": [],
        "kind": kinds,
    }
    for i, kind in enumerate(kinds):
        s_k = scale.get(kind, 0.0)
        out["scale"].append(s_k)
        near_zero = not math.isfinite(phi[i]) or abs(phi[i]) <= NEAR_ZERO_FRACTION * s_k
        out["relative_pct"].append(None if near_zero else pct[i])
        scaled = sigma[i] / s_k * 100.0 if s_k > 0 and math.isfinite(sigma[i]) else math.nan
        if not math.isfinite(sigma[i]) and math.isinf(pct[i]):
            scaled = math.inf  # an infinite spread is certainly poorly identified
        out["scaled_pct"].append(scaled)
    return out


def uncertainty_note() -> str:
    """HTML paragraph explaining the columns and tiers of the parameter table."""
    return (
        '<p class="muted">σ is the absolute standard deviation (parameter units). '
        "σ / |value| is shown only where the value is not ≈ 0 "
        f"(|value| &gt; {NEAR_ZERO_FRACTION:g} × the scale). The confidence comes from "
        "σ / scale, the scale being the largest |value| of the same kind (mass, first "
        f"moment, inertia, friction, …): good ≤ {UNCERTAINTY_CAUTION_PCT:.0f} % &lt; fair ≤ "
        f"{UNCERTAINTY_WARN_PCT:.0f} % &lt; poor.</p>"
    )
