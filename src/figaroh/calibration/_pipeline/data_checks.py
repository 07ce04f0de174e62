"""Physical-plausibility checks of calibration data, before and after the fit.

Every check is a plain function over arrays returning a
:class:`~figaroh._run.data_checks.DataFinding`; a run keeps one finding per
check in a :class:`~figaroh._run.data_checks.DataChecks`. A failed finding
is logged as a warning, recorded in the ``data`` stage and turned by
``verify()`` into a failing required guard ``data_check:<name>``: a
calibration computed from data that failed a check is never reported as a
pass. No check changes the fit: the numbers of a run are those of
figaroh 1.0.2 whether the checks pass or not (none is fatal).

Checks (name — what fails it):

* ``joint_limits`` — a measured joint value lies outside the URDF limits of
  its active joint by more than :data:`JOINT_LIMIT_RELATIVE_MARGIN` of the
  joint's range, and at least :data:`JOINT_LIMIT_MARGIN` [rad] (revolute)
  or :data:`PRISMATIC_LIMIT_MARGIN` [m] (prismatic): a generous URDF or a
  shifted zero passes, a unit error does not; the message says "degrees"
  when the values exceed 2π and × π/180 lie within the limits;
* ``measurement_units`` — the measured positions spread more than
  :data:`POSITION_SCALE_LIMIT` times as far as the nominal forward
  kinematics predicts on the same postures (the median distance to the
  centroid, a ratio blind to the unknown base and tool frames; ≈ 1000 says
  millimetres), or an orientation component has ``|φ| > 2π`` (no angle
  convention in radians reaches it: degrees);
* ``outlier_fraction`` (after the fit) — more than
  :data:`OUTLIER_FRACTION_LIMIT` of the postures have a position error above
  the outlier threshold (``parameters.outlier_threshold``): the residuals are
  at the scale of a unit or model error, not of a few bad postures;
* ``identifiability`` — fewer distinct postures (joint values equal within
  :data:`POSTURE_TOLERANCE`) than :data:`MIN_REDUNDANCY` × parameters /
  measured components per posture; an active joint whose parameters are
  calibrated never moves (range ≤ :data:`MOTION_TOLERANCE`); after the fit,
  the Jacobian of the fitted cost at the solution (``result.jac``, the
  matrix of ``evaluation_metrics["condition_number"]``), its columns scaled
  to unit norm, is rank deficient or has a condition number above
  :data:`CONDITION_LIMIT`.
"""

from __future__ import annotations

import logging
import math
from typing import Iterable, List, Sequence

import numpy as np

from figaroh._run.data_checks import DataChecks, DataFinding

__all__ = [
    "CHECKS",
    "CONDITION_LIMIT",
    "JOINT_LIMIT_MARGIN",
    "JOINT_LIMIT_RELATIVE_MARGIN",
    "MIN_REDUNDANCY",
    "MOTION_TOLERANCE",
    "OUTLIER_FRACTION_LIMIT",
    "POSITION_SCALE_LIMIT",
    "POSTURE_TOLERANCE",
    "PRISMATIC_LIMIT_MARGIN",
    "DataChecks",
    "DataFinding",
    "distinct_postures",
    "identifiability_finding",
    "jacobian_problems",
    "joint_limits_finding",
    "log_failed",
    "measurement_units_finding",
    "outlier_fraction_finding",
]

logger = logging.getLogger(__name__)

#: Names of the checks, in the order they run.
CHECKS = ("joint_limits", "measurement_units", "outlier_fraction", "identifiability")

