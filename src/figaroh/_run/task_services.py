"""Run services shared by the identification and calibration run classes.

:class:`RunServices` implements once what a run object offers around its
numerical work — verification, the HTML and JSON reports, saving, plotting,
the terminal report and ``repr`` — on top of one class attribute each run
class supplies, ``_hooks``: a :class:`TaskHooks` record of plain functions of
the run object (its task name, whether it is solved, its results dict, its
verdict, HTML report, quality report, plots, ``repr`` fields, …).

The plot folder of the current ``solve()``, the results manager and the
run's verdict store are plain module functions over the run object
(:func:`plot_into`, :func:`figures_hidden`, :func:`make_results_manager`,
:func:`require_solved`, :func:`verdict_for`, :func:`current_verdict`, …), not
methods, so a run class carries only its documented methods and hooks.

The run object must also carry a ``results_manager`` attribute (None until
first needed) and ``model`` (a Pinocchio model, for the robot name).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import warnings
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, List, Mapping

from figaroh._run import json_io as _json_io
from figaroh._run import result_plots as _result_plots
from figaroh._run import verification_policy as _policy
from figaroh._run.stages import with_schema
from figaroh.utils.fileio import atomic_write_text, make_folder
from figaroh.utils.results_manager import ResultsManager, plot_with_fallback

if TYPE_CHECKING:
    from figaroh._run.verdict import VerificationVerdict

logger = logging.getLogger(__name__)

__all__ = [
    "RunServices",
    "TaskHooks",
    "current_verdict",
    "figures_hidden",
    "keep_verdict",
    "make_results_manager",
    "plot_into",
    "report_solution",
    "require_solved",
    "stored_verdict",
    "task_config",
    "verdict_for",
]

#: Formats written by :meth:`RunServices.save_results`.
SAVE_FORMATS = ("yaml", "csv", "npz")


def missing_results_warning(run: Any, action: str) -> str | None:
    """Default warning for ``action`` (``"report"``, ``"save"``, ``"plot"``) without results.

    Returns:
        None when the run is solved, else ``"No <task> results to <action>.
        Run solve() first."``.
    """
    if run._hooks.is_solved(run):
        return None
    return f"No {run._hooks.task} results to {action}. Run solve() first."


@dataclasses.dataclass(frozen=True)
class TaskHooks:
    """The task pieces of a run class, as plain functions of the run object ``run``.

    Attributes:
        task: ``"identification"`` or ``"calibration"``: names the default
            files (``<task>_report.html``, ``<task>_verification.json``), the
            :class:`~figaroh.utils.results_manager.ResultsManager` task and
            the messages.
        is_solved: ``run`` → whether ``solve()`` produced results.
        results: ``run`` → the results dict saved and plotted by the results manager.
        verification: ``(run, thresholds, scope)`` → the task's verdict.
        html_report: ``(run, output_path, verdict)`` → writes the HTML report.
        quality_report: ``run`` → the plain-text quality report.
        plots: ``run`` → the results-manager plots (may raise: ``basic_plots`` then runs).
        basic_plots: ``run`` → the basic plots.
        repr_fields: ``run`` → the ``name=value`` parts of ``repr``.
        parameter_table: ``run`` → the estimated parameters with σ, confidence
            interval and grade (a :class:`~figaroh._run.uncertainty.ParameterTable`,
            saved with the results), or None.
        missing_results: ``(run, action)`` → the warning logged instead of
            reporting / saving / plotting without results, or None; it may raise.
        show_plots: ``run`` → None, called after :meth:`RunServices.plot_results` drew.
    """

    task: str
    is_solved: Callable[[Any], bool]
    results: Callable[[Any], Dict[str, Any] | None]
    verification: Callable[[Any, Mapping[str, Mapping[str, Any]] | None, str], VerificationVerdict]
    html_report: Callable[[Any, str, Any], Any]
    quality_report: Callable[[Any], str]
    plots: Callable[[Any], Any]
    basic_plots: Callable[[Any], Any]
    repr_fields: Callable[[Any], List[str]]
    parameter_table: Callable[[Any], Any] = lambda run: None
    missing_results: Callable[[Any, str], str | None] = missing_results_warning
    show_plots: Callable[[Any], None] = lambda run: None


class RunServices:
    """Reports, verification, saving and plotting of a solved run (the one base of a run class).

    A subclass sets ``_hooks`` (:class:`TaskHooks`). Every method keeps the
    signature, defaults, return value and written files of the run classes'
    own methods.
    """

    #: The task pieces (set by each run class).
    _hooks: ClassVar[TaskHooks]

    results_manager: Any

    #: Folder the plots of the current ``solve()`` are written to (None: show only).
    _plot_folder: str | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._hooks.repr_fields(self))})"

    def verify(
        self,
        thresholds: Mapping[str, Mapping[str, Any]] | None = None,
        scope: str = "prediction",
    ) -> VerificationVerdict:
        """Scoped acceptance evidence of the solved run; it becomes the run's verdict.

        ``scope="execution"`` checks finite numerical outputs;
        ``scope="prediction"`` also requires independent validation and
        explicit error limits. Missing required evidence gives
        ``not_evaluated``; non-finite evidence fails; ``passed`` is True only
        when every required check passes.

        An argument left at its default takes the value of the task
        configuration's ``verification`` section (``thresholds``, ``scope``);
        without that section the policy is empty and the scope
        ``"prediction"``, so the verdict is ``not_evaluated``. The returned
        verdict is kept: :meth:`export_html_report`,
        :meth:`export_verification_report` and the archived run show it
        until the next ``verify()`` or ``solve()``.

        Args:
            thresholds: Metric name → ``{"threshold", "comparison", "required"}``;
                None: the configuration's ``verification.thresholds`` (else
                the task's empty default policy).
            scope: ``"execution"`` or ``"prediction"`` (the default, replaced
                by the configuration's ``verification.scope`` when it has one).

        Returns:
            The :class:`~figaroh._run.verdict.VerificationVerdict`.

        Raises:
            AttributeError: If ``solve()`` has not been run.
        """
        require_solved(self)
        thresholds, scope = _policy.resolve_policy(thresholds, scope, task_config(self))
        return keep_verdict(self, self._hooks.verification(self, thresholds, scope))

    def export_html_report(
        self,
        output_path: str | None = None,
        output_dir: str = "results",
        *,
        thresholds: Mapping[str, Mapping[str, Any]] | None = None,
        scope: str = "prediction",
        verdict: VerificationVerdict | None = None,
    ) -> str:
        """Write the self-contained HTML report.

        The report's verdict panel shows the run's verdict: the one the last
        :meth:`verify` of this ``solve()`` returned, else :meth:`verify` under
        the configuration's policy (computed once and kept). ``verdict``, or
        ``thresholds`` / a non-default ``scope`` (a new :meth:`verify`),
        replace it.

        Args:
            output_path: Destination file; default ``<output_dir>/<task>_report.html``
                (``output_dir`` is created).
            output_dir: Folder of the default destination.
            thresholds: Acceptance limits: verify again with them (as :meth:`verify`).
            scope: Verification scope; a value other than ``"prediction"``
                verifies again.
            verdict: An already computed verdict to show (overrides ``thresholds``).

        Returns:
            The path written.

        Raises:
            AttributeError: If ``solve()`` has not been run.
        """
        verdict = verdict_for(self, thresholds, scope, verdict)
        if output_path is None:
            make_folder(output_dir)
            output_path = os.path.join(output_dir, f"{self._hooks.task}_report.html")
        self._hooks.html_report(self, output_path, verdict)
        logger.info("HTML %s report written to %s", self._hooks.task, output_path)
        return output_path

    def export_verification_report(
        self,
        output_path: str | None = None,
        output_dir: str = "results",
        thresholds: Mapping[str, Mapping[str, Any]] | None = None,
        scope: str = "prediction",
        *,
        verdict: VerificationVerdict | None = None,
    ) -> str:
        """Write the run's verdict as strict JSON (``allow_nan=False``), atomically.

        The verdict is chosen as in :meth:`export_html_report`: the run's
        verdict (last :meth:`verify` of this ``solve()``, else the
        configuration's policy), replaced by ``verdict``, or by a new
        :meth:`verify` when ``thresholds`` or a non-default ``scope`` is given.
        The file holds ``{"schema_version": 1, **asdict(verdict),
        "stage_records": [...]}``, indented by 2, with every non-finite float
        stored as ``null``.

        Args:
            output_path: Destination file; default
                ``<output_dir>/<task>_verification.json`` (``output_dir`` is created).
            output_dir: Folder of the default destination.
            thresholds: Passed to :meth:`verify` (a new verdict).
            scope: Passed to :meth:`verify` when not ``"prediction"``.
            verdict: A verdict already computed by :meth:`verify` (then
                ``thresholds`` and ``scope`` are not used): written as it is.

        Returns:
            The path written.

        Raises:
            AttributeError: If ``solve()`` has not been run.
        """
        verdict = verdict_for(self, thresholds, scope, verdict)
        verdict_dict = dataclasses.asdict(verdict)
        if self.results_manager is not None:
            verdict_dict = self.results_manager._convert_for_serialization(verdict_dict)
        if output_path is None:
            make_folder(output_dir)
            output_path = os.path.join(output_dir, f"{self._hooks.task}_verification.json")
        atomic_write_text(
            output_path, _json_io.strict_json_text(with_schema(self, verdict_dict), indent=2)
        )
        logger.info("Verification report written to %s", output_path)
        return str(output_path)

    def print_quality_report(self) -> None:
        """Print the plain-text quality report to the terminal (documented report method)."""
        problem = self._hooks.missing_results(self, "report")
        if problem:
            logger.warning(problem)
            return
        print(self._hooks.quality_report(self))

    def save_results(
        self, output_dir: str = "results", *, include_arrays: bool = False
    ) -> Dict[str, str] | None:
        """Save the results as yaml, csv and npz under ``output_dir``.

        The files hold the parameters, their uncertainties, the metrics, the
        configuration, the stages and — when the run collected it — the run
        provenance (under ``"provenance"``); then, one entry per parameter in
        the order of the parameter values, ``"sigma"`` (absolute standard
        deviation), ``"ci_low"`` / ``"ci_high"`` (the confidence interval
        ``θ̂ ± t_{1−α/2, n−p} σ``), ``"grade"`` (the reports' grade) and the
        scalar ``"confidence_level"`` (columns of the CSV file); the per-sample arrays
        (regressor, effort trajectories, per-posture residuals) are written
        only with ``include_arrays=True``, into the compressed NPZ file. See
        :meth:`figaroh.utils.results_manager.ResultsManager.save_results` for
        the layout; file names never collide with another save, even from
        another process at the same second.

        Args:
            output_dir: Destination folder (created if needed).
            include_arrays: Also write the per-sample arrays into the NPZ file.

        Returns:
            ``{format: path}`` of the files written, or None without results
            (a :class:`UserWarning` and a logged warning say to call
            ``solve()`` first; figaroh 1.0.2 returned None, so a script keeps
            running).
        """
        problem = self._hooks.missing_results(self, "save")
        if problem:
            logger.warning(problem)
            warnings.warn(problem, UserWarning, stacklevel=2)
            return None
        if self.results_manager is None:
            self.results_manager = make_results_manager(self)
        data = self.results_manager.result
        provenance = getattr(self, "_run_provenance", None)
        if data and isinstance(provenance, Mapping) and "provenance" not in data:
            data = {**data, "provenance": provenance}
        data = _with_confidence(data, self._hooks.parameter_table(self))
        saved = self.results_manager.save_results(
            data,
            output_dir=output_dir,
            save_formats=list(SAVE_FORMATS),
            include_arrays=include_arrays,
        )
        for fmt, path in (saved or {}).items():
            logger.info("  %s: %s", fmt, path)
        return saved

    def plot_results(self) -> Any:
        """Plot the results: results-manager plots, basic plots when those fail.

        Without a results manager the basic plots are drawn directly. Nothing
        is drawn when no folder was asked for (:func:`plot_into`) and no
        display can show the figures (:func:`figures_hidden`).

        Returns:
            What the plotting callable returned; ``[]`` (None without a
            results manager) when the figures are hidden; None (with a
            warning) without results.
        """
        hooks = self._hooks
        problem = hooks.missing_results(self, "plot")
        if problem:
            logger.warning(problem)
            return None
        if figures_hidden(self):
            out: Any = None if self.results_manager is None else []
        elif self.results_manager is None:
            out = hooks.basic_plots(self)
        else:
            out = plot_with_fallback(
                lambda: hooks.plots(self), lambda: hooks.basic_plots(self), logger, hooks.task
            )
        hooks.show_plots(self)
        return out


def _with_confidence(data: Any, table: Any) -> Any:
    """``data`` with the table's ``sigma``, ``ci_low``, ``ci_high``, ``grade`` and level added.

    Nothing is added without a table, without data, or when ``data`` already
    holds one of those keys (a results dict is never overwritten).
    """
    keys = ("sigma", "ci_low", "ci_high", "grade", "confidence_level")
    if not data or table is None or any(k in data for k in keys):
        return data
    return {
        **data,
        "sigma": table.column("sigma"),
        "ci_low": table.column("ci_low"),
        "ci_high": table.column("ci_high"),
        "grade": [r.grade.label for r in table.rows],
        "confidence_level": float(table.level),
    }


# ---------------------------------------------------------------------- run helpers
# Plain functions over a RunServices object: the results manager, the plot
# folder of the current solve() and the run's verdict store. They are not
# methods, so a run class carries only its documented methods and hooks.
def require_solved(run: RunServices) -> None:
    """Raise :class:`AttributeError` unless the run is solved."""
    if not run._hooks.is_solved(run):
        raise AttributeError(f"No {run._hooks.task} results available. Run solve() first.")


def make_results_manager(run: RunServices) -> ResultsManager:
    """A results manager for the run's task and results, named after the robot.

    The name is ``robot_name`` (when set), else the model name, else the
    class name in lower case without the task word.
    """
    task = run._hooks.task
    name = (
        getattr(run, "robot_name", None)
        or getattr(getattr(run, "model", None), "name", None)
        or type(run).__name__.lower().replace(task, "")
    )
    return ResultsManager(task, name, run._hooks.results(run))


def plot_into(run: RunServices, folder: str | os.PathLike | None) -> Any:
    """:meth:`plot_results` with the figures written into ``folder`` (None: shown only)."""
    previous = run._plot_folder
    run._plot_folder = None if folder is None else os.fspath(folder)
    try:
        return run.plot_results()
    finally:
        run._plot_folder = previous


def report_solution(
    run: RunServices,
    verbose: bool,
    plotting: bool,
    save_plots: str | os.PathLike | None,
    save_results: bool,
    html_report: bool,
) -> None:
    """The side effects a ``solve()`` was asked for, through the overridable report methods.

    In order: :meth:`~RunServices.print_quality_report` (``verbose``), the
    plots into ``save_plots`` (``plotting``, see :func:`plot_into`),
    :meth:`~RunServices.save_results` and :meth:`~RunServices.export_html_report`,
    each called through the run so a subclass's override is used.
    """
    if verbose:
        run.print_quality_report()
    if plotting:
        plot_into(run, save_plots)
    if save_results:
        run.save_results()
    if html_report:
        run.export_html_report()


def figures_hidden(run: RunServices) -> bool:
    """True when no folder was asked for and no display can show the figures.

    ``plotting=True`` then draws nothing and writes nothing (as without a
    display in figaroh 1.0.2); ``solve(save_plots=FOLDER)`` writes PNGs.
    """
    try:
        headless = _result_plots._is_headless()
    except ImportError:  # no matplotlib: the plotting layer warns and draws nothing
        return False
    if run._plot_folder is None and headless:
        logger.info(
            "plotting: no display (non-interactive matplotlib backend), figures not drawn; "
            "solve(save_plots=FOLDER) writes them as PNG files"
        )
        return True
    return False


def task_config(run: RunServices) -> Mapping[str, Any] | None:
    """The converted task configuration (``identif_config`` / ``calib_config``), if any."""
    for name in ("identif_config", "calib_config"):
        config = getattr(run, name, None)
        if isinstance(config, Mapping):
            return config
    return None


def solve_key(run: RunServices) -> tuple:
    """Identity of the current ``solve()``: its provenance record and results dict.

    Both are new objects after every ``solve()``, so a verdict stored with
    this key is recognised as stale once the run is solved again.
    """
    return (getattr(run, "_run_provenance", None), run._hooks.results(run))


def stored_verdict(run: RunServices) -> VerificationVerdict | None:
    """The verdict kept for the current ``solve()`` (None: none, or a previous solve's)."""
    stored = run.__dict__.get("_verdict_store")
    if stored is None:
        return None
    key, verdict = stored
    current = solve_key(run)
    if len(key) != len(current) or any(a is not b for a, b in zip(key, current, strict=True)):
        return None
    return verdict


def keep_verdict(run: RunServices, verdict: VerificationVerdict) -> VerificationVerdict:
    """Make ``verdict`` the run's verdict (shown by every later export)."""
    run.__dict__["_verdict_store"] = (solve_key(run), verdict)
    return verdict


def verdict_for(
    run: RunServices,
    thresholds: Mapping[str, Mapping[str, Any]] | None,
    scope: str,
    verdict: VerificationVerdict | None,
) -> VerificationVerdict:
    """The verdict an export shows.

    ``verdict`` when given (it becomes the run's verdict); a new
    :meth:`verify` when ``thresholds`` or a scope other than the default
    is given; else the run's verdict (the last :meth:`verify` of this
    ``solve()``), computed with the configuration's policy the first time.
    """
    require_solved(run)
    if verdict is not None:
        return keep_verdict(run, verdict)
    if not _policy.is_default_request(thresholds, scope):
        return run.verify(thresholds=thresholds, scope=scope)
    return stored_verdict(run) or run.verify()


def current_verdict(run: RunServices) -> VerificationVerdict:
    """The run's verdict: the last :meth:`verify` of this ``solve()``, else :meth:`verify`."""
    return verdict_for(run, None, _policy.DEFAULT_SCOPE, None)
