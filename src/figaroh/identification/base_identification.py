"""Base class for robot dynamic parameter identification.

A robot-specific subclass implements :meth:`BaseIdentification.load_trajectory_data`
(and, if its logs hold motor-side quantities, :meth:`process_torque_data`); the
base class owns the workflow:

1. :meth:`initialize` — load and condition the data (:meth:`process_data`:
   filtering, differentiation, the data checks of
   :mod:`~figaroh.identification._pipeline.data_checks`, full
   configurations), build the regressor
   ``W`` (:meth:`calculate_full_regressor`), the standard parameters
   (:meth:`initialize_standard_parameters`) and the nominal torques, then the
   held-out trajectory named by ``validation_data_file``;
2. :meth:`solve` — drop the columns that never affect the efforts, optionally
   decimate, keep the valid samples and the fitted joints, find the base
   parameters by QR decomposition, estimate them by (weighted) least squares,
   and compute quality and held-out validation metrics;
3. reports — :meth:`print_quality_report`, :meth:`plot_results`,
   :meth:`save_results`, :meth:`verify`, :meth:`export_html_report`,
   :meth:`export_verification_report`, :meth:`export_urdf`;
4. the identified model — :meth:`predict` (efforts [N·m or N] at given
   states) and :meth:`evaluate` (per-joint RMSE, R² and bias on another log).

Subclass hooks: the workflow calls these methods through ``self``, at fixed
points and with fixed arguments, so an override takes effect exactly there:

* ``load_trajectory_data(data_source=None)`` → raw data dict — by
  :meth:`process_data` (``data_source`` omitted) and for the held-out set (the
  ``validation_data_file`` value, unchanged, as ``data_source``);
* ``process_kinematics_data(filter_config)`` — fills ``processed_data``
  positions/velocities/accelerations (training and held-out data);
* ``process_torque_data()`` → ``(N, n_active)`` efforts [N·m or N];
* ``build_regressor(q, dq, ddq)`` → regressor (training and held-out data);
* ``resolve_validation_source(source)`` → the held-out ``data_source``;
* ``solve(decimate, decimation_factor, zero_tolerance, plotting,
  save_results, html_report, wls)`` → ``phi_base`` (the entry point the
  integration workflow calls; an override may omit the keyword-only
  ``verbose`` / ``save_plots`` switches, which it never passes);
* weighted least squares (``solve(wls=True)``):
  ``_apply_weighted_least_squares()`` → ``(phi_wls, std_wls)``, which calls
  ``_calculate_joint_variances(W_b, tau, n_active)`` →
  ``(sig_ro_joint, diag_SIGMA)``,
  ``_solve_weighted_least_squares(W_b, tau, diag_SIGMA)`` → ``(phi_wls, C_X)``
  and ``_compute_wls_standard_deviations(C_X, phi_wls)`` → ``std_wls`` [%];
* and every other method figaroh 1.0.2 calls through ``self``, where it calls
  it: in :meth:`process_data` ``_adopt_trajectory``, ``_truncate_data``,
  ``_trajectory_mask``, ``_build_full_configuration``, ``_record_data_stage``,
  and in :meth:`filter_kinematics_data` ``_apply_filters(signal,
  **filter_params)`` (once per present signal) and
  ``_differentiate_signal(t, x, method=…)``; in :meth:`initialize`
  ``calculate_full_regressor``, ``initialize_standard_parameters``,
  ``compute_reference_torque``, ``_load_validation_data(data_source)``; in
  both solves, in the order of the pipeline steps
  (:data:`~figaroh.identification._pipeline.STEP_ORDER`),
  ``_validate_prerequisites``, ``_eliminate_zero_columns(zero_tolerance)``,
  ``_apply_decimation(W_red, factor)`` (→ ``_decimate_regressor_matrix(W_red,
  factor)``) or ``_prepare_undecimated_data(W_red)``, ``_mask_rows(tau, W,
  factor)`` (:meth:`solve` only), ``_select_fit_rows(tau, W)`` (→
  ``_fit_blocks()`` → :meth:`fit_joints`), ``_reset_solve_state(tau, W,
  active_params)``, ``_calculate_base_parameters(tau, W, active_params)``
  (:meth:`solve`; its returned dict is stored), ``_compute_quality_metrics()``,
  ``_store_results(identif_results)`` (→ the ``_apply_*_if_enabled`` physical
  hooks, ``_compute_validation_metrics``, ``_record_physical_stage``), then
  the report methods.

Efforts are stacked joint-major (row ``j·N + i`` is joint ``j``, sample ``i``);
units are N·m for revolute and N for prismatic joints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from abc import ABC, abstractmethod
from datetime import datetime, timezone
from typing import (
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Sequence,
    Tuple,
    TypeVar,
    cast,
)

import numpy as np

import figaroh.data as _data
import figaroh.identification as _identification
import figaroh.tools as _tools
from figaroh._run.task_services import RunServices, TaskHooks, make_results_manager, report_solution
from figaroh.data.adoption import (
    adopt_trajectory_for,
    data_stage_metrics,
    data_stage_reason,
    trajectory_mask,
)
from figaroh.identification import _metrics, _signal
from figaroh.identification._confidence import base_parameter_table
from figaroh.identification._pipeline import run_steps
from figaroh.identification._pipeline.base_fit import (
    coulomb_at_rest,
    custom_solver_fit,
    estimate_pair,
    fit_quality,
    fit_results,
    qr_base_fit,
    variance_pair,
    with_estimate,
)
from figaroh.identification._pipeline.conditioning import (
    apply_filters,
    check_joint_names,
    condition_kinematics,
    differentiate,
    full_configuration,
    make_settings,
    signal_set,
    validate_raw_data,
)
from figaroh.identification._pipeline.data_checks import (
    DataChecks,
    training_data_checks,
    validation_finding,
)
from figaroh.identification._pipeline.export import base_result
from figaroh.identification._pipeline.fit_rows import (
    RowSteps,
    build_fit_problem,
    check_decimated_rows,
    decimate_regressor,
    decimate_torques,
    eliminate_zero_columns,
    fit_joint_names,
    joint_blocks,
    mask_fit_rows,
    select_fit_joint_rows,
    undecimated_rows,
)
from figaroh.identification._pipeline.physical import (
    check_consistency,
    consistency_enabled,
    consistency_parameters,
    physical_fit,
    physical_stage,
    reconstruct,
    reconstructed_parameter_dict,
    reconstruction_wanted,
    select,
    validation_estimate,
)
from figaroh.identification._pipeline.prediction import (
    EvaluationResult,
    active_states,
    evaluation_result,
    predicted_efforts,
)
from figaroh.identification._pipeline.records import (
    BaseFit,
    FitOptions,
    FitProblem,
    IdentificationRun,
    PhysicalOutcome,
    Quality,
    Settings,
)
from figaroh.identification._pipeline.validation import (
    identified_standard_vector,
    same_kinematics,
    validation_metrics,
    validation_stage,
)
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.identification.exceptions import (
    IdentificationDataError,
    IdentificationStateError,
)
from figaroh.identification.parameter import (
    add_custom_parameters,
    add_standard_additional_parameters,
    get_standard_parameters,
    standard_parameters_with_extras,
)
from figaroh.identification.quality_report import basic_identification_plot, format_quality_report
from figaroh.identification.selection import SelectedEstimate, inputs_of
from figaroh.identification.settings import DEFAULT_SETTINGS as _DEFAULTS
from figaroh.tools.provenance import collect_run_provenance
from figaroh.tools.regressor import (
    build_regressor_basic,
    build_regressor_reduced,
    get_index_eliminate,
)
from figaroh.tools.solver import LinearSolver
from figaroh.tools.stages import StageResult, drop_stage, record_stage, stages_as_dicts
from figaroh.utils.results_manager import plot_with_fallback
from figaroh.utils.unified_config import (
    UnifiedConfigParser,
    create_task_config,
    load_unified_config,
    require_unified_config,
)

__all__ = [
    "SOLVE_DEFAULTS",
    "BaseIdentification",
    "EvaluationResult",
    # Re-exported for figaroh 1.0.2 compatibility.
    "LinearSolver",
    "UnifiedConfigParser",
    "add_custom_parameters",
    "add_standard_additional_parameters",
    "build_regressor_basic",
    "build_regressor_reduced",
    "create_task_config",
    "get_index_eliminate",
    "get_standard_parameters",
    "plot_with_fallback",
    "require_unified_config",
    "unified_to_legacy_identif_config",
]

logger = logging.getLogger(__name__)


#: Defaults of :meth:`BaseIdentification.solve` (figaroh 1.0.2's), read-only
#: ``{name: value}`` of :data:`~figaroh.identification.settings.DEFAULT_SETTINGS`
#: (:class:`~figaroh.identification.settings.IdentificationSettings`): the
#: command line (:mod:`figaroh.cli.workflows`) and the documentation read it.
SOLVE_DEFAULTS = _DEFAULTS.as_mapping()

#: Key under which the fit-results dict remembers its reconstruction.
_RECON_DONE = "_reconstruction_done"


class _Fitted(NamedTuple):
    """Output of the ``base_fit`` step of a solve."""

    results: dict
    wls_std: np.ndarray | None
    at_rest: dict | None


_DEFAULT_FILTER_CONFIG = {
    "differentiation_method": "gradient",
    "filter_params": {"nbutter": 4, "f_butter": 2, "med_fil": 5, "f_sample": 100},
}


# ---------------------------------------------------------------------- run-service hooks
# The identification pieces of the shared run services (verify, the reports,
# save, plot, repr: figaroh._run.task_services), as functions of the run.
def _manager_plots(ident: BaseIdentification) -> Any:
    """The results manager's measured-vs-identified effort plots of the fitted joints."""
    folder = ident._plot_folder
    return ident.results_manager.plot_identification_results(
        n_joints=len(ident._fit_blocks()),
        joint_names=ident.fit_joints(),
        output_dir=folder,
        show=None if folder is None else False,
    )


