"""Tests of the unified configuration parser (figaroh.utils.config_parser)."""

from __future__ import annotations

import copy
import logging
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import yaml

from figaroh.utils.config_keys import (
    STRICT_ENV,
    UNIFIED_SCHEMA,
    UnknownConfigKeyError,
    UnknownConfigKeyWarning,
    check_document,
    find_unknown_keys,
)
from figaroh.utils.config_parser import (
    ConfigMetadata,
    UnifiedConfigParser,
    create_task_config,
    deep_merge,
    get_calibration_param_from_yaml,
    get_identification_param_from_yaml,
    get_param_from_yaml,
    is_unified_config,
    parse_configuration,
    require_unified_config,
)
from figaroh.utils.error_handling import MIGRATION_COMMAND, ConfigurationError
from figaroh.utils.yaml_budget import (
    YamlBudgetError,
    expanded_node_count,
    load_yaml,
    load_yaml_file,
)

ROOT = Path(__file__).resolve().parents[1]
MIGRATION_CLI = (
    "python -m figaroh.utils.config_migration --input <legacy.yaml> --output <unified.yaml>"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def shared_unified_configs(shared_data: Path) -> list[Path]:
    files = sorted(shared_data.glob("*/config/*_unified_config*.yaml"))
    assert files, f"no unified configs under {shared_data}"
    return files


class FakeModel:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeRobot:
    def __init__(self, name: str = "urdf_name") -> None:
        self.model = FakeModel(name)


# ---------------------------------------------------------------------------
# real configs
# ---------------------------------------------------------------------------


def test_every_shared_unified_config_parses_with_extends_resolved(shared_data):
    for path in shared_unified_configs(shared_data):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        parser = UnifiedConfigParser(path)
        cfg = parser.parse()
        assert "extends" not in cfg, path
        assert cfg["_metadata"]["source_file"] == str(path.resolve())
        assert cfg["robot"]["name"] == raw["robot"]["name"]
        # the child's own values win over the templates
        ident = raw["tasks"]["identification"]
        assert (
            cfg["tasks"]["identification"]["signal_processing"]["sampling_frequency"]
            == ident["signal_processing"]["sampling_frequency"]
        )
        if "extends" in raw:
            # only the base template declares these: proof the 2-level chain resolved
            assert cfg["tasks"]["calibration"]["type"] == "kinematic_calibration", path
            assert cfg["tasks"]["identification"]["type"] == "dynamic_identification", path
            assert cfg["meta"]["schema_version"] == "2.0"
            assert cfg["environment"]["logging"]["level"] == "INFO"
            template_names = sorted(p.name for p in parser.template_cache)
            assert "base_robot_config.yaml" in template_names, path
            assert len(template_names) == 2, template_names
            kind = Path(raw["extends"]).name
            expected_type = "manipulator" if kind.startswith("manipulator") else "humanoid"
            assert cfg["robot"]["type"] == expected_type
            # optimal_trajectory inherits identification through the base template
            traj = cfg["tasks"]["optimal_trajectory"]
            assert "inherits_from" not in traj
            assert traj["signal_processing"] == cfg["tasks"]["identification"]["signal_processing"]


def test_shared_ur10_values_and_variant(shared_data):
    path = shared_data / "ur10" / "config" / "ur10_unified_config.yaml"
    cfg = parse_configuration(path)
    assert cfg["robot"]["properties"]["coupling"]["has_coupled_wrist"] is False  # manipulator
    assert cfg["tasks"]["identification"]["signal_processing"]["cutoff_frequency"] == 50.0
    assert "variants" in cfg  # kept when no variant is requested
    loaded = parse_configuration(path, variant="loaded_identification")
    ident = loaded["tasks"]["identification"]
    assert ident["signal_processing"]["cutoff_frequency"] == 30.0
    assert ident["signal_processing"]["sampling_frequency"] == 500.0
    assert ident["load_configuration"]["additional_mass"] == 5.0
    assert "variants" not in loaded
    assert loaded["_metadata"]["variant"] == "loaded_identification"
    # the calibration task is untouched by an identification variant
    assert loaded["tasks"]["calibration"] == cfg["tasks"]["calibration"]


def test_shared_legacy_configs_are_refused(shared_data):
    legacy = shared_data / "ur10" / "config" / "ur10_config.yaml"
    assert not is_unified_config(legacy)
    with pytest.raises(ConfigurationError) as err:
        require_unified_config(legacy)
    assert MIGRATION_CLI in str(err.value)
    assert str(legacy) in str(err.value)
    for path in shared_unified_configs(shared_data):
        assert is_unified_config(path)
        require_unified_config(path)


# ---------------------------------------------------------------------------
# synthetic inheritance chain
# ---------------------------------------------------------------------------


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    """base.yaml <- mid.yaml (templates/) <- r/config/robot.yaml."""
    write(
        tmp_path / "templates" / "base.yaml",
        """
        meta: {schema_version: "2.0"}
        robot:
          name: "${ROBOT_NAME}"
          properties:
            joints: {active_joints: [a, b, c], joint_limits: {velocity: [1, 2, 3]}}
            mechanics:
              ratio_essential: 1.0
              friction_coefficients: {viscous: [1, 1], static: [2, 2]}
        tasks:
          identification:
            enabled: false
            type: dynamic_identification
            problem:
              use_joint_torques: true
              model_components: {friction: true, joint_offset: true}
            signal_processing: {sampling_frequency: 500.0, cutoff_frequency: 100.0, filter_order: 4}
          optimal_trajectory:
            enabled: false
            inherits_from: identification
            trajectory: {waypoints: 5}
          follow_up:
            inherits_from: optimal_trajectory
            trajectory: {frequency: 20}
        variables:
          DATA_DIR: data_root
          GAIN: 7
        """,
    )
    write(
        tmp_path / "templates" / "mid.yaml",
        """
        extends: base.yaml
        robot:
          type: manipulator
          properties:
            mechanics: {ratio_essential: 2.0}
        tasks:
          identification:
            enabled: true
            signal_processing: {cutoff_frequency: 40.0}
        """,
    )
    return write(
        tmp_path / "r" / "config" / "robot.yaml",
        """
        extends: "templates/mid.yaml"
        robot:
          name: synth
          properties:
            joints: {active_joints: [x, y]}
            mechanics: {friction_coefficients: {viscous: [5, 6]}}
        tasks:
          identification:
            problem: {model_components: {joint_offset: false}}
            data: {source: "${DATA_DIR}/${robot.name}/q.csv", gain: "${GAIN}",
                   home: "${FIGAROH_TEST_HOME}", missing: "${NOT_DEFINED_ANYWHERE}/x"}
          optimal_trajectory:
            enabled: true
            signal_processing: {filter_order: 2}
        variants:
          slow:
            extends: tasks.identification
            signal_processing: {sampling_frequency: 100.0, cutoff_frequency: 10.0}
          rename:
            robot: {description: renamed}
        """,
    )


def test_two_level_extends_deep_merge(chain):
    cfg = UnifiedConfigParser(chain).parse()
    props = cfg["robot"]["properties"]
    assert cfg["robot"]["name"] == "synth"  # child scalar wins
    assert cfg["robot"]["type"] == "manipulator"  # from the middle template
    assert props["joints"]["active_joints"] == ["x", "y"]  # list replaced, not merged
    assert props["joints"]["joint_limits"]["velocity"] == [1, 2, 3]  # kept from base
    assert props["mechanics"]["ratio_essential"] == 2.0  # mid overrides base
    assert props["mechanics"]["friction_coefficients"] == {"viscous": [5, 6], "static": [2, 2]}
    ident = cfg["tasks"]["identification"]
    assert ident["enabled"] is True
    assert ident["signal_processing"] == {
        "sampling_frequency": 500.0,
        "cutoff_frequency": 40.0,
        "filter_order": 4,
    }
    assert ident["problem"] == {
        "use_joint_torques": True,
        "model_components": {"friction": True, "joint_offset": False},
    }


def test_task_inheritance_two_levels(chain):
    cfg = UnifiedConfigParser(chain).parse()
    ident = cfg["tasks"]["identification"]
    traj = cfg["tasks"]["optimal_trajectory"]
    assert "inherits_from" not in traj
    assert traj["enabled"] is True
    assert traj["problem"] == ident["problem"]
    assert traj["signal_processing"]["filter_order"] == 2  # own value wins
    assert traj["signal_processing"]["cutoff_frequency"] == 40.0  # inherited
    follow = cfg["tasks"]["follow_up"]  # inherits from an inheriting task
    assert follow["trajectory"] == {"waypoints": 5, "frequency": 20}
    assert follow["signal_processing"] == traj["signal_processing"]
    assert follow["enabled"] is True


def test_variable_expansion(chain, monkeypatch, caplog):
    monkeypatch.setenv("FIGAROH_TEST_HOME", "/home/figaroh")
    monkeypatch.delenv("NOT_DEFINED_ANYWHERE", raising=False)
    with caplog.at_level(logging.WARNING, logger="figaroh.utils.config_parser"):
        cfg = UnifiedConfigParser(chain).parse()
    data = cfg["tasks"]["identification"]["data"]
    assert data["source"] == "data_root/synth/q.csv"  # variables section + dotted path
    assert data["gain"] == 7  # a whole-string reference keeps the value's type
    assert data["home"] == "/home/figaroh"  # environment
    assert data["missing"] == "${NOT_DEFINED_ANYWHERE}/x"  # left verbatim
    assert any("NOT_DEFINED_ANYWHERE" in r.getMessage() for r in caplog.records)


def test_environment_wins_over_config(chain, monkeypatch):
    monkeypatch.setenv("DATA_DIR", "from_env")
    cfg = UnifiedConfigParser(chain).parse()
    assert cfg["tasks"]["identification"]["data"]["source"] == "from_env/synth/q.csv"


def test_variant_merges_at_its_task(chain):
    base = UnifiedConfigParser(chain).parse()
    cfg = UnifiedConfigParser(chain, variant="slow").parse()
    sp = cfg["tasks"]["identification"]["signal_processing"]
    assert sp == {"sampling_frequency": 100.0, "cutoff_frequency": 10.0, "filter_order": 4}
    assert "signal_processing" not in cfg  # not dumped at the document root
    assert "variants" not in cfg
    # task inheritance runs after the variant: the child task sees the variant
    assert cfg["tasks"]["optimal_trajectory"]["signal_processing"]["cutoff_frequency"] == 10.0
    assert cfg["robot"] == base["robot"]
    root_variant = UnifiedConfigParser(chain, variant="rename").parse()
    assert root_variant["robot"]["description"] == "renamed"
    assert root_variant["robot"]["name"] == "synth"


def test_metadata(chain, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    cfg = UnifiedConfigParser(chain, variant="slow").parse()
    expected = ConfigMetadata(
        schema_version="2.0",
        config_type="robot_configuration",
        source_file=str(chain.resolve()),
        variant="slow",
        resolved_at=str(tmp_path),
    )
    assert cfg["_metadata"] == expected.__dict__


def test_templates_prefix_search_in_cwd_and_absolute(tmp_path, monkeypatch):
    write(tmp_path / "cwd" / "templates" / "t.yaml", "robot: {name: from_template}\n")
    cfg_file = write(tmp_path / "a" / "b" / "c" / "d" / "x.yaml", 'extends: "templates/t.yaml"\n')
    monkeypatch.chdir(tmp_path / "cwd")
    assert parse_configuration(cfg_file)["robot"]["name"] == "from_template"
    absolute = write(
        tmp_path / "abs.yaml",
        f'extends: "{(tmp_path / "cwd" / "templates" / "t.yaml").as_posix()}"\n',
    )
    assert parse_configuration(absolute)["robot"]["name"] == "from_template"


def test_relative_extends_falls_back_to_top_level_directory(tmp_path):
    """Upstream resolved every extends against the top-level file's directory."""
    write(tmp_path / "templates" / "base.yaml", "robot: {name: base, type: generic}\n")
    write(
        tmp_path / "templates" / "mid.yaml",
        'extends: "../../templates/base.yaml"\nrobot: {type: manipulator}\n',
    )
    top = write(
        tmp_path / "robot" / "config" / "r.yaml",
        'extends: "../../templates/mid.yaml"\nrobot: {name: r}\n',
    )
    cfg = parse_configuration(top)
    assert cfg["robot"] == {"name": "r", "type": "manipulator"}


def test_deep_merge_rules():
    base = {"a": {"b": 1, "c": [1, 2]}, "l": [1], "items": [1, 2], "s": 1}
    override = {"a": {"c": [3]}, "l": {"now": "dict"}, "items_extend": [3], "s": None}
    snapshot = copy.deepcopy((base, override))
    merged = deep_merge(base, override)
    assert merged == {"a": {"b": 1, "c": [3]}, "l": {"now": "dict"}, "items": [1, 2, 3], "s": None}
    assert (base, override) == snapshot  # inputs untouched
    merged["a"]["c"].append(9)
    assert override["a"]["c"] == [3]


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigurationError, match="Configuration file not found") as err:
        UnifiedConfigParser(missing)
    assert str(missing) in str(err.value)


def test_malformed_yaml(tmp_path):
    bad = write(tmp_path / "bad.yaml", "robot: {name: x\ntasks: [\n")
    with pytest.raises(ConfigurationError, match="Invalid YAML") as err:
        UnifiedConfigParser(bad).parse()
    assert str(bad) in str(err.value)
    listing = write(tmp_path / "list.yaml", "- a\n- b\n")
    with pytest.raises(ConfigurationError, match="must contain a YAML dictionary"):
        UnifiedConfigParser(listing).parse()
    empty = write(tmp_path / "empty.yaml", "# nothing\n")
    with pytest.raises(ConfigurationError, match="YAML dictionary"):
        UnifiedConfigParser(empty).parse()


def test_missing_template(tmp_path):
    cfg = write(tmp_path / "c" / "x.yaml", 'extends: "../nowhere/base.yaml"\n')
    with pytest.raises(ConfigurationError, match="Template file not found") as err:
        UnifiedConfigParser(cfg).parse()
    msg = str(err.value)
    assert str(cfg) in msg and "extends" in msg and "base.yaml" in msg
    cfg2 = write(tmp_path / "c" / "y.yaml", 'extends: "templates/absent.yaml"\n')
    with pytest.raises(ConfigurationError, match="searched directories") as err:
        UnifiedConfigParser(cfg2).parse()
    assert "absent.yaml" in str(err.value) and str(tmp_path / "c" / "templates") in str(err.value)
    cfg3 = write(tmp_path / "c" / "z.yaml", "extends: [a, b]\n")
    with pytest.raises(ConfigurationError, match="'extends'"):
        UnifiedConfigParser(cfg3).parse()


def test_extends_cycle(tmp_path):
    a = write(tmp_path / "a.yaml", "extends: b.yaml\nrobot: {name: a}\n")
    write(tmp_path / "b.yaml", "extends: a.yaml\n")
    with pytest.raises(ConfigurationError, match="Circular 'extends'") as err:
        UnifiedConfigParser(a).parse()
    assert "a.yaml -> " in str(err.value) and "b.yaml" in str(err.value)
    selfref = write(tmp_path / "s.yaml", "extends: s.yaml\n")
    with pytest.raises(ConfigurationError, match="Circular"):
        UnifiedConfigParser(selfref).parse()


def test_unknown_task_names_file_and_choices(chain):
    cfg = UnifiedConfigParser(chain).parse()
    with pytest.raises(ConfigurationError) as err:
        create_task_config(FakeRobot(), cfg, "identifcation")
    msg = str(err.value)
    assert f"Task 'identifcation' not found in {chain.resolve()}" in msg
    assert "Available tasks: ['follow_up', 'identification', 'optimal_trajectory']" in msg
    assert "Did you mean 'identification'" in msg
    with pytest.raises(ConfigurationError, match="not found in configuration"):
        create_task_config(FakeRobot(), {"robot": {"name": "x"}}, "identification")


def test_disabled_task(tmp_path):
    path = write(
        tmp_path / "x.yaml",
        "robot: {name: x}\ntasks: {calibration: {enabled: false}, identification: {}}\n",
    )
    cfg = parse_configuration(path)
    with pytest.raises(ConfigurationError, match="Task 'calibration' is disabled") as err:
        create_task_config(None, cfg, "calibration")
    assert str(path.resolve()) in str(err.value)
    assert create_task_config(None, cfg, "identification")["task_type"] == "identification"


def test_unknown_variant(chain, tmp_path):
    with pytest.raises(ConfigurationError) as err:
        UnifiedConfigParser(chain, variant="fast").parse()
    msg = str(err.value)
    assert "Variant 'fast' not found" in msg and "['rename', 'slow']" in msg and str(chain) in msg
    plain = write(tmp_path / "p.yaml", "robot: {name: p}\n")
    with pytest.raises(ConfigurationError, match="No variants defined"):
        UnifiedConfigParser(plain, variant="slow").parse()
    bad_target = write(
        tmp_path / "v.yaml",
        "robot: {name: v}\nvariants: {w: {extends: tasks.nothing, a: 1}}\n",
    )
    with pytest.raises(ConfigurationError, match="tasks.nothing"):
        UnifiedConfigParser(bad_target, variant="w").parse()


def test_task_inheritance_errors(tmp_path):
    unknown = write(tmp_path / "u.yaml", "tasks: {a: {inherits_from: ghost}}\n")
    with pytest.raises(ConfigurationError, match="Parent task 'ghost' not found for 'a'"):
        parse_configuration(unknown)
    cycle = write(
        tmp_path / "c.yaml",
        "tasks: {a: {inherits_from: b}, b: {inherits_from: c}, c: {inherits_from: a}}\n",
    )
    with pytest.raises(ConfigurationError, match="Circular task inheritance detected involving"):
        parse_configuration(cycle)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("robot: {description: no name}\n", "Robot name is required"),
        (
            "robot: {name: r, properties: {joints: {active_joints: j1}}}\n",
            "robot.properties.joints.active_joints",
        ),
        ("tasks: {identification: [1, 2]}\n", "tasks.identification"),
        (
            "tasks: {identification: {type: dynamic_identification, problem: {}}}\n",
            "missing required section: signal_processing",
        ),
        (
            "tasks: {calibration: {type: kinematic_calibration, kinematics: {}}}\n",
            "missing required section: measurements",
        ),
    ],
)
def test_validation_errors(tmp_path, text, pattern):
    path = write(tmp_path / "v.yaml", text)
    with pytest.raises(ConfigurationError, match=pattern) as err:
        parse_configuration(path)
    assert str(path.resolve()) in str(err.value)


