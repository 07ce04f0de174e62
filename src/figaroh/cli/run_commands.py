"""``figaroh report`` and ``figaroh compare``: read archived runs and verification exports.

A *run* is given the same way to both: an archived run folder (its
``verdict.json``), the ``-o`` output folder of ``figaroh identify`` /
``calibrate`` (its one ``*_verification.json``) or a verification JSON file.
An archive root is ``--archive DIR`` (``figaroh report --archive DIR`` lists
its runs; the positional spelling ``figaroh report DIR`` still lists it, with a
deprecation warning).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any, Dict, List

from figaroh._run.verdict import verdict_status
from figaroh.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    CLIError,
    one_line,
    require_file,
    require_output_file,
    say,
)
from figaroh.tools.compare_report import SAMPLE_COUNT_RATIO_LIMIT, generate_compare_page
from figaroh.tools.run_archive import read_index
from figaroh.utils.fileio import atomic_write_text, make_folder

logger = logging.getLogger(__name__)

__all__ = ["compare", "report", "run_label", "verification_file"]


def _load_json(path: Path, what: str) -> Dict[str, Any]:
    require_file(path, what)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CLIError(f"{what} {path} is not valid JSON: {one_line(exc)}") from exc
    if not isinstance(data, dict):
        raise CLIError(f"{what} {path} is not a JSON object")
    return data


def _require_verdict(data: Dict[str, Any], path: Path) -> Dict[str, Any]:
    """``data`` when it is a verification export whose checks can be summarised.

    Raises:
        CLIError: No ``checks``/``metrics``, or a check that is not an object
            with a string ``name`` and ``status`` and a numeric (or null)
            ``value`` — naming the file and the check (exit 2).
    """
    if not isinstance(data.get("checks"), list) or not isinstance(data.get("metrics"), dict):
        raise CLIError(
            f"{path} is not a verification export (no 'checks'/'metrics'); use the "
            "*_verification.json written by export_verification_report() or figaroh identify"
        )
    for k, check in enumerate(data["checks"]):
        problem = _check_problem(check)
        if problem:
            raise CLIError(
                f"{path}: checks[{k}] {problem}; each check is an object "
                '{"name": str, "status": "pass"|"fail"|"not_evaluated", "value": number|null, '
                "...}: regenerate the file with export_verification_report()"
            )
    _require_consistent_status(data, path)
    return data


def _require_consistent_status(data: Dict[str, Any], path: Path) -> None:
    """Refuse a file whose ``status`` or ``passed`` contradicts its own checks.

    The status is recomputed from the checks by the rule of ``verify()``
    (:func:`~figaroh._run.verdict.verdict_status`: a failed required check →
    ``fail``; else a required check not evaluated, or no required check →
    ``not_evaluated``; else ``pass``); ``passed`` must be ``status == "pass"``.

    Raises:
        CLIError: The stored ``status``/``passed`` differ from the recomputed
            ones (exit 2), naming the file, the stored and recomputed values
            and the checks that decide.
    """
    status = verdict_status(data["checks"])
    stored_status, stored_passed = data.get("status"), data.get("passed")
    problems = []
    if "status" in data and stored_status != status:
        problems.append(f'"status": {json.dumps(stored_status)}')
    if "passed" in data and stored_passed is not (status == "pass"):
        problems.append(f'"passed": {json.dumps(stored_passed)}')
    if not problems:
        return
    required = [c for c in data["checks"] if c.get("required", True) is not False]
    deciding = [c for c in required if c.get("status") != "pass"]
    because = (
        "its required checks "
        + ", ".join(f"{c.get('name')} = {c.get('status')}" for c in deciding[:6])
        + (" …" if len(deciding) > 6 else "")
        if deciding
        else ("it has no required check" if not required else "every required check passes")
    )
    raise CLIError(
        f"{path}: {' and '.join(problems)} "
        f"{'contradict' if len(problems) > 1 else 'contradicts'} its own checks ({because}), "
        f"whose verdict is {status!r}: the file was edited or written by another tool; "
        "regenerate it with export_verification_report() or figaroh identify/calibrate"
    )


def _check_problem(check: Any) -> str:
    """What is wrong with one entry of ``checks`` ("" when nothing)."""
    if not isinstance(check, dict):
        return f"is {type(check).__name__} {one_line(repr(check))[:60]}, not an object"
    name = check.get("name")
    if not isinstance(name, str):
        return f"has no string 'name' (got {name!r})"
    if not isinstance(check.get("status"), str):
        return f"({name!r}) has no string 'status' (got {check.get('status')!r})"
    value = check.get("value")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"({name!r}) has 'value' {value!r}, not a number or null"
    return ""


def _summarise_verdict(data: Dict[str, Any]) -> List[str]:
    meta = data.get("metadata") or {}
    model = meta.get("model") or {}
    asset = meta.get("asset") or {}
    checks = data.get("checks") or []
    count = {s: sum(1 for c in checks if c.get("status") == s) for s in ("pass", "fail")}
    unknown = len(checks) - count["pass"] - count["fail"]
    lines = []
    if meta.get("run_id"):
        lines.append(f"run          {meta['run_id']}")
    lines.append(
        f"task         {meta.get('task', '?')} · robot {model.get('robot_name', '?')} · "
        f"asset {asset.get('asset_id', '?')}"
    )
    status = verdict_status(checks)  # equal to the file's status/passed (checked on reading)
    stage = data.get("selected_stage")
    lines.append(
        f"verdict      {status} (scope {data.get('scope', '?')}"
        + (f", selected stage {stage})" if stage else ")")
    )
    stages = data.get("stages") or {}
    if stages:
        lines.append("stages       " + " · ".join(f"{k} {v}" for k, v in stages.items()))
    lines.append(
        f"checks       {count['pass']} passed, {count['fail']} failed, {unknown} not evaluated"
    )
    for c in checks:
        if c.get("status") in ("fail", "not_evaluated"):
            value = c.get("value")
            shown = "n/a" if value is None else f"{value:.6g}"
            reason = f" — {c['reason']}" if c.get("reason") else ""
            lines.append(
                f"  {c['status'].upper():<13} {c.get('name')} = {shown} "
                f"({c.get('comparison', '?')} {c.get('threshold')}){reason}"
            )
    return lines


def _list_archive(args: argparse.Namespace, path: Path) -> None:
    """Print one line per run of the archive root ``path`` (its ``index.jsonl``)."""
    entries = read_index(path)
    say(args, f"{len(entries)} archived run(s) in {path}")
    for e in entries:
        status = e.get("status") or ("pass" if e.get("passed") else "?")
        say(
            args,
            f"  {e.get('archived_at', '?'):<33} {e.get('task', '?'):<15} "
            f"{e.get('asset_id', '?'):<12} {status:<14} {e.get('run_dir', '')}",
        )


def _is_archive_root(path: Path) -> bool:
    return (path / "index.jsonl").is_file() and not (path / "provenance.json").is_file()


def report(args: argparse.Namespace) -> int:
    """``figaroh report``: exit 0 when the summarised verdict passed, else 1.

    ``--archive DIR`` lists the runs of an archive root (exit 0).
    """
    if args.archive is not None:
        if args.run_dir is not None:
            raise CLIError("give either RUN (one run) or --archive DIR (list the archive)")
        root = require_file(args.archive, "archive folder", directory_ok=True)
        if not (root / "index.jsonl").is_file():
            raise CLIError(
                f"--archive {root}: no index.jsonl; pass the root an --archive run wrote "
                "(figaroh identify/calibrate --archive DIR)"
            )
        _list_archive(args, root)
        return EXIT_OK
    if args.run_dir is None:
        raise CLIError("give RUN (a run folder or a verification JSON) or --archive DIR")
    path = Path(args.run_dir)
    if not path.exists():
        raise CLIError(f"run directory not found: {path}")
    if path.is_file():
        data = _require_verdict(_load_json(path, "verification file"), path)
        for line in _summarise_verdict(data):
            say(args, line)
        return EXIT_OK if verdict_status(data["checks"]) == "pass" else EXIT_FAILED
    if _is_archive_root(path):
        logger.warning(
            "figaroh report: an archive root as RUN is deprecated: use --archive %s", path
        )
        _list_archive(args, path)
        return EXIT_OK
    verdict_file, provenance_file = path / "verdict.json", path / "provenance.json"
    if not verdict_file.is_file() and not provenance_file.is_file():
        raise CLIError(
            f"{path} is not an archived run (no verdict.json or provenance.json); pass a run "
            "directory written by --archive / archive_run(), an archive root or a "
            "*_verification.json file"
        )
    say(args, f"run directory {path}")
    if verdict_file.is_file():
        data = _require_verdict(_load_json(verdict_file, "verdict"), verdict_file)
        for line in _summarise_verdict(data):
            say(args, line)
        passed = verdict_status(data["checks"]) == "pass"
    else:
        prov = _load_json(provenance_file, "provenance")
        say(args, f"run          {prov.get('run_id', '?')} (no verdict.json)")
        passed = True
    params = path / "parameters.csv"
    if params.is_file():
        n = max(0, len(params.read_bytes().splitlines()) - 1)  # rows below the header
        say(args, f"parameters   {n} ({params})")
    report = path / "report.html"
    if report.is_file():
        say(args, f"report       {report}")
    return EXIT_OK if passed else EXIT_FAILED


def _compat_notes(a: Dict[str, Any], b: Dict[str, Any]) -> List[str]:
    ca, cb = a.get("compat") or {}, b.get("compat") or {}
    ta = (a.get("metadata") or {}).get("task")
    tb = (b.get("metadata") or {}).get("task")
    notes = []
    if ta != tb:
        notes.append(f"different tasks ({ta} vs {tb})")
    for key in ("active_joints", "dof_names", "decimate"):
        if key in ca or key in cb:
            if ca.get(key) != cb.get(key):
                notes.append(f"different {key}")
    if a.get("schema_version") != b.get("schema_version"):
        notes.append("different schema_version")
    na, nb = ca.get("sample_count"), cb.get("sample_count")
    if isinstance(na, (int, float)) and isinstance(nb, (int, float)) and min(na, nb) > 0:
        if max(na, nb) / min(na, nb) > SAMPLE_COUNT_RATIO_LIMIT:
            notes.append(f"sample counts {na} and {nb} differ by more than ×2")
    sa, sb = ca.get("config_sha256"), cb.get("config_sha256")
    if sa and sb and sa != sb:
        notes.append("different configurations (sha256)")
    return notes


def verification_file(path: str | Path) -> Path:
    """The verification export of a run: the file itself, or the one in a run folder.

    A folder is an archived run (``verdict.json``) or an output folder of
    ``figaroh identify`` / ``calibrate`` holding one ``*_verification.json``.

    Raises:
        CLIError: Not found, or a folder with none or several verification
            files (named), exit 2.
    """
    p = Path(path)
    if p.is_file():
        return p
    if not p.is_dir():
        raise CLIError(f"run not found: {p} (give a run folder or a *_verification.json file)")
    if (p / "verdict.json").is_file():
        return p / "verdict.json"
    found = sorted(p.glob("*_verification.json"))
    if len(found) == 1:
        return found[0]
    if found:
        raise CLIError(
            f"{p} holds {len(found)} verification files ({', '.join(f.name for f in found)}); "
            "give the one to compare"
        )
    raise CLIError(
        f"{p} is not a run folder: no verdict.json (archived run) or *_verification.json "
        "(figaroh identify/calibrate output); give a run folder or a verification JSON file"
    )


def run_label(data: Dict[str, Any], path: Path) -> str:
    """``<run id> · <robot>`` of a verification export (the file name when it has neither)."""
    meta = data.get("metadata") or {}
    model = meta.get("model") or {}
    run_id = meta.get("run_id")
    robot = model.get("robot_name") or (meta.get("asset") or {}).get("asset_id")
    parts = [str(x) for x in (run_id, robot) if x]
    return " · ".join(parts) if parts else path.name


def compare(args: argparse.Namespace) -> int:
    """``figaroh compare``: write the two-run comparison page (exit 0)."""
    require_output_file(args.output, "-o/--output")
    runs = []
    for arg in (args.run_a, args.run_b):
        path = verification_file(arg)
        runs.append((path, _require_verdict(_load_json(path, "verification file"), path)))
    labels = [run_label(data, path) for path, data in runs]
    if labels[0] == labels[1]:  # the same run twice, or two exports of one run
        labels = [f"{label} (A)" if k == 0 else f"{label} (B)" for k, label in enumerate(labels)]
    page = generate_compare_page(title=args.title)
    preload = ["<script>", "(function () {", "  function go() {"]
    for slot, (_, data), label in zip(("a", "b"), runs, labels, strict=True):
        text = json.dumps(data, allow_nan=False)
        preload.append(
            f"    window.figarohCompare.load({json.dumps(slot)}, {_js_string(label)}, "
            f"{_js_string(text)});"
        )
    preload += [
        "  }",
        '  if (document.readyState === "loading") {',
        '    document.addEventListener("DOMContentLoaded", go);',
        "  } else { go(); }",
        "})();",
        "</script>",
    ]
    cut = page.rfind("</body>")
    page = page[:cut] + "\n".join(preload) + "\n" + page[cut:]
    out = Path(args.output)
    make_folder(out.parent)
    atomic_write_text(out, page)
    notes = _compat_notes(runs[0][1], runs[1][1])
    say(args, f"A: {labels[0]} ({runs[0][0]})")
    say(args, f"B: {labels[1]} ({runs[1][0]})")
    if notes:
        say(args, "not directly comparable: " + "; ".join(notes) + " (the page asks to confirm)")
    say(args, f"wrote {out}")
    return EXIT_OK


def _js_string(text: str) -> str:
    """A JavaScript string literal safe inside a ``<script>`` element."""
    return json.dumps(text, ensure_ascii=True).replace("</", "<\\/").replace("<!--", "<\\!--")
