"""Butterworth design, median filter and zero-phase IIR filtering in numpy.

The three operations of figaroh's default low-pass filter, computed without
importing ``scipy.signal`` (whose import costs 0.3–1 s):

* :func:`butter_lowpass` — the digital Butterworth low-pass ``(b, a)`` with the
  operation order of ``scipy.signal.butter(order, wn, "low")`` (same
  coefficients to round-off);
* :func:`medfilt` — running median with zero padding, identical to
  ``scipy.signal.medfilt`` (a median of an odd window is one of its samples);
* :func:`filtfilt` — forward-backward filtering with odd extension and
  steady-state initial conditions, as ``scipy.signal.filtfilt(b, a, x,
  padtype="odd", padlen=...)``.

The IIR recursion is evaluated block by block as a linear recurrence: with the
state-space form ``(A, B, C, D)`` of the direct form II transposed filter, a
block of ``L`` samples ``X`` (``L × columns``) starting from the state ``s`` gives

.. math::

    Y = T X + O s, \\qquad s' = A^L s + K X,

where ``T`` is the lower-triangular Toeplitz matrix of the impulse response
``h_0 = D, h_k = C A^{k-1} B``, ``O`` stacks ``C A^k`` and ``K = [A^{L-1} B, …,
B]``. Every column and every block's ``T X`` and ``K X`` are matrix products;
only the ``A^L s`` chain over blocks is sequential.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

#: Samples per block of the blocked recurrence.
BLOCK = 64

#: Longest median window sorted by a min/max network (longer: numpy.partition).
NETWORK_MAX = 11


def butter_lowpass(order: int, wn: float) -> tuple[np.ndarray, np.ndarray]:
    """Digital Butterworth low-pass transfer function ``(b, a)``.

    Analog prototype poles ``p_m = −exp(iπm/(2N))`` (``m = −N+1, −N+3, …,
    N−1``), pre-warped cut-off ``ω = 4·tan(π·wn/2)`` (sampling rate 2),
    scaling ``p ← ω·p`` with gain ``ω^N``, bilinear transform
    ``z = (4 + p)/(4 − p)`` with ``N`` zeros at −1 and gain
    ``ω^N·Re(1/∏(4 − p))``, then the polynomials of the zeros and the poles.

    Args:
        order: Filter order ``N`` ≥ 1.
        wn: Cut-off as a fraction of the Nyquist frequency, ``0 < wn < 1``.

    Returns:
        ``(b, a)``: numerator and denominator, ``N + 1`` coefficients each,
        ``a[0] = 1``.

    Raises:
        ValueError: Order below 1 or ``wn`` outside (0, 1).
    """
    if int(order) != order or order < 1:
        raise ValueError(f"Butterworth order must be a positive integer, got {order!r}")
    n = int(order)
    wn = np.asarray(wn, dtype=float)
    if wn.shape != () or not 0 < wn < 1:
        raise ValueError(f"Digital filter critical frequency must be 0 < Wn < 1, got {wn}")
    m = np.arange(-n + 1, n, 2, dtype=np.float64)
    poles = -np.exp(1j * np.pi * m / (2 * n))
    fs = 2.0
    warped = float(2 * fs * np.tan(np.pi * wn / fs))
    poles = warped * poles
    gain = 1.0 * warped**n
    fs2 = 2.0 * fs
    poles_z = (fs2 + poles) / (fs2 - poles)
    zeros_z = -np.ones(n)
    gain_z = gain * np.real(np.prod(fs2 - np.zeros(0)) / np.prod(fs2 - poles))
    b = np.multiply(np.atleast_1d(np.float64(gain_z)), np.poly(zeros_z))
    a = np.poly(poles_z)
    if np.iscomplexobj(a):
        a = np.real(a).copy()
    return b, np.atleast_1d(a)


def medfilt(x: np.ndarray, kernel_size: int = 3) -> np.ndarray:
    """Running median over an odd window along axis 0, zero-padded at both ends.

    Sample ``k`` of the output is the median of ``x[k − h … k + h]``
    (``h = kernel_size // 2``) with zeros beyond the ends, column by column
    for a 2-D ``x``: ``scipy.signal.medfilt(x_col, kernel_size)``, bit for bit
    (the median of an odd window is one of its samples). Windows up to
    :data:`NETWORK_MAX` samples are sorted by an odd-even transposition
    network of element-wise minima and maxima over all columns at once.

    Args:
        x: Signal (N,) or (N, c).
        kernel_size: Odd window length [samples].

    Returns:
        The filtered signal, float, same shape as ``x``.

    Raises:
        ValueError: Even window or a signal that is not 1-D or 2-D.
    """
    k = int(kernel_size)
    if k < 1 or k % 2 != 1:
        raise ValueError("Each element of kernel_size should be odd.")
    arr = np.asarray(x, dtype=float)
    if arr.ndim not in (1, 2):
        raise ValueError(f"medfilt expects a 1-D or 2-D signal, got shape {arr.shape}")
    if k == 1:
        return arr.copy()
    half = k // 2
    n = arr.shape[0]
    padded = np.pad(arr, [(half, half)] + [(0, 0)] * (arr.ndim - 1))
    if k <= NETWORK_MAX:
        rows = list(np.stack([padded[j : j + n] for j in range(k)]))
        spare = np.empty_like(rows[0])
        for step in range(k):
            for j in range(step % 2, k - 1, 2):
                np.minimum(rows[j], rows[j + 1], out=spare)
                np.maximum(rows[j], rows[j + 1], out=rows[j + 1])
                rows[j], spare = spare, rows[j]
        return rows[half].copy()
    windows = np.lib.stride_tricks.sliding_window_view(padded, k, axis=0)
    return np.partition(windows, half, axis=-1)[..., half].copy()


def _normalise(b: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b = np.atleast_1d(np.asarray(b, dtype=float))
    a = np.atleast_1d(np.asarray(a, dtype=float))
    while a.shape[0] > 1 and a[0] == 0.0:
        a = a[1:]
    if a.shape[0] < 1 or a[0] == 0.0:
        raise ValueError("There must be at least one nonzero `a` coefficient.")
    if a[0] != 1.0:
        b = b / a[0]
        a = a / a[0]
    n = max(a.shape[0], b.shape[0])
    a = np.concatenate((a, np.zeros(n - a.shape[0])))
    b = np.concatenate((b, np.zeros(n - b.shape[0])))
    return b, a


def _state_space(b: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)`` of the normalised direct form II transposed filter (C = e₀, D = b₀)."""
    m = a.shape[0] - 1
    A = np.zeros((m, m))
    A[:, 0] = -a[1:]
    A[np.arange(m - 1), np.arange(1, m)] = 1.0
    return A, b[1:] - a[1:] * b[0]


def lfilter_zi(b: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Steady-state initial state for a unit step input: ``(I − A) zi = B``.

    Args:
        b: Numerator coefficients.
        a: Denominator coefficients.

    Returns:
        ``zi`` (``max(len(a), len(b)) − 1``,).
    """
    b, a = _normalise(b, a)
    A, B = _state_space(b, a)
    return np.linalg.solve(np.eye(A.shape[0]) - A, B)


class _Blocked:
    """Precomputed block matrices of one filter for blocks of ``L`` samples.

    The powers ``A^k`` and the state chain over blocks are carried in extended
    precision (``numpy.longdouble``): the chain multiplies by ``A^L`` once per
    block, and for poles clustered near 1 (high order, low cut-off) the
    eigenvalues of a double-precision ``A^L`` can be pushed out of the unit
    circle by round-off. The bulk products ``T X``, ``K X`` and ``O s`` are
    double-precision matrix products.
    """

    def __init__(self, b: np.ndarray, a: np.ndarray, L: int) -> None:
        A, B = _state_space(b, a)
        A = A.astype(np.longdouble)
        B = B.astype(np.longdouble)
        m = A.shape[0]
        powers = [np.eye(m, dtype=np.longdouble)]
        for _ in range(L):
            powers.append(powers[-1] @ A)
        self.powers = powers
        # v_k = A^k B and the rows C A^k = row 0 of A^k.
        v = np.stack([p @ B for p in powers[:L]])  # (L, m)
        self.obs = np.stack([p[0] for p in powers[:L]]).astype(float)  # (L, m)
        h = np.concatenate(([b[0]], v[: L - 1, 0].astype(float)))
        idx = np.arange(L)
        lag = idx[:, None] - idx[None, :]
        self.toeplitz = np.where(lag >= 0, h[np.clip(lag, 0, L - 1)], 0.0)
        self.ctrl = v[::-1].T.astype(float)  # (m, L): column j is A^{L-1-j} B
        self.v = v.astype(float)
        self.L = L

    def run(self, x: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Filter the rows of ``x`` (c, N) from the states ``s`` (c, m).

        Returns:
            ``(y, s_final)``: outputs (c, N) and final states (c, m).
        """
        L = self.L
        c, n = x.shape
        nb, rem = divmod(n, L)
        y = np.empty((c, n))
        s = s.astype(np.longdouble)
        if nb:
            # Rows (channel, block), columns the L samples of the block: one GEMM each.
            X = np.ascontiguousarray(x[:, : nb * L]).reshape(c * nb, L)
            KX = (X @ self.ctrl.T).reshape(c, nb, -1)
            ALt = self.powers[L].T
            states = np.empty((c, nb, s.shape[1]), dtype=np.longdouble)
            for k in range(nb):
                states[:, k] = s
                s = s @ ALt + KX[:, k]
            Y = X @ self.toeplitz.T
            Y += states.astype(float).reshape(c * nb, -1) @ self.obs.T
            y[:, : nb * L] = Y.reshape(c, nb * L)
        if rem:
            xr = x[:, nb * L :]
            y[:, nb * L :] = xr @ self.toeplitz[:rem, :rem].T + s.astype(float) @ self.obs[:rem].T
            s = s @ self.powers[rem].T + xr @ self.v[:rem][::-1]
        return y, s.astype(float)


def lfilter(
    b: np.ndarray, a: np.ndarray, x: np.ndarray, zi: np.ndarray, block: int = BLOCK
) -> tuple[np.ndarray, np.ndarray]:
    """IIR filter along axis 0 of ``x`` (N, c) from the initial state ``zi`` (m, c).

    Same recursion as ``scipy.signal.lfilter`` (direct form II transposed),
    evaluated block by block (see the module docstring).

    Args:
        b: Numerator coefficients.
        a: Denominator coefficients.
        x: Signal (N, c), one column per channel.
        zi: Initial state (m, c), ``m = max(len(a), len(b)) − 1``.
        block: Block length ``L`` [samples].

    Returns:
        ``(y, zf)``: output (N, c) and final state (m, c).
    """
    b, a = _normalise(b, a)
    x = np.asarray(x, dtype=float)
    if a.shape[0] == 1:
        return b[0] * x, np.zeros((0, x.shape[1]))
    y, zf = _Blocked(b, a, int(block)).run(x.T, np.asarray(zi, dtype=float).T)
    return y.T, zf.T


def filtfilt(
    b: np.ndarray, a: np.ndarray, x: np.ndarray, axis: int = 0, padlen: int | None = None
) -> np.ndarray:
    """Zero-phase forward-backward IIR filtering with odd extension.

    ``x`` is extended by ``padlen`` samples at each end with its odd reflection
    (``2·x₀ − x_k`` and ``2·x_{N−1} − x_{N−1−k}``), filtered forward from the
    state ``zi·x_ext[0]`` (:func:`lfilter_zi`), reversed, filtered again from
    ``zi·y[-1]``, reversed back and trimmed. Same result as
    ``scipy.signal.filtfilt(b, a, x, axis, padtype="odd", padlen=padlen)``.

    Args:
        b: Numerator coefficients.
        a: Denominator coefficients.
        x: Signal, filtered along ``axis``.
        axis: Axis of the samples.
        padlen: Extension length [samples]; defaults to
            ``3·max(len(a), len(b))``.

    Returns:
        The filtered signal, same shape as ``x``.

    Raises:
        ValueError: ``x.shape[axis] <= padlen``.
    """
    b, a = _normalise(b, a)
    arr = np.moveaxis(np.asarray(x, dtype=float), axis, 0)
    shape = arr.shape
    rows = arr.reshape(shape[0], -1).T  # (c, N): channels as rows
    edge = 3 * a.shape[0] if padlen is None else int(padlen)
    if shape[0] <= edge:
        raise ValueError(
            f"The length of the input vector x must be greater than padlen, which is {edge}."
        )
    if edge > 0:
        left = 2 * rows[:, :1] - rows[:, edge:0:-1]
        right = 2 * rows[:, -1:] - rows[:, -2 : -(edge + 2) : -1]
        rows = np.concatenate((left, rows, right), axis=1)
    if a.shape[0] == 1:
        y = (b[0] * b[0]) * rows
    else:
        zi = lfilter_zi(b, a)[None, :]
        blocked = _Blocked(b, a, BLOCK)
        y, _ = blocked.run(rows, zi * rows[:, :1])
        y, _ = blocked.run(y[:, ::-1], zi * y[:, -1:])
        y = y[:, ::-1]
    if edge > 0:
        y = y[:, edge:-edge]
    y = y.T
    return np.moveaxis(np.ascontiguousarray(y).reshape(shape), 0, axis)


class LowPassFunctions(NamedTuple):
    """The three functions of the low-pass filter from one backend."""

    butter: Callable[[int, float], tuple[np.ndarray, np.ndarray]]
    medfilt: Callable[[np.ndarray, int], np.ndarray]  # along axis 0, column by column
    filtfilt: Callable[..., np.ndarray]


#: Environment variable selecting the filter backend: ``numpy`` (default) or ``scipy``.
BACKEND_ENV = "FIGAROH_FILTER_BACKEND"


def lowpass_functions(default: str = "numpy") -> LowPassFunctions:
    """Butterworth design, median filter and filtfilt of the selected backend.

    The environment variable ``FIGAROH_FILTER_BACKEND`` (``numpy`` or
    ``scipy``) overrides ``default``. ``scipy`` uses ``scipy.signal``
    (imported here, 0.3–1 s); ``numpy`` uses this module.

    Args:
        default: Backend when the environment variable is unset or empty.

    Returns:
        ``(butter(order, wn), medfilt(x, k), filtfilt(b, a, x, axis=, padlen=))``;
        ``medfilt`` filters each column of a 2-D ``x``.

    Raises:
        ValueError: Unknown backend name.
    """
    backend = os.environ.get(BACKEND_ENV, "").strip().lower() or default
    if backend == "numpy":
        return LowPassFunctions(butter_lowpass, medfilt, filtfilt)
    if backend != "scipy":
        raise ValueError(f"{BACKEND_ENV} must be 'numpy' or 'scipy', got {backend!r}")
    from scipy import signal  # heavy optional import, only when asked for

    def scipy_filtfilt(b, a, x, axis=0, padlen=None):
        return signal.filtfilt(b, a, x, axis=axis, padtype="odd", padlen=padlen)

    def scipy_medfilt(x, kernel_size=3):
        arr = np.asarray(x, dtype=float)
        if arr.ndim == 1:
            return signal.medfilt(arr, kernel_size)
        return np.column_stack([signal.medfilt(col, kernel_size) for col in arr.T])

    return LowPassFunctions(
        lambda order, wn: signal.butter(order, wn, "low"), scipy_medfilt, scipy_filtfilt
    )
