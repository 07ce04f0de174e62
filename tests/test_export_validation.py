"""URDFComparison: FK consistency of an exported URDF, checked against Pinocchio.

Modified URDFs are written with ElementTree into tmp_path: a 1 mm shift of a
joint origin moves every downstream frame by exactly that translation (the
rotation is unchanged), so the end-effector position error is 1 mm at every
configuration; a 1 mrad rotation of a joint origin gives a 1 mrad orientation
error everywhere. Per-sample errors are recomputed with Pinocchio directly.
Viewer tests run a viser server on a free loopback port only.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from figaroh.tools.export_validation import (
    FkConsistencyResult,
    PoseDelta,
    PoseError,
    URDFComparison,
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def modified_copy(src: Path, dst: Path, joint: str, dxyz=(0, 0, 0), drpy=(0, 0, 0)) -> Path:
    """Copy of ``src`` with the origin of ``joint`` shifted by dxyz [m] / drpy [rad]."""
    tree = ET.parse(src)
    (elem,) = [j for j in tree.getroot().findall("joint") if j.get("name") == joint]
    origin = elem.find("origin")
    xyz = np.array([float(v) for v in origin.get("xyz", "0 0 0").split()]) + dxyz
    rpy = np.array([float(v) for v in origin.get("rpy", "0 0 0").split()]) + drpy
    origin.set("xyz", " ".join(repr(float(v)) for v in xyz))
    origin.set("rpy", " ".join(repr(float(v)) for v in rpy))
    tree.write(dst)
    return dst


def direct_errors(
    nominal: Path, modified: Path, frame: str, configs
) -> tuple[np.ndarray, np.ndarray]:
    """Position [m] and orientation [rad] errors computed with Pinocchio only."""
    ma, mb = pin.buildModelFromUrdf(str(nominal)), pin.buildModelFromUrdf(str(modified))
    da, db = ma.createData(), mb.createData()
    fa, fb = ma.getFrameId(frame), mb.getFrameId(frame)
    pos, ori = [], []
    for q in configs:
        pin.framesForwardKinematics(ma, da, q)
        pin.framesForwardKinematics(mb, db, q)
        pos.append(np.linalg.norm(db.oMf[fb].translation - da.oMf[fa].translation))
        ori.append(np.linalg.norm(pin.log3(da.oMf[fa].rotation.T @ db.oMf[fb].rotation)))
    return np.array(pos), np.array(ori)


@pytest.fixture(scope="module")
def ur10_offset(ur10_urdf, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("urdf") / "ur10_offset.urdf"
    return modified_copy(ur10_urdf, out, "wrist_1_joint", dxyz=(1e-3, 0, 0))


@pytest.fixture(scope="module")
def comparison(ur10_urdf, ur10_offset) -> URDFComparison:
    return URDFComparison(ur10_urdf, ur10_offset)


# ------------------------------------------------------------------ FK comparison
def test_self_comparison_is_exactly_zero(ur10_urdf):
    comp = URDFComparison(ur10_urdf, ur10_urdf)
    res = comp.fk_consistency_check(n_samples=50, seed=1)
    assert isinstance(res, FkConsistencyResult) and res.n_samples == 50
    # identical models: zero up to the round-off of R_a^T R_a (~1e-16 rad)
    assert res.rmse_position == 0.0 and res.max_position == 0.0
    assert res.rmse_orientation < 1e-12 and res.max_orientation < 1e-12
    for err in comp.static_poses():
        assert err.position_error_mm == 0.0 and err.orientation_error_deg < 1e-10


def test_one_millimetre_joint_offset(comparison, ur10_urdf, ur10_offset):
    res = comparison.fk_consistency_check(n_samples=100, seed=42)
    assert res.rmse_position == pytest.approx(1e-3, abs=1e-12)
    assert res.max_position == pytest.approx(1e-3, abs=1e-12)
    assert res.rmse_orientation < 1e-12
    configs = [d.q for d in res.per_sample]
    pos, ori = direct_errors(ur10_urdf, ur10_offset, comparison.ee_frame, configs)
    np.testing.assert_allclose([d.position_error() for d in res.per_sample], pos, atol=1e-13)
    assert res.rmse_position == pytest.approx(np.sqrt(np.mean(pos**2)), abs=1e-14)
    # samples really differ and respect the joint limits
    Q = np.array(configs)
    assert np.ptp(Q, axis=0).min() > 0.5
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    assert np.all(Q >= model.lowerPositionLimit) and np.all(Q <= model.upperPositionLimit)
    # reproducible with the seed
    again = comparison.fk_consistency_check(n_samples=100, seed=42)
    np.testing.assert_array_equal(again.per_sample[7].q, res.per_sample[7].q)


def test_rotation_offset_matches_pinocchio(ur10_urdf, tmp_path):
    mod = modified_copy(ur10_urdf, tmp_path / "rot.urdf", "elbow_joint", drpy=(0, 1e-3, 0))
    comp = URDFComparison(ur10_urdf, mod)
    res = comp.fk_consistency_check(n_samples=60, seed=3)
    configs = [d.q for d in res.per_sample]
    pos, ori = direct_errors(ur10_urdf, mod, comp.ee_frame, configs)
    np.testing.assert_allclose([d.orientation_error() for d in res.per_sample], ori, atol=1e-12)
    np.testing.assert_allclose(ori, 1e-3, atol=1e-9)  # rotation offset propagates unchanged
    assert res.rmse_position == pytest.approx(np.sqrt(np.mean(pos**2)), rel=1e-10)
    assert res.max_position == pytest.approx(pos.max(), rel=1e-10)
    assert 1e-4 < res.rmse_position < 2e-3  # lever arm below ~1.5 m
    # the delta is M_nom^-1 M_mod
    d = res.per_sample[0]
    assert isinstance(d, PoseDelta)
    np.testing.assert_allclose(pin.exp6(pin.Motion(d.twist)).rotation, d.rotation, atol=1e-12)


def test_static_poses_against_pinocchio(comparison, ur10_urdf, ur10_offset):
    rng = np.random.default_rng(0)
    poses = [rng.uniform(-2, 2, 6) for _ in range(4)]
    errors = comparison.static_poses(poses + [list(poses[0])])
    assert [e.label for e in errors] == [f"pose_{i}" for i in range(5)]
    assert all(isinstance(e, PoseError) for e in errors)
    pos, ori = direct_errors(ur10_urdf, ur10_offset, comparison.ee_frame, poses)
    np.testing.assert_allclose([e.position_error_mm for e in errors[:4]], pos * 1e3, atol=1e-10)
    np.testing.assert_allclose(
        [e.orientation_error_deg for e in errors[:4]], np.degrees(ori), atol=1e-10
    )
    defaults = comparison.static_poses()
    assert len(defaults) == 20
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    Q = np.array([e.q for e in defaults])
    assert np.all(Q >= model.lowerPositionLimit) and np.all(Q <= model.upperPositionLimit)
    assert np.allclose(Q[0], 0.0)  # home first
    assert len({tuple(q) for q in Q}) == 20


def _first_frame_of_deepest_joint(model: pin.Model) -> str:
    """Independent rule: scan the frames, keep the first one of the deepest joint."""
    depth = {f.name: len(model.supports[f.parentJoint]) for f in model.frames if f.parentJoint}
    deepest = max(depth.values())
    return next(name for name, d in depth.items() if d == deepest)


def test_end_effector_detection_and_override(comparison, ur10_urdf, ur10_offset):
    model = comparison.model_a
    assert model.frames[comparison.ee_id_a].parentJoint == model.getJointId("wrist_3_joint")
    # figaroh 1.0.2's frame: the one Pinocchio creates for the last joint, not the tool frame
    assert comparison.ee_frame == "wrist_3_joint" == _first_frame_of_deepest_joint(model)
    assert comparison.model_a.frames[comparison.ee_id_a].type == pin.FrameType.JOINT
    comp = URDFComparison(ur10_urdf, ur10_offset, ee_frame="forearm_link")
    res = comp.fk_consistency_check(n_samples=10)
    assert res.rmse_position == 0.0  # the offset is downstream of the forearm
    with pytest.raises(ValueError, match="ee_frame"):
        URDFComparison(ur10_urdf, ur10_offset, ee_frame="no_such_frame")


def test_continuous_joints(tiago_urdf):
    comp = URDFComparison(tiago_urdf, tiago_urdf)
    res = comp.fk_consistency_check(n_samples=20)
    assert res.rmse_position == 0.0
    model = comp.model_a
    j = model.joints[model.getJointId("wheel_left_joint")]
    assert j.nq == 2
    Q = np.array([d.q for d in res.per_sample])
    np.testing.assert_allclose(np.hypot(Q[:, j.idx_q], Q[:, j.idx_q + 1]), 1.0, atol=1e-12)
    # joint values (one per 1-DoF joint) are accepted as well as Pinocchio q
    values = np.zeros(len(comp.joint_names))
    (err,) = comp.static_poses([values])
    assert err.q.shape == (model.nq,)


def test_bad_inputs(comparison, ur10_urdf, panda_urdf, tmp_path):
    with pytest.raises(FileNotFoundError, match="URDF not found"):
        URDFComparison(ur10_urdf, tmp_path / "missing.urdf")
    with pytest.raises(ValueError, match="same joints"):
        URDFComparison(ur10_urdf, panda_urdf)
    with pytest.raises(ValueError, match="nq = 6"):
        comparison.static_poses([[0.0, 1.0]])
    with pytest.raises(ValueError, match="NaN"):
        comparison.static_poses([[np.nan] * 6])
    with pytest.raises(ValueError, match="positive integer"):
        comparison.fk_consistency_check(n_samples=0)
    with pytest.raises(ValueError, match="duration"):
        comparison.show_overlay(server=object(), duration=-1.0)


# ------------------------------------------------------------------ viewers
def test_interactive_validation_serves_page_and_stops(comparison):
    port = free_port()
    stop = threading.Event()
    errors: list[BaseException] = []

    def run():
        try:
            comparison.show_interactive_validation(
                n_trajectory=5, port=port, stop_event=stop, animation_delay=0.0
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    html = b""
    deadline = time.time() + 40
    while time.time() < deadline and not errors:
        try:
            html = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read()
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.1)
    time.sleep(0.5)  # let the scene and GUI be built
    stop.set()
    thread.join(20)
    assert not errors, errors
    assert not thread.is_alive()
    assert b"<html" in html.lower() or b"<!doctype html" in html.lower()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)


@pytest.fixture()
def server():
    from figaroh.tools.robotvisualization import create_viser_server

    srv = create_viser_server(port=free_port())
    yield srv
    srv.stop()


def test_overlay_grid_and_trajectory_build_the_scene(comparison, server):
    comparison.show_overlay(server=server, duration=0.0)
    assert server.scene.get_handle_by_name("/robot/original/visual") is not None
    assert server.scene.get_handle_by_name("/robot/modified/visual") is not None

    poses = [np.zeros(6), np.full(6, 0.5)]
    comparison.show_static_grid(poses=poses, server=server, duration=0.0, spacing=1.5)
    cell = server.scene.get_handle_by_name("/grid/1")
    np.testing.assert_allclose(cell.position, (1.5, 0.0, 0.0))
    label = server.scene.get_handle_by_name("/grid/0/label")
    assert label is not None and label.text.startswith("1.0mm / 0.0")

    comparison.show_trajectory_animation(
        n_configs=3, seed=5, server=server, duration=0.0, delay=0.0
    )
    configs = [d.q for d in comparison.fk_consistency_check(n_samples=3, seed=5).per_sample]
    model = pin.buildModelFromUrdf(str(comparison.nominal_path))
    data = model.createData()
    for i, q in enumerate(configs):
        pin.framesForwardKinematics(model, data, q)
        node = server.scene.get_handle_by_name(f"/traces/orig_{i}")
        np.testing.assert_allclose(
            node.position, data.oMf[model.getFrameId(comparison.ee_frame)].translation, atol=1e-6
        )


def test_import_without_viewer_packages(ur10_urdf):
    code = f"""
