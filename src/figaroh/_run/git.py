"""Git state of figaroh's own source checkout: the commit and whether tracked files changed.

Run provenance quotes the commit of the figaroh code that produced a result.
That is a question about figaroh's source, never about the folder the user
works in: a repository in the working directory or beside the data is
someone else's, and running ``git`` there runs what its configuration names
(``core.fsmonitor``, hooks, pagers). So:

* :func:`figaroh_checkout` finds the checkout without running anything: the
  installed ``figaroh`` package must be ``<top>/src/figaroh`` with
  ``<top>/pyproject.toml`` declaring the project ``figaroh`` and a ``.git``
  entry (folder, or file of a linked worktree) in ``<top>``. An installed
  wheel (``site-packages/figaroh``) is not a checkout: no ``git`` runs.
* :func:`_run_git` runs ``git -C <top>`` only, with the repository's command
  hooks switched off: ``-c core.fsmonitor=false -c core.hooksPath=/dev/null``,
  ``--no-pager --no-optional-locks``, no system configuration
  (``GIT_CONFIG_NOSYSTEM=1``), no optional locks (``GIT_OPTIONAL_LOCKS=0``),
  no prompt, and the caller's ``GIT_*`` variables (``GIT_DIR`` …) dropped so
  that they cannot point it elsewhere.

Two queries, each one ``git`` subprocess (a few ms):

* :func:`git_head` — ``git rev-parse HEAD``, cached per process: every
  report of a process quotes the same commit and only the first pays;
* :func:`worktree_state` — the commit *and* the dirty flag from a single
  ``git status --porcelain=v2 --branch`` call, not cached (the checkout can
  change under a running process: a cached "clean" would be a false claim).
  Run provenance calls it only when a record is read, i.e. written.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Tuple, Union

__all__ = [
    "NOT_A_CHECKOUT",
    "WorktreeState",
    "_git_commit_hash",
    "_run_git",
    "figaroh_checkout",
    "git_head",
    "worktree_state",
]

_GIT_TIMEOUT_S = 5.0

#: Reason recorded when figaroh is not run from its own git checkout.
NOT_A_CHECKOUT = "not a git checkout (figaroh is not run from its source repository)"


def _plain_reason(reason: str) -> str:
    """:data:`NOT_A_CHECKOUT` for git's ``fatal: not a git repository …``; other reasons as is.

    A folder laid out as figaroh's checkout whose ``.git`` is not a usable
    repository (a copied tree, a linked worktree whose repository moved) makes
    git answer ``fatal: not a git repository (or any of the parent
    directories): .git``: for a report that is simply not a git checkout.
    """
    return NOT_A_CHECKOUT if "not a git repository" in reason.lower() else reason


#: Options placed before every git sub-command: no pager, no optional
#: locks, and no command named by the repository's configuration.
SAFE_GIT_OPTIONS = (
    "--no-pager",
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    f"core.hooksPath={os.devnull}",
)

#: The ``figaroh`` package folder (this module is ``figaroh/_run/git.py``).
_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _declares_figaroh(pyproject: Path) -> bool:
    """Whether ``pyproject`` is figaroh's own (its ``[project]`` table names ``figaroh``).

    Python 3.10 has no TOML reader in the standard library: there the file
    must exist and the ``src/figaroh`` layout decides alone.
    """
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        return True
    try:
        project = tomllib.loads(text).get("project")
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(project, dict) and project.get("name") == "figaroh"


def figaroh_checkout(package_dir: Union[str, os.PathLike, None] = None) -> Path | None:
    """Top folder of figaroh's source checkout, or None when figaroh is not run from one.

    Decided from files only (no subprocess): ``package_dir`` (default: the
    folder of this ``figaroh`` package, symlinks resolved) must be
    ``<top>/src/figaroh``, ``<top>/pyproject.toml`` must declare the project
    ``figaroh`` and ``<top>/.git`` must exist. The working directory plays no
    part.

    Args:
        package_dir: Folder of the figaroh package (for tests).

    Returns:
        ``<top>``, or None.
    """
    pkg = Path(package_dir if package_dir is not None else _PACKAGE_DIR)
    try:
        pkg = pkg.resolve()
    except OSError:
        return None
    if pkg.name != "figaroh" or pkg.parent.name != "src":
        return None
    top = pkg.parent.parent
    if not (top / ".git").exists() or not _declares_figaroh(top / "pyproject.toml"):
        return None
    return top


def _git_env() -> dict:
    """The environment of a git subprocess: no ``GIT_*`` of the caller, no system config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        LC_ALL="C",
    )
    return env


def _run_git(args: Sequence[str], repo: Union[str, os.PathLike]) -> Tuple[bool, str]:
    """Run ``git -C repo <safe options> <args>`` with a 5 s timeout.

    Args:
        args: The git sub-command and its arguments.
        repo: Top folder of the repository (figaroh's checkout in production).

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
            [exe, "-C", os.fspath(repo), *SAFE_GIT_OPTIONS, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            env=_git_env(),
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
    """``git rev-parse HEAD`` of figaroh's checkout, cached per process.

    Returns:
        ``(True, commit hash)``, or ``(False, reason)``: :data:`NOT_A_CHECKOUT`
        when figaroh is not run from its source checkout (no git runs then),
        else the reason of :func:`_run_git`.
    """
    import shutil

    return _cached_head(figaroh_checkout(), shutil.which("git"))


@functools.lru_cache(maxsize=8)
def _cached_head(top: Path | None, exe: str | None) -> Tuple[bool, str]:
    if top is None:
        return False, NOT_A_CHECKOUT
    if exe is None:
        return False, "git executable not found"
    ok, out = _run_git(["rev-parse", "HEAD"], top)
    return (ok, out) if ok else (False, _plain_reason(out))


def _git_commit_hash() -> str:
    """``git rev-parse HEAD`` of figaroh's checkout, ``"unknown"`` outside one or on failure."""
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


def worktree_state(repo: Union[str, os.PathLike, None] = None) -> WorktreeState:
    """Commit and dirty flag of figaroh's checkout from one ``git status`` call.

    Runs ``git status --porcelain=v2 --branch --untracked-files=no`` with the
    options of :func:`_run_git`: the ``# branch.oid`` header gives the commit
    (``(initial)`` in a repository without commits), any other line a changed
    tracked file.

    Args:
        repo: Top folder of the repository; default :func:`figaroh_checkout`
            (never the working directory). When figaroh is not run from its
            checkout no git runs and the reason is :data:`NOT_A_CHECKOUT`.

    Returns:
        The state; never raises (no git, not a checkout or a timeout give
        ``commit=None, dirty=None`` and the reason; git's "not a git
        repository" is reported as :data:`NOT_A_CHECKOUT`).
    """
    top = figaroh_checkout() if repo is None else repo
    if top is None:
        return WorktreeState(None, None, NOT_A_CHECKOUT)
    ok, out = _run_git(["status", "--porcelain=v2", "--branch", "--untracked-files=no"], top)
    if not ok:
        return WorktreeState(None, None, _plain_reason(out))
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
