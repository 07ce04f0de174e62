"""figaroh's MINPACK ``lmder`` port against ``scipy.optimize.least_squares(method="lm")``.

Truth: scipy's own run of MINPACK on the same problem (same ``fun`` and
``jac``): the port must reach the same ``x`` (bit-identical here; required to
1e-10 relative), the same cost, and exactly the same ``nfev``, ``njev``,
``status`` and ``success``. Last, a default calibration ``solve()`` in a fresh
process must not import ``scipy.optimize``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import least_squares

from conftest import ROOT, load_example
from figaroh.tools._lm import LMBackendError, enorm, least_squares_lm, lm_backend
from figaroh.tools.robot import Robot

ex = load_example("ur10/calibration.py", "ur10_calibration_example")
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
RNG = np.random.default_rng(0)


def _rosenbrock():
    f = lambda x: np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]])  # noqa: E731
    j = lambda x: np.array([[-20 * x[0], 10.0], [-1.0, 0.0]])  # noqa: E731
    return f, j, np.array([-1.2, 1.0]), {}


def _exponential():
    t = np.linspace(0, 4, 50)
    y = 2.5 * np.exp(-1.3 * t) + 0.5 + 0.01 * RNG.standard_normal(50)

    def f(p):
        return p[0] * np.exp(-p[1] * t) + p[2] - y

    def j(p):
        e = np.exp(-p[1] * t)
        return np.c_[e, -p[0] * t * e, np.ones_like(t)]

    return f, j, np.array([1.0, 1.0, 0.0]), {}


def _rank_deficient():
    A = RNG.standard_normal((30, 5))
    A[:, 4] = 2 * A[:, 3]
    b = RNG.standard_normal(30)
    return (lambda x: A @ x - b), (lambda x: A), np.ones(5), {}


def _ill_conditioned():
    B = RNG.standard_normal((40, 8)) @ np.diag(10.0 ** -np.arange(8))
    P = np.vstack([np.eye(8), np.zeros((32, 8))])
    f = lambda x: B @ x + P @ (0.05 * x**3) - 1  # noqa: E731
    j = lambda x: B + P @ np.diag(0.15 * x**2)  # noqa: E731
    return f, j, np.ones(8), {}


def _badly_scaled():
    f = lambda x: np.array([x[0] - 1e6, x[1] - 2e-6, x[0] * x[1] - 2])  # noqa: E731
    j = lambda x: np.array([[1.0, 0.0], [0.0, 1.0], [x[1], x[0]]])  # noqa: E731
    return f, j, np.array([1.0, 1.0]), {}


def _extreme_scales():
    # residuals beyond MINPACK's giant (1.3e19 / m) and below its dwarf (3.8e-20) limits
    t = np.linspace(0.1, 1.0, 6)
    s = np.array([1e21, 1e-22, 1.0, 1e20, 1e-21, 1.0])

    def f(p):
        return s * (p[0] * np.exp(p[1] * t) - 1.0 - t)

    def j(p):
        e = np.exp(p[1] * t)
        return s[:, None] * np.c_[e, p[0] * t * e]

    return f, j, np.array([0.5, 0.5]), {}


def _max_nfev_reached():
    f, j, x0, _ = _rosenbrock()
    return f, j, x0, {"max_nfev": 5}


PROBLEMS = {
    "rosenbrock": _rosenbrock,
    "exponential": _exponential,
    "rank_deficient": _rank_deficient,
    "ill_conditioned": _ill_conditioned,
    "badly_scaled": _badly_scaled,
    "extreme_scales": _extreme_scales,
    "max_nfev_reached": _max_nfev_reached,
}


def _assert_same(ours, ref):
    np.testing.assert_allclose(ours.x, ref.x, rtol=1e-10, atol=0)
    assert np.array_equal(ours.x, ref.x)  # bit-identical today
    assert (ours.nfev, ours.njev, ours.status) == (ref.nfev, ref.njev, ref.status)
    assert ours.success == ref.success and ours.message == ref.message
    np.testing.assert_allclose(ours.cost, ref.cost, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(ours.fun, ref.fun, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(ours.jac, ref.jac, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(ours.optimality, ref.optimality, rtol=1e-9, atol=1e-300)
    assert np.array_equal(ours.active_mask, ref.active_mask)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_port_equals_scipy(name):
    f, j, x0, kw = PROBLEMS[name]()
    ref = least_squares(f, x0, jac=j, method="lm", **kw)
    _assert_same(least_squares_lm(f, x0, j, **kw), ref)


@pytest.fixture(scope="module")
def ur10_calib(tmp_path_factory, ur10_urdf):
    robot = Robot(str(ur10_urdf), load_geometry=False)
    d = tmp_path_factory.mktemp("lm_ur10")
    train, _, _ = ex.simulate_ur10_calibration(
        d, robot=robot, n_train=40, n_test=5, pos_noise=0.5e-3, rot_noise=1.7e-3, seed=1
    )
    calib = ex.UR10Calibration(robot, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.set_data_file(train)
    calib.initialize()
    calib._excluded_rows = np.zeros(0, dtype=int)
    return calib


def test_ur10_calibration_objective_equals_scipy(ur10_calib):
    c = ur10_calib
    x0 = c._initial_vector()
    ref = least_squares(c._objective, x0, jac=c._objective_jacobian, method="lm", max_nfev=1000)
    ours = least_squares_lm(c._objective, x0, c._objective_jacobian, max_nfev=1000)
    assert ref.success and ref.nfev > 2
    _assert_same(ours, ref)


def test_solve_same_result_with_either_backend(ur10_calib, monkeypatch):
    c = ur10_calib
    x0 = c._initial_vector()
    ours = c._least_squares(x0, "lm")
    monkeypatch.setenv("FIGAROH_LM_BACKEND", "scipy")
    ref = c._least_squares(x0, "lm")
    assert type(ref).__name__ == "OptimizeResult" and type(ours).__name__ != "OptimizeResult"
    _assert_same(ours, ref)


def test_enorm_scaled_path_is_the_euclidean_norm():
    x = np.array([1e-30, -3e-25, 2.0, 1e200, -1e199, 0.0, 4e-21])
    assert enorm(x) == pytest.approx(math.hypot(*x), rel=1e-15)  # numpy overflows here
    assert enorm(np.array([1e-30, 2e-30])) == pytest.approx(np.sqrt(5) * 1e-30, rel=1e-15)
    assert enorm(np.zeros(3)) == 0.0 and enorm(np.zeros(0)) == 0.0


def test_backend_switch(monkeypatch):
    monkeypatch.delenv("FIGAROH_LM_BACKEND", raising=False)
    assert lm_backend() == "figaroh"
    monkeypatch.setenv("FIGAROH_LM_BACKEND", "SciPy")
    assert lm_backend() == "scipy"
    monkeypatch.setenv("FIGAROH_LM_BACKEND", "minpack")
    with pytest.raises(LMBackendError, match="FIGAROH_LM_BACKEND"):
        lm_backend()
    with pytest.raises(ValueError):
        lm_backend()


def test_bad_inputs_match_scipy():
    f, j, _, _ = _rosenbrock()
    with pytest.raises(ValueError, match="number of residuals is less"):
        least_squares_lm(lambda x: f(x)[:1], np.zeros(2), lambda x: j(x)[:1])
    with pytest.raises(ValueError, match="not finite"):
        least_squares_lm(lambda x: f(x) * np.nan, np.zeros(2), j)
    with pytest.raises(ValueError, match="max_nfev"):
        least_squares_lm(f, np.zeros(2), j, max_nfev=0)


# Records which figaroh file asks for scipy.optimize (the import itself still runs).
SCRIPT = """
import sys, traceback, importlib.abc
sys.path.insert(0, {tests!r})
importers = set()


