"""Signal conditioning for identification: filtering and differentiation.

Every function acts on ``(N, n)`` arrays (one column per joint); none loops
over samples.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

logger = logging.getLogger(__name__)

DIFFERENTIATION_METHODS = ("gradient", "forward", "backward", "central")


def _as_columns(x: np.ndarray, name: str) -> tuple[np.ndarray, bool]:
    arr = np.asarray(x, dtype=float)
    was_1d = arr.ndim == 1
    if was_1d:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 1-D or 2-D array (samples × joints), got {arr.shape}")
    return arr, was_1d


def _checked_filter_params(
    nbutter: int, f_butter: float, med_fil: int, f_sample: float
) -> tuple[int, float, int]:
    """``(order, f_butter / Nyquist, median window)`` after range checks."""
    f_sample = float(f_sample)
    f_butter = float(f_butter)
    if not f_sample > 0:
        raise ValueError(f"filter_params.f_sample must be positive [Hz], got {f_sample}")
    nyquist = f_sample / 2.0
    if not 0 < f_butter < nyquist:
        raise ValueError(
            f"filter_params.f_butter = {f_butter} Hz must lie in (0, {nyquist}) Hz: the "
            f"Nyquist frequency of f_sample = {f_sample} Hz. Lower the cut-off or check the "
            "sampling frequency"
        )
    nbutter = int(nbutter)
    if nbutter < 1:
        raise ValueError(f"filter_params.nbutter must be ≥ 1, got {nbutter}")
    med_fil = int(med_fil)
    if med_fil < 1 or med_fil % 2 == 0:
        raise ValueError(f"filter_params.med_fil must be a positive odd window, got {med_fil}")
    return nbutter, f_butter / nyquist, med_fil


def low_pass(
    x: np.ndarray,
    *,
    nbutter: int = 4,
    f_butter: float = 2.0,
    med_fil: int = 5,
    f_sample: float = 100.0,
    median_padding: str = "zero",
) -> np.ndarray:
    """Median filter then zero-phase Butterworth low-pass, column by column.

    figaroh 1.0.2's kinematic filter, with its ``scipy.signal`` calls and
    arguments. With ``(b, a) = scipy.signal.butter(nbutter, f_butter /
    (f_sample / 2), "low")``, each column ``x_k`` becomes

    .. code-block:: python

        y_k = scipy.signal.filtfilt(
            b, a, scipy.signal.medfilt(x_k, med_fil),
            padtype="odd", padlen=3 * (max(len(b), len(a)) - 1),
        )

    1. ``medfilt`` is a running median over ``med_fil`` samples. It pads the
       signal with **zeros** beyond both ends (``median_padding="zero"``, figaroh
       1.0.2), so the first and last ``med_fil // 2`` samples of a signal far
       from zero are replaced by a neighbour's value (a step that the
       differentiated velocities and accelerations turn into a spike).
       ``median_padding="nearest"`` runs the same ``medfilt`` on the column
       extended by ``med_fil // 2`` copies of its edge samples, then drops
       them (a constant or monotonic edge is kept);
    2. ``filtfilt`` runs the transfer function ``(b, a)`` forward and
       backward: no phase lag, the same number of samples, odd extension of
       ``padlen = 3·nbutter`` samples at both ends.

    The result is ``scipy.signal``'s bit for bit, including the round-off
    values (~1e-14 of the signal's range) of a signal at rest, whose signs
    the Coulomb-friction column ``sign(dq)`` reads.

    Args:
        x: Signal (N,) or (N, n).
        nbutter: Butterworth order.
        f_butter: Cut-off frequency [Hz]; must be below the Nyquist frequency
            ``f_sample / 2``.
        med_fil: Median window length [samples] (odd; 1 leaves the signal as is).
        f_sample: Sampling frequency [Hz].
        median_padding: ``"zero"`` (figaroh 1.0.2) or ``"nearest"``.

    Returns:
        The filtered signal, same shape as ``x``.

    Raises:
        ValueError: Cut-off at or above Nyquist, bad parameters or too few samples.
    """
    (out,) = low_pass_many(
        [x],
        nbutter=nbutter,
        f_butter=f_butter,
        med_fil=med_fil,
        f_sample=f_sample,
        median_padding=median_padding,
    )
    return out


def low_pass_many(
    signals: Sequence[np.ndarray],
    *,
    nbutter: int = 4,
    f_butter: float = 2.0,
    med_fil: int = 5,
    f_sample: float = 100.0,
    median_padding: str = "zero",
) -> list[np.ndarray]:
    """:func:`low_pass` of each signal, with one filter design.

    The signals are checked one after the other (the first failing one
    raises, as a loop over :func:`low_pass` would) before any is filtered;
    ``scipy.signal`` is imported by the first call.

    Args:
        signals: Signals (N,) or (N, n_i).
        nbutter: Butterworth order.
        f_butter: Cut-off frequency [Hz]; must be below the Nyquist frequency.
        med_fil: Median window length [samples] (odd; 1 leaves the signal as is).
        f_sample: Sampling frequency [Hz].
        median_padding: ``"zero"`` (figaroh 1.0.2) or ``"nearest"``.

    Returns:
        The filtered signals, each with the shape of its input.

    Raises:
        ValueError: Cut-off at or above Nyquist, bad parameters or too few samples.
    """
    if not signals:
        return []
    if median_padding not in ("zero", "nearest"):
        raise ValueError(
            "filter_params.median_padding must be 'zero' (figaroh 1.0.2) or 'nearest', "
            f"got {median_padding!r}"
        )
    order, wn, med_fil = _checked_filter_params(nbutter, f_butter, med_fil, f_sample)
    columns = [_as_columns(x, "signal") for x in signals]
    from scipy import signal  # heavy import (0.3-1 s), only where used

    b, a = signal.butter(order, wn, "low")
    padlen = 3 * (max(len(b), len(a)) - 1)
    for arr, _ in columns:
        if arr.shape[0] <= padlen:
            raise ValueError(
                f"the low-pass filter needs more than {padlen} samples, got {arr.shape[0]}: "
                "record a longer trajectory or lower filter_params.nbutter"
            )
    half = med_fil // 2
    outs = []
    for arr, was_1d in columns:
        out = np.empty_like(arr)
        for k in range(arr.shape[1]):
            if median_padding == "zero":
                med = signal.medfilt(arr[:, k], med_fil)
            else:
                padded = np.pad(arr[:, k], half, mode="edge")
                med = signal.medfilt(padded, med_fil)[half : half + arr.shape[0]]
            out[:, k] = signal.filtfilt(b, a, med, padtype="odd", padlen=padlen)
        outs.append(out[:, 0] if was_1d else out)
    return outs


def differentiate(t: np.ndarray, x: np.ndarray, method: str = "gradient") -> np.ndarray:
    """Time derivative of a sampled signal (non-uniform time stamps allowed).

    Args:
        t: Time stamps (N,) or (N, k) [s] (first column used), strictly increasing.
        x: Signal (N,) or (N, n).
        method: ``"gradient"`` (second-order central, one-sided at the ends),
            ``"forward"``, ``"backward"`` or ``"central"``.

    Returns:
        dx/dt with the shape of ``x`` [unit of x per second].

    Raises:
        ValueError: Length mismatch, non-increasing time or unknown method.
    """
    tt = np.asarray(t, dtype=float)
    if tt.ndim == 2:
        tt = tt[:, 0]
    arr, was_1d = _as_columns(x, "signal")
    if tt.shape[0] != arr.shape[0]:
        raise ValueError(f"time vector has {tt.shape[0]} samples but the signal has {arr.shape[0]}")
    if arr.shape[0] < 3:
        raise ValueError("differentiation needs at least 3 samples")
    dt = np.diff(tt)
    if np.any(dt <= 0):
        k = int(np.flatnonzero(dt <= 0)[0])
        raise ValueError(
            f"time stamps must be strictly increasing; t[{k + 1}] = {tt[k + 1]} ≤ t[{k}] = {tt[k]}"
        )
    if method == "gradient":
        out = np.gradient(arr, tt, axis=0)
    elif method in ("forward", "backward"):
        d = np.diff(arr, axis=0) / dt[:, None]
        out = np.empty_like(arr)
        if method == "forward":
            out[:-1] = d
            out[-1] = d[-1]
        else:
            out[1:] = d
            out[0] = d[0]
    elif method == "central":
        out = np.empty_like(arr)
        out[1:-1] = (arr[2:] - arr[:-2]) / (tt[2:] - tt[:-2])[:, None]
        out[0] = (arr[1] - arr[0]) / dt[0]
        out[-1] = (arr[-1] - arr[-2]) / dt[-1]
    else:
        raise ValueError(
            f"Unsupported differentiation method: {method!r}; choose one of "
            f"{DIFFERENTIATION_METHODS} (signal_processing.differentiation_method)"
        )
    return out[:, 0] if was_1d else out


def truncate_dict(data: dict, truncate: tuple | None = None) -> dict:
    """Shallow copy of ``data`` with every array sliced ``[start:end]`` along axis 0."""
    if truncate is None:
        return dict(data)
    if not isinstance(truncate, (list, tuple)) or len(truncate) != 2:
        raise ValueError("Truncate parameter must be a tuple/list of length 2 (start, end)")
    start, end = truncate
    return {k: (None if v is None else np.asarray(v)[start:end]) for k, v in data.items()}