def _basic_plots(ident: BaseIdentification) -> Any:
    """The basic effort plots (used when the results manager's fail)."""
    return basic_identification_plot(ident, output_dir=ident._plot_folder or "results")


def _repr_fields(ident: BaseIdentification) -> List[str]:
    """Robot, active joints, samples and state (configured, initialized, solved)."""
    state = (
        "solved"
        if ident.result is not None
        else ("initialized" if ident.dynamic_regressor is not None else "configured")
    )
    return [
        f"robot='{ident.model.name}'",
        f"active_joints={len(ident.identif_config.get('active_joints', []))}",
        f"samples={ident.num_samples}",
        f"state={state}",
    ]


_RUN_HOOKS = TaskHooks(
    task="identification",
    is_solved=lambda ident: ident.result is not None,
    results=lambda ident: ident.result,
    verification=lambda ident, thresholds, scope: (
        _identification._verification.verify_identification(ident, thresholds, scope)
    ),
    html_report=lambda ident, output_path, verdict: (
        _tools.identification_report.generate_identification_report(
            ident, output_path=output_path, verdict=verdict
        )
    ),
    quality_report=format_quality_report,
    plots=_manager_plots,
    basic_plots=_basic_plots,
    repr_fields=_repr_fields,
    parameter_table=base_parameter_table,
)


