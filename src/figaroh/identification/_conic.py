"""Small conic programs (least squares + linear constraints + LMIs) and their back-ends.

Every SDP of the physical-consistency modules is stated once, in numpy terms,
as a :class:`ConeProgram`, and handed to one of two back-ends behind the same
``solver=`` name:

* ``"clarabel"`` (optional extra ``figaroh[fast]``): the Clarabel interior-point
  solver called directly on the standard form
  ``min ½xᵀPx + qᵀx  s.t.  A x + s = b,  s ∈ K`` (zero, non-negative,
  second-order and PSD-triangle cones). PICOS 2.6 has no Clarabel
  back-end, so the cone program is assembled here.
* anything else (default ``"cvxopt"``): the program is modelled with PICOS and
  solved by the named PICOS solver.

Both back-ends see exactly the same variables and constraints, so solve times
compare like with like.

A program over ``x ∈ ℝⁿ`` holds

* an objective: ``"norm"`` ``min ‖F x − g‖``, ``"sqnorm"`` ``min ‖F x − g‖²``
  (same minimiser; PICOS models it as the norm; Clarabel uses a quadratic
  objective and, if that stops short on a degenerate optimum, the norm),
  ``"schur"`` ``min t`` s.t. ``[[t, rᵀ], [r, I]] ⪰ 0`` with ``r = F x − g``
  (``t = ‖r‖²`` at the optimum) or ``"linear"`` ``min cᵀx``;
* equalities ``A_eq x = b_eq`` and inequalities ``G x ≤ h``;
* linear matrix inequalities ``mat(L x) + B ⪰ 0`` (``L`` maps ``x`` to the
  column-major vectorisation of a symmetric ``k×k`` matrix).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

import numpy as np
from numpy.typing import ArrayLike

from figaroh._optional import require
from figaroh.errors import MissingDependencyError

logger = logging.getLogger(__name__)

__all__ = [
    "CLARABEL",
    "ConeProgram",
    "ConicResult",
    "available_solvers",
    "solve_program",
]

#: Name of the direct Clarabel back-end.
CLARABEL = "clarabel"

_OBJECTIVES = ("norm", "sqnorm", "schur", "linear")
#: Iteration caps of CVXOPT (its own default is 100): small LMIs iterate fast and
#: degenerate optima may need many iterations; a large LMI makes each costly.
_CVXOPT_MAX_ITERS = 2000
_CVXOPT_MAX_ITERS_LARGE = 100


@dataclass
class ConeProgram:
    """A convex program in numpy terms (see the module docstring).

    Attributes:
        n: Number of decision variables.
        objective: ``"norm"``, ``"sqnorm"``, ``"schur"`` or ``"linear"``.
        F: (k, n) least-squares matrix (norm objectives).
        g: (k,) least-squares target (norm objectives).
        c: (n,) cost vector (``"linear"``).
        A_eq: (m_e, n) equality matrix; ``b_eq`` (m_e,).
        G: (m_i, n) inequality matrix; ``h`` (m_i,).
        lmis: List of ``(L, B)`` with ``L`` of shape (k², n) and ``B`` (k, k)
            symmetric, meaning ``mat(L x) + B ⪰ 0`` (column-major ``mat``).
    """

    n: int
    objective: str
    F: np.ndarray | None = None
    g: np.ndarray | None = None
    c: np.ndarray | None = None
    A_eq: np.ndarray | None = None
    b_eq: np.ndarray | None = None
    G: np.ndarray | None = None
    h: np.ndarray | None = None
    lmis: List[Tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.objective not in _OBJECTIVES:
            raise ValueError(f"objective must be one of {_OBJECTIVES}, got {self.objective!r}")
        if self.objective == "linear":
            if self.c is None or np.shape(self.c) != (self.n,):
                raise ValueError(f"a linear objective needs c of shape ({self.n},)")
        elif self.F is None or self.g is None or np.shape(self.F)[1] != self.n:
            raise ValueError(f"a {self.objective} objective needs F (k, {self.n}) and g (k,)")

    def __repr__(self) -> str:
        m_e = 0 if self.A_eq is None else self.A_eq.shape[0]
        m_i = 0 if self.G is None else self.G.shape[0]
        sizes = sorted({int(B.shape[0]) for _, B in self.lmis})
        return (
            f"ConeProgram(n={self.n}, objective={self.objective!r}, equalities={m_e}, "
            f"inequalities={m_i}, lmis={len(self.lmis)} of sizes {sizes})"
        )

    def add_lmi(self, L: ArrayLike, B: ArrayLike) -> None:
        """Append ``mat(L x) + B ⪰ 0``."""
        self.lmis.append((np.asarray(L, dtype=float), np.asarray(B, dtype=float)))

    def add_inequalities(self, G: ArrayLike, h: ArrayLike) -> None:
        """Append the rows ``G x ≤ h``."""
        G = np.atleast_2d(np.asarray(G, dtype=float))
        h = np.atleast_1d(np.asarray(h, dtype=float))
        if G.size == 0:
            return
        self.G = G if self.G is None else np.vstack([self.G, G])
        self.h = h if self.h is None else np.concatenate([self.h, h])

    def add_equalities(self, A: ArrayLike, b: ArrayLike) -> None:
        """Append the rows ``A x = b``."""
        A = np.atleast_2d(np.asarray(A, dtype=float))
        b = np.atleast_1d(np.asarray(b, dtype=float))
        if A.size == 0:
            return
        self.A_eq = A if self.A_eq is None else np.vstack([self.A_eq, A])
        self.b_eq = b if self.b_eq is None else np.concatenate([self.b_eq, b])

    def equalities(self) -> Tuple[np.ndarray, np.ndarray] | None:
        """``(A_eq, b_eq)``, or None without equality rows."""
        return _rows_and_bounds("A_eq", self.A_eq, "b_eq", self.b_eq)

    def inequalities(self) -> Tuple[np.ndarray, np.ndarray] | None:
        """``(G, h)``, or None without inequality rows."""
        return _rows_and_bounds("G", self.G, "h", self.h)

    def least_squares(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(F, g)`` of a norm objective.

        Raises:
            ValueError: ``F`` or ``g`` is None (a ``"linear"`` objective).
        """
        if self.F is None or self.g is None:
            raise ValueError(f"a {self.objective} objective needs F (k, {self.n}) and g (k,)")
        return self.F, self.g

    def linear_cost(self) -> np.ndarray:
        """``c`` of a ``"linear"`` objective.

        Raises:
            ValueError: ``c`` is None (a norm objective).
        """
        if self.c is None:
            raise ValueError(f"a linear objective needs c of shape ({self.n},)")
        return self.c


