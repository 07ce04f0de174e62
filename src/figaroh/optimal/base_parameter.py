"""Base-parameter column set used by the exciting-trajectory optimisation.

The columns of the base regressor are fixed **once**, from one long random
trajectory that excites every identifiable direction: zero columns
(``‖W[:, i]‖² < tol_e``) are eliminated, then a QR decomposition of the
reduced regressor picks a full-rank subset (the base columns). The trajectory
objective then always uses ``W[:, base_columns]``, so that condition numbers
of different trajectories are comparable.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Sequence, Tuple

import numpy as np

from figaroh.identification.parameter import (
    add_custom_parameters,
    add_standard_additional_parameters,
    get_standard_parameters,
)
from figaroh.tools.qrdecomposition import get_baseIndex
from figaroh.tools.regressor import (
    build_regressor_basic,
    build_regressor_reduced,
    get_index_eliminate,
)
from figaroh.utils.cubic_spline import (
    CubicSpline,
    WaypointsGeneration,
    is_constrained,
    sample_times,
    spline_basis,
)

logger = logging.getLogger(__name__)

__all__ = [
    "BaseParameterComputer",
    # Re-exported for figaroh 1.0.2 compatibility.
    "CubicSpline",
    "WaypointsGeneration",
    "add_custom_parameters",
    "add_standard_additional_parameters",
    "build_regressor_basic",
    "build_regressor_reduced",
    "get_baseIndex",
    "get_index_eliminate",
    "get_standard_parameters",
]


class BaseParameterComputer:
    """Find the eliminated and base regressor columns from a rich random trajectory.

    Args:
        robot: Robot with a Pinocchio model.
        identif_config: Identification settings (regressor flags ``has_friction``,
            ``has_actuator_inertia``, ``has_joint_offset``, ``act_idxv``, ...).
        active_joints: Names of the moving joints.
        soft_lim_pool: (3, n_active) margin fractions of the random pools.
        rng: Generator or seed (None: NumPy's global random state, as upstream).

    Attributes:
        idx_e: Eliminated (zero) column indices of the full regressor.
        idx_b: Base column indices into the reduced regressor.
        base_columns: ``idx_b`` mapped to full-regressor column indices.
        params_std: Standard parameters (ordered dict, regressor column order).
        params_r: Names of the reduced regressor's columns.
        base_names: Names of the base columns (the base parameters' leading names).
        W_reference: Base regressor of the random reference trajectory.
    """

    def __init__(
        self,
        robot,
        identif_config: Mapping[str, Any],
        active_joints: Sequence[str],
        soft_lim_pool: np.ndarray,
        rng: Any = None,
    ):
        self.robot = robot
        self.model = robot.model
        self.identif_config = identif_config
        self.active_joints = list(active_joints)
        self.soft_lim_pool = np.asarray(soft_lim_pool, dtype=float)
        self.rng = rng
        self.idx_e: np.ndarray | None = None
        self.idx_b: np.ndarray | None = None
        self.base_columns: np.ndarray | None = None
        self.params_std: Dict[str, float] = {}
        self.params_r: list = []
        self.base_names: list = []
        self.W_reference: np.ndarray | None = None

    def __repr__(self) -> str:
        nb = None if self.idx_b is None else len(self.idx_b)
        return f"BaseParameterComputer(joints={len(self.active_joints)}, n_base={nb})"

    def standard_parameters(self) -> Dict[str, float]:
        """Standard parameters in regressor column order (plus custom ones when enabled).

        :func:`get_standard_parameters` already holds the enabled joint terms
        (friction, actuator inertia, offset) after the inertial block.
        """
        cfg = self.identif_config
        params = get_standard_parameters(self.model, cfg)
        if cfg.get("has_custom_parameters", False):
            params.update(add_custom_parameters(self.model, cfg.get("custom_parameters")))
        return params

    def compute_base_indices(
        self, n_waypoints: int = 100, t_s: float = 0.5, freq: float = 100.0
    ) -> Tuple[np.ndarray, np.ndarray]:
        """Base column set from one random trajectory.

        The trajectory has ``n_waypoints`` random waypoints ``t_s`` seconds apart
        (the waypoint spline with zero waypoint velocities and accelerations as
        curve constraints, as figaroh 1.0.2 builds it), sampled at ``freq``.

        Args:
            n_waypoints: Number of random waypoints.
            t_s: Time between waypoints [s].
            freq: Sampling frequency [Hz].

        Returns:
            ``(idx_e, idx_b)`` integer arrays (eliminated columns of the full
            regressor; base columns of the reduced one).
        """
        wp = WaypointsGeneration(self.robot, n_waypoints, self.active_joints, rng=self.rng)
        wp.gen_rand_pool(self.soft_lim_pool)
        wps, vel, acc = wp.gen_rand_wp()
        tps = t_s * np.arange(n_waypoints)
        t = sample_times(freq, tps)
        qa, dqa, ddqa = spline_basis(tps, t, is_constrained(vel, acc)).evaluate(wps, vel, acc)
        q, v, a = wp.to_full(qa, dqa, ddqa)
        W = build_regressor_basic(self.robot, q, v, a, self.identif_config)
        self.params_std = self.standard_parameters()
        names = list(self.params_std)[: W.shape[1]]
        idx_e, params_r = get_index_eliminate(W, names, tol_e=0.001)
        keep = np.setdiff1d(np.arange(W.shape[1]), idx_e)
        idx_b = np.asarray(get_baseIndex(W[:, keep], params_r), dtype=int)
        self.idx_e = np.asarray(idx_e, dtype=int)
        self.idx_b = idx_b
        self.params_r = list(params_r)
        self.base_columns = keep[idx_b]
        self.base_names = [names[i] for i in self.base_columns]
        self.W_reference = W[:, self.base_columns]
        logger.info(
            "Base parameters: %d of %d columns (%d eliminated) from a %d-sample random trajectory",
            len(idx_b),
            W.shape[1],
            len(idx_e),
            len(t),
        )
        return self.idx_e, self.idx_b
