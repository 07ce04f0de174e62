"""Each identification and calibration default is written once, in its settings record.

Independent truths: figaroh 1.0.2's default values, an ``ast`` scan of the
library for every other place a default of the same name is written, and
the readers themselves (signatures, loader, command line) compared with the
record.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest

from figaroh.calibration import _measurements
from figaroh.calibration import config as calibration_config
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.calibration.settings import DEFAULT_SETTINGS as CALIBRATION
from figaroh.calibration.settings import CalibrationSettings
from figaroh.cli import workflows
from figaroh.cli.main import build_parser
from figaroh.identification._pipeline.records import FitOptions
from figaroh.identification.base_identification import SOLVE_DEFAULTS, BaseIdentification
from figaroh.identification.settings import DEFAULT_SETTINGS as IDENTIFICATION
from figaroh.identification.settings import IdentificationSettings
from figaroh.integration.api import RobotIdentificationSystem
from figaroh.utils._legacy_unified import legacy_calibration_to_unified

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "figaroh"
SETTINGS_MODULES = {
    PACKAGE / "identification" / "settings.py",
    PACKAGE / "calibration" / "settings.py",
}

#: ``(name, figaroh 1.0.2 default)`` of every default the records hold a number for.
DEFAULTS = (
    ("decimation_factor", 10),
    ("zero_tolerance", 0.001),
    ("max_iterations", 3),
    ("outlier_threshold", 0.05),
    ("position", 0.001),  # measurement_std.position [m]
    ("orientation", 0.01),  # measurement_std.orientation [rad]
)


def _number(node: ast.AST | None) -> float | None:
    """The number ``node`` writes (a constant, or a branch of ``a if c else b``)."""
    if isinstance(node, ast.IfExp):
        return _number(node.body) if _number(node.body) is not None else _number(node.orelse)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def default_sites(tree: ast.AST) -> list[tuple[str, float, int]]:
    """``(name, value, line)`` of every numeric default written in ``tree``.

    A default is: a parameter default (``def f(name=10)``), a class-level
    annotated value (``name: int = 10``), a dict entry (``{"name": 10}``), a
    ``mapping.get("name", 10)`` fallback and an ``add_argument("--name",
    default=10)`` option.
    """
    found: list[tuple[str, float, int]] = []

    def add(name: str, value_node: ast.AST | None) -> None:
        value = _number(value_node)
        if value is not None and value_node is not None:
            found.append((name, value, value_node.lineno))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            for arg, default in zip(
                positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
            ):
                add(arg.arg, default)
            for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                add(arg.arg, default)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            add(node.target.id, node.value)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    add(key.value, value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            if node.func.attr == "get" and len(node.args) == 2:
                add(first.value, node.args[1])
            elif node.func.attr == "add_argument":
                for kw in node.keywords:
                    if kw.arg == "default":
                        add(first.value.lstrip("-").replace("-", "_"), kw.value)
    return found


def library_sites(name: str, value: float) -> list[str]:
    """``path:line`` of the library places outside the records writing ``name = value``."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in SETTINGS_MODULES:
            continue
        for site_name, site_value, line in default_sites(ast.parse(path.read_text())):
            if site_name == name and site_value == value:
                out.append(f"{path.relative_to(PACKAGE)}:{line}")
    return out


def test_the_scan_finds_each_kind_of_default():
    tree = ast.parse(
        "def f(a, decimation_factor=10, *, zero_tolerance=0.001): pass\n"
        "class C:\n    max_iterations: int = 3\n"
        "D = {'outlier_threshold': 0.05}\n"
        "s = std.get('position', 0.001 if a else b)\n"
        "p.add_argument('--max-iterations', type=int, default=3)\n"
    )
    assert sorted((n, v) for n, v, _ in default_sites(tree)) == sorted(
        DEFAULTS[:5] + (DEFAULTS[2],)
    )


def test_records_hold_the_1_0_2_defaults():
    assert IDENTIFICATION == IdentificationSettings()
    assert (IDENTIFICATION.decimation_factor, IDENTIFICATION.zero_tolerance) == (10, 0.001)
    assert (IDENTIFICATION.decimate, IDENTIFICATION.plotting, IDENTIFICATION.wls) == (
        True,
        True,
        False,
    )
    assert CALIBRATION == CalibrationSettings()
    assert (CALIBRATION.max_iterations, CALIBRATION.outlier_threshold) == (3, 0.05)
    assert (CALIBRATION.measurement_std_position, CALIBRATION.measurement_std_orientation) == (
        0.001,
        0.01,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        IDENTIFICATION.decimation_factor = 5  # type: ignore[misc]


@pytest.mark.parametrize(("name", "value"), DEFAULTS)
def test_each_default_is_written_only_in_its_record(name, value):
    sites = library_sites(name, value)
    if name == "outlier_threshold":
        # the legacy-to-unified converter sits below the calibration layer
        assert sites == ["utils/_legacy_unified.py:" + sites[0].rsplit(":", 1)[1]], sites
        migrated = legacy_calibration_to_unified({"tool_frame": "tool"})
        params = migrated["tasks"]["calibration"]["parameters"]
        assert params["outlier_threshold"] == CALIBRATION.outlier_threshold
    else:
        assert sites == [], f"{name}={value} also written at {sites}: read it from the record"


def _defaults(fn) -> dict:
    return {
        k: p.default
        for k, p in inspect.signature(fn).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def test_identification_readers_take_the_record():
    fields = dataclasses.asdict(IDENTIFICATION)
    assert dict(SOLVE_DEFAULTS) == fields
    assert _defaults(BaseIdentification.solve) == fields
    custom = _defaults(BaseIdentification.solve_with_custom_solver)
    assert (custom["decimation_factor"], custom["zero_tolerance"]) == (10, 0.001)
    options = FitOptions()
    assert (options.decimation_factor, options.zero_tolerance) == (10, 0.001)
    api = _defaults(RobotIdentificationSystem.identify_parameters)
    assert (api["decimate"], api["decimation_factor"], api["zero_tolerance"]) == (True, 10, 0.001)
    cli = workflows.solve_settings()
    assert (cli["decimation_factor"], cli["zero_tolerance"]) == (10, 0.001)


def test_calibration_readers_take_the_record(monkeypatch):
    for fn in (
        BaseCalibration.solve,
        BaseCalibration.solve_optimisation,
        BaseCalibration._optimize_with_outlier_removal,
        workflows.run_calibration,
    ):
        assert _defaults(fn)["max_iterations"] == CALIBRATION.max_iterations, fn
    args = build_parser().parse_args(["calibrate", "c.yaml", "--urdf", "r.urdf", "--data", "d.csv"])
    assert args.outlier_passes == CALIBRATION.max_iterations

    # the call-time readers follow a replaced record
    patched = CalibrationSettings(measurement_std_position=0.004, measurement_std_orientation=0.02)
    monkeypatch.setattr(_measurements, "DEFAULT_SETTINGS", patched)
    cfg = {"measurability": [True] * 6, "NbMarkers": 1}
    weights = _measurements.measurement_weights(cfg, 1)
    np.testing.assert_array_equal(weights, [250.0, 250.0, 250.0, 50.0, 50.0, 50.0])
    cfg = {}
    calibration_config._unified_settings(cfg, {}, {}, {})  # no parameters.outlier_threshold
    assert cfg["outlier_eps"] == CALIBRATION.outlier_threshold
    monkeypatch.setattr(calibration_config, "DEFAULT_SETTINGS", CalibrationSettings(3, 0.25))
    calibration_config._unified_settings(cfg, {}, {}, {})
    assert cfg["outlier_eps"] == 0.25
