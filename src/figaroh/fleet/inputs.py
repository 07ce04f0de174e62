"""The input files of a fleet job: hashed by the driver, verified where they are read.

A :class:`~figaroh.fleet.jobs.Job` names its inputs by path (``config``,
``urdf``, ``data``, ``validation``) and its :attr:`~figaroh.fleet.jobs.Job.job_id`
hashes their bytes on the driver:
``h_{role}(name) = sha256(bytes of the file)`` for each file (a folder: each
file in it, by POSIX path relative to the folder;
:func:`figaroh.fleet.jobs.job_input_hashes`). A worker on another machine may
see other bytes at the same path (a stale copy) or none at all. So a task
carries those hashes (:class:`TaskInputs`, built by :func:`task_inputs` on
the driver) and the worker, in :func:`local_inputs`:

1. reads every input file **once**, in 1 MiB blocks, hashing the bytes while
   it copies them into a private temporary folder;
2. compares each hash with the job's: a difference (or a file missing from,
   or added to, a data folder) raises :class:`InputMismatchError` naming the
   host, the role, the path and both sha256; an input it cannot read raises
   :class:`InputUnavailableError` naming the host and the path;
3. runs the job on the private copy — exactly the bytes it hashed, whatever
   happens to the shared files meanwhile — and removes the folder.

With ``ship`` (``figaroh fleet run --ship-inputs``) the driver reads the
bytes instead and the task carries them; the worker writes them into the
private folder after the same check, so workers need no shared file system
(each task then moves its input bytes through the Dask scheduler: a
2 000-sample identification log is 0.76 MB).

The private copy mirrors each input's absolute path below the temporary
folder (``/data/fleet/ur10.yaml`` → ``<tmp>/data/fleet/ur10.yaml``), so the
inputs keep their relative layout; the paths a run records (provenance,
verdict) are mapped back to the job's own paths by
:meth:`LocalInputs.restore_paths`. A job reads its inputs only: a file its
configuration names besides them (e.g. ``data.validation_data_file``) is not
copied — give it as the job's ``validation`` instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import os
import socket
import tempfile
import warnings
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, Iterator, List, Mapping, Tuple

from figaroh.errors import FigarohError
from figaroh.fleet.jobs import FleetConfigError, Job, input_files, job_input_hashes
from figaroh.utils.error_handling import ConfigurationError
from figaroh.utils.unified_config import PACKAGED_TEMPLATES_DIR, UnifiedConfigParser

logger = logging.getLogger(__name__)

__all__ = [
    "INPUT_ROLES",
    "TEMPLATE_ROLE",
    "InputMismatchError",
    "InputUnavailableError",
    "LocalInputs",
    "TaskInputs",
    "config_templates",
    "local_inputs",
    "task_inputs",
    "worker_host",
]

#: The job fields that name input files, in the order they are read.
INPUT_ROLES = ("config", "urdf", "data", "validation")
#: The role named in errors about a template of the configuration's ``extends`` chain.
TEMPLATE_ROLE = "config template"
_BLOCK = 1 << 20  # bytes read at a time [B]
_ABSENT = "none (no such file)"
_EXTRA = "none (not an input of the job)"


class InputMismatchError(FleetConfigError):
    """The bytes read for an input differ from those the job was built from.

    The message names the host that read them, the role, the path, the job's
    sha256 and the sha256 found. Not retried: the input is wrong there.

    Attributes:
        host: Host name of the process that read the input.
        role: ``config``, ``urdf``, ``data`` or ``validation``.
        path: The file that differs.
    """

    def __init__(self, message: str, *, host: str = "", role: str = "", path: str = "") -> None:
        super().__init__(message)
        self.host, self.role, self.path = host, role, path


class InputUnavailableError(FigarohError, OSError):
    """A worker cannot read an input path; the message names the host and the path.

    The driver resubmits the job to another worker before it records a failure.

    Attributes:
        host: Host name of the process that could not read it.
        role: ``config``, ``urdf``, ``data`` or ``validation``.
        path: The path.
    """

    def __init__(self, message: str, *, host: str = "", role: str = "", path: str = "") -> None:
        super().__init__(message)
        self.host, self.role, self.path = host, role, path


def worker_host() -> str:
    """The host name of this process (``socket.gethostname()``), as failures name it."""
    return socket.gethostname()


@dataclasses.dataclass(frozen=True)
class TaskInputs:
    """What a task carries about its job's inputs.

    Attributes:
        hashes: The driver's ``{role: {file name: sha256 hex}}``
            (:func:`figaroh.fleet.jobs.job_input_hashes`).
        folders: Roles whose path is a folder (needed to lay out shipped bytes).
        contents: ``{role: {file name: bytes}}`` when the bytes are shipped
            with the task, else None (the worker reads the paths).
        origins: ``{role: real path on the driver}`` of shipped inputs
            (what the run records as their paths; a relative job path means
            the driver's file, not one beside the worker's directory).
        templates: ``{real path on the driver: sha256 hex}`` of the
            templates the configuration's ``extends`` chain loads
            (:func:`config_templates`; not part of the job id).
        template_contents: ``{real path: bytes}`` of those templates when
            the bytes are shipped.
    """

    hashes: Mapping[str, Mapping[str, str]]
    folders: FrozenSet[str] = frozenset()
    contents: Mapping[str, Mapping[str, bytes]] | None = None
    origins: Mapping[str, str] = dataclasses.field(default_factory=dict)
    templates: Mapping[str, str] = dataclasses.field(default_factory=dict)
    template_contents: Mapping[str, bytes] | None = None

    @property
    def shipped(self) -> bool:
        """Whether the task carries the input bytes."""
        return self.contents is not None

    @property
    def nbytes(self) -> int:
        """Bytes shipped with the task [B] (0 when the worker reads the paths)."""
        if self.contents is None:
            return 0
        templates = sum(len(b) for b in (self.template_contents or {}).values())
        return templates + sum(len(b) for files in self.contents.values() for b in files.values())


def config_templates(config: str | os.PathLike) -> Tuple[str, ...]:
    """Real paths of the template files a configuration's ``extends`` chain loads.

    The templates shipped inside figaroh are left out (every host has those
    of its installed version). A file that does not parse as a unified
    configuration (a legacy layout, a broken file) has none here: the job
    itself reports what is wrong with it.

    Args:
        config: The configuration file.

    Returns:
        The templates' real paths, sorted.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the job warns about its configuration itself
            parser = UnifiedConfigParser(config)
            parser.parse()
    except ConfigurationError:
        return ()
    packaged = PACKAGED_TEMPLATES_DIR.resolve()
    return tuple(
        sorted(str(p) for p in parser.template_cache if not Path(p).is_relative_to(packaged))
    )


