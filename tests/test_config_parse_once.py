"""The configuration step reads each YAML file once and gives the same dicts as before.

Two kinds of checks:

* **Snapshot**: for every configuration shipped in ``config/``,
  ``examples/*/config/`` and the templates, and for the golden kit's configs
  (placeholders filled as the kit's cases fill them), the resolved document
  (:meth:`UnifiedConfigParser.parse`, every variant), the task configs
  (:func:`create_task_config`), the ``identif_config`` /
  ``calib_config`` dicts and the refusals (exception type and message) are
  compared with ``tests/config_parse_snapshot.json``. The snapshot was
  recorded with the code *before* the parse-once work (``python
  tests/test_config_parse_once.py --record``); the encoding keeps dict key
  order, exact float bits (``float.hex``), types, numpy dtypes and shapes,
  so the comparison is stricter than ``==``.
* **Parse count and isolation**: one ``BaseIdentification`` /
  ``BaseCalibration`` construction composes each distinct file at most once;
  dicts handed to callers share no mutable object with the loader's cache
  or with each other.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from figaroh.calibration.config import load_calibration_config, unified_to_legacy_config
from figaroh.identification.base_identification import BaseIdentification
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.tools.robot import Robot
from figaroh.utils import config_parser, unified_config, yaml_budget
from figaroh.utils.config_parser import UnifiedConfigParser, create_task_config

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
MODELS = SHARED / "data" / "models"
GOLDEN_CONFIGS = SHARED / "golden" / "configs"
SNAPSHOT = Path(__file__).resolve().parent / "config_parse_snapshot.json"

URDFS = {
    "ur10": MODELS / "ur_description" / "urdf" / "ur10_robot.urdf",
    "tiago": SHARED / "data" / "tiago" / "urdf" / "tiago_48_schunk.urdf",
    "tiago_no_hand": SHARED / "data" / "tiago" / "urdf" / "tiago_no_hand.urdf",
    "tx40": SHARED / "data" / "staubli_tx40" / "tx40_mdh_modified.urdf",
    "talos": SHARED / "data" / "talos" / "talos_full_v2.urdf",
    "mate": SHARED / "data" / "mate" / "urdf" / "mate.urdf",
}
UR10_JOINTS = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
)

#: ``(config file relative to ROOT or "golden:<name>", robot key or None)``.
SHIPPED = (
    ("config/ur10_unified_config.yaml", "ur10"),
    ("examples/mate/config/mate_calibration.yaml", "mate"),
    ("examples/staubli_tx40/config/staubli_tx40_unified_config.yaml", "tx40"),
    ("examples/talos/config/talos_calibration.yaml", "talos"),
    ("examples/tiago/config/tiago_calibration.yaml", "tiago"),
    ("examples/tiago/config/tiago_unified_config.yaml", "tiago"),
    ("config/templates/base_robot_config.yaml", None),
    ("config/templates/manipulator_robot.yaml", None),
    ("config/templates/humanoid_robot.yaml", None),
    ("src/figaroh/config/templates/base_robot_config.yaml", None),
    ("src/figaroh/config/templates/manipulator_robot.yaml", None),
    ("src/figaroh/config/templates/humanoid_robot.yaml", None),
)
#: Documents written by the test: refusals and YAML corner cases (name, bytes).
ODD_DOCUMENTS = (
    ("bomb.yaml", None),  # filled by _alias_bomb()
    ("recursive.yaml", b"robot: {name: r}\ntasks: {}\na: &a [1, *a]\n"),
    ("invalid.yaml", b"robot: {name: r\ntasks: [1, 2\n"),
    ("not_utf8.yaml", b'robot: {name: "r\\xff"}\nx: \xff\xfe\n'),
    ("sequence.yaml", b"- 1\n- 2\n"),
    ("empty.yaml", b""),
    ("legacy.yaml", b"identification:\n  robot_params:\n  - {q_lim_def: 1.57}\n"),
    ("missing_template.yaml", b"extends: nowhere.yaml\nrobot: {name: a}\n"),
    ("self_extends.yaml", b"extends: self_extends.yaml\nrobot: {name: a}\n"),
    ("python_tag.yaml", b"tasks: {}\nrobot: !!python/object:os.system {}\n"),
    ("deep.yaml", b"tasks: {}\nrobot: {name: d}\nx: " + b"[" * 3000 + b"]" * 3000 + b"\n"),
    (
        "crlf.yaml",
        b"robot:\r\n  name: a\r\n  description: |\r\n    one\r\n    two\r\n"
        b'tasks: {}\r\nnote: "x\r\n  y"\r\n',
    ),
    ("cr.yaml", b"robot:\r  name: a\r  description: >\r    one\r    two\rtasks: {}\r"),
    ("bom.yaml", "\ufeffrobot: {name: \u00e9}\ntasks: {}\n".encode("utf-8")),
    (
        "types.yaml",
        b"robot: {name: t}\ntasks: {}\ncustom:\n  base: &b {x: 1, y: [1, 2]}\n"
        b"  child: {<<: *b, y: [3]}\n  again: *b\n  s: !!set {a, b}\n"
        b"  o: !!omap [{k: {v: 1}}, {l: 2}]\n  bin: !!binary aGVsbG8=\n"
        b"  when: 2001-12-14t21:59:43.10-05:00\n  day: 2002-12-14\n  big: 12345678901234567890\n"
        b"  f: [.inf, -.inf, .nan, 1e-300, 0x1F, 0o17, 1_000]\n  n: [~, null, Null]\n"
        b"  1: int key\n  1.5: float key\n  [1, 2]: seq key\n",
    ),
    ("types_ok.yaml", None),  # types.yaml without the unhashable key
    (
        "variables.yaml",
        b'variables: {v: 7}\nrobot: {name: "${robot_name_x}", k: "${v}", '
        b'm: "${custom}"}\ntasks: {}\ncustom: {a: [1, {b: 2}]}\nrobot_name_x: z\n',
    ),
)

GOLDEN = (
    ("golden:calibration.yaml", "ur10"),
    ("golden:ur10_identification.yaml", "ur10"),
    ("golden:tiago_identification.yaml", "tiago_no_hand"),
)


# ---------------------------------------------------------------------------
# exact, order-keeping encoding
# ---------------------------------------------------------------------------


def _float(value: float) -> Any:
    if math.isfinite(value):
        return {"f": value.hex()}
    return {"f": repr(value)}


def encode(obj: Any) -> Any:
    """JSON-able, order-keeping, type-keeping image of ``obj`` (floats as hex)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int) and not isinstance(obj, bool):
        return {"i": str(obj)} if type(obj) is int else {type(obj).__name__: str(obj)}
    if isinstance(obj, float):
        return _float(obj) if type(obj) is float else {type(obj).__name__: float(obj).hex()}
    if isinstance(obj, dict):
        return {"dict:" + type(obj).__name__: [[encode(k), encode(v)] for k, v in obj.items()]}
    if isinstance(obj, list):
        return {"list": [encode(v) for v in obj]}
    if isinstance(obj, tuple):
        return {"tuple": [encode(v) for v in obj]}
    if isinstance(obj, (set, frozenset)):
        return {type(obj).__name__: sorted(json.dumps(encode(v)) for v in obj)}
    if isinstance(obj, np.ndarray):
        return {
            "ndarray": str(obj.dtype),
            "shape": list(obj.shape),
            "data": [encode(v) for v in obj.ravel().tolist()],
        }
    if isinstance(obj, np.generic):
        return {"np:" + type(obj).__name__: encode(obj.item())}
    return {"repr:" + type(obj).__name__: [repr(v) for v in obj] if _iterable(obj) else repr(obj)}


