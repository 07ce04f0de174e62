"""One harness for every table of bad inputs.

A case is an input a hostile or careless user might give, and the reaction a
serious library owes them: either a named exception whose message contains a
phrase naming the field/file and the fix, or (where figaroh 1.0.2 ran the same
script to completion and we must keep it running) a warning containing a phrase
plus an expected verdict status.

Each table module defines ``CASES: list[BadInput]`` and one parametrised test::

    @pytest.mark.parametrize("case", CASES, ids=case_id)
    def test_bad_input(case, tmp_path):
        run_case(case, tmp_path)
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Tuple, Type, Union

import pytest

Expected = Union[Type[BaseException], Tuple[Type[BaseException], ...]]


@dataclass(frozen=True)
class BadInput:
    """One row of a bad-input table.

    Attributes:
        name: short identifier shown in the test id.
        call: ``call(tmp_path)`` performs the user action. For a warning case it
            returns the verdict status (``"pass"``/``"fail"``/...) or ``None``.
        raises: expected exception type(s); ``None`` for a warning case.
        match: phrase (regular expression, case-insensitive) the exception
            message or the warning must contain.
        verdict: expected status returned by ``call`` in a warning case.
        already_good: ``True`` for behaviour that was already right and must
            stay so (kept in the table as a regression guard).
    """

    name: str
    call: Callable[[Path], Any]
    raises: Expected | None = None
    match: str = ""
    verdict: str | None = None
    already_good: bool = False


def case_id(case: BadInput) -> str:
    """Test id of ``case``."""
    return case.name


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def run_case(case: BadInput, tmp_path: Path) -> None:
    """Run ``case`` and check the documented reaction."""
    if case.raises is not None:
        with pytest.raises(case.raises) as info:
            case.call(tmp_path)
        message = str(info.value)
        assert re.search(case.match, message, re.IGNORECASE | re.DOTALL), (
            f"{case.name}: message {message!r} lacks {case.match!r}"
        )
        return
    handler = _Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            status = case.call(tmp_path)
    finally:
        root.removeHandler(handler)
    texts = [str(w.message) for w in caught] + handler.messages
    if case.match:
        assert any(re.search(case.match, t, re.IGNORECASE | re.DOTALL) for t in texts), (
            f"{case.name}: no warning matching {case.match!r} in {texts!r}"
        )
    if case.verdict is not None:
        assert status == case.verdict, f"{case.name}: verdict {status!r} != {case.verdict!r}"
