"""Constraints of the exciting-trajectory optimisation (module name kept from upstream, sic).

For one trajectory segment (``n_int = n_wps − 1`` intervals, ``n`` active
joints) the constraint vector is, in this order:

===================== ================ ================================================
block                 rows             bounds
===================== ================ ================================================
positions at          n_int · n        ``CB.lower_q`` … ``CB.upper_q`` [rad]
waypoints 2 … n_wps   (waypoint-major)
peak velocities       n_int · n        ``CB.lower_dq`` … ``CB.upper_dq`` [rad/s]
max efforts (KS)      n_int · n        −2e19 … ``CB.upper_effort`` [N·m]
min efforts (KS)      n_int · n        ``CB.lower_effort`` … 2e19 [N·m]
collision clearance   n_int · n_pairs  ``collision_margin`` … 2e19 [m]
                      (interval-major)
===================== ================ ================================================

Rows of the velocity and effort blocks are interval-major (row ``k·n + j``).

* Velocity: the extreme velocity of each joint on each interval in
  *continuous time* (:func:`~figaroh.utils.cubic_spline.peak_velocities`;
  ``(15/8)·Δq/T`` for the rest-to-rest quintic pieces of the design,
  ``1.5·Δq/T`` for the unconstrained cubic), which bounds the velocity at
  every instant, not only at the samples.
* Efforts ``τ`` at the samples of interval ``k`` are aggregated by the
  Kreisselmeier–Steinhauser function
  ``KS(τ) = max τ + log(Σ exp(ρ(τ_i − max τ)))/ρ`` (a smooth upper bound of
  the maximum, at most ``log(n_samples)/ρ`` above it) and likewise
  ``−KS(−τ)`` for the minimum, with ``ρ = effort_ks_sharpness / |effort limit|``
  (default 200: the bound is conservative by ≤ 3 % of the limit).

Upstream used one row per sample for velocities and efforts (≈ 2·Ns·n rows);
the aggregated rows enforce the same (velocity: a stronger) condition with
~1/100 of the rows, which makes each IPOPT iteration an order of magnitude
cheaper.

The collision row of interval ``k`` (times ``(t_{k-1}, t_k]``) and pair ``p``
is the smallest clearance of the pair over ``collision_checks_per_interval``
evenly spaced samples of the interval (always including its last sample).
Clearances are signed distances [m] between the two collision geometries
(negative when they intersect). With ``collision_screen`` set, a cheap
collision query with that security margin selects the pairs that get an exact
distance; the others report the screen value (so every value equals
``min(exact, screen)``).

Collision pairs: when the robot's collision model has none,
:func:`~figaroh.tools.robotcollisions.add_non_adjacent_pairs` pairs every two
geometries whose joints are neither the same nor parent/child; pairs disabled by
an SRDF are then removed.

Collision proxies (``collision_hull_chunks = k``, default 4). Mesh–mesh
distances cost ~1 ms per pair, too slow inside the optimiser, so the
clearance of a pair is computed on convex proxies that *contain* the meshes
(hence every proxy clearance is a lower bound of the mesh clearance, and a
proxy-clear trajectory is mesh-clear):

* level 1: one convex hull per geometry (GJK, a few µs per pair) — the broad
  phase: with a screen, pairs whose hulls are farther apart than the screen
  report the screen value;
* level 2: each mesh is cut into ``k`` slices along its principal axis and
  every slice is replaced by its hull; the pair clearance is the smallest
  slice–slice distance. One hull per link is too conservative for links whose
  housings bend around their neighbours (UR10: 64 % of random postures are
  "in collision" for single hulls versus 20 % for the meshes; 21 % with four
  slices).

``k = 1`` uses single hulls only; ``k = 0`` uses the original geometry.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Tuple

import numpy as np
import pinocchio as pin

from figaroh.optimal.config import COLLISION_DEFAULTS
from figaroh.tools.robotcollisions import CollisionManager, add_non_adjacent_pairs
from figaroh.utils.cubic_spline import CubicSpline, calc_torque, peak_velocities, sample_times

logger = logging.getLogger(__name__)

__all__ = [
    "TrajectoryConstraintManager",
    "convexify_geometry_model",
    # Re-exported for figaroh 1.0.2 compatibility.
    "COLLISION_DEFAULTS",
    "CollisionManager",
    "add_non_adjacent_pairs",
    "calc_torque",
]

IPOPT_INF = 2e19


def _hull_of_points(points: np.ndarray):
    import coal

    vec = coal.StdVec_Vec3s()
    for p in np.asarray(points, dtype=float).reshape(-1, 3):
        vec.append(p)
    return coal.Convex.convexHull(vec, False, "")


def _mesh_arrays(geometry):
    """``(vertices (V, 3), triangles (T, 3))`` of a triangle mesh, or None."""
    if not hasattr(geometry, "num_vertices") or not callable(getattr(geometry, "vertices", None)):
        return None
    vertices = np.asarray(geometry.vertices(), dtype=float).reshape(-1, 3)
    n_tris = int(getattr(geometry, "num_tris", 0))
    triangles = np.array(
        [[geometry.tri_indices(i)[c] for c in range(3)] for i in range(n_tris)], dtype=int
    ).reshape(-1, 3)
    return vertices, triangles


def mesh_hull_chunks(geometry, n_chunks: int) -> list:
    """Convex hulls of ``n_chunks`` slices of a mesh along its principal axis.

    Whole triangles are assigned to slices (by centroid, at quantiles of the
    projection on the first principal axis), so the union of the slice hulls
    contains the mesh; for elongated links it is much tighter than one hull.
    Returns ``[geometry]`` unchanged for primitives.
    """
    arrays = _mesh_arrays(geometry)
    if arrays is None:
        return [geometry]
    vertices, triangles = arrays
    if n_chunks <= 1 or len(triangles) < 4 * n_chunks:
        return [_hull_of_points(vertices)]
    centre = vertices.mean(axis=0)
    axis = np.linalg.svd(vertices - centre, full_matrices=False)[2][0]
    proj = (vertices[triangles].mean(axis=1) - centre) @ axis
    edges = np.quantile(proj, np.linspace(0.0, 1.0, n_chunks + 1))
    label = np.clip(np.searchsorted(edges, proj, side="right") - 1, 0, n_chunks - 1)
    hulls = []
    for c in range(n_chunks):
        idx = np.unique(triangles[label == c].ravel())
        if idx.size >= 4:
            hulls.append(_hull_of_points(vertices[idx]))
    return hulls or [_hull_of_points(vertices)]


def convexify_geometry_model(geom_model: pin.GeometryModel, n_chunks: int = 1):
    """Collision model whose meshes are replaced by convex hulls of ``n_chunks`` slices.

    Args:
        geom_model: Collision model (not modified).
        n_chunks: Slices per mesh (1: one hull per mesh).

    Returns:
        ``(model, owner)``: the new ``GeometryModel`` (no collision pairs) and,
        for each of its objects, the index of the original object it covers.
    """
    out = pin.GeometryModel()
    owner = []
    for index, obj in enumerate(geom_model.geometryObjects):
        pieces = mesh_hull_chunks(obj.geometry, n_chunks)
        for c, geometry in enumerate(pieces):
            name = obj.name if len(pieces) == 1 else f"{obj.name}_hull{c}"
            out.addGeometryObject(
                pin.GeometryObject(
                    name, int(obj.parentJoint), int(obj.parentFrame), obj.placement, geometry
                )
            )
            owner.append(index)
    return out, np.asarray(owner, dtype=int)


class TrajectoryConstraintManager:
    """Builds, evaluates and differentiates the segment constraints.

    Args:
        robot: Robot (``model``; ``geom_model``/``collision_model`` for collisions).
        CB: The :class:`~figaroh.utils.cubic_spline.CubicSpline` holding the
            (softened) limits.
        trajectory_config: Trajectory settings (``freq`` and the collision keys
            of :mod:`figaroh.optimal.config`).
        identif_config: Identification settings (kept for subclasses).

    Attributes:
        n_active: Number of active joints.
        n_pairs: Number of collision pairs enforced (0: collision not enforced).
        collision_manager: :class:`~figaroh.tools.robotcollisions.CollisionManager`
            on the (convexified) pair-filtered collision model, or None.
        margin, screen, checks_per_interval, check_frequency: Collision settings.
    """

    def __init__(
        self,
        robot,
        CB: CubicSpline,
        trajectory_config: Mapping[str, Any],
        identif_config: Mapping[str, Any] | None = None,
    ):
        self.robot = robot
        self.model = robot.model
        self.data = self.model.createData()
        self.CB = CB
        self.trajectory_config = trajectory_config
        self.identif_config = identif_config or {}
        self.n_active = len(CB.act_idxq)
        cfg = trajectory_config
        self.margin = float(cfg.get("collision_margin", 0.01))
        screen = cfg.get("collision_screen")
        self.screen = None if screen is None else max(float(screen), self.margin)
        self.checks_per_interval = max(1, int(cfg.get("collision_checks_per_interval", 1)))
        self.check_frequency = float(cfg.get("collision_check_frequency", cfg.get("freq", 100)))
        self.srdf = cfg.get("srdf")
        self.hull_chunks = int(cfg.get("collision_hull_chunks", 4))
        self.prune_samples = int(cfg.get("collision_prune_samples", 100))
        self.ks_sharpness = float(cfg.get("effort_ks_sharpness", 200.0))
        self.collision_manager: CollisionManager | None = None
        self.chunk_manager: CollisionManager | None = None
        self.geom_model: Any = None  # level-1 pinocchio.GeometryModel (None without pairs)
        self.n_pairs = 0
        self._setup_collision()

    def __repr__(self) -> str:
        return (
            f"TrajectoryConstraintManager(n_active={self.n_active}, n_pairs={self.n_pairs}, "
            f"margin={self.margin} m, checks_per_interval={self.checks_per_interval})"
        )

    # ------------------------------------------------------------------ set-up
    def _setup_collision(self) -> None:
        geom = getattr(self.robot, "geom_model", None)
        if geom is None:
            geom = getattr(self.robot, "collision_model", None)
        if geom is None or geom.ngeoms == 0:
            logger.warning(
                "Trajectory collision: the robot has no collision geometry, self-collision "
                "is not enforced (load the robot with geometry to enforce it)"
            )
            return
        # level 1: one convex hull per object (or the original geometry)
        if self.hull_chunks >= 1:
            level1, _ = convexify_geometry_model(geom, 1)
        else:
            level1 = geom.copy()
            level1.removeAllCollisionPairs()
        n_existing = len(geom.collisionPairs)
        if n_existing:
            for pair in geom.collisionPairs:
                level1.addCollisionPair(pin.CollisionPair(int(pair.first), int(pair.second)))
            n_added = 0
        else:
            n_added = add_non_adjacent_pairs(self.model, level1)
        if self.srdf:
            pin.removeCollisionPairs(self.model, level1, str(self.srdf))
        self._source_geom = geom
        self._build_levels(level1)
        n_pruned = self._prune_always_colliding() if self.prune_samples else 0
        logger.info(
            "Trajectory collision: %d pairs (%d non-adjacent added, %d existing, SRDF %s, "
            "%d always-colliding pruned), %s",
            self.n_pairs,
            n_added,
            n_existing,
            self.srdf or "none",
            n_pruned,
            f"convex hulls of {self.hull_chunks} slice(s) per mesh"
            if self.hull_chunks >= 1
            else "original geometry",
        )
        if self.n_pairs == 0:
            logger.warning("Trajectory collision: no collision pairs, collision is not enforced")

    def _build_levels(self, level1: pin.GeometryModel) -> None:
        """Managers, data and slice pairs for the level-1 model's current pairs."""
        self.n_pairs = len(level1.collisionPairs)
        if self.n_pairs == 0:
            self.geom_model = None
            self.collision_manager = None
            return
        geom = self._source_geom
        self.geom_model = level1
        self.collision_manager = CollisionManager(self.robot, geom_model=level1)
        self._set_security_margin(self.collision_manager.geom_data, self.margin)
        self._active_margin = self.margin
        self._gd1 = level1.createData()
        self._tighten_gjk(self._gd1)
        if self.screen is not None:
            self._set_security_margin(self._gd1, self.screen)
        # level 2: hulls of mesh slices; every slice pair of a level-1 pair
        self._chunked = self.hull_chunks > 1
        if self._chunked:
            if getattr(self, "_level2_base", None) is None:
                self._level2_base = convexify_geometry_model(geom, self.hull_chunks)
            base2, owner = self._level2_base
            level2 = base2.copy()
            level2.removeAllCollisionPairs()
            members = [np.flatnonzero(owner == i) for i in range(geom.ngeoms)]
            pair_slices = []
            for pair in level1.collisionPairs:
                start = len(level2.collisionPairs)
                for a in members[int(pair.first)]:
                    for b in members[int(pair.second)]:
                        level2.addCollisionPair(pin.CollisionPair(int(a), int(b)))
                pair_slices.append(np.arange(start, len(level2.collisionPairs)))
            self._pair_slices = pair_slices
            self.chunk_model = level2
            self.chunk_manager = CollisionManager(self.robot, geom_model=level2)
            self._set_security_margin(self.chunk_manager.geom_data, self.margin)
            self._gd2 = level2.createData()
            self._tighten_gjk(self._gd2)
        self._joints1 = [
            (
                int(level1.geometryObjects[p.first].parentJoint),
                int(level1.geometryObjects[p.second].parentJoint),
            )
            for p in level1.collisionPairs
        ]

    def _prune_always_colliding(self) -> int:
        """Drop the pairs closer than the margin in ≥ 95 % of random postures.

        Like an SRDF's "always in collision" entries: two geometries that touch
        (or nearly touch, for the proxies) whatever the posture — e.g. a wrist
        housing and the sensor mounted on the next-but-one link — make every
        trajectory infeasible while no motion can separate them. Postures are
        uniform within the spline's position limits (fixed seed); each pruned
        pair is logged as a warning.
        """
        if not self.n_pairs:
            return 0
        CB = self.CB
        rng = np.random.default_rng(0)
        qa = rng.uniform(CB.lower_q, CB.upper_q, (self.prune_samples, len(CB.lower_q)))
        q = CB.to_full(qa, qa * 0, qa * 0)[0]
        saved, self.screen = self.screen, None
        try:
            close = np.array([self.clipped_distances(qi) < self.margin for qi in q])
        finally:
            self.screen = saved
        drop = np.flatnonzero(close.mean(axis=0) >= 0.95)
        if not drop.size:
            return 0
        names = self.pair_names()
        level1 = self.geom_model
        pairs = [level1.collisionPairs[int(k)] for k in drop]
        for k in drop:
            logger.warning(
                "Trajectory collision: pair %s <-> %s is closer than %.3g m in %.0f %% of "
                "random postures; it is not enforced (add it to the SRDF's disabled pairs)",
                names[k][0],
                names[k][1],
                self.margin,
                100 * close[:, k].mean(),
            )
        for pair in pairs:
            level1.removeCollisionPair(pin.CollisionPair(int(pair.first), int(pair.second)))
        self._build_levels(level1)
        return int(drop.size)

    @staticmethod
    def _tighten_gjk(geom_data, tolerance: float = 1e-9) -> None:
        """GJK tolerance 1e-9 (default 1e-6): distances reproducible to ~1e-9 m, so that
        finite differences and line searches see a smooth clearance."""
        requests = geom_data.distanceRequests
        for request in (
            requests
            if isinstance(requests, (list, tuple)) or hasattr(requests, "__iter__")
            else [requests]
        ):
            if hasattr(request, "gjk_tolerance"):
                request.gjk_tolerance = tolerance

    @staticmethod
    def _set_security_margin(geom_data, margin: float) -> None:
        requests = geom_data.collisionRequests
        if hasattr(requests, "security_margin"):
            requests.security_margin = margin
            return
        for request in requests:
            request.security_margin = margin

    def pair_names(self) -> List[Tuple[str, str]]:
        """``(name1, name2)`` of every enforced pair (level-1 geometry object names)."""
        if not self.n_pairs:
            return []
        objs = self.geom_model.geometryObjects
        return [(objs[p.first].name, objs[p.second].name) for p in self.geom_model.collisionPairs]

    # ------------------------------------------------------------------ bounds
    def get_variable_bounds(self) -> Tuple[List[float], List[float]]:
        """Bounds of the decision vector ``X`` of a segment (waypoints 2 … n_wps).

        ``X`` is waypoint-major (``X[k·n + j]`` = joint ``j`` at waypoint
        ``k + 2``), so the bounds are the softened joint limits
        ``CB.lower_q`` / ``CB.upper_q`` [rad] repeated ``n_wps − 1`` times.
        :class:`~figaroh.optimal.base_optimal_trajectory.BaseTrajectoryIPOPTProblem`
        passes exactly these to IPOPT.

        Returns:
            ``(lower, upper)`` lists of ``(n_wps − 1)·n_active`` values [rad].
        """
        n_int = self.CB.num_waypoints - 1
        return (
            np.tile(self.CB.lower_q, n_int).tolist(),
            np.tile(self.CB.upper_q, n_int).tolist(),
        )

    def n_constraints(self, Ns: int | None = None) -> int:
        """Total number of constraint rows (independent of the number of samples ``Ns``)."""
        n_int = self.CB.num_waypoints - 1
        return 4 * n_int * self.n_active + n_int * self.n_pairs

    def block_sizes(self) -> Dict[str, int]:
        """Number of rows of each constraint block, in order."""
        n_int = self.CB.num_waypoints - 1
        m = n_int * self.n_active
        return {
            "position": m,
            "velocity": m,
            "effort_max": m,
            "effort_min": m,
            "collision": n_int * self.n_pairs,
        }

    def get_constraint_bounds(self, Ns: int | None = None) -> Tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` bounds of the constraint vector (see module table)."""
        CB = self.CB
        n_int = CB.num_waypoints - 1
        big = np.full(n_int * self.n_active, IPOPT_INF)
        lower = np.concatenate(
            [
                np.tile(CB.lower_q, n_int),
                np.tile(CB.lower_dq, n_int),
                -big,
                np.tile(CB.lower_effort, n_int),
                np.full(n_int * self.n_pairs, self.margin),
            ]
        )
        upper = np.concatenate(
            [
                np.tile(CB.upper_q, n_int),
                np.tile(CB.upper_dq, n_int),
                np.tile(CB.upper_effort, n_int),
                big,
                np.full(n_int * self.n_pairs, IPOPT_INF),
            ]
        )
        return lower, upper

    # ------------------------------------------------------------------ evaluation
    def velocity_rows(
        self, tps, wps, vel_wps=None, acc_wps=None
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Peak-velocity block and its derivatives.

        Args:
            tps: Waypoint times (n_wps,) [s].
            wps: Waypoints (n_active, n_wps) [rad].
            vel_wps, acc_wps: Waypoint velocities [rad/s] and accelerations
                [rad/s²] (n_active, n_wps); both given: the constrained pieces
                (see :mod:`figaroh.utils.cubic_spline`).

        Returns:
            ``(values (n_int·n,), dv_dy0, dv_dy1)`` — the derivatives (n_int, n)
            with respect to each interval's first and last waypoint [1/s].
        """
        peak, dy0, dy1 = peak_velocities(
            np.asarray(tps, dtype=float).ravel(), wps, vel_wps, acc_wps
        )
        return peak.ravel(), dy0, dy1

    def ks_rho(self) -> np.ndarray:
        """KS sharpness ρ_j [1/(N·m)] of each active joint."""
        limit = np.maximum(np.abs(self.CB.upper_effort), np.abs(self.CB.lower_effort))
        return self.ks_sharpness / np.where(limit > 0, limit, 1.0)

    def effort_rows(
        self, tau_act: np.ndarray, groups: List[np.ndarray]
    ) -> Tuple[np.ndarray, np.ndarray, List[np.ndarray], List[np.ndarray]]:
        """KS maximum and minimum of each joint's effort over each interval.

        Args:
            tau_act: Efforts of the active joints at the samples (Ns, n) [N·m].
            groups: Sample indices of each interval (n_int arrays).

        Returns:
            ``(max_rows (n_int·n,), min_rows (n_int·n,), w_max, w_min)`` where
            ``w_max[k]``/``w_min[k]`` (len(groups[k]), n) are the softmax
            weights, i.e. the derivatives of the rows with respect to the
            efforts of the interval's samples.
        """
        rho = self.ks_rho()
        n_int = len(groups)
        hi = np.zeros((n_int, self.n_active))
        lo = np.zeros((n_int, self.n_active))
        w_hi: List[np.ndarray] = []
        w_lo: List[np.ndarray] = []
        for k, g in enumerate(groups):
            tau = tau_act[g]
            for sign, out, weights in ((1.0, hi, w_hi), (-1.0, lo, w_lo)):
                z = sign * tau * rho
                zmax = z.max(axis=0)
                e = np.exp(z - zmax)
                total = e.sum(axis=0)
                out[k] = sign * (zmax + np.log(total)) / rho
                weights.append(e / total)
        return hi.ravel(), lo.ravel(), w_hi, w_lo

    def evaluate_constraints(
        self,
        Ns: int,
        X: np.ndarray,
        opt_cb: Dict[str, Any] | None,
        tps: np.ndarray,
        vel_wps: np.ndarray | None,
        acc_wps: np.ndarray | None,
        wp_init: np.ndarray,
        p_f: np.ndarray | None = None,
        v_f: np.ndarray | None = None,
        tau: np.ndarray | None = None,
        t_f: np.ndarray | None = None,
    ) -> np.ndarray:
        """Constraint vector of the segment whose free waypoints are ``X``.

        Args:
            Ns: Number of samples of the segment.
            X: Waypoints 2…n_wps, waypoint-major ((n_wps − 1)·n_active,) [rad].
            opt_cb: Trajectory store shared with the objective (a dict, or
                None): when the trajectory is computed here, its ``t_f, p_f,
                v_f, a_f`` are written into it, as the objective does.
            tps: Waypoint times (n_wps,) [s].
            vel_wps, acc_wps: Waypoint velocities/accelerations (n_active, n_wps).
            wp_init: First (fixed) waypoint (n_active,) [rad].
            p_f, v_f: Sampled full configurations (Ns, nq) / velocities (Ns, nv)
                when already computed (else computed from the spline).
            tau: Efforts (Ns, nv) [N·m] when already computed (else RNEA).
            t_f: Sample times (Ns,) [s].

        Returns:
            The constraint vector (:meth:`n_constraints` entries).
        """
        CB = self.CB
        X = np.asarray(X, dtype=float).ravel()
        tps = np.asarray(tps, dtype=float).ravel()
        wps = np.column_stack(
            [np.asarray(wp_init, dtype=float).ravel(), X.reshape(-1, self.n_active).T]
        )
        if p_f is None or v_f is None or t_f is None or tau is None:
            t_f, p_f, v_f, a_f = CB.get_full_config(
                self.trajectory_config.get("freq", 100), tps, wps, vel_wps, acc_wps
            )
            if isinstance(opt_cb, dict):
                opt_cb.update({"t_f": t_f, "p_f": p_f, "v_f": v_f, "a_f": a_f})
            tau = calc_torque(len(t_f), self.robot, p_f, v_f, a_f).reshape(self.model.nv, -1).T
        t_f = np.asarray(t_f, dtype=float).ravel()
        if len(t_f) != Ns:
            raise ValueError(f"the segment has {len(t_f)} samples, expected Ns = {Ns}")
        interval = np.clip(np.searchsorted(tps, t_f, side="right") - 1, 0, len(tps) - 2)
        groups = [np.flatnonzero(interval == k) for k in range(len(tps) - 1)]
        tau_max, tau_min, _, _ = self.effort_rows(np.asarray(tau)[:, CB.act_idxv], groups)
        blocks = [X, self.velocity_rows(tps, wps, vel_wps, acc_wps)[0], tau_max, tau_min]
        if self.n_pairs:
            blocks.append(self._evaluate_collision_constraints(p_f, tps, t_f).ravel())
        return np.concatenate(blocks)

    def check_sample_indices(self, tps: np.ndarray, t_f: np.ndarray) -> List[np.ndarray]:
        """Indices (into ``t_f``) of the collision-check samples of each interval.

        Interval ``k`` covers ``(t_k, t_{k+1}]`` (the first also includes
        ``t_0``); ``checks_per_interval`` evenly spaced samples ending at the
        interval's last sample are taken.
        """
        tps = np.asarray(tps, dtype=float).ravel()
        t_f = np.asarray(t_f, dtype=float).ravel()
        tol = 1e-9 * max(1.0, abs(tps[-1]))
        out = []
        for k in range(len(tps) - 1):
            start = int(np.searchsorted(t_f, tps[k] + tol, side="left"))  # first sample > t_k
            end = int(np.searchsorted(t_f, tps[k + 1] + tol, side="left")) - 1  # last ≤ t_{k+1}
            if k == 0:
                start = 0
            if end < start:
                out.append(np.array([min(max(end, 0), len(t_f) - 1)], dtype=int))
                continue
            c = self.checks_per_interval
            picks = np.round(np.linspace(start - 1, end, c + 1)[1:]).astype(int)
            out.append(np.unique(np.clip(picks, start, end)))
        return out

    def _pair_distance(self, k: int, want_points: bool = False):
        """Exact clearance of pair ``k`` at the current placements (and its witness data)."""
        if not self._chunked:
            result = pin.computeDistance(self.geom_model, self._gd1, int(k))
            gm = self.geom_model
            pair = gm.collisionPairs[int(k)]
            return float(result.min_distance), (result, pair) if want_points else None
        best, best_idx, best_res = np.inf, -1, None
        for idx in self._pair_slices[int(k)]:
            result = pin.computeDistance(self.chunk_model, self._gd2, int(idx))
            if result.min_distance < best:
                best, best_idx = float(result.min_distance), int(idx)
                best_res = result
        if not want_points:
            return best, None
        return best, (best_res, self.chunk_model.collisionPairs[best_idx])

    def _update_placements(self, q: np.ndarray) -> None:
        pin.forwardKinematics(self.model, self.data, q)
        pin.updateGeometryPlacements(self.model, self.data, self.geom_model, self._gd1)
        if self._chunked:
            pin.updateGeometryPlacements(self.model, self.data, self.chunk_model, self._gd2)

    def _candidates(self) -> np.ndarray:
        """Pairs whose level-1 (hull) clearance is below the screen (all without a screen)."""
        if self.screen is None:
            return np.arange(self.n_pairs)
        pin.computeCollisions(self.geom_model, self._gd1, False)
        return np.fromiter(
            (k for k, r in enumerate(self._gd1.collisionResults) if r.isCollision()), int
        )

    def clipped_distances(self, q: np.ndarray) -> np.ndarray:
        """Clearance [m] of every pair at configuration ``q`` (capped at the screen).

        The clearance of a pair is the smallest distance between the slice
        hulls of its two objects. With a screen, the level-1 hull query (a
        lower bound) discards the pairs farther than the screen, which then
        report the screen value: every value equals ``min(exact, screen)``.

        Returns:
            (n_pairs,) signed distances [m].
        """
        if not self.n_pairs:
            return np.zeros(0)
        self._update_placements(np.asarray(q, dtype=float))
        cap = np.inf if self.screen is None else self.screen
        out = np.full(self.n_pairs, cap)
        for k in self._candidates():
            out[k] = min(self._pair_distance(k)[0], cap)
        return out

    def distance_gradients(self, q: np.ndarray, pairs: np.ndarray | None = None):
        """Clearances and their gradients with respect to the configuration.

        For a pair with nearest points ``p1`` (body 1) and ``p2`` (body 2) and
        unit normal ``n`` from 1 to 2, ``∂d/∂q = nᵀ (J_{p2} − J_{p1})`` where
        ``J_p`` is the world-frame linear Jacobian of the point rigidly
        attached to its body (envelope theorem; valid where the nearest
        features are unique). Pairs capped by the screen get a zero gradient.

        Args:
            q: Configuration (nq,) [rad].
            pairs: Pair indices (default: all).

        Returns:
            ``(d (n_sel,), grad (n_sel, nv))`` [m], [m/rad].
        """
        q = np.asarray(q, dtype=float)
        pairs = np.arange(self.n_pairs) if pairs is None else np.asarray(pairs, dtype=int)
        d = np.zeros(len(pairs))
        grad = np.zeros((len(pairs), self.model.nv))
        if not len(pairs):
            return d, grad
        model, data = self.model, self.data
        pin.computeJointJacobians(model, data, q)
        pin.updateGeometryPlacements(model, data, self.geom_model, self._gd1)
        if self._chunked:
            pin.updateGeometryPlacements(model, data, self.chunk_model, self._gd2)
        frame = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        jac_cache: Dict[int, np.ndarray] = {}

        def point_jacobian(joint: int, point: np.ndarray) -> np.ndarray:
            if joint not in jac_cache:
                jac_cache[joint] = pin.getJointJacobian(model, data, joint, frame)
            J = jac_cache[joint]
            r = point - data.oMi[joint].translation
            # v_p = v_o + ω × r = J_lin − [r]× J_ang
            return J[:3] - np.cross(r[:, None], J[3:], axis=0)

        cap = np.inf if self.screen is None else self.screen
        candidates = set(self._candidates().tolist()) if self.screen is not None else None
        for row, k in enumerate(pairs):
            if candidates is not None and int(k) not in candidates:
                d[row] = cap
                continue
            dist, (result, pair) = self._pair_distance(int(k), want_points=True)
            if dist >= cap:
                d[row] = cap
                continue
            d[row] = dist
            p1 = np.asarray(result.getNearestPoint1(), dtype=float)
            p2 = np.asarray(result.getNearestPoint2(), dtype=float)
            diff = p2 - p1
            norm = np.linalg.norm(diff)
            if dist > 1e-9 and norm > 1e-12:
                normal = diff / norm
            else:
                normal = np.asarray(result.normal, dtype=float)
                nn = np.linalg.norm(normal)
                if nn < 1e-12:
                    continue
                normal = normal / nn
            j1, j2 = self._joints1[int(k)]
            grad[row] = normal @ (point_jacobian(j2, p2) - point_jacobian(j1, p1))
        return d, grad

    def _evaluate_collision_constraints(
        self, p_f: np.ndarray, tps: np.ndarray, t_f: np.ndarray
    ) -> np.ndarray:
        """(n_intervals, n_pairs) minimum clearance of each pair over each interval's checks."""
        values, _ = self._collision_minima(p_f, tps, t_f)
        return values

    def _collision_minima(self, p_f, tps, t_f) -> Tuple[np.ndarray, np.ndarray]:
        checks = self.check_sample_indices(tps, np.asarray(t_f).ravel())
        n_int = len(checks)
        values = np.zeros((n_int, self.n_pairs))
        argmin = np.zeros((n_int, self.n_pairs), dtype=int)
        cache: Dict[int, np.ndarray] = {}
        for k, samples in enumerate(checks):
            rows = []
            for s in samples:
                if s not in cache:
                    cache[int(s)] = self.clipped_distances(p_f[s])
                rows.append(cache[int(s)])
            dists = np.asarray(rows)
            best = np.argmin(dists, axis=0)
            values[k] = dists[best, np.arange(self.n_pairs)]
            argmin[k] = samples[best]
        return values, argmin

    def collision_constraints_and_gradients(
        self, p_f: np.ndarray, tps: np.ndarray, t_f: np.ndarray
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Collision rows with the configuration gradient at their minimising sample.

        Returns:
            ``(values (n_int, n_pairs) [m], sample (n_int, n_pairs) index into
            t_f, grad (n_int, n_pairs, nv) [m/rad])``.
        """
        values, argmin = self._collision_minima(p_f, tps, t_f)
        grad = np.zeros(values.shape + (self.model.nv,))
        for s in np.unique(argmin):
            mask = argmin == s
            rows, pairs = np.nonzero(mask)
            _, g = self.distance_gradients(p_f[s], pairs)
            grad[rows, pairs] = g
        return values, argmin, grad

    # ------------------------------------------------------------------ checks
    def configuration_clear(self, q: np.ndarray, margin: float | None = None) -> bool:
        """Whether every pair keeps at least ``margin`` (default: the collision margin) at ``q``."""
        cm = self.collision_manager  # None exactly when there is no pair
        if not self.n_pairs or cm is None:
            return True
        chunk = self.chunk_manager if self._chunked else None
        if margin is not None and margin != self._active_margin:
            self._set_security_margin(cm.geom_data, margin)
            if chunk is not None:
                self._set_security_margin(chunk.geom_data, margin)
            self._active_margin = margin
        elif margin is None and self._active_margin != self.margin:
            return self.configuration_clear(q, self.margin)
        if not cm.check_collisions(q):
            return True  # level-1 hulls clear ⇒ slices (inside them) clear
        if chunk is None:
            return False
        flagged = [k for k, _, _ in cm.get_collision_details()]
        model, gm2 = self.model, self.chunk_model
        gd2 = chunk.geom_data
        pin.updateGeometryPlacements(model, cm.data, gm2, gd2)
        for k in flagged:
            for idx in self._pair_slices[int(k)]:
                if pin.computeCollision(gm2, gd2, int(idx)):
                    return False
        return True

    def trajectory_clear(
        self,
        tps: np.ndarray,
        wps: np.ndarray,
        vel_wps: np.ndarray | None = None,
        acc_wps: np.ndarray | None = None,
        margin: float | None = None,
    ) -> bool:
        """Whether the whole spline keeps every pair at least ``margin`` apart.

        The spline is sampled at ``collision_check_frequency`` [Hz]; each
        sample gets a level-1 hull query (security margin = ``margin``,
        default the collision margin) and, for the flagged pairs only,
        slice-hull queries. True when collision is not enforced.
        """
        if not self.n_pairs:
            return True
        t = sample_times(self.check_frequency, tps)
        q_act = self.CB.get_active_config(self.check_frequency, tps, wps, vel_wps, acc_wps)[1]
        q = self.CB.to_full(q_act, q_act * 0, q_act * 0)[0]
        margin = self.margin if margin is None else float(margin)
        for i in range(len(t)):
            if not self.configuration_clear(q[i], margin):
                logger.debug("trajectory collides (clearance < %g m) at t = %.3f s", margin, t[i])
                return False
        return True

    def min_clearance_along(self, q: np.ndarray) -> np.ndarray:
        """Minimum pair clearance [m] at each configuration of ``q`` (N, nq), uncapped."""
        if not self.n_pairs:
            return np.full(len(q), np.inf)
        saved, self.screen = self.screen, None
        try:
            return np.array([self.clipped_distances(qi).min() for qi in np.asarray(q)])
        finally:
            self.screen = saved
