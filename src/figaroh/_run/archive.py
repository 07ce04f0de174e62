"""Longitudinal run archive: a fleet's verification history.

``export_html_report()`` / ``export_verification_report()`` write fixed file
names that the next run overwrites. :func:`archive_run` instead keeps every run
in its own immutable directory::

    <root>/<asset_id>/<task>/<YYYYmmddTHHMMSSZ>_<git8|nogit>[-r<k>]/
        provenance.json        run provenance (strict JSON)
        config.snapshot.yaml   the configuration dict as used
        parameters.csv         parameter,value
        stages.json            stage records (when the run has any)
        report.html, verdict.json, ...   written there by the caller beforehand

and appends one JSON line per run to ``<root>/index.jsonl`` (git-diffable,
``jq``-able) that records, among others, the sha256 of every file of the run
directory; :func:`verify_archived_run` checks a run against it.

:func:`archive_run` is two steps, usable apart (a fleet worker serialises, the
driver writes): :func:`archive_files` serialises every file of a run object
(nothing written), :func:`write_archived_run` writes serialised files as one
sealed run.

Crash consistency — the order of an archive, each step durable before the next:

1. the folder is taken exclusively: a fresh one by ``mkdir``, or the
   caller's folder by creating :data:`ARCHIVING_MARKER` (``O_EXCL``; it holds
   the writer's pid and host tag);
2. every file is written (atomically each);
3. the index line is appended (with the sha256 of every file);
4. the folder is sealed (:data:`~figaroh.utils.fileio.SEAL_MARKER`), then
   the archiving marker is removed.

So a sealed folder is always complete and always has its index line. A
process killed before step 4 leaves an unsealed folder: :func:`read_index`
ignores an index line whose folder is not sealed (it says so in the log),
and :func:`sweep_interrupted_runs` finishes (seals) a folder whose line was
written and whose files match it, removes a fresh folder whose writer died
before its line, and leaves the caller's own folders in place.

Guarantees:

* **Safe paths.** Asset id, task and git hash are sanitised into single path
  components (only ``A-Z a-z 0-9 . _ -``; no ``..``, no separators, no control
  characters), and the run directory is checked to lie inside ``root``.
* **Never overwrite, never merge.** A run directory is claimed with an
  exclusive ``mkdir`` (or :data:`ARCHIVING_MARKER`) and sealed with an
  exclusive marker file (``.archived``) when archived. Archiving into a
  sealed directory, or one being archived (e.g. the same provenance twice),
  goes to a new sibling directory with a ``-r<k>`` suffix. Nothing is ever
  written inside a sealed directory, sub-folders included.
* **Atomic files.** Every file is written to a temporary file and renamed
  (:func:`figaroh.utils.fileio.atomic_write_text`); a crash while writing
  leaves no half-written file. All content is serialised before anything is
  written. The index line is appended with one ``write`` then ``fsync``,
  under an exclusive ``flock`` of the index (POSIX), so processes archiving
  into one root at once each get their own sealed directory and one intact
  index line.
* **Strict JSON** (``allow_nan=False``): non-finite floats are stored as
  ``null`` (see :func:`figaroh._run.json_io.verification_json_data`).

Durability of a claimed folder (:func:`claim_run_dir`, then
:func:`write_unsealed_run` and :func:`seal_runs` — what
:func:`write_archived_run` with ``claimed=True`` does, the fleet driver's
path): the folder belongs to one writer and is unsealed until complete, so
its files are created in place (no temporary file each, no ``fsync`` each)
and the index line is appended; then **one** file-system sync makes the
folder, its files and the line durable together (``syncfs`` of the archive's
file system on Linux; elsewhere an ``fsync`` of every file, the folder, its
parent and the index), and only then is the seal created, itself without a
sync — a seal lost in a power failure is restored by
:func:`sweep_interrupted_runs` (the line is there and the files match it).
:func:`seal_runs` takes several folders: one sync for them all. The order of
steps 1–4 is unchanged, so a process killed at any moment leaves what the
sweep finishes or removes.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import logging
import os
import re
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Sequence, Tuple, Union

import numpy as np

try:  # POSIX only: the index append is then also locked against other writers
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from figaroh._run.json_io import verification_json_data
from figaroh._run.naming import _safe_path_component
from figaroh._run.stages import stages_json_data
from figaroh.errors import FigarohError
from figaroh.tools._timestamps import parse_time
from figaroh.utils.fileio import (
    ARCHIVE_RECORD_FILES,
    SEAL_MARKER,
    STALE_TEMP_AGE_S,
    atomic_write_text,
    create_exclusive,
    file_sha256,
    is_sealed_dir,
    is_temp_name,
    make_folder,
    refuse_sealed,
    remove_stale_temps,
    write_new_file,
    writer_gone,
    writer_tag,
)

logger = logging.getLogger(__name__)

__all__ = [
    "ARCHIVING_MARKER",
    "INDEX_FILE",
    "ArchiveFileNameError",
    "RunCheck",
    "UnsealedRun",
    "append_line",
    "archive_files",
    "archive_run",
    "claim_run_dir",
    "compute_run_dir",
    "read_index",
    "seal_runs",
    "sweep_interrupted_runs",
    "verify_archived_run",
    "write_archived_run",
    "write_unsealed_run",
]

#: Name of the run index at the archive root.
INDEX_FILE = "index.jsonl"
#: Marker file that seals an archived run directory.
_SEAL_FILE = SEAL_MARKER
_ARCHIVE_FILES = ARCHIVE_RECORD_FILES
#: Marker of a run folder being archived (removed once it is sealed):
#: ``<pid> <host tag> <claimed|adopted>``; ``claimed``: the archive created
#: the folder and owns every file in it, ``adopted``: the caller's folder.
ARCHIVING_MARKER = ".archiving"
#: Files of a run folder that are not part of the run (never hashed).
_MARKERS = (SEAL_MARKER, ARCHIVING_MARKER)
_SUFFIX_RE = re.compile(r"-r\d+$")
_MAX_SUFFIX = 10000
_CLAIM_ATTEMPTS = 3  # a fresh folder swept away before its marker is made again


class ArchiveFileNameError(FigarohError, ValueError):
    """A file for :func:`write_archived_run` is named by more (or less) than one path component."""


def _require_provenance(obj: Any) -> Mapping[str, Any]:
    provenance = getattr(obj, "_run_provenance", None)
    if provenance is None:
        raise AttributeError("No run provenance available. Run solve() first.")
    if not isinstance(provenance, Mapping):
        raise TypeError(
            "_run_provenance must be the dict returned by collect_run_provenance(), "
            f"got {type(provenance).__name__}"
        )
    return provenance


def _section(provenance: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = provenance.get(key)
    return value if isinstance(value, Mapping) else {}


def _run_dir_name(provenance: Mapping[str, Any]) -> str:
    """``<YYYYmmddTHHMMSSZ>_<git8|nogit>`` from the fixed provenance record."""
    stamps = _section(provenance, "timestamps")
    dt = None
    for key in ("run_finished", "run_started", "report_generated"):
        dt = parse_time(stamps.get(key))
        if dt is not None:
            break
    ts = dt.strftime("%Y%m%dT%H%M%SZ") if dt is not None else "unknown-time"
    commit = _section(provenance, "software").get("git_commit")
    git_short = (
        commit[:8]
        if isinstance(commit, str) and re.fullmatch(r"[0-9a-fA-F]{7,64}", commit)
        else "nogit"
    )
    return f"{ts}_{_safe_path_component(git_short, 'nogit')}"


def _run_parent(root: Path, provenance: Mapping[str, Any]) -> Path:
    asset = _section(provenance, "asset").get("asset_id", "unknown")
    task = provenance.get("task", "unknown")
    return root / _safe_path_component(asset) / _safe_path_component(task)


def _check_inside(path: Path, root: Path) -> None:
    if not path.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"run directory {str(path)!r} escapes the archive root {str(root)!r}")


def _is_sealed(run_dir: Path) -> bool:
    return any(
        (run_dir / name).exists() for name in (_SEAL_FILE, ARCHIVING_MARKER, "provenance.json")
    )


def _claim_dir(parent: Path, base: str, mark: bool = False) -> Path:
    """Create (exclusively) the first free directory ``base``, ``base-r2``, …

    With ``mark`` the new directory gets a ``claimed`` :data:`ARCHIVING_MARKER`.
    """
    make_folder(parent)
    for k in range(1, _MAX_SUFFIX):
        candidate = parent / (base if k == 1 else f"{base}-r{k}")
        for _ in range(_CLAIM_ATTEMPTS):
            try:
                candidate.mkdir()
            except FileExistsError:
                break
            if not mark or _mark_claimed(candidate):
                return candidate
    raise FileExistsError(f"no free run directory name left for {base!r} in {str(parent)!r}")


def _mark_claimed(run_dir: Path) -> bool:
    """Mark a fresh folder ``claimed``; False when a sweep removed it while still empty."""
    try:
        _mark_archiving(run_dir, "claimed")
    except FileNotFoundError:
        return False
    return True


def _mark_archiving(run_dir: Path, how: str) -> bool:
    """Take ``run_dir`` for one archive (:data:`ARCHIVING_MARKER`); False when taken already.

    A ``claimed`` marker goes into the folder the caller has just created:
    no seal check, and no sync of its own (the folder's one sync,
    :func:`_make_durable`, covers it).
    """
    claimed = how == "claimed"
    return create_exclusive(
        run_dir / ARCHIVING_MARKER,
        f"{os.getpid()} {writer_tag()} {how}\n",
        sync=not claimed,
        check=not claimed,
    )


def _seal(run_dir: Path, run_id: str, owned: bool = False) -> bool:
    """Exclusively create the seal marker; False when the directory is already sealed.

    ``owned``: the folder is this writer's claimed folder, already synced
    (:func:`seal_runs`): its :data:`ARCHIVING_MARKER` is renamed into the
    seal (one atomic step, no sync of its own; the seal then holds the
    writer's pid and host tag instead of the run id). Removing a synced
    marker would free its block, which is slow where the file system
    discards freed blocks at once.
    """
    path = run_dir / _SEAL_FILE
    if owned:
        if path.exists():
            return False
        os.rename(run_dir / ARCHIVING_MARKER, path)
        return True
    if not create_exclusive(path, f"{run_id}\n"):
        return False
    try:
        os.unlink(run_dir / ARCHIVING_MARKER)
    except OSError:
        pass  # a marker left in a sealed folder is not part of the run
    return True


def _cache_key(root: Path, provenance: Mapping[str, Any]) -> Tuple[str, str, str]:
    return (
        str(root.resolve()),
        str(provenance.get("run_id", "")),
        str(_run_parent(root, provenance) / _run_dir_name(provenance)),
    )


def compute_run_dir(obj: Any, root: Union[str, os.PathLike] = "results/runs") -> Path:
    """Compute (and create) this run's dedicated directory.

    ``<root>/<asset_id>/<task>/<YYYYmmddTHHMMSSZ>_<git8|nogit>`` from the
    fixed provenance record (timestamp ``timestamps.run_finished``, never the
    wall clock), each component sanitised. Calling again for the same run
    object and provenance returns the identical path until the run is
    archived; a directory already claimed by another run or already archived
    is never reused — the next free ``-r<k>`` suffix is claimed instead.

    Args:
        obj: A ``BaseIdentification``/``BaseCalibration`` instance after
            ``solve()`` (``_run_provenance`` populated).
        root: Archive root directory (created if missing).

    Returns:
        Path: The run directory (exists on return).

    Raises:
        AttributeError: called before ``solve()``.
        TypeError: ``_run_provenance`` is not a dict.
    """
    provenance = _require_provenance(obj)
    root_path = Path(root)
    key = _cache_key(root_path, provenance)
    cached = getattr(obj, "_archive_run_dir", None)
    if isinstance(cached, Mapping) and tuple(cached.get("key", ())) == key:
        path = Path(cached["path"])
        if path.is_dir() and not _is_sealed(path):
            return path
    parent = _run_parent(root_path, provenance)
    run_dir = _claim_dir(parent, _run_dir_name(provenance))
    _check_inside(run_dir, root_path)
    try:
        obj._archive_run_dir = {"key": key, "path": str(run_dir), "root": str(root_path)}
    except (AttributeError, TypeError):
        logger.debug("compute_run_dir: cannot cache the run directory on %r", type(obj).__name__)
    return run_dir


# ---------------------------------------------------------------------------
# Serialisation
# ---------------------------------------------------------------------------


def _yaml_safe(value: Any) -> Any:
    """Plain YAML-safe copy: numpy → Python, tuples/sets → lists, others → str."""
    if isinstance(value, Mapping):
        return {str(k): _yaml_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_yaml_safe(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [_yaml_safe(v) for v in sorted(value, key=str)]
    if isinstance(value, np.ndarray):
        return _yaml_safe(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _named_values(names: Any, values: Any, origin: str) -> Tuple[List[str], List[float]] | None:
    if names is None or values is None:
        return None
    names_l = [str(n) for n in list(names)]
    vals = np.asarray(values, dtype=float).ravel()
    if len(names_l) != vals.size:
        raise ValueError(
            f"cannot archive parameters from {origin}: {len(names_l)} names for "
            f"{vals.size} values (the result is inconsistent)"
        )
    return names_l, [float(v) for v in vals]


def _extract_parameters(obj: Any) -> Tuple[List[str], List[float]]:
    """Reported parameters: accepted selection, identification fit, or calibration fit."""
    sel = getattr(obj, "selected", None)
    if (
        sel is not None
        and getattr(sel, "accepted", False)
        and getattr(sel, "values", None) is not None
    ):
        got = _named_values(getattr(sel, "names", None), sel.values, "the selected estimate")
        if got:
            return got
    result = getattr(obj, "result", None)
    if isinstance(result, Mapping):
        got = _named_values(
            result.get("base parameters names"),
            result.get("base parameters values"),
            "result['base parameters …']",
        )
        if got:
            return got
    got = _named_values(
        getattr(obj, "params_base", None), getattr(obj, "phi_base", None), "params_base/phi_base"
    )
    if got:
        return got
    results_data = getattr(obj, "results_data", None)
    if isinstance(results_data, Mapping):
        got = _named_values(
            results_data.get("calibrated parameters names"),
            results_data.get("calibrated parameters values"),
            "results_data['calibrated parameters …']",
        )
        if got:
            return got
    calib = getattr(obj, "calib_config", None)
    if isinstance(calib, Mapping):
        got = _named_values(
            calib.get("param_name"), getattr(obj, "var_", None), "calib_config['param_name']/var_"
        )
        if got:
            return got
    return [], []


def _parameters_csv(names: List[str], values: List[float]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["parameter", "value"])
    writer.writerows((n, repr(v)) for n, v in zip(names, values, strict=True))
    return buf.getvalue()


def _strict_json(data: Any, **kwargs: Any) -> str:
    return json.dumps(verification_json_data(data), allow_nan=False, ensure_ascii=False, **kwargs)


def _line_json(entry: Mapping[str, Any]) -> str:
    """An index line: plain JSON data (text, numbers, parsed JSON) dumped as is, else sanitised."""
    try:
        return json.dumps(entry, allow_nan=False, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):  # numpy values, non-finite numbers
        return _strict_json(entry, sort_keys=True)


def _read_verdict(run_dir: Path) -> Dict[str, Any]:
    path = run_dir / "verdict.json"
    if not path.is_file():
        return _verdict_fields(None)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        logger.warning("archive_run: cannot read %s (%s)", path, exc)
        return _no_verdict(f"unavailable: unreadable verdict.json ({exc})")
    return _verdict_fields(text, str(path))


def _no_verdict(status: str | None = None) -> Dict[str, Any]:
    return {"status": status, "passed": None, "scope": None, "metrics": None}


def _verdict_fields(text: str | None, where: str = "verdict.json") -> Dict[str, Any]:
    """The index line's verdict fields from the text of ``verdict.json`` (None: no verdict)."""
    if text is None:
        return _no_verdict()
    try:
        verdict = json.loads(text)
    except ValueError as exc:
        logger.warning("archive_run: cannot read %s (%s)", where, exc)
        return _no_verdict(f"unavailable: unreadable verdict.json ({exc})")
    if not isinstance(verdict, Mapping):
        return _no_verdict("unavailable: verdict.json is not an object")
    return {
        "status": verdict.get("status"),
        "passed": verdict.get("passed"),
        "scope": verdict.get("scope"),
        "metrics": verdict.get("metrics"),
    }


def append_line(index_path: Union[str, os.PathLike], line: str, *, sync: bool = True) -> int:
    """Append one line to an index file, safe against concurrent writers and torn lines.

    The file is opened with ``O_APPEND`` and locked (``flock``, exclusive)
    while the last byte is checked — a line torn by a killed writer gets a
    newline first — and the line is written with one ``write``, then
    ``fsync`` (unless ``sync`` is False: the caller syncs later).

    Returns:
        The size of the file after the line [bytes].
    """
    data = line.encode("utf-8")
    fd = os.open(index_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if sync:
            os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)  # releases the lock


# ---------------------------------------------------------------------------
# Archive
# ---------------------------------------------------------------------------


def _index_root(obj: Any, run_dir: Path) -> Path:
    cached = getattr(obj, "_archive_run_dir", None)
    if isinstance(cached, Mapping) and cached.get("path"):
        try:
            if Path(cached["path"]).resolve().parent == run_dir.resolve().parent:
                return Path(cached["root"])
        except OSError:
            pass
    # run_dir is <root>/<asset>/<task>/<timestamp>
    return run_dir.parent.parent.parent


def archive_files(obj: Any) -> Dict[str, str]:
    """Every file :func:`archive_run` writes for ``obj``, serialised; nothing is written.

    ``provenance.json`` always; ``config.snapshot.yaml`` when a config dict
    exists; ``parameters.csv`` (``parameter,value``, values in ``repr``) when
    parameters exist; ``stages.json`` when stage records exist.

    Args:
        obj: A ``BaseIdentification``/``BaseCalibration`` instance after
            ``solve()`` (``_run_provenance`` populated).

    Returns:
        File name → text, in writing order.

    Raises:
        AttributeError: called before ``solve()``.
        TypeError: ``_run_provenance`` is not a dict.
        ValueError: inconsistent parameter names/values.
    """
    provenance = _require_provenance(obj)
    contents: Dict[str, str] = {"provenance.json": _strict_json(provenance, indent=2) + "\n"}
    config = getattr(obj, "identif_config", None) or getattr(obj, "calib_config", None)
    if isinstance(config, Mapping) and config:
        import yaml  # only when a run is archived: keeps PyYAML off the task imports

        contents["config.snapshot.yaml"] = yaml.safe_dump(
            _yaml_safe(config), default_flow_style=False, sort_keys=True, allow_unicode=True
        )
    names, values = _extract_parameters(obj)
    if names:
        contents["parameters.csv"] = _parameters_csv(names, values)
    if getattr(obj, "stages", None):
        contents["stages.json"] = _strict_json(stages_json_data(obj), indent=2) + "\n"
    return contents


def _index_entry(
    provenance: Mapping[str, Any],
    run_id: str,
    target: Path,
    root: Path,
    hashes: Mapping[str, str],
    verdict: Mapping[str, Any] | None = None,
) -> Dict[str, Any]:
    """The ``index.jsonl`` record of a run archived in ``target``.

    ``verdict``: its fields from the text written (default: read ``verdict.json``).
    """
    try:
        rel_dir = target.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel_dir = str(target.resolve())
    software = _section(provenance, "software")
    return {
        "run_id": run_id,
        "task": provenance.get("task"),
        "asset_id": _section(provenance, "asset").get("asset_id"),
        "robot_name": _section(provenance, "model").get("robot_name"),
        "run_dir": rel_dir,
        "run_finished": _section(provenance, "timestamps").get("run_finished"),
        "archived_at": datetime.now(timezone.utc).isoformat(),
        "git_commit": software.get("git_commit"),
        "git_dirty": software.get("git_dirty"),
        "config_sha256": _section(provenance, "config").get("sha256"),
        "files": sorted(hashes),
        "sha256": dict(sorted(hashes.items())),
        **(_read_verdict(target) if verdict is None else verdict),
    }


def _check_file_names(files: Mapping[str, str]) -> None:
    for name in files:
        if (
            not isinstance(name, str)
            or name in ("", ".", "..", _SEAL_FILE)
            or Path(name).name != name
            or "\\" in name
        ):
            raise ArchiveFileNameError(
                f"archive file name {name!r} is not a plain file name; name each file of a "
                f"run with one path component other than {_SEAL_FILE!r} (e.g. 'verdict.json')"
            )


def _provenance_of(files: Mapping[str, str]) -> Mapping[str, Any]:
    text = files.get("provenance.json")
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ArchiveFileNameError(
            f"provenance.json of the run is not valid JSON ({exc}); pass the text "
            "archive_files() serialised"
        ) from None
    return data if isinstance(data, Mapping) else {}


def _write_all(target: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        atomic_write_text(target / name, text)


def _write_new_files(target: Path, files: Mapping[str, str]) -> Dict[str, str]:
    """Create every file in the claimed ``target`` (no sync); sha256 of each, by name."""
    import hashlib  # stdlib, loads OpenSSL: paid by the first archive, not the import

    hashes = {}
    for name, text in files.items():
        data = text.encode("utf-8")
        write_new_file(target / name, data)
        hashes[name] = hashlib.sha256(data).hexdigest()
    return hashes


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """Linux ``syncfs(2)`` through the C library, or None where it is missing."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # stdlib; only the first durable archive loads it

    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):  # pragma: no cover - a C library without syncfs
        return None
    call.argtypes = [ctypes.c_int]
    call.restype = ctypes.c_int
    return call


def _fsync_path(path: Path, flags: int = os.O_RDWR) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _syncfs_all(call: Callable[[int], int], paths: Iterable[Path]) -> bool:
    """``syncfs`` once per file system holding one of ``paths``; False when one fails."""
    by_device: Dict[int, Path] = {}
    for path in paths:
        by_device.setdefault(os.stat(path).st_dev, path)
    for path in by_device.values():
        fd = os.open(path, os.O_RDONLY)
        try:
            if call(fd) != 0:
                logger.debug("syncfs of %s failed; syncing each file instead", path)
                return False
        finally:
            os.close(fd)
    return True


def _make_durable(runs: Sequence[UnsealedRun]) -> None:
    """One sync for claimed run folders: their files, themselves and their index lines.

    Linux: ``syncfs`` once per file system holding a folder or an index.
    Elsewhere, or when ``syncfs`` fails: an ``fsync`` of every file, of each
    folder and its parent, and of each index.
    """
    call = _syncfs()
    index_files = sorted({run.index_file for run in runs})
    if call is not None and _syncfs_all(call, [*(r.run_dir for r in runs), *index_files]):
        return
    for run in runs:
        for name in run.files:
            _fsync_path(run.run_dir / name)
    for path in index_files:
        _fsync_path(path)
    for folder in sorted({f for r in runs for f in (r.run_dir, r.run_dir.parent)}):
        try:
            _fsync_path(folder, os.O_RDONLY)
        except OSError:  # pragma: no cover - folders cannot be synced on Windows
            pass


def _run_hashes(target: Path) -> Dict[str, str]:
    """sha256 of every file of a run folder (its markers excepted)."""
    return {p.name: file_sha256(p) for p in target.iterdir() if _is_run_file(p)}


def _is_run_file(path: Path) -> bool:
    """A file of the run: not a marker, not a temporary file of a killed writer."""
    return path.name not in _MARKERS and not is_temp_name(path.name) and path.is_file()


def _take_target(run_dir: Path) -> Tuple[Path, str]:
    """The folder this archive owns: ``run_dir`` (``adopted``) or a fresh sibling (``claimed``).

    ``run_dir`` is adopted when it is not sealed, holds none of the record
    files and no other archive has taken it (:data:`ARCHIVING_MARKER`).
    """
    why = "is already archived"
    if is_sealed_dir(run_dir):
        refuse_sealed(run_dir.parent)
    else:
        clashes = [n for n in _ARCHIVE_FILES if (run_dir / n).exists()]
        if not clashes:
            if _adopt(run_dir):
                return run_dir, "adopted"
            why = "is being archived by another process (or its archive was interrupted)"
    base = _SUFFIX_RE.sub("", run_dir.name) or "run"
    target = _claim_dir(run_dir.parent, base, mark=True)
    logger.warning(
        "%s %s; archiving this run to %s instead (never overwritten)", run_dir, why, target
    )
    return target, "claimed"


def _adopt(run_dir: Path) -> bool:
    """Mark ``run_dir`` ``adopted`` (created if missing, again if a sweep removed it empty)."""
    for _ in range(_CLAIM_ATTEMPTS):
        make_folder(run_dir)
        try:
            return _mark_archiving(run_dir, "adopted")
        except FileNotFoundError:
            continue
    return False


def _abandon(target: Path, how: str, record_names: List[str]) -> None:
    """Undo an archive that failed before its index line: nothing of it stays."""
    try:
        if how == "claimed":
            shutil.rmtree(target)
            return
        for name in record_names:  # they did not exist before (no clash)
            (target / name).unlink(missing_ok=True)
        (target / ARCHIVING_MARKER).unlink(missing_ok=True)
    except OSError as exc:  # pragma: no cover - reported, the original error is raised
        logger.warning("cannot clean up the failed archive in %s: %s", target, exc)


def claim_run_dir(parent: Union[str, os.PathLike], base: str) -> Path:
    """Create, exclusively, the first free directory ``base``, ``base-r2``, … in ``parent``.

    The directory belongs to the caller alone (exclusive ``mkdir``; it gets a
    ``claimed`` :data:`ARCHIVING_MARKER`, so a crash before the seal leaves a
    folder :func:`sweep_interrupted_runs` may remove); pass it to
    :func:`write_archived_run` with ``claimed=True``.

    Args:
        parent: Folder to create it in (created if missing).
        base: Directory name (one safe path component).

    Returns:
        The new, empty directory.

    Raises:
        FileExistsError: every suffix up to ``-r9999`` is taken.
        SealedRunError: ``parent`` lies in a sealed archived run.
    """
    return _claim_dir(Path(parent), base, mark=True)


def write_archived_run(
    files: Mapping[str, str],
    run_dir: Union[str, os.PathLike],
    root: Union[str, os.PathLike],
    *,
    run_id: str | None = None,
    claimed: bool = False,
) -> str:
    """Write serialised run files as one sealed, immutable archived run.

    Every file is written (atomically each) before the index line, and the
    folder is sealed after the index line (see the module docstring): a
    sealed folder is complete and indexed, whatever moment a crash hits.
    ``run_dir`` is used when it is not sealed, holds none of the record files
    (:data:`ARCHIVE_RECORD_FILES`) and is not being archived by another
    process; otherwise the run goes to the next free ``<name>-r<k>``
    sibling. A write that fails leaves no trace of the archive (a fresh
    folder is removed; the record files written into ``run_dir`` are).

    Args:
        files: File name → text, written in this order (atomically each).
        run_dir: Target run directory (created if missing).
        root: Archive root holding ``index.jsonl``.
        run_id: Run id for the seal and the index line; default the
            ``run_id`` of ``files["provenance.json"]`` (``"unknown"`` without it).
        claimed: ``run_dir`` was just created by the caller alone
            (:func:`claim_run_dir`).

    Returns:
        str: The directory the run was actually archived in.

    Raises:
        ArchiveFileNameError: a file name is not one plain path component.
        FileExistsError: ``claimed`` but ``run_dir`` is already sealed.
        SealedRunError: ``run_dir`` or ``root`` lies inside a sealed run.
        OSError: the archive could not be written (no partial file is left).
    """
    _check_file_names(files)
    provenance = _provenance_of(files)
    if run_id is None:
        run_id = str(provenance.get("run_id", "unknown"))
    run_dir = Path(run_dir)
    root = Path(root)
    if claimed:
        seal_runs([write_unsealed_run(files, run_dir, root, run_id=run_id)])
        return str(run_dir)
    refuse_sealed(root)
    target, how = _take_target(run_dir)
    try:
        _write_all(target, files)
        entry = _index_entry(provenance, run_id, target, root, _run_hashes(target))
        make_folder(root)
        append_line(root / INDEX_FILE, _strict_json(entry, sort_keys=True) + "\n")
    except BaseException:
        _abandon(target, how, [n for n in files if n in _ARCHIVE_FILES])
        raise
    if not _seal(target, run_id):  # pragma: no cover - this archive owns the folder
        raise FileExistsError(f"run directory {str(target)!r} was sealed concurrently")
    logger.info("Run archived to %s", target)
    return str(target)


@dataclasses.dataclass(frozen=True)
class UnsealedRun:
    """A claimed run folder whose files and index line are written, not yet synced nor sealed.

    Attributes:
        run_dir: The folder.
        run_id: Run id for its seal.
        files: Names of its files.
        index_file: The ``index.jsonl`` holding its line.
    """

    run_dir: Path
    run_id: str
    files: Tuple[str, ...]
    index_file: Path


def write_unsealed_run(
    files: Mapping[str, str],
    run_dir: Union[str, os.PathLike],
    root: Union[str, os.PathLike],
    *,
    run_id: str | None = None,
) -> UnsealedRun:
    """Steps 2–3 of an archive into a folder this writer claimed: files and index line, no sync.

    The files are created in place (the folder is the caller's alone and
    unsealed: :func:`claim_run_dir`), their sha256 taken from the bytes
    written, then the index line is appended. Nothing is synced or sealed:
    pass the result, alone or with others, to :func:`seal_runs`. Until then a
    killed process leaves a folder :func:`sweep_interrupted_runs` finishes
    (line written, files match) or removes (no line).

    Args:
        files: File name → text.
        run_dir: The claimed folder (from :func:`claim_run_dir`).
        root: Archive root holding ``index.jsonl``.
        run_id: Run id for the seal and the index line; default the
            ``run_id`` of ``files["provenance.json"]``.

    Returns:
        What :func:`seal_runs` needs.

    Raises:
        ArchiveFileNameError: a file name is not one plain path component
            (nothing is written).
        FileExistsError: ``run_dir`` is already sealed.
        OSError: a write failed (the folder is removed).
    """
    _check_file_names(files)
    provenance = _provenance_of(files)
    if run_id is None:
        run_id = str(provenance.get("run_id", "unknown"))
    run_dir, root = Path(run_dir), Path(root)
    if is_sealed_dir(run_dir):
        raise FileExistsError(
            f"run directory {str(run_dir)!r} is already sealed; claim a fresh one "
            "with claim_run_dir()"
        )
    if not (run_dir / ARCHIVING_MARKER).is_file():  # claim_run_dir() makes it
        refuse_sealed(root)
        make_folder(run_dir)
        _mark_archiving(run_dir, "claimed")
    index_file = root / INDEX_FILE
    try:
        hashes = _write_new_files(run_dir, files)
        verdict = _verdict_fields(files.get("verdict.json"))
        entry = _index_entry(provenance, run_id, run_dir, root, hashes, verdict)
        append_line(index_file, _line_json(entry) + "\n", sync=False)
    except BaseException:
        _abandon(run_dir, "claimed", [])
        raise
    return UnsealedRun(run_dir, run_id, tuple(files), index_file)


def seal_runs(runs: Sequence[UnsealedRun]) -> None:
    """Step 4 for many claimed folders at once: one sync for them all, then each seal.

    The sync (:func:`_make_durable`: one ``syncfs`` per file system on Linux)
    makes every file, folder and index line durable; only then are the seals
    created, without a sync of their own (a seal lost in a power failure is
    restored by :func:`sweep_interrupted_runs`: the line is there and the files
    match it).

    Raises:
        OSError: the sync or a seal failed (the folders left unsealed are
            finished by the next sweep).
    """
    if not runs:
        return
    _make_durable(runs)
    for run in runs:
        if not _seal(run.run_dir, run.run_id, owned=True):  # pragma: no cover - owned folders
            raise FileExistsError(f"run directory {str(run.run_dir)!r} was sealed concurrently")
        logger.debug("Run archived to %s", run.run_dir)


def archive_run(obj: Any, run_dir: Union[str, os.PathLike]) -> str:
    """Archive a solved run into ``run_dir`` (or a fresh sibling if it is sealed).

    Writes ``provenance.json``, ``config.snapshot.yaml`` (when a config dict
    exists), ``parameters.csv`` (when parameters exist) and ``stages.json``
    (when stage records exist), each atomically, then appends one line to
    ``<root>/index.jsonl`` with the run id, asset, task, run directory
    (relative to root), git commit, config sha256, the names (``files``) and
    sha256 (``sha256``) of every file of the run directory and — when the caller wrote
    ``verdict.json`` into the directory first — its status, ``passed``, scope
    and metrics. ``<root>`` is the root given to :func:`compute_run_dir`
    (else ``run_dir``'s grand-grand-parent). Equivalent to
    ``write_archived_run(archive_files(obj), run_dir, root)``.

    A directory that is already archived (sealed) is never written again: the
    run goes to the next free ``<name>-r<k>`` sibling instead.

    Args:
        obj: A ``BaseIdentification``/``BaseCalibration`` instance after
            ``solve()`` (``_run_provenance`` populated).
        run_dir: Directory from :func:`compute_run_dir` (created if missing).

    Returns:
        str: The directory the run was actually archived in.

    Raises:
        AttributeError: called before ``solve()``.
        ValueError: inconsistent parameter names/values.
        OSError: the archive could not be written (no partial file is left).
    """
    provenance = _require_provenance(obj)
    contents = archive_files(obj)  # everything serialised before writing
    run_dir = Path(run_dir)
    return write_archived_run(
        contents,
        run_dir,
        _index_root(obj, run_dir),
        run_id=str(provenance.get("run_id", "unknown")),
    )


@dataclasses.dataclass(frozen=True)
class RunCheck:
    """Outcome of :func:`verify_archived_run`.

    Attributes:
        run_dir: The run directory checked.
        ok: True when the directory is sealed, listed in the index, and every
            file it held when archived is present with the same sha256.
        problems: One line per failure (file missing, altered, added; not
            sealed; not in the index), empty when ``ok``.
    """

    run_dir: str
    ok: bool
    problems: Tuple[str, ...] = ()


def _index_entry_of(run_dir: Path, root: Path) -> Mapping[str, Any] | None:
    """The last index entry naming ``run_dir`` (None when there is none)."""
    return _entries_by_dir(root).get(run_dir.resolve())


def _entries_by_dir(root: Path) -> Dict[Path, Dict[str, Any]]:
    """Resolved run folder → its last line of ``<root>/index.jsonl`` (sealed or not)."""
    found: Dict[Path, Dict[str, Any]] = {}
    for entry in _index_lines(root):
        rel = entry.get("run_dir")
        if isinstance(rel, str):
            found[(root / rel).resolve()] = entry
    return found


def _hash_problems(run_dir: Path, hashes: Mapping[str, Any]) -> List[str]:
    problems = []
    for name, digest in sorted(hashes.items()):
        path = run_dir / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif file_sha256(path) != digest:
            problems.append(f"{name}: altered (sha256 differs from the index)")
    extra = sorted(
        p.name
        for p in run_dir.iterdir()
        if p.name not in hashes and p.name not in _MARKERS and not is_temp_name(p.name)
    )
    problems.extend(f"{name}: added after archiving" for name in extra)
    return problems


def verify_archived_run(
    run_dir: Union[str, os.PathLike], root: Union[str, os.PathLike, None] = None
) -> RunCheck:
    """Check an archived run against the sha256 recorded in the index when it was archived.

    :func:`archive_run` records, in the run's ``index.jsonl`` line, the
    sha256 of every file of the run directory (``"sha256": {name: digest}``).
    This re-hashes the files and compares.

    Args:
        run_dir: The archived run directory.
        root: Archive root holding ``index.jsonl``; default the run
            directory's grand-grand-parent (``<root>/<asset>/<task>/<run>``).

    Returns:
        The :class:`RunCheck` (``ok`` False with the reasons when any file is
        missing, altered or added, the directory is not sealed, or the index
        has no line for it — e.g. an archive killed before it finished).
    """
    path = Path(run_dir)
    root_path = Path(root) if root is not None else path.parent.parent.parent
    problems: List[str] = []
    if not (path / _SEAL_FILE).is_file():
        problems.append(f"not sealed (no {_SEAL_FILE}): not an archived run")
    entry = _index_entry_of(path, root_path) if path.is_dir() else None
    if entry is None:
        problems.append(f"no line in {str(root_path / INDEX_FILE)!r}: the archive did not finish")
    else:
        hashes = entry.get("sha256")
        if not isinstance(hashes, Mapping):
            problems.append("index line without sha256 (archived by an older figaroh)")
        else:
            problems.extend(_hash_problems(path, hashes))
    return RunCheck(run_dir=str(path), ok=not problems, problems=tuple(problems))


def _index_lines(root: Path) -> List[Dict[str, Any]]:
    """Every parseable line of ``<root>/index.jsonl``, in file order."""
    path = root / INDEX_FILE
    if not path.is_file():
        return []
    entries: List[Dict[str, Any]] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            logger.warning("%s:%d is not valid JSON; skipped", path, lineno)
            continue
        if isinstance(item, dict):
            entries.append(item)
    return entries


def read_index(root: Union[str, os.PathLike] = "results/runs") -> List[Dict[str, Any]]:
    """Entries of ``<root>/index.jsonl`` in file order, one per sealed archived run.

    Blank or unparseable lines (e.g. a line torn by a crash) are skipped with
    a warning; so is the line of a folder that is not sealed (an archive
    interrupted between its index line and its seal, see the module
    docstring): such a run is not archived.

    Args:
        root: Archive root.

    Returns:
        One dict per archived run (empty when there is no index).
    """
    root_path = Path(root)
    entries = []
    for entry in _index_lines(root_path):
        rel = entry.get("run_dir")
        if isinstance(rel, str) and not is_sealed_dir(root_path / rel):
            logger.warning(
                "%s: the line of %s is ignored: that folder is not sealed (its archive was "
                "interrupted; figaroh index rebuild, or the next fleet run, finishes or "
                "removes it)",
                root_path / INDEX_FILE,
                rel,
            )
            continue
        entries.append(entry)
    return entries


def _archiving_writer(marker: Path) -> Tuple[bool, str, str]:
    """``(gone, how, pid)`` of the archive that left ``marker``.

    The writer is gone when it ran on this host (same pid namespace) and its
    process is dead (or its pid reused), or when the marker is older than
    :data:`~figaroh.utils.fileio.STALE_TEMP_AGE_S`. An unreadable marker
    counts as ``adopted``.
    """
    try:
        text = marker.read_text(encoding="utf-8")
        mtime = marker.stat().st_mtime
    except OSError:
        return False, "adopted", "?"
    parts = text.split()
    pid, host, how = (parts + ["?", "?", "adopted"])[:3]
    if how not in ("claimed", "adopted"):
        how = "adopted"
    if time.time() - mtime > STALE_TEMP_AGE_S:
        return True, how, pid
    same_host = host == writer_tag() and pid.isdigit()
    return (same_host and writer_gone(int(pid), mtime)), how, pid


def _sweep_one(folder: Path, entries: Dict[Path, Dict[str, Any]]) -> str:
    """Finish, remove or leave one unsealed run folder; the report line's verdict."""
    marker = folder / ARCHIVING_MARKER
    if not marker.is_file():
        removed = remove_stale_temps(folder)
        if not any(folder.iterdir()):
            folder.rmdir()  # an empty folder holds nothing to lose; a live claimer retries
            if removed:
                return f"removed (an interrupted write left only {len(removed)} temporary file(s))"
            return "removed (empty: a write was interrupted before its first file)"
        return "left in place (not sealed: not an archived run)"
    gone, how, pid = _archiving_writer(marker)
    if not gone:
        return f"left in place (being archived by process {pid})"
    remove_stale_temps(folder)
    entry = entries.get(folder.resolve())
    hashes = entry.get("sha256") if entry is not None else None
    if entry is not None and isinstance(hashes, Mapping) and dict(hashes) == _run_hashes(folder):
        _seal(folder, str(entry.get("run_id", "unknown")))
        return "sealed (its archive was interrupted after its index line, the files match it)"
    if how == "claimed":
        shutil.rmtree(folder)
        if entry is None:
            return "removed (its archive was interrupted before its index line)"
        return "removed (its files do not match its index line: a write lost in a crash)"
    if entry is None:
        marker.unlink(missing_ok=True)
    return (
        "left in place (an interrupted archive of the caller's folder, not archived; "
        "archive the run again)"
    )


def sweep_interrupted_runs(root: Union[str, os.PathLike]) -> List[str]:
    """Finish or remove the run folders of archives a crash interrupted.

    Looks at every unsealed folder ``<root>/*/*/*`` and, when the archive
    that was writing it is gone (see :func:`write_archived_run`'s order):

    * its index line is written and its files match the line's sha256 →
      sealed (the archive is complete);
    * a folder the archive created (``claimed``) without an index line →
      removed with its files;
    * a folder that holds only temporary files of dead writers, or nothing
      (a crash before any file was complete, or between the folder's
      creation and its marker) → emptied and removed;
    * anything else (the caller's own folders, foreign folders, live
      archives) → left in place.

    Sealed folders are never touched. Every folder looked at is reported.

    Args:
        root: Archive root.

    Returns:
        One line per unsealed folder, ``"<folder relative to root>: <what was done>"``.
    """
    root_path = Path(root)
    if not root_path.is_dir():
        return []
    folders = sorted(p for p in root_path.glob("*/*/*") if p.is_dir() and not is_sealed_dir(p))
    if not folders:
        return []
    entries = _entries_by_dir(root_path)
    report = []
    for folder in folders:
        try:
            outcome = _sweep_one(folder, entries)
        except OSError as exc:
            outcome = f"left in place (cannot clean it up: {exc})"
        line = f"{folder.relative_to(root_path).as_posix()}: {outcome}"
        logger.warning("interrupted archive %s", line)
        report.append(line)
    return report
