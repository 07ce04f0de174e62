"""Fleet jobs: what one task of a batch computes, and the batch YAML that lists them.

A :class:`Job` is a frozen, picklable description of one independent
computation — an identification, a calibration, one optimal-trajectory
restart or one Monte-Carlo replicate — on the files of one robot and session.
Its :attr:`Job.job_id` names the computation by its inputs:

.. math::

    \\text{job\\_id} = \\operatorname{sha256}\\big(J \\,\\|\\, h(\\text{config})
    \\,\\|\\, h(\\text{urdf}) \\,\\|\\, h(\\text{data})
    \\,\\|\\, h(\\text{validation})\\big)_{[0:16]}

with ``J`` the canonical JSON (sorted keys, no spaces) of ``kind``,
``robot_id``, ``session``, ``seed`` and ``options``, and ``h`` the sha256 of a
file's bytes (a folder: of every file in it, by sorted relative path). The
same inputs give the same id, a changed byte of the data a new one; the run
index keeps one run per id, so re-running a batch skips what already ran.
``session_time`` is metadata of the run (the time axis of the drift report)
and not part of the id; nor are ``tags``, free-form text labels of the robot
(production line, firmware, site ...) that the run index stores with every run
and every failure of the job.

Batch YAML (read by :func:`load_batch`; relative paths resolve beside it)::

    tags: {site: lyon}        # optional, merged under every job's tags
    defaults:                 # optional, merged under every job
      kind: identification
      config: ur10_fleet.yaml
      urdf: ur10              # a URDF path or a robot name (figaroh robots)
    matrix:                   # optional: every job × every combination
      seed: [0, 1, 2]         # a Job field, or options.<key>
    jobs:
      - robot_id: robot_00
        session: s00
        session_time: "2026-03-01T02:00:00Z"
        data: logs/robot_00/s00
        tags: {line: L4, firmware: "3.10"}   # a job's tags win over the batch's
      - {kind: monte_carlo, robot_id: robot_00, data: logs/robot_00/s00,
         seed: 7, options: {noise_std: 0.5}}

Job kinds (:data:`JOB_KINDS`) and their fields:

==================  =============================================================
``identification``  ``config``, ``urdf``, ``data`` (CSV or folder), ``validation``
``calibration``     ``config``, ``urdf``, ``data`` (pose CSV), ``validation``
``monte_carlo``     as identification, plus ``seed`` and ``options.noise_std`` [N·m]
``trajectory``      ``config``, ``urdf``, ``seed`` (one IPOPT restart)
==================  =============================================================
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple

from figaroh.errors import FigarohError
from figaroh.fleet.record import RunRecordError, check_tags
from figaroh.tools._timestamps import parse_time
from figaroh.tools.robot_paths import resolve_robot_urdf
from figaroh.utils.fileio import file_sha256
from figaroh.utils.yaml_budget import load_yaml_file

__all__ = [
    "JOB_FIELDS",
    "JOB_KINDS",
    "FleetConfigError",
    "Job",
    "dedupe_jobs",
    "input_files",
    "input_hashes",
    "job_input_hashes",
    "load_batch",
]

#: The kinds of job a batch may hold.
JOB_KINDS = ("identification", "calibration", "trajectory", "monte_carlo")
#: Fields of a job entry in a batch YAML.
JOB_FIELDS = (
    "kind",
    "robot_id",
    "config",
    "data",
    "urdf",
    "session",
    "session_time",
    "seed",
    "validation",
    "options",
    "tags",
)
_PATH_FIELDS = ("config", "data", "urdf", "validation")
_NEEDS_DATA = ("identification", "calibration", "monte_carlo")
_ID_LENGTH = 16


class FleetConfigError(FigarohError, ValueError):
    """A job or a batch YAML is malformed; the message names the job, the field and the fix."""


def _canonical_options(options: Any) -> Dict[str, Any]:
    """``options`` as a plain dict of JSON values (a JSON round trip), or FleetConfigError."""
    if not isinstance(options, Mapping):
        raise FleetConfigError(
            f"options must be a mapping of option name to value, got {type(options).__name__}"
        )
    try:
        text = json.dumps(dict(options), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise FleetConfigError(
            f"options must hold JSON values (numbers, text, lists, mappings): {exc}"
        ) from None
    return json.loads(text)


def _canonical_tags(tags: Any) -> Dict[str, str]:
    """``tags`` as a sorted dict of text; an integer value (``line: 4``) becomes its text."""
    if isinstance(tags, Mapping):
        tags = {
            k: str(v) if isinstance(v, int) and not isinstance(v, bool) else v
            for k, v in tags.items()
        }
    try:
        return check_tags(tags)
    except RunRecordError as exc:
        raise FleetConfigError(str(exc)) from None


def _check_text(name: str, value: Any, required: bool) -> None:
    if value is None and not required:
        return
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise FleetConfigError(f"{name} must be a non-empty text, got {value!r}")


def _rebuild_job(fields: Dict[str, Any], job_id: str | None) -> Job:
    job = Job(**fields)
    if job_id is not None:
        job.__dict__["_job_id"] = job_id
    return job


@dataclasses.dataclass(frozen=True, eq=False)
class Job:
    """One independent computation of a batch.

    Attributes:
        kind: One of :data:`JOB_KINDS`.
        robot_id: The robot (asset) the run belongs to.
        config: Unified configuration YAML.
        data: Training data (CSV file or folder; identification, calibration,
            Monte-Carlo).
        urdf: Robot URDF file.
        session: Name of the session (e.g. one night of a robot).
        session_time: ISO-8601 time of the session (None: the run's finish time).
        seed: Random seed (Monte-Carlo noise, trajectory start).
        validation: Held-out data (CSV file or folder).
        options: Kind-specific settings (JSON values), e.g. ``noise_std`` [N·m]
            of a Monte-Carlo replicate. Stored as a plain dict; do not mutate.
        tags: Free-form labels of the robot (``{"line": "L4", "firmware": "3.10"}``),
            text → text; stored with the job's run or failure, not part of
            :attr:`job_id`.

    Two jobs are equal when their fields are; :attr:`job_id` also hashes the
    files' bytes (not the tags).
    """

    kind: str
    robot_id: str
    config: str
    data: str | None = None
    urdf: str | None = None
    session: str = "session"
    session_time: str | None = None
    seed: int | None = None
    validation: str | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in JOB_KINDS:
            raise FleetConfigError(f"kind must be one of {', '.join(JOB_KINDS)}, got {self.kind!r}")
        _check_text("robot_id", self.robot_id, True)
        _check_text("session", self.session, True)
        _check_text("config", self.config, True)
        for name in ("data", "urdf", "validation"):
            _check_text(name, getattr(self, name), False)
            if getattr(self, name) is not None:
                object.__setattr__(self, name, str(getattr(self, name)))
        object.__setattr__(self, "config", str(self.config))
        if self.urdf is None:
            raise FleetConfigError(
                f"a {self.kind} job needs urdf: the robot's URDF file (in a batch YAML also "
                "a robot name such as ur10, see figaroh robots)"
            )
        if self.kind in _NEEDS_DATA and self.data is None:
            raise FleetConfigError(f"a {self.kind} job needs data: the CSV file or folder to fit")
        seed = self.seed
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise FleetConfigError(f"seed must be an integer, got {self.seed!r}")
        if self.session_time is not None and parse_time(self.session_time) is None:
            raise FleetConfigError(
                f"session_time must be an ISO-8601 time such as 2026-03-01T02:00:00Z, "
                f"got {self.session_time!r}"
            )
        object.__setattr__(self, "options", _canonical_options(self.options))
        object.__setattr__(self, "tags", _canonical_tags(self.tags))
        if self.kind == "monte_carlo":
            _check_monte_carlo(self)

    def spec(self) -> Dict[str, Any]:
        """The fields that name the computation besides the files (hashed into :attr:`job_id`)."""
        return {
            "kind": self.kind,
            "robot_id": self.robot_id,
            "session": self.session,
            "seed": self.seed,
            "options": dict(self.options),
        }

    def fields(self) -> Dict[str, Any]:
        """Every field as a plain dict (the keyword arguments that rebuild the job)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["options"] = dict(self.options)
        out["tags"] = dict(self.tags)
        return out

    @property
    def job_id(self) -> str:
        """16 hex characters of the sha256 of the spec and the input files' bytes (cached).

        Raises:
            FleetConfigError: an input file is missing or unreadable.
        """
        cached = self.__dict__.get("_job_id")
        if cached is None:
            digest = hashlib.sha256(
                json.dumps(self.spec(), sort_keys=True, separators=(",", ":")).encode()
            )
            for role, hashes in job_input_hashes(self).items():
                for name, value in sorted(hashes.items()):
                    digest.update(f"\n{role}:{name}:{value}".encode())
            cached = digest.hexdigest()[:_ID_LENGTH]
            self.__dict__["_job_id"] = cached
        return cached

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Job) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(json.dumps(self.fields(), sort_keys=True, default=str))

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_rebuild_job, (self.fields(), self.__dict__.get("_job_id")))

    def __repr__(self) -> str:
        return (
            f"Job(kind={self.kind!r}, robot_id={self.robot_id!r}, session={self.session!r}, "
            f"seed={self.seed!r}, data={self.data!r})"
        )


