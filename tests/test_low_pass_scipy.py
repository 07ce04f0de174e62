"""The kinematic low-pass filter is figaroh 1.0.2's ``scipy.signal`` calls, bit for bit.

Truth: direct per-column calls of ``scipy.signal.butter`` / ``medfilt`` /
``filtfilt`` with 1.0.2's arguments. Every comparison is ``np.array_equal``,
not a tolerance: on a robot at rest the filtered velocities are round-off
(|dq| ~ 1e-14) whose signs are the Coulomb-friction column ``sign(dq)``, so
only the exact values give 1.0.2's regressor.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import signal

from conftest import ROOT
from figaroh.identification import _signal
from figaroh.identification._pipeline import conditioning
from figaroh.identification.base_identification import BaseIdentification
from figaroh.identification.identification_tools import low_pass_filter_data


def scipy_low_pass(
    x: np.ndarray,
    nbutter: int = 4,
    f_butter: float = 2.0,
    med_fil: int = 5,
    f_sample: float = 100.0,
    median_padding: str = "zero",
) -> np.ndarray:
    """figaroh 1.0.2's ``_apply_filters`` of one signal, written with scipy calls only."""
    b, a = signal.butter(nbutter, f_butter / (f_sample / 2), "low")
    padlen = 3 * (max(len(b), len(a)) - 1)
    arr = np.asarray(x, dtype=float)
    cols = arr[:, None] if arr.ndim == 1 else arr
    out = np.empty_like(cols)
    half = med_fil // 2
    for k in range(cols.shape[1]):
        if median_padding == "zero":
            med = signal.medfilt(cols[:, k], med_fil)
        else:  # the column extended by copies of its edge samples, then cropped
            extended = np.concatenate(
                [np.full(half, cols[0, k]), cols[:, k], np.full(half, cols[-1, k])]
            )
            med = signal.medfilt(extended, med_fil)[half : half + cols.shape[0]]
        out[:, k] = signal.filtfilt(b, a, med, padtype="odd", padlen=padlen)
    return out[:, 0] if arr.ndim == 1 else out


