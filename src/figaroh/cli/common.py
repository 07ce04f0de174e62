"""What every ``figaroh`` command shares: exit codes, the one-line error, file checks.

Exit codes (the one mapping every command uses, :func:`exit_code_for`):

=====  ==============================================================
code   meaning
=====  ==============================================================
``0``  success; for ``identify``/``calibrate``/``report`` the verdict passed
``1``  the verdict did not pass, or the computation failed (a solver or
       linear-algebra failure, an unexpected error: one line naming the
       exception type, ``-vv`` for the traceback)
``2``  bad input: a missing or unreadable file, a malformed configuration
       or data file, a bad option value — one line naming the file or the
       option and the fix
``130`` interrupted (Ctrl-C)
=====  ==============================================================

Importing this module is cheap (standard library and :mod:`figaroh.errors`
only), so :mod:`figaroh.cli.main` can build the argument parser and report
errors without importing the library.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Sequence

from figaroh.cli.progress import Steps
from figaroh.errors import FigarohError
from figaroh.utils.fileio import SealedRunError, refuse_sealed

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_OK",
    "INPUT_ERRORS",
    "CLIError",
    "describe_error",
    "exit_code_for",
    "one_line",
    "require_file",
    "require_output_dir",
    "require_output_file",
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
        key = exc.args[0]
        # a KeyError carrying a sentence (figaroh's named errors) is shown as written
        text = key if isinstance(key, str) and " " in key else f"missing key {key!r}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def exit_code_for(exc: BaseException) -> int:
    """The exit code of a command that raised ``exc``.

    * :class:`CLIError` — its own ``code``;
    * a linear-algebra failure (``numpy.linalg.LinAlgError``, a ``ValueError``
      subclass) — :data:`EXIT_FAILED`: the input was readable, the computation
      failed;
    * :data:`INPUT_ERRORS` — ``OSError`` (missing, unreadable or unwritable
      file), ``ValueError``/``TypeError``/``KeyError`` (malformed
      configuration or data; figaroh's own errors subclass these) —
      :data:`EXIT_BAD_INPUT`;
    * anything else (``RuntimeError``, an unexpected error) — :data:`EXIT_FAILED`.
    """
    if isinstance(exc, CLIError):
        return exc.code
    if type(exc).__name__ == "LinAlgError":
        return EXIT_FAILED
    if isinstance(exc, INPUT_ERRORS):
        return EXIT_BAD_INPUT
    return EXIT_FAILED


def describe_error(exc: BaseException) -> str:
    """The one-line message of ``exc`` for stderr.

    Input errors are shown as they are (their message names the file or the
    field); an ``OSError`` without its file name in the message gets it; any
    other exception is prefixed with its type, since it is unexpected.
    """
    if isinstance(exc, CLIError):
        return one_line(exc.message)
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in str(exc):
        return one_line(f"{exc.filename}: {exc.strerror or exc}")
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        return one_line(f"{exc.strerror}: {exc.filename}")
    if exit_code_for(exc) == EXIT_BAD_INPUT:
        return one_line(exc)
    return f"{type(exc).__name__}: {one_line(exc)}"


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


def _existing_file_ancestor(p: Path) -> Path | None:
    """The first existing ancestor of ``p`` (or ``p``) that is not a folder."""
    for candidate in (p, *p.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def _refuse_sealed_output(p: Path, option: str) -> None:
    """CLIError (exit 2) when the output ``p`` lies in a sealed archived run."""
    try:
        refuse_sealed(p)
    except SealedRunError as exc:
        raise CLIError(f"{option}: {exc}") from exc


def require_output_dir(path: str | os.PathLike, option: str) -> Path:
    """Check that the output folder ``path`` is a folder or can be created.

    Called before any work, so a refused command writes nothing.

    Raises:
        CLIError: ``path`` (or one of its parents) is an existing file, or
            ``path`` lies in a sealed archived run, sub-folders included (exit 2).
    """
    p = Path(path)
    _refuse_sealed_output(p, option)
    blocker = _existing_file_ancestor(p)
    if blocker is not None:
        where = f"{option} {p}" if blocker == p else f"{option} {p}: {blocker}"
        raise CLIError(
            f"{where} is an existing file, not a folder; pass a folder path (it is created "
            "when missing) or move the file away"
        )
    return p


def require_output_file(path: str | os.PathLike, option: str) -> Path:
    """Check that the output file ``path`` can be written (not a folder, parents creatable).

    Raises:
        CLIError: ``path`` is a folder, or one of its parents is a file, or
            ``path`` lies in a sealed archived run (exit 2).
    """
    p = Path(path)
    _refuse_sealed_output(p, option)
    if p.is_dir():
        raise CLIError(f"{option} {p} is a folder; pass the name of the file to write")
    blocker = _existing_file_ancestor(p.parent)
    if blocker is not None:
        raise CLIError(
            f"{option} {p}: {blocker} is an existing file, not a folder; choose another path"
        )
    return p


def steps_for(args: argparse.Namespace, names: Sequence[str]) -> Steps:
    """The progress bar of a command (disabled by ``--quiet``, else automatic)."""
    return Steps(names, enabled=False if args.quiet else None, desc=args.command)


def say(args: argparse.Namespace, text: str = "") -> None:
    """Print a result line on stdout unless ``--quiet``."""
    if not args.quiet:
        print(text)