def _check_monte_carlo(job: Job) -> None:
    if job.seed is None:
        raise FleetConfigError("a monte_carlo job needs seed: the integer seed of its noise")
    noise = job.options.get("noise_std")
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not math.isfinite(noise):
        raise FleetConfigError(
            "a monte_carlo job needs options.noise_std: the torque noise standard "
            f"deviation [N·m] (a number ≥ 0), got {noise!r}"
        )
    if noise < 0:
        raise FleetConfigError(f"options.noise_std must be ≥ 0 [N·m], got {noise!r}")


def input_files(path: Path) -> List[Tuple[str, Path]]:
    """The files of one input path, by name: a file as its name, a folder as every file in it.

    A folder's files are named by their POSIX path relative to the folder,
    sorted; these are the keys of :func:`input_hashes`.

    Raises:
        OSError: the path cannot be listed.
    """
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        return [(p.relative_to(path).as_posix(), p) for p in files]
    return [(path.name, path)]


def _file_hashes(path: Path, what: str) -> Dict[str, str]:
    """``{name: sha256}`` of a file (its name) or of every file in a folder (relative paths)."""
    try:
        return {name: file_sha256(p) for name, p in input_files(path)}
    except OSError as exc:
        raise FleetConfigError(
            f"cannot read the {what} {path}: {exc.strerror or exc}; check the path of the job"
        ) from None


