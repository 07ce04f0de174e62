"""``figaroh migrate-config`` and ``figaroh robots``: configuration and robot set-up.

``figaroh migrate-config OLD NEW`` is the one migrate command. The console
script ``figaroh-migrate-config`` (``--input OLD --output NEW``, or
``OLD NEW``) is its deprecated alias: :func:`migrate_config_script` says so on
stderr, then runs the same conversion.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Sequence

from figaroh.cli.common import EXIT_FAILED, EXIT_OK, CLIError, require_file, require_output_file
from figaroh.tools.load_robot import list_available_robots
from figaroh.tools.robot_paths import RobotEntry, robot_catalogue
from figaroh.utils import config_migration

__all__ = [
    "DEPRECATED_SCRIPT_NOTE",
    "migrate_config",
    "migrate_config_script",
    "robot_list_lines",
    "robots",
]

#: What the deprecated ``figaroh-migrate-config`` script prints first (stderr).
DEPRECATED_SCRIPT_NOTE = (
    "figaroh-migrate-config: warning: this script is deprecated: use "
    "`figaroh migrate-config OLD NEW` (same options: --task, --template, --urdf, --robot-name)"
)


def migrate_config(args: argparse.Namespace) -> int:
    """``figaroh migrate-config``: exit code of :func:`figaroh.utils.config_migration.main`."""
    require_file(args.old, "legacy configuration")
    require_output_file(args.new, "NEW (the configuration to write)")
    argv = [args.old, args.new]
    for flag, value in (
        ("--task", args.task),
        ("--template", args.template),
        ("--urdf", args.urdf),
        ("--robot-name", args.robot_name),
    ):
        if value is not None:
            argv += [flag, value]
    return int(config_migration.main(argv))


def migrate_config_script(argv: Sequence[str] | None = None) -> int:
    """The deprecated ``figaroh-migrate-config`` console script: a warning line, then the migration.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The exit code of :func:`figaroh.utils.config_migration.main`.
    """
    sys.stderr.write(DEPRECATED_SCRIPT_NOTE + "\n")
    sys.stderr.flush()
    return int(config_migration.main(argv))


def robot_list_lines(entries: list[RobotEntry], paths: bool = False, width: int = 100) -> list[str]:
    """Lines of ``figaroh robots``: per source, a header and the names wrapped to ``width``.

    Args:
        entries: Robots of :func:`~figaroh.tools.robot_paths.robot_catalogue`.
        paths: One absolute URDF path per line instead (robots without a local
            file, i.e. robot_descriptions ones, are left out).
        width: Line width of the wrapped name lists.

    Returns:
        The lines to print.
    """
    if paths:
        return [str(e.path) for e in entries if e.path is not None]
    lines: list[str] = []
    for source in dict.fromkeys(e.source for e in entries):
        names = [e.name for e in entries if e.source == source]
        lines.append(f"{source} ({len(names)}):")
        lines += textwrap.wrap(", ".join(names), width, initial_indent="  ", subsequent_indent="  ")
    lines.append("Load one with --urdf NAME or load_robot(NAME); --paths lists the URDF files.")
    return lines


def robots(args: argparse.Namespace) -> int:
    """``figaroh robots``: the robots loadable by name, with their source (exit 1 when none).

    ``--loader robot_description`` lists the robot_descriptions catalogue
    only; ``--paths`` prints one URDF path per line.
    """
    if args.loader == "robot_description":
        names = list_available_robots("robot_description")
        if not names:
            raise CLIError(
                "no robot found for loader 'robot_description' (pip install robot_descriptions)",
                EXIT_FAILED,
            )
        for name in names:
            print(name)
        return EXIT_OK
    entries = robot_catalogue()
    if not entries:
        raise CLIError(
            "no robot found (pip install example-robot-data, or robot_descriptions)", EXIT_FAILED
        )
    for line in robot_list_lines(entries, paths=args.paths):
        print(line)
    return EXIT_OK
