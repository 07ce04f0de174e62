"""Self-collision checking on Pinocchio collision models (coal / hpp-fcl).

:class:`CollisionManager` wraps a robot's collision ``GeometryModel``: it
registers the candidate pairs (every pair of geometries on different joints,
minus the pairs an SRDF ``<disable_collisions>`` lists), runs narrow-phase
collision and distance queries at a configuration, and reports or draws the
results. :class:`CollisionWrapper` keeps the legacy FIGAROH method names.

Signed distances [m]: a positive ``min_distance`` is the clearance between two
geometries; when they intersect coal reports the negated penetration depth for
convex shapes/primitives and ``0`` for two triangle meshes (BVH models), so a
colliding pair always has ``min_distance <= 0``.

Note that :meth:`CollisionManager.setup_collision_pairs` edits the collision
model it was given — by default the robot's own ``robot.geom_model``, shared
with every other user of that robot.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, List, Tuple

import numpy as np
import pinocchio as pin

from .robotvisualization import RobotVisualizer

logger = logging.getLogger(__name__)

__all__ = ["CollisionManager", "CollisionWrapper", "add_non_adjacent_pairs"]

CollisionDetail = Tuple[int, Any, Any]


def add_non_adjacent_pairs(model: pin.Model, geom_model: pin.GeometryModel) -> int:
    """Add a collision pair for every two geometries on non-adjacent joints.

    Two geometries are skipped when they hang on the same joint (they move
    together) or on joints that are parent and child of each other (touching
    links, whose meshes usually overlap at the joint). Pairs already in
    ``geom_model`` are kept and not counted.

    Args:
        model: The robot's Pinocchio model (gives each joint's parent).
        geom_model: Collision model, edited in place.

    Returns:
        Number of pairs added.

    Raises:
        ValueError: a geometry's parent joint is not a joint of ``model``.
    """
    parents = [int(p) for p in model.parents]
    objects = geom_model.geometryObjects
    joints = [int(obj.parentJoint) for obj in objects]
    bad = [objects[i].name for i, j in enumerate(joints) if not 0 <= j < len(parents)]
    if bad:
        raise ValueError(
            f"geometries {bad[:5]} hang on joints that model {model.name!r} does not have "
            f"(njoints = {model.njoints}): pass the collision model built with this model"
        )
    added = 0
    for i, ji in enumerate(joints):
        for j in range(i + 1, len(joints)):
            jj = joints[j]
            if ji == jj or parents[ji] == jj or parents[jj] == ji:
                continue
            pair = pin.CollisionPair(i, j)
            if not geom_model.existCollisionPair(pair):
                geom_model.addCollisionPair(pair)
                added += 1
    logger.debug("add_non_adjacent_pairs: %d pairs added", added)
    return added


def _num_contacts(result: Any) -> int:
    """Number of contacts of a coal/hpp-fcl ``CollisionResult`` (API differs by version)."""
    for attr in ("numContacts", "getNbContacts"):
        fn = getattr(result, attr, None)
        if fn is not None:
            return int(fn())
    return 0


class CollisionManager:
    """Self-collision detection for a Pinocchio robot.

    Args:
        robot: Object with a Pinocchio ``model`` (a :class:`~figaroh.tools.robot.Robot`
            or ``RobotWrapper``); its ``geom_model`` (or ``collision_model``) is
            used when ``geom_model`` is not given.
        geom_model: Collision geometry model to use instead of the robot's.
        geom_data: Matching geometry data (created when ``None`` and rebuilt
            whenever the pair list changes).
        viz: Optional viewer for :meth:`visualize_collisions` (gepetto-style,
            Pinocchio ``ViserVisualizer`` or ``viser.ViserServer``).

    Attributes:
        model: The robot's Pinocchio model.
        data: A private ``model.createData()`` (the robot's data is untouched).
        geom_model: Collision ``GeometryModel`` (``None`` without geometry).
        geom_data: Collision ``GeometryData`` with contact computation enabled.
    """

    def __init__(self, robot, geom_model=None, geom_data=None, viz=None):
        model = getattr(robot, "model", None)
        if not callable(getattr(model, "createData", None)):
            raise TypeError(
                "robot must expose a Pinocchio model as robot.model (a figaroh Robot, a "
                "RobotWrapper or any object holding a pinocchio.Model), "
                f"got {type(robot).__name__}"
            )
        self.robot = robot
        self.viz = viz
        self.model = model
        self.data = model.createData()
        if geom_model is None:
            geom_model = getattr(robot, "geom_model", None)
        if geom_model is None:
            geom_model = getattr(robot, "collision_model", None)
        self.geom_model = geom_model
        if geom_data is None and geom_model is not None:
            geom_data = geom_model.createData()
        self.geom_data = geom_data
        self._configure_requests()
        self._last_q: np.ndarray | None = None
        self._vis_cache: dict = {}
        self._max_patches = 10
        self._n_drawn = 0
        self._visualizer = None

    def __repr__(self) -> str:
        ngeoms = self.geom_model.ngeoms if self.geom_model is not None else 0
        return (
            f"{type(self).__name__}(robot={self.model.name!r}, geometries={ngeoms}, "
            f"pairs={self.n_pairs}, viewer={type(self.viz).__name__ if self.viz else None})"
        )

    # ------------------------------------------------------------------ helpers
    @property
    def n_pairs(self) -> int:
        """Number of registered collision pairs."""
        return len(self.geom_model.collisionPairs) if self.geom_model is not None else 0

    def _configure_requests(self) -> None:
        if self.geom_data is None:
            return
        requests = self.geom_data.collisionRequests
        if hasattr(requests, "enable_contact"):  # older Pinocchio: one shared request
            requests.enable_contact = True
            return
        for request in requests:
            request.enable_contact = True

    def _sync_geom_data(self) -> None:
        """Rebuild ``geom_data`` when the pair list no longer matches it."""
        if self.geom_model is None:
            return
        if self.geom_data is None or len(self.geom_data.collisionResults) != self.n_pairs:
            self.geom_data = self.geom_model.createData()
            self._configure_requests()

    def _check_q(self, q: np.ndarray) -> np.ndarray:
        arr = np.asarray(q, dtype=float).ravel()
        if arr.shape != (self.model.nq,):
            raise ValueError(
                f"q must have model.nq = {self.model.nq} entries [rad, m], got {arr.size}"
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError("q contains NaN or inf")
        return arr

    @staticmethod
    def _file_exists(path: str) -> bool:
        return Path(path).is_file()

    def pair_names(self, index: int) -> Tuple[str, str]:
        """Names of the two geometry objects of collision pair ``index``."""
        if self.geom_model is None:
            raise ValueError("No geometry model: the robot was loaded without geometry")
        if not 0 <= index < self.n_pairs:
            raise ValueError(f"pair index {index} out of range (0 … {self.n_pairs - 1})")
        pair = self.geom_model.collisionPairs[index]
        objs = self.geom_model.geometryObjects
        return objs[pair.first].name, objs[pair.second].name

    # ------------------------------------------------------------------ setup
    def setup_collision_pairs(self, srdf_model_path: str | None = None) -> None:
        """Register every candidate pair, then drop those disabled by an SRDF.

        All pairs of geometries attached to different joints are added
        (Pinocchio's ``addAllCollisionPairs``); pairs whose links an SRDF
        ``<disable_collisions link1=… link2=…/>`` lists are then removed.

        Args:
            srdf_model_path: Optional SRDF file.

        Raises:
            ValueError: No geometry model (robot loaded without geometry).
            FileNotFoundError: ``srdf_model_path`` is given but does not exist.
        """
        if self.geom_model is None:
            raise ValueError(
                "Geometry model not available for collision setup: load the robot with "
                "geometry (Robot(urdf, load_geometry=True)) or pass geom_model."
            )
        if srdf_model_path is not None and not self._file_exists(str(srdf_model_path)):
            raise FileNotFoundError(
                f"SRDF file not found: {srdf_model_path}. Pass the path of the robot's "
                f".srdf (e.g. <pkg>/srdf/<robot>.srdf) or None to keep every pair."
            )
        self.geom_model.addAllCollisionPairs()
        n_all = self.n_pairs
        if srdf_model_path is not None:
            pin.removeCollisionPairs(self.model, self.geom_model, str(srdf_model_path))
        self._sync_geom_data()
        logger.info("Collision pairs: %d candidates, %d after SRDF filtering", n_all, self.n_pairs)

    # ------------------------------------------------------------------ queries
    def check_collisions(self, q: np.ndarray, update_geometry: bool = True) -> bool:
        """Whether any registered pair collides at ``q``.

        Every pair is tested (no early stop) so that
        :meth:`get_collision_details` lists all colliding pairs afterwards.

        Args:
            q: Configuration (nq,) [rad, m].
            update_geometry: Recompute the geometry placements from ``q``; with
                False the placements of the previous call are reused (``q`` is
                then only validated).

        Returns:
            True if at least one pair is in collision; False without geometry.
        """
        q = self._check_q(q)
        if self.geom_model is None:
            logger.warning("check_collisions: no geometry model, collisions are not checked")
            return False
        self._sync_geom_data()
        if self.n_pairs == 0:
            logger.warning(
                "check_collisions: no collision pairs registered; call "
                "setup_collision_pairs() first"
            )
        if update_geometry or self._last_q is None:
            pin.updateGeometryPlacements(self.model, self.data, self.geom_model, self.geom_data, q)
            self._last_q = q.copy()
        return bool(pin.computeCollisions(self.geom_model, self.geom_data, False))

    def get_collision_details(self) -> List[CollisionDetail]:
        """Colliding pairs of the last :meth:`check_collisions`.

        Returns:
            ``[(pair_index, CollisionPair, CollisionResult), ...]``.
        """
        if self.geom_data is None or self.geom_model is None:
            return []
        return [
            (idx, self.geom_model.collisionPairs[idx], result)
            for idx, result in enumerate(self.geom_data.collisionResults)
            if idx < self.n_pairs and result.isCollision()
        ]

    def get_collision_distances(self, collision_details: List | None = None) -> np.ndarray:
        """Signed distances [m] of colliding pairs (≤ 0), at the last checked placement.

        Args:
            collision_details: Output of :meth:`get_collision_details` (computed
                when ``None``).

        Returns:
            Array (n_collisions,) of ``distanceResults[i].min_distance``.
        """
        if self.geom_data is None or self.geom_model is None:
            return np.array([])
        if collision_details is None:
            collision_details = self.get_collision_details()
        if not collision_details:
            return np.array([])
        out = np.empty(len(collision_details))
        for k, (idx, _, _) in enumerate(collision_details):
            out[k] = pin.computeDistance(self.geom_model, self.geom_data, int(idx)).min_distance
        return out

    def get_all_distances(self, q: np.ndarray | None = None) -> np.ndarray:
        """Signed distance [m] of every registered pair.

        Args:
            q: Configuration (nq,) [rad, m]; when ``None`` the placements of the
                last :meth:`check_collisions` are used.

        Returns:
            Array (n_pairs,) of ``min_distance`` (positive: clearance).

        Raises:
            RuntimeError: No configuration given and none checked before.
        """
        if self.geom_model is None:
            return np.array([])
        self._sync_geom_data()
        if q is not None:
            q = self._check_q(q)
            pin.updateGeometryPlacements(self.model, self.data, self.geom_model, self.geom_data, q)
            self._last_q = q.copy()
        elif self._last_q is None:
            raise RuntimeError(
                "get_all_distances: geometry placements are unknown; call "
                "check_collisions(q) first or pass q."
            )
        if self.n_pairs == 0:
            return np.array([])
        pin.computeDistances(self.geom_model, self.geom_data)
        return np.fromiter(
            (r.min_distance for r in self.geom_data.distanceResults),
            dtype=float,
            count=self.n_pairs,
        )

    def print_collision_pairs(self) -> None:
        """Print every pair as ``Pair kkk: name1 <-> name2 [COLLISION|FREE]``."""
        if self.geom_model is None or self.geom_data is None:
            print("No geometry model available")
            return
        self._sync_geom_data()
        print(f"Total collision pairs: {self.n_pairs}")
        print("-" * 60)
        for k in range(self.n_pairs):
            name1, name2 = self.pair_names(k)
            status = "COLLISION" if self.geom_data.collisionResults[k].isCollision() else "FREE"
            print(f"Pair {k:3d}: {name1:20s} <-> {name2:20s} [{status}]")

    # ------------------------------------------------------------------ display
    def _get_visualizer(self):
        if self._visualizer is None:
            self._visualizer = RobotVisualizer(None, None, self.viz)
        return self._visualizer

    def _cleanup_old_contacts(self, n_new: int) -> None:
        vis = self._get_visualizer()
        for i in range(min(n_new, self._max_patches), self._n_drawn):
            vis.remove(f"world/contact_{i}")
            vis.remove(f"world/contact_normal_{i}")
        self._n_drawn = min(n_new, self._max_patches)

    def _display_contact(self, i: int, contact: Any, pair: Any) -> None:
        vis = self._get_visualizer()
        pos = np.asarray(contact.pos, dtype=float)
        normal = np.asarray(contact.normal, dtype=float)
        depth = abs(float(getattr(contact, "penetration_depth", 0.0)))
        vis.draw_sphere(
            f"world/contact_{i}", 0.01, pin.SE3(np.eye(3), pos), color=(1.0, 0.0, 0.0, 1.0)
        )
        length = max(depth, 0.05)
        if np.linalg.norm(normal) > 1e-12:
            vis.draw_arrow(
                f"world/contact_normal_{i}",
                pos,
                normal / np.linalg.norm(normal) * length,
                0.003,
                color=(1.0, 0.5, 0.0, 1.0),
            )
        self._vis_cache[i] = (pair.first, pair.second)

    def visualize_collisions(self, collision_details: List | None = None) -> None:
        """Draw the first contact of each colliding pair (at most 10).

        Each contact is a red sphere ``world/contact_<i>`` (radius 1 cm) at the
        contact point plus an arrow ``world/contact_normal_<i>`` along the
        contact normal; markers of a previous call that are no longer needed
        are removed. Does nothing without a viewer.
        """
        if not self.viz:
            return
        if collision_details is None:
            collision_details = self.get_collision_details()
        self._cleanup_old_contacts(len(collision_details))
        for i, (_, pair, result) in enumerate(collision_details[: self._max_patches]):
            if _num_contacts(result) > 0:
                self._display_contact(i, result.getContact(0), pair)
        if len(collision_details) > self._max_patches:
            logger.info(
                "visualize_collisions: %d collisions, only the first %d are drawn",
                len(collision_details),
                self._max_patches,
            )


class CollisionWrapper(CollisionManager):
    """Legacy FIGAROH interface of :class:`CollisionManager`.

    ``rmodel``, ``rdata``, ``gmodel`` and ``gdata`` alias ``model``, ``data``,
    ``geom_model`` and ``geom_data`` (live: they follow ``geom_data`` rebuilds).
    """

    def __init__(self, robot, geom_model=None, geom_data=None, viz=None):
        super().__init__(robot, geom_model, geom_data, viz)

    @property
    def rmodel(self) -> pin.Model:
        return self.model

    @property
    def rdata(self) -> pin.Data:
        return self.data

    @property
    def gmodel(self):
        return self.geom_model

    @property
    def gdata(self):
        return self.geom_data

    def add_collisions(self) -> None:
        """Register every pair of geometries on different joints."""
        if self.geom_model is not None:
            self.geom_model.addAllCollisionPairs()
            self._sync_geom_data()

    def remove_collisions(self, srdf_model_path) -> None:
        """Drop the pairs disabled by an SRDF file.

        Raises:
            FileNotFoundError: The SRDF does not exist.
        """
        if srdf_model_path and self.geom_model is not None:
            if not self._file_exists(str(srdf_model_path)):
                raise FileNotFoundError(f"SRDF file not found: {srdf_model_path}")
            pin.removeCollisionPairs(self.model, self.geom_model, str(srdf_model_path))
            self._sync_geom_data()

    def computeCollisions(self, q, geom_data=None) -> bool:
        """Check collisions at ``q`` (optionally with another ``geom_data``)."""
        if geom_data is not None:
            self.geom_data = geom_data
            self._configure_requests()
        return self.check_collisions(q)

    def getCollisionList(self) -> List[CollisionDetail]:
        """Alias of :meth:`get_collision_details`."""
        return self.get_collision_details()

    def getCollisionDistances(self, collisions=None) -> np.ndarray:
        """Alias of :meth:`get_collision_distances`."""
        return self.get_collision_distances(collisions)

    def getDistances(self) -> np.ndarray:
        """Alias of :meth:`get_all_distances`."""
        return self.get_all_distances()

    def getAllpairs(self) -> None:
        """Alias of :meth:`print_collision_pairs`."""
        self.print_collision_pairs()

    def check_collision(self, q) -> bool:
        """Alias of :meth:`check_collisions`."""
        return self.check_collisions(q)

    def displayCollisions(self, collisions=None) -> None:
        """Alias of :meth:`visualize_collisions`."""
        self.visualize_collisions(collisions)