def _iterable(obj: Any) -> bool:
    try:
        iter(obj)
    except TypeError:
        return False
    return True


# ---------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------


def _golden_text(name: str, robot: Any) -> str:
    """The golden kit's config template filled as its cases fill it."""
    text = (GOLDEN_CONFIGS / name).read_text(encoding="utf-8")
    fills = {
        "calibration.yaml": {
            "@NAME@": "ur10",
            "@JOINTS@": "[" + ", ".join(UR10_JOINTS) + "]",
            "@LEVEL@": "full_params",
            "@OUTLIER@": "0.005",
            "@BASE@": "universe",
            "@TOOL@": "wrist_3_link",
            "@MARKERS@": "        - name: marker_1\n"
            "          measurable_dof: [true, true, true, true, true, true]",
            "@DATA@": "@SHARED@/data/ur10/calibration.csv",
            "@NSAMPLE@": "23",
        },
        "ur10_identification.yaml": {
            "@FRICTION@": "true",
            "@IA@": "false",
            "@OFF@": "true",
            "@VAL@": "heldout_ur10",
            "@FS@": "100.0",
            "@FC@": "10.0",
            "@MED@": "5",
            "@DIFF@": "gradient",
        },
        "tiago_identification.yaml": {
            "@ZEROS@": "[" + ", ".join(["0"] * (robot.model.njoints - 1)) + "]",
            "@VAL@": "tiago_tail",
        },
    }[name]
    for key, value in fills.items():
        text = text.replace(key, value)
    return text.replace("@SHARED@", str(SHARED.resolve())).replace(
        "@GOLDEN@", str(GOLDEN_CONFIGS.parent.resolve())
    )


