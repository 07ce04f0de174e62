"""Bad configuration inputs: YAML loading, unknown keys, values of the wrong type.

Each row writes a small unified configuration into ``tmp_path`` and runs the
user action (parse, task extraction, conversion to ``identif_config`` /
``calib_config``) on a six-joint sample manipulator built by Pinocchio.
"""

from __future__ import annotations

import os
import textwrap
import warnings
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pinocchio as pin
import pytest

from figaroh.calibration.config import get_param_from_yaml as legacy_calibration
from figaroh.calibration.config import unified_to_legacy_config
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.identification.exceptions import IdentificationConfigError
from figaroh.utils.config_keys import STRICT_ENV, UnknownConfigKeyError
from figaroh.utils.config_parser import (
    UnifiedConfigParser,
    create_task_config,
    require_unified_config,
)
from figaroh.utils.error_handling import ConfigurationError
from figaroh.utils.yaml_budget import MAX_NODES_ENV, YamlBudgetError

from ._harness import BadInput, case_id, run_case

JOINTS = [
    "shoulder1_joint",
    "shoulder2_joint",
    "shoulder3_joint",
    "elbow_joint",
    "wrist1_joint",
    "wrist2_joint",
]

IDENTIFICATION = """\
robot:
  name: sample
  properties:
    joints:
      active_joints: [shoulder1_joint, shoulder2_joint, shoulder3_joint,
                      elbow_joint, wrist1_joint, wrist2_joint]
    mechanics:
      reduction_ratios: [{ratios}]
      ratio_essential: {ratio_essential}
      friction_coefficients: {{viscous: [{viscous}], static: [0, 0, 0, 0, 0, 0]}}
    coupling: {{has_coupled_wrist: false, Iam6: {iam6}}}
tasks:
  identification:
    enabled: true
    problem:
      model_components: {{{friction_key}: false, actuator_inertia: false, joint_offset: false}}
    signal_processing:
      sampling_frequency: {fs}
      cutoff_frequency: {fc}
      {order_key}: {order}
"""

CALIBRATION = """\
robot: {{name: sample}}
tasks:
  calibration:
    enabled: true
    type: kinematic_calibration
    parameters: {{calibration_level: full_params, outlier_threshold: {outlier}}}
    kinematics: {{base_frame: universe, tool_frame: {tool}}}
    measurements:
      markers:
        - name: m1
          reference_joint: {ref}
          measurable_dof: [true, true, true, false, false, false]
      poses: {{base_pose: [0, 0, 0, 0, 0, 0], tool_pose: [0, 0, 0, 0, 0, 0]}}
    data: {{number_of_samples: {nsample}}}
"""


def _robot() -> Any:
    model = pin.buildSampleModelManipulator()
    model.name = "sample"
    return SimpleNamespace(model=model, q0=pin.neutral(model), data=model.createData())