#: Accepted excess of a joint value beyond its URDF limits, as a fraction of
#: the joint's range (upper − lower).
JOINT_LIMIT_RELATIVE_MARGIN = 0.25
#: Smallest accepted excess of a revolute joint value beyond its URDF limits [rad].
JOINT_LIMIT_MARGIN = 0.1
#: Smallest accepted excess of a prismatic joint value beyond its URDF limits [m].
PRISMATIC_LIMIT_MARGIN = 0.01
#: Largest accepted ratio of the measured to the nominal spread of positions.
POSITION_SCALE_LIMIT = 10.0
#: Largest |orientation component| a measurement in radians can have [rad].
ORIENTATION_LIMIT = 2.0 * math.pi
#: Largest accepted fraction of postures above the outlier threshold.
OUTLIER_FRACTION_LIMIT = 0.5
#: Two postures whose active-joint values all differ by at most this are one [rad or m].
POSTURE_TOLERANCE = 1e-3
#: A joint whose range over the postures is at most this never moved [rad or m].
MOTION_TOLERANCE = 1e-3
#: Required ratio of independent equations (distinct postures × measured
#: components, plus prior equations) to parameters: the residual degrees of
#: freedom must at least equal the parameters for the noise estimate, the
#: outlier test and the standard deviations to mean something.
MIN_REDUNDANCY = 2.0
#: Largest accepted condition number of the cost's Jacobian at the solution,
#: columns scaled to unit norm (independent of the parameters' units).
CONDITION_LIMIT = 1e5

#: Scale ratios that reveal a length unit, and the fix.
_LENGTH_UNITS = (
    (1e3, "millimetres: divide the measured positions by 1000"),
    (1e2, "centimetres: divide the measured positions by 100"),
)
_UNIT_TOLERANCE = 0.3
_FIXES = (
    "add more distinct postures (figaroh postures selects informative ones), or drop the "
    "parameters (calibration_level: joint_offset, known frames, "
    "calibration_tools.drop_calibration_parameters, estimation.method: map)"
)


def log_failed(checks: DataChecks | Iterable[DataFinding]) -> None:
    """Log every failed finding of ``checks`` as a warning."""
    findings = checks.failed if isinstance(checks, DataChecks) else checks
    for f in findings:
        if not f.passed:
            logger.warning("Data check %s failed: %s", f.check, f.message)


def _names(names: Sequence[str], idx: Iterable[int]) -> str:
    return ", ".join(str(names[i]) for i in idx)


def joint_limits_finding(
    q: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    names: Sequence[str],
    revolute: np.ndarray,
) -> DataFinding:
    """Check ``joint_limits``: the measured joint values lie within the URDF limits.

    A value may exceed a limit by ``max(margin, JOINT_LIMIT_RELATIVE_MARGIN ×
    (upper − lower))`` with ``margin`` :data:`JOINT_LIMIT_MARGIN` [rad]
    (revolute) or :data:`PRISMATIC_LIMIT_MARGIN` [m]; joints without finite
    limits are not checked.

    Args:
        q: (N, n) measured values of the n active joints [rad or m].
        lower: (n,) lower limits [rad or m].
        upper: (n,) upper limits [rad or m].
        names: The n joint names.
        revolute: (n,) bool, True for a revolute joint.
    """
    q = np.asarray(q, dtype=float).reshape(len(q), -1)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    revolute = np.asarray(revolute, dtype=bool)
    limited = np.isfinite(lower) & np.isfinite(upper) & (upper - lower < 1e10)
    span = np.where(limited, upper - lower, 0.0)
    margin = np.maximum(
        np.where(revolute, JOINT_LIMIT_MARGIN, PRISMATIC_LIMIT_MARGIN),
        JOINT_LIMIT_RELATIVE_MARGIN * span,
    )
    if not q.size or not limited.any():
        return DataFinding("joint_limits", True)
    out = ((q < lower - margin) | (q > upper + margin)) & limited
    bad = np.flatnonzero(out.any(axis=0))
    if not bad.size:
        return DataFinding("joint_limits", True)
    radians = q * (math.pi / 180.0)
    fits = ((radians >= lower - margin) & (radians <= upper + margin)).all(axis=0)
    fits &= np.max(np.abs(q), axis=0) > 2.0 * math.pi
    parts = [
        f"{names[j]} reaches {q[out[:, j], j][np.argmax(np.abs(q[out[:, j], j]))]:.6g} "
        f"(limits [{lower[j]:.4g}, {upper[j]:.4g}], {int(out[:, j].sum())} of {len(q)} postures)"
        for j in bad.tolist()
    ]
    if all(revolute[j] and fits[j] for j in bad):
        cause = (
            "the joint angles look like degrees: convert the joint columns of the calibration "
            "CSV to radians (× π/180)"
        )
    else:
        cause = (
            "check the units (radians, metres) and the order of the joint columns of the "
            "calibration CSV, and the URDF the robot was loaded from"
        )
    return DataFinding(
        "joint_limits",
        False,
        "measured joint values lie outside the URDF joint limits: "
        + "; ".join(parts)
        + f": {cause}",
    )


