"""After the run — the identified model used on new data.

Once :meth:`~figaroh.identification.base_identification.BaseIdentification.solve`
has run, the identified model predicts the joint efforts of any state
``(q, q̇, q̈)``::

    τ(q, q̇, q̈) = W_full(q, q̇, q̈) · x

with ``W_full`` the full regressor (rigid-body columns plus the joint terms
the configuration identifies: viscous ``fv·q̇``, Coulomb ``fs·sign(q̇)``,
actuator inertia ``Ia·q̈``, offset ``off``) and ``x`` the standard-space
vector of the selected estimate (the base parameters scattered on their base
columns, or an accepted standard-space estimate; see
:func:`~figaroh.identification._pipeline.validation.identified_standard_vector`).
The same product scores the identified model on another log
(:func:`~figaroh.identification._pipeline.validation.validation_metrics`);
this module checks the states a caller gives, reads the predicted efforts out
of the stacked product and summarises the scores in an
:class:`EvaluationResult`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Sequence, Tuple

import numpy as np

from figaroh.identification._pipeline.records import Settings
from figaroh.identification.exceptions import IdentificationDataError

__all__ = [
    "EvaluationResult",
    "active_states",
    "evaluation_result",
    "predicted_efforts",
]

#: Names of the three state arguments of ``predict``, with their units.
_STATES = (("q", "rad or m"), ("dq", "rad/s or m/s"), ("ddq", "rad/s² or m/s²"))


def active_states(
    q: Any, dq: Any, ddq: Any, active_joints: Sequence[str]
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check the states of the active joints and return them as (N, n_active) float arrays.

    Args:
        q: Positions (N, n_active) [rad or m] (a continuous joint: its angle
            θ [rad]), columns in ``active_joints`` order; a 1-D
            (n_active,) array is one sample.
        dq: Velocities, same shape [rad/s or m/s].
        ddq: Accelerations, same shape [rad/s² or m/s²].
        active_joints: The active joint names (column order).

    Returns:
        ``(q, dq, ddq)``, each (N, n_active).

    Raises:
        IdentificationDataError: A state that is not numeric, not 1-D or 2-D,
            has another number of columns than ``active_joints``, disagrees
            with ``q`` in its number of samples, or holds NaN/inf (the
            message names the argument and, for a bad value, the sample and
            the joint).
    """
    n_active = len(active_joints)
    out: list[np.ndarray] = []
    for (name, unit), value in zip(_STATES, (q, dq, ddq), strict=True):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise IdentificationDataError(
                f"predict: '{name}' must hold numbers [{unit}], got {type(value).__name__} ({exc})"
            ) from None
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[1] != n_active:
            raise IdentificationDataError(
                f"predict: '{name}' must have shape (N, {n_active}) [{unit}], one column per "
                f"active joint {list(active_joints)}, got shape {np.shape(value)}"
            )
        if out and arr.shape[0] != out[0].shape[0]:
            raise IdentificationDataError(
                f"predict: '{name}' has {arr.shape[0]} samples but 'q' has {out[0].shape[0]}; "
                "give the three states at the same samples"
            )
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            i, j = (int(k) for k in bad[0])
            raise IdentificationDataError(
                f"predict: '{name}' contains NaN/inf (first at sample {i}, joint "
                f"{active_joints[j]}: {arr[i, j]!r})"
            )
        out.append(arr)
    return out[0], out[1], out[2]


def predicted_efforts(W_full: np.ndarray, x: np.ndarray, settings: Settings) -> np.ndarray:
    """Efforts ``W_full · x`` of the active joints, one row per sample.

    Args:
        W_full: (nv·N, n_std) full regressor, rows joint-major (row ``k·N + i``
            is DOF ``k`` at sample ``i``).
        x: (n_std,) standard-space parameter vector.
        settings: Model layout (``nv``, ``act_idxv``).

    Returns:
        (N, n_active) efforts [N·m or N], columns in active-joint order.

    Raises:
        ValueError: ``W_full`` is not (nv·N, len(x)).
    """
    W = np.asarray(W_full, dtype=float)
    theta = np.asarray(x, dtype=float).reshape(-1)
    if W.ndim != 2 or W.shape[0] % settings.nv or W.shape[1] != theta.size:
        raise ValueError(
            f"regressor of shape {W.shape} does not match {settings.nv} DOF blocks and "
            f"{theta.size} parameters"
        )
    n = W.shape[0] // settings.nv
    tau = (W @ theta).reshape(settings.nv, n)
    return np.ascontiguousarray(tau[np.asarray(settings.act_idxv, dtype=int)].T)


