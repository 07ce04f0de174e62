"""Step ``observations``: measured poses and postures from a calibration CSV or a ROS bag.

A ROS bag (:func:`~figaroh.data.bag_source.is_bag_path`) is read by
:func:`~figaroh.data.bag_source.observations_from_bag` with the options of
``calib_config["bag"]`` (``tasks.calibration.data.bag``: pose topic, still
window). The CSV is read into :class:`~figaroh.data.observations.PoseObservations`
(column names checked, NaN rows named, ``del_list`` rows masked) and
converted to the 1.0.2 flat layout: marker-major, then measured component,
then posture [m, rad].
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from figaroh.calibration._pipeline.records import ObservationSet
from figaroh.data.bag_source import PoseBagOptions, is_bag_path, observations_from_bag
from figaroh.data.observations import PoseObservations

__all__ = ["read_observations"]


def read_observations(
    path: str,
    model: Any,
    calib_config: Mapping[str, Any],
    del_list: Sequence[int] | None = None,
) -> ObservationSet:
    """Read ``path`` into an :class:`ObservationSet`.

    Args:
        path: Calibration CSV, or a ROS bag.
        model: ``pinocchio.Model`` (joint names and ``nq``).
        calib_config: Calibration config (markers, measurability, joints).
        del_list: 0-based data rows to mask.

    Returns:
        The flat measurements, the (N, nq) postures and the masked count.

    Raises:
        KeyError, ValueError: missing columns or NaN rows (named).
    """
    rows = () if del_list is None else tuple(del_list)
    if is_bag_path(path):
        options = PoseBagOptions.from_config(calib_config.get("bag"))
        obs = observations_from_bag(path, model, calib_config, options=options, del_list=rows)
    else:
        obs = PoseObservations.from_csv(path, model, calib_config, del_list=rows)
    pee, q = obs.to_legacy(model, calib_config)
    masked = obs.n_samples - q.shape[0]  # to_legacy keeps the unmasked postures
    return ObservationSet(pee, q, masked, obs)
