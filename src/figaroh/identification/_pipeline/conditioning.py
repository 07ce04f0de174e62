"""Step 1 — data conditioning: filtering, differentiation, full configurations.

Positions, velocities and accelerations of the active joints are low-passed
(median + zero-phase Butterworth); a missing derivative is the time
derivative of the already conditioned previous signal. The active-joint
arrays are then expanded to the full ``(N, nq)`` / ``(N, nv)`` model arrays
the regressor needs.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Sequence, Tuple, overload

import numpy as np

from figaroh.identification import _signal
from figaroh.identification._pipeline.data_checks import as_numeric, require_finite
from figaroh.identification._pipeline.records import Settings, SignalSet
from figaroh.identification.exceptions import IdentificationConfigError, IdentificationDataError
from figaroh.tools.effort_units import effort_unit

__all__ = [
    "apply_filters",
    "check_joint_names",
    "condition_kinematics",
    "differentiate",
    "full_configuration",
    "make_settings",
    "signal_set",
    "validate_raw_data",
]

_KINEMATIC_KEYS = ("positions", "velocities", "accelerations")


def make_settings(
    config: Mapping[str, Any], model: Any, q0: Sequence[float], tol_qr: float
) -> Settings:
    """The :class:`Settings` of a Pinocchio ``model`` and flat identification settings.

    Args:
        config: Flat identification settings (``act_idxq``, ``act_idxv``,
            ``active_joints``, optional ``act_Jid`` …).
        model: Pinocchio model (joint types and ``nv``).
        q0: Neutral configuration (nq,).
        tol_qr: Absolute QR rank tolerance.
    """
    idxq = tuple(int(i) for i in config.get("act_idxq", []))
    jids = config.get("act_Jid") or [None] * len(idxq)
    continuous = tuple(jid is not None and model.joints[jid].nq == 2 for jid in jids)
    names = tuple(str(n) for n in config.get("active_joints", []))
    return Settings(
        config=config,
        nv=int(model.nv),
        q0=np.asarray(q0, dtype=float),
        act_idxq=idxq,
        act_idxv=tuple(int(i) for i in config.get("act_idxv", [])),
        continuous=continuous,
        active_joints=names,
        effort_units=tuple(effort_unit(model, n) for n in names),
        tol_qr=float(tol_qr),
    )


def check_joint_names(active: Sequence[str], model_names: Sequence[str]) -> None:
    """Require every active joint name to be a joint of the model.

    Args:
        active: ``identif_config["active_joints"]``.
        model_names: The model's joint names (``model.names``).

    Raises:
        IdentificationConfigError: Naming the unknown joints (e.g. a name with
            a space) and the valid names.
    """
    known = [str(n) for n in model_names if str(n) != "universe"]
    unknown = [str(n) for n in active if str(n) not in known]
    if unknown:
        raise IdentificationConfigError(
            f"unknown active joint(s) {unknown} in identif_config['active_joints'] "
            f"(joints.active_joints); the model's joints are {known}"
        )


@overload
def apply_filters(
    signal: np.ndarray,
    /,
    *,
    nbutter: int = ...,
    f_butter: float = ...,
    med_fil: int = ...,
    f_sample: float = ...,
    median_padding: str = ...,
) -> np.ndarray: ...


@overload
def apply_filters(
    *signals: np.ndarray | None,
    nbutter: int = ...,
    f_butter: float = ...,
    med_fil: int = ...,
    f_sample: float = ...,
    median_padding: str = ...,
) -> np.ndarray | None | Tuple[np.ndarray | None, ...]: ...


def apply_filters(
    *signals: np.ndarray | None,
    nbutter: int = 4,
    f_butter: float = 2,
    med_fil: int = 5,
    f_sample: float = 100,
    median_padding: str = "zero",
) -> np.ndarray | None | Tuple[np.ndarray | None, ...]:
    """Median + zero-phase Butterworth low-pass of each signal, column by column.

    Per column: ``scipy.signal.medfilt`` (window ``med_fil``, zero-padded
    edges unless ``median_padding="nearest"``), then ``filtfilt(b, a, x,
    padtype="odd", padlen=3·(max(len(b), len(a)) − 1))`` with ``(b, a) =
    butter(nbutter, f_butter / (f_sample / 2))``. The signals are checked in
    order; those of one length are filtered in one pass
    (:func:`~figaroh.identification._signal.low_pass_many`), each with the
    result it would have alone.

    Args:
        *signals: Arrays (N,) or (N, n), or None (passed through).
        nbutter: Butterworth order.
        f_butter: Cut-off [Hz].
        med_fil: Median window [samples] (odd).
        f_sample: Sampling frequency [Hz].
        median_padding: ``"zero"`` (figaroh 1.0.2) or ``"nearest"``.

    Returns:
        The filtered array for one signal, else a tuple.
    """
    present = [s for s in signals if s is not None]
    filtered = iter(
        _signal.low_pass_many(
            present,
            nbutter=nbutter,
            f_butter=f_butter,
            med_fil=med_fil,
            f_sample=f_sample,
            median_padding=median_padding,
        )
    )
    out = tuple(None if s is None else next(filtered) for s in signals)
    return out[0] if len(out) == 1 else out


def differentiate(
    time_vector: np.ndarray, signal: np.ndarray, method: str = "gradient"
) -> np.ndarray:
    """Time derivative of ``signal`` (N, n) sampled at ``time_vector`` [s] (see ``_signal``)."""
    return _signal.differentiate(time_vector, signal, method)


def condition_kinematics(
    raw: Mapping[str, Any],
    filter_config: Mapping[str, Any],
    low_pass: Callable[..., np.ndarray] = apply_filters,
    derivative: Callable[..., np.ndarray] = differentiate,
) -> Dict[str, np.ndarray]:
    """Filter the kinematic signals and differentiate the missing derivatives.

    Positions, then velocities, then accelerations: a signal present in
    ``raw`` is ``low_pass(signal, **filter_params)``; an absent one is
    ``derivative(timestamps, previous, method=differentiation_method)`` of the
    already conditioned previous signal (not filtered again).

    Args:
        raw: Raw data with ``"timestamps"`` [s], ``"positions"`` and optional
            ``"velocities"`` / ``"accelerations"`` (N, n_active).
        filter_config: ``{"differentiation_method", "filter_params": {nbutter,
            f_butter [Hz], med_fil, f_sample [Hz], median_padding}}``.
        low_pass: The filter, called once per present signal (default
            :func:`apply_filters`).
        derivative: The differentiation (default :func:`differentiate`).

    Returns:
        ``{"timestamps", "positions", "velocities", "accelerations"}``.

    Raises:
        IdentificationDataError: Missing timestamps or positions.
    """
    if raw.get("timestamps") is None:
        raise IdentificationDataError("Timestamps are required for data processing")
    if raw.get("positions") is None:
        raise IdentificationDataError("Position data is required for processing")
    params = dict(filter_config.get("filter_params", {}))
    method = filter_config.get("differentiation_method", "gradient")
    processed = {"timestamps": np.asarray(raw["timestamps"], dtype=float)}
    previous = None
    for name in _KINEMATIC_KEYS:
        value = raw.get(name)
        if value is not None:
            processed[name] = low_pass(value, **params)
        elif previous is None:
            raise IdentificationDataError(f"Cannot process {name}: no data or dependency")
        else:
            processed[name] = derivative(
                processed["timestamps"], processed[previous], method=method
            )
        previous = name
    return processed


def full_configuration(
    processed: Mapping[str, Any], settings: Settings, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expand active-joint arrays to full ``(N, nq)`` / ``(N, nv)`` model arrays.

    Inactive joints stay at ``settings.q0`` with zero velocity; an active
    continuous joint (cos/sin configuration) gets ``(cos θ, sin θ)``.

    Returns:
        ``(q, v, a)``.

    Raises:
        IdentificationDataError: A kinematic signal is missing.
    """
    for key in _KINEMATIC_KEYS:
        if processed.get(key) is None:
            raise IdentificationDataError(f"Missing required data: {key}")
    q = np.tile(np.asarray(settings.q0, dtype=float), (n, 1))
    v = np.zeros((n, settings.nv))
    a = np.zeros((n, settings.nv))
    pos = np.asarray(processed["positions"], float).reshape(n, -1)
    for col, (iq, cont) in enumerate(zip(settings.act_idxq, settings.continuous, strict=True)):
        if cont:
            q[:, iq] = np.cos(pos[:, col])
            q[:, iq + 1] = np.sin(pos[:, col])
        else:
            q[:, iq] = pos[:, col]
    idxv = list(settings.act_idxv)
    v[:, idxv] = np.asarray(processed["velocities"], float).reshape(n, -1)
    a[:, idxv] = np.asarray(processed["accelerations"], float).reshape(n, -1)
    return q, v, a


