"""Robot loading: every loader path, package resolution, free-flyer bounds."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from figaroh.tools.exceptions import MissingMeshError, MissingPackageError, RobotLoadError
from figaroh.tools.load_robot import (
    get_available_loaders,
    list_available_robots,
    load_robot,
)
from figaroh.tools.robot import Robot, create_robot
from figaroh.tools.robot_paths import referenced_packages, resolve_package_dirs


def test_ur10_loads_with_geometry_without_package_dirs(ur10_urdf):
    robot = Robot(str(ur10_urdf), package_dirs=None)
    assert robot.model.nq == 6 and robot.num_joints == 6
    assert robot.collision_model.ngeoms > 0 and robot.visual_model.ngeoms > 0
    assert robot.geom_model is robot.collision_model
    assert robot.actuated_joint_names[0] == "shoulder_pan_joint"
    assert "actuated_joints=6" in repr(robot) and "free_flyer=False" in repr(robot)


@pytest.mark.parametrize("fixture", ["ur10_urdf", "tiago_urdf", "panda_urdf", "talos_urdf"])
def test_example_robot_data_urdfs_load(fixture, request):
    urdf = request.getfixturevalue(fixture)
    robot = load_robot(str(urdf))
    assert robot.model.nv > 0
    assert robot.visual_model.ngeoms > 0


def test_talos_free_flyer(talos_urdf):
    robot = load_robot(str(talos_urdf), isFext=True, load_geometry=False)
    assert robot.isFext
    assert robot.model.joints[1].shortname() == "JointModelFreeFlyer"
    assert robot.num_joints == robot.model.njoints - 2
    assert robot.actuated_joint_names == list(robot.model.names[2:])
    lb, ub = robot.get_configuration_bounds()
    assert np.allclose(lb[:3], -1.0) and np.allclose(ub[:3], 1.0)
    assert np.allclose(lb[3:7], -1.0) and np.allclose(ub[3:7], 1.0)
    assert robot.validate_configuration(robot.q0)


def test_freeflyer_limits_update_and_validation(talos_urdf):
    robot = Robot(
        str(talos_urdf), None, isFext=True, freeflyer_limits=(-2.0, 3.0), load_geometry=False
    )
    assert robot.freeflyer_limits == (-2.0, 3.0)
    q = robot.q0.copy()
    q[0] = 2.5
    assert robot.validate_configuration(q)
    robot.update_freeflyer_limits((-1.0, 1.0))
    assert not robot.validate_configuration(q)  # translation now out of bounds
    q[0] = 0.0
    q[3:7] = [0.0, 0.0, 0.0, 2.0]  # within [-1, 1]? no: 2 > 1
    assert not robot.validate_configuration(q)
    q[3:7] = [0.0, 0.0, 0.5, 0.5]  # within bounds but not unit norm
    assert not robot.validate_configuration(q)
    assert not robot.validate_configuration(robot.q0[:-1])  # wrong size
    with pytest.raises(ValueError, match="lower < upper"):
        robot.update_freeflyer_limits((1.0, -1.0))


def test_freeflyer_orientation(talos_urdf):
    R = pin.utils.rotate("z", 0.3)
    robot = Robot(str(talos_urdf), None, isFext=True, freeflyer_ori=R, load_geometry=False)
    quat = pin.Quaternion(robot.q0[6], *robot.q0[3:6])
    assert np.allclose(quat.toRotationMatrix(), R)
    with pytest.raises(ValueError, match="rotation"):
        Robot(
            str(talos_urdf), None, isFext=True, freeflyer_ori=np.ones((3, 3)), load_geometry=False
        )


def test_update_limits_without_freeflyer_raises(ur10_robot):
    with pytest.raises(ValueError, match="free-flyer"):
        ur10_robot.update_freeflyer_limits((-1, 1))
    assert ur10_robot.validate_configuration(np.zeros(6))
    assert not ur10_robot.validate_configuration(np.full(6, 100.0))


def test_missing_urdf_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="URDF file not found"):
        load_robot(str(tmp_path / "nope.urdf"))
    with pytest.raises(FileNotFoundError, match="URDF file not found"):
        create_robot(str(tmp_path / "nope.urdf"))


def test_invalid_urdf_raises_robot_load_error(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot><link name='a'/></robot>")  # no robot name
    with pytest.raises(RobotLoadError, match="valid URDF"):
        load_robot(str(bad), load_geometry=False)


def _copy_ur10_without_package(ur10_urdf: Path, tmp_path: Path) -> Path:
    urdf = tmp_path / "robot" / "ur10.urdf"
    urdf.parent.mkdir()
    text = re.sub(r"package://[^/]+/", "package://missing_pkg_xyz/", ur10_urdf.read_text())
    urdf.write_text(text)
    return urdf


def test_missing_mesh_package_names_package_and_folders(ur10_urdf, tmp_path):
    urdf = _copy_ur10_without_package(ur10_urdf, tmp_path)
    robot = load_robot(str(urdf))  # the meshes are looked for at the first geometry read
    assert robot.model.nv == 6
    with pytest.raises(MissingPackageError) as err:
        _ = robot.visual_model
    msg = str(err.value)
    assert "missing_pkg_xyz" in msg and str(urdf.parent) in msg
    assert isinstance(err.value, FileNotFoundError)
    # dynamics-only loading works without the meshes
    robot = load_robot(str(urdf), load_geometry=False)
    assert robot.model.nv == 6 and robot.visual_model is None


def test_package_beside_urdf_is_found(ur10_urdf, tmp_path):
    pkg_src = ur10_urdf.parents[1]  # .../ur_description
    root = tmp_path / "ws"
    shutil.copytree(pkg_src, root / "src" / "ur_description")
    urdf = root / "src" / "ur_description" / "urdf" / "ur10_robot.urdf"
    text = re.sub(
        r"package://[^\"]*?/ur_description/", "package://ur_description/", urdf.read_text()
    )
    urdf.write_text(text)
    assert "package://ur_description/meshes" in text
    dirs = resolve_package_dirs(urdf)
    assert str(root / "src") == dirs[0]
    robot = Robot(str(urdf))
    assert robot.collision_model.ngeoms > 0


def _project_with_renamed_package(ur10_urdf: Path, root: Path, pkg: str) -> Path:
    """``root/<pkg>`` (a renamed ur_description) and a URDF naming ``package://<pkg>/``."""
    shutil.copytree(ur10_urdf.parents[1], root / pkg)
    urdf = root / "robot.urdf"
    text = re.sub(r"package://[^\"]*?/ur_description/", f"package://{pkg}/", ur10_urdf.read_text())
    urdf.write_text(text)
    assert f"package://{pkg}/meshes" in text
    return urdf