def _spread(p: np.ndarray) -> float:
    """Median distance [m] of the finite (M, 3) points ``p`` to their centroid (NaN when none)."""
    p = p[np.all(np.isfinite(p), axis=1)]
    if not len(p):
        return math.nan
    return float(np.median(np.linalg.norm(p - p.mean(axis=0), axis=1)))


def _length_hint(ratio: float) -> str:
    for factor, text in _LENGTH_UNITS:
        if abs(ratio / factor - 1.0) <= _UNIT_TOLERANCE:
            return f"the positions look like {text}"
    return (
        "check the unit of the measured positions (metres expected) and the start/end frames "
        "of the calibration (kinematics.base_frame, kinematics.tool_frame)"
    )


def measurement_units_finding(measured: np.ndarray, nominal: np.ndarray | None) -> DataFinding:
    """Check ``measurement_units``: measured positions in metres, orientations in radians.

    Positions: the ratio of the median distance of the measured positions to
    their centroid over the same figure of the nominal forward kinematics on
    the same postures (per marker; rigid base and tool frames leave it near
    1) must not exceed :data:`POSITION_SCALE_LIMIT`. Orientations: every
    measured component must satisfy ``|φ| ≤ 2π`` [rad].

    Args:
        measured: (N, K, 6) measured ``[x, y, z, φx, φy, φz]`` [m, rad], NaN
            where not measured.
        nominal: (N, K, 6) nominal predictions (all parameters 0), or None.
    """
    measured = np.asarray(measured, dtype=float)
    problems: List[str] = []
    if nominal is not None:
        nominal = np.asarray(nominal, dtype=float)
        for k in range(measured.shape[1]):
            meas, nom = _spread(measured[:, k, :3]), _spread(nominal[:, k, :3])
            if not (np.isfinite(meas) and np.isfinite(nom)) or nom <= 1e-6:
                continue
            ratio = meas / nom
            if ratio > POSITION_SCALE_LIMIT:
                problems.append(
                    f"the measured positions of marker {k + 1} spread {ratio:.4g} times as far as "
                    f"the robot's nominal kinematics on the same postures (median distance to "
                    f"their centroid {meas:.4g} vs {nom:.4g} m): {_length_hint(ratio)}"
                )
    phi = measured[..., 3:]
    phi = phi[np.isfinite(phi)]
    if phi.size:
        peak = float(np.max(np.abs(phi)))
        if peak > ORIENTATION_LIMIT:
            cause = (
                "the orientations look like degrees: convert the phix/phiy/phiz columns to "
                "radians (× π/180)"
                if peak * math.pi / 180.0 <= math.pi + 1e-6
                else "check the unit of the orientation columns (radians expected)"
            )
            problems.append(
                f"a measured orientation component reaches |φ| = {peak:.6g}, beyond 2π rad: "
                + cause
            )
    if not problems:
        return DataFinding("measurement_units", True)
    return DataFinding("measurement_units", False, "; ".join(problems))


