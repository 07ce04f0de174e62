"""``figaroh migrate-config`` and ``figaroh robots``: configuration and robot set-up."""

from __future__ import annotations

import argparse

from figaroh.cli.common import EXIT_FAILED, EXIT_OK, CLIError, require_file, require_output_file
from figaroh.tools.load_robot import list_available_robots
from figaroh.tools.robot_paths import example_robot_data_dir
from figaroh.utils import config_migration

__all__ = ["migrate_config", "robots"]


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


def robots(args: argparse.Namespace) -> int:
    """``figaroh robots``: print one loadable robot per line (exit 1 when none)."""
    names = list_available_robots(args.loader)
    if not names:
        hint = (
            "pip install example-robot-data"
            if args.loader == "figaroh"
            else "pip install robot_descriptions"
        )
        raise CLIError(f"no robot found for loader {args.loader!r} ({hint})", EXIT_FAILED)
    if args.loader == "figaroh":
        base = example_robot_data_dir()
        names = [str(base / n) for n in names]
    for name in names:
        print(name)
    return EXIT_OK
