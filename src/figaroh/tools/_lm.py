"""Levenberg–Marquardt least squares: a numpy port of MINPACK ``lmder``.

Solves ``min_x ½‖f(x)‖²`` for ``f: ℝⁿ → ℝᵐ`` (``m ≥ n``) with a user
Jacobian ``J(x) = ∂f/∂x`` (m×n), by the trust-region Levenberg–Marquardt
method of Moré (1978) as coded in MINPACK-1: ``lmder`` (outer/inner
iterations), ``lmpar`` (the Levenberg parameter λ for the trust radius Δ),
``qrfac`` (Householder QR with column pivoting), ``qrsolv`` (Givens
solve of ``[R; √λ D] p ≈ [Qᵀf; 0]``) and ``enorm`` (overflow-safe
Euclidean norm).

The defaults are those that ``scipy.optimize.least_squares(method="lm")``
passes to MINPACK: ``ftol = xtol = gtol = 1e-8``, ``factor = 100``,
automatic variable scaling (``diag`` from the Jacobian column norms,
MINPACK ``mode = 1``) and ``maxfev = 100·n`` unless ``max_nfev`` is given.
The returned record carries the fields of scipy's result (``x``, ``cost``,
``fun``, ``jac`` evaluated at the solution, ``grad``, ``optimality``,
``active_mask``, ``nfev``, ``njev``, ``status``, ``message``, ``success``)
with scipy's status codes, so this module is a drop-in for that one call
without importing ``scipy.optimize`` (whose import costs ~0.5 s).

Sums are accumulated left to right (``np.cumsum``) like MINPACK's loops,
so the iterates follow MINPACK's round-off closely.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import numpy as np

from figaroh.errors import FigarohError

__all__ = [
    "LM_BACKEND_ENV",
    "LMBackendError",
    "LeastSquaresResult",
    "least_squares_lm",
    "lm_backend",
]

#: Environment variable choosing the ``method="lm"`` solver of the calibration:
#: ``"figaroh"`` (default, this module) or ``"scipy"`` (scipy.optimize.least_squares).
LM_BACKEND_ENV = "FIGAROH_LM_BACKEND"

_EPSMCH = float(np.finfo(float).eps)
_DWARF = float(np.finfo(float).tiny)
_RDWARF = 3.834e-20
_RGIANT = 1.304e19

#: scipy's termination messages, by scipy status code.
TERMINATION_MESSAGES = {
    -1: "Improper input parameters status returned from `leastsq`",
    0: "The maximum number of function evaluations is exceeded.",
    1: "`gtol` termination condition is satisfied.",
    2: "`ftol` termination condition is satisfied.",
    3: "`xtol` termination condition is satisfied.",
    4: "Both `ftol` and `xtol` termination conditions are satisfied.",
}

#: MINPACK ``info`` → scipy status (6, 7, 8: tolerances too small, kept as 1..3
#: like MINPACK's meaning "no further progress possible").
_FROM_MINPACK = {0: -1, 1: 2, 2: 3, 3: 4, 4: 1, 5: 0, 6: 2, 7: 3, 8: 1}


def lm_backend() -> str:
    """The ``method="lm"`` backend named by ``FIGAROH_LM_BACKEND`` (``"figaroh"`` or ``"scipy"``).

    Raises:
        LMBackendError: The variable holds another value (set it to ``figaroh`` or
            ``scipy``, or unset it).
    """
    value = os.environ.get(LM_BACKEND_ENV, "figaroh").strip().lower() or "figaroh"
    if value not in ("figaroh", "scipy"):
        raise LMBackendError(f"{LM_BACKEND_ENV}={value!r}: expected 'figaroh' (default) or 'scipy'")
    return value


class LMBackendError(FigarohError, ValueError):
    """``FIGAROH_LM_BACKEND`` names no known backend."""


class LeastSquaresResult(dict):
    """Solver result with attribute access (the fields of scipy's ``OptimizeResult``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(name) from exc

    __setattr__ = dict.__setitem__  # type: ignore[assignment]
    __delattr__ = dict.__delitem__  # type: ignore[assignment]

    def __repr__(self) -> str:
        keys = ", ".join(sorted(self))
        return f"LeastSquaresResult({keys})"


def _sum(v: np.ndarray, axis: int = 0) -> Any:
    """Left-to-right sum along ``axis`` (MINPACK loop order); 0 when empty."""
    if v.shape[axis] == 0:
        return np.zeros(np.delete(v.shape, axis)) if v.ndim > 1 else 0.0
    return np.take(np.cumsum(v, axis=axis), -1, axis=axis)


def _rank(d: np.ndarray) -> int:
    """Index of the first zero of the triangular diagonal ``d`` (``len(d)`` when none)."""
    zeros = np.flatnonzero(d == 0.0)
    return int(zeros[0]) if zeros.size else d.size


def enorm(x: np.ndarray) -> float:
    """Euclidean norm ``‖x‖₂`` with MINPACK's scaling against over/underflow."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if n == 0:
        return 0.0
    xabs = np.abs(x)
    agiant = _RGIANT / n
    if np.all((xabs > _RDWARF) & (xabs < agiant)):
        return math.sqrt(float(_sum(xabs * xabs)))
    return _enorm_scaled(xabs.tolist(), agiant)


def _enorm_scaled(xabs: list, agiant: float) -> float:
    """MINPACK's three-sum norm of ``|x|`` (tiny, mid and giant entries scaled apart)."""
    s1 = s2 = s3 = x1max = x3max = 0.0
    for a in xabs:
        if _RDWARF < a < agiant:
            s2 += a * a
        elif a <= _RDWARF:
            if a > x3max:
                s3 = 1.0 + s3 * (x3max / a) ** 2
                x3max = a
            elif a != 0.0:
                s3 += (a / x3max) ** 2
        elif a > x1max:
            s1 = 1.0 + s1 * (x1max / a) ** 2
            x1max = a
        else:
            s1 += (a / x1max) ** 2
    return _enorm_combine(s1, s2, s3, x1max, x3max)


def _enorm_combine(s1: float, s2: float, s3: float, x1max: float, x3max: float) -> float:
    if s1 != 0.0:
        return x1max * math.sqrt(s1 + (s2 / x1max) / x1max)
    if s2 != 0.0:
        if s2 >= x3max:
            return math.sqrt(s2 * (1.0 + (x3max / s2) * (x3max * s3)))
        return math.sqrt(x3max * ((s2 / x3max) + (x3max * s3)))
    return x3max * math.sqrt(s3)


def qrfac(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Householder QR with column pivoting, in place: ``A P = Q R``.

    Args:
        a: (m, n) matrix, overwritten: strict upper triangle of ``R`` above the
            diagonal, Householder vectors on and below it.

    Returns:
        ``(ipvt, rdiag, acnorm)``: the permutation (column ``j`` of ``A P`` is
        column ``ipvt[j]`` of ``A``), the diagonal of ``R`` and the norms of the
        columns of the input ``A``.
    """
    m, n = a.shape
    acnorm = np.array([enorm(a[:, j]) for j in range(n)])
    rdiag = acnorm.copy()
    wa = rdiag.copy()
    ipvt = np.arange(n)
    for j in range(min(m, n)):
        kmax = j + int(np.argmax(rdiag[j:]))
        if kmax != j:
            a[:, [j, kmax]] = a[:, [kmax, j]]
            rdiag[kmax] = rdiag[j]
            wa[kmax] = wa[j]
            ipvt[[j, kmax]] = ipvt[[kmax, j]]
        ajnorm = enorm(a[j:, j])
        if ajnorm != 0.0:
            if a[j, j] < 0.0:
                ajnorm = -ajnorm
            a[j:, j] /= ajnorm
            a[j, j] += 1.0
            if j + 1 < n:
                _householder_update(a, j, rdiag, wa)
        rdiag[j] = -ajnorm
    return ipvt, rdiag, acnorm


def _householder_update(a: np.ndarray, j: int, rdiag: np.ndarray, wa: np.ndarray) -> None:
    """Apply reflector ``j`` to columns ``j+1:`` and downdate their norms."""
    v = a[j:, j]
    temp = _sum(v[:, None] * a[j:, j + 1 :], axis=0) / a[j, j]
    a[j:, j + 1 :] -= temp[None, :] * v[:, None]
    for k in range(j + 1, a.shape[1]):
        if rdiag[k] != 0.0:
            t = a[j, k] / rdiag[k]
            rdiag[k] *= math.sqrt(max(0.0, 1.0 - t * t))
            if 0.05 * (rdiag[k] / wa[k]) ** 2 <= _EPSMCH:
                rdiag[k] = enorm(a[j + 1 :, k])
                wa[k] = rdiag[k]


def qrsolv(
    r: np.ndarray, ipvt: np.ndarray, diag: np.ndarray, qtb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``[R; D] z ≈ [Qᵀb; 0]`` (``D = diag``, permuted by ``ipvt``) by Givens rotations.

    Args:
        r: (n, n) with ``R`` in its upper triangle (kept); its strict lower
            triangle is overwritten with the transpose of the triangular factor
            ``S`` of ``Pᵀ(AᵀA + D²)P = SᵀS``.
        ipvt: Column permutation from :func:`qrfac`.
        diag: Diagonal of ``D``.
        qtb: First n components of ``Qᵀb``.

    Returns:
        ``(x, sdiag)``: the solution and the diagonal of ``S``.
    """
    n = r.shape[0]
    x = np.diag(r).copy()
    for j in range(n):
        r[j:, j] = r[j, j:]
    wa = np.array(qtb, dtype=float, copy=True)
    sdiag = np.zeros(n)
    for j in range(n):
        dl = diag[ipvt[j]]
        if dl != 0.0:
            sdiag[j:] = 0.0
            sdiag[j] = dl
            _eliminate_row(r, sdiag, wa, j)
        sdiag[j] = r[j, j]
        r[j, j] = x[j]
    nsing = _rank(sdiag)
    wa[nsing:] = 0.0
    for j in range(nsing - 1, -1, -1):
        s = _sum(r[j + 1 : nsing, j] * wa[j + 1 : nsing])
        wa[j] = (wa[j] - s) / sdiag[j]
    out = np.empty(n)
    out[ipvt] = wa
    return out, sdiag


def _eliminate_row(r: np.ndarray, sdiag: np.ndarray, wa: np.ndarray, j: int) -> None:
    """Rotate the row ``sdiag`` (non-zero from ``j``) into the lower triangle of ``r``."""
    n = r.shape[0]
    qtbpj = 0.0
    for k in range(j, n):
        sk = sdiag[k]
        if sk == 0.0:
            continue
        rkk = r[k, k]
        if abs(rkk) < abs(sk):
            cotan = rkk / sk
            sin = 0.5 / math.sqrt(0.25 + 0.25 * cotan * cotan)
            cos = sin * cotan
        else:
            tan = sk / rkk
            cos = 0.5 / math.sqrt(0.25 + 0.25 * tan * tan)
            sin = cos * tan
        r[k, k] = cos * rkk + sin * sk
        temp = cos * wa[k] + sin * qtbpj
        qtbpj = -sin * wa[k] + cos * qtbpj
        wa[k] = temp
        if k + 1 < n:
            rk = r[k + 1 :, k].copy()
            sd = sdiag[k + 1 :]
            r[k + 1 :, k] = cos * rk + sin * sd
            sdiag[k + 1 :] = -sin * rk + cos * sd


def lmpar(
    r: np.ndarray,
    ipvt: np.ndarray,
    diag: np.ndarray,
    qtb: np.ndarray,
    delta: float,
    par: float,
) -> tuple[float, np.ndarray]:
    """Levenberg parameter λ such that the step ``p`` satisfies ``‖D p‖ ≈ Δ``.

    Finds ``λ ≥ 0`` with ``|‖D p(λ)‖ − Δ| ≤ 0.1 Δ`` (or ``λ = 0`` when the
    Gauss–Newton step is inside the trust region), where ``p(λ)`` solves
    ``(JᵀJ + λ D²) p = −Jᵀf`` through ``R`` (at most 10 iterations).

    Args:
        r: (n, n) ``R`` of :func:`qrfac` in the upper triangle (lower triangle
            overwritten, see :func:`qrsolv`).
        ipvt: Column permutation.
        diag: Variable scaling ``D``.
        qtb: First n components of ``Qᵀf``.
        delta: Trust radius Δ (> 0).
        par: Initial estimate of λ.

    Returns:
        ``(par, x)``: λ and the (un-negated) step ``x`` with ``J x ≈ f``.
    """
    wa1 = np.array(qtb, dtype=float, copy=True)
    nsing = _rank(np.diag(r))
    wa1[nsing:] = 0.0
    for j in range(nsing - 1, -1, -1):
        wa1[j] /= r[j, j]
        if j:
            wa1[:j] -= r[:j, j] * wa1[j]
    x = np.empty(r.shape[0])
    x[ipvt] = wa1
    wa2 = diag * x
    dxnorm = enorm(wa2)
    fp = dxnorm - delta
    if fp <= 0.1 * delta:
        return 0.0, x
    parl = _lower_bound(r, ipvt, diag, wa2, dxnorm, fp, delta) if nsing == r.shape[0] else 0.0
    gnorm = enorm(_sum(np.triu(r) * qtb[:, None], axis=0) / diag[ipvt])
    paru = gnorm / delta
    if paru == 0.0:
        paru = _DWARF / min(delta, 0.1)
    par = min(max(par, parl), paru)
    if par == 0.0:
        par = gnorm / dxnorm
    return _iterate_par(r, ipvt, diag, qtb, delta, (par, parl, paru), fp)


def _lower_bound(r, ipvt, diag, wa2, dxnorm, fp, delta) -> float:
    """Newton lower bound ``λ_l`` on λ (full-rank ``R`` only)."""
    wa1 = diag[ipvt] * (wa2[ipvt] / dxnorm)
    for j in range(r.shape[0]):
        wa1[j] = (wa1[j] - _sum(r[:j, j] * wa1[:j])) / r[j, j]
    temp = enorm(wa1)
    return ((fp / delta) / temp) / temp


def _iterate_par(r, ipvt, diag, qtb, delta, bounds, fp) -> tuple[float, np.ndarray]:
    """Safeguarded Newton iterations on λ within ``[λ_l, λ_u]`` (at most 10)."""
    par, parl, paru = bounds
    n = r.shape[0]
    for it in range(1, 11):
        if par == 0.0:
            par = max(_DWARF, 0.001 * paru)
        x, sdiag = qrsolv(r, ipvt, math.sqrt(par) * diag, qtb)
        wa2 = diag * x
        dxnorm = enorm(wa2)
        temp = fp
        fp = dxnorm - delta
        if abs(fp) <= 0.1 * delta or (parl == 0.0 and fp <= temp and temp < 0.0) or it == 10:
            break
        wa1 = diag[ipvt] * (wa2[ipvt] / dxnorm)
        for j in range(n):
            wa1[j] /= sdiag[j]
            if j + 1 < n:
                wa1[j + 1 :] -= r[j + 1 :, j] * wa1[j]
        temp = enorm(wa1)
        parc = ((fp / delta) / temp) / temp
        if fp > 0.0:
            parl = max(parl, par)
        if fp < 0.0:
            paru = min(paru, par)
        par = max(parl, par + parc)
    return par, x


class _State:
    """Mutable iterate of :func:`least_squares_lm` (MINPACK's work arrays)."""

    def __init__(self, x: np.ndarray, fvec: np.ndarray) -> None:
        self.x = x
        self.fvec = fvec
        self.fnorm = enorm(fvec)
        self.nfev = 1
        self.njev = 0
        self.par = 0.0
        self.delta = 0.0
        self.xnorm = 0.0
        self.diag: np.ndarray | None = None


def _as_vector(f: Any) -> np.ndarray:
    return np.atleast_1d(np.asarray(f, dtype=float))


def _as_matrix(J: Any) -> np.ndarray:
    return np.atleast_2d(np.asarray(J, dtype=float))


def _outer_step(st: _State, J: np.ndarray, first: bool, factor: float):
    """QR of ``J``, scaling and ``Qᵀf``; returns ``(r, ipvt, qtf, acnorm, gnorm)``."""
    n = J.shape[1]
    a = np.array(J, dtype=float, order="C", copy=True)
    ipvt, rdiag, acnorm = qrfac(a)
    if first:
        st.diag = np.where(acnorm == 0.0, 1.0, acnorm)
        st.xnorm = enorm(st.diag * st.x)
        st.delta = factor * st.xnorm
        if st.delta == 0.0:
            st.delta = factor
    wa4 = st.fvec.copy()
    qtf = np.empty(n)
    for j in range(n):
        ajj = a[j, j]
        if ajj != 0.0:
            temp = -_sum(a[j:, j] * wa4[j:]) / ajj
            wa4[j:] += a[j:, j] * temp
        a[j, j] = rdiag[j]
        qtf[j] = wa4[j]
    r = a[:n, :n].copy()
    gnorm = 0.0
    if st.fnorm != 0.0:
        s = _sum(np.triu(r) * (qtf / st.fnorm)[:, None], axis=0)
        an = acnorm[ipvt]
        ok = an != 0.0
        if np.any(ok):
            gnorm = float(np.max(np.abs(s[ok] / an[ok])))
    return r, ipvt, qtf, acnorm, gnorm


def _inner_loop(st, fun, r, ipvt, qtf, gnorm, first, tol, maxfev) -> int:
    """MINPACK's inner iterations at one Jacobian; returns ``info`` (0: new Jacobian)."""
    upper = np.triu(r)
    while True:
        st.par, p = lmpar(r, ipvt, st.diag, qtf, st.delta, st.par)
        p = -p
        xt = st.x + p
        pnorm = enorm(st.diag * p)
        if first:
            st.delta = min(st.delta, pnorm)
        ft = _as_vector(fun(xt))
        st.nfev += 1
        fnorm1 = enorm(ft)
        actred = -1.0
        if 0.1 * fnorm1 < st.fnorm:
            actred = 1.0 - (fnorm1 / st.fnorm) ** 2
        wa3 = _sum(upper * p[ipvt][None, :], axis=1)
        temp1 = enorm(wa3) / st.fnorm
        temp2 = (math.sqrt(st.par) * pnorm) / st.fnorm
        prered = temp1**2 + temp2**2 / 0.5
        dirder = -(temp1**2 + temp2**2)
        ratio = actred / prered if prered != 0.0 else 0.0
        _update_radius(st, ratio, actred, dirder, fnorm1, pnorm)
        if ratio >= 1e-4:
            st.x, st.fvec, st.fnorm = xt, ft, fnorm1
            st.xnorm = enorm(st.diag * xt)
            first = False
        info = _termination(st, (actred, prered, ratio), gnorm, tol, maxfev)
        if info or ratio >= 1e-4:
            return info


def _termination(st: _State, reductions, gnorm: float, tol, maxfev: int) -> int:
    """MINPACK's convergence (1–3) and termination (5–8) tests; 0 to go on."""
    actred, prered, ratio = reductions
    ftol, xtol = tol
    fconv = abs(actred) <= ftol and prered <= ftol and 0.5 * ratio <= 1.0
    if st.delta <= xtol * st.xnorm:
        return 3 if fconv else 2
    if fconv:
        return 1
    # Later tests override earlier ones, as in MINPACK.
    info = 0
    if st.nfev >= maxfev:
        info = 5
    if abs(actred) <= _EPSMCH and prered <= _EPSMCH and 0.5 * ratio <= 1.0:
        info = 6
    if st.delta <= _EPSMCH * st.xnorm:
        info = 7
    if gnorm <= _EPSMCH:
        info = 8
    return info


def _update_radius(st: _State, ratio, actred, dirder, fnorm1, pnorm) -> None:
    """MINPACK's trust-radius Δ and λ update after a trial step."""
    if ratio <= 0.25:
        temp = 0.5 if actred >= 0.0 else 0.5 * dirder / (dirder + 0.5 * actred)
        if 0.1 * fnorm1 >= st.fnorm or temp < 0.1:
            temp = 0.1
        st.delta = temp * min(st.delta, pnorm / 0.1)
        st.par = st.par / temp
    elif st.par == 0.0 or ratio >= 0.75:
        st.delta = pnorm / 0.5
        st.par = 0.5 * st.par


def _lmder(fun, jac, x0, f0, ftol, xtol, gtol, maxfev, factor) -> tuple[_State, int]:
    """MINPACK ``lmder`` driver from ``f0 = f(x0)``; returns the final state and ``info``."""
    st = _State(x0.copy(), f0)
    first = True
    while True:
        J = _as_matrix(jac(st.x))
        st.njev += 1
        r, ipvt, qtf, acnorm, gnorm = _outer_step(st, J, first, factor)
        if gnorm <= gtol:
            return st, 4
        st.diag = np.maximum(st.diag, acnorm)
        info = _inner_loop(st, fun, r, ipvt, qtf, gnorm, first, (ftol, xtol), maxfev)
        if info:
            return st, info
        first = False


def least_squares_lm(
    fun: Callable[[np.ndarray], Any],
    x0: Any,
    jac: Callable[[np.ndarray], Any],
    ftol: float = 1e-8,
    xtol: float = 1e-8,
    gtol: float = 1e-8,
    max_nfev: int | None = None,
    factor: float = 100.0,
) -> LeastSquaresResult:
    """Minimise ``½‖f(x)‖²`` like ``scipy.optimize.least_squares(method="lm", jac=jac)``.

    Args:
        fun: Residuals ``f(x)`` (m,) at the parameters ``x`` (n,).
        x0: Initial parameters (n,).
        jac: Jacobian ``∂f/∂x`` (m, n) at ``x``.
        ftol: Relative reduction of the cost below which the fit stops.
        xtol: Relative change of the scaled ``x`` below which the fit stops.
        gtol: Largest cosine between ``f`` and a Jacobian column below which
            the fit stops.
        max_nfev: Maximum number of evaluations of ``fun`` (default ``100·n``).
        factor: Initial trust radius Δ₀ = factor·‖D x0‖ (``factor`` when 0).

    Returns:
        LeastSquaresResult with ``x``, ``cost = ½‖f‖²``, ``fun``, ``jac`` (at
        ``x``), ``grad = Jᵀf``, ``optimality = ‖Jᵀf‖∞``, ``active_mask`` (zeros),
        ``nfev``, ``njev``, ``status`` (scipy codes: 0 max_nfev reached, 1 gtol,
        2 ftol, 3 xtol, 4 ftol and xtol), ``message`` and ``success``
        (``status > 0``).

    Raises:
        ValueError: ``x0`` is not 1-D, ``f(x0)`` is not finite, there are fewer
            residuals than parameters, or ``max_nfev`` is not positive (same
            messages as scipy).
    """
    x0 = np.atleast_1d(np.asarray(x0, dtype=float)).copy()
    if x0.ndim > 1:
        raise ValueError("`x0` must have at most 1 dimension.")
    if max_nfev is not None and max_nfev <= 0:
        raise ValueError("`max_nfev` must be None or positive integer.")
    f0 = _as_vector(fun(x0))
    if f0.ndim != 1:
        raise ValueError(f"`fun` must return at most 1-d array_like. f0.shape: {f0.shape}")
    if not np.all(np.isfinite(f0)):
        raise ValueError("Residuals are not finite in the initial point.")
    n, m = x0.size, f0.size
    if m < n:
        raise ValueError(
            "Method 'lm' doesn't work when the number of residuals is less than "
            "the number of variables."
        )
    maxfev = 100 * n if max_nfev is None else int(max_nfev)
    st, info = _lmder(fun, jac, x0, f0, ftol, xtol, gtol, maxfev, factor)
    f = st.fvec
    J = _as_matrix(jac(st.x))
    g = J.T.dot(f)
    status = _FROM_MINPACK[info]
    return LeastSquaresResult(
        x=st.x,
        cost=0.5 * np.dot(f, f),
        fun=f,
        jac=J,
        grad=g,
        optimality=float(np.linalg.norm(g, ord=np.inf)),
        active_mask=np.zeros_like(x0, dtype=int),
        nfev=st.nfev,
        njev=st.njev,
        status=status,
        message=TERMINATION_MESSAGES[status],
        success=status > 0,
    )
