"""Reading a CSV file, with errors that name the file.

Every CSV loader of figaroh (trajectory logs, calibration postures) reads its
file through these helpers:

* :func:`read_csv_text` — the text, so a binary file, a spreadsheet saved in
  its native format or a file in another encoding is refused with the file
  name and the fix, instead of the codec's ``'utf-8' codec can't decode byte …``;
  a UTF-8 byte-order mark is dropped;
* :func:`csv_rows` — the rows, split by the standard :mod:`csv` module
  (RFC 4180: ``,`` separated, ``"``-quoted cells with ``""`` for a quote,
  ``\\n`` or ``\\r\\n`` line ends), a malformed file raising
  :class:`CSVFormatError` with the file and the line;
* :func:`numeric_rows` — the numeric rows below a header, read by
  :func:`numpy.loadtxt` with the same dialect (quoted cells, both line ends).

So a file saved by Excel on Windows (CRLF, optionally a BOM) or written with
every cell quoted reads exactly as the plain LF file, and no error of Python's
``csv`` module reaches the user without the file name (e.g. ``field larger
than field limit (131072)``, the symptom of a quote that is never closed).
"""

from __future__ import annotations

import csv
import io
import os
import warnings
from pathlib import Path
from typing import Iterable, List, Union

import numpy as np

from figaroh.errors import FigarohError

__all__ = ["CSVFormatError", "NotTextCSVError", "csv_rows", "numeric_rows", "read_csv_text"]


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


class CSVFormatError(FigarohError, ValueError):
    """A CSV file that the :mod:`csv` module cannot split into rows.

    Subclasses ``ValueError`` (the error the loaders document for a malformed file).

    Attributes:
        path: The file.
        line: 1-based line of the file where the problem was found.
    """

    def __init__(self, message: str, path: Union[str, os.PathLike], line: int) -> None:
        super().__init__(message)
        self.path = str(path)
        self.line = int(line)


def csv_rows(
    path: Union[str, os.PathLike],
    lines: Union[str, Iterable[str]],
    what: str = "CSV file",
    first_line: int = 1,
) -> List[List[str]]:
    """The rows of CSV text, split by :func:`csv.reader` (empty rows dropped).

    Args:
        path: The file the text comes from (for the messages).
        lines: The text, or an iterable of its lines.
        what: What the file is, for the message.
        first_line: Line number of the first line of ``lines`` in the file.

    Returns:
        The rows, each a list of cells (quotes removed, not stripped).

    Raises:
        CSVFormatError: The :mod:`csv` module refuses the text (a cell longer
            than its field limit, a NUL byte, a quote in an unquoted cell…);
            the message names the file, the line and the fix.
    """
    source = io.StringIO(lines, newline="") if isinstance(lines, str) else lines
    reader = csv.reader(source)
    try:
        return [row for row in reader if row]
    except csv.Error as exc:
        line = first_line + max(reader.line_num, 1) - 1
        if "field larger than field limit" in str(exc):
            cause = (
                f"a cell is longer than {csv.field_size_limit()} characters, the limit of "
                "Python's csv module; this is almost always a quote (\") opened and never "
                "closed, which turns the rest of the file into one cell: close or remove "
                "that quote (no column name or number is that long)"
            )
        else:
            cause = f"{exc}; save the file as comma-separated UTF-8 text (RFC 4180)"
        raise CSVFormatError(f"{what} {path}, line {line}: {cause}", path, line) from None


def numeric_rows(
    path: Union[str, os.PathLike], text: str, skiprows: int, what: str = "CSV file"
) -> np.ndarray:
    """The float rows of CSV text below its first ``skiprows`` lines.

    :func:`numpy.loadtxt` with ``delimiter=","`` and ``quotechar='"'``:
    quoted cells (``"0.5"``) and ``\\r\\n`` line ends read as plain ones,
    lines starting with ``#`` are comments.

    Args:
        path: The file the text comes from (for the messages).
        text: The whole text of the file.
        skiprows: Lines before the first data row (header included).
        what: What the file is, for the message.

    Returns:
        ``(N, columns)`` floats; ``(0, 0)`` without a data row.

    Raises:
        ValueError: A cell is not a number or rows have different lengths
            (numpy's message, with the file name and the fix).
    """
    try:
        with warnings.catch_warnings():  # an empty table is reported by the caller, by name
            warnings.filterwarnings("ignore", message="loadtxt: input contained no data")
            return np.loadtxt(
                io.StringIO(text),
                delimiter=",",
                quotechar='"',
                skiprows=skiprows,
                ndmin=2,
                dtype=float,
                comments="#",
            )
    except ValueError as exc:
        raise ValueError(
            f"{what} {path}: cannot parse the numeric rows ({exc}); every cell must be a "
            "number (write 'nan' explicitly for a missing value)"
        ) from exc
