r"""QR decomposition utilities for robot parameter identification.

The joint-torque model of a rigid robot is linear in its dynamic parameters,
``tau = W_e @ theta_r`` where ``W_e`` (shape ``(m, n)``) is the reduced
regressor (all-zero columns already removed) and ``theta_r`` the remaining
standard parameters, ordered as ``params_r``.  ``W_e`` is rank deficient: some
columns are linear combinations of others.  This module

* identifies a set of *base parameters* (a full-rank subset of ``r`` columns),
* expresses each base parameter as a linear combination of the remaining
  parameters through a mapping matrix ``M`` (shape ``(r, n)``)

.. math::

    \phi_{base} = M\,\theta_r, \qquad W_e = W_b\,M, \qquad
    \tau = W_e\,\theta_r = W_b\,\phi_{base},

where ``W_b`` (shape ``(m, r)``) is the base regressor.  Columns of ``M``
follow ``params_r``; rows follow the returned base-parameter expressions.

Choice of the base columns
--------------------------
The base columns are chosen greedily (a column-pivoted Gram–Schmidt that does
not depend on the order of the columns).  With ``w_j`` the columns of ``W_e``
and ``Q_k`` an orthonormal basis of the ``k`` columns chosen so far, each step
computes the residual norms ``rho_j = ||(I - Q_k Q_kᵀ) w_j||`` (units of the
regressor columns) of the remaining columns and

* stops when ``max_j rho_j <= threshold``;
* otherwise treats every column with ``rho_j >= (1 - 1e-6) max_j rho_j`` as
  tied (:data:`TIE_RTOL`) and chooses, among the tied columns, the one whose
  parameter *name* is lexicographically smallest (Python string order, so
  ``"Ixx2" < "mz3"``).

The *pivot order* is the sequence of chosen columns followed by the remaining
ones sorted by name; permuting the columns of ``W_e`` (and ``params_r`` with
them) permutes the chosen indices accordingly and changes nothing else.
``threshold`` is ``tolerance`` or, with ``relative_tolerance``,
``max(relative_tolerance * max_j ||w_j||, tolerance)`` (the absolute tolerance
stays a floor).  The tall matrix is read once: one tall-skinny QR
``[W_e | tau] = Q_0 [R_0 | Q_0ᵀtau]`` preserves every inner product of the
columns, so the selection and both workflows below run on the small ``R_0``
(see "Cost" below).
``QRDecomposer(deterministic=False)`` instead takes the pivot order of
LAPACK's column-pivoted QR (``?geqp3``) of ``W_e``, whose ties are settled by
its column swaps and round-off (the choice then depends on the column order).

Two workflows are available:

* **double QR** (default, :meth:`QRDecomposer.double_decomposition`): the
  chosen columns, sorted ascending, are the base columns and the others,
  ascending, the regrouped ones; a second QR of
  ``[W_base | W_regroup] = Q [R1 R2]`` gives ``beta = R1^{-1} R2`` and
  ``phi_b = R1^{-1} Q1^T tau``.  ``M`` has the identity on the base columns
  and ``beta`` on the regrouped ones; its rows follow the ascending base
  columns.
* **pivoting** (:meth:`QRDecomposer.decompose_with_pivoting`): the QR of
  ``W_e[:, pivot_order]``; the first ``rank`` pivoted columns are the base set
  and the rows of ``M``/``phi_b``/``W_b`` follow the pivot order
  (:attr:`QRResult.base_indices` still lists them ascending).

All numbers are kept at full float64 precision (``phi_b``, ``beta``, ``M``,
the values of the ``base_parameters`` dicts); only the expression strings are
rounded.

Cost: :meth:`QRDecomposer.decompose`, :func:`get_baseParams`,
:func:`get_baseIndex` and the ``get_base_mapping_matrix*`` methods read the
tall matrix in one tall-skinny QR (``R_0`` only, ``Q_0`` is never formed;
above 8192 rows by cache-sized blocks of rows whose ``R`` factors are then
reduced together, so the tall matrix is never copied whole) plus a copy of the
base columns ``W_b``; everything else is ``O(n^3)`` work on ``R_0``.  The
second QR is the QR of the column-permuted ``R_0[:, perm] = Q' R``
(``[W_base | W_regroup] = (Q_0 Q') R``), so ``beta = R_1^{-1} R_2``,
``phi_b = R_1^{-1} Q'_1{}^T (Q_0^T tau)``, ``cond(W_b) = cond(R_1)`` and the
covariance ``sigma^2 (W_b^T W_b)^{-1} = sigma^2 R_1^{-1} R_1^{-T}`` all come
from the small factor.  The tuple-returning methods that give ``phi_b``
(:meth:`QRDecomposer.double_decomposition`,
:meth:`QRDecomposer.decompose_with_pivoting`, :func:`double_QR`,
:func:`QR_pivoting`) instead redo the second QR on the tall matrix as figaroh
1.0.2 does, so their values match 1.0.2 bit for bit on the same BLAS; the two
routes agree to round-off (about 1e-13 relative on well-conditioned problems).

Base-parameter expression format (a contract parsed by other modules)
---------------------------------------------------------------------
Each expression is a single line with **no other content**::

    <base_name>[ <sign> <coef>*<name>]...

* ``<base_name>`` is the name (from ``params_r``) of the base column;
* one `` <sign> <coef>*<name>`` term follows for every regrouped parameter
  ``<name>`` whose coefficient satisfies ``|beta| > beta_tolerance``, in the
  order of the regrouped parameters (ascending columns for the double QR, the
  pivot order for the pivoting QR); a coefficient that rounds to 0 is omitted;
* ``<sign>`` is ``+`` or ``-`` (the sign of ``beta``), surrounded by single
  spaces;
* ``<coef>`` is ``|beta|`` rounded to 6 decimals and written as Python writes
  that float (``repr(round(abs(beta), 6))``): ``1.0``, ``0.333333``,
  ``0.00081``, ``1.2e-05``, ``2e-06``, ``1234.56789``.

Example: ``"Ixx_shoulder2_joint + 1.0*Ixx_shoulder1_joint - 0.5*Iyy_elbow_joint"``
means ``phi = Ixx_shoulder2_joint + 1.0*Ixx_shoulder1_joint - 0.5*Iyy_elbow_joint``.
The regular expression :data:`EXPRESSION_TERM_PATTERN` matches one term and
:func:`parse_base_param_expression` parses a whole expression.  Parameter
names must therefore contain neither whitespace nor ``*`` (checked).  The
printed coefficients are display values; use ``M`` for full precision.

From base parameters back to standard parameters
------------------------------------------------
:func:`redistribute_min_norm` returns the minimum-norm standard parameters
``theta = M^+ phi_base`` (so ``W_e theta = W_b phi_base``) and
:func:`propagate_covariance_min_norm` the matching covariance
``M^+ C_base M^{+T}``.

Note:
    In FIGAROH, ``params_r`` is the list of standard parameter names remaining
    after column elimination, not necessarily the complete standard set.  Use
    :meth:`QRDecomposer.expand_mapping_matrix_to_full` to obtain an ``M``
    defined over a full, canonical parameter ordering.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Sequence, Tuple, Union, overload

import numpy as np

from figaroh.tools.exceptions import FigarohToolsError, RankDeficiencyError

logger = logging.getLogger(__name__)

__all__ = [
    "TOL_QR",
    "TOL_BETA",
    "TIE_RTOL",
    "EXPRESSION_TERM_PATTERN",
    "ParameterNameError",
    "QRResult",
    "QRDecomposer",
    "QR_pivoting",
    "double_QR",
    "get_baseParams",
    "get_baseIndex",
    "build_baseRegressor",
    "cond_num",
    "deterministic_column_pivots",
    "parse_base_param_expression",
    "redistribute_min_norm",
    "propagate_covariance_min_norm",
]

#: Default absolute threshold on the residual norm below which a column is dependent.
TOL_QR: float = 1e-8
#: Coefficients with ``|beta| <= TOL_BETA`` are omitted from expression strings.
TOL_BETA: float = 1e-6
#: Relative width of a tie between residual norms in the greedy base-column choice.
TIE_RTOL: float = 1e-6
#: Decimals of the coefficients printed in expression strings.
_EXPR_DECIMALS = 6

_COEF = r"\d+(?:\.\d+)?(?:e[+-]\d+)?"
#: Regular expression matching one regrouped term `` + c*name`` of an expression.
EXPRESSION_TERM_PATTERN = re.compile(rf" (?P<sign>[+-]) (?P<coef>{_COEF})\*(?P<name>[^\s*]+)")
_EXPRESSION_PATTERN = re.compile(rf"(?P<base>[^\s*]+)(?P<terms>(?: [+-] {_COEF}\*[^\s*]+)*)")


_PIVOTING_ALIASES = {"pivoting", "pivot", "qr_pivoting", "qr-pivoting"}
_DOUBLE_ALIASES = {"double", "double_qr", "double-qr"}


class ParameterNameError(FigarohToolsError, KeyError, ValueError):
    """A parameter name is missing from a mapping or cannot be used in expressions.

    Subclasses both ``KeyError`` (a lookup failed) and ``ValueError`` (bad
    argument) so either ``except`` clause keeps working.
    """

    def __str__(self) -> str:  # KeyError would repr-quote the message
        return str(self.args[0]) if self.args else ""


# ---------------------------------------------------------------------------
# Result container
# ---------------------------------------------------------------------------
@dataclass(repr=False, eq=False)
class QRResult:
    """Structured output of a QR base-parameter decomposition.

    All numerical fields are stored at full float64 precision. Rounding for
    display is done only at the expression-building stage.

    Attributes:
        rank: Identified numerical rank of the regressor.
        base_indices: Column indices into ``params_r`` that form the
            independent (base) set, ascending.  For the double path the rows
            of ``M``/``phi_b``/``W_b`` follow them, so
            ``W_e[:, base_indices] @ phi_b ≈ tau``; for the pivoting path the
            rows follow ``pivot_order[:rank]`` instead.
        pivot_order: Full pivot permutation of the pivoting path: the base
            columns in the order they were chosen, then the other columns
            sorted by name (see the module docstring); ``None`` for the
            double path.
        W_b: Base regressor matrix, shape ``(m, rank)``.
        beta: Dependency coefficient matrix, shape ``(rank, n - rank)``.
            Full precision — not rounded.
        M: Base mapping matrix satisfying ``phi_base = M @ theta_r``, shape
            ``(rank, n)``.
        base_param_expressions: Human-readable expression strings, length
            ``rank`` (format in the module docstring).
        phi_b: Identified base-parameter values (units of the parameters,
            e.g. [kg], [kg·m], [kg·m²]), shape ``(rank,)``; zeros when
            computed without a ``tau`` vector.
        phi_b_nom: Nominal base-parameter values ``M @ theta_std`` from the
            ``params_std`` prior, shape ``(rank,)``; ``None`` when
            ``params_std`` was not provided and always for the pivoting path.
        method: ``"pivoting"`` or ``"double"``.
        diag_R: Absolute diagonal of ``R`` at the factorisation point, shape
            ``(min(m, n),)``. Useful for stability diagnostics.
        cond_R1: Condition number (2-norm) of the ``R[:rank, :rank]`` block.
        R1: The ``R[:rank, :rank]`` block itself (``W_bᵀW_b = R1ᵀR1``), for
            covariance computations without re-factorising ``W_b``.
    """

    rank: int
    base_indices: List[int]
    pivot_order: List[int] | None
    W_b: np.ndarray
    beta: np.ndarray
    M: np.ndarray
    base_param_expressions: List[str]
    phi_b: np.ndarray | None
    phi_b_nom: np.ndarray | None
    method: str
    diag_R: np.ndarray
    cond_R1: float
    R1: np.ndarray | None = None

    def __repr__(self) -> str:
        return (
            f"QRResult(method={self.method!r}, rank={self.rank}, "
            f"n_params={self.M.shape[1]}, n_rows={self.W_b.shape[0]}, "
            f"cond_R1={self.cond_R1:.3g}, phi_b={'set' if self.phi_b is not None else None}, "
            f"phi_b_nom={'set' if self.phi_b_nom is not None else None})"
        )

    def __eq__(self, other: object) -> bool:
        """Exact (bitwise) equality of every field."""
        if not isinstance(other, QRResult):
            return NotImplemented
        for name in self.__dataclass_fields__:
            a, b = getattr(self, name), getattr(other, name)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if a is None or b is None or not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]


# ---------------------------------------------------------------------------
# Validation and formatting helpers
# ---------------------------------------------------------------------------
@overload
def _check_tolerance(name: str, value: float | None, allow_none: Literal[False] = ...) -> float: ...


@overload
def _check_tolerance(name: str, value: float | None, allow_none: bool) -> float | None: ...


def _check_tolerance(name: str, value: float | None, allow_none: bool = False) -> float | None:
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"{name} must be a non-negative finite float, got None")
    try:
        value = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a non-negative finite float, got {value!r}") from exc
    if not np.isfinite(value) or value < 0.0:
        raise ValueError(f"{name} must be a non-negative finite float, got {value!r}")
    return value


def _validate_regressor(W_e: Any, name: str = "W_e") -> np.ndarray:
    try:
        W = np.asarray(W_e, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric 2-D array: {exc}") from exc
    if W.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (m samples x n parameters), got shape {W.shape}"
        )
    if W.shape[0] == 0 or W.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {W.shape}")
    # A NaN or inf entry makes the sum non-finite: one pass without a boolean
    # temporary; only a non-finite sum (a bad entry or an overflow of finite
    # ones) runs the element-wise test.
    with np.errstate(over="ignore", invalid="ignore"):
        finite_sum = np.isfinite(W.sum())
    if not finite_sum and not np.all(np.isfinite(W)):
        bad = np.argwhere(~np.isfinite(W))[0]
        raise ValueError(
            f"{name} contains NaN or inf (first at row {bad[0]}, column {bad[1]}); "
            "clean or filter the data before the QR decomposition"
        )
    return W


def _validate_params_r(
    params_r: Any, n: int, field: str = "params_r", matrix: str = "W_e"
) -> List[str]:
    if isinstance(params_r, (str, bytes)) or not hasattr(params_r, "__iter__"):
        raise ValueError(
            f"{field} must be a list of parameter names, got {type(params_r).__name__}"
        )
    names = list(params_r)
    if len(names) != n:
        raise ValueError(
            f"{field} has {len(names)} names but {matrix} has {n} columns; "
            "pass one name per regressor column (after zero-column elimination)"
        )
    for name in names:
        if not isinstance(name, str) or not name or re.search(r"[\s*]", name):
            raise ParameterNameError(
                f"{field} contains an invalid parameter name {name!r}: names must be "
                "non-empty strings without whitespace or '*'"
            )
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise ParameterNameError(f"{field} contains duplicated names: {', '.join(dup)}")
    return names


def _validate_tau(tau: Any, m: int) -> np.ndarray:
    try:
        t = np.asarray(tau, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tau must be a numeric vector: {exc}") from exc
    if t.ndim == 2 and 1 in t.shape:
        t = t.reshape(-1)
    if t.ndim != 1 or t.shape[0] != m:
        raise ValueError(
            f"tau must be a vector of length {m} (one entry per regressor row, "
            f"joint-major), got shape {np.shape(tau)}"
        )
    if not np.all(np.isfinite(t)):
        raise ValueError(
            f"tau contains NaN or inf (first at index {int(np.argmax(~np.isfinite(t)))})"
        )
    return t


def _params_std_vector(params_std: Any, names: Sequence[str]) -> np.ndarray:
    if not hasattr(params_std, "__getitem__") or not hasattr(params_std, "keys"):
        raise ValueError(
            f"params_std must be a mapping parameter name -> value, got {type(params_std).__name__}"
        )
    missing = [name for name in names if name not in params_std]
    if missing:
        raise ParameterNameError(
            "params_std has no value for parameter(s) "
            f"{', '.join(missing)}; provide a value for every name in params_r"
        )
    values = np.array([float(params_std[name]) for name in names], dtype=float)
    if not np.all(np.isfinite(values)):
        bad = [n for n, v in zip(names, values, strict=True) if not np.isfinite(v)]
        raise ValueError(f"params_std contains NaN or inf for {', '.join(bad)}")
    return values


def _normalise_method(method: Any) -> str:
    if not isinstance(method, str):
        raise ValueError(f"Unknown method={method!r}. Expected 'double' or 'pivoting'.")
    key = method.strip().lower()
    if key in _DOUBLE_ALIASES:
        return "double"
    if key in _PIVOTING_ALIASES:
        return "pivoting"
    raise ValueError(f"Unknown method={method!r}. Expected 'double' or 'pivoting'.")


def _format_coefficient(value: float) -> str:
    """``|value|`` rounded to 6 decimals, written as Python writes it (``repr``).

    E.g. ``1.0``, ``0.333333``, ``0.00081``, ``1.2e-05``, ``2e-06``.
    """
    return repr(round(abs(float(value)), _EXPR_DECIMALS))


def parse_base_param_expression(expression: str) -> Tuple[str, List[Tuple[float, str]]]:
    """Parse a base-parameter expression string produced by this module.

    Args:
        expression: e.g. ``"Ixx_2 + 1.0*Ixx_1 - 0.5*Iyy_3"``.

    Returns:
        ``(base_name, terms)`` where ``terms`` is a list of
        ``(signed_coefficient, name)``, e.g. ``("Ixx_2", [(1.0, "Ixx_1"), (-0.5, "Iyy_3")])``.

    Raises:
        ValueError: if the string does not follow the documented format.
    """
    if not isinstance(expression, str):
        raise ValueError(f"expression must be a string, got {type(expression).__name__}")
    match = _EXPRESSION_PATTERN.fullmatch(expression)
    if match is None:
        raise ValueError(
            f"expression {expression!r} does not follow the format "
            "'<base> [+|-] <coef>*<name> ...' documented in figaroh.tools.qrdecomposition"
        )
    terms = [
        ((1.0 if t.group("sign") == "+" else -1.0) * float(t.group("coef")), t.group("name"))
        for t in EXPRESSION_TERM_PATTERN.finditer(match.group("terms"))
    ]
    return match.group("base"), terms


def _greedy_columns(
    R0: np.ndarray, names: Sequence[str], threshold: float, tie_rtol: float = TIE_RTOL
) -> List[int]:
    """Greedy, column-order independent choice of independent columns.

    Column-pivoted Householder QR of the small ``R0`` (same column geometry as
    the regressor) with the pivot rule of the module docstring: at step ``i``
    the residual norms ``rho_j`` of the remaining columns are the norms of the
    trailing block (recomputed, not downdated, so ties are judged on accurate
    values); the columns with ``rho_j >= (1 - tie_rtol) max rho`` are tied and
    the tie goes to the smallest name; the loop stops when
    ``max rho <= threshold``.

    Args:
        R0: ``R`` factor (``k × n``) of the regressor.
        names: Column names (tie-breaking key), length ``n``.
        threshold: Residual norm at or below which a column is dependent.
        tie_rtol: Relative width of a tie.

    Returns:
        Chosen column indices, in the order they were chosen.
    """
    A = np.array(R0, dtype=float, order="F")
    k, n = A.shape
    name_rank = np.empty(n, dtype=int)
    name_rank[sorted(range(n), key=names.__getitem__)] = np.arange(n)
    cols = np.arange(n)  # cols[j]: original index of working column j
    chosen: List[int] = []
    for i in range(min(k, n)):
        trailing = A[i:, i:]
        rho = np.sqrt(np.einsum("ij,ij->j", trailing, trailing))
        rho_max = float(rho.max())
        if rho_max <= threshold:
            break
        tied = np.flatnonzero(rho >= (1.0 - tie_rtol) * rho_max)
        p = i + int(tied[np.argmin(name_rank[cols[i + tied]])])
        if p != i:
            A[:, [i, p]] = A[:, [p, i]]
            cols[[i, p]] = cols[[p, i]]
        chosen.append(int(cols[i]))
        # Householder reflector zeroing A[i+1:, i], applied to the trailing columns.
        v = np.array(A[i:, i])
        v[0] += np.copysign(rho[p - i], v[0])
        vv = float(v @ v)
        if i + 1 < n and vv > 0.0:
            block = A[i:, i + 1 :]
            block -= np.outer(v, (2.0 / vv) * (v @ block))
    return chosen


def deterministic_column_pivots(
    W: Any,
    names: Sequence[str] | None = None,
    *,
    tol: float = TOL_QR,
    relative_tol: float | None = None,
    tie_rtol: float = TIE_RTOL,
) -> np.ndarray:
    """Column pivot order of ``W`` that does not depend on the column order.

    The order used by the pivoting QR (``QRResult.pivot_order``): at each step
    the remaining column with the largest residual norm
    ``rho_j = ||(I - Q_k Q_kᵀ) w_j||`` after projecting out the ``k`` columns
    already chosen; columns with ``rho_j >= (1 - tie_rtol) max_j rho_j`` are
    tied and the tie goes to the smallest name (Python string order). The
    choice stops when ``max_j rho_j <= threshold`` with ``threshold = tol``, or
    ``max(relative_tol * max_j ||w_j||, tol)`` when ``relative_tol`` is given;
    the columns not chosen follow, sorted by name. Permuting the columns of
    ``W`` (and ``names`` with them) permutes the result accordingly. It
    replaces the pivots ``P`` of ``scipy.linalg.qr(W, pivoting=True)``,
    whose ties depend on the column order and on round-off.

    Args:
        W: Matrix ``(m, n)`` (a reduced regressor), finite.
        names: Column names, length ``n``, unique, without whitespace or
            ``*``; None breaks ties by column index.
        tol: Absolute threshold on the residual norm (units of the columns of
            ``W``), ``>= 0``.
        relative_tol: Optional threshold relative to the largest column norm.
        tie_rtol: Relative width of a tie, ``>= 0``.

    Returns:
        The permutation, an integer array of length ``n``: the chosen
        (independent) columns in the order chosen, then the others. The
        number chosen is the numerical rank at ``threshold``: the leading
        ``|R_ii|`` of the QR of ``W[:, pivots]`` above it.

    Raises:
        ValueError: ``W`` is not a finite 2-D array, ``names`` has the wrong
            length, or a tolerance is negative or not finite.
        ParameterNameError: a name is duplicated, empty or contains
            whitespace or ``*``.
    """
    A = _validate_regressor(W, "W")
    n = A.shape[1]
    keys = (
        [f"{j:09d}" for j in range(n)]
        if names is None
        else _validate_params_r(names, n, field="names", matrix="W")
    )
    tol = _check_tolerance("tol", tol)
    relative_tol = _check_tolerance("relative_tol", relative_tol, allow_none=True)
    tie_rtol = _check_tolerance("tie_rtol", tie_rtol)
    R0 = QRDecomposer._factor(A)[0]
    threshold = tol
    if relative_tol is not None:
        threshold = max(relative_tol * float(np.sqrt(np.einsum("ij,ij->j", R0, R0)).max()), tol)
    chosen = _greedy_columns(R0, keys, threshold, tie_rtol)
    taken = set(chosen)
    rest = sorted((j for j in range(n) if j not in taken), key=keys.__getitem__)
    return np.array(chosen + rest, dtype=int)


#: Rows per block of the blocked tall-skinny QR (a block of 4096 × 60 floats
#: is about 2 MB, cache-sized).
_CHUNK_ROWS = 4096


def _augmented(W: np.ndarray, tau: np.ndarray | None, start: int, stop: int) -> np.ndarray:
    """Fortran-ordered copy of rows ``start:stop`` of ``[W | tau]``."""
    n = W.shape[1]
    A = np.empty((stop - start, n + (tau is not None)), order="F")
    A[:, :n] = W[start:stop]
    if tau is not None:
        A[:, n] = tau[start:stop]
    return A


def tall_qr_r(A: np.ndarray, *, overwrite: bool = False, block_size: int = 32) -> np.ndarray:
    """``R`` factor of a tall matrix ``A`` (m × k, m ≫ k), without forming ``Q``.

    ``scipy.linalg.lapack.dgeqrt``: LAPACK's compact-WY blocked Householder QR
    (block size ``nb = min(block_size, k, m)``) on a Fortran-ordered copy of
    ``A``. ``AᵀA = RᵀR``; ``R`` equals any other Householder ``R`` up to the
    signs of its rows. On tall, narrow regressors it is about 1.5× faster
    than ``scipy.linalg.qr(A, mode="r")`` (``dgeqrf``): 30 vs 44 ms at
    8192 × 86, 138 vs 242 ms at 60 000 × 62, one thread.

    Args:
        A: Matrix (m, k).
        overwrite: Allow destroying ``A`` when it is already a Fortran-ordered
            float64 array (saves one copy of a large matrix).
        block_size: Householder block size ``nb`` of ``dgeqrt``.

    Returns:
        Upper-triangular ``R`` of shape ``(min(m, k), k)``.

    Raises:
        numpy.linalg.LinAlgError: LAPACK reported an illegal argument.
    """
    from scipy.linalg import lapack  # heavy import (~0.25 s), only where used

    A = np.asarray(A, dtype=float)
    m, k = A.shape
    if m == 0 or k == 0:
        return np.zeros((min(m, k), k))
    nb = max(1, min(int(block_size), k, m))
    work = A if (overwrite and A.flags.f_contiguous) else np.array(A, order="F", copy=True)
    factored, _, info = lapack.dgeqrt(nb, work, overwrite_a=1)
    if info < 0:
        raise np.linalg.LinAlgError(f"illegal value in argument {-info} of LAPACK dgeqrt")
    return np.triu(factored[: min(m, k)])


# ---------------------------------------------------------------------------
# Decomposer
# ---------------------------------------------------------------------------
class QRDecomposer:
    """Enhanced QR decomposition handler for robot parameter identification.

    Args:
        tolerance: Absolute threshold on the residual norm of a column (units
            of the regressor columns) at or below which it is treated as
            dependent.
        beta_tolerance: Regrouping coefficients with ``|beta| <= beta_tolerance``
            are omitted from expression strings (they stay in ``M``).
        relative_tolerance: Optional relative threshold; the rank threshold
            becomes ``max(relative_tolerance * max_j ||w_j||, tolerance)``
            (``max_j ||w_j||`` is the largest column norm, i.e. the first
            pivot ``|R_00|``).
        deterministic: ``True`` (default): greedy base-column choice with
            name tie-breaking, independent of the column order (module
            docstring).  ``False``: the pivot order ``P`` of
            ``scipy.linalg.qr(W_e, pivoting=True)`` (LAPACK ``?geqp3`` on the
            regressor; ties are settled by its column swaps and round-off, so
            the choice depends on the column order; one more pass over the
            tall matrix).

    The last decomposition is stored: ``M`` (``phi_base = M @ theta_r``), its
    labels ``M_params_r`` / ``M_base_params_expr``, ``M_method``, the
    ``base_indices`` / ``regroup_indices`` of the last double decomposition
    and the diagnostics returned by :meth:`get_diagnostics`.
    """

    def __init__(
        self,
        tolerance: float = TOL_QR,
        beta_tolerance: float = TOL_BETA,
        relative_tolerance: float | None = None,
        deterministic: bool = True,
    ):
        self.tolerance = _check_tolerance("tolerance", tolerance)
        self.beta_tolerance = _check_tolerance("beta_tolerance", beta_tolerance)
        self.relative_tolerance = _check_tolerance(
            "relative_tolerance", relative_tolerance, allow_none=True
        )
        if not isinstance(deterministic, (bool, np.bool_)):
            raise ValueError(f"deterministic must be True or False, got {deterministic!r}")
        self.deterministic = bool(deterministic)

        self.M: np.ndarray | None = None
        self.M_params_r: List[str] | None = None
        self.M_base_params_expr: List[str] | None = None
        self.M_method: str | None = None
        self.base_indices: List[int] | None = None
        self.regroup_indices: List[int] | None = None
        self._last_diag_R: np.ndarray | None = None
        self._last_cond_R1: float | None = None

    def __repr__(self) -> str:
        last = (
            f", last={self.M_method!r} rank={self.M.shape[0]}/{self.M.shape[1]}"
            if self.M is not None
            else ""
        )
        return (
            f"QRDecomposer(tolerance={self.tolerance!r}, beta_tolerance={self.beta_tolerance!r}, "
            f"relative_tolerance={self.relative_tolerance!r}, "
            f"deterministic={self.deterministic!r}{last})"
        )

    # -- accessors ---------------------------------------------------------
    def get_M(self) -> np.ndarray | None:
        """Return the last computed base mapping matrix ``M`` (or None)."""
        return self.M

    def get_M_labels(self) -> Tuple[List[str] | None, List[str] | None]:
        """Return ``(base_param_expr, params_r)`` labels for the last stored ``M``."""
        return self.M_base_params_expr, self.M_params_r

    def get_base_indices(self) -> List[int] | None:
        """Return the base-column indices (into ``params_r``) of the last double decomposition.

        ``None`` if no double decomposition has run.  These indices select the
        columns of a *reduced* regressor (built with the same ``params_r``
        ordering) that reproduce base-parameter predictions:
        ``tau ≈ W_reduced[:, base_indices] @ phi_base``.  The base/dependent
        split reflects the robot's kinematic structure rather than a specific
        trajectory, so the selection is valid for any regressor built with the
        same ``params_r`` ordering (e.g. held-out validation data).
        """
        return self.base_indices

    def get_diagnostics(self) -> Dict[str, Any]:
        """Return stability diagnostics from the last decomposition.

        Returns:
            dict with keys ``rank`` (identified rank), ``diag_R`` (absolute
            diagonal of R at the factorisation point), ``cond_R1`` (condition
            number of the ``R[:rank, :rank]`` block) and ``method``
            (``"pivoting"`` or ``"double"``); values are ``None`` before any
            decomposition.
        """
        return {
            "rank": self.M.shape[0] if self.M is not None else None,
            "diag_R": self._last_diag_R,
            "cond_R1": self._last_cond_R1,
            "method": self.M_method,
        }

    # -- core numerics -----------------------------------------------------
    def _threshold(self, diag_abs: np.ndarray) -> float:
        """Rank threshold on residual norms; ``diag_abs`` holds the column norms or ``|diag R|``
        of a column-pivoted ``R`` (only its maximum matters)."""
        thr = self.tolerance
        if self.relative_tolerance is not None and diag_abs.size:
            thr = max(self.relative_tolerance * float(np.max(diag_abs)), thr)
        return thr

    def _find_rank(self, R: np.ndarray) -> int:
        """Numerical rank from a column-pivoted ``R``: leading ``|R_ii|`` above threshold."""
        diag_abs = np.abs(np.diag(R))
        below = np.flatnonzero(diag_abs <= self._threshold(diag_abs))
        return int(below[0]) if below.size else int(diag_abs.size)

    @staticmethod
    def _raise_rank_zero(W: np.ndarray, threshold: float) -> None:
        raise RankDeficiencyError(
            f"regressor W_e (shape {W.shape}) has numerical rank 0: every column norm is "
            f"<= {threshold:.3g}. Check that the trajectory excites the joints, that "
            "zero columns were eliminated, or lower the QR tolerance"
        )

    @staticmethod
    def _factor(
        W: np.ndarray, tau: np.ndarray | None = None
    ) -> Tuple[np.ndarray, np.ndarray | None]:
        """One tall-skinny QR of ``[W | tau]``: ``(R0, Q0ᵀtau)`` with ``W = Q0 R0``.

        ``R0`` (``min(m, n) × n``) has the inner products of the columns of
        ``W`` (``WᵀW = R0ᵀR0``), so every residual norm, pivot and least-squares
        solution can be computed on it.

        A matrix of more than ``2 * _CHUNK_ROWS`` rows is factorised by blocks
        of rows (TSQR): each block ``[W_i | tau_i]`` is copied into a
        cache-sized Fortran buffer and reduced to its ``R_i``, then the stacked
        ``R_i`` are reduced to ``R`` (``Σ R_iᵀR_i = [W | tau]ᵀ[W | tau]``).  The
        tall matrix is read once and never copied whole.
        """
        m, n = W.shape
        k_aug = n + (tau is not None)
        if m <= 2 * _CHUNK_ROWS:
            R_aug = tall_qr_r(_augmented(W, tau, 0, m), overwrite=True)
        else:
            starts = range(0, m, _CHUNK_ROWS)
            stacked = np.empty((len(starts) * k_aug, k_aug), order="F")
            rows = 0
            for start in starts:
                stop = min(start + _CHUNK_ROWS, m)
                R_i = tall_qr_r(_augmented(W, tau, start, stop), overwrite=True)
                stacked[rows : rows + R_i.shape[0]] = R_i
                rows += R_i.shape[0]
            R_aug = tall_qr_r(stacked[:rows], overwrite=rows == stacked.shape[0])
        k = min(m, n)
        R0 = np.array(R_aug[:k, :n])
        qt_tau = None if tau is None else np.array(R_aug[:k, n])
        return R0, qt_tau

    def _pivot_order(
        self, R0: np.ndarray, names: Sequence[str], W: np.ndarray | None = None
    ) -> Tuple[List[int], List[int]]:
        """``(chosen, rest)``: base columns in the order chosen, then the others.

        ``deterministic=True``: the greedy choice of the module docstring on
        ``R0``, ``rest`` sorted by name.  ``deterministic=False``: the pivot
        order ``P`` of ``scipy.linalg.qr(W, pivoting=True)`` (LAPACK
        ``?geqp3`` on the regressor ``W`` itself, or on ``R0`` when ``W`` is
        not given), rank = leading ``|R_ii|`` above the threshold.  Raises
        :class:`RankDeficiencyError` when no column is above the threshold.
        """
        norms = np.sqrt(np.einsum("ij,ij->j", R0, R0))
        thr = self._threshold(norms)
        if not self.deterministic:
            from scipy import linalg  # heavy import (~0.25 s), only where used

            A = R0 if W is None else W
            _, R_p, P = linalg.qr(A, mode="raw", pivoting=True, check_finite=False)
            rank = self._find_rank(R_p)
            chosen, rest = P[:rank].tolist(), P[rank:].tolist()
        else:
            chosen = _greedy_columns(R0, names, thr)
            taken = set(chosen)
            rest = sorted((j for j in range(R0.shape[1]) if j not in taken), key=names.__getitem__)
        if not chosen:
            self._raise_rank_zero(R0, thr)
        return chosen, rest

    def _identify_base_parameters(
        self, W_e: np.ndarray, params_r: List[str] | None = None, R0: np.ndarray | None = None
    ) -> Tuple[List[int], List[int]]:
        """Split the columns of ``W_e`` into base and regrouped sets.

        The base columns are those chosen by the greedy, column-order
        independent selection of the module docstring (or LAPACK's pivoting
        with ``deterministic=False``).

        Args:
            W_e: Reduced regressor, shape ``(m, n)``.
            params_r: Column names, used to break ties; ``None`` breaks ties by
                column index.
            R0: ``R`` factor of ``W_e`` when already computed.

        Returns:
            ``(base_indices, regroup_indices)``, both ascending.
        """
        W = np.asarray(W_e, dtype=float)
        n = W.shape[1]
        names = list(params_r) if params_r is not None else [f"{j:09d}" for j in range(n)]
        if R0 is None:
            R0 = self._factor(W)[0]
        chosen, _ = self._pivot_order(R0, names, W)
        base = sorted(chosen)
        taken = set(base)
        return base, [j for j in range(n) if j not in taken]

    @staticmethod
    def _solve_upper(R1: np.ndarray, B: np.ndarray) -> np.ndarray:
        """``R1^{-1} B`` for upper-triangular ``R1`` (``scipy.linalg.solve_triangular``)."""
        from scipy import linalg  # heavy import (~0.25 s), only where used

        if B.size == 0:
            return np.zeros(B.shape)
        return linalg.solve_triangular(R1, B, lower=False, check_finite=False)

    def _build_parameter_expressions(
        self, base_params: List[str], regroup_params: List[str], beta: np.ndarray
    ) -> List[str]:
        """Build the expression strings (format in the module docstring)."""
        expressions = []
        for i, base in enumerate(base_params):
            parts = [base]
            if len(regroup_params):
                row = np.asarray(beta[i], dtype=float)
                for j in np.flatnonzero(np.abs(row) > self.beta_tolerance):
                    coef = _format_coefficient(row[j])
                    if float(coef) == 0.0:
                        continue
                    sign = "-" if row[j] < 0 else "+"
                    parts.append(f" {sign} {coef}*{regroup_params[j]}")
            expressions.append("".join(parts))
        return expressions

    @staticmethod
    def _build_M_from_partition(
        beta: np.ndarray,
        base_indices: Sequence[int],
        regroup_indices: Sequence[int],
        n_params: int,
    ) -> np.ndarray:
        """``M`` with identity on base columns and ``beta`` on regrouped columns."""
        rank = len(base_indices)
        M = np.zeros((rank, n_params), dtype=float)
        M[np.arange(rank), list(base_indices)] = 1.0
        if len(regroup_indices):
            M[:, list(regroup_indices)] = beta
        return M

    def _prepare(
        self, W_e: Any, params_r: Any, tau: Any = None
    ) -> Tuple[np.ndarray, List[str], np.ndarray | None]:
        W = _validate_regressor(W_e)
        names = _validate_params_r(params_r, W.shape[1])
        t = None if tau is None else _validate_tau(tau, W.shape[0])
        return W, names, t

    def _second_qr(
        self,
        W: np.ndarray,
        names: List[str],
        R0: np.ndarray,
        qt_tau: np.ndarray | None,
        base: List[int],
        regroup: List[int],
        tau: np.ndarray | None = None,
        tall: bool = False,
    ) -> Dict[str, Any]:
        """QR of ``[W_base | W_regroup]``: ``R1``, ``R2``, ``beta``, ``phi_b`` and ``M``.

        Default (``tall=False``): done on the small ``R0`` —
        ``[W_base | W_regroup] = Q0 R0[:, perm]`` and ``R0[:, perm] = Q' R``
        give ``R1``, ``R2`` and ``Q1ᵀtau = Q'[:, :r]ᵀ Q0ᵀtau``, without reading
        the tall matrix again.  ``tall=True``: figaroh 1.0.2's arithmetic
        (``numpy.linalg.qr`` of the tall matrix, ``numpy.linalg.solve``), which
        reproduces its numbers bit for bit on the same BLAS; the two agree to
        round-off (~1e-12 relative on well-conditioned problems).
        ``W_b = W_base`` in both cases.
        """
        perm = list(base) + list(regroup)
        rank = len(base)
        if tall:
            Q_t, R_r = np.linalg.qr(W[:, perm])
            R1, R2 = R_r[:rank, :rank], R_r[:rank, rank:]
            beta = np.linalg.solve(R1, R2) if R2.size else np.zeros((rank, 0))
            phi_b = np.zeros(rank) if tau is None else np.linalg.solve(R1, Q_t[:, :rank].T @ tau)
        else:
            from scipy import linalg  # heavy import (~0.25 s), only where used

            Q_p, R_r = linalg.qr(R0[:, perm], mode="economic", check_finite=False)
            R1, R2 = R_r[:rank, :rank], R_r[:rank, rank:]
            beta = self._solve_upper(R1, R2)
            phi_b = (
                np.zeros(rank)
                if qt_tau is None
                else self._solve_upper(R1, Q_p[:, :rank].T @ qt_tau)
            )
        params_base = [names[i] for i in base]
        params_regroup = [names[i] for i in regroup]
        return {
            "rank": rank,
            "R1": R1,
            "beta": beta,
            "phi_b": phi_b,
            "W_b": np.take(W, base, axis=1),  # a copy (W_b owns its data), ~2x W[:, base]
            "M": self._build_M_from_partition(beta, base, regroup, len(names)),
            "expressions": self._build_parameter_expressions(params_base, params_regroup, beta),
            "params_base": params_base,
            "params_regroup": params_regroup,
            "diag_R": np.abs(np.diag(R_r)),
            "cond_R1": float(np.linalg.cond(R1)),
        }

    def _pivoting_core(
        self, W: np.ndarray, names: List[str], tau: np.ndarray | None = None, tall: bool = False
    ) -> Dict[str, Any]:
        """Pivoting QR: the QR of ``W[:, pivot_order]``; rows follow the pivot order."""
        R0, qt_tau = self._factor(W, None if tall else tau)
        chosen, rest = self._pivot_order(R0, names, W)
        core = self._second_qr(W, names, R0, qt_tau, chosen, rest, tau=tau, tall=tall)
        core.update(
            P=np.asarray(chosen + rest, dtype=int),
            base_indices=sorted(chosen),
            regroup_indices=sorted(rest),
        )
        logger.debug("pivoting QR: W_e %s -> rank %d", W.shape, core["rank"])
        return core

    def _double_core(
        self, W: np.ndarray, names: List[str], tau: np.ndarray | None = None, tall: bool = False
    ) -> Dict[str, Any]:
        """Double QR: base columns ascending, then the second QR (:meth:`_second_qr`)."""
        R0, qt_tau = self._factor(W, None if tall else tau)
        base, regroup = self._identify_base_parameters(W, names, R0=R0)
        core = self._second_qr(W, names, R0, qt_tau, base, regroup, tau=tau, tall=tall)
        core.update(P=None, base_indices=base, regroup_indices=regroup)
        logger.debug("double QR: W_e %s -> rank %d", W.shape, core["rank"])
        return core

    def _store(self, core: Dict[str, Any], names: List[str], method: str) -> None:
        self.M = core["M"]
        self.M_params_r = list(names)
        self.M_base_params_expr = list(core["expressions"])
        self.M_method = method
        if method == "double":
            self.base_indices = list(core["base_indices"])
            self.regroup_indices = list(core["regroup_indices"])
        self._last_diag_R = core["diag_R"]
        self._last_cond_R1 = core["cond_R1"]
        logger.debug("%s QR: rank %d, cond(R1) = %.3g", method, core["rank"], core["cond_R1"])

    # -- public API ---------------------------------------------------------
    def decompose(
        self,
        W_e: np.ndarray,
        params_r: List[str],
        tau: np.ndarray | None = None,
        params_std: Dict[str, float] | None = None,
        method: str = "double",
    ) -> QRResult:
        """Unified entry point that returns a structured :class:`QRResult`.

        Delegates to the pivoting (``method="pivoting"``) or double-QR
        (``method="double"``) workflow and stores ``M``, labels and
        diagnostics on the decomposer like those methods do.

        Args:
            W_e: Reduced regressor, shape ``(m, n)`` (rows in [N·m]/[N] per unit
                parameter, joint-major).
            params_r: Remaining parameter names (columns of ``W_e``), length n.
            tau: Torque/effort vector [N·m] or [N], shape ``(m,)``.  Without it
                only the basis is computed and ``phi_b`` is zeros.
            params_std: Optional prior ``{name: value}`` (SI units) used to
                compute ``phi_b_nom = M @ theta_std`` (double path only; the
                pivoting path ignores it and leaves ``phi_b_nom`` ``None``, as
                figaroh 1.0.2 does).
            method: ``"double"`` (default) or ``"pivoting"``.

        Returns:
            A fully-populated :class:`QRResult` at full precision.

        Raises:
            ValueError: bad shapes, NaN/inf, or unknown ``method``.
            RankDeficiencyError: the regressor has rank 0.
            ParameterNameError: ``params_std`` lacks a name of ``params_r``.
        """
        method_norm = _normalise_method(method)
        W, names, t = self._prepare(W_e, params_r, tau)
        if method_norm == "pivoting":
            core = self._pivoting_core(W, names, t)
            phi_b_nom = None
        else:
            theta_std = None if params_std is None else _params_std_vector(params_std, names)
            core = self._double_core(W, names, t)
            phi_b_nom = None if theta_std is None else core["M"] @ theta_std
        self._store(core, names, method_norm)
        return QRResult(
            rank=core["rank"],
            base_indices=list(core["base_indices"]),
            pivot_order=None if core["P"] is None else core["P"].tolist(),
            W_b=core["W_b"],
            beta=core["beta"],
            M=core["M"],
            base_param_expressions=list(core["expressions"]),
            phi_b=core["phi_b"],
            phi_b_nom=phi_b_nom,
            method=method_norm,
            diag_R=core["diag_R"],
            cond_R1=core["cond_R1"],
            R1=core["R1"],
        )

    def decompose_with_pivoting(
        self, tau: np.ndarray, W_e: np.ndarray, params_r: List[str]
    ) -> Tuple[np.ndarray, Dict[str, float]]:
        """Perform QR decomposition with column pivoting.

        ``W_e[:, P] = Q R`` with ``P`` the pivot order of the module docstring;
        the rank ``r`` is the number of chosen columns; ``beta = R1^{-1} R2``,
        ``phi_b = R1^{-1} Q1^T tau`` and ``W_b = Q1 R1 = W_e[:, P[:r]]``.

        Args:
            tau: Torque/effort vector [N·m] or [N], shape ``(m,)``.
            W_e: Full regressor matrix, shape ``(m, n)``.
            params_r: Remaining parameter names (columns of ``W_e``), length n.

        Returns:
            ``(W_b, base_parameters)`` where ``W_b`` has shape ``(m, r)`` (columns
            in pivot order) and ``base_parameters`` maps the ``r`` expression
            strings to the full-precision ``phi_b`` (figaroh 1.0.2's arithmetic:
            QR of the tall ``W_e[:, P]``).
        """
        W, names, t = self._prepare(W_e, params_r, tau)
        core = self._pivoting_core(W, names, t, tall=True)
        self._store(core, names, "pivoting")
        return core["W_b"], dict(zip(core["expressions"], core["phi_b"].tolist(), strict=True))

    def double_decomposition(
        self,
        tau: np.ndarray,
        W_e: np.ndarray,
        params_r: List[str],
        params_std: Dict[str, float] | None = None,
    ) -> Union[
        Tuple[np.ndarray, Dict[str, float], List[str], np.ndarray],
        Tuple[np.ndarray, Dict[str, float], List[str], np.ndarray, np.ndarray],
    ]:
        """Perform the "double QR" workflow for base-parameter identification.

        1) Greedy, column-order independent choice of the base columns
           (module docstring), sorted ascending; the others are regrouped.
        2) QR of ``[W_base | W_regroup] = Q [R1 R2; 0 R3]``;
           ``beta = R1^{-1} R2``, ``phi_b = R1^{-1} Q1^T tau``,
           ``W_b = Q1 R1`` (``= W_base``).

        Args:
            tau: Torque/effort vector [N·m] or [N], shape ``(m,)``.
            W_e: Full regressor matrix, shape ``(m, n)``.
            params_r: Remaining parameter names (columns of ``W_e``), length n.
            params_std: Optional mapping full parameter name -> value (SI
                units). If provided, the nominal base values are also returned.

        Returns:
            ``(W_b, base_parameters, params_base_expr, phi_b)`` or, with
            ``params_std``, ``(W_b, base_parameters, params_base_expr, phi_b,
            phi_b_nom)`` where ``W_b`` is ``(m, r)``, ``params_base_expr`` a
            list of ``r`` expressions, ``base_parameters`` maps them to
            ``phi_b`` (length ``r``) and ``phi_b_nom = M @ theta_std``
            (length ``r``), all at full precision (figaroh 1.0.2's arithmetic:
            QR of the tall ``[W_base | W_regroup]``).
        """
        W, names, t = self._prepare(W_e, params_r, tau)
        theta_std = _params_std_vector(params_std, names) if params_std is not None else None
        core = self._double_core(W, names, t, tall=True)
        self._store(core, names, "double")
        phi_b = core["phi_b"]
        expressions = list(core["expressions"])
        base_parameters = dict(zip(expressions, phi_b.tolist(), strict=True))
        if theta_std is not None:
            return core["W_b"], base_parameters, expressions, phi_b, core["M"] @ theta_std
        return core["W_b"], base_parameters, expressions, phi_b

    def compute_nominal_base_parameters(
        self,
        base_params: List[str],
        regroup_params: List[str],
        beta: np.ndarray,
        params_std: Dict[str, float],
    ) -> np.ndarray:
        """Compute numerical values of base parameters from priors.

        ``phi_std[i] = params_std[base_params[i]]
        + sum_j beta[i, j] * params_std[regroup_params[j]]`` (full precision).

        Args:
            base_params: Names of the ``r`` base parameters.
            regroup_params: Names of the regrouped parameters (columns of ``beta``).
            beta: Dependency coefficients, shape ``(r, len(regroup_params))``.
            params_std: Prior ``{name: value}`` in SI units.

        Returns:
            ``phi_std``, shape ``(r,)``.
        """
        beta = np.asarray(beta, dtype=float)
        if beta.size == 0:
            beta = beta.reshape(len(base_params), len(regroup_params))
        if beta.shape != (len(base_params), len(regroup_params)):
            raise ValueError(
                f"beta must have shape (len(base_params), len(regroup_params)) = "
                f"({len(base_params)}, {len(regroup_params)}), got {beta.shape}"
            )
        base_vals = _params_std_vector(params_std, list(base_params))
        regroup_vals = _params_std_vector(params_std, list(regroup_params))
        return base_vals + beta @ regroup_vals

    def get_base_mapping_matrix_pivoting(
        self, W_e: np.ndarray, params_r: List[str]
    ) -> Tuple[np.ndarray, List[str]]:
        """Return the base-parameter mapping matrix ``M`` for pivoting-QR.

        ``M`` satisfies ``phi_base = M @ theta_r`` with ``theta_r`` ordered as
        ``params_r``; its rows follow the returned expressions.

        Args:
            W_e: Full regressor matrix, shape ``(m, n)``.
            params_r: Remaining parameter names (columns of ``W_e``), length n.

        Returns:
            ``(M, base_params_expr)`` with ``M`` of shape ``(r, n)`` and a list
            of ``r`` expressions.
        """
        W, names, _ = self._prepare(W_e, params_r)
        core = self._pivoting_core(W, names)
        return core["M"], list(core["expressions"])

    def get_base_mapping_matrix_double(
        self, W_e: np.ndarray, params_r: List[str]
    ) -> Tuple[np.ndarray, List[str], List[int], List[int]]:
        """Return the base-parameter mapping matrix ``M`` for the double-QR workflow.

        Args:
            W_e: Full regressor matrix, shape ``(m, n)``.
            params_r: Remaining parameter names (columns of ``W_e``), length n.

        Returns:
            ``(M, base_params_expr, base_indices, regroup_indices)``: ``M`` is
            ``(r, n)`` (``phi_base = M @ theta_r``), ``base_params_expr`` a list
            of ``r`` expressions, indices into ``params_r``.
        """
        W, names, _ = self._prepare(W_e, params_r)
        core = self._double_core(W, names)
        return (
            core["M"],
            list(core["expressions"]),
            list(core["base_indices"]),
            list(core["regroup_indices"]),
        )

    def get_base_mapping_matrix(
        self, W_e: np.ndarray, params_r: List[str], method: str = "double"
    ) -> Tuple[np.ndarray, List[str]]:
        """Convenience wrapper to retrieve the base mapping matrix.

        Args:
            W_e: Full regressor matrix, shape ``(m, n)``.
            params_r: Remaining parameter names (columns of ``W_e``), length n.
            method: ``"double"`` (default) or ``"pivoting"``.

        Returns:
            ``(M, base_params_expr)``.

        Raises:
            ValueError: if ``method`` is not recognised.
        """
        if _normalise_method(method) == "double":
            M, expr, _, _ = self.get_base_mapping_matrix_double(W_e, params_r)
            return M, expr
        return self.get_base_mapping_matrix_pivoting(W_e, params_r)

    @staticmethod
    def expand_mapping_matrix_to_full(
        M: np.ndarray,
        params_r: List[str],
        full_param_names: List[str],
    ) -> np.ndarray:
        """Expand an ``M`` defined on ``params_r`` into a full parameter ordering.

        ``M_full[:, full_param_names.index(name)] = M[:, params_r.index(name)]``
        and columns of parameters absent from ``params_r`` are zero, so
        ``M_full @ theta_full == M @ theta_r``.

        Args:
            M: Base mapping matrix for remaining parameters, shape ``(r, n_r)``.
            params_r: Remaining parameter names (columns of ``M``), length n_r.
            full_param_names: Full/canonical parameter ordering to expand into.

        Returns:
            ``M_full`` of shape ``(r, n_full)``.

        Raises:
            ValueError: if ``M`` has an incompatible shape, or if a name in
                ``params_r`` is missing from ``full_param_names``.
        """
        M = np.asarray(M)
        if M.ndim != 2:
            raise ValueError(f"M must be a 2D array, got shape {M.shape}")
        params_r = list(params_r)
        full_param_names = list(full_param_names)
        if M.shape[1] != len(params_r):
            raise ValueError(
                "M has incompatible column count: "
                f"M.shape[1]={M.shape[1]} but len(params_r)={len(params_r)}"
            )
        full_index = {name: idx for idx, name in enumerate(full_param_names)}
        missing = [name for name in params_r if name not in full_index]
        if missing:
            raise ValueError(
                f"params_r contains names not present in full_param_names: {', '.join(missing)}"
            )
        if len(set(params_r)) != len(params_r):
            raise ValueError("params_r contains duplicated names")
        M_full = np.zeros((M.shape[0], len(full_param_names)), dtype=M.dtype)
        M_full[:, [full_index[name] for name in params_r]] = M
        return M_full


# ---------------------------------------------------------------------------
# Legacy functional API
# ---------------------------------------------------------------------------
def QR_pivoting(
    tau: np.ndarray,
    W_e: np.ndarray,
    params_r: list,
    tol_qr: float = TOL_QR,
) -> tuple:
    """Legacy QR pivoting function (see :meth:`QRDecomposer.decompose_with_pivoting`).

    Returns:
        ``(W_b, base_parameters)``.
    """
    return QRDecomposer(tolerance=tol_qr).decompose_with_pivoting(tau, W_e, params_r)


def double_QR(
    tau: np.ndarray,
    W_e: np.ndarray,
    params_r: list,
    params_std: dict | None = None,
    tol_qr: float = TOL_QR,
) -> tuple:
    """Legacy double QR function (see :meth:`QRDecomposer.double_decomposition`).

    Returns:
        ``(W_b, base_parameters, params_base_expr, phi_b[, phi_b_nom])``.
    """
    return QRDecomposer(tolerance=tol_qr).double_decomposition(tau, W_e, params_r, params_std)


def get_baseParams(
    W_e: np.ndarray,
    params_r: list,
    params_std: dict | None = None,
    tol_qr: float = TOL_QR,
) -> tuple:
    """Legacy function returning the base regressor and expressions.

    Args:
        W_e: Reduced regressor, shape ``(m, n)``.
        params_r: Parameter names of the columns of ``W_e``.
        params_std: Optional prior (validated, not returned).
        tol_qr: Absolute rank threshold.

    Returns:
        ``(W_b, params_base_expr, base_indices)``: ``W_b = W_e[:, base_indices]``,
        one expression per base column, ``base_indices`` ascending (the same
        as :func:`get_baseIndex`).  One tall-skinny QR of ``W_e``; the
        regrouping coefficients come from its small ``R`` factor.
    """
    decomposer = QRDecomposer(tolerance=tol_qr)
    W, names, _ = decomposer._prepare(W_e, params_r)
    if params_std is not None:
        _params_std_vector(params_std, names)
    core = decomposer._double_core(W, names)
    return core["W_b"], list(core["expressions"]), list(core["base_indices"])


def get_baseIndex(
    W_e: np.ndarray,
    params_r: list,
    tol_qr: float = TOL_QR,
) -> tuple:
    """Legacy function returning the base column indices (into ``params_r``) as a tuple.

    The indices are those chosen by the greedy, column-order independent rule
    of the module docstring (largest residual norm, ties within 1e-6 to the
    smallest name, stop at ``<= tol_qr``), sorted ascending.
    """
    decomposer = QRDecomposer(tolerance=tol_qr)
    W, names, _ = decomposer._prepare(W_e, params_r)
    base_indices, _ = decomposer._identify_base_parameters(W, names)
    return tuple(base_indices)


def build_baseRegressor(W_e: np.ndarray, idx_base: tuple) -> np.ndarray:
    """Legacy function building the base regressor ``W_e[:, idx_base]``.

    Raises:
        ValueError: if an index in ``idx_base`` is out of range or not an integer.
    """
    W = np.asarray(W_e)
    if W.ndim != 2:
        raise ValueError(f"W_e must be a 2-D array, got shape {W.shape}")
    idx = list(idx_base)
    n = W.shape[1]
    bad = [i for i in idx if not isinstance(i, (int, np.integer)) or not -n <= int(i) < n]
    if bad:
        raise ValueError(f"idx_base contains invalid column indices {bad} for W_e with {n} columns")
    return W[:, [int(i) for i in idx]]


def cond_num(W_b: np.ndarray, norm_type: str | float | None = None) -> float:
    """Condition number of a (base) regressor.

    Args:
        W_b: Matrix of shape ``(m, r)``.
        norm_type: ``None`` or ``2`` — 2-norm condition ``σ_max/σ_min``
            (``numpy.linalg.cond``); ``"max_over_min_sigma"`` — the same ratio
            ``σ_max/σ_min`` computed from the singular values; ``"fro"`` —
            ``‖W‖_F ‖W⁺‖_F`` (equals ``numpy.linalg.cond(W, "fro")`` for square
            invertible matrices and is also defined for rectangular ones); any
            other order accepted by ``numpy.linalg.cond`` is passed through.

    Returns:
        The condition number (``inf`` for a singular matrix).

    Raises:
        ValueError: non-finite entries, non-2-D input or an unusable ``norm_type``.
    """
    W = _validate_regressor(W_b, "W_b")
    if norm_type is None or norm_type == 2:
        return float(np.linalg.cond(W))
    if norm_type in ("fro", "max_over_min_sigma"):
        s = np.linalg.svd(W, compute_uv=False)
        if s[-1] <= 0.0:
            return float("inf")
        if norm_type == "max_over_min_sigma":
            return float(s[0] / s[-1])
        return float(np.sqrt(np.sum(s**2)) * np.sqrt(np.sum(1.0 / s**2)))
    # Any other order is numpy's to validate; its error is re-raised below naming norm_type.
    order: Any = norm_type
    try:
        return float(np.linalg.cond(W, order))
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ValueError(
            f"cond_num: norm_type={norm_type!r} is not usable for W_b of shape {W.shape} "
            f"({exc}); use None, 'fro' or 'max_over_min_sigma'"
        ) from exc


# ---------------------------------------------------------------------------
# From base parameters back to standard parameters
# ---------------------------------------------------------------------------
def _min_norm_operator(M: Any) -> np.ndarray:
    """``M^+`` (``n × r``) of a base mapping matrix ``M`` (``r × n``, ``r <= n``).

    Full row rank (every ``M`` of this module): ``Mᵀ = Q R``, ``M^+ = Q R^{-T}``.
    Otherwise the SVD pseudo-inverse (singular values below
    ``max(r, n) · eps · σ_max`` dropped), with a warning.
    """
    A = _validate_regressor(M, "M")
    r, n = A.shape
    if r <= n:
        from scipy import linalg  # heavy import (~0.25 s), only where used

        Q, R = linalg.qr(A.T, mode="economic", check_finite=False)
        d = np.abs(np.diag(R))
        if d.size and d.min() > max(r, n) * np.finfo(float).eps * d.max():
            return linalg.solve_triangular(R, Q.T, lower=False, check_finite=False).T
    logger.warning(
        "M (shape %s) does not have full row rank: M θ = φ only holds in the least-squares sense",
        A.shape,
    )
    return np.linalg.pinv(A)


def redistribute_min_norm(M: np.ndarray, phi_base: np.ndarray) -> np.ndarray:
    r"""Minimum-norm standard parameters that reproduce given base parameters.

    Every ``theta`` with ``M theta = phi_base`` predicts the same efforts
    (``W_e theta = W_b M theta = W_b phi_base``); this returns the one of
    smallest Euclidean norm,

    .. math::

        \theta^\star = M^{+}\,\phi_{base} = \arg\min_{M\theta = \phi_{base}} \|\theta\|_2,

    i.e. the base value is spread over each group of regrouped parameters and
    ``theta*`` is orthogonal to the null space of ``M`` (the unidentifiable
    directions).  The norm is taken on the raw SI values ([kg], [kg·m],
    [kg·m²], friction coefficients, …) without weighting, so the split depends
    on the units; it is a convenient representative, not a physical estimate.

    Args:
        M: Base mapping matrix (``phi_base = M @ theta_r``), shape ``(r, n)``,
            e.g. :attr:`QRResult.M` or :meth:`QRDecomposer.get_M`.
        phi_base: Base-parameter values, shape ``(r,)`` (or ``(r, k)`` for
            ``k`` vectors at once), in the row order of ``M``.

    Returns:
        ``theta*``, shape ``(n,)`` (or ``(n, k)``), in the column order of ``M``
        (``params_r``).

    Raises:
        ValueError: ``M`` is not a finite 2-D array, or ``phi_base`` is not
            finite or does not have ``M.shape[0]`` rows.
    """
    G = _min_norm_operator(M)
    phi = np.asarray(phi_base, dtype=float)
    if phi.ndim not in (1, 2) or phi.shape[0] != G.shape[1]:
        raise ValueError(
            f"phi_base must have {G.shape[1]} rows (one per row of M), got shape {phi.shape}"
        )
    if not np.all(np.isfinite(phi)):
        raise ValueError("phi_base contains NaN or inf")
    return G @ phi


def propagate_covariance_min_norm(M: np.ndarray, C_base: np.ndarray) -> np.ndarray:
    r"""Covariance of the minimum-norm standard parameters of :func:`redistribute_min_norm`.

    ``theta* = M^+ phi_base`` is linear in ``phi_base``, so

    .. math::

        C_\theta = M^{+}\, C_{base}\, M^{+T},

    an ``n × n`` symmetric positive semi-definite matrix of rank at most ``r``
    (no information about the null space of ``M``).  Standard deviations are
    ``sqrt(diag(C_theta))`` in the units of each standard parameter.

    Args:
        M: Base mapping matrix, shape ``(r, n)``.
        C_base: Covariance of ``phi_base``, shape ``(r, r)`` (units squared of
            the base parameters), e.g. ``sigma² (W_bᵀW_b)^{-1}``.

    Returns:
        ``C_theta``, shape ``(n, n)``, exactly symmetric.

    Raises:
        ValueError: bad shapes or non-finite entries.
    """
    G = _min_norm_operator(M)
    C = np.asarray(C_base, dtype=float)
    r = G.shape[1]
    if C.shape != (r, r):
        raise ValueError(f"C_base must have shape ({r}, {r}) (rows of M), got {C.shape}")
    if not np.all(np.isfinite(C)):
        raise ValueError("C_base contains NaN or inf")
    C_theta = G @ C @ G.T
    return 0.5 * (C_theta + C_theta.T)