def test_future_schema_version_only_warns(tmp_path, caplog):
    path = write(tmp_path / "v.yaml", "meta: {schema_version: '3.1'}\nrobot: {name: r}\n")
    with caplog.at_level(logging.WARNING, logger="figaroh.utils.config_parser"):
        cfg = parse_configuration(path)
    assert cfg["robot"]["name"] == "r"
    assert any("3.1" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------------------
# create_task_config
# ---------------------------------------------------------------------------


def test_create_task_config_layout(tmp_path):
    path = write(
        tmp_path / "t.yaml",
        """
        robot:
          name: yaml_name
          instance: {asset_id: cell-2}
          properties:
            joints: {active_joints: [j1]}
            mechanics: {ratio_essential: 3.0}
            sensors: {ft: true}
        tasks:
          identification:
            type: dynamic_identification
            _private: 1
            joints: {active_joints: [j2]}
            problem: {}
            signal_processing: {}
        custom: {answer: 42}
        environment: {data_directory: my_data}
        """,
    )
    cfg = parse_configuration(path)
    task = create_task_config(FakeRobot("urdf_name"), cfg, "identification")
    assert task == {
        "robot_name": "urdf_name",
        "task_type": "dynamic_identification",
        "joints": {"active_joints": ["j2"]},  # task-level joints override the robot's
        "mechanics": {"ratio_essential": 3.0},
        "sensors": {"ft": True},
        "instance": {"asset_id": "cell-2"},
        "problem": {},
        "signal_processing": {},
        "custom": {"answer": 42},
        "working_directory": ".",
        "data_directory": "my_data",
        "results_directory": "results",
    }
    assert create_task_config(None, cfg, "identification")["robot_name"] == "yaml_name"
    task["custom"]["answer"] = 0
    assert cfg["custom"]["answer"] == 42  # the task config is a copy


# ---------------------------------------------------------------------------
# format detection, get_param_from_yaml, shims
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "_metadata: {}\n",
        "schema_version: 2\n",
        "extends: x.yaml\n",
        "variants: {}\n",
        "tasks: {}\n",
        "common: {}\n",
        "variables: {}\n",
        "something: {inherits_from: other}\n",
    ],
)
def test_is_unified_markers(tmp_path, text):
    assert is_unified_config(write(tmp_path / "u.yaml", text))


