"""The documentation site builds with ``mkdocs build --strict`` and documents the whole API.

This test *is* the CI build of the docs: it runs the same command as
``make docs`` (into a temporary folder) and fails on any warning. Truths: the
modules under ``src/figaroh`` (walked independently of the docs hook) and the
public names of the binding seeds (``../shared/seeds/*.md``, when present).
The built pages are also opened in headless Chromium (the browser stack of
``test_browser_reports``; skipped when it is missing) to check that wide tables
scroll inside the page, with and without the theme's JavaScript.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SEEDS = ROOT.parent / "shared" / "seeds"
#: A seed heading: "## `name(...)`", "### `name(...)`" or "`name(...)` ¶".
SEED_HEADING = re.compile(r"^(?:#+\s*)?`([A-Za-z_]\w*)\(")
#: Seed headings whose markdown lost the dunder underscores.
SEED_ALIASES = {"repr": "__repr__"}


def _require(module: str):
    """Import ``module``; in CI a missing docs dependency is a failure, elsewhere a skip."""
    if os.environ.get("CI"):
        return __import__(module)
    return pytest.importorskip(module)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    _require("mkdocs")
    _require("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml")]
        + ["-d", str(out)],
        capture_output=True,
        text=True,
        cwd=out,  # any folder: every path of the build is anchored at mkdocs.yml
        timeout=300,
    )
    return proc, out


def _api_html(out: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((out / "api").rglob("*.html")))


def _source_modules() -> list[str]:
    """Public modules of src/figaroh: no part of the dotted name starts with '_'."""
    src = ROOT / "src"
    mods = []
    for path in sorted((src / "figaroh").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) < 2 or parts[-1] == "__main__" or any(p.startswith("_") for p in parts):
            continue
        mods.append(".".join(parts))
    return mods


def _seed_names() -> set[str]:
    names = set()
    for path in sorted(SEEDS.glob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            m = SEED_HEADING.match(line)
            if m:
                names.add(m.group(1))
    return names


def test_docs_build_strict_with_zero_warnings(site):
    proc, out = site
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    noisy = [line for line in log.splitlines() if re.search(r"\b(WARNING|ERROR)\b", line)]
    assert noisy == [], "\n".join(noisy)
    assert (out / "index.html").is_file() and (out / "search" / "search_index.json").is_file()


def test_guides_are_built(site):
    _, out = site
    for page in (
        "getting-started",
        "concepts",
        "bring-your-own-robot",
        "configuration",
        "cli",
        "notebooks",
    ):
        assert (out / page / "index.html").is_file(), page
    home = (out / "index.html").read_text(encoding="utf-8")
    assert "make demo" in home and "make test" in home  # the two-command Quick start
    concepts = (out / "concepts" / "index.html").read_text(encoding="utf-8")
    for topic in ("Base parameters", "Physical consistency", "calibration model", "Verification"):
        assert topic in concepts, topic
    byor = (out / "bring-your-own-robot" / "index.html").read_text(encoding="utf-8")
    assert "package://" in byor and "tau_&lt;joint&gt;" in byor
    # the configuration reference embeds the shipped base template verbatim
    reference = (out / "configuration" / "index.html").read_text(encoding="utf-8")
    assert "differentiation_method" in reference and "qr_relative_tolerance" in reference


def test_notebook_pages_show_their_outputs(site):
    """Each walkthrough is executed by the build and shown with its printed results and figures."""
    _, out = site
    expected = {
        "identification_walkthrough": ("IDENTIFICATION QUALITY REPORT", "verdict: pass"),
        "calibration_walkthrough": ("CALIBRATION QUALITY REPORT", "verdict: pass"),
    }
    for stem, texts in expected.items():
        page = out / "notebooks" / stem / "index.html"
        html = page.read_text(encoding="utf-8")
        for text in (*texts, "executed when this site was built"):
            assert text in html, (stem, text)
        figures = re.findall(r'<img alt="figure of cell \d+" src="([^"]+\.png)"', html)
        assert figures, f"{stem}: no figure"
        for src in figures:
            assert (page.parent / src).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", src
    overview = (out / "notebooks" / "index.html").read_text(encoding="utf-8")
    assert 'href="identification_walkthrough/"' in overview


def test_every_public_module_has_an_api_page(site):
    _, out = site
    modules = _source_modules()
    assert len(modules) > 40 and "figaroh.cli.main" in modules
    for module in modules:
        parts = module.split(".")
        page = out / "api" / ".".join(parts[:2]) / ".".join(parts[2:]) / "index.html"
        assert page.is_file(), f"no API page for {module}"
        html = page.read_text(encoding="utf-8")
        assert f"<code>{module}</code>" in html, module
        assert "doc doc-object doc-module" in html, module


def test_every_documented_public_function_and_class_is_rendered(site):
    """Independent of the seeds: every top-level public def/class of a public module."""
    _, out = site
    ids = set(re.findall(r'id="(figaroh[\w.]*)"', _api_html(out)))
    missing = []
    for module in _source_modules():
        path = ROOT / "src" / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if path.name == "__init__.py":
            continue  # package pages show the package docstring only
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                if f"{module}.{node.name}" not in ids:
                    missing.append(f"{module}.{node.name}")
    assert missing == []


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"seeds not found at {SEEDS}")
def test_every_public_seed_name_appears_in_the_api_pages(site):
    _, out = site
    names = _seed_names()
    assert len(names) > 100  # the headings were found
    documented = {i.rsplit(".", 1)[-1] for i in re.findall(r'id="(figaroh[\w.]*)"', _api_html(out))}
    missing = sorted(n for n in names if SEED_ALIASES.get(n, n) not in documented)
    assert missing == [], f"seed names without an API entry: {missing}"


@pytest.fixture(scope="module")
def chromium():
    """The headless, offline Chromium of ``test_browser_reports`` (skips when it is missing)."""
    kit = importlib.import_module("test_browser_reports")
    with kit.chromium_driver() as driver:
        yield driver


#: Geometry of the tables of the page open in the browser, and of the page itself.
_TABLES_JS = """
const content = document.querySelector('.rst-content').getBoundingClientRect();
const tables = [...document.querySelectorAll('.rst-content table')].map(t => {
  const r = t.getBoundingClientRect();
  const wide = t.scrollWidth > t.clientWidth + 1;
  if (wide) t.scrollLeft = t.scrollWidth;
  return {left: r.left - content.left, right: content.right - r.right, wide: wide,
          scrolled: t.scrollLeft, nowrap: [...t.querySelectorAll('td')].filter(
            td => getComputedStyle(td).whiteSpace === 'nowrap').length};
});
return {tables: tables, page_scrolls: document.documentElement.scrollWidth > window.innerWidth};
"""


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_wide_tables_scroll_inside_the_page(site, chromium, javascript):
    """A table wider than the text column scrolls sideways in its own box; none is clipped."""
    _, out = site
    chromium.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": not javascript})
    try:
        for page in ("configuration", "migrating-from-1.0.2", "concepts"):
            chromium.get((out / page / "index.html").as_uri())
            found = chromium.execute_script(_TABLES_JS)
            tables = found["tables"]
            assert tables, page
            assert not found["page_scrolls"], f"{page}: the whole page scrolls sideways"
            for k, t in enumerate(tables):
                assert t["left"] >= -1 and t["right"] >= -1, f"{page} table {k} overflows: {t}"
                assert t["nowrap"] == 0, f"{page} table {k}: cells kept on one line"
                assert not t["wide"] or t["scrolled"] > 0, f"{page} table {k} cannot scroll"
            if page == "configuration":  # its key tables hold long code names
                assert any(t["wide"] for t in tables), "no wide table left to check"
    finally:
        chromium.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})