def test_package_in_the_project_models_folder(ur10_urdf, tmp_path, monkeypatch):
    """1.0.2 layout: packages in ``<project>/models``, scripts run from a sub-folder."""
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    urdf_dir = tmp_path / "elsewhere"
    urdf_dir.mkdir()
    urdf = _project_with_renamed_package(ur10_urdf, urdf_dir, "figaroh_test_ur")
    shutil.move(str(urdf_dir / "figaroh_test_ur"), str(project / "models" / "figaroh_test_ur"))
    script_dir = project / "examples" / "ur10"
    script_dir.mkdir(parents=True)
    monkeypatch.chdir(script_dir)
    robot = load_robot(str(urdf))
    assert robot.collision_model.ngeoms > 0
    assert str(project / "models") in resolve_package_dirs(urdf)
    # outside the project tree the package is not found; the error names every folder
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    monkeypatch.setattr(sys, "argv", [""])
    robot = load_robot(str(urdf))
    with pytest.raises(MissingPackageError) as err:
        _ = robot.collision_model
    msg = str(err.value)
    assert "figaroh_test_ur" in msg and str(outside) in msg and str(urdf_dir) in msg


def test_package_dirs_and_robot_pkg_relative_to_the_working_directory(
    ur10_urdf, tmp_path, monkeypatch
):
    ws = tmp_path / "ws"
    (ws / "pkgs").mkdir(parents=True)
    urdf = _project_with_renamed_package(ur10_urdf, ws / "pkgs", "figaroh_test_ur")
    moved = tmp_path / "robot.urdf"
    shutil.move(str(urdf), str(moved))
    monkeypatch.chdir(ws)
    assert load_robot(str(moved), package_dirs="pkgs").collision_model.ngeoms > 0
    assert Robot(str(moved), package_dirs=["pkgs"]).collision_model.ngeoms > 0
    assert load_robot(str(moved), robot_pkg="pkgs/figaroh_test_ur").collision_model.ngeoms > 0
    monkeypatch.chdir(ws / "pkgs")  # the package folder itself, by name, in the cwd
    assert load_robot(str(moved), robot_pkg="figaroh_test_ur").collision_model.ngeoms > 0


