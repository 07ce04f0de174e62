"""Physical-plausibility checks of identification data (units, derivatives, filter).

Four named data checks, run on the active-joint signals once they are
conditioned (the raw signals, as loaded, serve as the reference). Each returns
a :class:`~figaroh._run.data_checks.DataFinding`; a failed one is a warning:
the fit still runs as under figaroh 1.0.2, stage ``data`` fails and
``verify()`` fails on the guard ``data_check:<name>``.

* ``joint_limits`` — a conditioned position lies outside the URDF limits
  ``[lowerPositionLimit, upperPositionLimit]`` by more than a margin
  (:data:`JOINT_LIMIT_MARGIN` [rad], :data:`PRISMATIC_LIMIT_MARGIN` [m]);
  continuous joints and joints without finite limits are not checked. When the
  positions × π/180 (× 1/1000 for a prismatic joint) would lie inside the
  limits, the message says the log is in degrees (millimetres).
* ``velocity_consistency`` — given velocities ``v`` (not differentiated by
  figaroh) disagree with the time derivative ``v̂ = dq/dt``
  (``np.gradient`` over the timestamps) of the positions: per moving joint the
  relative mismatch ``‖v − v̂‖ / ‖v̂‖`` exceeds :data:`VELOCITY_TOLERANCE`, on
  the conditioned signals *and* on the raw ones (the filter's edge transients
  and a unit conversion done by a ``process_kinematics_data`` override cannot
  trip it). The message names swapped columns and the scale (×180/π, ×1000,
  −1) that reconciles them.
* ``acceleration_consistency`` — the same for given accelerations against the
  derivative of the velocities (:data:`ACCELERATION_TOLERANCE`).
* ``excitation_retained`` — the low-pass filter removed the motion: per moving
  joint the fraction of the raw position variance the conditioned positions do
  not retain, ``1 − corr(q_raw, q_filtered)²``, exceeds
  :data:`EXCITATION_TOLERANCE` and is well above the fraction explained by
  sensor noise (``σ̂² / var(q_raw)`` with ``σ̂² = var(Δ²q_raw) / 6``, the
  white-noise variance estimated from second differences). The message names
  ``signal_processing.cutoff_frequency`` and the dominant frequency of the
  motion (peak of the Hann-windowed spectrum of the raw positions).

Every margin and tolerance is a key of the identification task's
``data_checks`` mapping (:data:`PLAUSIBILITY_DEFAULTS`). The checks are
vectorised, O(samples · joints).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh._run.data_checks import DataFinding

__all__ = [
    "ACCELERATION_TOLERANCE",
    "EXCITATION_TOLERANCE",
    "JOINT_LIMIT_MARGIN",
    "MIN_JOINT_RANGE",
    "PLAUSIBILITY_CHECKS",
    "PLAUSIBILITY_DEFAULTS",
    "PRISMATIC_LIMIT_MARGIN",
    "VELOCITY_TOLERANCE",
    "derivative_finding",
    "excitation_finding",
    "joint_limit_finding",
    "model_joint_limits",
    "plausibility_checks",
]

#: Names of the checks of this module.
PLAUSIBILITY_CHECKS = (
    "joint_limits",
    "velocity_consistency",
    "acceleration_consistency",
    "excitation_retained",
)

#: Accepted excursion beyond the URDF limits of a revolute joint [rad].
JOINT_LIMIT_MARGIN = 0.1
#: Accepted excursion beyond the URDF limits of a prismatic joint [m].
PRISMATIC_LIMIT_MARGIN = 0.01
#: Largest accepted ``‖v − dq/dt‖ / ‖dq/dt‖`` of given velocities (real logs:
#: 0.005 on simulated UR10 data, about 0.15 on TIAGo's drive velocities, which
#: lag the encoder positions by a few samples).
VELOCITY_TOLERANCE = 0.5
#: Largest accepted ``‖a − dv/dt‖ / ‖dv/dt‖`` of given accelerations.
ACCELERATION_TOLERANCE = 0.8
#: Largest accepted fraction of a joint's raw position variance removed by the
#: low-pass filter (valid logs: below 1e-5).
EXCITATION_TOLERANCE = 0.05
#: Joints whose position range is below this [rad or m] are not checked by
#: ``velocity_consistency`` (their derivative is sensor noise).
MIN_JOINT_RANGE = 1e-2
#: ``excitation_retained`` fails only when the removed fraction exceeds this
#: many times the fraction explained by white sensor noise.
_NOISE_FACTOR = 10.0
#: Absolute |limit| at or above which a URDF limit counts as unset.
_UNSET_LIMIT = 1e10
#: Relative accuracy for a fitted scale to be named (×180/π, ×1000, …).
_SCALE_TOLERANCE = 0.05
#: Span [s] of the moving average applied to both sides of the raw comparison
#: of ``velocity_consistency`` (keeps differentiated encoder noise out).
_SMOOTHING_SECONDS = 0.05

#: Keys of the ``data_checks`` mapping read by these checks, with their defaults.
PLAUSIBILITY_DEFAULTS: Mapping[str, float] = {
    "joint_limit_margin": JOINT_LIMIT_MARGIN,
    "prismatic_limit_margin": PRISMATIC_LIMIT_MARGIN,
    "velocity_tolerance": VELOCITY_TOLERANCE,
    "acceleration_tolerance": ACCELERATION_TOLERANCE,
    "excitation_tolerance": EXCITATION_TOLERANCE,
}


# ---------------------------------------------------------------- joint limits
def model_joint_limits(model: Any, names: Sequence[str]) -> Tuple[np.ndarray, ...]:
    """URDF position limits of the named one-coordinate joints of a Pinocchio ``model``.

    Args:
        model: Pinocchio model (``getJointId``, ``joints``, ``lowerPositionLimit``,
            ``upperPositionLimit``).
        names: Active joint names.

    Returns:
        ``(lower, upper, prismatic)``, each (n,): limits [rad or m] (NaN for a
        continuous, multi-coordinate or unknown joint, or when the model has no
        limits) and whether the joint is prismatic.
    """
    n = len(names)
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)
    prismatic = np.zeros(n, dtype=bool)
    lo = getattr(model, "lowerPositionLimit", None)
    hi = getattr(model, "upperPositionLimit", None)
    if lo is None or hi is None or not hasattr(model, "getJointId") or not hasattr(model, "joints"):
        return lower, upper, prismatic
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    for k, name in enumerate(names):
        jid = int(model.getJointId(str(name)))
        if jid <= 0 or jid >= len(model.joints) or model.joints[jid].nq != 1:
            continue
        joint = model.joints[jid]
        lower[k], upper[k] = lo[joint.idx_q], hi[joint.idx_q]
        kind = joint.shortname()
        prismatic[k] = "Prismatic" in kind or kind in (
            "JointModelPX",
            "JointModelPY",
            "JointModelPZ",
        )
    return lower, upper, prismatic


def joint_limit_finding(
    positions: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    prismatic: np.ndarray,
    names: Sequence[str],
    margin: float = JOINT_LIMIT_MARGIN,
    prismatic_margin: float = PRISMATIC_LIMIT_MARGIN,
) -> DataFinding:
    """Check ``joint_limits``: every position within ``[lower − margin, upper + margin]``.

    Args:
        positions: (N, n) conditioned active-joint positions [rad or m].
        lower: (n,) lower limits [rad or m]; NaN, infinite, ``|x| ≥ 1e10`` or
            ``lower ≥ upper`` means not checked.
        upper: (n,) upper limits [rad or m].
        prismatic: (n,) the joint is prismatic (margin and unit in m).
        names: Active joint names.
        margin: Revolute margin [rad].
        prismatic_margin: Prismatic margin [m].
    """
    q = np.asarray(positions, dtype=float)
    if not q.size:
        return DataFinding("joint_limits", True)
    with np.errstate(invalid="ignore"):
        checked = (
            np.isfinite(lower)
            & np.isfinite(upper)
            & (np.abs(lower) < _UNSET_LIMIT)
            & (np.abs(upper) < _UNSET_LIMIT)
            & (upper > lower)
        )
    lo, hi = np.where(checked, lower, -np.inf), np.where(checked, upper, np.inf)
    tol = np.where(prismatic, prismatic_margin, margin)
    qmin, qmax = q.min(axis=0), q.max(axis=0)
    below, above = (lo - tol) - qmin, qmax - (hi + tol)
    bad = np.flatnonzero(checked & ((below > 0) | (above > 0)))
    if not bad.size:
        return DataFinding("joint_limits", True)
    scale = np.where(prismatic, 1e-3, np.pi / 180.0)
    smin, smax = np.minimum(qmin * scale, qmax * scale), np.maximum(qmin * scale, qmax * scale)
    fits = (smin >= lo - tol) & (smax <= hi + tol)
    parts = []
    for j in bad.tolist():
        unit = "m" if prismatic[j] else "rad"
        worst = qmin[j] if below[j] >= above[j] else qmax[j]
        parts.append(
            f"joint {names[j]} reaches {worst:.6g} {unit}, outside its URDF limits "
            f"[{lower[j]:.4g}, {upper[j]:.4g}] {unit}"
        )
    if np.all(fits[bad]):
        revolute = [j for j in bad if not prismatic[j]]
        hints = []
        if revolute:
            hints.append(
                "positions look like degrees: convert them to radians (np.deg2rad) in "
                "load_trajectory_data()"
            )
        if len(revolute) < len(bad):
            hints.append("prismatic positions look like millimetres: divide them by 1000")
        fix = "; ".join(hints)
    else:
        fix = (
            "check the units of 'positions' (radians, metres), the column order "
            "(joints.active_joints), the encoder zero offsets, or the joint's <limit> in the "
            f"URDF (margin: data_checks.joint_limit_margin = {margin:g} rad, "
            f"data_checks.prismatic_limit_margin = {prismatic_margin:g} m)"
        )
    return DataFinding(
        "joint_limits",
        False,
        "'positions' outside the joint limits: " + "; ".join(parts) + f": {fix}",
    )


# ---------------------------------------------------------------- derivatives
#: Scale factors a derivative mismatch is recognised as, with their likely cause.
_SCALES = (
    (
        180.0 / np.pi,
        "look like degrees (×180/π): convert the {key} to radians (np.deg2rad)",
    ),
    (
        np.pi / 180.0,
        "are π/180 × the derivative: the {ref} look like degrees; convert them to radians "
        "(np.deg2rad)",
    ),
    (
        1e3,
        "are ×1000 the derivative: {key} in milli-units (mm, mrad: divide them by 1000) "
        "or timestamps in milliseconds",
    ),
    (
        1e-3,
        "are ×0.001 the derivative: {ref} in milli-units (mm, mrad: divide them by 1000) "
        "or timestamps in kiloseconds",
    ),
    (-1.0, "have the opposite sign: negate the {key} columns or fix the joint axis"),
)


_SINGULAR = {"velocities": "velocity", "accelerations": "acceleration"}
_DERIVATIVES = {"velocities": "dq/dt", "accelerations": "dv/dt"}
_SYMBOLS = {"velocities": "‖v − dq/dt‖ / ‖dq/dt‖", "accelerations": "‖a − dv/dt‖ / ‖dv/dt‖"}


def _mismatch(
    t: np.ndarray, ref: np.ndarray, given: np.ndarray, window: int
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(E, d, g)``: (n, n) ``E[i, j] = ‖g_i − d_j‖ / ‖d_j‖`` with ``d = d ref / dt``.

    With ``window > 1`` both ``d`` and ``g`` are moving averages over
    ``window`` samples (the comparison is unchanged for consistent signals).
    """
    d = np.gradient(ref, t, axis=0)
    g = given
    if window > 1:
        from scipy.ndimage import uniform_filter1d

        d = uniform_filter1d(d, window, axis=0, mode="nearest")
        g = uniform_filter1d(g, window, axis=0, mode="nearest")
    dn = np.linalg.norm(d, axis=0)
    cross = g.T @ d
    sq = np.sum(g * g, axis=0)[:, None] - 2.0 * cross + (dn * dn)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(np.maximum(sq, 0.0)) / dn[None, :], d, g


