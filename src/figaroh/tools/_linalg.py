"""Small dense linear-algebra kernels shared by the numerical tools.

The LAPACK routines are called through :mod:`ctypes` in the OpenBLAS library
bundled in a scipy wheel, the very library ``scipy.linalg.lapack`` links to, so
the factors are bit for bit those of ``scipy.linalg`` without importing it
(~0.25 s). Without that library (conda, system LAPACK) each kernel calls
``scipy.linalg``, imported on first use.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
from pathlib import Path
from typing import Any, Tuple

import numpy as np

from figaroh.errors import FigarohError


class LapackError(FigarohError, np.linalg.LinAlgError):
    """A LAPACK routine reported an error (``info != 0``).

    Also a :class:`numpy.linalg.LinAlgError` (itself a ``ValueError``), the
    error ``scipy.linalg`` raises in the same situation.
    """


def _check_info(name: str, info: int) -> None:
    """Raise :class:`LapackError` for a nonzero ``info`` of LAPACK routine ``name``."""
    if info < 0:
        raise LapackError(f"illegal value in argument {-info} of LAPACK {name}")
    if info > 0:
        raise LapackError(
            f"singular matrix: LAPACK {name} failed at diagonal {info - 1}; "
            "the triangular factor has a zero on its diagonal (rank-deficient input)"
        )


@functools.cache
def _wheel_library() -> Any:
    """The OpenBLAS library bundled in a scipy wheel, or ``None``.

    scipy's pip wheels ship one LAPACK, ``scipy.libs/libscipy_openblas-*.so``
    (32-bit integers, symbols prefixed ``scipy_``), that
    ``scipy.linalg.lapack`` links to. Any other installation (conda, system
    LAPACK, no scipy) gives ``None``: the callers use ``scipy.linalg``.
    """
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    libraries = sorted((package.parent / "scipy.libs").glob("libscipy_openblas-*.so"))
    if len(libraries) != 1 or not (package / "linalg").is_dir():
        return None
    try:
        library = ctypes.CDLL(str(libraries[0]))
        for name in ("dgeqp3", "dgeqrt", "dgeqrf", "dorgqr", "dtrtrs"):
            getattr(library, f"scipy_{name}_").restype = None
    except (OSError, AttributeError):
        return None
    return library


def _int(value: int) -> Any:
    """A Fortran ``INTEGER`` argument (by reference, 32 bits)."""
    return ctypes.byref(ctypes.c_int32(int(value)))


def _ptr(array: np.ndarray) -> ctypes.c_void_p:
    """The data pointer of ``array``."""
    return ctypes.c_void_p(array.ctypes.data)


def _call_lapack(name: str, *args: Any, chars: int = 0) -> int:
    """Call ``scipy_<name>_`` with ``args`` and a trailing ``info``; return ``info``.

    ``chars`` hidden Fortran string lengths (all 1) follow ``info``.
    """
    info = ctypes.c_int32(0)
    lengths = [ctypes.c_size_t(1)] * chars
    getattr(_wheel_library(), f"scipy_{name}_")(*args, ctypes.byref(info), *lengths)
    return int(info.value)


def _query_lwork(run: Any) -> int:
    """Optimal ``lwork`` of a routine: ``run(work, lwork)`` with ``lwork = -1``.

    ``int`` of the returned ``work[0]``, as scipy's ``safecall`` does.
    """
    query = np.zeros(1)
    run(query, -1)
    return int(query[0])


def _dgeqrt(nb: int, a: np.ndarray) -> None:
    """``dgeqrt`` in place on the Fortran-ordered float64 ``a`` (m, n)."""
    m, n = a.shape
    t = np.zeros((max(1, nb), min(m, n)), order="F")
    work = np.zeros(max(1, nb * n))
    info = _call_lapack(
        "dgeqrt", _int(m), _int(n), _int(nb), _ptr(a), _int(max(1, m)), _ptr(t),
        _int(max(1, nb)), _ptr(work),
    )  # fmt: skip
    _check_info("dgeqrt", info)


def _dgeqrf(a: np.ndarray) -> np.ndarray:
    """``dgeqrf`` in place on the Fortran-ordered ``a`` (m, n); returns ``tau``."""
    m, n = a.shape
    tau = np.zeros(min(m, n))

    def run(work: np.ndarray, lwork: int) -> int:
        return _call_lapack(
            "dgeqrf", _int(m), _int(n), _ptr(a), _int(max(1, m)), _ptr(tau), _ptr(work),
            _int(lwork),
        )  # fmt: skip

    lwork = _query_lwork(run)
    _check_info("dgeqrf", run(np.zeros(max(1, lwork)), lwork))
    return tau


def _dorgqr(a: np.ndarray, tau: np.ndarray) -> None:
    """``dorgqr`` in place: the first ``n`` columns of ``Q`` from ``dgeqrf``'s ``a``."""
    m, n = a.shape

    def run(work: np.ndarray, lwork: int) -> int:
        return _call_lapack(
            "dorgqr", _int(m), _int(n), _int(tau.size), _ptr(a), _int(max(1, m)), _ptr(tau),
            _ptr(work), _int(lwork),
        )  # fmt: skip

    lwork = _query_lwork(run)
    _check_info("dorgqr", run(np.zeros(max(1, lwork)), lwork))


