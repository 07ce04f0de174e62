"""Step-level progress bar of the command line (tqdm, on stderr).

A command announces its long steps in advance (``load robot``, ``regressor``,
``solve``...) and :class:`Steps` shows them as one bar, ticking as each step
finishes. The bar is drawn only when enabled (``--quiet`` disables it) and, by
default, only when stderr is a terminal, so logs and pipes stay clean.
"""

from __future__ import annotations

import sys
from typing import IO, Sequence

__all__ = ["Steps"]


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
        self._bar = None

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
                bar_format="{desc} {n_fmt}/{total_fmt} |{bar:20}| [{elapsed}]",
                dynamic_ncols=True,
            )
        return self

    def start(self, name: str) -> None:
        """Mark the previous step done and show ``name`` as running."""
        self._finish_current()
        self.current = name
        if self._bar is not None:
            self._bar.set_description_str(f"{self.desc}: {name}" if self.desc else name)

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
