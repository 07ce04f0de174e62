"""figaroh.tools._iir against scipy.signal: Butterworth design, medfilt, lfilter, filtfilt.

filtfilt of a ``(b, a)`` filter is compared with scipy's at a tolerance scaled by
the square of the filter's transient growth ``g = max_k max|A^k|`` (A: companion
matrix of ``a``): both recursions amplify their round-off by about ``g²``
(checked against an extended-precision reference below). Filters with
``g > 1e6`` (order ≥ 6 at cut-offs ≤ 0.02·Nyquist) are not compared: there
scipy's own result is dominated by round-off (or diverges).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import signal

from figaroh.tools import _iir

ROOT = Path(__file__).resolve().parents[1]
ORDERS = range(1, 9)
CUTOFFS = (0.001, 0.005, 0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99)


def _growth(a: np.ndarray, steps: int = 2 * _iir.BLOCK) -> float:
    m = len(a) - 1
    A = np.zeros((m, m), dtype=np.longdouble)
    A[:, 0] = -np.asarray(a[1:], dtype=np.longdouble)
    A[np.arange(m - 1), np.arange(1, m)] = 1
    P, g = np.eye(m, dtype=np.longdouble), 1.0
    for _ in range(steps):
        P = P @ A
        g = max(g, float(np.abs(P).max()))
    return g


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("wn", CUTOFFS)
def test_butter_matches_scipy(order: int, wn: float) -> None:
    b, a = _iir.butter_lowpass(order, wn)
    b_ref, a_ref = signal.butter(order, wn, "low")
    assert b.dtype == a.dtype == np.float64
    assert b.shape == a.shape == (order + 1,)
    np.testing.assert_allclose(b, b_ref, rtol=0, atol=1e-15 * np.abs(b_ref).max())
    np.testing.assert_allclose(a, a_ref, rtol=0, atol=1e-15 * np.abs(a_ref).max())


@pytest.mark.parametrize("wn", (0.0, 1.0, -0.1, 1.5))
def test_butter_rejects_cutoff_outside_unit_interval(wn: float) -> None:
    with pytest.raises(ValueError, match="0 < Wn < 1"):
        _iir.butter_lowpass(4, wn)


def test_butter_rejects_bad_order() -> None:
    with pytest.raises(ValueError, match="order"):
        _iir.butter_lowpass(0, 0.1)


@pytest.mark.parametrize("k", (1, 3, 5, 7, 9, 31))
@pytest.mark.parametrize("n", (1, 4, 10, 257))
def test_medfilt_bit_identical(k: int, n: int) -> None:
    x = np.random.default_rng(n * 100 + k).standard_normal(n) * 3 + 10
    with (
        np.errstate(all="ignore"),
        pytest.warns(UserWarning) if k > n else contextlib.nullcontext(),
    ):
        ref = signal.medfilt(x, k)
    np.testing.assert_array_equal(_iir.medfilt(x, k), ref)


def test_medfilt_rejects_even_window() -> None:
    with pytest.raises(ValueError, match="odd"):
        _iir.medfilt(np.zeros(10), 4)


def test_lfilter_zi_matches_scipy() -> None:
    for order in (1, 2, 5, 8):
        b, a = signal.butter(order, 0.1)
        np.testing.assert_allclose(_iir.lfilter_zi(b, a), signal.lfilter_zi(b, a), rtol=1e-13)


@pytest.mark.parametrize("n", (1, 5, 63, 64, 65, 200, 1000))
def test_lfilter_matches_scipy(n: int) -> None:
    rng = np.random.default_rng(n)
    b, a = signal.butter(4, 0.1)
    x = rng.standard_normal((n, 3))
    zi = rng.standard_normal((4, 3))
    y, zf = _iir.lfilter(b, a, x, zi)
    y_ref, zf_ref = signal.lfilter(b, a, x, axis=0, zi=zi)
    scale = max(np.abs(y_ref).max(), 1.0)
    np.testing.assert_allclose(y, y_ref, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(zf, zf_ref, rtol=0, atol=1e-13 * scale)


FILTFILT_CASES = [
    (order, wn)
    for order in (2, 3, 4, 5, 6, 8)
    for wn in (0.005, 0.02, 0.05, 0.1, 0.25, 0.5)
    if _growth(signal.butter(order, wn)[1]) <= 1e6
]


@pytest.mark.parametrize(("order", "wn"), FILTFILT_CASES)
def test_filtfilt_matches_scipy(order: int, wn: float) -> None:
    b, a = signal.butter(order, wn)
    tol = max(1e-13, 5e-15 * _growth(a) ** 2)
    rng = np.random.default_rng(order * 1000 + int(wn * 1000))
    for n, padlen in ((3 * order + 1, 3 * order), (40, None), (300, 3 * order), (20000, None)):
        if padlen is None and n <= 3 * (order + 1):
            continue
        x = rng.standard_normal((n, 2)).cumsum(axis=0) + 5.0
        y = _iir.filtfilt(b, a, x, axis=0, padlen=padlen)
        y_ref = signal.filtfilt(b, a, x, axis=0, padtype="odd", padlen=padlen)
        err = np.abs(y - y_ref).max() / np.abs(y_ref).max()
        assert err <= tol, (order, wn, n, err, tol)


def test_filtfilt_other_axis_and_1d() -> None:
    b, a = signal.butter(4, 0.08)
    x = np.random.default_rng(3).standard_normal((3, 500))
    ref = signal.filtfilt(b, a, x, axis=1, padtype="odd", padlen=12)
    np.testing.assert_allclose(_iir.filtfilt(b, a, x, axis=1, padlen=12), ref, atol=1e-12)
    np.testing.assert_allclose(_iir.filtfilt(b, a, x[0], padlen=12), ref[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize(("n", "padlen"), ((12, 12), (5, 12), (15, None), (10, None)))
def test_filtfilt_too_short_raises_like_scipy(n: int, padlen: int | None) -> None:
    b, a = signal.butter(4, 0.1)
    x = np.ones(n)
    with pytest.raises(ValueError, match="padlen") as ours:
        _iir.filtfilt(b, a, x, padlen=padlen)
    with pytest.raises(ValueError) as theirs:
        signal.filtfilt(b, a, x, padtype="odd", padlen=padlen)
    assert str(ours.value) == str(theirs.value)


def _filtfilt_longdouble(b, a, x, padlen):
    """Per-sample direct form II transposed filtfilt in extended precision."""

    def lf(x, zi):
        bl, al = b.astype(np.longdouble), a.astype(np.longdouble)
        z, y = zi.astype(np.longdouble).copy(), np.empty(len(x), dtype=np.longdouble)
        for n, xn in enumerate(x):
            yn = z[0] + bl[0] * xn
            z[:-1] = z[1:] + bl[1:-1] * xn - al[1:-1] * yn
            z[-1] = bl[-1] * xn - al[-1] * yn
            y[n] = yn
        return y

    x = x.astype(np.longdouble)
    ext = np.concatenate((2 * x[0] - x[padlen:0:-1], x, 2 * x[-1] - x[-2 : -(padlen + 2) : -1]))
    zi = signal.lfilter_zi(b, a)
    y = lf(ext, zi * ext[0])
    y = lf(y[::-1], zi * y[-1])[::-1]
    return y[padlen:-padlen]


@pytest.mark.parametrize(("order", "wn"), ((4, 0.04), (5, 0.025), (3, 0.01)))
def test_filtfilt_as_accurate_as_scipy(order: int, wn: float) -> None:
    b, a = signal.butter(order, wn)
    x = np.random.default_rng(0).standard_normal(1500).cumsum()
    ref = _filtfilt_longdouble(b, a, x, 3 * order)
    scale = float(np.abs(ref).max())
    ours = float(np.abs(_iir.filtfilt(b, a, x, padlen=3 * order) - ref).max()) / scale
    theirs = (
        float(np.abs(signal.filtfilt(b, a, x, padtype="odd", padlen=3 * order) - ref).max()) / scale
    )
    assert ours <= max(10 * theirs, 1e-14), (ours, theirs)


def test_backend_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_iir.BACKEND_ENV, "scipy")
    fns = _iir.lowpass_functions()
    x = np.random.default_rng(0).standard_normal((50, 3))
    ref = np.column_stack([signal.medfilt(c, 5) for c in x.T])
    np.testing.assert_array_equal(fns.medfilt(x, 5), ref)
    monkeypatch.setenv(_iir.BACKEND_ENV, "numpy")
    assert _iir.lowpass_functions().filtfilt is _iir.filtfilt
    monkeypatch.delenv(_iir.BACKEND_ENV)
    assert _iir.lowpass_functions().filtfilt is _iir.filtfilt
    assert _iir.lowpass_functions(default="scipy").filtfilt is not _iir.filtfilt
    monkeypatch.setenv(_iir.BACKEND_ENV, "fortran")
    with pytest.raises(ValueError, match=_iir.BACKEND_ENV):
        _iir.lowpass_functions()


GENERATE = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from identification import generate_ur10_data
    train, _ = generate_ur10_data(sys.argv[2], n_samples=300, noise_std=0.5)
    print(train)
    """
)

