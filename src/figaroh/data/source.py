"""Where a dataset comes from: its files (frozen by sha256) and its recording.

A :class:`DataSource` travels with every :class:`~figaroh.data.TrajectoryData`
and :class:`~figaroh.data.PoseObservations`, so that a result can always be
traced back to the exact bytes it was computed from.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Union

from figaroh.utils.fileio import atomic_write_text, file_sha256

logger = logging.getLogger(__name__)

__all__ = ["DataSource", "Session", "file_sha256", "atomic_write_text"]

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class Session:
    """Identity of one recording.

    Roles (training, validation, …) are deliberately *not* stored here: they
    belong to a :class:`~figaroh.data.Protocol`, so the same recording can play
    different roles in different studies.

    Attributes:
        id: Session identifier (e.g. ``"2021-11-30-1544"``).
        date: ISO-8601 date or timestamp of the recording, if known.
    """

    id: str
    date: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"Session.id must be a non-empty string, got {self.id!r}")
        if self.date is not None and not isinstance(self.date, str):
            raise ValueError(
                f"Session.date must be an ISO-8601 string or None, got {type(self.date).__name__}"
            )


@dataclass(frozen=True)
class DataSource:
    """Files a dataset was read from, frozen by hash, and how they were read.

    Attributes:
        files: Mapping file path → hex sha256 of its bytes at load time.
        adapter: Name of the reader that produced the dataset
            (e.g. ``"TrajectoryData.from_csv"``).
        session: The recording these files belong to, if known.
        notes: Free text (hardware, operator, anything worth keeping).
    """

    files: Dict[str, str] = field(default_factory=dict)
    adapter: str = ""
    session: Session | None = None
    notes: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.files, dict):
            try:
                object.__setattr__(self, "files", dict(self.files))
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    "DataSource.files must map file path -> sha256 hex string"
                ) from exc
        object.__setattr__(self, "files", {str(k): str(v) for k, v in self.files.items()})
        if self.session is not None and not isinstance(self.session, Session):
            raise ValueError(
                f"DataSource.session must be a Session or None, got {type(self.session).__name__}"
            )

    @classmethod
    def from_files(
        cls,
        paths: Iterable[PathLike],
        adapter: str = "",
        session: Session | None = None,
        notes: str = "",
    ) -> DataSource:
        """Build a source by hashing ``paths`` now.

        Args:
            paths: Files the dataset is read from (a single path is accepted).
            adapter: Name of the reader.
            session: Recording identity.
            notes: Free text.

        Returns:
            A :class:`DataSource` whose ``files`` keys are ``str(Path(p))``.

        Raises:
            FileNotFoundError: one of the files does not exist.
        """
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        files = {str(Path(p)): file_sha256(p) for p in paths}
        return cls(files=files, adapter=adapter, session=session, notes=notes)

    def __repr__(self) -> str:
        sess = self.session.id if self.session is not None else None
        return f"DataSource(files={len(self.files)}, adapter={self.adapter!r}, session={sess!r})"
