"""Small dense linear-algebra kernels shared by the numerical tools.

``scipy.linalg`` is imported by the kernels that call it, so that importing the
identification and calibration modules does not pay for it.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any, Tuple

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


@functools.cache
def _wheel_dgeqp3() -> Any:
    """``dgeqp3`` of the OpenBLAS library bundled in a scipy wheel, or ``None``.

    scipy's pip wheels ship one LAPACK, ``scipy.libs/libscipy_openblas-*.so``
    (32-bit integers, symbols prefixed ``scipy_``), that
    ``scipy.linalg.lapack`` links to. Calling the same routine of the same
    library through :mod:`ctypes` gives bit-identical factors without
    importing ``scipy.linalg`` (~0.25 s). Any other installation (conda,
    system LAPACK, no scipy) gives ``None``: the caller uses ``scipy.linalg``.
    """
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    libraries = sorted((package.parent / "scipy.libs").glob("libscipy_openblas-*.so"))
    if len(libraries) != 1 or not (package / "linalg").is_dir():
        return None
    import ctypes  # stdlib, only for this binding

    try:
        routine = ctypes.CDLL(str(libraries[0])).scipy_dgeqp3_
    except (OSError, AttributeError):
        return None
    integer = ctypes.POINTER(ctypes.c_int32)
    routine.restype = None
    routine.argtypes = [integer, integer, ctypes.c_void_p, integer, ctypes.c_void_p]
    routine.argtypes += [ctypes.c_void_p, ctypes.c_void_p, integer, integer]
    return routine, ctypes


def pivoted_qr_r(A: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(R, P)`` of LAPACK's column-pivoted QR ``A[:, P] = Q R`` (``dgeqp3``).

    The ``R`` and ``P`` of ``scipy.linalg.qr(A, mode="economic",
    pivoting=True)``, bit for bit: the same routine of the same library, with
    the same workspace query (at each step the remaining column of largest
    residual norm, the first in its current position on a tie; those ties are
    settled by the routine's own round-off, so no other implementation gives
    the same pivots). Without a scipy wheel's bundled OpenBLAS it is that
    ``scipy.linalg.qr`` call.

    Args:
        A: Matrix (m, n).

    Returns:
        Upper-triangular ``R`` (min(m, n), n) and the 0-based column order ``P`` (n,).
    """
    binding = _wheel_dgeqp3()
    A = np.asarray(A, dtype=float)
    m, n = A.shape
    if binding is None or m == 0 or n == 0:
        from scipy import linalg

        _, R, P = linalg.qr(A, mode="economic", pivoting=True)
        return R, P
    routine, ctypes = binding
    factored = np.array(A, order="F", copy=True)
    jpvt = np.zeros(n, dtype=np.int32)
    tau = np.zeros(min(m, n))
    info = ctypes.c_int32(0)

    def call(work: np.ndarray, lwork: int) -> None:
        routine(
            ctypes.byref(ctypes.c_int32(m)),
            ctypes.byref(ctypes.c_int32(n)),
            factored.ctypes.data,
            ctypes.byref(ctypes.c_int32(max(m, 1))),
            jpvt.ctypes.data,
            tau.ctypes.data,
            work.ctypes.data,
            ctypes.byref(ctypes.c_int32(lwork)),
            ctypes.byref(info),
        )

    query = np.zeros(1)
    call(query, -1)
    lwork = int(query[0])
    call(np.zeros(max(lwork, 1)), lwork)
    if info.value != 0:  # pragma: no cover - LAPACK argument error
        from scipy import linalg

        _, R, P = linalg.qr(A, mode="economic", pivoting=True)
        return R, P
    R = np.triu(factored[:n, :]) if m >= n else np.triu(factored)
    return R, jpvt - 1
