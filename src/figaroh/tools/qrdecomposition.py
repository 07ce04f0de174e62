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

Two workflows are available:

* **double QR** (default, :meth:`QRDecomposer.double_decomposition`): a
  non-pivoted QR of ``W_e`` marks column ``j`` as *base* iff
  ``|R_jj| > threshold`` and as *regrouped* otherwise; a second QR of
  ``[W_base | W_regroup] = Q [R1 R2]`` gives ``beta = R1^{-1} R2`` and
  ``phi_b = R1^{-1} Q1^T tau``.  ``M`` has the identity on the base columns
  and ``beta`` on the regrouped ones.
* **pivoting** (:meth:`QRDecomposer.decompose_with_pivoting`): one
  column-pivoted QR ``W_e P = Q R``; the first ``rank`` pivoted columns are
  the base set.

The rank threshold is ``tolerance`` or, when ``relative_tolerance`` is set,
``max(relative_tolerance * max|diag R|, tolerance)`` (the absolute tolerance
stays a floor).  All numbers are kept at full float64 precision; only the
legacy tuple outputs documented as rounded are rounded (``phi_b`` of
:meth:`~QRDecomposer.double_decomposition` /
:meth:`~QRDecomposer.decompose_with_pivoting` and the values of their
``base_parameters`` dicts, to 6 decimals).  :class:`QRResult` (from
:meth:`QRDecomposer.decompose`) is never rounded.

Base-parameter expression format (a contract parsed by other modules)
---------------------------------------------------------------------
Each expression is a single line with **no other content**::

    <base_name>[ <sign> <coef>*<name>]...

* ``<base_name>`` is the name (from ``params_r``) of the base column;
* one `` <sign> <coef>*<name>`` term follows for every regrouped parameter
  ``<name>`` whose coefficient satisfies ``|beta| > beta_tolerance``, in the
  order of the regrouped parameters;
* ``<sign>`` is ``+`` or ``-`` (the sign of ``beta``), surrounded by single
  spaces;
* ``<coef>`` is ``|beta|`` rounded to 6 significant digits and printed in
  positional notation (never scientific) with at least one digit on each side
  of the decimal point, i.e. it always matches ``\d+\.\d+``
  (``1.0``, ``0.5``, ``0.000321``, ``1234.57``).

Example: ``"Ixx_shoulder2_joint + 1.0*Ixx_shoulder1_joint - 0.5*Iyy_elbow_joint"``
means ``phi = Ixx_shoulder2_joint + 1.0*Ixx_shoulder1_joint - 0.5*Iyy_elbow_joint``.
The regular expression :data:`EXPRESSION_TERM_PATTERN` matches one term and
:func:`parse_base_param_expression` parses a whole expression.  Parameter
names must therefore contain neither whitespace nor ``*`` (checked).  The
printed coefficients are display values; use ``M`` for full precision.

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
from typing import Any, Dict, List, Sequence, Tuple, Union

import numpy as np
from scipy import linalg

from figaroh.tools.exceptions import FigarohToolsError, RankDeficiencyError

from ._linalg import tall_qr_r

logger = logging.getLogger(__name__)

__all__ = [
    "TOL_QR",
    "TOL_BETA",
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
    "parse_base_param_expression",
]

#: Default absolute threshold on ``|R_ii|`` below which a column is dependent.
TOL_QR: float = 1e-8
#: Coefficients with ``|beta| <= TOL_BETA`` are omitted from expression strings.
TOL_BETA: float = 1e-6
#: Significant digits of the coefficients printed in expression strings.
_EXPR_SIGNIFICANT_DIGITS = 6