def _signals(seed: int, n: int, width: int) -> np.ndarray:
    """Smooth motion with rests (exact constants) and noise, away from zero."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 100.0
    x = (
        1.5
        + np.sin(np.outer(t, rng.uniform(0.2, 2.0, width)))
        + 0.01 * rng.standard_normal((n, width))
    )
    x[n // 3 : n // 2] = x[n // 3]  # the robot rests
    return x


LOW_PASS_OPTIONS = [
    {},
    {"median_padding": "nearest"},
    {"med_fil": 1},
    {"med_fil": 3, "median_padding": "nearest"},
    {"med_fil": 7},
    {"nbutter": 1, "f_butter": 20.0},
    {"nbutter": 6, "f_butter": 5.0, "med_fil": 9},
    {"nbutter": 3, "f_butter": 10.0, "f_sample": 250.0},
]


@pytest.mark.parametrize("options", LOW_PASS_OPTIONS)
def test_low_pass_equals_direct_scipy_calls(options: dict) -> None:
    q = _signals(1, 900, 4)
    dq = np.asfortranarray(_signals(2, 900, 3))
    v = _signals(3, 700, 1)[:, 0]
    outs = _signal.low_pass_many([q, dq, v], **options)
    for got, x in zip(outs, (q, dq, v), strict=True):
        want = scipy_low_pass(x, **options)
        assert got.shape == x.shape
        assert np.array_equal(got, want)
    assert np.array_equal(_signal.low_pass(dq, **options), scipy_low_pass(dq, **options))
    both = BaseIdentification._apply_filters(q, None, v, **options)
    assert both[1] is None
    assert np.array_equal(both[0], outs[0]) and np.array_equal(both[2], outs[2])


def test_nearest_padding_keeps_a_monotonic_edge_zero_padding_does_not() -> None:
    """The running median of a monotonic signal is the signal itself when the edges repeat."""
    x = np.linspace(5.0, 6.0, 400)[:, None]
    no_median = _signal.low_pass(x, med_fil=1)
    assert np.array_equal(_signal.low_pass(x, med_fil=5, median_padding="nearest"), no_median)
    zero = _signal.low_pass(x, med_fil=5)
    assert np.abs(zero - no_median)[-3:].max() > 5e-4  # zeros beyond the end pull it down


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"f_butter": 50.0}, "f_butter"),
        ({"med_fil": 4}, "med_fil"),
        ({"nbutter": 0}, "nbutter"),
        ({"median_padding": "wrap"}, "median_padding"),
    ],
)
def test_low_pass_rejects_bad_parameters(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _signal.low_pass(np.zeros((100, 2)), **kwargs)


def test_low_pass_rejects_too_short_signal() -> None:
    with pytest.raises(ValueError, match="more than 12 samples"):
        _signal.low_pass(np.zeros((12, 2)))


@pytest.mark.parametrize("cutoff_in_hz", [False, True])
def test_low_pass_filter_data_equals_scipy_filtfilt(cutoff_in_hz: bool) -> None:
    x = _signals(4, 600, 3)
    config = {"ts": 0.01, "cut_off_frequency_butterworth": 5.0}
    wn = 2.0 * 5.0 * 0.01 if cutoff_in_hz else 0.01 * 5.0 / 2
    b, a = signal.butter(5, wn, "low")
    want = signal.filtfilt(b, a, x, axis=0, padtype="odd", padlen=15)[25:-25]
    got = low_pass_filter_data(x, config, nbutter=5, cutoff_in_hz=cutoff_in_hz)
    assert np.array_equal(got, want)


# ---------------------------------------------------------------- real log at rest


@pytest.fixture(scope="module")
def tx40_processed(shared_data):
    """The TX40 example's processed data (``process_data``, the public path) and its run."""
    folder = shared_data / "staubli_tx40"
    if not (folder / "pos_read_data.csv").is_file():
        pytest.skip(f"TX40 log not found in {folder}")
    sys.path.insert(0, str(ROOT / "examples" / "staubli_tx40"))
    try:
        from staubli_tx40_tools import CONFIG, TX40Identification, load_tx40
    finally:
        sys.path.remove(str(ROOT / "examples" / "staubli_tx40"))
    ident = TX40Identification(load_tx40(folder), CONFIG, data_dir=folder)
    ident.process_data()
    return ident


def test_tx40_default_filter_equals_scipy_rest_samples_included(tx40_processed) -> None:
    ident = tx40_processed
    params = ident.filter_config["filter_params"]
    assert set(params) <= {"nbutter", "f_butter", "med_fil", "f_sample"}  # the defaults
    q_joint = np.asarray(ident.raw_data["positions"], dtype=float)  # joint side, unfiltered
    t = np.asarray(ident.raw_data["timestamps"], dtype=float)[:, 0]
    q = scipy_low_pass(q_joint, **params)
    dq = np.column_stack([np.gradient(q[:, k], t) for k in range(q.shape[1])])
    ddq = np.column_stack([np.gradient(dq[:, k], t) for k in range(dq.shape[1])])
    keep = slice(ident.edge_samples, q.shape[0] - ident.edge_samples)
    got = ident.processed_data
    at_rest = np.abs(dq[keep]) <= 1e-12
    assert at_rest.sum() > 1000, "the log should hold round-off velocities at rest"
    assert np.array_equal(got["positions"], q[keep])
    assert np.array_equal(got["velocities"], dq[keep])
    assert np.array_equal(got["accelerations"], ddq[keep])
    # the Coulomb column reads these signs
    assert np.array_equal(np.sign(got["velocities"])[at_rest], np.sign(dq[keep])[at_rest])


def test_condition_kinematics_is_the_public_filter(tx40_processed) -> None:
    """``condition_kinematics`` (used by ``filter_kinematics_data``) on the raw TX40 positions."""
    ident = tx40_processed
    raw = {
        "timestamps": ident.raw_data["timestamps"],
        "positions": ident.raw_data["positions"],
        "velocities": None,
        "accelerations": None,
    }
    got = conditioning.condition_kinematics(raw, ident.filter_config)
    want = scipy_low_pass(raw["positions"], **ident.filter_config["filter_params"])
    assert np.array_equal(got["positions"], want)
