"""Step-level progress bar of the command line (tqdm, on stderr).

A command announces its long steps in advance (``load robot``, ``regressor``,
``solve``...) and :class:`Steps` shows them as one bar, ticking as each step
finishes. Within a step, :meth:`Steps.detail` shows the optimiser's latest
iteration after the bar (:func:`iteration_text`: e.g. ``IPOPT iteration 12:
objective 117.3, constraint violation 3.7e-01``), so a long solve is never
silent. The bar is drawn only when enabled (``--quiet`` disables it) and, by
default, only when stderr is a terminal, so logs and pipes stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Sequence

__all__ = ["Steps", "iteration_text"]

#: Shortest time between two redraws of the iteration detail [s].
DETAIL_INTERVAL = 0.1


def iteration_text(entry: Any) -> str:
    """One-line description of an optimiser iteration (a trace entry).

    Args:
        entry: A :class:`~figaroh._run.optimisation_trace.TraceEntry`
            (``stage`` such as ``"ipopt:segment 1"`` or ``"socp"``,
            ``iteration``, ``objective``, ``constraint_violation``).

    Returns:
        ``"<SOLVER> iteration <k>: objective <f>[, constraint violation <v>]"``.
    """
    solver = str(entry.stage).split(":", 1)[0].upper()
    text = f"{solver} iteration {entry.iteration}: objective {entry.objective:.6g}"
    if entry.constraint_violation is not None:
        text += f", constraint violation {entry.constraint_violation:.1e}"
    return text


class Steps:
    """A progress bar over the named steps of one command.

    Args:
        names: The steps, in order.
        enabled: Draw the bar. ``None`` draws it when ``stream`` is a terminal.
        stream: Where to draw (default ``sys.stderr``).
        desc: Label shown before the bar (e.g. ``"identify"``).

    Example:
        ```python
        with Steps(["load", "solve"], enabled=True, desc="identify") as steps:
            steps.start("load")
            ...
            steps.start("solve")
            ...
        ```
    """

    def __init__(
        self,
        names: Sequence[str],
        enabled: bool | None = None,
        stream: IO[str] | None = None,
        desc: str = "",
    ) -> None:
        self.names = list(names)
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = bool(enabled)
        self.desc = desc
        self.current: str | None = None
        self.done: list[str] = []
        self.details = 0
        self._bar: Any = None
        self._last_detail = float("-inf")

    def __repr__(self) -> str:
        return (
            f"Steps(desc={self.desc!r}, steps={len(self.names)}, done={len(self.done)}, "
            f"current={self.current!r}, enabled={self.enabled})"
        )

    def __enter__(self) -> Steps:
        if self.enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=len(self.names),
                desc=self.desc,
                file=self.stream,
                leave=False,
                bar_format="{desc} {n_fmt}/{total_fmt} |{bar:20}| [{elapsed}{postfix}]",
                dynamic_ncols=True,
            )
        return self

    def start(self, name: str) -> None:
        """Mark the previous step done and show ``name`` as running."""
        self._finish_current()
        self.current = name
        if self._bar is not None:
            self._bar.set_postfix_str("", refresh=False)
            self._bar.set_description_str(f"{self.desc}: {name}" if self.desc else name)

    def detail(self, text: str) -> None:
        """Show ``text`` after the bar (the running step's latest news).

        Redrawn at most every :data:`DETAIL_INTERVAL` seconds; nothing is
        drawn when the bar is disabled.
        """
        self.details += 1
        if self._bar is None:
            return
        now = time.monotonic()
        if now - self._last_detail < DETAIL_INTERVAL:
            return
        self._last_detail = now
        self._bar.set_postfix_str(text, refresh=True)

    def _finish_current(self) -> None:
        if self.current is not None:
            self.done.append(self.current)
            if self._bar is not None:
                self._bar.update(1)
        self.current = None

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._finish_current()
        if self._bar is not None:
            self._bar.close()
            self._bar = None
