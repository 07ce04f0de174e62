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
   :meth:`metrology_frames`;
5. the calibrated model — :meth:`predict` (poses of the measured frames at
   given postures).

The numerical work is done by the steps of
:mod:`figaroh.calibration._pipeline` (plain functions of frozen records, in
the order of :data:`~figaroh.calibration._pipeline.STEP_ORDER`); this class
is the orchestrator: it calls its hooks, builds the records from its state
and stores the step results in its run record
(:class:`~figaroh.calibration._pipeline.records.CalibrationRun`), behind the
1.0.2 attributes. Its one base is the shared
:class:`~figaroh._run.task_services.RunServices`; every method is a figaroh
1.0.2 method or hook or a documented addition, and delegates: the logic is in
plain functions of arrays and ``calib_config`` (``_parameters``, ``_checks``,
``_corrections``, ``_plots``, ``_data``, ``_evaluation``) and in the
least-squares objective collaborator
(:class:`~figaroh.calibration._objective.CalibrationObjective`, attribute
``_objective_model``), which calls the cost hooks through the instance.

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
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from figaroh._run.data_checks import DataChecks
from figaroh._run.result_plots import _is_headless
from figaroh._run.task_services import (
    RunServices,
    TaskHooks,
    make_results_manager,
    report_solution,
    require_solved,
)
from figaroh.calibration import _plots, estimation
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration._checks import data_stage, fit_findings, input_findings, input_key
from figaroh.calibration._corrections import (
    candidate_corrections,
    export_refusal,
    fitted_values,
    is_kinematic_correction,
    lifted_corrections,
    unsupported,
)
from figaroh.calibration._data import resolve_data_path
from figaroh.calibration._evaluation import fit_stage, validation_stage
from figaroh.calibration._objective import CalibrationObjective, rows_per_sample
from figaroh.calibration._parameters import check_problem_size, full_mapping, write_layout
from figaroh.calibration._pipeline import metrics as _metrics
from figaroh.calibration._pipeline import residuals as _residuals
from figaroh.calibration._pipeline.estimators import estimate
from figaroh.calibration._pipeline.layout import structural_layout
from figaroh.calibration._pipeline.observations import read_observations
from figaroh.calibration._pipeline.outliers import fit_with_outlier_exclusion
from figaroh.calibration._pipeline.prediction import CalibratedPoses, calibrated_poses
from figaroh.calibration._pipeline.records import (
    CalibrationRun,
    EstimationProblem,
    EstimationSettings,
)
from figaroh.calibration._pipeline.results import assemble_results, poses_2d
from figaroh.calibration._pipeline.uncertainty import (
    CORRELATION_THRESHOLD,
    correlated_pairs,
    parameter_uncertainty,
)
from figaroh.calibration._pipeline.validation import validation_metrics
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
from figaroh.calibration.settings import DEFAULT_SETTINGS as _DEFAULTS
from figaroh.tools.provenance import collect_run_provenance
from figaroh.tools.report import calibrator_parameter_table, generate_calibration_report
from figaroh.tools.run_archive import archive_run as _archive_run
from figaroh.tools.run_archive import compute_run_dir
from figaroh.tools.stages import drop_stage, record_stage, stages_as_dicts
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
    "CalibratedPoses",
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


# ---------------------------------------------------------------------- run-service hooks
# The calibration pieces of the shared run services (verify, the reports,
# save, plot, repr: figaroh._run.task_services), as functions of the run.
def _missing_results(calib: BaseCalibration, action: str) -> str | None:
    """The warning for ``action`` without results; plotting before ``solve()`` raises."""
    if action == "plot":
        _require_calibrated(calib.STATUS)  # raises CalibrationError before solve()
        return None
    if action == "save":
        if hasattr(calib, "result"):
            return None
        return (
            f"save_results: no 'result' attribute on {type(calib).__name__} (the figaroh "
            "1.0.2 contract); nothing saved. Use results_manager.save_results() directly."
        )
    if calib.evaluation_metrics is None:
        return "No calibration results to report. Run solve() first."
    return None


def _manager_plots(calib: BaseCalibration) -> Any:
    """The results manager's measured-vs-estimated pose plots."""
    rd = calib.results_data
    folder = calib._plot_folder
    return calib.results_manager.plot_calibration_results(
        measured_poses=np.asarray(rd["PEE measured (2D array)"]).T,
        estimated_poses=np.asarray(rd["PEE estimated (2D array)"]).T,
        output_dir=folder,
        show=None if folder is None else False,
    )


def _basic_plots(calib: BaseCalibration) -> None:
    """The residual distribution and 3-D pose plots, through the instance."""
    calib.plot_errors_distribution()
    calib.plot_3d_poses()


def _show_plots(calib: BaseCalibration) -> None:
    """Show the figures when a display can (not when they were written as files)."""
    try:
        if calib._plot_folder is not None or _is_headless():
            return  # written as files, or nothing can be shown
        import matplotlib.pyplot as plt

        plt.show()
    except Exception:  # noqa: BLE001 - headless
        pass


