"""figaroh.visualisation: colours, materials and the MeshCat visualiser.

Truths: the packed-colour formula; the scene a real local MeshCat server holds
(decoded from its ``static_html`` snapshot) against Pinocchio's own geometry
placements and the primitives' requested sizes/colours/poses; the import
machinery itself (subprocesses with meshcat hidden).
"""

from __future__ import annotations

import base64
import inspect
import re
import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest

from figaroh.visualisation import colors
from figaroh.visualisation.colors import colormap, rgb2int

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:meshcat.*")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


# --------------------------------------------------------------------------- without meshcat
def test_rgb2int_packs_8_bit_channels():
    assert rgb2int(255, 0, 0) == 0xFF0000
    assert rgb2int(0, 255, 0) == 0x00FF00
    assert rgb2int(1, 2, 3) == 1 * 65536 + 2 * 256 + 3
    assert rgb2int(np.int64(255), 255.0, 255) == 0xFFFFFF
    for bad in ((256, 0, 0), (-1, 0, 0), (0.5, 0, 0), (True, 0, 0), ("a", 0, 0)):
        with pytest.raises(ValueError, match=r"\[0, 255\]"):
            rgb2int(*bad)


def test_colour_values():
    assert colors.color_value("Red") == colormap["red"] == 0xFF2222
    assert colors.color_value("#0a0B0c") == 0x0A0B0C
    assert colors.color_value(0x123456) == 0x123456
    with pytest.raises(ValueError, match="Unknown colour 'mauve'"):
        colors.color_value("mauve")
    with pytest.raises(ValueError, match="outside"):
        colors.color_value(0x1000000)
    with pytest.raises(TypeError):
        colors.color_value(1.5)


def test_modules_import_and_fail_clearly_without_meshcat():
    """Hide meshcat before anything imports it: the modules import, using them names the extra."""
    code = """
import sys
sys.modules["meshcat"] = None
import figaroh.visualisation as vis
from figaroh.visualisation import colors, visualizer
print(colors.rgb2int(0, 0, 255))
cls = vis.MeshcatVisualizer
import pinocchio.visualize as pv
print(issubclass(cls, pv.MeshcatVisualizer), cls is visualizer.MeshcatVisualizer)
for call in (lambda: cls(), lambda: colors.material(0), lambda: visualizer.materialFromColor(0)):
    try:
        call()
        print("no error")
    except ImportError as exc:
        print("ImportError", "figaroh[meshcat]" in str(exc))
"""
    assert _run(code).splitlines() == [
        "255",
        "True True",
        "ImportError True",
        "ImportError True",
        "ImportError True",
    ]


def test_importing_the_visualiser_module_is_lazy():
    """``pinocchio.visualize`` (seconds to import) is imported only when the class is used."""
    code = """
import sys
import figaroh.visualisation, figaroh.visualisation.visualizer as v
print('pinocchio.visualize' in sys.modules, 'meshcat' in sys.modules, v.materialFromColor.__name__)
"""
    assert _run(code) == "False False materialFromColor"


# --------------------------------------------------------------------------- with meshcat
meshcat_required = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("meshcat") is None, reason="meshcat not installed"
)


