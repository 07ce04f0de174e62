"""Run provenance: what produced a given fit.

:func:`collect_run_provenance` is the single source of truth for "what
produced this result": the nominal reference model, the exact configuration
file (path + sha256 + curated values), software versions, the git state of
figaroh's own source checkout (see :mod:`figaroh._run.git`), the input data
files (with sha256), the physical asset identity (``robot.instance`` in the
unified config) and timestamps. The terminal report,
the HTML report, the JSON verdict and the run archive all read this one record,
so they can never disagree.

Conventions:

* **Never raises.** Every sub-lookup is best effort; a lookup that fails is
  recorded as the string ``"unavailable: <reason>"`` in its field.
* The record is strict-JSON serialisable: numpy values become Python values
  and non-finite floats (NaN, ±inf) in configuration values become ``None``
  (JSON ``null``).
* **Nothing costly at capture.** The ``software`` section (package versions,
  the git commit and dirty state from one ``git status`` subprocess in
  figaroh's checkout, host
  name) and the ``run_id`` (which quotes the short commit) are filled at the
  record's first read or serialisation: a run that is solved but never
  reported, saved or archived starts no subprocess.
* Timestamps are the run's own (``obj._run_started_at`` /
  ``obj._run_finished_at``, UTC ISO-8601); a missing one is recorded as
  ``"unavailable: ..."`` rather than faked with the wall clock.
  ``timestamps.report_generated`` is the capture time.

:func:`collect_splits` describes the training / validation data splits of a
run for ``verdict.splits`` (see :func:`figaroh._run.stages.apply_to_verdict`).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import platform
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Tuple, Union

import numpy as np

from figaroh._run import git as _git
from figaroh._run.deferred_record import DeferredRecord
from figaroh._run.naming import _safe_path_component
from figaroh.tools._timestamps import parse_time
from figaroh.tools.joint_terms import enable_keys
from figaroh.utils.fileio import file_sha256, host_name

logger = logging.getLogger(__name__)

__all__ = [
    "TASKS",
    "build_provenance_metadata",
    "collect_run_provenance",
    "collect_splits",
    "git_text",
]

#: Tasks accepted by :func:`collect_run_provenance`.
TASKS = ("identification", "calibration")

#: ``identif_config`` keys surfaced under ``config.values`` (identification).
_IDENTIFICATION_CONFIG_KEYS = (
    "robot_name",
    "active_joints",
    "ts",
    "nb_samples",
    "cut_off_frequency_butterworth",
    "filter_config",
    "is_external_wrench",
    "is_joint_torques",
    "external_wrench_offsets",
    "force_torque",
    *enable_keys(),  # the joint-term switches (has_friction, ...)
    "has_coupled_wrist",
    "wls",
    "qr_relative_tolerance",
    "torque_fit_joints",
    "reduction_ratio",
    "ratio_essential",
    "mass_load",
    "which_body_loaded",
    "physical_consistency",
    "reconstruction",
    "select_stage",
    "physical_fit",
    "validation_data_file",
    "data_files",
    "data_dir",
)

#: ``calib_config`` keys surfaced under ``config.values`` (calibration).
_CALIBRATION_CONFIG_KEYS = (
    "robot_name",
    "calib_model",
    "NbMarkers",
    "measurability",
    "start_frame",
    "end_frame",
    "free_flyer",
    "actJoint_idx",
    "NbJoint",
    "NbSample",
    "non_geom",
    "coeff_regularize",
    "outlier_eps",
    "estimation",
    "random_seed",
    "known_baseframe",
    "known_tipframe",
    "base_to_ref_frame",
    "ref_frame",
    "measurement_std",
    "eliminate_absorbed_parameters",
    "data_file",
    "validation_data_file",
    "sample_configs_file",
    "param_name",
)

_ASSET_FIELDS = ("label", "serial_number", "site", "operator")
_MAX_DIR_FILES = 500


def _unavailable(reason: Any) -> str:
    return f"unavailable: {reason}"


def _exc_reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """``getattr`` that never raises (a property that fails counts as missing)."""
    try:
        return getattr(obj, name, default)
    except Exception:  # noqa: BLE001 - provenance is best effort by contract
        return default


def _best_effort(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - never raise (documented)
        logger.warning("provenance: %s unavailable (%s)", what, _exc_reason(exc))
        return _unavailable(_exc_reason(exc))


def _json_safe(value: Any) -> Any:
    """Strict-JSON copy: numpy → Python, non-finite floats → None, others → str.

    A pending file hash (:class:`_PendingHash`, :class:`_PendingChange`) is
    kept as it is: the record's completion resolves it.
    """
    if isinstance(value, (_PendingHash, _PendingChange)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [_json_safe(v) for v in items]
    if isinstance(value, np.ndarray):
        return _json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _file_hash(path: Any) -> str:
    try:
        return file_sha256(path)
    except Exception as exc:  # noqa: BLE001
        return _unavailable(_exc_reason(exc))


def _stamp(path: Any) -> Tuple[int, int, int] | None:
    """``(size [B], mtime [ns], inode)`` of a file, or None when it cannot be read."""
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


class _PendingHash:
    """The sha256 of a file at capture time, computed when the record is first read.

    Hashing the inputs (a few MB of logs) costs milliseconds that a run which is
    never written does not need to pay. The file's size, modification time and
    inode are taken at capture; if they differ when the hash is computed, the
    content of the run is no longer on disk and the field says so
    (``"unavailable: … changed after the run …"``) instead of hashing the new
    content.
    """

    __slots__ = ("path", "stamp")

    def __init__(self, path: Any):
        self.path = path
        self.stamp = _stamp(path)

    def resolve(self) -> str:
        if self.stamp is not None and _stamp(self.path) != self.stamp:
            return _unavailable("the file changed after the run (size, mtime or inode differ)")
        return _file_hash(self.path)


class _PendingChange:
    """``modified_since_load`` of a file whose load-time hash is ``recorded``.

    Resolved with the record: ``True``/``False`` from the file's hash then, or
    the reason it cannot be hashed.
    """

    __slots__ = ("path", "recorded")

    def __init__(self, path: Any, recorded: str):
        self.path, self.recorded = path, recorded

    def resolve(self) -> Any:
        now = _file_hash(self.path)
        return now if now.startswith("unavailable") else now != self.recorded


def _resolve_pending(value: Any) -> Any:
    """``value`` with every pending hash of its dicts and lists resolved."""
    if isinstance(value, (_PendingHash, _PendingChange)):
        return value.resolve()
    if isinstance(value, dict):
        return {k: _resolve_pending(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_pending(v) for v in value]
    return value


def _run_config(obj: Any, task: str) -> Mapping[str, Any]:
    ident, calib = _get(obj, "identif_config"), _get(obj, "calib_config")
    order = (calib, ident) if task == "calibration" else (ident, calib)
    for cfg in order:
        if isinstance(cfg, Mapping) and cfg:
            return cfg
    return {}


def _model_identity(obj: Any, config: Mapping[str, Any]) -> Dict[str, Any]:
    robot = _get(obj, "robot")
    model = _get(robot, "model") if robot is not None else None
    if model is None:
        model = _get(obj, "model")
    model_name = _get(model, "name") if model is not None else None
    robot_name = model_name or config.get("robot_name") or _get(obj, "robot_name")
    record: Dict[str, Any] = {
        "robot_name": (
            str(robot_name)
            if robot_name
            else _unavailable("no robot.model.name, model.name or config robot_name")
        ),
        "model_name": str(model_name) if model_name else _unavailable("no Pinocchio model"),
    }
    for attr in ("nq", "nv", "njoints"):
        val = _get(model, attr) if model is not None else None
        if isinstance(val, (int, np.integer)):
            record[attr] = int(val)
    urdf = None
    for holder, attr in ((robot, "robot_urdf"), (robot, "urdf_path"), (obj, "urdf_path")):
        if holder is not None and _get(holder, attr):
            urdf = _get(holder, attr)
            break
    if urdf:
        record["urdf_path"] = str(urdf)
        record["urdf_sha256"] = _PendingHash(urdf)
    return record


def _asset_identity(config: Mapping[str, Any], fallback: str) -> Dict[str, Any]:
    """Physical asset identity from ``config["instance"]``.

    ``asset_id`` falls back to ``fallback`` (the robot name) with
    ``is_specified=False`` when no instance block names an asset.
    """
    inst = config.get("instance")
    if not isinstance(inst, Mapping):
        if inst not in (None, "", {}):
            logger.warning("provenance: config 'instance' is not a mapping; asset unspecified")
        inst = {}
    raw_id = inst.get("asset_id")
    specified = raw_id is not None and not isinstance(raw_id, bool) and str(raw_id).strip() != ""
    record: Dict[str, Any] = {
        "asset_id": str(raw_id).strip() if specified else fallback,
        "is_specified": bool(specified),
    }
    for key in _ASSET_FIELDS:
        record[key] = _json_safe(inst.get(key))
    for key, val in inst.items():
        if key not in record:
            record[str(key)] = _json_safe(val)
    return record


def _config_values(config: Mapping[str, Any], keys: Tuple[str, ...]) -> Dict[str, Any]:
    return {k: _json_safe(config[k]) for k in keys if k in config}


def _config_section(obj: Any, config: Mapping[str, Any], task: str) -> Dict[str, Any]:
    path = _get(obj, "_config_file_path")
    sha: _PendingHash | str
    if path:
        path_s, sha = str(path), _PendingHash(path)
    else:
        path_s = _unavailable("no _config_file_path on the run object")
        sha = _unavailable("no configuration file path")
    if task == "identification":
        values: Any = _config_values(config, _IDENTIFICATION_CONFIG_KEYS)
    elif task == "calibration":
        values = _config_values(config, _CALIBRATION_CONFIG_KEYS)
    else:
        values = _unavailable(f"unknown task {task!r} (expected one of {TASKS})")
    return {"path": path_s, "sha256": sha, "values": values}


def _dist_version(dists: Tuple[str, ...], module: str) -> str:
    import importlib.metadata  # ~30 ms of imports (email, zipfile, csv...): only when read

    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    try:
        mod = sys.modules.get(module) or importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001
        return _unavailable(f"{module} not importable ({type(exc).__name__})")
    version = getattr(mod, "__version__", None)
    return str(version) if version else _unavailable(f"{module} has no __version__")


@functools.lru_cache(maxsize=1)
def _installed_versions() -> Tuple[Tuple[str, Any], ...]:
    """Installed versions, looked up once per process (they cannot change under it)."""
    return tuple(
        {
            "python": platform.python_version(),
            "numpy": _dist_version(("numpy",), "numpy"),
            "scipy": _dist_version(("scipy",), "scipy"),
            "pinocchio": _dist_version(("pin", "pinocchio"), "pinocchio"),
            "figaroh": _dist_version(("figaroh",), "figaroh"),
            "platform": platform.platform(),
        }.items()
    )


def _software_versions() -> Dict[str, Any]:
    return dict(_installed_versions())


def _hostname() -> str:
    name = host_name()
    return name or _unavailable("empty hostname")


def _timestamp(value: Any, name: str) -> str:
    if value is None or value == "":
        return _unavailable(f"{name} not recorded")
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


# ---------------------------------------------------------------------------
# Data files
# ---------------------------------------------------------------------------


def _resolve(path: Any, base_dirs: List[Path]) -> Path:
    p = Path(os.fspath(path)).expanduser()
    if p.is_absolute():
        return p
    for base in base_dirs:
        cand = base / p
        if cand.exists():
            return cand
    return Path.cwd() / p


def _config_data_paths(config: Mapping[str, Any]) -> List[Tuple[str, str, Any]]:
    """``(role, origin, path)`` for every data path named in the config."""
    out: List[Tuple[str, str, Any]] = []
    for key, role in (
        ("data_file", "training"),
        ("validation_data_file", "validation"),
        ("sample_configs_file", "sample_configurations"),
        ("data_dir", "training"),
    ):
        val = config.get(key)
        if isinstance(val, (str, os.PathLike)) and str(val).strip() not in ("", "None"):
            out.append((role, f"config:{key}", val))
    files = config.get("data_files")
    if isinstance(files, Mapping):
        out.extend(
            ("training", f"config:data_files.{k}", v)
            for k, v in files.items()
            if isinstance(v, (str, os.PathLike)) and str(v)
        )
    elif isinstance(files, (list, tuple)):
        out.extend(
            ("training", "config:data_files", v)
            for v in files
            if isinstance(v, (str, os.PathLike)) and str(v)
        )
    return out


def _source_files(data_obj: Any) -> Dict[str, str]:
    source = _get(data_obj, "source")
    files = _get(source, "files") if source is not None else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, Mapping) else {}


class _DataFiles:
    """Accumulates the data-file entries of a run, unique per (role, resolved path)."""

    def __init__(self, bases: List[Path]) -> None:
        self.bases = bases
        self.entries: List[Dict[str, Any]] = []
        self.seen: set = set()

    def _unhashable(self, role: str, origin: str, path: Any, reason: str) -> None:
        self.entries.append(
            {"role": role, "origin": origin, "path": str(path), "sha256": _unavailable(reason)}
        )

    def add(self, role: str, origin: str, path: Any, recorded: str | None = None) -> None:
        """Add one file (hash ``recorded`` at load time, else hashed at the record's first read)."""
        try:
            resolved = _resolve(path, self.bases)
            key = (role, str(resolved.resolve()))
        except Exception as exc:  # noqa: BLE001
            self._unhashable(role, origin, path, _exc_reason(exc))
            return
        if key in self.seen:
            return
        self.seen.add(key)
        if resolved.is_dir():
            self._add_directory(role, origin, path, resolved)
            return
        entry: Dict[str, Any] = {"role": role, "origin": origin, "path": str(path)}
        if str(resolved) != str(path):
            entry["resolved"] = str(resolved)
        if recorded:
            entry["sha256"] = recorded
            entry["modified_since_load"] = _PendingChange(resolved, recorded)
        else:
            entry["sha256"] = _PendingHash(resolved)
        self.entries.append(entry)

    def _add_directory(self, role: str, origin: str, path: Any, resolved: Path) -> None:
        files = sorted(p for p in resolved.rglob("*") if p.is_file())
        if len(files) > _MAX_DIR_FILES:
            logger.warning(
                "provenance: %s holds %d files; hashing the first %d",
                resolved,
                len(files),
                _MAX_DIR_FILES,
            )
        for f in files[:_MAX_DIR_FILES]:
            self.add(role, origin, f)
        if not files:
            self._unhashable(role, origin, path, "empty directory")


def _data_files_provenance(obj: Any, config: Mapping[str, Any]) -> Dict[str, Any]:
    """Input data files with their sha256.

    Sources, in order: the ``source.files`` of ``obj.trajectory``,
    ``obj._val_trajectory``, ``obj.observations`` and ``obj._val_observations``
    (hashes frozen when the data was loaded; ``modified_since_load`` compares
    with the file now; a source with notes — how its files were read, e.g. a
    bag's topics — is listed under ``sources``), ``obj._data_path``, then the
    config keys ``data_file``,
    ``validation_data_file``, ``sample_configs_file``, ``data_dir`` and
    ``data_files`` (hashed at the record's first read, as they were at the
    capture: a file changed since then is reported as such; relative paths are resolved against the
    working directory, then the config file's folder). A directory contributes
    every regular file inside it (sorted, at most 500). Entries are unique per
    (role, resolved path).
    """
    config_path = _get(obj, "_config_file_path")
    bases = [Path.cwd()]
    if config_path:
        bases.append(Path(os.fspath(config_path)).expanduser().resolve().parent)
    files = _DataFiles(bases)
    sources: List[Dict[str, str]] = []
    for attr, role in (
        ("trajectory", "training"),
        ("_val_trajectory", "validation"),
        ("observations", "training"),
        ("_val_observations", "validation"),
    ):
        data_obj = _get(obj, attr)
        if data_obj is not None:
            for path, sha in _source_files(data_obj).items():
                files.add(role, f"{attr}.source", path, sha)
            source = _get(data_obj, "source")
            notes = str(_get(source, "notes") or "") if source is not None else ""
            if notes:  # how the files were read, e.g. a bag's topics and stamp source
                adapter = str(_get(source, "adapter") or "")
                sources.append({"role": role, "adapter": adapter, "notes": notes})
    data_path = _get(obj, "_data_path")
    if isinstance(data_path, (str, os.PathLike)) and str(data_path):
        files.add("training", "attr:_data_path", data_path)
    for role, origin, path in _config_data_paths(config):
        files.add(role, origin, path)
    return {"files": files.entries, **({"sources": sources} if sources else {})}


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def _run_asset(model: Any, config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Asset identity, falling back to the model's robot name."""
    fallback_name = model.get("robot_name") if isinstance(model, Mapping) else None
    if not isinstance(fallback_name, str) or fallback_name.startswith("unavailable"):
        fallback_name = "unknown"
    asset = _best_effort("asset identity", _asset_identity, config, str(fallback_name))
    if not isinstance(asset, Mapping):
        asset = {"asset_id": str(fallback_name), "is_specified": False, "error": asset}
    return asset


def _git_fields() -> Tuple[Any, Any]:
    """``(git_commit, git_dirty)`` of figaroh's checkout; unknown: ``"unavailable: <reason>"``.

    Outside figaroh's own source checkout no git runs and both fields read
    ``"unavailable: not a git checkout …"`` (see :mod:`figaroh._run.git`).
    """
    state = _git.worktree_state()
    commit = state.commit if state.commit else _unavailable(state.reason)
    dirty = state.dirty if state.dirty is not None else _unavailable(state.reason)
    return commit, dirty


def git_text(software: Mapping[str, Any] | None) -> str:
    """The git state of a provenance record in words, for the reports.

    ``"3f2a9c1b7d4e"`` (12 characters of the commit), ``"3f2a9c1b7d4e
    (uncommitted changes)"``, ``"not a git checkout (figaroh is not run from
    its source repository)"`` (an installed package: the usual case), or
    ``"unknown (<reason>)"`` when git could not tell (not installed, timed out).

    Args:
        software: The record's ``software`` section (``git_commit``, ``git_dirty``).
    """
    software = software if isinstance(software, Mapping) else {}
    commit = software.get("git_commit")
    text = str(commit) if commit else ""
    if re.fullmatch(r"[0-9a-f]{7,64}", text):
        dirty = " (uncommitted changes)" if software.get("git_dirty") is True else ""
        return text[:12] + dirty
    reason = text[len("unavailable: ") :] if text.startswith("unavailable: ") else text
    if _git.NOT_A_CHECKOUT in reason or "not a git repository" in reason.lower():
        return _git.NOT_A_CHECKOUT
    if reason in ("", "unknown", "unavailable", "not_found"):
        return "unknown"
    return f"unknown ({reason})"


def _software_section() -> Dict[str, Any]:
    """Software versions, git commit and dirty state of figaroh's checkout, host name."""
    software: Dict[str, Any] = {}
    versions = _best_effort("software versions", _software_versions)
    if isinstance(versions, Mapping):
        software.update(versions)
    else:
        software["versions"] = versions
    fields = _best_effort("git state", _git_fields)
    commit, dirty = fields if isinstance(fields, tuple) else (fields, fields)
    software["git_commit"] = commit
    software["git_dirty"] = dirty
    software["hostname"] = _best_effort("hostname", _hostname)
    return _json_safe(software)


def _timestamps_section(obj: Any, now: datetime) -> Dict[str, Any]:
    """Run start / end as recorded by the run, and the capture time ``now``."""
    return {
        "run_started": _best_effort(
            "run start", _timestamp, _get(obj, "_run_started_at"), "_run_started_at"
        ),
        "run_finished": _best_effort(
            "run end", _timestamp, _get(obj, "_run_finished_at"), "_run_finished_at"
        ),
        "report_generated": now.isoformat(),
    }


def _run_id(
    asset: Mapping[str, Any],
    task_name: str,
    timestamps: Mapping[str, Any],
    git_commit: Any,
    now: datetime,
) -> str:
    """``<asset>_<task>_<YYYYmmddTHHMMSSZ>_<git8|nogit>`` (each part a safe component)."""
    stamp = (
        parse_time(timestamps.get("run_finished"))
        or parse_time(timestamps.get("run_started"))
        or now
    )
    git_short = (
        git_commit[:8]
        if isinstance(git_commit, str) and re.fullmatch(r"[0-9a-f]{7,64}", git_commit)
        else "nogit"
    )
    return "_".join(
        [
            _safe_path_component(asset.get("asset_id", "unknown")),
            _safe_path_component(task_name),
            stamp.strftime("%Y%m%dT%H%M%SZ"),
            git_short,
        ]
    )


#: Top-level keys of a provenance record, in order.
_RECORD_KEYS = ("run_id", "task", "asset", "model", "config", "software", "data", "timestamps")


def _complete_record(fields: Dict[str, Any], *, task: str, now: datetime) -> Dict[str, Any]:
    """The record with its ``software`` section and ``run_id``, keys in :data:`_RECORD_KEYS` order.

    Args:
        fields: The sections captured by :func:`collect_run_provenance`.
        task: Task name of the run id.
        now: Capture time (the run id's fallback timestamp).
    """
    current = _resolve_pending(dict(fields))
    current["software"] = software = _software_section()
    asset, stamps = current.get("asset"), current.get("timestamps")
    current["run_id"] = _run_id(
        asset if isinstance(asset, Mapping) else {},
        task,
        stamps if isinstance(stamps, Mapping) else {},
        software["git_commit"],
        now,
    )
    filled = {k: current.pop(k) for k in _RECORD_KEYS if k in current}
    filled.update(current)
    return filled


def collect_run_provenance(obj: Any, task: str) -> Dict[str, Any]:
    """Build the full provenance record of one calibration/identification run.

    Reads (duck-typed, every attribute optional): ``identif_config`` /
    ``calib_config`` (``instance``, ``robot_name``, data-file keys, curated
    values), ``_config_file_path``, ``robot.model`` / ``model`` (name, nq, nv),
    ``robot.robot_urdf``, ``trajectory`` / ``_val_trajectory`` /
    ``observations`` / ``_val_observations`` (``source.files``), ``_data_path``,
    ``_run_started_at`` and ``_run_finished_at``. The ``software`` section
    (versions, git commit and dirty state, host name) and ``run_id`` are
    filled at the record's first read or serialisation (see
    :class:`~figaroh._run.deferred_record.DeferredRecord`), with one ``git
    status`` run in figaroh's own source checkout (never in the working
    directory or the data folder, and with the repository's fsmonitor and
    hooks off; outside a checkout no git runs and the git fields read
    ``"unavailable: not a git checkout …"``): capturing the
    record at the end of ``solve()`` starts no subprocess, and a run that is
    never written never queries git. The sha256 of the config, URDF and data
    files are computed then too, from the files as they were at the capture
    (size, modification time and inode recorded then; a file changed in
    between gets ``"unavailable: the file changed after the run …"``).

    Args:
        obj: A ``BaseIdentification`` or ``BaseCalibration`` instance (or a
            duck-typed equivalent) after its config has been loaded; normally
            captured once right after ``solve()`` finished.
        task: ``"identification"`` or ``"calibration"`` — selects the curated
            config-key allowlist surfaced under ``config.values``.

    Returns:
        A :class:`~figaroh._run.deferred_record.DeferredRecord` (a ``dict``),
        strict-JSON serialisable,
        with keys ``run_id``, ``task``, ``asset`` (``asset_id``,
        ``is_specified``, ``label``, …), ``model`` (``robot_name``,
        ``model_name``, …), ``config`` (``path``, ``sha256``, ``values``),
        ``software`` (``python``, ``numpy``, ``scipy``, ``pinocchio``,
        ``figaroh``, ``platform``, ``git_commit``, ``git_dirty``,
        ``hostname``), ``data`` (``files``: list of ``{role, origin, path,
        sha256, ...}``) and ``timestamps`` (``run_started``,
        ``run_finished``, ``report_generated``). Never raises: a failed
        lookup is the string ``"unavailable: <reason>"``.
    """
    task_s = str(task)
    if task_s not in TASKS:
        logger.warning("collect_run_provenance: unknown task %r (expected one of %s)", task, TASKS)
    now = datetime.now(timezone.utc)
    config = _best_effort("config", _run_config, obj, task_s)
    if not isinstance(config, Mapping):
        config = {}
    model = _best_effort("model identity", _model_identity, obj, config)
    record = {
        "task": task_s,
        "asset": _run_asset(model, config),
        "model": model,
        "config": _best_effort("config section", _config_section, obj, config, task_s),
        "data": _best_effort("data files", _data_files_provenance, obj, config),
        "timestamps": _timestamps_section(obj, now),
    }
    complete = functools.partial(_complete_record, task=task_s, now=now)
    return DeferredRecord(_json_safe(record), complete)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if (
        isinstance(value, (float, np.floating))
        and math.isfinite(value)
        and float(value).is_integer()
    ):
        return int(value)
    return None


def _masked_count(mask: Any) -> int:
    if mask is None:
        return 0
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise ValueError(f"sample mask must be boolean, got dtype {arr.dtype}")
    return int((~arr).sum())


def _split_record(data_obj: Any, mask: Any, samples: Any) -> Dict[str, Any]:
    source = _get(data_obj, "source") if data_obj is not None else None
    session = _get(source, "session") if source is not None else None
    n = _int_or_none(samples)
    if n is None and data_obj is not None:
        n = _int_or_none(_get(data_obj, "n_samples"))
    notes = str(_get(source, "notes") or "") if source is not None else ""
    return {
        **({"notes": notes} if notes else {}),  # e.g. a bag's topics and stamp source
        "adapter": str(_get(source, "adapter") or "") if source is not None else "",
        "files": _source_files(data_obj) if data_obj is not None else {},
        "masked_samples": _masked_count(mask),
        "samples": n,
        "session": (
            {"id": str(_get(session, "id")), "date": _get(session, "date")}
            if session is not None
            else None
        ),
    }


def _collect_splits(obj: Any) -> Dict[str, Any]:
    trajectory = _get(obj, "trajectory")
    if trajectory is not None or _get(obj, "observations") is None:
        data_obj = trajectory
        mask = _get(obj, "_sample_mask")
        samples = _get(obj, "num_samples")
    else:
        data_obj = _get(obj, "observations")
        mask = _get(data_obj, "mask")
        samples = _get(data_obj, "n_samples")
        if samples is None:
            samples = (_get(obj, "calib_config") or {}).get("NbSample")
    training = _split_record(data_obj, mask, samples)

    validation = None
    if bool(_get(obj, "_val_available", False)):
        val_obj = _get(obj, "_val_trajectory")
        if val_obj is None:
            val_obj = _get(obj, "_val_observations")
        val_mask = _get(obj, "_val_sample_mask")
        if val_mask is None and val_obj is not None and _get(obj, "_val_trajectory") is None:
            val_mask = _get(val_obj, "mask")
        val_samples = _get(obj, "_val_num_samples")
        if val_samples is None and _get(obj, "_q_val") is not None:
            val_samples = len(_get(obj, "_q_val"))
        validation = _split_record(val_obj, val_mask, val_samples)
    if validation is None:
        source = "training_fallback"
    elif bool(_get(obj, "_val_duplicate", False)):
        source = "duplicates_training"
    else:
        source = "held_out"
    return {"training": training, "validation": validation, "validation_source": source}


def collect_splits(obj: Any) -> Dict[str, Any]:
    """Training / validation split provenance of a run (for ``verdict.splits``).

    Layout (no held-out data)::

        {"training": {"adapter": "", "files": {}, "masked_samples": 0,
                      "samples": 400, "session": None},
         "validation": None,
         "validation_source": "training_fallback"}

    ``adapter``/``files``/``session`` come from the ``source`` of
    ``obj.trajectory`` (identification) or ``obj.observations`` (calibration);
    ``samples`` is ``obj.num_samples`` (identification) or the observation
    count; ``masked_samples`` counts False entries of ``obj._sample_mask``
    (or of the observations' mask). When held-out data was loaded
    (``obj._val_available``) ``validation`` is the same record built from
    ``_val_trajectory`` / ``_val_observations`` (samples ``_val_num_samples``,
    mask ``_val_sample_mask``) and ``validation_source`` is ``"held_out"``, or
    ``"duplicates_training"`` when the data checks found the held-out samples
    identical to (or a contiguous block of) the training samples
    (``obj._val_duplicate``): such validation is never independent.

    Args:
        obj: The run object (duck-typed).

    Returns:
        The split record; never raises (a failure gives
        ``{"training": None, "validation": None, "validation_source": "unavailable: ..."}``).
    """
    try:
        return _json_safe(_collect_splits(obj))
    except Exception as exc:  # noqa: BLE001 - verdict building must not fail here
        logger.warning("collect_splits failed: %s", _exc_reason(exc))
        return {
            "training": None,
            "validation": None,
            "validation_source": _unavailable(_exc_reason(exc)),
        }


def _config_file_sha256(path: Union[str, os.PathLike] | None) -> str:
    """sha256 of a file's bytes, ``"unknown"`` for an empty path or any failure."""
    if not path:
        return "unknown"
    try:
        return file_sha256(path)
    except (OSError, TypeError, ValueError):
        return "unknown"


def build_provenance_metadata(config_file_path: str | None, robot_name: str) -> Dict[str, str]:
    """Minimal provenance for a verdict (older API; see ``collect_run_provenance``).

    Args:
        config_file_path: Path of the configuration file, or None.
        robot_name: Robot/model name.

    Returns:
        ``{"git_commit", "config_sha256", "timestamp" (UTC ISO-8601), "robot_name"}``.
    """
    return {
        "git_commit": _git._git_commit_hash(),
        "config_sha256": _config_file_sha256(config_file_path),
        "timestamp": datetime.now(timezone.utc).isoformat(),
        "robot_name": str(robot_name),
    }
