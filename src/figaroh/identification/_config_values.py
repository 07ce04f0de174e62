"""Checks of single identification configuration values.

Each checker takes the value read from the configuration and the dotted key it
came from, and either returns the value (or its ``float``) or raises
:class:`~figaroh.identification.exceptions.IdentificationConfigError` (a
``ValueError``) whose message names the key, the expected type and unit, and
how to fix it.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from figaroh.identification.exceptions import IdentificationConfigError

__all__ = [
    "as_bool",
    "check_nyquist",
    "coulomb_deadband",
    "is_number",
    "is_positive_int",
    "number",
    "numeric_values",
    "positive_number",
]


def positive_number(value: Any, key: str, unit: str) -> float:
    """Return ``float(value)`` after checking it is a finite number > 0.

    A numeric string (``"500"``, e.g. from a ``${VAR}`` environment variable)
    is converted; any other string is refused.
    """
    if isinstance(value, bool):
        raise IdentificationConfigError(f"{key} must be a positive number [{unit}], got {value!r}")
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise IdentificationConfigError(
            f"{key} must be a positive number [{unit}], got {value!r}"
        ) from None
    if not math.isfinite(result) or result <= 0.0:
        raise IdentificationConfigError(
            f"{key} must be a positive finite number [{unit}], got {value!r}"
        )
    return result


def coulomb_deadband(value: Any, key: str = "problem.coulomb_deadband") -> float:
    """Validate a Coulomb-friction dead band: a finite speed ≥ 0 [rad/s or m/s].

    Raises:
        IdentificationConfigError: Not a number, negative or not finite.
    """
    try:
        speed = float(value) if not isinstance(value, bool) else float("nan")
    except (TypeError, ValueError):
        speed = float("nan")
    if not math.isfinite(speed) or speed < 0.0:
        raise IdentificationConfigError(
            f"{key} must be a finite speed >= 0 [rad/s or m/s] under which the Coulomb "
            f"friction sign is set to 0 (0 disables the dead band), got {value!r}"
        )
    return speed


def as_bool(value: Any, key: str) -> bool:
    """Accept a YAML boolean (or 0/1); anything else is a configuration error."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise IdentificationConfigError(f"{key} must be true or false, got {value!r}")


def check_nyquist(f_butter: float, f_sample: float, what: str) -> None:
    """Require ``0 < f_butter < f_sample / 2`` (Nyquist frequency)."""
    nyquist = f_sample / 2.0
    if not (0.0 < f_butter < nyquist):
        raise IdentificationConfigError(
            f"{what}: cutoff frequency {f_butter:g} Hz must satisfy 0 < cutoff < "
            f"{nyquist:g} Hz, the Nyquist frequency (half of the sampling frequency "
            f"{f_sample:g} Hz); lower the cutoff or raise the sampling frequency"
        )


def is_number(value: Any) -> bool:
    """True for an ``int`` or ``float`` that is not a ``bool``."""
    return not isinstance(value, bool) and isinstance(value, (int, float))


def number(value: Any, key: str) -> Any:
    """``value`` unchanged after checking it is a (finite) number."""
    if not is_number(value) or not math.isfinite(value):
        raise IdentificationConfigError(
            f"{key} must be a finite number, got {value!r}"
            + (" (a string: write the number without quotes)" if isinstance(value, str) else "")
        )
    return value


def numeric_values(value: Any, key: str, *, by_name: bool = False) -> Any:
    """``value`` unchanged after checking it is a list of numbers (per joint).

    A single number is accepted (figaroh 1.0.2 passed it through); with
    ``by_name`` a mapping ``{joint name: number}`` is accepted too.
    """
    if value is None or is_number(value):
        return value
    if by_name and isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = [value]
    bad = [v for v in items if not is_number(v) or not math.isfinite(v)]
    if bad:
        raise IdentificationConfigError(
            f"{key} must be a list of finite numbers (one per joint), got {value!r}; "
            f"offending entries: {bad}"
            + (" (write numbers without quotes)" if any(isinstance(v, str) for v in bad) else "")
        )
    return value


def is_positive_int(value: Any) -> bool:
    """True for an ``int`` ≥ 1 that is not a ``bool``."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1
