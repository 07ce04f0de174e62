"""One-call robot identification on any registered dynamics backend.

See :mod:`figaroh.integration.api`.
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
