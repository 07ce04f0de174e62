"""The identification pipeline steps on records, without the BaseIdentification object.

Each step, called on records built from simulated UR10 data, reproduces the
orchestrator's numbers exactly; the steps alone recover known parameters; and
no module of the pipeline package depends on (or takes) the run object.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import load_example

_ur10 = load_example("ur10/identification.py", "ur10_identification")
CONFIG, UR10Identification, generate_ur10_data = (
    _ur10.CONFIG,
    _ur10.UR10Identification,
    _ur10.generate_ur10_data,
)
UR10_FS, UR10_FV, load_ur10 = _ur10.UR10_FS, _ur10.UR10_FV, _ur10.load_ur10

import figaroh.identification._pipeline as pipeline_pkg  # noqa: E402
from figaroh.identification import _metrics  # noqa: E402
from figaroh.identification._pipeline import (  # noqa: E402
    base_fit,
    conditioning,
    data_checks,
    export,
    fit_rows,
    physical,
    validation,
)
from figaroh.identification._pipeline.records import (  # noqa: E402
    FitOptions,
    PhysicalInputs,
)
from figaroh.identification.exceptions import IdentificationDataError  # noqa: E402
from figaroh.identification.identification_tools import base_param_from_standard  # noqa: E402
from figaroh.tools.regressor import build_regressor_basic  # noqa: E402

N = 2000
PIPELINE_DIR = Path(pipeline_pkg.__file__).parent
RUN_OBJECT_NAMES = {"identif", "ident", "identification", "run_object", "owner", "run", "obj"}


@pytest.fixture(scope="module")
def robot():
    return load_ur10()


@pytest.fixture(scope="module")
def data(tmp_path_factory, robot):
    return generate_ur10_data(
        tmp_path_factory.mktemp("pipe"), N, noise_std=0.5, seed=11, robot=robot
    )


def _solved(robot, train, **solve_kw):
    ident = UR10Identification(robot, CONFIG, data_dir=train)
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(**{"decimate": False, "plotting": False, **solve_kw})
    return ident


@pytest.fixture(scope="module")
def ident(robot, data):
    return _solved(robot, data[0])


def _settings(ident):
    return conditioning.make_settings(ident.identif_config, ident.model, ident.robot.q0, 1e-6)


def _signals(ident):
    return conditioning.signal_set(ident.processed_data, ident._sample_mask)


def _problem(ident, **options):
    opts = FitOptions(**{"decimate": False, **options})
    steps = fit_rows.row_steps(
        ident.dynamic_regressor,
        ident.standard_parameter,
        _signals(ident),
        _settings(ident),
        column_major=opts.decimate,
    )
    return fit_rows.build_fit_problem(steps, opts, list(ident.standard_parameter))


def test_conditioning_reproduces_processed_data(ident):
    settings = _settings(ident)
    processed = conditioning.condition_kinematics(ident.raw_data, ident.filter_config)
    q, v, a = conditioning.full_configuration(processed, settings, ident.num_samples)
    np.testing.assert_array_equal(q, ident.processed_data["positions"])
    np.testing.assert_array_equal(v, ident.processed_data["velocities"])
    np.testing.assert_array_equal(a, ident.processed_data["accelerations"])


def test_fit_rows_reproduce_the_solved_rows(ident):
    problem = _problem(ident)
    np.testing.assert_array_equal(problem.tau, ident._solve_tau)
    np.testing.assert_array_equal(problem.W, ident._solve_W)
    assert list(problem.idx_eliminated) == ident._idx_eliminated
    assert list(problem.active_params) == ident.active_parameters
    # decimated rows: the same step as the orchestrator's decimation method
    dec = _problem(ident, decimate=True, decimation_factor=10, apply_mask=False)
    tau, W = ident._apply_decimation(ident.regressor_reduced, 10)
    np.testing.assert_array_equal(dec.tau, tau)
    np.testing.assert_array_equal(dec.W, W)


def test_base_fit_quality_and_result_reproduce_the_orchestrator(ident):
    settings = _settings(ident)
    fit = base_fit.qr_base_fit(_problem(ident), ident.standard_parameter, settings)
    np.testing.assert_array_equal(fit.phi_base, ident.phi_base)
    assert list(fit.params_base) == ident.params_base
    quality = base_fit.fit_quality(fit)
    assert quality.rms_error == ident.rms_error
    assert quality.correlation == ident.correlation
    np.testing.assert_array_equal(quality.std_relative, ident.std_relative)
    result = export.base_result(
        base_fit.fit_results(fit), quality, ident.num_samples, ident.identif_config
    )
    for key, value in result.items():
        expected = ident.result[key]
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, expected)
        else:
            assert value == expected, key


def test_wls_steps_reproduce_solve_wls(robot, data, ident):
    wls = _solved(robot, data[0], wls=True)
    fit = base_fit.qr_base_fit(_problem(ident), ident.standard_parameter, _settings(ident))
    n_blocks = len(fit_rows.fit_blocks(_settings(ident)))
    variances = _metrics.joint_block_variances(fit.W_b, fit.tau_noised, fit.phi_base, n_blocks)
    _, diag = base_fit.variance_pair(variances, len(fit.tau_noised))
    phi, _ = base_fit.estimate_pair(
        _metrics.weighted_solve(fit.W_b, fit.tau_noised, diag), fit.W_b, fit.tau_noised, diag
    )
    refined = base_fit.with_estimate(fit, phi)
    np.testing.assert_array_equal(refined.phi_base, wls.phi_base)
    assert base_fit.fit_quality(refined).rms_error == wls.rms_error


def test_validation_step_reproduces_the_fallback_metrics(ident):
    settings = _settings(ident)
    fit = base_fit.qr_base_fit(_problem(ident), ident.standard_parameter, settings)
    x = validation.identified_standard_vector(
        ident.dynamic_regressor.shape[1],
        ident._idx_eliminated,
        fit.base_indices,
        fit.phi_base,
    )
    metrics = validation.validation_metrics(
        ident.dynamic_regressor,
        _signals(ident),
        np.fromiter(ident.standard_parameter.values(), dtype=float),
        x,
        settings,
        fit_rows.fit_blocks(settings),
        "identification_data_fallback",
    )
    expected = ident.result["validation_metrics"]
    assert metrics["rmse_identified"] == expected["rmse_identified"]
    assert metrics["rmse_nominal"] == expected["rmse_nominal"]
    assert metrics["per_joint"] == expected["per_joint"]
    assert validation.validation_stage(metrics)[0] == "fallback"


def test_reconstruction_step_reproduces_the_orchestrator(robot, data):
    solved = UR10Identification(robot, CONFIG, data_dir=data[0])
    solved.identif_config["reconstruction"] = {"enabled": True}
    solved.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        solved.solve(decimate=False, plotting=False)
    settings = _settings(solved)
    problem = _problem(solved)
    fit = base_fit.qr_base_fit(problem, solved.standard_parameter, settings)
    inputs = PhysicalInputs(
        config=solved.identif_config,
        model=solved.model,
        joint_names=tuple(str(j) for j in solved.model.names[1:]),
        standard_parameter=solved.standard_parameter,
        phi_base=fit.phi_base,
        M=fit.M,
        params_r=fit.params_r,
        W=problem.W,
        tau=problem.tau,
        idx_eliminated=problem.idx_eliminated,
        fit_joints=tuple(fit_rows.fit_joint_names(settings)),
    )
    entry, recon = physical.reconstruct(inputs, base_fit.fit_results(fit))
    assert entry == solved.result["reconstruction"]
    assert recon.as_dict() == solved._recon_result.as_dict()
    assert physical.physical_stage(solved.result, None)[0] == "ok"


def test_steps_alone_recover_known_parameters(robot, tmp_path):
    train, _ = generate_ur10_data(tmp_path, 4000, noise_std=0.0, seed=5, robot=robot)
    loader = UR10Identification(robot, CONFIG, data_dir=train)
    raw = loader.load_trajectory_data()
    cfg = loader.identif_config
    settings = conditioning.make_settings(cfg, robot.model, robot.q0, 1e-6)
    filt = {**loader.filter_config}
    filt["filter_params"] = {**filt["filter_params"], "median_padding": "nearest"}
    processed = conditioning.condition_kinematics(raw, filt)
    n = processed["positions"].shape[0]
    q, v, a = conditioning.full_configuration(processed, settings, n)
    signals = conditioning.signal_set(
        {"positions": q, "velocities": v, "accelerations": a, "torques": raw["torques"]}
    )
    loader.initialize_standard_parameters()
    W = build_regressor_basic(robot, q, v, a, cfg)
    problem = fit_rows.build_fit_problem(
        fit_rows.row_steps(W, loader.standard_parameter, signals, settings),
        FitOptions(),
        list(loader.standard_parameter),
    )
    fit = base_fit.qr_base_fit(problem, loader.standard_parameter, settings)
    theta = dict(loader.standard_parameter)
    for j, name in enumerate(cfg["active_joints"]):
        theta[f"fv_{name}"] = UR10_FV[j]
        theta[f"fs_{name}"] = UR10_FS[j]
    truth = np.asarray(base_param_from_standard(theta, list(fit.params_base)))
    err = np.abs(fit.phi_base - truth)
    assert err.max() < 0.02, (fit.params_base[int(err.argmax())], err.max())


def _function_params(fn: ast.AST) -> list:
    args = fn.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs] + [
        a.arg for a in (args.vararg, args.kwarg) if a is not None
    ]


def _pipeline_violations(tree: ast.Module, name: str) -> list:
    problems = []
    methods = {
        id(item)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [a.name for a in node.names]
            if "base_identification" in module or "base_identification" in names:
                problems.append(f"{name}:{node.lineno} imports base_identification")
        elif isinstance(node, ast.Import):
            if any("base_identification" in a.name for a in node.names):
                problems.append(f"{name}:{node.lineno} imports base_identification")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            params = [] if isinstance(node, ast.Lambda) else _function_params(node)
            if isinstance(node, ast.Lambda):
                params = [a.arg for a in node.args.args]
            for p in params:
                if p.lower() in RUN_OBJECT_NAMES or (p == "self" and id(node) not in methods):
                    problems.append(f"{name}:{node.lineno} parameter {p!r} (run object)")
            for inner in ast.walk(node):
                if inner is not node and isinstance(inner, (ast.Import, ast.ImportFrom)):
                    mod = getattr(inner, "module", None) or ""
                    mods = [mod] + [a.name for a in inner.names]
                    if any(m.startswith("figaroh") for m in mods):
                        problems.append(f"{name}:{inner.lineno} function-level figaroh import")
    return problems


def test_pipeline_modules_never_see_the_run_object():
    files = sorted(PIPELINE_DIR.glob("*.py"))
    assert {f.stem for f in files} >= {"records", "fit_rows", "base_fit", "physical"}
    problems = []
    for path in files:
        problems += _pipeline_violations(ast.parse(path.read_text()), path.name)
    assert problems == []


def test_the_ast_check_catches_violations():
    bad = ast.parse(
        "from figaroh.identification.base_identification import BaseIdentification\n"
        "def step(identif):\n    return identif.result\n"
        "def other(self):\n    from figaroh.tools import stages\n"
        "class Ok:\n    def method(self):\n        return 1\n"
    )
    problems = _pipeline_violations(bad, "bad.py")
    assert len(problems) == 4, problems
    assert list(pipeline_pkg.STEP_ORDER) == [
        "conditioning",
        "fit_rows",
        "base_fit",
        "export",
        "physical",
        "validation",
    ]


def test_the_orchestrator_keeps_its_run_record(ident):
    run = ident._run
    # the solve arguments the fit rows were built with (solve's defaults but decimate)
    assert run.options == FitOptions(False, 10, 0.001, apply_mask=True)
    assert (
        run.problem.W.shape[0] == ident.tau_noised.shape[0] == len(ident.result["torque processed"])
    )
    assert run.fit.phi_base is ident.phi_base
    assert run.quality.rms_error == ident.result["effort rmse"] == ident.rms_error
    assert run.quality.condition_number == ident.result["condition number"]
    np.testing.assert_array_equal(run.problem.tau, ident.result["torque processed"])
    assert run.validation is ident.result["validation_metrics"]
    assert run.physical.selected is None and run.settings.active_joints == tuple(
        ident.identif_config["active_joints"]
    )


# ---------------------------------------------------------------- data checks
def _records(n=50, joints=3, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None] / 100.0
    q = np.cumsum(rng.normal(size=(n, joints)), axis=0) * 0.01
    return {
        "timestamps": t,
        "positions": q,
        "velocities": np.gradient(q, t[:, 0], axis=0),
        "torques": rng.normal(size=(n, joints)),
    }


NAMES = ["a", "b", "c"]
BOUNDS = data_checks.magnitude_bounds(None)


def test_data_checks_pass_on_clean_records():
    checks = data_checks.training_checks(_records(), NAMES, 100.0, BOUNDS)
    assert not checks.failed and {f.check for f in checks.findings} == {
        "finite_values",
        "sample_mask",
        "joint_motion",
        "torque_variation",
        "sampling_interval",
        "magnitudes",
    }
    checks.raise_fatal()
    assert all(ok for ok, _ in checks.facts().values())


@pytest.mark.parametrize(
    ("edit", "check", "fatal", "phrase"),
    [
        (
            lambda r: (
                r["positions"].__setitem__((slice(None), 1), 0.5),
                r["velocities"].__setitem__((slice(None), 1), 0.0),
            ),
            "joint_motion",
            False,
            "joint b did not move",
        ),
        (
            lambda r: (
                r["positions"].__setitem__(slice(None), 0.5),
                r["velocities"].__setitem__(slice(None), 0.0),
            ),
            "joint_motion",
            True,
            "no joint moved",
        ),
        (
            lambda r: r["torques"].__setitem__(slice(None), 0.0),
            "torque_variation",
            True,
            "every torque is zero",
        ),
        (
            lambda r: r.__setitem__("timestamps", r["timestamps"] * 1e6),
            "sampling_interval",
            False,
            "microseconds",
        ),
        (
            lambda r: r["torques"].__setitem__((3, 2), 1e6),
            "magnitudes",
            False,
            "joint c reaches 1e\\+06",
        ),
        (
            lambda r: r["velocities"].__setitem__((3, 2), np.inf),
            "finite_values",
            True,
            "'velocities' contains NaN/inf",
        ),
    ],
)
def test_data_check_findings(edit, check, fatal, phrase):
    records = _records()
    edit(records)
    checks = data_checks.training_checks(records, NAMES, 100.0, BOUNDS)
    failed = {f.check: f for f in checks.failed}
    assert check in failed and failed[check].fatal is fatal
    assert re.search(phrase, failed[check].message)
    assert checks.facts()[f"data_check:{check}"] == (False, failed[check].message)
    if fatal:
        with pytest.raises(IdentificationDataError, match=phrase):
            checks.raise_fatal()
    else:
        checks.raise_fatal()


def test_mask_that_keeps_nothing_is_fatal():
    checks = data_checks.training_checks(_records(), NAMES, 100.0, BOUNDS, np.zeros(50, bool))
    with pytest.raises(IdentificationDataError, match="excludes every one of the 50 samples"):
        checks.raise_fatal()


def test_validation_independence_and_model_inertia():
    r = _records()
    assert not data_checks.validation_finding(r, dict(r)).passed
    part = {k: v[10:30] for k, v in r.items()}
    assert "overlaps" in data_checks.validation_finding(part, r).message
    assert data_checks.validation_finding(r, _records(seed=1)).passed
    eye = np.tile(np.eye(3), (2, 1, 1))
    assert data_checks.inertia_finding(np.ones(2), eye, ["j1", "j2"]).passed
    bad = eye.copy()
    bad[1, 0, 0] = -1.0
    msg = data_checks.inertia_finding(np.array([-1.0, 1.0]), bad, ["j1", "j2"]).message
    assert "j1 has mass -1 kg < 0" in msg and "j2 has an inertia" in msg


def test_magnitude_bounds_are_configurable():
    assert data_checks.magnitude_bounds({"max_abs_torque": 5})["max_abs_torque"] == 5.0
    with pytest.raises(ValueError, match="data_checks.max_abs_torque"):
        data_checks.magnitude_bounds({"max_abs_torque": -1})
    with pytest.raises(ValueError, match="data_checks must be a mapping"):
        data_checks.magnitude_bounds([1.0])


def test_data_checks_are_vectorised_and_cheap():
    big = _records(n=20000, joints=7)
    checks = data_checks.training_checks(big, list("abcdefg"), 100.0, BOUNDS)
    assert not checks.failed


def test_training_data_checks_are_recorded_and_clean(ident):
    assert not ident.data_checks.failed
    data = next(r for r in ident.stages if r.stage == "data")
    assert data.status == "ok" and data.metrics["failed_data_checks"]["value"] == 0


# ---------------------------------------------------------------- step order
def test_run_steps_follows_step_order():
    seen = []

    def step(name):
        return lambda value: seen.append((name, value)) or len(seen)

    names = ["validation", "fit_rows", "export"]  # given out of order
    out = pipeline_pkg.run_steps({n: step(n) for n in names}, value="start")
    assert seen == [("fit_rows", "start"), ("export", 1), ("validation", 2)] and out == 3
    with pytest.raises(ValueError, match="unknown pipeline step"):
        pipeline_pkg.run_steps({"decimation": step("decimation")})


# The step function each orchestrator call goes through (patched where the
# orchestrator looks it up), and the step it belongs to.
STEP_FUNCTIONS = {
    "condition_kinematics": "conditioning",
    "build_fit_problem": "fit_rows",
    "qr_base_fit": "base_fit",
    "custom_solver_fit": "base_fit",
    "base_result": "export",
    "physical_fit": "physical",
    "select": "physical",
    "validation_metrics": "validation",
}


def _spy_steps(monkeypatch):
    from figaroh.identification import base_identification as bi

    seen = []
    for fn_name, step in STEP_FUNCTIONS.items():
        original = getattr(bi, fn_name)

        def spy(*args, _original=original, _step=step, **kwargs):
            if not seen or seen[-1] != _step:
                seen.append(_step)
            return _original(*args, **kwargs)

        monkeypatch.setattr(bi, fn_name, spy)
    return seen


def test_the_orchestrator_runs_the_steps_in_step_order(robot, data, monkeypatch):
    seen = _spy_steps(monkeypatch)
    ident = UR10Identification(robot, CONFIG, data_dir=data[0])
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=True, plotting=False)
    assert seen == list(pipeline_pkg.STEP_ORDER)
    # the custom solver: the same steps after conditioning (its validation uses
    # the base columns of the last solve(), as in figaroh 1.0.2)
    seen.clear()
    ident.solve_with_custom_solver(method="ridge", alpha=1e-3, decimate=True, verbose=False)
    assert seen == list(pipeline_pkg.STEP_ORDER[1:])


def test_step_order_is_read_from_step_order(robot, data, monkeypatch):
    # STEP_ORDER is the one place the order is written: swapping two steps
    # there swaps them in solve() (validation then runs before the physical
    # step, which changes nothing on a plain least-squares fit)
    order = list(pipeline_pkg.STEP_ORDER)
    i, j = order.index("physical"), order.index("validation")
    order[i], order[j] = order[j], order[i]
    monkeypatch.setattr(pipeline_pkg, "STEP_ORDER", tuple(order))
    seen = _spy_steps(monkeypatch)
    ident = UR10Identification(robot, CONFIG, data_dir=data[0])
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(decimate=False, plotting=False)
    assert seen == order