@functools.lru_cache(maxsize=256)
def _driver_templates(config: str, sha256: str) -> Tuple[str, ...]:
    """:func:`config_templates` of one configuration version (one parse per batch, not per job)."""
    return config_templates(config)


def _job_paths(job: Job) -> List[Tuple[str, str]]:
    """``(role, path)`` of each input the job names, in :data:`INPUT_ROLES` order."""
    return [(role, getattr(job, role)) for role in INPUT_ROLES if getattr(job, role) is not None]


def _unavailable(
    host: str, role: str, path: str | os.PathLike, exc: OSError
) -> InputUnavailableError:
    reason = exc.strerror or str(exc) or type(exc).__name__
    return InputUnavailableError(
        f"host {host} cannot read the {role} {path}: {reason}; make the path readable on "
        "every worker (shared file system) or run with --ship-inputs",
        host=host,
        role=role,
        path=str(path),
    )


def _check(
    host: str,
    role: str,
    path: str | os.PathLike,
    folder: bool,
    expected: Mapping[str, str],
    found: Mapping[str, str],
) -> None:
    """InputMismatchError at the first file whose sha256 (or presence) differs."""
    for name in sorted(set(expected) | set(found)):
        want, got = expected.get(name, _EXTRA), found.get(name, _ABSENT)
        if want == got:
            continue
        where = Path(path) / name if folder else Path(path)
        raise InputMismatchError(
            f"input mismatch on host {host}: the {role} {where} has sha256 {got}, the job's "
            f"sha256 is {want}; the file there differs from the one the job was built from "
            "(a stale copy?): update it, or run with --ship-inputs",
            host=host,
            role=role,
            path=str(where),
        )


