"""Residual spikes at the ends of a log: which samples they are and why.

The kinematic filter of figaroh 1.0.2 (:meth:`BaseIdentification._apply_filters`)
runs ``scipy.signal.medfilt`` with a window of ``med_fil`` samples (5 by
default), which pads the signal with **zeros** beyond both ends. A log that
starts or ends away from 0 (any robot not parked at its zero position) then
has its first and last ``med_fil // 2`` positions and velocities replaced by a
neighbour's value or by a zero-dragged median; the zero-phase Butterworth
filter spreads the step over about one period of its cut-off
(``f_sample / f_butter`` samples) and the differentiation that produces the
accelerations turns it into a spike. On the UR10 demo (100 Hz, 10 Hz cut-off)
the first acceleration samples are off by up to 1.7 rad/s² and the
shoulder-lift effort residual reaches −19 N·m at t = 0 against 2.2 N·m
everywhere else. ``signal_processing.filter_params.median_padding: nearest``
(off by default: it changes the 1.0.2 numbers) repeats the edge samples
instead and removes the spike.

:func:`edge_samples` gives the number ``E = med_fil // 2 + ⌈f_sample /
f_butter⌉`` of fitted samples at each end that the filter can distort, and
:func:`edge_effect` says whether the training residuals there stand out
(``max |r|`` over the edge samples above :data:`EDGE_FACTOR` times the largest
``|r|`` of the other samples, for at least one joint). The reports mark those
samples and leave them out of the residual histograms; nothing is re-fitted.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, List, Mapping, Tuple

import numpy as np

__all__ = ["EDGE_FACTOR", "EdgeEffect", "edge_effect", "edge_samples"]

#: Edge samples stand out when their largest |residual| exceeds this many times
#: the largest |residual| of the other samples (for at least one joint).
EDGE_FACTOR = 2.0


@dataclass(frozen=True)
class EdgeEffect:
    """Residual spikes at the ends of the training log.

    Attributes:
        n_edge: Fitted samples marked at each end.
        joints: ``(joint, largest |r| over the edge samples, largest |r|
            elsewhere, index of the largest edge sample)`` per fitted joint
            [N·m or N].
        zero_padding: figaroh's median filter pads with zeros (the cause
            described in the module; False: another filter hook or padding).
        med_fil: Median window [samples].
    """

    n_edge: int
    joints: Tuple[Tuple[str, float, float, int], ...]
    zero_padding: bool
    med_fil: int

    def worst(self) -> Tuple[str, float, float, int]:
        """The joint whose edge residual stands out the most (ratio edge / elsewhere)."""
        return max(self.joints, key=lambda j: j[1] / max(j[2], 1e-300))

    def cause_text(self) -> str:
        """Why the ends of the log are distorted, and the option that removes it."""
        if self.zero_padding:
            return (
                f"the kinematic median filter (window {self.med_fil}) pads the log with zeros at "
                "both ends (signal_processing.filter_params.median_padding: zero, figaroh "
                "1.0.2), so the first and last filtered positions and velocities are distorted "
                "and the differentiated accelerations spike there; median_padding: nearest "
                "removes it (it changes the identified values)"
            )
        return (
            "filter transients and one-sided derivatives at the ends of the log; trim the "
            "log (process_data(truncate=...)) to leave them out"
        )


def _filter_settings(ident: Any) -> Mapping[str, Any]:
    """The ``filter_params`` the solve used, with the hook's defaults filled in."""
    config = getattr(ident, "filter_config", None) or {}
    params = dict(config.get("filter_params", {}) if isinstance(config, Mapping) else {})
    hook = getattr(type(ident), "_apply_filters", None)
    if not callable(hook):
        return params
    try:
        defaults = {
            k: p.default
            for k, p in inspect.signature(hook).parameters.items()
            if p.default is not inspect.Parameter.empty
        }
    except (TypeError, ValueError):
        defaults = {}
    return {**defaults, **params}


def edge_samples(ident: Any, n_fitted: int) -> Tuple[int, bool, int]:
    """``(E, zero padding, med_fil)``: fitted samples at each end the filter can distort.

    ``E = med_fil // 2 + ⌈f_sample / f_butter⌉`` processed samples (half the
    median window, then one period of the Butterworth cut-off), scaled to the
    ``n_fitted`` samples per joint of a decimated fit; 0 without a filter
    setting.

    Args:
        ident: A solved ``BaseIdentification``.
        n_fitted: Fitted samples per joint.
    """
    params = _filter_settings(ident)
    try:
        med_fil = int(params.get("med_fil", 1))
        f_sample, f_butter = float(params["f_sample"]), float(params["f_butter"])
    except (KeyError, TypeError, ValueError):
        return 0, False, 1
    if not (f_sample > 0 and f_butter > 0):
        return 0, False, med_fil
    edge = med_fil // 2 + math.ceil(f_sample / f_butter)
    processed = getattr(ident, "processed_data", None)
    n_processed = None
    if isinstance(processed, Mapping) and processed.get("positions") is not None:
        n_processed = int(np.shape(processed["positions"])[0])
    if n_processed and n_fitted and n_processed != n_fitted:
        edge = math.ceil(edge * n_fitted / n_processed)
    own_filter = getattr(type(ident), "_apply_filters", None)
    figaroh_filter = getattr(own_filter, "__qualname__", "") == "BaseIdentification._apply_filters"
    zero = figaroh_filter and params.get("median_padding", "zero") == "zero" and med_fil > 1
    return int(edge), zero, med_fil


def edge_effect(ident: Any) -> EdgeEffect | None:
    """The edge spikes of the training residuals, or None when the ends do not stand out.

    Args:
        ident: A solved ``BaseIdentification`` (``result["torque processed"]``,
            ``result["torque estimated"]``, ``fit_joints()``, ``filter_config``).

    Returns:
        The :class:`EdgeEffect` when, for at least one joint, the largest
        ``|τ_measured − τ_identified|`` over the first and last ``E`` samples
        exceeds :data:`EDGE_FACTOR` times the largest one elsewhere.
    """
    result = getattr(ident, "result", None)
    if not isinstance(result, Mapping):
        return None
    try:
        names = [str(n) for n in ident.fit_joints()]
        measured = np.ravel(np.asarray(result["torque processed"], dtype=float))
        estimated = np.ravel(np.asarray(result["torque estimated"], dtype=float))
    except Exception:  # noqa: BLE001 - presentation only: no arrays, no marking
        return None
    if not names or measured.shape != estimated.shape or measured.size % len(names):
        return None
    residual = np.abs(measured - estimated).reshape(len(names), -1)
    n = residual.shape[1]
    edge, zero, med_fil = edge_samples(ident, n)
    if edge <= 0 or n <= 4 * edge:
        return None
    mask = np.zeros(n, dtype=bool)
    mask[:edge] = mask[-edge:] = True
    joints: List[Tuple[str, float, float, int]] = []
    for name, r in zip(names, residual, strict=True):
        edge_r = np.where(mask, r, -np.inf)
        k = int(np.argmax(edge_r))
        joints.append((name, float(r[k]), float(r[~mask].max()), k))
    if not any(e > EDGE_FACTOR * inner for _, e, inner, _ in joints):
        return None
    return EdgeEffect(n_edge=edge, joints=tuple(joints), zero_padding=zero, med_fil=med_fil)
