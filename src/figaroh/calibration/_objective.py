"""The calibration objective and its hooks, as ``BaseCalibration`` methods.

The cost hooks (:meth:`cost_function`, :meth:`_compute_logmap_residuals`,
:meth:`apply_measurement_weighting`, :meth:`cost_jacobian`), the objective the
solver minimises (cost rows with excluded rows zeroed, plus prior rows), the
least-squares call and the
:class:`~figaroh.calibration._pipeline.records.ResidualModel` the estimators
see, built over these hooks.

Least squares: ``scipy.optimize.least_squares`` with figaroh 1.0.2's
arguments — its default finite-difference Jacobian (``jac="2-point"``) and
default tolerances. ``calib_config["jacobian"] = "analytic"`` (config
``parameters.jacobian: analytic``) passes the analytic Jacobian of
:meth:`cost_jacobian` instead: fewer objective evaluations, a fit that stops
at a slightly different point (the two Jacobians differ by the
finite-difference error).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from typing import Dict, Iterator, List, Sequence, Tuple

import numpy as np

from figaroh.calibration import calibration_tools as ct
from figaroh.calibration._pipeline import residuals as _residuals
from figaroh.calibration._pipeline.records import FitOutcome, MeasurementSpec, ResidualModel
from figaroh.calibration.config import JACOBIAN_CHOICES
from figaroh.utils.error_handling import CalibrationError

logger = logging.getLogger(__name__)

__all__ = ["CalibrationObjective"]

#: Cost hooks whose override the default analytic Jacobian does not follow.
_COST_HOOKS = ("cost_function", "_compute_logmap_residuals", "apply_measurement_weighting")


class CalibrationObjective:
    """Mixin of :class:`~figaroh.calibration.base_calibration.BaseCalibration`."""

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
        """Least-squares fit of ``names`` (optionally on the postures ``samples``).

        ``scipy.optimize.least_squares(self._objective, x0, method=…,
        max_nfev=max_nfev)`` with ``method="lm"`` when there are at least as
        many rows as parameters, else ``"trf"`` (figaroh 1.0.2's preliminary
        fit); the analytic Jacobian when ``calib_config["jacobian"]`` asks for it.
        """
        if samples is not None:
            ctx_data = self._temporary_data(*self._split_samples(samples))
        else:
            ctx_data = contextlib.nullcontext()
        with ctx_data, self._temporary_params(list(names), prior_weights):
            n_rows = len(self._objective(x0))
            method = "lm" if n_rows >= len(names) else "trf"
            res = self._least_squares(x0, method, max_nfev)
            n_meas = len(self.PEE_measured)
            J = res.jac[:n_meas] if res.jac is not None else None
        return FitOutcome(res.x, res.fun, J)

    def _least_squares(self, x0: np.ndarray, method: str = "lm", max_nfev: int = 1000):
        """One ``scipy.optimize.least_squares`` fit of :meth:`_objective` from ``x0``.

        Default (``calib_config["jacobian"]`` absent or ``"2-point"``): the call
        figaroh 1.0.2 makes, ``least_squares(self._objective, x0, method=method,
        max_nfev=max_nfev)`` — finite-difference Jacobian, default tolerances
        (``ftol = xtol = gtol = 1e-8``). With ``"analytic"``: the same call with
        ``jac=`` the analytic Jacobian of :meth:`cost_jacobian` (excluded rows
        zeroed, prior rows appended).

        Returns:
            The ``scipy.optimize.OptimizeResult``.

        Raises:
            CalibrationError: an invalid ``calib_config["jacobian"]``, or the
                analytic Jacobian asked for a cost it cannot differentiate.
        """
        from scipy.optimize import least_squares

        mode = self._jacobian_mode()
        if mode == "2-point":
            return least_squares(self._objective, x0, method=method, max_nfev=max_nfev)
        return least_squares(
            self._objective, x0, jac=self._objective_jacobian, method=method, max_nfev=max_nfev
        )

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
        residuals: Sequence[float],
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
        n = r.size // max(1, self._rows_per_sample())
        return r * ct.measurement_weights(self.calib_config, n, pos_weight, orient_weight)

    def _rows_per_sample(self) -> int:
        return int(self.calib_config.get("NbMarkers", 1)) * int(
            np.count_nonzero(self.calib_config["measurability"])
        )

    def _overridden(self, name: str) -> bool:
        """Whether the class of this instance overrides the base method ``name``."""
        return getattr(type(self), name) is not getattr(CalibrationObjective, name)

    def cost_function(self, var: Sequence[float]) -> np.ndarray:
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
        if not self._warned_default_cost:
            warnings.warn(
                f"Using default cost function for {type(self).__name__}: weighted log-map "
                "residuals (override cost_function for robot-specific terms)",
                UserWarning,
                stacklevel=2,
            )
            self._warned_default_cost = True
        if self._jacobian_mode() == "analytic":
            r, _ = self.measurement_residuals(var)
        else:
            est = ct.calc_updated_fkm(
                self.model, self.data, var, self.q_measured, self.calib_config
            )
            r = np.asarray(self._compute_logmap_residuals(self.PEE_measured, est), dtype=float)
        try:
            return self.apply_measurement_weighting(r)
        except (KeyError, AttributeError):
            return r

    def cost_jacobian(self, var: Sequence[float]) -> np.ndarray:
        """Analytic Jacobian of the default :meth:`cost_function` (``jacobian: analytic``).

        Rows ``w_i · ∂r_i/∂θ`` of the weighted body-frame log-map residuals
        (:meth:`measurement_residuals` with ``jacobian=True``, weights of
        :meth:`apply_measurement_weighting`). Used only when
        ``calib_config["jacobian"]`` is ``"analytic"``; a subclass that
        overrides :meth:`cost_function` (or one of its hooks) and wants the
        analytic option overrides this too, returning the Jacobian of its own
        rows.
        """
        r, J = self.measurement_residuals(var, jacobian=True)
        w = ct.measurement_weights(self.calib_config, r.size // max(1, self._rows_per_sample()))
        return J * w[:, None]

    def _jacobian_option(self) -> str:
        """``calib_config["jacobian"]`` (default ``"2-point"``), checked."""
        value = self.calib_config.get("jacobian", "2-point")
        if value is None:
            return "2-point"
        if value not in JACOBIAN_CHOICES:
            raise CalibrationError(
                f"calib_config['jacobian'] (config parameters.jacobian) is {value!r}: use "
                "'2-point' (finite differences, figaroh 1.0.2's default) or 'analytic'"
            )
        return str(value)

    def _has_analytic_jacobian(self) -> bool:
        """Whether :meth:`cost_jacobian` differentiates :meth:`cost_function`.

        True when :meth:`cost_jacobian` is overridden or no cost hook is (for
        the default cost it is the Jacobian of the body-frame residuals, whose
        per-point norms are those of the default cost).
        """
        if self._overridden("cost_jacobian"):
            return True
        return not any(self._overridden(h) for h in _COST_HOOKS)

    def _jacobian_mode(self) -> str:
        """Jacobian of the fit: ``"2-point"``, ``"analytic"`` or ``"analytic (user)"``.

        Raises:
            CalibrationError: ``jacobian: analytic`` with a cost hook
                overridden but not :meth:`cost_jacobian`.
        """
        if self._jacobian_option() == "2-point":
            return "2-point"
        if self._overridden("cost_jacobian"):
            return "analytic (user)"
        hooks = [h for h in _COST_HOOKS if self._overridden(h)]
        if hooks:
            raise CalibrationError(
                f"calib_config['jacobian'] is 'analytic' but {type(self).__name__} overrides "
                f"{', '.join(hooks)} without cost_jacobian: override cost_jacobian(var) with the "
                "Jacobian of your cost rows, or set parameters.jacobian: 2-point"
            )
        return "analytic"

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

    def _sample_position_errors(self, residuals: Sequence[float]) -> np.ndarray | None:
        """Per-sample position error [m]: worst marker's norm of the measured x/y/z rows."""
        return _residuals.sample_position_errors(residuals, self._spec())

    def _sample_rows(self, samples: Sequence[int]) -> np.ndarray:
        """Flat rows of the given samples (rows whose index modulo NbSample is listed)."""
        return _residuals.sample_rows(samples, len(self.PEE_measured), self.n_samples)

    def _logmap_residuals_at(
        self, var: Sequence[float], q: np.ndarray | None = None, measured=None
    ) -> np.ndarray:
        """Unweighted flat residuals at ``var``, as figaroh 1.0.2 evaluates a fit [m, rad].

        ``self._compute_logmap_residuals(measured, calc_updated_fkm(var, q))``
        with ``calib_config["NbSample"] = len(q)`` during the call (default:
        the loaded postures and ``PEE_measured``).
        """
        if q is None:
            if self.q_measured is None or self.PEE_measured is None:
                raise CalibrationError("Call load_data_set() first")
            q, measured, n = self.q_measured, self.PEE_measured, self.n_samples
        else:
            q = np.atleast_2d(np.asarray(q, dtype=float))
            n = len(q)
        cfg = self.calib_config
        saved = cfg.get("NbSample")
        cfg["NbSample"] = n
        try:
            est = ct.calc_updated_fkm(self.model, self.data, var, q, cfg)
            r = self._compute_logmap_residuals(measured, est)
        finally:
            cfg["NbSample"] = saved
        return np.asarray(r, dtype=float).ravel()

    def _residual_array(self, var: np.ndarray, q=None, measured=None) -> np.ndarray:
        """(N, K, n_meas) residuals of :meth:`_logmap_residuals_at` [m, rad]."""
        r = self._logmap_residuals_at(var, q=q, measured=measured)
        n = len(q) if q is not None else self.n_samples
        return _residuals.residual_array(r, self._spec(n))

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
