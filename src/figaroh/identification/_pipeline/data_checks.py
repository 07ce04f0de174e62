"""Data checks run before any identification fit.

Every check is a plain, vectorised function over arrays (O(samples·joints))
returning a :class:`DataFinding`; :class:`DataChecks` holds one finding per
check. A failed finding is logged as a warning and recorded in the ``data``
stage; ``verify()`` turns it into a failing guard ``data_check:<name>``, so a
fit whose inputs failed a check never passes.

Fatal findings (no meaningful result exists): ``solve()`` raises them as a
named :class:`~figaroh.identification.exceptions.IdentificationDataError`
before the fit (:meth:`DataChecks.raise_fatal`):

* ``finite_values`` — a conditioned signal is not finite or overflows
  (``|x| >`` :data:`OVERFLOW_LIMIT`: its squares overflow the least-squares
  sums); the raw signals are checked at load time by :func:`as_numeric` and
  :func:`require_finite`, which raise at once;
* ``sample_mask`` — the sample mask keeps no sample;
* ``joint_motion`` with no joint moving (every position constant, every
  velocity zero);
* ``torque_variation`` — every effort is zero or constant.

Warnings (the script still runs as under figaroh 1.0.2):

* ``joint_motion`` — some joints did not move: the parameters only they excite
  are dropped from the fit;
* ``sampling_interval`` — the median time step differs by more than
  :data:`SAMPLING_TOLERANCE` from ``1 / f_sample`` of the configuration;
* ``magnitudes`` — a velocity or an effort beyond the configured bounds
  (:data:`DEFAULT_BOUNDS`, overridden by the identification task's
  ``data_checks`` mapping);
* ``validation_independent`` — the held-out trajectory equals the training one;
* ``model_inertia`` — a link of the model has a negative mass or an inertia
  matrix that is not positive semi-definite;
* ``joint_limits``, ``velocity_consistency``, ``acceleration_consistency``,
  ``excitation_retained`` — physical plausibility (positions within the URDF
  limits, given derivatives consistent with the positions, a low-pass filter
  that keeps the motion): see
  :mod:`~figaroh.identification._pipeline.plausibility`.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Sequence, Type, cast

import numpy as np

from figaroh._run.data_checks import DataChecks as _DataChecks
from figaroh._run.data_checks import DataFinding
from figaroh.identification._pipeline.plausibility import (
    PLAUSIBILITY_CHECKS,
    PLAUSIBILITY_DEFAULTS,
    plausibility_checks,
)
from figaroh.identification.exceptions import IdentificationConfigError, IdentificationDataError

__all__ = [
    "CHECKS",
    "DEFAULT_BOUNDS",
    "MOTION_TOLERANCE",
    "OVERFLOW_LIMIT",
    "SAMPLING_TOLERANCE",
    "DataChecks",
    "DataFinding",
    "as_numeric",
    "finite_finding",
    "inertia_finding",
    "magnitude_bounds",
    "magnitude_finding",
    "mask_finding",
    "model_finding",
    "motion_finding",
    "require_finite",
    "sampling_finding",
    "torque_finding",
    "training_checks",
    "training_data_checks",
    "validation_finding",
]

logger = logging.getLogger(__name__)

#: Names of the checks (the first three, and ``joint_motion`` when no joint
#: moved, are fatal: ``solve()`` raises).
CHECKS = (
    "finite_values",
    "sample_mask",
    "torque_variation",
    "joint_motion",
    "sampling_interval",
    "magnitudes",
    "validation_independent",
    "model_inertia",
    *PLAUSIBILITY_CHECKS,
)

#: Largest accepted |value| of a signal: above it the squares summed by the
#: least-squares fit overflow float64 (sqrt of the largest double ≈ 1.3e154).
OVERFLOW_LIMIT = 1e100
#: A joint whose position range [rad or m] and largest |velocity| [rad/s or
#: m/s] are both at most this did not move.
MOTION_TOLERANCE = 1e-9
#: Accepted relative difference between the median time step and ``1/f_sample``.
SAMPLING_TOLERANCE = 0.05
#: Default plausibility bounds: largest |velocity| [rad/s or m/s] and largest
#: |effort| [N·m or N]. Keys of the identification task's ``data_checks``.
DEFAULT_BOUNDS: Mapping[str, float] = {"max_abs_velocity": 100.0, "max_abs_torque": 1.0e5}

#: Ratios (median step × f_sample) that reveal a timestamp unit, and the fix.
_TIME_UNITS = (
    (1e3, "milliseconds (×1000): divide the timestamps by 1000"),
    (1e6, "microseconds (×1e6): divide the timestamps by 1e6"),
    (1e9, "nanoseconds (×1e9): divide the timestamps by 1e9"),
    (1e-3, "kiloseconds (×0.001): multiply the timestamps by 1000"),
)


class DataChecks(_DataChecks):
    """The findings of every data check of an identification run (one per check name).

    :class:`figaroh._run.data_checks.DataChecks` whose :meth:`raise_fatal`
    raises :class:`~figaroh.identification.exceptions.IdentificationDataError`.
    """

    def raise_fatal(self, error: Type[Exception] = IdentificationDataError) -> None:
        """Raise the first fatal finding (called before any fit).

        Raises:
            IdentificationDataError: A fatal check failed (its message).
        """
        super().raise_fatal(error)


# ---------------------------------------------------------------- named errors
def as_numeric(key: str, value: Any) -> np.ndarray:
    """``value`` as a float array, or a named error for non-numeric content.

    Raises:
        IdentificationDataError: The array cannot be converted to float.
    """
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise IdentificationDataError(
            f"'{key}' must hold numbers (one float per sample and joint), got "
            f"{type(value).__name__} content that does not convert to float ({exc}); parse "
            "the log into numeric arrays before returning it from load_trajectory_data()"
        ) from None


def require_finite(key: str, arr: np.ndarray, names: Sequence[str]) -> None:
    """Raise for NaN/inf or overflowing (``|x| > OVERFLOW_LIMIT``) entries of ``arr`` (N, n).

    Raises:
        IdentificationDataError: Naming the signal, the first sample and the joint.
    """
    bad = ~np.isfinite(arr)
    kind = "NaN/inf"
    if not bad.any():
        bad = np.abs(arr) > OVERFLOW_LIMIT
        kind = f"an overflowing value (|x| > {OVERFLOW_LIMIT:.0e})"
    if not bad.any():
        return
    table = arr.reshape(arr.shape[0], -1)
    i, j = np.argwhere(bad.reshape(table.shape))[0]
    col = names[j] if j < len(names) else j
    raise IdentificationDataError(
        f"'{key}' contains {kind} (first at sample {i}, joint {col}: {float(table[i, j])!r}); "
        "clean the log or mark the samples invalid with a TrajectoryData mask"
    )


def _moved(positions: np.ndarray, velocities: np.ndarray | None) -> np.ndarray:
    """(n,) bool: the joint's position range or its largest |velocity| exceeds the tolerance."""
    moved: np.ndarray = np.ptp(positions, axis=0) > MOTION_TOLERANCE
    if velocities is not None:
        moved |= np.max(np.abs(velocities), axis=0) > MOTION_TOLERANCE
    return moved


