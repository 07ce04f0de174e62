"""Reading a CSV file as text, with an error that names the file.

Every CSV loader of figaroh (trajectory logs, calibration postures) reads its
file through :func:`read_csv_text`, so a binary file, a spreadsheet saved in
its native format or a file in another encoding is refused with the file name
and the fix, instead of the codec's ``'utf-8' codec can't decode byte …``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

from figaroh.errors import FigarohError

__all__ = ["NotTextCSVError", "read_csv_text"]


class NotTextCSVError(FigarohError, ValueError):
    """A file given as CSV is not UTF-8 text (binary, spreadsheet, other encoding).

    Subclasses ``ValueError`` (the error the loaders document for a malformed file).

    Attributes:
        path: The file.
    """

    def __init__(self, message: str, path: Union[str, os.PathLike]) -> None:
        super().__init__(message)
        self.path = str(path)


def read_csv_text(path: Union[str, os.PathLike], what: str = "CSV file") -> str:
    """The text of the CSV file ``path`` (UTF-8, a leading byte-order mark dropped).

    Args:
        path: The file.
        what: What the file is, for the message (``"trajectory CSV"``, …).

    Returns:
        The decoded text.

    Raises:
        FileNotFoundError: The file does not exist.
        NotTextCSVError: The file holds NUL bytes or is not valid UTF-8.
    """
    p = Path(path)
    raw = p.read_bytes()
    fix = (
        "export it as comma-separated UTF-8 text (header row, then one row per sample; "
        "in a spreadsheet: Save As → CSV UTF-8)"
    )
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise NotTextCSVError(
            f"{what} {p} is not a text CSV file (NUL byte at offset {nul}: a binary file?); {fix}",
            p,
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        raise NotTextCSVError(
            f"{what} {p} is not a UTF-8 text CSV file (byte 0x{bad} at offset {exc.start} "
            f"cannot be decoded); {fix}",
            p,
        ) from None
