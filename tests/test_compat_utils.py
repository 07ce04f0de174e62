"""figaroh 1.0.2 call compatibility of the utilities, physical-consistency tools and re-exports.

Each test calls a name the way a 1.0.2 script does (module path, keyword
names, defaults) and checks the outcome against an independent truth: object
identity with the defining module, algebraic identities (``M θ = φ``), a
hand-enumerated pair list, a URDF round trip through Pinocchio, the data of
the drawn matplotlib lines.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from figaroh.identification import _conic
from figaroh.identification import physical_consistency as pc

# ---------------------------------------------------------------------------
# package re-exports
# ---------------------------------------------------------------------------
UTILS_NAMES = {
    "CalibrationError": "figaroh.utils.error_handling",
    "FigarohExampleError": "figaroh.utils.error_handling",
    "IdentificationError": "figaroh.utils.error_handling",
    "ResultsManager": "figaroh.utils.results_manager",
    "handle_calibration_errors": "figaroh.utils.error_handling",
    "handle_identification_errors": "figaroh.utils.error_handling",
    "setup_example_logging": "figaroh.utils.error_handling",
    "validate_input_data": "figaroh.utils.error_handling",
}

IDENT_NAMES = {
    "BaseIdentification": "base_identification",
    "BaseResult": "reconstruction",
    "CADConstraints": "cad_constraints",
    "ProjectionReport": "physical_consistency",
    "ReconstructionResult": "reconstruction",
    "RobotProjectionReport": "physical_consistency",
    "add_com_bounds": "cad_constraints",
    "add_mass_bounds": "cad_constraints",
    "add_symmetry_constraints": "cad_constraints",
    "bounds_from_urdf": "cad_constraints",
    "build_cad_constraints_from_config": "cad_constraints",
    "check_p10_feasibility": "physical_consistency",
    "is_feasible_link": "physical_consistency",
    "p10_by_joint_from_param_dict": "physical_consistency",
    "param_dict_with_p10_by_joint": "physical_consistency",
    "prior_vector_from_dict": "reconstruction",
    "project_link": "physical_consistency",
    "project_p10_lmi": "physical_consistency",
    "project_robot_p10_lmi": "physical_consistency",
    "pseudo_inertia_matrix_from_p10": "physical_consistency",
    "reconstruct_from_base": "reconstruction",
    "reconstruct_full_parameters": "reconstruction",
    "reconstruct_theta_r": "reconstruction",
    "run_option_a_reconstruction": "reconstruction",
    "run_reconstruction": "reconstruction",
}


def _fresh(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_utils_package_reexports_are_the_defining_objects():
    import importlib

    import figaroh.utils as utils

    for name, home in UTILS_NAMES.items():
        assert getattr(utils, name) is getattr(importlib.import_module(home), name), name
        assert name in utils.__all__
    assert issubclass(utils.CalibrationError, utils.FigarohExampleError)
    with pytest.raises(AttributeError, match="No figaroh.utils attribute nope"):
        utils.nope  # noqa: B018
    # star import works (lazy names are resolved) and the package import stays cheap
    out = _fresh(
        "import sys, figaroh.utils\n"
        "print(sorted(m for m in ('numpy', 'yaml', 'matplotlib') if m in sys.modules))\n"
        "from figaroh.utils import *\n"
        "print(ResultsManager.__name__, setup_example_logging.__module__)"
    )
    assert out.splitlines() == ["[]", "ResultsManager figaroh.utils.error_handling"]


def test_identification_package_reexports_lazily_and_without_cycles():
    import importlib

    import figaroh.identification as ident

    for name, mod in IDENT_NAMES.items():
        home = importlib.import_module(f"figaroh.identification.{mod}")
        assert getattr(ident, name) is getattr(home, name), name
        assert name in ident.__all__
    out = _fresh(
        "import sys, figaroh.identification\n"
        "print('figaroh.identification.base_identification' in sys.modules)\n"
        "from figaroh.identification import BaseIdentification, run_reconstruction\n"
        "print(BaseIdentification.__module__, run_reconstruction.__module__)"
    )
    assert out.splitlines() == [
        "False",
        "figaroh.identification.base_identification figaroh.identification.reconstruction",
    ]


def test_calibration_package_exposes_base_calibration_in_a_fresh_interpreter():
    out = _fresh(
        "import sys, figaroh.calibration\n"
        "print('figaroh.calibration.base_calibration' in sys.modules)\n"
        "from figaroh.calibration import BaseCalibration\n"
        "import figaroh.calibration.base_calibration as bc\n"
        "print(BaseCalibration is bc.BaseCalibration)"
    )
    assert out.splitlines() == ["False", "True"]


def test_tools_robot_reexports_the_loaders_despite_the_import_cycle():
    out = _fresh(
        "from figaroh.tools.robot import load_robot, get_available_loaders, "
        "list_available_robots\n"
        "import figaroh.tools.load_robot as lr\n"
        "print(load_robot is lr.load_robot, get_available_loaders is lr.get_available_loaders, "
        "list_available_robots is lr.list_available_robots)"
    )
    assert out == "True True True"
    import figaroh.tools.robot as robot_mod

    assert robot_mod.get_available_loaders()["figaroh"]["available"] is True
    with pytest.raises(AttributeError):
        robot_mod.no_such_loader  # noqa: B018


# ---------------------------------------------------------------------------
# config_parser / data
# ---------------------------------------------------------------------------
def test_unified_config_checks_take_config_file_by_keyword(tmp_path):
    from figaroh.utils.config_parser import is_unified_config, require_unified_config
    from figaroh.utils.error_handling import ConfigurationError

    unified = tmp_path / "u.yaml"
    unified.write_text("tasks:\n  identification: {}\n", encoding="utf-8")
    legacy = tmp_path / "l.yaml"
    legacy.write_text("identification:\n  robot_params: []\n", encoding="utf-8")
    assert is_unified_config(config_file=unified) is True
    assert is_unified_config(config_file=legacy) is False
    assert require_unified_config(config_file=unified) is None
    with pytest.raises(ConfigurationError, match="config_migration"):
        require_unified_config(config_file=legacy)


def test_protocol_session_by_session_id_keyword(tmp_path):
    from figaroh.data import Protocol

    yml = tmp_path / "protocol.yaml"
    yml.write_text(
        "name: demo\nversion: 1\nsessions:\n  - {id: 7, role: validation}\n"
        "  - {id: a, role: identification}\n",
        encoding="utf-8",
    )
    prot = Protocol.load(yml)
    assert prot.session(session_id=7).role == "validation"
    assert prot.session(session_id="a").role == "identification"
    with pytest.raises(KeyError, match=r"no session 'b' \(sessions: '7', 'a'\)"):
        prot.session(session_id="b")


# ---------------------------------------------------------------------------
# results_manager
# ---------------------------------------------------------------------------
def test_results_manager_compat_signatures(tmp_path, caplog):
    from figaroh.utils import results_manager as rm

    assert (
        rm.setup_example_logging
        is __import__("figaroh.utils.error_handling", fromlist=["x"]).setup_example_logging
    )
    manager = rm.ResultsManager("identification", "ur10", {"phi": np.arange(3.0)})
    default = rm.ResultsManager.save_results.__defaults__[-1]
    assert default == ["yaml", "csv"]
    saved = manager.save_results(output_dir=tmp_path, file_prefix="run")
    assert set(saved) == {"yaml", "csv", "metadata"}
    assert yaml.safe_load(Path(saved["yaml"]).read_text())["phi"] == [0.0, 1.0, 2.0]
    assert default == ["yaml", "csv"]  # the shared default list is never modified
    # plot_with_fallback takes its last parameter as ``context``
    log = logging.getLogger("compat.fallback")
    with caplog.at_level(logging.WARNING, logger="compat.fallback"):
        out = rm.plot_with_fallback(lambda: 1 / 0, lambda: "basic", log, context="identification")
    assert out == "basic" and "identification plotting failed" in caplog.text


class _Captured(Exception):
    pass


@pytest.fixture
def captured_figures(monkeypatch):
    """Figures a plot builds, returned instead of saved (matplotlib Agg)."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from figaroh.utils.results_manager import ResultsManager

    store: list = []

    def finish(self, plt, figures, output_dir, file_prefix, show):
        store.extend(figures)
        return [kind for kind, _ in figures]

    monkeypatch.setattr(ResultsManager, "_finish", finish)
    yield store
    import matplotlib.pyplot as plt

    for _, fig in store:
        plt.close(fig)


