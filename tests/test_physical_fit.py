"""Direct LMI physical fit, estimate selection and URDF export on simulated UR10 data.

Independent truths: Pinocchio's ``rnea`` on the exported URDF, the explicit
pseudo-inertia eigenvalues, the base fit's RMSE, the algebraic identities of
the QR reduction, and a phase-I certificate on a problem built to be infeasible.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ur10"))

from identification import CONFIG, UR10Identification, generate_ur10_data  # noqa: E402
from simulate import load_ur10, ur10_urdf  # noqa: E402

from figaroh.identification import _conic, _physical_comparator  # noqa: E402
from figaroh.identification import _pipeline_physical as pp  # noqa: E402
from figaroh.identification import physical_fit as pf  # noqa: E402
from figaroh.identification._pipeline import physical as physical_step  # noqa: E402
from figaroh.identification.base_identification import _physical_steps  # noqa: E402
from figaroh.identification.physical_consistency import (  # noqa: E402
    INERTIAL_KEYS,
    pseudo_inertia_matrix_from_p10,
)
from figaroh.identification.selection import (  # noqa: E402
    SelectedEstimate,
    physical_fit_config,
    select_estimate,
)
from figaroh.tools.identification_report import consistency_source_label  # noqa: E402

N = 2000
HAS_CLARABEL = "clarabel" in _conic.available_solvers()
BAD_BASE = "Iyy_shoulder_lift_joint + "  # Iyy + 0.37·(m_elbow + m_wrist1..3) ≥ 0 physically


@pytest.fixture(scope="module")
def robot():
    return load_ur10()


@pytest.fixture(scope="module")
def ident(robot, tmp_path_factory):
    train, _ = generate_ur10_data(
        tmp_path_factory.mktemp("pf"), N, noise_std=0.5, seed=3, robot=robot
    )
    obj = UR10Identification(robot, CONFIG, data_dir=train)
    obj.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        obj.solve(decimate=False, plotting=False)
    return obj


def run_pipeline(ident, **cfg):
    """Configure the physical options and run the pipeline steps on the solved object."""
    from figaroh.tools.stages import drop_stage

    for key in ("select_stage", "reconstruction", "physical_fit", "physical_consistency"):
        ident.identif_config.pop(key, None)
    ident.identif_config.update(cfg)
    for key in ("physical consistency", "reconstruction", "physical_fit", "selected"):
        ident.result.pop(key, None)
    ident.selected = ident._recon_result = ident._physical_fit = None
    for stage in ("physical", "export"):
        drop_stage(ident, stage)
    results = {
        "M": ident._M_matrix,
        "params_r": ident._params_r_for_recon,
        "phi_base": ident.phi_base,
    }
    _physical_steps(ident, results)
    ident._record_physical_stage()
    return ident.selected


def validation_estimate(ident):
    """``(values or None, estimate stage or None)`` the held-out validation predicts with."""
    return physical_step.validation_estimate(ident.identif_config, ident.selected)


def stage(ident, name):
    return next((s for s in ident.stages if s.stage == name), None)


def full_regressor_problem(ident, tau=None):
    names = list(ident.standard_parameter)
    keep = [i for i in range(len(names)) if i not in set(ident._idx_eliminated)]
    Y = np.zeros((ident._solve_W.shape[0], len(names)))
    Y[:, keep] = ident._solve_W
    prior = np.array([float(v) for v in ident.standard_parameter.values()])
    return Y, names, prior


# ---------------------------------------------------------------------------
# select_stage: physical_fit
# ---------------------------------------------------------------------------
def test_physical_fit_accepted_feasible_and_close_to_base_fit(ident):
    sel = run_pipeline(ident, select_stage="physical_fit")
    assert sel.accepted and sel.stage == "physical_fit" and sel.space == "standard"
    assert sel.psd_eig_tol == -1e-8 and sel.solvers == ["cvxopt"]
    assert ident.result["physical_fit"]["status"] == "accepted"
    assert stage(ident, "physical").status == "ok"
    # every link physically consistent, judged on the explicit pseudo-inertia
    for joint, p10 in sel.link_p10(list(ident.model.names[1:])).items():
        P = np.array(
            [
                [0.5 * (-p10[4] + p10[6] + p10[9]), -p10[5], -p10[7], p10[1]],
                [-p10[5], 0.5 * (p10[4] - p10[6] + p10[9]), -p10[8], p10[2]],
                [-p10[7], -p10[8], 0.5 * (p10[4] + p10[6] - p10[9]), p10[3]],
                [p10[1], p10[2], p10[3], p10[0]],
            ]
        )
        np.testing.assert_allclose(P, pseudo_inertia_matrix_from_p10(p10), atol=1e-12)
        assert np.linalg.eigvalsh(P)[0] >= -1e-8, joint
    # effort RMSE on the fit rows within 5 % of the unconstrained base fit
    kept = np.setdiff1d(np.arange(len(sel.values)), ident._idx_eliminated)
    resid = ident._solve_tau - ident._solve_W @ sel.values[kept]
    rmse = float(np.sqrt(np.mean(resid**2)))
    assert rmse == pytest.approx(ident.result["selected"]["effort_rmse_fit"], rel=1e-12)
    assert ident.rms_error <= rmse * (1 + 1e-9) <= 1.05 * ident.rms_error
    assert set(ident.result["selected"]["effort_rmse_fit_per_joint"]) == set(ident.fit_joints())
    values, estimate_stage = validation_estimate(ident)
    assert estimate_stage == "physical_fit" and values is sel.values
    np.testing.assert_array_equal(
        sel.predict(ident.dynamic_regressor), ident.dynamic_regressor @ sel.values
    )
    assert any(
        "Selected estimate: physical_fit" in line
        for line in physical_step.selection_report_lines(ident.result, ident.selected)
    )


def test_exported_urdf_reproduces_rigid_body_effort(ident, tmp_path):
    sel = run_pipeline(ident, select_stage="physical_fit")
    out = pp.export_selected_urdf(ident, ur10_urdf(), output_path=str(tmp_path / "ur10_pf.urdf"))
    assert Path(out).is_file() and stage(ident, "export").status == "ok"
    assert stage(ident, "export").artifacts == [out]
    model = pin.buildModelFromUrdf(out)
    data = model.createData()
    q, dq, ddq = (ident.processed_data[k] for k in ("positions", "velocities", "accelerations"))
    tau_rnea = np.array([pin.rnea(model, data, q[i], dq[i], ddq[i]) for i in range(len(q))])
    n_inertial = 10 * (model.njoints - 1)  # rigid body only: no friction / armature / offsets
    names = list(ident.standard_parameter)
    assert all(n.split("_", 1)[0] in INERTIAL_KEYS for n in names[:n_inertial])
    tau_fit = (ident.dynamic_regressor[:, :n_inertial] @ sel.values[:n_inertial]).reshape(
        model.nv, -1
    )
    err = np.abs(tau_rnea.T - tau_fit).max() / np.abs(tau_fit).max()
    assert err < 1e-6


@pytest.mark.skipif(not HAS_CLARABEL, reason="clarabel not installed")
def test_clarabel_backend_agrees_with_cvxopt(ident):
    sel_c = run_pipeline(ident, select_stage="physical_fit")
    rmse_c = ident.result["selected"]["effort_rmse_fit"]
    sel_k = run_pipeline(ident, select_stage="physical_fit", physical_fit={"solver": "clarabel"})
    assert sel_k.accepted and sel_k.solvers == ["clarabel"]
    assert ident.result["selected"]["effort_rmse_fit"] == pytest.approx(rmse_c, rel=1e-4)
    kept = np.setdiff1d(np.arange(len(sel_c.values)), ident._idx_eliminated)
    pred_c = ident._solve_W @ sel_c.values[kept]
    pred_k = ident._solve_W @ sel_k.values[kept]
    assert np.abs(pred_c - pred_k).max() < 1e-3 * np.abs(pred_c).max()


def test_sdp_sees_only_the_qr_reduced_problem(ident, monkeypatch):
    seen = []
    original = _conic.solve_program

    def spy(prog, **kwargs):
        seen.append(prog)
        return original(prog, **kwargs)

    monkeypatch.setattr(_conic, "solve_program", spy)
    Y, names, prior = full_regressor_problem(ident)
    p = pf.build_problem(Y, ident._solve_tau, names, list(ident.model.names[1:]), prior=prior)
    n = len(names)
    assert p.R.shape == (n, n) and p.Qt_tau.shape == (n,)
    rec = pf.solve_direct_effort_fit(p)
    assert rec.accepted and len(seen) == 1
    assert seen[0].F.shape == (n, n) and all(L.shape == (16, n) for L, _ in seen[0].lmis)
    # the reduction is exact: ‖Y θ − τ‖² − ‖R θ − Qᵀτ‖² does not depend on θ
    rng = np.random.default_rng(0)
    gaps = []
    for _ in range(3):
        th = prior + rng.normal(scale=0.1, size=n)
        gaps.append(np.sum((Y @ th - p.tau) ** 2) - np.sum((p.R @ th - p.Qt_tau) ** 2))
    assert np.ptp(gaps) < 1e-8 * np.sum(p.tau**2)
    # M_full maps standard to base parameters: Y[:, base] M θ = Y θ
    th = prior + rng.normal(scale=0.1, size=n)
    lhs = Y[:, list(p.base_indices)] @ (p.M_full @ th)
    assert np.abs(lhs - Y @ th).max() < 1e-8 * np.abs(Y @ th).max()
    ols = np.linalg.lstsq(Y[:, list(p.base_indices)], p.tau, rcond=None)[0]
    np.testing.assert_allclose(p.phi_ols, ols, rtol=1e-7, atol=1e-9)
    assert rec.effort_rmse_fit_per_joint.keys() == set(ident.model.names[1:])


def test_noise_free_physical_fit_matches_the_fit(robot, tmp_path):
    train, _ = generate_ur10_data(tmp_path, 1000, noise_std=0.0, seed=5, robot=robot)
    clean = UR10Identification(robot, CONFIG, data_dir=train)
    # Edge-repeating median: the trajectory moves at both ends, where the default
    # (figaroh 1.0.2) zero padding adds kinematic artefacts the rigid-body model cannot fit.
    clean.filter_config["filter_params"]["median_padding"] = "nearest"
    clean.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        clean.solve(decimate=False, plotting=False)
    sel = run_pipeline(clean, select_stage="physical_fit")
    assert sel.accepted and sel.psd_eig_tol == -1e-8
    assert clean.result["selected"]["effort_rmse_fit"] == pytest.approx(clean.rms_error, rel=1e-3)


def test_broken_solver_is_a_hard_reject(ident):
    sel = run_pipeline(
        ident, select_stage="physical_fit", physical_fit={"solver": "no_such_solver"}
    )
    assert not sel.accepted and sel.stage == "none" and sel.status == "rejected"
    assert "no_such_solver" in sel.reason and sel.values is None
    assert stage(ident, "physical").status == "failed"
    assert validation_estimate(ident) == (None, "fit")
    assert ident.result["physical_fit"]["status"] == "rejected"
    with pytest.raises(ValueError, match="rejected"):
        pp.export_selected_urdf(ident, ur10_urdf())


def test_physical_fit_enabled_without_selection(ident):
    sel = run_pipeline(ident, physical_fit={"enabled": True})
    assert sel is None and ident.selected is None and "selected" not in ident.result
    assert ident.result["physical_fit"]["status"] == "accepted"
    assert stage(ident, "physical").status == "ok"
    assert validation_estimate(ident) == (None, None)
    with pytest.raises(ValueError, match="base-parameter fit has no link inertials"):
        pp.export_selected_urdf(ident, ur10_urdf())
    assert stage(ident, "export").status == "failed"


# ---------------------------------------------------------------------------
# A case with no physically feasible answer
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["nullspace", "sdp"])
def test_infeasible_reconstruction_is_rejected_and_not_exported(ident, tmp_path, method):
    k = next(i for i, e in enumerate(ident.params_base) if e.startswith(BAD_BASE))
    saved = ident.phi_base
    try:
        ident.phi_base = saved.copy()
        ident.phi_base[k] = -5.0  # Iyy_shoulder_lift + 0.37·Σ downstream masses < 0
        sel = run_pipeline(ident, select_stage="reconstruction", reconstruction={"method": method})
    finally:
        ident.phi_base = saved
    assert sel.status == "rejected" and sel.stage == "none" and sel.values is not None
    assert "infeasible links: " in sel.reason
    assert "shoulder_lift_joint (pseudo-inertia min eigenvalue" in sel.reason
    assert "mass_min" in sel.reason or "pseudo-inertia" in sel.reason
    if method == "sdp":  # the SDP is infeasible; its nullspace fallback is not substituted
        assert "reconstruction status error" in sel.reason
        assert "requested sdp but nullspace was used" in sel.reason
        assert stage(ident, "physical").status == "fallback"
    else:
        assert stage(ident, "physical").status == "failed"
    out = tmp_path / "never.urdf"
    with pytest.raises(ValueError, match="export failed: the requested reconstruction estimate"):
        pp.export_selected_urdf(ident, ur10_urdf(), output_path=str(out))
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert stage(ident, "export").status == "failed"
    assert validation_estimate(ident) == (None, "fit")


@pytest.mark.parametrize("method", ["sdp", "auto"])
def test_reachable_base_parameters_give_an_accepted_reconstruction(ident, method):
    names = list(ident.standard_parameter)
    rng = np.random.default_rng(1)
    theta = np.array([float(ident.standard_parameter[n]) for n in ident._params_r_for_recon])
    phi = ident._M_matrix @ theta  # the nominal robot's base parameters, slightly perturbed:
    saved = ident.phi_base  # reachable by a physically consistent robot
    try:
        ident.phi_base = phi + 1e-3 * rng.standard_normal(phi.size) * np.abs(phi)
        sel = run_pipeline(ident, select_stage="reconstruction", reconstruction={"method": method})
    finally:
        ident.phi_base = saved
    assert ident.result["reconstruction"]["status"] == "ok"
    assert sel.accepted and sel.stage == "reconstruction" and sel.effective_method == "sdp"
    assert sel.reason == "sdp reconstruction, all links feasible"
    assert sel.base_residual_rel <= 1e-6 and len(sel.values) == len(names)
    assert all(v["ok"] for v in sel.feasibility.values())
    assert stage(ident, "physical").status == "ok"


def test_diagnose_exact_on_an_infeasible_problem(ident):
    Y, names, prior = full_regressor_problem(ident)
    bad = prior.copy()
    masses = sum(prior[names.index(f"m_{j}")] for j in ("elbow_joint", "wrist_1_joint"))
    masses += sum(prior[names.index(f"m_{j}")] for j in ("wrist_2_joint", "wrist_3_joint"))
    bad[names.index("Iyy_shoulder_lift_joint")] = -5.0 - 0.374544 * masses
    p = pf.build_problem(
        Y, Y @ bad, names, list(ident.model.names[1:]), prior=prior, theta_truth=bad
    )
    exact = pf.solve_exact_reconstruction(p)
    assert not exact.accepted and exact.theta is None and not exact.fallback_used
    records = pf.diagnose_exact(p)
    assert [r.objective for r in records] == [
        "D0:reconstruct_full_parameters_sdp",
        "D1:phase1",
        "D2:schur_norm",
        "D2:scaling_off",
        "D2:params_r_only",
        "D2:bounds_off",
        "D3:relaxed_equality",
    ]
    d0, d1 = records[0], records[1]
    assert d0.solver_status == "error" and d0.fallback_candidate is not None and d0.theta is None
    assert d1.notes["label"] == "infeasible (certificate s*<0)" and d1.objective_value < 0
    assert d1.theta is None and not d1.accepted
    assert not any(r.accepted for r in records[:6])
    d3 = records[6]
    assert d3.theta is not None and d3.base_residual["rel"] > 1e-3  # equality cannot hold
    for r in records:
        json.dumps(r.as_dict(), allow_nan=False)
        assert r.as_dict()["fallback_used"] is False and r.inputs_hash == records[0].inputs_hash


# ---------------------------------------------------------------------------
# Smaller contracts
# ---------------------------------------------------------------------------
def test_per_link_projection_and_records(ident):
    Y, names, prior = full_regressor_problem(ident)
    p = pf.build_problem(
        Y,
        ident._solve_tau,
        names,
        list(ident.model.names[1:]),
        prior=prior,
        policy=pf.PhysicalPolicy(mass_ratio_bounds=(0.5, 2.0)),
    )
    rec = pf.solve_per_link_projection(p)
    assert rec.solver_status == "optimal" and rec.accepted
    for joint, v in rec.feasibility.items():
        m0 = prior[names.index(f"m_{joint}")]
        assert 0.5 * m0 - 1e-6 <= v["mass"] <= 2.0 * m0 + 1e-6
    d = rec.as_dict()
    assert d["fallback_used"] is False and "notes" not in d and isinstance(d["theta"], list)
    rec.objective_value = float("nan")
    assert rec.as_dict()["objective_value"] is None
    assert "SolveRecord(objective='per_link_projection'" in repr(rec)
    assert "ComparatorProblem(rows=" in repr(p)


def test_build_problem_validation_and_extras(ident):
    Y, names, prior = full_regressor_problem(ident)
    joints = list(ident.model.names[1:])
    with pytest.raises(ValueError, match="inconsistent"):
        pf.build_problem(Y[:-1], ident._solve_tau, names, joints, prior=prior)
    with pytest.raises(ValueError, match="not a column"):
        pf.build_problem(
            Y,
            ident._solve_tau,
            names,
            joints,
            prior=prior,
            extras=pf.FixedExtras(("fv_nope",), (1.0,), "declared"),
        )
    with pytest.raises(ValueError, match="source"):
        pf.FixedExtras(("a",), (1.0,), "guess")
    with pytest.raises(ValueError, match="names but"):
        pf.FixedExtras(("a", "b"), (1.0,))
    with pytest.raises(ValueError, match="row_weight"):
        pf.build_problem(
            Y, ident._solve_tau, names, joints, prior=prior, row_weight=-np.ones(len(Y))
        )
    fv = [n for n in names if n.startswith("fv_")]
    truth_fv = np.array([8.0, 8.0, 5.0, 1.5, 1.5, 1.5])  # simulation friction
    p = pf.build_problem(
        Y,
        ident._solve_tau,
        names,
        joints,
        prior=prior,
        extras=pf.FixedExtras(tuple(fv), tuple(truth_fv), "truth"),
    )
    assert len(p.params_std) == len(names) - 6 and not set(fv) & set(p.params_std)
    np.testing.assert_allclose(
        p.tau, ident._solve_tau - Y[:, [names.index(n) for n in fv]] @ truth_fv
    )
    assert _physical_comparator.build_problem is pf.build_problem
    assert _physical_comparator.SolveRecord is pf.SolveRecord


def test_selection_contracts(ident):
    ident.identif_config.pop("select_stage", None)
    with pytest.raises(ValueError, match="nothing to select"):
        select_estimate(ident)
    ident.identif_config["select_stage"] = "projected"
    with pytest.raises(ValueError, match="not selectable"):
        select_estimate(ident)
    ident.identif_config.pop("select_stage")
    ident.identif_config["physical_fit"] = {"solver": "clarabel"}
    cfg = physical_fit_config(ident)
    assert cfg["solver"] == "clarabel" and cfg["mass_min"] == 1e-6 and "second_solver" in cfg
    ident.identif_config.pop("physical_fit")
    est = SelectedEstimate("none", "physical_fit", "rejected", "x", "joint")
    with pytest.raises(ValueError, match="standard-space"):
        est.link_p10(["a"])
    with pytest.raises(ValueError, match="no estimate values"):
        est.predict(np.ones((2, 2)))
    assert est.parameter_dict() == {} and not est.accepted
    d = SelectedEstimate("fit", "fit", "accepted", "r", "standard", ["a"], np.ones(1)).as_dict()
    assert d["values"] == [1.0] and d["feasibility"] == {}
    # reconstruction needs the QR products (absent e.g. after solve_with_custom_solver)
    ident.identif_config["select_stage"] = "reconstruction"
    out = ident._apply_reconstruction_if_enabled({"phi_base": ident.phi_base})
    assert out == {
        "enabled": True,
        "status": "skipped",
        "reason": "M matrix not available; run solve() first",
    }
    ident.identif_config.pop("select_stage")
    assert ident._apply_reconstruction_if_enabled({}) is None  # not enabled, not selected
    sel = run_pipeline(ident, reconstruction={"enabled": True})
    rec = ident.result["reconstruction"]
    assert sel is None and rec["status"] == "ok" and rec["effective_method"] == "nullspace"
    assert set(rec) == {
        "enabled",
        "status",
        "method",
        "effective_method",
        "base_residual_norm",
        "objective",
        "theta_r_dict",
        "params_r",
    }
    assert rec["base_residual_norm"] < 1e-8 * np.linalg.norm(ident.phi_base)


def test_physical_consistency_checks_the_reconstructed_fit_not_the_nominal(ident, monkeypatch):
    # nothing identified to check: the nominal (CAD) parameters are not projected
    run_pipeline(ident, physical_consistency={"enabled": True})
    pc_res = ident.result["physical consistency"]
    assert pc_res == {"enabled": True, "status": "skipped", "reason": "no parameter_dict available"}
    assert stage(ident, "physical").status == "not_run"
    assert "reconstruction" not in ident.result
    # with a reconstruction: the reconstructed fit is checked, and reconstructed once
    from figaroh.identification import reconstruction as rec_mod

    calls = []
    real = rec_mod.reconstruct_full_parameters

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(rec_mod, "reconstruct_full_parameters", counting)
    run_pipeline(ident, physical_consistency={"enabled": True}, reconstruction={"enabled": True})
    assert len(calls) == 1
    pc_res = ident.result["physical consistency"]
    assert pc_res["source"] == "reconstruction"
    assert consistency_source_label(pc_res) == "reconstructed fit"
    theta = ident._recon_result.as_dict()
    raw = pc_res["raw_parameters"]
    for name, value in ident.standard_parameter.items():
        assert raw[name] == (theta[name] if name in theta else float(value))
    # the raw reconstruction differs from the nominal values it started from
    assert any(abs(theta[n] - ident.standard_parameter[n]) > 1e-9 for n in theta)
    # every link verdict matches the explicit pseudo-inertia of the reconstructed p10
    for joint, verdict in pc_res["feasibility"].items():
        p10 = [raw[f"{k}_{joint}"] for k in INERTIAL_KEYS]
        lam = np.linalg.eigvalsh(pseudo_inertia_matrix_from_p10(p10))[0]
        feasible = lam >= -1e-10 and p10[0] >= 1e-6
        assert verdict["status"] == ("feasible" if feasible else "infeasible")
    if pc_res["status"] != "already_feasible":
        proj = pc_res["projected_parameters"]
        assert pc_res["projection"]["projected_links"] == len(pc_res["feasibility"]) - len(
            pc_res["projection"]["failed_links"]
        )
        for joint in pc_res["feasibility"]:
            p10 = [proj[f"{k}_{joint}"] for k in INERTIAL_KEYS]
            assert np.linalg.eigvalsh(pseudo_inertia_matrix_from_p10(p10))[0] >= -1e-8
    assert ident.result["reconstruction"]["status"] == "ok"
    params = dict(ident.standard_parameter)
    params["Izz_wrist_3_joint"] = 1.0  # triangle inequality broken
    out = ident._apply_physical_consistency_if_enabled({"parameter_dict": params})
    assert out["status"] == "ok" and out["source"] == "identif_results.parameter_dict"
    assert out["feasibility"]["wrist_3_joint"]["status"] == "infeasible"
    assert out["projection"]["per_link"]["wrist_3_joint"]["status"] == "projected"
    proj = out["projected_parameters"]
    p10 = [proj[f"{k}_wrist_3_joint"] for k in INERTIAL_KEYS]
    assert np.linalg.eigvalsh(pseudo_inertia_matrix_from_p10(p10))[0] >= -1e-8
    assert proj["Izz_wrist_3_joint"] < 1.0  # moved towards the physically consistent set
    for joint in list(ident.model.names[1:])[:-1]:  # feasible links: projection is identity
        for k in INERTIAL_KEYS:
            assert proj[f"{k}_{joint}"] == pytest.approx(params[f"{k}_{joint}"], rel=1e-5, abs=1e-7)
    ident.identif_config["physical_consistency"] = {"enabled": False}
    assert ident._apply_physical_consistency_if_enabled({}) is None