class BaseIdentification(RunServices, ABC):
    """Base class for robot dynamic parameter identification.

    Args:
        robot: A :class:`~figaroh.tools.robot.Robot` (or any object with a
            Pinocchio ``model``, ``data``, ``q0`` and ``v0``).
        config_file: Path of a unified configuration YAML file.

    Attributes:
        identif_config: Flat identification settings (see
            :func:`~figaroh.identification.config.unified_to_legacy_identif_config`).
        result: Results of the last :meth:`solve` (``None`` before).
        data_checks: Findings of the input data checks
            (:class:`~figaroh.identification._pipeline.data_checks.DataChecks`):
            a failed check is a logged warning, fails stage ``data`` and
            ``verify()``; a fatal one makes :meth:`solve` raise.
        phi_base: Identified base parameters.
        params_base: Base-parameter expressions.
    """

    # Set by initialize() and the solve steps (None before them).
    dynamic_regressor: np.ndarray | None
    standard_parameter: Dict[str, float] | None
    params_base: List[str] | None
    dynamic_regressor_base: np.ndarray | None
    phi_base: np.ndarray | None
    rms_error: float | None
    correlation: float | None
    processed_data: Dict[str, Any] | None
    raw_data: Dict[str, Any] | None
    result: Dict[str, Any] | None
    num_samples: int | None
    tau_identif: np.ndarray | None
    tau_noised: np.ndarray | None
    std_relative: np.ndarray | None
    stages: List[StageResult]
    data_checks: DataChecks
    selected: SelectedEstimate | None
    _idx_eliminated: List[int] | None
    _base_indices: List[int] | None
    _physical_fit: Dict[str, Any] | None

    # Set by the solve steps (declared for type checkers; absent before a solve).
    _M_matrix: np.ndarray | None
    _params_r_for_recon: list[str] | None
    _run_finished_at: str | None

    # verify, the reports, save_results, plot_results and repr (RunServices)
    _hooks = _RUN_HOOKS

    def __init__(self, robot: Any, config_file: str = "config/robot_config.yaml") -> None:
        self.robot = robot
        self.model = self.robot.model
        self.data = self.robot.data
        self.load_param(config_file)

        self.dynamic_regressor = None
        self.standard_parameter = None
        self.additional_parameters = None
        self.custom_parameters = None
        self.params_base: list[str] | None = None
        self.dynamic_regressor_base = None
        self.phi_base = None
        self.rms_error = None
        self.correlation = None
        self.processed_data = None
        self.raw_data = None
        self.result = None
        self.num_samples = None
        self.tau_ref = None
        self.tau_identif = None
        self.tau_noised = None
        self.std_relative = None

        self._val_available = False
        self._val_duplicate = False
        self._val_processed_data = None
        self._val_num_samples = None
        self._val_regressor = None

        self.trajectory = None
        self._sample_mask = None
        self._val_trajectory = None
        self._val_sample_mask = None
        self.stages = []
        self.data_checks = DataChecks()

        self._idx_eliminated = None
        self._base_indices = None
        self.selected = None
        self._decimate_used = False
        self._solve_W = None
        self._solve_tau = None
        self._wls_row_weight = None
        self._recon_result = None
        self._physical_fit = None
        self._run: IdentificationRun | None = None  # the last solve's record, filled step by step
        self.results_manager = None

        self.filter_config = self.identif_config.get("filter_config", _DEFAULT_FILTER_CONFIG)
        logger.info("%s initialized", self.__class__.__name__)

    # ------------------------------------------------------------------ configuration
    def load_param(
        self, config_file: str | os.PathLike, setting_type: str = "identification"
    ) -> None:
        """Load the identification parameters from a unified YAML file.

        Args:
            config_file: Path to a unified configuration file (a legacy flat
                file raises an error naming ``figaroh.utils.config_migration``).
            setting_type: Task section to load.
        """
        self._config_file_path = str(config_file)
        try:
            logger.info("Loading config from %s", config_file)
            unified = load_unified_config(config_file)  # require + parse, one read
            task_config = create_task_config(self.robot, unified, setting_type)
            self.task_config = task_config  # robot-specific sections (e.g. "custom") live here
            self.identif_config = unified_to_legacy_identif_config(self.robot, task_config)
        except Exception as exc:
            logger.error("Error loading config %s: %s", config_file, exc)
            raise

    # ------------------------------------------------------------------ data
    @abstractmethod
    def load_trajectory_data(self, data_source: str | None = None) -> Any:
        """Hook: load the trajectory data (implemented by robot subclasses).

        Called by :meth:`process_data` as ``load_trajectory_data()`` for the
        training data, and by :meth:`initialize` as
        ``load_trajectory_data(data_source=<validation_data_file>)`` for the
        held-out trajectory, the configured value passed unchanged (through
        :meth:`resolve_validation_source`). An exception raised for the
        held-out set only disables the held-out validation (a logged warning).

        Args:
            data_source: Optional alternate dataset to load instead of the
                usual training data (a folder, a file or any name the subclass
                maps to a dataset); ``None`` loads the training data.

        Returns:
            A dict with keys ``"timestamps"`` (N, 1) [s], ``"positions"``
            (N, n_active) [rad or m], ``"velocities"`` and ``"accelerations"``
            (or None to derive them), ``"torques"`` (N, n_active) [N·m or N],
            columns in ``identif_config["active_joints"]`` order; or a
            :class:`~figaroh.data.trajectory.TrajectoryData`.
        """

    def _adopt_trajectory(self, data: Any, attr: str = "trajectory") -> dict:
        raw = adopt_trajectory_for(self, data, attr=attr, base=BaseIdentification)
        validate_raw_data(
            raw,
            len(self.identif_config.get("act_idxv", [])),
            list(self.identif_config.get("active_joints", [])),
        )
        return raw

    @staticmethod
    def _trajectory_mask(trajectory, truncate=None):
        return trajectory_mask(trajectory, truncate)

    def _record_data_stage(self):
        """Record stage ``data``: what was adopted, how many samples are masked, the data checks.

        The status is ``ok``, or ``failed`` when a data check failed (its reason
        then lists the failed checks' messages; the fit still runs).
        """
        reason = data_stage_reason(getattr(self, "trajectory", None))
        metrics = data_stage_metrics(
            getattr(self, "num_samples", None), getattr(self, "_sample_mask", None)
        )
        checks = getattr(self, "data_checks", None) or DataChecks()
        metrics["failed_data_checks"] = len(checks.failed)
        if checks.failed:
            return record_stage(
                self, "data", "failed", f"{reason}; data checks failed: {checks.summary()}", metrics
            )
        return record_stage(self, "data", "ok", reason, metrics)

    def process_data(self, truncate=None):
        """Load, truncate, filter and differentiate the data; check it; build full configurations.

        The data checks
        (:func:`~figaroh.identification._pipeline.data_checks.training_data_checks`)
        run on the conditioned active-joint signals, before the full
        configuration; their findings go to ``data_checks`` (a failed one is
        a logged warning) and stage ``data`` (the fatal ones are raised by
        :meth:`solve`). Their bounds, margins and tolerances come from the
        identification task's ``data_checks`` mapping.

        Args:
            truncate: Optional ``(start, end)`` sample range to keep.

        Raises:
            IdentificationConfigError: An active joint is not a joint of the model.
            IdentificationDataError: Raw data that is missing, mis-shaped, not
                numeric, not finite or overflowing (the message names the field).
        """
        check_joint_names(self.identif_config.get("active_joints", []), list(self.model.names))
        self.raw_data = self._adopt_trajectory(self.load_trajectory_data())
        self.raw_data = self._truncate_data(self.raw_data, truncate)
        self._sample_mask = self._trajectory_mask(self.trajectory, truncate)
        self.process_kinematics_data(self.filter_config)
        self.processed_data["torques"] = np.asarray(self.process_torque_data(), dtype=float)
        self.num_samples = self.processed_data["positions"].shape[0]
        self.data_checks = training_data_checks(
            self.processed_data,
            self.raw_data,
            self.model,
            [str(n) for n in self.identif_config.get("active_joints", [])],
            (self.filter_config or {}).get("filter_params") or {},
            (getattr(self, "task_config", None) or {}).get("data_checks"),
            self._sample_mask,
        )
        self._build_full_configuration()
        self._record_data_stage()

    @staticmethod
    def _truncate_data(data_dict, truncate=None):
        return _signal.truncate_dict(data_dict, truncate)

    def process_kinematics_data(self, filter_config=None):
        """Hook: fill ``processed_data`` with positions, velocities and accelerations.

        Called by :meth:`process_data` (and for the held-out trajectory) as
        ``process_kinematics_data(self.filter_config)`` after ``raw_data`` is
        set; it must (re)create ``self.processed_data`` with ``"timestamps"``,
        ``"positions"``, ``"velocities"`` and ``"accelerations"`` of shape
        ``(N, n_active)``. The default is :meth:`filter_kinematics_data`.

        Args:
            filter_config: Filter settings (see :meth:`filter_kinematics_data`).
        """
        self.filter_kinematics_data(filter_config)

    def filter_kinematics_data(self, filter_config=None):
        """Filter the kinematic signals and differentiate the missing derivatives.

        Positions, then velocities, then accelerations: a signal present in the
        raw data is filtered by the hook :meth:`_apply_filters` (median +
        zero-phase Butterworth), called once per signal as
        ``_apply_filters(signal, **filter_config["filter_params"])``; an absent
        one is the time derivative of the already processed previous signal
        (not filtered again), by the hook :meth:`_differentiate_signal` called as
        ``_differentiate_signal(timestamps, previous, method=differentiation_method)``.

        Args:
            filter_config: ``{"differentiation_method", "filter_params": {nbutter,
                f_butter [Hz], med_fil, f_sample [Hz], median_padding}}``; default
                ``self.filter_config``.

        Raises:
            ValueError: Missing timestamps/positions or bad filter parameters.
        """
        self.processed_data = condition_kinematics(
            self.raw_data,
            filter_config or self.filter_config,
            low_pass=self._apply_filters,
            derivative=self._differentiate_signal,
        )

    @staticmethod
    def _apply_filters(
        *signals, nbutter=4, f_butter=2, med_fil=5, f_sample=100, median_padding="zero"
    ):
        """Hook: median + zero-phase Butterworth low-pass of each signal, column by column.

        Called by :meth:`filter_kinematics_data` for each kinematic signal the
        raw data holds. The filter, its arguments and defaults are documented
        at :func:`~figaroh.identification._pipeline.conditioning.apply_filters`.
        """
        return apply_filters(
            *signals,
            nbutter=nbutter,
            f_butter=f_butter,
            med_fil=med_fil,
            f_sample=f_sample,
            median_padding=median_padding,
        )

    @staticmethod
    def _differentiate_signal(time_vector, signal, method="gradient"):
        """Hook: time derivative of ``signal`` (N, n) sampled at ``time_vector`` [s].

        Called by :meth:`filter_kinematics_data` for each kinematic signal the
        raw data lacks (velocities from positions, accelerations from
        velocities). ``method``: ``"gradient"``, ``"forward"``, ``"backward"``
        or ``"central"`` (see
        :func:`~figaroh.identification._signal.differentiate`).

        Returns:
            d signal / dt, shape of ``signal`` [unit of signal per second].
        """
        return differentiate(time_vector, signal, method)

    def process_torque_data(self, **kwargs):
        """Hook: joint efforts (N, n_active) [N·m or N] from ``raw_data["torques"]``.

        Called without arguments by :meth:`process_data` (and for the held-out
        trajectory) after :meth:`process_kinematics_data`; its return value
        becomes ``processed_data["torques"]``. Override it for drive
        conversions (currents to torques, gear ratios, gravity offsets). The
        default returns the raw efforts unchanged.

        Returns:
            ndarray (N, n_active), columns in active-joint order.

        Raises:
            IdentificationDataError: No torque data.
        """
        if self.raw_data.get("torques") is None:
            raise IdentificationDataError("Torque data is required for processing")
        self.processed_data["torques"] = np.asarray(self.raw_data["torques"], dtype=float)
        return self.processed_data["torques"]

    def _build_full_configuration(self):
        """Expand active-joint arrays to full ``(N, nq)`` / ``(N, nv)`` model arrays.

        Inactive joints stay at ``robot.q0`` with zero velocity; an active
        continuous joint (cos/sin configuration) gets ``(cos θ, sin θ)``.
        """
        q, v, a = full_configuration(self.processed_data, _settings(self), self.num_samples)
        self.processed_data["positions"] = q
        self.processed_data["velocities"] = v
        self.processed_data["accelerations"] = a

    # ------------------------------------------------------------------ model
    def build_regressor(self, positions, velocities, accelerations):
        """Regressor of full-configuration arrays (used for training and validation data).

        Override it (rather than :meth:`calculate_full_regressor`) to append
        robot-specific columns, so that held-out validation sees them too; the
        matching parameters go into :meth:`initialize_standard_parameters`.

        Args:
            positions: (N, nq) configurations.
            velocities: (N, nv) [rad/s].
            accelerations: (N, nv) [rad/s²].

        Returns:
            (N·nv, n_std) regressor, rows joint-major.
        """
        return build_regressor_basic(
            self.robot, positions, velocities, accelerations, self.identif_config
        )

    def calculate_full_regressor(self):
        """Build the full regressor ``W`` (N·nv, n_std) on the processed data."""
        self.dynamic_regressor = self.build_regressor(
            self.processed_data["positions"],
            self.processed_data["velocities"],
            self.processed_data["accelerations"],
        )

    def initialize_standard_parameters(self):
        """Standard parameters (ordered like the regressor's columns) from the URDF.

        Sets ``standard_parameter``, and ``additional_parameters`` /
        ``custom_parameters`` when enabled (see
        :func:`~figaroh.identification.parameter.standard_parameters_with_extras`).
        """
        standard, additional, custom = standard_parameters_with_extras(
            self.model, self.identif_config
        )
        self.standard_parameter = standard
        if additional is not None:
            self.additional_parameters = additional
        if custom is not None:
            self.custom_parameters = custom

    def compute_reference_torque(self):
        """Efforts of the nominal model on the active joints (stacked joint-major)."""
        phi_ref = np.fromiter(self.standard_parameter.values(), dtype=float)
        tau_ref = (self.dynamic_regressor @ phi_ref).reshape(self.model.nv, self.num_samples)
        self.tau_ref = tau_ref[np.asarray(self.identif_config["act_idxv"], dtype=int)].reshape(-1)

    def initialize(self, truncate=None):
        """Process the data, build the regressor, the parameters and the nominal torques.

        Then, when ``identif_config["validation_data_file"]`` is non-empty, load
        the held-out trajectory it names: the value (through
        :meth:`resolve_validation_source`, which by default returns it unchanged)
        is the ``data_source`` of :meth:`load_trajectory_data`, so it may be a
        path, a folder or any name the subclass's loader understands. A loader
        or processing error on the held-out set is logged as a warning
        ("Validation data unavailable") and the validation metrics fall back to
        the identification data; an error raised by
        :meth:`resolve_validation_source` propagates.

        Args:
            truncate: Optional ``(start, end)`` sample range of the training data.
        """
        self.process_data(truncate)
        self.calculate_full_regressor()
        self.initialize_standard_parameters()
        self.compute_reference_torque()
        self._val_available = False
        self._val_duplicate = False
        self._val_regressor = None
        source = self.identif_config.get("validation_data_file") or ""
        if source:
            data_source = self.resolve_validation_source(source)
            try:
                self._load_validation_data(data_source)
            except Exception as exc:  # noqa: BLE001 - a bad validation set must not kill the fit
                logger.warning("Validation data unavailable: %s", exc)
                self._val_available = False

    def resolve_validation_source(self, source: str) -> str:
        """Hook: turn ``validation_data_file`` into the ``data_source`` of the loader.

        The default returns ``source`` unchanged, so the value is whatever the
        subclass's :meth:`load_trajectory_data` accepts (a file, a folder, a
        dataset name); a relative path is therefore relative to the current
        directory. Override it to check or translate the value before loading
        (e.g. refuse a held-out range that overlaps the training rows); an
        exception raised here is not downgraded to a warning.

        Args:
            source: The configured ``validation_data_file`` (non-empty).

        Returns:
            The ``data_source`` passed to :meth:`load_trajectory_data`.
        """
        return source

    # ------------------------------------------------------------------ joints
    def fit_joints(self):
        """Active joints whose effort rows enter the fit, in active order.

        ``identif_config["torque_fit_joints"]`` names them (default: every
        active joint). The other active joints keep their kinematics in the
        regressor but their measured effort is neither fitted nor scored.

        Raises:
            IdentificationConfigError: unknown or empty ``torque_fit_joints``.
        """
        return fit_joint_names(_settings(self))

    def _fit_blocks(self):
        """Active-block index (0-based, active order) of each joint of :meth:`fit_joints`."""
        return joint_blocks(self.identif_config.get("active_joints", []), self.fit_joints())

    def _select_fit_rows(self, tau, W):
        """Hook: keep the row blocks of the fitted joints (:meth:`_fit_blocks`).

        Called by :meth:`solve` and :meth:`solve_with_custom_solver` on the
        (masked) rows, split into ``n_active`` equal blocks; unchanged when
        every active joint is fitted.

        Returns:
            ``(tau, W)`` of the fitted joints, stacked joint-major.
        """
        n_active = len(self.identif_config.get("act_idxv", []))
        return select_fit_joint_rows(tau, W, n_active, self._fit_blocks())

    # ------------------------------------------------------------------ solve
    def _validate_prerequisites(self):
        """Hook: raise unless :meth:`initialize` ran (first call of both solves).

        Raises:
            IdentificationDataError: A fatal data check (no meaningful fit exists).
            IdentificationStateError: No processed data, regressor or standard
                parameters (an ``AssertionError``, as in figaroh 1.0.2).
        """
        checks = getattr(self, "data_checks", None)
        if isinstance(checks, DataChecks):
            checks.raise_fatal()
        if self.processed_data is None:
            raise IdentificationStateError("Data not processed. Call process_data() first.")
        if self.dynamic_regressor is None:
            raise IdentificationStateError(
                "Regressor matrix not calculated. Call calculate_full_regressor() first."
            )
        if self.standard_parameter is None:
            raise IdentificationStateError(
                "Standard parameters not initialized. Call initialize_standard_parameters() first."
            )

    def _eliminate_zero_columns(self, zero_tolerance):
        """Hook: drop the regressor columns whose squared norm is under ``zero_tolerance``.

        Sets ``regressor_reduced``, ``active_parameters`` (the kept parameter
        names) and ``_idx_eliminated``. When the rows are about to be
        decimated the reduced regressor is laid out column-major (the layout
        the decimation filters along; same values).

        Returns:
            ``(regressor_reduced, active_parameters)``.
        """
        options = getattr(self._run, "options", None)
        W_red, params_r, idx_e = eliminate_zero_columns(
            self.dynamic_regressor,
            self.standard_parameter,
            zero_tolerance,
            column_major=bool(options is not None and options.decimate),
        )
        self.regressor_reduced = W_red
        self.active_parameters = params_r
        self._idx_eliminated = idx_e
        return self.regressor_reduced, self.active_parameters

    def _apply_decimation(self, regressor_reduced, decimation_factor):
        """Hook: low-pass and down-sample the efforts and the active regressor blocks.

        The efforts of each active joint go through
        ``scipy.signal.decimate(·, decimation_factor, zero_phase=True)``; the
        regressor through the hook :meth:`_decimate_regressor_matrix`. Sets
        ``tau_decimated`` and ``regressor_decimated``.

        Returns:
            ``(tau, W)``: ``n_active·ceil(N/decimation_factor)`` rows, stacked
            joint-major.

        Raises:
            ValueError: The decimated regressor and efforts disagree in length.
        """
        tau = decimate_torques(self.processed_data["torques"], self.num_samples, decimation_factor)
        W = self._decimate_regressor_matrix(regressor_reduced, decimation_factor)
        check_decimated_rows(tau, W)
        self.tau_decimated, self.regressor_decimated = tau, W
        return tau, W

    def _decimate_regressor_matrix(self, regressor_reduced, decimation_factor):
        """Hook: decimate every column of every active joint block of the reduced regressor.

        Each column of the rows ``act_idxv[j]·N … (act_idxv[j]+1)·N`` gets
        ``scipy.signal.decimate(·, decimation_factor, zero_phase=True)``
        (order-8 Chebyshev I, forward-backward: decimated sample ``k`` is
        sample ``k·decimation_factor``), exactly the result of a call on that
        column alone (see
        :func:`~figaroh.identification._pipeline.fit_rows.decimate_regressor`).

        Returns:
            ``(n_active·ceil(N/decimation_factor), p)`` array, blocks in active order.
        """
        return decimate_regressor(
            regressor_reduced, self.num_samples, decimation_factor, _settings(self)
        )

    def _prepare_undecimated_data(self, regressor_reduced):
        """Hook: efforts and regressor rows of the active joint blocks, every sample.

        Returns:
            ``(tau, W)``: the efforts transposed to joint-major order and the
            matching regressor rows.
        """
        return undecimated_rows(
            self.processed_data["torques"], regressor_reduced, self.num_samples, _settings(self)
        )

    def _mask_rows(self, tau, regressor, factor=1):
        """Hook: drop the rows of masked samples (decimated sample ``k`` is sample ``k·factor``).

        Called by :meth:`solve` only (``solve_with_custom_solver`` keeps every
        row, as in figaroh 1.0.2), with ``factor`` the decimation factor, or 1.

        Returns:
            ``(tau, regressor)`` without the rows of samples the mask excludes.
        """
        n_active = len(self.identif_config.get("act_idxv", []))
        return mask_fit_rows(tau, regressor, self._sample_mask, n_active, factor)

    def _reset_solve_state(self, tau, W, active_params):
        """Hook: start a new fit on the rows ``(tau, W)`` (both solves, just before the fit).

        Stores the fitted rows (``_solve_tau``, ``_solve_W``) and clears what
        the previous fit produced (WLS row weights, reconstruction, physical
        fit, selection, and the ``export``/``physical``/``validation`` stage
        records).

        Args:
            tau: (rows,) fitted efforts [N·m or N], stacked joint-major.
            W: (rows, p) reduced regressor of those rows.
            active_params: Names of the ``p`` kept standard parameters.
        """
        self._solve_tau = tau
        self._solve_W = W
        self._wls_row_weight = None
        self._recon_result = None
        self._physical_fit = None
        self.selected = None
        for stage in ("export", "physical", "validation"):
            drop_stage(self, stage)

    def _calculate_base_parameters(
        self, tau: np.ndarray, W: np.ndarray, active_params: Sequence[str]
    ) -> dict:
        """Hook: base parameters by QR decomposition and their least-squares estimate.

        Called by :meth:`solve` on the fitted rows. Sets
        ``dynamic_regressor_base``, ``phi_base``, ``params_base``,
        ``tau_identif``, ``tau_noised`` and the QR products (``_M_matrix``,
        ``_base_indices``). Its return value is the fit-results dict
        :meth:`solve` refines (WLS) and hands to :meth:`_store_results`.

        Args:
            tau: (rows,) fitted efforts [N·m or N].
            W: (rows, p) reduced regressor of the fitted rows.
            active_params: Names of the ``p`` columns.

        Returns:
            ``{"base_regressor", "base_param_dict", "base_parameters",
            "phi_base", "tau_estimated", "tau_processed", "M", "params_r"}``.
        """
        problem = FitProblem(
            tau=tau,
            W=W,
            W_reduced=getattr(self, "regressor_reduced", None),
            active_params=tuple(active_params),
            idx_eliminated=tuple(self._idx_eliminated or ()),
        )
        fit = qr_base_fit(problem, self.standard_parameter, _settings(self))
        _publish_fit(self, fit)
        return fit_results(fit)

    def _apply_weighted_least_squares(self):
        """Hook: Gautier's weighted least squares from the OLS estimate.

        Called by :meth:`solve` with ``wls=True`` after the OLS fit; its return
        value becomes ``phi_base`` and ``result["wls_std_deviations"]``. The
        default runs three further hooks, each overridable on its own:

        1. :meth:`_calculate_joint_variances` ``(W_b, tau, n_active)`` →
           ``(sig_ro_joint, diag_SIGMA)``: noise variance per joint block;
        2. :meth:`_solve_weighted_least_squares` ``(W_b, tau, diag_SIGMA)`` →
           ``(phi_wls, C_X)``: weighted estimate and its covariance;
        3. :meth:`_compute_wls_standard_deviations` ``(C_X, phi_wls)`` →
           relative standard deviations [%].

        ``W_b`` is ``dynamic_regressor_base`` and ``tau`` is ``tau_noised`` (the
        fitted rows, joint-major), ``n_active`` the number of joint blocks in
        the fit. The row weights ``1/sqrt(diag_SIGMA + 1e-12)`` are kept for
        the physical fit.

        Returns:
            ``(phi_wls, std_wls)``: estimate and relative std-devs [%].
        """
        W_b, tau = self.dynamic_regressor_base, self.tau_noised
        variances = self._calculate_joint_variances(W_b, tau, len(self._fit_blocks()))
        sig_ro_joint, diag_SIGMA = variance_pair(variances, len(tau))
        self._sig_ro_joint = sig_ro_joint
        self._joint_variances = diag_SIGMA
        phi_wls, C_X = estimate_pair(
            self._solve_weighted_least_squares(W_b, tau, diag_SIGMA), W_b, tau, diag_SIGMA
        )
        std_wls = np.asarray(self._compute_wls_standard_deviations(C_X, phi_wls), dtype=float)
        self._wls_row_weight = _metrics.wls_row_weights(diag_SIGMA)
        return phi_wls, std_wls

    def _calculate_joint_variances(self, W_b, tau, n_active):
        """Hook: noise variance of each joint block of the OLS residual.

        ``σ_j² = mean(r_j²)`` over the rows of block ``j`` of
        ``r = tau − W_b·phi_base`` (blocks of equal length ``rows / n_active``).

        Args:
            W_b: Base regressor of the fitted rows (rows, n_base).
            tau: Fitted efforts, stacked joint-major (rows,) [N·m or N].
            n_active: Number of joint blocks in the fit.

        Returns:
            ``(sig_ro_joint, diag_SIGMA)``: the ``n_active`` variances
            [(N·m)² or N²] and their per-row expansion (rows,). (A single
            per-row array is also accepted from an override.)

        Raises:
            ValueError: ``rows`` is not a multiple of ``n_active``.
        """
        return _metrics.joint_block_variances(W_b, tau, self.phi_base, n_active)

    def _solve_weighted_least_squares(self, W_b, tau, diag_SIGMA):
        """Hook: weighted least squares with row weights ``1/(diag_SIGMA + 1e-12)``.

        ``C_X = (W_bᵀ Σ⁻¹ W_b)⁻¹`` and ``phi_wls = C_X W_bᵀ Σ⁻¹ tau``
        (evaluated by QR of the weighted regressor).

        Args:
            W_b: Base regressor (rows, n_base).
            tau: Efforts (rows,) [N·m or N].
            diag_SIGMA: Per-row noise variance (rows,).

        Returns:
            ``(phi_wls, C_X)``: the estimate (n_base,) and its covariance
            (n_base, n_base). (An override may return ``phi_wls`` alone; the
            covariance is then computed from ``diag_SIGMA``.)
        """
        return _metrics.weighted_solve(W_b, tau, diag_SIGMA)

    def _compute_wls_standard_deviations(self, C_X, phi_wls):
        """Hook: relative standard deviations ``round(100·sqrt(C_X[i, i])/|phi_wls[i]|, 2)`` [%].

        Args:
            C_X: Covariance of the weighted estimate (n_base, n_base).
            phi_wls: The weighted estimate (n_base,).

        Returns:
            ndarray (n_base,) [%] (``inf`` for a zero parameter).
        """
        return _metrics.wls_relative_std(C_X, phi_wls)

    def solve(
        self,
        decimate: bool = _DEFAULTS.decimate,
        decimation_factor: int = _DEFAULTS.decimation_factor,
        zero_tolerance: float = _DEFAULTS.zero_tolerance,
        plotting: bool = _DEFAULTS.plotting,
        save_results: bool = _DEFAULTS.save_results,
        html_report: bool = _DEFAULTS.html_report,
        wls: bool = _DEFAULTS.wls,
        *,
        verbose: bool = _DEFAULTS.verbose,
        save_plots: str | os.PathLike | None = _DEFAULTS.save_plots,
    ) -> np.ndarray | None:
        """Identify the base parameters.

        Hook: a subclass may override it (keeping this signature and return
        value); the integration workflow calls it as ``solve(decimate=…,
        decimation_factor=…, plotting=False, save_results=False, wls=…)``.
        The defaults are :data:`SOLVE_DEFAULTS`.

        No file is written unless ``save_plots``, ``save_results`` or
        ``html_report`` asks for it.

        Args:
            decimate: Low-pass and down-sample the rows by ``decimation_factor``.
            decimation_factor: Down-sampling factor.
            zero_tolerance: Squared column norm under which a column is dropped.
            plotting: Plot measured vs identified efforts (shown with an
                interactive backend; see ``save_plots`` to write them).
            save_results: Save the results (yaml/csv/npz) under ``results/``.
            html_report: Also write the HTML report.
            wls: Refine the OLS estimate by weighted least squares (one noise
                variance per joint); std-devs stored in ``result["wls_std_deviations"]``.
            verbose: Print the quality report on stdout (figaroh 1.0.2 always
                printed it); ``False`` prints nothing.
            save_plots: With ``plotting``, write the figures as PNG files into
                this folder (created) instead of showing them.

        Returns:
            ndarray: Base parameters ``phi_base``.

        Raises:
            IdentificationStateError: (an ``AssertionError``) before :meth:`initialize`.
            IdentificationDataError: (a ``ValueError``) no meaningful fit exists:
                no joint moved, every torque zero or constant, non-finite
                conditioned signals, or a mask that keeps no sample.
            ValueError: Inconsistent shapes or configuration.
        """
        logger.info("Starting %s dynamic parameter identification...", self.__class__.__name__)
        self._run_started_at = datetime.now(timezone.utc).isoformat()
        self._decimate_used = bool(decimate)
        self._validate_prerequisites()
        options = FitOptions(bool(decimate), decimation_factor, zero_tolerance, apply_mask=True)
        fitted = run_steps(
            {
                "fit_rows": lambda _: _fit_problem(self, options),
                "base_fit": lambda problem: _least_squares_fit(self, problem, wls),
            }
        )
        self._store_results(fitted.results)
        if fitted.wls_std is not None:
            _required(self.result, "result")["wls_std_deviations"] = fitted.wls_std
        if fitted.at_rest is not None:
            _required(self.result, "result")["coulomb_at_rest"] = fitted.at_rest
        report_solution(self, verbose, plotting, save_plots, save_results, html_report)
        return self.phi_base

    def solve_with_custom_solver(
        self,
        method: str = "lstsq",
        regularization: str | None = None,
        alpha: float = 0.0,
        constraints: Dict[str, Any] | None = None,
        bounds: Any = None,
        decimate: bool = False,
        decimation_factor: int = _DEFAULTS.decimation_factor,
        zero_tolerance: float = _DEFAULTS.zero_tolerance,
        plotting: bool = False,
        save_results: bool = False,
        *,
        verbose: bool = True,
        save_plots: str | os.PathLike | None = None,
        **solver_kwargs: Any,
    ) -> np.ndarray | None:
        """Identify the base parameters with a :class:`~figaroh.tools.solver.LinearSolver`.

        The base columns come from the QR decomposition; their values are then
        estimated with ``method`` (``"ridge"``, ``"lasso"``, ``"constrained"``…)
        with optional regularization, bounds and linear constraints on the
        base parameters. Nothing is printed; ``verbose`` makes the solver log
        its solution summary at INFO level (``False``: no summary), and
        ``plotting`` / ``save_plots`` behave as in :meth:`solve`.

        Returns:
            ndarray: Identified base parameters.
        """
        logger.info("Starting %s identification with custom solver...", self.__class__.__name__)
        self._validate_prerequisites()
        options = FitOptions(bool(decimate), decimation_factor, zero_tolerance, apply_mask=False)
        solver = LinearSolver(
            method=method,
            regularization=regularization,
            alpha=alpha,
            constraints=constraints,
            bounds=bounds,
            verbose=bool(verbose),
            **solver_kwargs,
        )
        extra = {"solver_method": method, "regularization": regularization, "alpha": alpha}
        fitted = run_steps(
            {
                "fit_rows": lambda _: _fit_problem(self, options),
                "base_fit": lambda problem: _solver_fit(self, problem, solver, extra),
            }
        )
        self._store_results(fitted.results)
        report_solution(self, False, plotting, save_plots, save_results, False)
        logger.info("  RMSE: %.6f", self.rms_error)
        logger.info("  Correlation: %.6f", self.correlation)
        return self.phi_base

    # ------------------------------------------------------------------ metrics
    def _compute_quality_metrics(self):
        """Hook: relative std-devs [%], effort RMSE [N·m or N] and correlation of the fit.

        Called by both solves after the estimate is final (WLS included); sets
        ``std_relative``, ``rms_error`` and ``correlation`` from
        ``dynamic_regressor_base``, ``phi_base``, ``tau_noised`` and
        ``tau_identif`` (see
        :func:`~figaroh.identification._pipeline.base_fit.fit_quality`);
        :meth:`_store_results` reports these attributes.
        """
        fit = BaseFit(
            W_b=self.dynamic_regressor_base,
            phi_base=self.phi_base,
            params_base=tuple(self.params_base or ()),
            tau_noised=self.tau_noised,
            tau_identif=self.tau_identif,
            qr=getattr(getattr(self._run, "fit", None), "qr", None),
        )
        quality = fit_quality(fit)
        _update_run(self, quality=quality)
        self.std_relative = quality.std_relative
        self.rms_error = quality.rms_error
        self.correlation = quality.correlation

    def _store_results(self, identif_results):
        """Hook: build ``result`` from the fit, then run the physical and validation steps.

        Pipeline steps ``export`` (the documented ``result`` dict from
        ``identif_results`` and the quality attributes ``std_relative``,
        ``rms_error``, ``correlation``), ``physical`` (the
        ``_apply_*_if_enabled`` hooks, physical fit and selection) and
        ``validation`` (:meth:`_compute_validation_metrics` →
        ``result["validation_metrics"]``), in that order; then the stage records,
        the run provenance and the results manager.

        Args:
            identif_results: The fit-results dict of the base fit (see
                :meth:`_calculate_base_parameters`).
        """
        validation = run_steps(
            {
                "export": lambda _: _export_result(self, identif_results),
                "physical": lambda _: _physical_steps(self, identif_results),
                "validation": lambda _: _store_validation_metrics(self),
            }
        )
        self._record_physical_stage()
        _update_run(self, physical=_physical_outcome(self), validation=validation)
        self.result["stages"] = stages_as_dicts(self)
        self._run_provenance = collect_run_provenance(self, "identification")
        self.results_manager = make_results_manager(self)

    # ------------------------------------------------------------------ physical steps
    def _apply_physical_consistency_if_enabled(self, identif_results):
        """Per-link feasibility check / LMI projection when ``physical_consistency`` is enabled.

        The parameters checked are, in order: ``identif_results["parameter_dict"]``,
        ``["standard_parameter_dict"]``, else the reconstructed fit (the
        reconstruction is run first, through
        :meth:`_apply_reconstruction_if_enabled`). Stores and returns
        ``result["physical consistency"]``; None when disabled.
        """
        if not consistency_enabled(self.identif_config or {}):
            return None
        params, source = consistency_parameters(identif_results)
        if params is None:
            entry = self._apply_reconstruction_if_enabled(identif_results)
            if entry is not None and self._recon_result is not None:
                params = reconstructed_parameter_dict(self.standard_parameter, self._recon_result)
        out = check_consistency(inputs_of(self), params, source)
        return _store_entry(self.result, "physical consistency", out)

    def _apply_reconstruction_if_enabled(self, identif_results):
        """Base → full standard parameters when ``reconstruction`` is enabled or selected.

        Sets ``_recon_result`` and stores ``result["reconstruction"]``; the
        outcome is remembered in ``identif_results`` so a second call (the
        consistency step may need it first) reuses it. None when not wanted.
        """
        if not reconstruction_wanted(self.identif_config or {}):
            return None
        done = identif_results.get(_RECON_DONE)
        if done is None:
            done = reconstruct(inputs_of(self), identif_results)
            identif_results[_RECON_DONE] = done
        self._recon_result = done[1]
        return _store_entry(self.result, "reconstruction", done[0])

    def _record_physical_stage(self):
        decision = physical_stage(self.result or {}, self.selected)
        if decision is not None:
            status, reason, metrics = decision
            record_stage(self, "physical", status, reason, metrics)

    def _refresh_result_stages(self):
        if self.result is not None:
            self.result["stages"] = stages_as_dicts(self)

    def _compute_per_joint_stats(self):
        if self.result is None:
            return None
        return _metrics.per_joint_residuals(
            self.result["torque processed"], self.result["torque estimated"], self.fit_joints()
        )

    # ------------------------------------------------------------------ validation
    def _load_validation_data(self, data_source):
        training_raw = self.raw_data
        log = self.load_trajectory_data(data_source=data_source)
        with _conditioned_log(self, log, "_val_trajectory") as (processed, mask):
            self._val_sample_mask = mask
            self._val_processed_data = processed
            self._val_num_samples = self.num_samples
            self._val_regressor = None
            self._val_available = True
            _check_validation_independence(self, training_raw, self.raw_data)

    def _compute_validation_metrics(self):
        """Held-out metrics (else on the training data); records stage ``validation``."""
        if self._idx_eliminated is None or self._base_indices is None:
            return None
        if self._val_available:
            data, mask = self._val_processed_data, self._val_sample_mask
            # a copy of the training data is never called independent
            source = "identification_data_fallback" if self._val_duplicate else "validation_data"
        else:
            logger.warning(
                "No held-out validation data: evaluating on the identification data "
                "(not an independent test). Set validation_data_file to a held-out trajectory."
            )
            data, mask, source = (
                self.processed_data,
                self._sample_mask,
                "identification_data_fallback",
            )
        metrics = _scored_log(self, data, mask, source)
        record_stage(self, "validation", *validation_stage(metrics))
        return metrics

    def _identified_joints(self):
        eliminated = set(self._idx_eliminated or [])
        out = []
        for k, name in enumerate(self.model.names[1:]):
            joint = self.model.joints[k + 1]
            if joint.shortname() == "JointModelFreeFlyer":
                continue
            if any(10 * k + c not in eliminated for c in range(10)):
                out.append(name)
        return out

    # ------------------------------------------------------------------ using the model
    def predict(self, q: Any, dq: Any, ddq: Any) -> np.ndarray:
        """Joint efforts the identified model predicts at the given states.

        ``τ = W_full(q, q̇, q̈) · x``: the full regressor of the states (the
        hook :meth:`build_regressor`, so robot-specific columns count; the
        friction ``fv·q̇ + fs·sign(q̇)``, actuator inertia ``Ia·q̈`` and offset
        terms the configuration identifies are columns of it) times the
        standard-space vector of the selected estimate: with ``select_stage``
        ``fit`` (default) the base parameters ``phi_base`` on their base
        columns (``W_full · x = W_b · phi_base``); with ``reconstruction`` or
        ``physical_fit`` the accepted standard parameters (a rejected one is
        not used: the base fit predicts, as in the held-out validation). The
        efforts are in the units of the fitted efforts (what
        :meth:`process_torque_data` returns).

        The states are taken as given: no filtering, differentiation or
        decimation. The active-joint columns are expanded to the model's
        configuration by the hook :meth:`_build_full_configuration` (the
        inactive joints at ``robot.q0`` with zero velocity and acceleration;
        a continuous joint's angle θ becomes ``(cos θ, sin θ)``).

        Args:
            q: Positions (N, n_active) [rad or m] of the active joints, columns
                in ``identif_config["active_joints"]`` order (a 1-D
                (n_active,) array is one sample).
            dq: Velocities, same shape [rad/s or m/s].
            ddq: Accelerations, same shape [rad/s² or m/s²].

        Returns:
            (N, n_active) efforts [N·m or N], every active joint (a joint left
            out of ``torque_fit_joints`` gets the model's prediction too).

        Raises:
            IdentificationStateError: (an ``AssertionError``) before
                :meth:`solve`, or after a fit that recorded no base columns.
            IdentificationDataError: (a ``ValueError``) a state that is not
                (N, n_active), not numeric or not finite (named in the message).

        Example:
            >>> ident.solve()                                    # doctest: +SKIP
            >>> tau = ident.predict(q, dq, ddq)  # (N, n_active) [N·m]  # doctest: +SKIP
        """
        _require_identified(self, "predict")
        states = active_states(q, dq, ddq, list(self.identif_config.get("active_joints", [])))
        W_full = self.build_regressor(*_full_states(self, *states))
        x, _ = _identified_vector(self, W_full.shape[1])
        return predicted_efforts(W_full, x, _settings(self))

    def evaluate(self, data: Any) -> EvaluationResult:
        """Per-joint RMSE, R², bias and stacked RMSE of the identified model on another log.

        The log is conditioned exactly as the held-out validation trajectory
        (``validation_data_file``) is: adopted, masked, filtered and
        differentiated by the hooks (:meth:`process_kinematics_data`,
        :meth:`process_torque_data`, :meth:`_build_full_configuration`), then
        scored by the validation metrics on the fitted joints with the
        selected estimate (see :meth:`predict`). Evaluating the validation
        log gives the numbers of ``result["validation_metrics"]``. The
        identification's own data and state are left unchanged.

        Args:
            data: A :class:`~figaroh.data.trajectory.TrajectoryData`, a legacy
                raw-data dict (the layout :meth:`load_trajectory_data`
                returns), or a path / dataset name (``str`` or
                ``os.PathLike``) that the subclass's
                ``load_trajectory_data(data_source=...)`` reads.

        Returns:
            :class:`~figaroh.identification._pipeline.prediction.EvaluationResult`
            (``to_dict()`` for JSON).

        Raises:
            IdentificationStateError: (an ``AssertionError``) before :meth:`solve`.
            TypeError: ``data`` is none of the accepted kinds.
            IdentificationDataError: (a ``ValueError``) an unusable log (named field).
        """
        _require_identified(self, "evaluate")  # before any loading
        if isinstance(data, (str, os.PathLike)):
            data = self.load_trajectory_data(data_source=os.fspath(data))
        elif not isinstance(data, (Mapping, _data.trajectory.TrajectoryData)):
            raise TypeError(
                "evaluate: 'data' must be a TrajectoryData, a raw-data dict or a path the "
                f"loader reads, got {type(data).__name__}"
            )
        saved = self._val_trajectory
        try:
            with _conditioned_log(self, data, "_val_trajectory") as conditioned:
                processed, mask = conditioned
        finally:
            self._val_trajectory = saved
        # scored once the training state is back (its regressor is not the log's)
        metrics = _scored_log(self, processed, mask, "evaluation_data")
        return evaluation_result(metrics, mask, metrics.get("estimate_stage"))

    def export_urdf(
        self,
        nominal_urdf: str,
        output_path: str | None = None,
        merged_bodies: str = "refuse",
        *,
        joint_dynamics: bool = True,
    ) -> str:
        """Write the selected estimate's link inertials (and joint friction) into a URDF.

        Needs ``select_stage`` ``reconstruction`` or ``physical_fit`` and an
        *accepted* estimate: the base-parameter fit has no per-link inertials,
        and a rejected estimate is not exported. Either case records stage
        ``export`` as failed and raises. On success the URDF is written,
        reloaded with Pinocchio as a check and ``export`` is recorded ``ok``.

        Args:
            nominal_urdf: Path of the nominal URDF the run was based on.
            output_path: Where to write; default ``<stem>_modified.urdf`` beside it.
            merged_bodies: ``"refuse"`` or ``"subtract_fixed"`` for joints whose
                Pinocchio body holds fixed-attached links.
            joint_dynamics: Also write the identified viscous friction ``fv``
                [N·m·s/rad] → ``damping``, Coulomb friction ``fs`` [N·m] →
                ``friction`` and actuator inertia ``Ia`` [kg·m²] → the
                ``armature`` extension attribute of each identified joint's
                ``<dynamics>`` (joint-side values, only the terms the
                configuration identified). ``False`` writes link inertials
                only, as figaroh 1.0.2 did (the nominal ``<dynamics>`` stay).

        Returns:
            Absolute path of the written URDF.

        Raises:
            ValueError: No accepted standard-space estimate, or the exporter
                refused the parameters.
        """
        return _identification._pipeline_physical.export_selected_urdf(
            self, nominal_urdf, output_path, merged_bodies, joint_dynamics=joint_dynamics
        )


