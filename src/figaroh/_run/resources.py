"""Package data of the run-services layer (style sheet and chart scripts)."""

from __future__ import annotations

from importlib import resources

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
    return resources.files("figaroh._run").joinpath("assets", name).read_text(encoding="utf-8")