def motion_finding(
    positions: np.ndarray, velocities: np.ndarray | None, names: Sequence[str]
) -> DataFinding:
    """Check ``joint_motion``: every active joint moved (fatal when none did).

    Args:
        positions: (N, n) active-joint positions [rad or m].
        velocities: (N, n) velocities [rad/s or m/s], or None.
        names: The n active joint names.
    """
    moved = _moved(positions, velocities)
    if not moved.any():
        return DataFinding(
            "joint_motion",
            False,
            f"no joint moved: every position of {list(names)} is constant and every velocity "
            "is zero, so no dynamic parameter is excited; record an exciting trajectory "
            "(e.g. figaroh.optimal) and load that log",
            fatal=True,
        )
    still = [str(n) for n, m in zip(names, moved, strict=True) if not m]
    if not still:
        return DataFinding("joint_motion", True)
    return DataFinding(
        "joint_motion",
        False,
        "; ".join(f"joint {n} did not move" for n in still)
        + ": its parameters were dropped (the columns only it excites are zero); move "
        "it in the trajectory or remove it from joints.active_joints",
    )


def torque_finding(torques: np.ndarray, names: Sequence[str]) -> DataFinding:
    """Check ``torque_variation``: some effort column (N, n) [N·m or N] varies (fatal otherwise)."""
    if torques.size == 0:
        return DataFinding("torque_variation", True)
    scale = max(1.0, float(np.max(np.abs(torques))))
    if not np.all(np.ptp(torques, axis=0) <= 1e-12 * scale):
        return DataFinding("torque_variation", True)
    what = "zero" if not np.any(torques) else "constant"
    return DataFinding(
        "torque_variation",
        False,
        f"every torque is {what}: the efforts of {list(names)} do not vary, so no "
        "dynamic parameter can be identified; check the effort columns of the log "
        "(units, sign, the process_torque_data conversion)",
        fatal=True,
    )


