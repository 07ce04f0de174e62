"""Architecture rules, checked on the source tree with :mod:`ast`.

* no import cycle among figaroh's modules (every ``import`` counts, wherever
  it sits, and importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``);
* lazy names are declared in one place: a package's ``__init__.pyi`` stub
  (``from . import sub`` / ``from .sub import Name``), which ``lazy_loader``
  reads at import time; a module reaches a lazy module as an attribute of its
  package (``import figaroh.tools as _tools`` … ``_tools.solver.LinearSolver``),
  and that access counts as an import of ``figaroh.tools.solver`` for the
  cycle and layer rules (deferred, but an edge all the same);
* every declaration of a stub names an existing module and a name that module
  defines, and every public submodule is declared (``import figaroh`` then
  ``figaroh.tools.robot``);
* no function-level import of figaroh's own modules, no ``try: import figaroh…
  except ImportError`` guard, and no module loaded by a name the checker cannot
  read (``importlib.import_module`` with a figaroh or computed name, outside
  the few modules that look up third-party packages by name);
* no upward import across the layers listed in :data:`LAYERS`;
* the pipeline steps never see the run object (``BaseIdentification`` /
  ``BaseCalibration``);
* one exception root: every exception class figaroh defines derives from
  :class:`figaroh.errors.FigarohError`;
* a run class (a ``RunServices`` subclass) carries at most
  :data:`MAX_RUN_CLASS_METHODS` methods, inherited ones included;
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
        # the DataFinding record (imports nothing of figaroh), returned by data checks
        "figaroh._run.data_checks",
        "figaroh.measurements",
        "figaroh.utils.cubic_spline",
        "figaroh.utils.unified_config",
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
        "figaroh.utils.config_parser",
    ),
)

#: Package ``__init__`` modules, matched exactly (so that a new module under
#: them is not placed by accident and must be added to :data:`LAYERS`).
PACKAGE_ROOTS: dict[str, int] = {"figaroh": 4, "figaroh.utils": 4, "figaroh.tools": 0}

#: Modules that import third-party packages by a computed name (optional
#: dependencies, robot description packages, version look-ups); nowhere else
#: may ``importlib.import_module`` run.
DYNAMIC_IMPORTERS = frozenset(
    {"figaroh._optional", "figaroh.tools.robot_paths", "figaroh._run.provenance"}
)

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
        lazy: Whether it is a lazy attribute access (``_tools.solver``)
            resolved through a package stub rather than an ``import``.
    """

    source: str
    target: str
    line: int
    in_function: bool
    guarded: bool
    lazy: bool = False


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


def read_stub(path: Path, package: str, modules: set[str]) -> dict[str, str]:
    """Lazy names a package stub declares: ``{attribute: module it lives in}``.

    ``from . import sub`` declares the submodule ``package.sub``;
    ``from .sub import Name`` declares ``Name``, living in ``package.sub``.
    Any other statement that imports is refused (``lazy_loader.attach_stub``
    reads these two forms only).
    """
    declared: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.level != 1):
            raise AssertionError(f"{path}:{node.lineno}: only 'from . import' / 'from .x import'")
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                home = f"{package}.{node.module or alias.name}"
                declared[alias.name] = home
    return declared


def _aliases(
    tree: ast.Module, name: str, is_package: bool, modules: set[str], stubs: dict
) -> dict[str, str]:
    """Module-level names bound to a package with a stub (``import a.b as x`` → ``{x: a.b}``)."""
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in stubs:
                    bound[alias.asname] = alias.name
                elif not alias.asname and alias.name.split(".")[0] in stubs:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in stubs:
                    bound[alias.asname or alias.name] = full
    return bound


def _lazy_target(
    node: ast.Attribute, bound: dict[str, str], modules: set[str], stubs: dict
) -> str | None:
    """The module a chain ``alias.sub.Name`` reaches through package stubs, else None."""
    chain: list[str] = []
    inner: ast.expr = node
    while isinstance(inner, ast.Attribute):
        chain.append(inner.attr)
        inner = inner.value
    if not isinstance(inner, ast.Name) or inner.id not in bound:
        return None
    current = bound[inner.id]
    reached = None
    for attr in reversed(chain):
        home = stubs.get(current, {}).get(attr)
        if home is None:
            break
        reached = home
        if f"{current}.{attr}" != home:  # a name, not a submodule: the chain ends
            break
        current = home
    return reached