@dataclass(frozen=True)
class EvaluationResult:
    """How well the identified model predicts the efforts of one log.

    Computed on the valid samples of the log (its mask), on the fitted
    joints, with the residual ``r_j = τ_measured,j − τ_predicted,j``:

    * ``rmse[j] = sqrt(mean(r_j²))`` [N·m or N];
    * ``r2[j] = 1 − rmse[j]² / s_j²`` with ``s_j`` the standard deviation of
      the measured effort (``-inf`` for a constant effort);
    * ``bias[j] = mean(r_j)`` [N·m or N] (positive: the model under-predicts);
    * ``rmse_stacked = sqrt(mean over every joint and sample of r²)``.

    These are the numbers of the held-out validation
    (``result["validation_metrics"]``: ``per_joint[name]["rmse_identified"]``,
    ``["r2"]`` and ``rmse_identified``) computed on this log.

    Attributes:
        joint_names: The fitted joints, in active order.
        units: Effort unit of each joint (``"N·m"`` or ``"N"``).
        rmse: Per-joint RMSE [N·m or N].
        r2: Per-joint coefficient of determination [-].
        bias: Per-joint mean residual [N·m or N].
        rmse_stacked: RMSE over every fitted joint and sample [N·m or N].
        rmse_nominal: The same RMSE of the nominal (URDF) model [N·m or N].
        n_samples: Number of valid samples scored.
        estimate_stage: The estimate that predicted: ``"fit"`` (base
            parameters), ``"reconstruction"`` or ``"physical_fit"``.
    """

    joint_names: Tuple[str, ...]
    units: Tuple[str, ...]
    rmse: Tuple[float, ...]
    r2: Tuple[float, ...]
    bias: Tuple[float, ...]
    rmse_stacked: float
    rmse_nominal: float
    n_samples: int
    estimate_stage: str

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form (floats, lists), e.g. for JSON.

        Returns:
            ``{"joints": {name: {"unit", "rmse", "r2", "bias"}}, "rmse_stacked",
            "rmse_nominal", "n_samples", "estimate_stage"}``.
        """
        return {
            "joints": {
                name: {"unit": unit, "rmse": rmse, "r2": r2, "bias": bias}
                for name, unit, rmse, r2, bias in zip(
                    self.joint_names, self.units, self.rmse, self.r2, self.bias, strict=True
                )
            },
            "rmse_stacked": self.rmse_stacked,
            "rmse_nominal": self.rmse_nominal,
            "n_samples": self.n_samples,
            "estimate_stage": self.estimate_stage,
        }


def evaluation_result(
    metrics: Mapping[str, Any], mask: np.ndarray | None, estimate_stage: str | None
) -> EvaluationResult:
    """The :class:`EvaluationResult` of a validation-metrics dict.

    Args:
        metrics: What
            :func:`~figaroh.identification._pipeline.validation.validation_metrics`
            returned for the log (per-joint RMSE and R², the stacked RMSE and
            the per-joint effort series).
        mask: (N,) valid-sample mask of the log, or None (every sample).
        estimate_stage: The predicting estimate's stage (None: the base fit).

    Returns:
        The summary; ``bias`` is the mean of ``measured − identified`` over
        the valid samples of each joint's series.
    """
    names = tuple(str(n) for n in metrics["joint_names"])
    per_joint = metrics["per_joint"]
    bias = []
    for name in names:
        r = np.asarray(metrics["tau_measured_per_joint"][name], dtype=float) - np.asarray(
            metrics["tau_identified_per_joint"][name], dtype=float
        )
        if mask is not None:
            r = r[np.asarray(mask, dtype=bool)]
        bias.append(float(np.mean(r)) if r.size else float("nan"))
    return EvaluationResult(
        joint_names=names,
        units=tuple(str(per_joint[n]["unit"]) for n in names),
        rmse=tuple(float(per_joint[n]["rmse_identified"]) for n in names),
        r2=tuple(float(per_joint[n]["r2"]) for n in names),
        bias=tuple(bias),
        rmse_stacked=float(metrics["rmse_identified"]),
        rmse_nominal=float(metrics["rmse_nominal"]),
        n_samples=int(metrics["n_val_samples"]),
        estimate_stage=estimate_stage or "fit",
    )
