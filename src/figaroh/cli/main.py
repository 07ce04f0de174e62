"""The ``figaroh`` command line.

Commands::

    figaroh identify CONFIG --urdf URDF (--data DIR | --bag PATH [--topic T]) [--report]
    figaroh calibrate CONFIG --urdf URDF (--data CSV | --bag PATH --pose-topic T) [--report]
    figaroh check CONFIG [--urdf URDF]
    figaroh bag info PATH [--json]
    figaroh report RUN [--archive DIR]
    figaroh compare RUN_A RUN_B -o page.html
    figaroh migrate-config OLD NEW
    figaroh robots
    figaroh init --urdf ROBOT_OR_URDF [-o config.yaml] [--force]
    figaroh trajectory CONFIG --urdf URDF [-o DIR] [--segments N] [--ipopt-max-iterations N]
    figaroh postures CONFIG --urdf URDF [-o DIR] [--n-postures N]
    figaroh view --urdf URDF [--config C] [--data CSV] [--dry-run]
    figaroh fleet run BATCH.yaml [--scheduler ADDR] [--archive DIR] [--workers N] [--dashboard]
                                 [--ship-inputs] [--deadline S] [--stall-timeout S]
    figaroh fleet report --archive DIR [--robot R ...] [--param P ...] [--k K] [-o drift.html]
    figaroh index rebuild [--archive DIR]

One grammar: the robot is ``--urdf URDF_OR_NAME`` and an archive root is
``--archive DIR`` in every command; an option name means one thing in every
command (:data:`figaroh.cli.options.SHARED_OPTIONS`). The old spellings
(:data:`figaroh.cli.options.DEPRECATED_OPTIONS`: positional ``view URDF``,
``init ROBOT``, ``index rebuild ARCHIVE``, ``--max-iterations``) still work and
log one deprecation warning line.

Every command accepts ``--quiet`` (errors only, no progress bar) and
``--verbose`` (``-v`` info, ``-vv`` debug and tracebacks).

Exit codes: ``0`` success (for ``identify``/``calibrate``/``report``: the
verdict passed), ``1`` the verdict did not pass or the computation failed,
``2`` bad input (missing file, malformed configuration or data, bad arguments),
``130`` interrupted — always with a one-line message on stderr and no
traceback (``-vv`` prints it). The mapping from exceptions to codes is
:func:`figaroh.cli.common.exit_code_for`.

Logging: one line per record on stderr. At the default verbosity figaroh's
own loggers print warnings and errors, and third-party loggers (Dask's
``distributed``, ``asyncio``, ``tornado``...) only warnings and errors too,
whatever level those libraries set for themselves; ``-v`` shows their
``INFO`` records, ``-vv`` their ``DEBUG`` ones; ``-q`` errors only.

Importing this module is cheap: it builds the argument parser only. The
commands live in :mod:`figaroh.cli.task_commands` (``identify``,
``calibrate``), :mod:`figaroh.cli.run_commands` (``report``, ``compare``) and
:mod:`figaroh.cli.setup_commands` (``migrate-config``, ``robots``),
:mod:`figaroh.cli.check_command` (``check``) and
:mod:`figaroh.cli.init_command` (``init``), :mod:`figaroh.cli.design_commands`
(``trajectory``, ``postures``), :mod:`figaroh.cli.view_command` (``view``) and
:mod:`figaroh.cli.fleet_command` (``fleet run``, ``fleet report``, ``index rebuild``) and
:mod:`figaroh.cli.bag_command` (``bag info``); they import
the library (NumPy, Pinocchio, the task packages: seconds), so the table
:data:`COMMANDS` names them and :func:`main` loads the one that runs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from typing import Any, Callable, Dict, List, Sequence, Tuple

import figaroh.cli as _cli
from figaroh import __version__
from figaroh.calibration.settings import DEFAULT_SETTINGS as _CALIBRATION_DEFAULTS
from figaroh.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    CLIError,
    describe_error,
    exit_code_for,
    one_line,
)
from figaroh.cli.options import (
    ARCHIVE_UNDER_OUTPUT,
    DeprecatedAlias,
    deprecation_notes,
    int_at_least,
    note_deprecation,
    positive_float,
    shared_help,
)
from figaroh.cli.thresholds import CALIBRATE_METRICS, IDENTIFY_METRICS
from figaroh.identification.settings import DEFAULT_SETTINGS as _IDENTIFICATION_DEFAULTS
from figaroh.tools.robot_paths import resolve_robot_urdf

logger = logging.getLogger(__name__)

__all__ = ["COMMANDS", "build_parser", "main"]

PROG = "figaroh"
#: The exit codes, as every ``--help`` shows them.
EXIT_CODES_HELP = (
    "Exit codes: 0 success (verdict passed), 1 verdict failed or computation failed, "
    "2 bad input (file, configuration, data or option), 130 interrupted."
)
SELECT_STAGES = ("fit", "reconstruction", "physical_fit")

#: ``command → its implementation``, each reached through the package's lazy
#: submodules (``figaroh.cli.task_commands``…), so a command's module is imported
#: when that command runs (see the module docstring).
COMMANDS: Dict[str, Callable[[], Callable[[argparse.Namespace], int]]] = {
    "identify": lambda: _cli.task_commands.identify,
    "calibrate": lambda: _cli.task_commands.calibrate,
    "check": lambda: _cli.check_command.check,
    "report": lambda: _cli.run_commands.report,
    "compare": lambda: _cli.run_commands.compare,
    "migrate-config": lambda: _cli.setup_commands.migrate_config,
    "robots": lambda: _cli.setup_commands.robots,
    "init": lambda: _cli.init_command.init,
    "trajectory": lambda: _cli.design_commands.trajectory,
    "postures": lambda: _cli.design_commands.postures,
    "view": lambda: _cli.view_command.view,
    "fleet": lambda: _cli.fleet_command.fleet,
    "index": lambda: _cli.fleet_command.index,
    "bag": lambda: _cli.bag_command.bag,
}


# ---------------------------------------------------------------------------
# logging: one line per record; errors deferred so a failing command prints one line
# ---------------------------------------------------------------------------
def _is_figaroh_logger(name: str) -> bool:
    """Whether ``name`` is figaroh's own logger (``figaroh`` or below it)."""
    return name == "figaroh" or name.startswith("figaroh.")


