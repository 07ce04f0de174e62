"""The fast low-pass path gives the results of the straightforward one, bit for bit.

The reference below is the previous implementation, kept verbatim in its
logic: the median as the full odd-even transposition network over ``k``
shifted copies, the blocked IIR recursion with the two-operation state step
``s @ (A^L)ᵀ + u`` once per block, one signal per call, and the conditioning
loop that filters one kinematic signal at a time. The median is also checked
against ``scipy.signal.medfilt`` and ``numpy.median``. Every comparison is
``assert_array_equal`` (NaN where the reference has NaN), on random data,
for every option of the filter (median padding, window, order, cut-off,
differentiation method, which signals are present, memory layout).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import signal

from figaroh.identification import _signal
from figaroh.identification._pipeline import conditioning
from figaroh.tools import _iir

# --------------------------------------------------------------------------- reference


def ref_medfilt(x: np.ndarray, k: int) -> np.ndarray:
    """Zero-padded running median: the full odd-even transposition network."""
    arr = np.asarray(x, dtype=float)
    if k == 1:
        return arr.copy()
    half, n = k // 2, arr.shape[0]
    padded = np.pad(arr, [(half, half)] + [(0, 0)] * (arr.ndim - 1))
    if k > 11:
        windows = np.lib.stride_tricks.sliding_window_view(padded, k, axis=0)
        return np.partition(windows, half, axis=-1)[..., half].copy()
    rows = list(np.stack([padded[j : j + n] for j in range(k)]))
    spare = np.empty_like(rows[0])
    for step in range(k):
        for j in range(step % 2, k - 1, 2):
            np.minimum(rows[j], rows[j + 1], out=spare)
            np.maximum(rows[j], rows[j + 1], out=rows[j + 1])
            rows[j], spare = spare, rows[j]
    return rows[half].copy()


class RefBlocked:
    """Block matrices of the filter and the block-by-block recursion, one step per block."""

    def __init__(self, b: np.ndarray, a: np.ndarray, L: int = _iir.BLOCK) -> None:
        A, B = _iir._state_space(b, a)
        A, B = A.astype(np.longdouble), B.astype(np.longdouble)
        m = A.shape[0]
        powers = [np.eye(m, dtype=np.longdouble)]
        for _ in range(L):
            powers.append(powers[-1] @ A)
        self.powers = powers
        v = np.stack([p @ B for p in powers[:L]])
        self.obs = np.stack([p[0] for p in powers[:L]]).astype(float)
        h = np.concatenate(([b[0]], v[: L - 1, 0].astype(float)))
        idx = np.arange(L)
        lag = idx[:, None] - idx[None, :]
        self.toeplitz = np.where(lag >= 0, h[np.clip(lag, 0, L - 1)], 0.0)
        self.ctrl = v[::-1].T.astype(float)
        self.v = v.astype(float)
        self.L = L

    def run(self, x: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        L = self.L
        c, n = x.shape
        nb, rem = divmod(n, L)
        y = np.empty((c, n))
        s = s.astype(np.longdouble)
        if nb:
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


def ref_filtfilt(b, a, x, axis=0, padlen=None):
    b, a = _iir._normalise(b, a)
    arr = np.moveaxis(np.asarray(x, dtype=float), axis, 0)
    shape = arr.shape
    rows = arr.reshape(shape[0], -1).T
    edge = 3 * a.shape[0] if padlen is None else int(padlen)
    if edge > 0:
        left = 2 * rows[:, :1] - rows[:, edge:0:-1]
        right = 2 * rows[:, -1:] - rows[:, -2 : -(edge + 2) : -1]
        rows = np.concatenate((left, rows, right), axis=1)
    if a.shape[0] == 1:
        y = (b[0] * b[0]) * rows
    else:
        zi = _iir.lfilter_zi(b, a)[None, :]
        blocked = RefBlocked(b, a)
        y, _ = blocked.run(rows, zi * rows[:, :1])
        y, _ = blocked.run(y[:, ::-1], zi * y[:, -1:])
        y = y[:, ::-1]
    if edge > 0:
        y = y[:, edge:-edge]
    return np.moveaxis(np.ascontiguousarray(y.T).reshape(shape), 0, axis)


def ref_low_pass(x, *, nbutter=4, f_butter=2.0, med_fil=5, f_sample=100.0, median_padding="zero"):
    arr = np.asarray(x, dtype=float)
    was_1d = arr.ndim == 1
    arr = arr[:, None] if was_1d else arr
    b, a = _iir.butter_lowpass(int(nbutter), float(f_butter) / (float(f_sample) / 2))
    padlen = 3 * (max(len(b), len(a)) - 1)
    half = med_fil // 2
    if med_fil == 1:
        med = arr
    elif median_padding == "zero":
        med = ref_medfilt(arr, med_fil)
    else:
        padded = np.pad(arr, ((half, half), (0, 0)), mode="edge")
        med = ref_medfilt(padded, med_fil)[half : half + arr.shape[0]]
    out = ref_filtfilt(b, a, med, axis=0, padlen=padlen)
    return out[:, 0] if was_1d else out


def ref_condition(raw, filter_config):
    params = dict(filter_config.get("filter_params", {}))
    method = filter_config.get("differentiation_method", "gradient")
    out = {"timestamps": np.asarray(raw["timestamps"], dtype=float)}
    previous = None
    for name in ("positions", "velocities", "accelerations"):
        if raw.get(name) is not None:
            out[name] = ref_low_pass(np.asarray(raw[name], float), **params)
        else:
            out[name] = _signal.differentiate(out["timestamps"], out[previous], method)
        previous = name
    return out


# --------------------------------------------------------------------------- data


def _signals(seed: int, n: int, cols: int, kind: str = "smooth") -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "ties":
        return rng.integers(-3, 4, size=(n, cols)).astype(float)
    x = rng.standard_normal((n, cols)).cumsum(axis=0) * 0.05 + rng.uniform(-2, 2, cols)
    return x + 0.01 * rng.standard_normal((n, cols))


# --------------------------------------------------------------------------- median


def test_median_of_five_network_on_every_order() -> None:
    """The 5-window selection network returns the median for all orderings and 0/1 inputs."""
    cases = [np.array(p, float) for p in itertools.permutations(range(5))]
    cases += [np.array(bits, float) for bits in itertools.product((0.0, 1.0), repeat=5)]
    for window in cases:
        for k in (3, 5):
            got = _iir._window_medians(window[:k, None], k)
            assert got.shape == (1, 1)
            assert got[0, 0] == np.median(window[:k])


@pytest.mark.parametrize("k", (1, 3, 5, 7, 9, 11, 13, 21))
@pytest.mark.parametrize("n", (1, 2, 3, 4, 6, 11, 200))
@pytest.mark.parametrize("kind", ("smooth", "ties"))
def test_medfilt_equals_transposition_network_and_scipy(k: int, n: int, kind: str) -> None:
    x = _signals(k * 1000 + n, n, 3, kind)
    ref = ref_medfilt(x, k)
    for arr in (x, np.asfortranarray(x)):
        got = _iir.medfilt(arr, k)
        np.testing.assert_array_equal(got, ref)
        assert got.flags.c_contiguous
    np.testing.assert_array_equal(_iir.medfilt(x[:, 0], k), ref[:, 0])
    with warnings.catch_warnings():  # scipy: window longer than the signal
        warnings.simplefilter("ignore", UserWarning)
        scipy_ref = np.column_stack([signal.medfilt(col, k) for col in x.T])
    np.testing.assert_array_equal(_iir.medfilt(x, k), scipy_ref)


@pytest.mark.parametrize("k", (3, 5, 7, 11, 13))
def test_medfilt_edge_padding_and_columns(k: int) -> None:
    x = _signals(k, 120, 5)
    half = k // 2
    ref = ref_medfilt(np.pad(x, ((half, half), (0, 0)), mode="edge"), k)[half : half + 120]
    np.testing.assert_array_equal(_iir.medfilt(x, k, padding="edge"), ref)
    parts = [x[:, :2], np.asfortranarray(x[:, 2:])]
    for padding, expected in (("zero", ref_medfilt(x, k)), ("edge", ref)):
        got = _iir.medfilt_columns(parts, k, padding=padding)
        np.testing.assert_array_equal(got, expected)
        assert got.flags.c_contiguous


@pytest.mark.parametrize("k", (3, 5, 7, 9))
def test_medfilt_non_finite_like_the_network(k: int) -> None:
    x = _signals(k, 60, 4)
    x[[3, 17, 40], [0, 1, 3]] = np.nan
    x[25, 2], x[50, 2] = np.inf, -np.inf
    np.testing.assert_array_equal(_iir.medfilt(x, k), ref_medfilt(x, k))
    y = _signals(k + 1, 60, 2)
    y[10, 0], y[30, 1] = np.inf, -np.inf  # infinities without NaN: the fast networks
    np.testing.assert_array_equal(_iir.medfilt(y, k), ref_medfilt(y, k))


def test_medfilt_signed_zero_values() -> None:
    x = np.zeros((30, 2))
    x[::3, 0] = -0.0
    x[5:9, 1] = [1.0, -0.0, -1.0, 0.0]
    for k in (3, 5):
        np.testing.assert_array_equal(_iir.medfilt(x, k), ref_medfilt(x, k))


def test_medfilt_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="odd"):
        _iir.medfilt(np.zeros(8), 4)
    with pytest.raises(ValueError, match="padding"):
        _iir.medfilt(np.zeros(8), 3, padding="wrap")
    with pytest.raises(ValueError, match="one length"):
        _iir.medfilt_columns([np.zeros((8, 1)), np.zeros((9, 1))], 3)


# --------------------------------------------------------------------------- IIR


FILTERS = [(order, wn) for order in range(1, 9) for wn in (0.02, 0.1, 0.2, 0.5, 0.9)]


@pytest.mark.parametrize(("order", "wn"), FILTERS)
def test_filtfilt_bit_identical_to_reference(order: int, wn: float) -> None:
    b, a = _iir.butter_lowpass(order, wn)
    for n, seed in ((3 * order + 1, 0), (64 - 6 * order, 1), (640 - 6 * order, 2), (700, 3)):
        if n <= 3 * order:
            continue
        x = _signals(seed, n, 3)
        for arr in (x, np.asfortranarray(x)):  # the layout can change the BLAS kernels
            ref = ref_filtfilt(b, a, arr, padlen=3 * order)
            np.testing.assert_array_equal(_iir.filtfilt(b, a, arr, padlen=3 * order), ref)
    x = _signals(9, 300, 2)
    for padlen in (None, 0, 5):
        np.testing.assert_array_equal(
            _iir.filtfilt(b, a, x, padlen=padlen), ref_filtfilt(b, a, x, padlen=padlen)
        )
    np.testing.assert_array_equal(
        _iir.filtfilt(b, a, x.T, axis=1, padlen=9), ref_filtfilt(b, a, x.T, axis=1, padlen=9)
    )
    np.testing.assert_array_equal(
        _iir.filtfilt(b, a, x[:, 0], padlen=9), ref_filtfilt(b, a, x[:, 0], padlen=9)
    )


@pytest.mark.parametrize("order", (1, 4, 7))
def test_filtfilt_columns_groups_equal_each_group_alone(order: int) -> None:
    b, a = _iir.butter_lowpass(order, 0.15)
    x = _signals(order, 1000 + 17 * order, 9)
    widths = [2, 4, 3]
    stops = np.cumsum(widths)
    for stacked, layout in ((x, np.ascontiguousarray), (np.asfortranarray(x), np.asfortranarray)):
        outs = _iir.filtfilt_columns(b, a, stacked, widths, padlen=3 * order)
        for out, start, stop in zip(outs, stops - widths, stops, strict=True):
            ref = ref_filtfilt(b, a, layout(stacked[:, start:stop]), padlen=3 * order)
            np.testing.assert_array_equal(out, ref)
            assert out.flags.c_contiguous
    with pytest.raises(ValueError, match="sum to 9"):
        _iir.filtfilt_columns(b, a, x, [4, 4])


def test_lfilter_bit_identical_to_reference() -> None:
    b, a = _iir.butter_lowpass(5, 0.1)
    nb, na = _iir._normalise(b, a)
    x = _signals(4, 333, 3)
    zi = np.random.default_rng(5).standard_normal((5, 3))
    y, zf = _iir.lfilter(b, a, x, zi)
    y_ref, zf_ref = RefBlocked(nb, na).run(x.T, zi.T)
    np.testing.assert_array_equal(y, y_ref.T)
    np.testing.assert_array_equal(zf, zf_ref.T)


def test_filtfilt_non_finite_and_narrow_longdouble_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    b, a = _iir.butter_lowpass(4, 0.2)
    x = _signals(6, 500, 3)
    x[200, 1] = np.inf
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(_iir.filtfilt(b, a, x), ref_filtfilt(b, a, x))
    monkeypatch.setattr(_iir, "_WIDE_LONGDOUBLE", False)
    y = _signals(7, 500, 3)
    np.testing.assert_array_equal(_iir.filtfilt(b, a, y), ref_filtfilt(b, a, y))


def test_cached_designs_are_not_shared_with_callers() -> None:
    fns = _iir.lowpass_functions(default="numpy")
    b, a = fns.butter(4, 0.2)
    b[:] = 0.0
    b2, a2 = fns.butter(4, 0.2)
    ref_b, ref_a = _iir.butter_lowpass(4, 0.2)
    np.testing.assert_array_equal(b2, ref_b)
    np.testing.assert_array_equal(a2, ref_a)


# ------------------------------------------------------------- low-pass and conditioning


LOW_PASS_OPTIONS = [
    {},
    {"median_padding": "nearest"},
    {"med_fil": 1},
    {"med_fil": 3, "median_padding": "nearest"},
    {"med_fil": 7},
    {"med_fil": 13, "median_padding": "nearest"},
    {"nbutter": 1, "f_butter": 20.0},
    {"nbutter": 6, "f_butter": 5.0, "med_fil": 9},
    {"nbutter": 3, "f_butter": 10.0, "f_sample": 250.0},
]


@pytest.mark.parametrize("options", LOW_PASS_OPTIONS)
def test_low_pass_many_equals_reference_per_signal(options: dict) -> None:
    q = _signals(1, 900, 4)
    dq = np.asfortranarray(_signals(2, 900, 4))
    v = _signals(3, 900, 1)[:, 0]
    refs = [ref_low_pass(s, **options) for s in (q, dq, v)]
    for got, ref in zip(_signal.low_pass_many([q, dq, v], **options), refs, strict=True):
        np.testing.assert_array_equal(got, ref)
        assert got.shape == ref.shape
    np.testing.assert_array_equal(_signal.low_pass(dq, **options), refs[1])
    short = _signals(4, 400, 2)  # another length: filtered on its own
    got = conditioning.apply_filters(q, None, short, **options)
    assert got[1] is None
    np.testing.assert_array_equal(got[0], refs[0])
    np.testing.assert_array_equal(got[2], ref_low_pass(short, **options))


def _raw(n: int, present: tuple[str, ...], fortran: bool) -> dict:
    t = np.cumsum(np.random.default_rng(n).uniform(0.009, 0.011, n))[:, None]
    raw = {"timestamps": t}
    for i, name in enumerate(("positions", "velocities", "accelerations")):
        value = _signals(10 + i, n, 6) if name in present else None
        raw[name] = np.asfortranarray(value) if fortran and value is not None else value
    return raw


@pytest.mark.parametrize("method", _signal.DIFFERENTIATION_METHODS)
@pytest.mark.parametrize(
    "present",
    (
        ("positions",),
        ("positions", "velocities"),
        ("positions", "accelerations"),
        ("positions", "velocities", "accelerations"),
    ),
)
def test_condition_kinematics_equals_reference(method: str, present: tuple[str, ...]) -> None:
    for options, fortran in ((LOW_PASS_OPTIONS[0], True), (LOW_PASS_OPTIONS[7], False)):
        raw = _raw(1100, present, fortran)
        config = {"differentiation_method": method, "filter_params": dict(options)}
        got = conditioning.condition_kinematics(raw, config)
        ref = ref_condition(raw, config)
        assert got.keys() == ref.keys()
        for key in ref:
            np.testing.assert_array_equal(got[key], ref[key])


def test_condition_kinematics_ur10_sized_default_filter() -> None:
    """10 000 samples × 6 joints of positions and velocities, the UR10 example's filter."""
    raw = _raw(10_000, ("positions", "velocities"), fortran=True)
    config = {
        "differentiation_method": "gradient",
        "filter_params": {"f_sample": 100.0, "f_butter": 10.0, "nbutter": 4},
    }
    got = conditioning.condition_kinematics(raw, config)
    ref = ref_condition(raw, config)
    for key in ref:
        np.testing.assert_array_equal(got[key], ref[key])


NATIVE = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    import test_filter_speed_equivalence as t
    for options in t.LOW_PASS_OPTIONS:
        t.test_low_pass_many_equals_reference_per_signal(options)
    for order in (1, 4, 7):
        t.test_filtfilt_columns_groups_equal_each_group_alone(order)
    for order, wn in ((2, 0.1), (4, 0.2), (6, 0.5)):
        t.test_filtfilt_bit_identical_to_reference(order, wn)
    t.test_lfilter_bit_identical_to_reference()
    t.test_condition_kinematics_equals_reference("gradient", ("positions", "velocities"))
    t.test_condition_kinematics_ur10_sized_default_filter()
    print("NATIVE OK")
    """
)


def test_equivalence_with_the_cpus_own_blas_kernels() -> None:
    """The same comparisons with the kernels OpenBLAS picks for this CPU.

    tests/conftest.py pins the AVX2 kernels; on an AVX-512 CPU the library
    runs others, whose results depend on the memory layout of the operands,
    so the fast path must hand BLAS the same layouts as the reference.
    """
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env["OPENBLAS_NUM_THREADS"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", NATIVE, str(Path(__file__).resolve().parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "NATIVE OK" in proc.stdout