def _scale_hint(g: np.ndarray, d: np.ndarray, tol: float, key: str, ref: str) -> str:
    """The scale ``s`` minimising ``‖g − s·d‖``, named when it reconciles the signals."""
    dd = float(d @ d)
    gg = float(g @ g)
    if dd <= 0 or gg <= 0:
        return ""
    s = float(g @ d) / dd
    if np.linalg.norm(g - s * d) > tol * np.sqrt(gg):
        return ""
    for factor, text in _SCALES:
        if abs(s / factor - 1.0) <= _SCALE_TOLERANCE:
            return text.format(key=key, ref=ref)
    return f"are ×{s:.4g} the derivative: check the unit or gear-ratio conversion of the {key}"


def _derivative_problems(
    t: np.ndarray,
    ref: np.ndarray,
    given: np.ndarray,
    moving: np.ndarray,
    tol: float,
    window: int,
) -> np.ndarray:
    """(n,) the moving joints whose given signal mismatches the derivative by more than ``tol``."""
    e, _, _ = _mismatch(t, ref, given, window)
    diag = np.diagonal(e)
    return moving & ~(diag <= tol)


def _time(t: Any, n: int) -> np.ndarray | None:
    arr = np.asarray(t, dtype=float).reshape(-1)
    if arr.shape[0] != n or n < 3 or np.any(np.diff(arr) <= 0):
        return None
    return arr


