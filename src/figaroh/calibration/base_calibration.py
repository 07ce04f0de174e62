"""Base class for geometric (kinematic) calibration.

Workflow:

1. ``BaseCalibration(robot, config_file)`` — parse the configuration into
   ``calib_config``;
2. :meth:`initialize` — :meth:`load_data_set` (measured poses and postures
   through :class:`~figaroh.data.observations.PoseObservations`) then
   :meth:`create_param_list` (structural selection of the identifiable
   joint parameters, base/tip frame names, frame-absorbed parameters removed
   on the measured data — or one of the non-structural estimation methods of
   :mod:`figaroh.calibration.estimation`);
3. :meth:`solve` — Levenberg–Marquardt on the weighted log-map residuals
   with an **analytic** Jacobian, outlier exclusion, evaluation metrics,
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

import contextlib
import dataclasses
import json
import logging
import os
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple

import numpy as np
import yaml
from scipy.optimize import least_squares

from figaroh.calibration import calibration_tools as ct
from figaroh.calibration import estimation
from figaroh.calibration._pipeline import metrics as _metrics
from figaroh.calibration._pipeline import residuals as _residuals
from figaroh.calibration._pipeline.estimators import estimate
from figaroh.calibration._pipeline.layout import structural_layout
from figaroh.calibration._pipeline.observations import read_observations
from figaroh.calibration._pipeline.outliers import fit_with_outlier_exclusion
from figaroh.calibration._pipeline.priors import joint_candidates, prior_group
from figaroh.calibration._pipeline.records import (
    CalibrationRun,
    EstimationProblem,
    EstimationResult,
    EstimationSettings,
    FitOutcome,
    MeasurementSpec,
    ResidualModel,
    StructuralLayout,
)
from figaroh.calibration._pipeline.results import assemble_results, poses_2d
from figaroh.calibration._pipeline.uncertainty import (
    CORRELATION_THRESHOLD,
    correlated_pairs,
    parameter_uncertainty,
)
from figaroh.calibration._pipeline.validation import fit_frames_only, validation_metrics
from figaroh.calibration._report import format_quality_report as _format_quality_report
from figaroh.calibration.calibration_tools import (
    calc_updated_fkm,
    calculate_base_kinematics_regressor,
    drop_calibration_parameters,
    estimate_frames_closed_form,
    initialize_variables,
    measurement_jacobian,
    select_identifiable_parameters,
)
from figaroh.calibration.config import get_param_from_yaml, unified_to_legacy_config
from figaroh.calibration.parameter import BASE_TPL, EE_TPL, add_base_name, add_pee_name
from figaroh.tools.provenance import collect_run_provenance
from figaroh.tools.run_archive import archive_run as _archive_run
from figaroh.tools.run_archive import compute_run_dir
from figaroh.tools.stages import drop_stage, record_stage, stages_as_dicts, stages_line
from figaroh.tools.urdf_exporter import is_kinematic_correction as _exporter_kinematic
from figaroh.utils.config_parser import (
    UnifiedConfigParser,
    create_task_config,
    is_unified_config,
    require_unified_config,
)
from figaroh.utils.error_handling import CalibrationError, handle_calibration_errors
from figaroh.utils.results_manager import plot_with_fallback

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


class BaseCalibration:
    """Geometric calibration of a kinematic chain from measured poses or points.

    Robot-specific subclasses usually override only :meth:`cost_function`
    (and, to keep the analytic Jacobian, :meth:`cost_jacobian`); a robot with
    another file format overrides :meth:`load_data_set`.

    Hooks (methods the workflow calls at a fixed point; an override is used
    there with the same arguments and return value):

    * :meth:`cost_function` ``(var) -> rows`` — what :meth:`solve` minimises;
    * :meth:`_compute_logmap_residuals` ``(measured, estimated, *,
      position_frame, n_samples) -> flat residuals`` — used by the default
      cost when overridden, and by 1.0.2-style costs;
    * :meth:`apply_measurement_weighting` ``(residuals, pos_weight,
      orient_weight) -> rows`` — the last step of the default cost;
    * :meth:`cost_jacobian` ``(var) -> (rows, n_param)`` — analytic Jacobian
      of the cost (finite differences when a cost hook is overridden without
      it);
    * :meth:`load_data_set` — fills ``PEE_measured``, ``q_measured``;
    * :meth:`create_param_list`, :meth:`eliminate_absorbed_parameters`,
      :meth:`solve_optimisation`, :meth:`calc_stddev`,
      :meth:`get_pose_from_measure` — called by :meth:`initialize` /
      :meth:`solve` through the instance.

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

    def __repr__(self) -> str:
        cfg = getattr(self, "calib_config", {}) or {}
        return (
            f"{self.__class__.__name__}(robot={getattr(self.model, 'name', '?')!r}, "
            f"level={cfg.get('calib_model')!r}, frames={cfg.get('start_frame')!r}->"
            f"{cfg.get('end_frame')!r}, markers={cfg.get('NbMarkers')}, "
            f"samples={cfg.get('NbSample')}, params={len(cfg.get('param_name', []))}, "
            f"status={getattr(self, 'STATUS', '?')!r})"
        )

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
        path = Path(config_file)
        self._config_file_path = str(config_file)
        if not path.is_file():
            raise CalibrationError(f"Configuration file not found: {path}")
        try:
            if is_unified_config(path):
                unified = UnifiedConfigParser(path).parse()
                task_cfg = create_task_config(self.robot, unified, setting_type)
                self.calib_config = unified_to_legacy_config(self.robot, task_cfg)
            else:
                with open(path, encoding="utf-8") as fh:
                    raw = yaml.safe_load(fh)
                if not isinstance(raw, Mapping) or setting_type not in raw:
                    raise KeyError(
                        f"legacy config {path} has no '{setting_type}' section "
                        f"(top-level keys: {sorted(raw) if isinstance(raw, Mapping) else raw!r})"
                    )
                self.calib_config = get_param_from_yaml(self.robot, raw[setting_type])
        except CalibrationError:
            raise
        except Exception as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise CalibrationError(f"Failed to load configuration: {msg}") from exc

    def _resolve_path(self, value: Any, key: str) -> str:
        if value is None or not str(value).strip():
            raise CalibrationError(
                f"{key} is not set in {self._config_file_path}: name the calibration CSV "
                "(or call set_data_file(path) on a configured instance)"
            )
        p = Path(str(value)).expanduser()
        if p.is_absolute() or p.exists():
            return os.path.abspath(p)
        alt = Path(self._config_file_path).resolve().parent / p
        if alt.exists():
            return str(alt)
        return os.path.abspath(p)

    def set_data_file(self, path: str | os.PathLike, validation: bool = False) -> str:
        """Point the calibration (or its validation set) at another CSV.

        Args:
            path: CSV file (layout of).
            validation: Set the held-out validation file instead.

        Returns:
            The absolute path used.
        """
        resolved = self._resolve_path(str(path), "data file")
        if validation:
            self.calib_config["validation_data_file"] = resolved
        else:
            self.calib_config["data_file"] = resolved
            self._data_path = resolved
        return resolved

    # ------------------------------------------------------------------ data (step observations)
    def load_data_set(self) -> None:
        """Read the measured poses and postures.

        Sets ``observations``, ``PEE_measured``, ``q_measured`` and
        ``calib_config["NbSample"]``, records the ``data`` stage and loads the
        validation set when ``validation_data_file`` is configured.

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
        try:
            resolved = self._resolve_path(path, "data.validation_data_file")
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

    def initialize(self) -> None:
        """:meth:`load_data_set` then :meth:`create_param_list`.

        Raises:
            CalibrationError: ``"Initialization failed: …"``.
        """
        try:
            self.load_data_set()
            self.create_param_list()
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

    def _apply_layout(self, layout: StructuralLayout) -> None:
        """Write a structural layout into ``calib_config`` (1.0.2 keys)."""
        cfg = self.calib_config
        for k in [k for k in cfg if k.startswith("base_mapping")]:
            del cfg[k]
        cfg.pop("absorbed_param_name", None)
        cfg["param_name"] = list(layout.param_name)
        cfg["base_mapping_matrix"] = layout.matrix
        cfg["base_mapping_param_names"] = list(layout.param_names)
        cfg["base_mapping_row_names"] = list(layout.row_names)
        cfg["base_mapping_slice"] = layout.slice
        cfg["base_mapping_matrix_full"] = np.array(layout.matrix, copy=True)
        cfg["base_mapping_row_names_full"] = list(layout.row_names)
        cfg["base_frame_row_names"] = list(layout.base_frame_row_names)

    def _frame_param_names(self) -> List[str]:
        return ct.frame_names(self.calib_config["param_name"])

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

    def _initial_vector(self) -> np.ndarray:
        names = list(self.calib_config["param_name"])
        x0 = np.zeros(len(names))
        for k, v in self.initial_frame_guess().items():
            x0[names.index(k)] = v
        return x0

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

    def _configure_estimation(self) -> Dict[str, Any]:
        """Run the non-structural estimator and write its result into ``calib_config``.

        Returns:
            The estimation report (also ``calib_config["estimation_report"]``).

        Raises:
            EstimationError: ``non_geom`` set, data not loaded, bad settings.
        """
        result = estimate(self._estimation_problem())
        self._apply_estimation(result)
        return result.report

    def _estimation_problem(self) -> EstimationProblem:
        """The estimation problem of a non-structural method (candidate layout loaded)."""
        cfg = self.calib_config
        st = estimation.settings(cfg)
        method = st["method"]
        if cfg.get("non_geom"):
            raise estimation.EstimationError(
                f"estimation.method {method!r} does not support include_non_geometric; use "
                "structural"
            )
        if self.PEE_measured is None or self.q_measured is None:
            raise estimation.EstimationError(
                f"estimation.method {method!r} needs the measurements: load the data before "
                "create_param_list()"
            )
        cands = joint_candidates(self.model, cfg)
        K = int(cfg["NbMarkers"])
        mask = list(cfg["measurability"])
        base = [] if cfg.get("known_baseframe", False) else list(BASE_TPL)
        tips = (
            []
            if cfg.get("known_tipframe", False)
            else [f"{t}_{k}" for k in range(1, K + 1) for j, t in enumerate(EE_TPL) if mask[j]]
        )
        canonical = base + cands + tips
        for k in [k for k in cfg if k.startswith("base_mapping")]:
            del cfg[k]
        cfg["param_name"] = list(canonical)
        cfg["prior_weights"] = None
        cfg["prior_noise"] = None
        self._layout_cache = None
        return EstimationProblem(
            names=tuple(canonical),
            frames=tuple(base + tips),
            joint_names=tuple(cands),
            prior_groups={n: prior_group(n, self.model) for n in canonical},
            settings=EstimationSettings.from_mapping(st),
            model=self._residual_model(),
        )

    def _apply_estimation(self, result: EstimationResult) -> None:
        cfg = self.calib_config
        cfg["param_name"] = list(result.param_name)
        cfg["prior_weights"] = result.prior_weights
        cfg["prior_noise"] = result.prior_noise
        cfg["absorbed_param_name"] = list(result.absorbed)
        cfg["estimation_report"] = result.report
        self.estimation_report = result.report
        self._layout_cache = None
        self.nvars = len(result.param_name)

    # ------------------------------------------------------------------ residual model
    def _residual_model(self) -> ResidualModel:
        """The objective of this instance (its hooks) for the estimators."""
        return ResidualModel(
            initial_vector=self._initial_vector_of,
            jacobian=self._jacobian_of,
            fit=self._fit_subset,
            score=self._score_subset,
            n_samples=self.n_samples,
            n_rows=len(self.PEE_measured),
        )

    def _params_context(self, names: Sequence[str]):
        """``names`` as the parameter layout (a no-op when it already is)."""
        if list(names) == list(self.calib_config["param_name"]):
            return contextlib.nullcontext()
        return self._temporary_params(list(names), None)

    def _initial_vector_of(self, names: Sequence[str]) -> np.ndarray:
        with self._params_context(names):
            return self._initial_vector()

    def _jacobian_of(self, names: Sequence[str], x: np.ndarray) -> np.ndarray:
        with self._params_context(names):
            return self._identifiability_jacobian(x)

    def _split_samples(self, idx: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Postures and flat measurements of the posture indices ``idx``."""
        N = self.n_samples
        rows = np.arange(len(self.PEE_measured))
        keep = np.isin(rows % N, idx)
        return self.q_measured[:N][idx], self.PEE_measured[keep]

    def _fit_subset(
        self,
        names: Sequence[str],
        x0: np.ndarray,
        prior_weights: np.ndarray | None = None,
        samples: np.ndarray | None = None,
        max_nfev: int = 2000,
    ) -> FitOutcome:
        """Least-squares fit of ``names`` (optionally on the postures ``samples``)."""
        if samples is not None:
            ctx_data = self._temporary_data(*self._split_samples(samples))
        else:
            ctx_data = contextlib.nullcontext()
        with ctx_data, self._temporary_params(list(names), prior_weights):
            n_rows = len(self._objective(x0))
            method = "lm" if n_rows >= len(names) else "trf"
            mode = self._jacobian_mode()
            jac = "2-point" if mode == "2-point" else self._objective_jacobian
            res = least_squares(self._objective, x0, jac=jac, method=method, max_nfev=max_nfev)
            n_meas = len(self.PEE_measured)
            J = res.jac[:n_meas] if res.jac is not None else None
        return FitOutcome(res.x, res.fun, J)

    def _score_subset(self, names: Sequence[str], x: np.ndarray, samples: np.ndarray) -> float:
        """RMS of the cost's measurement rows at ``x`` on the postures ``samples``."""
        q, pee = self._split_samples(samples)
        with self._temporary_data(q, pee), self._temporary_params(list(names), None):
            r = np.asarray(self.cost_function(x), dtype=float)[: len(pee)]
        return float(np.sqrt(np.mean(r**2)))

    def _identifiability_jacobian(self, var: np.ndarray) -> np.ndarray:
        """Jacobian of the predicted measurements at ``var`` (rows: flat layout).

        Used to decide which parameters the data determine. It is the
        derivative of :func:`~figaroh.calibration.calibration_tools.calc_updated_fkm`
        (world-frame positions and RPY angles), which depends on the
        parameters only: an exact dependency (e.g. a joint offset about the
        tool axis and the marker offsets with position-only markers) stays
        exact. The Jacobian of the body-frame residuals would not do: at the
        non-zero residuals of the initial guess it also rotates with the
        estimated orientation, which breaks such dependencies. Rows of
        entries that were not observed (NaN in ``PEE_measured``) are zero.
        """
        q = self.q_measured[: self.n_samples]
        J = ct.measurement_jacobian(self.model, self.data, var, q, self.calib_config)
        observed = np.isfinite(np.asarray(self.PEE_measured, dtype=float))
        if not observed.all():
            J = np.where(observed[:, None], J, 0.0)
        return J

    def _n_observations(self, excluded_rows: np.ndarray | None = None) -> int:
        """Number of observed (finite) measurement entries, excluded rows not counted."""
        return _residuals.n_observations(self.PEE_measured, excluded_rows)

    # ------------------------------------------------------------------ residuals (step residuals)
    def _layout(self):
        names = tuple(self.calib_config["param_name"])
        if self._layout_cache is None or self._layout_cache[0] != names:
            self._layout_cache = (names, ct._layout(self.model, self.calib_config))
        return self._layout_cache[1]

    @property
    def n_samples(self) -> int:
        """Number of loaded postures (``calib_config["NbSample"]``)."""
        return int(self.calib_config.get("NbSample", 0))

    def _spec(self, n_samples: int | None = None) -> MeasurementSpec:
        n = self.n_samples if n_samples is None else n_samples
        return MeasurementSpec.from_config(self.calib_config, n)

    def measurement_residuals(
        self,
        var: Sequence[float],
        jacobian: bool = False,
        *,
        position_frame: str = "body",
        q: np.ndarray | None = None,
        measured: Sequence[float] | None = None,
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
        if q is None:
            if self.q_measured is None or self.PEE_measured is None:
                raise CalibrationError("Call load_data_set() first")
            q = self.q_measured[: self.n_samples]
            measured = self.PEE_measured
        return _residuals.measurement_residuals(
            self.model,
            self.data,
            var,
            q,
            measured,
            self.calib_config,
            jacobian=jacobian,
            position_frame=position_frame,
            layout=self._layout(),
        )

    def _compute_logmap_residuals(
        self,
        measured_flat: Sequence[float],
        estimated_flat: Sequence[float],
        *,
        position_frame: str = "body",
        n_samples: int | None = None,
    ) -> np.ndarray:
        """Hook: log-map residuals between two flat measurement vectors.

        ``ξ = log6(M_meas⁻¹ · M_est)`` per marker and posture, restricted to
        the measured components [m, rad]; ``position_frame="world"`` replaces
        the linear part by ``p_est − p_meas``. Components that are not
        measured are taken as 0 in both poses (the flat vectors do not carry
        them): with position-only data the body and world frames then
        coincide.

        Robot subclasses call it from :meth:`cost_function`; a subclass that
        overrides it (same arguments, same flat return layout) changes the
        default :meth:`cost_function` too, which then predicts with
        :func:`~figaroh.calibration.calibration_tools.calc_updated_fkm` and
        passes the result through this method (finite-difference Jacobian).
        The default cost without overrides uses the full estimated poses
        (:meth:`measurement_residuals`), which gives the same per-point norms.
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
        residuals: Sequence[float],
        pos_weight: float | None = None,
        orient_weight: float | None = None,
    ) -> np.ndarray:
        """Hook: weight the flat residual vector of the cost.

        Multiplies position rows by ``pos_weight`` [1/m] and orientation rows
        by ``orient_weight`` [1/rad]; defaults ``1/measurement_std.position``
        (1/0.001 m) and ``1/measurement_std.orientation`` (1/0.01 rad).

        The default :meth:`cost_function` returns
        ``apply_measurement_weighting(residuals)``; a subclass override (same
        arguments, an array of rows in return) is what the solver minimises
        (finite-difference Jacobian, since an arbitrary weighting has no
        known derivative).
        """
        r = np.asarray(residuals, dtype=float)
        n = r.size // max(1, self._rows_per_sample())
        return r * ct.measurement_weights(self.calib_config, n, pos_weight, orient_weight)

    def _rows_per_sample(self) -> int:
        return int(self.calib_config.get("NbMarkers", 1)) * int(
            np.count_nonzero(self.calib_config["measurability"])
        )

    def _overridden(self, name: str) -> bool:
        """Whether the class of this instance overrides the base method ``name``."""
        return getattr(type(self), name) is not getattr(BaseCalibration, name)

    def cost_function(self, var: Sequence[float]) -> np.ndarray:
        """Hook: the residual rows the solver minimises (override per robot).

        Default: ``apply_measurement_weighting(r)`` with ``r`` the
        body-frame log-map residuals of the predicted poses (the same per-point
        norms as ``_compute_logmap_residuals(PEE_measured,
        calc_updated_fkm(var))``). When a subclass overrides
        :meth:`_compute_logmap_residuals`, ``r`` is exactly
        ``self._compute_logmap_residuals(self.PEE_measured,
        calc_updated_fkm(self.model, self.data, var, self.q_measured,
        self.calib_config))``.

        :meth:`solve` minimises whatever this method returns (outlier rows
        zeroed, prior rows appended); overriding it without
        :meth:`cost_jacobian` makes the solver use finite differences.

        Emits a ``UserWarning`` (once per instance) naming the class.

        Args:
            var: Parameter values in ``calib_config["param_name"]`` order [m, rad].

        Returns:
            Flat residual rows (dimensionless after the default weighting).
        """
        if not self._warned_default_cost:
            warnings.warn(
                f"Using default cost function for {type(self).__name__}: weighted log-map "
                "residuals (override cost_function for robot-specific terms)",
                UserWarning,
                stacklevel=2,
            )
            self._warned_default_cost = True
        if self._overridden("_compute_logmap_residuals"):
            est = ct.calc_updated_fkm(
                self.model, self.data, var, self.q_measured, self.calib_config
            )
            r = np.asarray(self._compute_logmap_residuals(self.PEE_measured, est), dtype=float)
        else:
            r, _ = self.measurement_residuals(var)
        try:
            return self.apply_measurement_weighting(r)
        except (KeyError, AttributeError):
            return r

    def cost_jacobian(self, var: Sequence[float]) -> np.ndarray:
        """Analytic Jacobian of the default :meth:`cost_function`.

        A subclass that overrides :meth:`cost_function` (or one of its hooks
        :meth:`_compute_logmap_residuals`, :meth:`apply_measurement_weighting`)
        should override this too to keep an analytic Jacobian (see
        :meth:`measurement_residuals`); otherwise the solver falls back to
        finite differences.
        """
        r, J = self.measurement_residuals(var, jacobian=True)
        w = ct.measurement_weights(self.calib_config, r.size // max(1, self._rows_per_sample()))
        return J * w[:, None]

    def _jacobian_mode(self) -> str:
        if self._overridden("cost_jacobian"):
            return "analytic (user)"
        hooks = ("cost_function", "_compute_logmap_residuals", "apply_measurement_weighting")
        if not any(self._overridden(h) for h in hooks):
            return "analytic"
        return "2-point"

    def get_pose_from_measure(self, res_: Sequence[float]) -> np.ndarray:
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

    def _prior_rows(self, var: np.ndarray) -> np.ndarray | None:
        w = self.calib_config.get("prior_weights")
        if w is None:
            return None
        w = np.asarray(w, dtype=float)
        if w.size != var.size:
            raise CalibrationError(
                f"prior_weights has {w.size} entries for {var.size} parameters; rerun "
                "create_param_list()"
            )
        return w * var

    def _objective(self, var: Sequence[float]) -> np.ndarray:
        """What the solver minimises: cost rows (excluded outlier rows zeroed) + prior rows."""
        var = np.asarray(var, dtype=float)
        r = np.array(self.cost_function(var), dtype=float, copy=True).ravel()
        if self._excluded_rows.size:
            r[self._excluded_rows] = 0.0
        p = self._prior_rows(var)
        return r if p is None else np.concatenate([r, p])

    def _objective_jacobian(self, var: Sequence[float]) -> np.ndarray:
        var = np.asarray(var, dtype=float)
        J = np.array(self.cost_jacobian(var), dtype=float, copy=True)
        if self._excluded_rows.size:
            J[self._excluded_rows] = 0.0
        w = self.calib_config.get("prior_weights")
        if w is not None:
            J = np.vstack([J, np.diag(np.asarray(w, dtype=float))])
        return J

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
    ):
        """Fit, evaluate, store and report.

        Args:
            method: ``scipy.optimize.least_squares`` method (``"lm"``, ``"trf"``, ``"dogbox"``).
            max_iterations: Maximum number of fits of the outlier loop.
            outlier_threshold: Per-sample position error [m] above which a
                posture is excluded (default ``calib_config["outlier_eps"]``).
            enable_logging: Log the final results.
            plotting: Show the plots.
            save_results: Save the results (see :meth:`save_results`).
            html_report: Write the HTML report.

        Returns:
            The SciPy ``OptimizeResult``.
        """
        self._run_started_at = _now()
        drop_stage(self, "export")
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
        self.print_quality_report()
        if plotting:
            self.plot_results()
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

    def _check_problem_size(self, n_params: int) -> None:
        m = self._n_observations()
        w = self.calib_config.get("prior_weights")
        if w is not None:  # Gaussian priors are observations of the parameters too
            m += int(np.count_nonzero(np.asarray(w, dtype=float)))
        n_samples = self.n_samples
        rows = self._rows_per_sample()
        if m <= n_params:
            need = n_params // max(1, rows) + 1
            raise CalibrationError(
                f"{n_samples} postures give {m} measurement rows for {n_params} parameters: "
                f"collect at least {need} postures, or reduce the parameter set "
                "(calibration_level: joint_offset, known frames, or estimation.method: map)"
            )

    def _dependent_parameters(self, x0: np.ndarray, tol: float = 1e-6) -> List[str]:
        names = list(self.calib_config["param_name"])
        if self._jacobian_mode() == "2-point":
            J = _finite_difference(self._objective, x0)
        else:
            J = self._objective_jacobian(x0)
        J = J[: len(self.PEE_measured)]
        _, dependent = ct.select_identifiable_parameters(J, names, tol=tol)
        return dependent

    def _check_structural_identifiability(self, x0: np.ndarray, tol: float = 1e-6) -> None:
        try:
            dependent = self._dependent_parameters(x0, tol)
        except Exception as exc:  # noqa: BLE001 - diagnostic only
            logger.debug("identifiability check skipped: %s", exc)
            return
        if dependent:
            warnings.warn(
                f"structurally singular parameter set: {dependent} are linear combinations of "
                "other parameters on these postures (not identifiable). Remove them with "
                "drop_unidentifiable_parameters() (or calibration_tools."
                "drop_calibration_parameters), or use estimation.method: map",
                UserWarning,
                stacklevel=3,
            )

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
        dependent = self._dependent_parameters(self._initial_vector(), tol)
        if dependent:
            ct.drop_calibration_parameters(self.calib_config, dependent)
            self._layout_cache = None
            self.nvars = len(self.calib_config["param_name"])
            logger.info("dropped unidentifiable parameters: %s", dependent)
        return dependent

    def _least_squares(self, x0: np.ndarray, method: str):
        mode = self._jacobian_mode()
        jac = "2-point" if mode == "2-point" else self._objective_jacobian
        if mode == "2-point":
            logger.info(
                "%s overrides cost_function without cost_jacobian: finite-difference Jacobian",
                type(self).__name__,
            )
        return least_squares(self._objective, x0, jac=jac, method=method, max_nfev=1000)

    def _optimize_with_outlier_removal(
        self,
        x0: np.ndarray,
        method: str = "lm",
        max_iterations: int = 3,
        outlier_threshold: float | None = None,
        enable_logging: bool = False,
    ):
        threshold = (
            outlier_threshold
            if outlier_threshold is not None
            else self.calib_config.get("outlier_eps")
        )
        self._outlier_threshold = threshold
        self._excluded_rows = np.zeros(0, dtype=int)

        def fit(x: np.ndarray, rows: np.ndarray):
            self._excluded_rows = rows
            return self._least_squares(x, method)

        out = fit_with_outlier_exclusion(
            x0,
            fit,
            lambda x: self.measurement_residuals(x)[0],
            self.PEE_measured,
            self._spec(),
            threshold,
            max_iterations,
            enable_logging,
        )
        self._excluded_rows = out.excluded_rows
        return out.result, out.excluded, out.residuals

    def _sample_position_errors(self, residuals: Sequence[float]) -> np.ndarray | None:
        """Per-sample position error [m]: worst marker's norm of the measured x/y/z rows."""
        return _residuals.sample_position_errors(residuals, self._spec())

    def _sample_rows(self, samples: Sequence[int]) -> np.ndarray:
        """Flat rows of the given samples (rows whose index modulo NbSample is listed)."""
        return _residuals.sample_rows(samples, len(self.PEE_measured), self.n_samples)

    # ---------------------------------------------- evaluation (steps uncertainty, metrics)
    def _residual_array(self, var: np.ndarray, q=None, measured=None) -> np.ndarray:
        r, _ = self.measurement_residuals(var, q=q, measured=measured)
        n = len(q) if q is not None else self.n_samples
        return _residuals.residual_array(r, self._spec(n))

    def _dof_names(self) -> List[str]:
        return _metrics.dof_names(self.calib_config)

    def _per_dof_stats(self, res: np.ndarray, meas: np.ndarray) -> Dict[str, Any]:
        """Per-component statistics on (n, K, c) residuals of kept samples."""
        return _metrics.per_dof_stats(res, meas, self.calib_config)

    def _evaluate_solution(self, result, outliers: Sequence[int]) -> Dict[str, Any]:
        N = self.n_samples
        res = self._residual_array(result.x)  # (N,K,c)
        std = self.calc_stddev(result)
        meas = ct.measured_values(self.PEE_measured, self.calib_config, N)
        errors = self._sample_position_errors(ct._to_flat(res))
        return _metrics.evaluation_metrics(
            result,
            res,
            meas,
            outliers,
            std,
            errors,
            self._n_observations(self._excluded_rows),
            self._outlier_threshold,
            self._jacobian_mode(),
            self._correlated_pairs(),
            self.calib_config,
        )

    def calc_stddev(self, result) -> Tuple[np.ndarray, np.ndarray]:
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
                self._n_observations(self._excluded_rows),
                noise,
            )
            self._C_param = u.covariance
            self.std_dev, self.std_pctg = u.std_dev, u.std_pctg
            return self.std_dev, self.std_pctg
        except Exception as exc:
            raise CalibrationError(f"Standard deviation calculation failed: {exc}") from exc

    def _correlated_pairs(self) -> List[Dict[str, Any]]:
        """Pairs with ``|ρ| > 0.8`` from the parameter covariance (after :meth:`calc_stddev`)."""
        return correlated_pairs(self._C_param, self.calib_config.get("param_name", []))

    # ---------------------------------------------- storing (steps validation, results)
    def _store_optimization_results(self, result, evaluation, outliers) -> None:
        self.LM_result = result
        self.var_ = np.asarray(result.x, dtype=float)
        self.uncalib_values = np.zeros_like(self.var_)
        self.evaluation_metrics = evaluation
        self.outlier_indices = list(outliers)
        res = self._residual_array(self.var_)  # (N,K,c)
        est = ct.calc_updated_fkm(
            self.model, self.data, self.var_, self.q_measured, self.calib_config
        )
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

    def _make_results_manager(self):
        try:
            from figaroh.utils.results_manager import ResultsManager
        except ImportError:
            return None
        name = (
            getattr(self, "robot_name", None)
            or getattr(self.model, "name", None)
            or self.__class__.__name__.lower().replace("calibration", "")
        )
        return ResultsManager("calibration", name, self.results_data)

    def _validation_set(self) -> Tuple[np.ndarray, np.ndarray, str] | None:
        """Postures, measurements and source label the validation metrics use."""
        if self._val_available and self._q_val is not None:
            return self._q_val, self._PEE_val, "validation_data"
        if self.q_measured is None:
            return None
        if getattr(self, "_fallback_warned", None) is not self.LM_result:
            logger.warning(
                "No held-out validation data: validation metrics are computed on the "
                "calibration data (not an independent test). Set data.validation_data_file."
            )
            self._fallback_warned = self.LM_result
        return self.q_measured[: self.n_samples], self.PEE_measured, "calibration_data_fallback"

    def _compute_validation_metrics(self) -> Dict[str, Any] | None:
        """Nominal (all parameters 0) vs calibrated errors."""
        if self.LM_result is None:
            return None
        chosen = self._validation_set()
        if chosen is None:
            return None
        q, pee, source = chosen
        x = np.asarray(self.LM_result.x, dtype=float)
        r_nom = self._residual_array(np.zeros_like(x), q=q, measured=pee)  # (n,K,c)
        r_cal = self._residual_array(x, q=q, measured=pee)
        x_ff = self._fit_frames_only()
        r_ff = None if x_ff is None else self._residual_array(x_ff, q=q, measured=pee)
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        out = validation_metrics(r_nom, r_cal, r_ff, mask, self._dof_names(), source)
        pc, n = out["pos_rmse_calibrated_mm"], len(q)
        details = {"position_rmse": (pc / 1e3 if np.isfinite(pc) else pc, "m"), "samples": n}
        if source == "validation_data":
            record_stage(self, "validation", "ok", "held-out postures", details)
        else:
            record_stage(
                self,
                "validation",
                "fallback",
                "no held-out data: evaluated on the calibration data, not an independent test",
                details,
            )
        return out

    def _fit_frames_only(self) -> np.ndarray | None:
        """Nominal joints with best-fit metrology frames (training data, kept samples).

        This is the fair "before" reference: the nominal model still needs its
        base and tip frames to be compared with measurements. Returns the full
        parameter vector (joint parameters 0), or None without frame
        parameters. Cached per fit.
        """
        cache = getattr(self, "_frames_only_cache", None)
        if cache is not None and cache[0] is self.LM_result:
            return cache[1]
        names = list(self.calib_config["param_name"])
        frames = self._frame_param_names()
        if not frames or self.q_measured is None:
            return None
        x = fit_frames_only(
            lambda v: self.measurement_residuals(v, jacobian=True),
            names,
            frames,
            self._initial_vector(),
            ct.measurement_weights(self.calib_config, self.n_samples),
            self._excluded_rows,
        )
        self._frames_only_cache = (self.LM_result, x)
        return x

    # ------------------------------------------------------------------ reports
    def _require_solved(self) -> None:
        if self.evaluation_metrics is None or self.LM_result is None:
            raise AttributeError("No calibration results available. Run solve() first.")

    def format_quality_report(self) -> str:
        """Plain-text quality report."""
        return _format_quality_report(self)

    def print_quality_report(self) -> None:
        """Print :meth:`format_quality_report` (documented report method)."""
        if self.evaluation_metrics is None:
            logger.warning("No calibration results to report. Run solve() first.")
            return
        print(self.format_quality_report())

    def export_html_report(
        self, output_path: str | None = None, output_dir: str = "results"
    ) -> str:
        """Write the HTML report (``tools.report.generate_calibration_report``).

        Returns:
            The path written (default ``<output_dir>/calibration_report.html``).

        Raises:
            AttributeError: before :meth:`solve`.
        """
        self._require_solved()
        from figaroh.tools.report import generate_calibration_report

        if output_path is None:
            os.makedirs(output_dir, exist_ok=True)
            output_path = os.path.join(output_dir, "calibration_report.html")
        generate_calibration_report(self, output_path=output_path)
        logger.info("HTML calibration report written to %s", output_path)
        return output_path

    def verify(
        self, thresholds: Mapping[str, Mapping[str, Any]] | None = None, scope: str = "prediction"
    ):
        """Scoped acceptance evidence.

        Returns:
            :class:`~figaroh.tools._report_common.VerificationVerdict`.

        Raises:
            AttributeError: before :meth:`solve`.
        """
        self._require_solved()
        from figaroh.calibration._report import verify_calibration

        return verify_calibration(self, thresholds, scope)

    def export_verification_report(
        self,
        output_path: str | None = None,
        output_dir: str = "results",
        thresholds: Mapping[str, Mapping[str, Any]] | None = None,
        scope: str = "prediction",
    ) -> str:
        """Write the :meth:`verify` verdict as strict JSON.

        Returns:
            The path (default ``<output_dir>/calibration_verification.json``).
        """
        from figaroh.data.source import atomic_write_text
        from figaroh.tools._report_common import verification_json_data
        from figaroh.tools.stages import with_schema

        verdict = self.verify(thresholds=thresholds, scope=scope)
        d = dataclasses.asdict(verdict)
        if self.results_manager is not None:
            d = self.results_manager._convert_for_serialization(d)
        if output_path is None:
            os.makedirs(output_dir, exist_ok=True)
            output_path = os.path.join(output_dir, "calibration_verification.json")
        text = json.dumps(verification_json_data(with_schema(self, d)), indent=2, allow_nan=False)
        atomic_write_text(output_path, text)
        logger.info("Verification report written to %s", output_path)
        return str(output_path)

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
        run_dir = compute_run_dir(self, root)
        run_dir.mkdir(parents=True, exist_ok=True)
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

    # ------------------------------------------------------------------ corrections (step lift)
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
        method = estimation.settings(cfg)["method"]
        names = list(cfg["param_name"])
        if method != "structural":
            report = cfg.get("estimation_report") or {}
            out = {}
            for nm in report.get("candidates", []):
                if nm in names:
                    i = names.index(nm)
                    out[nm] = {
                        "value": float(self.var_[i]),
                        "std_dev": float(np.sqrt(abs(self._C_param[i, i]))),
                    }
                else:
                    out[nm] = {"value": 0.0, "std_dev": 0.0}
            return out
        if "base_mapping_matrix" not in cfg or "base_mapping_param_names" not in cfg:
            raise CalibrationError(
                "no base mapping in calib_config: was create_param_list() run with the "
                "structural method?"
            )
        lnames, theta, cov = estimation.lift_structural(self)
        return {
            nm: {"value": float(theta[i]), "std_dev": float(np.sqrt(abs(cov[i, i])))}
            for i, nm in enumerate(lnames)
        }

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
        if bool(getattr(self.LM_result, "success", True)):
            return
        message = str(getattr(self.LM_result, "message", "no message"))
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
            frames = set(self._frame_param_names())
            values = {
                n: float(v)
                for n, v in zip(self.calib_config["param_name"], self.var_, strict=True)
                if n not in frames
            }
        bad = [n for n in values if not is_kinematic_correction(n, self.model)]
        if bad and not drop_unsupported:
            record_stage(
                self,
                "export",
                "failed",
                f"not joint-origin corrections: {bad[:6]}",
            )
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
        frames = set(self._frame_param_names())
        return {
            n: float(v)
            for n, v in zip(self.calib_config["param_name"], self.var_, strict=True)
            if n in frames
        }

    # ------------------------------------------------------------------ saving / plotting
    def save_results(self, output_dir: str = "results"):
        """Save through the results manager (upstream quirk: needs an attribute ``result``).

        Returns:
            ``{format: path}``, or None (with a warning) when the instance has
            no ``result`` attribute — the base class never sets it.
        """
        if not hasattr(self, "result"):
            logger.warning(
                "save_results: no 'result' attribute on %s (upstream contract); nothing saved. "
                "Use results_manager.save_results() directly.",
                type(self).__name__,
            )
            return None
        if self.results_manager is None:
            self.results_manager = self._make_results_manager()
        return self.results_manager.save_results(
            output_dir=output_dir, save_formats=["yaml", "csv", "npz"]
        )

    def _require_calibrated(self) -> None:
        if self.STATUS != "CALIBRATED":
            raise CalibrationError("Calibration not performed yet")

    def plot_results(self):
        """Results-manager plots with fallback to the basic plots, then ``plt.show()``."""
        self._require_calibrated()

        def primary():
            rd = self.results_data
            return self.results_manager.plot_calibration_results(
                measured_poses=np.asarray(rd["PEE measured (2D array)"]).T,
                estimated_poses=np.asarray(rd["PEE estimated (2D array)"]).T,
            )

        def fallback():
            self.plot_errors_distribution()
            self.plot_3d_poses()

        out = plot_with_fallback(primary, fallback, logger, "calibration")
        try:
            import matplotlib.pyplot as plt

            plt.show()
        except Exception:  # noqa: BLE001 - headless
            pass
        return out

    def plot_errors_distribution(self):
        """Bar chart of the per-sample residual norm of each marker [m]."""
        self._require_calibrated()
        import matplotlib.pyplot as plt

        K = self._PEE_dist.shape[0]
        fig, axes = plt.subplots(K, 1, squeeze=False)
        for k in range(K):
            axes[k, 0].bar(np.arange(self._PEE_dist.shape[1]), self._PEE_dist[k])
            axes[k, 0].set_ylabel(f"marker {k + 1} error [m]")
        axes[-1, 0].set_xlabel("sample")
        return fig

    def plot_3d_poses(self, INCLUDE_UNCALIB: bool = False):
        """Measured vs estimated marker positions in 3-D (position components)."""
        self._require_calibrated()
        import matplotlib.pyplot as plt

        meas = np.asarray(self.results_data["PEE measured (2D array)"])
        est = np.asarray(self.results_data["PEE estimated (2D array)"])
        fig = plt.figure()
        ax = fig.add_subplot(projection="3d")
        if meas.shape[1] >= 3:
            ax.scatter(*meas[:, :3].T, marker="o", label="measured")
            ax.scatter(*est[:, :3].T, marker="x", label="calibrated")
            if INCLUDE_UNCALIB:
                nom = ct.calc_updated_fkm(
                    self.model,
                    self.data,
                    np.zeros_like(self.var_),
                    self.q_measured,
                    self.calib_config,
                )
                n2 = poses_2d(nom, self._spec())
                ax.scatter(*n2[:, :3].T, marker="^", label="nominal")
        ax.legend()
        return fig

    def plot_joint_configurations(self):
        """Active joint values of every posture against their limits."""
        if self.q_measured is None:
            raise CalibrationError("Call load_data_set() first")
        import matplotlib.pyplot as plt

        idx = self.calib_config["config_idx"]
        fig, ax = plt.subplots()
        for a, i in enumerate(idx):
            ax.plot(np.full(len(self.q_measured), a), self.q_measured[:, i], "o", ms=3)
            ax.plot([a - 0.3, a + 0.3], [self.model.lowerPositionLimit[i]] * 2, "k-")
            ax.plot([a - 0.3, a + 0.3], [self.model.upperPositionLimit[i]] * 2, "k-")
        ax.set_xticks(range(len(idx)))
        ax.set_xticklabels(
            [self.model.names[j] for j in self.calib_config["actJoint_idx"]], rotation=45
        )
        return fig

    # ------------------------------------------------------------------ logging helpers
    def _setup_logging(self) -> logging.Logger:
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

    @contextlib.contextmanager
    def _temporary_data(self, q: np.ndarray, pee: np.ndarray) -> Iterator[None]:
        """Swap the loaded postures/measurements (used by cross-validation)."""
        saved = (
            self.q_measured,
            self.PEE_measured,
            self.calib_config["NbSample"],
            self._excluded_rows,
        )
        self.q_measured, self.PEE_measured = q, pee
        self.calib_config["NbSample"] = len(q)
        self._excluded_rows = np.zeros(0, dtype=int)
        try:
            yield
        finally:
            (
                self.q_measured,
                self.PEE_measured,
                self.calib_config["NbSample"],
                self._excluded_rows,
            ) = saved

    @contextlib.contextmanager
    def _temporary_params(self, names: Sequence[str], prior_weights=None) -> Iterator[None]:
        """Swap ``param_name`` (and ``prior_weights``) during an auxiliary fit."""
        cfg = self.calib_config
        saved = (list(cfg["param_name"]), cfg.get("prior_weights"))
        cfg["param_name"] = list(names)
        cfg["prior_weights"] = prior_weights
        self._layout_cache = None
        try:
            yield
        finally:
            cfg["param_name"], cfg["prior_weights"] = saved
            self._layout_cache = None


def is_kinematic_correction(name: str, model: Any = None) -> bool:
    """Whether a parameter can be written into a joint origin.

    ``d_p*``/``d_phi*``/``offset*`` names the URDF exporter writes into joint
    origins (:func:`figaroh.tools.urdf_exporter.is_kinematic_correction`), of
    a joint of ``model`` when a model is given.
    """
    if model is None:
        return bool(_exporter_kinematic(name))
    return bool(_exporter_kinematic(name, [str(n) for n in model.names[1:]]))


def _finite_difference(fun, x: np.ndarray, step: float = 1e-7) -> np.ndarray:
    f0 = np.asarray(fun(x), dtype=float)
    J = np.empty((f0.size, x.size))
    for i in range(x.size):
        dx = np.zeros_like(x)
        dx[i] = step * max(1.0, abs(x[i]))
        J[:, i] = (np.asarray(fun(x + dx), dtype=float) - f0) / dx[i]
    return J


# BASE_TPL / EE_TPL are re-exported for subclasses that slice the parameter vector.
__all__ += ["BASE_TPL", "EE_TPL", "is_kinematic_correction"]