def test_missing_mesh_file_names_the_mesh(ur10_urdf, tmp_path):
    pkg = tmp_path / "ur_description"
    shutil.copytree(ur10_urdf.parents[1], pkg)
    urdf = pkg / "urdf" / "ur10_robot.urdf"
    text = re.sub(
        r"package://[^\"]*?/ur_description/", "package://ur_description/", urdf.read_text()
    )
    urdf.write_text(text)
    victim = next((pkg / "meshes" / "ur10").rglob("*.stl"))
    victim.unlink()
    with pytest.raises(MissingMeshError, match=victim.name):
        resolve_package_dirs(urdf, [tmp_path])


def test_referenced_packages():
    text = '<mesh filename="package://a/m.stl"/><mesh filename="package://b/x/y.dae"/><mesh filename="package://a/n.stl"/>'
    assert referenced_packages(text) == ["a", "b"]


def test_unsupported_loader():
    with pytest.raises(ValueError, match="Unsupported loader"):
        load_robot("x.urdf", loader="magic")


def test_get_available_loaders_keys():
    info = get_available_loaders()
    assert set(info) == {"figaroh", "robot_description", "yourdfpy"}
    assert info["figaroh"]["available"] is True
    for entry in info.values():
        assert {"description", "available", "returns", "features"} <= set(entry)


def test_yourdfpy_loader(ur10_urdf):
    pytest.importorskip("yourdfpy")
    urdf = load_robot(str(ur10_urdf), loader="yourdfpy")
    assert len(urdf.actuated_joint_names) == 6
    assert urdf.scene is not None and len(urdf.scene.geometry) > 0


def test_robot_description_loader_missing_package(monkeypatch):
    import figaroh.tools.robot as lr

    monkeypatch.setattr(lr, "_check_package_available", lambda name: False)
    with pytest.raises(ImportError, match="robot_descriptions"):
        load_robot("ur10", loader="robot_description")
    assert list_available_robots("robot_description") == []


def test_ros_param_loader_requires_rospy(monkeypatch, ur10_urdf):
    import figaroh.tools.robot as lr

    monkeypatch.setattr(lr, "_check_package_available", lambda name: False)
    with pytest.raises(ImportError, match="rospy"):
        load_robot(str(ur10_urdf), load_by_urdf=False)


def test_list_available_robots_figaroh():
    names = list_available_robots("figaroh")
    assert "ur_description/urdf/ur10_robot.urdf" in names


def test_models_keyword_resolves_to_example_robot_data(ur10_urdf):
    robot = load_robot(str(ur10_urdf), package_dirs="models")
    assert robot.collision_model.ngeoms > 0


def test_create_robot_enhanced_and_plain(ur10_urdf):
    robot = create_robot(str(ur10_urdf), load_geometry=False)
    assert isinstance(robot, Robot)
    plain = create_robot(str(ur10_urdf), enhanced_features=False, load_geometry=False)
    assert plain.model.nq == 6