def test_is_unified_never_raises(tmp_path):
    assert not is_unified_config(tmp_path / "missing.yaml")
    assert not is_unified_config(write(tmp_path / "bad.yaml", "a: [\n"))
    assert not is_unified_config(write(tmp_path / "list.yaml", "- 1\n"))
    assert not is_unified_config(write(tmp_path / "legacy.yaml", "calibration: {calib_level: x}\n"))
    assert not is_unified_config(tmp_path)  # a directory


def test_require_unified_config_errors(tmp_path):
    with pytest.raises(ConfigurationError, match="not found"):
        require_unified_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigurationError, match="Invalid YAML"):
        require_unified_config(write(tmp_path / "bad.yaml", "a: [\n"))
    legacy = write(tmp_path / "old.yaml", "identification: {robot_params: [{fv: None}]}\n")
    with pytest.raises(ConfigurationError) as err:
        require_unified_config(legacy)
    assert MIGRATION_CLI in str(err.value)
    assert MIGRATION_COMMAND == MIGRATION_CLI


def test_get_param_from_yaml_auto(tmp_path):
    path = write(
        tmp_path / "a.yaml",
        "robot: {name: r}\ntasks: {calibration: {enabled: false}, identification: {x: 1}}\n",
    )
    task = get_param_from_yaml(FakeRobot(), path)
    assert task["task_type"] == "identification" and task["x"] == 1
    both = write(tmp_path / "b.yaml", "robot: {name: r}\ntasks: {a: {}, b: {}}\n")
    with pytest.raises(ConfigurationError, match=r"Cannot auto-detect task type.*\['a', 'b'\]"):
        get_param_from_yaml(FakeRobot(), both)
    assert get_param_from_yaml(FakeRobot(), both, task_type="b")["task_type"] == "b"
    parsed = parse_configuration(path)
    assert get_param_from_yaml(FakeRobot(), parsed, "identification")["x"] == 1
    with pytest.raises(ConfigurationError, match="path or a mapping"):
        get_param_from_yaml(FakeRobot(), 42)