#: Regular expression matching one regrouped term `` + c*name`` of an expression.
EXPRESSION_TERM_PATTERN = re.compile(r" (?P<sign>[+-]) (?P<coef>\d+\.\d+)\*(?P<name>[^\s*]+)")
_EXPRESSION_PATTERN = re.compile(r"(?P<base>[^\s*]+)(?P<terms>(?: [+-] \d+\.\d+\*[^\s*]+)*)")

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
            independent (base) set, in the row order of ``M``/``phi_b``
            (ascending for the double path, pivot order for the pivoting path),
            so ``W_e[:, base_indices] @ phi_b ≈ tau``.
        pivot_order: Full pivot permutation used by the pivoting path (``P``
            from ``scipy.linalg.qr``); ``None`` for the double path.
        W_b: Base regressor matrix, shape ``(m, rank)``.
        beta: Dependency coefficient matrix, shape ``(rank, n - rank)``.
            Full precision — not rounded.
        M: Base mapping matrix satisfying ``phi_base = M @ theta_r``, shape
            ``(rank, n)``.
        base_param_expressions: Human-readable expression strings, length
            ``rank`` (format in the module docstring).
        phi_b: Identified base-parameter values (units of the parameters,
            e.g. [kg], [kg·m], [kg·m²]), shape ``(rank,)``; ``None`` when
            computed without a ``tau`` vector.
        phi_b_nom: Nominal base-parameter values ``M @ theta_std`` from the
            ``params_std`` prior, shape ``(rank,)``; ``None`` when
            ``params_std`` was not provided.
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
    if not np.all(np.isfinite(W)):
        bad = np.argwhere(~np.isfinite(W))[0]
        raise ValueError(
            f"{name} contains NaN or inf (first at row {bad[0]}, column {bad[1]}); "
            "clean or filter the data before the QR decomposition"
        )
    return W


def _validate_params_r(params_r: Any, n: int) -> List[str]:
    if isinstance(params_r, (str, bytes)) or not hasattr(params_r, "__iter__"):
        raise ValueError(
            f"params_r must be a list of parameter names, got {type(params_r).__name__}"
        )
    names = list(params_r)
    if len(names) != n:
        raise ValueError(
            f"params_r has {len(names)} names but W_e has {n} columns; "
            "pass one name per regressor column (after zero-column elimination)"
        )
    for name in names:
        if not isinstance(name, str) or not name or re.search(r"[\s*]", name):
            raise ParameterNameError(
                f"params_r contains an invalid parameter name {name!r}: names must be "
                "non-empty strings without whitespace or '*'"
            )
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise ParameterNameError(f"params_r contains duplicated names: {', '.join(dup)}")
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
    """``|value|`` to 6 significant digits, positional notation, e.g. ``1.0``."""
    return np.format_float_positional(
        abs(float(value)),
        precision=_EXPR_SIGNIFICANT_DIGITS,
        unique=False,
        fractional=False,
        trim="0",
    )


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