class _CLILogHandler(logging.Handler):
    """Writes log records as single lines on stderr.

    ERROR records are held back until the command ends: when the command
    fails, its own one-line message replaces them (the library logs an error
    before raising); when it succeeds they are written then.

    Records of third-party loggers below ``level`` are dropped: a library
    that sets its own logger to ``INFO`` (Dask's ``distributed`` does) prints
    nothing more than warnings at the default verbosity.

    Args:
        stream: Where the lines go (stderr).
        verbose: ``-v`` count (0: one-line messages, errors deferred).
        level: The command line's level (WARNING by default, ERROR with
            ``-q``, INFO with ``-v``, DEBUG with ``-vv``).
    """

    def __init__(self, stream, verbose: int, level: int = logging.WARNING) -> None:
        super().__init__()
        self.stream = stream
        self.verbose = verbose
        self.third_party_level = level
        self.deferred: List[logging.LogRecord] = []
        fmt = "%(levelname)s %(name)s: %(message)s" if verbose else "%(levelname)s: %(message)s"
        self.setFormatter(logging.Formatter(fmt))
        self.addFilter(self._keep)

    def _keep(self, record: logging.LogRecord) -> bool:
        """False for a third-party record below the command line's level."""
        return record.levelno >= self.third_party_level or _is_figaroh_logger(record.name)

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR and not self.verbose:
            self.deferred.append(record)
            return
        self._write(record)

    def _write(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            if not self.verbose:
                text = " ".join(text.split())
            self.stream.write(text + "\n")
            self.stream.flush()
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)

    def flush_deferred(self, discard: bool) -> None:
        records, self.deferred = self.deferred, []
        if not discard:
            for record in records:
                self._write(record)


class _Logging:
    """Install the CLI log handler on the root logger; restore everything on exit."""

    def __init__(self, quiet: bool, verbose: int) -> None:
        self.level = (
            logging.ERROR
            if quiet
            else (
                logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
            )
        )
        self.handler = _CLILogHandler(sys.stderr, verbose, self.level)
        self.root = logging.getLogger()
        self._saved_level = self.root.level

    def __enter__(self) -> _CLILogHandler:
        self.root.addHandler(self.handler)
        self.root.setLevel(self.level)
        logging.captureWarnings(True)
        return self.handler

    def __exit__(self, *exc: Any) -> None:
        logging.captureWarnings(False)
        self.root.removeHandler(self.handler)
        self.root.setLevel(self._saved_level)