def _rows_and_bounds(
    rows_name: str, rows: np.ndarray | None, bounds_name: str, bounds: np.ndarray | None
) -> Tuple[np.ndarray, np.ndarray] | None:
    """``(rows, bounds)`` of a constraint block, None when ``rows`` is None.

    Raises:
        ValueError: ``rows`` is set but ``bounds`` is None.
    """
    if rows is None:
        return None
    if bounds is None:
        raise ValueError(
            f"ConeProgram.{rows_name} is set but {bounds_name} is None; set both (or add "
            "the rows with add_equalities / add_inequalities)"
        )
    return rows, bounds


@dataclass
class ConicResult:
    """Outcome of :func:`solve_program`.

    Attributes:
        status: ``"optimal"`` when the solver certified optimality, otherwise
            the solver's own status in lower case (``"infeasible"``,
            ``"primal_infeasible"``, ``"max_time"``, ...).
        raw_status: The back-end's status text.
        x: Solution (``None`` unless optimal).
        runtime_s: Wall time of model building plus solve [s].
        solver: Back-end used.
    """

    status: str
    raw_status: str | None
    x: np.ndarray | None
    runtime_s: float
    solver: str

    def __repr__(self) -> str:
        return (
            f"ConicResult(status={self.status!r}, solver={self.solver!r}, "
            f"runtime_s={self.runtime_s:.4f})"
        )


def available_solvers() -> List[str]:
    """Names accepted by ``solver=``: the PICOS solvers present plus ``"clarabel"``."""
    names: List[str] = []
    try:
        names.extend(_import_picos().available_solvers())
    except MissingDependencyError:  # pragma: no cover - picos is a core dependency
        pass
    try:
        _import_clarabel()
        names.append(CLARABEL)
    except MissingDependencyError:
        pass
    return names


