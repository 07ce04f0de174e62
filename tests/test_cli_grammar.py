"""One command-line grammar: every option has help, one option name has one meaning.

Truths: the argparse tree itself (walked command by command), the table of
shared meanings :data:`figaroh.cli.options.SHARED_OPTIONS`, the verdict
metric lists of :mod:`figaroh.cli.thresholds`, and the processes run end to
end (exit codes, stderr lines, files written).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import re
from collections import defaultdict
from typing import Dict, Iterator, List, Tuple

import pytest
import tomllib

from conftest import ROOT, load_example
from figaroh.cli import main as cli_main
from figaroh.cli.main import DEPRECATED_POSITIONALS, build_parser, main
from figaroh.cli.options import (
    DEPRECATED_OPTIONS,
    SHARED_OPTIONS,
    DeprecatedAlias,
    deprecation_notes,
)
from figaroh.cli.thresholds import CALIBRATE_METRICS, IDENTIFY_METRICS

_ur10_cal = load_example("ur10/calibration.py", "ur10_calibration_example")

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
#: Separators allowed between a shared meaning and a command's own detail.
SEPARATORS = (": ", "; ", " (")


# ---------------------------------------------------------------------------
# the argparse tree
# ---------------------------------------------------------------------------
def walk(parser: argparse.ArgumentParser, path: str = "") -> Iterator[Tuple[str, argparse.Action]]:
    """``(command path, action)`` of every argument of every (sub)command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}".strip())
        else:
            yield path, action


def _is_hidden_deprecated(action: argparse.Action) -> bool:
    return isinstance(action, DeprecatedAlias) or action.dest in DEPRECATED_POSITIONALS


def _long_name(action: argparse.Action) -> str:
    return max(action.option_strings, key=len)


def _signature(action: argparse.Action) -> tuple:
    """What must agree between two uses of one option name."""
    return (
        tuple(sorted(action.option_strings)),
        action.dest,
        getattr(action.type, "__name__", action.type),
        tuple(action.choices) if action.choices else None,
        type(action).__name__,
    )


def _means(help_text: str, meaning: str) -> bool:
    return help_text == meaning or any(help_text.startswith(meaning + s) for s in SEPARATORS)


def option_clashes(parser: argparse.ArgumentParser) -> List[str]:
    """Every violation of the rule "one option name, one meaning" in ``parser``.

    The rule: an option name used by two or more commands is a row of
    :data:`SHARED_OPTIONS`; all its uses have the same option strings,
    destination, value type, choices and action kind, and each help text
    starts with the row's meaning (a command may add its detail after
    ``": "``, ``"; "`` or ``" ("``). Hidden deprecated spellings are checked
    by :func:`test_deprecated_spellings_are_listed_and_hidden` instead.
    """
    uses: Dict[str, List[Tuple[str, argparse.Action]]] = defaultdict(list)
    for path, action in walk(parser):
        if action.option_strings and not _is_hidden_deprecated(action):
            uses[_long_name(action)].append((path, action))
    problems = []
    for name, found in uses.items():
        commands = sorted({path or "figaroh" for path, _ in found})
        if len(commands) < 2:
            continue
        if name not in SHARED_OPTIONS:
            problems.append(f"{name} is used by {commands} but has no row in SHARED_OPTIONS")
            continue
        signatures = {_signature(a) for _, a in found}
        if len(signatures) > 1:
            problems.append(f"{name} differs across {commands}: {sorted(map(str, signatures))}")
        for path, action in found:
            if action.help == argparse.SUPPRESS or not _means(
                action.help or "", SHARED_OPTIONS[name]
            ):
                problems.append(
                    f"{path} {name}: help {action.help!r} does not start with its meaning"
                )
    return problems


def test_every_option_and_argument_has_help_text():
    missing = [
        f"{path} {action.option_strings or action.dest}"
        for path, action in walk(build_parser())
        if not _is_hidden_deprecated(action)
        and (not action.help or action.help == argparse.SUPPRESS or not action.help.strip())
    ]
    assert missing == []


def test_one_option_name_has_one_meaning():
    assert option_clashes(build_parser()) == []


