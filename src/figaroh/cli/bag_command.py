"""``figaroh bag info``: what a ROS bag holds, before identifying or calibrating from it."""

from __future__ import annotations

import argparse
import json

from figaroh.cli.common import EXIT_OK, require_file, say
from figaroh.data.bag_reader import bag_summary

__all__ = ["bag"]


def bag(args: argparse.Namespace) -> int:
    """``figaroh bag info PATH``: the bag's topics as a table (or JSON); exit 0.

    Raises:
        NotABagError: the path is not a bag (exit 2).
    """
    require_file(args.path, "bag", directory_ok=True)
    summary = bag_summary(args.path)
    if args.json:
        say(args, json.dumps(summary.to_dict(), indent=2, allow_nan=False))
    else:
        say(args, summary.table())
    return EXIT_OK