def tall_qr_r(A: np.ndarray, block_size: int = 32, *, overwrite: bool = False) -> np.ndarray:
    """``R`` factor of a tall matrix ``A`` (m × k, m ≫ k), without forming ``Q``.

    Uses LAPACK's compact-WY blocked Householder QR (``?geqrt``) on a
    Fortran-ordered copy, which for tall, narrow regressors is several times
    faster than ``scipy.linalg.qr`` (``?geqrf`` plus its workspace query and
    copies). ``AᵀA = RᵀR``; ``R`` equals any other Householder ``R`` up to the
    signs of its rows. Bit for bit ``scipy.linalg.lapack.dgeqrt``'s.

    Args:
        A: Matrix (m, k).
        block_size: Householder block size ``nb`` of ``?geqrt``.
        overwrite: Allow destroying ``A`` when it is already a Fortran-ordered
            float64 array (saves one copy of a large matrix).

    Returns:
        Upper-triangular ``R`` of shape ``(min(m, k), k)``.

    Raises:
        LapackError: LAPACK reported an argument error.
    """
    A = np.asarray(A, dtype=float)
    m, k = A.shape
    if m == 0 or k == 0:
        return np.zeros((min(m, k), k))
    nb = max(1, min(int(block_size), k, m))
    work = A if (overwrite and A.flags.f_contiguous) else np.array(A, order="F", copy=True)
    if _wheel_library() is None:
        from scipy.linalg import lapack

        work, _, info = lapack.dgeqrt(nb, work, overwrite_a=1)
        _check_info("dgeqrt", int(info))
    else:
        _dgeqrt(nb, work)
    return np.triu(work[: min(m, k)])


def economic_qr(A: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(Q, R)`` of ``scipy.linalg.qr(A, mode="economic")``, bit for bit.

    ``A = Q R`` with ``Q`` (m, k) orthonormal columns and ``R`` (k, n) upper
    triangular, ``k = min(m, n)`` (LAPACK ``dgeqrf`` then ``dorgqr``, with
    the optimal workspace of their queries, as scipy does).

    Args:
        A: Matrix (m, n).

    Returns:
        ``Q`` (m, k) and ``R`` (k, n), both Fortran-ordered as scipy's.

    Raises:
        LapackError: LAPACK reported an argument error.
    """
    A = np.asarray(A, dtype=float)
    if _wheel_library() is None or A.size == 0:
        from scipy import linalg

        return linalg.qr(A, mode="economic", check_finite=False)
    m, n = A.shape
    qr = np.array(A, order="F", copy=True)
    tau = _dgeqrf(qr)
    if m < n:
        R = np.triu(qr)
        Q = np.array(qr[:, :m], order="F", copy=True)
    else:
        R = np.triu(qr[:n, :])
        Q = qr
    _dorgqr(Q, tau)
    return Q, R


def solve_upper(R: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``R⁻¹ B`` for a square upper-triangular ``R`` (LAPACK ``dtrtrs``).

    Bit for bit ``scipy.linalg.solve_triangular(R, B, lower=False)``: a
    Fortran-ordered ``R`` is solved as is, any other one as the transposed
    lower-triangular system ``(Rᵀ)ᵀ X = B``, as scipy does.

    Args:
        R: Upper-triangular matrix (n, n).
        B: Right-hand side (n,) or (n, p).

    Returns:
        ``X`` of the shape of ``B``.

    Raises:
        ValueError: ``R`` is not square or ``B`` does not have ``n`` rows.
        LapackError: ``R`` has a zero on its diagonal (singular).
    """
    R = np.asarray(R, dtype=float)
    B = np.asarray(B, dtype=float)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or B.shape[:1] != R.shape[:1]:
        raise ValueError(
            "solve_upper: R must be square (n, n) and B (n,) or (n, p); "
            f"got {R.shape} and {B.shape}"
        )
    if B.size == 0:
        return np.zeros(B.shape)
    if _wheel_library() is None:
        from scipy import linalg

        return linalg.solve_triangular(R, B, lower=False, check_finite=False)
    if R.flags.f_contiguous:
        a, uplo, trans = R, b"U", b"N"
    else:
        a, uplo, trans = np.asfortranarray(R.T), b"L", b"T"
    n = R.shape[0]
    X = np.array(B.reshape(n, -1), order="F", copy=True)
    info = _call_lapack(
        "dtrtrs", ctypes.c_char_p(uplo), ctypes.c_char_p(trans), ctypes.c_char_p(b"N"),
        _int(n), _int(X.shape[1]), _ptr(a), _int(max(1, n)), _ptr(X), _int(max(1, n)),
        chars=3,
    )  # fmt: skip
    _check_info("dtrtrs", info)
    return X.reshape(B.shape)


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

    Raises:
        LapackError: LAPACK reported an argument error.
    """
    A = np.asarray(A, dtype=float)
    m, n = A.shape
    if _wheel_library() is None or m == 0 or n == 0:
        from scipy import linalg

        _, R, P = linalg.qr(A, mode="economic", pivoting=True)
        return R, P
    factored = np.array(A, order="F", copy=True)
    jpvt = np.zeros(n, dtype=np.int32)
    tau = np.zeros(min(m, n))

    def run(work: np.ndarray, lwork: int) -> int:
        return _call_lapack(
            "dgeqp3", _int(m), _int(n), _ptr(factored), _int(max(m, 1)), _ptr(jpvt), _ptr(tau),
            _ptr(work), _int(lwork),
        )  # fmt: skip

    lwork = _query_lwork(run)
    _check_info("dgeqp3", run(np.zeros(max(lwork, 1)), lwork))
    R = np.triu(factored[:n, :]) if m >= n else np.triu(factored)
    return R, jpvt - 1
