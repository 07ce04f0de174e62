"""Robots are duck-typed, as in figaroh 1.0.2.

A 1.0.2 script may hand the library any object holding a Pinocchio ``model``
and ``data`` with the attributes 1.0.2's ``Robot`` has (``q0``, ``v0``,
``nq``, ``nv``, ``robot_urdf``, ``isFext``) — its own class, or a
``types.SimpleNamespace`` — rather than a :class:`figaroh.tools.robot.Robot`
or a ``RobotWrapper``. Each public entry point is run on such a duck robot
and on a ``Robot`` loaded from the same URDF, and must give the same numbers
(``==``): the identification regressor, the standard parameters, a whole
identification and a whole calibration, the optimal calibration's regressor
and the optimal trajectory's base columns and condition number. The
regressor itself is checked against Pinocchio's ``rnea``. A robot without a
Pinocchio model is refused with a message naming ``robot.model``.
"""

from __future__ import annotations

import types
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml
from pinocchio.robot_wrapper import RobotWrapper

from conftest import ROOT, load_example
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.identification.base_identification import BaseIdentification
from figaroh.identification.identification_tools import get_standard_parameters
from figaroh.optimal import BaseOptimalCalibration, BaseOptimalTrajectory
from figaroh.tools.regressor import build_regressor_basic
from figaroh.tools.robot import Robot
from figaroh.tools.robotcollisions import CollisionManager
from figaroh.utils.cubic_spline import CubicSpline

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
UR10_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]

_ident_example = load_example("ur10/identification.py", "ur10_identification")
_calib_example = load_example("ur10/calibration.py", "ur10_calibration_example")


class PlainRobot:
    """A user's own robot class: Pinocchio model and data, no figaroh base class."""

    def __init__(self, urdf: str):
        self.robot_urdf = urdf
        self.isFext = False
        self.model = pin.buildModelFromUrdf(urdf)
        self.data = self.model.createData()
        self.q0 = pin.neutral(self.model)
        self.v0 = np.zeros(self.model.nv)
        self.nq, self.nv = self.model.nq, self.model.nv


def namespace_robot(urdf: str) -> types.SimpleNamespace:
    model = pin.buildModelFromUrdf(urdf)
    return types.SimpleNamespace(
        model=model,
        data=model.createData(),
        q0=pin.neutral(model),
        v0=np.zeros(model.nv),
        nq=model.nq,
        nv=model.nv,
        robot_urdf=urdf,
        isFext=False,
    )


@pytest.fixture(scope="module")
def robot(ur10_urdf):
    return Robot(str(ur10_urdf), load_geometry=False)


@pytest.fixture(scope="module", params=["plain_class", "simple_namespace"])
def duck(request, ur10_urdf):
    make = PlainRobot if request.param == "plain_class" else namespace_robot
    duck = make(str(ur10_urdf))
    assert not isinstance(duck, (Robot, RobotWrapper))
    assert not hasattr(duck, "backend")  # nothing of figaroh's Robot beyond 1.0.2's attributes
    return duck


# ---------------------------------------------------------------------------
# identification
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def trajectory(robot):
    traj, tau = _ident_example.simulate_ur10(robot, n_samples=600, noise_std=0.1, seed=3)
    return traj, tau


class MemoryIdentification(BaseIdentification):
    """The simulated trajectory, held in memory."""

    samples: dict = {}  # (``data`` is the Pinocchio data)

    def load_trajectory_data(self, data_source=None):
        d = self.samples
        return {
            "timestamps": d["t"][:, None].copy(),
            "positions": d["q"].copy(),
            "velocities": d["dq"].copy(),
            "accelerations": None,
            "torques": d["tau"].copy(),
        }


def _identify(any_robot, trajectory):
    traj, tau = trajectory
    MemoryIdentification.samples = {"t": traj.t, "q": traj.q, "dq": traj.dq, "tau": tau}
    ident = MemoryIdentification(any_robot, str(CONFIG))
    ident.print_quality_report = lambda: None  # type: ignore[method-assign]
    ident.initialize()
    ident.solve(plotting=False, save_results=False)
    return ident


def test_regressor_and_standard_parameters_of_a_duck_robot(robot, duck, trajectory):
    ident = _identify(robot, trajectory)
    cfg = ident.identif_config
    traj, _ = trajectory
    rng = np.random.default_rng(0)
    q = traj.q[:50]
    v = traj.dq[:50]
    a = rng.uniform(-2.0, 2.0, q.shape)
    W_duck = build_regressor_basic(duck, q, v, a, cfg)
    W_robot = build_regressor_basic(robot, q, v, a, cfg)
    assert np.array_equal(W_duck, W_robot)
    std_duck = get_standard_parameters(duck.model, cfg)
    std_robot = get_standard_parameters(robot.model, cfg)
    assert list(std_duck) == list(std_robot)
    assert np.array_equal(np.array(list(std_duck.values())), np.array(list(std_robot.values())))
    # the regressor times the URDF's standard parameters is Pinocchio's inverse dynamics
    names = list(std_duck)
    phi = np.array([std_duck[n] for n in names])
    n = q.shape[0]
    tau = (W_duck @ phi).reshape(duck.model.nv, n)  # joint-major rows
    rigid = np.array([pin.rnea(duck.model, duck.data, q[i], v[i], a[i]) for i in range(n)]).T
    friction = np.zeros_like(rigid)  # the UR10 config's friction columns
    for j, joint in enumerate(UR10_JOINTS):
        fv, fs = std_duck.get(f"fv{joint}", 0.0), std_duck.get(f"fs{joint}", 0.0)
        friction[j] = fv * v[:, j] + fs * np.sign(v[:, j])
    offsets = np.array([std_duck.get(f"off{joint}", 0.0) for joint in UR10_JOINTS])[:, None]
    armature = np.array(
        [std_duck.get(f"Ia{joint}", 0.0) * a[:, j] for j, joint in enumerate(UR10_JOINTS)]
    )
    np.testing.assert_allclose(tau, rigid + friction + offsets + armature, atol=1e-9)


