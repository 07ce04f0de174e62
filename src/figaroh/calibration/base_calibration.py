"""Base class for geometric (kinematic) calibration.

Workflow:

1. ``BaseCalibration(robot, config_file)`` — parse the configuration into
   ``calib_config``;
2. :meth:`initialize` — :meth:`load_data_set` (measured poses and postures
   through :class:`~figaroh.data.observations.PoseObservations`) then
   :meth:`create_param_list` (structural selection of the identifiable
   joint parameters, base/tip frame names, frame-absorbed parameters removed
   on the measured data — or one of the non-structural estimation methods of
   :mod:`figaroh.calibration.estimation`), then the data checks
   (``joint_limits``, ``measurement_units``, ``identifiability``: findings
   in ``data_checks``, warnings, never a change of the fit);
3. :meth:`solve` — ``scipy.optimize.least_squares`` (Levenberg–Marquardt,
   finite-difference Jacobian, figaroh 1.0.2's arguments; the analytic
   Jacobian is an option, ``parameters.jacobian: analytic``) on the weighted
   log-map residuals, outlier exclusion, evaluation metrics, the data
   checks at the solution (``outlier_fraction``, ``identifiability``),
   uncertainty, held-out validation and the quality report;
4. reports and exports — :meth:`print_quality_report`,
   :meth:`export_html_report`, :meth:`verify`,
   :meth:`export_verification_report`, :meth:`archive_run`,
   :meth:`joint_corrections` (for ``figaroh.tools.urdf_exporter.export_urdf``),
   :meth:`metrology_frames`.

The numerical work is done by the steps of
:mod:`figaroh.calibration._pipeline` (plain functions of frozen records, in
the order of :data:`~figaroh.calibration._pipeline.STEP_ORDER`); this class
is the orchestrator: it calls its hooks, builds the records from its state
and stores the step results in its run record
(:class:`~figaroh.calibration._pipeline.records.CalibrationRun`), behind the
1.0.2 attributes.

Residual of posture ``s`` and marker ``k`` (body frame, default):
``ξ = log6(M_meas⁻¹ · M_est)`` restricted to the measured components, in
metres and radians; the default cost weights position rows by
``1/σ_position`` and orientation rows by ``1/σ_orientation``
(``calib_config["measurement_std"]``, defaults 1 mm and 0.01 rad).

Error convention of the metrics: ``rmse`` is ``sqrt(mean(e²))`` with ``e``
the **per-point Euclidean norm** over the measured components (a point is
one marker at one posture); per-component figures are reported separately
(``per_dof_stats``, ``pos_rmse_component_mm``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from datetime import datetime, timezone
from typing import Any, List, Sequence, Tuple

import numpy as np

from figaroh._run.result_plots import _is_headless
from figaroh._run.task_services import RunServices
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration import estimation
from figaroh.calibration._checks import CalibrationDataChecks
from figaroh.calibration._corrections import CalibrationCorrections, is_kinematic_correction
from figaroh.calibration._data import CalibrationData
from figaroh.calibration._evaluation import CalibrationEvaluation
from figaroh.calibration._objective import CalibrationObjective
from figaroh.calibration._parameters import CalibrationParameters
from figaroh.calibration._pipeline.estimators import estimate
from figaroh.calibration._pipeline.layout import structural_layout
from figaroh.calibration._pipeline.outliers import fit_with_outlier_exclusion
from figaroh.calibration._pipeline.records import (
    CalibrationRun,
    EstimationProblem,
    EstimationSettings,
)
from figaroh.calibration._pipeline.results import assemble_results
from figaroh.calibration._pipeline.uncertainty import (
    CORRELATION_THRESHOLD,
)
from figaroh.calibration._plots import CalibrationPlots
from figaroh.calibration._report import format_quality_report as _format_quality_report
from figaroh.calibration._report import verify_calibration
from figaroh.calibration.calibration_tools import (
    calc_updated_fkm,
    calculate_base_kinematics_regressor,
    drop_calibration_parameters,
    estimate_frames_closed_form,
    initialize_variables,
    measurement_jacobian,
    select_identifiable_parameters,
)
from figaroh.calibration.config import load_calibration_config, unified_to_legacy_config
from figaroh.calibration.parameter import BASE_TPL, EE_TPL, add_base_name, add_pee_name
from figaroh.tools.provenance import collect_run_provenance
from figaroh.tools.report import generate_calibration_report
from figaroh.tools.run_archive import archive_run as _archive_run
from figaroh.tools.run_archive import compute_run_dir
from figaroh.tools.stages import drop_stage, record_stage, stages_as_dicts, stages_line
from figaroh.utils.error_handling import CalibrationError, handle_calibration_errors
from figaroh.utils.results_manager import plot_with_fallback
from figaroh.utils.unified_config import (
    UnifiedConfigParser,
    create_task_config,
    require_unified_config,
)

logger = logging.getLogger(__name__)

__all__ = [
    "BaseCalibration",
    "CORRELATION_THRESHOLD",
    # Re-exported for figaroh 1.0.2 compatibility.
    "CalibrationError",
    "UnifiedConfigParser",
    "add_base_name",
    "add_pee_name",
    "calc_updated_fkm",
    "calculate_base_kinematics_regressor",
    "create_task_config",
    "drop_calibration_parameters",
    "estimate_frames_closed_form",
    "handle_calibration_errors",
    "initialize_variables",
    "measurement_jacobian",
    "plot_with_fallback",
    "require_unified_config",
    "select_identifiable_parameters",
    "unified_to_legacy_config",
]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class _RunField:
    """Attribute stored in the instance's :class:`CalibrationRun` record."""

    def __init__(self, field: str) -> None:
        self.field = field

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(_run_of(obj), self.field)

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__["_run"] = dataclasses.replace(_run_of(obj), **{self.field: value})