def _alias_bomb(levels: int = 8, fan_out: int = 9) -> str:
    lines = ["tasks: {}", f"a0: &a0 [{', '.join(['lol'] * fan_out)}]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan_out)}]")
    lines.append(f"robot: {{name: bomb, description: *a{levels}}}")
    return "\n".join(lines) + "\n"


def _odd_cases(path: Path, robot: Any) -> dict[str, Any]:
    """Refusals and values of the entry points on one odd document."""
    out = {
        "load_yaml_file": _outcome(lambda: yaml_budget.load_yaml_file(path)),
        "is_unified_config": _outcome(lambda: config_parser.is_unified_config(path)),
        "require_unified_config": _outcome(lambda: config_parser.require_unified_config(path)),
        "parse": _outcome(lambda: UnifiedConfigParser(path).parse()),
        "get_param_from_yaml": _outcome(
            lambda: config_parser.get_param_from_yaml(None, path, "calibration")
        ),
        "BaseIdentification.identif_config": _outcome(
            lambda: _Identification(robot, str(path)).identif_config
        ),
        "load_calibration_config": _outcome(lambda: load_calibration_config(robot, path)),
    }
    old = os.environ.get(yaml_budget.MAX_NODES_ENV)
    os.environ[yaml_budget.MAX_NODES_ENV] = "5"
    try:
        out["parse[max_nodes=5]"] = _outcome(lambda: UnifiedConfigParser(path).parse())
        out["is_unified_config[max_nodes=5]"] = _outcome(
            lambda: config_parser.is_unified_config(path)
        )
    finally:
        if old is None:
            del os.environ[yaml_budget.MAX_NODES_ENV]
        else:
            os.environ[yaml_budget.MAX_NODES_ENV] = old
    return out


def _robots() -> dict[str, Any]:
    return {key: Robot(str(urdf), load_geometry=False) for key, urdf in URDFS.items()}


class _Identification(BaseIdentification):
    def load_trajectory_data(self, data_source=None):  # pragma: no cover - never called
        raise NotImplementedError


