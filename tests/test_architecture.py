"""Architecture rules, checked on the source tree with :mod:`ast`.

* no import cycle among figaroh's modules (every ``import`` counts, wherever
  it sits, and importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``;
  a deferred ``lazy_module("a.b")`` counts as an import of ``a.b``);
* no function-level import of figaroh's own modules, no ``try: import figaroh…
  except ImportError`` guard and no ``importlib.import_module("figaroh…")`` dodge;
* no upward import across the layers listed in :data:`LAYERS`;
* the pipeline steps never see the run object (``BaseIdentification`` /
  ``BaseCalibration``);
* one exception root: every exception class figaroh defines derives from
  :class:`figaroh.errors.FigarohError`;
* docstrings are self-contained: no citation of documents outside the
  repository (``notes.md §3``) and no issue numbers.

Each rule is also exercised on a small synthetic tree, so a checker that
stopped seeing violations would fail here too.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "figaroh"

#: Layers, lowest first. A module may import modules of its own layer or of a
#: lower one. The first matching prefix decides a module's layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    # 0: leaves every module may use
    (
        "figaroh.errors",
        "figaroh._optional",
        "figaroh.utils.fileio",
        "figaroh.utils._lazy",
        "figaroh.utils.error_handling",
    ),
    # 1: numerics, data and robot models
    (
        "figaroh.tools.joint_terms",
        "figaroh.tools.effort_units",
        "figaroh.tools.inertia",
        "figaroh.tools._urdf_xml",
        "figaroh.tools._timestamps",
        "figaroh.tools.exceptions",
        "figaroh.tools.robot_paths",
        "figaroh.tools.load_robot",
        "figaroh.tools.robot",
        "figaroh.tools.regressor",
        "figaroh.tools.qrdecomposition",
        "figaroh.tools.solver",
        "figaroh.tools.randomdata",
        "figaroh.tools.robotcollisions",
        "figaroh.tools.robotipopt",
        "figaroh.tools.robotvisualization",
        "figaroh.tools.urdf_exporter",
        "figaroh.backends",
        "figaroh.data",
        "figaroh.measurements",
        "figaroh.utils.cubic_spline",
        "figaroh.utils.config_parser",
        "figaroh.utils._legacy_unified",
        "figaroh.utils.yaml_budget",
        "figaroh.utils.config_keys",
    ),
    # 2: run services shared by every task
    (
        "figaroh._run",
        "figaroh.tools.stages",
        "figaroh.tools.provenance",
        "figaroh.tools.run_archive",
        "figaroh.tools._report_common",
        "figaroh.tools.report",
        "figaroh.tools.compare_report",
        "figaroh.tools.export_validation",
        "figaroh.tools.validation_viewer",
        "figaroh.utils.results_manager",
    ),
    # 3: the tasks
    (
        "figaroh.identification",
        "figaroh.calibration",
        "figaroh.tools.identification_report",
        "figaroh.tools.geometric_calibration_export",
        "figaroh.optimal",
    ),
    # 4: front ends
    (
        "figaroh.integration",
        "figaroh.cli",
        "figaroh.fleet",
        "figaroh.visualisation",
        "figaroh.utils.config_migration",
        "figaroh.utils.config_routing",
    ),
)

#: Package ``__init__`` modules, matched exactly (so that a new module under
#: them is not placed by accident and must be added to :data:`LAYERS`).
PACKAGE_ROOTS: dict[str, int] = {"figaroh": 4, "figaroh.utils": 4, "figaroh.tools": 0}

#: Parameter names that would hand a step the whole run object.
RUN_OBJECT_NAMES = frozenset(
    {"identif", "ident", "identification", "calib", "calibration", "run_object", "task", "self"}
)


# --------------------------------------------------------------------------- #
# The source model: modules and their imports
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class ImportSite:
    """One ``import`` of a figaroh module.

    Attributes:
        source: Importing module.
        target: Imported module (the longest name that is a module).
        line: Line number.
        in_function: Whether the statement sits inside a function body.
        guarded: Whether it sits in a ``try`` that catches ``ImportError``.
    """

    source: str
    target: str
    line: int
    in_function: bool
    guarded: bool


def module_name(path: Path, root: Path) -> str:
    """Dotted module name of ``path`` below ``root`` (``pkg/__init__.py`` → ``pkg``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def _catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        for name in names:
            if isinstance(name, ast.Name) and name.id in ("ImportError", "ModuleNotFoundError"):
                return True
    return False


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: set[str]
) -> list[str]:
    """figaroh modules a statement imports (``from a import b`` → ``a.b`` if a module)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        names = [
            f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in modules else stem
            for alias in node.names
        ]
    found = []
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name.split(".")[0] == modules_root(modules) and name:
            found.append(name)
    return sorted(set(found))


def modules_root(modules: set[str]) -> str:
    return min(modules, key=len).split(".")[0]


def _lazy_module_target(node: ast.Call, modules: set[str]) -> str | None:
    """The module of a ``lazy_module("<root>…")`` call (a deferred import), else None."""
    if not (
        ast.unparse(node.func).endswith("lazy_module")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return None
    name = node.args[0].value
    return name if name in modules else None


def _collect(tree: ast.Module, name: str, is_package: bool, modules: set[str]) -> list[ImportSite]:
    """Imports of figaroh modules in one module, with where each one sits."""
    sites: list[ImportSite] = []
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)

    def visit(nodes: list[ast.AST], in_function: bool, guarded: bool) -> None:
        for child in nodes:
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(child, name, is_package, modules):
                    if target != name:
                        sites.append(ImportSite(name, target, child.lineno, in_function, guarded))
                continue
            if isinstance(child, ast.Call):
                target = _lazy_module_target(child, modules)
                if target is not None and target != name:
                    sites.append(ImportSite(name, target, child.lineno, in_function, guarded))
            inner = in_function or isinstance(child, functions)
            if isinstance(child, ast.Try) and _catches_import_error(child):
                visit(child.body, inner, True)
                visit(child.handlers + child.orelse + child.finalbody, inner, guarded)
                continue
            visit(list(ast.iter_child_nodes(child)), inner, guarded)

    visit(tree.body, False, False)
    return sites


def scan(root: Path) -> tuple[set[str], list[ImportSite], dict[str, ast.Module]]:
    """Every module below ``root`` and every import of one of them.

    Args:
        root: Folder holding the top-level package.

    Returns:
        ``(modules, imports, trees)``.
    """
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in files.items()}
    sites: list[ImportSite] = []
    for name, tree in trees.items():
        sites += _collect(tree, name, files[name].name == "__init__.py", modules)
    return modules, sites, trees


def import_graph(modules: set[str], sites: list[ImportSite]) -> dict[str, set[str]]:
    """Who imports whom, with the parent packages an import also runs."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for site in sites:
        parts = site.target.split(".")
        for i in range(1, len(parts) + 1):
            target = ".".join(parts[:i])
            if (
                target in modules
                and target != site.source
                and not site.source.startswith(target + ".")
            ):
                graph[site.source].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def importlib_dodges(trees: dict[str, ast.Module], root_name: str) -> list[str]:
    """``importlib.import_module("<root>…")`` calls with a literal argument."""
    hits = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func).endswith("import_module")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).split(".")[0] == root_name
            ):
                hits.append(f"{name}:{node.lineno} import_module({node.args[0].value!r})")
    return hits


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of the first prefix matching ``module``."""
    if module in PACKAGE_ROOTS:
        return PACKAGE_ROOTS[module]
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                return rank
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_architecture.py")


def upward_imports(sites: list[ImportSite]) -> list[str]:
    return sorted(
        f"{s.source}:{s.line} imports {s.target} "
        f"(layer {layer_of(s.source)} → {layer_of(s.target)})"
        for s in sites
        if layer_of(s.target) > layer_of(s.source)
    )


def run_object_violations(
    trees: dict[str, ast.Module], package: str, forbidden_imports: tuple[str, ...]
) -> list[str]:
    """Steps under ``package`` that import an orchestrator or take the run object."""
    bad = []
    for name, tree in trees.items():
        if not (name == package or name.startswith(package + ".")):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                text = ast.unparse(node)
                for forbidden in forbidden_imports:
                    if forbidden in text:
                        bad.append(f"{name}:{node.lineno} {text}")
        methods = {
            id(fn) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for fn in cls.body
        }
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                names = [a.arg for a in args]
                if id(node) in methods and names[:1] in (["self"], ["cls"]):
                    names = names[1:]
                for arg in names:
                    if arg in RUN_OBJECT_NAMES:
                        bad.append(f"{name}:{node.lineno} {node.name}({arg}=...)")
    return bad


DOC_REFERENCE = re.compile(r"§|\b[A-Za-z_]+\.md\b(?<!README\.md)|\b[Ii]ssue\s*#?\d+|#\d{2,}\b")


def docstring_references(trees: dict[str, ast.Module]) -> list[str]:
    """Docstrings citing documents outside the repository or issue numbers."""
    bad = []
    for name, tree in trees.items():
        nodes = [tree] + [
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        for node in nodes:
            doc = ast.get_docstring(node, clean=False)
            if doc and DOC_REFERENCE.search(doc):
                line = getattr(node, "lineno", 1)
                bad.append(f"{name}:{line} {DOC_REFERENCE.search(doc).group(0)!r}")
    return bad


@pytest.fixture(scope="module")
def source():
    return scan(SRC)


# --------------------------------------------------------------------------- #
# The rules, on figaroh
# --------------------------------------------------------------------------- #
def test_no_import_cycle(source):
    modules, sites, _ = source
    found = cycles(import_graph(modules, sites))
    assert not found, "import cycles among figaroh modules: " + "; ".join(
        " ↔ ".join(c) for c in found
    )


def test_no_function_level_or_guarded_import_of_figaroh(source):
    modules, sites, trees = source
    bad = [f"{s.source}:{s.line} → {s.target}" for s in sites if s.in_function or s.guarded]
    bad += importlib_dodges(trees, "figaroh")
    assert not bad, f"{len(bad)} function-level/guarded imports of figaroh modules:\n" + "\n".join(
        bad
    )


def test_no_upward_import(source):
    _, sites, _ = source
    bad = upward_imports(sites)
    assert not bad, f"{len(bad)} upward imports:\n" + "\n".join(bad)


def test_every_module_has_a_layer(source):
    modules, _, _ = source
    unplaced = []
    for module in sorted(modules):
        try:
            layer_of(module)
        except AssertionError:
            unplaced.append(module)
    assert not unplaced, "modules missing from LAYERS: " + ", ".join(unplaced)
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("figaroh.tools.brand_new_module")


@pytest.mark.parametrize(
    ("package", "orchestrator"),
    [
        ("figaroh.identification._pipeline", "base_identification"),
        ("figaroh.calibration._pipeline", "base_calibration"),
    ],
)
def test_pipeline_steps_never_see_the_run_object(source, package, orchestrator):
    modules, _, trees = source
    assert package in modules, f"{package} is missing"
    bad = run_object_violations(
        trees, package, (orchestrator, "BaseIdentification", "BaseCalibration")
    )
    assert not bad, "pipeline steps that reach for the run object:\n" + "\n".join(bad)


def test_docstrings_are_self_contained(source):
    _, _, trees = source
    bad = docstring_references(trees)
    assert not bad, "docstrings citing outside documents or issues:\n" + "\n".join(bad)


def _figaroh_modules():
    import figaroh

    for info in pkgutil.walk_packages(figaroh.__path__, "figaroh."):
        if info.name.endswith(".__main__"):  # running it would start the command line
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError as exc:  # an optional third-party extra is absent
            if (exc.name or "").startswith("figaroh"):
                raise


def test_one_exception_root():
    from figaroh.errors import FigarohError

    outside = []
    seen = 0
    for module in _figaroh_modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, BaseException):
                continue
            if issubclass(cls, Warning):
                continue
            seen += 1
            if not issubclass(cls, FigarohError):
                outside.append(f"{cls.__module__}.{cls.__qualname__}")
    assert seen >= 20, f"only {seen} exception classes found: the walk missed modules"
    assert not outside, "exceptions outside FigarohError: " + ", ".join(outside)


def test_documented_builtin_bases_are_kept():
    """``except ValueError`` written for figaroh 1.0.2 still catches bad input."""
    from figaroh.errors import FigarohError
    from figaroh.tools.exceptions import RegressorShapeError, RobotLoadError
    from figaroh.utils.error_handling import ConfigurationError, IdentificationError

    assert issubclass(ConfigurationError, ValueError) and issubclass(
        ConfigurationError, FigarohError
    )
    assert issubclass(RegressorShapeError, ValueError) and issubclass(
        RegressorShapeError, FigarohError
    )
    assert issubclass(RobotLoadError, RuntimeError) and issubclass(
        IdentificationError, RuntimeError
    )


# --------------------------------------------------------------------------- #
# The checkers themselves, on a synthetic tree with known violations
# --------------------------------------------------------------------------- #
def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_checkers_see_known_violations(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "def f():\n    from pkg import a\n",
            "pkg/c.py": "try:\n    import pkg.a\nexcept ImportError:\n    pass\n",
            "pkg/d.py": "import importlib\nimportlib.import_module('pkg.a')\n",
            "pkg/e.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
            ),
            "pkg/_pipeline/__init__.py": "",
            "pkg/_pipeline/step.py": (
                "from pkg.base_identification import X\n"
                "def fit(identif, rows):\n    return rows\n"
                "class K:\n    def m(self, rows):\n        return rows\n"
            ),
            "pkg/doc.py": '"""See notes.md §2 and issue #12."""\n',
            "pkg/f.py": "from pkg.utils import lazy_module\n_g = lazy_module('pkg.g')\n",
            "pkg/g.py": "from pkg import f\n",
            "pkg/h.py": "def f():\n    return lazy_module('pkg.a')\n",
        },
    )
    modules, sites, trees = scan(tmp_path)
    assert cycles(import_graph(modules, sites)) == [["pkg.a", "pkg.b"], ["pkg.f", "pkg.g"]]
    function_level = {(s.source, s.target) for s in sites if s.in_function}
    guarded = {(s.source, s.target) for s in sites if s.guarded}
    assert function_level == {("pkg.b", "pkg.a"), ("pkg.h", "pkg.a")}
    assert guarded == {("pkg.c", "pkg.a")}
    assert ("pkg.e", "pkg.a") not in {(s.source, s.target) for s in sites}  # typing-only import
    assert importlib_dodges(trees, "pkg") == ["pkg.d:2 import_module('pkg.a')"]
    bad = run_object_violations(trees, "pkg._pipeline", ("base_identification",))
    assert len(bad) == 2 and "fit(identif=...)" in bad[1] and "base_identification" in bad[0]
    assert [b.split()[0] for b in docstring_references(trees)] == ["pkg.doc:1"]


def test_layer_table_flags_an_upward_import():
    site = ImportSite(
        "figaroh.tools.regressor", "figaroh.identification.base_identification", 3, False, False
    )
    assert upward_imports([site]) and not upward_imports(
        [
            ImportSite(
                "figaroh.identification.base_identification",
                "figaroh.tools.regressor",
                3,
                False,
                False,
            )
        ]
    )
