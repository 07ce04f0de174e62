"""Value types, shared meanings and deprecated spellings of the command-line options.

* The numeric ``type=`` functions (:func:`positive_float`,
  :func:`int_at_least`) turn the typed text into a number or raise
  :class:`argparse.ArgumentTypeError`, which argparse reports as ``figaroh
  <command>: error: argument <option>: <message>`` with exit code ``2``, so
  every numeric option is checked (finite, and positive where zero or a
  negative value means nothing) before any file is read.
* :data:`SHARED_OPTIONS` gives every option name used by several commands its
  one meaning: the help text of each use starts with it (:func:`shared_help`),
  and the parser test walks every command to check that one option name has
  one destination, one value type and one meaning.
* :class:`DeprecatedAlias` keeps an old option spelling working: it stores
  into the new option's destination and records a one-line deprecation note
  that :func:`figaroh.cli.main.main` logs as a warning. :data:`DEPRECATED_OPTIONS`
  lists every such spelling with its replacement.

Importing this module is cheap (standard library only).
"""

from __future__ import annotations

import argparse
import math
from types import MappingProxyType
from typing import Any, Callable, List, Mapping, Sequence

__all__ = [
    "ARCHIVE_UNDER_OUTPUT",
    "DEPRECATED_OPTIONS",
    "DEPRECATION_NOTES",
    "SHARED_OPTIONS",
    "DeprecatedAlias",
    "deprecation_notes",
    "int_at_least",
    "note_deprecation",
    "positive_float",
    "shared_help",
]


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def positive_float(text: str) -> float:
    """A finite number ``> 0`` (limits [mm, deg, N·m], noise levels [m, rad]).

    Raises:
        argparse.ArgumentTypeError: not a number, not finite, or ``<= 0``.
    """
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def int_at_least(minimum: int) -> Callable[[str], int]:
    """The ``type=`` of an integer option whose value must be ``>= minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"int_at_least_{minimum}"
    return parse


# ---------------------------------------------------------------------------
# one meaning per option name
# ---------------------------------------------------------------------------
#: The meaning of every option name that several commands accept. The help
#: text of each use is this meaning, optionally followed by what the command
#: adds (after ``": "``, ``"; "`` or ``" ("``): see :func:`shared_help`.
SHARED_OPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "--help": "show this help message and exit",
        "--quiet": "print errors only (no report, no progress bar)",
        "--verbose": "more log output (-v info, -vv debug and tracebacks)",
        "--urdf": "the robot: a URDF file or a robot name (see figaroh robots)",
        "--package-dir": "folder holding package:// packages (repeatable; parents of the URDF "
        "and example-robot-data are searched anyway)",
        "--free-flyer": "floating-base robot (a free-flyer root joint is added)",
        "--data": "the data to read",
        "--bag": "a ROS bag to read (ROS 1 .bag, ROS 2 folder, .mcap)",
        "--validation-data": "held-out data the result is verified on",
        "--export-urdf": "also write the result as a URDF file",
        "--output": "where to write",
        "--scope": "verification scope",
        "--threshold": "acceptance limit NAME=VALUE[:min|max] on a verdict metric (repeatable; "
        "default comparison max)",
        "--report": "also write the HTML report",
        "--archive": "archive root folder (sealed run folders and their index)",
        "--robot-name": "robot.name to write",
        "--seed": "seed of the random generator",
        "--task": "only this task",
        "--robot": "only this robot id (repeatable)",
        "--last": "only the last N",
        "--json": "print JSON",
        "--accept-fallback": "exit 0 even when the optimiser fell back to its initial guess or "
        "stopped early",
    }
)


def shared_help(option: str, detail: str = "", sep: str = ": ") -> str:
    """The help text of a shared option: its meaning, then the command's ``detail``.

    Args:
        option: Long option name, a key of :data:`SHARED_OPTIONS`.
        detail: What this command adds (default value, accepted forms).
        sep: ``": "``, ``"; "`` or ``" ("`` (then ``detail`` ends with ``")"``).

    Raises:
        KeyError: ``option`` is not a shared option (add it to the table first).
    """
    meaning = SHARED_OPTIONS[option]
    return f"{meaning}{sep}{detail}" if detail else meaning


#: Option value ``--archive`` stores when given without a folder
#: (``identify``/``calibrate``: archive under ``OUTPUT/runs``).
ARCHIVE_UNDER_OUTPUT = "OUTPUT/runs"

# ---------------------------------------------------------------------------
# deprecated spellings
# ---------------------------------------------------------------------------
#: ``(command, old spelling) → new spelling`` of every deprecated spelling the
#: parser still accepts (each use logs one warning line naming the new one).
DEPRECATED_OPTIONS: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("calibrate", "--max-iterations"): "--outlier-passes",
        ("trajectory", "--max-iterations"): "--ipopt-max-iterations",
        ("view", "URDF"): "--urdf URDF",
        ("init", "ROBOT_OR_URDF"): "--urdf ROBOT_OR_URDF",
        ("index rebuild", "ARCHIVE"): "--archive ARCHIVE",
        ("report", "ARCHIVE_ROOT"): "--archive ARCHIVE_ROOT",
        ("figaroh-migrate-config", "--input/--output"): "figaroh migrate-config OLD NEW",
    }
)

#: Namespace attribute holding the deprecation notes of one command line.
DEPRECATION_NOTES = "deprecated_spellings"


def note_deprecation(namespace: argparse.Namespace, old: str, new: str) -> None:
    """Record that ``old`` was used where ``new`` is the current spelling."""
    notes: List[str] = list(getattr(namespace, DEPRECATION_NOTES, None) or [])
    text = f"{old} is deprecated: use {new} (same meaning)"
    if text not in notes:
        notes.append(text)
    setattr(namespace, DEPRECATION_NOTES, notes)


def deprecation_notes(namespace: argparse.Namespace) -> Sequence[str]:
    """The deprecation notes recorded while ``namespace`` was parsed."""
    return tuple(getattr(namespace, DEPRECATION_NOTES, None) or ())


class DeprecatedAlias(argparse.Action):
    """An old option spelling: stores like the new option and records a deprecation note.

    Hidden from ``--help`` (its replacement documents the meaning).

    Args:
        option_strings: The old spelling(s).
        dest: Destination of the new option.
        replacement: The new option name, shown in the warning.
        **kwargs: ``type``, ``metavar``, ... as for the new option.
    """

    def __init__(
        self, option_strings: Sequence[str], dest: str, replacement: str, **kwargs: Any
    ) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)
        kwargs.setdefault("default", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        note_deprecation(namespace, option_string or self.option_strings[0], self.replacement)