def solve_program(
    prog: ConeProgram, *, solver: str = "cvxopt", max_seconds: float | None = None
) -> ConicResult:
    """Solve ``prog`` with ``solver``.

    Args:
        prog: The program.
        solver: ``"clarabel"`` (direct) or a PICOS solver name (``"cvxopt"``).
        max_seconds: Wall-time limit [s] (PICOS ``timelimit`` / Clarabel
            ``time_limit``); None = unlimited.

    Returns:
        :class:`ConicResult`.

    Raises:
        ImportError: The back-end's package is not installed (the message
            names the package to install).
        ValueError: ``max_seconds`` is not positive.
    """
    if max_seconds is not None and not float(max_seconds) > 0:
        raise ValueError(f"max_seconds must be positive or None, got {max_seconds!r}")
    name = str(solver).strip().lower()
    if name == CLARABEL:
        return _solve_clarabel(prog, max_seconds)
    return _solve_picos(prog, name, max_seconds)


# ---------------------------------------------------------------------------
# PICOS back-end
# ---------------------------------------------------------------------------
def _import_picos():
    """The ``picos`` module (a core dependency, with cvxopt)."""
    return require("picos", purpose="The physical-consistency SDP (PICOS back-end)")


def _solve_picos(prog: ConeProgram, solver: str, max_seconds: float | None) -> ConicResult:
    picos = _import_picos()
    t0 = time.perf_counter()
    P, x = _picos_problem(picos, prog)
    attempts = _picos_options(P, prog, solver, max_seconds)
    solution, last_error = _picos_solve(picos, P, attempts, solver)
    if solution is None:
        code = getattr(last_error, "code", None)
        return ConicResult(
            status=_norm_status(code) if code is not None else "error",
            raw_status=f"{type(last_error).__name__}: {last_error}",
            x=None,
            runtime_s=time.perf_counter() - t0,
            solver=solver,
        )
    status, raw, xv = _picos_outcome(solution, x)
    return ConicResult(
        status=status, raw_status=raw, x=xv, runtime_s=time.perf_counter() - t0, solver=solver
    )


def _picos_problem(picos: Any, prog: ConeProgram) -> Tuple[Any, Any]:
    """``(problem, x)``: ``prog`` as a PICOS problem over the variable ``x``."""
    import cvxopt
    from picos.expressions import AffineExpression

    def _cvx(a: np.ndarray):
        a = np.asarray(a, dtype=float)
        if np.count_nonzero(a) < 0.3 * a.size:
            r, c = np.nonzero(a)
            return cvxopt.spmatrix(a[r, c].tolist(), r.tolist(), c.tolist(), a.shape)
        return cvxopt.matrix(a)

    def affine(name: str, shape: Tuple[int, int], lin: np.ndarray, const: np.ndarray):
        # vec(expr) = lin x + const (column-major), built in one step (no operator chain)
        coefs = {x: _cvx(lin)}
        if np.any(const):
            coefs[()] = cvxopt.matrix(np.asarray(const, dtype=float).reshape(-1, 1))
        return AffineExpression(name, shape, coefs)

    P = picos.Problem()
    x = picos.RealVariable("x", prog.n)
    equalities, inequalities = prog.equalities(), prog.inequalities()
    if equalities is not None:
        A_eq, b_eq = equalities
        P.add_constraint(affine("Ax-b", (A_eq.shape[0], 1), A_eq, -b_eq) == 0)
    if inequalities is not None:
        G, h = inequalities
        P.add_constraint(affine("Gx-h", (G.shape[0], 1), G, -h) <= 0)
    for j, (L, B) in enumerate(prog.lmis):
        k = B.shape[0]
        P.add_constraint(affine(f"P{j}", (k, k), L, B.reshape(-1, order="F")) >> 0)
    if prog.objective == "linear":
        P.set_objective("min", affine("cx", (1, 1), prog.linear_cost()[None, :], np.zeros(1)))
    else:
        F, g = prog.least_squares()
        r = affine("Fx-g", (F.shape[0], 1), F, -g)
        if prog.objective == "schur":
            t = picos.RealVariable("t")
            P.add_constraint(picos.block([[t, r.T], [r, "I"]]) >> 0)
            P.set_objective("min", t)
        else:  # norm and sqnorm share the minimiser; the norm is better conditioned
            P.set_objective("min", picos.Norm(r))
    return P, x