def _repr_fields(calib: BaseCalibration) -> List[str]:
    """Robot, model level, frames, markers, samples, parameters and status."""
    cfg = getattr(calib, "calib_config", {}) or {}
    return [
        f"robot={getattr(calib.model, 'name', '?')!r}",
        f"level={cfg.get('calib_model')!r}",
        f"frames={cfg.get('start_frame')!r}->{cfg.get('end_frame')!r}",
        f"markers={cfg.get('NbMarkers')}",
        f"samples={cfg.get('NbSample')}",
        f"params={len(cfg.get('param_name', []))}",
        f"status={getattr(calib, 'STATUS', '?')!r}",
    ]


_RUN_HOOKS = TaskHooks(
    task="calibration",
    is_solved=lambda calib: calib.evaluation_metrics is not None and calib.LM_result is not None,
    results=lambda calib: calib.results_data,
    verification=verify_calibration,
    html_report=lambda calib, output_path, verdict: generate_calibration_report(
        calib, output_path=output_path, verdict=verdict
    ),
    quality_report=lambda calib: calib.format_quality_report(),
    plots=_manager_plots,
    basic_plots=_basic_plots,
    repr_fields=_repr_fields,
    parameter_table=calibrator_parameter_table,
    missing_results=_missing_results,
    show_plots=_show_plots,
)