def input_hashes(job: Job) -> Dict[str, Dict[str, str]]:
    """sha256 of every input file of ``job`` by role (config, urdf, data, validation).

    Raises:
        FleetConfigError: a file is missing or unreadable.
    """
    out: Dict[str, Dict[str, str]] = {}
    for role in _PATH_FIELDS:
        value = getattr(job, role)
        if value is not None:
            out[role] = _file_hashes(Path(value), role)
    return out


def job_input_hashes(job: Job) -> Dict[str, Dict[str, str]]:
    """The input hashes :attr:`Job.job_id` is computed from (:func:`input_hashes`, read once).

    The first call (or the first :attr:`Job.job_id`) hashes the files and
    keeps the result on the job, so the hashes a driver sends with a task are
    those that named the job, even when a file changes afterwards. A job
    rebuilt from a pickle hashes its files anew.

    Returns:
        A fresh ``{role: {file name: sha256 hex}}`` dict.

    Raises:
        FleetConfigError: a file is missing or unreadable.
    """
    cached = job.__dict__.get("_input_hashes")
    if cached is None:
        cached = input_hashes(job)
        job.__dict__["_input_hashes"] = cached
    return {role: dict(hashes) for role, hashes in cached.items()}


def dedupe_jobs(jobs: Sequence[Job]) -> Tuple[List[Job], List[Job]]:
    """Split ``jobs`` into the first job of each :attr:`Job.job_id` and the repeats.

    Returns:
        ``(unique, repeats)``, both in batch order.
    """
    seen: set[str] = set()
    unique: List[Job] = []
    repeats: List[Job] = []
    for job in jobs:
        (repeats if job.job_id in seen else unique).append(job)
        seen.add(job.job_id)
    return unique, repeats


# ---------------------------------------------------------------------------
# batch YAML
# ---------------------------------------------------------------------------
def _resolve_path(field: str, value: Any, base: Path) -> Any:
    """A relative path resolved beside the batch YAML; an unknown URDF name as a robot name."""
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        return value
    path = Path(os.path.expanduser(str(value)))
    if path.is_absolute():
        return str(path)
    beside = base / path
    if beside.exists() or field != "urdf":
        return str(beside)
    try:
        return str(resolve_robot_urdf(str(value)))
    except (OSError, ValueError, LookupError):
        return str(beside)  # reported as a missing file below


