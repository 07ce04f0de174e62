"""Robot visualisation helpers, with a recording gepetto-style gui and a real viser server.

Truths: Pinocchio kinematics (joint placements, body COMs, the subtree COM of
a leaf body) and algebraic identities of rotations.
"""

from __future__ import annotations

import socket
import urllib.request

import numpy as np
import pinocchio as pin
import pytest

from figaroh.tools.robot import Robot
from figaroh.tools.robotvisualization import (
    RobotVisualizer,
    VisualizationConfig,
    create_viser_server,
    display_axes,
    display_bounding_boxes,
    display_COM,
    display_force,
    display_joints,
    place,
    rotation_matrix_from_vectors,
)

FRAMES = ["shoulder_link", "upper_arm_link", "forearm_link", "wrist_3_link", "tool0"]


class FakeGui:
    """Records gepetto-gui calls."""

    def __init__(self):
        self.nodes: dict[str, tuple] = {}
        self.placements: dict[str, np.ndarray] = {}

    def addSphere(self, name, radius, color):
        self.nodes[name] = ("sphere", radius, tuple(color))

    def addXYZaxis(self, name, color, radius, length):
        self.nodes[name] = ("axes", radius, length, tuple(color))

    def addArrow(self, name, radius, length, color):
        self.nodes[name] = ("arrow", radius, length, tuple(color))

    def addBox(self, name, x, y, z, color):
        self.nodes[name] = ("box", x, y, z, tuple(color))

    def applyConfiguration(self, name, xyzquat):
        self.placements[name] = np.asarray(xyzquat, dtype=float)

    def nodeExists(self, name):
        return name in self.nodes

    def deleteNode(self, name, recursive):
        self.nodes.pop(name, None)

    def refresh(self):
        pass


class FakeViz:
    def __init__(self):
        self.viewer = type("Viewer", (), {})()
        self.viewer.gui = FakeGui()

    @property
    def gui(self) -> FakeGui:
        return self.viewer.gui


def se3_of(xyzquat: np.ndarray) -> pin.SE3:
    return pin.XYZQUATToSE3(xyzquat)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ur10(ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    return model, model.createData()


@pytest.fixture()
def q(ur10):
    return np.array([0.3, -1.1, 0.9, -0.4, 1.2, 0.5])


@pytest.fixture()
def server():
    srv = create_viser_server(port=free_port())
    yield srv
    srv.stop()


def body_com(model, q, frame_name):
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    j = model.frames[model.getFrameId(frame_name)].parentJoint
    return data.oMi[j].act(model.inertias[j].lever), model.inertias[j].mass


# ------------------------------------------------------------------ maths
def test_rotation_matrix_from_vectors():
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b = rng.normal(size=3), rng.normal(size=3) * 3
        R = rotation_matrix_from_vectors(a, b)
        np.testing.assert_allclose(R @ (a / np.linalg.norm(a)), b / np.linalg.norm(b), atol=1e-12)
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
        assert np.linalg.det(R) == pytest.approx(1.0)
        # smallest rotation: angle equals the angle between the vectors
        angle = np.arccos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1, 1))
        assert np.linalg.norm(pin.log3(R)) == pytest.approx(angle, abs=1e-9)
    np.testing.assert_allclose(rotation_matrix_from_vectors([1, 0, 0], [2, 0, 0]), np.eye(3))
    for a in ([1.0, 0, 0], [0, 0, 1.0], [1.0, 2.0, -0.5]):
        R = rotation_matrix_from_vectors(a, -np.asarray(a))
        np.testing.assert_allclose(R @ a, -np.asarray(a), atol=1e-12)
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
        assert np.linalg.det(R) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="zero-length"):
        rotation_matrix_from_vectors([0, 0, 0], [1, 0, 0])
    with pytest.raises(ValueError, match="3 components"):
        rotation_matrix_from_vectors([1, 0], [1, 0, 0])


def test_config_defaults_and_validation():
    cfg = VisualizationConfig()
    for color in (cfg.com_color, cfg.axes_color, cfg.force_color, cfg.bbox_color):
        assert len(color) == 4 and all(0 <= c <= 1 for c in color)
    assert VisualizationConfig(com_color=(0.1, 0.2, 0.3)).com_color == (0.1, 0.2, 0.3, 1.0)
    with pytest.raises(ValueError, match="com_color"):
        VisualizationConfig(com_color=(255, 0, 0))
    with pytest.raises(ValueError, match="scale_factor"):
        VisualizationConfig(scale_factor=0.0)