def derivative_finding(
    key: str,
    ref_key: str,
    processed: Tuple[np.ndarray, np.ndarray, np.ndarray],
    raw: Tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    names: Sequence[str],
    moving: np.ndarray,
    tolerance: float,
    config_key: str,
    check: str = "velocity_consistency",
) -> DataFinding:
    """Check given ``key`` signals against the time derivative of ``ref_key`` signals.

    A joint fails when its relative mismatch ``‖g − dr/dt‖ / ‖dr/dt‖`` exceeds
    ``tolerance`` on the conditioned signals and on the raw ones (when given,
    compared after a moving average over 0.05 s applied to both).

    Args:
        key: ``"velocities"`` or ``"accelerations"`` (the given signal).
        ref_key: ``"positions"`` or ``"velocities"`` (differentiated).
        processed: ``(timestamps (N,) [s], reference (N, n), given (N, n))`` conditioned.
        raw: The same as loaded, or None.
        names: Active joint names.
        moving: (n,) the joints to check (position range above
            :data:`MIN_JOINT_RANGE`).
        tolerance: Largest accepted relative mismatch.
        config_key: ``data_checks`` key of the tolerance (for the message).
        check: The finding's check name.
    """
    t, ref, given = processed
    bad = _derivative_problems(t, ref, given, moving, tolerance, 1)
    if not bad.any():
        return DataFinding(check, True)
    if raw is not None:
        rt = raw[0]
        window = max(1, int(round(_SMOOTHING_SECONDS / float(np.median(np.diff(rt))))))
        bad &= _derivative_problems(rt, raw[1], raw[2], moving, tolerance, window)
        if not bad.any():
            return DataFinding(check, True)
        t, ref, given = raw
    else:
        window = 1
    e, d, g = _mismatch(t, ref, given, window)
    idx = np.flatnonzero(bad)
    parts: List[str] = []
    explained: set[int] = set()
    for a in idx.tolist():
        for b in idx.tolist():
            if a < b and e[a, b] <= tolerance and e[b, a] <= tolerance:
                parts.append(
                    f"{_SINGULAR[key]} columns of joints {names[a]} and {names[b]} look swapped "
                    f"(each matches the other joint's {_DERIVATIVES[key]}): put the columns in "
                    "joints.active_joints order"
                )
                explained.update((a, b))
    groups: Dict[str, List[str]] = {}
    for j in idx.tolist():
        if j in explained:
            continue
        mismatch = f"{e[j, j]:.3g}" if np.isfinite(e[j, j]) else "inf"
        hint = _scale_hint(g[:, j], d[:, j], tolerance, key, ref_key)
        others = [i for i in range(e.shape[0]) if i != j and e[i, j] <= tolerance]
        if not hint and others:
            hint = (
                f"the {_SINGULAR[key]} column of joint {names[others[0]]} matches it: put the "
                "columns in joints.active_joints order"
            )
        elif hint:
            hint = f"the {key} {hint}"
        groups.setdefault(hint, []).append(f"{names[j]} ({mismatch})")
    symbol = _SYMBOLS[key]
    for hint, joints in groups.items():
        label = "joint" if len(joints) == 1 else "joints"
        parts.append(f"{label} {', '.join(joints)}" + (f": {hint}" if hint else ""))
    return DataFinding(
        check,
        False,
        f"the given '{key}' are not the time derivative of the '{ref_key}' (mismatch "
        f"{symbol} per joint above data_checks.{config_key} = {tolerance:g}): "
        + "; ".join(parts)
        + f". Fix the '{key}' columns of load_trajectory_data(), or return {key} = None "
        f"to let figaroh differentiate the {ref_key}",
    )