def _outcome(fn) -> Any:
    """``{"ok": encode(fn())}`` or ``{"error": [type name, message]}``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return {"ok": encode(fn())}
    except Exception as exc:  # noqa: BLE001 - the refusal itself is recorded
        return {"error": [type(exc).__name__, str(exc)]}


def _variants(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    doc = yaml_budget.load_yaml(text)
    variants = doc.get("variants") if isinstance(doc, dict) else None
    return sorted(variants) if isinstance(variants, dict) else []


def _file_cases(path: Path, robot: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for variant in [None, *_variants(path)]:
        tag = f"variant={variant}"
        out[f"parse[{tag}]"] = _outcome(lambda v=variant: UnifiedConfigParser(path, v).parse())
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                parsed = UnifiedConfigParser(path, variant).parse()
        except Exception:  # noqa: BLE001 - recorded above
            continue
        for task in sorted(parsed.get("tasks") or {}):
            out[f"task_config[{tag},{task},robot=None]"] = _outcome(
                lambda t=task, v=variant: create_task_config(
                    None, UnifiedConfigParser(path, v).parse(), t
                )
            )
            if robot is None:
                continue
            task_config = _outcome(
                lambda t=task, v=variant: create_task_config(
                    robot, UnifiedConfigParser(path, v).parse(), t
                )
            )
            out[f"task_config[{tag},{task}]"] = task_config
            if "ok" not in task_config:
                continue
            for name, convert in (
                ("identif_config", unified_to_legacy_identif_config),
                ("calib_config", unified_to_legacy_config),
            ):
                out[f"{name}[{tag},{task}]"] = _outcome(
                    lambda t=task, v=variant, c=convert: c(
                        robot, create_task_config(robot, UnifiedConfigParser(path, v).parse(), t)
                    )
                )
    if robot is not None:
        out["BaseIdentification.identif_config"] = _outcome(
            lambda: _Identification(robot, str(path)).identif_config
        )
        out["load_calibration_config"] = _outcome(lambda: load_calibration_config(robot, path))
    return out


def collect(work: Path) -> dict[str, Any]:
    """Every recorded outcome, paths replaced by ``<ROOT>``, ``<SHARED>``, ``<WORK>``."""
    robots = _robots()
    result: dict[str, Any] = {}
    for rel, key in SHIPPED + GOLDEN:
        robot = robots.get(key) if key else None
        if rel.startswith("golden:"):
            name = rel.split(":", 1)[1]
            path = work / name
            path.write_text(_golden_text(name, robot), encoding="utf-8")
        else:
            path = ROOT / rel
        result[rel] = _file_cases(path, robot)
    for name, content in ODD_DOCUMENTS:
        path = work / name
        if name == "types_ok.yaml":
            content = dict(ODD_DOCUMENTS)["types.yaml"].replace(b"  [1, 2]: seq key\n", b"")
        path.write_bytes(_alias_bomb().encode() if content is None else content)
        result[f"odd:{name}"] = _odd_cases(path, robots["ur10"])
    result["odd:ur10[max_nodes=5]"] = {
        k: v for k, v in _odd_cases(ROOT / SHIPPED[0][0], robots["ur10"]).items() if "=5" in k
    }
    text = json.dumps(result, sort_keys=False)
    for real, tag in (
        (str(work.resolve()), "<WORK>"),
        (str(SHARED.resolve()), "<SHARED>"),
        (str(ROOT.resolve()), "<ROOT>"),
        (str(Path.cwd().resolve()), "<CWD>"),
    ):
        text = text.replace(json.dumps(real)[1:-1], tag)
    return json.loads(text)


def _have_inputs() -> bool:
    return (
        SNAPSHOT.is_file() and GOLDEN_CONFIGS.is_dir() and all(p.is_file() for p in URDFS.values())
    )


needs_inputs = pytest.mark.skipif(not _have_inputs(), reason="shared data / snapshot not found")


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------


@needs_inputs
def test_resolved_configs_identical_to_the_snapshot(tmp_path: Path, monkeypatch) -> None:
    """parse / create_task_config / identif_config / calib_config as recorded before."""
    monkeypatch.chdir(tmp_path)
    yaml_budget.clear_yaml_cache()
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    work = tmp_path / "work"
    work.mkdir()
    # twice: the first run fills the parsed-YAML cache, the second reads from it
    for _ in range(2):
        got = collect(work)
        assert sorted(got) == sorted(expected)
        for rel in expected:
            assert sorted(got[rel]) == sorted(expected[rel]), rel
            for key in expected[rel]:
                assert got[rel][key] == expected[rel][key], (rel, key)


def test_snapshot_covers_every_shipped_config() -> None:
    shipped = {str(p.relative_to(ROOT)) for p in ROOT.glob("config/**/*.yaml")}
    shipped |= {str(p.relative_to(ROOT)) for p in ROOT.glob("examples/*/config/*.yaml")}
    shipped |= {
        str(p.relative_to(ROOT)) for p in (ROOT / "src/figaroh/config/templates").glob("*.yaml")
    }
    assert shipped <= {rel for rel, _ in SHIPPED}
    if GOLDEN_CONFIGS.is_dir():
        assert {f"golden:{p.name}" for p in GOLDEN_CONFIGS.glob("*.yaml")} <= {
            rel for rel, _ in GOLDEN
        }


CONFIG = ROOT / "config" / "ur10_unified_config.yaml"


def _ur10() -> Robot:
    return Robot(str(URDFS["ur10"]), load_geometry=False)


def _count_parses(monkeypatch) -> list[str]:
    """Record the source of every composed YAML document from now on."""
    seen: list[str] = []
    real = yaml_budget._load

    def counting(stream, source, limit):
        seen.append(Path(source).name)
        return real(stream, source, limit)

    monkeypatch.setattr(yaml_budget, "_load", counting)
    return seen


def _count_reads(monkeypatch) -> list[str]:
    """Record every file read through the cached loader from now on."""
    seen: list[str] = []
    real = yaml_budget.load_yaml_file_cached

    def counting(path, max_nodes=None):
        seen.append(Path(path).name)
        return real(path, max_nodes)

    for module in (yaml_budget, unified_config, sys.modules["figaroh.calibration.config"]):
        if hasattr(module, "load_yaml_file_cached"):
            monkeypatch.setattr(module, "load_yaml_file_cached", counting)
    return seen


@pytest.mark.skipif(not URDFS["ur10"].is_file(), reason="shared UR10 model not found")
def test_each_file_parsed_once_per_construction(monkeypatch) -> None:
    """A construction composes each distinct file once; the next one composes none."""
    robot = _ur10()
    files = ["ur10_unified_config.yaml", "manipulator_robot.yaml", "base_robot_config.yaml"]
    for build in (
        lambda: _Identification(robot, str(CONFIG)),
        lambda: load_calibration_config(robot, CONFIG),
        lambda: config_parser.load_unified_config(CONFIG),
        lambda: config_parser.get_param_from_yaml(robot, CONFIG, "identification"),
    ):
        yaml_budget.clear_yaml_cache()
        parses = _count_parses(monkeypatch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build()
            assert sorted(parses) == sorted(files)
            parses.clear()
            build()
        assert parses == []
        monkeypatch.undo()


@pytest.mark.skipif(not URDFS["ur10"].is_file(), reason="shared UR10 model not found")
def test_each_file_read_once_by_the_single_read_entry_points(monkeypatch) -> None:
    robot = _ur10()
    for build in (
        lambda: load_calibration_config(robot, CONFIG),
        lambda: config_parser.load_unified_config(CONFIG),
        lambda: config_parser.get_param_from_yaml(robot, CONFIG, "calibration"),
    ):
        reads = _count_reads(monkeypatch)
        build()
        assert sorted(reads) == [
            "base_robot_config.yaml",
            "manipulator_robot.yaml",
            "ur10_unified_config.yaml",
        ]
        monkeypatch.undo()


def _mutate_everything(node: Any) -> None:
    if isinstance(node, dict):
        for key in list(node):
            _mutate_everything(node[key])
        node["__mutated__"] = True
    elif isinstance(node, list):
        for item in node:
            _mutate_everything(item)
        node.append("__mutated__")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_cached_documents_are_never_shared(tmp_path: Path) -> None:
    """Every call owns its value: mutating one reaches neither the cache nor the others."""
    yaml_budget.clear_yaml_cache()
    path = tmp_path / "r.yaml"
    path.write_text(
        "robot: {name: r, properties: {joints: {active_joints: [a, b]}}}\n"
        "tasks: {t: {enabled: true, problem: {x: [1, {y: 2}]}}}\n"
        "shared: &s {k: [1, 2]}\nagain: *s\n",
        encoding="utf-8",
    )
    reference = yaml_budget.load_yaml_file(path)
    first = yaml_budget.load_yaml_file_cached(path)  # miss: parsed, a copy stored
    second = yaml_budget.load_yaml_file_cached(path)  # hit: a copy of the stored value
    assert first == second == reference
    assert first is not second and first["tasks"] is not second["tasks"]
    assert second["again"] is second["shared"]  # alias sharing kept, as yaml.safe_load does
    _mutate_everything(first)
    _mutate_everything(second)
    assert yaml_budget.load_yaml_file_cached(path) == reference

    parsed = [UnifiedConfigParser(path).parse() for _ in range(2)]
    _mutate_everything(parsed[0])
    assert parsed[1] == UnifiedConfigParser(path).parse()
    task = create_task_config(None, parsed[1], "t")
    _mutate_everything(task)
    assert parsed[1] == UnifiedConfigParser(path).parse()


def test_cache_is_keyed_by_content_and_rechecks_the_budget(tmp_path: Path, monkeypatch) -> None:
    yaml_budget.clear_yaml_cache()
    path = tmp_path / "small.yaml"
    path.write_text("a: [1, 2, 3]\n", encoding="utf-8")
    assert yaml_budget.load_yaml_file_cached(path) == {"a": [1, 2, 3]}
    # 6 nodes: accepted with 6, refused with 5 exactly as the uncached loader refuses
    assert yaml_budget.load_yaml_file_cached(path, max_nodes=6) == {"a": [1, 2, 3]}
    with pytest.raises(yaml_budget.YamlBudgetError) as cached:
        yaml_budget.load_yaml_file_cached(path, max_nodes=5)
    with pytest.raises(yaml_budget.YamlBudgetError) as uncached:
        yaml_budget.load_yaml_file(path, max_nodes=5)
    assert str(cached.value) == str(uncached.value)
    monkeypatch.setenv(yaml_budget.MAX_NODES_ENV, "5")
    with pytest.raises(yaml_budget.YamlBudgetError, match="more than 5 nodes"):
        yaml_budget.load_yaml_file_cached(path)
    monkeypatch.delenv(yaml_budget.MAX_NODES_ENV)
    # same size, new content: parsed again
    path.write_text("a: [4, 5, 6]\n", encoding="utf-8")
    assert yaml_budget.load_yaml_file_cached(path) == {"a": [4, 5, 6]}
    # errors are not cached: a fixed file loads
    path.write_text("a: [1, 2\n", encoding="utf-8")
    with pytest.raises(Exception) as bad:
        yaml_budget.load_yaml_file_cached(path)
    with pytest.raises(type(bad.value)) as bad_uncached:
        yaml_budget.load_yaml_file(path)
    assert str(bad.value) == str(bad_uncached.value)
    path.write_text("a: [1, 2]\n", encoding="utf-8")
    assert yaml_budget.load_yaml_file_cached(path) == {"a": [1, 2]}


def _documents() -> list[tuple[str, str]]:
    docs = [(p.name, p.read_text(encoding="utf-8")) for rel, _ in SHIPPED for p in [ROOT / rel]]
    docs += [(name, text.decode("utf-8")) for name, text in ODD_DOCUMENTS if _utf8(text)]
    docs.append(("bomb.yaml", _alias_bomb()))
    docs.append(("shared.yaml", "a: &x [1, 2, 3]\nb: [*x, *x]\nc: {<<: {k: *x}}\n"))
    return docs


def _utf8(text: bytes | None) -> bool:
    try:
        return text is not None and bool(text.decode("utf-8"))
    except UnicodeDecodeError:
        return False


@pytest.mark.parametrize("name,text", _documents(), ids=[d[0] for d in _documents()])
def test_tree_count_equals_the_memoised_count(name: str, text: str) -> None:
    """The one-walk count of alias-free documents equals the memoised count, refusals too."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return
    if node is None:
        return
    for limit in (10**9, 10**6, 5, 1):
        outcomes = []
        for count in (
            lambda n=limit: yaml_budget.expanded_node_count(node, n, name),
            lambda n=limit: yaml_budget._shared_size(node, n, name),
        ):
            try:
                outcomes.append(("ok", count()))
            except yaml_budget.YamlBudgetError as exc:
                outcomes.append(("refused", str(exc)))
        assert outcomes[0] == outcomes[1], limit


