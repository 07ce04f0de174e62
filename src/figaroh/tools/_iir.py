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

import functools
import os
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

#: Samples per block of the blocked recurrence.
BLOCK = 64

#: Longest median window sorted by a min/max network (longer: numpy.partition).
NETWORK_MAX = 11

#: numpy.longdouble carries more digits than a double (x87 extended, quad):
#: its products are summed by numpy's own loops, not by BLAS.
_WIDE_LONGDOUBLE = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant


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


@functools.lru_cache(maxsize=64)
def _butter_design(order: int, wn: float) -> tuple[np.ndarray, np.ndarray]:
    b, a = butter_lowpass(order, wn)
    b.setflags(write=False)
    a.setflags(write=False)
    return b, a


def _butter_cached(order: int, wn: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`butter_lowpass`, designed once per ``(int order, float wn)`` (fresh copies)."""
    if type(order) is not int or type(wn) is not float:
        return butter_lowpass(order, wn)
    b, a = _butter_design(order, wn)
    return b.copy(), a.copy()


def medfilt(x: np.ndarray, kernel_size: int = 3, padding: str = "zero") -> np.ndarray:
    """Running median over an odd window along axis 0, padded at both ends.

    Sample ``k`` of the output is the median of ``x[k − h … k + h]``
    (``h = kernel_size // 2``) column by column for a 2-D ``x``, the samples
    beyond the ends being zeros (``padding="zero"``:
    ``scipy.signal.medfilt(x_col, kernel_size)``, bit for bit, since the
    median of an odd window is one of its samples) or copies of the first and
    last sample (``padding="edge"``). Windows of 3 and 5 samples use selection
    networks whose first compare-exchange is shared by overlapping windows
    (4 and 8 element-wise minima/maxima over the whole signal); windows up to
    :data:`NETWORK_MAX` samples use the part of an odd-even transposition
    sorting network that reaches the middle sample; longer windows use
    ``numpy.partition``. A signal holding NaN always goes through the
    transposition network, so where a NaN lands does not depend on the window
    length.

    Args:
        x: Signal (N,) or (N, c).
        kernel_size: Odd window length [samples].
        padding: ``"zero"`` or ``"edge"``.

    Returns:
        The filtered signal, float, same shape as ``x``.

    Raises:
        ValueError: Even window, unknown padding or a signal that is not 1-D or 2-D.
    """
    k = int(kernel_size)
    if k < 1 or k % 2 != 1:
        raise ValueError("Each element of kernel_size should be odd.")
    if padding not in ("zero", "edge"):
        raise ValueError(f"medfilt padding must be 'zero' or 'edge', got {padding!r}")
    arr = np.asarray(x, dtype=float)
    if arr.ndim not in (1, 2):
        raise ValueError(f"medfilt expects a 1-D or 2-D signal, got shape {arr.shape}")
    if k == 1:
        return arr.copy()
    return _window_medians(_padded([arr], k // 2, padding), k)


def medfilt_columns(
    arrays: Sequence[np.ndarray], kernel_size: int = 3, padding: str = "zero"
) -> np.ndarray:
    """:func:`medfilt` of the column-wise stack of 2-D ``arrays`` (same length N).

    Equal, column for column, to ``medfilt(np.hstack(arrays), kernel_size,
    padding)``, without building the stack first.

    Args:
        arrays: Signals (N, c_i).
        kernel_size: Odd window length ≥ 3 [samples].
        padding: ``"zero"`` or ``"edge"``.

    Returns:
        The filtered stack (N, Σ c_i), C-ordered.
    """
    k = int(kernel_size)
    if k < 3 or k % 2 != 1 or padding not in ("zero", "edge"):
        raise ValueError(f"medfilt_columns needs an odd window ≥ 3 and a known padding, got {k}")
    return _window_medians(
        _padded([np.asarray(x, dtype=float) for x in arrays], k // 2, padding), k
    )


def _padded(
    arrays: Sequence[np.ndarray], half: int, padding: str, out: np.ndarray | None = None
) -> np.ndarray:
    """C-ordered copy of the column-wise stack of ``arrays``, ``half`` padded rows each end.

    The padded rows are zeros (``"zero"``) or copies of the first and last row
    (``"edge"``). One array may have any number of dimensions; several must be 2-D.
    """
    n = arrays[0].shape[0]
    if padding == "edge" and n == 0:
        raise ValueError("medfilt cannot extend an empty signal by its edge samples")
    if len(arrays) == 1:
        trailing = arrays[0].shape[1:]
    else:
        if any(x.ndim != 2 or x.shape[0] != n for x in arrays):
            raise ValueError("medfilt_columns expects 2-D signals of one length")
        trailing = (sum(x.shape[1] for x in arrays),)
    shape = (n + 2 * half, *trailing)
    padded = np.empty(shape) if out is None else out.reshape(shape)
    col = 0
    for x in arrays:
        width = x.shape[1] if len(arrays) > 1 else None
        target = padded[:, col : col + width] if width is not None else padded
        target[half : half + n] = x
        target[:half] = 0.0 if padding == "zero" else x[:1]
        target[half + n :] = 0.0 if padding == "zero" else x[-1:]
        col += width or 0
    return padded


def _window_medians(
    padded: np.ndarray,
    k: int,
    out: np.ndarray | None = None,
    scratch: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Median of every window ``padded[i : i + k]`` along axis 0 (``k`` odd ≥ 3).

    Args:
        padded: C-ordered padded signal (n + k − 1, …).
        k: Window length.
        out: C-ordered array (n, …) receiving the result (default: a new one).
        scratch: Two flat float buffers of at least ``padded.size`` elements
            for the 3- and 5-sample networks (default: allocated here).

    Returns:
        ``out``, or a new C-ordered array.
    """
    half = k // 2
    n = padded.shape[0] - k + 1
    if k > NETWORK_MAX:
        windows = np.lib.stride_tricks.sliding_window_view(padded, k, axis=0)
        result = np.partition(windows, half, axis=-1)[..., half]
    elif k <= 5 and not np.isnan(np.min(padded)):
        # Pairs (i, i + 1) sorted once serve every window that holds both;
        # later results overwrite buffers no longer read.
        pairs = (padded.shape[0] - 1, *padded.shape[1:])
        size = int(np.prod(pairs))
        if scratch is None:
            lo = np.minimum(padded[:-1], padded[1:])
            hi = np.maximum(padded[:-1], padded[1:])
        else:
            lo = np.minimum(padded[:-1], padded[1:], out=scratch[0][:size].reshape(pairs))
            hi = np.maximum(padded[:-1], padded[1:], out=scratch[1][:size].reshape(pairs))
        if out is None:
            out = np.empty((n, *padded.shape[1:]))
        if k == 3:  # median(a, b, c) = max(min(a, b), min(max(a, b), c))
            np.minimum(hi[:n], padded[2:], out=hi[:n])
            return np.maximum(lo[:n], hi[:n], out=out)
        # Median of p0…p4: sort (p0, p1) and (p3, p4) (the shared pairs), then
        # the compare-exchanges (p0, p3), (p1, p4), (p1, p2), (p2, p3), (p1, p2)
        # keeping only the outputs that reach p2.
        p1 = np.minimum(hi[:n], hi[3:], out=out)
        p3 = np.maximum(lo[:n], lo[3:], out=hi[:n])
        p2 = padded[2 : 2 + n]
        q1 = np.minimum(p1, p2, out=lo[:n])
        q2 = np.maximum(p1, p2, out=p1)
        np.minimum(q2, p3, out=q2)
        return np.maximum(q1, q2, out=q2)
    else:
        result = _transposition_median(padded, k, n)
    if out is None:
        return np.ascontiguousarray(result) if result.base is not None else result
    out[...] = result
    return out


def _transposition_median(padded: np.ndarray, k: int, n: int) -> np.ndarray:
    """Middle row of an odd-even transposition sort of the ``k`` shifted copies.

    Step ``t`` (``t = 0 … k − 1``) compare-exchanges rows ``(j, j + 1)`` for
    ``j = t mod 2, t mod 2 + 2, …`` (minimum to ``j``, maximum to ``j + 1``);
    only the minima and maxima on which the middle row finally depends are
    evaluated, in the same order and with the same operands as the full
    network, so NaN spreads exactly as through the full network.
    """
    half = k // 2
    # Walk back from the output: which rows each step must produce.
    plans = []
    needed = {half}
    for step in reversed(range(k)):
        ops = []
        before = set(needed)
        for j in range(step % 2, k - 1, 2):
            want_min, want_max = j in needed, j + 1 in needed
            if want_min or want_max:
                ops.append((j, want_min, want_max))
                before.update((j, j + 1))
        plans.append(ops)
        needed = before
    rows: list[np.ndarray | None] = [padded[j : j + n] for j in range(k)]
    for ops in reversed(plans):
        for j, want_min, want_max in ops:
            lo = np.minimum(rows[j], rows[j + 1]) if want_min else None
            hi = np.maximum(rows[j], rows[j + 1]) if want_max else None
            rows[j], rows[j + 1] = lo, hi
    return rows[half]


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

    One step of the chain, ``s' = A^L s + u`` (``u = K X`` of the block), is a
    single product ``[A^L | I] · [s; u]``: the identity adds ``u_j`` exactly
    (``u_i·1 = u_i``, ``u_i·0 = ±0``) after the ``m`` terms of ``(A^L s)_j``,
    which are summed in the same order as ``s @ (A^L)ᵀ``, so the states are
    those of the two-operation step ``s @ (A^L)ᵀ + u``, bit for bit (the sign
    of an exact zero aside). Instances are shared through :func:`_blocked`
    and hold read-only arrays.
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
        self.step = np.concatenate((powers[L], np.eye(m, dtype=np.longdouble)), axis=1)
        self.L = L
        for arr in (*powers, self.obs, self.toeplitz, self.ctrl, self.v, self.step):
            arr.setflags(write=False)

    def _chain(self, s: np.ndarray, KX: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """States at the block starts from ``s`` (c, m) and the block inputs ``KX`` (c, nb, m).

        Returns:
            ``(states, s_final)``: (c, nb, m) and (c, m), extended precision.
        """
        c, nb, m = KX.shape
        if not _WIDE_LONGDOUBLE or not np.isfinite(KX).all():
            # u_i·0 would be NaN for an infinite u_i, and a longdouble that is
            # a double goes to BLAS (other summation order): the two-operation step.
            ALt = self.powers[self.L].T
            states = np.empty((c, nb, m), dtype=np.longdouble)
            for k in range(nb):
                states[:, k] = s
                s = s @ ALt + KX[:, k]
            return states, s
        # z[k] = [s_k; u_k] (2m, c); each step writes s_{k+1} into z[k + 1, :m].
        z = np.empty((nb + 1, 2 * m, c), dtype=np.longdouble)
        z[0, :m] = s.T
        z[:nb, m:] = KX.transpose(1, 2, 0)
        z[nb, m:] = 0.0
        product = self.step.dot  # non-BLAS dtype: sums in index order, as matmul
        for src, dst in zip(z[:-1], z[1:, :m], strict=True):
            product(src, dst)
        return z[:nb, :m].transpose(2, 0, 1), np.ascontiguousarray(z[nb, :m].T)

    def run(
        self,
        x: np.ndarray,
        s: np.ndarray,
        groups: Sequence[int] | None = None,
        final_state: bool = True,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Filter the rows of ``x`` (c, N) from the states ``s`` (c, m).

        Args:
            x: Channels as rows (c, N).
            s: Initial states (c, m).
            groups: Row counts of consecutive channel groups (sum ``c``); each
                group's double-precision products are separate matrix
                products of that group's rows (the products of filtering each
                group on its own), the extended-precision chain is shared.
                Default: one group.
            final_state: Compute the state after the last sample.

        Returns:
            ``(y, s_final)``: outputs (c, N) and final states (c, m), or None
            for the states when ``final_state`` is false.
        """
        L = self.L
        c, n = x.shape
        nb, rem = divmod(n, L)
        bounds = _group_bounds(c, groups)
        y = np.empty((c, n))
        s = s.astype(np.longdouble)
        if nb:
            # Rows (channel, block), columns the L samples of the block: one GEMM each.
            X = np.ascontiguousarray(x[:, : nb * L]).reshape(c * nb, L)
            KX = np.concatenate([X[r0 * nb : r1 * nb] @ self.ctrl.T for r0, r1 in bounds])
            states, s = self._chain(s, KX.reshape(c, nb, -1))
            S = np.ascontiguousarray(states, dtype=float).reshape(c * nb, -1)
            for r0, r1 in bounds:
                rows = slice(r0 * nb, r1 * nb)
                Y = X[rows] @ self.toeplitz.T
                Y += S[rows] @ self.obs.T
                y[r0:r1, : nb * L] = Y.reshape(r1 - r0, nb * L)
        if rem:
            sf = s.astype(float)
            tails = [_group_rows(x, r0, r1, nb * L) for r0, r1 in bounds]
            for (r0, r1), xr in zip(bounds, tails, strict=True):
                sr = _group_rows(sf, r0, r1)
                y[r0:r1, nb * L :] = xr @ self.toeplitz[:rem, :rem].T + sr @ self.obs[:rem].T
            if final_state:
                vr = self.v[:rem][::-1]
                s = s @ self.powers[rem].T + np.concatenate([xr @ vr for xr in tails])
        return y, (s.astype(float) if final_state else None)

    def forward_backward(
        self,
        x: np.ndarray,
        zi: np.ndarray,
        groups: Sequence[int] | None,
        edge: int,
        work: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """Forward pass, backward pass over the reversed output, reversed back and trimmed.

        The operations of ``run(x, zi·x[:, :1])``, then ``run`` of the
        reversed output from ``zi·y[:, -1]``, then ``y[:, ::-1][:, edge:-edge]``
        (so the same numbers), with two work buffers of ``x``'s size instead
        of a new array for every intermediate: the block input matrix is
        overwritten by the reversed forward output, the output matrix by the
        backward output.

        Args:
            x: Extended signal, channels as rows (c, n).
            zi: Steady-state initial state per unit step (1, m).
            groups: Row counts of the channel groups (see :meth:`run`).
            edge: Samples trimmed at each end of the result.
            work: Two flat float buffers of at least ``c·⌊n/L⌋·L`` elements
                for the block matrices (default: allocated here).

        Returns:
            One C-contiguous array (n − 2·edge, rows of the group) per group.
        """
        L = self.L
        c, n = x.shape
        nb, rem = divmod(n, L)
        bounds = _group_bounds(c, groups)
        if nb == 0:
            y, _ = self.run(x, zi * x[:, :1], groups, final_state=False)
            y, _ = self.run(y[:, ::-1], zi * y[:, -1:], groups, final_state=False)
            y = y[:, ::-1][:, edge : n - edge]
            return [np.ascontiguousarray(y[r0:r1].T) for r0, r1 in bounds]
        nbl = nb * L
        if work is None:
            X = np.ascontiguousarray(x[:, :nbl]).reshape(c * nb, L)
            Y = np.empty((c * nb, L))
        else:
            X = work[0][: c * nbl].reshape(c * nb, L)
            X.reshape(c, nbl)[:] = x[:, :nbl]
            Y = work[1][: c * nbl].reshape(c * nb, L)
        tails = [_group_rows(x, r0, r1, nbl) for r0, r1 in bounds]
        tail = self._pass(X, Y, tails, zi * x[:, :1], bounds)
        main = Y.reshape(c, nbl)
        last = tail[:, -1:] if rem else main[:, -1:]
        # Reversed forward output: [tail reversed, main reversed] split at nb·L.
        back = X.reshape(c, nbl)
        back[:, :rem] = tail[:, ::-1]
        back[:, rem:] = main[:, rem:][:, ::-1]
        # A reversed view (negative stride), as the slice of y[:, ::-1] it stands for:
        # numpy and BLAS pick their routine from the operand's strides.
        back_tail = main[:, :rem].copy()[:, ::-1]
        tails = [back_tail[r0:r1] for r0, r1 in bounds]
        tail = self._pass(X, Y, tails, zi * last, bounds)
        # Result j = backward output n − 1 − edge − j, j = 0 … n − 2·edge − 1.
        from_tail = max(rem - edge, 0)
        top = n - 1 - edge - from_tail
        outs = []
        for r0, r1 in bounds:
            out = np.empty((n - 2 * edge, r1 - r0))
            view = out.T
            view[:, :from_tail] = tail[r0:r1, :from_tail][:, ::-1]
            view[:, from_tail:] = main[r0:r1, edge : top + 1][:, ::-1]
            outs.append(out)
        return outs

    def _pass(
        self,
        X: np.ndarray,
        Y: np.ndarray,
        tails: list[np.ndarray],
        s: np.ndarray,
        bounds: list[tuple[int, int]],
    ) -> np.ndarray:
        """One pass of :meth:`run` with ``nb ≥ 1`` blocks, written into ``Y`` (overwrites ``X``).

        Args:
            X: Block inputs (c·nb, L), rows (channel, block); consumed.
            Y: Output blocks (c·nb, L).
            tails: Per group, the last ``rem`` samples (rows of the group, rem).
            s: Initial states (c, m).
            bounds: Row ranges of the groups.

        Returns:
            The outputs of the last ``rem`` samples (c, rem).
        """
        c = s.shape[0]
        nb = X.shape[0] // c
        s = s.astype(np.longdouble)
        KX = np.concatenate([X[r0 * nb : r1 * nb] @ self.ctrl.T for r0, r1 in bounds])
        states, s = self._chain(s, KX.reshape(c, nb, -1))
        S = np.ascontiguousarray(states, dtype=float).reshape(c * nb, -1)
        for r0, r1 in bounds:
            rows = slice(r0 * nb, r1 * nb)
            np.matmul(X[rows], self.toeplitz.T, out=Y[rows])
            Y[rows] += np.matmul(S[rows], self.obs.T, out=X[rows])
        rem = tails[0].shape[1]
        tail = np.empty((c, rem))
        if rem:
            sf = s.astype(float)
            for (r0, r1), xr in zip(bounds, tails, strict=True):
                sr = _group_rows(sf, r0, r1)
                tail[r0:r1] = xr @ self.toeplitz[:rem, :rem].T + sr @ self.obs[:rem].T
        return tail


def _group_rows(x: np.ndarray, r0: int, r1: int, start: int = 0) -> np.ndarray:
    """``x[r0:r1, start:]`` laid out as the same slice of the group's own array.

    A row block of a column-major ``x`` is copied to column-major: a
    group filtered alone is a column-major array of its own, and the memory
    layout of an operand decides which BLAS kernels a product uses (and so
    its last bits).
    """
    part = x[r0:r1, start:]
    if x.flags.f_contiguous and not part.flags.f_contiguous:
        return np.asfortranarray(part)
    return part


def _group_bounds(c: int, groups: Sequence[int] | None) -> list[tuple[int, int]]:
    """``[(start, stop), …]`` of consecutive groups of ``groups[i]`` rows out of ``c``."""
    if groups is None:
        return [(0, c)]
    stops = np.cumsum([int(g) for g in groups]).tolist()
    if any(int(g) < 1 for g in groups) or not stops or stops[-1] != c:
        raise ValueError(f"column groups {list(groups)} must be positive and sum to {c}")
    return list(zip([0, *stops[:-1]], stops, strict=True))


#: Filters kept by :func:`_blocked` and :func:`_steady_state` (each cache cleared when full).
_CACHE_SIZE = 32
_blocked_cache: dict[tuple[bytes, bytes, int], _Blocked] = {}
_zi_cache: dict[tuple[bytes, bytes], np.ndarray] = {}


def _blocked(b: np.ndarray, a: np.ndarray, L: int) -> _Blocked:
    """The :class:`_Blocked` matrices of normalised ``(b, a)``, built once per filter."""
    key = (b.tobytes(), a.tobytes(), int(L))
    found = _blocked_cache.get(key)
    if found is None:
        if len(_blocked_cache) >= _CACHE_SIZE:
            _blocked_cache.clear()
        found = _blocked_cache[key] = _Blocked(b, a, int(L))
    return found


def _steady_state(b: np.ndarray, a: np.ndarray) -> np.ndarray:
    """:func:`lfilter_zi` of normalised ``(b, a)`` (read-only), computed once per filter."""
    key = (b.tobytes(), a.tobytes())
    found = _zi_cache.get(key)
    if found is None:
        if len(_zi_cache) >= _CACHE_SIZE:
            _zi_cache.clear()
        found = lfilter_zi(b, a)
        found.setflags(write=False)
        _zi_cache[key] = found
    return found


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
    y, zf = _blocked(b, a, int(block)).run(x.T, np.asarray(zi, dtype=float).T)
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
    (y,) = filtfilt_columns(b, a, arr.reshape(shape[0], -1), padlen=padlen)
    return np.moveaxis(y.reshape(shape), 0, axis)


def filtfilt_columns(
    b: np.ndarray,
    a: np.ndarray,
    x: np.ndarray,
    groups: Sequence[int] | None = None,
    padlen: int | None = None,
) -> list[np.ndarray]:
    """:func:`filtfilt` along axis 0 of ``x`` (N, c) whose columns form groups.

    The result for each group of columns is the :func:`filtfilt` of that group
    alone, bit for bit; the groups share the sequential part of the
    recursion (one extended-precision chain over all columns), which is what
    filtering several signals of the same length costs per call.

    Args:
        b: Numerator coefficients.
        a: Denominator coefficients.
        x: Signal (N, c).
        groups: Column counts of consecutive groups (sum ``c``); default one group.
        padlen: Extension length [samples]; defaults to ``3·max(len(a), len(b))``.

    Returns:
        One C-contiguous array (N, groups[i]) per group.

    Raises:
        ValueError: ``N <= padlen`` or groups that do not sum to ``c``.
    """
    b, a = _normalise(b, a)
    rows = np.asarray(x, dtype=float).T  # (c, N): channels as rows
    edge = 3 * a.shape[0] if padlen is None else int(padlen)
    if rows.shape[1] <= edge:
        raise ValueError(
            f"The length of the input vector x must be greater than padlen, which is {edge}."
        )
    bounds = _group_bounds(rows.shape[0], groups)
    if edge > 0:
        left = 2 * rows[:, :1] - rows[:, edge:0:-1]
        right = 2 * rows[:, -1:] - rows[:, -2 : -(edge + 2) : -1]
        rows = np.concatenate((left, rows, right), axis=1)
    if a.shape[0] == 1:
        y = (b[0] * b[0]) * rows
    else:
        zi = _steady_state(b, a)[None, :]
        return _blocked(b, a, BLOCK).forward_backward(rows, zi, groups, max(edge, 0))
    if edge > 0:
        y = y[:, edge:-edge]
    return [np.ascontiguousarray(y[r0:r1].T) for r0, r1 in bounds]


def median_filtfilt_columns(
    arrays: Sequence[np.ndarray],
    kernel_size: int,
    padding: str,
    b: np.ndarray,
    a: np.ndarray,
    padlen: int | None = None,
) -> list[np.ndarray]:
    """:func:`medfilt` then :func:`filtfilt` of each array, all arrays in one pass.

    For each 2-D array ``x_i`` (N, c_i) the result is, bit for bit,
    ``filtfilt(b, a, medfilt(x_i, kernel_size, padding), padlen=padlen)``.
    The arrays are stacked column-wise into one work buffer, the median is
    written where the odd extension of ``filtfilt`` expects it (the extended
    signal ``[2·x₀ − x_{p…1}; x; 2·x_{N−1} − x_{N−2…N−1−p}]`` as an
    (N + 2p, Σ c_i) C-ordered block, the memory layout ``filtfilt`` gives the
    extension of a C-ordered median), and the buffers of the median network
    are reused for the block matrices of the recursion: one allocation of
    about four times the stacked signal, plus the results.

    Args:
        arrays: Signals (N, c_i), one length.
        kernel_size: Odd median window ≥ 3 [samples].
        padding: ``"zero"`` or ``"edge"`` (median padding).
        b: Numerator coefficients.
        a: Denominator coefficients.
        padlen: Extension length [samples]; defaults to ``3·max(len(a), len(b))``.

    Returns:
        One C-contiguous array (N, c_i) per input array.

    Raises:
        ValueError: ``N <= padlen``, signals of different lengths or a bad window.
    """
    arrays = [np.asarray(x, dtype=float) for x in arrays]
    widths = [x.shape[1] for x in arrays]
    b, a = _normalise(b, a)
    k = int(kernel_size)
    n = arrays[0].shape[0]
    edge = 3 * a.shape[0] if padlen is None else int(padlen)
    n_ext = n + 2 * max(edge, 0)
    nb = n_ext // BLOCK
    if a.shape[0] == 1 or edge <= 0 or nb == 0 or n <= edge or k < 3:
        return filtfilt_columns(b, a, medfilt_columns(arrays, k, padding), widths, padlen)
    c = sum(widths)
    half = k // 2
    slot = max((n + 2 * half) * c, nb * BLOCK * c)
    work = np.empty(3 * slot + n_ext * c)
    ext = work[3 * slot :].reshape(n_ext, c)
    padded = _padded(arrays, half, padding, out=work[: (n + 2 * half) * c])
    scratch = (work[slot : 2 * slot], work[2 * slot : 3 * slot])
    _window_medians(padded, k, out=ext[edge : edge + n], scratch=scratch)
    ext[:edge] = 2 * ext[edge : edge + 1] - ext[2 * edge : edge : -1]
    ext[edge + n :] = 2 * ext[edge + n - 1 : edge + n] - ext[edge + n - 2 : n - 2 : -1]
    zi = _steady_state(b, a)[None, :]
    return _blocked(b, a, BLOCK).forward_backward(ext.T, zi, widths, edge, work=scratch)


class LowPassFunctions(NamedTuple):
    """The three functions of the low-pass filter from one backend."""

    butter: Callable[[int, float], tuple[np.ndarray, np.ndarray]]
    medfilt: Callable[[np.ndarray, int], np.ndarray]  # along axis 0, column by column
    filtfilt: Callable[..., np.ndarray]
    backend: str = "numpy"


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
        ``(butter(order, wn), medfilt(x, k), filtfilt(b, a, x, axis=, padlen=),
        backend)``; ``medfilt`` filters each column of a 2-D ``x``; ``backend``
        is ``"numpy"`` or ``"scipy"``.

    Raises:
        ValueError: Unknown backend name.
    """
    backend = os.environ.get(BACKEND_ENV, "").strip().lower() or default
    if backend == "numpy":
        return LowPassFunctions(_butter_cached, medfilt, filtfilt, "numpy")
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
        lambda order, wn: signal.butter(order, wn, "low"), scipy_medfilt, scipy_filtfilt, "scipy"
    )