# ---------------------------------------------------------------------- solve glue
# Plain functions that sequence the hooks of one ``BaseIdentification`` (they
# call them through the object, so an override takes effect); the numerical
# work is in the pipeline steps they call.
def _settings(ident: BaseIdentification) -> Settings:
    """The :class:`~figaroh.identification._pipeline.records.Settings` of ``identif_config`` now.

    Built on each call: ``identif_config`` may be edited between runs. The
    QR rank tolerance is a subclass's ``tol_qr`` attribute, else 1e-6.
    """
    return make_settings(
        ident.identif_config, ident.model, ident.robot.q0, getattr(ident, "tol_qr", 1e-6)
    )


def _update_run(ident: BaseIdentification, **fields: Any) -> None:
    """Fill fields of the run record ``_run`` of the current solve (none outside a solve)."""
    if ident._run is not None:
        ident._run = dataclasses.replace(ident._run, **fields)


def _fit_problem(ident: BaseIdentification, options: FitOptions) -> FitProblem:
    """Pipeline step ``fit_rows`` of both solves, through the row hooks.

    Starts the run record ``_run`` (settings and ``options``; the hook
    ``_eliminate_zero_columns`` reads ``options.decimate`` from it), then
    :func:`~figaroh.identification._pipeline.fit_rows.build_fit_problem` runs
    ``_eliminate_zero_columns``, ``_apply_decimation`` or
    ``_prepare_undecimated_data``, ``_mask_rows`` (when ``options.apply_mask``)
    and ``_select_fit_rows``, in that order; ``_reset_solve_state`` then
    receives the fitted rows.
    """
    ident._run = IdentificationRun(settings=_settings(ident), options=options)
    hooks = RowSteps(
        eliminate_zero_columns=ident._eliminate_zero_columns,
        apply_decimation=ident._apply_decimation,
        prepare_undecimated_data=ident._prepare_undecimated_data,
        mask_rows=ident._mask_rows,
        select_fit_rows=ident._select_fit_rows,
    )
    standard = _required(ident.standard_parameter, "standard_parameter")
    problem = build_fit_problem(hooks, options, list(standard))
    _update_run(ident, problem=problem)
    ident._idx_eliminated = list(problem.idx_eliminated)  # the columns the fit lacks
    ident._reset_solve_state(problem.tau, problem.W, list(problem.active_params))
    return problem