def mask_finding(mask: np.ndarray | None, n: int) -> DataFinding:
    """Check ``sample_mask``: the valid-sample mask (n,) keeps a sample (fatal otherwise)."""
    if mask is None or not n or np.any(mask):
        return DataFinding("sample_mask", True)
    return DataFinding(
        "sample_mask",
        False,
        f"the sample mask excludes every one of the {n} samples, so nothing is left to "
        "fit; check the TrajectoryData mask (True = valid sample) or the truncate range",
        fatal=True,
    )


def finite_finding(arrays: Mapping[str, np.ndarray | None], names: Sequence[str]) -> DataFinding:
    """Check ``finite_values``: the conditioned signals are finite and not overflowing (fatal)."""
    for key, arr in arrays.items():
        if arr is None:
            continue
        try:
            require_finite(key, arr, names)
        except IdentificationDataError as exc:
            return DataFinding("finite_values", False, f"after conditioning, {exc}", fatal=True)
    return DataFinding("finite_values", True)


# ---------------------------------------------------------------- findings
def _time_unit_hint(ratio: float, median_dt: float) -> str:
    for factor, text in _TIME_UNITS:
        if abs(ratio / factor - 1.0) <= SAMPLING_TOLERANCE:
            return f"the timestamps look like {text}"
    return (
        f"set signal_processing.sampling_frequency (and filter_params.f_sample) to "
        f"{1.0 / median_dt:.6g} Hz, or fix the timestamps"
    )


def sampling_finding(timestamps: np.ndarray, f_sample: float | None) -> DataFinding:
    """Check ``sampling_interval``: median step of ``timestamps`` [s] vs ``1/f_sample``.

    Passes when ``|median(Δt)·f_sample − 1| ≤`` :data:`SAMPLING_TOLERANCE`
    (or when fewer than two samples or no frequency are given).

    Args:
        timestamps: (N,) or (N, 1) sample times [s].
        f_sample: Configured sampling frequency [Hz] (the filter's ``f_sample``).
    """
    t = np.asarray(timestamps, dtype=float).reshape(len(timestamps), -1)[:, 0]
    if f_sample is None or t.size < 2 or not np.isfinite(f_sample) or f_sample <= 0:
        return DataFinding("sampling_interval", True)
    median_dt = float(np.median(np.diff(t)))
    ratio = median_dt * float(f_sample)
    if median_dt <= 0 or abs(ratio - 1.0) <= SAMPLING_TOLERANCE:
        return DataFinding("sampling_interval", True)
    return DataFinding(
        "sampling_interval",
        False,
        f"the median sampling interval of 'timestamps' is {median_dt:.6g} s "
        f"({1.0 / median_dt:.6g} Hz) but the configured sampling frequency is "
        f"{float(f_sample):.6g} Hz (interval {1.0 / float(f_sample):.6g} s, ×{ratio:.4g}): "
        f"{_time_unit_hint(ratio, median_dt)}",
    )


def magnitude_bounds(options: Any) -> Dict[str, float]:
    """:data:`DEFAULT_BOUNDS` and the plausibility defaults, overridden by ``data_checks``.

    Args:
        options: The identification task's ``data_checks`` mapping
            (``max_abs_velocity`` [rad/s or m/s], ``max_abs_torque`` [N·m or N],
            and the margins and tolerances of
            :data:`~figaroh.identification._pipeline.plausibility.PLAUSIBILITY_DEFAULTS`),
            or None for the defaults.

    Raises:
        IdentificationConfigError: ``data_checks`` is not a mapping, or a bound
            is not a positive number.
    """
    bounds = {**DEFAULT_BOUNDS, **PLAUSIBILITY_DEFAULTS}
    if options is None:
        return bounds
    if not isinstance(options, Mapping):
        raise IdentificationConfigError(
            f"data_checks must be a mapping like {dict(DEFAULT_BOUNDS)}, got "
            f"{type(options).__name__}"
        )
    for key, value in options.items():
        if key not in bounds:
            continue
        try:
            bounds[key] = float(value)
        except (TypeError, ValueError):
            bounds[key] = float("nan")
        if not bounds[key] > 0:
            raise IdentificationConfigError(
                f"data_checks.{key} must be a positive number, got {value!r}"
            )
    return bounds


