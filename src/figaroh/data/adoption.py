"""How ``BaseIdentification`` adopts a :class:`TrajectoryData` (joint order, mask, clock).

Plain functions, so the base class only delegates:

* ``_adopt_trajectory(data, attr)`` → :func:`adopt_trajectory_for` (or the
  object-free :func:`adopt_trajectory`);
* ``_trajectory_mask(trajectory, truncate)`` → :func:`trajectory_mask`;
* ``_record_data_stage()`` → stage ``data`` with :func:`data_stage_reason` and
  :func:`data_stage_metrics`.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any, Dict, Iterable, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:
    from figaroh.data.trajectory import TrajectoryData

logger = logging.getLogger(__name__)

#: The module defining :class:`TrajectoryData`. A loader returning the legacy
#: dict never imports it, and no object can be a ``TrajectoryData`` before it
#: is imported, so the adoption step does not import it either.
_TRAJECTORY_MODULE = "figaroh.data.trajectory"


def _is_trajectory_data(data: Any) -> bool:
    """Whether ``data`` is a :class:`TrajectoryData` (without importing its module)."""
    module = sys.modules.get(_TRAJECTORY_MODULE)
    return module is not None and isinstance(data, module.TrajectoryData)


__all__ = [
    "adopt_trajectory",
    "adopt_trajectory_for",
    "data_stage_metrics",
    "data_stage_reason",
    "overrides_process_torque_data",
    "trajectory_mask",
]

_HOOK = "process_torque_data"


def overrides_process_torque_data(owner: Any, base: type | None = None) -> bool:
    """Whether ``owner``'s ``process_torque_data`` differs from the base class one.

    Args:
        owner: The identification object.
        base: The base class (``BaseIdentification``). When None, the method
            counts as overridden if more than one class of ``type(owner)``'s MRO
            defines it, or the instance itself carries it.

    Returns:
        True when a subclass (or the instance) replaced the method.
    """
    if _HOOK in getattr(owner, "__dict__", {}):
        return True
    if base is not None:
        return getattr(type(owner), _HOOK, None) is not getattr(base, _HOOK, None)
    definers = [c for c in type(owner).__mro__ if _HOOK in vars(c)]
    return len(definers) > 1


def adopt_trajectory(
    data: Any,
    model: Any = None,
    *,
    active_joints: Sequence[str] | None = None,
    process_torque_overridden: bool = False,
    drive_gain_joints: Iterable[str] = (),
) -> Dict[str, Any]:
    """Validate ``data`` and return the legacy dict ``BaseIdentification`` stores.

    * Not a :class:`TrajectoryData` (the legacy dict path) → returned unchanged.
    * A :class:`TrajectoryData`:

      1. ``process_torque_overridden`` → ``TypeError``: a hidden effort
         conversion would not be recorded; convert in
         ``load_trajectory_data()`` with :meth:`TrajectoryData.converted`;
      2. non-empty ``active_joints`` differing from ``data.joint_names`` →
         ``ValueError`` naming both orders;
      3. ``data.check_effort(model, drive_gain_joints)`` when a model is given;
      4. returns ``data.to_legacy()`` (every sample; the mask is applied to
         regressor rows later).

    Args:
        data: Legacy dict or :class:`TrajectoryData`.
        model: ``pinocchio.Model`` for the effort check (skipped when None).
        active_joints: ``identif_config["active_joints"]``.
        process_torque_overridden: Whether the subclass overrides
            ``process_torque_data``.
        drive_gain_joints: Joints with a declared drive gain.

    Returns:
        The legacy dict.

    Raises:
        TypeError: see 1.
        ValueError: joint-order mismatch or effort that is not joint effort.
    """
    if not _is_trajectory_data(data):
        return data
    if process_torque_overridden:
        raise TypeError(
            "load_trajectory_data() returned a TrajectoryData but this class overrides "
            "process_torque_data(): convert the effort in load_trajectory_data() with "
            "TrajectoryData.converted(...) so the conversion is recorded, and remove the "
            "process_torque_data() override"
        )
    if active_joints:
        if list(active_joints) != list(data.joint_names):
            raise ValueError(
                f"TrajectoryData joint order {list(data.joint_names)} differs from "
                f"identif_config['active_joints'] {list(active_joints)}; reorder the data with "
                "TrajectoryData.select_joints(active_joints) or fix the config"
            )
    if model is not None:
        data.check_effort(model, drive_gain_joints)
    return data.to_legacy()


def adopt_trajectory_for(
    owner: Any, data: Any, attr: str = "trajectory", base: type | None = None
) -> Dict[str, Any]:
    """Full ``BaseIdentification._adopt_trajectory(data, attr)`` behaviour.

    Sets ``owner.<attr>`` to ``data`` when it is a :class:`TrajectoryData`
    (after the checks of :func:`adopt_trajectory` against ``owner.model``,
    ``owner.identif_config["active_joints"]`` and the ``process_torque_data``
    override), to None otherwise, and returns the legacy dict.

    Args:
        owner: The identification object.
        data: Legacy dict or :class:`TrajectoryData`.
        attr: Attribute receiving the trajectory (``"trajectory"`` or
            ``"_val_trajectory"``).
        base: The base class, for the override check (see
            :func:`overrides_process_torque_data`).

    Returns:
        The legacy dict.
    """
    if not _is_trajectory_data(data):
        setattr(owner, attr, None)
        return data
    config = getattr(owner, "identif_config", None) or {}
    raw = adopt_trajectory(
        data,
        getattr(owner, "model", None),
        active_joints=config.get("active_joints") if hasattr(config, "get") else None,
        process_torque_overridden=overrides_process_torque_data(owner, base),
    )
    setattr(owner, attr, data)
    return raw


def trajectory_mask(
    trajectory: TrajectoryData | None, truncate: Tuple[int, int] | None = None
) -> np.ndarray | None:
    """Valid-sample mask of a trajectory, or None when every sample is valid.

    Args:
        trajectory: The adopted trajectory (None on the legacy path).
        truncate: ``(start, stop)`` sample indices, sliced like the data
            (``mask[start:stop]``).

    Returns:
        A writable bool copy of the (truncated) mask, or None when there is no
        trajectory or no masked sample (so "no mask" and "all valid" are the
        same downstream).
    """
    if trajectory is None:
        return None
    mask = np.asarray(trajectory.mask, dtype=bool)
    if truncate is not None:
        mask = mask[truncate[0] : truncate[1]]
    if mask.all():
        return None
    return mask.copy()


def data_stage_reason(trajectory: TrajectoryData | None) -> str:
    """Reason of the ``data`` stage record.

    ``"legacy dict"`` or ``"TrajectoryData, clock <clock>, effort [<sorted kinds>]"``
    followed by ``" (<effort_conversion>)"`` when a conversion was applied.
    """
    if trajectory is None:
        return "legacy dict"
    reason = (
        f"TrajectoryData, clock {trajectory.clock}, effort {sorted(set(trajectory.effort_kind))}"
    )
    if trajectory.effort_conversion:
        reason += f" ({trajectory.effort_conversion})"
    return reason


def data_stage_metrics(samples: int | None, mask: np.ndarray | None) -> Dict[str, Any]:
    """Metrics of the ``data`` stage record (both unitless).

    Args:
        samples: Number of samples of the run, or None when unknown.
        mask: Valid-sample mask, or None when every sample is valid.

    Returns:
        ``{"samples": samples, "masked_samples": count of False in mask}``.
    """
    masked = 0 if mask is None else int(np.size(mask) - np.count_nonzero(mask))
    return {"samples": None if samples is None else int(samples), "masked_samples": masked}