def _picos_options(
    P: Any, prog: ConeProgram, solver: str, max_seconds: float | None
) -> List[Dict[str, Any]]:
    """Set the solver options of ``P``; returns the option sets to try in turn."""
    P.options.solver = solver
    P.options.verbosity = 0
    if solver != "cvxopt":
        if max_seconds is not None:
            P.options.timelimit = float(max_seconds)
        return [{}]
    # PICOS lifts CVXOPT's iteration cap (1e6), which makes infeasible SDPs
    # crawl; CVXOPT has no wall-clock limit, so cap the iterations instead.
    big = max((B.shape[0] for _, B in prog.lmis), default=0) > 16 or prog.objective == "schur"
    P.options.max_iterations = _CVXOPT_MAX_ITERS_LARGE if big else _CVXOPT_MAX_ITERS
    if max_seconds is not None:
        logger.debug("CVXOPT has no time limit; max_seconds=%s not enforced", max_seconds)
    # Unregularised Cholesky KKT solves first (CVXOPT's default); on a numerical
    # breakdown (ArithmeticError/ValueError) retry once with regularised LDL.
    return [
        {"cvxopt_kktsolver": None, "cvxopt_kktreg": None},
        {"cvxopt_kktsolver": "ldl", "cvxopt_kktreg": 1e-9},
    ]


def _picos_solve(
    picos: Any, P: Any, attempts: List[Dict[str, Any]], solver: str
) -> Tuple[Any, BaseException | None]:
    """``(solution, last error)`` of the first option set that solves ``P`` (None, error)."""
    last_error: BaseException | None = None
    for opts in attempts:
        for key, value in opts.items():
            P.options[key] = value
        try:
            solution = P.solve(primals=None)
        except picos.SolutionFailure as exc:
            last_error = exc
        except (ArithmeticError, ValueError) as exc:
            logger.debug("PICOS/%s solve failed (%s): %s", solver, opts, exc)
            last_error = exc
        else:
            if solution is not None:
                return solution, last_error
    return None, last_error


def _picos_outcome(solution: Any, x: Any) -> Tuple[str, str, np.ndarray | None]:
    """``(status, raw status, x)`` of a PICOS solution (x None unless optimal and finite)."""
    raw = str(solution.claimedStatus)
    xv: np.ndarray | None = None
    if raw == "optimal" and x.value is not None:
        xv = np.asarray(x.np, dtype=float).reshape(-1)
        if not np.all(np.isfinite(xv)):
            xv, raw = None, "non-finite solution"
    if xv is not None:
        return "optimal", raw, xv
    problem_status = str(solution.problemStatus)
    status = _norm_status(raw if raw not in ("unknown", "optimal") else problem_status)
    if status == "unknown" and problem_status not in ("unknown", ""):
        status = _norm_status(problem_status)
    return status, f"{raw} (problem {problem_status})", xv


def _norm_status(text: Any) -> str:
    return str(text).strip().lower().replace(" ", "_") or "unknown"


# ---------------------------------------------------------------------------
# Clarabel back-end
# ---------------------------------------------------------------------------
def _import_clarabel():
    """The ``clarabel`` module (extra ``fast``)."""
    return require("clarabel", extra="fast", purpose="solver='clarabel'")


_SVEC_CACHE: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}