import sys
for name in ("viser", "viser.extras", "yourdfpy", "trimesh"):
    sys.modules[name] = None
import figaroh.tools.robotvisualization as rv
import figaroh.tools.robotcollisions
from figaroh.tools.export_validation import URDFComparison
c = URDFComparison({str(ur10_urdf)!r}, {str(ur10_urdf)!r})
assert c.fk_consistency_check(n_samples=3).rmse_position == 0.0
for call in (lambda: rv.create_viser_server(port=0), lambda: c.show_overlay(duration=0)):
    try:
        call()
    except ImportError as exc:
        assert "figaroh[viz]" in str(exc), exc
    else:
        raise SystemExit("no ImportError")
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


def test_end_effector_follows_the_calibrated_chain(talos_urdf, tmp_path):
    """A left-arm calibration compares a left-gripper frame, a right-arm one a right one.

    Truth: the frame compared is below every modified joint origin, and it is
    the deepest such frame; the FK error there is the one Pinocchio gives.
    """
    model = pin.buildModelFromUrdf(str(talos_urdf))
    same = URDFComparison(talos_urdf, talos_urdf, calibrated_chain=True)
    for side in ("left", "right"):
        mod = modified_copy(
            talos_urdf, tmp_path / f"{side}.urdf", f"arm_{side}_4_joint", dxyz=(2e-3, 0, 0)
        )
        mod = modified_copy(mod, mod, "torso_2_joint", drpy=(0, 1e-3, 0))
        comp = URDFComparison(talos_urdf, mod, calibrated_chain=True)
        frame = comp.model_a.frames[comp.ee_id_a]
        supports = [model.names[j] for j in model.supports[frame.parentJoint]]
        assert {f"arm_{side}_4_joint", "torso_2_joint"} <= set(supports)
        assert f"gripper_{side}" in comp.ee_frame
        # no deeper frame below both changed joints
        deepest = max(
            len(model.supports[f.parentJoint])
            for f in model.frames
            if f.parentJoint
            and f"arm_{side}_4_joint" in [model.names[j] for j in model.supports[f.parentJoint]]
        )
        assert len(supports) == deepest
        configs = [pin.neutral(model)] + [pin.randomConfiguration(model) for _ in range(3)]
        pos, _ = direct_errors(talos_urdf, mod, comp.ee_frame, configs)
        res = [comp.static_poses([q])[0].position_error_mm for q in configs]
        np.testing.assert_allclose(res, pos * 1e3, rtol=1e-9, atol=1e-12)
    # identical URDFs: the deepest frame of the tree
    frame = same.model_a.frames[same.ee_id_a]
    assert len(model.supports[frame.parentJoint]) == max(
        len(model.supports[f.parentJoint]) for f in model.frames
    )