def signal_set(processed: Mapping[str, Any], mask: np.ndarray | None = None) -> SignalSet:
    """The :class:`SignalSet` of a processed-data dict (full configuration)."""
    return SignalSet(
        timestamps=processed.get("timestamps"),
        positions=processed["positions"],
        velocities=processed["velocities"],
        accelerations=processed["accelerations"],
        torques=processed["torques"],
        mask=mask,
    )


def _checked_time(raw: Mapping[str, Any]) -> int:
    """Number of samples of strictly increasing finite ``raw["timestamps"]`` [s]."""
    t = raw.get("timestamps")
    if t is None:
        raise IdentificationDataError(
            "Timestamps are required for data processing: load_trajectory_data() must "
            "return 'timestamps' (N, 1) [s] (build them from the sampling period if the "
            "log has none)"
        )
    t = as_numeric("timestamps", t)
    t = t.reshape(-1) if t.ndim == 1 else t[:, 0]
    require_finite("timestamps", t[:, None], ["time"])
    dt = np.diff(t)
    if np.any(dt <= 0):
        k = int(np.flatnonzero(dt <= 0)[0])
        raise IdentificationDataError(
            f"'timestamps' must be strictly increasing: t[{k + 1}] = {t[k + 1]} is not after "
            f"t[{k}] = {t[k]}. Sort the log or drop duplicated samples"
        )
    return int(t.shape[0])