def _matrix(data: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The combinations of ``matrix`` (``[{}]`` without one)."""
    matrix = data.get("matrix") or {}
    if not isinstance(matrix, Mapping) or not all(
        isinstance(v, list) and v for v in matrix.values()
    ):
        raise FleetConfigError(
            "matrix must map a job field (or options.<key>) to a non-empty list of values, "
            f"e.g. matrix: {{seed: [0, 1, 2]}}; got {matrix!r}"
        )
    for key in matrix:
        if key not in JOB_FIELDS and not str(key).startswith("options."):
            raise FleetConfigError(
                f"matrix key {key!r} is not a job field; use one of {', '.join(JOB_FIELDS)} "
                "or options.<key>"
            )
    keys = list(matrix)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*matrix.values())]


def _apply(entry: Dict[str, Any], combo: Mapping[str, Any]) -> Dict[str, Any]:
    out = dict(entry)
    options = dict(out.get("options") or {})
    for key, value in combo.items():
        if key.startswith("options."):
            options[key[len("options.") :]] = value
        else:
            out[key] = value
    if options or "options" in out:
        out["options"] = options
    return out


def _entries(data: Any, source: Path) -> Iterator[Dict[str, Any]]:
    if not isinstance(data, Mapping) or not isinstance(data.get("jobs"), list):
        raise FleetConfigError(
            f"{source}: a batch YAML is a mapping with a 'jobs' list (and optional "
            "'defaults' and 'matrix' mappings)"
        )
    unknown = sorted(set(data) - {"jobs", "defaults", "matrix", "tags"})
    if unknown:
        raise FleetConfigError(
            f"{source}: unknown top-level key(s) {unknown}; use jobs, defaults, matrix and tags"
        )
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise FleetConfigError(f"{source}: defaults must be a mapping of job fields")
    batch_tags = data.get("tags") or {}
    if not isinstance(batch_tags, Mapping):
        raise FleetConfigError(
            f"{source}: tags must map a tag name to a text value, e.g. tags: {{site: lyon}}"
        )
    for k, entry in enumerate(data["jobs"]):
        if not isinstance(entry, Mapping):
            raise FleetConfigError(f"{source}: job {k} must be a mapping of job fields")
        merged = {**defaults, **entry}
        base_options, options = defaults.get("options"), entry.get("options")
        if isinstance(base_options, Mapping) and isinstance(options, Mapping):
            merged["options"] = {**base_options, **options}
        tags = [batch_tags, defaults.get("tags") or {}, entry.get("tags") or {}]
        if all(isinstance(t, Mapping) for t in tags):
            merged["tags"] = {key: value for t in tags for key, value in t.items()}
        merged["_index"] = k
        yield merged


def _check_fields(entry: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(entry) - set(JOB_FIELDS))
    if unknown:
        raise FleetConfigError(
            f"{where}: unknown field(s) {unknown}; a job has {', '.join(JOB_FIELDS)}"
        )
    for field in ("kind", "robot_id", "config"):
        if field not in entry:
            raise FleetConfigError(
                f"{where}: missing field {field!r}; set it in the job or in defaults"
            )


def _normalised(entry: Dict[str, Any], base: Path) -> Dict[str, Any]:
    """Paths resolved beside the YAML; a numeric robot id or session as text."""
    for field in _PATH_FIELDS:
        if entry.get(field) is not None:
            entry[field] = _resolve_path(field, entry[field], base)
    for field in ("robot_id", "session"):
        if isinstance(entry.get(field), (int, float)) and not isinstance(entry[field], bool):
            entry[field] = str(entry[field])
    return entry


def _job_of(entry: Dict[str, Any], base: Path, source: Path) -> Job:
    k = entry.pop("_index")
    where = f"{source}: job {k}" + (f" ({entry['robot_id']})" if "robot_id" in entry else "")
    _check_fields(entry, where)
    try:
        job = Job(**_normalised(entry, base))
    except FleetConfigError as exc:
        raise FleetConfigError(f"{where}: {exc}") from None
    for field in _PATH_FIELDS:
        value = getattr(job, field)
        if value is not None and not Path(value).exists():
            raise FleetConfigError(f"{where}: {field} {value} does not exist; fix the path")
    return job


def load_batch(path: str | os.PathLike) -> List[Job]:
    """The jobs of a batch YAML (see the module docstring for the layout).

    Each job entry is merged over ``defaults`` (``options`` merged key by key;
    ``tags`` key by key over the batch's top-level ``tags``, then the defaults')
    and expanded over every combination of ``matrix``; relative paths resolve
    beside the YAML file, a ``urdf`` that is no file there may be a robot name.

    Args:
        path: The batch YAML file.

    Returns:
        The jobs, in file order (matrix combinations inner).

    Raises:
        FleetConfigError: unreadable or malformed YAML, an unknown or invalid
            field, a missing input file (the message names the job index,
            the field and the fix).
    """
    source = Path(path)
    try:
        data = load_yaml_file(source)
    except OSError as exc:
        raise FleetConfigError(f"cannot read the batch {source}: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - yaml errors and the node budget
        raise FleetConfigError(f"{source}: invalid batch YAML: {exc}") from None
    base = source.resolve().parent
    combos = _matrix(data) if isinstance(data, Mapping) else [{}]
    jobs = []
    for entry in _entries(data, source):
        for combo in combos:
            jobs.append(_job_of(_apply(entry, combo), base, source))
    if not jobs:
        raise FleetConfigError(f"{source}: the batch has no job; list them under 'jobs'")
    return jobs
