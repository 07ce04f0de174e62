"""Git state of a working directory: the commit hash and whether tracked files changed.

Two queries, each one ``git`` subprocess (a few ms):

* :func:`git_head` — ``git rev-parse HEAD``, cached per process and folder:
  every report of a process quotes the same commit and only the first pays;
* :func:`worktree_state` — the commit *and* the dirty flag from a single
  ``git status --porcelain=v2 --branch`` call, not cached (the working tree
  can change under a running process: a cached "clean" would be a false
  claim). Run provenance calls it only when a record is read, i.e. written.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Sequence, Tuple, Union

__all__ = ["WorktreeState", "_git_commit_hash", "_run_git", "git_head", "worktree_state"]

_GIT_TIMEOUT_S = 5.0


def _run_git(args: Sequence[str], cwd: Union[str, os.PathLike] | None = None) -> Tuple[bool, str]:
    """Run ``git <args>`` with a 5 s timeout.

    Returns:
        ``(True, stdout stripped)`` on success, else ``(False, reason)``.
    """
    import shutil
    import subprocess  # only when git is actually queried

    exe = shutil.which("git")
    if exe is None:
        return False, "git executable not found"
    try:
        proc = subprocess.run(
            [exe, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )
    except subprocess.TimeoutExpired:
        return False, f"git {' '.join(args)} timed out after {_GIT_TIMEOUT_S:g} s"
    except OSError as exc:
        return False, f"git could not run: {exc}"
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout or "").strip().splitlines()
        return False, msg[0] if msg else f"git exited with status {proc.returncode}"
    return True, proc.stdout.strip()


def git_head() -> Tuple[bool, str]:
    """``git rev-parse HEAD`` of the current working directory, cached per process.

    The result is computed once per (working directory, git executable) pair:
    every report and verdict of a process then quotes the same commit and only
    the first one pays for the subprocess.

    Returns:
        ``(True, commit hash)`` or ``(False, reason)`` as :func:`_run_git`.
    """
    import shutil

    return _cached_head(os.getcwd(), shutil.which("git"))


@functools.lru_cache(maxsize=32)
def _cached_head(cwd: str, exe: str | None) -> Tuple[bool, str]:
    if exe is None:
        return False, "git executable not found"
    return _run_git(["rev-parse", "HEAD"], cwd=cwd)


def _git_commit_hash() -> str:
    """``git rev-parse HEAD`` of the current working directory, ``"unknown"`` on failure."""
    ok, out = git_head()
    return out if ok and out else "unknown"


@dataclass(frozen=True)
class WorktreeState:
    """Commit and dirty state of a git working tree at one instant.

    Attributes:
        commit: Hash of ``HEAD``, or ``None`` when unknown.
        dirty: Whether tracked files differ from ``HEAD`` (staged or not;
            untracked files do not count), or ``None`` when unknown.
        reason: Why ``commit`` / ``dirty`` is ``None`` (empty otherwise).
    """

    commit: str | None
    dirty: bool | None
    reason: str = ""


def worktree_state(cwd: Union[str, os.PathLike] | None = None) -> WorktreeState:
    """Commit and dirty flag of the working tree at ``cwd`` from one ``git status`` call.

    Runs ``git status --porcelain=v2 --branch --untracked-files=no``: the
    ``# branch.oid`` header gives the commit (``(initial)`` in a repository
    without commits), any other line a changed tracked file.

    Args:
        cwd: Folder inside the working tree (default: the current directory).

    Returns:
        The state; never raises (no git, not a repository or a timeout give
        ``commit=None, dirty=None`` and the reason).
    """
    ok, out = _run_git(["status", "--porcelain=v2", "--branch", "--untracked-files=no"], cwd=cwd)
    if not ok:
        return WorktreeState(None, None, out)
    commit, reason, dirty = None, "no branch.oid line in git status output", False
    for line in out.splitlines():
        if line.startswith("# branch.oid "):
            oid = line[len("# branch.oid ") :].strip()
            if oid == "(initial)":
                reason = "the repository has no commit yet"
            else:
                commit, reason = oid, ""
        elif line and not line.startswith("#"):
            dirty = True
    return WorktreeState(commit, dirty, reason)
