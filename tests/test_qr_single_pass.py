"""The base-parameter QR reads the tall regressor once and keeps the numbers.

Two claims of :mod:`figaroh.tools.qrdecomposition`:

* the one-pass route (one tall-skinny QR of ``[W_e | tau]``, everything else on
  the small ``R`` factor) gives the same base columns, expressions, ``beta``,
  ``M`` and ``phi_b`` as a plain reference: greedy column choice by explicit
  projections, then figaroh 1.0.2's second QR of the tall
  ``[W_base | W_regroup]`` with ``numpy.linalg.qr`` and ``numpy.linalg.solve``
  (to 1e-12);
* the tall matrix goes through exactly one QR (counted by monkeypatching the
  factorisation routines); every other factorisation is of a matrix with at
  most ``n + 1`` rows.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from figaroh.identification._pipeline import base_fit
from figaroh.identification._pipeline.records import FitProblem, Settings
from figaroh.identification.identification_tools import relative_stdev
from figaroh.tools import qrdecomposition as qrd

TOL = 1e-12


# ---------------------------------------------------------------------------
# Random tall regressors with exactly dependent columns
# ---------------------------------------------------------------------------
def _dependent_matrix(seed: int, m: int = 240) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(W, names, tau)``: 7 independent columns of distinct norms and 6 dependent ones."""
    g = np.random.default_rng(seed)
    u = g.standard_normal((m, 7)) * np.linspace(1.0, 4.0, 7)  # distinct norms: no ties
    dep = [
        u[:, 0] * 2.5,  # scaled copy
        u[:, 1] - 0.5 * u[:, 2],  # combination of two
        u[:, 3] + u[:, 4] + u[:, 5],  # of three
        -0.125 * u[:, 6],  # small negative copy
        np.zeros(m),  # zero column
        0.3 * u[:, 0] + 0.7 * u[:, 6],
    ]
    W = np.column_stack([*u.T, *dep])
    perm = g.permutation(W.shape[1])
    W = W[:, perm]
    names = [
        f"p{int(k):02d}_{chr(97 + int(j))}" for k, j in zip(perm, g.permutation(13), strict=True)
    ]
    theta = g.uniform(-2.0, 2.0, W.shape[1])
    tau = W @ theta + 1e-3 * g.standard_normal(m)
    return W, names, tau


def _reference_choice(W: np.ndarray, names: list[str], threshold: float) -> list[int]:
    """Greedy choice by explicit projections: largest residual norm, ties to the smallest name."""
    chosen: list[int] = []
    while True:
        if chosen:
            Q = np.linalg.qr(W[:, chosen])[0]
            rho = np.linalg.norm(W - Q @ (Q.T @ W), axis=0)
        else:
            rho = np.linalg.norm(W, axis=0)
        rho[chosen] = -1.0
        if rho.max() <= threshold:
            return chosen
        tied = np.flatnonzero(rho >= (1.0 - qrd.TIE_RTOL) * rho.max())
        chosen.append(int(min(tied, key=lambda j: names[j])))


def _reference_double(W: np.ndarray, names: list[str], tau: np.ndarray) -> dict:
    """figaroh 1.0.2's double QR on the tall matrix, base columns from the reference choice."""
    base = sorted(_reference_choice(W, names, qrd.TOL_QR))
    regroup = [j for j in range(W.shape[1]) if j not in base]
    r = len(base)
    Q, R = np.linalg.qr(W[:, base + regroup])
    beta = np.linalg.solve(R[:r, :r], R[:r, r:])
    phi_b = np.linalg.solve(R[:r, :r], Q[:, :r].T @ tau)
    M = np.zeros((r, W.shape[1]))
    M[np.arange(r), base] = 1.0
    M[:, regroup] = beta
    return {"base": base, "regroup": regroup, "beta": beta, "phi_b": phi_b, "M": M}


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= TOL * (1.0 + np.abs(b))))