def test_default_frame_is_figaroh_1_0_2s_and_its_errors_are_pinocchios(
    ur10_urdf, talos_urdf, tmp_path
):
    """Default: the first frame of the deepest joint, whatever the URDFs differ in.

    On the UR10 the tool frame ``tool0`` sits 0.0922 m beyond ``wrist_3_joint``: a
    rotation of an upstream joint origin moves the two frames by different
    amounts, and the check reports the joint frame's error (Pinocchio FK).
    """
    mod = modified_copy(ur10_urdf, tmp_path / "rot.urdf", "wrist_2_joint", drpy=(2e-3, 0, 0))
    comp = URDFComparison(ur10_urdf, mod)
    assert comp.ee_frame == "wrist_3_joint"
    res = comp.fk_consistency_check(n_samples=40, seed=5)
    configs = [d.q for d in res.per_sample]
    pos, _ = direct_errors(ur10_urdf, mod, "wrist_3_joint", configs)
    assert res.rmse_position == pytest.approx(np.sqrt(np.mean(pos**2)), rel=1e-12)
    assert res.max_position == pytest.approx(pos.max(), rel=1e-12)
    pos_tool, _ = direct_errors(ur10_urdf, mod, "tool0", configs)
    assert abs(np.sqrt(np.mean(pos_tool**2)) - res.rmse_position) > 1e-5  # another frame
    chain = URDFComparison(ur10_urdf, mod, calibrated_chain=True)
    assert chain.ee_frame != "wrist_3_joint"
    # Talos: the first frame of the deepest joint of the whole tree (left gripper joint)
    talos = URDFComparison(talos_urdf, talos_urdf)
    model = pin.buildModelFromUrdf(str(talos_urdf))
    assert talos.ee_frame == _first_frame_of_deepest_joint(model) == "gripper_left_joint"


def test_viewer_module_split():
    """The viewers live in validation_viewer; export_validation re-exports their names.

    Truth: the names are the same objects in both modules, every ``show_*``
    method of :class:`URDFComparison` comes from the viewer mixin, and the
    viewer module never imports ``export_validation`` (one-way dependency).
    """
    import ast
    import inspect

    from figaroh.tools import export_validation as ev
    from figaroh.tools import validation_viewer as vv

    for name in ("ORIG_COLOR", "MOD_COLOR", "ConfigLike"):
        assert getattr(ev, name) is getattr(vv, name)
    assert ev.ORIG_COLOR == (51, 102, 229) and ev.MOD_COLOR == (229, 51, 51)
    assert ev.N_DEFAULT_POSES == 20
    assert issubclass(URDFComparison, vv.ComparisonViewerMixin)
    shows = [n for n in dir(URDFComparison) if n.startswith("show_")]
    assert sorted(shows) == [
        "show_interactive_validation",
        "show_overlay",
        "show_static_grid",
        "show_trajectory_animation",
    ]
    assert all(n in vv.ComparisonViewerMixin.__dict__ for n in shows)
    tree = ast.parse(inspect.getsource(vv))
    imported = {
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    } | {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert not any("export_validation" in m for m in imported), imported
