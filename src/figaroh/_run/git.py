"""Git state of the working directory (commit hash, cached per process and folder)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Sequence, Tuple, Union

__all__ = ["_git_commit_hash", "_run_git", "git_head"]

_GIT_TIMEOUT_S = 5.0


def _run_git(args: Sequence[str], cwd: Union[str, os.PathLike] | None = None) -> Tuple[bool, str]:
    """Run ``git <args>`` with a 5 s timeout.

    Returns:
        ``(True, stdout stripped)`` on success, else ``(False, reason)``.
    """
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