@pytest.mark.parametrize("seed", range(6))
def test_one_pass_double_qr_equals_reference(seed):
    W, names, tau = _dependent_matrix(seed)
    ref = _reference_double(W, names, tau)
    res = qrd.QRDecomposer().decompose(W, names, tau=tau, method="double")
    assert res.rank == len(ref["base"]) == 7
    assert res.base_indices == ref["base"]
    assert np.array_equal(res.W_b, W[:, ref["base"]])
    assert _close(res.beta, ref["beta"])
    assert _close(res.M, ref["M"])
    assert _close(res.phi_b, ref["phi_b"])
    expected = qrd.QRDecomposer()._build_parameter_expressions(
        [names[i] for i in ref["base"]], [names[i] for i in ref["regroup"]], ref["beta"]
    )
    assert res.base_param_expressions == expected
    assert res.cond_R1 == pytest.approx(np.linalg.cond(W[:, ref["base"]]), rel=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_one_pass_pivoting_equals_reference(seed):
    W, names, tau = _dependent_matrix(seed)
    chosen = _reference_choice(W, names, qrd.TOL_QR)
    rest = sorted((j for j in range(W.shape[1]) if j not in chosen), key=names.__getitem__)
    r = len(chosen)
    Q, R = np.linalg.qr(W[:, chosen + rest])
    res = qrd.QRDecomposer().decompose(W, names, tau=tau, method="pivoting")
    assert res.pivot_order == chosen + rest
    assert _close(res.beta, np.linalg.solve(R[:r, :r], R[:r, r:]))
    assert _close(res.phi_b, np.linalg.solve(R[:r, :r], Q[:, :r].T @ tau))


@pytest.mark.parametrize("seed", range(3))
def test_legacy_functions_agree_with_one_pass(seed):
    W, names, tau = _dependent_matrix(seed)
    res = qrd.QRDecomposer().decompose(W, names, tau=tau)
    W_b, base_parameters, expressions, phi_b = qrd.double_QR(tau, W, names)
    assert expressions == res.base_param_expressions == list(base_parameters)
    assert np.array_equal(W_b, res.W_b)
    assert _close(phi_b, res.phi_b)
    W_b2, expressions2, idx = qrd.get_baseParams(W, names)
    assert np.array_equal(W_b2, res.W_b)
    assert expressions2 == res.base_param_expressions
    assert idx == res.base_indices == list(qrd.get_baseIndex(W, names))


# ---------------------------------------------------------------------------
# One pass over the tall matrix
# ---------------------------------------------------------------------------
class _Calls:
    """Counts tall-matrix factorisations; fails on any other factorisation of a tall matrix."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, small_rows: int):
        self.tall = []
        self.small_rows = small_rows
        tall_qr_r = qrd.tall_qr_r

        def counting_tall_qr_r(A, *args, **kwargs):
            self.tall.append(np.shape(A))
            return tall_qr_r(A, *args, **kwargs)

        monkeypatch.setattr(qrd, "tall_qr_r", counting_tall_qr_r)
        monkeypatch.setattr(
            "figaroh.identification.identification_tools.tall_qr_r", counting_tall_qr_r
        )
        for owner, name in (
            (np.linalg, "qr"),
            (np.linalg, "svd"),
            (np.linalg, "cond"),
            (np.linalg, "lstsq"),
            (scipy.linalg, "qr"),
        ):
            monkeypatch.setattr(owner, name, self._small_only(getattr(owner, name), name))

    def _small_only(self, func, name):
        def wrapper(A, *args, **kwargs):
            assert np.shape(A)[0] <= self.small_rows, f"{name} of a tall {np.shape(A)} matrix"
            return func(A, *args, **kwargs)

        return wrapper


@pytest.mark.parametrize(
    "call",
    [
        lambda W, n, t: qrd.QRDecomposer().decompose(W, n, tau=t, method="double"),
        lambda W, n, t: qrd.QRDecomposer().decompose(W, n, tau=t, method="pivoting"),
        lambda W, n, t: qrd.get_baseParams(W, n),
        lambda W, n, t: qrd.get_baseIndex(W, n),
        lambda W, n, t: qrd.QRDecomposer().get_base_mapping_matrix(W, n, "double"),
        lambda W, n, t: qrd.QRDecomposer().get_base_mapping_matrix(W, n, "pivoting"),
    ],
    ids=[
        "decompose-double",
        "decompose-pivoting",
        "get_baseParams",
        "get_baseIndex",
        "mapping-double",
        "mapping-pivoting",
    ],
)
def test_tall_matrix_is_factorised_once(monkeypatch, call):
    W, names, tau = _dependent_matrix(0)
    calls = _Calls(monkeypatch, small_rows=W.shape[1] + 1)
    call(W, names, tau)
    assert len(calls.tall) == 1
    assert calls.tall[0][0] == W.shape[0]


def _settings() -> Settings:
    return Settings(
        config={},
        nv=1,
        q0=np.zeros(1),
        act_idxq=(0,),
        act_idxv=(0,),
        continuous=(False,),
        active_joints=("j",),
        effort_units=("N·m",),
        tol_qr=qrd.TOL_QR,
    )


def test_identification_fit_factorises_the_tall_matrix_once(monkeypatch):
    """The fit step and its quality metrics (std-dev, condition number) reuse ``R1``."""
    W, names, tau = _dependent_matrix(1)
    problem = FitProblem(tau=tau, W=W, W_reduced=W, active_params=tuple(names), idx_eliminated=())
    prior = dict.fromkeys(names, 1.0)
    expected_fit = base_fit.qr_base_fit(problem, prior, _settings())
    expected = base_fit.fit_quality(expected_fit)

    calls = _Calls(monkeypatch, small_rows=W.shape[1] + 1)
    fit = base_fit.qr_base_fit(problem, prior, _settings())
    quality = base_fit.fit_quality(fit)
    assert len(calls.tall) == 1 and calls.tall[0][0] == W.shape[0]
    assert np.array_equal(quality.std_relative, expected.std_relative)
    assert quality.condition_number == expected.condition_number

    monkeypatch.undo()  # the tall route, for the numbers
    assert np.array_equal(quality.std_relative, relative_stdev(fit.W_b, fit.phi_base, tau))
    assert quality.condition_number == pytest.approx(np.linalg.cond(fit.W_b), rel=1e-10)


def test_blocked_factorisation_reads_each_row_once_and_keeps_the_numbers(monkeypatch):
    """Above ``2 * _CHUNK_ROWS`` rows the QR runs by row blocks (TSQR), same results."""
    W, names, tau = _dependent_matrix(2, m=530)
    whole = qrd.QRDecomposer().decompose(W, names, tau=tau)
    monkeypatch.setattr(qrd, "_CHUNK_ROWS", 100)
    calls = _Calls(monkeypatch, small_rows=W.shape[1] + 1)
    blocked = qrd.QRDecomposer().decompose(W, names, tau=tau)
    block_rows = [shape[0] for shape in calls.tall[:-1]]
    assert block_rows == [100, 100, 100, 100, 100, 30]  # every row of W in one block
    assert calls.tall[-1] == (6 * (W.shape[1] + 1), W.shape[1] + 1)  # the stacked R_i
    assert blocked.base_indices == whole.base_indices
    assert blocked.base_param_expressions == whole.base_param_expressions
    assert np.array_equal(blocked.W_b, whole.W_b)
    for field in ("beta", "M", "phi_b"):
        assert _close(getattr(blocked, field), getattr(whole, field)), field
