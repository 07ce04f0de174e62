"""Physical consistency: pseudo-inertia, feasibility, LMI projection, CAD bounds, reconstruction.

Independent truths: a rigid body made of point masses has the pseudo-inertia
``Σ_i m_i [r_i; 1][r_i; 1]ᵀ`` (always ⪰ 0); the equality-constrained weighted
least-squares solution of the KKT system; random feasible bodies are never
closer to an estimate than its LMI projection (Monte-Carlo optimality).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import yaml

from figaroh.identification import _conic
from figaroh.identification import physical_consistency as pc
from figaroh.identification.cad_constraints import (
    CADConstraints,
    add_com_bounds,
    add_mass_bounds,
    add_symmetry_constraints,
    apply_cad_constraints_to_problem,
    bounds_from_urdf,
    build_cad_constraints_from_config,
)
from figaroh.identification.reconstruction import (
    BaseResult,
    _load_prior_from_urdf,
    _load_prior_from_yaml,
    reconstruct_full_parameters,
    reconstruct_theta_r,
    run_reconstruction,
)

SOLVERS = ["cvxopt"] + (["clarabel"] if "clarabel" in _conic.available_solvers() else [])
KEYS = pc.INERTIAL_KEYS


def point_cloud_p10(rng, n=6, spread=0.3, mass=(0.2, 2.0)):
    """p10 (origin-based) and pseudo-inertia of a cloud of point masses."""
    m = rng.uniform(*mass, size=n)
    r = rng.normal(0.1, spread, size=(n, 3))
    h = m @ r
    Io = sum(mi * (ri @ ri * np.eye(3) - np.outer(ri, ri)) for mi, ri in zip(m, r, strict=True))
    p10 = np.array([m.sum(), *h, Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]])
    P = sum(
        mi * np.outer(np.append(ri, 1.0), np.append(ri, 1.0)) for mi, ri in zip(m, r, strict=True)
    )
    return p10, P


def infeasible_p10():
    """Triangle inequality broken: Iyy > Ixx + Izz."""
    return np.array([2.0, 0.1, 0.0, 0.3, 0.01, 0.0, 0.5, 0.0, 0.0, 0.02])


# ---------------------------------------------------------------------------
# Conventions
# ---------------------------------------------------------------------------
def test_pseudo_inertia_equals_point_mass_integral_and_pinocchio():
    rng = np.random.default_rng(0)
    for _ in range(10):
        p10, P_truth = point_cloud_p10(rng)
        P = pc.pseudo_inertia_matrix_from_p10(p10)
        np.testing.assert_allclose(P, P_truth, rtol=0, atol=1e-12)
        np.testing.assert_allclose(pc._pseudo_inertia_explicit(p10), P_truth, atol=1e-12)
        L = pc.pseudo_inertia_vec_map()
        np.testing.assert_allclose((L @ p10).reshape(4, 4, order="F"), P_truth, atol=1e-12)
        rep = pc.check_p10_feasibility(p10)
        assert rep.status == "feasible" and rep.min_eig >= -1e-12
    # the p10 of a Pinocchio inertia (about the origin) agrees with our CoM conversion
    inertia = pin.Inertia(3.0, np.array([0.1, -0.2, 0.3]), np.diag([0.02, 0.03, 0.04]))
    np.testing.assert_allclose(
        pc.p10_from_mass_com_inertia(3.0, inertia.lever, inertia.inertia),
        inertia.toDynamicParameters(),
        atol=1e-14,
    )


def test_feasibility_messages_and_mass_tolerance():
    rep = pc.check_p10_feasibility(infeasible_p10())
    assert rep.status == "infeasible" and "pseudo-inertia min eigenvalue" in rep.message
    neg = infeasible_p10().copy()
    neg[0] = -1.0
    rep = pc.check_p10_feasibility(neg, mass_min=0.1)
    assert rep.status == "infeasible" and rep.min_eig == -np.inf
    assert rep.message == "mass -1.0 < mass_min 0.1"
    assert pc.is_feasible_link is pc.check_p10_feasibility
    tol = pc.mass_bound_tolerance(0.5)
    p = np.array([0.5, 0, 0, 0, 0.1, 0, 0.1, 0, 0, 0.1])
    p[0] = 0.5 - 1e-12
    assert pc.check_p10_feasibility(p, mass_min=0.5 - tol).status == "feasible"
    p[0] = 0.5 - 1e-6
    assert pc.check_p10_feasibility(p, mass_min=0.5 - tol).status == "infeasible"


@pytest.mark.parametrize("bad", [np.full(10, np.nan), np.ones(9), np.ones(11)])
def test_bad_p10_raises(bad):
    with pytest.raises(ValueError, match="p10"):
        pc.check_p10_feasibility(bad)


# ---------------------------------------------------------------------------
# Projection
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("solver", SOLVERS)
def test_projection_is_feasible_and_optimal(solver):
    p_hat = infeasible_p10()
    p, rep = pc.project_p10_lmi(p_hat, solver=solver)
    assert rep.status == "projected" and rep.solver == solver
    assert pc.check_p10_feasibility(p, psd_eig_tol=-1e-8).status == "feasible"
    w = pc._auto_weights(p_hat)
    d_star = np.sum((w * (p - p_hat)) ** 2)
    assert rep.objective == pytest.approx(d_star, rel=1e-9)
    # Monte-Carlo: no feasible body near the estimate is closer than the projection
    rng = np.random.default_rng(1)
    for _ in range(300):
        cand = p + rng.normal(scale=0.05, size=10) * np.maximum(np.abs(p), 1e-3)
        if pc.check_p10_feasibility(cand, mass_min=1e-6).status == "feasible":
            assert np.sum((w * (cand - p_hat)) ** 2) >= d_star * (1 - 1e-6)


def test_projection_solvers_agree_and_feasible_input_unchanged():
    if len(SOLVERS) < 2:
        pytest.skip("clarabel not installed")
    a, _ = pc.project_p10_lmi(infeasible_p10(), solver="cvxopt")
    b, _ = pc.project_p10_lmi(infeasible_p10(), solver="clarabel")
    np.testing.assert_allclose(a, b, atol=1e-6)
    p10, _ = point_cloud_p10(np.random.default_rng(2))
    q, rep = pc.project_p10_lmi(p10, solver="clarabel")
    np.testing.assert_allclose(q, p10, rtol=1e-6, atol=1e-8)
    assert rep.objective < 1e-10


def test_projection_bounds_and_weights():
    p, rep = pc.project_p10_lmi(
        infeasible_p10(),
        mass_bounds=(2.5, 3.0),
        com_bounds={"x": (0.2, 0.3)},
        weights=np.ones(10),
    )
    assert rep.status == "projected"
    assert 2.5 - 1e-7 <= p[0] <= 3.0 + 1e-7 and 0.2 - 1e-7 <= p[1] <= 0.3 + 1e-7
    with pytest.raises(ValueError, match="weights"):
        pc.project_p10_lmi(infeasible_p10(), weights=-np.ones(10))
    with pytest.raises(ValueError, match="axis"):
        pc.project_p10_lmi(infeasible_p10(), com_bounds={"w": (0, 1)})
    w = pc._auto_weights(np.array([2.0, 3.0, 4.0, 0.0, 1.0, 0, 0, 0, 0, 0]))
    np.testing.assert_allclose(w, [0.5, 0.2, 0.2, 0.2, 1, 1, 1, 1, 1, 1])


def test_robot_projection_reports_partial_on_impossible_bounds():
    rng = np.random.default_rng(3)
    good, _ = point_cloud_p10(rng)
    cad = CADConstraints()
    add_mass_bounds(cad, "c", m_min=0.1, m_max=0.5)
    projected, report = pc.project_robot_p10_lmi(
        {"a": good, "b": infeasible_p10(), "c": infeasible_p10()},
        mass_min=1.0,  # contradicts c's upper mass bound → solver infeasible
        cad_constraints=cad,
    )
    assert report.status == "partial"
    assert report.failed_links == ("c",) and report.projected_links == 2  # a count
    assert report.per_link["c"].status == "error"
    np.testing.assert_array_equal(projected["c"], infeasible_p10())  # unchanged on error


def test_missing_solver_raises_import_error(monkeypatch):
    def boom():
        raise ImportError("solver='clarabel' needs the optional Clarabel solver")

    monkeypatch.setattr(_conic, "_import_clarabel", boom)
    with pytest.raises(ImportError, match="clarabel"):
        pc.project_p10_lmi(infeasible_p10(), solver="clarabel")


def test_param_dict_helpers():
    params = {f"{k}_j{i}": float(i * 10 + n) for i in (1, 2) for n, k in enumerate(KEYS)}
    p10 = pc.p10_by_joint_from_param_dict(parameter_dict=params, joint_names=["j1", "j2"])
    np.testing.assert_array_equal(p10["j2"], np.arange(20, 30))
    out = pc.param_dict_with_p10_by_joint(parameter_dict=params, p10_by_joint={"j1": np.zeros(10)})
    assert out["Izz_j1"] == 0.0 and out["Izz_j2"] == 29.0 and params["Izz_j1"] == 19.0
    with pytest.raises(KeyError, match="Missing inertial parameter 'm_j3'"):
        pc.p10_by_joint_from_param_dict(parameter_dict=params, joint_names=["j3"])


# ---------------------------------------------------------------------------
# CAD constraints
# ---------------------------------------------------------------------------
def test_cad_constraints_building(ur10_urdf):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    cad = bounds_from_urdf(model)
    m0 = model.inertias[2].mass
    h0 = m0 * model.inertias[2].lever
    lo, hi = cad.mass_bounds["shoulder_lift_joint"]
    assert lo == pytest.approx(0.01 * m0) and hi == pytest.approx(100 * m0)
    zlo, zhi = cad.com_bounds["shoulder_lift_joint"]["z"]
    assert zlo == pytest.approx(h0[2] - 10 * abs(h0[2])) and zhi == pytest.approx(
        h0[2] + 10 * abs(h0[2])
    )
    assert cad.com_bounds["shoulder_lift_joint"]["x"] == pytest.approx((-1.0, 1.0))
    cfg = yaml.safe_load(
        """
        source: urdf
        mass_bounds: {elbow_joint: [0.5, 5.0], wrist_1_joint: {min: 1.0}}
        com_bounds: {elbow_joint: {x: [-0.2, 0.2]}}
        symmetry_pairs: [[wrist_1_joint, wrist_2_joint, [m, Ixx]]]
        """
    )
    cad = build_cad_constraints_from_config(cfg, model=model)
    assert cad.mass_bounds["elbow_joint"] == (0.5, 5.0)
    assert cad.mass_bounds["wrist_1_joint"] == (1.0, 1e9)
    assert cad.symmetry_pairs == [("wrist_1_joint", "wrist_2_joint", ("m", "Ixx"))]
    assert build_cad_constraints_from_config({}) is None
    with pytest.raises(ValueError, match="model"):
        build_cad_constraints_from_config({"source": "urdf"})
    with pytest.raises(ValueError, match="lower bound"):
        add_mass_bounds(CADConstraints(), "j", m_min=2, m_max=1)
    with pytest.raises(ValueError, match="axis"):
        add_com_bounds(CADConstraints(), "j", axis="q", h_min=0, h_max=1)
    with pytest.raises(ValueError, match="unknown keys"):
        build_cad_constraints_from_config({"mass_bound": {}})
    with pytest.raises(ValueError, match="unknown inertial keys"):
        add_symmetry_constraints(CADConstraints(), "a", "b", keys=["mass"])


def test_cad_rows_in_a_program():
    names = [f"{k}_a" for k in KEYS] + [f"{k}_b" for k in KEYS]
    cad = CADConstraints()
    add_mass_bounds(cad, "a", m_min=1.0, m_max=2.0)
    add_symmetry_constraints(cad, "a", "b", keys=["m"])
    add_com_bounds(cad, "missing", axis="x", h_min=0, h_max=1)  # skipped: not in names
    prog = _conic.ConeProgram(n=20, objective="norm", F=np.eye(20), g=np.full(20, 5.0))
    assert apply_cad_constraints_to_problem(prog, None, names, cad) == 3
    res = _conic.solve_program(prog)
    assert res.status == "optimal"
    assert res.x[0] == pytest.approx(2.0, abs=1e-6) and res.x[10] == pytest.approx(2.0, abs=1e-6)
    # the same constraints on a PICOS problem
    import picos

    P = picos.Problem()
    theta = picos.RealVariable("theta", 20)
    assert apply_cad_constraints_to_problem(P, theta, names, cad) == 3
    P.set_objective("min", picos.Norm(theta - 5.0))
    P.options.solver = "cvxopt"
    P.solve()
    x = np.asarray(theta.np).ravel()
    assert x[0] == pytest.approx(2.0, abs=1e-6) and x[10] == pytest.approx(2.0, abs=1e-6)


# ---------------------------------------------------------------------------
# Reconstruction
# ---------------------------------------------------------------------------
def test_nullspace_projection_solves_the_kkt_system():
    rng = np.random.default_rng(4)
    M = rng.normal(size=(4, 9))
    phi = rng.normal(size=4)
    theta0 = rng.normal(size=9)
    w = rng.uniform(0.5, 3.0, size=9)
    theta, res = reconstruct_theta_r(M, phi, theta0=theta0, weights=w)
    K = np.block([[np.diag(w), M.T], [M, np.zeros((4, 4))]])
    truth = np.linalg.solve(K, np.concatenate([w * theta0, phi]))[:9]
    np.testing.assert_allclose(theta, truth, atol=1e-10)
    np.testing.assert_allclose(res, M @ theta - phi, atol=1e-14)
    assert np.abs(res).max() < 1e-10
    big = w.copy()
    big[0] = 1e6  # a heavy weight pins the coordinate to its prior
    theta_b, _ = reconstruct_theta_r(M, phi, theta0=theta0, weights=big)
    assert abs(theta_b[0] - theta0[0]) < abs(theta[0] - theta0[0]) * 1e-3
    for kwargs, match in [
        ({"M": np.ones(3)}, "2-D"),
        ({"phi_base": np.ones(3)}, "phi_base"),
        ({"theta0": np.ones(3)}, "theta0"),
        ({"weights": -np.ones(9)}, "positive"),
    ]:
        args = {"M": M, "phi_base": phi, **kwargs}
        with pytest.raises(ValueError, match=match):
            reconstruct_theta_r(args.pop("M"), args.pop("phi_base"), **args)


def two_link_base(rng):
    """Random base mapping over two complete links and a feasible truth."""
    names = [f"{k}_{j}" for j in ("j1", "j2") for k in KEYS]
    truth = np.concatenate([point_cloud_p10(rng)[0], point_cloud_p10(rng)[0]])
    M = rng.normal(size=(12, 20))
    return M, M @ truth, names, truth


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed", [1, 4, 5])
def test_sdp_reconstruction_is_exact_and_physical(solver, seed):
    rng = np.random.default_rng(seed)
    M, _, names, truth = two_link_base(rng)
    M = M[:8]  # few identified directions: the LMIs become active at the optimum
    phi = M @ truth
    prior = truth + rng.normal(scale=0.5, size=20)  # far, partly infeasible prior
    res = reconstruct_full_parameters(
        BaseResult(M, phi, names),
        method="sdp",
        theta0=prior,
        joint_names=["j1", "j2"],
        solver=solver,
    )
    assert res.status == "ok" and res.effective_method == "sdp"
    assert res.base_residual_norm < 1e-6 * np.linalg.norm(phi)
    for j in range(2):  # judged with the default (strict) tolerance of the selection
        rep = pc.check_p10_feasibility(res.theta_r[10 * j : 10 * j + 10], psd_eig_tol=-1e-10)
        assert rep.status == "feasible", rep
    assert res.objective == pytest.approx(np.sum((res.theta_r - prior) ** 2), rel=1e-6)
    ns = reconstruct_full_parameters((M, phi, names), method="nullspace", theta0=prior)
    assert ns.effective_method == "nullspace" and ns.objective is None
    # the SDP optimum can only be farther from the prior than the unconstrained one
    assert res.objective >= np.sum((ns.theta_r - prior) ** 2) - 1e-9


def test_reconstruction_statuses(monkeypatch):
    rng = np.random.default_rng(6)
    M, phi, names, truth = two_link_base(rng)
    with pytest.raises(ValueError, match="Unsupported method"):
        reconstruct_full_parameters((M, phi, names), method="magic")
    with pytest.raises(ValueError, match="joint_names"):
        reconstruct_full_parameters((M, phi, names), method="sdp")
    # an impossible target: a negative total mass
    bad = reconstruct_full_parameters(
        (np.eye(20)[[0]] + np.eye(20)[[10]], np.array([-1.0]), names),
        method=" SDP ",
        joint_names=["j1", "j2"],
        theta0=truth,
    )
    assert bad.status == "error" and bad.effective_method == "nullspace"
    assert bad.base_residual_norm < 1e-12  # the nullspace solution is returned

    def missing(*args, **kwargs):
        raise ImportError("no solver")

    monkeypatch.setattr(_conic, "solve_program", missing)
    res = reconstruct_full_parameters(
        (M, phi, names), method="sdp", joint_names=["j1", "j2"], theta0=truth
    )
    assert res.status == "solver_missing" and res.effective_method == "nullspace"


def test_priors_from_urdf_and_yaml(ur10_urdf, tmp_path):
    model = pin.buildModelFromUrdf(str(ur10_urdf))
    names = ["m_elbow_joint", "mz_elbow_joint", "Ixx_elbow_joint", "fv_elbow_joint"]
    prior = _load_prior_from_urdf(model, names)
    p10 = model.inertias[3].toDynamicParameters()  # origin-based, like the regressor
    np.testing.assert_array_equal(prior, [p10[0], p10[3], p10[4], 0.0])
    path = tmp_path / "prior.yaml"
    path.write_text("m_elbow_joint: 4.0\nIxx_elbow_joint: 0.5\n")
    np.testing.assert_array_equal(_load_prior_from_yaml(path, names), [4.0, 0.0, 0.5, 0.0])
    path.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="mapping"):
        _load_prior_from_yaml(path, names)
    with pytest.raises(ValueError, match="prior_yaml_path"):
        reconstruct_full_parameters((np.eye(4), np.ones(4), names), prior_source="yaml")


def test_option_a_alternation_reaches_feasibility():
    rng = np.random.default_rng(7)
    names = [f"{k}_{j}" for j in ("j1", "j2") for k in KEYS]
    truth = np.concatenate([point_cloud_p10(rng)[0], point_cloud_p10(rng)[0]])
    M = np.eye(20)[:6]  # few identified directions: lots of freedom
    prior = dict(zip(names, truth + rng.normal(scale=0.5, size=20), strict=True))
    payload, full, applied = run_reconstruction(
        M,
        M @ truth,
        names,
        params_std_prior=prior,
        recon_cfg={"alternate_physical_consistency": True, "max_iters": 15},
        joint_names=["j1", "j2"],
    )
    assert applied and payload["alternation_iters"] == 14 and len(payload["pc_reports"]) == 14
    assert payload["base_residual_norm"] < 1e-9
    eigs = [v["min_eig"] for v in payload["final_feasibility"].values()]
    assert min(eigs) > -1e-3  # alternating projections converge towards the intersection
    with pytest.raises(ValueError, match="mode 'A'"):
        run_reconstruction(M, M @ truth, names, recon_cfg={"mode": "B"})