class BaseCalibration(RunServices):
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

    # verify, the reports, save_results, plot_results and repr (RunServices)
    _hooks = _RUN_HOOKS

    @handle_calibration_errors
    def __init__(
        self,
        robot: Any,
        config_file: str = "config/robot_config.yaml",
        del_list: Sequence[int] | None = None,
    ) -> None:
        if not hasattr(robot, "model") or not hasattr(robot, "data"):
            raise CalibrationError(
                "robot must expose a Pinocchio 'model' and 'data' (e.g. figaroh.tools.robot.Robot)"
            )
        self._run = CalibrationRun()
        self._objective_model = CalibrationObjective(self, BaseCalibration)
        self.robot = robot
        self.model = robot.model
        self.data = robot.data
        self.del_list_ = list(del_list) if del_list is not None else []
        self._config_file_path = str(config_file)
        self.stages: List[Any] = []
        self.data_checks = DataChecks()
        self._checked_inputs: tuple | None = None
        self.load_param(config_file)
        self.nvars = len(self.calib_config["param_name"])
        self._data_path = resolve_data_path(
            self.calib_config.get("data_file"), "data.source_file", self._config_file_path
        )
        self.STATUS = "NOT CALIBRATED"
        self.results_manager = None
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

    # ------------------------------------------------------------------ data (step observations)
    def initialize(self) -> None:
        """:meth:`load_data_set` then :meth:`create_param_list`, then the input data checks.

        Raises:
            CalibrationError: ``"Initialization failed: …"``.
        """
        try:
            self.load_data_set()
            self.create_param_list()
            _check_inputs(self)
        except Exception as exc:
            raise CalibrationError(f"Initialization failed: {exc}") from exc

    def set_data_file(self, path: str | os.PathLike, validation: bool = False) -> str:
        """Point the calibration (or its validation set) at another CSV.

        Args:
            path: CSV file (the layout of
                :meth:`~figaroh.data.observations.PoseObservations.from_csv`).
            validation: Set the held-out validation file instead.

        Returns:
            The absolute path used.
        """
        resolved = resolve_data_path(str(path), "data file", self._config_file_path)
        if validation:
            self.calib_config["validation_data_file"] = resolved
        else:
            self.calib_config["data_file"] = resolved
            self._data_path = resolved
        return resolved

    def load_data_set(self) -> None:
        """Read the measured poses and postures.

        Sets ``observations``, ``PEE_measured``, ``q_measured`` and
        ``calib_config["NbSample"]``, records the ``data`` stage and loads the
        validation set when ``validation_data_file`` is configured (through
        the :meth:`_load_validation_data` hook). Paths are resolved from the
        working directory, then beside the configuration file.

        Raises:
            CalibrationError: ``"Data loading failed: …"`` naming the file and
                the missing columns / NaN rows.
        """
        try:
            obs = read_observations(self._data_path, self.model, self.calib_config, self.del_list_)
        except Exception as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            record_stage(self, "data", "failed", f"{type(exc).__name__}: {msg}")
            raise CalibrationError(f"Data loading failed: {msg}") from exc
        self.observations = obs.source
        self.PEE_measured, self.q_measured = obs.measured, obs.q
        self.calib_config["NbSample"] = int(len(obs.q))
        record_stage(
            self,
            "data",
            "ok",
            f"PoseObservations from {Path(self._data_path).name}",
            {"samples": len(obs.q), "masked_samples": obs.masked_samples},
        )
        val = self.calib_config.get("validation_data_file")
        if val:
            self._load_validation_data(val)

    def _load_validation_data(self, path: str) -> None:
        """Hook: load the held-out validation CSV (a warning, never an error, when it fails)."""
        try:
            resolved = resolve_data_path(path, "data.validation_data_file", self._config_file_path)
            obs = read_observations(resolved, self.model, self.calib_config)
        except Exception as exc:  # noqa: BLE001 - documented: warning only
            logger.warning(
                "validation data file %s could not be loaded (%s); validation falls back to the "
                "training data",
                path,
                exc,
            )
            return
        self._val_observations = obs.source
        self._PEE_val, self._q_val = obs.measured, obs.q
        self._val_available = True

    @property
    def n_samples(self) -> int:
        """Number of loaded postures (``calib_config["NbSample"]``)."""
        return self._objective_model.n_samples

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
                estimation.configure(self)
                return True
            write_layout(
                self.calib_config, structural_layout(self.model, self.data, self.calib_config, q)
            )
            self._record_full_mapping()
            self._objective_model.forget_layout()
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

    def _record_full_mapping(self) -> None:
        """Hook: copies of the structural base mapping before any row is dropped.

        Called by :meth:`create_param_list` (structural method) before
        :meth:`eliminate_absorbed_parameters` drops rows; sets the ``*_full``
        mapping keys and ``base_frame_row_names``
        (:func:`~figaroh.calibration._parameters.full_mapping`), through which
        :meth:`redistribute_parameters` lifts the fit.
        """
        full_mapping(self.calib_config)

    def eliminate_absorbed_parameters(self, tol: float = 1e-4) -> List[str]:
        """Drop joint parameters that the estimated frames absorb on the measured data.

        The ``structural`` estimator: the measurement Jacobian (derivative of
        the predicted measurements
        :func:`~figaroh.calibration.calibration_tools.calc_updated_fkm`) at
        the closed-form frame guess (joint parameters 0) is scanned with
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
        frames = self._objective_model.frame_names()
        problem = EstimationProblem(
            names=tuple(names),
            frames=tuple(frames),
            joint_names=tuple(n for n in names if n not in set(frames)),
            prior_groups={},
            settings=EstimationSettings(method="structural", absorbed_tol=float(tol)),
            model=self._objective_model.residual_model(),
        )
        absorbed = list(estimate(problem, "structural").absorbed)
        if absorbed:
            ct.drop_calibration_parameters(cfg, absorbed)
            self._objective_model.forget_layout()
        cfg["absorbed_param_name"] = list(absorbed)
        self.nvars = len(cfg["param_name"])
        return list(absorbed)

    def drop_unidentifiable_parameters(self, tol: float = 1e-6) -> List[str]:
        """Remove parameters that are linear combinations of the others on the loaded postures.

        Scans the objective's measurement-row Jacobian at the initial vector
        (closed-form frames, joint parameters 0) in ``param_name`` order —
        frames included — and drops every dependent column (see
        :func:`~figaroh.calibration.calibration_tools.select_identifiable_parameters`).

        Returns:
            The dropped names (logged).

        Raises:
            CalibrationError: data or parameter list missing.
        """
        if self.PEE_measured is None or not self.calib_config.get("param_name"):
            raise CalibrationError("drop_unidentifiable_parameters: call initialize() first")
        objective = self._objective_model
        dependent = objective.dependent_parameters(objective.initial_vector(), tol)
        if dependent:
            ct.drop_calibration_parameters(self.calib_config, dependent)
            objective.forget_layout()
            self.nvars = len(self.calib_config["param_name"])
            logger.info("dropped unidentifiable parameters: %s", dependent)
        return dependent

    # ------------------------------------------------------------------ the cost and its hooks
    def initial_frame_guess(self) -> Dict[str, float]:
        """Closed-form base/tip frames for the nominal kinematics (see
        :func:`~figaroh.calibration.calibration_tools.estimate_frames_closed_form`)."""
        if self.PEE_measured is None or self.q_measured is None:
            return {}
        try:
            return ct.estimate_frames_closed_form(
                self.model, self.data, self.q_measured, self.PEE_measured, self.calib_config
            )
        except (ValueError, np.linalg.LinAlgError) as exc:
            logger.warning("closed-form frame estimate failed (%s); frames start at 0", exc)
            return {}

    def cost_function(self, var: ArrayLike) -> np.ndarray:
        """Hook: the residual rows the solver minimises (override per robot).

        Default (figaroh 1.0.2's)::

            est = calc_updated_fkm(self.model, self.data, var, self.q_measured, self.calib_config)
            r = self._compute_logmap_residuals(self.PEE_measured, est)
            return self.apply_measurement_weighting(r)

        (``r`` unweighted when the weighting raises ``KeyError`` /
        ``AttributeError``). With ``calib_config["jacobian"] = "analytic"``
        and no cost hook overridden, ``r`` is the body-frame residual of the
        full estimated poses (:meth:`measurement_residuals`, the residual
        :meth:`cost_jacobian` differentiates): the same per-point norms, the
        components of a position-only measurement rotated into the estimated
        end-effector frame.

        :meth:`solve` minimises whatever this method returns (outlier rows
        zeroed, prior rows appended). Emits a ``UserWarning`` (once per
        instance) naming the class.

        Args:
            var: Parameter values in ``calib_config["param_name"]`` order [m, rad].

        Returns:
            Flat residual rows (dimensionless after the default weighting).
        """
        return self._objective_model.default_cost(var)

    def cost_jacobian(self, var: ArrayLike) -> np.ndarray:
        """Analytic Jacobian of the default :meth:`cost_function` (``jacobian: analytic``).

        Rows ``w_i · ∂r_i/∂θ`` of the weighted body-frame log-map residuals
        (:meth:`measurement_residuals` with ``jacobian=True``, weights of
        :meth:`apply_measurement_weighting`). Used only when
        ``calib_config["jacobian"]`` is ``"analytic"``; a subclass that
        overrides :meth:`cost_function` (or one of its hooks) and wants the
        analytic option overrides this too, returning the Jacobian of its own
        rows.
        """
        return self._objective_model.default_cost_jacobian(var)

    def _compute_logmap_residuals(
        self,
        measured_flat: ArrayLike,
        estimated_flat: ArrayLike,
        *,
        position_frame: str = "body",
        n_samples: int | None = None,
    ) -> np.ndarray:
        """Hook: log-map residuals between two flat measurement vectors.

        ``ξ = log6(M_meas⁻¹ · M_est)`` per marker and posture (Pinocchio's
        ``log6``, as figaroh 1.0.2), restricted to the measured components
        [m, rad]; ``position_frame="world"`` replaces the linear part by
        ``p_est − p_meas``. The flat vectors carry only the measured
        components: the estimate's others are 0, the measurement's others (and
        its NaN entries) are copied from the estimate. With position-only data
        the body and world frames therefore coincide (``ξ = p_est − p_meas``).
        See :func:`~figaroh.calibration.calibration_tools.logmap_residuals`.

        Called through the instance by the default :meth:`cost_function`, by
        the outlier exclusion, the evaluation metrics (per-DOF table) and the
        validation metrics, always as
        ``self._compute_logmap_residuals(measured, calc_updated_fkm(...))``
        with ``calib_config["NbSample"]`` the number of postures compared. An
        override (same arguments, same flat return layout) is used at all
        these points.
        """
        return ct.logmap_residuals(
            measured_flat,
            estimated_flat,
            self.calib_config,
            position_frame=position_frame,
            n_samples=n_samples,
        )

    def apply_measurement_weighting(
        self,
        residuals: ArrayLike,
        pos_weight: float | None = None,
        orient_weight: float | None = None,
    ) -> np.ndarray:
        """Hook: weight the flat residual vector of the cost.

        Multiplies position rows by ``pos_weight`` [1/m] and orientation rows
        by ``orient_weight`` [1/rad]; defaults ``1/measurement_std.position``
        (1/0.001 m) and ``1/measurement_std.orientation`` (1/0.01 rad).

        The default :meth:`cost_function` returns
        ``self.apply_measurement_weighting(residuals)``: an override (same
        arguments, an array of rows in return) is what the solver minimises.
        """
        r = np.asarray(residuals, dtype=float)
        n = r.size // max(1, rows_per_sample(self.calib_config))
        return r * ct.measurement_weights(self.calib_config, n, pos_weight, orient_weight)

    def measurement_residuals(
        self,
        var: ArrayLike,
        jacobian: bool = False,
        *,
        position_frame: str = "body",
        q: np.ndarray | None = None,
        measured: ArrayLike | None = None,
    ) -> Tuple[np.ndarray, np.ndarray | None]:
        """Unweighted log-map residuals (flat layout) and, optionally, their Jacobian.

        Args:
            var: Parameter values (``param_name`` order) [m, rad].
            jacobian: Also return the analytic (rows, n_param) Jacobian.
            position_frame: ``"body"`` (default) or ``"world"``.
            q: Postures (default ``q_measured[:NbSample]``).
            measured: Flat measured vector matching ``q`` (default
                ``PEE_measured``).

        Returns:
            ``(r, J)`` with ``J`` None unless requested [m, rad].
        """
        return self._objective_model.measurement_residuals(
            var, jacobian, position_frame=position_frame, q=q, measured=measured
        )

    def get_pose_from_measure(self, res_: ArrayLike) -> np.ndarray:
        """Poses predicted by a parameter vector, in the layout of the measurements.

        ``calc_updated_fkm(model, data, res_, q_measured, calib_config)``:
        the measured components of every marker at every loaded posture, flat
        like ``PEE_measured`` (marker-major, then component, then posture)
        [m, rad]. At the solution of a noise-free calibration it reproduces
        ``PEE_measured``.

        Args:
            res_: Parameter values in ``calib_config["param_name"]`` order
                (e.g. ``solve(...).x``) [m, rad].

        Returns:
            Flat predicted measurement vector, same shape as ``PEE_measured``.

        Raises:
            CalibrationError: data not loaded, or ``res_`` does not match
                ``param_name``.
        """
        if self.q_measured is None:
            raise CalibrationError("get_pose_from_measure: call load_data_set() first")
        x = np.asarray(res_, dtype=float).ravel()
        names = list(self.calib_config.get("param_name", []))
        if x.size != len(names):
            raise CalibrationError(
                f"get_pose_from_measure: {x.size} values for {len(names)} parameters "
                f"(calib_config['param_name'])"
            )
        return ct.calc_updated_fkm(self.model, self.data, x, self.q_measured, self.calib_config)

    def _objective(self, var: ArrayLike) -> np.ndarray:
        """Hook: what the solver minimises: :meth:`cost_function` rows (excluded
        outlier rows zeroed) followed by the prior rows ``w_i · θ_i``."""
        return self._objective_model.objective(var)

    def _sample_position_errors(self, residuals: ArrayLike) -> np.ndarray | None:
        """Hook: per-sample position error [m]: worst marker's norm of the measured x/y/z rows."""
        return _residuals.sample_position_errors(residuals, self._objective_model.spec())

    def _sample_rows(self, samples: Sequence[int]) -> np.ndarray:
        """Hook: flat rows of the given samples (rows whose index modulo NbSample is listed)."""
        return _residuals.sample_rows(samples, len(self.PEE_measured), self.n_samples)

    # ------------------------------------------------------------------ solving (step outliers)
    def solve(
        self,
        method: str = "lm",
        max_iterations: int = _DEFAULTS.max_iterations,
        outlier_threshold: float | None = None,
        enable_logging: bool = True,
        plotting: bool = False,
        save_results: bool = False,
        html_report: bool = False,
        *,
        verbose: bool = True,
        save_plots: str | os.PathLike | None = None,
    ) -> Any:
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
        if self.PEE_measured is not None and self.q_measured is not None:
            key = input_key(self.PEE_measured, self.q_measured, self.calib_config)
            if self.calib_config.get("param_name") and self._checked_inputs != key:
                _check_inputs(self)
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
        _check_fit(self, result)
        record_stage(self, "fit", *fit_stage(result, evaluation, len(outliers)))
        self._run_finished_at = _now()
        if enable_logging:
            self._log_iteration_results(result, evaluation)
        self._store_optimization_results(result, evaluation, outliers)
        report_solution(self, verbose, plotting, save_plots, save_results, html_report)
        return result

    def solve_optimisation(
        self,
        var_init: ArrayLike | None = None,
        method: str = "lm",
        max_iterations: int = _DEFAULTS.max_iterations,
        outlier_threshold: float | None = None,
        enable_logging: bool = False,
    ) -> Tuple[Any, List[int]]:
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
        objective = self._objective_model
        x0 = (
            objective.initial_vector()
            if var_init is None
            else np.asarray(var_init, dtype=float).ravel()
        )
        if x0.size != len(names):
            raise CalibrationError(
                f"var_init has {x0.size} values for {len(names)} parameters ({names[:6]}...)"
            )
        check_problem_size(
            objective.n_observations(),
            self.calib_config.get("prior_weights"),
            self.n_samples,
            rows_per_sample(self.calib_config),
            len(names),
        )
        self._excluded_rows = np.zeros(0, dtype=int)
        objective.warn_if_singular(x0)
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
        max_iterations: int = _DEFAULTS.max_iterations,
        outlier_threshold: float | None = None,
        enable_logging: bool = False,
    ) -> Tuple[Any, List[int], np.ndarray]:
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
        objective = self._objective_model

        def fit(x: np.ndarray, rows: np.ndarray) -> Any:
            self._excluded_rows = rows
            return objective.least_squares(x, method)

        out = fit_with_outlier_exclusion(
            x0,
            fit,
            objective.logmap_residuals_at,
            self.PEE_measured,
            objective.spec(),
            threshold,
            max_iterations,
            enable_logging,
            position_errors=self._sample_position_errors,
            rows_of=self._sample_rows,
            log=log,
        )
        self._excluded_rows = out.excluded_rows
        self.optimisation_trace = out.trace
        return out.result, out.excluded, out.residuals

    # ---------------------------------------------- evaluation (steps uncertainty, metrics)
    def _evaluate_solution(self, result: Any, outliers: Sequence[int]) -> Dict[str, Any]:
        """Hook: the evaluation metrics of a fit (calls :meth:`calc_stddev`)."""
        objective = self._objective_model
        res = objective.residual_array(result.x)  # (N,K,c)
        std = self.calc_stddev(result)
        meas = ct.measured_values(self.PEE_measured, self.calib_config, self.n_samples)
        errors = self._sample_position_errors(ct._to_flat(res))
        return _metrics.evaluation_metrics(
            result,
            res,
            meas,
            outliers,
            std,
            errors,
            objective.n_observations(self._excluded_rows),
            self._outlier_threshold,
            objective.jacobian_mode(),
            correlated_pairs(self._C_param, self.calib_config.get("param_name", [])),
            self.calib_config,
        )

    def calc_stddev(self, result: Any) -> Tuple[np.ndarray, np.ndarray]:
        """Parameter standard deviations from the fit.

        ``σ² = Σ r² / (n − p)`` over the measurement rows of ``result.fun``
        (excluded rows not counted), or ``prior_noise²`` with MAP priors;
        ``C = σ² · pinv(JᵀJ)`` with the full ``result.jac``.

        Returns:
            ``(std_dev, std_pctg)`` (std in parameter units; ``|σ/x|`` ratio).

        Raises:
            CalibrationError: ``"Standard deviation calculation failed: …"``.
        """
        try:
            x = np.asarray(result.x, dtype=float)
            self.nvars = x.size
            noise = self.calib_config.get("prior_noise")
            if self.calib_config.get("prior_weights") is None:
                noise = None
            u = parameter_uncertainty(
                x,
                result.fun,
                result.jac,
                len(self.PEE_measured),
                self._objective_model.n_observations(self._excluded_rows),
                noise,
            )
            self._C_param = u.covariance
            self.std_dev, self.std_pctg = u.std_dev, u.std_pctg
            return self.std_dev, self.std_pctg
        except Exception as exc:
            raise CalibrationError(f"Standard deviation calculation failed: {exc}") from exc

    def _compute_validation_metrics(self) -> Dict[str, Any] | None:
        """Hook: nominal (all parameters 0), frames-only and calibrated errors.

        On the held-out postures, else on the calibration data (a warning);
        records the ``validation`` stage (``ok`` or ``fallback``).
        """
        if self.LM_result is None:
            return None
        objective = self._objective_model
        chosen = objective.validation_set()
        if chosen is None:
            return None
        q, pee, source = chosen
        x = np.asarray(self.LM_result.x, dtype=float)
        r_nom = objective.residual_array(np.zeros_like(x), q=q, measured=pee)  # (n,K,c)
        r_cal = objective.residual_array(x, q=q, measured=pee)
        x_ff = objective.frames_only_fit()
        r_ff = None if x_ff is None else objective.residual_array(x_ff, q=q, measured=pee)
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        names = _metrics.dof_names(self.calib_config)
        out = validation_metrics(r_nom, r_cal, r_ff, mask, names, source)
        record_stage(self, "validation", *validation_stage(out, len(q), source))
        return out

    # ---------------------------------------------- storing (steps validation, results)
    def _store_optimization_results(
        self, result: Any, evaluation: Dict[str, Any], outliers: Sequence[int]
    ) -> None:
        """Hook: store the fit (``LM_result``, ``var_``, ``results_data``, ...)."""
        self.LM_result = result
        self.var_ = np.asarray(result.x, dtype=float)
        self.uncalib_values = np.zeros_like(self.var_)
        self.evaluation_metrics = evaluation
        self.outlier_indices = list(outliers)
        res = self._objective_model.residual_array(self.var_)  # (N,K,c)
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
            self._objective_model.spec(),
        )
        self._PEE_dist = self.results_data["rms residuals by samples"]  # (K, N)
        validation = self._compute_validation_metrics()
        if validation is not None:
            self.results_data["validation_metrics"] = validation
        self.results_data["stages"] = stages_as_dicts(self)
        self._run_provenance = collect_run_provenance(self, "calibration")
        self.results_manager = make_results_manager(self)
        self.STATUS = "CALIBRATED"

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

    def _log_iteration_results(self, result: Any, evaluation: Mapping[str, Any]) -> None:
        """Hook: log the outcome of the fit (called by :meth:`solve` with ``enable_logging``)."""
        logger.info(
            "calibration: %s, cost %.6g, RMSE %.4g (per-point norm), %d outlier(s), cond %.3g",
            "converged" if result.success else "NOT converged",
            result.cost,
            evaluation["rmse"],
            evaluation["n_outliers"],
            evaluation["condition_number"],
        )

    def _prepare_next_iteration(self, result: Any) -> np.ndarray:
        """figaroh 1.0.2 helper: ``x``, or ``x`` plus N(0, 1e-3) noise after a failed fit."""
        if result.success:
            return result.x
        return result.x + np.random.default_rng().normal(0.0, 1e-3, result.x.shape)

    # ------------------------------------------------------------------ corrections
    def redistribute_parameters(self) -> Dict[str, Dict[str, float]]:
        """Joint corrections with their standard deviations.

        Structural fits are lifted back to every mapped joint parameter
        (:func:`figaroh.calibration.estimation.lift_structural`); other
        methods report every candidate (0 when not fitted).

        Returns:
            ``{name: {"value": v, "std_dev": s}}`` (no frame parameters).

        Raises:
            CalibrationError: no fit / no covariance / no base mapping.
        """
        if self.var_ is None or self._C_param is None:
            raise CalibrationError(
                "redistribute_parameters needs a fit with a parameter covariance: run solve() "
                "(the covariance is unavailable when the residual degrees of freedom are ≤ 0)"
            )
        cfg = self.calib_config
        if estimation.settings(cfg)["method"] != "structural":
            candidates = (cfg.get("estimation_report") or {}).get("candidates", [])
            return candidate_corrections(cfg["param_name"], self.var_, self._C_param, candidates)
        if "base_mapping_matrix" not in cfg or "base_mapping_param_names" not in cfg:
            raise CalibrationError(
                "no base mapping in calib_config: was create_param_list() run with the "
                "structural method?"
            )
        return lifted_corrections(*estimation.lift_structural(self))

    def require_exportable(self, allow_failed_fit: bool = False) -> None:
        """Refuse to export corrections that no successful fit produced.

        Exports (:meth:`joint_corrections`, the URDF and PAL overlays) call
        it first. A run without :meth:`solve`, or whose optimiser reported
        failure (``LM_result.success`` False: the values are wherever the
        solver stopped), is refused; ``allow_failed_fit=True`` exports the
        values of a failed fit anyway, with a warning.

        Args:
            allow_failed_fit: Accept a fit whose optimiser did not converge.

        Raises:
            CalibrationError: no fit yet, or a failed fit without
                ``allow_failed_fit``; records stage ``export`` = failed.
        """
        if self.var_ is None or self.LM_result is None:
            raise CalibrationError("Calibration not performed yet: run solve()")
        message = export_refusal(self.LM_result)
        if message is None:
            return
        if allow_failed_fit:
            logger.warning(
                "exporting the values of a calibration whose optimiser did not converge (%s)",
                message,
            )
            return
        record_stage(self, "export", "failed", f"the fit did not converge: {message}")
        raise CalibrationError(
            f"the calibration fit did not converge ({message}): its values are not a solution. "
            "Fix the fit (data, parameters, max_iterations), or pass allow_failed_fit=True to "
            "export them anyway"
        )

    def joint_corrections(
        self, lift: bool = True, drop_unsupported: bool = False, allow_failed_fit: bool = False
    ) -> Dict[str, float]:
        """Joint-level corrections for the URDF exporter.

        Args:
            lift: Lifted corrections (:meth:`redistribute_parameters`); False
                gives the fitted non-frame parameters as estimated (these
                reproduce the calibrated model exactly).
            drop_unsupported: Omit names the exporter cannot write into joint
                origins instead of raising.
            allow_failed_fit: Export the values of a fit whose optimiser did
                not converge (see :meth:`require_exportable`).

        Returns:
            ``{name: value}`` [m, rad].

        Raises:
            CalibrationError: no successful fit (see :meth:`require_exportable`);
                unsupported names (e.g. elastic ``k_*``) unless
                ``drop_unsupported``; records stage ``export`` = failed.
        """
        self.require_exportable(allow_failed_fit=allow_failed_fit)
        if lift:
            values = {k: v["value"] for k, v in self.redistribute_parameters().items()}
        else:
            frames = self._objective_model.frame_names()
            values = fitted_values(
                self.calib_config["param_name"], self.var_, frames, frame_values=False
            )
        bad = unsupported(list(values), self.model)
        if bad and not drop_unsupported:
            record_stage(self, "export", "failed", f"not joint-origin corrections: {bad[:6]}")
            raise CalibrationError(
                f"parameters {bad[:6]}{' ...' if len(bad) > 6 else ''} cannot be written into "
                "joint origins (elastic or non-kinematic); pass drop_unsupported=True to omit them"
            )
        return {n: v for n, v in values.items() if n not in bad}

    def metrology_frames(self) -> Dict[str, float]:
        """Fitted base (``base_*``) and tip (``pEE*``/``phiEE*``) values.

        They describe the measurement setup and are never written into the
        URDF.

        Raises:
            CalibrationError: before :meth:`solve`.
        """
        if self.var_ is None:
            raise CalibrationError("Calibration not performed yet: run solve()")
        frames = self._objective_model.frame_names()
        return fitted_values(self.calib_config["param_name"], self.var_, frames, frame_values=True)

    # ------------------------------------------------------------------ using the model
    def predict(self, q: ArrayLike) -> CalibratedPoses:
        """Poses of the measured frames the calibrated model predicts at postures ``q``.

        ``wMf_k(q, θ) = wMo(θ_base) · oMee(q, θ_joint) · eeMf_k(θ_tip,k)`` for
        every measured frame (marker) ``k``, with ``θ`` the fitted parameters
        ``var_`` (joint corrections and the fitted base and tip frames) and
        the forward model of the default cost
        (:func:`~figaroh.calibration.calibration_tools.calc_updated_fkm`'s
        poses). The poses are in the measurement frame (the frame of the
        measured poses); at the loaded postures, ``predict(q_measured)
        .measurements`` is :meth:`get_pose_from_measure` ``(var_)``. A
        subclass whose :meth:`cost_function` uses another forward model is
        not reflected.

        Args:
            q: (N, nq) full model configurations [rad or m], the layout of
                ``q_measured`` (a 1-D (nq,) array is one posture).

        Returns:
            :class:`~figaroh.calibration._pipeline.prediction.CalibratedPoses`:
            ``position`` (N, K, 3) [m], ``rotation`` (N, K, 3, 3), ``rpy``
            (N, K, 3) [rad] (the convention of the measured ``phix``/``phiy``/
            ``phiz``) and the flat ``measurements`` [m, rad].

        Raises:
            CalibrationError: (a ``RuntimeError``) before :meth:`solve`. (After
                a fit whose optimiser did not converge the poses are returned
                with a logged warning.)
            ValidationError: (a ``ValueError``) ``q`` is not (N, nq), not
                numeric or not finite.

        Example:
            >>> calib.solve()                                  # doctest: +SKIP
            >>> poses = calib.predict(q_new)  # poses.position [m]  # doctest: +SKIP
        """
        if self.var_ is None or self.LM_result is None:
            raise CalibrationError(
                "predict() needs a calibrated model: call initialize() then solve() first"
            )
        message = export_refusal(self.LM_result)
        if message is not None:
            logger.warning("predict: the calibration fit did not converge (%s)", message)
        return calibrated_poses(self.model, self.data, self.var_, q, self.calib_config)

    # ------------------------------------------------------------------ plots
    def plot_errors_distribution(self):
        """Bar chart of the per-sample residual norm of each marker [m]."""
        _require_calibrated(self.STATUS)
        return _plots.errors_distribution(self._PEE_dist)

    def plot_3d_poses(self, INCLUDE_UNCALIB: bool = False) -> Any:
        """Measured vs estimated marker positions in 3-D (position components)."""
        _require_calibrated(self.STATUS)
        nominal = None
        if INCLUDE_UNCALIB:
            flat = self.get_pose_from_measure(np.zeros_like(self.var_))
            nominal = poses_2d(flat, self._objective_model.spec())
        return _plots.poses_3d(
            np.asarray(self.results_data["PEE measured (2D array)"]),
            np.asarray(self.results_data["PEE estimated (2D array)"]),
            nominal,
        )

    def plot_joint_configurations(self):
        """Active joint values of every posture against their limits."""
        if self.q_measured is None:
            raise CalibrationError("Call load_data_set() first")
        return _plots.joint_configurations(
            self.q_measured,
            self.calib_config["config_idx"],
            self.model.lowerPositionLimit,
            self.model.upperPositionLimit,
            [self.model.names[j] for j in self.calib_config["actJoint_idx"]],
        )

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
        require_solved(self)
        run_dir = compute_run_dir(self, root)  # exists on return
        self.export_verification_report(output_path=str(run_dir / "verdict.json"))
        if html_report:
            try:
                self.export_html_report(output_path=str(run_dir / "report.html"))
            except ImportError:
                logger.info("figaroh.tools.report is not available: no report.html archived")
        return _archive_run(self, run_dir)


