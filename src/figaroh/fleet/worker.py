"""What a Dask worker (or the driver, serially) computes for one fleet job.

:func:`run_job` is pure computation: it reads the job's input files once,
checks them against the job's hashes and copies them to a private folder
(:func:`figaroh.fleet.inputs.local_inputs`; the bytes may also come with the
task), runs the task on that copy in this process and returns a
:class:`JobOutput` — plain picklable
data holding the run's files as text (``{file name: text}``, what
:func:`figaroh._run.archive.archive_files` serialises plus ``verdict.json``)
and its :class:`~figaroh.fleet.record.RunRecord` (``run_dir`` empty). It
writes nothing outside a temporary folder it removes; the driver writes the
run folder and the index row (:func:`figaroh.fleet.run_index.write_fleet_run`),
so a task Dask runs twice (worker killed, then recomputed) still yields one run.

Per kind:

* ``identification`` — :func:`figaroh.cli.workflows.run_identification` on
  ``job.data`` (what ``figaroh identify`` runs); parameters are the base
  parameters φ with their absolute standard deviations
  ``σ_i = |std%_i/100 · φ_i|``
  (:func:`figaroh._run.uncertainty.parameter_uncertainty`).
  ``job.options`` may set ``select_stage``, ``decimate`` (``--decimate``'s
  value: absent → ``solve()``'s every 10th sample, 0 → every sample) and ``wls``.
  Every kind: ``options.keep_series`` keeps the per-sample ``series`` of
  ``verdict.json`` (dropped by default: it is most of a run folder's bytes).
* ``monte_carlo`` — the same identification on a copy of the training log
  whose torques get Gaussian noise ``τ̃ = τ + ε``, ``ε ~ N(0, noise_std²)``
  [N·m], drawn column by column from ``numpy.random.default_rng(job.seed)``
  (the held-out log is left as it is).
* ``calibration`` — :func:`figaroh.cli.workflows.run_calibration`; parameters
  are the calibrated ``var_`` with ``std_dev``. ``job.options`` may set
  ``method``, ``max_iterations``, ``known_base_frame``, ``known_tip_frame``.
* ``trajectory`` — one :class:`~figaroh.optimal.base_optimal_trajectory.BaseOptimalTrajectory`
  restart started from ``job.seed`` (needs the ``ipopt`` extra); the files are
  ``trajectory.csv`` (``t, q_<joint>, dq_<joint>, ddq_<joint>``) and
  ``verdict.json`` (pass when every segment was solved), the metrics the
  segments solved and the initial / final condition numbers, no parameters;
  ``job.options`` may set ``segments``, ``max_iterations``, ``n_wps`` and ``freq``.

The verdict is :meth:`verify` judged by the first policy that exists: the
batch's ``thresholds`` (scope ``prediction``), else the ``verification``
section of the job's configuration (its thresholds and scope, as the API and
the command line read it), else the ``execution`` scope (a nightly batch
without limits records whether every run computed finite results; it never
reports a prediction it was given no limits for). Its numeric metrics become
the record's metrics.

Determinism: nothing depends on the clock or on an unseeded generator, so a
job gives the same numbers on any worker and serially. BLAS threads must be
pinned to one for bit-identical sums (the embedded cluster of
:func:`figaroh.fleet.runner.run_batch` sets ``OMP_NUM_THREADS`` /
``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` to 1 in its workers).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import logging
import math
import tempfile
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Tuple, TypeVar

import numpy as np

from figaroh import __version__
from figaroh._optional import require
from figaroh._run.archive import archive_files
from figaroh._run.json_io import strict_json_text
from figaroh._run.uncertainty import parameter_uncertainty
from figaroh._run.verification_policy import config_policy
from figaroh.calibration.settings import DEFAULT_SETTINGS as _CALIBRATION_DEFAULTS
from figaroh.cli.common import CLIError
from figaroh.cli.csv_identification import resolve_csv_path
from figaroh.cli.workflows import load_robot_model, run_calibration, run_identification
from figaroh.fleet.inputs import TaskInputs, local_inputs
from figaroh.fleet.jobs import FleetConfigError, Job
from figaroh.fleet.record import ParameterEstimate, RunRecord
from figaroh.optimal.base_optimal_trajectory import BaseOptimalTrajectory
from figaroh.optimal.config import load_param

logger = logging.getLogger(__name__)

__all__ = ["VERDICT_FILE", "JobOutput", "add_torque_noise", "run_job"]

#: The verification JSON of a run (what ``figaroh identify`` writes).
VERDICT_FILE = "verdict.json"
_EFFORT_PREFIXES = ("tau_", "effort:")


@dataclasses.dataclass(frozen=True)
class JobOutput:
    """The result of one job: its run files and record, not yet written.

    Attributes:
        job: The job.
        record: Its run record (``run_dir`` empty; the driver sets it).
        files: File name → text of the run folder (``run_record.json`` excluded).
    """

    job: Job
    record: RunRecord
    files: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """What a kind-specific computation gives back to :func:`run_job`."""

    files: Dict[str, str]
    verdict: Mapping[str, Any]
    parameters: Tuple[ParameterEstimate, ...]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _policy(task: Any, thresholds: Mapping[str, Any] | None) -> Tuple[Any, str]:
    """``(thresholds, scope)`` of a fleet verdict (see the module docstring)."""
    if thresholds:
        return thresholds, "prediction"
    config = getattr(task, "identif_config", None) or getattr(task, "calib_config", None)
    config_thresholds, config_scope = config_policy(config)
    if config_thresholds or config_scope:
        return config_thresholds, config_scope or "prediction"
    return None, "execution"


def _verdict_files(
    task: Any, thresholds: Mapping[str, Any] | None, keep_series: bool = False
) -> Tuple[Dict[str, str], Any]:
    """``archive_files(task)`` plus ``verdict.json``, and the verdict's JSON data.

    The verification JSON of a single run carries the per-sample ``series``
    (measured, nominal and fitted efforts) for the compare page: about 98 % of
    a fleet run folder (1 MB of a 1.05 MB folder at 2 000 samples). A fleet
    run keeps it only when ``job.options.keep_series`` is true; otherwise
    ``series`` is stored as ``{}``, the key kept so readers see the same
    layout.
    """
    with tempfile.TemporaryDirectory(prefix="figaroh-fleet-") as tmp:
        path = Path(tmp) / VERDICT_FILE
        policy_thresholds, scope = _policy(task, thresholds)
        task.export_verification_report(
            output_path=str(path), thresholds=policy_thresholds, scope=scope
        )
        text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    if not keep_series and data.get("series"):
        data["series"] = {}
        text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    files = archive_files(task)
    files[VERDICT_FILE] = text
    return files, data


def _estimates(names: Any, values: Any, sigmas: Any) -> Tuple[ParameterEstimate, ...]:
    names = [str(n) for n in names]
    vals = np.ravel(np.asarray(values, dtype=float))
    sig = None if sigmas is None else np.ravel(np.asarray(sigmas, dtype=float))
    if sig is not None and len(sig) != len(names):
        sig = None
    return tuple(
        ParameterEstimate(n, float(vals[i]), None if sig is None else float(sig[i]))
        for i, n in enumerate(names)
    )


_T = TypeVar("_T")


def _required(value: _T | None, job: Job, field: str) -> _T:
    """``value`` of ``job.<field>``: :class:`Job` checks at construction that its kind has it."""
    if value is None:
        raise FleetConfigError(f"a {job.kind} job needs {field}")
    return value


# ---------------------------------------------------------------------------
# identification and Monte-Carlo
# ---------------------------------------------------------------------------
def _only_job_inputs(job: Job) -> Callable[[Any], None]:
    """A ``run_identification`` check: the configuration names no held-out file of its own.

    A fleet job reads only its inputs (hashed into its job id, verified and
    copied by :func:`figaroh.fleet.inputs.local_inputs`); a
    ``data.validation_data_file`` of the configuration is none of them.
    """

    def check(ident: Any) -> None:
        source = ident.identif_config.get("validation_data_file") or ""
        if source and job.validation is None:
            raise CLIError(
                f"the configuration names data.validation_data_file {source!r}, which a fleet "
                "job does not read (its inputs are config, urdf, data and validation, hashed "
                "into the job id): give the held-out log as the job's validation field"
            )

    return check


def _identification_outcome(job: Job, data: Any, thresholds: Mapping[str, Any] | None) -> _Outcome:
    opts = job.options
    ident = run_identification(
        job.config,
        _required(job.urdf, job, "urdf"),
        data,
        validation=job.validation,
        select_stage=opts.get("select_stage"),
        decimate=opts.get("decimate"),
        wls=opts.get("wls"),
        show_report=False,
        check=_only_job_inputs(job),
    )
    files, verdict = _verdict_files(ident, thresholds, bool(opts.get("keep_series")))
    names = list(ident.params_base)
    sigma = parameter_uncertainty(names, ident.phi_base, ident.std_relative)["sigma"]
    return _Outcome(files, verdict, _estimates(names, ident.phi_base, sigma))


def _identify(job: Job, thresholds: Mapping[str, Any] | None) -> _Outcome:
    return _identification_outcome(job, _required(job.data, job, "data"), thresholds)


def add_torque_noise(text: str, noise_std: float, seed: int) -> str:
    """A CSV log with Gaussian noise of ``noise_std`` [N·m] added to its effort columns.

    The effort columns are those named ``tau_<joint>`` or ``effort:<joint>``;
    every other column and every ``#`` line is kept as written. The noise
    matrix ``(samples, effort columns)`` is drawn at once from
    ``numpy.random.default_rng(seed)``, so the result depends only on the
    log, ``noise_std`` and ``seed``. Values are written with ``repr``
    (exact round trip).

    Args:
        text: The CSV text (header row, then one row per sample).
        noise_std: Standard deviation of the noise [N·m] (0: unchanged values).
        seed: Seed of the generator.

    Returns:
        The noisy CSV text.

    Raises:
        ValueError: the log has no effort column or a non-numeric effort value.
    """
    lines = text.splitlines(keepends=True)
    head = 0
    while head < len(lines) and lines[head].lstrip().startswith("#"):
        head += 1
    rows = list(csv.reader(lines[head:]))
    header, body = rows[0], [r for r in rows[1:] if r]
    cols = [k for k, name in enumerate(header) if name.strip().startswith(_EFFORT_PREFIXES)]
    if not cols:
        raise ValueError(
            "the Monte-Carlo training log has no effort column (tau_<joint> or effort:<joint>); "
            "use a log in the figaroh identify CSV layout"
        )
    noise = np.random.default_rng(seed).normal(0.0, float(noise_std), size=(len(body), len(cols)))
    out = io.StringIO()
    out.writelines(lines[:head])
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for i, row in enumerate(body):
        row = list(row)
        for j, k in enumerate(cols):
            row[k] = repr(float(row[k]) + float(noise[i, j]))
        writer.writerow(row)
    return out.getvalue()


def _monte_carlo(job: Job, thresholds: Mapping[str, Any] | None) -> _Outcome:
    source = resolve_csv_path(_required(job.data, job, "data"))
    noisy = add_torque_noise(
        source.read_text(encoding="utf-8"),
        float(job.options["noise_std"]),
        int(_required(job.seed, job, "seed")),
    )
    with tempfile.TemporaryDirectory(prefix="figaroh-mc-") as tmp:
        path = Path(tmp) / source.name
        path.write_text(noisy, encoding="utf-8")
        return _identification_outcome(job, path, thresholds)


# ---------------------------------------------------------------------------
# calibration
# ---------------------------------------------------------------------------
def _calibrate(job: Job, thresholds: Mapping[str, Any] | None) -> _Outcome:
    opts = job.options
    calib = run_calibration(
        job.config,
        _required(job.urdf, job, "urdf"),
        _required(job.data, job, "data"),
        validation=job.validation,
        known_base_frame=bool(opts.get("known_base_frame", False)),
        known_tip_frame=bool(opts.get("known_tip_frame", False)),
        method=str(opts.get("method", "lm")),
        max_iterations=int(opts.get("max_iterations", _CALIBRATION_DEFAULTS.max_iterations)),
        show_report=False,
    )
    files, verdict = _verdict_files(calib, thresholds, bool(opts.get("keep_series")))
    names = list(calib.calib_config["param_name"])
    return _Outcome(files, verdict, _estimates(names, calib.var_, getattr(calib, "std_dev", None)))


# ---------------------------------------------------------------------------
# optimal trajectory restart
# ---------------------------------------------------------------------------
_TRAJECTORY_OPTIONS = ("max_iterations", "n_wps", "freq")


def _trajectory_csv(opt: BaseOptimalTrajectory) -> str:
    t, q, v, a = opt.stacked_trajectory()
    cb, joints = opt.CB, list(opt.active_joints)
    header = ["t"] + [f"{p}_{j}" for p in ("q", "dq", "ddq") for j in joints]
    table = np.column_stack([t, q[:, cb.act_idxq], v[:, cb.act_idxv], a[:, cb.act_idxv]])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([repr(float(x)) for x in row] for row in table)
    return out.getvalue()


def _trajectory(job: Job, thresholds: Mapping[str, Any] | None) -> _Outcome:
    require("cyipopt", extra="ipopt", purpose="A fleet trajectory job (IPOPT)")
    robot = load_robot_model(_required(job.urdf, job, "urdf"))
    segments = int(job.options.get("segments", 1))
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joints = list(load_param(robot, job.config)[1].get("active_joints") or [])
        opt = BaseOptimalTrajectory(robot, joints, job.config, rng=job.seed)
        opt.trajectory_config["ipopt_print_level"] = 0
        opt.trajectory_config.update(
            {k: job.options[k] for k in _TRAJECTORY_OPTIONS if k in job.options}
        )
        opt.initialize()
        opt.solve(stack_reps=segments)
    res = opt.results
    solved = len(res["P_F"])
    metrics = {
        "segments_solved": float(solved),
        "final_condition_number": float(opt.final_condition_number),
        "initial_condition_number": float((res.get("initial_condition_number") or [math.nan])[0]),
    }
    passed = solved == segments
    verdict = {"status": "pass" if passed else "fail", "passed": passed, "metrics": metrics}
    files = {VERDICT_FILE: strict_json_text(verdict, indent=2)}
    if solved:
        files["trajectory.csv"] = _trajectory_csv(opt)
    return _Outcome(files, verdict, ())


_COMPUTE: Dict[str, Callable[[Job, Mapping[str, Any] | None], _Outcome]] = {
    "identification": _identify,
    "monte_carlo": _monte_carlo,
    "calibration": _calibrate,
    "trajectory": _trajectory,
}


def _numeric_metrics(metrics: Any) -> Dict[str, float]:
    """The number-valued entries of a verdict's ``metrics`` (None → NaN; others dropped)."""
    out: Dict[str, float] = {}
    for name, value in (metrics or {}).items():
        if value is None:
            out[str(name)] = math.nan
        elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            out[str(name)] = float(value)
    return out