def _write(tmp_path: Path, text: str, name: str = "robot.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _identification_text(**overrides: Any) -> str:
    values = {
        "ratios": "100, 100, 100, 100, 100, 100",
        "ratio_essential": "30.0",
        "viscous": "0, 0, 0, 0, 0, 0",
        "iam6": "0",
        "friction_key": "friction",
        "fs": "100.0",
        "fc": "10.0",
        "order_key": "filter_order",
        "order": "4",
    }
    values.update(overrides)
    return IDENTIFICATION.format(**values)


def _identify(tmp_path: Path, text: str, *, strict: bool | None = None) -> None:
    path = _write(tmp_path, text)
    robot = _robot()
    parsed = UnifiedConfigParser(path, strict=strict).parse()
    unified_to_legacy_identif_config(robot, create_task_config(robot, parsed, "identification"))


def _identification(strict: bool | None = None, **overrides: Any):
    return lambda tmp: _identify(tmp, _identification_text(**overrides), strict=strict)


def _calibrate(tmp_path: Path, **overrides: Any) -> None:
    values = {"outlier": "0.05", "tool": "effector_body", "ref": "wrist2_joint", "nsample": "10"}
    values.update(overrides)
    path = _write(tmp_path, CALIBRATION.format(**values))
    robot = _robot()
    parsed = UnifiedConfigParser(path).parse()
    unified_to_legacy_config(robot, create_task_config(robot, parsed, "calibration"))


def _calibration(**overrides: Any):
    return lambda tmp: _calibrate(tmp, **overrides)


def _parse(text: str, name: str = "robot.yaml", **kwargs: Any):
    return lambda tmp: UnifiedConfigParser(_write(tmp, text, name), **kwargs).parse()


@contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def alias_bomb(levels: int = 8, fan_out: int = 9) -> str:
    """A "billion laughs" document: ``fan_out ** levels`` strings once expanded."""
    lines = ["tasks: {}", f"a0: &a0 [{', '.join(['lol'] * fan_out)}]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan_out)}]")
    lines.append(f"robot: {{name: bomb, description: *a{levels}}}")
    return "\n".join(lines) + "\n"


def _strict_env(tmp: Path) -> None:
    with _env(STRICT_ENV, "1"):
        _identification(friction_key="fricton")(tmp)


def _budget_env(tmp: Path) -> None:
    with _env(MAX_NODES_ENV, "5"):
        _parse("robot: {name: a}\ntasks: {identification: {enabled: true}}\n")(tmp)


def _create_task(task: str, text: str):
    def call(tmp: Path) -> None:
        robot = _robot()
        create_task_config(robot, UnifiedConfigParser(_write(tmp, text)).parse(), task)

    return call


def _legacy_calibration(tmp: Path) -> None:
    robot = _robot()
    legacy_calibration(
        robot,
        {
            "calib_level": "full_params",
            "base_frame": "universe",
            "tool_frame": "effector_body",
            "markers": [{"ref_joint": "wrist2_joint", "measure": [True] * 3 + [False] * 3}],
            "nb_sampel": 20,
        },
    )


_RECURSIVE = "tasks: {}\nrobot: &r {name: x, custom: [*r]}\n"

CASES: list[BadInput] = [
    # -- YAML loading ----------------------------------------------------------
    BadInput(
        "alias_bomb_refused",
        _parse(alias_bomb()),
        raises=YamlBudgetError,
        match=r"robot\.yaml expands to more than \d+ nodes.*FIGAROH_YAML_MAX_NODES",
    ),
    BadInput("recursive_alias_refused", _parse(_RECURSIVE), YamlBudgetError, "recursive"),
    BadInput("budget_from_environment", _budget_env, YamlBudgetError, "more than 5 nodes"),
    BadInput(
        "missing_file",
        lambda tmp: UnifiedConfigParser(tmp / "absent.yaml"),
        ConfigurationError,
        r"Configuration file not found: .*absent\.yaml",
        already_good=True,
    ),
    BadInput(
        "invalid_yaml_syntax",
        _parse("robot: {name: [unclosed\n"),
        ConfigurationError,
        r"Invalid YAML in file .*robot\.yaml",
        already_good=True,
    ),
    BadInput(
        "document_not_a_mapping",
        _parse("- a\n- b\n"),
        ConfigurationError,
        "must contain a YAML dictionary",
        already_good=True,
    ),
    BadInput(
        "missing_extends_template",
        _parse("extends: nowhere.yaml\nrobot: {name: a}\n"),
        ConfigurationError,
        r"Template file not found: .*nowhere\.yaml",
        already_good=True,
    ),
    BadInput(
        "extends_cycle",
        _parse("extends: robot.yaml\nrobot: {name: a}\n"),
        ConfigurationError,
        "Circular 'extends' chain",
        already_good=True,
    ),
    BadInput(
        "unknown_variant",
        _parse(
            "robot: {name: a}\ntasks: {}\nvariants: {fast: {robot: {name: b}}}\n", variant="fats"
        ),
        ConfigurationError,
        r"Variant 'fats' not found.*Did you mean 'fast'",
        already_good=True,
    ),
    BadInput(
        "legacy_flat_file",
        lambda tmp: require_unified_config(
            _write(tmp, "identification:\n  robot_params: [{fv: [0]}]\n")
        ),
        ConfigurationError,
        "python -m figaroh.utils.config_migration",
        already_good=True,
    ),
    BadInput(
        "robot_without_name",
        _parse("robot: {properties: {}}\ntasks: {}\n"),
        ConfigurationError,
        r"robot\.name",
        already_good=True,
    ),
    # -- tasks -------------------------------------------------------------------
    BadInput(
        "no_identification_task",
        _create_task("identification", "robot: {name: a}\ntasks: {calibration: {}}\n"),
        ConfigurationError,
        r"Task 'identification' not found.*Available tasks: \['calibration'\]",
        already_good=True,
    ),
    BadInput(
        "disabled_task",
        _create_task(
            "identification", "robot: {name: a}\ntasks: {identification: {enabled: false}}\n"
        ),
        ConfigurationError,
        r"tasks\.identification\.enabled: true",
        already_good=True,
    ),
    BadInput(
        "identification_without_signal_processing",
        lambda tmp: _identify(
            tmp,
            "robot: {name: a}\ntasks: {identification: {enabled: true, problem: {wls: false}}}\n",
        ),
        match=r"no 'signal_processing' section: sampling_frequency defaults to 5000 Hz",
    ),
    # -- unknown keys ------------------------------------------------------------
    BadInput(
        "misspelt_friction_warned",
        _identification(friction_key="fricton"),
        match=r"fricton' \(did you mean 'tasks\.identification\.problem\.model_components"
        r"\.friction'",
    ),
    BadInput(
        "misspelt_filter_order_warned",
        _identification(order_key="filter_ordr", order="8"),
        match=r"filter_ordr' \(did you mean '.*signal_processing\.filter_order'",
    ),
    BadInput(
        "misspelt_friction_strict",
        _identification(strict=True, friction_key="fricton"),
        UnknownConfigKeyError,
        r"robot\.yaml: .*did you mean .*model_components\.friction",
    ),
    BadInput(
        "misspelt_filter_order_strict_keys",
        lambda tmp: _identify(
            tmp, "strict_keys: true\n" + _identification_text(order_key="filter_ordr", order="8")
        ),
        UnknownConfigKeyError,
        r"filter_ordr.*signal_processing\.filter_order",
    ),
    BadInput("misspelt_key_strict_env", _strict_env, UnknownConfigKeyError, "fricton"),
    BadInput(
        "unknown_key_in_variant",
        _parse(
            "robot: {name: a}\ntasks: {identification: {}}\nvariants:\n"
            "  v: {extends: tasks.identification, signal_processing: {cutof_frequency: 5}}\n"
        ),
        match=r"variants\.v\.signal_processing\.cutof_frequency' \(did you mean",
    ),
    BadInput(
        "unknown_key_legacy_calibration",
        _legacy_calibration,
        match=r"calibration\.nb_sampel' \(did you mean 'calibration\.nb_sample'",
    ),
    # -- values ------------------------------------------------------------------
    BadInput(
        "two_reduction_ratios_for_six_joints",
        _identification(ratios="100, 100"),
        match=r"mechanics\.reduction_ratios has 2 entries for 6 active joints",
    ),
    BadInput(
        "sampling_frequency_string",
        _identification(fs='"fast"'),
        IdentificationConfigError,
        r"signal_processing\.sampling_frequency must be a positive number \[Hz\]",
    ),
    BadInput(
        "cutoff_frequency_string",
        _identification(fc='"low"'),
        IdentificationConfigError,
        r"signal_processing\.cutoff_frequency must be a positive number",
    ),
    BadInput(
        "cutoff_above_nyquist",
        _identification(fc="80"),
        IdentificationConfigError,
        "Nyquist",
        already_good=True,
    ),
    BadInput(
        "negative_sampling_frequency",
        _identification(fs="-100"),
        IdentificationConfigError,
        r"sampling_frequency must be a positive finite number",
        already_good=True,
    ),
    BadInput(
        "filter_order_string",
        _identification(order='"eight"'),
        IdentificationConfigError,
        r"signal_processing\.filter_order .*positive integer",
    ),
    BadInput(
        "ratio_essential_string",
        _identification(ratio_essential='"thirty"'),
        IdentificationConfigError,
        r"mechanics\.ratio_essential must be a finite number.*without quotes",
    ),
    BadInput(
        "viscous_friction_string",
        _identification(viscous='0, "x", 0, 0, 0, 0'),
        IdentificationConfigError,
        r"mechanics\.friction_coefficients\.viscous must be a list of finite numbers",
    ),
    BadInput(
        "coupling_iam6_string",
        _identification(iam6='"big"'),
        IdentificationConfigError,
        r"coupling\.Iam6 must be a finite number",
    ),
    BadInput(
        "unknown_active_joint",
        lambda tmp: _identify(
            tmp, _identification_text().replace("wrist2_joint]", "wrist3_joint]")
        ),
        IdentificationConfigError,
        r"unknown active joint\(s\) \['wrist3_joint'\] in joints\.active_joints",
        already_good=True,
    ),
    BadInput(
        "marker_reference_joint_unknown",
        _calibration(ref="wrist9_joint"),
        match=r"markers\[0\]\.reference_joint: 'wrist9_joint' is not a joint.*Did you mean",
    ),
    BadInput(
        "unknown_tool_frame",
        _calibration(tool="effector_bdy"),
        ConfigurationError,
        r"kinematics\.tool_frame: frame 'effector_bdy' does not exist.*effector_body",
        already_good=True,
    ),
    BadInput(
        "outlier_threshold_string",
        _calibration(outlier='"big"'),
        ConfigurationError,
        r"parameters\.outlier_threshold: expected a finite number",
    ),
    BadInput(
        "number_of_samples_string",
        _calibration(nsample='"many"'),
        ConfigurationError,
        r"data\.number_of_samples: expected an integer",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_good_configuration_raises_no_warning(tmp_path: Path) -> None:
    """The baseline rows start from is clean: no unknown key, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _identification(strict=True)(tmp_path)
        _calibration()(tmp_path)
