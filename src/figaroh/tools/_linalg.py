"""Small dense linear-algebra kernels shared by the numerical tools."""

from __future__ import annotations

import numpy as np
from scipy import linalg


def tall_qr_r(A: np.ndarray, block: int = 4096) -> np.ndarray:
    """``R`` factor of a tall matrix ``A`` (m × k, m ≫ k) by tall-skinny QR.

    LAPACK's Householder QR of a very tall matrix streams it from memory k
    times; factoring row blocks that fit in cache and then the stacked block
    ``R`` factors (TSQR) gives the same ``R`` up to the signs of its rows
    (``AᵀA = RᵀR`` either way), several times faster.

    Args:
        A: Matrix (m, k).
        block: Rows per block (at least ``4k`` are used).

    Returns:
        Upper-triangular ``R[:min(m, k)]`` with ``A = Q R`` for some orthonormal ``Q``.
    """
    m, k = A.shape
    block = max(int(block), 4 * k)
    if m <= 2 * block:
        return linalg.qr(A, mode="r", check_finite=False)[0][: min(m, k)]
    factors = [
        linalg.qr(A[i : i + block], mode="r", check_finite=False)[0][: min(block, k)]
        for i in range(0, m, block)
    ]
    return linalg.qr(np.vstack(factors), mode="r", check_finite=False)[0][:k]