# ------------------------------------------------------------------ gepetto-style gui
def test_display_com_positions_and_radii(ur10, q):
    model, data = ur10
    viz = FakeViz()
    vis = RobotVisualizer(model, data, viz, VisualizationConfig(scale_factor=2.0))
    ids = [model.getFrameId(f) for f in FRAMES]
    vis.display_com(q, ids)
    spheres = sorted(n for n in viz.gui.nodes if n.startswith("world/com_sphere_"))
    assert spheres == [f"world/com_sphere_{i}" for i in range(len(FRAMES) - 1)]
    total = sum(model.inertias[j].mass for j in range(1, model.njoints))
    fdata = model.createData()
    pin.framesForwardKinematics(model, fdata, q)
    for i, name in enumerate(FRAMES[:-1]):
        com, mass = body_com(model, q, name)
        placed = se3_of(viz.gui.placements[f"world/com_sphere_{i}"])
        np.testing.assert_allclose(placed.translation, com, atol=1e-12)
        length = np.linalg.norm(fdata.oMf[ids[i + 1]].translation - fdata.oMf[ids[i]].translation)
        assert viz.gui.nodes[f"world/com_sphere_{i}"][1] == pytest.approx(
            length * mass / total * 2.0
        )
    # independent: the whole-robot COM of a copy whose other bodies are massless
    leaf_joint = model.getJointId("wrist_3_joint")
    only_leaf = model.copy()
    for j in range(1, model.njoints):
        if j != leaf_joint:
            only_leaf.inertias[j] = pin.Inertia.Zero()
    com_leaf = pin.centerOfMass(only_leaf, only_leaf.createData(), q)
    leaf = se3_of(viz.gui.placements["world/com_sphere_3"]).translation
    np.testing.assert_allclose(leaf, com_leaf, atol=1e-12)
    # legacy function draws the same
    viz2 = FakeViz()
    display_COM(model, model.createData(), viz2, q, ids)
    for name, M in viz.gui.placements.items():
        np.testing.assert_allclose(viz2.gui.placements[name], M)


def test_display_axes_and_joints(ur10, q):
    model, data = ur10
    viz = FakeViz()
    vis = RobotVisualizer(model, data, viz)
    vis.display_axes(q, axis_length=0.2, axis_radius=0.02)
    vis.display_joints(q)
    ref = model.createData()
    pin.forwardKinematics(model, ref, q)
    for i, name in enumerate(model.names):
        node = f"world/axis_{name}_{i}"
        assert viz.gui.nodes[node][1:3] == (0.02, 0.2)
        assert se3_of(viz.gui.placements[node]).isApprox(ref.oMi[i], 1e-12)
    joints = sorted(n for n in viz.gui.nodes if n.startswith("world/joint_frame_"))
    assert len(joints) == model.njoints - 1
    for j in range(1, model.njoints):
        assert se3_of(viz.gui.placements[f"world/joint_frame_{j}"]).isApprox(ref.oMi[j], 1e-12)
    viz2 = FakeViz()
    display_axes(model, model.createData(), viz2, q)
    display_joints(viz2, model, model.createData(), q)
    assert set(viz2.gui.nodes) == set(viz.gui.nodes)


def test_display_force_arrow(ur10):
    viz = FakeViz()
    M = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 1.0), np.array([0.1, 0.2, 0.3]))
    f_local = np.array([0.0, 3.0, 4.0])  # 5 N
    RobotVisualizer(None, None, viz).display_force(pin.Force(f_local, np.zeros(3)), M, scale=0.01)
    kind, radius, length, _ = viz.gui.nodes["world/force_vector_arrow"]
    assert kind == "arrow" and length == pytest.approx(0.05) and radius == pytest.approx(0.0025)
    placed = se3_of(viz.gui.placements["world/force_vector_arrow"])
    np.testing.assert_allclose(placed.translation, M.translation, atol=1e-12)
    np.testing.assert_allclose(placed.rotation[:, 0], M.rotation @ f_local / 5.0, atol=1e-9)
    # legacy function, default scale 1e-3 m/N; negligible forces are not drawn
    viz2 = FakeViz()
    display_force(viz2, pin.Force(f_local, np.zeros(3)), M)
    assert viz2.gui.nodes["world/force_vector_arrow"][2] == pytest.approx(0.005)
    viz3 = FakeViz()
    display_force(viz3, pin.Force.Zero(), M)
    assert viz3.gui.nodes == {}
    with pytest.raises(ValueError, match="force"):
        display_force(viz3, [np.nan] * 6, M)