INITIALIZE = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from identification import CONFIG, UR10Identification
    from simulate import load_ur10
    ident = UR10Identification(load_ur10(), CONFIG, data_dir=sys.argv[2])
    ident.initialize()
    print("SCIPY_SIGNAL", "scipy.signal" in sys.modules)
    """
)


def _run(script: str, *args: str, backend: str = "numpy") -> str:
    env = dict(os.environ, FIGAROH_FILTER_BACKEND=backend, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "examples" / "ur10"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def ur10_train(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("ur10")
    return _run(GENERATE, str(out)).strip().splitlines()[-1]


@pytest.mark.parametrize(("backend", "expected"), (("numpy", "False"), ("scipy", "True")))
def test_ur10_initialize_does_not_import_scipy_signal(
    ur10_train: str, backend: str, expected: str
) -> None:
    assert f"SCIPY_SIGNAL {expected}" in _run(INITIALIZE, ur10_train, backend=backend)


@pytest.mark.parametrize("k", (3, 5, 11, 13, 21))
def test_medfilt_columns_bit_identical(k: int) -> None:
    x = np.random.default_rng(k).integers(-3, 4, size=(200, 4)).astype(float) + 0.5
    ref = np.column_stack([signal.medfilt(col, k) for col in x.T])
    np.testing.assert_array_equal(_iir.medfilt(x, k), ref)
