"""Numerical tools shared by the tasks: robot loading, regressors, QR base parameters, reports.

Importing the package imports none of its modules; ``figaroh.tools.robot``
(and every other public module) is imported when first reached.
"""

from figaroh.utils._lazy import lazy_reexports

__getattr__, __dir__ = lazy_reexports(__name__, {}, globals())
