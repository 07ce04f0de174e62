"""MkDocs hook: one API page per public module of ``src/figaroh``, generated at build time.

Nothing is written to disk: :func:`on_files` adds the pages (``api/<package>/<module>.md``,
each a mkdocstrings ``::: <module>`` directive) and :func:`on_config` appends
them to the navigation. A module is public when no part of its dotted name
starts with an underscore; :data:`EXTRA_MODULES` adds the private modules
whose names the documented API exposes (the verdict dataclasses live in
``figaroh._run.verdict``). A new module therefore gets its page
without any edit here.

The Pygments stylesheet used by the code blocks is generated the same way
(``css/pygments.css``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

#: Private modules documented anyway (their ``__all__`` is shown): the verdict
#: dataclasses returned by ``verify()`` live in ``figaroh._run.verdict``, and
#: ``figaroh.tools._report_common`` is where figaroh 1.0.2 documents them (and
#: ``build_provenance_metadata``), so scripts importing them from there work.
EXTRA_MODULES: tuple[str, ...] = ("figaroh._run.verdict", "figaroh.tools._report_common")


#: Modules whose public classes get methods from a base class (the run
#: services): their pages list inherited members too.
INHERITING_MODULES: tuple[str, ...] = (
    "figaroh.identification.base_identification",
    "figaroh.calibration.base_calibration",
)


#: Navigation titles of the packages, in navigation order.
PACKAGE_TITLES = {
    "figaroh.identification": "Identification",
    "figaroh.calibration": "Calibration",
    "figaroh.optimal": "Optimal design",
    "figaroh.tools": "Tools",
    "figaroh.data": "Data",
    "figaroh.utils": "Utilities",
    "figaroh.backends": "Backends",
    "figaroh.measurements": "Measurements",
    "figaroh.cli": "Command line",
    "figaroh.errors": "Errors",
    "figaroh._run": "Run services",
}


def public_modules(src: Path = SRC) -> dict[str, list[str]]:
    """``{package: [module, ...]}`` of every public module under ``src/figaroh``.

    Modules are sorted by name; a package's ``__init__`` is its own entry
    (the package name).
    """
    out: dict[str, list[str]] = {}
    for path in sorted((src / "figaroh").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts[-1] == "__main__" or any(p.startswith("_") for p in parts):
            continue
        if len(parts) < 2:
            continue  # the top-level package: see api/index.md
        package = ".".join(parts[:2])
        out.setdefault(package, []).append(".".join(parts))
    for module in EXTRA_MODULES:
        package = ".".join(module.split(".")[:2])
        out.setdefault(package, []).append(module)
    order = list(PACKAGE_TITLES)
    return {
        p: sorted(set(mods), key=lambda m: (m != p, m))
        for p, mods in sorted(out.items(), key=lambda kv: (order + [kv[0]]).index(kv[0]))
    }


def module_all(module: str, src: Path = SRC) -> list[str]:
    """The names listed in a module's ``__all__`` (read statically, nothing is imported)."""
    import ast

    path = src.joinpath(*module.split(".")).with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [str(v) for v in ast.literal_eval(node.value)]
    raise ValueError(f"{path} has no literal __all__ to document")


def page_path(module: str) -> str:
    """Docs-relative path of a module's page (``api/figaroh.tools/robot.md``)."""
    parts = module.split(".")
    package = ".".join(parts[:2])
    name = "index" if len(parts) == 2 else ".".join(parts[2:])
    return f"api/{package}/{name}.md"


def _is_package(module: str, src: Path = SRC) -> bool:
    """Whether ``module`` is a package of ``src`` (a folder), not a single file."""
    return src.joinpath(*module.split(".")).is_dir()


def page_content(module: str) -> str:
    """Markdown of a module's page."""
    lines = [f"# `{module}`", "", f"::: {module}"]
    if module in EXTRA_MODULES:
        members = ", ".join(module_all(module))
        lines += ["    options:", f"      members: [{members}]"]
    elif module in INHERITING_MODULES:
        lines += ["    options:", "      inherited_members: true"]
    elif _is_package(module):  # a package: its docstring, then its modules
        lines += ["    options:", "      members: false", "", "## Modules", ""]
        lines += [
            f"- [`{m}`]({Path(page_path(m)).name})" for m in public_modules()[module] if m != module
        ]
    return "\n".join(lines) + "\n"


