"""Package data of the run-services layer (style sheet and chart scripts).

The report modules read their assets when they are imported, so reading one
must be cheap: an asset is read from the ``assets`` folder next to this file,
and ``importlib.resources`` (with its ``zipfile``/``tempfile`` imports) is used
only when that folder is not on the file system (figaroh imported from a zip
archive).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["read_asset"]

#: Folder of the assets in a regular (unzipped) installation.
_ASSETS = Path(__file__).resolve().parent / "assets"


def read_asset(name: str) -> str:
    """Text of ``figaroh/_run/assets/<name>`` (UTF-8).

    Args:
        name: File name inside the ``assets`` folder (e.g. ``"report.css"``).

    Returns:
        The file content.

    Raises:
        FileNotFoundError: no such asset (the installation lacks the package data).
    """
    if _ASSETS.is_dir():
        return (_ASSETS / name).read_text(encoding="utf-8")
    from importlib import resources

    return (
        resources.files("figaroh._run")
        .joinpath("assets")
        .joinpath(name)
        .read_text(encoding="utf-8")
    )
