"""Every figaroh 1.0.2 ``BaseIdentification`` hook is called where 1.0.2 calls it.

A robot subclass of figaroh 1.0.2 may override any method of
``BaseIdentification``, private ones included; the workflow calls them
through ``self``, so the override takes effect. For each hook a subclass
overrides it, the override records its call (and arguments) and changes the
outcome, and the test checks both: the call happened where 1.0.2 makes it
(``initialize()``, ``solve()``, ``solve_with_custom_solver()``, the report and
export methods) and its effect reached the result.

Truths: the un-overridden run on the same data (an override that doubles the
efforts doubles the estimate, one that halves the rows halves the row count,
...), and the override's own return value found in ``result``.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from conftest import load_example
from figaroh.identification.base_identification import BaseIdentification
from figaroh.tools.stages import record_stage

_ur10 = load_example("ur10/identification.py", "ur10_identification_hooks")
N, N_HELD, FACTOR = 800, 600, 5
JOINTS = list(_ur10.UR10_JOINTS)

CONFIG = """
robot:
  name: ur10
  properties:
    joints:
      active_joints: [shoulder_pan_joint, shoulder_lift_joint, elbow_joint,
                      wrist_1_joint, wrist_2_joint, wrist_3_joint]
    mechanics:
      friction_coefficients:
        viscous: [0, 0, 0, 0, 0, 0]
        static: [0, 0, 0, 0, 0, 0]
tasks:
  identification:
    enabled: true
    problem:
      use_joint_torques: true
      model_components: {{friction: true, actuator_inertia: false, joint_offset: false}}
    signal_processing:
      sampling_frequency: 100.0
      cutoff_frequency: 10.0
      filter_order: 4
      differentiation_method: gradient
      filter_params: {{nbutter: 4, f_butter: 10.0, med_fil: 5, f_sample: 100.0}}
    data:
      validation_data_file: "{validation}"