class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "scipy.optimize":
            files = [f.filename for f in traceback.extract_stack() if "figaroh" in f.filename]
            importers.add(files[-1].rsplit("/", 1)[-1] if files else "?")
        return None


sys.meta_path.insert(0, Spy())
from conftest import ROOT, load_example
ex = load_example("ur10/calibration.py", "ur10_calibration_example")
from figaroh.tools.robot import Robot
import tempfile
robot = Robot({urdf!r}, load_geometry=False)
d = tempfile.mkdtemp()
train, _, _ = ex.simulate_ur10_calibration(d, robot=robot, n_train=30, n_test=5, seed=2)
calib = ex.UR10Calibration(robot, str(ROOT / "config" / "ur10_unified_config.yaml"))
calib.calib_config.update(known_baseframe=False, known_tipframe=False)
calib.set_data_file(train)
calib.initialize()
x0 = calib._initial_vector()
calib._optimize_with_outlier_removal(x0, "lm", 3, None, False)
print("AFTER_FIT", "scipy.optimize" in sys.modules)
calib.solve(enable_logging=False)
assert calib.evaluation_metrics["optimization_success"]
print("IMPORTERS", sorted(importers))
print("AFTER_SOLVE", "scipy.optimize" in sys.modules)
"""


def test_default_solve_does_not_import_scipy_optimize(ur10_urdf):
    """Neither the LM fit nor the rest of ``solve()`` imports scipy.optimize."""
    env = {k: v for k, v in os.environ.items() if k != "FIGAROH_LM_BACKEND"}
    code = SCRIPT.format(tests=str(ROOT / "tests"), urdf=str(ur10_urdf))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "AFTER_FIT False" in out.stdout
    assert "IMPORTERS []" in out.stdout
    assert "AFTER_SOLVE False" in out.stdout