def _read_template(host: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise _unavailable(host, TEMPLATE_ROLE, path, exc) from None


def _read_shipped(host: str, role: str, path: str) -> Tuple[bool, Dict[str, bytes]]:
    """``(is a folder, {file name: bytes})`` of one input, read on the driver."""
    source = Path(path)
    try:
        return source.is_dir(), {name: p.read_bytes() for name, p in input_files(source)}
    except OSError as exc:
        raise _unavailable(host, role, path, exc) from None


def task_inputs(job: Job, ship: bool = False) -> TaskInputs:
    """The inputs part of ``job``'s task, built on the driver.

    Args:
        job: The job.
        ship: Read the input bytes here and carry them with the task.

    Returns:
        The job's hashes (those of its ``job_id``) and those of its
        configuration's templates, with the bytes when ``ship``.

    Raises:
        InputMismatchError: ``ship`` and a file changed since the job id was
            computed (the message names this host).
        InputUnavailableError: a template (or, with ``ship``, an input) can
            no longer be read.
        FleetConfigError: the files cannot be hashed (missing or unreadable).
    """
    hashes = job_input_hashes(job)
    host = worker_host()
    config_sha = next(iter(hashes.get("config", {}).values()), "")
    chain = _driver_templates(os.path.realpath(job.config), config_sha)
    template_bytes = {path: _read_template(host, path) for path in chain}
    templates = {path: hashlib.sha256(data).hexdigest() for path, data in template_bytes.items()}
    if not ship:
        return TaskInputs(hashes, templates=templates)
    folders, contents, origins = set(), {}, {}
    for role, path in _job_paths(job):
        is_dir, files = _read_shipped(host, role, path)
        found = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
        _check(host, role, path, is_dir, hashes.get(role, {}), found)
        if is_dir:
            folders.add(role)
        contents[role] = files
        origins[role] = os.path.realpath(path)
    return TaskInputs(hashes, frozenset(folders), contents, origins, templates, template_bytes)


@dataclasses.dataclass(frozen=True)
class LocalInputs:
    """A job's verified private copy of its inputs (valid inside :func:`local_inputs`).

    Attributes:
        job: The job with its input paths pointing at the private copy (it
            has no job id of its own: use the original job's).
        hashes: The verified ``{role: {file name: sha256 hex}}``.
        renames: ``(private prefix, original prefix)`` pairs that map the
            private paths back to the job's.
    """

    job: Job
    hashes: Mapping[str, Mapping[str, str]]
    renames: Tuple[Tuple[str, str], ...]

    def restore_paths(self, files: Mapping[str, str]) -> Dict[str, str]:
        """``files`` (name → text) with every private path written as the job's own path.

        Plain and JSON-escaped spellings are both replaced.
        """
        return {name: _restore(text, self.renames) for name, text in files.items()}


def _restore(text: str, renames: Iterable[Tuple[str, str]]) -> str:
    """``text`` with the private prefixes of ``renames`` replaced by the original ones."""
    for private, original in renames:
        text = text.replace(private, original)
        text = text.replace(json.dumps(private)[1:-1], json.dumps(original)[1:-1])
    return text


def _mirror(root: Path, path: str | os.PathLike) -> Tuple[Path, Tuple[str, str]]:
    """The private path of ``path`` below ``root`` and its ``(private, original)`` prefix pair.

    ``path`` is taken as its real path (symbolic links resolved, as the
    configuration parser resolves the configuration before its templates).
    """
    absolute = Path(os.path.realpath(path))
    drive = absolute.drive.replace(":", "").strip("\\/")
    base = root / drive if drive else root
    return base / absolute.relative_to(absolute.anchor), (str(base), absolute.anchor.rstrip("\\/"))


def _copy_hashing(source: Path, target: Path) -> str:
    """Copy ``source`` to ``target`` in blocks; the sha256 hex of the bytes copied."""
    digest = hashlib.sha256()
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as fin, open(target, "wb") as fout:
        for block in iter(lambda: fin.read(_BLOCK), b""):
            digest.update(block)
            fout.write(block)
    return digest.hexdigest()


def _copy_input(host: str, role: str, path: str, target: Path) -> Tuple[bool, Dict[str, str]]:
    """Copy one input to ``target``: ``(is a folder, {file name: sha256 of the bytes read})``."""
    source = Path(path)
    try:
        if not source.exists():
            raise FileNotFoundError(2, "No such file or directory")
        listing = input_files(source)
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            return True, {name: _copy_hashing(p, target / name) for name, p in listing}
        return False, {name: _copy_hashing(p, target) for name, p in listing}
    except OSError as exc:
        raise _unavailable(host, role, path, exc) from None


def _write_shipped(files: Mapping[str, bytes], folder: bool, target: Path) -> Dict[str, str]:
    """Write shipped bytes to ``target``; ``{file name: sha256}`` of what was written."""
    found = {}
    for name, data in files.items():
        out = target / name if folder else target
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        found[name] = hashlib.sha256(data).hexdigest()
    if folder:
        target.mkdir(parents=True, exist_ok=True)
    return found


@contextlib.contextmanager
def local_inputs(job: Job, inputs: TaskInputs | None = None) -> Iterator[LocalInputs]:
    """The job's inputs read once, verified and copied to a private folder (removed on exit).

    Args:
        job: The job (its paths as the driver wrote them).
        inputs: What the task carries (None: :func:`task_inputs` of ``job``
            here, i.e. the job's own hashes, the files read from its paths).

    Yields:
        The private copy.

    Raises:
        InputMismatchError: an input differs from the job's hash.
        InputUnavailableError: an input cannot be read on this host.
    """
    inputs = inputs if inputs is not None else task_inputs(job)
    host = worker_host()
    with tempfile.TemporaryDirectory(prefix="figaroh-inputs-") as tmp:
        root = Path(tmp).resolve()
        local: Dict[str, str] = {}
        renames = set()
        for role, path in _job_paths(job):
            target, pair = _mirror(root, inputs.origins.get(role) or path)
            if inputs.contents is not None:
                folder = role in inputs.folders
                found = _write_shipped(inputs.contents.get(role, {}), folder, target)
            else:
                folder, found = _copy_input(host, role, path, target)
            _check(host, role, path, folder, inputs.hashes.get(role, {}), found)
            local[role] = str(target)
            renames.add(pair)
        for path, sha in inputs.templates.items():
            target, pair = _mirror(root, path)
            if inputs.template_contents is not None:
                found = _write_shipped({target.name: inputs.template_contents[path]}, False, target)
            else:
                found = _copy_input(host, TEMPLATE_ROLE, path, target)[1]
            _check(host, TEMPLATE_ROLE, path, False, {target.name: sha}, found)
            renames.add(pair)
        ordered = tuple(sorted(renames, key=lambda p: -len(p[0])))
        _check_template_chain(host, job, local.get("config"), inputs, root, ordered)
        yield LocalInputs(
            Job(**{**job.fields(), **local}),
            {role: dict(h) for role, h in inputs.hashes.items()},
            ordered,
        )


def _check_template_chain(
    host: str,
    job: Job,
    config: str | None,
    inputs: TaskInputs,
    root: Path,
    renames: Tuple[Tuple[str, str], ...],
) -> None:
    """InputMismatchError unless the private configuration loads the driver's templates' copies."""
    if config is None:
        return
    expected = sorted(str(_mirror(root, p)[0]) for p in inputs.templates)
    loaded = sorted(config_templates(config))
    if loaded == expected:
        return
    here = [_restore(p, renames) for p in loaded] or ["only figaroh's own templates"]
    there = sorted(inputs.templates) or ["only figaroh's own templates"]
    raise InputMismatchError(
        f"input mismatch on host {host}: the configuration {job.config} extends "
        f"{', '.join(here)} there but {', '.join(there)} where the job was built; keep its "
        "templates beside it (a templates/ folder next to it or up to two folders above, "
        "or a path relative to it) so that every host resolves the same files",
        host=host,
        role=TEMPLATE_ROLE,
        path=str(job.config),
    )