def test_the_rule_catches_the_old_clashes():
    """The checker flags what the old grammar had: --max-iterations twice, help-less options."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    calibrate, trajectory, fleet = (sub.add_parser(n) for n in ("calibrate", "trajectory", "fleet"))
    calibrate.add_argument("--max-iterations", type=int, help="outlier-loop fits")
    trajectory.add_argument("--max-iterations", dest="ipopt", type=float, help="IPOPT iterations")
    calibrate.add_argument("--archive", action="store_true", help=SHARED_OPTIONS["--archive"])
    fleet.add_argument("--archive", help=SHARED_OPTIONS["--archive"])
    calibrate.add_argument("--seed", type=int, help="seed")
    trajectory.add_argument("--seed", type=int, help=SHARED_OPTIONS["--seed"])
    problems = option_clashes(parser)
    assert any(p.startswith("--max-iterations is used by") for p in problems)
    assert any(p.startswith("--archive differs") for p in problems)  # flag vs folder
    assert any(p.startswith("calibrate --seed: help 'seed'") for p in problems)
    assert len(problems) == 3


def test_every_shared_meaning_is_shared():
    """No stale row: each name of the table is used by at least two commands."""
    commands = defaultdict(set)
    for path, action in walk(build_parser()):
        if action.option_strings and not _is_hidden_deprecated(action):
            commands[_long_name(action)].add(path)
    assert {n: sorted(commands[n]) for n in SHARED_OPTIONS if len(commands[n]) < 2} == {}


def _helps(command: str) -> Dict[str, str]:
    return {
        _long_name(a): a.help or ""
        for path, a in walk(build_parser())
        if path == command and a.option_strings
    }


def test_threshold_help_lists_the_metrics_of_its_own_command():
    identify, calibrate = _helps("identify")["--threshold"], _helps("calibrate")["--threshold"]
    assert all(m in identify for m in IDENTIFY_METRICS)
    assert all(m in calibrate for m in CALIBRATE_METRICS)
    only_calibrate = set(CALIBRATE_METRICS) - set(IDENTIFY_METRICS)
    only_identify = set(IDENTIFY_METRICS) - set(CALIBRATE_METRICS)
    assert only_calibrate and only_identify
    assert not [m for m in only_calibrate if m in identify]
    assert not [m for m in only_identify if re.search(re.escape(m.split(":")[0]), calibrate)]


def test_method_selection_and_accept_fallback_are_documented():
    assert "least_squares" in _helps("calibrate")["--method"]
    assert "iroc" in _helps("postures")["--selection"]
    wanted = "exit 0 even when the optimiser fell back to its initial guess or stopped early"
    for command in ("trajectory", "postures"):
        action = next(
            a
            for p, a in walk(build_parser())
            if p == command and "--accept-fallback" in a.option_strings
        )
        assert (action.dest, action.default, action.help) == ("accept_fallback", False, wanted)
        args = build_parser().parse_args([command, "c.yaml", "--urdf", "u", "--accept-fallback"])
        assert args.accept_fallback is True


def test_the_robot_and_the_archive_are_options_everywhere():
    """``urdf``/``archive`` values come from ``--urdf``/``--archive`` (positionals are hidden)."""
    for path, action in walk(build_parser()):
        if action.dest in ("urdf", "archive"):
            assert action.option_strings == [f"--{action.dest}"], (path, action)
    robots = {p for p, a in walk(build_parser()) if a.dest == "urdf"}
    assert {"identify", "calibrate", "check", "init", "trajectory", "postures", "view"} <= robots
    archives = {p for p, a in walk(build_parser()) if a.dest == "archive"}
    assert {"fleet run", "fleet report", "index rebuild", "report", "identify"} <= archives


# ---------------------------------------------------------------------------
# deprecated spellings
# ---------------------------------------------------------------------------
def test_deprecated_spellings_are_listed_and_hidden():
    found = {}
    for path, action in walk(build_parser()):
        if isinstance(action, DeprecatedAlias):
            assert action.help == argparse.SUPPRESS
            for option in action.option_strings:
                found[(path, option)] = action.replacement
        elif action.dest in DEPRECATED_POSITIONALS:
            assert action.help == argparse.SUPPRESS and action.nargs == "?"
            _, option, metavar = DEPRECATED_POSITIONALS[action.dest]
            found[(path, metavar)] = f"{option} {metavar}"
    # the other two rows are not parser actions: a console script and a RUN that is an
    # archive root (figaroh report says so itself)
    parsed = {
        k: v
        for k, v in DEPRECATED_OPTIONS.items()
        if k not in (("figaroh-migrate-config", "--input/--output"), ("report", "ARCHIVE_ROOT"))
    }
    assert found == parsed


@pytest.mark.parametrize(
    ("argv", "dest", "value", "new"),
    [
        (["calibrate", "c.yaml", "--urdf", "u", "--data", "d", "--max-iterations", "2"],
         "outlier_passes", 2, "--outlier-passes"),
        (["trajectory", "c.yaml", "--urdf", "u", "--max-iterations", "5"],
         "max_iterations", 5, "--ipopt-max-iterations"),
    ],
)  # fmt: skip
def test_old_option_spelling_keeps_its_meaning_and_says_so(argv, dest, value, new):
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    assert deprecation_notes(args) == (f"--max-iterations is deprecated: use {new} (same meaning)",)
    renamed = build_parser().parse_args([*argv[:-2], new, str(value)])
    assert getattr(renamed, dest) == value and deprecation_notes(renamed) == ()


def _in_process(*args) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_positional_archive_still_works_with_one_warning_line(tmp_path):
    (tmp_path / "archive").mkdir()
    code, out, err = _in_process("index", "rebuild", tmp_path / "archive")
    assert code == 0, err
    assert "indexed 0 runs" in out
    assert err.splitlines() == [
        "WARNING: figaroh index: the positional ARCHIVE is deprecated: use --archive ARCHIVE "
        "(same meaning)"
    ]
    code, out, err = _in_process("index", "rebuild", "--archive", tmp_path / "archive")
    assert (code, err) == (0, "") and "indexed 0 runs" in out
    code, _, err = _in_process("index", "rebuild", tmp_path / "a", "--archive", tmp_path / "b")
    assert code == 2 and "give --archive once" in err


def test_positional_robot_of_init_still_works_with_one_warning_line(ur10_urdf, tmp_path):
    code, _, err = _in_process("init", ur10_urdf, "-o", tmp_path / "a.yaml")
    assert code == 0, err
    assert [line for line in err.splitlines() if "deprecated" in line] == [
        "WARNING: figaroh init: the positional ROBOT_OR_URDF is deprecated: use --urdf "
        "ROBOT_OR_URDF (same meaning)"
    ]
    code, _, err = _in_process("init", "--urdf", ur10_urdf, "-o", tmp_path / "b.yaml")
    assert code == 0 and "deprecated" not in err
    assert (tmp_path / "a.yaml").read_text() == (tmp_path / "b.yaml").read_text()
    code, _, err = _in_process("init", "-o", tmp_path / "c.yaml")
    assert code == 2 and "give --urdf URDF_OR_NAME" in err


def test_migrate_script_is_a_deprecated_alias(tmp_path, capsys):
    from figaroh.cli.setup_commands import DEPRECATED_SCRIPT_NOTE, migrate_config_script
    from figaroh.utils.config_parser import is_unified_config

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["figaroh-migrate-config"] == "figaroh.cli.setup_commands:migrate_config_script"
    old = tmp_path / "legacy.yaml"
    old.write_text(
        "calibration:\n  calib_level: full_params\n  non_geom: False\n  base_frame: universe\n"
        "  tool_frame: wrist_3_link\n  markers:\n    - ref_joint: wrist_3_joint\n"
        "      measure: [True, True, True, True, True, True]\n  free_flyer: False\n"
        "  nb_sample: 29\n  data_file: data/calibration.csv\n"
    )
    assert migrate_config_script(["--input", str(old), "--output", str(tmp_path / "a.yaml")]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == DEPRECATED_SCRIPT_NOTE
    assert "figaroh migrate-config OLD NEW" in DEPRECATED_SCRIPT_NOTE
    assert _in_process("migrate-config", old, tmp_path / "b.yaml")[0] == 0
    assert is_unified_config(tmp_path / "a.yaml")
    assert (tmp_path / "a.yaml").read_text() == (tmp_path / "b.yaml").read_text()


# ---------------------------------------------------------------------------
# logging: third-party INFO hidden at the default verbosity
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("verbose", "quiet", "expected"),
    [
        (0, False, ["WARNING: dask warns", "WARNING: figaroh warns"]),
        (1, False, ["INFO distributed.scheduler: dask info",
                    "WARNING distributed.scheduler: dask warns",
                    "INFO figaroh.cli: figaroh info", "WARNING figaroh.cli: figaroh warns"]),
        (0, True, []),
    ],
)  # fmt: skip
def test_third_party_info_is_quiet_at_default_verbosity(verbose, quiet, expected):
    dask, ours = logging.getLogger("distributed.scheduler"), logging.getLogger("figaroh.cli")
    saved = dask.level
    dask.setLevel(logging.INFO)  # what distributed does for its own loggers
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), cli_main._Logging(quiet, verbose):
            dask.info("dask info")
            dask.warning("dask warns")
            ours.info("figaroh info")
            ours.warning("figaroh warns")
    finally:
        dask.setLevel(saved)
    assert err.getvalue().splitlines() == expected


# ---------------------------------------------------------------------------
# calibrate: --data is the data source; compare: run folders, labelled runs
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def calib_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grammar_calib")
    train, test, _ = _ur10_cal.simulate_ur10_calibration(folder, n_train=30, n_test=20)
    return folder, train, test


@pytest.fixture(scope="module")
def no_source_config(tmp_path_factory):
    """The UR10 configuration without ``data.source_file``."""
    text = CONFIG.read_text()
    assert "source_file:" in text
    path = tmp_path_factory.mktemp("grammar_config") / "no_source.yaml"
    path.write_text("\n".join(line for line in text.splitlines() if "source_file:" not in line))
    return path


def test_calibrate_data_is_the_data_source(calib_data, no_source_config, ur10_urdf, tmp_path):
    _, train, _ = calib_data
    out = tmp_path / "out"
    code, stdout, err = _in_process(
        "calibrate", no_source_config, "--urdf", ur10_urdf, "--data", train, "-o", out,
        "--scope", "execution", "-q", "--outlier-passes", 2,
    )  # fmt: skip
    assert code == 0, err
    assert "source_file" not in err
    rows = (out / "calibration_parameters.csv").read_text().splitlines()
    assert len(rows) > 10
    # the Python API given the same file reads the same data (the configuration's path is
    # the only thing --data replaces)
    from figaroh.calibration.base_calibration import BaseCalibration
    from figaroh.tools.robot import Robot

    with pytest.raises(Exception, match="data.source_file is not set"):
        BaseCalibration(Robot(str(ur10_urdf), load_geometry=False), str(no_source_config))


def test_compare_takes_run_folders_and_labels_runs(calib_data, ur10_urdf, tmp_path):
    _, train, test = calib_data
    archive = tmp_path / "archive"
    for name in ("a", "b"):
        code, _, err = _in_process(
            "calibrate", CONFIG, "--urdf", ur10_urdf, "--data", train, "--validation-data", test,
            "-o", tmp_path / name, "--scope", "execution", "-q", "--archive", archive,
        )  # fmt: skip
        assert code == 0, err
    archived = sorted(p.parent for p in archive.rglob("verdict.json"))
    assert len(archived) == 2
    code, listing, _ = _in_process("report", "--archive", archive)
    assert code == 0 and "2 archived run(s)" in listing
    page = tmp_path / "compare.html"
    # an archived run folder against an output folder
    code, out, err = _in_process("compare", archived[0], tmp_path / "b", "-o", page)
    assert code == 0, err
    html = page.read_text()
    for slot, source in (("a", archived[0] / "verdict.json"),
                         ("b", tmp_path / "b" / "calibration_verification.json")):  # fmt: skip
        meta = json.loads(source.read_text())["metadata"]
        label = f"{meta['run_id']} · {meta['model']['robot_name']}"
        assert f"{slot.upper()}: {label}" in out.replace(" (A)", "").replace(" (B)", "")
        shown = json.dumps(label, ensure_ascii=True)[1:-1]
        assert re.search(rf'load\("{slot}", "{re.escape(shown)}( \([AB]\))?"', html), label
    assert 'calibration_verification.json"' not in html.split("<script>\n(function")[-1]
    # a folder without a verification export is refused, naming what it lacks
    (tmp_path / "empty").mkdir()
    code, _, err = _in_process("compare", tmp_path / "empty", tmp_path / "b", "-o", page)
    assert code == 2 and "no verdict.json" in err and "*_verification.json" in err
