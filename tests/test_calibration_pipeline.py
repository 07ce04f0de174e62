"""The calibration pipeline: estimator registry, steps vs orchestrator, step purity.

* every registered estimator chooses a parameter set on a simulated UR10
  calibration (known joint-placement errors, noise-free) whose fit predicts
  held-out postures exactly (the structural one recovers the injected
  values themselves);
* :func:`estimate` refuses an unknown method, naming the registered ones;
* the steps, called directly on arrays and records, give bit-identical
  numbers to :class:`BaseCalibration`;
* no module of ``figaroh.calibration._pipeline`` imports the orchestrator or
  takes the run object as a parameter (checked with :mod:`ast`, the checker
  itself checked on a synthetic module).
"""

from __future__ import annotations

import ast
import copy
import warnings

import numpy as np
import pytest
from scipy.optimize import least_squares

from conftest import ROOT, load_example
from figaroh.calibration import _pipeline, estimation
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration._parameters import prepare_estimation, write_layout
from figaroh.calibration._pipeline import metrics, residuals, uncertainty, validation
from figaroh.calibration._pipeline.errors import EstimationError, UnknownEstimatorError
from figaroh.calibration._pipeline.estimators import ESTIMATORS, estimate, register, registered
from figaroh.calibration._pipeline.estimators._common import prefit
from figaroh.calibration._pipeline.layout import structural_layout
from figaroh.calibration._pipeline.observations import read_observations
from figaroh.calibration._pipeline.outliers import fit_with_outlier_exclusion
from figaroh.calibration._pipeline.records import (
    EstimationProblem,
    EstimationResult,
    EstimationSettings,
    MeasurementSpec,
)
from figaroh.calibration._pipeline.results import assemble_results
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.calibration.parameter import BASE_TPL
from figaroh.errors import FigarohError
from figaroh.tools.robot import Robot

ex = load_example("ur10/calibration.py", "ur10_calibration_example_pipeline")
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
PIPELINE = ROOT / "src" / "figaroh" / "calibration" / "_pipeline"

#: Extra estimation settings that keep the cross-validated methods short.
FAST = {
    "cv_subset": {"cv_folds": 3},
    "map_cv": {"cv_folds": 3, "cv_multipliers": [1.0, 10.0]},
}


@pytest.fixture(scope="module")
def robot(ur10_urdf):
    return Robot(str(ur10_urdf), load_geometry=False)


@pytest.fixture(scope="module")
def sim(robot, tmp_path_factory):
    d = tmp_path_factory.mktemp("pipeline_sim")
    return ex.simulate_ur10_calibration(d, robot=robot, n_train=40, n_test=30)


def _loaded(robot, train, **cfg):
    calib = BaseCalibration(robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False, **cfg)
    calib.set_data_file(train)
    calib.load_data_set()
    return calib


