"""The record of one fleet run: what the run index stores and ``run_record.json`` holds.

A :class:`RunRecord` is plain, picklable data (a worker builds it, the driver
writes it). It is written into its run folder as ``run_record.json``
(:data:`RECORD_FILE`, strict JSON: ``allow_nan=False``, non-finite floats
stored as ``null``) and into the SQLite run index
(:mod:`figaroh.fleet.run_index`); the index can be rebuilt from those files, so
:meth:`RunRecord.to_json_data` / :meth:`RunRecord.from_json_data` round-trip
every field exactly (floats through ``repr``-exact JSON numbers).

Normalisation done on construction (so that the live index and a rebuilt one
hold the same rows):

* parameter values and metric values are Python ``float``; a non-finite one
  (``nan``, ``±inf``) becomes ``math.nan`` (stored as ``null`` / SQL ``NULL``,
  read back as ``math.nan``), so a record equals its JSON and index round trips;
* a parameter ``sigma`` that is ``None`` or non-finite becomes ``None``
  (unknown uncertainty);
* ``metrics``, ``data_sha256`` and ``tags`` are copied into plain dicts sorted by key.

``batch_id`` and ``tags`` are recorded by the batch driver (the batch that
archived the run, and the free-form tags of its job); a ``run_record.json``
written before they existed reads back with ``""`` and ``{}``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Dict, Mapping, Tuple

from figaroh.errors import FigarohError

__all__ = [
    "RECORD_FILE",
    "TASKS",
    "ParameterEstimate",
    "RunRecord",
    "RunRecordError",
    "check_tags",
]

#: File name of the record inside a fleet run folder.
RECORD_FILE = "run_record.json"
#: Task names a fleet run may carry.
TASKS = ("identification", "calibration", "trajectory", "monte_carlo")

_TEXT_FIELDS = (
    "run_id",
    "job_id",
    "robot_id",
    "task",
    "session",
    "session_time",
    "started",
    "finished",
    "config_sha256",
    "verdict_status",
    "run_dir",
    "figaroh_version",
    "batch_id",
)
_REQUIRED = ("run_id", "job_id", "robot_id", "task", "session", "session_time")


class RunRecordError(FigarohError, ValueError):
    """A run record (or its ``run_record.json`` data) is malformed; the message names the field."""


_ENCODER = json.JSONEncoder(allow_nan=False, sort_keys=True)


def _strict(value: Any) -> str:
    """``value`` as strict JSON on one line, keys sorted."""
    return _ENCODER.encode(value)


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _to_float(value: Any, field: str) -> float:
    """``value`` as a float; None and every non-finite value become the one ``math.nan``."""
    if value is None:
        return math.nan
    try:
        if isinstance(value, (bool, str, bytes)):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise RunRecordError(
            f"{field} must be a number, got {value!r}; store numbers (float) only"
        ) from None
    return number if math.isfinite(number) else math.nan  # one nan object: records compare equal


@dataclasses.dataclass(frozen=True)
class ParameterEstimate:
    """One identified or calibrated parameter of a run.

    Attributes:
        name: Parameter name (e.g. ``"fs2"``, ``"Ia1"``, ``"d_px_1"``), unique within a run.
        value: Estimate, in the parameter's own unit ([N·m], [kg·m²], [m], [rad] ...).
        sigma: Standard deviation of the estimate, absolute, same unit as
            ``value``; None when unknown.
    """

    name: str
    value: float
    sigma: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise RunRecordError(
                f"parameter name must be a non-empty string, got {self.name!r}; "
                "name every parameter"
            )
        object.__setattr__(self, "value", _to_float(self.value, f"parameter {self.name!r} value"))
        sigma = (
            None if self.sigma is None else _to_float(self.sigma, f"parameter {self.name!r} sigma")
        )
        object.__setattr__(self, "sigma", _finite_or_none(sigma))

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.name, self.value, self.sigma))  # unpickled through __init__


def _check_text(record: RunRecord) -> None:
    for name in _TEXT_FIELDS:
        value = getattr(record, name)
        if not isinstance(value, str):
            raise RunRecordError(f"RunRecord.{name} must be a string, got {value!r}")
    for name in _REQUIRED:
        if not getattr(record, name):
            raise RunRecordError(f"RunRecord.{name} is empty; every run needs a {name}")


def check_tags(tags: Any, where: str = "tags") -> Dict[str, str]:
    """``tags`` as a plain dict of text to text, sorted by key.

    Args:
        tags: A mapping of tag name to value (e.g. ``{"line": "4", "site": "lyon"}``).
        where: What the tags belong to, for the error message.

    Raises:
        RunRecordError: ``tags`` is not a mapping, or a name or value is not a
            non-empty name / a text (the message names it).
    """
    if not isinstance(tags, Mapping):
        raise RunRecordError(
            f"{where} must map a tag name to a text value (e.g. line: L4), "
            f"got {type(tags).__name__}"
        )
    for name, value in tags.items():
        if not isinstance(name, str) or not name.strip():
            raise RunRecordError(f"{where}: tag name {name!r} must be a non-empty text")
        if not isinstance(value, str):
            raise RunRecordError(
                f"{where}: tag {name!r} must be a text, got {value!r}; quote it in YAML "
                f'({name}: "{value}")'
            )
    return dict(sorted(tags.items()))


def _parameters(values: Any) -> Tuple[ParameterEstimate, ...]:
    params = tuple(p if isinstance(p, ParameterEstimate) else ParameterEstimate(*p) for p in values)
    seen: set[str] = set()
    for p in params:
        if p.name in seen:
            raise RunRecordError(
                f"parameter {p.name!r} appears twice in RunRecord.parameters; names must be unique"
            )
        seen.add(p.name)
    return params


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """Everything the run index knows about one archived fleet run.

    Attributes:
        run_id: Run identifier (a fleet run uses its ``job_id``).
        job_id: Deterministic id of the job (hash of its spec, config and data); unique in an index.
        robot_id: The robot the run is about.
        task: ``"identification"``, ``"calibration"``, ``"trajectory"`` or ``"monte_carlo"``.
        session: Session label (e.g. ``"2026-03-01"``, ``"night-17"``).
        session_time: ISO-8601 UTC time of the session: the time axis of drift reports.
        started: ISO-8601 UTC time the job started.
        finished: ISO-8601 UTC time the job finished.
        config_sha256: sha256 (hex) of the configuration file bytes.
        data_sha256: Data file name → sha256 (hex) of its bytes.
        verdict_status: Verdict status (``"pass"``, ``"fail"``, ``"not_evaluated"`` ...).
        passed: Verdict outcome; None when not evaluated.
        metrics: Metric name → value (units as the metric names say, e.g. ``rmse_Nm``).
        parameters: Every identified / calibrated parameter with its σ.
        run_dir: The run folder relative to the archive root (POSIX separators).
        figaroh_version: figaroh version that computed the run.
        batch_id: The batch that archived the run (``""``: archived outside a batch,
            or before batch ids existed).
        tags: Free-form tags of the run's job (line, firmware, site ...): text → text.
    """

    run_id: str
    job_id: str
    robot_id: str
    task: str
    session: str
    session_time: str
    started: str
    finished: str
    config_sha256: str
    data_sha256: Mapping[str, str]
    verdict_status: str
    passed: bool | None
    metrics: Mapping[str, float]
    parameters: Tuple[ParameterEstimate, ...]
    run_dir: str = ""
    figaroh_version: str = ""
    batch_id: str = ""
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_text(self)
        if self.passed is not None and not isinstance(self.passed, bool):
            raise RunRecordError(
                f"RunRecord.passed must be True, False or None, got {self.passed!r}"
            )
        if not isinstance(self.data_sha256, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.data_sha256.items()
        ):
            raise RunRecordError("RunRecord.data_sha256 must map file names (str) to sha256 (str)")
        if not isinstance(self.metrics, Mapping):
            raise RunRecordError("RunRecord.metrics must map metric names to numbers")
        metrics: Dict[str, float] = {
            str(k): _to_float(v, f"metric {k!r}") for k, v in sorted(self.metrics.items())
        }
        object.__setattr__(self, "data_sha256", dict(sorted(self.data_sha256.items())))
        object.__setattr__(self, "metrics", metrics)
        object.__setattr__(self, "parameters", _parameters(self.parameters))
        object.__setattr__(self, "tags", check_tags(self.tags, "RunRecord.tags"))

    def __hash__(self) -> int:
        return hash((self.run_id, self.job_id))

    def __reduce__(self) -> Tuple[Any, ...]:
        # unpickled through __init__, so a nan is again the one math.nan and records compare equal
        return (type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self)))

    def with_run_dir(self, run_dir: str) -> RunRecord:
        """This record with ``run_dir`` set (relative to the archive root, POSIX)."""
        return dataclasses.replace(self, run_dir=str(run_dir))

    def in_batch(self, batch_id: str, tags: Mapping[str, str]) -> RunRecord:
        """This record with the batch that archives it and its job's tags set."""
        return dataclasses.replace(self, batch_id=str(batch_id), tags=dict(tags))

    def to_json_data(self) -> Dict[str, Any]:
        """Strict-JSON-ready dict (non-finite floats → None); inverse of :meth:`from_json_data`."""
        data: Dict[str, Any] = {name: getattr(self, name) for name in _TEXT_FIELDS}
        data["data_sha256"] = dict(self.data_sha256)
        data["tags"] = dict(self.tags)
        data["passed"] = self.passed
        data["metrics"] = {k: _finite_or_none(v) for k, v in self.metrics.items()}
        data["parameters"] = [
            {"name": p.name, "value": _finite_or_none(p.value), "sigma": p.sigma}
            for p in self.parameters
        ]
        return data

    def to_json(self) -> str:
        """The ``run_record.json`` text: strict JSON (``allow_nan=False``), sorted keys.

        One line per field and one line per parameter (each value written by
        the C JSON encoder: ``indent`` would select the slower pure-Python one,
        and the driver writes this text for every run).
        """
        data = self.to_json_data()
        fields = []
        for key in sorted(data):
            value = data[key]
            if key == "parameters" and value:
                items = ",\n".join(f"    {_strict(p)}" for p in value)
                text = f"[\n{items}\n  ]"
            else:
                text = _strict(value)
            fields.append(f"  {_strict(key)}: {text}")
        return "{\n" + ",\n".join(fields) + "\n}\n"

    @classmethod
    def from_json_data(cls, data: Mapping[str, Any]) -> RunRecord:
        """Rebuild a record from :meth:`to_json_data` output (a null number reads as ``nan``).

        Raises:
            RunRecordError: a field is missing or has the wrong type (the message names it).
        """
        if not isinstance(data, Mapping):
            raise RunRecordError(f"a run record must be a JSON object, got {type(data).__name__}")
        missing = [k for k in (*_REQUIRED, "data_sha256", "metrics", "parameters") if k not in data]
        if missing:
            raise RunRecordError(f"run record lacks field(s) {', '.join(missing)}")
        params = data["parameters"]
        if not isinstance(params, list) or not all(isinstance(p, Mapping) for p in params):
            raise RunRecordError("run record field 'parameters' must be a list of objects")
        try:
            estimates = tuple(
                ParameterEstimate(p["name"], p.get("value"), p.get("sigma")) for p in params
            )
        except KeyError:
            raise RunRecordError("a run record parameter lacks its 'name'") from None
        texts = {name: data.get(name, "") for name in _TEXT_FIELDS}
        return cls(
            **texts,
            data_sha256=data["data_sha256"],
            passed=data.get("passed"),
            metrics=data["metrics"],
            parameters=estimates,
            tags=data.get("tags") or {},
        )

    @classmethod
    def from_json(cls, text: str) -> RunRecord:
        """Parse ``run_record.json`` text (see :meth:`from_json_data`)."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RunRecordError(f"run record is not valid JSON ({exc})") from None
        return cls.from_json_data(data)