def test_trajectory_plot_selects_q_and_v_columns(captured_figures):
    from figaroh.utils.results_manager import ResultsManager

    t = np.linspace(0.0, 1.0, 30)
    q_full = np.column_stack([np.sin((k + 1) * t) for k in range(7)])  # e.g. (N, nq)
    dq_full = np.column_stack([np.cos((k + 1) * t) for k in range(6)])  # (N, nv)
    manager = ResultsManager("optimal_trajectory", "arm")
    # 1.0.2 positional order: trajectories, condition_number, joint_names, title, q/v indices
    kinds = manager.plot_optimal_trajectory_results(
        {"q": q_full, "dq": dq_full}, 12.5, ["a", "b"], "My design", [6, 2], [5, 1]
    )
    assert kinds == ["trajectory"]
    fig = captured_figures[0][1]
    ax_q, ax_dq = fig.axes[:2]
    np.testing.assert_array_equal(ax_q.lines[0].get_ydata(), q_full[:, 6])
    np.testing.assert_array_equal(ax_q.lines[1].get_ydata(), q_full[:, 2])
    np.testing.assert_array_equal(ax_dq.lines[0].get_ydata(), dq_full[:, 5])
    np.testing.assert_array_equal(ax_dq.lines[1].get_ydata(), dq_full[:, 1])
    assert [ln.get_label() for ln in ax_q.lines] == ["a", "b"]
    assert "My design" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="q_indices"):
        manager.plot_optimal_trajectory_results(q_full, 1.0, q_indices=[9], raise_errors=True)


