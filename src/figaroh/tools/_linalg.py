"""Small dense linear-algebra kernels shared by the numerical tools.

``scipy.linalg`` is imported by the kernels that call it, so that importing the
identification and calibration modules does not pay for it.
"""

from __future__ import annotations

import numpy as np


def tall_qr_r(A: np.ndarray, block_size: int = 32, *, overwrite: bool = False) -> np.ndarray:
    """``R`` factor of a tall matrix ``A`` (m × k, m ≫ k), without forming ``Q``.

    Uses LAPACK's compact-WY blocked Householder QR (``?geqrt``) on a
    Fortran-ordered copy, which for tall, narrow regressors is several times
    faster than ``scipy.linalg.qr`` (``?geqrf`` plus its workspace query and
    copies). ``AᵀA = RᵀR``; ``R`` equals any other Householder ``R`` up to the
    signs of its rows.

    Args:
        A: Matrix (m, k).
        block_size: Householder block size ``nb`` of ``?geqrt``.
        overwrite: Allow destroying ``A`` when it is already a Fortran-ordered
            float64 array (saves one copy of a large matrix).

    Returns:
        Upper-triangular ``R`` of shape ``(min(m, k), k)``.
    """
    from scipy import linalg
    from scipy.linalg import lapack

    A = np.asarray(A, dtype=float)
    m, k = A.shape
    if m == 0 or k == 0:
        return np.zeros((min(m, k), k))
    nb = max(1, min(int(block_size), k, m))
    work = A if (overwrite and A.flags.f_contiguous) else np.array(A, order="F", copy=True)
    factored, _, info = lapack.dgeqrt(nb, work, overwrite_a=1)
    if info != 0:  # pragma: no cover - LAPACK argument error
        return linalg.qr(A, mode="r", check_finite=False)[0][: min(m, k)]
    return np.triu(factored[: min(m, k)])
