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
import math
import os
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple

import numpy as np
import yaml
from scipy.optimize import least_squares

from figaroh.calibration import calibration_tools as ct
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
from figaroh.data.observations import PoseObservations
from figaroh.tools.stages import record_stage, stages_as_dicts, stages_line
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

_DOF_LABELS = ("X (mm)", "Y (mm)", "Z (mm)", "rx (deg)", "ry (deg)", "rz (deg)")
_DOF_SCALE = (1e3, 1e3, 1e3, 180.0 / math.pi, 180.0 / math.pi, 180.0 / math.pi)
_RULE = "=" * 70
_SUBRULE = "-" * 70
CORRELATION_THRESHOLD = 0.8


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _condition_label(c: float) -> str:
    if not np.isfinite(c):
        return "unavailable (computation failed)"
    if c < 100:
        return "well-conditioned"
    if c < 1000:
        return "moderately conditioned"
    return "ill-conditioned"


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
    * :meth:`load_data_set` — fills ``PEE_measured``, ``q_measured``.

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

    @handle_calibration_errors
    def __init__(self, robot: Any, config_file: str = "config/robot_config.yaml", del_list=None):
        if not hasattr(robot, "model") or not hasattr(robot, "data"):
            raise CalibrationError(
                "robot must expose a Pinocchio 'model' and 'data' (e.g. figaroh.tools.robot.Robot)"
            )
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
        self._val_available = False
        self.observations: PoseObservations | None = None
        self._val_observations: PoseObservations | None = None
        self.PEE_measured: np.ndarray | None = None
        self.q_measured: np.ndarray | None = None
        self._PEE_val = None
        self._q_val = None
        self.LM_result = None
        self.var_ = None
        self.evaluation_metrics: Dict[str, Any] | None = None
        self.results_data: Dict[str, Any] | None = None
        self.results_manager = None
        self.outlier_indices: List[int] = []
        self.std_dev = None
        self.std_pctg = None
        self._C_param = None
        self._excluded_rows = np.zeros(0, dtype=int)
        self._outlier_threshold = None
        self._run_provenance = None
        self.estimation_report = None
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

    # ------------------------------------------------------------------ data
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
            obs = PoseObservations.from_csv(
                self._data_path, self.model, self.calib_config, del_list=self.del_list_
            )
            pee, q = obs.to_legacy(self.model, self.calib_config)
        except Exception as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            record_stage(self, "data", "failed", f"{type(exc).__name__}: {msg}")
            raise CalibrationError(f"Data loading failed: {msg}") from exc
        self.observations = obs
        self.PEE_measured, self.q_measured = pee, q
        self.calib_config["NbSample"] = int(len(q))
        masked = int(obs.n_samples - np.count_nonzero(obs.mask))
        record_stage(
            self,
            "data",
            "ok",
            f"PoseObservations from {Path(self._data_path).name}",
            {"samples": len(q), "masked_samples": masked},
        )
        val = self.calib_config.get("validation_data_file")
        if val:
            self._load_validation_data(val)

    def _load_validation_data(self, path: str) -> None:
        try:
            resolved = self._resolve_path(path, "data.validation_data_file")
            obs = PoseObservations.from_csv(resolved, self.model, self.calib_config)
            pee, q = obs.to_legacy(self.model, self.calib_config)
        except Exception as exc:  # noqa: BLE001 - documented: warning only
            logger.warning(
                "validation data file %s could not be loaded (%s); validation falls back to the "
                "training data",
                path,
                exc,
            )
            return
        self._val_observations = obs
        self._PEE_val, self._q_val = pee, q
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

    # ------------------------------------------------------------------ parameters
    def create_param_list(self, q: np.ndarray | None = None) -> bool:
        """Build ``calib_config["param_name"]``.

        Structural method: QR selection of the joint parameters on random
        postures (``q`` forwarded when given), base names unless
        ``known_baseframe``, tip names unless ``known_tipframe``, then
        elimination of the parameters the frames absorb on the measured data.
        Other methods: :func:`figaroh.calibration.estimation.configure`.

        Raises:
            CalibrationError: ``"Parameter list creation failed: …"`` (e.g. a
                missing ``known_baseframe`` key).
        """
        from figaroh.calibration import estimation

        try:
            method = estimation.settings(self.calib_config)["method"]
            if method != "structural":
                estimation.configure(self)
                self._layout_cache = None
                return True
            for key in ("known_baseframe", "known_tipframe"):
                if key not in self.calib_config:
                    raise KeyError(
                        f"calib_config[{key!r}] is not set: set it to False (frame estimated) or "
                        "True (frame known) before initialize()"
                    )
            cfg = self.calib_config
            if cfg.get("non_geom"):
                from figaroh.calibration.parameter import get_elastic_names

                cfg["param_name"] = get_elastic_names(self.model, cfg["actJoint_idx"])
            else:
                cfg["param_name"] = []
            for k in [k for k in cfg if k.startswith("base_mapping")]:
                del cfg[k]
            cfg.pop("absorbed_param_name", None)
            ct.calculate_base_kinematics_regressor(
                [] if q is None else q, self.model, self.data, cfg, tol_qr=1e-6
            )
            if not cfg["known_baseframe"]:
                add_base_name(cfg)
            if not cfg["known_tipframe"]:
                add_pee_name(cfg)
            self._record_full_mapping()
            self._layout_cache = None
            if self.q_measured is not None and self.PEE_measured is not None:
                self.eliminate_absorbed_parameters()
            self.nvars = len(cfg["param_name"])
            logger.info("%d calibration parameters: %s", self.nvars, ", ".join(cfg["param_name"]))
            return True
        except CalibrationError:
            raise
        except Exception as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise CalibrationError(f"Parameter list creation failed: {msg}") from exc

    def _record_full_mapping(self) -> None:
        cfg = self.calib_config
        if "base_mapping_matrix" not in cfg:
            cfg["base_frame_row_names"] = []
            return
        cfg["base_mapping_matrix_full"] = np.array(cfg["base_mapping_matrix"], copy=True)
        cfg["base_mapping_row_names_full"] = list(cfg["base_mapping_row_names"])
        start = int(cfg["base_mapping_slice"][0])
        if cfg.get("calib_model") == "full_params" and not cfg.get("known_baseframe", True):
            n = max(0, 6 - start)
            cfg["base_frame_row_names"] = list(cfg["base_mapping_row_names"][:n])
        else:
            cfg["base_frame_row_names"] = []

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

        The measurement Jacobian (derivative of the predicted measurements
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
        if len(frames) == len(names):
            cfg["absorbed_param_name"] = []
            return []
        J = self._identifiability_jacobian(self._initial_vector())
        _, absorbed = ct.select_identifiable_parameters(J, names, always_keep=frames, tol=tol)
        if absorbed:
            ct.drop_calibration_parameters(cfg, absorbed)
            self._layout_cache = None
            logger.info("parameters absorbed by the base/tip frames (dropped): %s", absorbed)
        cfg["absorbed_param_name"] = list(absorbed)
        self.nvars = len(cfg["param_name"])
        return list(absorbed)

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
        finite = np.isfinite(np.asarray(self.PEE_measured, dtype=float))
        if excluded_rows is not None and len(excluded_rows):
            finite = finite.copy()
            finite[np.asarray(excluded_rows, dtype=int)] = False
        return int(finite.sum())

    # ------------------------------------------------------------------ residuals
    def _layout(self):
        names = tuple(self.calib_config["param_name"])
        if self._layout_cache is None or self._layout_cache[0] != names:
            self._layout_cache = (names, ct._layout(self.model, self.calib_config))
        return self._layout_cache[1]

    @property
    def n_samples(self) -> int:
        """Number of loaded postures (``calib_config["NbSample"]``)."""
        return int(self.calib_config.get("NbSample", 0))

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
        q = np.atleast_2d(np.asarray(q, dtype=float))
        meas = ct.measured_values(measured, self.calib_config, q.shape[0])
        ev = ct.evaluate_poses(
            self.model,
            self.data,
            var,
            q,
            self.calib_config,
            jacobian=jacobian,
            layout=self._layout(),
        )
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        res, J = ct.pose_residuals(ev.R, ev.p, meas, mask, T=ev.T, position_frame=position_frame)
        r = ct._to_flat(res)
        return r, (ct._to_flat(J) if J is not None else None)

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

    # ------------------------------------------------------------------ solving
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
        from figaroh.tools.stages import drop_stage

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
        excluded: List[int] = []
        self._excluded_rows = np.zeros(0, dtype=int)
        x = np.asarray(x0, dtype=float)
        n_fits = max(1, int(max_iterations))
        result, residuals = None, None
        for it in range(n_fits):
            result = self._least_squares(x, method)
            if enable_logging:
                logger.info(
                    "fit %d: cost %.6g, %d evaluations, %s",
                    it + 1,
                    result.cost,
                    result.nfev,
                    result.message,
                )
            if not result.success:
                logger.warning("least squares did not converge: %s", result.message)
                break
            residuals, _ = self.measurement_residuals(result.x)
            if threshold is None:
                break
            errors = self._sample_position_errors(residuals)
            if errors is None:
                break
            new = [int(i) for i in np.flatnonzero(errors > float(threshold)) if i not in excluded]
            if not new:
                break
            if it == n_fits - 1:
                logger.warning(
                    "max_iterations is reached: %d sample(s) above %.4g m kept in the fit (%s)",
                    len(new),
                    threshold,
                    new,
                )
                break
            rows = self._sample_rows(sorted(set(excluded) | set(new)))
            if self._n_observations(rows) <= len(result.x):
                logger.warning(
                    "excluding samples %s would leave too few rows for %d parameters: kept",
                    new,
                    len(result.x),
                )
                break
            excluded = sorted(set(excluded) | set(new))
            self._excluded_rows = rows
            logger.info("excluding %d outlier sample(s) above %.4g m: %s", len(new), threshold, new)
            x = result.x
        if residuals is None:
            residuals, _ = self.measurement_residuals(result.x)
        return result, excluded, residuals

    def _sample_position_errors(self, residuals: Sequence[float]) -> np.ndarray | None:
        """Per-sample position error [m]: worst marker's norm of the measured x/y/z rows."""
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        if not mask[:3].any():
            return None
        r = np.asarray(residuals, dtype=float).ravel()
        N, K, c = self.n_samples, int(self.calib_config["NbMarkers"]), int(mask.sum())
        if r.size != N * K * c:
            return None
        res = ct._from_flat(r, N, K, c)
        npos = int(mask[:3].sum())
        return np.linalg.norm(res[..., :npos], axis=-1).max(axis=1)

    def _sample_rows(self, samples: Sequence[int]) -> np.ndarray:
        """Flat rows of the given samples (rows whose index modulo NbSample is listed)."""
        N = self.n_samples
        rows = np.arange(len(self.PEE_measured))
        return rows[np.isin(rows % N, np.asarray(list(samples), dtype=int))]

    # ------------------------------------------------------------------ evaluation
    def _residual_array(self, var: np.ndarray, q=None, measured=None) -> np.ndarray:
        r, _ = self.measurement_residuals(var, q=q, measured=measured)
        n = len(q) if q is not None else self.n_samples
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        return ct._from_flat(r, n, int(self.calib_config["NbMarkers"]), int(mask.sum()))

    def _dof_names(self) -> List[str]:
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        idx = int(self.calib_config.get("calibration_index", mask.sum()))
        names = [lab for lab, m in zip(_DOF_LABELS, mask, strict=True) if m]
        return names if len(names) == idx else list(_DOF_LABELS[:idx])

    def _per_dof_stats(self, res: np.ndarray, meas: np.ndarray) -> Dict[str, Any]:
        """Per-component statistics on (n, K, c) residuals of kept samples."""
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        comps = np.flatnonzero(mask)
        out: Dict[str, Any] = {"dof_names": self._dof_names()}
        for key in ("mean", "std", "rmse", "max_abs", "r_squared"):
            out[key] = []
        if res.size == 0 or res.shape[-1] != comps.size:
            return out
        flat = res.reshape(-1, comps.size)
        mvals = meas[..., comps].reshape(-1, comps.size)
        for j, c in enumerate(comps):
            e = flat[:, j]
            s = _DOF_SCALE[c]
            out["mean"].append(float(np.mean(e) * s))
            out["std"].append(float(np.std(e) * s))
            out["rmse"].append(float(np.sqrt(np.mean(e**2)) * s))
            out["max_abs"].append(float(np.max(np.abs(e)) * s))
            obs = np.isfinite(mvals[:, j])
            ss_res = float(np.sum(e[obs] ** 2))
            mv = mvals[obs, j]
            ss_tot = float(np.sum((mv - np.mean(mv)) ** 2)) if mv.size else 0.0
            out["r_squared"].append(1.0 if ss_tot <= 1e-15 else 1.0 - ss_res / ss_tot)
        pos = [j for j, c in enumerate(comps) if c < 3]
        rot = [j for j, c in enumerate(comps) if c >= 3]

        def group(cols, scale):
            if not cols:
                return math.nan, math.nan, math.nan
            e = np.linalg.norm(flat[:, cols], axis=1) * scale
            return float(np.sqrt(np.mean(e**2))), float(np.mean(e)), float(np.max(e))

        p = group(pos, 1e3)
        o = group(rot, 180.0 / math.pi)
        out["overall"] = {
            "pos_rmse_mm": p[0],
            "orient_rmse_deg": o[0],
            "pos_mae_mm": p[1],
            "orient_mae_deg": o[1],
            "pos_max_mm": p[2],
            "orient_max_deg": o[2],
            "pos_rmse_component_mm": (
                float(np.sqrt(np.mean(flat[:, pos] ** 2)) * 1e3) if pos else math.nan
            ),
            "convention": "rmse = sqrt(mean(e^2)), e = per-point Euclidean norm of the group",
        }
        return out

    def _evaluate_solution(self, result, outliers: Sequence[int]) -> Dict[str, Any]:
        N = self.n_samples
        res = self._residual_array(result.x)  # (N,K,c)
        kept = np.setdiff1d(np.arange(N), np.asarray(list(outliers), dtype=int))
        res_k = res[kept]
        e = np.linalg.norm(res_k, axis=-1).ravel()
        std_dev, std_pctg = self.calc_stddev(result)
        meas = ct.measured_values(self.PEE_measured, self.calib_config, N)[kept]
        errors = self._sample_position_errors(ct._to_flat(res))
        try:
            cond = float(np.linalg.cond(np.asarray(result.jac, dtype=float)))
            label = _condition_label(cond)
        except Exception:  # noqa: BLE001
            cond, label = math.nan, "unavailable (computation failed)"
        if getattr(result, "jac", None) is None:
            cond, label = math.nan, "unavailable (no Jacobian)"
        n_rows = self._n_observations(self._excluded_rows)
        ev = {
            "rmse": float(np.sqrt(np.mean(e**2))) if e.size else math.nan,
            "mae": float(np.mean(e)) if e.size else math.nan,
            "max_error": float(np.max(e)) if e.size else math.nan,
            "mean_sample_rms": float(np.mean(e)) if e.size else math.nan,
            "std_sample_rms": float(np.std(e)) if e.size else math.nan,
            "rmse_convention": "per-point Euclidean norm over the measured components",
            "param_values": [float(v) for v in result.x],
            "param_stdev": [float(v) for v in std_dev],
            "param_stddev_percentage": [float(v) for v in std_pctg],
            "residual_dof": int(n_rows - len(result.x)),
            "n_outliers": len(outliers),
            "outlier_percentage": 100.0 * len(outliers) / N if N else 0.0,
            "excluded_samples": [int(i) for i in outliers],
            "excluded_sample_errors": (
                [float(errors[i]) for i in outliers] if errors is not None else []
            ),
            "outlier_threshold": (
                None if self._outlier_threshold is None else float(self._outlier_threshold)
            ),
            "optimization_success": bool(result.success),
            "cost": float(result.cost),
            "n_iterations": int(getattr(result, "nit", 0)),
            "n_function_evals": int(result.nfev),
            "jacobian": self._jacobian_mode(),
            "per_dof_stats": self._per_dof_stats(res_k, meas),
            "condition_number": cond,
            "condition_label": label,
            "correlated_pairs": self._correlated_pairs(),
        }
        return ev

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
            self.nvars = nv = x.size
            m = len(self.PEE_measured)
            r = np.asarray(result.fun, dtype=float)[:m]
            n = self._n_observations(self._excluded_rows)
            dof = n - nv
            noise = self.calib_config.get("prior_noise")
            if self.calib_config.get("prior_weights") is not None and noise is not None:
                sigma2 = float(noise) ** 2
            elif dof <= 0:
                logger.warning(
                    "%d residual degrees of freedom: parameter uncertainty is not estimable", dof
                )
                self._C_param = None
                self.std_dev = np.full(nv, np.nan)
                self.std_pctg = np.full(nv, np.nan)
                return self.std_dev, self.std_pctg
            else:
                sigma2 = float(np.sum(r**2) / dof)
            J = np.asarray(result.jac, dtype=float)
            C = sigma2 * np.linalg.pinv(J.T @ J)
            self._C_param = C
            sd = np.sqrt(np.abs(np.diag(C)))
            with np.errstate(divide="ignore", invalid="ignore"):
                pct = np.where(x != 0, np.abs(sd / np.where(x != 0, x, 1.0)), 0.0)
            self.std_dev, self.std_pctg = sd, pct
            return sd, pct
        except Exception as exc:
            raise CalibrationError(f"Standard deviation calculation failed: {exc}") from exc

    def _correlated_pairs(self) -> List[Dict[str, Any]]:
        """Pairs with ``|ρ| > 0.8`` from the parameter covariance (after :meth:`calc_stddev`)."""
        C = self._C_param
        if C is None:
            return []
        d = np.sqrt(np.abs(np.diag(C)))
        names = list(self.calib_config.get("param_name", []))
        if len(names) != C.shape[0]:
            names = [f"param_{i}" for i in range(C.shape[0])]
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = C / np.outer(d, d)
        out = []
        iu, ju = np.triu_indices(C.shape[0], k=1)
        for i, j in zip(iu, ju, strict=True):
            r = rho[i, j]
            if np.isfinite(r) and abs(r) > CORRELATION_THRESHOLD:
                out.append({"param_i": names[i], "param_j": names[j], "correlation": float(r)})
        out.sort(key=lambda p: -abs(p["correlation"]))
        return out

    # ------------------------------------------------------------------ storing
    def _store_optimization_results(self, result, evaluation, outliers) -> None:
        N, K = self.n_samples, int(self.calib_config["NbMarkers"])
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        c = int(mask.sum())
        self.LM_result = result
        self.var_ = np.asarray(result.x, dtype=float)
        self.uncalib_values = np.zeros_like(self.var_)
        self.evaluation_metrics = evaluation
        self.outlier_indices = list(outliers)
        res = self._residual_array(self.var_)  # (N,K,c)
        self._PEE_dist = np.linalg.norm(res, axis=-1).T  # (K, N)
        est = ct.calc_updated_fkm(
            self.model, self.data, self.var_, self.q_measured, self.calib_config
        )

        def to2d(flat):
            arr = ct._from_flat(np.asarray(flat), N, K, c)
            return arr.transpose(1, 0, 2).reshape(K * N, c)

        self.results_data = {
            "number of calibrated parameters": len(result.x),
            "calibrated parameters names": list(self.calib_config["param_name"]),
            "calibrated parameters values": self.var_.tolist(),
            **evaluation,
            "number of samples": N,
            "rms residuals by samples": self._PEE_dist,
            "residuals": res.transpose(1, 0, 2).reshape(K * N, c),
            "PEE measured (2D array)": to2d(self.PEE_measured),
            "PEE estimated (2D array)": to2d(est),
            "outlier indices": list(outliers),
            "calibration config": self.calib_config,
            "task type": "calibration",
            "condition_number": evaluation["condition_number"],
            "correlated_pairs": evaluation["correlated_pairs"],
        }
        validation = self._compute_validation_metrics()
        if validation is not None:
            self.results_data["validation_metrics"] = validation
        self.results_data["stages"] = stages_as_dicts(self)
        try:
            from figaroh.tools.provenance import collect_run_provenance

            self._run_provenance = collect_run_provenance(self, "calibration")
        except ImportError:
            self._run_provenance = None
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

    def _compute_validation_metrics(self) -> Dict[str, Any] | None:
        """Nominal (all parameters 0) vs calibrated errors."""
        if self.LM_result is None:
            return None
        if self._val_available and self._q_val is not None:
            q, pee, source = self._q_val, self._PEE_val, "validation_data"
        elif self.q_measured is not None:
            if getattr(self, "_fallback_warned", None) is not self.LM_result:
                logger.warning(
                    "No held-out validation data: validation metrics are computed on the "
                    "calibration data (not an independent test). Set data.validation_data_file."
                )
                self._fallback_warned = self.LM_result
            q, pee, source = (
                self.q_measured[: self.n_samples],
                self.PEE_measured,
                ("calibration_data_fallback"),
            )
        else:
            return None
        mask = np.asarray(self.calib_config["measurability"], dtype=bool)
        comps = np.flatnonzero(mask)
        K, n = int(self.calib_config["NbMarkers"]), len(q)
        x = np.asarray(self.LM_result.x, dtype=float)
        r_nom = self._residual_array(np.zeros_like(x), q=q, measured=pee)  # (n,K,c)
        r_cal = self._residual_array(x, q=q, measured=pee)
        names = self._dof_names()

        def per_dof(r):
            pts = r.transpose(1, 0, 2).reshape(K * n, -1)
            return {
                nm: (pts[:, j] * _DOF_SCALE[c]).tolist()
                for j, (nm, c) in enumerate(zip(names, comps, strict=False))
            }

        pos = [j for j, c in enumerate(comps) if c < 3]
        rot = [j for j, c in enumerate(comps) if c >= 3]

        def grp(r, cols, scale, per_point=False):
            if not cols:
                return ([] if per_point else math.nan), math.nan
            e = np.linalg.norm(r[..., cols], axis=-1) * scale  # (n,K)
            if per_point:
                return [float(np.sqrt(np.mean(e[:, k] ** 2))) for k in range(K)], math.nan
            return float(np.sqrt(np.mean(e**2))), float(np.max(e))

        def improvement(before, after):
            if not np.isfinite(before):
                return math.nan
            if before == 0:
                return 0.0
            return (before - after) / before * 100.0

        pn, pnm = grp(r_nom, pos, 1e3)
        x_ff = self._fit_frames_only()
        if x_ff is not None:
            r_ff = self._residual_array(x_ff, q=q, measured=pee)
            pf, _ = grp(r_ff, pos, 1e3)
            of, _ = grp(r_ff, rot, 180.0 / math.pi)
        else:
            pf = of = math.nan
        pc, pcm = grp(r_cal, pos, 1e3)
        on, onm = grp(r_nom, rot, 180.0 / math.pi)
        oc, ocm = grp(r_cal, rot, 180.0 / math.pi)
        out = {
            "n_val_samples": int(n),
            "validation_source": source,
            "dof_names": names,
            "error_nominal_per_dof": per_dof(r_nom),
            "error_fitted_per_dof": per_dof(r_cal),
            "n_markers": K,
            "pos_rmse_nominal_per_point_mm": grp(r_nom, pos, 1e3, True)[0],
            "pos_rmse_calibrated_per_point_mm": grp(r_cal, pos, 1e3, True)[0],
            "pos_rmse_nominal_mm": pn,
            "pos_rmse_calibrated_mm": pc,
            "pos_max_nominal_mm": pnm,
            "pos_max_calibrated_mm": pcm,
            "pos_improvement_pct": improvement(pn, pc),
            "orient_rmse_nominal_deg": on,
            "orient_rmse_calibrated_deg": oc,
            "orient_max_nominal_deg": onm,
            "orient_max_calibrated_deg": ocm,
            "orient_improvement_pct": improvement(on, oc),
            "pos_rmse_nominal_fitted_frames_mm": pf,
            "orient_rmse_nominal_fitted_frames_deg": of,
            "pos_improvement_vs_fitted_frames_pct": improvement(pf, pc),
            "residuals_nominal": ct._to_flat(r_nom),
            "residuals_calibrated": ct._to_flat(r_cal),
            "rmse_convention": "per-point Euclidean norm of the position (orientation) components",
        }
        if source == "validation_data":
            record_stage(
                self,
                "validation",
                "ok",
                "held-out postures",
                {"position_rmse": (pc / 1e3 if np.isfinite(pc) else pc, "m"), "samples": n},
            )
        else:
            record_stage(
                self,
                "validation",
                "fallback",
                "no held-out data: evaluated on the calibration data, not an independent test",
                {"position_rmse": (pc / 1e3 if np.isfinite(pc) else pc, "m"), "samples": n},
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
        idx = [names.index(f) for f in frames]
        x0 = self._initial_vector()
        N = self.n_samples
        w = ct.measurement_weights(self.calib_config, N)
        rows = self._excluded_rows

        def fun(z):
            x = np.zeros(len(names))
            x[idx] = z
            r, J = self.measurement_residuals(x, jacobian=True)
            r, J = r * w, J[:, idx] * w[:, None]
            if rows.size:
                r, J = r.copy(), J.copy()
                r[rows], J[rows] = 0.0, 0.0
            return r, J

        try:
            res = least_squares(
                lambda z: fun(z)[0], x0[idx], jac=lambda z: fun(z)[1], method="trf", max_nfev=200
            )
            x = np.zeros(len(names))
            x[idx] = res.x
        except Exception as exc:  # noqa: BLE001 - diagnostic metric only
            logger.warning("frames-only reference fit failed: %s", exc)
            x = None
        self._frames_only_cache = (self.LM_result, x)
        return x

    # ------------------------------------------------------------------ reports
    def _require_solved(self) -> None:
        if self.evaluation_metrics is None or self.LM_result is None:
            raise AttributeError("No calibration results available. Run solve() first.")

    def format_quality_report(self) -> str:
        """Plain-text quality report."""
        from figaroh.calibration._report import format_quality_report

        return format_quality_report(self)

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
        from figaroh.tools.run_archive import archive_run, compute_run_dir

        run_dir = compute_run_dir(self, root)
        run_dir.mkdir(parents=True, exist_ok=True)
        self.export_verification_report(output_path=str(run_dir / "verdict.json"))
        if html_report:
            try:
                self.export_html_report(output_path=str(run_dir / "report.html"))
            except ImportError:
                logger.info("figaroh.tools.report is not available: no report.html archived")
        return archive_run(self, run_dir)

    def stages_line(self) -> str:
        """One-line stage summary (``data ok · fit ok · …``)."""
        return stages_line(self)

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
        from figaroh.calibration import estimation

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
                N, K = self.n_samples, int(self.calib_config["NbMarkers"])
                c = int(np.count_nonzero(self.calib_config["measurability"]))
                n2 = ct._from_flat(nom, N, K, c).transpose(1, 0, 2).reshape(K * N, c)
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

    Uses ``figaroh.tools.urdf_exporter.is_kinematic_correction`` when that
    module provides it; otherwise: ``d_p*``/``d_phi*``/``offset*`` of a model
    joint (or of any joint when no model is given).
    """
    try:
        from figaroh.tools import urdf_exporter

        fn = getattr(urdf_exporter, "is_kinematic_correction", None)
        if fn is not None:
            if model is None:
                return bool(fn(name))
            return bool(fn(name, [str(n) for n in model.names[1:]]))
    except ImportError:
        pass
    from figaroh.calibration.parameter import FULL_PARAMTPL, JOINT_OFFSETTPL

    for tpl in FULL_PARAMTPL + JOINT_OFFSETTPL:
        if name.startswith(tpl + "_"):
            joint = name[len(tpl) + 1 :]
            return model is None or bool(model.existJointName(joint))
    return False


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
