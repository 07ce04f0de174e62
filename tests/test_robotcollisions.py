"""Self-collision checking on TIAGo (collision meshes + SRDF).

Truths: coal's own narrow-phase distance on the geometry placements computed by
Pinocchio's forward kinematics, and the SRDF file parsed independently with
ElementTree. The TIAGo model is ``tiago_no_hand.urdf`` of the shared data: the
SRDF does not list the Hey5 hand links, whose meshes overlap by design.
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET

import coal
import numpy as np
import pinocchio as pin
import pytest

from figaroh.tools.robot import Robot
from figaroh.tools.robotcollisions import CollisionManager, CollisionWrapper

FOLDED = {"arm_1_joint": 0.2, "arm_2_joint": -1.5, "arm_4_joint": 2.3}


@pytest.fixture(scope="module")
def tiago_files(shared_data):
    root = shared_data / "models" / "tiago_description"
    urdf = root / "robots" / "tiago_no_hand.urdf"
    srdf = root / "srdf" / "tiago.srdf"
    if not urdf.is_file() or not srdf.is_file():
        pytest.skip("TIAGo URDF/SRDF not in the shared data")
    return urdf, srdf


@pytest.fixture(scope="module")
def tiago(tiago_files):
    return Robot(str(tiago_files[0]), package_dirs=None, load_geometry=True)


@pytest.fixture()
def manager(tiago, tiago_files):
    """Manager on a private copy of the collision model, SRDF applied."""
    cm = CollisionManager(tiago, geom_model=tiago.geom_model.copy())
    cm.setup_collision_pairs(str(tiago_files[1]))
    return cm


def config(model: pin.Model, **values: float) -> np.ndarray:
    q = pin.neutral(model)
    for name, value in values.items():
        q[model.joints[model.getJointId(name)].idx_q] = value
    return q


def link_of(gm: pin.GeometryModel, geom_id: int, model: pin.Model) -> str:
    return model.frames[gm.geometryObjects[geom_id].parentFrame].name


def srdf_disabled(srdf) -> set[frozenset[str]]:
    root = ET.parse(srdf).getroot()
    return {frozenset((e.get("link1"), e.get("link2"))) for e in root.iter("disable_collisions")}


def coal_distance(cm: CollisionManager, q: np.ndarray, pair_index: int) -> float:
    """Distance of one pair computed directly by coal from FK placements."""
    data = cm.model.createData()
    gdata = cm.geom_model.createData()
    pin.updateGeometryPlacements(cm.model, data, cm.geom_model, gdata, q)
    pair = cm.geom_model.collisionPairs[pair_index]
    objs = cm.geom_model.geometryObjects
    result = coal.DistanceResult()
    return coal.distance(
        objs[pair.first].geometry,
        coal.Transform3s(gdata.oMg[pair.first].rotation, gdata.oMg[pair.first].translation),
        objs[pair.second].geometry,
        coal.Transform3s(gdata.oMg[pair.second].rotation, gdata.oMg[pair.second].translation),
        coal.DistanceRequest(),
        result,
    )


# ------------------------------------------------------------------ behaviour
def test_neutral_configuration_is_collision_free(manager, tiago):
    q = pin.neutral(tiago.model)
    assert manager.check_collisions(q) is False
    assert manager.get_collision_details() == []
    assert manager.get_collision_distances().size == 0
    dist = manager.get_all_distances()
    assert dist.shape == (manager.n_pairs,)
    assert np.all(dist > 0)
    # independent: coal directly, on the closest pair and a few others
    for k in {int(np.argmin(dist)), 0, manager.n_pairs // 2, manager.n_pairs - 1}:
        assert dist[k] == pytest.approx(coal_distance(manager, q, k), abs=1e-6)


def test_arm_folded_into_torso_is_detected(manager, tiago):
    q = config(tiago.model, **FOLDED)
    assert manager.check_collisions(q) is True
    details = manager.get_collision_details()
    names = [manager.pair_names(idx) for idx, _, _ in details]
    links = {frozenset((n1.rsplit("_", 1)[0], n2.rsplit("_", 1)[0])) for n1, n2 in names}
    assert frozenset(("torso_fixed_column_link", "arm_4_link")) in links
    assert all(any(n.startswith("torso") for n in pair) for pair in names)
    assert all(any(n.startswith("arm_") for n in pair) for pair in names)
    # colliding pairs: distance <= 0, with real penetration for convex (box) shapes
    d_coll = manager.get_collision_distances(details)
    assert d_coll.shape == (len(details),)
    assert np.all(d_coll <= 1e-9)
    assert d_coll.min() < -1e-3
    # every pair: coal distance agrees, and a clear positive distance means no collision
    d_all = manager.get_all_distances()
    colliding = {idx for idx, _, _ in details}
    for k in range(manager.n_pairs):
        if d_all[k] > 1e-6:
            assert k not in colliding
    for idx, _, _ in details:
        assert d_all[idx] == pytest.approx(coal_distance(manager, q, idx), abs=1e-6)


def test_srdf_disabled_adjacent_pairs_are_not_reported(tiago, tiago_files):
    disabled = srdf_disabled(tiago_files[1])
    q = pin.neutral(tiago.model)
    # Without the SRDF, overlapping adjacent links collide at the neutral pose...
    raw = CollisionManager(tiago, geom_model=tiago.geom_model.copy())
    raw.setup_collision_pairs()
    assert raw.check_collisions(q) is True
    raw_links = {
        frozenset(
            (
                link_of(raw.geom_model, p.first, tiago.model),
                link_of(raw.geom_model, p.second, tiago.model),
            )
        )
        for _, p, _ in raw.get_collision_details()
    }
    adjacent = {frozenset(("arm_1_link", "arm_2_link")), frozenset(("arm_3_link", "arm_4_link"))}
    assert adjacent <= raw_links
    assert raw_links <= disabled  # all of them are pairs the SRDF disables
    # ...with it, none of the disabled pairs is even registered, nor reported.
    cm = CollisionManager(tiago, geom_model=tiago.geom_model.copy())
    cm.setup_collision_pairs(str(tiago_files[1]))
    assert 0 < cm.n_pairs < raw.n_pairs
    registered = {
        frozenset(
            (
                link_of(cm.geom_model, p.first, tiago.model),
                link_of(cm.geom_model, p.second, tiago.model),
            )
        )
        for p in cm.geom_model.collisionPairs
    }
    assert not (registered & disabled)
    assert cm.check_collisions(q) is False
    # pairs kept = all pairs minus exactly the disabled ones
    kept_expected = sum(
        1
        for p in raw.geom_model.collisionPairs
        if frozenset(
            (
                link_of(raw.geom_model, p.first, tiago.model),
                link_of(raw.geom_model, p.second, tiago.model),
            )
        )
        not in disabled
    )
    assert cm.n_pairs == kept_expected


def test_update_geometry_false_reuses_previous_placements(manager, tiago):
    q_fold = config(tiago.model, **FOLDED)
    q0 = pin.neutral(tiago.model)
    assert manager.check_collisions(q_fold)
    assert manager.check_collisions(q0, update_geometry=False) is True  # stale placements
    assert manager.check_collisions(q0) is False


def test_print_collision_pairs_format(manager, tiago, capsys):
    manager.check_collisions(config(tiago.model, **FOLDED))
    manager.print_collision_pairs()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Total collision pairs: {manager.n_pairs}"
    rows = [line for line in out if line.startswith("Pair ")]
    assert len(rows) == manager.n_pairs
    assert sum(line.endswith("[COLLISION]") for line in rows) == len(
        manager.get_collision_details()
    )
    assert "<->" in rows[0]


def test_legacy_wrapper(tiago, tiago_files):
    cw = CollisionWrapper(tiago, geom_model=tiago.geom_model.copy())
    cw.add_collisions()
    n_all = len(cw.gmodel.collisionPairs)
    cw.remove_collisions(str(tiago_files[1]))
    assert len(cw.gmodel.collisionPairs) < n_all
    assert cw.rmodel is tiago.model and cw.gdata is cw.geom_data
    assert cw.rdata is cw.data and cw.gmodel is cw.geom_model
    assert cw.gdata is not None and len(cw.gdata.collisionResults) == cw.n_pairs
    assert cw.check_collision(pin.neutral(tiago.model)) is False
    assert cw.computeCollisions(config(tiago.model, **FOLDED)) is True
    assert len(cw.getCollisionList()) == len(cw.get_collision_details()) > 0
    np.testing.assert_allclose(cw.getCollisionDistances(), cw.get_collision_distances())
    np.testing.assert_allclose(cw.getDistances(), cw.get_all_distances(), atol=1e-6)


# ------------------------------------------------------------------ display
class FakeGui:
    """Records gepetto-gui calls."""

    def __init__(self):
        self.nodes: dict[str, tuple] = {}
        self.placements: dict[str, list] = {}
        self.deleted: list[str] = []

    def addSphere(self, name, radius, color):
        self.nodes[name] = ("sphere", radius, color)

    def addArrow(self, name, radius, length, color):
        self.nodes[name] = ("arrow", radius, length, color)

    def applyConfiguration(self, name, xyzquat):
        self.placements[name] = list(xyzquat)

    def nodeExists(self, name):
        return name in self.nodes

    def deleteNode(self, name, recursive):
        self.nodes.pop(name, None)
        self.deleted.append(name)

    def refresh(self):
        pass


class FakeViz:
    def __init__(self):
        self.viewer = type("Viewer", (), {})()
        self.viewer.gui = FakeGui()


def test_visualize_collisions_draws_contacts_and_cleans_up(tiago, tiago_files):
    viz = FakeViz()
    cm = CollisionManager(tiago, geom_model=tiago.geom_model.copy(), viz=viz)
    cm.setup_collision_pairs(str(tiago_files[1]))
    cm.check_collisions(config(tiago.model, **FOLDED))
    details = cm.get_collision_details()
    cm.visualize_collisions()
    gui = viz.viewer.gui
    spheres = sorted(n for n in gui.nodes if n.startswith("world/contact_") and "normal" not in n)
    assert len(spheres) == min(len(details), 10)
    pos = np.asarray(details[0][2].getContact(0).pos)
    np.testing.assert_allclose(gui.placements["world/contact_0"][:3], pos, atol=1e-12)
    cm.check_collisions(pin.neutral(tiago.model))
    cm.visualize_collisions()
    assert not [n for n in gui.nodes if n.startswith("world/contact_")]


def test_visualize_collisions_in_viser(tiago, tiago_files):
    from figaroh.tools.robotvisualization import create_viser_server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = create_viser_server(port=port)
    try:
        cm = CollisionManager(tiago, geom_model=tiago.geom_model.copy(), viz=server)
        cm.setup_collision_pairs(str(tiago_files[1]))
        cm.check_collisions(config(tiago.model, **FOLDED))
        cm.visualize_collisions()
        handle = server.scene.get_handle_by_name("/world/contact_0")
        assert handle is not None
        pos = np.asarray(cm.get_collision_details()[0][2].getContact(0).pos)
        np.testing.assert_allclose(handle.position, pos, atol=1e-6)
    finally:
        server.stop()


# ------------------------------------------------------------------ bad input
def test_bad_inputs(tiago, tiago_files, tmp_path):
    cm = CollisionManager(tiago, geom_model=tiago.geom_model.copy())
    with pytest.raises(FileNotFoundError, match="SRDF"):
        cm.setup_collision_pairs(str(tmp_path / "missing.srdf"))
    cm.setup_collision_pairs(str(tiago_files[1]))
    with pytest.raises(ValueError, match="nq"):
        cm.check_collisions(np.zeros(3))
    q = pin.neutral(tiago.model)
    q[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cm.check_collisions(q)
    fresh = CollisionManager(tiago, geom_model=tiago.geom_model.copy())
    with pytest.raises(RuntimeError, match="check_collisions"):
        fresh.get_all_distances()
    with pytest.raises(TypeError, match="robot.model"):
        CollisionManager(object())


def test_without_geometry(tiago_files):
    robot = Robot(str(tiago_files[0]), load_geometry=False)
    cm = CollisionManager(robot)
    assert "pairs=0" in repr(cm)
    with pytest.raises(ValueError, match="load_geometry=True"):
        cm.setup_collision_pairs()
    assert cm.check_collisions(pin.neutral(robot.model)) is False
    assert cm.get_all_distances().size == 0
    assert cm.get_collision_details() == []