def _check_signal(key: str, value: Any, n: int, n_active: int, names: Sequence[str]) -> None:
    """Shape (n, n_active), numeric content and finite, non-overflowing values of one raw signal."""
    arr = as_numeric(key, value)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n:
        raise IdentificationDataError(
            f"'{key}' must have shape (N={n}, {n_active}) like 'timestamps', got {arr.shape}"
        )
    if n_active and arr.shape[1] != n_active:
        raise IdentificationDataError(
            f"'{key}' has {arr.shape[1]} columns but there are {n_active} active joints "
            f"{list(names)}; one column per active joint, in that order"
        )
    require_finite(key, arr, names)


def validate_raw_data(raw: Any, n_active: int, names: Sequence[str]) -> None:
    """Check a loader's raw data: strictly increasing finite time, shapes, finiteness.

    Args:
        raw: The dict returned by ``load_trajectory_data`` (``"timestamps"``
            (N, 1) [s]; ``"positions"``, ``"velocities"``, ``"accelerations"``,
            ``"torques"`` (N, n_active); positions and torques required).
        n_active: Number of active joints (0: columns not checked).
        names: Active joint names (error messages).

    Raises:
        IdentificationDataError: The first problem found, naming the key, the
            sample and the joint.
    """
    if not isinstance(raw, dict):
        raise IdentificationDataError(
            f"load_trajectory_data() must return a dict or a TrajectoryData, got "
            f"{type(raw).__name__}"
        )
    n = _checked_time(raw)
    for key in ("positions", "velocities", "accelerations", "torques"):
        value = raw.get(key)
        if value is not None:
            _check_signal(key, value, n, n_active, names)
        elif key in ("positions", "torques"):
            raise IdentificationDataError(
                f"'{key}' is required: load_trajectory_data() returned None for it"
            )
