"""Value types of the numeric command-line options.

Each function is an ``argparse`` ``type=``: it turns the typed text into a
number or raises :class:`argparse.ArgumentTypeError`, which argparse reports
as ``figaroh <command>: error: argument <option>: <message>`` with exit code
``2``, so every numeric option is checked (finite, and positive where zero or
a negative value means nothing) before any file is read.

Importing this module is cheap (standard library only).
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

__all__ = ["int_at_least", "positive_float"]


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