def test_calibration_plot_residuals_and_outliers(captured_figures):
    from figaroh.utils.results_manager import ResultsManager

    K, N = 2, 5  # markers, samples
    rng = np.random.default_rng(0)
    res = rng.normal(size=(K * N, 3))  # marker-major residual components [m]
    manager = ResultsManager("calibration", "arm", {"number of samples": N})
    manager.plot_calibration_results(residuals=res, outlier_indices=[3])
    kind, fig = captured_figures[0]
    assert kind == "errors"
    bars = [p.get_height() for p in fig.axes[0].patches]
    norms = np.linalg.norm(res, axis=1).reshape(K, N) * 1e3
    # per marker: N bars, then the highlighted outlier sample
    assert np.allclose(bars[:N], norms[0]) and np.isclose(bars[N], norms[0, 3])
    assert np.allclose(bars[N + 1 : 2 * N + 1], norms[1]) and np.isclose(bars[-1], norms[1, 3])
    # positional order of 1.0.2: measured, estimated, residuals, values, names, outliers, title
    captured_figures.clear()
    manager.plot_calibration_results(None, None, norms / 1e3, None, None, None, "T")
    assert np.allclose(
        [p.get_height() for p in captured_figures[0][1].axes[0].patches], norms.ravel()
    )
    assert "T (arm)" in captured_figures[0][1].axes[0].get_title()


def test_identification_plot_positional_order_and_module_helper(captured_figures):
    from figaroh.utils import results_manager as rm

    tau = np.arange(12.0)
    est = tau + 0.5
    manager = rm.ResultsManager("identification", "arm")
    # 1.0.2 order: ..., joint_names, n_joints, title
    manager.plot_identification_results(tau, est, None, None, None, ["j1", "j2"], 2, "Run 1")
    fig = captured_figures[0][1]
    np.testing.assert_array_equal(fig.axes[0].lines[0].get_ydata(), tau[:6])
    assert fig._suptitle.get_text().startswith("Run 1 (arm)")
    captured_figures.clear()
    rm.plot_identification_results(tau, est, parameters={"a": 1.0, "b": -2.0}, n_joints=2)
    bar_fig = captured_figures[1][1]
    assert [p.get_height() for p in bar_fig.axes[0].patches] == [1.0, -2.0]
    assert [t.get_text() for t in bar_fig.axes[0].get_xticklabels()] == ["a", "b"]


# ---------------------------------------------------------------------------
# CAD constraints, projection, reconstruction
# ---------------------------------------------------------------------------
def test_cad_bounds_return_the_constraints_and_bind_the_projection():
    from figaroh.identification.cad_constraints import (
        CADConstraints,
        add_com_bounds,
        add_mass_bounds,
        add_symmetry_constraints,
    )

    cad = CADConstraints()
    out = add_mass_bounds(cad, joint_name="j1", m_min=2.0, m_max=3.0)
    assert out is cad
    assert add_com_bounds(cad, joint_name="j1", axis="x", h_min=0.2, h_max=0.3) is cad
    assert add_symmetry_constraints(cad, "j1", "j2", keys=["m"]) is cad
    assert cad.mass_bounds == {"j1": (2.0, 3.0)} and cad.com_bounds == {"j1": {"x": (0.2, 0.3)}}
    p_hat = np.array([1.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.1, 0.0, 0.0, 0.5])  # triangle violated
    # unit weights: the scale-aware default weighs h by 1/max(‖ĥ‖, 1e-6) = 1e6 here
    projected, report = pc.project_robot_p10_lmi(
        {"j1": p_hat}, cad_constraints=cad, weights=np.ones(10)
    )
    p = projected["j1"]
    assert report.projected_links == 1 and report.failed_links == ()
    assert 2.0 - 1e-7 <= p[0] <= 3.0 + 1e-7 and 0.2 - 1e-7 <= p[1] <= 0.3 + 1e-7
    assert np.linalg.eigvalsh(pc.pseudo_inertia_matrix_from_p10(p))[0] >= -1e-8


