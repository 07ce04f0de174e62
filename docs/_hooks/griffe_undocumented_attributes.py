"""Griffe extension: hide undocumented instance attributes from the API pages.

The API pages show every public function, class and constant even without a
docstring (``show_if_no_docstring: true``), so that each public name of the
library has its entry. Instance attributes assigned in ``__init__``
(``self.x = None``) are the exception: they are state, documented in the
class's ``Attributes:`` section when they matter, and listing the undocumented
ones would bury the methods.
"""

from __future__ import annotations

from typing import Any

import griffe


class HideUndocumentedInstanceAttributes(griffe.Extension):
    """Drop class members that are undocumented instance attributes."""

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        for name, member in list(cls.members.items()):
            if member.is_alias or not member.is_attribute:
                continue
            if "instance-attribute" in member.labels and not member.docstring:
                cls.del_member(name)