@pytest.mark.parametrize("name,text", _documents(), ids=[d[0] for d in _documents()])
def test_pure_python_loader_gives_the_same_values(name: str, text: str, monkeypatch) -> None:
    """libyaml (CSafeLoader) and the pure-Python SafeLoader: same values, same refusals."""
    import yaml

    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML built without libyaml")
    if name == "deep.yaml":
        pytest.skip("3000 nested lists: libyaml refuses them as invalid, Python as too deep")

    def load() -> Any:
        try:
            return ("ok", encode(yaml_budget.load_yaml(text, name)))
        except yaml_budget.YamlBudgetError as exc:
            return ("refused", str(exc))
        except yaml.YAMLError as exc:
            return ("invalid", type(exc).__name__)

    with_c = load()
    monkeypatch.delattr(yaml, "CSafeLoader")
    assert load() == with_c


def test_plain_deepcopy_is_deepcopy() -> None:
    import copy
    import datetime

    inner = {"k": [1, 2.5, None, "s", b"b"]}
    doc: dict[Any, Any] = {
        "a": inner,
        "b": inner,
        1: [inner, (1, [2])],
        "set": {1, 2},
        "when": datetime.date(2020, 1, 2),
    }
    doc["self"] = doc
    ours, theirs = yaml_budget.plain_deepcopy(doc), copy.deepcopy(doc)
    assert encode({k: v for k, v in ours.items() if k != "self"}) == encode(
        {k: v for k, v in theirs.items() if k != "self"}
    )
    assert ours["self"] is ours and ours["a"] is ours["b"] is ours[1][0]
    assert ours["a"] is not inner and ours[1][1][1] is not doc[1][1][1]
    assert list(ours) == list(doc)


@needs_inputs
def test_load_unified_config_is_require_then_parse(tmp_path: Path) -> None:
    """Same value or same refusal as require_unified_config + UnifiedConfigParser.parse."""
    paths = [ROOT / rel for rel, _ in SHIPPED]
    for name, content in ODD_DOCUMENTS:
        path = tmp_path / name
        path.write_bytes(_alias_bomb().encode() if content is None else content)
        paths.append(path)
    paths.append(tmp_path / "absent.yaml")

    def old(path: Path) -> Any:
        config_parser.require_unified_config(path)
        return UnifiedConfigParser(path).parse()

    for path in paths:
        assert _outcome(lambda p=path: config_parser.load_unified_config(p)) == _outcome(
            lambda p=path: old(p)
        ), path


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        raise SystemExit("usage: python tests/test_config_parse_once.py --record")
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        work = Path(tmp) / "work"
        work.mkdir()
        data = collect(work)
    SNAPSHOT.write_text(json.dumps(data, indent=0, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT} ({sum(len(v) for v in data.values())} outcomes)")
