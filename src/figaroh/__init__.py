"""figaroh: dynamic identification and geometric calibration of robots.

Importing the package is cheap: heavy dependencies (matplotlib, picos, viser,
cyipopt) are imported lazily by the modules that need them.
"""

from __future__ import annotations

import logging

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["__version__"]