def magnitude_finding(
    velocities: np.ndarray | None,
    torques: np.ndarray,
    names: Sequence[str],
    bounds: Mapping[str, float],
) -> DataFinding:
    """Check ``magnitudes``: largest |velocity| and |effort| within ``bounds``.

    Args:
        velocities: (N, n) [rad/s or m/s], or None.
        torques: (N, n) [N·m or N].
        names: Active joint names.
        bounds: ``max_abs_velocity`` [rad/s or m/s], ``max_abs_torque`` [N·m or N].
    """
    problems = []
    for key, arr, what, unit in (
        ("max_abs_velocity", velocities, "velocity", "rad/s or m/s"),
        ("max_abs_torque", torques, "torque", "N·m or N"),
    ):
        if arr is None or not np.size(arr):
            continue
        peak = np.max(np.abs(arr.reshape(arr.shape[0], -1)), axis=0)
        over = np.flatnonzero(peak > bounds[key])
        for j in over.tolist():
            col = names[j] if j < len(names) else j
            problems.append(
                f"|{what}| of joint {col} reaches {peak[j]:.6g} {unit}, above "
                f"data_checks.{key} = {bounds[key]:.6g}"
            )
    if not problems:
        return DataFinding("magnitudes", True)
    return DataFinding(
        "magnitudes",
        False,
        "implausible magnitudes: "
        + "; ".join(problems)
        + " (check the units and conversions of the log, or raise the bound)",
    )


def _table(data: Mapping[str, Any]) -> np.ndarray | None:
    """(N, 2n) positions and efforts side by side, or None when one is missing."""
    if data.get("positions") is None or data.get("torques") is None:
        return None
    q = np.asarray(data["positions"], dtype=float)
    tau = np.asarray(data["torques"], dtype=float)
    if q.shape[0] != tau.shape[0]:
        return None
    return np.hstack([q.reshape(q.shape[0], -1), tau.reshape(tau.shape[0], -1)])


def _contains_block(long: np.ndarray, short: np.ndarray) -> bool:
    """Whether ``short`` (m, k) is a contiguous block of rows of ``long`` (N, k), N ≥ m ≥ 1."""
    starts = np.flatnonzero(np.all(long[: long.shape[0] - short.shape[0] + 1] == short[0], axis=1))
    m = short.shape[0]
    return any(np.array_equal(long[s : s + m], short) for s in starts[:8])


def validation_finding(training: Mapping[str, Any], validation: Mapping[str, Any]) -> DataFinding:
    """Check ``validation_independent``: the held-out samples are not training samples.

    Fails when the held-out positions and efforts equal the training ones, or
    one set is a contiguous block of rows of the other (the loader ignored
    ``data_source`` and a truncation cut one of them).

    Args:
        training: Raw training data (``"positions"``, ``"torques"`` (N, n)).
        validation: Raw held-out data, same keys.
    """
    a, b = _table(training), _table(validation)
    if a is None or b is None or a.shape[1] != b.shape[1] or not a.size or not b.size:
        return DataFinding("validation_independent", True)
    if a.shape == b.shape and np.array_equal(a, b):
        what = "is identical to the training data"
    elif _contains_block(*((a, b) if a.shape[0] >= b.shape[0] else (b, a))):
        what = "overlaps the training data (one is a block of rows of the other)"
    else:
        return DataFinding("validation_independent", True)
    return DataFinding(
        "validation_independent",
        False,
        f"the validation data {what}, so it is not an independent test: "
        "load_trajectory_data(data_source=...) must load the trajectory named by "
        "validation_data_file instead of ignoring data_source",
    )


def inertia_finding(masses: np.ndarray, inertias: np.ndarray, names: Sequence[str]) -> DataFinding:
    """Check ``model_inertia``: masses ≥ 0 and inertia matrices positive semi-definite.

    Args:
        masses: (n,) link masses [kg].
        inertias: (n, 3, 3) rotational inertias about the centre of mass [kg·m²].
        names: The n body (joint) names.
    """
    masses = np.asarray(masses, dtype=float).reshape(-1)
    inertias = np.asarray(inertias, dtype=float).reshape(-1, 3, 3)
    if not masses.size:
        return DataFinding("model_inertia", True)
    sym = 0.5 * (inertias + np.swapaxes(inertias, 1, 2))
    low = np.linalg.eigvalsh(sym)[:, 0]
    scale = np.maximum(1.0, np.abs(np.trace(sym, axis1=1, axis2=2)))
    problems = [
        f"link of joint {names[i]} has mass {masses[i]:.6g} kg < 0"
        for i in np.flatnonzero(masses < 0).tolist()
    ] + [
        f"link of joint {names[i]} has an inertia that is not positive definite "
        f"(smallest eigenvalue {low[i]:.6g} kg·m²)"
        for i in np.flatnonzero(low < -1e-12 * scale).tolist()
    ]
    if not problems:
        return DataFinding("model_inertia", True)
    return DataFinding(
        "model_inertia",
        False,
        "the model's standard parameters are not physical: "
        + "; ".join(problems)
        + "; correct the <inertial> elements of the URDF",
    )