def api_pages() -> dict[str, str]:
    """``{docs path: markdown}`` of every generated API page."""
    return {page_path(m): page_content(m) for mods in public_modules().values() for m in mods}


def api_nav() -> list[dict]:
    """Navigation entries of the API reference."""
    nav: list = []
    for package, modules in public_modules().items():
        title = PACKAGE_TITLES.get(package, package)
        entries: list = []
        for m in modules:
            label = "Overview" if m == package and _is_package(m) else m.split(".", 2)[-1]
            entries.append({label: page_path(m)})
        nav.append({title: entries})
    return nav


def on_config(config, **kwargs):
    """Append the generated pages to the navigation; anchor snippet paths at the repository.

    ``pymdownx.snippets`` resolves ``--8<--`` paths against the current
    directory; pointing it at the repository root lets ``mkdocs build -f
    path/to/mkdocs.yml`` work from anywhere.
    """
    snippets = config.get("mdx_configs", {}).get("pymdownx.snippets")
    if snippets is not None:
        snippets["base_path"] = [str(ROOT)]
    nav = config.get("nav")
    if nav is None:
        return config
    for item in nav:
        if isinstance(item, dict) and "API reference" in item:
            item["API reference"] = list(item["API reference"] or []) + api_nav()
            break
    else:
        nav.append({"API reference": ["api/index.md", *api_nav()]})
    return config


#: A Sphinx role in a docstring (``:meth:`name```), as rendered by Markdown.
_ROLE = re.compile(
    r":(?:meth|class|func|attr|mod|data|exc|obj|py:\w+):\s*<code>(~?)([A-Za-z_][\w.]*)(\(\))?</code>"
)


def _module_of(src_uri: str) -> str | None:
    """``api/figaroh.tools/robot.md`` → ``figaroh.tools.robot`` (None for other pages)."""
    parts = src_uri.split("/")
    if len(parts) != 3 or parts[0] != "api" or not parts[2].endswith(".md"):
        return None
    stem = parts[2][: -len(".md")]
    return parts[1] if stem == "index" else f"{parts[1]}.{stem}"


def _method_owners(module: str, src: Path = SRC) -> dict[str, str]:
    """``{method: class}`` for the methods defined by exactly one class of ``module``."""
    import ast

    path = src.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if not path.is_file():
        return {}
    owners: dict[str, list[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owners.setdefault(item.name, []).append(node.name)
    return {name: classes[0] for name, classes in owners.items() if len(classes) == 1}


def on_page_content(html, page, **kwargs):
    """Turn the Sphinx roles of the docstrings into cross-references.

    ``:class:`~figaroh.tools.robot.Robot``` becomes a link titled ``Robot``;
    a relative name is looked up in the page's module. Unknown targets stay
    plain code (the references are optional: they never warn).
    """
    module = _module_of(page.file.src_uri)

    methods = _method_owners(module) if module else {}

    def link(match: re.Match) -> str:
        tilde, name, call = match.group(1), match.group(2), match.group(3) or ""
        if name.startswith("figaroh.") or module is None:
            identifier = name
        elif name in methods:
            identifier = f"{module}.{methods[name]}.{name}"
        else:
            identifier = f"{module}.{name}"
        title = (name.rsplit(".", 1)[-1] if tilde else name) + call
        return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'

    return _ROLE.sub(link, html)


def on_files(files, config, **kwargs):
    """Add the generated API pages and the Pygments stylesheet."""
    from mkdocs.structure.files import File
    from pygments.formatters import HtmlFormatter

    for path, content in api_pages().items():
        files.append(File.generated(config, path, content=content))
    css = HtmlFormatter(style="default").get_style_defs(".highlight")
    files.append(File.generated(config, "css/pygments.css", content=css))
    return files