def outlier_fraction_finding(errors: np.ndarray | None, threshold: float | None) -> DataFinding:
    """Check ``outlier_fraction``: few postures have a position error above the threshold.

    Fails when more than :data:`OUTLIER_FRACTION_LIMIT` of the postures have
    a position error above ``threshold`` at the solution (excluded postures
    included: the outlier loop keeps postures when excluding them would leave
    too few rows).

    Args:
        errors: (N,) per-posture position error at the solution [m] (worst
            marker), or None when positions are not measured.
        threshold: The outlier threshold [m] (``parameters.outlier_threshold``),
            or None (no outlier test).
    """
    if errors is None or threshold is None:
        return DataFinding("outlier_fraction", True)
    e = np.asarray(errors, dtype=float).ravel()
    if not e.size:
        return DataFinding("outlier_fraction", True)
    over = int(np.count_nonzero(~(e <= float(threshold))))
    if over <= OUTLIER_FRACTION_LIMIT * e.size:
        return DataFinding("outlier_fraction", True)
    return DataFinding(
        "outlier_fraction",
        False,
        f"{over} of {e.size} postures ({100.0 * over / e.size:.0f}%) have a position error above "
        f"parameters.outlier_threshold = {float(threshold):.4g} m after the fit (median "
        f"{float(np.nanmedian(e)):.4g} m, max {float(np.nanmax(e)):.4g} m): residuals at this "
        "scale come from wrong units (positions in millimetres, angles in degrees), a wrong "
        "marker or tool frame, or a wrong URDF, not from a few bad postures; fix the data, "
        "or raise parameters.outlier_threshold if the errors are real",
    )


def distinct_postures(q: np.ndarray, tol: float = POSTURE_TOLERANCE) -> int:
    """Number of distinct rows of ``q`` (N, n): rows equal within ``tol`` count once."""
    q = np.asarray(q, dtype=float).reshape(len(q), -1)
    if not len(q):
        return 0
    return int(len(np.unique(np.round(q / tol), axis=0)))


def _joint_params(joint: str, params: Sequence[str]) -> List[str]:
    return [p for p in params if str(p).endswith("_" + joint)]


def jacobian_problems(jacobian: np.ndarray | None, names: Sequence[str]) -> List[str]:
    """Rank and conditioning problems of the cost's Jacobian at the solution.

    Each column of ``J`` is divided by its norm first (a parameter's unit,
    metres or radians, and the weight of a prior do not count: the scaled
    matrix measures how nearly parallel the parameters' effects are); a zero
    column is a parameter without effect. From the singular values ``s`` of
    the scaled matrix (rows of excluded postures are zero and do not count;
    rows a cost adds, such as regularisation or priors, do): a rank
    ``#{s_i > s_max·max(m, n)·ε}`` below the parameters, or
    ``cond = s_max / s_min >`` :data:`CONDITION_LIMIT`, names the parameters
    carrying the weak directions (components of the right singular vectors
    of ``s_i < s_max / CONDITION_LIMIT`` at least half the largest).

    Args:
        jacobian: (m, n) Jacobian of the cost at the solution
            (``result.jac``), or None.
        names: The n parameter names.
    """
    if jacobian is None:
        return []
    J = np.asarray(jacobian, dtype=float)
    if J.ndim != 2 or J.shape[1] != len(names) or not J.size or not np.all(np.isfinite(J)):
        return []
    norms = np.linalg.norm(J, axis=0)
    if not np.any(norms > 0):
        return [f"the Jacobian of the cost is zero: none of {list(names)} is identifiable"]
    dead = norms <= norms.max() * max(J.shape) * np.finfo(float).eps
    scaled = J / np.where(dead, 1.0, norms)
    scaled[:, dead] = 0.0
    _, s, vt = np.linalg.svd(scaled, full_matrices=False)
    rank = int(np.count_nonzero(s > s[0] * max(J.shape) * np.finfo(float).eps))
    cond = float(s[0] / s[-1]) if s[-1] > 0 else math.inf
    if rank == len(names) and cond <= CONDITION_LIMIT:
        return []
    weak = set(int(j) for j in np.flatnonzero(dead))
    for i in np.flatnonzero(s < s[0] / CONDITION_LIMIT):
        v = np.abs(vt[i])
        weak.update(int(j) for j in np.flatnonzero(v >= 0.5 * v.max()))
    weak_names = [str(names[j]) for j in sorted(weak)]
    return [
        f"the Jacobian of the cost at the solution (columns scaled to unit norm) has rank "
        f"{rank} for {len(names)} parameters and condition number {cond:.3g} (limit "
        f"{CONDITION_LIMIT:.0e}): {weak_names} cannot be identified from these postures"
    ]