def _publish_fit(ident: BaseIdentification, fit: BaseFit) -> None:
    """Expose a :class:`~figaroh.identification._pipeline.records.BaseFit` as attributes."""
    _update_run(ident, fit=fit)
    if fit.qr is not None:
        ident._M_matrix = fit.M
        ident._params_r_for_recon = list(_required(fit.params_r, "BaseFit.params_r"))
        ident._base_indices = list(_required(fit.base_indices, "BaseFit.base_indices"))
    ident.dynamic_regressor_base = fit.W_b
    ident.phi_base = fit.phi_base
    ident.params_base = list(fit.params_base)
    ident.tau_identif = fit.tau_identif
    ident.tau_noised = fit.tau_noised


def _least_squares_fit(ident: BaseIdentification, problem: FitProblem, wls: bool) -> _Fitted:
    """Pipeline step ``base_fit`` of ``solve``, through its hooks.

    ``_calculate_base_parameters`` (a failure records stage ``fit`` failed and
    propagates), then with ``wls`` ``_apply_weighted_least_squares`` (its
    estimate replaces ``phi_base``), then ``_compute_quality_metrics``, the
    Coulomb-rows-at-rest count
    (:func:`~figaroh.identification._pipeline.base_fit.coulomb_at_rest`, with
    friction identified) and stage ``fit`` (effort RMSE, rows, parameters).
    """
    try:
        results = ident._calculate_base_parameters(
            problem.tau, problem.W, list(problem.active_params)
        )
    except Exception as exc:
        record_stage(ident, "fit", "failed", f"{type(exc).__name__}: {exc}")
        raise
    wls_std = None
    if wls:
        phi_wls, wls_std = ident._apply_weighted_least_squares()
        _use_estimate(ident, results, phi_wls)
    ident._run_finished_at = datetime.now(timezone.utc).isoformat()
    ident._compute_quality_metrics()
    at_rest = None
    if ident.identif_config.get("has_friction") and ident.processed_data is not None:
        settings, blocks = _settings(ident), ident._fit_blocks()
        names = [settings.active_joints[b] for b in blocks]
        at_rest = coulomb_at_rest(ident.processed_data["velocities"], settings, blocks, names)
    fit_metrics = {
        "effort_rmse": (
            float(_required(ident.rms_error, "rms_error")),
            "N·m or N (stacked joints)",
        ),
        "rows": len(_required(ident.tau_noised, "tau_noised")),
        "base_parameters": len(_required(ident.phi_base, "phi_base")),
    }
    if at_rest is not None:
        fit_metrics["coulomb_rows_at_rest"] = (at_rest["rows_at_rest"], "rows")
        fit_metrics["coulomb_round_off_rows"] = (at_rest["round_off_rows"], "rows")
    reason = "weighted least squares" if wls else "least squares"
    record_stage(ident, "fit", "ok", reason, fit_metrics)
    return _Fitted(results, wls_std, at_rest)


