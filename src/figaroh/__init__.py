"""figaroh: dynamic identification and geometric calibration of robots.

Importing the package is cheap: heavy dependencies (matplotlib, picos, viser,
cyipopt) are imported lazily by the modules that need them, and the
subpackages are imported when first reached: after ``import figaroh``,
``figaroh.tools.robot.Robot`` or ``figaroh.identification.base_identification``
imports what it names (PEP 562 module ``__getattr__``).
"""

from __future__ import annotations

import logging

from figaroh.utils._lazy import lazy_reexports

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["__version__"]

__getattr__, __dir__ = lazy_reexports(__name__, {}, globals())