# ---------------------------------------------------------------------- module helpers
def _require_calibrated(status: str) -> None:
    if status != "CALIBRATED":
        raise CalibrationError("Calibration not performed yet")


def _record_data_stage(calib: BaseCalibration) -> None:
    """Re-record the ``data`` stage with the outcome of the data checks."""
    stage = data_stage(calib.stages, calib.data_checks)
    if stage is not None:
        record_stage(calib, "data", *stage)


def _check_inputs(calib: BaseCalibration) -> DataChecks:
    """Run the input data checks on the loaded data; store and record them."""
    found = input_findings(
        calib.model,
        calib.data,
        calib.calib_config,
        calib.q_measured,
        calib.PEE_measured,
        calib.n_samples,
    )
    calib.data_checks = calib.data_checks.with_findings(*found)
    calib._checked_inputs = input_key(calib.PEE_measured, calib.q_measured, calib.calib_config)
    _record_data_stage(calib)
    return calib.data_checks


def _check_fit(calib: BaseCalibration, result: Any) -> DataChecks:
    """Run the data checks at the solution; store and record them."""
    try:
        x = np.asarray(result.x, dtype=float)
        residuals = calib._objective_model.residual_array(x)
        errors = calib._sample_position_errors(ct._to_flat(residuals))
    except Exception as exc:  # noqa: BLE001 - diagnostic only: the check is skipped
        logger.debug("position errors unavailable for the outlier check: %s", exc)
        errors = None
    found = fit_findings(
        calib.model,
        calib.calib_config,
        calib.q_measured,
        calib.n_samples,
        errors,
        calib._outlier_threshold,
        getattr(result, "jac", None),
        calib.data_checks,
    )
    calib.data_checks = calib.data_checks.with_findings(*found)
    _record_data_stage(calib)
    return calib.data_checks


# BASE_TPL / EE_TPL are re-exported for subclasses that slice the parameter vector.
__all__ += ["BASE_TPL", "EE_TPL", "is_kinematic_correction"]
