"""figaroh 1.0.2 import surface: re-exports, module constants, lazy attributes, new helpers.

A 1.0.2 script imports names from the module paths 1.0.2 had, including names
a module merely imported from another one (``from
figaroh.identification.identification_tools import get_standard_parameters``)
and UPPER_CASE module constants (``MUJOCO_AVAILABLE``, ``DEFAULT_PRIORS``), and
reaches modules as attributes after ``import figaroh``. Checked here:

* each such name is importable from each 1.0.2 path, a re-export being the very
  object of the defining module (``is``) and a constant keeping its type and
  its documented value;
* the availability flags answer from :func:`importlib.util.find_spec` without
  importing the package, and the re-exports add no import cost (fresh
  interpreters);
* ``import figaroh`` imports no subpackage, and every public module is then
  reachable by attribute (fresh interpreter);
* the functions added for the surface behave as documented:
  ``legacy_config_error``, ``with_schema(obj, verdict)`` and
  ``deterministic_column_pivots`` (against LAPACK's own column-pivoted QR on
  tie-free matrices, ``numpy.linalg.matrix_rank`` and column permutations).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pkgutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg

from conftest import ROOT
from figaroh.tools.qrdecomposition import (
    TIE_RTOL,
    TOL_QR,
    ParameterNameError,
    QRDecomposer,
    deterministic_column_pivots,
)
from figaroh.tools.stages import record_stage, stages_as_dicts, with_schema
from figaroh.utils.config_parser import (
    LEGACY_CONFIG_MESSAGE,
    LEGACY_CONFIG_REMOVED_MESSAGE,
    legacy_config_error,
    require_unified_config,
)
from figaroh.utils.error_handling import MIGRATION_COMMAND, ConfigurationError

#: (1.0.2 module, name, module that defines the object here): ``module.name is home.name``.
REEXPORTS = [
    ("figaroh.calibration.calibration_tools", "ELAS_TPL", "figaroh.calibration.parameter"),
    ("figaroh.calibration.calibration_tools", "FULL_PARAMTPL", "figaroh.calibration.parameter"),
    ("figaroh.calibration.calibration_tools", "JOINT_OFFSETTPL", "figaroh.calibration.parameter"),
    ("figaroh.calibration.calibration_tools", "TOL_QR", "figaroh.tools.qrdecomposition"),
    ("figaroh.calibration.calibration_tools", "QRDecomposer", "figaroh.tools.qrdecomposition"),
    (
        "figaroh.calibration.calibration_tools",
        "build_baseRegressor",
        "figaroh.tools.qrdecomposition",
    ),
    ("figaroh.calibration.calibration_tools", "eliminate_non_dynaffect", "figaroh.tools.regressor"),
    ("figaroh.calibration.estimation", "BASE_TPL", "figaroh.calibration.parameter"),
    ("figaroh.calibration.estimation", "DEFAULTS", "figaroh.calibration._pipeline.priors"),
    ("figaroh.calibration.estimation", "GROUPS", "figaroh.calibration._pipeline.priors"),
    (
        "figaroh.identification.identification_tools",
        "add_custom_parameters",
        "figaroh.identification.parameter",
    ),
    (
        "figaroh.identification.identification_tools",
        "add_standard_additional_parameters",
        "figaroh.identification.parameter",
    ),
    (
        "figaroh.identification.identification_tools",
        "get_parameter_info",
        "figaroh.identification.parameter",
    ),
    (
        "figaroh.identification.identification_tools",
        "get_standard_parameters",
        "figaroh.identification.parameter",
    ),
    (
        "figaroh.identification.identification_tools",
        "reorder_inertial_parameters",
        "figaroh.identification.parameter",
    ),
    (
        "figaroh.identification.identification_tools",
        "unified_to_legacy_identif_config",
        "figaroh.identification.config",
    ),
    ("figaroh.optimal.contraints", "COLLISION_DEFAULTS", "figaroh.optimal.config"),
    ("figaroh.utils.config_parser", "LEGACY_CONFIG_REMOVED_MESSAGE", "figaroh.utils.config_parser"),
]

#: Where a re-export has another name in its home module.
HOME_NAME = {
    "GROUPS": "PRIOR_GROUPS",
    "LEGACY_CONFIG_REMOVED_MESSAGE": "LEGACY_CONFIG_MESSAGE",
}

_MUJOCO = importlib.util.find_spec("mujoco") is not None
_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

#: (module, constant, type, value) — the values of the calibration and
#: physical-consistency documentation.
CONSTANTS = [
    ("figaroh.backends", "MUJOCO_AVAILABLE", bool, _MUJOCO),
    ("figaroh.backends", "PINOCCHIO_AVAILABLE", bool, True),
    ("figaroh.backends.mujoco", "MUJOCO_AVAILABLE", bool, _MUJOCO),
    ("figaroh.backends.mujoco", "PINOCCHIO_AVAILABLE", bool, True),
    ("figaroh.backends.pinocchio", "PINOCCHIO_AVAILABLE", bool, True),
    (
        "figaroh.calibration.calibration_tools",
        "FULL_PARAMTPL",
        list,
        ["d_px", "d_py", "d_pz", "d_phix", "d_phiy", "d_phiz"],
    ),
    (
        "figaroh.calibration.calibration_tools",
        "JOINT_OFFSETTPL",
        list,
        ["offsetPX", "offsetPY", "offsetPZ", "offsetRX", "offsetRY", "offsetRZ"],
    ),
    (
        "figaroh.calibration.calibration_tools",
        "ELAS_TPL",
        list,
        ["k_PX", "k_PY", "k_PZ", "k_RX", "k_RY", "k_RZ"],
    ),
    ("figaroh.calibration.calibration_tools", "TOL_QR", float, 1e-8),
    (
        "figaroh.calibration.estimation",
        "BASE_TPL",
        list,
        ["base_px", "base_py", "base_pz", "base_phix", "base_phiy", "base_phiz"],
    ),
    (
        "figaroh.calibration.estimation",
        "DEFAULT_PRIORS",
        dict,
        {"translation": 1e-3, "rotation": 2e-3, "joint_offset": 2e-2, "prismatic_offset": 2e-3},
    ),
    (
        "figaroh.calibration.estimation",
        "GROUPS",
        tuple,
        ("translation", "rotation", "joint_offset", "prismatic_offset"),
    ),
    ("figaroh.identification.physical_consistency", "MASS_BOUND_RTOL", float, 1e-9),
    ("figaroh.utils.results_manager", "HAS_MATPLOTLIB", bool, _MATPLOTLIB),
]


def _fresh(code: str, *args: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()


# ---------------------------------------------------------------------------
# re-exports and constants
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(("module", "name", "home"), REEXPORTS)
def test_reexport_is_the_object_of_the_defining_module(module, name, home):
    mod = importlib.import_module(module)
    defining = importlib.import_module(home)
    value = getattr(mod, name)
    assert value is getattr(defining, HOME_NAME.get(name, name))
    # the import statement a 1.0.2 script writes
    namespace: dict = {}
    exec(f"from {module} import {name}", namespace)
    assert namespace[name] is value
    assert name in dir(mod)


@pytest.mark.parametrize(("module", "name", "kind", "value"), CONSTANTS)
def test_module_constant_keeps_its_type_and_value(module, name, kind, value):
    constant = getattr(importlib.import_module(module), name)
    assert type(constant) is kind
    assert constant == value


def test_default_priors_are_the_defaults_the_estimation_merges():
    from figaroh.calibration import estimation

    assert estimation.DEFAULT_PRIORS is estimation.DEFAULTS["priors"]
    assert tuple(estimation.DEFAULT_PRIORS) == estimation.GROUPS
    assert estimation.settings({})["priors"] == estimation.DEFAULT_PRIORS


def test_calibration_tol_qr_is_the_structural_selection_default():
    from figaroh.calibration import calibration_tools as ct

    default = inspect.signature(ct.calculate_base_kinematics_regressor).parameters["tol_qr"]
    assert ct.TOL_QR == default.default == TOL_QR


def test_mass_bound_rtol_is_the_slack_of_the_mass_test():
    from figaroh.identification import physical_consistency as pc

    assert pc.mass_bound_tolerance(0.5) == pc.MASS_BOUND_RTOL
    assert pc.mass_bound_tolerance(-2000.0) == 2000.0 * pc.MASS_BOUND_RTOL
    # a mass on its bound up to solver accuracy passes, a real violation does not
    assert 0.5 - 1e-12 >= 0.5 - pc.mass_bound_tolerance(0.5)
    assert 0.5 - 1e-6 < 0.5 - pc.mass_bound_tolerance(0.5)


def test_availability_flags_look_up_without_importing():
    out = _fresh(
        "import sys\n"
        "import figaroh.backends as b, figaroh.backends.mujoco as m\n"
        "import figaroh.utils.results_manager as rm\n"
        "print(b.MUJOCO_AVAILABLE, m.MUJOCO_AVAILABLE, rm.HAS_MATPLOTLIB)\n"
        "print('mujoco' in sys.modules, 'matplotlib' in sys.modules)\n"
    )
    assert out == [f"{_MUJOCO} {_MUJOCO} {_MATPLOTLIB}", "False False"]
    # an absent package (what a blocked import looks like) gives False
    out = _fresh(
        "import sys\n"
        "sys.modules['mujoco'] = None\n"
        "sys.modules['matplotlib'] = None\n"
        "import figaroh.backends as b, figaroh.backends.mujoco as m\n"
        "import figaroh.utils.results_manager as rm\n"
        "print(b.MUJOCO_AVAILABLE, m.MUJOCO_AVAILABLE, rm.HAS_MATPLOTLIB, "
        "b.list_backends()['mujoco'])\n"
    )
    assert out == ["False False False False"]


def test_identification_tools_reexports_are_the_defining_objects():
    """figaroh 1.0.2 scripts import these from identification_tools: the very objects."""
    import figaroh.identification.config as config
    import figaroh.identification.identification_tools as it
    import figaroh.identification.parameter as parameter

    for name in (
        "add_custom_parameters",
        "add_standard_additional_parameters",
        "get_parameter_info",
        "get_standard_parameters",
        "reorder_inertial_parameters",
    ):
        assert getattr(it, name) is getattr(parameter, name), name
        assert name in dir(it) and name in it.__all__
    assert it.unified_to_legacy_identif_config is config.unified_to_legacy_identif_config
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        importlib.import_module("figaroh.identification.identification_tools").no_such_name  # noqa: B018


# ---------------------------------------------------------------------------
# import figaroh → figaroh.<package>.<module>
# ---------------------------------------------------------------------------
def _public_modules() -> list[str]:
    import figaroh

    return [
        info.name
        for info in pkgutil.walk_packages(figaroh.__path__, "figaroh.")
        if not any(part.startswith("_") for part in info.name.split(".")[1:])
    ]


def test_import_figaroh_reaches_every_public_module_by_attribute():
    names = _public_modules()
    assert len(names) > 50 and "figaroh.tools.robot" in names
    out = _fresh(
        "import functools, json, sys\n"
        "import figaroh\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('figaroh.'))))\n"
        "bad = []\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    obj = functools.reduce(getattr, name.split('.')[1:], figaroh)\n"
        "    if obj is not sys.modules.get(name):\n"
        "        bad.append(name)\n"
        "print(json.dumps(bad))\n"
        "print(figaroh.tools.robot.Robot.__module__, "
        "figaroh.identification.base_identification.BaseIdentification.__name__)\n",
        json.dumps(names),
    )
    # ``import figaroh`` imports no figaroh module
    assert json.loads(out[0]) == []
    assert json.loads(out[1]) == []
    assert out[2] == "figaroh.tools.robot BaseIdentification"


def test_lazy_package_attributes_refuse_unknown_and_private_names():
    import figaroh
    import figaroh.tools

    with pytest.raises(AttributeError, match="No figaroh attribute no_such_package"):
        figaroh.no_such_package  # noqa: B018
    with pytest.raises(AttributeError, match="No figaroh.tools attribute _secret"):
        figaroh.tools._secret  # noqa: B018
    assert {"identification", "calibration", "tools", "utils"} <= set(dir(figaroh))
    assert {"robot", "regressor", "qrdecomposition"} <= set(dir(figaroh.tools))
    assert not hasattr(figaroh.tools, "no_such_module")


# ---------------------------------------------------------------------------
# legacy configuration error
# ---------------------------------------------------------------------------
def test_legacy_config_removed_message_names_the_migration_command():
    assert LEGACY_CONFIG_REMOVED_MESSAGE is LEGACY_CONFIG_MESSAGE
    assert MIGRATION_COMMAND in LEGACY_CONFIG_REMOVED_MESSAGE
    assert "python -m figaroh.utils.config_migration" in MIGRATION_COMMAND


def test_legacy_config_error_is_returned_for_raise(tmp_path):
    error = legacy_config_error()
    assert isinstance(error, ConfigurationError)
    assert str(error) == LEGACY_CONFIG_REMOVED_MESSAGE
    legacy = tmp_path / "ur10_config.yaml"
    text = str(legacy_config_error(config_file=legacy))
    assert text.startswith(f"{legacy} uses the legacy flat configuration format")
    assert LEGACY_CONFIG_REMOVED_MESSAGE in text
    expected = (
        f"--input {legacy} --output {tmp_path / 'ur10_config_unified.yaml'}"  # beside the file
    )
    assert expected in text
    # what require_unified_config raises on a legacy flat file is that error
    legacy.write_text("identification:\n  robot_params: [{q_lim_def: 1.57}]\n")
    with pytest.raises(ConfigurationError) as info:
        require_unified_config(legacy)
    assert str(info.value) == text


# ---------------------------------------------------------------------------
# with_schema(obj, verdict)
# ---------------------------------------------------------------------------
def test_with_schema_takes_the_verdict_by_its_102_name():
    run = SimpleNamespace()
    record_stage(run, "fit", "ok", metrics={"rmse": (0.1, "N·m")})
    record_stage(run, "data", "ok")
    verdict = {"passed": True, "stages": {"fit": "pass"}}
    out = with_schema(run, verdict=verdict)
    assert out == {
        "schema_version": 1,
        "passed": True,
        "stages": {"fit": "pass"},
        "stage_records": stages_as_dicts(run),
    }
    assert list(out) == ["schema_version", "passed", "stages", "stage_records"]
    assert [r["stage"] for r in out["stage_records"]] == ["data", "fit"]
    assert verdict == {"passed": True, "stages": {"fit": "pass"}}  # not modified
    assert with_schema(SimpleNamespace(), {})["stage_records"] == []
    assert list(inspect.signature(with_schema).parameters) == ["obj", "verdict"]


# ---------------------------------------------------------------------------
# deterministic_column_pivots
# ---------------------------------------------------------------------------
def _rank_deficient(rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """60 × 9 matrix of rank 6: columns 6-8 combine the others (distinct norms)."""
    base = rng.standard_normal((60, 6)) * np.array([1.0, 2.0, 3.5, 0.7, 5.0, 1.3])
    W = np.column_stack(
        [base, base[:, 0] - 2.0 * base[:, 3], 0.5 * base[:, 2], base[:, 1] + base[:, 4]]
    )
    names = [f"p{j}" for j in range(W.shape[1])]
    return W, names


def test_pivots_are_lapacks_on_a_tie_free_matrix():
    rng = np.random.default_rng(7)
    W = rng.standard_normal((80, 7)) * np.array([1.0, 4.0, 2.0, 9.0, 0.5, 3.0, 6.0])
    pivots = deterministic_column_pivots(W, [f"c{j}" for j in range(7)])
    _, _, lapack = scipy.linalg.qr(W, pivoting=True, mode="economic")
    assert pivots.tolist() == lapack.tolist()
    assert pivots.dtype.kind == "i"


def test_pivots_of_a_rank_deficient_matrix():
    rng = np.random.default_rng(3)
    W, names = _rank_deficient(rng)
    pivots = deterministic_column_pivots(W, names)
    assert sorted(pivots.tolist()) == list(range(W.shape[1]))  # a permutation
    rank = np.linalg.matrix_rank(W)
    assert rank == 6
    # the chosen columns are independent, and the QR of W[:, P] has exactly that rank
    assert np.linalg.matrix_rank(W[:, pivots[:rank]]) == rank
    R = scipy.linalg.qr(W[:, pivots], mode="r")[0]
    assert int(np.sum(np.abs(np.diag(R)) > TOL_QR)) == rank
    # the columns not chosen follow in name order
    rest = pivots[rank:].tolist()
    assert rest == sorted(rest, key=names.__getitem__)
    # the pivot order of the pivoting QR
    result = QRDecomposer().decompose(W, names, method="pivoting")
    assert result.pivot_order == pivots.tolist() and result.rank == rank


def test_pivots_do_not_depend_on_the_column_order():
    rng = np.random.default_rng(11)
    W, names = _rank_deficient(rng)
    pivots = deterministic_column_pivots(W, names)
    for _ in range(5):
        perm = rng.permutation(W.shape[1])
        permuted = deterministic_column_pivots(W[:, perm], [names[j] for j in perm])
        assert perm[permuted].tolist() == pivots.tolist()


def test_a_tie_goes_to_the_smallest_name():
    rng = np.random.default_rng(5)
    a = rng.standard_normal(40)
    other = 0.1 * rng.standard_normal(40)
    W = np.column_stack([a, other, a * (1.0 + 1e-9)])  # columns 0 and 2 tied within TIE_RTOL
    assert deterministic_column_pivots(W, ["zeta", "mid", "alpha"])[0] == 2
    assert deterministic_column_pivots(W, ["alpha", "mid", "zeta"])[0] == 0
    # without names, by column index; with no tie width, the larger norm wins
    assert deterministic_column_pivots(W)[0] == 0
    assert deterministic_column_pivots(W, ["alpha", "mid", "zeta"], tie_rtol=0.0)[0] == 2
    assert TIE_RTOL == 1e-6


def test_pivot_thresholds_absolute_and_relative():
    """Columns below the threshold are not chosen; they follow in name order."""
    rng = np.random.default_rng(2)
    W = rng.standard_normal((50, 4)) * np.array([10.0, 1.0, 1e-4, 1e-5])
    names = ["d", "c", "b", "a"]  # name order is the reverse of the norm order
    norm_a = float(np.linalg.norm(W[:, 0]))
    assert deterministic_column_pivots(W, names).tolist() == [0, 1, 2, 3]
    # tol between the norms of columns 1 and 2: columns 2, 3 follow by name (a, b)
    assert deterministic_column_pivots(W, names, tol=1e-2).tolist() == [0, 1, 3, 2]
    # relative threshold 0.5·‖w_0‖ keeps only column 0
    assert deterministic_column_pivots(W, names, relative_tol=0.5).tolist() == [0, 3, 2, 1]
    assert 0.5 * norm_a > float(np.linalg.norm(W[:, 1]))
    # the absolute tolerance stays a floor under a tiny relative one
    assert deterministic_column_pivots(W, names, tol=1e-2, relative_tol=1e-12).tolist() == [
        0,
        1,
        3,
        2,
    ]


def test_pivots_refuse_bad_input_naming_the_field():
    W = np.eye(3)
    with pytest.raises(ValueError, match="names has 2 names but W has 3 columns"):
        deterministic_column_pivots(W, ["a", "b"])
    with pytest.raises(ParameterNameError, match="names contains duplicated names: a"):
        deterministic_column_pivots(W, ["a", "a", "b"])
    with pytest.raises(ValueError, match="tol must be a non-negative finite float"):
        deterministic_column_pivots(W, tol=-1.0)
    with pytest.raises(ValueError, match="W must be a 2-D array"):
        deterministic_column_pivots(np.ones(3))
    with pytest.raises(ValueError, match="W contains NaN or inf"):
        deterministic_column_pivots(np.array([[1.0, np.nan]]))