# ---------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------
def _command_parser(sub: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The sub-parser of command ``name`` (its ``--help`` ends with the exit codes)."""
    return sub.add_parser(name, epilog=EXIT_CODES_HELP, **kwargs)


def _add_verbosity(parser: argparse.ArgumentParser, suppress: bool) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help=shared_help("--quiet"),
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if suppress else 0,
        help=shared_help("--verbose"),
    )


def _add_package_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--package-dir",
        action="append",
        default=None,
        metavar="DIR",
        help=shared_help("--package-dir"),
    )


def _add_urdf(p: argparse.ArgumentParser, required: bool, detail: str = "") -> None:
    p.add_argument(
        "--urdf",
        required=required,
        metavar="URDF_OR_NAME",
        help=shared_help("--urdf", detail, sep="; "),
    )


def _add_robot_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", metavar="CONFIG", help="unified configuration YAML")
    _add_urdf(p, required=True)
    _add_package_dir(p)
    p.add_argument("--free-flyer", action="store_true", help=shared_help("--free-flyer"))


def _add_output(p: argparse.ArgumentParser, default: str, detail: str) -> None:
    p.add_argument(
        "-o",
        "--output",
        default=default,
        metavar="PATH",
        help=shared_help("--output", f"{detail} (default {default})"),
    )


def _add_archive_option(p: argparse.ArgumentParser, detail: str, **kwargs: Any) -> None:
    p.add_argument("--archive", metavar="DIR", help=shared_help("--archive", detail), **kwargs)


#: ``hidden positional dest → (option dest, option, metavar)`` of the deprecated
#: positional spellings (``view URDF``, ``init ROBOT``, ``index rebuild ARCHIVE``).
DEPRECATED_POSITIONALS: Dict[str, Tuple[str, str, str]] = {
    "urdf_positional": ("urdf", "--urdf", "URDF"),
    "robot_positional": ("urdf", "--urdf", "ROBOT_OR_URDF"),
    "archive_positional": ("archive", "--archive", "ARCHIVE"),
}


def _add_deprecated_positional(p: argparse.ArgumentParser, dest: str) -> None:
    """The old positional spelling ``dest`` of an option (hidden; see :func:`_move_positionals`)."""
    metavar = DEPRECATED_POSITIONALS[dest][2]
    p.add_argument(dest, nargs="?", default=None, metavar=metavar, help=argparse.SUPPRESS)


def _add_verdict_options(p: argparse.ArgumentParser, command: str, metrics: Sequence[str]) -> None:
    p.add_argument(
        "--scope",
        choices=("auto", "execution", "prediction"),
        default=None,
        help=shared_help(
            "--scope",
            "default: the configuration's verification.scope, else prediction, as verify(); "
            "auto: prediction when a limit is given, else execution",
        ),
    )
    p.add_argument(
        "--threshold",
        action="append",
        default=None,
        metavar="NAME=VALUE[:min|max]",
        help=shared_help("--threshold", f"metrics of figaroh {command}: " + ", ".join(metrics)),
    )
    p.add_argument("--report", action="store_true", help=shared_help("--report"))
    _add_archive_option(
        p,
        "archive the run under DIR (with no DIR: OUTPUT/runs); see figaroh report",
        nargs="?",
        const=ARCHIVE_UNDER_OUTPUT,
        default=None,
    )


def _add_identify(sub: Any) -> None:
    p = _command_parser(
        sub,
        "identify",
        help="identify dynamic parameters from CSV logs",
        description="Identify the base dynamic parameters of a robot from CSV logs "
        "(columns t, q_<joint>, [dq_<joint>], [ddq_<joint>], tau_<joint>).",
    )
    _add_robot_options(p)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--data",
        metavar="PATH",
        help=shared_help(
            "--data", "the training log, a CSV file or a folder with identification.csv"
        ),
    )
    source.add_argument(
        "--bag",
        metavar="PATH",
        help=shared_help("--bag", "the training log, sensor_msgs/JointState messages"),
    )
    p.add_argument(
        "--validation-data",
        metavar="PATH",
        help=shared_help("--validation-data", "a held-out log (CSV file or folder)"),
    )
    p.add_argument("--validation-bag", metavar="PATH", help="held-out log: a ROS bag")
    p.add_argument(
        "--topic",
        action="append",
        default=None,
        metavar="T",
        help="JointState topic of --bag (repeat for one topic per joint group; default: "
        "tasks.identification.data.bag.joint_topics, else the bag's only JointState topic)",
    )
    p.add_argument(
        "--resample",
        choices=("none", "linear", "cubic"),
        default=None,
        help="resample the bag's stamps onto signal_processing.sampling_frequency (default: "
        "data.bag.resample, else none = refuse an irregular time base)",
    )
    p.add_argument(
        "--select-stage", choices=SELECT_STAGES, help="estimate to report, verify and export"
    )
    decimation = p.add_mutually_exclusive_group()
    decimation.add_argument(
        "--decimate",
        type=int_at_least(2),
        metavar="N",
        help="low-pass and keep every N-th sample (N ≥ 2; default: solve()'s, every "
        f"{_IDENTIFICATION_DEFAULTS.decimation_factor}th)",
    )
    decimation.add_argument(
        "--no-decimate",
        dest="decimate",
        action="store_const",
        const=0,
        help="fit every sample (solve(decimate=False))",
    )
    p.add_argument(
        "--wls",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="weighted least squares (default: problem.wls of the configuration)",
    )
    p.add_argument(
        "--rmse-limit",
        type=positive_float,
        metavar="TAU",
        help="maximum held-out effort RMSE of every fitted joint [N·m or N]",
    )
    p.add_argument(
        "--export-urdf",
        metavar="PATH",
        help=shared_help("--export-urdf", "the selected estimate's link inertials"),
    )
    _add_output(p, "results/identification", "the output folder")
    _add_verdict_options(p, "identify", IDENTIFY_METRICS)
    _add_verbosity(p, suppress=True)


def _add_calibrate(sub: Any) -> None:
    p = _command_parser(
        sub,
        "calibrate",
        help="geometric calibration from a pose CSV",
        description="Calibrate the kinematic parameters of a robot from measured poses "
        "(columns x1, y1, z1, phix1, phiy1, phiz1 ... and one column per joint). --data "
        "replaces the configuration's data.source_file.",
    )
    _add_robot_options(p)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--data",
        metavar="CSV",
        help=shared_help("--data", "the calibration CSV (replaces data.source_file)"),
    )
    source.add_argument(
        "--bag",
        metavar="PATH",
        help=shared_help(
            "--bag", "joint states and poses, the still postures paired with --pose-topic"
        ),
    )
    p.add_argument(
        "--validation-data",
        metavar="CSV",
        help=shared_help("--validation-data", "a held-out calibration CSV (or bag)"),
    )
    p.add_argument(
        "--pose-topic",
        metavar="T",
        help="measured pose topic of --bag (PoseStamped, TransformStamped, TFMessage; default: "
        "tasks.calibration.data.bag.pose_topic)",
    )
    p.add_argument("--pose-frame", metavar="F", help="child frame of a TFMessage --pose-topic")
    p.add_argument(
        "--joint-topic",
        action="append",
        default=None,
        metavar="T",
        help="JointState topic of --bag (repeatable; default: the bag's only one)",
    )
    p.add_argument(
        "--still-window",
        type=positive_float,
        metavar="S",
        help="shortest still window that makes a posture [s] (default: data.bag.still_window_s, "
        "0.5)",
    )
    p.add_argument("--known-base-frame", action="store_true", help="do not estimate base_*")
    p.add_argument("--known-tip-frame", action="store_true", help="do not estimate pEE*/phiEE*")
    p.add_argument(
        "--measurement-std",
        nargs=2,
        type=positive_float,
        metavar=("POS_M", "ROT_RAD"),
        help="measurement noise: position [m] and orientation [rad]",
    )
    p.add_argument(
        "--method",
        choices=("lm", "trf", "dogbox"),
        default="lm",
        help="scipy.optimize.least_squares method: lm (Levenberg-Marquardt, the default of "
        "BaseCalibration.solve()), trf or dogbox (trust region)",
    )
    passes = int_at_least(1)
    p.add_argument(
        "--outlier-passes",
        type=passes,
        default=_CALIBRATION_DEFAULTS.max_iterations,
        metavar="N",
        help="fits of the outlier-rejection loop, each refitting without the postures beyond "
        "outlier_threshold (≥ 1; default "
        f"{_CALIBRATION_DEFAULTS.max_iterations}, solve(max_iterations=N))",
    )
    p.add_argument(
        "--max-iterations",
        action=DeprecatedAlias,
        replacement="--outlier-passes",
        dest="outlier_passes",
        type=passes,
        metavar="N",
    )
    p.add_argument(
        "--position-limit-mm",
        type=positive_float,
        help="maximum held-out position RMSE [mm] (with orientation measured, give "
        "--orientation-limit-deg too)",
    )
    p.add_argument(
        "--orientation-limit-deg",
        type=positive_float,
        help="maximum held-out orientation RMSE [deg] (with position measured, give "
        "--position-limit-mm too)",
    )
    p.add_argument(
        "--export-urdf",
        metavar="PATH",
        help=shared_help("--export-urdf", "the calibrated joint placements"),
    )
    _add_output(p, "results/calibration", "the output folder")
    _add_verdict_options(p, "calibrate", CALIBRATE_METRICS)
    _add_verbosity(p, suppress=True)


def _add_check(sub: Any) -> None:
    p = _command_parser(
        sub,
        "check",
        help="check a configuration without running it",
        description="Parse a unified configuration (resolving extends:), refuse unknown keys, "
        "check the active joints against the robot model (--urdf, else robot.urdf of the "
        "configuration), the units and ranges of every enabled task, and print what a run "
        "would use. Exit 0 when valid, 2 with the one-line error otherwise.",
    )
    p.add_argument("config", metavar="CONFIG", help="unified configuration YAML")
    _add_urdf(p, required=False, detail="default: robot.urdf of the configuration")
    _add_package_dir(p)
    p.add_argument("--free-flyer", action="store_true", help=shared_help("--free-flyer"))
    _add_verbosity(p, suppress=True)


def _add_report(sub: Any) -> None:
    p = _command_parser(
        sub,
        "report",
        help="summarise an archived run (or list an archive, or a verification JSON)",
        description="Summarise an archived run folder or a *_verification.json file; with "
        "--archive DIR, list the runs of an archive root (index.jsonl). Exit 1 when the "
        "verdict did not pass.",
    )
    p.add_argument(
        "run_dir",
        metavar="RUN",
        nargs="?",
        default=None,
        help="an archived run folder or a *_verification.json file",
    )
    _add_archive_option(p, "list the runs archived under DIR", default=None)
    _add_verbosity(p, suppress=True)


def _add_compare(sub: Any) -> None:
    p = _command_parser(
        sub,
        "compare",
        help="write the two-run comparison page",
        description="Write the static two-run comparison page with both verification "
        "exports already loaded. A run is an archived run folder (its verdict.json), an "
        "output folder of identify/calibrate (its *_verification.json) or a verification "
        "JSON file; each is labelled with its run id and robot.",
    )
    p.add_argument("run_a", metavar="RUN_A", help="first run: run folder or verification JSON")
    p.add_argument("run_b", metavar="RUN_B", help="second run: run folder or verification JSON")
    _add_output(p, "compare.html", "the page")
    p.add_argument("--title", default=None, help="page title")
    _add_verbosity(p, suppress=True)


def _add_migrate_config(sub: Any) -> None:
    p = _command_parser(
        sub,
        "migrate-config",
        help="convert a legacy flat configuration to the unified format",
        description="Convert a legacy flat configuration to the unified format "
        "(figaroh.utils.config_migration). Exit 1 when the self-check (--urdf) fails. "
        "Replaces the figaroh-migrate-config --input/--output script (deprecated).",
    )
    p.add_argument("old", metavar="OLD", help="legacy configuration to read")
    p.add_argument("new", metavar="NEW", help="unified configuration to write")
    p.add_argument(
        "--task",
        default=None,
        help=shared_help(
            "--task",
            "the section to migrate, calibration or identification "
            "(default: every section present)",
        ),
    )
    p.add_argument("--template", default=None, help="base, manipulator, humanoid or a YAML path")
    _add_urdf(p, required=False, detail="enables the round-trip self-check")
    p.add_argument(
        "--robot-name",
        default=None,
        help=shared_help(
            "--robot-name", "default: the URDF's model name, else the file name", sep=" ("
        ),
    )
    _add_verbosity(p, suppress=True)


def _add_robots(sub: Any) -> None:
    p = _command_parser(
        sub,
        "robots",
        help="list the robots that can be loaded by name",
        description="List the robots that --urdf NAME and load_robot(NAME) accept, by source "
        "(example-robot-data, robot_descriptions when installed); --paths prints one URDF "
        "path per line instead.",
    )
    p.add_argument("--paths", action="store_true", help="print one URDF path per line")
    p.add_argument(
        "--loader",
        choices=("figaroh", "robot_description"),
        default="figaroh",
        help="figaroh: example-robot-data URDFs; robot_description: robot_descriptions names",
    )
    _add_verbosity(p, suppress=True)


def _add_init(sub: Any) -> None:
    p = _command_parser(
        sub,
        "init",
        help="write a commented configuration for a robot's URDF",
        description="Write a commented unified configuration for a URDF (or an "
        "example-robot-data robot name): its one-DoF joints active, the manipulator "
        "template extended, identification without friction, a calibration section whose "
        "tool frame is the link of the last joint, the trajectory design. Refuses to "
        "overwrite an existing file unless --force.",
    )
    _add_urdf(p, required=False)
    _add_deprecated_positional(p, "robot_positional")
    _add_output(p, "config.yaml", "the configuration")
    p.add_argument("--force", action="store_true", help="overwrite an existing -o file")
    p.add_argument(
        "--robot-name",
        default=None,
        help=shared_help("--robot-name", "default: the model name", sep=" ("),
    )
    _add_package_dir(p)
    _add_verbosity(p, suppress=True)


def _add_accept_fallback(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--accept-fallback",
        dest="accept_fallback",
        action="store_true",
        default=False,
        help=shared_help("--accept-fallback"),
    )


def _add_trajectory(sub: Any) -> None:
    p = _command_parser(
        sub,
        "trajectory",
        help="design an exciting trajectory for identification (IPOPT)",
        description="Design an exciting trajectory (stacked waypoint-spline segments whose "
        "waypoints IPOPT optimises for a well-conditioned base regressor under the joint "
        'limits and self-collision avoidance; needs cyipopt: pip install "figaroh[ipopt]"). '
        "Writes trajectory.csv and trajectory_summary.yaml. Exit 1 when a segment fails.",
    )
    _add_robot_options(p)
    _add_output(p, "results/trajectory", "the output folder")
    p.add_argument(
        "--segments", type=int_at_least(1), default=1, metavar="N", help="stacked segments"
    )
    iterations = int_at_least(1)
    # dest max_iterations: the trajectory_config key the design reads
    p.add_argument(
        "--ipopt-max-iterations",
        dest="max_iterations",
        type=iterations,
        metavar="N",
        help="IPOPT iterations per segment (IPOPT max_iter; default: the configuration's "
        "problem.max_iterations)",
    )
    p.add_argument(
        "--max-iterations",
        action=DeprecatedAlias,
        replacement="--ipopt-max-iterations",
        dest="max_iterations",
        type=iterations,
        metavar="N",
    )
    p.add_argument(
        "--waypoints",
        type=int_at_least(2),
        metavar="N",
        help="waypoints per segment (default: the configuration's)",
    )
    p.add_argument(
        "--frequency",
        type=positive_float,
        metavar="HZ",
        help="sampling frequency of the trajectory [Hz] (default: the configuration's)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help=shared_help("--seed", "the initial waypoints")
    )
    _add_accept_fallback(p)
    _add_verbosity(p, suppress=True)


def _add_postures(sub: Any) -> None:
    p = _command_parser(
        sub,
        "postures",
        help="select D-optimal calibration postures",
        description="Select D-optimal calibration postures from a candidate pool "
        "(--candidates, else the configuration's sample_configurations_file, else "
        "random postures within the joint limits); writes postures.csv and postures.yaml "
        "(candidate schema). Exit 1 when the design is infeasible.",
    )
    _add_robot_options(p)
    _add_output(p, "results/postures", "the output folder")
    p.add_argument(
        "--n-postures",
        type=int_at_least(1),
        metavar="N",
        help="keep the N candidates of largest SOCP weight (default: every weight > 1e-5)",
    )
    p.add_argument("--candidates", metavar="FILE", help="candidate postures (YAML or CSV)")
    p.add_argument(
        "--n-candidates",
        type=int_at_least(1),
        default=200,
        metavar="N",
        help="number of random candidates when no candidate file is given",
    )
    p.add_argument(
        "--seed", type=int, default=0, help=shared_help("--seed", "the random candidates")
    )
    p.add_argument(
        "--selection",
        choices=("threshold", "iroc"),
        default="threshold",
        help="how postures are kept from the SOCP weights: threshold keeps every weight "
        "> 1e-5 (default); iroc walks the ranking and stops when the D-optimality criterion "
        "per posture stops growing",
    )
    _add_accept_fallback(p)
    _add_verbosity(p, suppress=True)


def _add_view(sub: Any) -> None:
    p = _command_parser(
        sub,
        "view",
        help="show a URDF in the browser (viser), optionally replaying a CSV log",
        description="Show a URDF with its meshes in the browser (viser; needs "
        'pip install "figaroh[viz]"): joint sliders, or with --data a replay of the '
        "q_<joint> columns of a CSV log. Serves until Ctrl-C (exit 130).",
    )
    _add_urdf(p, required=False)
    _add_deprecated_positional(p, "urdf_positional")
    p.add_argument("--config", metavar="C", help="configuration: show its active joints only")
    p.add_argument(
        "--data",
        metavar="CSV",
        help=shared_help("--data", "a CSV log whose q_<joint> columns are replayed"),
    )
    _add_package_dir(p)
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (default loopback)")
    p.add_argument("--port", type=int_at_least(0), default=8080, help="TCP port (0: any free)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="load the URDF meshes and the data, check them and exit without serving",
    )
    _add_verbosity(p, suppress=True)


def _add_fleet(sub: Any) -> None:
    fleet = _command_parser(
        sub,
        "fleet",
        help="run a batch of jobs on Dask; report parameter drift and failures",
        description="Run a batch of identification / calibration / trajectory / "
        "Monte-Carlo jobs (fleet run), write the parameter drift report (fleet report) and "
        "list the failed jobs (fleet status).",
    )
    actions = fleet.add_subparsers(dest="fleet_command", metavar="ACTION")
    actions.required = True
    run = _command_parser(
        actions,
        "run",
        help="run a batch YAML, archive and index every run",
        description="Run every job of a batch YAML on Dask distributed (an embedded "
        "LocalCluster, or --scheduler), archive each run and record it in the run index. "
        "Exit 0 when every job ran and passed its verdict, 1 when a job failed or a "
        "verdict did not pass, 2 bad input or an archive held by another batch.",
    )
    run.add_argument("batch", metavar="BATCH.yaml", help="the batch of jobs (YAML)")
    run.add_argument("--scheduler", default=None, help="Dask scheduler address tcp://host:8786")
    _add_archive_option(
        run, "where the runs are archived (default results/fleet)", default="results/fleet"
    )
    run.add_argument(
        "--workers", type=int_at_least(1), default=None, help="worker processes (embedded cluster)"
    )
    run.add_argument("--serial", action="store_true", help="run in this process, without Dask")
    run.add_argument(
        "--dashboard",
        action="store_true",
        help="serve the embedded cluster's Dask dashboard on 127.0.0.1 (off by default; the "
        "cluster listens on 127.0.0.1 only)",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar over jobs")
    # inputs, time limits (workers: figaroh.fleet.inputs, run_batch)
    run.add_argument(
        "--ship-inputs",
        action="store_true",
        help="send each job's input files with its task (workers need no shared file system)",
    )
    run.add_argument(
        "--deadline",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="wall time of the whole batch; then unfinished jobs are cancelled and fail",
    )
    run.add_argument(
        "--stall-timeout",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="longest time without a finished job (e.g. every worker gone); then unfinished "
        "jobs are cancelled and fail",
    )
    _add_verbosity(run, suppress=True)
    report = _command_parser(
        actions,
        "report",
        help="write the self-contained HTML drift report of an archive",
        description="Write the parameter drift report (value ± σ over time per robot, the "
        "fleet's spread, the runs that moved). A run is flagged when its parameter moved "
        "against its history or the fleet, at a false-discovery rate --q over the report's "
        "robots × parameters (default 0.05), or with --k when |z| > k. Exit 0 when nothing is "
        "flagged, 1 when a robot is flagged.",
    )
    _add_archive_option(
        report, "the fleet archive to read (default results/fleet)", default="results/fleet"
    )
    report.add_argument(
        "--robot", action="append", default=None, help="only this robot id (repeatable)"
    )
    report.add_argument("--param", action="append", default=None, help="parameter (repeatable)")
    report.add_argument(
        "--task",
        default=None,
        help=shared_help("--task", "the runs of this task (identification, calibration...)"),
    )
    rule = report.add_mutually_exclusive_group()
    rule.add_argument(
        "--q",
        type=positive_float,
        default=None,
        help="false-discovery rate of the report, in (0, 1) (default 0.05)",
    )
    rule.add_argument(
        "--k",
        type=positive_float,
        default=None,
        help="threshold rule instead: flag every comparison with |z| > k [σ] (no "
        "multiple-testing control; the rule of earlier versions, e.g. --k 3)",
    )
    report.add_argument(
        "--since",
        default=None,
        metavar="TIME",
        help="only the runs with a session time at or after TIME (ISO-8601, e.g. 2026-03-01)",
    )
    report.add_argument(
        "--last",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="only the last N (sessions: the runs of the N most recent sessions)",
    )
    _add_output(report, "drift.html", "the page")
    _add_verbosity(report, suppress=True)
    status = _command_parser(
        actions,
        "status",
        help="what failed, where, how often in the last batches of an archive",
        description="List the failed jobs of the last N batches: per robot and error class "
        "the failures, batches, attempts, hosts and last message, and the robots that failed "
        "several batches running. Exit 0 when no job failed in those batches, 1 when one "
        "did, 2 bad input.",
    )
    _add_archive_option(
        status, "the fleet archive to read (default results/fleet)", default="results/fleet"
    )
    status.add_argument(
        "--last",
        type=int_at_least(1),
        default=10,
        metavar="N",
        help="only the last N (batches; default 10)",
    )
    status.add_argument(
        "--robot", action="append", default=None, help="only this robot id (repeatable)"
    )
    status.add_argument("--json", action="store_true", help="print JSON (the summary)")
    _add_verbosity(status, suppress=True)


def _add_bag(sub: Any) -> None:
    bag = _command_parser(
        sub,
        "bag",
        help="inspect a ROS bag",
        description="Inspect ROS bags (ROS 1 .bag, ROS 2 folders with sqlite3 or MCAP storage, "
        '.mcap files; needs rosbags: pip install "figaroh[ros]").',
    )
    actions = bag.add_subparsers(dest="bag_command", metavar="ACTION")
    actions.required = True
    info = _command_parser(
        actions,
        "info",
        help="topics, types, counts, rates, joint names and time span of a bag",
        description="Print the topics of a bag with their message types, counts, rates and "
        "the joint names of its JointState topics, and the bag's time span. Exit 2 when the "
        "path is not a bag.",
    )
    info.add_argument("path", metavar="PATH", help="ROS 1 .bag, ROS 2 bag folder or .mcap file")
    info.add_argument("--json", action="store_true", help="print JSON (instead of a table)")
    _add_verbosity(info, suppress=True)


#: Archive root of ``index rebuild`` when ``--archive`` is not given.
DEFAULT_FLEET_ARCHIVE = "results/fleet"


def _add_index(sub: Any) -> None:
    index = _command_parser(
        sub,
        "index",
        help="maintain the run index of an archive",
        description="Maintain the SQLite run index (index.sqlite) of a fleet archive.",
    )
    actions = index.add_subparsers(dest="index_command", metavar="ACTION")
    actions.required = True
    rebuild = _command_parser(
        actions,
        "rebuild",
        help="rebuild index.sqlite from the sealed run folders",
        description="Rebuild the run index from the run_record.json of every sealed run "
        "folder and failures.jsonl (atomic replace). Exit 0 when every folder was indexed, "
        "1 when some were skipped (named on stderr), 2 bad input or an archive held by a "
        "batch.",
    )
    _add_archive_option(
        rebuild,
        f"the archive whose index is rebuilt (default {DEFAULT_FLEET_ARCHIVE})",
        default=None,
    )
    _add_deprecated_positional(rebuild, "archive_positional")
    _add_verbosity(rebuild, suppress=True)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2).

    The line names the option and points to ``--help`` instead of printing
    the whole usage block.
    """

    def error(self, message: str):  # noqa: D102 - argparse hook
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``figaroh`` argument parser (one sub-parser per command)."""
    parser = _Parser(
        prog=PROG,
        description="Dynamic identification and geometric calibration of robots.",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_verbosity(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_identify(sub)
    _add_calibrate(sub)
    _add_check(sub)
    _add_report(sub)
    _add_compare(sub)
    _add_migrate_config(sub)
    _add_robots(sub)
    _add_init(sub)
    _add_trajectory(sub)
    _add_postures(sub)
    _add_view(sub)
    _add_fleet(sub)
    _add_index(sub)
    _add_bag(sub)
    return parser


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------
#: Commands whose robot may be given by the deprecated positional (``--urdf`` required).
_ROBOT_COMMANDS = ("init", "view")


def _move_positionals(args: argparse.Namespace) -> None:
    """Move a deprecated positional spelling to its option, with a deprecation note.

    ``view URDF`` → ``--urdf``, ``init ROBOT`` → ``--urdf``, ``index rebuild
    ARCHIVE`` → ``--archive``; then fill what is still missing (``--urdf`` of
    ``view``/``init`` is required, ``--archive`` of ``index rebuild`` defaults
    to :data:`DEFAULT_FLEET_ARCHIVE`).

    Raises:
        CLIError: Both spellings given, or no robot (exit 2).
    """
    for dest, (target, option, metavar) in DEPRECATED_POSITIONALS.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        delattr(args, dest)
        if getattr(args, target, None) not in (None, value):
            raise CLIError(
                f"give {option} once: {option} {getattr(args, target)} and the "
                f"positional {metavar} {value}; keep {option}"
            )
        setattr(args, target, value)
        note_deprecation(args, f"the positional {metavar}", f"{option} {metavar}")
    for dest in DEPRECATED_POSITIONALS:
        if hasattr(args, dest):
            delattr(args, dest)
    if args.command in _ROBOT_COMMANDS and not getattr(args, "urdf", None):
        raise CLIError(
            "the robot is missing: give --urdf URDF_OR_NAME (figaroh robots lists the names)"
        )
    if args.command == "index" and getattr(args, "archive", None) is None:
        args.archive = DEFAULT_FLEET_ARCHIVE


def _resolve_robot_names(args: argparse.Namespace) -> None:
    """Replace a robot name given as ``--urdf``/``URDF`` (``ur10``) by its URDF path.

    Raises:
        UnknownRobotError: Neither a file nor a known robot name (exit code 2;
            the message suggests close names and ``figaroh robots``).
    """
    urdf = getattr(args, "urdf", None)
    if urdf:
        args.urdf_argument = urdf  # as typed: a robot name stays a name (figaroh init)
        args.urdf = str(resolve_robot_urdf(urdf))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``figaroh`` command line; returns the exit code.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        ``0`` success, ``1`` verdict failed or computation failed, ``2`` bad input,
        ``130`` interrupted (see :func:`figaroh.cli.common.exit_code_for`).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage error (2) or --help/--version (0)
        return EXIT_BAD_INPUT if exc.code not in (0, None) else EXIT_OK
    os.environ.setdefault("MPLBACKEND", "Agg")  # never open a window from a terminal
    where = f"{PROG} {args.command}"
    failed = True
    with _Logging(args.quiet, args.verbose) as handler:
        try:
            _move_positionals(args)
            for note in deprecation_notes(args):
                logger.warning("%s %s: %s", PROG, args.command, note)
            _resolve_robot_names(args)
            code = int(_command(args.command)(args))
            failed = False
        except KeyboardInterrupt:
            code = 130
            _error(where, "interrupted", 0, None)
        except BrokenPipeError:  # e.g. `figaroh robots | head`: the reader went away
            code = 141
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line + its code
            code = exit_code_for(exc)
            message = describe_error(exc)
            if code != EXIT_BAD_INPUT and not isinstance(exc, CLIError) and args.verbose < 2:
                message += " (run with -vv for the traceback)"
            _error(where, message, args.verbose, exc)
        finally:
            handler.flush_deferred(discard=failed)
    return code


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    """The implementation of command ``name`` (its module is imported now)."""
    return COMMANDS[name]()


def _error(where: str, message: str, verbose: int, exc: BaseException | None) -> None:
    if exc is not None and verbose > 1:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.write(f"{where}: error: {one_line(message)}\n")
    sys.stderr.flush()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