"""


class Memory(BaseIdentification):
    """UR10 logs held in memory (positions, velocities, torques); ``calls`` records hook calls."""

    datasets: dict = {}

    def __init__(self, robot, config_file):
        self.calls = []
        super().__init__(robot, config_file)

    def load_trajectory_data(self, data_source=None):
        d = self.datasets["train" if data_source is None else data_source]
        return {
            "timestamps": d["t"][:, None].copy(),
            "positions": d["q"].copy(),
            "velocities": d["dq"].copy(),
            "accelerations": None,
            "torques": d["tau"].copy(),
        }

    def print_quality_report(self):  # quiet; the report hook has its own test
        self.calls.append(("print_quality_report",))


@pytest.fixture(scope="module")
def robot():
    return _ur10.load_ur10()


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hooks")
    out = {}
    for name, validation in (("plain", ""), ("heldout", "heldout")):
        path = folder / f"{name}.yaml"
        path.write_text(CONFIG.format(validation=validation))
        out[name] = str(path)
    return out


@pytest.fixture(scope="module")
def datasets(robot):
    out = {}
    for name, n, seed in (("train", N, 3), ("heldout", N_HELD, 4)):
        traj, tau = _ur10.simulate_ur10(robot, n_samples=n, noise_std=0.2, seed=seed)
        out[name] = {"t": traj.t, "q": traj.q, "dq": traj.dq, "tau": tau}
    Memory.datasets = out
    return out


SOLVES = {
    "solve": lambda ident, **kw: ident.solve(
        **{"decimate": False, "plotting": False, "decimation_factor": FACTOR, **kw}
    ),
    "custom": lambda ident, **kw: ident.solve_with_custom_solver(
        **{"decimate": False, "plotting": False, "decimation_factor": FACTOR, **kw}
    ),
}


def initialized(cls, robot, configs, datasets, config="plain"):
    ident = cls(robot, configs[config])
    ident.initialize()
    return ident


def run(cls, robot, configs, datasets, how="solve", config="plain", **kw):
    ident = initialized(cls, robot, configs, datasets, config)
    SOLVES[how](ident, **kw)
    return ident


@pytest.fixture(scope="module")
def plain(robot, configs, datasets):
    """Un-overridden runs, by (solve kind, decimate)."""
    cache = {}

    def get(how="solve", decimate=False, **kw):
        key = (how, decimate, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = run(Memory, robot, configs, datasets, how, decimate=decimate, **kw)
        return cache[key]

    return get


def named(calls, name):
    return [c for c in calls if c[0] == name]


# --------------------------------------------------------------------------- initialize()
def test_load_param(robot, configs, datasets):
    class Hook(Memory):
        def load_param(self, config_file, setting_type="identification"):
            self.calls.append(("load_param", config_file, setting_type))
            super().load_param(config_file, setting_type)
            self.identif_config["has_friction"] = False

    ident = initialized(Hook, robot, configs, datasets)
    assert named(ident.calls, "load_param") == [("load_param", configs["plain"], "identification")]
    assert not any(k.startswith("fv_") for k in ident.standard_parameter)
    assert ident.dynamic_regressor.shape[1] == len(ident.standard_parameter) == 60


def test_load_trajectory_data(robot, configs, datasets, plain):
    class Hook(Memory):
        def load_trajectory_data(self, data_source=None):
            self.calls.append(("load_trajectory_data", data_source))
            raw = super().load_trajectory_data(data_source)
            raw["torques"] = 2.0 * raw["torques"]
            return raw

    ident = run(Hook, robot, configs, datasets, config="heldout")
    assert named(ident.calls, "load_trajectory_data") == [
        ("load_trajectory_data", None),
        ("load_trajectory_data", "heldout"),
    ]
    np.testing.assert_allclose(ident.phi_base, 2.0 * plain().phi_base, rtol=1e-6, atol=2e-6)


def test_process_data(robot, configs, datasets):
    class Hook(Memory):
        def process_data(self, truncate=None):
            self.calls.append(("process_data", truncate))
            super().process_data((0, 500))

    ident = Hook(robot, configs["plain"])
    ident.initialize(truncate=(10, 700))
    assert named(ident.calls, "process_data") == [("process_data", (10, 700))]
    assert ident.num_samples == 500 and ident.dynamic_regressor.shape[0] == 6 * 500


def test_truncate_data(robot, configs, datasets):
    class Hook(Memory):
        def _truncate_data(self, data_dict, truncate=None):
            self.calls.append(("_truncate_data", truncate))
            return {k: None if v is None else v[:-100] for k, v in data_dict.items()}

    ident = Hook(robot, configs["plain"])
    ident.initialize(truncate=(0, 700))
    assert named(ident.calls, "_truncate_data") == [("_truncate_data", (0, 700))]
    assert ident.num_samples == N - 100


def test_trajectory_mask(robot, configs, datasets, plain):
    class Hook(Memory):
        def _trajectory_mask(self, trajectory, truncate=None):
            self.calls.append(("_trajectory_mask", trajectory, truncate))
            mask = np.ones(N, dtype=bool)
            mask[: N // 2] = False
            return mask

    ident = run(Hook, robot, configs, datasets)
    assert named(ident.calls, "_trajectory_mask") == [("_trajectory_mask", None, None)]
    assert len(ident.tau_noised) == 6 * (N // 2) == len(plain().tau_noised) // 2


def test_adopt_trajectory(robot, configs, datasets):
    class Hook(Memory):
        def _adopt_trajectory(self, data, attr="trajectory"):
            self.calls.append(("_adopt_trajectory", attr))
            raw = super()._adopt_trajectory(data, attr)
            raw["torques"] = raw["torques"] + 1.0
            return raw

    ident = initialized(Hook, robot, configs, datasets, "heldout")
    assert named(ident.calls, "_adopt_trajectory") == [
        ("_adopt_trajectory", "trajectory"),
        ("_adopt_trajectory", "_val_trajectory"),
    ]
    np.testing.assert_array_equal(ident.processed_data["torques"], datasets["train"]["tau"] + 1.0)


def test_process_kinematics_data(robot, configs, datasets, plain):
    class Hook(Memory):
        def process_kinematics_data(self, filter_config=None):
            self.calls.append(("process_kinematics_data", filter_config))
            super().process_kinematics_data(filter_config)
            self.processed_data["accelerations"] = self.processed_data["accelerations"] + 0.25

    ident = initialized(Hook, robot, configs, datasets)
    assert named(ident.calls, "process_kinematics_data") == [
        ("process_kinematics_data", ident.filter_config)
    ]
    np.testing.assert_array_equal(
        ident.processed_data["accelerations"], plain().processed_data["accelerations"] + 0.25
    )


def test_filter_kinematics_data(robot, configs, datasets, plain):
    class Hook(Memory):
        def filter_kinematics_data(self, filter_config=None):
            self.calls.append(("filter_kinematics_data", filter_config))
            super().filter_kinematics_data(filter_config)
            self.processed_data["velocities"] = np.asarray(self.raw_data["velocities"])

    ident = initialized(Hook, robot, configs, datasets)
    assert named(ident.calls, "filter_kinematics_data") == [
        ("filter_kinematics_data", ident.filter_config)
    ]
    np.testing.assert_array_equal(ident.processed_data["velocities"], datasets["train"]["dq"])
    assert not np.array_equal(plain().processed_data["velocities"], datasets["train"]["dq"])


def test_apply_filters(robot, configs, datasets):
    class Hook(Memory):
        def _apply_filters(self, *signals, **params):
            self.calls.append(("_apply_filters", len(signals), params))
            return signals[0]  # no filtering

    ident = initialized(Hook, robot, configs, datasets)
    params = ident.filter_config["filter_params"]
    # 1.0.2: one call per kinematic signal the raw data holds (positions, velocities)
    assert named(ident.calls, "_apply_filters") == [("_apply_filters", 1, params)] * 2
    np.testing.assert_array_equal(ident.processed_data["positions"], datasets["train"]["q"])
    np.testing.assert_array_equal(ident.processed_data["velocities"], datasets["train"]["dq"])


def test_differentiate_signal(robot, configs, datasets, plain):
    class Hook(Memory):
        def _differentiate_signal(self, time_vector, signal, method="gradient"):
            self.calls.append(("_differentiate_signal", method))
            return 2.0 * super()._differentiate_signal(time_vector, signal, method)

    ident = initialized(Hook, robot, configs, datasets)
    assert named(ident.calls, "_differentiate_signal") == [("_differentiate_signal", "gradient")]
    np.testing.assert_array_equal(
        ident.processed_data["accelerations"], 2.0 * plain().processed_data["accelerations"]
    )


def test_process_torque_data(robot, configs, datasets, plain):
    class Hook(Memory):
        def process_torque_data(self, **kwargs):
            self.calls.append(("process_torque_data", kwargs))
            return 2.0 * np.asarray(self.raw_data["torques"])

    ident = run(Hook, robot, configs, datasets)
    assert named(ident.calls, "process_torque_data") == [("process_torque_data", {})]
    np.testing.assert_allclose(ident.phi_base, 2.0 * plain().phi_base, rtol=1e-6, atol=2e-6)


def test_build_full_configuration(robot, configs, datasets, plain):
    class Hook(Memory):
        def _build_full_configuration(self):
            self.calls.append(("_build_full_configuration", self.processed_data["positions"].shape))
            super()._build_full_configuration()
            self.processed_data["velocities"] = 3.0 * self.processed_data["velocities"]

    ident = initialized(Hook, robot, configs, datasets)
    assert named(ident.calls, "_build_full_configuration") == [
        ("_build_full_configuration", (N, 6))
    ]
    np.testing.assert_array_equal(
        ident.processed_data["velocities"], 3.0 * plain().processed_data["velocities"]
    )


def test_record_data_stage(robot, configs, datasets):
    class Hook(Memory):
        def _record_data_stage(self):
            self.calls.append(("_record_data_stage",))
            return record_stage(self, "data", "ok", "recorded by the subclass")

    ident = initialized(Hook, robot, configs, datasets)
    assert named(ident.calls, "_record_data_stage") == [("_record_data_stage",)]
    assert [s.reason for s in ident.stages if s.stage == "data"] == ["recorded by the subclass"]


def test_calculate_full_regressor(robot, configs, datasets, plain):
    class Hook(Memory):
        def calculate_full_regressor(self):
            self.calls.append(("calculate_full_regressor",))
            super().calculate_full_regressor()
            self.dynamic_regressor = 2.0 * self.dynamic_regressor

    ident = run(Hook, robot, configs, datasets)
    assert named(ident.calls, "calculate_full_regressor") == [("calculate_full_regressor",)]
    np.testing.assert_allclose(ident.phi_base, plain().phi_base / 2.0, rtol=1e-6, atol=1e-6)


def test_initialize_standard_parameters(robot, configs, datasets, plain):
    class Hook(Memory):
        def initialize_standard_parameters(self):
            self.calls.append(("initialize_standard_parameters",))
            super().initialize_standard_parameters()
            for key in self.standard_parameter:
                self.standard_parameter[key] *= 2.0

    ident = initialized(Hook, robot, configs, datasets)
    assert named(ident.calls, "initialize_standard_parameters") == [
        ("initialize_standard_parameters",)
    ]
    np.testing.assert_allclose(ident.tau_ref, 2.0 * plain().tau_ref, rtol=1e-12, atol=1e-9)


def test_compute_reference_torque(robot, configs, datasets):
    class Hook(Memory):
        def compute_reference_torque(self):
            self.calls.append(("compute_reference_torque",))
            self.tau_ref = np.full(6 * self.num_samples, 7.0)

    ident = initialized(Hook, robot, configs, datasets)
    assert named(ident.calls, "compute_reference_torque") == [("compute_reference_torque",)]
    np.testing.assert_array_equal(ident.tau_ref, 7.0)


def test_load_validation_data(robot, configs, datasets):
    class Hook(Memory):
        def _load_validation_data(self, data_source):
            self.calls.append(("_load_validation_data", data_source))
            super()._load_validation_data(data_source)
            self._val_processed_data["torques"] = self._val_processed_data["torques"] + 100.0

    ident = run(Hook, robot, configs, datasets, config="heldout")
    assert named(ident.calls, "_load_validation_data") == [("_load_validation_data", "heldout")]
    val = ident.result["validation_metrics"]
    assert val["validation_source"] == "validation_data"
    assert val["rmse_identified"] == pytest.approx(100.0, rel=0.02)


# --------------------------------------------------------------------------- solve(), custom solver
@pytest.mark.parametrize("how", ["solve", "custom"])
def test_validate_prerequisites(robot, configs, datasets, how):
    class Hook(Memory):
        def _validate_prerequisites(self):
            self.calls.append(("_validate_prerequisites",))
            raise RuntimeError("refused by the subclass")

    ident = initialized(Hook, robot, configs, datasets)
    with pytest.raises(RuntimeError, match="refused by the subclass"):
        SOLVES[how](ident)
    assert ident.calls[-1] == ("_validate_prerequisites",) and ident.result is None


@pytest.mark.parametrize("how", ["solve", "custom"])
def test_eliminate_zero_columns(robot, configs, datasets, plain, how):
    class Hook(Memory):
        def _eliminate_zero_columns(self, zero_tolerance):
            self.calls.append(("_eliminate_zero_columns", zero_tolerance))
            W_red, names = super()._eliminate_zero_columns(zero_tolerance)
            keep = [i for i, name in enumerate(names) if not name.startswith("fs_")]
            return W_red[:, keep], [names[i] for i in keep]  # no Coulomb friction

    ident = run(Hook, robot, configs, datasets, how, zero_tolerance=0.002)
    assert named(ident.calls, "_eliminate_zero_columns") == [("_eliminate_zero_columns", 0.002)]
    kept = [n for n in plain(how).active_parameters if not n.startswith("fs_")]
    assert ident._solve_W.shape[1] == len(kept) == len(plain(how).active_parameters) - 6
    assert not any("fs_" in name for name in ident.params_base)
    # the eliminated columns are those the override dropped (validation maps them back)
    names = list(ident.standard_parameter)
    assert [names[i] for i in ident._idx_eliminated] == [n for n in names if n not in kept]


@pytest.mark.parametrize("how", ["solve", "custom"])
def test_apply_decimation(robot, configs, datasets, plain, how):
    class Hook(Memory):
        def _apply_decimation(self, regressor_reduced, decimation_factor):
            self.calls.append(("_apply_decimation", regressor_reduced.shape, decimation_factor))
            tau, W = super()._apply_decimation(regressor_reduced, decimation_factor)
            return 2.0 * tau, W

    ident = run(Hook, robot, configs, datasets, how, decimate=True)
    n_cols = ident.regressor_reduced.shape[1]
    assert named(ident.calls, "_apply_decimation") == [
        ("_apply_decimation", (6 * N, n_cols), FACTOR)
    ]
    ref = plain(how, decimate=True)
    np.testing.assert_allclose(ident.phi_base, 2.0 * ref.phi_base, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("how", ["solve", "custom"])
def test_decimate_regressor_matrix(robot, configs, datasets, plain, how):
    class Hook(Memory):
        def _decimate_regressor_matrix(self, regressor_reduced, decimation_factor):
            self.calls.append(("_decimate_regressor_matrix", decimation_factor))
            return 2.0 * super()._decimate_regressor_matrix(regressor_reduced, decimation_factor)

    ident = run(Hook, robot, configs, datasets, how, decimate=True)
    assert named(ident.calls, "_decimate_regressor_matrix") == [
        ("_decimate_regressor_matrix", FACTOR)
    ]
    ref = plain(how, decimate=True)
    np.testing.assert_array_equal(ident.regressor_decimated, 2.0 * ref.regressor_decimated)
    np.testing.assert_allclose(ident.phi_base, ref.phi_base / 2.0, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("how", ["solve", "custom"])
def test_prepare_undecimated_data(robot, configs, datasets, plain, how):
    class Hook(Memory):
        def _prepare_undecimated_data(self, regressor_reduced):
            self.calls.append(("_prepare_undecimated_data", regressor_reduced.shape))
            tau, W = super()._prepare_undecimated_data(regressor_reduced)
            return 2.0 * tau, W

    ident = run(Hook, robot, configs, datasets, how)
    assert named(ident.calls, "_prepare_undecimated_data") == [
        ("_prepare_undecimated_data", ident.regressor_reduced.shape)
    ]
    np.testing.assert_allclose(ident.phi_base, 2.0 * plain(how).phi_base, rtol=1e-5, atol=1e-5)


def _first_half_of_each_block(tau, W, n_blocks=6):
    L = len(tau) // n_blocks
    rows = np.concatenate([np.arange(b * L, b * L + L // 2) for b in range(n_blocks)])
    return tau[rows], W[rows]


@pytest.mark.parametrize("decimate", [False, True])
def test_mask_rows(robot, configs, datasets, plain, decimate):
    class Hook(Memory):
        def _mask_rows(self, tau, regressor, factor=1):
            self.calls.append(("_mask_rows", factor))
            return _first_half_of_each_block(*super()._mask_rows(tau, regressor, factor))

    ident = run(Hook, robot, configs, datasets, decimate=decimate)
    assert named(ident.calls, "_mask_rows") == [("_mask_rows", FACTOR if decimate else 1)]
    rows = len(plain(decimate=decimate).tau_noised)
    assert len(ident.tau_noised) == 6 * (rows // 6 // 2)
    # figaroh 1.0.2's solve_with_custom_solver never masks rows
    custom = run(Hook, robot, configs, datasets, "custom", decimate=decimate)
    assert named(custom.calls, "_mask_rows") == []
    assert len(custom.tau_noised) == rows


@pytest.mark.parametrize("how", ["solve", "custom"])
def test_select_fit_rows(robot, configs, datasets, plain, how):
    class Hook(Memory):
        def _select_fit_rows(self, tau, W):
            self.calls.append(("_select_fit_rows", len(tau)))
            return tau[: len(tau) // 2], W[: len(tau) // 2]

    ident = run(Hook, robot, configs, datasets, how)
    assert named(ident.calls, "_select_fit_rows") == [("_select_fit_rows", 6 * N)]
    assert len(ident.tau_noised) == 3 * N
    np.testing.assert_array_equal(ident.tau_noised, plain(how).tau_noised[: 3 * N])


def test_fit_joints(robot, configs, datasets):
    class Hook(Memory):
        def fit_joints(self):
            self.calls.append(("fit_joints",))
            return JOINTS[:4]

    ident = run(Hook, robot, configs, datasets)
    assert ident.calls.count(("fit_joints",)) >= 2  # row selection, validation, ...
    assert ident._fit_blocks() == [0, 1, 2, 3]
    assert len(ident.tau_noised) == 4 * N
    assert ident.result["validation_metrics"]["joint_names"] == JOINTS[:4]


def test_fit_blocks(robot, configs, datasets):
    class Hook(Memory):
        def _fit_blocks(self):
            self.calls.append(("_fit_blocks",))
            return [0, 2]

    ident = run(Hook, robot, configs, datasets)
    assert ("_fit_blocks",) in ident.calls
    assert len(ident.tau_noised) == 2 * N
    assert list(ident.result["validation_metrics"]["per_joint"]) == [JOINTS[0], JOINTS[2]]


@pytest.mark.parametrize("how", ["solve", "custom"])
def test_reset_solve_state(robot, configs, datasets, how):
    class Hook(Memory):
        def _reset_solve_state(self, tau, W, active_params):
            self.calls.append(("_reset_solve_state", tau, W, active_params))
            super()._reset_solve_state(tau, W, active_params)
            self.marker = len(tau)

    ident = run(Hook, robot, configs, datasets, how)
    ((_, tau, W, active_params),) = named(ident.calls, "_reset_solve_state")
    assert tau is ident._solve_tau and W is ident._solve_W
    assert active_params == list(ident.active_parameters)
    assert ident.marker == len(ident.tau_noised) == 6 * N


def test_calculate_base_parameters(robot, configs, datasets, plain):
    class Hook(Memory):
        def _calculate_base_parameters(self, tau, W, active_params):
            self.calls.append(("_calculate_base_parameters", len(tau), W.shape, active_params))
            results = super()._calculate_base_parameters(tau, W, active_params)
            results["phi_base"] = np.full_like(results["phi_base"], 7.0)
            return results

    ident = run(Hook, robot, configs, datasets)
    ((_, rows, shape, active_params),) = named(ident.calls, "_calculate_base_parameters")
    assert rows == 6 * N and shape == ident._solve_W.shape
    assert active_params == list(ident.active_parameters)
    # the returned dict is what solve() stores (figaroh 1.0.2)
    np.testing.assert_array_equal(ident.result["base parameters values"], 7.0)
    np.testing.assert_array_equal(ident.phi_base, plain().phi_base)


def test_apply_weighted_least_squares(robot, configs, datasets, plain):
    class Hook(Memory):
        def _apply_weighted_least_squares(self):
            self.calls.append(("_apply_weighted_least_squares",))
            return 2.0 * self.phi_base, np.full(len(self.phi_base), 42.0)

    ident = run(Hook, robot, configs, datasets, wls=True)
    assert named(ident.calls, "_apply_weighted_least_squares") == [
        ("_apply_weighted_least_squares",)
    ]
    np.testing.assert_array_equal(ident.phi_base, 2.0 * plain().phi_base)
    np.testing.assert_array_equal(ident.result["base parameters values"], 2.0 * plain().phi_base)
    np.testing.assert_array_equal(ident.result["wls_std_deviations"], 42.0)
    np.testing.assert_array_equal(ident.tau_identif, ident.dynamic_regressor_base @ ident.phi_base)


def test_calculate_joint_variances(robot, configs, datasets, plain):
    class Hook(Memory):
        def _calculate_joint_variances(self, W_b, tau, n_active):
            self.calls.append(("_calculate_joint_variances", W_b.shape, len(tau), n_active))
            return np.ones(n_active), np.ones(len(tau))

    ident = run(Hook, robot, configs, datasets, wls=True)
    ((_, shape, rows, n_active),) = named(ident.calls, "_calculate_joint_variances")
    assert shape == ident.dynamic_regressor_base.shape and rows == 6 * N and n_active == 6
    # equal weights: WLS is the OLS estimate (OLS rounded to 6 decimals by the QR step)
    np.testing.assert_allclose(ident.phi_base, plain().phi_base, atol=1e-6)
    assert not np.array_equal(
        ident.phi_base, run(Memory, robot, configs, datasets, wls=True).phi_base
    )


def test_solve_weighted_least_squares(robot, configs, datasets, plain):
    class Hook(Memory):
        def _solve_weighted_least_squares(self, W_b, tau, diag_SIGMA):
            self.calls.append(("_solve_weighted_least_squares", len(diag_SIGMA)))
            n = W_b.shape[1]
            return self.phi_base + 1.0, np.eye(n)

    ident = run(Hook, robot, configs, datasets, wls=True)
    assert named(ident.calls, "_solve_weighted_least_squares") == [
        ("_solve_weighted_least_squares", 6 * N)
    ]
    np.testing.assert_array_equal(ident.phi_base, plain().phi_base + 1.0)
    np.testing.assert_array_equal(
        ident.result["wls_std_deviations"],
        np.round(100.0 / np.abs(plain().phi_base + 1.0), 2),
    )


def test_compute_wls_standard_deviations(robot, configs, datasets):
    class Hook(Memory):
        def _compute_wls_standard_deviations(self, C_X, phi_wls):
            self.calls.append(("_compute_wls_standard_deviations", C_X.shape))
            return np.full(len(phi_wls), 3.5)

    ident = run(Hook, robot, configs, datasets, wls=True)
    n = len(ident.phi_base)
    assert named(ident.calls, "_compute_wls_standard_deviations") == [
        ("_compute_wls_standard_deviations", (n, n))
    ]
    np.testing.assert_array_equal(ident.result["wls_std_deviations"], 3.5)


@pytest.mark.parametrize("how", ["solve", "custom"])
def test_compute_quality_metrics(robot, configs, datasets, plain, how):
    class Hook(Memory):
        def _compute_quality_metrics(self):
            self.calls.append(("_compute_quality_metrics",))
            super()._compute_quality_metrics()
            self.rms_error = 123.0
            self.std_relative = np.full(len(self.phi_base), 9.0)

    ident = run(Hook, robot, configs, datasets, how)
    assert named(ident.calls, "_compute_quality_metrics") == [("_compute_quality_metrics",)]
    assert ident.result["effort rmse"] == ident.result["rmse norm (N/m)"] == 123.0
    np.testing.assert_array_equal(ident.result["std dev of estimated param"], 9.0)
    assert ident.result["condition number"] == plain(how).result["condition number"]


def test_compute_quality_metrics_replaced_entirely(robot, configs, datasets, plain):
    class Hook(Memory):
        def _compute_quality_metrics(self):
            self.calls.append(("_compute_quality_metrics",))
            self.rms_error, self.correlation = 5.0, 0.5
            self.std_relative = np.zeros(len(self.phi_base))

    ident = run(Hook, robot, configs, datasets)
    assert (ident.result["effort rmse"], ident.correlation) == (5.0, 0.5)
    # the condition number figaroh 1.0.2 reports: np.linalg.cond of the base regressor
    assert ident.result["condition number"] == np.linalg.cond(ident.dynamic_regressor_base)
    assert ident.result["condition number"] == pytest.approx(
        plain().result["condition number"], rel=1e-9
    )


@pytest.mark.parametrize("how", ["solve", "custom"])
def test_store_results(robot, configs, datasets, how):
    class Hook(Memory):
        def _store_results(self, identif_results):
            self.calls.append(("_store_results", identif_results))
            super()._store_results(identif_results)
            self.result["robot specific"] = len(identif_results["base_parameters"])

    ident = run(Hook, robot, configs, datasets, how)
    ((_, results),) = named(ident.calls, "_store_results")
    assert results["phi_base"] is ident.phi_base
    assert ident.result["robot specific"] == len(ident.params_base)


@pytest.mark.parametrize(
    ("hook", "key"),
    [
        ("_apply_physical_consistency_if_enabled", "physical consistency"),
        ("_apply_reconstruction_if_enabled", "reconstruction"),
    ],
)
def test_physical_hooks(robot, configs, datasets, hook, key):
    def override(self, identif_results):
        self.calls.append((hook, identif_results["phi_base"] is self.phi_base))
        self.result[key] = {"status": "set by the subclass"}
        return self.result[key]

    Hook = type("Hook", (Memory,), {hook: override})
    ident = run(Hook, robot, configs, datasets)
    assert named(ident.calls, hook) == [(hook, True)]
    assert ident.result[key] == {"status": "set by the subclass"}


def test_compute_validation_metrics(robot, configs, datasets):
    class Hook(Memory):
        def _compute_validation_metrics(self):
            self.calls.append(("_compute_validation_metrics",))
            return {"rmse_identified": 1.25, "source": "subclass"}

    ident = run(Hook, robot, configs, datasets)
    assert len(named(ident.calls, "_compute_validation_metrics")) == 1
    assert ident.result["validation_metrics"] == {"rmse_identified": 1.25, "source": "subclass"}


def test_record_physical_stage(robot, configs, datasets):
    class Hook(Memory):
        def _record_physical_stage(self):
            self.calls.append(("_record_physical_stage", "validation_metrics" in self.result))
            record_stage(self, "physical", "ok", "recorded by the subclass")

    ident = run(Hook, robot, configs, datasets)
    assert named(ident.calls, "_record_physical_stage") == [("_record_physical_stage", True)]
    stages = {s["stage"]: s for s in ident.result["stages"]}
    assert stages["physical"]["reason"] == "recorded by the subclass"


# --------------------------------------------------------------------------- reports
class Reported(Memory):
    """Records the report methods instead of running them."""

    def print_quality_report(self):
        self.calls.append(("print_quality_report",))

    def plot_results(self):
        self.calls.append(("plot_results",))
        return "plotted by the subclass"

    def save_results(self, output_dir="results"):
        self.calls.append(("save_results", output_dir))

    def export_html_report(self, output_path=None, output_dir="results"):
        self.calls.append(("export_html_report", output_path, output_dir))
        return "report.html"


@pytest.mark.parametrize(
    ("how", "kwargs", "expected"),
    [
        ("solve", {}, [("print_quality_report",)]),
        ("solve", {"plotting": True}, [("print_quality_report",), ("plot_results",)]),
        ("solve", {"save_results": True}, [("print_quality_report",), ("save_results", "results")]),
        (
            "solve",
            {"html_report": True},
            [("print_quality_report",), ("export_html_report", None, "results")],
        ),
        ("custom", {}, []),
        (
            "custom",
            {"plotting": True, "save_results": True},
            [("plot_results",), ("save_results", "results")],
        ),
    ],
)
def test_report_methods(robot, configs, datasets, tmp_path, monkeypatch, how, kwargs, expected):
    monkeypatch.chdir(tmp_path)
    ident = run(Reported, robot, configs, datasets, how, **kwargs)
    reports = {"print_quality_report", "plot_results", "save_results", "export_html_report"}
    assert [c for c in ident.calls if c[0] in reports] == expected
    assert list(tmp_path.iterdir()) == []  # the overrides wrote nothing, and neither did solve


def test_compute_per_joint_stats(robot, configs, datasets, capsys):
    class Hook(BaseIdentification):
        load_trajectory_data = Memory.load_trajectory_data
        datasets = Memory.datasets

        def _compute_per_joint_stats(self):
            return {
                "joint_names": ["joint_of_the_subclass"],
                "mean": [0.0],
                "std": [1.0],
                "rmse": [2.0],
                "max_abs": [3.0],
            }

    ident = Hook(robot, configs["plain"])
    ident.initialize()
    ident.solve(decimate=False, plotting=False)
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if "joint_of_the_subclass" in s)
    assert line.split()[1:] == ["0.0000", "1.0000", "2.0000", "3.0000"]


def test_verify_is_what_the_verification_report_writes(robot, configs, datasets, tmp_path):
    class Hook(Memory):
        def verify(self, thresholds=None, scope="prediction"):
            self.calls.append(("verify", thresholds, scope))
            verdict = super().verify(thresholds=thresholds, scope=scope)
            return dataclasses.replace(verdict, insights=["insight of the subclass"])

    ident = run(Hook, robot, configs, datasets)
    path = ident.export_verification_report(str(tmp_path / "v.json"), scope="execution")
    assert named(ident.calls, "verify") == [("verify", None, "execution")]
    assert json.loads(open(path).read())["insights"] == ["insight of the subclass"]


def test_identified_joints_and_refresh_result_stages(robot, configs, datasets, tmp_path):
    class Hook(Memory):
        def _identified_joints(self):
            self.calls.append(("_identified_joints",))
            raise KeyError("joints of the subclass")

        def _refresh_result_stages(self):
            self.calls.append(("_refresh_result_stages",))
            self.result["stages"] = "refreshed by the subclass"

    ident = run(Hook, robot, configs, datasets)
    with pytest.raises(ValueError, match="joints of the subclass"):
        ident.export_urdf(str(tmp_path / "nominal.urdf"))
    assert [c[0] for c in ident.calls[-2:]] == ["_identified_joints", "_refresh_result_stages"]
    assert ident.result["stages"] == "refreshed by the subclass"
