"""The ctypes LAPACK kernels of ``figaroh.tools._linalg`` equal ``scipy.linalg``'s bit for bit.

``tall_qr_r`` (``dgeqrt``), ``economic_qr`` (``dgeqrf`` + ``dorgqr``) and
``solve_upper`` (``dtrtrs``) call the OpenBLAS bundled in the scipy wheel, the
library ``scipy.linalg`` links to: on the same inputs (and the same memory
layout, which decides how ``solve_triangular`` calls ``dtrtrs``) the results
must be the very same floats, including the blocked paths of tall matrices
(more than 8192 rows). A UR10 identification must then run without importing
``scipy.linalg``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import linalg
from scipy.linalg import lapack

from conftest import load_example
from figaroh.tools import _linalg
from figaroh.tools._linalg import LapackError, economic_qr, solve_upper, tall_qr_r

ROOT = Path(__file__).resolve().parents[1]

SHAPES = [(1, 1), (5, 3), (3, 5), (7, 7), (50, 7), (7, 50), (300, 40), (9000, 24), (12000, 9)]


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(_bits(a), _bits(b))


def _matrix(shape: tuple[int, int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape) * np.logspace(0, 4, shape[1])
    if shape[1] >= 4:  # a repeated column: a rank-deficient factor
        A[:, -1] = A[:, 0]
    return A


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("block_size", [32, 5])
def test_tall_qr_r_same_as_scipy_dgeqrt(shape: tuple[int, int], block_size: int) -> None:
    A = _matrix(shape, 1)
    nb = max(1, min(block_size, shape[0], shape[1]))
    factored, _, info = lapack.dgeqrt(nb, np.array(A, order="F"))
    assert info == 0
    assert _same(tall_qr_r(A, block_size), np.triu(factored[: min(shape)]))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_economic_qr_same_as_scipy(shape: tuple[int, int]) -> None:
    A = _matrix(shape, 2)
    Q, R = economic_qr(A)
    Q_ref, R_ref = linalg.qr(A, mode="economic", check_finite=False)
    assert _same(Q, Q_ref) and _same(R, R_ref)
    assert Q.flags.f_contiguous == Q_ref.flags.f_contiguous
    assert R.flags.f_contiguous == R_ref.flags.f_contiguous


@pytest.mark.parametrize("n", [1, 6, 40, 90])
@pytest.mark.parametrize("layout", ["F", "C", "slice"])
@pytest.mark.parametrize("rhs", ["vector", "matrix"])
def test_solve_upper_same_as_scipy(n: int, layout: str, rhs: str) -> None:
    rng = np.random.default_rng(n)
    _, R_full = linalg.qr(rng.standard_normal((n + 3, n + 2)), mode="economic")
    R = {"F": np.asfortranarray, "C": np.ascontiguousarray, "slice": lambda x: x}[layout](
        R_full[:n, :n]
    )
    B = rng.standard_normal(n) if rhs == "vector" else rng.standard_normal((n, 5))
    X_ref = linalg.solve_triangular(R, B, lower=False, check_finite=False)
    assert _same(solve_upper(R, B), X_ref)


def test_solve_upper_errors() -> None:
    with pytest.raises(LapackError, match="singular") as caught:
        solve_upper(np.zeros((2, 2)), np.ones(2))
    assert isinstance(caught.value, np.linalg.LinAlgError)
    with pytest.raises(ValueError, match="square"):
        solve_upper(np.ones((2, 3)), np.ones(2))
    assert solve_upper(np.eye(3), np.zeros((3, 0))).shape == (3, 0)


_RUN = """
import importlib.util, sys
sys.path.insert(0, {example!r})
spec = importlib.util.spec_from_file_location("ur10_ident", {script!r})
mod = importlib.util.module_from_spec(spec)
sys.modules["ur10_ident"] = mod
spec.loader.exec_module(mod)
ident = mod.UR10Identification(mod.load_ur10(), mod.CONFIG, data_dir={train!r})
ident.identif_config["validation_data_file"] = {validation!r}
ident.initialize()
ident.solve(decimate=False, plotting=False, verbose=False)
from figaroh.tools import _linalg
print(_linalg._wheel_library() is not None, "scipy.linalg" in sys.modules)
"""


def test_ur10_identification_does_not_import_scipy_linalg(tmp_path: Path) -> None:
    ur10 = load_example("ur10/identification.py", "ur10_identification")
    train, validation = ur10.generate_ur10_data(tmp_path, 2000, noise_std=0.5, seed=1)
    code = _RUN.format(
        example=str(ROOT / "examples" / "ur10"),
        script=str(ROOT / "examples" / "ur10" / "identification.py"),
        train=str(train),
        validation=str(validation),
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    bundled, imported = out.stdout.split()[-2:]
    if bundled == "True":
        assert imported == "False", "scipy.linalg was imported by initialize() + solve()"


def test_fallback_without_bundled_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_linalg, "_wheel_library", lambda: None)
    A = _matrix((60, 8), 3)
    Q, R = economic_qr(A)
    Q_ref, R_ref = linalg.qr(A, mode="economic", check_finite=False)
    assert _same(Q, Q_ref) and _same(R, R_ref)
    factored, _, _ = lapack.dgeqrt(8, np.array(A, order="F"))
    assert _same(tall_qr_r(A), np.triu(factored[:8]))
    assert _same(solve_upper(R, A[:8].T), linalg.solve_triangular(R, A[:8].T))