def test_get_param_from_yaml_routes_legacy_identification(ur10_urdf, shared_data):
    import pinocchio as pin

    robot = FakeRobot()
    robot.model = pin.buildModelFromUrdf(str(ur10_urdf))
    legacy = shared_data / "tiago" / "config" / "tiago_config.yaml"
    data = yaml.safe_load(legacy.read_text(encoding="utf-8"))
    with pytest.warns(DeprecationWarning, match="config_migration"):
        out = get_param_from_yaml(robot, data, task_type="identification")
    assert out["ts"] == pytest.approx(0.0002)
    assert out["active_joints"][0] == "torso_lift_joint"
    with pytest.raises(ConfigurationError, match="Cannot auto-detect"):
        get_param_from_yaml(robot, data)  # both legacy sections present


def test_deprecated_shims(tmp_path):
    path = write(
        tmp_path / "a.yaml",
        "robot: {name: r}\ntasks: {calibration: {c: 1}, identification: {i: 2}}\n",
    )
    with pytest.warns(DeprecationWarning, match="get_calibration_param_from_yaml"):
        assert get_calibration_param_from_yaml(None, path)["c"] == 1
    with pytest.warns(DeprecationWarning, match="get_identification_param_from_yaml"):
        assert get_identification_param_from_yaml(None, path)["i"] == 2


