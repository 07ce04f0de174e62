"""Findings of the input-data checks a run makes before its verdict.

Both tasks check their inputs before (and right after) the fit. Each check is a
plain function returning a :class:`DataFinding`; a run keeps one finding per
check in a :class:`DataChecks`. A failed finding is logged as a warning by the
task, recorded in its ``data`` stage, and turned by ``verify()`` into a failing
required guard ``data_check:<name>`` (see :meth:`DataChecks.facts`): a result
computed from inputs that failed a check is never reported as a pass.

A *fatal* finding means no meaningful result exists: the task raises it as its
named data error before the fit (:meth:`DataChecks.raise_fatal`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, Tuple, Type

__all__ = ["DataChecks", "DataFinding"]


@dataclass(frozen=True)
class DataFinding:
    """Outcome of one data check.

    Attributes:
        check: The check's name (``"joint_limits"``, ``"sampling_interval"``, …).
        passed: False when the data failed the check.
        message: What is wrong, the likely cause and the fix, naming the field
            (empty when passed).
        fatal: No meaningful fit exists: the task raises instead of warning.
    """

    check: str
    passed: bool
    message: str = ""
    fatal: bool = False


@dataclass(frozen=True)
class DataChecks:
    """The findings of every data check of a run (one per check name)."""

    findings: Tuple[DataFinding, ...] = ()

    @property
    def failed(self) -> Tuple[DataFinding, ...]:
        """The findings whose check failed."""
        return tuple(f for f in self.findings if not f.passed)

    def with_findings(self, *findings: DataFinding) -> DataChecks:
        """A copy where ``findings`` replace the earlier findings of the same checks."""
        names = {f.check for f in findings}
        kept = tuple(f for f in self.findings if f.check not in names)
        return replace(self, findings=kept + tuple(findings))

    def facts(self) -> Dict[str, Tuple[bool, str]]:
        """``{"data_check:<name>": (passed, message)}`` for the verdict's guards."""
        return {f"data_check:{f.check}": (f.passed, f.message) for f in self.findings}

    def raise_fatal(self, error: Type[Exception] = ValueError) -> None:
        """Raise the first fatal finding (called before any fit).

        Args:
            error: The exception class to raise (the task's data error).

        Raises:
            error: A fatal check failed (its message).
        """
        for f in self.failed:
            if f.fatal:
                raise error(f.message)

    def summary(self) -> str:
        """The messages of the failed checks, ``"; "``-joined (empty when all passed)."""
        return "; ".join(f.message for f in self.failed)