def identifiability_finding(
    q: np.ndarray,
    joint_names: Sequence[str],
    param_names: Sequence[str],
    calibrated_names: Sequence[str],
    components_per_posture: int,
    prior_equations: int = 0,
    jacobian: np.ndarray | None = None,
) -> DataFinding:
    """Check ``identifiability``: the postures can identify the parameters.

    Fails when

    * ``distinct × c + prior_equations < MIN_REDUNDANCY × p`` (``distinct``
      postures equal within :data:`POSTURE_TOLERANCE`, ``c`` measured
      components per posture, ``p`` parameters);
    * an active joint with parameters among ``calibrated_names`` never moves
      (range ≤ :data:`MOTION_TOLERANCE`);
    * (after the fit) :func:`jacobian_problems` reports a problem.

    Args:
        q: (N, n) measured values of the n active joints [rad or m].
        joint_names: The n active joint names.
        param_names: The p fitted parameter names.
        calibrated_names: Every parameter the layout calibrates, those the
            frames absorbed included (their joint must move).
        components_per_posture: Measured components per posture (markers ×
            measured components).
        prior_equations: Equations the priors add (nonzero prior weights).
        jacobian: (m, p) Jacobian of the cost at the solution (``result.jac``), or None
            before the fit.
    """
    q = np.asarray(q, dtype=float).reshape(len(q), -1)
    n, p = len(q), len(param_names)
    c = max(1, int(components_per_posture))
    problems: List[str] = []
    distinct = distinct_postures(q)
    if p and distinct * c + int(prior_equations) < MIN_REDUNDANCY * p:
        need = math.ceil((MIN_REDUNDANCY * p - int(prior_equations)) / c)
        repeat = (
            f" ({n - distinct} of the {n} postures repeat another within {POSTURE_TOLERANCE:g} rad)"
            if distinct < n
            else ""
        )
        problems.append(
            f"{distinct} distinct posture{'s' if distinct != 1 else ''}{repeat} × {c} measured "
            "components give "
            f"{distinct * c} independent equations for {p} parameters (at least "
            f"{MIN_REDUNDANCY:g}× the parameters is required): collect at least {need} distinct "
            "postures"
        )
    if distinct > 1:
        still = np.flatnonzero(np.ptp(q, axis=0) <= MOTION_TOLERANCE)
        for j in still.tolist():
            params = _joint_params(str(joint_names[j]), calibrated_names)
            if params:
                problems.append(
                    f"joint {joint_names[j]} never moves (range {float(np.ptp(q[:, j])):.3g} over "
                    f"{n} postures) so its parameters {params} cannot be identified (the "
                    f"calibrated model holds only at {joint_names[j]} = {float(q[0, j]):.6g}): "
                    "move it across its range in the postures or remove its parameters"
                )
    problems += jacobian_problems(jacobian, param_names)
    if not problems:
        return DataFinding("identifiability", True)
    return DataFinding(
        "identifiability",
        False,
        "the parameter set cannot be identified from these postures: "
        + "; ".join(problems)
        + f"; {_FIXES}",
    )