def model_finding(model: Any) -> DataFinding:
    """:func:`inertia_finding` of every body of a Pinocchio ``model`` (``model.inertias[1:]``)."""
    if getattr(model, "inertias", None) is None:
        return DataFinding("model_inertia", True)
    bodies = list(model.inertias)[1:]
    return inertia_finding(
        np.array([b.mass for b in bodies], dtype=float),
        np.array([np.asarray(b.inertia, dtype=float) for b in bodies]).reshape(-1, 3, 3),
        [str(n) for n in list(model.names)[1:]],
    )


def training_checks(
    processed: Mapping[str, Any],
    names: Sequence[str],
    f_sample: float | None,
    bounds: Mapping[str, float],
    mask: np.ndarray | None = None,
) -> DataChecks:
    """Every check of the conditioned training data, before the fit.

    Args:
        processed: ``{"timestamps" (N, 1) [s], "positions", "velocities",
            "torques"}`` of the active joints (N, n).
        names: Active joint names.
        f_sample: Configured sampling frequency [Hz] (None: not checked).
        bounds: See :func:`magnitude_bounds`.
        mask: (N,) valid-sample mask, or None.

    Returns:
        The findings of ``finite_values``, ``sample_mask``, ``joint_motion``,
        ``torque_variation``, ``sampling_interval`` and ``magnitudes`` (the
        fatal ones are raised by :meth:`DataChecks.raise_fatal` before the fit).
    """
    n = int(np.shape(processed["positions"])[0])
    positions = np.asarray(processed["positions"], float).reshape(n, -1)
    velocities = processed.get("velocities")
    velocities = None if velocities is None else np.asarray(velocities, float).reshape(n, -1)
    torques = np.asarray(processed["torques"], float).reshape(n, -1)
    finite = finite_finding(
        {"positions": positions, "velocities": velocities, "torques": torques}, names
    )
    findings = [finite, mask_finding(mask, n)]
    if finite.passed:
        findings += [
            motion_finding(positions, velocities, names),
            torque_finding(torques, names),
            sampling_finding(processed["timestamps"], f_sample),
            magnitude_finding(velocities, torques, names, bounds),
        ]
    checks = DataChecks(tuple(findings))
    for f in checks.failed:
        logger.warning("Data check %s failed: %s", f.check, f.message)
    return checks


def training_data_checks(
    processed: Mapping[str, Any],
    raw: Mapping[str, Any],
    model: Any,
    names: Sequence[str],
    filter_params: Mapping[str, Any],
    options: Any,
    mask: np.ndarray | None = None,
) -> DataChecks:
    """Every data check of a training trajectory: the signal checks, the model, plausibility.

    :func:`training_checks` on the conditioned active-joint signals, then
    :func:`model_finding`; unless a fatal check failed, the
    physical-plausibility checks compare the conditioned signals with ``raw``
    and the model's joint limits
    (:func:`~figaroh.identification._pipeline.plausibility.plausibility_checks`).
    A failed finding is logged as a warning.

    Args:
        processed: Conditioned active-joint signals (see :func:`training_checks`).
        raw: The raw data they were conditioned from.
        model: Pinocchio model (masses, inertias, joint limits).
        names: Active joint names.
        filter_params: ``filter_config["filter_params"]`` (``f_sample`` [Hz],
            ``f_butter`` [Hz]).
        options: The identification task's ``data_checks`` mapping (bounds
            ``max_abs_velocity`` [rad/s or m/s], ``max_abs_torque`` [N·m or N],
            margins and tolerances), or None for the defaults.
        mask: (N,) valid-sample mask, or None.
    """
    bounds = magnitude_bounds(options)
    checks = training_checks(processed, names, filter_params.get("f_sample"), bounds, mask)
    extra = [model_finding(model)]
    if not any(f.fatal for f in checks.failed):
        extra += plausibility_checks(
            raw, processed, model, names, filter_params.get("f_butter"), bounds
        )
    for f in extra:
        if not f.passed:
            logger.warning("Data check %s failed: %s", f.check, f.message)
    # dataclasses.replace keeps the class: the copy is this module's DataChecks
    return cast(DataChecks, checks.with_findings(*extra))
