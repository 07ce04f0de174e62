"""The flat measurement layout of a geometric calibration.

Flat layout (marker-major, then measured component, then sample):
``index(k, c, s) = (k·n_meas + c)·NbSample + s``; ``measurability`` says
which of ``[x, y, z, φx, φy, φz]`` are measured [m, rad].
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from numpy.typing import ArrayLike

from figaroh.calibration._se3 import matrix_to_rpy
from figaroh.calibration.settings import DEFAULT_SETTINGS

__all__ = ["measured_values", "measurement_weights"]


def _meas_mask(calib_config: Mapping[str, Any]) -> np.ndarray:
    m = np.asarray(calib_config.get("measurability", [True] * 3 + [False] * 3), dtype=bool)
    if m.shape != (6,):
        raise ValueError(f"calib_config['measurability'] must have 6 booleans, got {m.tolist()}")
    return m


def _to_flat(arr: np.ndarray) -> np.ndarray:
    """(N, K, c, ...) → flat marker-major, component, sample (trailing dims kept)."""
    N, K, c = arr.shape[:3]
    return np.moveaxis(arr, 0, 2).reshape((K * c * N,) + arr.shape[3:])


def _from_flat(flat: np.ndarray, N: int, K: int, c: int) -> np.ndarray:
    """Flat (K·c·N, ...) → (N, K, c, ...)."""
    flat = np.asarray(flat)
    return np.moveaxis(flat.reshape((K, c, N) + flat.shape[1:]), 2, 0)


def measured_values(flat: ArrayLike, calib_config: Mapping[str, Any], n_samples: int) -> np.ndarray:
    """Flat measurement vector → (N, K, 6) array with NaN for unmeasured components."""
    mask = _meas_mask(calib_config)
    K = int(calib_config.get("NbMarkers", 1))
    c = int(mask.sum())
    flat = np.asarray(flat, dtype=float).ravel()
    if flat.size != K * c * n_samples:
        raise ValueError(
            f"measurement vector has {flat.size} entries; expected NbMarkers·n_meas·NbSample = "
            f"{K}·{c}·{n_samples} = {K * c * n_samples}"
        )
    out = np.full((n_samples, K, 6), np.nan)
    out[:, :, mask] = _from_flat(flat, n_samples, K, c)
    return out


def _pose_vector(R: np.ndarray, p: np.ndarray, calib_config: Mapping[str, Any]) -> np.ndarray:
    mask = _meas_mask(calib_config)
    loc = np.concatenate([p, matrix_to_rpy(R)], axis=-1)  # (N,K,6)
    return _to_flat(loc[:, :, mask])


def measurement_weights(
    calib_config: Mapping[str, Any],
    n_samples: int,
    pos_weight: float | None = None,
    orient_weight: float | None = None,
) -> np.ndarray:
    """Per-row weights of the flat layout: ``1/σ_position`` and ``1/σ_orientation``.

    Defaults come from ``calib_config["measurement_std"]``, else
    :data:`~figaroh.calibration.settings.DEFAULT_SETTINGS`
    (``{position: 0.001 m, orientation: 0.01 rad}``).

    Returns:
        (K·n_meas·N,) weights [1/m or 1/rad].

    Raises:
        ValueError: a non-positive standard deviation.
    """
    std = calib_config.get("measurement_std") or {}
    if pos_weight is None:
        s = float(std.get("position", DEFAULT_SETTINGS.measurement_std_position))
        if not s > 0:
            raise ValueError(f"measurement_std.position must be > 0 [m], got {s}")
        pos_weight = 1.0 / s
    if orient_weight is None:
        s = float(std.get("orientation", DEFAULT_SETTINGS.measurement_std_orientation))
        if not s > 0:
            raise ValueError(f"measurement_std.orientation must be > 0 [rad], got {s}")
        orient_weight = 1.0 / s
    mask = _meas_mask(calib_config)
    K = int(calib_config.get("NbMarkers", 1))
    comp_w = np.where(np.arange(6) < 3, pos_weight, orient_weight)[mask]
    return np.tile(np.repeat(comp_w, n_samples), K)