def test_parser_repr_and_repo_config():
    parser = UnifiedConfigParser(ROOT / "config" / "ur10_unified_config.yaml")
    assert "ur10_unified_config.yaml" in repr(parser)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cfg = parser.parse()
    assert sorted(p.name for p in parser.template_cache) == [
        "base_robot_config.yaml",
        "manipulator_robot.yaml",
    ]
    assert cfg["robot"]["type"] == "manipulator"
    assert cfg["tasks"]["calibration"]["measurements"]["markers"][0]["name"] == "wrist_marker"
    assert cfg["tasks"]["optimal_trajectory"]["problem"]["max_iterations"] == 200


# ---------------------------------------------------------------------------
# error_handling helpers
# ---------------------------------------------------------------------------


def test_error_handling_helpers(caplog):
    import numpy as np

    from figaroh.utils import error_handling as eh

    assert issubclass(eh.ConfigurationError, ValueError)
    assert issubclass(eh.ConfigurationError, eh.FigarohExampleError)
    for cls in (eh.ValidationError, eh.DataProcessingError, eh.CalibrationError):
        assert issubclass(cls, eh.FigarohExampleError)

    with pytest.raises(eh.ValidationError, match="robot_name"):
        eh.validate_robot_config({"task_type": "x"})
    eh.validate_robot_config({"robot_name": "ur10"})
    q = np.zeros((5, 3))
    eh.validate_trajectory_data(q, q.copy(), q.copy(), q.copy())
    bad = q.copy()
    bad[2, 1] = np.nan
    with pytest.raises(eh.ValidationError, match="qdd contains 1 NaN"):
        eh.validate_trajectory_data(q, q, bad)
    with pytest.raises(eh.ValidationError, match=r"tau has shape \(5, 2\)"):
        eh.validate_trajectory_data(q, tau=np.zeros((5, 2)))
    with pytest.raises(eh.ValidationError, match="2-D"):
        eh.validate_trajectory_data(np.zeros(3))
    eh.validate_numeric_range(0.5, 0.0, 1.0, name="ratio")
    with pytest.raises(eh.ValidationError, match="ratio=2"):
        eh.validate_numeric_range(2, 0.0, 1.0, name="ratio")
    with pytest.raises(eh.ValidationError, match="finite"):
        eh.validate_numeric_range(float("inf"), name="x")

    @eh.handle_identification_errors
    def solve(x):
        if x == 0:
            raise ValueError("singular")
        if x == 1:
            raise KeyError("k")
        return x

    assert solve(3) == 3
    with pytest.raises(eh.IdentificationError, match="Identification failed: singular") as err:
        solve(0)
    assert isinstance(err.value.__cause__, ValueError)
    with pytest.raises(eh.IdentificationError, match="Unexpected identification error"):
        solve(1)

    @eh.validate_input_data
    def mean(a):
        return float(a.mean())

    assert mean(np.ones(3)) == 1.0
    with pytest.raises(eh.ValidationError, match="NaN"):
        mean(np.array([1.0, np.nan]))
    with pytest.raises(eh.DataProcessingError):
        mean(None)

    assert eh.safe_execute(int, "4") == (True, 4)
    ok, exc = eh.safe_execute(int, "four")
    assert not ok and isinstance(exc, ValueError)

    with eh.ErrorContext("step", raise_on_error=False) as ctx:
        raise RuntimeError("swallowed")
    assert isinstance(ctx.error, RuntimeError) and "step" in repr(ctx)
    with pytest.raises(RuntimeError), eh.ErrorContext("step"):
        raise RuntimeError("kept")
    example_logger = eh.setup_example_logging("DEBUG")
    assert example_logger.name == "figaroh_examples" and len(example_logger.handlers) == 1
    with pytest.raises(eh.ValidationError, match="log_level"):
        eh.setup_example_logging("LOUD")
    for handler in list(example_logger.handlers):
        example_logger.removeHandler(handler)


