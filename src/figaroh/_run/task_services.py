"""Run services shared by the identification and calibration run classes.

:class:`RunServices` implements once what a run object offers around its
numerical work — verification, the HTML and JSON reports, saving, plotting,
the terminal report, the results manager and ``repr`` — on top of a few small
*task hooks* that each run class supplies:

=============================  ============================================================
hook                           meaning
=============================  ============================================================
``_task``                      class attribute: ``"identification"`` or ``"calibration"``;
                               names the default files (``<task>_report.html``,
                               ``<task>_verification.json``), the
                               :class:`~figaroh.utils.results_manager.ResultsManager` task
                               and the messages
``_is_solved()``               whether ``solve()`` produced results
``_results_record()``          the results dict saved and plotted by the results manager
``_run_verification(t, s)``    the task's verdict for thresholds ``t`` and scope ``s``
``_generate_html_report(p)``   write the task's HTML report to path ``p``
``_quality_report_text()``     the plain-text quality report
``_plot_primary()``            results-manager plots (may raise: the fallback then runs)
``_plot_fallback()``           basic plots
``_repr_fields()``             the ``name=value`` parts of ``repr``
=============================  ============================================================

The plot folder of the current ``solve()`` and the run's verdict store are
plain module functions over the run object (:func:`plot_into`,
:func:`figures_hidden`, :func:`verdict_for`, :func:`current_verdict`, …), not
methods, so a run class carries only its documented methods and hooks.

Optional hooks with a default: ``_missing_results_warning(action)`` (the
warning logged instead of reporting / saving / plotting without results; it
may raise instead), ``_show_plots()`` (called after plotting; no-op),
``_require_solved()`` (raises :class:`AttributeError` unless
``_is_solved()``) and ``_parameter_table()`` (the σ, confidence intervals
and grades of the estimated parameters, a
:class:`~figaroh._run.uncertainty.ParameterTable`, saved with the results;
default None).

The run object must also carry a ``results_manager`` attribute (None until
first needed) and ``model`` (a Pinocchio model, for the robot name).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import warnings
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Mapping

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
    "current_verdict",
    "figures_hidden",
    "keep_verdict",
    "plot_into",
    "stored_verdict",
    "task_config",
    "verdict_for",
]

#: Formats written by :meth:`RunServices.save_results`.
SAVE_FORMATS = ("yaml", "csv", "npz")


class RunServices:
    """Reports, verification, saving and plotting of a solved run (mixin).

    See the module docstring for the task hooks a subclass supplies. Every
    method keeps the signature, defaults, return value and written files of
    the run classes' own methods.
    """

    #: Task name: ``"identification"`` or ``"calibration"``.
    _task: ClassVar[str] = ""

    results_manager: Any

    #: Folder the plots of the current ``solve()`` are written to (None: show only).
    _plot_folder: str | None = None

    # ------------------------------------------------------------------ task hooks
    def _is_solved(self) -> bool:
        """Whether ``solve()`` produced results (task hook)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _is_solved()")

    def _results_record(self) -> Dict[str, Any] | None:
        """Results dict handed to the results manager (task hook)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _results_record()")

    def _run_verification(
        self, thresholds: Mapping[str, Mapping[str, Any]] | None, scope: str
    ) -> VerificationVerdict:
        """The task's verdict of the solved run (task hook)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _run_verification()")

    def _generate_html_report(self, output_path: str, verdict: Any = None) -> Any:
        """Write the task's HTML report to ``output_path`` with ``verdict`` (task hook)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _generate_html_report()")

    def _quality_report_text(self) -> str:
        """Plain-text quality report (task hook)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _quality_report_text()")

    def _plot_primary(self) -> Any:
        """Results-manager plots (task hook)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _plot_primary()")

    def _plot_fallback(self) -> Any:
        """Basic plots used when the results-manager plots fail (task hook)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _plot_fallback()")

    def _repr_fields(self) -> List[str]:
        """``name=value`` parts of ``repr`` (task hook)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _repr_fields()")

    # ------------------------------------------------------------------ optional hooks
    def _missing_results_warning(self, action: str) -> str | None:
        """Warning for ``action`` (``"report"``, ``"save"``, ``"plot"``) without results.

        Returns:
            None when results exist, else ``"No <task> results to <action>.
            Run solve() first."``. An override may raise instead.
        """
        if self._is_solved():
            return None
        return f"No {self._task} results to {action}. Run solve() first."

    def _require_solved(self) -> None:
        """Raise :class:`AttributeError` unless :meth:`_is_solved`."""
        if not self._is_solved():
            raise AttributeError(f"No {self._task} results available. Run solve() first.")

    def _show_plots(self) -> None:
        """Called after :meth:`plot_results` drew its figures (default: nothing)."""

    def _parameter_table(self) -> Any:
        """The estimated parameters with σ, confidence interval and grade (default: None)."""
        return None

    # ------------------------------------------------------------------ services
    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._repr_fields())})"

    def _make_results_manager(self) -> ResultsManager:
        """A results manager for this task, named after the robot.

        The name is ``robot_name`` (when set), else the model name, else the
        class name in lower case without the task word.
        """
        name = (
            getattr(self, "robot_name", None)
            or getattr(getattr(self, "model", None), "name", None)
            or type(self).__name__.lower().replace(self._task, "")
        )
        return ResultsManager(self._task, name, self._results_record())

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
        self._require_solved()
        thresholds, scope = _policy.resolve_policy(thresholds, scope, task_config(self))
        return keep_verdict(self, self._run_verification(thresholds, scope))

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
            output_path = os.path.join(output_dir, f"{self._task}_report.html")
        self._generate_html_report(output_path, verdict=verdict)
        logger.info("HTML %s report written to %s", self._task, output_path)
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
            output_path = os.path.join(output_dir, f"{self._task}_verification.json")
        atomic_write_text(
            output_path, _json_io.strict_json_text(with_schema(self, verdict_dict), indent=2)
        )
        logger.info("Verification report written to %s", output_path)
        return str(output_path)

    def print_quality_report(self) -> None:
        """Print the plain-text quality report to the terminal (documented report method)."""
        problem = self._missing_results_warning("report")
        if problem:
            logger.warning(problem)
            return
        print(self._quality_report_text())

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
        problem = self._missing_results_warning("save")
        if problem:
            logger.warning(problem)
            warnings.warn(problem, UserWarning, stacklevel=2)
            return None
        if self.results_manager is None:
            self.results_manager = self._make_results_manager()
        data = self.results_manager.result
        provenance = getattr(self, "_run_provenance", None)
        if data and isinstance(provenance, Mapping) and "provenance" not in data:
            data = {**data, "provenance": provenance}
        data = _with_confidence(data, self._parameter_table())
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

        Without a results manager the basic plots are drawn directly.

        Returns:
            What the plotting callable returned, or None (with a warning)
            without results.
        """
        problem = self._missing_results_warning("plot")
        if problem:
            logger.warning(problem)
            return None
        if self.results_manager is None:
            out = self._plot_fallback()
        else:
            out = plot_with_fallback(self._plot_primary, self._plot_fallback, logger, self._task)
        self._show_plots()
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
# Plain functions over a RunServices object: the plot folder of the current
# solve() and the run's verdict store. They are not methods, so a run class
# carries only its documented methods and hooks.
def plot_into(run: RunServices, folder: str | os.PathLike | None) -> Any:
    """:meth:`plot_results` with the figures written into ``folder`` (None: shown only)."""
    previous = run._plot_folder
    run._plot_folder = None if folder is None else os.fspath(folder)
    try:
        return run.plot_results()
    finally:
        run._plot_folder = previous


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
    return (getattr(run, "_run_provenance", None), run._results_record())


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
    run._require_solved()
    if verdict is not None:
        return keep_verdict(run, verdict)
    if not _policy.is_default_request(thresholds, scope):
        return run.verify(thresholds=thresholds, scope=scope)
    return stored_verdict(run) or run.verify()


def current_verdict(run: RunServices) -> VerificationVerdict:
    """The run's verdict: the last :meth:`verify` of this ``solve()``, else :meth:`verify`."""
    return verdict_for(run, None, _policy.DEFAULT_SCOPE, None)
