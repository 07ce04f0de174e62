"""Simulated UR10 logs handed to identification as arrays (the README subclass pattern).

Shared by the identification bad-input tables: :func:`ur10_robot`,
:func:`ur10_log` (seeded simulation, cached per length) and
:func:`log_arrays` (the ``load_trajectory_data`` dict, optionally edited),
with :class:`ArrayIdentification`, whose loader returns those arrays.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Dict

import numpy as np

from conftest import load_example
from figaroh.identification.base_identification import BaseIdentification

_ur10 = load_example("ur10/identification.py", "ur10_identification_bad_input_logs")
UR10_JOINTS = _ur10.UR10_JOINTS
load_ur10 = _ur10.load_ur10
simulate_ur10 = _ur10.simulate_ur10


@lru_cache(maxsize=1)
def ur10_robot():
    """The UR10 of example-robot-data (loaded once)."""
    return _ur10.load_ur10()


@lru_cache(maxsize=4)
def ur10_log(n_samples: int) -> Dict[str, np.ndarray]:
    """Seeded log (0.5 N·m noise): ``t`` [s], ``q`` [rad], ``dq`` [rad/s], ``ddq``, ``tau``."""
    traj, tau = _ur10.simulate_ur10(ur10_robot(), n_samples=n_samples, noise_std=0.5, seed=3)
    return {"t": traj.t, "q": traj.q, "dq": traj.dq, "ddq": traj.ddq, "tau": tau}


def log_arrays(n_samples: int, edit: Callable[[dict], Any] | None = None) -> dict:
    """A fresh ``load_trajectory_data`` dict of :func:`ur10_log`, then ``edit(d)`` if given."""
    c = ur10_log(n_samples)
    d = {
        "timestamps": c["t"][:, None].copy(),
        "positions": c["q"].copy(),
        "velocities": c["dq"].copy(),
        "accelerations": None,
        "torques": c["tau"].copy(),
    }
    if edit is not None:
        edit(d)
    return d


class ArrayIdentification(BaseIdentification):
    """The README subclass pattern: the loader returns arrays (and ignores ``data_source``)."""

    def __init__(self, robot, config_file, arrays: dict):
        super().__init__(robot, str(config_file))
        self.arrays = arrays

    def load_trajectory_data(self, data_source=None):
        return dict(self.arrays)