def test_identification_of_a_duck_robot_gives_the_robots_numbers(robot, duck, trajectory):
    ours = _identify(robot, trajectory)
    theirs = _identify(duck, trajectory)
    assert theirs.params_base == ours.params_base
    assert np.array_equal(np.asarray(theirs.phi_base), np.asarray(ours.phi_base))
    assert np.array_equal(theirs.tau_identif, ours.tau_identif)
    for key in ("base regressor", "condition number", "std dev of estimated param"):
        assert np.array_equal(theirs.result[key], ours.result[key]), key


# ---------------------------------------------------------------------------
# calibration
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def calibration_data(robot, tmp_path_factory):
    folder = tmp_path_factory.mktemp("duck_calibration")
    train, _, truth = _calib_example.simulate_ur10_calibration(
        folder, robot=robot, n_train=30, n_test=5
    )
    return train, truth


def _calibrate(any_robot, train):
    calib = BaseCalibration(any_robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.set_data_file(train)
    calib.initialize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.solve(enable_logging=False, outlier_threshold=1.0)
    return calib


def test_calibration_of_a_duck_robot_gives_the_robots_numbers(robot, duck, calibration_data):
    train, truth = calibration_data
    ours = _calibrate(robot, train)
    theirs = _calibrate(duck, train)
    assert theirs.calib_config["param_name"] == ours.calib_config["param_name"]
    assert np.array_equal(theirs.var_, ours.var_)
    fitted = dict(zip(theirs.calib_config["param_name"], theirs.var_, strict=True))
    assert max(abs(fitted[n] - truth[n]) for n in truth) < 1e-7  # the injected errors


# ---------------------------------------------------------------------------
# optimal design
# ---------------------------------------------------------------------------
def test_optimal_calibration_of_a_duck_robot(robot, duck, tmp_path):
    rng = np.random.default_rng(4)
    pool = rng.uniform(-np.pi, np.pi, (25, 6))
    path = Path(tmp_path) / "pool.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "calibration_joint_names": UR10_JOINTS,
                "calibration_joint_configurations": pool.tolist(),
            }
        )
    )
    results = []
    for any_robot in (robot, duck):
        opt = BaseOptimalCalibration(any_robot, str(CONFIG))
        opt.set_candidate_file(path)
        opt.initialize()
        results.append((opt.R_rearr, opt.calculate_detroot_whole()))
    assert np.array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


def test_optimal_trajectory_of_a_duck_robot(robot, duck):
    joints = UR10_JOINTS[:3]
    designs = []
    for any_robot in (robot, duck):
        opt = BaseOptimalTrajectory(any_robot, joints, str(CONFIG), rng=0)
        opt.initialize()
        designs.append(opt)
    ours, theirs = designs
    assert np.array_equal(theirs.base_columns, ours.base_columns)
    assert theirs.base_param_names == ours.base_param_names
    rng = np.random.default_rng(1)
    q = np.tile(pin.neutral(duck.model), (40, 1))
    q[:, :3] = rng.uniform(-1.0, 1.0, (40, 3))
    v = np.zeros((40, duck.model.nv))
    v[:, :3] = rng.uniform(-1.0, 1.0, (40, 3))
    a = np.zeros_like(v)
    a[:, :3] = rng.uniform(-1.0, 1.0, (40, 3))
    assert theirs.condition_number(q, v, a) == ours.condition_number(q, v, a)


# ---------------------------------------------------------------------------
# what a robot needs
# ---------------------------------------------------------------------------
def test_collision_manager_and_spline_take_a_duck_robot(duck):
    manager = CollisionManager(duck)
    assert manager.model is duck.model and manager.geom_model is None
    spline = CubicSpline(duck, 4, UR10_JOINTS[:2])
    assert spline.act_Jname == UR10_JOINTS[:2]


class ModelProxy:
    """A Pinocchio-like model that is not a ``pinocchio.Model`` (delegates every attribute)."""

    def __init__(self, model):
        self._model = model

    def __getattr__(self, name):
        return getattr(self._model, name)


def test_set_up_reads_the_model_by_its_attributes_not_its_class(duck):
    proxy = types.SimpleNamespace(model=ModelProxy(duck.model), data=duck.data, q0=duck.q0)
    assert not isinstance(proxy.model, pin.Model)
    manager = CollisionManager(proxy)
    assert manager.model is proxy.model
    assert manager.data.oMi[0].isIdentity()  # a Pinocchio data of that model
    spline = CubicSpline(proxy, 4, UR10_JOINTS[:2])
    reference = CubicSpline(duck, 4, UR10_JOINTS[:2])
    assert spline.act_Jid == reference.act_Jid and spline.act_idxq == reference.act_idxq
    assert np.array_equal(spline.upper_q, reference.upper_q)
    assert np.array_equal(spline.upper_effort, reference.upper_effort)


@pytest.mark.parametrize("bad", [types.SimpleNamespace(), types.SimpleNamespace(model="ur10")])
def test_a_robot_without_a_pinocchio_model_is_refused_naming_robot_model(bad):
    with pytest.raises(TypeError, match=r"robot\.model"):
        CollisionManager(bad)
    with pytest.raises(TypeError, match=r"robot\.model"):
        CubicSpline(bad, 4, UR10_JOINTS[:2])