def _data_hashes(hashes: Mapping[str, Mapping[str, str]]) -> Dict[str, str]:
    out = dict(hashes.get("data", {}))
    out.update({f"validation/{k}": v for k, v in hashes.get("validation", {}).items()})
    return out


def run_job(
    job: Job, thresholds: Mapping[str, Any] | None = None, inputs: TaskInputs | None = None
) -> JobOutput:
    """Compute one job in this process (a Dask task, or one step of a serial batch).

    The inputs are read once, checked against the job's hashes and computed
    from a private copy (:func:`figaroh.fleet.inputs.local_inputs`); the
    record's ``config_sha256`` and ``data_sha256`` are those verified hashes.

    Args:
        job: The job.
        thresholds: Verdict thresholds (as :func:`figaroh.cli.thresholds.build_thresholds`
            gives; None: the configuration's verification section, else the
            execution-scope verdict).
        inputs: The task's inputs (:func:`figaroh.fleet.inputs.task_inputs`:
            the driver's hashes, and the bytes when shipped); None: the job's
            own hashes, its files read from their paths.

    Returns:
        The run files and record (nothing is written).

    Raises:
        figaroh.fleet.inputs.InputMismatchError: an input differs from the job's hash.
        figaroh.fleet.inputs.InputUnavailableError: an input cannot be read here.
        figaroh.cli.common.CLIError: bad input (malformed file).
        Exception: a computation error of the task, unchanged.
    """
    started = _now()
    with local_inputs(job, inputs) as local:
        outcome = _COMPUTE[job.kind](local.job, thresholds)
        files = local.restore_paths(outcome.files)
        hashes = local.hashes
    finished = _now()
    verdict = outcome.verdict
    passed = verdict.get("passed")
    record = RunRecord(
        run_id=job.job_id,
        job_id=job.job_id,
        robot_id=job.robot_id,
        task=job.kind,
        session=job.session,
        session_time=job.session_time or finished,
        started=started,
        finished=finished,
        config_sha256=next(iter(hashes["config"].values())),
        data_sha256=_data_hashes(hashes),
        verdict_status=str(verdict.get("status", "not_evaluated")),
        passed=None if passed is None else bool(passed),
        metrics=_numeric_metrics(verdict.get("metrics")),
        parameters=outcome.parameters,
        figaroh_version=__version__,
    )
    return JobOutput(job=job, record=record, files=files)
