"""What every ``figaroh`` command shares: exit codes, the one-line error, thresholds.

Importing this module is cheap (standard library and :mod:`figaroh.errors`
only), so :mod:`figaroh.cli.main` can build the argument parser and report
errors without importing the library.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Dict, Mapping, Sequence

from figaroh.cli.progress import Steps
from figaroh.errors import FigarohError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_OK",
    "INPUT_ERRORS",
    "CLIError",
    "build_thresholds",
    "one_line",
    "parse_threshold",
    "require_file",
    "say",
    "steps_for",
]

#: Success (and, for ``identify``/``calibrate``, a passing verdict).
EXIT_OK = 0
#: The run finished but its verdict did not pass, or the computation failed.
EXIT_FAILED = 1
#: Bad input: missing file, malformed configuration or data, bad arguments.
EXIT_BAD_INPUT = 2

#: Exceptions that mean the input is unusable (configuration errors are ``ValueError``s).
INPUT_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, KeyError, TypeError)


class CLIError(FigarohError):
    """An error the command line reports as one line on stderr, with an exit code.

    Args:
        message: What is wrong and, when possible, how to fix it.
        code: Process exit code (default :data:`EXIT_BAD_INPUT`).
    """

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.code = int(code)

    def __repr__(self) -> str:
        return f"CLIError({self.message!r}, code={self.code})"


def one_line(exc: BaseException | str) -> str:
    """A one-line description of an exception (newlines and runs of spaces collapsed)."""
    if isinstance(exc, str):
        text = exc
    elif isinstance(exc, KeyError) and exc.args:
        text = f"missing key {exc.args[0]!r}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def require_file(path: str | os.PathLike, what: str, directory_ok: bool = False) -> Path:
    """Check that ``path`` exists (a file, or a folder when ``directory_ok``).

    Raises:
        CLIError: ``"<what> not found: <path>"`` (exit 2).
    """
    p = Path(path)
    if p.is_file() or (directory_ok and p.is_dir()):
        return p
    if p.exists():
        raise CLIError(f"{what} is not a file: {p}")
    raise CLIError(f"{what} not found: {p}")


def parse_threshold(text: str) -> tuple[str, Dict[str, Any]]:
    """Parse ``NAME=VALUE[:min|max]`` (default ``max``) into a threshold entry.

    Example: ``validation_rmse:elbow_joint=1.5`` or ``validation_correlation=0.9:min``.

    Raises:
        CLIError: Malformed text (exit 2).
    """
    name, sep, rest = text.rpartition("=")
    if not sep or not name:
        raise CLIError(f"--threshold {text!r}: expected NAME=VALUE[:min|max]")
    value, _, comparison = rest.partition(":")
    comparison = comparison or "max"
    if comparison not in ("min", "max"):
        raise CLIError(f"--threshold {text!r}: the comparison must be 'min' or 'max'")
    try:
        threshold = float(value)
    except ValueError:
        raise CLIError(f"--threshold {text!r}: {value!r} is not a number") from None
    return name, {"threshold": threshold, "comparison": comparison}


def build_thresholds(
    texts: Sequence[str] | None, per_metric: Mapping[str, float] | None = None
) -> Dict[str, Dict[str, Any]]:
    """Thresholds from ``--threshold`` texts plus ``{metric: maximum}`` limits."""
    out: Dict[str, Dict[str, Any]] = {}
    for name, value in (per_metric or {}).items():
        out[name] = {"threshold": float(value), "comparison": "max"}
    for text in texts or ():
        name, entry = parse_threshold(text)
        out[name] = entry
    return out


def steps_for(args: argparse.Namespace, names: Sequence[str]) -> Steps:
    """The progress bar of a command (disabled by ``--quiet``, else automatic)."""
    return Steps(names, enabled=False if args.quiet else None, desc=args.command)


def say(args: argparse.Namespace, text: str = "") -> None:
    """Print a result line on stdout unless ``--quiet``."""
    if not args.quiet:
        print(text)