def test_project_link_takes_p10_by_keyword():
    p_hat = np.array([2.0, 0.1, -0.05, 0.2, -0.01, 0.0, 0.05, 0.0, 0.0, 0.04])
    q, rep = pc.project_link(p10=p_hat, mass_min=1e-6)
    assert rep.status == "projected"
    assert np.linalg.eigvalsh(pc.pseudo_inertia_matrix_from_p10(q))[0] >= -1e-8


def _fake_solution(monkeypatch, p10):
    class Res:
        status = "optimal"
        x = np.asarray(p10, dtype=float)

    monkeypatch.setattr(_conic, "solve_program", lambda prog, **kw: Res())


# a physically consistent body (solid box-like inertia) with mass set per case
_BODY = np.array([0.2, 0.0, 0.0, 0.0, 0.01, 0.0, 0.01, 0.0, 0.0, 0.01])


def test_projection_mass_test_is_strict_by_default(monkeypatch):
    """A solver output a hair under the lower mass bound is infeasible (figaroh 1.0.2 rule)."""
    hair = _BODY.copy()
    hair[0] = 0.2 - 2e-10
    _fake_solution(monkeypatch, hair)
    q, rep = pc.project_p10_lmi(_BODY * -1.0, mass_min=0.2, mass_bounds=(0.2, 3.0))
    assert rep.status == "infeasible" and rep.min_eig == -np.inf
    assert rep.message == f"mass {hair[0]} < mass_min 0.2" and q[0] == hair[0]
    # the documented option: a mass within solver accuracy is raised onto the bound
    q, rep = pc.project_p10_lmi(_BODY, mass_min=0.2, mass_tolerance="auto")
    assert rep.status == "projected" and q[0] == 0.2 and rep.mass == 0.2
    np.testing.assert_array_equal(q[1:], hair[1:])
    assert pc.check_p10_feasibility(q, mass_min=0.2).status == "feasible"
    # ... but a real violation stays infeasible
    real = _BODY.copy()
    real[0] = 0.2 - 1e-6
    _fake_solution(monkeypatch, real)
    q, rep = pc.project_p10_lmi(_BODY, mass_min=0.2, mass_tolerance="auto")
    assert rep.status == "infeasible" and rep.message == f"mass {real[0]} < mass_min 0.2"
    assert q[0] == real[0]
    q, rep = pc.project_p10_lmi(_BODY, mass_min=0.2, mass_tolerance=1e-5)
    assert rep.status == "projected" and q[0] == 0.2
    with pytest.raises(ValueError, match="mass_tolerance"):
        pc.project_p10_lmi(_BODY, mass_tolerance="loose")
    with pytest.raises(ValueError, match="mass_tolerance"):
        pc.project_p10_lmi(_BODY, mass_tolerance=-1.0)


def test_real_solver_on_an_active_mass_bound_follows_the_strict_rule():
    p_hat = np.array([-0.5, 0.01, 0.02, 0.0, 0.01, 0.0, 0.01, 0.0, 0.0, 0.01])
    q, rep = pc.project_p10_lmi(p_hat, mass_min=0.2, mass_bounds=(0.2, 3.0))
    assert abs(q[0] - 0.2) < 1e-6  # the mass bound is active
    assert rep.status == ("projected" if q[0] >= 0.2 else "infeasible")
    q2, tolerant = pc.project_p10_lmi(
        p_hat, mass_min=0.2, mass_bounds=(0.2, 3.0), mass_tolerance="auto"
    )
    assert tolerant.status == "projected" and q2[0] >= 0.2
    assert np.linalg.eigvalsh(pc.pseudo_inertia_matrix_from_p10(q2))[0] >= -1e-8
    # the robot-level projection forwards the option
    _, report = pc.project_robot_p10_lmi(
        {"a": p_hat}, mass_min=0.2, cad_constraints=None, mass_tolerance="auto"
    )
    assert report.projected_links == 1 and report.status == "ok"


