"""Study protocols: which recording plays which role, frozen by file hash.

A protocol file makes a held-out evaluation reproducible: it names the
sessions used for training and validation and the sha256 of every file, and
:meth:`Protocol.verify` refuses to run on data that changed since.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Union

from figaroh.data.source import file_sha256
from figaroh.utils.yaml_budget import load_yaml_file

logger = logging.getLogger(__name__)

__all__ = ["Protocol", "ProtocolSession"]


@dataclass(frozen=True)
class ProtocolSession:
    """One session of a protocol.

    Attributes:
        id: Session identifier.
        role: Role in the study (``"training"``, ``"validation"``, …).
        files: Mapping relative file path → expected hex sha256.
    """

    id: str
    role: str
    files: Dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", str(self.id))
        object.__setattr__(self, "role", str(self.role))
        object.__setattr__(
            self, "files", {str(k): str(v) for k, v in dict(self.files or {}).items()}
        )


@dataclass(frozen=True)
class Protocol:
    """A named, versioned assignment of roles to sessions.

    Attributes:
        name: Protocol name.
        version: Integer version of the protocol.
        sessions: The sessions, each with a role and its frozen files.

    Raises:
        ValueError: duplicate session ids.
    """

    name: str
    version: int
    sessions: List[ProtocolSession]

    def __post_init__(self) -> None:
        sessions = list(self.sessions)
        for s in sessions:
            if not isinstance(s, ProtocolSession):
                raise ValueError(
                    f"Protocol {self.name}: sessions must be ProtocolSession objects, "
                    f"got {type(s).__name__}"
                )
        object.__setattr__(self, "sessions", sessions)
        ids = [s.id for s in sessions]
        dups = sorted({i for i in ids if ids.count(i) > 1})
        if dups:
            raise ValueError(f"Protocol {self.name}: duplicate session ids {dups}")

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> Protocol:
        """Read a protocol from a YAML file.

        Layout::

            name: tiago-mocap-heldout
            version: 1
            sessions:
              - id: 2021-11-30-1544
                role: training
                files: {data/postures.csv: b6c0051e...}

        Ids, roles and file entries are stringified; ``files`` may be absent.

        Args:
            path: YAML file.

        Returns:
            The protocol.

        Raises:
            FileNotFoundError: the file does not exist.
            ValueError: malformed YAML or a missing ``name``/``version``/``sessions``
                entry (the message names it).
        """
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"protocol file {str(p)!r} does not exist")
        import yaml  # PyYAML (~25 ms): imported by the load, not by this module

        try:
            doc = load_yaml_file(p)
        except yaml.YAMLError as exc:
            raise ValueError(f"protocol file {str(p)!r} is not valid YAML: {exc}") from exc
        if not isinstance(doc, dict):
            raise ValueError(
                f"protocol file {str(p)!r} must hold a mapping with name/version/sessions"
            )
        missing = [k for k in ("name", "version", "sessions") if k not in doc]
        if missing:
            raise ValueError(f"protocol file {str(p)!r} is missing {missing}")
        try:
            version = int(doc["version"])
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"protocol file {str(p)!r}: version must be an integer, got {doc['version']!r}"
            ) from exc
        raw_sessions = doc["sessions"] or []
        if not isinstance(raw_sessions, list):
            raise ValueError(f"protocol file {str(p)!r}: sessions must be a list")
        sessions = []
        for i, s in enumerate(raw_sessions):
            if not isinstance(s, dict) or "id" not in s or "role" not in s:
                raise ValueError(
                    f"protocol file {str(p)!r}: session #{i} needs 'id' and 'role' entries"
                )
            files = s.get("files") or {}
            if not isinstance(files, dict):
                raise ValueError(
                    f"protocol file {str(p)!r}: session {s['id']!r} files must map path -> sha256"
                )
            sessions.append(ProtocolSession(id=s["id"], role=s["role"], files=files))
        return cls(name=str(doc["name"]), version=version, sessions=sessions)

    def session(self, session_id: str) -> ProtocolSession:
        """Return the session with identifier ``session_id`` (compared as text).

        Raises:
            KeyError: no such session; the message lists the known identifiers.
        """
        for s in self.sessions:
            if s.id == str(session_id):
                return s
        known = ", ".join(repr(s.id) for s in self.sessions) or "none"
        raise KeyError(f"Protocol {self.name}: no session '{session_id}' (sessions: {known})")

    def with_role(self, role: str) -> List[ProtocolSession]:
        """Sessions whose role is ``role`` (possibly empty)."""
        return [s for s in self.sessions if s.role == role]

    def verify(self, root: Union[str, os.PathLike] | None = None) -> None:
        """Check that every file exists and still has its recorded sha256.

        All problems are collected before raising, so one run reports every
        missing or modified file.

        Args:
            root: Folder the file paths are relative to (default: current folder).

        Raises:
            ValueError: ``"Protocol <name> v<version>: a; b; …"``.
        """
        base = Path(root) if root is not None else Path.cwd()
        problems = []
        for s in self.sessions:
            for rel, expected in s.files.items():
                full = base / rel
                if not full.is_file():
                    problems.append(f"{s.id}: {rel} is missing")
                elif file_sha256(full) != expected:
                    problems.append(f"{s.id}: {rel} does not match its sha256")
        if problems:
            raise ValueError(f"Protocol {self.name} v{self.version}: " + "; ".join(problems))
        logger.debug("Protocol %s v%s verified under %s", self.name, self.version, base)

    def __repr__(self) -> str:
        roles = sorted({s.role for s in self.sessions})
        return (
            f"Protocol(name={self.name!r}, version={self.version}, "
            f"sessions={len(self.sessions)}, roles={roles})"
        )
