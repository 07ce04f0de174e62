"""One-call robot identification on any registered dynamics backend.

See :mod:`figaroh.integration.api`.
"""

from figaroh.utils._lazy import lazy_reexports

from .api import IdentificationResult, RobotIdentificationSystem

__all__ = ["IdentificationResult", "RobotIdentificationSystem"]

__getattr__, __dir__ = lazy_reexports(__name__, {}, globals())