def _run_of(obj: Any) -> CalibrationRun:
    run = obj.__dict__.get("_run")
    if run is None:
        run = obj.__dict__["_run"] = CalibrationRun()
    return run


class BaseCalibration(
    RunServices,
    CalibrationData,
    CalibrationDataChecks,
    CalibrationObjective,
    CalibrationParameters,
    CalibrationEvaluation,
    CalibrationCorrections,
    CalibrationPlots,
):
    """Geometric calibration of a kinematic chain from measured poses or points.

    Robot-specific subclasses usually override only :meth:`cost_function`; a
    robot with another file format overrides :meth:`load_data_set`.

    Least squares: ``scipy.optimize.least_squares(self._objective, x,
    method=method, max_nfev=1000)`` — figaroh 1.0.2's call, finite-difference
    Jacobian and default tolerances. ``calib_config["jacobian"] = "analytic"``
    (config ``parameters.jacobian: analytic``) passes the analytic Jacobian of
    :meth:`cost_jacobian` instead (a subclass that overrides the cost then
    overrides :meth:`cost_jacobian` too).

    Hooks (methods the workflow calls through the instance, where figaroh
    1.0.2 calls them; an override is used there with the same arguments and
    return value):

    * ``__init__`` → :meth:`load_param`;
    * :meth:`initialize` → :meth:`load_data_set` (→ :meth:`_load_validation_data`),
      :meth:`create_param_list` (→ :meth:`_record_full_mapping`,
      :meth:`eliminate_absorbed_parameters`);
    * :meth:`solve` → :meth:`solve_optimisation` (→ :meth:`initial_frame_guess`,
      :meth:`_optimize_with_outlier_removal` → :meth:`_setup_logging` when
      ``enable_logging``, :meth:`_objective` → :meth:`cost_function` →
      :meth:`_compute_logmap_residuals`, :meth:`apply_measurement_weighting`;
      :meth:`_sample_position_errors`, :meth:`_sample_rows`),
      :meth:`_evaluate_solution` (→ :meth:`calc_stddev`),
      :meth:`_log_iteration_results`, :meth:`_store_optimization_results` (→
      :meth:`get_pose_from_measure`, :meth:`_compute_validation_metrics`),
      :meth:`print_quality_report`, :meth:`plot_results` (→
      :meth:`plot_errors_distribution`, :meth:`plot_3d_poses` without a
      results manager), :meth:`save_results`, :meth:`export_html_report`;
    * :meth:`joint_corrections` → :meth:`require_exportable`,
      :meth:`redistribute_parameters`; :meth:`export_verification_report` →
      :meth:`verify`.

    The outlier exclusion, the evaluation metrics and the validation metrics
    take their residuals from ``self._compute_logmap_residuals(measured,
    calc_updated_fkm(...))``.

    Args:
        robot: Object exposing a Pinocchio ``model``, ``data`` and the neutral
            configuration ``q0`` (e.g. :class:`figaroh.tools.robot.Robot`).
        config_file: Unified configuration YAML with a ``tasks.calibration``
            section (a legacy flat file is accepted with a
            ``DeprecationWarning``).
        del_list: 0-based data rows to mask (invalid postures).

    Attributes:
        calib_config: Flat settings.
        PEE_measured: Flat measured vector [m, rad] (after :meth:`load_data_set`).
        q_measured: (NbSample, nq) configurations.
        observations: The loaded :class:`PoseObservations`.
        LM_result: ``scipy.optimize.OptimizeResult`` of the last fit.
        evaluation_metrics: Metrics of the last fit (``rmse``, ``n_outliers``,
            ``condition_number``, ...).
        results_data: Everything stored by the last :meth:`solve`.
        stages: Stage records (``data``, ``fit``, ``validation``, ``export``).
        data_checks: Findings of the physical-plausibility checks of the data
            (:mod:`figaroh.calibration._pipeline.data_checks`), run by
            :meth:`initialize` and after the fit; a failure is logged as a
            warning, marks stage ``data`` failed and fails :meth:`verify`.
        STATUS: ``"NOT CALIBRATED"`` or ``"CALIBRATED"``.

    Raises:
        CalibrationError: missing model/data, unreadable or invalid
            configuration, no data file configured.
    """

    # 1.0.2 attributes, stored in the run record (:class:`CalibrationRun`).
    observations = _RunField("observations")
    PEE_measured = _RunField("PEE_measured")
    q_measured = _RunField("q_measured")
    _val_observations = _RunField("val_observations")
    _PEE_val = _RunField("PEE_val")
    _q_val = _RunField("q_val")
    _val_available = _RunField("val_available")
    LM_result = _RunField("LM_result")
    var_ = _RunField("var_")
    uncalib_values = _RunField("uncalib_values")
    evaluation_metrics = _RunField("evaluation_metrics")
    results_data = _RunField("results_data")
    outlier_indices = _RunField("outlier_indices")
    std_dev = _RunField("std_dev")
    std_pctg = _RunField("std_pctg")
    _C_param = _RunField("C_param")
    _excluded_rows = _RunField("excluded_rows")
    _outlier_threshold = _RunField("outlier_threshold")
    estimation_report = _RunField("estimation_report")
    _PEE_dist = _RunField("PEE_dist")
    _run_provenance = _RunField("run_provenance")

    @handle_calibration_errors
    def __init__(self, robot: Any, config_file: str = "config/robot_config.yaml", del_list=None):
        if not hasattr(robot, "model") or not hasattr(robot, "data"):
            raise CalibrationError(
                "robot must expose a Pinocchio 'model' and 'data' (e.g. figaroh.tools.robot.Robot)"
            )
        self._run = CalibrationRun()
        self.robot = robot
        self.model = robot.model
        self.data = robot.data
        self.del_list_ = list(del_list) if del_list is not None else []
        self._config_file_path = str(config_file)
        self.stages: List[Any] = []
        self.load_param(config_file)
        self.nvars = len(self.calib_config["param_name"])
        self._data_path = self._resolve_path(self.calib_config.get("data_file"), "data.source_file")
        self.STATUS = "NOT CALIBRATED"
        self.results_manager = None
        self._layout_cache: Tuple[Tuple[str, ...], Any] | None = None
        self._warned_default_cost = False
        logger.info("%s initialized", self.__class__.__name__)

    # ------------------------------------------------------------------ configuration
    def load_param(self, config_file: str, setting_type: str = "calibration") -> None:
        """Load ``calib_config`` from a unified (or legacy, deprecated) YAML file.

        Args:
            config_file: Path of the configuration file.
            setting_type: Task / section name (``"calibration"``).

        Raises:
            CalibrationError: ``"Configuration file not found: …"`` or
                ``"Failed to load configuration: …"`` (the cause names the key).
        """
        self._config_file_path = str(config_file)
        self.calib_config = load_calibration_config(self.robot, config_file, setting_type)

    # ------------------------------------------------------------------ data (see _data)
    def initialize(self) -> None:
        """:meth:`load_data_set` then :meth:`create_param_list`.

        Raises:
            CalibrationError: ``"Initialization failed: …"``.
        """
        try:
            self.load_data_set()
            self.create_param_list()
            self._check_input_data()
        except Exception as exc:
            raise CalibrationError(f"Initialization failed: {exc}") from exc

    # ---------------------------------------------- parameters (steps layout, estimation)
    def create_param_list(self, q: np.ndarray | None = None) -> bool:
        """Build ``calib_config["param_name"]``.

        Structural method: QR selection of the joint parameters on random
        postures (``q`` forwarded when given), base names unless
        ``known_baseframe``, tip names unless ``known_tipframe``, then
        elimination of the parameters the frames absorb on the measured data
        (:meth:`eliminate_absorbed_parameters`). Other methods: the registered
        estimator of ``calib_config["estimation"]["method"]`` (see
        :mod:`figaroh.calibration._pipeline.estimators`).

        Raises:
            CalibrationError: ``"Parameter list creation failed: …"`` (e.g. a
                missing ``known_baseframe`` key).
        """
        try:
            method = estimation.settings(self.calib_config)["method"]
            if method != "structural":
                self._configure_estimation()
                self._layout_cache = None
                return True
            self._apply_layout(structural_layout(self.model, self.data, self.calib_config, q))
            self._layout_cache = None
            if self.q_measured is not None and self.PEE_measured is not None:
                self.eliminate_absorbed_parameters()
            cfg = self.calib_config
            self.nvars = len(cfg["param_name"])
            logger.info("%d calibration parameters: %s", self.nvars, ", ".join(cfg["param_name"]))
            return True
        except CalibrationError:
            raise
        except Exception as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise CalibrationError(f"Parameter list creation failed: {msg}") from exc

    def eliminate_absorbed_parameters(self, tol: float = 1e-4) -> List[str]:
        """Drop joint parameters that the estimated frames absorb on the measured data.

        The ``structural`` estimator: the measurement Jacobian (derivative of
        the predicted measurements
        :func:`~figaroh.calibration.calibration_tools.calc_updated_fkm`, see
        :meth:`_identifiability_jacobian`) at the closed-form frame guess
        (joint parameters 0) is scanned with
        :func:`~figaroh.calibration.calibration_tools.select_identifiable_parameters`
        (frames always kept). Skipped when
        ``calib_config["eliminate_absorbed_parameters"]`` is False.

        Returns:
            The dropped names (also in ``calib_config["absorbed_param_name"]``).
        """
        cfg = self.calib_config
        if not cfg.get("eliminate_absorbed_parameters", True):
            return []
        if self.q_measured is None or self.PEE_measured is None:
            raise CalibrationError("eliminate_absorbed_parameters: call load_data_set() first")
        names = list(cfg["param_name"])
        frames = self._frame_param_names()
        problem = EstimationProblem(
            names=tuple(names),
            frames=tuple(frames),
            joint_names=tuple(n for n in names if n not in set(frames)),
            prior_groups={},
            settings=EstimationSettings(method="structural", absorbed_tol=float(tol)),
            model=self._residual_model(),
        )
        absorbed = list(estimate(problem, "structural").absorbed)
        if absorbed:
            ct.drop_calibration_parameters(cfg, absorbed)
            self._layout_cache = None
        cfg["absorbed_param_name"] = list(absorbed)
        self.nvars = len(cfg["param_name"])
        return list(absorbed)

    # ------------------------------------------------------------------ solving (step outliers)
    def solve(
        self,
        method: str = "lm",
        max_iterations: int = 3,
        outlier_threshold: float | None = None,
        enable_logging: bool = True,
        plotting: bool = False,
        save_results: bool = False,
        html_report: bool = False,
        *,
        verbose: bool = True,
        save_plots: str | os.PathLike | None = None,
    ):
        """Fit, evaluate, store and report.

        Side effects: the quality report is printed unless ``verbose=False``
        (the numbers are the same either way); ``plotting`` shows the figures
        with an interactive matplotlib backend and draws nothing without one;
        no file is written unless ``save_plots``, ``save_results`` or
        ``html_report`` asks for it.

        Args:
            method: ``scipy.optimize.least_squares`` method (``"lm"``, ``"trf"``, ``"dogbox"``).
            max_iterations: Maximum number of fits of the outlier loop.
            outlier_threshold: Per-sample position error [m] above which a
                posture is excluded (default ``calib_config["outlier_eps"]``).
            enable_logging: Log the final results.
            plotting: Show the plots (with an interactive backend; see
                ``save_plots`` to write them).
            save_results: Save the results (see :meth:`save_results`).
            html_report: Write the HTML report.
            verbose: Print the quality report on stdout (figaroh 1.0.2 always
                printed it); ``False`` prints nothing.
            save_plots: With ``plotting``, write the figures as PNG files into
                this folder (created) instead of showing them.

        Returns:
            The SciPy ``OptimizeResult``.
        """
        self._run_started_at = _now()
        drop_stage(self, "export")
        self._ensure_input_checks()
        try:
            result, outliers = self.solve_optimisation(
                method=method,
                max_iterations=max_iterations,
                outlier_threshold=outlier_threshold,
                enable_logging=enable_logging,
            )
        except Exception as exc:
            record_stage(self, "fit", "failed", f"{type(exc).__name__}: {exc}")
            raise
        evaluation = self._evaluate_solution(result, outliers)
        self._check_fit_data(result)
        record_stage(
            self,
            "fit",
            "ok" if result.success else "failed",
            str(result.message),
            {
                "rmse": (
                    evaluation["rmse"],
                    "m (per-point norm; rad mixed in when orientation is measured)",
                ),
                "parameters": len(result.x),
                "excluded_outliers": len(outliers),
            },
        )
        self._run_finished_at = _now()
        if enable_logging:
            self._log_iteration_results(result, evaluation)
        self._store_optimization_results(result, evaluation, outliers)
        if verbose:
            self.print_quality_report()
        if plotting:
            self._plot_into(save_plots)
        if save_results:
            self.save_results()
        if html_report:
            self.export_html_report()
        return result

    def solve_optimisation(
        self,
        var_init: Sequence[float] | None = None,
        method: str = "lm",
        max_iterations: int = 3,
        outlier_threshold: float | None = None,
        enable_logging: bool = False,
    ):
        """Run the outlier-exclusion loop.

        Returns:
            ``(result, excluded_sample_indices)``.

        Raises:
            CalibrationError: data not loaded, no parameters, fewer
                measurement rows than parameters, or the optimisation failed.
        """
        if self.PEE_measured is None or self.q_measured is None:
            raise CalibrationError("Call load_data_set() first")
        names = list(self.calib_config.get("param_name", []))
        if not names:
            raise CalibrationError(
                "no calibration parameters: call create_param_list() (or initialize()) first"
            )
        x0 = (
            self._initial_vector()
            if var_init is None
            else np.asarray(var_init, dtype=float).ravel()
        )
        if x0.size != len(names):
            raise CalibrationError(
                f"var_init has {x0.size} values for {len(names)} parameters ({names[:6]}...)"
            )
        self._check_problem_size(len(names))
        self._excluded_rows = np.zeros(0, dtype=int)
        self._check_structural_identifiability(x0)
        try:
            result, excluded, _ = self._optimize_with_outlier_removal(
                x0, method, max_iterations, outlier_threshold, enable_logging
            )
        except CalibrationError:
            raise
        except Exception as exc:
            raise CalibrationError(f"Optimization failed: {exc}") from exc
        return result, excluded

    def _optimize_with_outlier_removal(
        self,
        x0: np.ndarray,
        method: str = "lm",
        max_iterations: int = 3,
        outlier_threshold: float | None = None,
        enable_logging: bool = False,
    ):
        """Hook: the fits with iterative exclusion of outlier postures.

        Each fit is ``scipy.optimize.least_squares(self._objective, x,
        method=method, max_nfev=1000)``; after each one the unweighted
        residuals ``self._compute_logmap_residuals(PEE_measured,
        calc_updated_fkm(x))`` give the per-posture position errors
        (:meth:`_sample_position_errors`); postures above the threshold [m]
        are excluded (their rows, :meth:`_sample_rows`, zeroed in the
        objective) and the fit repeated from the last solution, at most
        ``max_iterations`` fits.

        Returns:
            ``(result, excluded_sample_indices, residuals)``.
        """
        threshold = (
            outlier_threshold
            if outlier_threshold is not None
            else self.calib_config.get("outlier_eps")
        )
        self._outlier_threshold = threshold
        self._excluded_rows = np.zeros(0, dtype=int)
        log = self._setup_logging() if enable_logging else None

        def fit(x: np.ndarray, rows: np.ndarray):
            self._excluded_rows = rows
            return self._least_squares(x, method)

        out = fit_with_outlier_exclusion(
            x0,
            fit,
            self._logmap_residuals_at,
            self.PEE_measured,
            self._spec(),
            threshold,
            max_iterations,
            enable_logging,
            position_errors=self._sample_position_errors,
            rows_of=self._sample_rows,
            log=log,
        )
        self._excluded_rows = out.excluded_rows
        return out.result, out.excluded, out.residuals

    # ---------------------------------------------- storing (steps validation, results)
    def _store_optimization_results(self, result, evaluation, outliers) -> None:
        self.LM_result = result
        self.var_ = np.asarray(result.x, dtype=float)
        self.uncalib_values = np.zeros_like(self.var_)
        self.evaluation_metrics = evaluation
        self.outlier_indices = list(outliers)
        res = self._residual_array(self.var_)  # (N,K,c)
        est = self.get_pose_from_measure(self.var_)  # hook: predicted measurements
        self.results_data = assemble_results(
            self.calib_config["param_name"],
            self.var_,
            evaluation,
            res,
            self.PEE_measured,
            est,
            outliers,
            self.calib_config,
            self._spec(),
        )
        self._PEE_dist = self.results_data["rms residuals by samples"]  # (K, N)
        validation = self._compute_validation_metrics()
        if validation is not None:
            self.results_data["validation_metrics"] = validation
        self.results_data["stages"] = stages_as_dicts(self)
        self._run_provenance = collect_run_provenance(self, "calibration")
        self.results_manager = self._make_results_manager()
        self.STATUS = "CALIBRATED"

    # ------------------------------------------------------------------ reports
    def format_quality_report(self) -> str:
        """Plain-text quality report."""
        return _format_quality_report(self)

    def archive_run(self, root: str = "results/runs", html_report: bool = True) -> str:
        """Archive this run under ``root`` (``tools.run_archive``).

        Writes ``verdict.json`` (and ``report.html`` when the HTML reporter is
        available) into the run directory from
        :func:`~figaroh.tools.run_archive.compute_run_dir`, then calls
        :func:`~figaroh.tools.run_archive.archive_run`.

        Returns:
            The directory the run was archived in.
        """
        self._require_solved()
        run_dir = compute_run_dir(self, root)  # exists on return
        self.export_verification_report(output_path=str(run_dir / "verdict.json"))
        if html_report:
            try:
                self.export_html_report(output_path=str(run_dir / "report.html"))
            except ImportError:
                logger.info("figaroh.tools.report is not available: no report.html archived")
        return _archive_run(self, run_dir)

    def stages_line(self) -> str:
        """One-line stage summary (``data ok · fit ok · …``)."""
        return stages_line(self)

    # ------------------------------------------------------------------ run-service hooks
    # verify, export_html_report, export_verification_report, save_results,
    # plot_results, print_quality_report, _make_results_manager and __repr__
    # come from RunServices; these hooks give them the calibration pieces.
    _task = "calibration"

    def _is_solved(self) -> bool:
        return self.evaluation_metrics is not None and self.LM_result is not None

    def _results_record(self) -> dict | None:
        return self.results_data

    def _run_verification(self, thresholds, scope: str):
        return verify_calibration(self, thresholds, scope)

    def _generate_html_report(self, output_path: str, verdict: Any = None) -> Any:
        return generate_calibration_report(self, output_path=output_path, verdict=verdict)

    def _quality_report_text(self) -> str:
        return self.format_quality_report()

    def _missing_results_warning(self, action: str) -> str | None:
        if action == "plot":
            self._require_calibrated()  # raises CalibrationError before solve()
            return None
        if action == "save":
            if hasattr(self, "result"):
                return None
            return (
                f"save_results: no 'result' attribute on {type(self).__name__} (the figaroh "
                "1.0.2 contract); nothing saved. Use results_manager.save_results() directly."
            )
        if self.evaluation_metrics is None:
            return "No calibration results to report. Run solve() first."
        return None

    def _plot_primary(self) -> Any:
        if self._figures_hidden():
            return []
        rd = self.results_data
        folder = self._plot_folder
        return self.results_manager.plot_calibration_results(
            measured_poses=np.asarray(rd["PEE measured (2D array)"]).T,
            estimated_poses=np.asarray(rd["PEE estimated (2D array)"]).T,
            output_dir=folder,
            show=None if folder is None else False,
        )

    def _plot_fallback(self) -> None:
        if self._figures_hidden():
            return
        self.plot_errors_distribution()
        self.plot_3d_poses()

    def _show_plots(self) -> None:
        try:
            if self._plot_folder is not None or _is_headless():
                return  # written as files, or nothing can be shown
            import matplotlib.pyplot as plt

            plt.show()
        except Exception:  # noqa: BLE001 - headless
            pass

    def _repr_fields(self) -> List[str]:
        cfg = getattr(self, "calib_config", {}) or {}
        return [
            f"robot={getattr(self.model, 'name', '?')!r}",
            f"level={cfg.get('calib_model')!r}",
            f"frames={cfg.get('start_frame')!r}->{cfg.get('end_frame')!r}",
            f"markers={cfg.get('NbMarkers')}",
            f"samples={cfg.get('NbSample')}",
            f"params={len(cfg.get('param_name', []))}",
            f"status={getattr(self, 'STATUS', '?')!r}",
        ]

    # ------------------------------------------------------------------ logging helpers
    def _setup_logging(self) -> logging.Logger:
        """Hook: the logger of the per-fit messages (called when ``enable_logging``).

        :meth:`_optimize_with_outlier_removal` calls it once per
        :meth:`solve_optimisation` with ``enable_logging=True`` and logs each
        fit (cost, evaluations, exclusions) through the returned logger.

        Returns:
            ``logging.getLogger("calibration")``.
        """
        return logging.getLogger("calibration")

    def _log_iteration_results(self, result, evaluation) -> None:
        logger.info(
            "calibration: %s, cost %.6g, RMSE %.4g (per-point norm), %d outlier(s), cond %.3g",
            "converged" if result.success else "NOT converged",
            result.cost,
            evaluation["rmse"],
            evaluation["n_outliers"],
            evaluation["condition_number"],
        )

    def _prepare_next_iteration(self, result) -> np.ndarray:
        if result.success:
            return result.x
        return result.x + np.random.default_rng().normal(0.0, 1e-3, result.x.shape)


# BASE_TPL / EE_TPL are re-exported for subclasses that slice the parameter vector.
__all__ += ["BASE_TPL", "EE_TPL", "is_kinematic_correction"]
