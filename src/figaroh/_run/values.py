"""Number helpers shared by the verdict logic and the HTML pages."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = ["_finite_or_none", "_is_number"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def _finite_or_none(value: Any) -> float | None:
    """``float(value)`` when it is a finite real number, else ``None``."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