def _collect(
    tree: ast.Module, name: str, is_package: bool, modules: set[str], stubs: dict | None = None
) -> list[ImportSite]:
    """Imports of figaroh modules in one module, with where each one sits."""
    stubs = stubs or {}
    sites: list[ImportSite] = []
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    bound = _aliases(tree, name, is_package, modules, stubs)

    def visit(nodes: list[ast.AST], in_function: bool, guarded: bool) -> None:
        for child in nodes:
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(child, name, is_package, modules):
                    if target != name:
                        sites.append(ImportSite(name, target, child.lineno, in_function, guarded))
                continue
            if isinstance(child, ast.Attribute):
                target = _lazy_target(child, bound, modules, stubs)
                if target is not None and target != name:
                    sites.append(ImportSite(name, target, child.lineno, False, guarded, True))
                    continue
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

    The lazy declarations of the package stubs are kept on the result's
    ``stubs`` (see :func:`scan_stubs`); accesses through them are imports.

    Args:
        root: Folder holding the top-level package.

    Returns:
        ``(modules, imports, trees)``.
    """
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    stubs = scan_stubs(root, modules)
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in files.items()}
    sites: list[ImportSite] = []
    for name, tree in trees.items():
        sites += _collect(tree, name, files[name].name == "__init__.py", modules, stubs)
    return modules, sites, trees


def scan_stubs(root: Path, modules: set[str]) -> dict[str, dict[str, str]]:
    """``{package: {lazy attribute: module}}`` of every ``__init__.pyi`` below ``root``."""
    return {
        module_name(path.with_suffix(".py"), root): read_stub(
            path, module_name(path.with_suffix(".py"), root), modules
        )
        for path in sorted(root.rglob("__init__.pyi"))
    }


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


def importlib_dodges(
    trees: dict[str, ast.Module], root_name: str, dynamic_importers: frozenset[str] = frozenset()
) -> list[str]:
    """Modules loaded by a name the checker cannot follow.

    ``importlib.import_module`` / ``__import__`` / ``lazy_loader.load`` with a
    ``"<root>…"`` literal anywhere, or with a computed name outside
    ``dynamic_importers``; and ``lazy_loader.attach`` tables (lazy names are
    declared in stubs, read by ``attach_stub``).
    """
    hits = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            if func.endswith(".attach") or func == "attach":
                hits.append(f"{name}:{node.lineno} {func}(...)")
                continue
            if not (
                func.endswith("import_module") or func == "__import__" or func.endswith(".load")
            ):
                continue
            if not node.args:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant):
                if str(arg.value).split(".")[0] == root_name:
                    hits.append(f"{name}:{node.lineno} {func}({arg.value!r})")
            elif not func.endswith(".load") and name not in dynamic_importers:
                hits.append(f"{name}:{node.lineno} {func}({ast.unparse(arg)})")
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


def string_loaded(trees: dict[str, ast.Module], root_name: str) -> list[str]:
    """String literals naming a ``<root>`` module that a call loads (``f("<root>.x")``)."""
    found = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for arg in node.args:
                    if (
                        isinstance(arg, ast.Constant)
                        and isinstance(arg.value, str)
                        and arg.value.startswith(root_name + ".")
                        and " " not in arg.value
                        and ast.unparse(node.func).split(".")[-1]
                        in ("import_module", "__import__", "load", "lazy_module", "find_spec")
                    ):
                        found.append(f"{name}:{node.lineno} {arg.value}")
    return found


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
    bad += importlib_dodges(trees, "figaroh", DYNAMIC_IMPORTERS)
    assert not bad, f"{len(bad)} function-level/guarded imports of figaroh modules:\n" + "\n".join(
        bad
    )


def test_package_stubs_declare_existing_names_and_every_public_submodule(source):
    """``lazy_loader.attach_stub`` trusts the stubs: each entry must resolve."""
    modules, _, trees = source
    stubs = scan_stubs(SRC, modules)
    bad = []
    for package, declared in stubs.items():
        init = trees[package]
        if "attach_stub" not in ast.unparse(init):
            bad.append(f"{package}: has __init__.pyi but does not attach it")
        for attribute, home in declared.items():
            if home not in modules:
                bad.append(f"{package}.{attribute}: no module {home}")
            elif f"{package}.{attribute}" != home and not _defines(trees[home], attribute):
                bad.append(f"{package}.{attribute}: {home} does not define it")
        public = {
            m.rpartition(".")[2]
            for m in modules
            if m.rpartition(".")[0] == package and not m.rpartition(".")[2].startswith("_")
        } - {"__main__"}
        missing = public - set(declared)
        if missing:
            bad.append(f"{package}: public submodules missing from __init__.pyi: {sorted(missing)}")
    lazy_inits = [n for n, t in trees.items() if "attach_stub" in ast.unparse(t)]
    bad += [f"{n}: attaches a stub it does not have" for n in lazy_inits if n not in stubs]
    assert len(stubs) >= 10, sorted(stubs)
    assert not bad, "\n".join(bad)


def test_string_loaded_modules_are_counted_and_none_remain(source):
    """Report what is loaded by name; figaroh's own modules never are."""
    modules, sites, trees = source
    stubs = scan_stubs(SRC, modules)
    declared = {home for table in stubs.values() for home in table.values()}
    lazy_edges = sorted({(s.source, s.target) for s in sites if s.lazy})
    by_string = string_loaded(trees, "figaroh")
    print(
        f"\nstring-loaded modules: {len(by_string)}; "
        f"stub-declared lazy modules: {len(declared)} in {len(stubs)} packages; "
        f"lazy attribute edges (counted as imports): {len(lazy_edges)}"
    )
    assert by_string == []
    assert ("figaroh.tools.robot", "figaroh.tools.robotvisualization") in lazy_edges
    assert ("figaroh.utils.config_parser", "figaroh.calibration.config") in lazy_edges