# ---------------------------------------------------------------------------
# Decomposer
# ---------------------------------------------------------------------------
class QRDecomposer:
    """Enhanced QR decomposition handler for robot parameter identification.

    Args:
        tolerance: Absolute threshold on ``|R_ii|`` (units of the regressor
            columns) below which a column is treated as dependent.
        beta_tolerance: Regrouping coefficients with ``|beta| <= beta_tolerance``
            are omitted from expression strings (they stay in ``M``).
        relative_tolerance: Optional relative threshold; the rank threshold
            becomes ``max(relative_tolerance * max|diag R|, tolerance)``.

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
    ):
        self.tolerance = _check_tolerance("tolerance", tolerance)
        self.beta_tolerance = _check_tolerance("beta_tolerance", beta_tolerance)
        self.relative_tolerance = _check_tolerance(
            "relative_tolerance", relative_tolerance, allow_none=True
        )

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
            f"relative_tolerance={self.relative_tolerance!r}{last})"
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
        """Rank threshold on ``|diag R|``."""
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
            f"regressor W_e (shape {W.shape}) has numerical rank 0: every |R_ii| is "
            f"<= {threshold:.3g}. Check that the trajectory excites the joints, that "
            "zero columns were eliminated, or lower the QR tolerance"
        )

    def _identify_base_parameters(
        self, W_e: np.ndarray, params_r: List[str] | None = None, R0: np.ndarray | None = None
    ) -> Tuple[List[int], List[int]]:
        """Split the columns of ``W_e`` into base and regrouped sets.

        Semantics: non-pivoted QR of ``W_e`` in column order, where ``|R_jj|``
        is the distance of column ``j`` from the span of the *base* columns
        before it; column ``j`` is base iff ``|R_jj| > threshold``.

        LAPACK's plain QR also applies a Householder reflector for a dependent
        column; that reflector is built from round-off and consumes one
        dimension, which can only *shrink* later ``|R_jj|``.  Hence every
        column LAPACK marks as base is base, and it suffices to check that each
        column it marks as dependent is within the threshold of the span of the
        base columns before it (one extra QR of the base block).  If the check
        fails (``m`` close to or below ``n``), the factorisation is redone
        column by column on ``R`` without reflectors for dependent columns
        (:meth:`_sequential_base_columns`).

        Returns:
            ``(base_indices, regroup_indices)``, both ascending.
        """
        W = np.asarray(W_e, dtype=float)
        n = W.shape[1]
        # Geometry of the columns is preserved by R (W = Q R, Q orthonormal).
        if R0 is None:
            R0 = tall_qr_r(W)
        diag0 = np.abs(np.diag(R0))
        thr = self._threshold(diag0)
        base = np.flatnonzero(diag0 > thr).tolist()
        if not self._lapack_split_is_sequential(R0, base, thr):
            logger.debug("non-pivoted QR: round-off reflectors detected, sequential pass")
            base = self._sequential_base_columns(R0, diag0, thr)
        if not base:
            self._raise_rank_zero(W, thr)
        base_set = set(base)
        regroup = [j for j in range(n) if j not in base_set]
        return base, regroup

    @staticmethod
    def _lapack_split_is_sequential(R0: np.ndarray, base: List[int], thr: float) -> bool:
        """True iff every non-base column is within ``thr`` of the span of the base columns
        preceding it (so the split equals the sequential definition)."""
        n = R0.shape[1]
        dep = np.setdiff1d(np.arange(n), base)
        if dep.size == 0:
            return True
        C = R0[:, dep]
        if base:
            Qb = linalg.qr(R0[:, base], mode="economic", check_finite=False)[0]
            n_before = np.searchsorted(np.asarray(base), dep)  # base columns before each j
            Z = Qb.T @ C
            Z[np.arange(len(base))[:, None] >= n_before[None, :]] = 0.0
            C = C - Qb @ Z
        return bool(np.all(np.linalg.norm(C, axis=0) <= thr))

    @staticmethod
    def _sequential_base_columns(R0: np.ndarray, diag0: np.ndarray, thr: float) -> List[int]:
        """Column-by-column Householder QR of ``R0`` skipping dependent columns."""
        n = R0.shape[1]
        below = np.flatnonzero(diag0 <= thr)
        j0 = int(below[0]) if below.size else diag0.size  # LAPACK is exact before j0
        base = list(range(j0))
        if j0 >= n:
            return base
        A = np.array(R0[j0:, j0:], dtype=float, order="F")
        rows, row = A.shape[0], 0
        for jj in range(A.shape[1]):
            if row >= rows:
                break
            x = A[row:, jj]
            nrm = float(np.linalg.norm(x))
            if nrm <= thr:
                continue
            base.append(j0 + jj)
            if row + 1 < rows and jj + 1 < A.shape[1]:
                v = x.copy()
                v[0] += np.copysign(nrm, x[0]) if x[0] != 0.0 else nrm
                v /= np.linalg.norm(v)
                block = A[row:, jj + 1 :]
                block -= np.outer(2.0 * v, v @ block)
            row += 1
        return base

    @staticmethod
    def _regroup_parameters(
        W_e: np.ndarray,
        params_r: List[str],
        base_indices: List[int],
        regroup_indices: List[int],
    ) -> Tuple[np.ndarray, np.ndarray, List[str], List[str]]:
        """Return ``(W_base, W_regroup, params_base, params_regroup)``."""
        return (
            W_e[:, base_indices],
            W_e[:, regroup_indices],
            [params_r[i] for i in base_indices],
            [params_r[i] for i in regroup_indices],
        )

    @staticmethod
    def _extract_base_components(
        R: np.ndarray, Q: np.ndarray, rank: int
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(R1, Q1, R2) = (R[:r, :r], Q[:, :r], R[:r, r:])``."""
        return R[:rank, :rank], Q[:, :rank], R[:rank, rank:]

    @staticmethod
    def _solve_upper(R1: np.ndarray, B: np.ndarray) -> np.ndarray:
        """``R1^{-1} B`` for upper-triangular ``R1`` (back substitution)."""
        if B.size == 0:
            return np.zeros(B.shape, dtype=float)
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
                    sign = "-" if row[j] < 0 else "+"
                    parts.append(f" {sign} {_format_coefficient(row[j])}*{regroup_params[j]}")
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

    @classmethod
    def _build_M_from_pivoting(
        cls, beta: np.ndarray, P: np.ndarray, rank: int, n_params: int
    ) -> np.ndarray:
        """``M`` for the pivoted ordering: rows follow ``P[:rank]``."""
        return cls._build_M_from_partition(beta, P[:rank].tolist(), P[rank:].tolist(), n_params)

    def _prepare(
        self, W_e: Any, params_r: Any, tau: Any = None
    ) -> Tuple[np.ndarray, List[str], np.ndarray | None]:
        W = _validate_regressor(W_e)
        names = _validate_params_r(params_r, W.shape[1])
        t = None if tau is None else _validate_tau(tau, W.shape[0])
        return W, names, t

    def _pivoting_core(self, W: np.ndarray, names: List[str]) -> Dict[str, Any]:
        Q, R, P = linalg.qr(W, mode="economic", pivoting=True, check_finite=False)
        rank = self._find_rank(R)
        diag_R = np.abs(np.diag(R))
        if rank == 0:
            self._raise_rank_zero(W, self._threshold(diag_R))
        R1, Q1, R2 = self._extract_base_components(R, Q, rank)
        beta = self._solve_upper(R1, R2)
        params_sorted = [names[i] for i in P]
        expressions = self._build_parameter_expressions(
            params_sorted[:rank], params_sorted[rank:], beta
        )
        M = self._build_M_from_pivoting(beta, P, rank, len(names))
        logger.debug("pivoting QR: W_e %s -> rank %d", W.shape, rank)
        return {
            "rank": rank,
            "P": P,
            "R1": R1,
            "Q1": Q1,
            "beta": beta,
            "W_b": Q1 @ R1,
            "M": M,
            "expressions": expressions,
            "params_base": params_sorted[:rank],
            "params_regroup": params_sorted[rank:],
            "base_indices": P[:rank].tolist(),
            "regroup_indices": P[rank:].tolist(),
            "diag_R": diag_R,
            "cond_R1": float(np.linalg.cond(R1)),
        }

    def _double_core(
        self, W: np.ndarray, names: List[str], tau: np.ndarray | None = None
    ) -> Dict[str, Any]:
        """Double QR using only ``R`` factors (no tall ``Q`` is ever formed).

        One tall-skinny QR of ``[W | τ]`` gives ``R0`` (the ``R`` of ``W``) and
        ``Q0ᵀτ``. The second QR, of ``[W_base | W_regroup] = Q0 R0[:, perm]``,
        is the QR of the small ``R0[:, perm]``: ``R0[:, perm] = Q' R``, so
        ``R1``, ``R2`` come from ``R`` and ``Q1ᵀτ = Q'[:, :r]ᵀ Q0ᵀτ``; and
        ``W_b = Q1 R1 = W_base``.
        """
        n = W.shape[1]
        A = np.empty((W.shape[0], n + (tau is not None)), order="F")
        A[:, :n] = W
        if tau is not None:
            A[:, n] = tau
        R_aug = tall_qr_r(A, overwrite=True)
        k = min(W.shape)
        R0 = R_aug[:k, :n]
        base_indices, regroup_indices = self._identify_base_parameters(W, names, R0=R0)
        params_base = [names[i] for i in base_indices]
        params_regroup = [names[i] for i in regroup_indices]
        perm = list(base_indices) + list(regroup_indices)
        Q_p, R_r = linalg.qr(R0[:, perm], mode="economic", check_finite=False)
        rank = len(base_indices)
        R1, R2 = R_r[:rank, :rank], R_r[:rank, rank:]
        beta = self._solve_upper(R1, R2)
        expressions = self._build_parameter_expressions(params_base, params_regroup, beta)
        M = self._build_M_from_partition(beta, base_indices, regroup_indices, len(names))
        qt_tau = None if tau is None else Q_p[:, :rank].T @ R_aug[:k, n]
        logger.debug("double QR: W_e %s -> rank %d", W.shape, rank)
        return {
            "rank": rank,
            "P": None,
            "R1": R1,
            "Q1": None,
            "Qt_tau": qt_tau,
            "tau": tau,
            "beta": beta,
            "W_b": np.array(W[:, base_indices]),
            "M": M,
            "expressions": expressions,
            "params_base": params_base,
            "params_regroup": params_regroup,
            "base_indices": base_indices,
            "regroup_indices": regroup_indices,
            "diag_R": np.abs(np.diag(R_r)),
            "cond_R1": float(np.linalg.cond(R1)),
        }

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

    def _phi(self, core: Dict[str, Any], tau: np.ndarray) -> np.ndarray:
        """Full-precision ``phi_b = R1^{-1} Q1^T tau``."""
        if core.get("Qt_tau") is not None and core.get("tau") is tau:
            return self._solve_upper(core["R1"], core["Qt_tau"])
        if core.get("Q1") is not None:
            return self._solve_upper(core["R1"], core["Q1"].T @ tau)
        # W_b = Q1 R1 (full column rank): least squares on the base columns
        return linalg.lstsq(core["W_b"], tau, check_finite=False)[0]

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
                only the basis is computed and ``phi_b`` is ``None``.
            params_std: Optional prior ``{name: value}`` (SI units) used to
                compute ``phi_b_nom = M @ theta_std`` (both methods).
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
        theta_std = _params_std_vector(params_std, names) if params_std is not None else None
        core = (
            self._pivoting_core(W, names)
            if method_norm == "pivoting"
            else self._double_core(W, names, t)
        )
        self._store(core, names, method_norm)
        return QRResult(
            rank=core["rank"],
            base_indices=list(core["base_indices"]),
            pivot_order=None if core["P"] is None else core["P"].tolist(),
            W_b=core["W_b"],
            beta=core["beta"],
            M=core["M"],
            base_param_expressions=list(core["expressions"]),
            phi_b=None if t is None else self._phi(core, t),
            phi_b_nom=None if theta_std is None else core["M"] @ theta_std,
            method=method_norm,
            diag_R=core["diag_R"],
            cond_R1=core["cond_R1"],
            R1=core["R1"],
        )

    def decompose_with_pivoting(
        self, tau: np.ndarray, W_e: np.ndarray, params_r: List[str]
    ) -> Tuple[np.ndarray, Dict[str, float]]:
        """Perform QR decomposition with column pivoting.

        ``W_e P = Q R``; the rank ``r`` is the number of leading ``|R_ii|``
        above the threshold; ``beta = R1^{-1} R2``,
        ``phi_b = R1^{-1} Q1^T tau`` and ``W_b = Q1 R1 = W_e[:, P[:r]]``.

        Args:
            tau: Torque/effort vector [N·m] or [N], shape ``(m,)``.
            W_e: Full regressor matrix, shape ``(m, n)``.
            params_r: Remaining parameter names (columns of ``W_e``), length n.

        Returns:
            ``(W_b, base_parameters)`` where ``W_b`` has shape ``(m, r)`` and
            ``base_parameters`` maps the ``r`` expression strings to values
            rounded to 6 decimals.
        """
        W, names, t = self._prepare(W_e, params_r, tau)
        core = self._pivoting_core(W, names)
        self._store(core, names, "pivoting")
        phi_b = np.round(self._phi(core, t), 6)
        return core["W_b"], dict(zip(core["expressions"], phi_b.tolist(), strict=True))

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

        1) Non-pivoted QR of ``W_e``: column ``j`` is base iff ``|R_jj| >``
           threshold, otherwise regrouped.
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
            ``phi_b``, ``phi_b`` (length ``r``) is rounded to 6 decimals and
            ``phi_b_nom`` (length ``r``) is at full precision.
        """
        W, names, t = self._prepare(W_e, params_r, tau)
        theta_std = _params_std_vector(params_std, names) if params_std is not None else None
        core = self._double_core(W, names, t)
        self._store(core, names, "double")
        phi_b = np.round(self._phi(core, t), 6)
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
        ``(W_b, params_base_expr, base_indices)``.
    """
    W = _validate_regressor(W_e)
    decomposer = QRDecomposer(tolerance=tol_qr)
    result = decomposer.double_decomposition(np.zeros(W.shape[0]), W, params_r, params_std)
    return result[0], result[2], list(decomposer.base_indices or [])


def get_baseIndex(
    W_e: np.ndarray,
    params_r: list,
    tol_qr: float = TOL_QR,
) -> tuple:
    """Legacy function returning the base column indices (into ``params_r``) as a tuple."""
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


def cond_num(W_b: np.ndarray, norm_type: str | None = None) -> float:
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
    try:
        return float(np.linalg.cond(W, norm_type))
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ValueError(
            f"cond_num: norm_type={norm_type!r} is not usable for W_b of shape {W.shape} "
            f"({exc}); use None, 'fro' or 'max_over_min_sigma'"
        ) from exc