def test_display_bounding_boxes(ur10, q):
    model, data = ur10
    ids = [model.getFrameId(f) for f in FRAMES[:3]]
    lo = -np.arange(9, dtype=float) * 0.01
    hi = np.arange(9, dtype=float) * 0.02
    viz = FakeViz()
    display_bounding_boxes(viz, model, data, q, lo, hi, ids)
    for i, name in enumerate(FRAMES[:3]):
        kind, *size, _ = viz.gui.nodes[f"world/com_bbox_{i}"]
        np.testing.assert_allclose(size, (hi - lo)[3 * i : 3 * i + 3])
        com, _ = body_com(model, q, name)
        np.testing.assert_allclose(
            se3_of(viz.gui.placements[f"world/com_bbox_{i}"]).translation, com, atol=1e-12
        )
    with pytest.raises(ValueError, match="3 values per frame"):
        display_bounding_boxes(viz, model, data, q, lo[:6], hi[:6], ids)
    with pytest.raises(ValueError, match="com_max"):
        display_bounding_boxes(viz, model, data, q, hi, lo, ids)


def test_place_and_bad_inputs(ur10, q):
    model, data = ur10
    viz = FakeViz()
    M = pin.SE3.Random()
    place(viz, "world/thing", M)
    np.testing.assert_allclose(viz.gui.placements["world/thing"], pin.SE3ToXYZQUAT(M))
    vis = RobotVisualizer(model, data, viz)
    with pytest.raises(ValueError, match="nq = 6"):
        vis.display_joints(np.zeros(3))
    with pytest.raises(ValueError, match="out of range"):
        vis.display_com(q, [0, 10_000])
    with pytest.raises(ValueError, match="Unknown frame"):
        vis.display_com(q, ["nope", "tool0"])
    assert vis.display_com(q, ["shoulder_link", "tool0"]) is None  # names accepted
    with pytest.raises(ValueError, match="No viewer"):
        RobotVisualizer(model, data, None).display_joints(q)
    with pytest.raises(TypeError, match="Unsupported viewer"):
        RobotVisualizer(model, data, object()).display_joints(q)
    assert "RobotVisualizer(" in repr(vis)


# ------------------------------------------------------------------ viser
def test_viser_backend(ur10, q, server):
    model, data = ur10
    vis = RobotVisualizer(model, data, server)
    ids = [model.getFrameId(f) for f in FRAMES]
    vis.display_com(q, ids)
    vis.display_joints(q)
    vis.display_bounding_boxes(q, np.zeros(3), np.full(3, 0.1), ids[:1])
    M = pin.SE3(np.eye(3), np.array([0.0, 0.0, 1.0]))
    vis.display_force(pin.Force(np.array([0.0, 0.0, -20.0]), np.zeros(3)), M)
    com, _ = body_com(model, q, FRAMES[1])
    node = server.scene.get_handle_by_name("/world/com_sphere_1")
    np.testing.assert_allclose(node.position, com, atol=1e-6)
    ref = model.createData()
    pin.forwardKinematics(model, ref, q)
    joint = server.scene.get_handle_by_name("/world/joint_frame_3")
    np.testing.assert_allclose(joint.position, ref.oMi[3].translation, atol=1e-6)
    R = pin.Quaternion(np.array([*joint.wxyz[1:], joint.wxyz[0]])).matrix()
    np.testing.assert_allclose(R, ref.oMi[3].rotation, atol=1e-6)
    arrow = server.scene.get_handle_by_name("/world/force_vector_arrow")
    R = pin.Quaternion(np.array([*arrow.wxyz[1:], arrow.wxyz[0]])).matrix()
    np.testing.assert_allclose(R[:, 0], [0, 0, -1], atol=1e-6)  # +x of the arrow along F
    assert server.scene.get_handle_by_name("/world/com_bbox_0") is not None
    with pytest.raises(ValueError, match="no node"):
        place(server, "world/missing", M)


def test_pinocchio_viser_visualizer_is_accepted(ur10, q, server):
    from pinocchio.visualize import ViserVisualizer

    model, data = ur10
    viz = ViserVisualizer(model, pin.GeometryModel(), pin.GeometryModel())
    viz.initViewer(viewer=server)
    RobotVisualizer(model, data, viz).display_joints(q)
    assert server.scene.get_handle_by_name("/world/joint_frame_1") is not None


def test_robot_display_q0_uses_loopback_viser(ur10_urdf):
    robot = Robot(str(ur10_urdf))
    robot.display_q0()
    srv = robot.viz.viewer
    try:
        assert srv.get_host() == "127.0.0.1"
        page = urllib.request.urlopen(f"http://127.0.0.1:{srv.get_port()}/", timeout=10).read()
        assert b"html" in page[:200].lower()
        assert srv.scene.get_handle_by_name("/pinocchio/visual") is not None
    finally:
        srv.stop()