def _problem(calib, method):
    """The orchestrator's estimation problem of ``method`` (candidate layout loaded)."""
    if method != "structural":
        calib.calib_config["estimation"] = {"method": method, **FAST.get(method, {})}
        problem = prepare_estimation(
            calib.model,
            calib.calib_config,
            True,
            calib._objective_model.residual_model,
        )
        if method == "cv_subset":
            pre = prefit(problem)
            n_joint = sum(1 for n in pre.identifiable if n in set(problem.joint_names))
            st = EstimationSettings(
                **{**problem.settings.__dict__, "cv_sizes": (n_joint // 2, n_joint)}
            )
            problem = EstimationProblem(**{**problem.__dict__, "settings": st})
        return problem
    write_layout(calib.calib_config, structural_layout(calib.model, calib.data, calib.calib_config))
    calib._record_full_mapping()
    names = list(calib.calib_config["param_name"])
    frames = ct.frame_names(names)
    return EstimationProblem(
        names=tuple(names),
        frames=tuple(frames),
        joint_names=tuple(n for n in names if n not in frames),
        prior_groups={},
        settings=EstimationSettings(method="structural"),
        model=calib._objective_model.residual_model(),
    )


@pytest.mark.parametrize("method", sorted(ESTIMATORS))
def test_every_estimator_recovers_the_simulated_calibration(robot, sim, method):
    train, test, truth = sim
    calib = _loaded(robot, train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the default cost says it is the default
        problem = _problem(calib, method)
        result = estimate(problem, method=method)
        names = list(result.param_name)
        x0 = problem.model.initial_vector(names)
        fit = problem.model.fit(names, x0, result.prior_weights, None)
    assert set(names) <= set(problem.names)
    if not method.startswith("map"):  # the MAP methods keep them, their priors decide
        assert set(result.absorbed).isdisjoint(names)
    assert set(problem.frames) <= set(names)
    # the fitted model predicts held-out postures as the truth does
    held_out = _loaded(robot, test)
    cfg = dict(held_out.calib_config, param_name=names)
    predicted = ct.calc_updated_fkm(robot.model, robot.data, fit.x, held_out.q_measured, cfg)
    assert np.abs(predicted - held_out.PEE_measured).max() < 1e-6  # m / rad
    if method == "structural":
        est = dict(zip(names, fit.x, strict=True))
        assert set(est) == set(truth)
        assert max(abs(est[n] - v) for n, v in truth.items()) < 1e-6
        assert result.report is None and result.prior_weights is None
    else:
        assert result.report["method"] == method
        assert result.report["param_name"] == names
        if method.startswith("map"):
            assert result.prior_weights.shape == (len(names),)
            assert result.prior_noise is not None


def test_unknown_method_lists_the_registered_ones(robot, sim):
    calib = _loaded(robot, sim[0])
    problem = _problem(calib, "structural")
    with pytest.raises(UnknownEstimatorError) as err:
        estimate(problem, method="bayes")
    msg = str(err.value)
    assert "'bayes'" in msg
    assert all(name in msg for name in registered())
    assert isinstance(err.value, EstimationError)
    assert isinstance(err.value, ValueError) and isinstance(err.value, FigarohError)
    assert registered() == sorted(["structural", "excitation", "cv_subset", "map", "map_cv"])


# ---------------------------------------------------------------------------
# steps reproduce the orchestrator
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def solved(robot, tmp_path_factory):
    d = tmp_path_factory.mktemp("pipeline_noisy")
    train, test, _ = ex.simulate_ur10_calibration(
        d, robot=robot, n_train=40, n_test=30, pos_noise=5e-4, rot_noise=1e-3, seed=3
    )
    calib = BaseCalibration(robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.set_data_file(train)
    calib.set_data_file(test, validation=True)
    calib.initialize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.solve(outlier_threshold=1.2e-3, enable_logging=False)
    return calib, train, test


def _pure_fit(calib, spec):
    """The default weighted log-map objective built from the library functions alone.

    figaroh 1.0.2's default cost (``calc_updated_fkm``, log-map residuals,
    ``1/σ`` weights) and its least-squares call (``method="lm"``,
    ``max_nfev=1000``, default finite-difference Jacobian).
    """
    cfg = calib.calib_config
    model, data = calib.model, calib.data
    q, pee = calib.q_measured[: spec.n_samples], calib.PEE_measured
    w = ct.measurement_weights(cfg, spec.n_samples)

    def logmap(x):
        est = ct.calc_updated_fkm(model, data, x, q, cfg)
        return ct.logmap_residuals(pee, est, cfg)

    def res(x, jac):
        return residuals.measurement_residuals(model, data, x, q, pee, cfg, jacobian=jac)

    def fit(x, rows):
        def fun(v):
            r = np.array(logmap(v) * w, copy=True)
            r[rows] = 0.0
            return r

        return least_squares(fun, x, method="lm", max_nfev=1000)

    return fit, logmap, res


def test_steps_reproduce_the_orchestrator_exactly(solved, robot):
    calib, train, test = solved
    cfg = calib.calib_config
    N = calib.n_samples
    spec = MeasurementSpec.from_config(cfg, N)
    # observations
    obs = read_observations(train, robot.model, cfg, [])
    assert np.array_equal(obs.measured, calib.PEE_measured, equal_nan=True)
    assert np.array_equal(obs.q, calib.q_measured)
    # residual model
    r_step, J_step = residuals.measurement_residuals(
        robot.model,
        robot.data,
        calib.var_,
        calib.q_measured[:N],
        calib.PEE_measured,
        cfg,
        jacobian=True,
    )
    r_orch, J_orch = calib.measurement_residuals(calib.var_, jacobian=True)
    assert np.array_equal(r_step, r_orch) and np.array_equal(J_step, J_orch)
    # outlier loop on the pure objective
    fit, res_fn, res = _pure_fit(calib, spec)
    out = fit_with_outlier_exclusion(
        calib._objective_model.initial_vector(), fit, res_fn, calib.PEE_measured, spec, 1.2e-3, 3
    )
    assert out.excluded == calib.outlier_indices and out.excluded
    assert np.array_equal(out.excluded_rows, calib._excluded_rows)
    assert np.array_equal(out.result.x, calib.var_)
    # uncertainty
    n_obs = residuals.n_observations(calib.PEE_measured, out.excluded_rows)
    u = uncertainty.parameter_uncertainty(
        out.result.x, out.result.fun, out.result.jac, len(calib.PEE_measured), n_obs
    )
    assert np.array_equal(u.std_dev, calib.std_dev)
    assert np.array_equal(u.covariance, calib._C_param)
    # metrics (residuals of the fit as 1.0.2 evaluates them)
    r_fit = res_fn(calib.var_)
    res_arr = residuals.residual_array(r_fit, spec)
    ev = metrics.evaluation_metrics(
        calib.LM_result,
        res_arr,
        ct.measured_values(calib.PEE_measured, cfg, N),
        out.excluded,
        (u.std_dev, u.std_pctg),
        residuals.sample_position_errors(r_fit, spec),
        n_obs,
        1.2e-3,
        "2-point",
        uncertainty.correlated_pairs(u.covariance, cfg["param_name"]),
        cfg,
    )
    assert ev == calib.evaluation_metrics
    # validation
    val = _loaded(robot, test)
    qv, pv = val.q_measured, val.PEE_measured
    vspec = MeasurementSpec.from_config(cfg, len(qv))

    vcfg = dict(cfg, NbSample=len(qv))

    def arr(x):
        est = ct.calc_updated_fkm(robot.model, robot.data, x, qv, vcfg)
        return residuals.residual_array(ct.logmap_residuals(pv, est, vcfg), vspec)

    names = list(cfg["param_name"])
    frames = ct.frame_names(names)
    x_ff = validation.fit_frames_only(
        lambda x: res(x, True),
        names,
        frames,
        calib._objective_model.initial_vector(),
        ct.measurement_weights(cfg, N),
        out.excluded_rows,
    )
    vm = validation.validation_metrics(
        arr(np.zeros_like(calib.var_)),
        arr(calib.var_),
        arr(x_ff),
        np.asarray(cfg["measurability"]),
        metrics.dof_names(cfg),
        "validation_data",
    )
    expected = calib.results_data["validation_metrics"]
    assert vm.keys() == expected.keys()
    for k, v in vm.items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(v, expected[k]), k
        else:
            assert v == expected[k], k
    # results
    est = ct.calc_updated_fkm(robot.model, robot.data, calib.var_, calib.q_measured, cfg)
    rd = assemble_results(
        names, calib.var_, ev, res_arr, calib.PEE_measured, est, out.excluded, cfg, spec
    )
    for k, v in rd.items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(v, calib.results_data[k]), k
        else:
            assert v == calib.results_data[k] or v is calib.results_data[k], k


def test_step_order_names_the_step_modules():
    modules = {p.stem for p in PIPELINE.glob("*.py")}
    assert all(s in modules or s == "estimation" for s in _pipeline.STEP_ORDER)
    assert (PIPELINE / "estimators" / "__init__.py").is_file()
    assert len(set(_pipeline.STEP_ORDER)) == len(_pipeline.STEP_ORDER)


def test_structural_layout_does_not_modify_the_config(robot, sim):
    calib = _loaded(robot, sim[0])
    before = copy.deepcopy(calib.calib_config)
    layout = structural_layout(robot.model, robot.data, calib.calib_config)
    assert calib.calib_config.keys() == before.keys()
    assert calib.calib_config["param_name"] == before["param_name"]
    assert layout.param_name[:6] == tuple(BASE_TPL)
    assert layout.slice[1] - layout.slice[0] == len(layout.row_names)


# ---------------------------------------------------------------------------
# the steps never see the run object
# ---------------------------------------------------------------------------

RUN_OBJECT_NAMES = frozenset({"calib", "calibration", "calibrator", "run_object", "self"})


def run_object_violations(source: str, name: str = "<module>") -> list[str]:
    """Imports of the orchestrator and run-object parameters in ``source``."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [f"{name}: import {a.name}" for a in node.names if "base_calibration" in a.name]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if "base_calibration" in mod or any(a.name == "base_calibration" for a in node.names):
                out.append(f"{name}: from {mod} import ...")
    methods = set()
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        methods |= {
            id(f) for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        a = fn.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
            if arg is None or arg.arg not in RUN_OBJECT_NAMES:
                continue
            if arg.arg == "self" and id(fn) in methods:
                continue
            out.append(f"{name}:{fn.lineno} {getattr(fn, 'name', 'lambda')}({arg.arg}=...)")
    return out


def test_the_checker_sees_violations():
    bad = (
        "from figaroh.calibration.base_calibration import BaseCalibration\n"
        "import figaroh.calibration.base_calibration\n"
        "def step(calib, x): pass\n"
        "def other(*, calibration=None): pass\n"
        "def free(self): pass\n"
        "f = lambda calib: calib\n"
        "class Ok:\n"
        "    def method(self, x): pass\n"
    )
    found = run_object_violations(bad)
    assert len(found) == 6, found
    assert not any("method" in f for f in found)


def test_pipeline_modules_never_see_the_run_object():
    files = sorted(PIPELINE.rglob("*.py"))
    assert len(files) >= 12
    found = []
    for path in files:
        found += run_object_violations(path.read_text(), str(path.relative_to(PIPELINE)))
    assert not found, found


# ---------------------------------------------------------------------------
# the orchestrator calls the 1.0.2 hooks through the instance
# ---------------------------------------------------------------------------

HOOKS = (
    "load_data_set",
    "create_param_list",
    "eliminate_absorbed_parameters",
    "cost_function",
    "_compute_logmap_residuals",
    "apply_measurement_weighting",
    "solve_optimisation",
    "calc_stddev",
    "get_pose_from_measure",
    "initial_frame_guess",
)


def _recording(cls):
    """A subclass of ``cls`` whose hooks record their calls and defer to the base."""
    calls = []

    def wrap(name):
        base = getattr(cls, name)

        def hook(self, *args, **kwargs):
            calls.append(name)
            return base(self, *args, **kwargs)

        return hook

    return type("Recording", (cls,), {n: wrap(n) for n in HOOKS}), calls


def test_initialize_and_solve_call_every_hook_through_the_instance(robot, sim):
    cls, calls = _recording(BaseCalibration)
    calib = cls(robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.set_data_file(sim[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        calib.initialize()
        calib.solve(enable_logging=False)
    assert set(HOOKS) <= set(calls), sorted(set(HOOKS) - set(calls))
    assert calib.STATUS == "CALIBRATED"
    assert calib.evaluation_metrics["jacobian"] == "2-point"  # overridden cost hooks


def test_a_registered_estimator_is_selected_by_the_config(robot, sim):
    def frames_only(problem: EstimationProblem) -> EstimationResult:
        names = tuple(n for n in problem.names if n in set(problem.frames))
        return EstimationResult(names, (), report={"method": "frames_only"})

    register("frames_only", frames_only)
    try:
        calib = BaseCalibration(robot, str(CONFIG))
        calib.calib_config.update(
            known_baseframe=False, known_tipframe=False, estimation={"method": "frames_only"}
        )
        calib.set_data_file(sim[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            calib.initialize()
            calib.solve(enable_logging=False)
        assert calib.calib_config["param_name"] == ct.frame_names(calib.calib_config["param_name"])
        assert len(calib.var_) == 12 and calib.estimation_report["method"] == "frames_only"
    finally:
        ESTIMATORS.pop("frames_only")
    with pytest.raises(EstimationError, match="frames_only"):
        estimation.settings({"estimation": {"method": "frames_only"}})
