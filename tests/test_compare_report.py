"""The static two-run compare page: self-contained, safe, atomic, and in step with the exports.

The page's behaviour in a browser (loading, compatibility block, diff table,
overlay) is tested in test_browser_reports.py; here: the document itself and
the contract between the verification JSON written by ``BaseIdentification``
and the keys the page reads.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figaroh.tools import compare_report  # noqa: E402
from figaroh.tools.compare_report import generate_compare_page  # noqa: E402
from figaroh.tools.identification_report import generate_identification_report  # noqa: E402
from figaroh.tools.report import generate_calibration_report  # noqa: E402
from test_identification_report import (  # noqa: E402
    XSS,
    assert_self_contained,
    make_calibration_fixture,
    parse,
    strict_load,
)

IDS = (
    "zone-a",
    "zone-b",
    "file-a",
    "file-b",
    "filename-a",
    "filename-b",
    "compat-section",
    "compat-status",
    "force-compare-row",
    "force-compare",
    "results-section",
    "forced-banner",
    "diff-table-body",
    "checks-table-body",
    "compare-select",
    "compare-quantity",
    "compare-toggle-a",
    "compare-toggle-b",
    "compare-reset",
    "compare-svg",
    "compare-legend",
)


def _scripts(doc):
    return "".join(parse(doc).scripts)


def test_page_is_self_contained_and_has_every_control(tmp_path):
    doc = generate_compare_page()
    assert doc.startswith("<!doctype html>")
    assert_self_contained(doc)
    ids = [v for k, v in parse(doc).attrs if k == "id"]
    for element_id in IDS:
        assert ids.count(element_id) == 1, element_id
    # file inputs accept JSON; results and override hidden until two files are loaded
    assert doc.count('accept="application/json,.json"') == 2
    for hidden in ("compat-section", "results-section", "force-compare-row", "forced-banner"):
        assert re.search(rf'id="{hidden}"[^>]*style="display:none;"', doc), hidden
    assert 'data-ratio-limit="2"' in doc
    assert compare_report.SAMPLE_COUNT_RATIO_LIMIT == 2.0


def test_page_never_builds_markup_from_loaded_data():
    """Loaded strings go through textContent only: no HTML parser is ever fed file data."""
    js = _scripts(generate_compare_page())
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        'setTimeout("',
        "fetch(",
        "XMLHttpRequest",
        "import(",
    ):
        assert sink not in js, sink
    assert "textContent" in js and "FileReader" in js
    # the report pages' scripts are equally free of HTML sinks and network calls
    calib_js = _scripts(generate_calibration_report(make_calibration_fixture()))
    for sink in ("innerHTML", "insertAdjacentHTML", "document.write", "fetch(", "XMLHttpRequest"):
        assert sink not in calib_js, sink


def test_title_is_escaped_and_default(tmp_path):
    doc = generate_compare_page(title=f"Runs {XSS}")
    assert XSS not in doc
    p = parse(doc)
    assert p.tags.count("script") == 2  # chart engine + driver, nothing injected
    assert f"Runs {XSS}" in " ".join(p.text)
    assert "<title>FIGAROH — Two-Run Comparison</title>" in generate_compare_page()


def test_written_atomically_with_parent_folders(tmp_path):
    out = tmp_path / "a" / "b" / "compare.html"
    doc = generate_compare_page(output_path=str(out))
    assert out.read_text(encoding="utf-8") == doc
    assert sorted(p.name for p in out.parent.iterdir()) == ["compare.html"]


@pytest.mark.parametrize("which", ["compare", "calibration", "identification"])
def test_crash_while_writing_leaves_no_file(tmp_path, monkeypatch, which, request):
    import figaroh.data.source as source

    target = tmp_path / "page.html"
    target.write_text("previous version", encoding="utf-8")

    def crash(src, dst):
        raise OSError("disk full")

    ident = request.getfixturevalue("verification_export")[0] if which == "identification" else None
    monkeypatch.setattr(source.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        if which == "compare":
            generate_compare_page(output_path=str(target))
        elif which == "calibration":
            generate_calibration_report(make_calibration_fixture(), output_path=str(target))
        else:
            ident.export_html_report(output_path=str(target))
    # the old file is untouched and no temporary file is left behind
    assert target.read_text(encoding="utf-8") == "previous version"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


@pytest.fixture(scope="module")
def verification_export(tmp_path_factory):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ur10"))
    from report_demo import identify, write_run

    out = tmp_path_factory.mktemp("run")
    ident = identify(out / "data", seed=7, n_samples=1000)
    report, verification = write_run(ident, out)
    return ident, report, verification


def test_page_reads_the_keys_the_identification_export_writes(verification_export):
    """Contract: every key the page's compatibility check and overlay read is exported."""
    ident, report, verification = verification_export
    data = strict_load(verification.read_text())
    js = _scripts(generate_compare_page())
    assert data["schema_version"] == 1 and ".schema_version" in js
    assert data["metadata"]["task"] == "identification" and '"task"' in js
    for key in ("active_joints", "decimate", "sample_count", "config_sha256"):
        assert key in data["compat"], key
        assert f'"{key}"' in js, key
    for key in ("time", "joint_names", "nominal", "fitted", "measured"):
        assert key in data["series"], key
        assert f'"{key}"' in js, key
    assert isinstance(data["metrics"], dict) and isinstance(data["status"], str)
    assert "d.metrics" in js and "d.status" in js
    for name in ("run_id", "robot_name", "git_commit"):
        assert name in json.dumps(data["metadata"]) and f'"{name}"' in js
    assert report.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert generate_identification_report(ident).count("<section") == 12
