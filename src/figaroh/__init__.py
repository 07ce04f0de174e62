"""figaroh: dynamic identification and geometric calibration of robots.

Importing the package is cheap: heavy dependencies (matplotlib, picos, viser,
cyipopt) are imported lazily by the modules that need them, and the
subpackages are imported when first reached: after ``import figaroh``,
``figaroh.tools.robot.Robot`` or ``figaroh.identification.base_identification``
imports what it names. The subpackages and modules each package offers this way
are declared in its ``__init__.pyi`` stub, which ``lazy_loader.attach_stub``
reads at import (PEP 562 module ``__getattr__``) and type checkers read too.
"""

from __future__ import annotations

import logging

import lazy_loader as _lazy

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