# ---------------------------------------------------------------------------
# YAML node budget (figaroh.utils.yaml_budget)
# ---------------------------------------------------------------------------

GOLDEN_CONFIGS = ROOT.parent / "shared" / "golden" / "configs"

_BOMB_SCRIPT = """
import resource, sys, time, tracemalloc
from figaroh.utils.config_parser import UnifiedConfigParser
from figaroh.utils.yaml_budget import YamlBudgetError
tracemalloc.start()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    UnifiedConfigParser(sys.argv[1]).parse()
    outcome = "parsed"
except YamlBudgetError as exc:
    outcome = "refused: " + str(exc)
elapsed = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
print(f"{elapsed:.4f} {peak} {rss}")
print(outcome)
"""


def _alias_bomb(levels: int = 8, fan_out: int = 9) -> str:
    lines = ["tasks: {}", f"a0: &a0 [{', '.join(['lol'] * fan_out)}]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan_out)}]")
    lines.append(f"robot: {{name: bomb, description: *a{levels}}}")
    return "\n".join(lines) + "\n"


def test_alias_bomb_refused_in_little_memory(tmp_path: Path) -> None:
    """Eight levels of nine aliases (9^8 ≈ 4.3e7 nodes) refused before any copy."""

    bomb = write(tmp_path / "bomb.yaml", _alias_bomb())
    assert bomb.stat().st_size < 1400
    run = subprocess.run(
        [sys.executable, "-c", _BOMB_SCRIPT, str(bomb)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    numbers, outcome = run.stdout.strip().splitlines()
    elapsed, peak, rss_kib = numbers.split()
    print(f"alias bomb refused in {float(elapsed):.3f} s, peak {int(peak) / 1e6:.2f} MB traced")
    assert outcome.startswith("refused: ")
    assert "bomb.yaml" in outcome and "FIGAROH_YAML_MAX_NODES" in outcome
    assert int(peak) < 100e6
    assert int(rss_kib) * 1024 < 100e6


def test_budget_counts_shared_nodes_once_per_use() -> None:

    node = yaml.compose("a: &x [1, 2, 3]\nb: [*x, *x]\n")
    # root + (a, [1,2,3]=4) + (b, list + 2 * 4)
    assert expanded_node_count(node, 10**6) == 1 + (1 + 4) + (1 + 1 + 2 * 4)


def test_budgeted_load_has_safe_load_semantics(tmp_path: Path) -> None:

    text = "base: &b {x: 1, y: [1, 2]}\nchild:\n  <<: *b\n  y: [3]\nn: ~\nf: 1.5e-3\n"
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml("") is None
    with pytest.raises(yaml.YAMLError):
        load_yaml("!!python/object:os.system {}")
    path = write(tmp_path / "small.yaml", "a: [1, 2, 3]\n")
    assert load_yaml_file(path, max_nodes=6) == {"a": [1, 2, 3]}
    with pytest.raises(YamlBudgetError, match=r"small\.yaml expands to more than 5 nodes"):
        load_yaml_file(path, max_nodes=5)


def test_is_unified_config_never_raises_on_a_bomb(tmp_path: Path) -> None:
    bomb = write(tmp_path / "bomb.yaml", _alias_bomb())
    assert is_unified_config(bomb) is False
    with pytest.raises(ConfigurationError, match="expands to more than"):
        require_unified_config(bomb)


# ---------------------------------------------------------------------------
# known keys (figaroh.utils.config_keys)
# ---------------------------------------------------------------------------


def _figaroh_config_files() -> list[Path]:
    shared = ROOT.parent / "shared" / "data"
    files = sorted(ROOT.glob("config/**/*.yaml")) + sorted(ROOT.glob("examples/*/config*/*.yaml"))
    files += [
        p
        for p in sorted(shared.glob("**/*.yaml"))
        if "models" not in p.relative_to(shared).parts
        and "calibration_joint_configurations" not in p.read_text(encoding="utf-8")
    ]
    return files


def _golden_config(tmp_path: Path, template: Path) -> Path:
    marker = (
        "        - {name: m1, reference_joint: j1, "
        "measurable_dof: [true, true, true, false, false, false]}"
    )
    text = template.read_text(encoding="utf-8").replace("@MARKERS@", marker)
    text = text.replace('"@DATA@"', '"data.csv"').replace("@JOINTS@", "[j1]")
    text = re.sub(r"@[A-Z_]+@", "1", text)
    return write(tmp_path / template.name, text)


@pytest.mark.parametrize(
    "path", _figaroh_config_files(), ids=lambda p: f"{p.parent.parent.name}/{p.name}"
)
def test_every_shipped_config_key_is_known_in_strict_mode(path: Path) -> None:
    """figaroh 1.0.2 configs (unified or legacy) carry only known keys."""

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownConfigKeyWarning)
        doc = load_yaml_file(path)
        unified = is_unified_config(path)
        schema = "unified" if unified else "legacy"
        assert check_document(doc, str(path), schema=schema, strict=True) == []
        if unified and path.parent.name != "templates":
            UnifiedConfigParser(path, strict=True).parse()


@pytest.mark.skipif(not GOLDEN_CONFIGS.is_dir(), reason="golden kit not found")
def test_golden_configs_keys_are_known(tmp_path: Path) -> None:
    templates = sorted(GOLDEN_CONFIGS.glob("*.yaml"))
    assert templates
    for template in templates:
        UnifiedConfigParser(_golden_config(tmp_path, template), strict=True).parse()


def test_unknown_key_suggestion_and_free_sections() -> None:

    doc = {
        "custom": {"anything": {"goes": 1}},
        "_anchors": {"x": 1},
        "tasks": {
            "identification": {"problem": {"model_components": {"fricton": False}}},
            "my_task": {"signal_processing": {"filter_ordr": 8}},
        },
        "robot": {"name": "r", "properties": {"mechanics": {"reduction_ratio": [1]}}},
    }
    found = {u.path: u.suggestion for u in find_unknown_keys(doc, UNIFIED_SCHEMA)}
    assert found == {
        "tasks.identification.problem.model_components.fricton": (
            "tasks.identification.problem.model_components.friction"
        ),
        "tasks.my_task.signal_processing.filter_ordr": (
            "tasks.my_task.signal_processing.filter_order"
        ),
        "robot.properties.mechanics.reduction_ratio": "robot.properties.mechanics.reduction_ratios",
    }


def test_strict_false_overrides_file_and_environment(tmp_path: Path, monkeypatch) -> None:

    path = write(tmp_path / "r.yaml", "strict_keys: true\nrobot: {name: a, colour: red}\n")
    with pytest.raises(UnknownConfigKeyError, match=r"'robot\.colour'"):
        UnifiedConfigParser(path).parse()
    with pytest.warns(UserWarning, match=r"'robot\.colour'"):
        UnifiedConfigParser(path, strict=False).parse()
    monkeypatch.setenv(STRICT_ENV, "1")
    lax = write(tmp_path / "lax.yaml", "robot: {name: a, colour: red}\n")
    with pytest.raises(UnknownConfigKeyError):
        parse_configuration(lax)


def test_key_registry_knows_every_optimal_trajectory_key_the_reader_uses():
    """The registry (utils, below optimal) lists the problem keys optimal.config reads."""
    from figaroh.optimal.config import COLLISION_DEFAULTS, TRAJECTORY_DEFAULTS
    from figaroh.utils import config_keys

    read = [k for k in TRAJECTORY_DEFAULTS if k not in ("n_wps", "freq", "t_s")]
    read += list(COLLISION_DEFAULTS)
    assert set(read) <= set(config_keys._TRAJECTORY_PROBLEM)