def _use_estimate(ident: BaseIdentification, results: dict, phi_base: np.ndarray) -> None:
    """Make ``phi_base`` (e.g. the WLS estimate) the estimate of ``ident`` and of ``results``.

    ``tau_identif = dynamic_regressor_base @ phi_base``; the dict's
    ``phi_base`` and ``tau_estimated`` follow. ``base_param_dict`` (which
    becomes ``result["base parameters"]``) keeps the least-squares values, as
    in figaroh 1.0.2: after ``solve(wls=True)`` the WLS estimate is
    ``result["base parameters values"]`` (and ``phi_base``), the name → value
    dict the OLS one.
    """
    fit = getattr(ident._run, "fit", None)
    if fit is not None and fit.W_b is ident.dynamic_regressor_base:
        fit = with_estimate(fit, phi_base)
        _update_run(ident, fit=fit)
        tau_estimated = fit.tau_identif
    else:
        tau_estimated = ident.dynamic_regressor_base @ phi_base
    ident.phi_base = phi_base
    ident.tau_identif = tau_estimated
    results["phi_base"] = phi_base
    results["tau_estimated"] = tau_estimated


def _solver_fit(
    ident: BaseIdentification, problem: FitProblem, solver: Any, extra: dict
) -> _Fitted:
    """Pipeline step ``base_fit`` of ``solve_with_custom_solver``.

    Base columns by QR (default tolerance), values by ``solver.solve(W_b,
    tau)``, then ``_compute_quality_metrics``.
    """
    fit = custom_solver_fit(problem, ident.standard_parameter, solver, extra)
    fit = dataclasses.replace(fit, extra={"solver_info": solver.solver_info, **extra})
    _publish_fit(ident, fit)
    ident._compute_quality_metrics()
    return _Fitted(fit_results(fit), None, None)