def _defines(tree: ast.Module, attribute: str) -> bool:
    """Whether a module binds ``attribute`` at top level, or makes it in ``__getattr__``."""
    names = _defined_names(tree)
    if attribute in names:
        return True
    listed = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    return "__getattr__" in names and attribute in listed


def _defined_names(tree: ast.Module) -> set[str]:
    """Names a module binds at top level (definitions, assignments, imports)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


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


#: Most methods (inherited ones included) a run class may carry: figaroh 1.0.2's
#: methods and hooks, the documented additions and the shared run services.
MAX_RUN_CLASS_METHODS = 60


def _methods(cls: type) -> set[str]:
    kinds = (staticmethod, classmethod, property)
    return {
        name
        for c in cls.__mro__
        if c.__module__.startswith("figaroh")
        for name, value in vars(c).items()
        if inspect.isfunction(value) or isinstance(value, kinds)
    }


def test_run_classes_stay_small():
    from figaroh._run.task_services import RunServices

    for _ in _figaroh_modules():
        pass
    found, todo = {}, list(RunServices.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("figaroh"):
            found[cls.__qualname__] = len(_methods(cls))
    assert {"BaseIdentification", "BaseCalibration", "SystemIdentification"} <= set(found)
    big = {name: n for name, n in found.items() if n > MAX_RUN_CLASS_METHODS}
    assert not big, f"run classes over {MAX_RUN_CLASS_METHODS} methods: {big}"


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
            # a lazy attribute access through a package stub is an import
            "pkg/sub/__init__.py": "",
            "pkg/sub/__init__.pyi": "from . import g as g\nfrom .g import G as G\n",
            "pkg/sub/g.py": "from pkg import f\nG = 1\n",
            "pkg/f.py": "import pkg.sub as _sub\ndef run():\n    return _sub.g.G\n",
            "pkg/k.py": "from pkg import sub\ndef run():\n    return sub.G\n",
            "pkg/h.py": (
                "import importlib\ndef f(name):\n    return importlib.import_module(name)\n"
            ),
        },
    )
    modules, sites, trees = scan(tmp_path)
    assert scan_stubs(tmp_path, modules) == {"pkg.sub": {"g": "pkg.sub.g", "G": "pkg.sub.g"}}
    assert cycles(import_graph(modules, sites)) == [["pkg.a", "pkg.b"], ["pkg.f", "pkg.sub.g"]]
    lazy = {(s.source, s.target) for s in sites if s.lazy}
    assert lazy == {("pkg.f", "pkg.sub.g"), ("pkg.k", "pkg.sub.g")}
    function_level = {(s.source, s.target) for s in sites if s.in_function}
    guarded = {(s.source, s.target) for s in sites if s.guarded}
    assert function_level == {("pkg.b", "pkg.a")}
    assert guarded == {("pkg.c", "pkg.a")}
    assert ("pkg.e", "pkg.a") not in {(s.source, s.target) for s in sites}  # typing-only import
    assert importlib_dodges(trees, "pkg") == [
        "pkg.d:2 importlib.import_module('pkg.a')",
        "pkg.h:3 importlib.import_module(name)",
    ]
    assert importlib_dodges(trees, "pkg", frozenset({"pkg.h"})) == [
        "pkg.d:2 importlib.import_module('pkg.a')"
    ]
    assert string_loaded(trees, "pkg") == ["pkg.d:2 pkg.a"]
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