def _svec_rows(k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Column-major indices of the upper triangle of a k×k matrix and the √2 scaling.

    Clarabel's ``PSDTriangleConeT(k)`` holds the upper triangle stacked by
    columns with off-diagonal entries multiplied by √2.
    """
    if k not in _SVEC_CACHE:
        idx, scale = [], []
        for col in range(k):
            for row in range(col + 1):
                idx.append(col * k + row)  # column-major position of (row, col)
                scale.append(1.0 if row == col else np.sqrt(2.0))
        _SVEC_CACHE[k] = (np.asarray(idx), np.asarray(scale))
    return _SVEC_CACHE[k]


def _solve_clarabel(prog: ConeProgram, max_seconds: float | None) -> ConicResult:
    """Clarabel on the standard form; ``sqnorm`` first as a quadratic objective.

    A quadratic objective gives the most accurate minimiser; on degenerate
    optima (several LMIs active) Clarabel may stop at reduced accuracy, and
    the second-order-cone epigraph form of the same least squares is tried
    next (same minimiser, more robust).
    """
    clarabel = _import_clarabel()
    t0 = time.perf_counter()
    forms = ["quadratic", "cone"] if prog.objective == "sqnorm" else ["cone"]
    raw = "not run"
    for form in forms:
        sol, n_aux = _clarabel_once(clarabel, prog, form, max_seconds)
        raw = str(sol.status)
        if raw == "Solved":
            xv = np.asarray(sol.x, dtype=float)[: prog.n]
            if np.all(np.isfinite(xv)):
                return ConicResult(
                    status="optimal",
                    raw_status=raw if form == "cone" or len(forms) == 1 else f"{raw} ({form})",
                    x=xv,
                    runtime_s=time.perf_counter() - t0,
                    solver=CLARABEL,
                )
            raw = "non-finite solution"
        logger.debug("Clarabel (%s form) stopped with %s", form, raw)
        if raw in ("PrimalInfeasible", "DualInfeasible", "MaxTime"):
            break  # a certificate or the time budget: another form will not help
    return ConicResult(
        status=_camel_to_snake(raw),
        raw_status=raw,
        x=None,
        runtime_s=time.perf_counter() - t0,
        solver=CLARABEL,
    )


def _clarabel_once(clarabel: Any, prog: ConeProgram, form: str, max_seconds: float | None):
    from scipy import sparse

    n = prog.n
    epigraph = prog.objective in ("norm", "schur") or (
        prog.objective == "sqnorm" and form == "cone"
    )
    aux = 1 if epigraph else 0  # epigraph variable t
    nx = n + aux
    rows_A: List[np.ndarray] = []
    rows_b: List[np.ndarray] = []
    cones: List[Any] = []

    def pad(M: np.ndarray) -> np.ndarray:
        return np.hstack([M, np.zeros((M.shape[0], aux))]) if aux else M

    equalities, inequalities = prog.equalities(), prog.inequalities()
    if equalities is not None:
        A_eq, b_eq = equalities
        rows_A.append(pad(A_eq))
        rows_b.append(b_eq)
        cones.append(clarabel.ZeroConeT(A_eq.shape[0]))
    if inequalities is not None:
        G, h = inequalities
        rows_A.append(pad(G))
        rows_b.append(h)
        cones.append(clarabel.NonnegativeConeT(G.shape[0]))
    if epigraph and prog.objective != "schur":  # (t, g − F x) ∈ SOC
        F, g = prog.least_squares()
        top = np.zeros((1, nx))
        top[0, n] = -1.0
        rows_A.append(np.vstack([top, pad(F)]))
        rows_b.append(np.concatenate([[0.0], g]))
        cones.append(clarabel.SecondOrderConeT(F.shape[0] + 1))
    for L, B in prog.lmis:
        k = B.shape[0]
        idx, scale = _svec_rows(k)
        # s = svec(mat(L x) + B) = b − A x  ⇒  A = −S L, b = S vec(B)
        rows_A.append(pad(-(scale[:, None] * L[idx])))
        rows_b.append(scale * B.reshape(-1, order="F")[idx])
        cones.append(clarabel.PSDTriangleConeT(k))
    if prog.objective == "schur":  # [[t, rᵀ], [r, I]] ⪰ 0, r = F x − g
        F, g = prog.least_squares()
        kf = F.shape[0]
        k = kf + 1
        Lf = np.zeros((k * k, nx))
        Bf = np.zeros((k, k))
        Lf[0, n] = 1.0  # (0, 0) ← t
        for i in range(kf):
            Lf[(i + 1), :n] = F[i]  # (i+1, 0)
            Lf[(i + 1) * k, :n] = F[i]  # (0, i+1)
            Bf[i + 1, 0] = Bf[0, i + 1] = -g[i]
            Bf[i + 1, i + 1] = 1.0
        idx, scale = _svec_rows(k)
        rows_A.append(-(scale[:, None] * Lf[idx]))
        rows_b.append(scale * Bf.reshape(-1, order="F")[idx])
        cones.append(clarabel.PSDTriangleConeT(k))
    q = np.zeros(nx)
    if prog.objective == "sqnorm" and not epigraph:  # ½xᵀ(2FᵀF)x − 2gᵀFx
        F, g = prog.least_squares()
        P = sparse.triu(sparse.csc_matrix(2.0 * (F.T @ F)), format="csc")
        q[:n] = -2.0 * (F.T @ g)
    else:
        P = sparse.csc_matrix((nx, nx))
        if prog.objective == "linear":
            q[:n] = prog.linear_cost()
        else:
            q[n] = 1.0
    A = sparse.csc_matrix(np.vstack(rows_A)) if rows_A else sparse.csc_matrix((0, nx))
    b = np.concatenate(rows_b) if rows_b else np.zeros(0)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    if max_seconds is not None:
        settings.time_limit = float(max_seconds)
    return clarabel.DefaultSolver(P, q, A, b, cones, settings).solve(), aux


def _camel_to_snake(text: str) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out) or "unknown"
