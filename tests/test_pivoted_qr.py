"""``figaroh.tools._linalg.pivoted_qr_r`` gives ``scipy.linalg.qr``'s pivoted factors bit for bit.

The structural base columns of geometric calibration are those of LAPACK's
``dgeqp3``; exact ties (equal column norms, repeated columns) are settled by
its own round-off, so the factors must be the very same, not close.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import linalg

from figaroh.tools._linalg import pivoted_qr_r


def _matrices() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = [np.zeros((5, 3)), np.ones((4, 6)), np.eye(3)]
    for k in range(60):
        m, n = int(rng.integers(1, 120)), int(rng.integers(1, 30))
        A = rng.standard_normal((m, n))
        if k % 3 == 0 and n >= 2:  # repeated columns and equal-norm columns
            A[:, n // 2 :] = A[:, : n - n // 2]
            A[:, : n // 3] = 1.0
        if k % 4 == 0:
            A = np.round(A)
        out.append(A)
    return out


@pytest.mark.parametrize("A", _matrices(), ids=lambda A: f"{A.shape[0]}x{A.shape[1]}")
def test_same_factors_as_scipy(A: np.ndarray) -> None:
    R, P = pivoted_qr_r(A)
    _, R_ref, P_ref = linalg.qr(A, mode="economic", pivoting=True)
    assert np.array_equal(P, P_ref)
    assert R.shape == R_ref.shape
    assert np.array_equal(R.view(np.int64), R_ref.view(np.int64))


def test_does_not_import_scipy_linalg() -> None:
    code = (
        "import sys, numpy as np\n"
        "from figaroh.tools import _linalg\n"
        "_linalg.pivoted_qr_r(np.arange(12.0).reshape(4, 3))\n"
        "print(_linalg._wheel_library() is None or 'scipy.linalg' not in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