# ---------------------------------------------------------------- excitation
def _aligned_raw(raw_t: np.ndarray, raw_q: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """Rows of ``raw_q`` at the conditioned timestamps ``t`` (edges dropped), or None."""
    m = t.shape[0]
    if raw_q.shape[0] == m:
        return raw_q
    start = int(np.searchsorted(raw_t, t[0]))
    if start + m > raw_t.shape[0] or not np.allclose(raw_t[start : start + m], t):
        return None
    return raw_q[start : start + m]


def _dominant_frequency(x: np.ndarray, dt: float) -> np.ndarray:
    """(n,) frequency [Hz] of the largest peak (DC excluded) of each column's spectrum."""
    xc = x - x.mean(axis=0)
    spectrum = np.abs(np.fft.rfft(xc * np.hanning(x.shape[0])[:, None], axis=0))
    f = np.fft.rfftfreq(x.shape[0], dt)
    if f.size < 2:
        return np.zeros(x.shape[1])
    peaks: np.ndarray = f[1 + np.argmax(spectrum[1:], axis=0)]
    return peaks


def excitation_finding(
    raw_t: np.ndarray,
    raw_q: np.ndarray,
    t: np.ndarray,
    q: np.ndarray,
    names: Sequence[str],
    cutoff: float | None,
    tolerance: float = EXCITATION_TOLERANCE,
) -> DataFinding:
    """Check ``excitation_retained``: the filtered positions keep the raw motion.

    Per joint, ``r = 1 − corr(q_raw, q)²`` is the fraction of the raw position
    variance the conditioned positions do not retain (invariant to a unit
    conversion by a ``process_kinematics_data`` override). A joint fails when
    ``r > tolerance`` and ``r > 10 · σ̂² / var(q_raw)`` (``σ̂² = var(Δ²q_raw) /
    6``: a filter that only removes white sensor noise passes).

    Args:
        raw_t: (M,) raw timestamps [s].
        raw_q: (M, n) raw positions [rad or m] (M ≥ N: rows the conditioning
            dropped at the edges are matched by timestamp).
        t: (N,) conditioned timestamps [s].
        q: (N, n) conditioned positions [rad or m].
        names: Active joint names.
        cutoff: Low-pass cut-off [Hz] (for the message).
        tolerance: Largest accepted removed fraction.
    """
    x = _aligned_raw(raw_t, raw_q, t) if raw_q.shape[1] == q.shape[1] else None
    if x is None or x.shape[0] < 8:
        return DataFinding("excitation_retained", True)
    xc, yc = x - x.mean(axis=0), q - q.mean(axis=0)
    vx, vy = np.sum(xc * xc, axis=0), np.sum(yc * yc, axis=0)
    moving = vx > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.where(vy > 0, np.sum(xc * yc, axis=0) / np.sqrt(vx * vy), 0.0)
    removed = np.where(moving, 1.0 - np.minimum(corr * corr, 1.0), 0.0)
    bad = removed > tolerance
    if not bad.any():
        return DataFinding("excitation_retained", True)
    noise = np.var(np.diff(x, n=2, axis=0), axis=0) / 6.0
    with np.errstate(divide="ignore", invalid="ignore"):
        noise_fraction = noise * x.shape[0] / vx
    bad &= removed > _NOISE_FACTOR * noise_fraction
    if not bad.any():
        return DataFinding("excitation_retained", True)
    idx = np.flatnonzero(bad)
    dt = float(np.median(np.diff(t)))
    f_dom = _dominant_frequency(x[:, idx], dt)
    joints = "; ".join(
        f"joint {names[j]}: {100 * removed[j]:.3g} % (dominant frequency {f:.3g} Hz)"
        for j, f in zip(idx.tolist(), f_dom, strict=True)
    )
    top = float(f_dom.max())
    cut = "the configured" if cutoff is None else f"{float(cutoff):g} Hz"
    return DataFinding(
        "excitation_retained",
        False,
        f"the low-pass filter (signal_processing.cutoff_frequency = {cut}) removed the "
        f"excitation: share of the raw position variance lost by filtering ({joints}; "
        f"tolerance data_checks.excitation_tolerance = {tolerance:g}); the identified "
        "parameters then fit the filter's output, not the robot. Raise "
        "signal_processing.cutoff_frequency (filter_params.f_butter) well above the motion's "
        f"dominant frequency {top:.3g} Hz, e.g. to ≥ {max(10 * top, 1.0):.3g} Hz",
    )


# ---------------------------------------------------------------- all three
def _signals(
    data: Mapping[str, Any], ref_key: str, key: str, n: int
) -> Tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(t, ref, given)`` of a data dict, or None when one is missing or mis-shaped."""
    if data.get(key) is None or data.get(ref_key) is None or data.get("timestamps") is None:
        return None
    ref = np.asarray(data[ref_key], dtype=float)
    given = np.asarray(data[key], dtype=float)
    ref = ref.reshape(ref.shape[0], -1)
    given = given.reshape(given.shape[0], -1)
    t = _time(data["timestamps"], ref.shape[0])
    if t is None or given.shape != ref.shape or ref.shape[1] != n:
        return None
    return t, ref, given


def plausibility_checks(
    raw: Mapping[str, Any],
    processed: Mapping[str, Any],
    model: Any,
    names: Sequence[str],
    cutoff: float | None,
    options: Mapping[str, float],
) -> Tuple[DataFinding, ...]:
    """The findings of :data:`PLAUSIBILITY_CHECKS` (a check with nothing to check passes).

    Args:
        raw: The loaded active-joint data (``"timestamps"`` [s], ``"positions"``,
            optional ``"velocities"`` / ``"accelerations"``): a signal present
            here was *given*, not differentiated by figaroh.
        processed: The conditioned data, same keys (N, n); finite.
        model: Pinocchio model (URDF limits; checks skipped without them).
        names: Active joint names (n).
        cutoff: Low-pass cut-off ``filter_params.f_butter`` [Hz], or None.
        options: Margins and tolerances (:data:`PLAUSIBILITY_DEFAULTS` keys).
    """
    opts = {
        **PLAUSIBILITY_DEFAULTS,
        **{k: v for k, v in options.items() if k in PLAUSIBILITY_DEFAULTS},
    }
    n = len(names)
    q = np.asarray(processed["positions"], dtype=float)
    q = q.reshape(q.shape[0], -1)
    lower, upper, prismatic = model_joint_limits(model, names)
    findings = [
        joint_limit_finding(
            q,
            lower,
            upper,
            prismatic,
            names,
            opts["joint_limit_margin"],
            opts["prismatic_limit_margin"],
        )
        if q.shape[1] == n
        else DataFinding("joint_limits", True)
    ]
    moving = np.ptp(q, axis=0) > MIN_JOINT_RANGE
    for key, ref_key, tol_key, check in (
        ("velocities", "positions", "velocity_tolerance", "velocity_consistency"),
        ("accelerations", "velocities", "acceleration_tolerance", "acceleration_consistency"),
    ):
        given = None if raw.get(key) is None else _signals(processed, ref_key, key, n)
        if given is None:
            findings.append(DataFinding(check, True))
            continue
        findings.append(
            derivative_finding(
                key,
                ref_key,
                given,
                _signals(raw, ref_key, key, n),
                names,
                moving,
                opts[tol_key],
                tol_key,
                check,
            )
        )
    excitation = DataFinding("excitation_retained", True)
    t = (
        _time(processed.get("timestamps"), q.shape[0])
        if processed.get("timestamps") is not None
        else None
    )
    if raw.get("positions") is not None and raw.get("timestamps") is not None and t is not None:
        raw_q = np.asarray(raw["positions"], dtype=float)
        raw_q = raw_q.reshape(raw_q.shape[0], -1)
        raw_t = _time(raw["timestamps"], raw_q.shape[0])
        if raw_t is not None:
            excitation = excitation_finding(
                raw_t, raw_q, t, q, names, cutoff, opts["excitation_tolerance"]
            )
    findings.append(excitation)
    return tuple(findings)