def test_display_without_geometry_is_refused(ur10_robot):
    with pytest.raises(RuntimeError, match="without geometry"):
        ur10_robot.display_q0()


# ---------------------------------------------------------------- shared real data
def _valid_urdfs(shared_data: Path) -> list[Path]:
    out = []
    for urdf in sorted(shared_data.rglob("*.urdf")):
        if urdf.name == "ur3.urdf":  # documented invalid file (no robot name)
            continue
        out.append(urdf)
    return out


def test_every_shared_urdf_loads_dynamics_only(shared_data):
    urdfs = _valid_urdfs(shared_data)
    assert len(urdfs) > 5
    for urdf in urdfs:
        robot = load_robot(str(urdf), load_geometry=False)
        assert robot.model.nv > 0, urdf


def test_shared_urdfs_with_geometry_load_or_name_missing_mesh(shared_data):
    loaded, refused = 0, 0
    for urdf in _valid_urdfs(shared_data):
        robot = load_robot(str(urdf))
        try:
            _ = robot.collision_model
        except (MissingMeshError, MissingPackageError) as exc:
            refused += 1
            msg = str(exc)
            assert "load_geometry=False" in msg and ("mesh" in msg or "package" in msg)
            continue
        loaded += 1
        assert robot.collision_model is not None
    assert loaded >= 3


def test_shared_ur3_is_refused_clearly(shared_data):
    with pytest.raises(RobotLoadError, match="ur3.urdf"):
        load_robot(str(shared_data / "models/ur_description/urdf/ur3.urdf"), load_geometry=False)


def test_shared_talos_with_free_flyer(shared_data):
    urdf = shared_data / "talos" / "talos_full_v2.urdf"
    if not urdf.exists():
        urdf = next(shared_data.rglob("talos_full_v2.urdf"))
    robot = load_robot(str(urdf), isFext=True, load_geometry=False)
    assert robot.model.joints[1].shortname() == "JointModelFreeFlyer"


# ---------------------------------------------------------------- geometry on demand
@pytest.fixture
def geometry_builds(monkeypatch):
    """Every ``pin.buildGeomFromUrdf`` / ``pin.buildModelsFromUrdf`` call, by geometry type."""
    calls: list = []
    real_geom, real_models = pin.buildGeomFromUrdf, pin.buildModelsFromUrdf

    def geom(model, filename, geom_type, *args, **kwargs):
        calls.append(geom_type)
        return real_geom(model, filename, geom_type, *args, **kwargs)

    def models(*args, **kwargs):
        calls.append("buildModelsFromUrdf")
        return real_models(*args, **kwargs)

    monkeypatch.setattr(pin, "buildGeomFromUrdf", geom)
    monkeypatch.setattr(pin, "buildModelsFromUrdf", models)
    return calls


def _same_geometry(lazy: pin.GeometryModel, eager: pin.GeometryModel) -> None:
    assert lazy.ngeoms == eager.ngeoms > 0
    for a, b in zip(lazy.geometryObjects, eager.geometryObjects, strict=True):
        assert (a.name, a.parentJoint, a.parentFrame, a.meshPath) == (
            b.name,
            b.parentJoint,
            b.parentFrame,
            b.meshPath,
        )
        assert np.array_equal(a.placement.homogeneous, b.placement.homogeneous)
        assert np.array_equal(a.meshScale, b.meshScale)
    assert len(lazy.collisionPairs) == len(eager.collisionPairs)


def test_loading_parses_no_mesh_and_identification_use_builds_none(ur10_urdf, geometry_builds):
    robot = load_robot(str(ur10_urdf))  # the 1.0.2 default: geometry available
    assert robot.load_geometry
    q = pin.neutral(robot.model)
    pin.computeJointTorqueRegressor(robot.model, robot.data, q, q, q)
    pin.framesForwardKinematics(robot.model, robot.data, q)
    robot.rebuildData()
    assert robot.backend.model is robot.model and robot.validate_configuration(q)
    assert geometry_builds == []
    assert "_visual_model" not in vars(robot) and "_collision_model" not in vars(robot)


