"""One-call robot identification on any registered dynamics backend.

See :mod:`figaroh.integration.api`.
"""

from .api import IdentificationResult, RobotIdentificationSystem

__all__ = ["IdentificationResult", "RobotIdentificationSystem"]