@meshcat_required
def test_materials():
    import meshcat.geometry as g

    from figaroh.visualisation.visualizer import DEFAULT_COLOR, materialFromColor

    mat = colors.material(0x123456, transparent=True)
    assert isinstance(mat, g.MeshPhongMaterial) and mat.color == 0x123456 and mat.transparent
    assert colors.material("blue").color == colormap["blue"] and not colors.material(0).transparent
    assert materialFromColor(mat) is mat
    assert materialFromColor("green").color == colormap["green"]
    assert materialFromColor(0xABCDEF).color == 0xABCDEF
    rgba = materialFromColor([1.0, 0.5, 0.0, 0.25])
    assert rgba.color == rgb2int(255, 128, 0) and rgba.transparent and rgba.opacity == 0.25
    opaque = materialFromColor(np.array([0.0, 0.0, 1.0, 1.0]))
    assert opaque.color == 0x0000FF and not opaque.transparent
    assert materialFromColor(None).color == DEFAULT_COLOR
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        materialFromColor([2.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"\[r, g, b\]"):
        materialFromColor([0.1, 0.2])
    with pytest.raises(TypeError, match="unsupported colour"):
        materialFromColor(object())


@meshcat_required
def test_visualiser_class_is_pinocchios_with_the_release_signature():
    import pinocchio.visualize as pv

    import figaroh.visualisation as vis
    from figaroh.visualisation.visualizer import MeshcatVisualizer

    assert vis.MeshcatVisualizer is MeshcatVisualizer
    assert issubclass(MeshcatVisualizer, pv.MeshcatVisualizer)
    assert MeshcatVisualizer.__module__ == "figaroh.visualisation.visualizer"
    params = list(inspect.signature(MeshcatVisualizer.__init__).parameters)
    assert params[:6] == ["self", "robot", "model", "collision_model", "visual_model", "url"]


@pytest.fixture(scope="module")
def server():
    meshcat = pytest.importorskip("meshcat")
    pytest.importorskip("umsgpack")
    try:
        vis = meshcat.Visualizer()  # a local server on the loopback interface
    except Exception as exc:  # noqa: BLE001 - any failure to start means: cannot test here
        pytest.skip(f"cannot start a local MeshCat server: {exc}")
    yield vis
    proc = vis.window.server_proc
    if proc is not None:
        proc.kill()
        proc.wait(timeout=10)


def _scene(server) -> dict:
    """``{path: {"object": ..., "matrix": 4x4}}`` of the server's scene tree."""
    import umsgpack

    html = server.static_html()
    scene: dict = {}
    for blob in re.findall(r'base64,([A-Za-z0-9+/=]+)"', html):
        command = umsgpack.unpackb(base64.b64decode(blob))
        node = scene.setdefault(command["path"], {})
        if command["type"] == "set_object":
            node["object"] = command["object"]
        elif command["type"] == "set_transform":
            node["matrix"] = np.asarray(command["matrix"], dtype=float).reshape(4, 4).T
    return scene


@pytest.fixture(scope="module")
def viz(server, ur10_urdf):
    from figaroh.tools.robot import Robot
    from figaroh.visualisation.visualizer import MeshcatVisualizer

    robot = Robot(str(ur10_urdf))
    return MeshcatVisualizer(robot, url=server.window.zmq_url), robot


def test_robot_is_drawn_where_pinocchio_places_it(viz, server):
    viewer, robot = viz
    q = np.array([0.3, -1.0, 1.2, -0.4, 0.8, 0.1])
    viewer.display(q)
    scene = _scene(server)
    geom_data = robot.visual_model.createData()
    data = robot.model.createData()
    pin.updateGeometryPlacements(robot.model, data, robot.visual_model, geom_data, q)
    checked = 0
    for k, geometry in enumerate(robot.visual_model.geometryObjects):
        node = scene[f"/meshcat/pinocchio/visuals/{geometry.name}"]
        assert "object" in node
        np.testing.assert_allclose(node["matrix"], geom_data.oMg[k].homogeneous, atol=1e-9)
        checked += 1
    assert checked == robot.visual_model.ngeoms > 0


def test_primitives_reach_the_scene(viz, server):
    viewer, _ = viz
    viewer.addSphere("world/target", 0.05, "red")
    viewer.applyConfiguration("world/target", [0.5, 0.1, 0.8, 0.0, 0.0, np.sin(0.2), np.cos(0.2)])
    viewer.addBox("world/box", [0.1, 0.2, 0.3], 0x00FF00)
    viewer.applyConfiguration("world/box", pin.SE3(np.eye(3), np.array([1.0, 2.0, 3.0])))
    viewer.addCylinder("world/cyl", 0.3, 0.02, [0.0, 0.0, 1.0, 0.5])
    viewer.applyConfiguration("world/cyl", [0.0, 0.0, 1.0])
    viewer.addSphere("world/gone", 0.01, "blue")
    viewer.delete("world/gone")
    assert viewer["world/target"] is not None
    scene = _scene(server)

    sphere = scene["/meshcat/world/target"]
    assert sphere["object"]["geometries"][0]["radius"] == pytest.approx(0.05)
    assert sphere["object"]["materials"][0]["color"] == colormap["red"]
    expected = pin.XYZQUATToSE3(np.array([0.5, 0.1, 0.8, 0, 0, np.sin(0.2), np.cos(0.2)]))
    np.testing.assert_allclose(sphere["matrix"], expected.homogeneous, atol=1e-12)

    box = scene["/meshcat/world/box"]
    geometry = box["object"]["geometries"][0]
    assert (geometry["width"], geometry["height"], geometry["depth"]) == pytest.approx(
        (0.1, 0.2, 0.3)
    )
    np.testing.assert_allclose(box["matrix"][:3, 3], [1.0, 2.0, 3.0])

    cylinder = scene["/meshcat/world/cyl/cylinder"]
    geometry = cylinder["object"]["geometries"][0]
    assert geometry["height"] == pytest.approx(0.3) and geometry["radiusTop"] == 0.02
    material = cylinder["object"]["materials"][0]
    assert material["color"] == 0x0000FF and material["opacity"] == 0.5
    # MeshCat's cylinder axis (y) is turned onto the node's z axis
    np.testing.assert_allclose(cylinder["matrix"][:3, :3] @ [0, 1, 0], [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(scene["/meshcat/world/cyl"]["matrix"][:3, 3], [0.0, 0.0, 1.0])

    assert "/meshcat/world/gone" not in scene
    with pytest.raises(ValueError, match="dims"):
        viewer.addBox("world/bad", [0.1, 0.2], "red")
    with pytest.raises(ValueError, match="placement"):
        viewer.applyConfiguration("world/box", [1.0, 2.0])


def test_pinocchio_reload_still_deletes_robot_geometry(viz, server):
    viewer, robot = viz
    geometry = robot.visual_model.geometryObjects[0].copy()
    viewer.reload(geometry, pin.GeometryType.VISUAL)  # calls delete(geometry_object, type)
    assert f"/meshcat/pinocchio/visuals/{geometry.name}" in _scene(server)


@meshcat_required
def test_without_url_a_local_server_is_started():
    from figaroh.visualisation.visualizer import MeshcatVisualizer

    try:
        viewer = MeshcatVisualizer()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"cannot start a local MeshCat server: {exc}")
    proc = viewer.viewer.window.server_proc
    try:
        assert proc is not None and proc.poll() is None
        assert viewer.model.nq == 0
    finally:
        proc.kill()
        proc.wait(timeout=10)