def test_reconstruction_functions_take_phi_base(tmp_path):
    from figaroh.identification.reconstruction import (
        reconstruct_from_base,
        run_option_a_reconstruction,
        run_reconstruction,
    )

    rng = np.random.default_rng(1)
    M = rng.normal(size=(3, 5))
    names = [f"p{i}" for i in range(5)]
    truth = rng.normal(size=5)
    phi = M @ truth
    prior = dict(zip(names, truth + 0.1, strict=True))
    res = reconstruct_from_base(M=M, phi_base=phi, params_r=names, params_std_prior=prior)
    np.testing.assert_allclose(M @ res.theta_r, phi, atol=1e-12)
    # minimum-distance property: θ − θ0 lies in the row space of M
    d = res.theta_r - np.array([prior[n] for n in names])
    np.testing.assert_allclose(d, M.T @ np.linalg.lstsq(M.T, d, rcond=None)[0], atol=1e-12)
    assert run_option_a_reconstruction is run_reconstruction
    payload, full, applied = run_reconstruction(
        M, phi_base=phi, params_r=names, params_std_prior=prior
    )
    np.testing.assert_allclose(payload["theta_r"], res.theta_r, atol=1e-12)
    assert full == payload["parameter_dict"] and applied is False


# ---------------------------------------------------------------------------
# robotcollisions / urdf_exporter
# ---------------------------------------------------------------------------
def test_add_non_adjacent_pairs_pairs_exactly_the_non_adjacent_geometries():
    coal = pytest.importorskip("coal")
    from figaroh.tools.robotcollisions import add_non_adjacent_pairs

    model = pin.Model()
    parent = 0
    for k in range(3):  # chain universe → j1 → j2 → j3
        parent = model.addJoint(parent, pin.JointModelRZ(), pin.SE3.Identity(), f"j{k + 1}")
    geom = pin.GeometryModel()
    owners = [0, 1, 2, 3, 3]  # base, j1, j2, j3 (two shapes)
    for i, j in enumerate(owners):
        geom.addGeometryObject(
            pin.GeometryObject(f"g{i}", j, 0, pin.SE3.Identity(), coal.Sphere(0.1))
        )
    geom.addCollisionPair(pin.CollisionPair(0, 2))  # existing pair: kept, not counted
    added = add_non_adjacent_pairs(model, geom)
    pairs = {(p.first, p.second) for p in geom.collisionPairs}
    # by hand: joints (a, b) with a ≠ b and neither the parent of the other
    expected = {
        (i, k)
        for i in range(5)
        for k in range(i + 1, 5)
        if owners[i] != owners[k] and abs(owners[i] - owners[k]) != 1
    }
    assert pairs == expected == {(0, 2), (0, 3), (0, 4), (1, 3), (1, 4)}
    assert added == len(expected) - 1
    assert add_non_adjacent_pairs(model, geom) == 0  # idempotent


_URDF = """<?xml version="1.0"?>
<robot name="two">
  <link name="base"/>
  <link name="l1">
    <inertial>
      <origin xyz="0 0 0.1" rpy="0 0 0"/>
      <mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>
    </inertial>
  </link>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.2" rpy="0 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="3"/>
  </joint>
</robot>
"""


def test_export_urdf_allow_infeasible_round_trip(tmp_path, caplog):
    from figaroh.tools.urdf_exporter import export_urdf

    nominal = tmp_path / "two.urdf"
    nominal.write_text(_URDF, encoding="utf-8")
    # triangle inequality violated (Izz > Ixx + Iyy), positive mass
    p10 = [1.0, 0.0, 0.0, 0.1, 0.1, 0.0, 0.1, 0.0, 0.0, 0.5]
    params = {f"{k}_j1": v for k, v in zip(pc.INERTIAL_KEYS, p10, strict=True)}
    with pytest.raises(ValueError, match="allow_infeasible=True"):
        export_urdf(nominal, params, output_path=tmp_path / "refused.urdf")
    assert not (tmp_path / "refused.urdf").exists()
    with caplog.at_level(logging.WARNING, logger="figaroh.tools.urdf_exporter"):
        out = export_urdf(nominal, params, output_path=tmp_path / "raw.urdf", allow_infeasible=True)
    assert "physically inconsistent" in caplog.text
    model = pin.buildModelFromUrdf(str(out))
    np.testing.assert_allclose(
        model.inertias[model.getJointId("j1")].toDynamicParameters(), p10, atol=1e-12
    )
    negative = dict(params, m_j1=-1.0, mx_j1=0.0, my_j1=0.0, mz_j1=0.0)
    with pytest.raises(ValueError, match="negative"):
        export_urdf(nominal, negative, output_path=tmp_path / "neg.urdf", allow_infeasible=True)