def test_geometry_is_built_at_first_read_and_equals_the_eager_models(ur10_urdf, geometry_builds):
    robot = Robot(str(ur10_urdf))
    _, collision, visual = pin.buildModelsFromUrdf(
        str(ur10_urdf), package_dirs=resolve_package_dirs(ur10_urdf)
    )
    geometry_builds.clear()
    _same_geometry(robot.collision_model, collision)
    assert geometry_builds == [pin.GeometryType.COLLISION]  # the visual meshes stay unread
    assert robot.geom_model is robot.collision_model
    assert robot.collision_data is robot.collision_data is not None
    _same_geometry(robot.visual_model, visual)
    assert isinstance(robot.visual_data, pin.GeometryData)
    assert robot.visual_model is robot.visual_model and robot.geom_model is not None
    assert geometry_builds == [pin.GeometryType.COLLISION, pin.GeometryType.VISUAL]


def test_geometry_on_demand_with_a_free_flyer_and_an_edited_model(talos_urdf):
    eager_model, collision = pin.buildModelsFromUrdf(
        str(talos_urdf),
        package_dirs=resolve_package_dirs(talos_urdf),
        root_joint=pin.JointModelFreeFlyer(),
        geometry_types=pin.GeometryType.COLLISION,
    )
    robot = Robot(str(talos_urdf), isFext=True)
    robot.model.frames[5].placement = pin.SE3.Random()  # edits do not leak into the meshes
    _same_geometry(robot.collision_model, collision)
    assert robot.collision_model.geometryObjects[0].parentJoint < eager_model.njoints


def test_geometry_paths_are_recorded_at_load_time(ur10_urdf, tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    (ws / "pkgs").mkdir(parents=True)
    urdf = _project_with_renamed_package(ur10_urdf, ws / "pkgs", "figaroh_test_ur")
    monkeypatch.chdir(ws)
    robot = Robot(str(urdf.relative_to(ws)), package_dirs="pkgs")  # both relative
    monkeypatch.chdir(tmp_path)
    assert robot.collision_model.ngeoms > 0


def test_without_geometry_nothing_is_built(ur10_urdf, geometry_builds):
    robot = Robot(str(ur10_urdf), load_geometry=False)
    assert robot.visual_model is None and robot.collision_model is None
    assert robot.visual_data is None and robot.collision_data is None and robot.geom_model is None
    assert geometry_builds == []


def test_assigned_geometry_replaces_the_pending_one(ur10_urdf, geometry_builds):
    robot = Robot(str(ur10_urdf))
    empty = pin.GeometryModel()
    robot.visual_model = empty
    assert robot.visual_model is empty and isinstance(robot.visual_data, pin.GeometryData)
    robot.geom_model = None
    assert robot.collision_model is None and robot.collision_data is None
    assert geometry_builds == []
    robot.rebuildData()
    assert isinstance(robot.visual_data, pin.GeometryData)


def test_collision_checking_and_viewer_models_read_the_lazy_attributes(ur10_urdf):
    from figaroh.tools.robotcollisions import CollisionWrapper

    robot = Robot(str(ur10_urdf))
    checker = CollisionWrapper(robot)
    assert checker.geom_model is robot.collision_model and checker.geom_model.ngeoms > 0
    assert "_visual_model" not in vars(robot)  # collision checking reads no visual mesh


def test_calibration_with_the_default_loader_parses_no_mesh(shared_data, geometry_builds):
    from conftest import load_example

    example = load_example("ur10/calibration.py", "ur10_calibration_geometry_test")
    urdf = shared_data / "models" / "ur_description" / "urdf" / "ur10_robot.urdf"
    robot = load_robot(str(urdf), package_dirs=str(shared_data / "models"))
    calib = example.make_calibrator(robot, shared_data / "ur10" / "calibration.csv")
    calib.initialize()
    calib.solve(enable_logging=False)
    assert calib.STATUS == "CALIBRATED"
    assert geometry_builds == []