# ---------------------------------------------------------------------- _store_results glue
def _export_result(ident: BaseIdentification, identif_results: dict) -> None:
    """Pipeline step ``export``: ``result`` from the fit results and the quality attributes.

    The condition number is the QR's ``cond(R1)`` when
    ``_compute_quality_metrics`` computed it for this fit, else
    ``np.linalg.cond(dynamic_regressor_base)``.
    """
    computed = getattr(ident._run, "quality", None)
    quality = Quality(
        std_relative=ident.std_relative,
        rms_error=ident.rms_error,
        correlation=ident.correlation,
        condition_number=(
            computed.condition_number
            if computed is not None
            else float(
                np.linalg.cond(_required(ident.dynamic_regressor_base, "dynamic_regressor_base"))
            )
        ),
    )
    _update_run(ident, quality=quality)
    ident.result = base_result(identif_results, quality, ident.num_samples, ident.identif_config)


_T = TypeVar("_T")


def _required(value: _T | None, name: str) -> _T:
    """``value``, which the solve step reading it needs.

    Raises:
        IdentificationStateError: ``value`` is None: an overriding hook did not
            set the attribute ``name`` (see the hook's docstring).
    """
    if value is None:
        raise IdentificationStateError(
            f"{name} is not set at this step of the solve; an overridden hook must set it"
        )
    return value


