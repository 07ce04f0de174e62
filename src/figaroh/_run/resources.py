"""Package data of the run-services layer (style sheet and chart scripts).

``importlib.resources`` (with its ``zipfile``/``tempfile`` imports) is
imported when an asset is read, i.e. when a report is written, not when a
task module is imported.
"""

from __future__ import annotations

__all__ = ["read_asset"]


def read_asset(name: str) -> str:
    """Text of ``figaroh/_run/assets/<name>`` (UTF-8).

    Args:
        name: File name inside the ``assets`` folder (e.g. ``"report.css"``).

    Returns:
        The file content.

    Raises:
        FileNotFoundError: no such asset (the installation lacks the package data).
    """
    from importlib import resources

    return resources.files("figaroh._run").joinpath("assets", name).read_text(encoding="utf-8")