def _store_entry(result: dict | None, key: str, value: Any) -> Any:
    """``result[key] = value`` unless either is None; returns ``value``."""
    if result is not None and value is not None:
        result[key] = value
    return value


def _physical_steps(ident: BaseIdentification, identif_results: dict) -> None:
    """Pipeline step ``physical`` (``_store_results``, before validation).

    In order: the hooks ``_apply_physical_consistency_if_enabled`` and
    ``_apply_reconstruction_if_enabled``, the direct LMI fit when wanted
    (``_physical_fit``, ``result["physical_fit"]``), then the selected
    estimate (``selected``, ``result["selected"]``).
    """
    ident._apply_physical_consistency_if_enabled(identif_results)
    ident._apply_reconstruction_if_enabled(identif_results)
    outcome, entry = physical_fit(inputs_of(ident))
    if outcome is not None:
        ident._physical_fit = outcome
        _store_entry(ident.result, "physical_fit", entry)
    sel, entry = select(inputs_of(ident), ident._recon_result, ident._physical_fit)
    ident.selected = sel
    _store_entry(ident.result, "selected", entry)


def _physical_outcome(ident: BaseIdentification) -> PhysicalOutcome:
    """The :class:`~figaroh.identification._pipeline.records.PhysicalOutcome` of the last solve."""
    result: dict[str, Any] = ident.result or {}
    return PhysicalOutcome(
        consistency=result.get("physical consistency"),
        reconstruction=result.get("reconstruction"),
        recon_result=ident._recon_result,
        physical_fit=ident._physical_fit,
        physical_fit_entry=result.get("physical_fit"),
        selected=ident.selected,
        selected_entry=result.get("selected"),
    )


def _store_validation_metrics(ident: BaseIdentification) -> dict | None:
    """Pipeline step ``validation``: ``result["validation_metrics"]`` (None: not computed)."""
    validation = ident._compute_validation_metrics()
    if validation is not None:
        _required(ident.result, "result")["validation_metrics"] = validation
    return validation


# ---------------------------------------------------------------------- held-out data
def _check_validation_independence(
    ident: BaseIdentification, training: dict, validation: dict
) -> None:
    """Check ``validation_independent`` (held-out ≠ training) and re-record stage ``data``."""
    finding = validation_finding(training or {}, validation or {})
    ident._val_duplicate = not finding.passed
    if not finding.passed:
        logger.warning("Data check %s failed: %s", finding.check, finding.message)
    checks = getattr(ident, "data_checks", None) or DataChecks()
    # dataclasses.replace keeps the class: the copy is the identification DataChecks
    ident.data_checks = cast(DataChecks, checks.with_findings(finding))
    ident._record_data_stage()


def _evaluation_regressor(ident: BaseIdentification, data: dict) -> np.ndarray:
    """Full regressor of the evaluated trajectory ``data``, built at most once.

    The training data (or an identical copy of it) reuse
    ``dynamic_regressor``; the held-out regressor is built by the hook
    ``build_regressor`` on the first solve and kept in ``_val_regressor``,
    together with the ``dynamic_regressor`` it was built alongside, for the
    next solves: a new ``dynamic_regressor`` (``calculate_full_regressor``,
    e.g. in ``initialize``) or new held-out data rebuild it.
    """
    W_train = ident.dynamic_regressor
    if W_train is not None and (
        data is ident.processed_data or same_kinematics(data, ident.processed_data)
    ):
        return W_train
    cached = getattr(ident, "_val_regressor", None)
    if data is ident._val_processed_data and cached is not None and cached[0] is W_train:
        return cached[1]
    W_full = ident.build_regressor(data["positions"], data["velocities"], data["accelerations"])
    if data is ident._val_processed_data:
        ident._val_regressor = (W_train, W_full)
    return W_full


@contextlib.contextmanager
def _conditioned_log(
    ident: BaseIdentification, data: Any, attr: str
) -> Iterator[Tuple[Dict[str, Any], np.ndarray | None]]:
    """Condition a log as the training data is, through the hooks, in a swapped state.

    ``data`` (a raw-data dict or a TrajectoryData) goes through
    ``_adopt_trajectory(data, attr=attr)``, ``_trajectory_mask``,
    ``_truncate_data``, ``process_kinematics_data``, ``process_torque_data``
    and ``_build_full_configuration``, with ``raw_data``, ``processed_data``
    and ``num_samples`` temporarily holding the log's; inside the block they
    still do, and they are restored on leaving it (also on error).

    Yields:
        ``(processed, mask)``: the conditioned full-configuration signals and
        the valid-sample mask (None: every sample valid).
    """
    saved = (ident.raw_data, ident.processed_data, ident.num_samples)
    try:
        raw = ident._adopt_trajectory(data, attr=attr)
        mask = ident._trajectory_mask(getattr(ident, attr))
        ident.raw_data = ident._truncate_data(raw, None)
        ident.process_kinematics_data(ident.filter_config)
        processed = _required(ident.processed_data, "processed_data")
        processed["torques"] = np.asarray(ident.process_torque_data(), dtype=float)
        ident.num_samples = processed["positions"].shape[0]
        ident._build_full_configuration()
        yield _required(ident.processed_data, "processed_data"), mask
    finally:
        ident.raw_data, ident.processed_data, ident.num_samples = saved


def _scored_log(
    ident: BaseIdentification, data: Dict[str, Any], mask: np.ndarray | None, source: str
) -> Dict[str, Any]:
    """Pipeline step ``validation`` on one conditioned log: its metrics dict.

    The full regressor of ``data`` (:func:`_evaluation_regressor`) times the
    selected estimate (:func:`_identified_vector`), scored against the log's
    efforts and the nominal model on the fitted joints by
    :func:`~figaroh.identification._pipeline.validation.validation_metrics`.
    """
    W_full = _evaluation_regressor(ident, data)
    x, estimate_stage = _identified_vector(ident, W_full.shape[1])
    return validation_metrics(
        W_full,
        signal_set(data, mask),
        np.fromiter(_required(ident.standard_parameter, "standard_parameter").values(), float),
        x,
        _settings(ident),
        ident._fit_blocks(),
        source,
        estimate_stage,
    )


def _require_identified(ident: BaseIdentification, caller: str) -> None:
    """Raise unless ``ident`` holds an identified model ``caller`` can use.

    Raises:
        IdentificationStateError: no solve yet, or a fit that recorded no base
            columns (``caller`` names the method in the message).
    """
    if ident.result is None or ident.phi_base is None or ident.standard_parameter is None:
        raise IdentificationStateError(
            f"{caller}() needs an identified model: call initialize() then solve() first"
        )
    if ident._idx_eliminated is None or ident._base_indices is None:
        raise IdentificationStateError(
            f"{caller}(): the fit recorded no base columns (_idx_eliminated, _base_indices); "
            "an overridden _calculate_base_parameters must set them"
        )


def _identified_vector(ident: BaseIdentification, n_std: int) -> Tuple[np.ndarray, str | None]:
    """The standard-space vector ``x`` (n_std,) of the selected estimate and its stage.

    ``W_full · x`` is the identified model's prediction: ``phi_base`` on its
    base columns, or an accepted standard-space estimate (see
    :func:`~figaroh.identification._pipeline.physical.validation_estimate`).
    """
    values, estimate_stage = validation_estimate(ident.identif_config or {}, ident.selected)
    x = identified_standard_vector(
        n_std,
        _required(ident._idx_eliminated, "_idx_eliminated"),
        _required(ident._base_indices, "_base_indices"),
        _required(ident.phi_base, "phi_base"),
        values,
    )
    return x, estimate_stage


def _full_states(
    ident: BaseIdentification, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Active-joint states → full ``(N, nq)`` / ``(N, nv)`` arrays by ``_build_full_configuration``.

    The hook runs on ``processed_data`` / ``num_samples`` temporarily holding
    the states; both are restored afterwards.
    """
    saved = (ident.processed_data, ident.num_samples)
    try:
        ident.processed_data = {"positions": q, "velocities": dq, "accelerations": ddq}
        ident.num_samples = q.shape[0]
        ident._build_full_configuration()
        full = _required(ident.processed_data, "processed_data")
        return full["positions"], full["velocities"], full["accelerations"]
    finally:
        ident.processed_data, ident.num_samples = saved
